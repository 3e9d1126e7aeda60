"""A history-aware noise floor for the regression gate (`kbench gate
--history N`, conbench's lookback): per case, how far its median time moves
from run to run on this machine when nothing changes, from the last N runs
of the same host and CPU in the history database.

A case's spread is exp(NOISE_Z * s) - 1, s the sample standard deviation of
the natural log of its median time over the runs that timed it (at least
MIN_RUNS of them): the band one run's median leaves around the others about
19 times in 20 for log-normal run-to-run noise. The gate widens a case's
--max-slowdown to its spread when the spread is the larger, and says so; a
case with fewer runs, or a spread below the limit, keeps the limit. Runs
that were emulated, incomplete, or are the base or candidate themselves
are left out."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from kbench.results.compare import CaseKey, case_key
from kbench.results.history import query_runs, run_results

NOISY_CV = 0.10  # a case whose rounds vary more than this (stdev / mean) is NOISY

NOISE_Z = 2.0  # standard deviations of log time in the band
MIN_RUNS = 3  # runs a case needs before its spread counts


@dataclass(frozen=True)
class NoiseFloor:
    """Per case, its run-to-run spread and the runs it comes from."""

    machine: str  # host (CPU model) the runs share
    run_ids: tuple[int, ...]  # history ids of the runs looked at, newest first
    spreads: dict[CaseKey, tuple[float, int]] = field(default_factory=dict)  # (spread, runs)

    def limits(self, max_slowdown: float) -> dict[CaseKey, float]:
        """The widened limits: only cases whose spread exceeds max_slowdown."""
        return {k: s for k, (s, _) in self.spreads.items() if s > max_slowdown}

    def describe(self, max_slowdown: float) -> str:
        wide = self.limits(max_slowdown)
        head = (f"noise floor (--history): {len(self.run_ids)} earlier run(s) of "
                f"{self.machine} in the history, {len(self.spreads)} case(s) timed in at "
                f"least {MIN_RUNS} of them")
        if not wide:
            return head + f"; none spreads beyond the limit {max_slowdown:.1%}"
        top = max(wide.values())
        return (head + f"; {len(wide)} case(s) spread beyond the limit {max_slowdown:.1%} "
                f"and are held to their own spread instead (largest {top:.1%})")


def spread(medians: Sequence[float]) -> float:
    """exp(NOISE_Z * sd(log medians)) - 1 over the positive finite medians;
    NaN with fewer than MIN_RUNS of them."""
    logs = [math.log(m) for m in medians if m > 0 and math.isfinite(m)]
    if len(logs) < MIN_RUNS:
        return math.nan
    return math.exp(NOISE_Z * float(np.std(logs, ddof=1))) - 1


def from_results(frames: Iterable[pd.DataFrame]) -> dict[CaseKey, tuple[float, int]]:
    """Per case, (spread, runs) over result frames of one run each (their
    timed, passing, not emulated rows; a case's rows in one run, its passes,
    give that run's median)."""
    per_case: dict[CaseKey, list[float]] = {}
    for df in frames:
        if df.empty or "time_median_ns" not in df:
            continue
        ok = df[(df["status"] == "pass") & df["time_median_ns"].notna()
                & ~df["emulated"].fillna(False).astype(bool)]
        medians: dict[CaseKey, list[float]] = {}
        for row in ok.itertuples(index=False):
            medians.setdefault(case_key(row), []).append(float(row.time_median_ns))
        for key, values in medians.items():
            per_case.setdefault(key, []).append(float(np.median(values)))
    out = {}
    for key, values in per_case.items():
        s = spread(values)
        if not math.isnan(s):
            out[key] = (s, len(values))
    return out


def from_history(db: str | Path, host: str, cpu_model: str, runs: int,
                 exclude_dates: Iterable[str] = ()) -> NoiseFloor:
    """The floor from the last `runs` complete, not emulated runs of this host
    and CPU in the history (runs dated as the base or candidate left out)."""
    if runs < MIN_RUNS:
        raise ValueError(f"--history needs at least {MIN_RUNS} runs, got {runs}")
    skip = set(exclude_dates)
    listing = query_runs(db, machine=host or None, limit=None)
    mine = listing[(listing["host"].fillna("") == host)
                   & (listing["cpu_model"].fillna("") == cpu_model)
                   & listing["complete"] & ~listing["emulated"]
                   & ~listing["date"].isin(skip)]
    ids = tuple(int(i) for i in mine["id"].head(runs))
    spreads = from_results(run_results(db, i) for i in ids)
    return NoiseFloor(f"{host} ({cpu_model})", ids, spreads)


__all__ = ["MIN_RUNS", "NOISE_Z", "NoiseFloor", "from_history", "from_results", "spread"]
