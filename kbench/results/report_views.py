"""The report's answers to three questions, as tables and plots that
kbench.results.report places on the page:

- *which realization is fastest per shape?* — the fastest of ours and the
  fastest peer per shape, marked in the GFLOP/s table; one hue per
  realization family (blocked variants in shades of their kernel's hue,
  peers in their own hues), so related series read as related;
- *is it correct?* — realizations whose observed errors are identical on
  every case (bit-identical kernels) drawn once, labelled with all names;
- *did anything regress?* — the gate's verdict with its statistics, and
  asv-style trends of each case's median time per realization over the
  runs in the history database."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

BLOCKING = re.compile(r"_mb\d+_nb\d+_kb\d+")
BEST = "best per shape"
PEER_PREFIXES = ("ort_",)


def is_peer(series: str) -> bool:
    return str(series).startswith(PEER_PREFIXES)


def family(series: str) -> str:
    """A series' realization family: its name without cache-blocking
    parameters, B form or thread count (`gemm_neon_f16acc_mb24_nb64_kb64 B:native`
    -> `gemm_neon_f16acc`)."""
    name = str(series).split(" ")[0]
    return BLOCKING.sub("", name)


def _shade(rgb: Sequence[float], i: int, n: int) -> tuple[float, float, float]:
    """The i-th of n shades of a colour: the base colour first, then lighter."""
    t = 0.0 if n <= 1 else 0.55 * i / (n - 1)
    r, g, b = (float(c) for c in rgb[:3])
    return (r + (1 - r) * t, g + (1 - g) * t, b + (1 - b) * t)


def family_colors(names: Sequence[str]) -> dict[str, Any]:
    """A fixed colour per series: one hue per family (ours from one
    qualitative palette, peers from another), members of a family in shades
    of it, "best per shape" near black."""
    from matplotlib import colormaps

    unique = sorted({str(n) for n in names} - {BEST})
    fams: dict[str, list[str]] = {}
    for n in unique:
        fams.setdefault(family(n), []).append(n)
    ours = sorted(f for f in fams if not is_peer(f))
    peers = sorted(f for f in fams if is_peer(f))
    palette = list(colormaps["tab10"].colors) + list(colormaps["Dark2"].colors)
    peer_palette = [(0.35, 0.2, 0.1), (0.55, 0.0, 0.35), (0.0, 0.3, 0.3), (0.3, 0.3, 0.0)]
    out: dict[str, Any] = {}
    for i, f in enumerate(ours):
        base = palette[i % len(palette)]
        members = fams[f]
        for j, n in enumerate(members):
            out[n] = _shade(base, j, len(members))
    for i, f in enumerate(peers):
        base = peer_palette[i % len(peer_palette)]
        members = fams[f]
        for j, n in enumerate(members):
            out[n] = _shade(base, j, len(members))
    out[BEST] = "0.1"
    return out


FASTEST_COLUMNS = ["target", "catalog", "case", "shape", "fastest_ours", "ours_time_ns",
                   "ours_gflops", "fastest_peer", "peer_time_ns", "peer_vs_ours"]


def fastest_per_shape(gflops: pd.DataFrame) -> pd.DataFrame:
    """Per shape: the fastest of our realizations and the fastest peer (by
    median time), and peer time / our time (above 1: ours is faster)."""
    if gflops.empty:
        return pd.DataFrame(columns=FASTEST_COLUMNS)
    rows = []
    for (target, catalog, case), g in gflops.groupby(["target", "catalog", "case"], sort=False):
        shape = str(g["shape"].iloc[0])
        g = g[g["time_median_ns"] > 0]  # a NaN median (timing failed) is never the fastest
        peers = g["series"].map(is_peer).astype(bool)  # an empty group's mask stays a mask
        ours = g[~peers].sort_values("time_median_ns")
        peer = g[peers].sort_values("time_median_ns")
        o = ours.iloc[0] if len(ours) else None
        p = peer.iloc[0] if len(peer) else None
        rows.append({
            "target": target, "catalog": catalog, "case": case,
            "shape": shape,
            "fastest_ours": "" if o is None else str(o["series"]),
            "ours_time_ns": math.nan if o is None else float(o["time_median_ns"]),
            "ours_gflops": math.nan if o is None else float(o["gflops"]),
            "fastest_peer": "" if p is None else str(p["series"]),
            "peer_time_ns": math.nan if p is None else float(p["time_median_ns"]),
            "peer_vs_ours": (math.nan if o is None or p is None
                             else float(p["time_median_ns"]) / float(o["time_median_ns"])),
        })
    return pd.DataFrame(rows, columns=FASTEST_COLUMNS)


ERROR_SIGNATURE = ("k", "max_err_bound", "max_ulp", "max_rms_rel", "min_exact_fraction")


def identical_error_groups(table: pd.DataFrame) -> dict[tuple[str, str, str], list[str]]:
    """(target, op, first realization) -> the realizations whose observed
    errors are identical at every K (bit-identical kernels give identical
    statistics); each group is drawn once."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for (target, op), g in table.groupby(["target", "op"], sort=False):
        seen: dict[tuple, str] = {}
        for real, r in g.groupby("realization", sort=True):
            cols = [c for c in ERROR_SIGNATURE if c in r]
            sig = tuple(tuple(np.round(r.sort_values("k")[c].to_numpy(dtype=float), 12))
                        for c in cols)
            key = (str(r["accum"].iloc[0]) if "accum" in r else "", sig)
            if key in seen:
                groups[(str(target), str(op), seen[key])].append(str(real))
            else:
                seen[key] = str(real)
                groups[(str(target), str(op), str(real))] = [str(real)]
    return groups


def group_label(members: list[str], limit: int = 3) -> str:
    """"a = b = c" (bit-identical errors), shortened past `limit` names."""
    if len(members) <= limit:
        return " = ".join(members)
    return " = ".join(members[:limit]) + f" (+{len(members) - limit} identical)"


# ----------------------------------------------------------------- gate verdict

@dataclass(frozen=True)
class GateView:
    """What the report shows of the gate: verdict, failures, statistics."""

    passed: bool
    settings: str
    failures: pd.DataFrame  # reason, case, detail
    cases: pd.DataFrame  # per timed case: ratio, pass ratio, p, verdict, note
    counts: dict[str, int]
    warnings: list[str]


def gate_view(result: Any) -> GateView:
    """From a kbench.results.compare.GateResult."""
    from kbench.results.compare import TWO_RUN_TEST

    comp = result.comparison
    failures = pd.DataFrame([{"reason": f.reason, "case": f.case, "detail": f.detail}
                             for f in result.failures], columns=["reason", "case", "detail"])
    frame = comp.frame()
    timed = frame[[c.timed for c in comp.cases]] if len(frame) else frame
    cols = ["target", "realization", "catalog", "case", "base_median_ns", "cand_median_ns",
            "ratio", "pass_ratio", "p_slower", "verdict", "note"]
    cases = timed[cols].reset_index(drop=True) if len(timed) else pd.DataFrame(columns=cols)
    settings = (f"slowdown limit {comp.max_slowdown:.1%}, alpha {comp.alpha:g} ("
                f"{comp.test or TWO_RUN_TEST}, Holm-adjusted; the pass is the unit, never "
                "the round, and the slowdown must show in more than half of the passes)")
    return GateView(result.passed, settings, failures, cases, comp.counts(),
                    list(comp.warnings))


# ----------------------------------------------------------------- history trends

TREND_COLUMNS = ["run_id", "date", "git_commit", "target", "catalog", "case", "realization",
                 "time_median_ns"]


def history_trends(db_path: str | Path, cpu_model: str, arch: str,
                   limit_runs: int = 50) -> pd.DataFrame:
    """Median per-call time of every timed, non-emulated case per realization
    in the last `limit_runs` runs of this machine (same CPU model and
    architecture) recorded in the history database, oldest first."""
    from kbench.results.history import connect
    sql = ("SELECT runs.id AS run_id, runs.date AS date, runs.git_commit AS git_commit, "
           "r.target AS target, r.catalog AS catalog, r.\"case\" AS \"case\", "
           "r.realization AS realization, r.time_median_ns AS time_median_ns "
           "FROM results r JOIN runs ON runs.id = r.run_id "
           "WHERE r.rounds > 0 AND coalesce(r.emulated, 0) = 0 "
           "AND coalesce(runs.cpu_model, '') = ? AND coalesce(runs.arch, '') = ? "
           "AND runs.id IN (SELECT id FROM runs ORDER BY date DESC, id DESC LIMIT ?)")
    with connect(db_path) as con:  # SQLite or PostgreSQL (kbench.results.historydb)
        df = con.frame(sql, [cpu_model, arch, int(limit_runs)])
    if df.empty:
        return pd.DataFrame(columns=TREND_COLUMNS)
    # passes of one run: one point (their median)
    df = (df.groupby(["run_id", "date", "git_commit", "target", "catalog", "case",
                      "realization"], as_index=False, dropna=False)["time_median_ns"].median())
    return df.sort_values(["date", "run_id"]).reset_index(drop=True)[TREND_COLUMNS]


def run_ticks(trends: pd.DataFrame, runs: list[Any], most: int = 5) -> list[tuple[int, str]]:
    """x ticks for runs in order: a run's short commit over its date, at most
    `most` of them (evenly spread, the newest always shown)."""
    first = trends.drop_duplicates("run_id").set_index("run_id")
    picks = sorted({round(i * (len(runs) - 1) / max(1, most - 1)) for i in range(most)}
                   if len(runs) > most else range(len(runs)))
    out = []
    for x in picks:
        row = first.loc[runs[x]]
        commit = str(row["git_commit"] or "")[:7] or f"run {runs[x]}"
        out.append((x, f"{commit}\n{str(row['date'] or '')[:10]}"))
    return out


def legend_columns(labels: Sequence[str], width_chars: int = 140) -> int:
    """Columns for a figure-wide legend of these labels that fit in a
    12-inch figure at the small font (about width_chars characters)."""
    if not labels:
        return 1
    widest = max(len(str(x)) for x in labels) + 6  # the handle and the gap
    return max(1, min(len(labels), width_chars // widest))


def plot_trends(trends: pd.DataFrame, colors: dict[str, Any], max_cases: int = 24,
                per_row: int = 4, marks: dict[str, str] | None = None) -> tuple[Figure, int]:
    """Small multiples, one per case (asv-style): median time per call over
    the runs, one line per realization. Returns the figure and the number of
    cases left out (past max_cases)."""
    cases = list(dict.fromkeys(zip(trends["target"], trends["catalog"], trends["case"],
                                   strict=True)))
    shown = cases[:max_cases]
    runs = list(dict.fromkeys(trends["run_id"]))
    x_of = {r: i for i, r in enumerate(runs)}
    ticks = run_ticks(trends, runs)
    dates = trends.drop_duplicates("run_id").set_index("run_id")["date"].astype(str)
    marked = {label: x for label, date in (marks or {}).items() if date
              for x, r in enumerate(runs) if dates.get(r) == str(date)}
    nrows = max(1, math.ceil(len(shown) / per_row))
    fig = Figure(figsize=(12, 0.4 + 2.0 * nrows), layout="constrained")
    axes = fig.subplots(nrows, per_row, squeeze=False).ravel()
    for ax, (target, catalog, case) in zip(axes, shown, strict=False):
        g = trends[(trends["target"] == target) & (trends["catalog"] == catalog)
                   & (trends["case"] == case)]
        for real, r in g.groupby("realization", sort=True):
            xs = [x_of[i] for i in r["run_id"]]
            ax.plot(xs, r["time_median_ns"].to_numpy(dtype=float) / 1e3, marker="o", ms=3,
                    lw=1.2, color=colors.get(str(real), "0.5"), label=str(real))
        ax.set_title(f"{case}", fontsize="small")
        ax.set_xticks([x for x, _ in ticks], [label for _, label in ticks])
        ax.set_xlim(-0.5, len(runs) - 0.5)
        ax.tick_params(labelsize="x-small")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        for label, x in marked.items():  # the report's run and its baseline
            ax.axvline(x, color="0.25" if label == "this run" else "0.6", lw=1, ls="--",
                       zorder=0)
            ax.text(x, 1.0, label, transform=ax.get_xaxis_transform(), fontsize="xx-small",
                    ha="center", va="bottom", color="0.25")
    for ax in axes[len(shown):]:
        ax.set_visible(False)
    for ax in axes[::per_row]:
        ax.set_ylabel("µs per call", fontsize="x-small")
    handles, labels = [], []
    for ax in axes[:len(shown)]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=legend_columns(labels),
                   fontsize="small", frameon=False)
    fig.suptitle(f"median time per call over the last {len(runs)} runs of this machine "
                 "(x: commit and date of each run, oldest left)", fontweight="bold")
    return fig, len(cases) - len(shown)


# ----------------------------------------------------------------- the header's answers

@dataclass(frozen=True)
class Answer:
    """One question the report's header answers, with a link to its section."""

    question: str
    text: str
    anchor: str  # the section it links to
    cls: str  # pass | fail | note


FAILED_STATUSES = ("fail", "error", "crashed", "exited", "timeout")


def answers(results: pd.DataFrame, complete: bool, fastest: pd.DataFrame,
            speedup_vs_baseline: pd.DataFrame, counts_vs_committed: pd.DataFrame,
            gate: GateView | None, has_baseline: bool, trend_runs: int,
            emulated_only: bool, has_counts: bool = False) -> tuple[str, list[Answer]]:
    """The worst status of the run (failed, regressed, incomplete,
    inconclusive (the gate passed with speed verdicts left to drift), all pass;
    "no results" for an empty run) and the four answers: correct? fastest
    per shape? regressed against the baseline? trend over the history?"""
    status = results["status"].astype(str) if len(results) else pd.Series([], dtype=str)
    bad = int(status.isin(FAILED_STATUSES).sum())
    out = []
    if not len(results):
        out.append(Answer("Correct?", "no results recorded", "verdicts", "note"))
    elif bad:
        out.append(Answer("Correct?", f"no: {bad} of {len(results)} results failed or errored",
                          "verdicts", "fail"))
    else:
        out.append(Answer("Correct?", f"yes: all {len(results)} results pass"
                          + ("" if complete else " (of an incomplete run)"), "verdicts", "pass"))
    if len(fastest):
        wins = fastest["fastest_ours"].astype(str).value_counts()
        top, n = str(wins.index[0]), int(wins.iloc[0])
        out.append(Answer("Fastest per shape?", f"{top} on {n} of {len(fastest)} timed shape(s)"
                          + (f"; {len(wins) - 1} other realization(s) on the rest"
                             if len(wins) > 1 else ""), "performance", "note"))
    elif emulated_only:
        out.append(Answer("Fastest per shape?", "emulated timings are not speed"
                          + (": see the instruction counts" if has_counts else ""),
                          "counts" if has_counts else "emulated", "note"))
    else:
        out.append(Answer("Fastest per shape?", "no timed results", "performance", "note"))
    grown = (counts_vs_committed[counts_vs_committed["verdict"] == "regression"]
             if len(counts_vs_committed) and "verdict" in counts_vs_committed else
             counts_vs_committed.iloc[0:0])
    regressed = False
    unsure = 0
    if gate is not None:
        regressed = not gate.passed
        unsure = int(gate.counts.get("inconclusive", 0)) if gate.passed else 0
        text = ("gate: PASSED" + (f"; {unsure} speed verdict(s) inconclusive (machine drift)"
                                  if unsure else "") if gate.passed else
                f"gate: FAILED ({len(gate.failures)} failure(s))")
        out.append(Answer("Regressed?", text, "gate",
                          "fail" if not gate.passed else "note" if unsure else "pass"))
    elif has_baseline and len(speedup_vs_baseline):
        slower = int((speedup_vs_baseline["time_change"] > 0.05).sum())
        out.append(Answer("Regressed?", f"{slower} of {len(speedup_vs_baseline)} case(s) more "
                          "than 5% slower than the baseline (not gated: kbench gate judges "
                          "significance)", "baseline", "note"))
    elif len(grown):
        regressed = True
        out.append(Answer("Regressed?", f"{len(grown)} counted case(s) grew past the committed "
                          "baseline", "counts", "fail"))
    else:
        out.append(Answer("Regressed?", "no baseline given (kbench report RUN --baseline REF)",
                          "baseline", "note"))
    if trend_runs:
        out.append(Answer("Trend?", f"{trend_runs} run(s) of this machine in the history",
                          "history", "note"))
    else:
        out.append(Answer("Trend?", "no history shown (kbench report RUN --history)", "",
                          "note"))
    worst = ("no results" if not len(results) else "failed" if bad else
             "regressed" if regressed else "incomplete" if not complete else
             "inconclusive" if unsure else "all pass")
    return worst, out
