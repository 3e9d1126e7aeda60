"""Reading run folders back: run.json and results.csv as a pandas frame
with the types the writer meant (booleans, floats, per-round time lists)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kbench.results.store import COLUMNS


class RunFolderError(ValueError):
    """A path is not a readable run folder."""


@dataclass
class Run:
    path: Path
    meta: dict[str, Any]
    results: pd.DataFrame

    @property
    def complete(self) -> bool:
        """Did the run say it completed? Only a JSON true counts ("no", 1 or a
        missing key do not)."""
        return self.meta.get("complete") is True

    @property
    def name(self) -> str:
        return self.path.name

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


def _times(cell: Any) -> list[float]:
    if isinstance(cell, str) and cell.strip():
        return [float(x) for x in cell.split()]
    return []


def load_run(path: str | Path) -> Run:
    folder = Path(path)
    meta_path, csv_path = folder / "run.json", folder / "results.csv"
    if not folder.is_dir():
        raise RunFolderError(f"{folder}: not a folder")
    if not meta_path.exists() or not csv_path.exists():
        raise RunFolderError(f"{folder}: not a run folder (needs run.json and results.csv)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as exc:
        raise RunFolderError(f"{meta_path}: {exc}") from exc
    df = pd.read_csv(csv_path, keep_default_na=False, na_values=["nan", "NaN", ""])
    missing = [c for c in COLUMNS if c not in df.columns]
    for c in missing:  # runs written before a column existed
        df[c] = np.nan
    for c in ("message", "tags", "kind", "b_form", "catalog", "suite", "round_times_ns",
              "accum_model"):
        df[c] = df[c].astype(object).where(df[c].notna(), "").astype(str)
    df.loc[df["suite"] == "", "suite"] = "correctness"
    df["emulated"] = df["emulated"].astype(str).str.lower().isin(["true", "1"])
    for c in ("rounds", "reps_per_round", "layers", "flops", "threads", "k", "m", "n"):
        df[c] = pd.to_numeric(df[c], errors="coerce").fillna(0).astype("int64")
    df["accum_match"] = pd.to_numeric(df["accum_match"], errors="coerce").astype(float)
    df["round_times"] = df["round_times_ns"].map(_times)
    return Run(folder, meta, df)
