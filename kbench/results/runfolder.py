"""Reading run folders back: run.json and results.csv as a pandas frame
with the types the writer meant (booleans, floats, per-round time lists)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kbench.results.csvcells import any_length
from kbench.results.store import COLUMNS


class RunFolderError(ValueError):
    """A path is not a readable run folder."""


@dataclass
class Run:
    path: Path
    meta: dict[str, Any]
    results: pd.DataFrame
    # what the reader found wrong with results.csv (missing, empty, a last row cut
    # off, duplicated rows, a row count run.json disagrees with): one line each
    defects: list[str] = field(default_factory=list)

    @property
    def whole(self) -> bool:
        """Complete, with results.csv exactly as run.json describes it."""
        return self.complete and not self.defects

    @property
    def complete(self) -> bool:
        """Did the run say it completed? Only a JSON true counts ("no", 1 or a
        missing key do not)."""
        return self.meta.get("complete") is True

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def has_results(self) -> bool:
        return not self.results.empty

    def state(self) -> str:
        """"complete", "incomplete", and ", no results" when it has none."""
        state = "complete" if self.complete else "incomplete"
        return state if self.has_results else f"{state}, no results"

    def perf(self) -> pd.DataFrame:
        """Timed rows only (one per case per pass with `kbench run --passes`)."""
        df = self.results
        return df[(df["suite"] == "perf") & (df["rounds"] > 0)]

    def perf_pooled(self) -> pd.DataFrame:
        """Timed rows with the passes of a case pooled into one row: its round
        times joined in pass order, rounds summed, min/median/mean/stdev and
        GFLOP/s recomputed from all rounds. A run of one pass is unchanged."""
        perf = self.perf()
        if perf.empty or not perf.duplicated(PASS_KEY).any():
            return perf
        rows = []
        for _, g in perf.groupby(PASS_KEY, sort=False, dropna=False):
            row = g.iloc[-1].copy()
            if len(g) > 1:
                times = [t for cell in g["round_times"] for t in cell]
                if times:
                    t = np.asarray(times)
                    row["round_times"] = times
                    row["round_times_ns"] = " ".join(f"{x:.6g}" for x in times)
                    row["time_min_ns"], row["time_median_ns"] = t.min(), float(np.median(t))
                    row["time_mean_ns"] = t.mean()
                    row["time_stdev_ns"] = t.std(ddof=1) if len(t) > 1 else 0.0
                    if row["flops"] > 0:
                        row["gflops"] = row["flops"] / row["time_median_ns"]
                row["rounds"] = int(g["rounds"].sum())
            rows.append(row)
        return pd.DataFrame(rows).reset_index(drop=True)


# a case x realization of a perf run; rows sharing it are passes of it
PASS_KEY = ["suite", "target", "op", "catalog", "case", "kind", "realization", "b_form",
            "threads"]


def _verdict_types() -> dict[str, str]:
    """Column -> "float", "int", "bool" or "text", from the Verdict fields."""
    from dataclasses import fields

    from kbench.judge.verdict import Verdict
    kinds = {"float": "float", "int": "int", "bool": "bool"}
    out = {f.name: kinds.get(str(f.type), "text") for f in fields(Verdict)}
    out["exact_fraction"] = "float"
    out["round_times_ns"] = "text"  # parsed into round_times
    return out


# the pandas type of each kind of column, whether it has rows or not
_DTYPES: dict[str, Any] = {"float": "float64", "int": "int64", "bool": "bool", "text": object}
_NAN_TEXT = {"", "nan", "-nan", "+nan"}
INT64_MAX = 2**63 - 1


def _bad_cell(path: Path, line: int, column: str, value: str, what: str) -> RunFolderError:
    shown = value if len(value) <= 40 else value[:40] + "..."
    return RunFolderError(f"{path}: line {line}, column {column}: {shown!r} is not {what}")


def _numbers(path: Path, raw: pd.Series, column: str, lines: list[int],
             integer: bool) -> pd.Series:
    values = pd.to_numeric(raw, errors="coerce")
    bad = values.isna() & ~raw.str.strip().str.lower().isin(_NAN_TEXT)
    if integer:
        bad |= values.notna() & np.isfinite(values) & (values != np.floor(values))
        bad |= np.isinf(values)
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise _bad_cell(path, lines[i], column, str(raw.iloc[i]),
                        "an integer" if integer else "a number")
    if not integer:
        return values.astype(float)
    filled = values.fillna(0)
    if (filled.abs() > INT64_MAX).any():  # e.g. the flops of an absurdly large case
        return filled.astype(float)
    return filled.astype("int64")


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunFolderError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunFolderError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        meta = json.loads(text)
    except RecursionError:
        raise RunFolderError(f"{path}: JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NUL bytes
        raise RunFolderError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise RunFolderError(f"{path}: must be a JSON object, got {type(meta).__name__}")
    if "targets" in meta and not isinstance(meta["targets"], dict | type(None)):
        raise RunFolderError(f"{path}: \"targets\" must be an object, got "
                             f"{type(meta['targets']).__name__}")
    return meta


def _read_rows(path: Path, defects: list[str] | None = None
               ) -> tuple[list[str], list[list[str]], list[int]]:
    """Header, rows and each row's line number. A last row cut off in the
    middle (no newline: the run was killed while writing it) is dropped, and
    said so in `defects`."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunFolderError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if not data:
        return [], [], []
    if b"\0" in data:
        line = data[:data.index(b"\0")].count(b"\n") + 1
        raise RunFolderError(f"{path}: line {line} holds a NUL byte: not a results table")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise RunFolderError(f"{path}: line {line} is not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text, newline=""))
    body: list[list[str]] = []
    body_lines: list[int] = []  # the line each row starts on (a quoted cell may span lines)
    try:
        with any_length():  # a perf row's round times may be long
            header = next(reader, [])
            start = reader.line_num + 1
            for row in reader:
                body.append(row)
                body_lines.append(start)
                start = reader.line_num + 1
    except csv.Error as exc:
        raise RunFolderError(f"{path}: line {reader.line_num}: {exc}") from None
    if body and len(body[-1]) != len(header) and not text.endswith("\n"):
        if defects is not None:
            defects.append(f"{path.name}: line {body_lines[-1]} is cut off (the run was "
                           "stopped while writing it); that row is left out")
        body, body_lines = body[:-1], body_lines[:-1]
    return header, body, body_lines


def _read_results(path: Path, defects: list[str] | None = None) -> pd.DataFrame:
    header, rows, lines = _read_rows(path, defects)
    return _frame(path, header, rows, lines)


def _frame(path: Path, header: list[str], rows: list[list[str]], lines: list[int]
           ) -> pd.DataFrame:
    """The results frame of a table's header and rows (`path` and `lines` name
    a refused cell)."""
    types = _verdict_types()
    if header and ("status" not in header or "case" not in header):
        raise RunFolderError(f"{path}: line 1 is not a results header (no case and status "
                             "columns)")
    if len(set(header)) != len(header):
        raise RunFolderError(f"{path}: line 1 names a column twice")
    for row, line in zip(rows, lines, strict=True):
        if len(row) != len(header):
            raise RunFolderError(f"{path}: line {line} has {len(row)} fields, the header "
                                 f"{len(header)}")
    raw = pd.DataFrame(rows, columns=header)  # every cell a str
    df = pd.DataFrame()
    for column in dict.fromkeys([*COLUMNS, *header]):
        kind = types.get(column)  # None: a column kbench does not write, kept as text
        if column not in raw.columns:  # runs written before a column existed
            default: Any = {"float": np.nan, "int": 0, "bool": False, "text": ""}[kind]
            df[column] = pd.Series([default] * len(rows), dtype=_DTYPES[kind])
            continue
        cells = raw[column].astype(str)
        if kind in ("float", "int"):
            df[column] = _numbers(path, cells, column, lines, integer=kind == "int")
        elif kind == "bool":
            df[column] = cells.str.strip().str.lower().isin(["true", "1"])
        else:
            df[column] = cells.astype(object)
    df.loc[df["suite"] == "", "suite"] = "correctness"
    times = []
    for cell, line in zip(df["round_times_ns"], lines, strict=True):
        try:
            times.append(_times(cell))
        except ValueError:
            raise _bad_cell(path, line, "round_times_ns", cell,
                            "a list of numbers") from None
    df["round_times"] = pd.Series(times, index=df.index, dtype=object)
    return df


def _times(cell: Any) -> list[float]:
    return [float(x) for x in str(cell).split()]


def load_run(path: str | Path) -> Run:
    """A run folder read back, or RunFolderError: one line naming the file and
    what is wrong with it. A folder whose results.csv is missing, empty or
    holds only its header is a run with no results (run.describe() says so)."""
    folder = Path(path)
    meta_path, csv_path = folder / "run.json", folder / "results.csv"
    if not folder.is_dir():
        raise RunFolderError(f"{folder}: not a folder")
    if not meta_path.exists():
        if csv_path.exists():
            raise RunFolderError(f"{meta_path}: missing (results.csv without its run.json)")
        raise RunFolderError(f"{folder}: not a run folder (needs run.json and results.csv)")
    meta = _read_meta(meta_path)
    defects: list[str] = []
    if csv_path.exists():
        if csv_path.stat().st_size == 0:
            defects.append("results.csv is empty (not even its header)")
        df = _read_results(csv_path, defects)
    else:  # read as a table of only the writer's header
        defects.append("results.csv is missing")
        df = _frame(csv_path, list(COLUMNS), [], [])
    defects += _row_defects(meta, df)
    return Run(folder, meta, df, defects)


# what identifies one verdict of a suite other than perf (a perf case has one
# row per pass); exact duplicate rows are a defect in every suite
IDENTITY = ["suite", "target", "op", "catalog", "case", "kind", "realization", "b_form",
            "threads"]


def _row_defects(meta: dict[str, Any], df: pd.DataFrame) -> list[str]:
    """Rows run.json does not account for, and duplicated rows."""
    out = []
    said = meta.get("results")
    if isinstance(said, int) and not isinstance(said, bool) and said != len(df):
        out.append(f"run.json says {said} result(s), results.csv holds {len(df)} row(s)")
    if df.empty:
        return out
    text = df.astype(str)  # round_times as text mirrors round_times_ns
    exact = int(text.duplicated().sum())
    if exact:
        first = text[text.duplicated()].iloc[0]
        out.append(f"results.csv holds {exact} duplicated row(s) (first: {first['target']} "
                   f"{first['realization']} {first['case']} {first['kind']})")
    judged = text[(df["suite"] != "perf").to_numpy() & ~text.duplicated().to_numpy()]
    again = judged.duplicated(IDENTITY)
    if again.any():
        first = judged[again].iloc[0]
        out.append(f"results.csv holds {int(again.sum())} verdict(s) twice with different "
                   f"results (first: {first['suite']} {first['target']} {first['realization']} "
                   f"{first['case']} {first['kind']})")
    return out
