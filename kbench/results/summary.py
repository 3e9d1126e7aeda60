"""The summary table printed after a run: per target and backend, the
number of cases, passed, failed, mistrusted, errors, and the worst error."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kbench.judge.numbers import sig
from kbench.judge.verdict import ERROR, FAIL, FAULTS, MISTRUSTED, PASS, SKIP, Verdict


def summary_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    rows = [v.to_dict() for v in verdicts if v.status != SKIP]
    cols = ["target", "backend", "realization", "accum", "cases", "passed", "failed",
            "mistrusted", "errors", "faults", "worst_err_bound", "worst_ulp", "min_exact",
            "mean_exact"]
    if not rows:
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame(rows)
    g = df.groupby(["target", "backend", "realization", "accum"], sort=False)
    out = g.agg(
        cases=("status", "size"),
        passed=("status", lambda s: int((s == PASS).sum())),
        failed=("status", lambda s: int((s == FAIL).sum())),
        mistrusted=("status", lambda s: int((s == MISTRUSTED).sum())),
        errors=("status", lambda s: int((s == ERROR).sum())),
        faults=("status", lambda s: int(s.isin(FAULTS).sum())),
        worst_err_bound=("max_err_bound", "max"),
        worst_ulp=("max_ulp", "max"),
        min_exact=("exact_fraction", "min"),
        mean_exact=("exact_fraction", "mean"),
    ).reset_index()
    return out[cols]


def perf_frame(verdicts: list[Verdict]) -> pd.DataFrame:
    """Per target and realization: timed cases, total time per model pass
    (weighted by layer counts), and the geometric mean of GFLOP/s (or
    'emulated': times from an emulator are not speeds)."""
    rows = [v.to_dict() for v in verdicts if v.suite == "perf" and v.rounds > 0]
    if not rows:
        return pd.DataFrame()
    df = pd.DataFrame(rows)
    out = []
    for (target, real), g in df.groupby(["target", "realization"], sort=False):
        emulated = bool(g["emulated"].any())
        weighted_ms = float((g["time_median_ns"] * g["layers"]).sum() / 1e6)
        geo = float(np.exp(np.log(g["gflops"].clip(lower=1e-12)).mean()))
        out.append({"target": target, "realization": real, "timed": len(g),
                    "weighted_ms": weighted_ms,
                    "geomean_gflops": "emulated" if emulated else f"{geo:.3g}"})
    return pd.DataFrame(out)


LEGEND = ("cases: results judged (a case once per input kind); worst_err_bound: the worst "
          "|error| / declared bound (at most 1 passes: the verdict); worst_ulp: the worst error "
          "in ULPs of the correctly rounded FP16 result (huge where a result cancels to near 0, "
          "not the verdict); min_exact, mean_exact: the lowest and the mean fraction of outputs "
          "bit-identical to it. Every column: docs/cli.md")
HUGE_ULP = 1e4  # a passing row's worst_ulp past this gets a note saying why


def ulp_notes(df: pd.DataFrame) -> list[str]:
    """A note per passing row whose worst ULP error is huge: not a wrong
    result but a result that cancels to near 0, where an FP16 ULP is tiny."""
    rows = df[(df["failed"] == 0) & (df["worst_ulp"] > HUGE_ULP)]
    return [f"note: {r.realization} on {r.target} passes with worst_ulp {sig(r.worst_ulp, 3)} "
            f"({r.accum} accumulation): where the exact result cancels to near 0 an FP16 ULP is "
            "2^-24, so an error well within the bound (worst_err_bound "
            f"{sig(r.worst_err_bound, 3)}) reads as that many ULPs" for r in rows.itertuples()]


def summary_text(verdicts: list[Verdict]) -> str:
    df = summary_frame(verdicts)
    if df.empty:
        return "no verdicts"
    text = df.to_string(index=False, float_format=lambda x: sig(x, 3))
    text += "\n" + "\n".join([*ulp_notes(df), LEGEND])
    perf = perf_frame(verdicts)
    if not perf.empty:
        text += "\n\nperformance (median per call; weighted by layer counts):\n"
        text += perf.to_string(index=False, float_format=lambda x: sig(x, 4))
    return text


def summary_dict(verdicts: list[Verdict]) -> list[dict]:
    return summary_frame(verdicts).to_dict(orient="records")
