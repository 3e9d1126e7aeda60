"""Reading run folders back: run.json and results.csv as a pandas frame
with the types the writer meant (booleans, floats, per-round time lists)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .store import COLUMNS


class RunFolderError(ValueError):
    """A path is not a readable run folder."""


@dataclass
class Run:
    path: Path
    meta: dict[str, Any]
    results: pd.DataFrame

    @property
    def complete(self) -> bool:
        return bool(self.meta.get("complete"))

    @property
    def name(self) -> str:
        return self.path.name

    def perf(self) -> pd.DataFrame:
        """Timed rows only."""
        df = self.results
        return df[(df["suite"] == "perf") & (df["rounds"] > 0)]


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
