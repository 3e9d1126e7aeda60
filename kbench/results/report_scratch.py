"""The report's scratch-memory section: per target and realization, the heap
it held around its calls (results.csv heap_peak and heap_retained, for every
call a worker measured: kbench.native.calls.HeapUse) and what the scratch
check found (kbench.harness.scratch: three identical calls, no growth, no
more than the cap). Runs written before these columns existed have no rows
here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from kbench.judge.verdict import FAILING, PASS, SKIP
from kbench.native import api
from kbench.results.runfolder import Run

CATALOG = "scratch"  # the scratch check's verdicts (suite determinism)
COLUMNS = ["target", "realization", "plugin", "cap", "calls", "max_peak", "max_retained",
           "check", "finding"]


def _caps(run: Run) -> dict[tuple[str, str], int | None]:
    """(target, realization) -> the scratch cap a plugin realization declared
    (None: none), from run.json's description of each target's plugins."""
    out: dict[tuple[str, str], int | None] = {}
    for spec, info in (run.meta.get("targets") or {}).items():
        if not isinstance(info, dict):
            continue
        for plugin in info.get("plugins") or []:
            for r in plugin.get("realizations") or []:
                cap = r.get("scratch_cap")
                out[(spec, str(r.get("name", "")))] = None if cap is None else int(cap)
    return out


def _cap_text(run_caps: dict[tuple[str, str], int | None], target: str, realization: str,
              plugin: str) -> str:
    if not plugin:
        return f"{api.SCRATCH_RETAIN_CAP:,} (kbench's)"
    cap = run_caps.get((target, realization))
    return "none declared" if cap is None else f"{cap:,}"


def _check(rows: pd.DataFrame) -> tuple[str, str]:
    """The worst status of a realization's scratch checks, and what they found."""
    if rows.empty:
        return "–", ""
    statuses = set(rows["status"])
    worst = next((s for s in FAILING if s in statuses), SKIP if SKIP in statuses else PASS)
    shown = rows if worst == PASS else rows[rows["status"] != PASS]
    return worst, "; ".join(f"{c}: {str(m).removeprefix('scratch: ')}"
                            for c, m in zip(shown["case"], shown["message"], strict=True))


def scratch_table(run: Run) -> pd.DataFrame:
    """One row per target and realization with a measured call or a scratch check."""
    results = run.results
    if results.empty or "heap_peak" not in results.columns:
        return pd.DataFrame(columns=COLUMNS)
    measured = results[results["heap_peak"].notna()]
    checks = results[(results["suite"] == "determinism") & (results["catalog"] == CATALOG)]
    keys = list(dict.fromkeys(zip(pd.concat([measured["target"], checks["target"]]),
                                  pd.concat([measured["realization"],
                                             checks["realization"]]), strict=True)))
    caps = _caps(run)
    rows: list[dict[str, Any]] = []
    for target, real in keys:
        mine = measured[(measured["target"] == target) & (measured["realization"] == real)]
        mine_checks = checks[(checks["target"] == target) & (checks["realization"] == real)]
        plugin = str(pd.concat([mine["plugin"], mine_checks["plugin"]]).iloc[0])
        status, finding = _check(mine_checks)
        rows.append({"target": target, "realization": real, "plugin": plugin,
                     "cap": _cap_text(caps, str(target), str(real), plugin),
                     "calls": len(mine),
                     "max_peak": mine["heap_peak"].max() if len(mine) else float("nan"),
                     "max_retained": (mine["heap_retained"].max() if len(mine)
                                      else float("nan")),
                     "check": status, "finding": finding})
    return pd.DataFrame(rows, columns=COLUMNS)


def html_context(table: pd.DataFrame, html_table: Callable[..., Any]) -> dict[str, Any]:
    """The template's scratch section (`html_table` is the report's formatter)."""
    return {"scratch": html_table(table), "n_scratch": len(table),
            "scratch_failed": int(table["check"].isin(FAILING).sum()) if len(table) else 0}


__all__ = ["CATALOG", "COLUMNS", "html_context", "scratch_table"]
