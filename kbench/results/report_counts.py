"""The report's instruction-count tables (emulated targets): counts per
phase with the floor and efficiency, the instruction mix per phase, the
ratio to a baseline run, the diff against the committed baseline
(reference/counts/baseline.csv) and the ratio to the peer anchor table
(KleidiAI's measured counts). Emulated time never appears here."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from kbench.results import anchors as anc
from kbench.results import baseline as bl
from kbench.results.count_compare import CountComparison, canonical_target, compare_counts
from kbench.results.counts import CLASSES, COLUMNS, parse_mix
from kbench.results.runfolder import Run

KERNEL_MIX = [f"kernel_{c}" for c in CLASSES]
COUNT_TABLE = ["target", "count_cpu", "catalog", "case", "shape", "realization", "b_form",
               *COLUMNS, "count_floor", "count_floor_kind", "count_efficiency", *KERNEL_MIX,
               "count_method", "count_qemu"]
MIX_TABLE = ["target", "catalog", "case", "realization", "phase", *CLASSES, "total"]
DELTA_TABLE = ["target", "catalog", "case", "realization", "base_call", "call",
               "call_ratio", "kernel_ratio", "pack_b_ratio", "grew", "verdict"]
ANCHOR_TABLE = ["anchor", "peer_kernel", "source", "phase", "anchor_shape", "svl", "target",
                "realization", "case", "ours", "peer", "ratio", "best",
                "ours_outer_per_floor", "ours_without_checksum", "ratio_without_checksum"]


def counted(run: Run) -> pd.DataFrame:
    """Counted perf rows, one per target x case x realization (passes agree)."""
    df = run.results
    if "count_call" not in df.columns:
        return df.iloc[:0]
    df = df[(df["suite"] == "perf") & (df["count_call"] > 0)]
    return df.drop_duplicates(["target", "catalog", "case", "realization"])


def count_table(run: Run) -> pd.DataFrame:
    df = counted(run)
    if df.empty:
        return pd.DataFrame(columns=COUNT_TABLE)
    out = df.copy()
    mixes = [parse_mix(m).get("kernel") for m in out["count_mix"]]
    for c in CLASSES:
        out[f"kernel_{c}"] = [float(m.get(c, 0)) if m else math.nan for m in mixes]
    return out[COUNT_TABLE].reset_index(drop=True)


def mix_table(run: Run) -> pd.DataFrame:
    rows = []
    for r in counted(run).itertuples(index=False):
        for phase, m in parse_mix(r.count_mix).items():
            rows.append({"target": r.target, "catalog": r.catalog, "case": r.case,
                         "realization": r.realization, "phase": phase,
                         **{c: m.get(c, 0) for c in CLASSES}, "total": sum(m.values())})
    return pd.DataFrame(rows, columns=MIX_TABLE)


def delta_table(comp: CountComparison) -> pd.DataFrame:
    rows = []
    for d in comp.deltas:
        target, catalog, case, realization = d.key
        rows.append({"target": target, "catalog": catalog, "case": case,
                     "realization": realization,
                     "base_call": d.base.get("count_call", math.nan),
                     "call": d.cand.get("count_call", math.nan), "call_ratio": d.ratio(),
                     "kernel_ratio": d.ratio("count_kernel"),
                     "pack_b_ratio": d.ratio("count_pack_b"),
                     "grew": ", ".join(f"{p} {c - b:+,.0f}" for p, b, c in d.grown()),
                     "verdict": ("regression" if d in comp.regressions() else d.verdict)})
    return pd.DataFrame(rows, columns=DELTA_TABLE)


def vs_run(run: Run, baseline: Run | None) -> pd.DataFrame:
    """Counts against a baseline run (kbench report --baseline)."""
    if baseline is None:
        return pd.DataFrame(columns=DELTA_TABLE)
    return delta_table(compare_counts(counted(baseline).to_dict("records"),
                                      counted(run).to_dict("records")))


def vs_committed(run: Run, path: Path = bl.DEFAULT_CSV) -> pd.DataFrame:
    """Counts against the committed baseline, case by case for the cases this
    run counted on a target and catalog the baseline holds (a kernel change
    that costs instructions shows here; cases not in the baseline are "new")."""
    rows = bl.counted_rows(counted(run).to_dict("records"))
    try:
        baseline = bl.read_baseline(path)
    except bl.BaselineError:  # a malformed baseline is `kbench baseline`'s to refuse
        baseline = []
    keys = {tuple(r[k] for k in bl.KEY_COLUMNS) for r in rows}
    committed = [r for r in baseline if tuple(r[k] for k in bl.KEY_COLUMNS) in keys]
    if not committed:  # none of the run's cases, or a catalog or target it does not hold
        return pd.DataFrame(columns=DELTA_TABLE)
    return delta_table(compare_counts(committed, rows))


def anchor_table(run: Run, paths: tuple[Path, ...] = anc.DEFAULT_TABLES) -> pd.DataFrame:
    """Our counts against the peer anchor tables, on the shapes both cover:
    every anchor of a shape, the best one (the fewest instructions) marked,
    and our outer products against the floor."""
    tables = anc.load_tables(paths)
    matches = anc.match_tables(tables, counted(run).to_dict("records"))
    best = {id(m) for m in anc.best_matches(matches, phase=None)}
    rows = []
    for m in matches:
        wo = m.ours_without_checksum
        rows.append({"anchor": m.anchor.label, "peer_kernel": m.anchor.kernel,
                     "source": m.source,
                     "phase": m.anchor.phase, "anchor_shape": m.anchor.shape_str(),
                     "svl": m.svl or "any", "target": m.target, "realization": m.realization,
                     "case": m.case, "ours": m.ours, "peer": float(m.theirs),
                     "ratio": m.ratio, "best": "best" if id(m) in best else "",
                     "ours_outer_per_floor": m.outer_per_floor,
                     "ours_without_checksum": wo,
                     "ratio_without_checksum": wo / m.theirs})  # theirs > 0; NaN stays NaN
    return pd.DataFrame(rows, columns=ANCHOR_TABLE)


FASTEST_COUNT_COLUMNS = ["target", "catalog", "case", "shape", "counted", "kernels", "winner",
                         "call", "runner_up", "runner_up_vs_winner", "fewest_kernel",
                         "kernel_instructions", "fewest_pack_b", "pack_b", "principal",
                         "principal_per_floor", "why"]
MIN_KERNELS = 2  # a winner needs at least this many different kernels counted on the shape
PRINCIPAL = ("outer", "dot", "mla")  # the class of a kernel's principal instruction, first found


def _kernel_of(df: pd.DataFrame) -> pd.Series:
    kernel = df["kernel"].astype(str) if "kernel" in df else df["realization"].astype(str)
    return kernel.where(kernel != "", df["realization"].astype(str))


def _principal(row: pd.Series) -> tuple[str, float]:
    """The kernel's principal instructions (outer products, else dot
    products, else multiply-accumulates) as counted in its mix."""
    mix = parse_mix(str(row.get("count_mix", "") or "")).get("kernel") or {}
    for cls in PRINCIPAL:
        if mix.get(cls, 0):
            return cls, float(mix[cls])
    return "", math.nan


def fastest_by_counts(run: Run) -> pd.DataFrame:
    """Per counted shape on an emulated target, "fastest" by the metric that
    is valid there, exact instructions: the realization with the fewest
    instructions per call (the winner) when at least MIN_KERNELS different
    kernels were counted on it (B forms and blockings of one kernel are no
    contest), the runner-up of another kernel and its ratio to the winner,
    the fewest kernel instructions and the fewest to pack B on its own, and
    the winner's principal instructions (outer or dot products, or
    multiply-accumulates) against their floor."""
    df = counted(run)
    if df.empty:
        return pd.DataFrame(columns=FASTEST_COUNT_COLUMNS)
    df = df.assign(_kernel=_kernel_of(df))
    rows = []
    for (target, catalog, case), g in df.groupby(["target", "catalog", "case"], sort=False):
        g = g.sort_values(["count_call", "realization"])
        n = int(g["_kernel"].nunique())
        out: dict[str, Any] = {"target": target, "catalog": catalog, "case": case,
                               "shape": str(g["shape"].iloc[0]), "counted": len(g),
                               "kernels": n, "winner": "", "call": math.nan, "runner_up": "",
                               "runner_up_vs_winner": math.nan, "fewest_kernel": "",
                               "kernel_instructions": math.nan, "fewest_pack_b": "",
                               "pack_b": math.nan, "principal": "",
                               "principal_per_floor": math.nan, "why": ""}
        if n < MIN_KERNELS:
            out["why"] = ("one kernel counted (its B forms or blockings are no contest): "
                          "no winner")
            rows.append(out)
            continue
        w = g.iloc[0]
        other = g[g["_kernel"] != w["_kernel"]].iloc[0]
        kern = g[g["count_kernel"] > 0].sort_values(["count_kernel", "realization"])
        pack = g[g["count_pack_b"] > 0].sort_values(["count_pack_b", "realization"])
        cls, principal = _principal(w)
        floor = float(w.get("count_floor", math.nan) or math.nan)
        out.update(winner=str(w["realization"]), call=float(w["count_call"]),
                   runner_up=str(other["realization"]),
                   runner_up_vs_winner=float(other["count_call"]) / float(w["count_call"]),
                   principal=cls,
                   principal_per_floor=principal / floor if floor > 0 else math.nan)
        if len(kern):
            out.update(fewest_kernel=str(kern.iloc[0]["realization"]),
                       kernel_instructions=float(kern.iloc[0]["count_kernel"]))
        if len(pack):
            out.update(fewest_pack_b=str(pack.iloc[0]["realization"]),
                       pack_b=float(pack.iloc[0]["count_pack_b"]))
        rows.append(out)
    return pd.DataFrame(rows, columns=FASTEST_COUNT_COLUMNS)


COUNT_PANELS = (("count_call", "call", "whole call"), ("count_kernel", "kernel", "kernel"),
                ("count_pack_b", "pack_b", "packing B on its own"))


def plot_counts(counts: pd.DataFrame, anchors: pd.DataFrame, target: str,
                colors: dict[str, Any]) -> Any:
    """Instructions on each counted shape of one target, three panels (the
    whole call, its kernel, packing B on its own): every realization (ours
    and plugins') and every peer anchor of that shape and phase side by side
    on the shape's row, x = instructions / the fewest on that row (log; 1 =
    the fewest); each row names the fewest whole call."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter

    g = counts[(counts["target"] == target) & (counts["count_call"] > 0)]
    cases = list(dict.fromkeys(zip(g["catalog"], g["case"], strict=True)))
    reals = sorted(set(g["realization"]))
    a = anchors[anchors["target"] == target] if len(anchors) else anchors
    fig = Figure(figsize=(13, 1.9 + 0.32 * len(cases) + 0.22 * math.ceil(len(reals) / 3)),
                 layout="constrained")
    axes = fig.subplots(1, len(COUNT_PANELS), sharey=True)
    labels = []
    for i, (catalog, case) in enumerate(cases):
        rows = g[(g["catalog"] == catalog) & (g["case"] == case)]
        top = rows.sort_values(["count_call", "realization"]).iloc[0]
        labels.append(f"{rows['shape'].iloc[0]} — {top['realization']}")
        for ax, (column, phase, _) in zip(axes, COUNT_PANELS, strict=True):
            vals = rows[rows[column] > 0] if column in rows else rows.iloc[0:0]
            peers = a[(a["case"] == case) & (a["phase"] == phase)] if len(a) else a
            found = [*vals[column], *(peers["peer"] if len(peers) else [])]
            if not found:
                continue
            best = float(min(found))
            for _, r in vals.iterrows():
                ax.scatter(float(r[column]) / best, -i, s=26, zorder=3,
                           color=colors.get(str(r["realization"]), "0.5"),
                           edgecolors="black", linewidths=0.3)
            for _, r in peers.iterrows():
                ax.scatter(float(r["peer"]) / best, -i, s=46, marker="x", color="black",
                           zorder=4)
    for ax, (_, _, title) in zip(axes, COUNT_PANELS, strict=True):
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
        ax.axvline(1.0, color="black", lw=0.8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(title, fontsize="medium")
        ax.set_xlabel("instructions / the fewest on the shape")
    axes[0].set_yticks([-i for i in range(len(cases))], labels, fontsize="small")
    axes[0].set_ylim(-len(cases) + 0.5, 0.5)
    axes[0].set_ylabel("shape — the fewest instructions per call")
    handles = [Line2D([], [], marker="o", ls="", color=colors.get(r, "0.5"), label=r)
               for r in reals]
    if len(a):
        handles.append(Line2D([], [], marker="x", ls="", color="black",
                              label="peer anchor (their measured counts)"))
    if handles:
        widest = max(len(h.get_label()) for h in handles) + 6
        fig.legend(handles=handles, loc="outside lower center", fontsize="small",
                   frameon=False, ncol=max(1, min(len(handles), 150 // widest)))
    fig.suptitle(f"exact instructions on {target} (emulated: counts, not time), per shape",
                 fontweight="bold")
    return fig


def summary(run: Run) -> dict[str, str]:
    """QEMU version(s), counting method(s) and CPU(s) behind the counts."""
    df = counted(run)

    def values(col: str) -> str:
        return ", ".join(sorted({str(v) for v in df[col] if str(v)})) if not df.empty else ""
    return {"qemu": values("count_qemu"), "method": values("count_method"),
            "cpu": values("count_cpu")}


COUNT_NUMBERS = ("base_call", "call", "ours", "peer", "ours_without_checksum", "total",
                 *CLASSES)
PHASE_VIEW = ["catalog", "case", "shape", "realization", "b_form", "count_call",
              "count_validate", "count_checksum", "count_pack_lhs", "count_pack_rhs",
              "count_kernel", "count_other", "count_pack_b", "count_pack_b_checksum"]
EFFICIENCY_VIEW = ["catalog", "case", "shape", "realization", "count_kernel", "count_floor",
                   "count_floor_kind", "count_efficiency", *KERNEL_MIX]


def html_context(run: Run, tables: Any, html_table: Callable[..., Any]) -> dict[str, Any]:
    """The template's count section: one block per emulated target
    (`tables` is the report's ReportTables, `html_table` its formatter)."""
    counts: pd.DataFrame = tables.counts
    vs_run: pd.DataFrame = tables.counts_vs_baseline
    vs_committed: pd.DataFrame = tables.counts_vs_committed
    per_target = []
    for target, g in counts.groupby("target", sort=False):
        canonical = canonical_target(str(target))
        per_target.append({
            "target": target, "cpu": ", ".join(sorted(set(map(str, g["count_cpu"])))),
            "phases": html_table(g, PHASE_VIEW),
            "efficiency": html_table(g, EFFICIENCY_VIEW),
            "vs_run": html_table(vs_run[vs_run["target"] == canonical], DELTA_TABLE),
            "vs_committed": html_table(vs_committed[vs_committed["target"] == canonical],
                                       DELTA_TABLE),
        })
    anchors = tables.count_anchors
    infos = anc.load_tables()
    return {"count_targets": per_target, "count_summary": summary(run),
            "n_counted": len(counts),
            "count_anchors": html_table(anchors, ANCHOR_TABLE),
            "n_count_anchors": len(anchors), "anchor_infos": infos,
            "committed_baseline": str(bl.DEFAULT_CSV.relative_to(bl.DEFAULT_CSV.parents[2]))}
