"""The report's performance section on hardware: timed rows (never
emulated), GFLOP/s per shape and realization with the fastest marked, the
speedup over the scalar reference and over a baseline run, per-model
totals, the tuning view, what a weight costs at load, and the plots of
them. Times measured under emulation are their own table, labelled, and
never enter GFLOP/s, speedup, baseline or per-model comparisons."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

from kbench.results import report_views as views
from kbench.results.noise import NOISY_CV
from kbench.results.report_html import (
    NA,
    Cell,
    HtmlTable,
    format_cell,
    legend_below,
)
from kbench.results.report_verdicts import (
    BACKEND_ORDER,
    clean_text,
)
from kbench.results.runfolder import Run

EMULATED_LABEL = "emulated — not a speed"


REFERENCE = {"gemm": "gemm_scalar_f32acc", "conv2d": "conv2d_direct_scalar_f32acc"}


CASE_KEY = ["target", "op", "catalog", "case", "shape", "kind"]


PERF_KEY = [*CASE_KEY, "realization", "b_form", "threads"]


BEST = "best per shape"


def emulated_mask(run: Run, df: pd.DataFrame | None = None) -> pd.Series:
    """Rows (of the run's results, or of `df`) timed under emulation: flagged
    in the row or on an emulated target."""
    targets = run.meta.get("targets") or {}
    emulated = {spec for spec, t in targets.items() if isinstance(t, dict) and t.get("emulated")}
    df = run.results if df is None else df
    return df["emulated"].astype(bool) | df["target"].isin(emulated)


def _series_labels(df: pd.DataFrame) -> list[str]:
    """A realization's name, plus the B form where it varies on one shape
    (a catalog whose every case takes one B form gives one series per
    realization, not a column per form) and the thread count where it varies."""
    if {"target", "catalog", "case"} <= set(df.columns) and len(df):
        forms = (df.groupby(["realization", "target", "catalog", "case"])["b_form"].nunique()
                 .groupby(level=0).max())
    else:
        forms = df.groupby("realization")["b_form"].nunique()
    threads = df.groupby("realization")["threads"].nunique()
    labels = []
    for real, form, thr in zip(df["realization"], df["b_form"], df["threads"], strict=True):
        label = str(real)
        if forms[real] > 1:  # every realization of df is in its own groupby
            label += f" B:{form}"
        if threads[real] > 1 or thr > 1:
            label += f" ×{thr}t"
        labels.append(label)
    return labels


def _perf_rows(run: Run, emulated: bool) -> pd.DataFrame:
    perf = clean_text(run.perf_pooled())  # the passes of a case as one row, so one per PERF_KEY
    rows = perf[emulated_mask(run, perf) == emulated].copy()
    rows["series"] = _series_labels(rows)
    return rows


def timed_rows(run: Run) -> pd.DataFrame:
    """Timed rows measured on hardware (never emulated), with GFLOP/s filled in
    from flops and the median time where the row lacks it."""
    rows = _perf_rows(run, emulated=False)
    derived = rows["flops"] / rows["time_median_ns"].where(rows["time_median_ns"] > 0)
    rows["gflops"] = rows["gflops"].fillna(derived)
    return rows.sort_values(PERF_KEY, kind="stable").reset_index(drop=True)


GFLOPS_COLUMNS = ["target", "op", "catalog", "case", "shape", "kind", "series", "realization",
                  "kernel", "backend", "accum", "b_form", "threads", "m", "n", "k", "layers",
                  "flops", "rounds", "reps_per_round", "time_min_ns", "time_median_ns",
                  "time_stdev_ns", "cv", "noisy", "gflops", "pack_time_ns"]


def noise_flags(run: Run) -> tuple[set[str], float]:
    """The cases the run's progress lines called NOISY ("target realization
    catalog/case", run.json's noise record) and the CV threshold it used."""
    noise = run.meta.get("noise")
    noise = noise if isinstance(noise, dict) else {}
    try:
        threshold = float(noise.get("threshold", NOISY_CV))
    except (TypeError, ValueError):
        threshold = NOISY_CV
    return {str(k) for k in noise.get("noisy") or ()}, threshold


def gflops_table(run: Run) -> pd.DataFrame:
    """GFLOP/s per shape per realization (hardware timings only), each row's
    CV and whether it is NOISY: named so by the run (its noisiest pass over
    the threshold, as the terminal said) or with a pooled CV over it."""
    rows = timed_rows(run)
    rows["cv"] = rows["time_stdev_ns"] / rows["time_mean_ns"]  # pandas: x / 0 is inf, silently
    listed, threshold = noise_flags(run)
    keys = (rows["target"] + " " + rows["realization"] + " " + rows["catalog"] + "/"
            + rows["case"])
    rows["noisy"] = keys.isin(listed) | (rows["cv"] > threshold)
    if "kernel" not in rows:
        rows["kernel"] = ""
    rows["kernel"] = rows["kernel"].where(rows["kernel"] != "", rows["realization"])
    return rows[GFLOPS_COLUMNS]


LOAD_COST_COLUMNS = ["target", "realization", "measure", "cases", "call", "pack_b",
                     "pack_b_per_call"]


def load_cost(gflops: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """What a weight costs at load beside what a call costs, per realization
    over the cases where B was packed on its own: on hardware the median
    time of packing B and of the call (summed over the cases); on emulated
    targets the exact instructions of pack_b and of the call. pack_b_per_call:
    how many calls one packing costs."""
    rows = []
    for frame, call_col, pack_col, measure in (
            (gflops, "time_median_ns", "pack_time_ns", "median time, ns (sum over cases)"),
            (counts, "count_call", "count_pack_b", "instructions (sum over cases)")):
        if frame.empty or pack_col not in frame or call_col not in frame:
            continue
        packed = frame[(pd.to_numeric(frame[pack_col], errors="coerce") > 0)
                       & (pd.to_numeric(frame[call_col], errors="coerce") > 0)]
        for (target, real), g in packed.groupby(["target", "realization"], sort=False):
            call = float(pd.to_numeric(g[call_col]).sum())
            pack = float(pd.to_numeric(g[pack_col]).sum())
            rows.append({"target": target, "realization": real, "measure": measure,
                         "cases": len(g), "call": call, "pack_b": pack,
                         "pack_b_per_call": pack / call})
    return pd.DataFrame(rows, columns=LOAD_COST_COLUMNS)


EMULATED_COLUMNS = ["target", "op", "catalog", "case", "shape", "kind", "series", "realization",
                    "b_form", "threads", "rounds", "reps_per_round", "time_min_ns",
                    "time_median_ns", "time_stdev_ns", "label"]


def emulated_times(run: Run) -> pd.DataFrame:
    """Times recorded under emulation: shown, labelled, never compared."""
    rows = _perf_rows(run, emulated=True)
    rows["label"] = EMULATED_LABEL
    return rows.sort_values(PERF_KEY, kind="stable")[EMULATED_COLUMNS].reset_index(drop=True)


def _reference_times(timed: pd.DataFrame) -> pd.DataFrame:
    """Per case: the scalar reference's median time (fewest threads, best B form)."""
    cols = [*CASE_KEY, "ref_realization", "ref_threads", "ref_time_median_ns"]
    preferred = timed["realization"] == timed["op"].map(REFERENCE)
    rank = np.where(preferred, 0, np.where(timed["backend"] == "scalar", 1, -1))
    cand = timed.assign(_rank=rank)
    cand = cand[cand["_rank"] >= 0].sort_values(["_rank", "threads", "time_median_ns"])
    ref = cand.drop_duplicates(CASE_KEY, keep="first")
    ref = ref.rename(columns={"realization": "ref_realization", "threads": "ref_threads",
                              "time_median_ns": "ref_time_median_ns"})
    return ref[cols]


SPEEDUP_SCALAR_COLUMNS = [*CASE_KEY, "series", "realization", "b_form", "threads", "layers",
                          "time_median_ns", "ref_realization", "ref_threads",
                          "ref_time_median_ns", "speedup"]


def speedup_vs_scalar(run: Run) -> pd.DataFrame:
    """Speedup of every timed row over the scalar reference on the same case
    (reference median time / median time; hardware timings only)."""
    timed = timed_rows(run)
    if timed.empty:
        return pd.DataFrame(columns=SPEEDUP_SCALAR_COLUMNS)
    out = timed.merge(_reference_times(timed), on=CASE_KEY, how="left")
    out["speedup"] = _ratio(out["ref_time_median_ns"], out["time_median_ns"])
    return out[SPEEDUP_SCALAR_COLUMNS]


def _ratio(num: pd.Series, den: pd.Series) -> pd.Series:
    num = pd.to_numeric(num, errors="coerce").astype(float)
    den = pd.to_numeric(den, errors="coerce").astype(float)
    return num / den.where(den > 0)


SPEEDUP_BASELINE_COLUMNS = [*PERF_KEY, "series", "time_median_ns", "baseline_time_median_ns",
                            "speedup", "time_change", "gflops", "baseline_gflops", "presence"]


PRESENCE = {"both": "both", "left_only": "no baseline row", "right_only": "only in baseline"}


def speedup_vs_baseline(run: Run, baseline: Run | None) -> pd.DataFrame:
    """Per timed row: the baseline's median time for the same case,
    realization, B form and thread count, the speedup (baseline / run) and
    the relative time change. Rows on one side only are kept and say so."""
    if baseline is None:
        return pd.DataFrame(columns=SPEEDUP_BASELINE_COLUMNS)
    cur = timed_rows(run)[[*PERF_KEY, "series", "time_median_ns", "gflops"]]
    base = timed_rows(baseline)[[*PERF_KEY, "time_median_ns", "gflops"]]
    base = base.rename(columns={"time_median_ns": "baseline_time_median_ns",
                                "gflops": "baseline_gflops"})
    out = cur.merge(base, on=PERF_KEY, how="outer", indicator=True)
    out["presence"] = out["_merge"].astype(str).map(PRESENCE)
    out["series"] = out["series"].fillna(out["realization"])
    out["speedup"] = _ratio(out["baseline_time_median_ns"], out["time_median_ns"])
    out["time_change"] = _ratio(out["time_median_ns"], out["baseline_time_median_ns"]) - 1.0
    out = out.sort_values(PERF_KEY, kind="stable")
    return out[SPEEDUP_BASELINE_COLUMNS].reset_index(drop=True)


MODEL_COLUMNS = ["target", "model", "series", "realization", "b_form", "threads", "shapes",
                 "shapes_in_model", "complete", "layers", "total_time_ns", "total_gflop",
                 "gflops", "scalar_time_ns", "speedup_vs_scalar"]


def _is_ours(realization: str) -> bool:
    """Peer realizations (kbench.peers) are named after their library."""
    return not str(realization).startswith(PEER_PREFIXES)


PEER_PREFIXES = ("ort_",)


def _our_realizations(rows: pd.DataFrame) -> set[str]:
    """Realizations of the rows that belong to kbench's own backends (not a peer's,
    whatever its entry point is called, nor a plugin's)."""
    if "backend" not in rows:
        return set(rows["realization"])
    return set(rows.loc[rows["backend"].isin(BACKEND_ORDER), "realization"])


def model_totals(run: Run) -> pd.DataFrame:
    """Per model (catalog) and realization: the time of one pass over the
    model, each shape's median time weighted by its layer count, plus the
    best realization per shape. A realization that lacks some of the model's
    shapes has an incomplete total and no speedup."""
    timed = timed_rows(run)
    timed = timed[timed["time_median_ns"].notna() & (timed["catalog"] != "")]
    if timed.empty:
        return pd.DataFrame(columns=MODEL_COLUMNS)
    group = ["target", "catalog", "series", "realization", "b_form", "threads"]
    # one time per case and series (the mean over input kinds, if several)
    per_case = timed.groupby([*group, "case"], sort=False).agg(
        time=("time_median_ns", "mean"), flops=("flops", "first"), layers=("layers", "first"),
    ).reset_index()
    # the best per shape is ours: a peer library's or a plugin's time is never credited to us
    ours_names = _our_realizations(timed)
    ours = per_case[per_case["realization"].map(lambda r: _is_ours(r) and r in ours_names)]
    best = ours.sort_values("time").drop_duplicates(["target", "catalog", "case"])
    best = best.assign(series=BEST, realization="(fastest per shape)", b_form="-", threads=0)
    per_case = pd.concat([per_case, best], ignore_index=True)
    per_case["weighted_time"] = per_case["layers"] * per_case["time"]
    per_case["weighted_flops"] = per_case["layers"] * per_case["flops"]
    out = per_case.groupby(group, sort=False).agg(
        shapes=("case", "nunique"), layers=("layers", "sum"),
        total_time_ns=("weighted_time", "sum"), weighted_flops=("weighted_flops", "sum"),
    ).reset_index()
    in_model = timed.groupby(["target", "catalog"])["case"].nunique().rename("shapes_in_model")
    out = out.merge(in_model.reset_index(), on=["target", "catalog"])
    out["complete"] = out["shapes"] == out["shapes_in_model"]
    out["total_gflop"] = out["weighted_flops"] / 1e9
    out["gflops"] = _ratio(out["weighted_flops"], out["total_time_ns"])
    out = out.merge(_reference_model_times(timed), on=["target", "catalog"], how="left")
    out["speedup_vs_scalar"] = _ratio(out["scalar_time_ns"], out["total_time_ns"])
    out.loc[~out["complete"], "speedup_vs_scalar"] = np.nan
    out = out.rename(columns={"catalog": "model"})
    out["_best"] = out["series"] == BEST
    out = out.sort_values(["target", "model", "_best", "series"], kind="stable")
    return out[MODEL_COLUMNS].reset_index(drop=True)


def _reference_model_times(timed: pd.DataFrame) -> pd.DataFrame:
    """The scalar reference's weighted total per model (NaN if it misses a shape);
    a shape's time is the mean over its input kinds, as in the realizations' totals."""
    ref = _reference_times(timed).groupby(["target", "catalog", "case"], sort=False)[
        "ref_time_median_ns"].mean().reset_index()
    layers = timed.drop_duplicates(["target", "catalog", "case"])[
        ["target", "catalog", "case", "layers"]]
    cases = layers.merge(ref, on=["target", "catalog", "case"], how="left")
    cases["weighted"] = cases["layers"] * cases["ref_time_median_ns"]
    tot = cases.groupby(["target", "catalog"]).agg(
        scalar_time_ns=("weighted", lambda s: s.sum() if s.notna().all() else np.nan))
    return tot.reset_index()


def tuning_table(run: Run) -> pd.DataFrame:
    """The tuning view (a `kbench tune` run): per shape, each candidate's
    median time, the winner, the default dispatch's choice and the gain of
    the winner over it. Candidates that failed verification have no time;
    one timed without a median (NaN) is listed as n/a and never wins."""
    cols = ["catalog", "case", "shape", "candidates", "winner", "winner_time_ns", "default",
            "default_time_ns", "gain_over_default"]
    df = run.results
    df = df[df["suite"] == "tune"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    defaults = run.meta.get("tuning_defaults") or {}
    rows = []
    for (catalog, case), g in df.groupby(["catalog", "case"], sort=False):
        ok = g[(g["status"].isin(["pass", "mistrusted"])) & (g["rounds"] > 0)]
        timed = dict(zip(ok["realization"], ok["time_median_ns"], strict=True))
        times = {r: t for r, t in timed.items() if t == t}
        parts = ([f"{r} {t / 1e3:.1f} us" for r, t in sorted(times.items(), key=lambda x: x[1])]
                 + [f"{r} {NA}" for r in sorted(set(timed) - set(times))])
        refused = sorted(set(g["realization"]) - set(timed))
        if refused:
            parts.append("not eligible: " + ", ".join(refused))
        cand = "; ".join(parts)
        winner = min(times, key=times.__getitem__) if times else ""
        default = defaults.get(case, "")
        wt = times.get(winner, np.nan)
        dt = times.get(default, np.nan)
        rows.append({"catalog": catalog, "case": case, "shape": g["shape"].iloc[0],
                     "candidates": cand, "winner": winner, "winner_time_ns": wt,
                     "default": default, "default_time_ns": dt,
                     "gain_over_default": dt / wt if wt and wt == wt and dt == dt else np.nan})
    return pd.DataFrame(rows, columns=cols)


def _shape_labels(df: pd.DataFrame) -> list[str]:
    """One y tick per case: its shape and, when it recurs in the model, ×layers."""
    cases = df.drop_duplicates("case")
    return [f"{s} ×{n}" if n > 1 else str(s)
            for s, n in zip(cases["shape"], cases["layers"], strict=True)]


def _grouped_barh(ax: Any, df: pd.DataFrame, cases: list[str], value: str,
                  colors: dict[str, Any], series: Sequence[str]) -> None:
    """Horizontal bars, one group per case (top to bottom), one bar per
    series the case has, the group centred on the case's label whatever the
    number of series it has (a shape with one realization: one bar on it)."""
    parts = {name: df[df["series"] == name].drop_duplicates("case").set_index("case")[value]
             for name in series}
    present = [[n for n in series if c in parts[n].index] for c in cases]
    height = 0.8 / max([len(p) for p in present] + [1])
    slot = {(c, n): -(i + (r - (len(p) - 1) / 2) * height)
            for i, (c, p) in enumerate(zip(cases, present, strict=True))
            for r, n in enumerate(p)}
    for name in series:
        mine = [c for c in cases if (c, name) in slot]
        vals = [float(parts[name].get(c, np.nan)) for c in mine]
        ys = [slot[c, name] for c in mine]
        ax.barh(ys, vals, height=height, color=colors[name], label=name)
        for y, v in zip(ys, vals, strict=True):
            if np.isnan(v):  # timed, but no time came back
                ax.text(0, y, " no time", va="center", fontsize="x-small", color="0.35")
    ax.set_yticks([-i for i in range(len(cases))])
    ax.set_ylim(-len(cases) + 0.5, 0.5)
    ax.grid(axis="x", alpha=0.3)


def speedup_rows(speedups: pd.DataFrame) -> pd.DataFrame:
    """The speedups worth showing: every realization but the reference itself
    (its speedup over itself is 1 by definition), with a speedup."""
    shown = speedups["speedup"] > 0
    if "realization" in speedups and "ref_realization" in speedups:
        shown &= speedups["realization"] != speedups["ref_realization"]
    return speedups[shown]


def plot_performance(gflops: pd.DataFrame, speedups: pd.DataFrame, target: str, catalog: str,
                     colors: dict[str, Any]) -> Figure:
    """GFLOP/s and speedup over the scalar reference per shape and
    realization; the speedup panel only when some realization other than
    the reference was timed on a shape the reference was timed on (the
    rows of the speedup table: no bars without rows)."""
    g = gflops[(gflops["target"] == target) & (gflops["catalog"] == catalog)]
    s = speedup_rows(speedups[(speedups["target"] == target)
                              & (speedups["catalog"] == catalog)])
    series = sorted(g["series"].unique(), key=lambda n: ("scalar" not in n, n))
    cases = list(dict.fromkeys(g["case"]))
    # compact: thin bars, at most 14 inches however many shapes and series
    height = 1.6 + 0.25 * math.ceil(len(series) / 3) + len(cases) * max(0.3, 0.09 * len(series))
    fig = Figure(figsize=(12 if len(s) else 7, min(height, 14)), layout="constrained")
    if len(s):
        ax_g, ax_s = fig.subplots(1, 2, sharey=True)
    else:
        ax_g, ax_s = fig.subplots(), None
    _grouped_barh(ax_g, g, cases, "gflops", colors, series)
    ax_g.set_yticklabels(_shape_labels(g))
    ax_g.set_xlabel("GFLOP/s (flops per call / median time)")
    ax_g.set_ylabel("shape (×N: N layers)")
    ax_g.set_title("throughput")
    if ax_s is not None:
        _grouped_barh(ax_s, s, cases, "speedup", colors,
                      [n for n in series if n in set(s["series"])])
        ax_s.axvline(1.0, color="black", lw=0.8)
        ax_s.set_xlabel("speedup over the scalar reference (×)")
        ax_s.set_title("speedup over the scalar reference")
    legend_below(fig, ax_g)
    fig.suptitle(f"{catalog} on {target}", fontweight="bold")
    return fig


def plot_baseline(table: pd.DataFrame, colors: dict[str, Any]) -> Figure:
    """Speedup over the baseline per realization: one dot per shape and a
    bar at their geometric mean."""
    both = table[table["speedup"] > 0]
    series = sorted(both["series"].unique())
    fig = Figure(figsize=(11, 1.6 + 0.42 * max(len(series), 1)), layout="constrained")
    ax = fig.subplots()
    for i, name in enumerate(series):
        vals = both.loc[both["series"] == name, "speedup"].to_numpy(dtype=float)
        geo = float(np.exp(np.log(vals).mean()))
        color = colors.get(name, "0.5")
        ax.barh(-i, geo, height=0.6, color=color, alpha=0.45)
        ax.scatter(vals, np.full(len(vals), -i), color=color, s=16, zorder=3,
                   edgecolors="black", linewidths=0.4)
    lo, hi = float(both["speedup"].min()), float(both["speedup"].max())
    if hi / lo > 4:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}×"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:.2f}×"))
    ax.axvline(1.0, color="black", lw=0.8)
    ax.set_yticks([-i for i in range(len(series))])
    ax.set_yticklabels(series)
    ax.set_xlabel("speedup over the baseline (baseline median / run median; above 1: faster)")
    ax.set_title("against the baseline: bar = geometric mean, dots = shapes")
    ax.grid(axis="x", alpha=0.3)
    return fig


def plot_model_totals(table: pd.DataFrame, colors: dict[str, Any]) -> Figure:
    """Time of one pass over each model per realization (complete totals only)."""
    done = table[table["complete"].astype(bool) & table["total_time_ns"].notna()]
    groups = list(done.groupby(["target", "model"], sort=False))
    ncols = 2 if len(groups) > 1 else 1
    nrows = max(math.ceil(len(groups) / ncols), 1)
    per_row = max((g["series"].nunique() for _, g in groups), default=1)
    fig = Figure(figsize=(12, nrows * (1.3 + 0.32 * per_row)), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, ((target, model), g) in zip(axes, groups, strict=False):
        g = g.sort_values("total_time_ns")
        ms = g["total_time_ns"].to_numpy(dtype=float) / 1e6
        ys = -np.arange(len(g))
        bars = ax.barh(ys, ms, color=[colors.get(n, "0.5") for n in g["series"]])
        ax.bar_label(bars, labels=[f" {v:.3g} ms" for v in ms], fontsize="x-small")
        ax.set_xlim(0, max(ms) * 1.18 if len(ms) else 1)
        ax.set_yticks(ys)
        ax.set_yticklabels(g["series"], fontsize="small")
        ax.set_xlabel("ms per model pass (shapes weighted by layer count)")
        partial = table[(table["target"] == target) & (table["model"] == model)
                         & ~table["complete"].astype(bool)]["series"].nunique()
        ax.set_title(f"{model} on {target}"
                     + (f" ({partial} more lack some of its shapes: no total)" if partial
                        else ""), fontsize="medium")
        ax.grid(axis="x", alpha=0.3)
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    fig.suptitle("per-model totals (shorter is faster)", fontweight="bold")
    return fig


def gflops_pivot(gflops: pd.DataFrame) -> HtmlTable:
    """Shapes as rows, realizations as columns, GFLOP/s in the cells; where
    there is a winner (two or more kernels timed: kbench.results.report_views)
    the fastest of ours marked (class best, ★) and the fastest peer (class
    best-peer, ☆), a NOISY time said so; the names are in the fastest-per-
    shape table, so the pivot stays as narrow as its series allow."""
    series = sorted(gflops["series"].unique(), key=lambda n: (views.is_peer(n), n))
    several = gflops["target"].nunique() > 1
    table = HtmlTable([*(["target"] if several else []), "catalog", "shape", "layers",
                       *series])
    fastest = views.fastest_per_shape(gflops).set_index(["target", "catalog", "case"])
    for (target, catalog, case), g in gflops.groupby(["target", "catalog", "case"], sort=False):
        one = g.drop_duplicates("series").set_index("series")
        vals = one["gflops"]
        noisy = one["noisy"] if "noisy" in one else pd.Series(False, index=one.index)
        first = g.iloc[0]
        best = fastest.loc[(target, catalog, case)]
        row = [Cell(str(target))] if several else []
        row += [Cell(str(catalog)), Cell(str(first["shape"])), Cell(str(first["layers"]), "num")]
        for s in series:
            cell = format_cell("gflops", float(vals.get(s, np.nan)))
            if s in vals.index and cell.text == "–":  # timed, but no median came back
                cell = Cell(NA, cell.cls)
            elif s in vals.index and bool(noisy.get(s, False)):  # as the terminal said
                cell = Cell(f"{cell.text} NOISY", f"{cell.cls} noisy")
            if s == best["fastest_ours"] or (s == best["winner"] and not views.is_peer(s)):
                cell = Cell(f"★ {cell.text}", f"{cell.cls} best")
            elif s == best["fastest_peer"]:
                cell = Cell(f"☆ {cell.text}", f"{cell.cls} best-peer")
            row.append(cell)
        table.rows.append(row)
    return table


def presence_class(row: pd.Series) -> str:
    return "" if row["presence"] == "both" else "missing"

