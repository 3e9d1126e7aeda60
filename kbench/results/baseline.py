"""The committed instruction-count baseline (reference/counts/baseline.csv)
and its configuration (reference/counts/baseline.toml): which catalog, on
which targets, for which backends, and the growth limit CI holds it to.

The CSV has one row per target x case x realization with the count of each
phase; comment lines (#) above the header say how it was made. Target
names are canonical ("qemu:cpu=max:svl=512", whatever the command line
said). Writing from a run replaces the rows of the targets the run counted
and keeps the others."""

from __future__ import annotations

import csv
import io
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.errors import KbenchError
from kbench.resources import resource_dir
from kbench.results.count_compare import DEFAULT_LIMIT, canonical_target
from kbench.results.counts import COLUMNS, parse_mix

# in the checkout reference/counts/, in an installed package kbench/reference/counts/
REFERENCE = resource_dir("reference") / "counts"
DEFAULT_CSV = REFERENCE / "baseline.csv"
DEFAULT_CONFIG = REFERENCE / "baseline.toml"
KEY_COLUMNS = ("target", "catalog", "case", "realization")
# kernel_outer: the kernel phase's outer (FMOPA) and dot (FDOT) products, from the mix
FIELDS = (*KEY_COLUMNS, *(c.removeprefix("count_") for c in COLUMNS), "floor", "kernel_outer")
OPTIONAL_FIELDS = {"kernel_outer"}  # absent in a baseline written before it was kept


class BaselineError(KbenchError):
    """The baseline or its configuration is malformed (the message names it)."""


SWEEP_CSV = REFERENCE / "sweep.csv"
SWEEP_CONFIG = REFERENCE / "sweep.toml"


@dataclass(frozen=True)
class BaselineConfig:
    catalog: str
    targets: tuple[str, ...]
    backends: tuple[str, ...]
    limit: float = DEFAULT_LIMIT
    realizations: tuple[str, ...] = ()  # when given: these realizations, not the backends

    def selection_args(self) -> list[str]:
        """The kbench run options that select what the baseline counts."""
        if self.realizations:
            return [a for r in self.realizations for a in ("--realization", r)]
        return [a for b in self.backends for a in ("--backend", b)]


def parse_limit(value: Any) -> float:
    """"0.5%" or 0.005 -> 0.005."""
    text = str(value).strip()
    try:
        frac = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise BaselineError(f"limit: {value!r} is not a fraction (write 0.5% or 0.005)",
                            "limit") from None
    if not math.isfinite(frac) or frac < 0 or (frac > 1 and not text.endswith("%")):
        raise BaselineError(f"limit: {value!r} must be a fraction >= 0 (write 0.5% or 0.005)",
                            "limit")
    return frac


def load_config(path: str | Path = DEFAULT_CONFIG) -> BaselineConfig:
    p = Path(path)
    try:
        with p.open("rb") as fh:
            table = tomllib.load(fh).get("baseline")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise BaselineError(f"{p}: {exc}", "baseline") from exc
    if not isinstance(table, dict):
        raise BaselineError(f"{p}: needs a [baseline] table", "baseline")
    for key in ("targets", "backends", "realizations"):
        v = table.get(key)
        if key == "backends" and v is None and "realizations" in table:
            continue
        if key == "realizations" and v is None:
            continue
        if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
            raise BaselineError(f"{p}: [baseline] {key} must be a non-empty list of strings",
                                key)
    if not isinstance(table.get("catalog"), str):
        raise BaselineError(f"{p}: [baseline] catalog must be a catalog name", "catalog")
    unknown = set(table) - {"catalog", "targets", "backends", "realizations", "limit"}
    if unknown:
        raise BaselineError(f"{p}: unknown [baseline] key(s) {', '.join(sorted(unknown))}",
                            "baseline")
    return BaselineConfig(table["catalog"], tuple(canonical_target(t) for t in table["targets"]),
                          tuple(table.get("backends", ())),
                          parse_limit(table.get("limit", DEFAULT_LIMIT)),
                          tuple(table.get("realizations", ())))


def read_baseline(path: str | Path = DEFAULT_CSV) -> list[dict[str, Any]]:
    """Rows as dicts with the results columns (target, catalog, case,
    realization, count_call, ...); [] when there is no baseline yet."""
    p = Path(path)
    if not p.exists():
        return []
    kept = [(n, line) for n, line in enumerate(p.read_text().splitlines(), start=1)
            if not line.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(line for _, line in kept)))
    missing = set(FIELDS) - OPTIONAL_FIELDS - set(reader.fieldnames or [])
    if missing:
        raise BaselineError(f"{p}: missing column(s) {', '.join(sorted(missing))}", "baseline")
    rows = []
    for raw in reader:
        line = kept[reader.line_num - 1][0]  # the file's own line, comments counted
        row: dict[str, Any] = {k: raw[k] for k in KEY_COLUMNS}
        row["target"] = canonical_target(row["target"])
        for col in (*COLUMNS, "count_floor", "count_kernel_outer"):
            row[col] = _number(f"{p}: line {line}", raw, col)
        rows.append(row)
    return rows


def _number(where: str, raw: Mapping[str, str | None], column: str) -> float:
    """A count column's cell (named without its count_ prefix in the CSV);
    NaN when empty or absent."""
    field = column.removeprefix("count_")
    text = (raw.get(field) or "").strip()
    try:
        return float(text) if text else math.nan
    except ValueError:
        raise BaselineError(f"{where}: {field} = {text!r} is not a number", column) from None


def counted_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A run's counted perf rows, one per target x case x realization."""
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for r in rows:
        if not _float(r.get("count_call")) > 0:
            continue
        row = {k: str(r.get(k, "")) for k in KEY_COLUMNS}
        row["target"] = canonical_target(row["target"])
        for col in (*COLUMNS, "count_floor"):
            row[col] = _float(r.get(col))
        kernel = parse_mix(r.get("count_mix")).get("kernel")
        row["count_kernel_outer"] = (float(kernel.get("outer", 0) + kernel.get("dot", 0))
                                     if kernel else math.nan)
        out.setdefault(tuple(row[k] for k in KEY_COLUMNS), row)
    return list(out.values())


def _float(value: Any) -> float:
    """A count as a number; NaN when missing or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _cell(v: float) -> str:
    return "" if v != v else str(int(v))


def render(rows: Iterable[Mapping[str, Any]], header: Iterable[str]) -> str:
    buf = io.StringIO()
    for line in header:
        buf.write(f"# {line}\n")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FIELDS)
    for r in sorted(rows, key=lambda r: tuple(r[k] for k in KEY_COLUMNS)):
        w.writerow([*(r[k] for k in KEY_COLUMNS),
                    *(_cell(r[c]) for c in COLUMNS), _cell(r.get("count_floor", math.nan)),
                    _cell(r.get("count_kernel_outer", math.nan))])
    return buf.getvalue()


def merged(existing: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The baseline rows after writing `new`: rows of the targets `new`
    covers are replaced, the other targets' rows kept."""
    targets = {r["target"] for r in new}
    return [r for r in existing if r["target"] not in targets] + new


def header_lines(qemu: str) -> list[str]:
    """The comment block (no date or commit: regenerating unchanged counts
    leaves the file unchanged)."""
    return [
        "kbench instruction-count baseline: exact dynamic instructions of one single-threaded "
        "call per phase,",
        "on emulated Arm (qemu-aarch64), for the catalog and targets of its .toml "
        "configuration. Do not edit by hand:",
        "`kbench baseline update` regenerates it; CI runs `kbench baseline check` "
        "(kbench.results.baseline).",
        f"Counted with qemu-aarch64 {qemu or 'unknown'}.",
    ]


def write_baseline(path: str | Path, rows: list[dict[str, Any]], header: list[str]) -> None:
    p = Path(path)
    tmp = p.with_suffix(".csv.tmp")
    tmp.write_text(render(rows, header))
    tmp.replace(p)
