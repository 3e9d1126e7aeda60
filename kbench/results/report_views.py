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


FASTEST_COLUMNS = ["target", "catalog", "case", "shape", "kernels", "winner", "fastest_ours",
                   "ours_time_ns", "ours_gflops", "fastest_peer", "peer_time_ns", "peer_vs_ours",
                   "noisy", "why"]
MIN_KERNELS = 2  # a winner needs at least this many different kernels timed on the shape


def _kernels(g: pd.DataFrame) -> pd.Series:
    """The kernel of each row (a peer's or an older run's without one: its
    realization): B forms, blockings and thread counts of one kernel are one."""
    name = (g["realization"] if "realization" in g else g["series"].map(family)).astype(str)
    kernel = g["kernel"].astype(str) if "kernel" in g else name
    return kernel.where(kernel != "", name)


OUR_BACKENDS = ("scalar", "neon", "sme", "sve")  # kbench's own; any other is a peer's or a plugin's


def _not_ours(g: pd.DataFrame) -> pd.Series:
    """Rows of a peer library or a plugin: by backend (a peer's or plugin's
    entry point may be named anything), by name where no backend is known."""
    if "backend" in g:
        return ~g["backend"].astype(str).isin(OUR_BACKENDS)
    return g["series"].map(is_peer).astype(bool)  # an empty group's mask stays a mask


def fastest_per_shape(gflops: pd.DataFrame) -> pd.DataFrame:
    """Per shape, by median time: how many different kernels were timed;
    the winner over all of them and the fastest of ours, each named only
    where at least MIN_KERNELS different kernels were timed (among all, or
    among ours) — B forms of one kernel are no contest; the fastest peer
    (a peer library's or a plugin's realization), and peer time / our best
    time (above 1: ours is faster); whether a named time is NOISY, and why a
    shape has no winner."""
    if gflops.empty:
        return pd.DataFrame(columns=FASTEST_COLUMNS)
    rows = []
    for (target, catalog, case), g in gflops.groupby(["target", "catalog", "case"], sort=False):
        shape = str(g["shape"].iloc[0])
        g = g[g["time_median_ns"] > 0]  # a NaN median (timing failed) is never the fastest
        peers = _not_ours(g)
        kernels = _kernels(g)
        ours = g[~peers].sort_values("time_median_ns")
        peer = g[peers].sort_values("time_median_ns")
        best = g.sort_values("time_median_ns")
        n = int(kernels.nunique())
        contest = n >= MIN_KERNELS
        ours_contest = int(kernels[~peers].nunique()) >= MIN_KERNELS
        o = ours.iloc[0] if len(ours) else None
        p = peer.iloc[0] if len(peer) else None
        w = best.iloc[0] if contest else None
        named = [x for x in (w, o if ours_contest else None, p if contest else None)
                 if x is not None]
        noisy = any(bool(x.get("noisy", False)) for x in named)
        why = ("" if contest else "no time came back" if not n else
               "one kernel timed (its B forms, blockings or threads are no contest): no winner")
        rows.append({
            "target": target, "catalog": catalog, "case": case, "shape": shape,
            "kernels": n, "winner": str(w["series"]) if w is not None else "",
            "fastest_ours": str(o["series"]) if o is not None and ours_contest else "",
            "ours_time_ns": math.nan if o is None else float(o["time_median_ns"]),
            "ours_gflops": math.nan if o is None else float(o["gflops"]),
            "fastest_peer": str(p["series"]) if p is not None and contest else "",
            "peer_time_ns": math.nan if p is None else float(p["time_median_ns"]),
            "peer_vs_ours": (math.nan if o is None or p is None
                             else float(p["time_median_ns"]) / float(o["time_median_ns"])),
            "noisy": noisy, "why": why,
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
    """What the report shows of the gate: verdict, failures and the speed
    verdicts that decide it (interleaved with --ab; a first look without)."""

    passed: bool
    settings: str
    failures: pd.DataFrame  # reason, case, detail
    cases: pd.DataFrame  # the speed verdicts, those that decide first
    counts: dict[str, int]  # the speed words and how many cases have each
    warnings: list[str]
    undecided: int = 0  # --ab: the inconclusive cases
    possible: int = 0  # without --ab: the possible slowdowns (a first look, not failures)
    settle: tuple[str, ...] = ()  # the commands that settle them


def gate_view(result: Any) -> GateView:
    """From a kbench.results.compare.GateResult: with --ab its interleaved
    verdicts (each with its interval and reason); without, the two runs'
    cases with the gate's first-look words, largest gated ratio first."""
    from kbench.results.compare import TWO_RUN_TEST, ab_tally, first_look_word, gated_sort

    comp = result.comparison
    failures = pd.DataFrame([{"reason": f.reason, "case": f.case, "detail": f.detail}
                             for f in result.failures], columns=["reason", "case", "detail"])
    if result.ab_paths:
        rows = [{"case": v.label, "median_ratio": v.stats.median_ratio if v.stats else math.nan,
                 "ci_low": v.stats.ci_low if v.stats else math.nan,
                 "ci_high": v.stats.ci_high if v.stats else math.nan, "verdict": v.verdict,
                 "why": v.stats.reason if v.stats else v.detail, "source": v.source}
                for v in result.interleaved]
        cols = ["case", "median_ratio", "ci_low", "ci_high", "verdict", "why", "source"]
        settings = (f"speed from the interleaved run(s) {result.ab_path} at the limit "
                    f"±{comp.max_slowdown:.1%}, alpha {comp.alpha:g}: slower (the interval "
                    "above the limit) fails, inconclusive (it straddles it) is listed with the "
                    "command that settles it, not slower, same and faster pass")
        return GateView(result.passed, settings, failures, pd.DataFrame(rows, columns=cols),
                        ab_tally(result.interleaved), list(comp.warnings),
                        undecided=len(result.undecided),
                        settle=tuple(result.settle_commands()))
    cols = ["case", "base_median_ns", "cand_median_ns", "gated_ratio", "ratio", "pass_ratio",
            "p_slower", "verdict", "note"]
    timed = gated_sort(comp.timed())
    rows = [{"case": c.label, "base_median_ns": c.base_median_ns,
             "cand_median_ns": c.cand_median_ns,
             "gated_ratio": c.gated_ratio if math.isfinite(c.log_ratio) else math.nan,
             "ratio": c.ratio, "pass_ratio": c.pass_ratio, "p_slower": c.p_slower,
             "verdict": first_look_word(c, comp), "note": c.note} for c in timed]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    settings = (f"a first look: two runs measured apart never fail the gate on speed; slowdown "
                f"limit {comp.max_slowdown:.1%}, alpha {comp.alpha:g} ({comp.test or TWO_RUN_TEST}"
                ", Holm-adjusted; gated ratio = the ratio of the per-pass geometric means the "
                "test judged; a possible slowdown must show in more than half of the passes; "
                "settle it with kbench ab)")
    return GateView(result.passed, settings, failures, pd.DataFrame(rows, columns=cols), counts,
                    list(comp.warnings), possible=len(result.first_look),
                    settle=tuple(f.settle for f in result.first_look if f.settle))


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

def _winners(table: pd.DataFrame, column: str) -> tuple[pd.Series, int]:
    """(wins per realization over the shapes with a winner, shapes without)."""
    named = table[table[column].astype(str) != ""]
    return named[column].astype(str).value_counts(), len(table) - len(named)


def _fastest_text(wins: pd.Series, single: int, shapes: int, what: str) -> str:
    if not len(wins):
        return (f"no winner: one kernel {what} on each of the {shapes} shape(s) (B forms of "
                "one kernel are no contest)")
    top, n = str(wins.index[0]), int(wins.iloc[0])
    contested = int(wins.sum())
    return (f"{top} on {n} of {contested} shape(s) with two or more kernels {what}"
            + (f"; {len(wins) - 1} other realization(s) on the rest" if len(wins) > 1 else "")
            + (f"; {single} shape(s) with one kernel {what}: no winner" if single else ""))


def _fastest_answers(fastest: pd.DataFrame, fastest_counts: pd.DataFrame | None,
                     emulated_only: bool, has_counts: bool) -> list[Answer]:
    """"Fastest per shape?" from the metric valid on each target: median
    times on hardware, exact instruction counts (the fewest per call) on
    emulated targets; a winner only where two or more kernels were measured."""
    out = []
    counted = fastest_counts if fastest_counts is not None else pd.DataFrame()
    if len(fastest):
        wins, single = _winners(fastest, "winner")
        out.append(Answer(QUESTIONS[1], _fastest_text(wins, single, len(fastest),
                                                              "timed"), "performance", "note"))
    if len(counted):
        wins, single = _winners(counted, "winner")
        question = QUESTIONS[1] if not out else "Fewest instructions per shape?"
        out.append(Answer(question, "by exact instruction counts per call (emulated: counts, "
                          "not time): " + _fastest_text(wins, single, len(counted), "counted"),
                          "counts", "note"))
    if out:
        return out
    if emulated_only:
        return [Answer(QUESTIONS[1], "emulated timings are not speed"
                       + (": see the instruction counts" if has_counts else
                          " and no instruction counts were taken (kbench run --count-method "
                          "tb)"), "counts" if has_counts else "emulated", "note")]
    return [Answer(QUESTIONS[1], "no timed results", "performance", "note")]

@dataclass(frozen=True)
class Answer:
    """One question the report's header answers, with a link to its section."""

    question: str
    text: str
    anchor: str  # the section it links to
    cls: str  # pass | fail | note


FAILED_STATUSES = ("fail", "error", "crashed", "exited", "timeout")
# the questions the header answers, in order (the README's picture caption names them:
# docs/gen/kbdocs.py report_caption)
QUESTIONS = ("Correct?", "Fastest per shape?", "Regressed?", "Trend?")


def answers(results: pd.DataFrame, complete: bool, fastest: pd.DataFrame,
            speedup_vs_baseline: pd.DataFrame, counts_vs_committed: pd.DataFrame,
            gate: GateView | None, has_baseline: bool, trend_runs: int,
            emulated_only: bool, has_counts: bool = False,
            fastest_counts: pd.DataFrame | None = None) -> tuple[str, list[Answer]]:
    """The worst status of the run (failed, regressed, incomplete,
    inconclusive (the gate passed with speed verdicts left to drift), all pass;
    "no results" for an empty run) and the four answers: correct? fastest
    per shape? regressed against the baseline? trend over the history?"""
    status = results["status"].astype(str) if len(results) else pd.Series([], dtype=str)
    bad = int(status.isin(FAILED_STATUSES).sum())
    out = []
    if not len(results):
        out.append(Answer(QUESTIONS[0], "no results recorded", "verdicts", "note"))
    elif bad:
        out.append(Answer(QUESTIONS[0], f"no: {bad} of {len(results)} results failed or errored",
                          "verdicts", "fail"))
    else:
        out.append(Answer(QUESTIONS[0], f"yes: all {len(results)} results pass"
                          + ("" if complete else " (of an incomplete run)"), "verdicts", "pass"))
    out += _fastest_answers(fastest, fastest_counts, emulated_only, has_counts)
    grown = (counts_vs_committed[counts_vs_committed["verdict"] == "regression"]
             if len(counts_vs_committed) and "verdict" in counts_vs_committed else
             counts_vs_committed.iloc[0:0])
    regressed = False
    unsure = 0
    if gate is not None:
        regressed = not gate.passed
        unsure = gate.undecided if gate.passed else 0
        also = (f"; {unsure} speed verdict(s) inconclusive at the limit (settle with kbench ab "
                "--settle)" if unsure else
                f"; {gate.possible} possible slowdown(s) (a first look, not gated: settle with "
                "kbench ab)" if gate.possible else "")
        text = ("gate: PASSED" + also if gate.passed else
                f"gate: FAILED ({len(gate.failures)} failure(s))")
        out.append(Answer(QUESTIONS[2], text, "gate",
                          "fail" if not gate.passed else "note" if unsure or gate.possible
                          else "pass"))
    elif has_baseline and len(speedup_vs_baseline):
        slower = int((speedup_vs_baseline["time_change"] > 0.05).sum())
        out.append(Answer(QUESTIONS[2], f"{slower} of {len(speedup_vs_baseline)} case(s) more "
                          "than 5% slower than the baseline (not gated: kbench gate judges "
                          "significance)", "baseline", "note"))
    elif len(grown):
        regressed = True
        out.append(Answer(QUESTIONS[2], f"{len(grown)} counted case(s) grew past the committed "
                          "baseline", "counts", "fail"))
    else:
        out.append(Answer(QUESTIONS[2], "no baseline given (kbench report RUN --baseline REF)",
                          "baseline", "note"))
    if trend_runs:
        out.append(Answer(QUESTIONS[3], f"{trend_runs} run(s) of this machine in the history",
                          "history", "note"))
    else:
        out.append(Answer(QUESTIONS[3], "no history shown (kbench report RUN --history)", "",
                          "note"))
    worst = ("no results" if not len(results) else "failed" if bad else
             "regressed" if regressed else "incomplete" if not complete else
             "inconclusive" if unsure else "all pass")
    return worst, out
