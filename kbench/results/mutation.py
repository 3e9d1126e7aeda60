"""The mutation section of a report: what a mutation campaign's run folder
(`kbench mutate`, mutation.json) says, as tables: per area the mutants
killed, survived, equivalent, stale, invalid or not run and the kill rate;
per mutant its status, how many failed tests killed it, where it survived
and why an equivalent one cannot be told apart."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

STATUSES = ("killed", "survived", "equivalent", "stale", "invalid", "error")
AREA_COLUMNS = ["area", "mutants", *STATUSES, "kill_rate"]
MUTANT_COLUMNS = ["mutant", "area", "status", "failed_tests", "runs", "detail", "equivalent",
                  "description"]


def load(folder: Path) -> dict | None:
    """mutation.json of a run folder, or None when it has none (or it cannot be read)."""
    try:
        data = json.loads((Path(folder) / "mutation.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("mutants"), list) else None


def _rate(killed: int, live: int) -> float:
    return killed / live if live else math.nan


def area_table(data: dict | None) -> pd.DataFrame:
    """One row per area and a final "all" row; kill rate = killed over the
    mutants that are not stale."""
    if not data:
        return pd.DataFrame(columns=AREA_COLUMNS)
    df = pd.DataFrame([{"area": m.get("area", ""), "status": m.get("status")}
                       for m in data["mutants"]])
    rows = []
    groups = [*sorted(df["area"].unique()), "all"] if not df.empty else []
    for area in groups:
        g = df if area == "all" else df[df["area"] == area]
        counts = {s: int((g["status"] == s).sum()) for s in STATUSES}
        rows.append({"area": area, "mutants": len(g), **counts,
                     "kill_rate": _rate(counts["killed"], len(g) - counts["stale"])})
    return pd.DataFrame(rows, columns=AREA_COLUMNS)


def mutant_table(data: dict | None) -> pd.DataFrame:
    """One row per mutant, survivors and problems first."""
    if not data:
        return pd.DataFrame(columns=MUTANT_COLUMNS)
    order = {"survived": 0, "invalid": 1, "error": 2, "equivalent": 3, "stale": 4, "killed": 5}
    rows = []
    for m in data["mutants"]:
        runs = m.get("runs") or []
        rows.append({
            "mutant": m.get("id", ""), "area": m.get("area", ""), "status": m.get("status", ""),
            "failed_tests": sum(int(r.get("failed", 0)) for r in runs),
            "runs": "; ".join(f"{r.get('target')}: {'killed' if r.get('killed') else 'survived'}"
                              f" ({r.get('failed', 0)} failed)" for r in runs),
            "detail": m.get("detail", ""), "equivalent": m.get("equivalent", ""),
            "description": m.get("description", ""),
        })
    df = pd.DataFrame(rows, columns=MUTANT_COLUMNS)
    # an unknown status has no rank (NaN), and NaN sorts last
    return df.sort_values(by="status", key=lambda s: s.map(order), kind="stable"
                          ).reset_index(drop=True)
