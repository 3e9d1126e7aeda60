"""The report of a run folder: tables (pandas), plots (matplotlib, embedded
as PNG data URIs) and one self-contained HTML page (jinja2), plus one CSV
per table.

Times measured under emulation are shown in their own table, labelled as
such, and never enter GFLOP/s, speedup, baseline or per-model comparisons."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from kbench.judge import fingerprint as fprint
from kbench.judge.numbers import fixed, sig, time_unit
from kbench.judge.verdict import FAILING, FAULTS
from kbench.resources import resource_dir
from kbench.results import integrity, mutation, plugin_report
from kbench.results import report_counts as rcount
from kbench.results import report_views as views
from kbench.results.runfolder import Run, RunFolderError

TEMPLATE_DIR = resource_dir("reports")
TEMPLATE_NAME = "report.html.j2"
EMULATED_LABEL = "emulated — not a speed"
NA = "n/a"  # a time that was not measured (a NaN median)

STATUSES = ("pass", "fail", "mistrusted", "error", *FAULTS, "skip")
SEVERITY = (*FAULTS, "fail", "error", "mistrusted", "pass", "skip")  # worst first
BACKEND_ORDER = ("scalar", "neon", "sme")
# The scalar reference each operator's speedups are measured against; a
# group without it falls back to any realization of the scalar backend.
REFERENCE = {"gemm": "gemm_scalar_f32acc", "conv2d": "conv2d_direct_scalar_f32acc"}
REAL_KINDS = ("uniform", "normal")  # random real-valued inputs: the error trend
CASE_KEY = ["target", "op", "catalog", "case", "shape", "kind"]
PERF_KEY = [*CASE_KEY, "realization", "b_form", "threads"]
BEST = "best per shape"
BETTER, WORSE = 1.05, 1 / 1.05  # speedups outside these are highlighted


# ---------------------------------------------------------------- row selection

TEXT_COLUMNS = ("case", "op", "shape", "kind", "target", "backend", "realization", "kernel",
                "accum", "b_form", "status", "message", "catalog", "suite")


def _clean(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns as strings ("" where missing), whatever the run recorded."""
    return df.assign(**{c: df[c].fillna("").astype(str) for c in TEXT_COLUMNS if c in df})


def emulated_mask(run: Run, df: pd.DataFrame | None = None) -> pd.Series:
    """Rows (of the run's results, or of `df`) timed under emulation: flagged
    in the row or on an emulated target."""
    targets = run.meta.get("targets") or {}
    emulated = {spec for spec, t in targets.items() if isinstance(t, dict) and t.get("emulated")}
    df = run.results if df is None else df
    return df["emulated"].astype(bool) | df["target"].isin(emulated)


def _series_labels(df: pd.DataFrame) -> list[str]:
    """A realization's name, plus the B form and thread count where they vary."""
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
    perf = _clean(run.perf_pooled())  # the passes of a case as one row, so one per PERF_KEY
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


# ---------------------------------------------------------------------- tables

VERDICT_COLUMNS = ["target", "backend", "catalog", "cases", *STATUSES, "verdict"]


def verdict_matrix(results: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per target, backend and catalog (contract checks, which
    have no catalog, are listed under their suite), with the worst verdict."""
    if results.empty:
        return pd.DataFrame(columns=VERDICT_COLUMNS)
    results = _clean(results)
    column = results["catalog"].where(results["catalog"] != "", results["suite"])
    counts = pd.crosstab([results["target"], results["backend"], column.rename("catalog")],
                         results["status"])
    counts = counts.reindex(columns=list(STATUSES), fill_value=0).reset_index()
    counts["cases"] = counts[list(STATUSES)].sum(axis=1)
    counts["verdict"] = [next(s for s in SEVERITY if row[s] > 0 or s == "skip")
                         for _, row in counts.iterrows()]
    counts["_b"] = counts["backend"].map(_backend_rank)
    counts = counts.sort_values(["target", "_b", "backend", "catalog"]).drop(columns="_b")
    return counts[VERDICT_COLUMNS].reset_index(drop=True)


def _backend_rank(backend: str) -> int:
    return BACKEND_ORDER.index(backend) if backend in BACKEND_ORDER else len(BACKEND_ORDER)


FAILURE_COLUMNS = ["target", "realization", "catalog", "case", "kind", "status",
                   "max_err_bound", "max_ulp", "message"]


def failures(results: pd.DataFrame) -> pd.DataFrame:
    """Every failed or erroneous verdict."""
    bad = _clean(results)
    bad = bad[bad["status"].isin(FAILING)]
    return bad[FAILURE_COLUMNS].reset_index(drop=True)


GFLOPS_COLUMNS = ["target", "op", "catalog", "case", "shape", "kind", "series", "realization",
                  "backend", "accum", "b_form", "threads", "m", "n", "k", "layers", "flops",
                  "rounds", "reps_per_round", "time_min_ns", "time_median_ns", "time_stdev_ns",
                  "cv", "gflops", "pack_time_ns"]


def gflops_table(run: Run) -> pd.DataFrame:
    """GFLOP/s per shape per realization (hardware timings only)."""
    rows = timed_rows(run)
    rows["cv"] = rows["time_stdev_ns"] / rows["time_mean_ns"]  # pandas: x / 0 is inf, silently
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


ERROR_COLUMNS = ["target", "op", "realization", "accum", "k", "cases", "max_err_bound",
                 "max_ulp", "median_max_ulp", "max_rms_rel", "min_exact_fraction", "failed",
                 "mistrusted"]


def error_vs_k(results: pd.DataFrame) -> pd.DataFrame:
    """Observed error per realization and reduction length K, over the
    random real-valued inputs of the correctness suite. A case whose declared
    model bounds nothing (mistrusted, no bound) has no error/bound ratio."""
    results = _clean(results)
    judged = results["status"].isin(["pass", "fail", "mistrusted"])
    sel = results[judged & results["kind"].isin(REAL_KINDS) & (results["suite"] == "correctness")
                  & (results["k"] > 0)].copy()
    if sel.empty:
        return pd.DataFrame(columns=ERROR_COLUMNS)
    vacuous = (sel["status"] == "mistrusted") & sel["message"].str.contains("no bound")
    sel["max_err_bound"] = sel["max_err_bound"].where(~vacuous)
    out = sel.groupby(["target", "op", "realization", "accum", "k"], sort=True).agg(
        cases=("case", "size"),
        max_err_bound=("max_err_bound", "max"),
        max_ulp=("max_ulp", "max"),
        median_max_ulp=("max_ulp", "median"),
        max_rms_rel=("rms_rel", "max"),
        min_exact_fraction=("exact_fraction", "min"),
        failed=("status", lambda s: int((s == "fail").sum())),
        mistrusted=("status", lambda s: int((s == "mistrusted").sum())),
    ).reset_index()
    return out[ERROR_COLUMNS]


def error_sentence(table: pd.DataFrame) -> str:
    """What the error-vs-K table shows, computed from it: per accumulator,
    the worst ULP error and where (realization, K), and how the worst
    error/bound moves from the shortest to the longest K."""
    if table.empty:
        return ""
    parts = []
    for accum, rows in table.groupby("accum", sort=True):
        ulp = rows.dropna(subset=["max_ulp"])
        if ulp.empty:
            continue
        worst = ulp.loc[ulp["max_ulp"].idxmax()]
        ks = rows.groupby("k")["max_err_bound"].max().dropna()
        trend = ""
        if len(ks) > 1:
            trend = (f"; worst error/bound {sig(float(ks.iloc[0]), 3)} at K = {int(ks.index[0])} "
                     f"and {sig(float(ks.iloc[-1]), 3)} at K = {int(ks.index[-1])}")
        parts.append(f"{str(accum).upper()} accumulation: worst {sig(float(worst['max_ulp']), 3)} "
                     f"ULP ({worst['realization']}, K = {int(worst['k'])}){trend}")
    return ("; ".join(parts) + ".") if parts else ""


FINGERPRINT_COLUMNS = ["target", "realization", "catalog", "case", "kind", "k", "category",
                       "accum_model", "accum_match", "declared", "status", "op", "shape", "label"]
# the order rows are listed in: the outputs that show FP16 accumulation first
CATEGORY_ORDER = (fprint.FP16, "unexplained", fprint.FP32, fprint.INDISTINGUISHABLE)


def fingerprints(results: pd.DataFrame) -> pd.DataFrame:
    """Every fingerprinted result (kbench.fingerprint): the accumulation model
    that reproduces the output best, its bit-match fraction, its category
    (fp32, fp16, indistinguishable, unexplained) and a one-line label; the
    realization's declared accumulator beside it."""
    if "accum_model" not in results:
        return pd.DataFrame(columns=FINGERPRINT_COLUMNS)
    rows = _clean(results)
    rows = rows[rows["accum_model"].fillna("").astype(str) != ""].copy()
    if rows.empty:
        return pd.DataFrame(columns=FINGERPRINT_COLUMNS)
    rows["accum_match"] = pd.to_numeric(rows["accum_match"], errors="coerce").astype(float)
    rows["category"] = [fprint.category(m, x) for m, x in zip(rows["accum_model"],
                                                              rows["accum_match"], strict=True)]
    rows["label"] = [fprint.describe(m, x) for m, x in zip(rows["accum_model"],
                                                           rows["accum_match"], strict=True)]
    rows["declared"] = rows["accum"]
    rows["_c"] = rows["category"].map(CATEGORY_ORDER.index)
    rows = rows.sort_values(["target", "realization", "_c", "catalog", "case", "kind"],
                            kind="stable")
    return rows[FINGERPRINT_COLUMNS].reset_index(drop=True)


FINGERPRINT_SUMMARY_COLUMNS = ["target", "realization", "op", "declared", "results",
                               *CATEGORY_ORDER, "models", "fp16_cases"]
LISTED_CASES = 12  # fp16_cases names at most this many


def fingerprint_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per target and realization: how many fingerprinted results show FP16
    accumulation, no known model, FP32 accumulation or no difference between
    models; the models found (most frequent first); the cases that fell back
    to FP16 accumulation."""
    if table.empty:
        return pd.DataFrame(columns=FINGERPRINT_SUMMARY_COLUMNS)
    rows = []
    for (target, real), g in table.groupby(["target", "realization"], sort=False):
        counts = g["category"].value_counts()
        models = g.loc[g["category"] != fprint.INDISTINGUISHABLE, "accum_model"].value_counts()
        fp16 = list(dict.fromkeys(g.loc[g["category"] == fprint.FP16, "case"]))
        listed = ", ".join(fp16[:LISTED_CASES]) + (
            f", … ({len(fp16)} in all)" if len(fp16) > LISTED_CASES else "")
        rows.append({
            "target": target, "realization": real, "op": g["op"].iloc[0],
            "declared": g["declared"].iloc[0], "results": len(g),
            **{c: int(counts.get(c, 0)) for c in CATEGORY_ORDER},
            "models": ", ".join(f"{m} ×{n}" for m, n in models.items()),
            "fp16_cases": listed})
    return pd.DataFrame(rows, columns=FINGERPRINT_SUMMARY_COLUMNS)


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


META_FIELDS = ("host", "platform", "machine", "cpu_model", "python", "compiler", "c_flags",
               "git_commit", "git_dirty", "date", "command_line", "complete", "results")
TARGET_FIELDS = ("name", "kind", "emulated", "arch", "cpu_features", "sme_vector_bits",
                 "sve_vector_bits", "isa", "library_version", "realizations")


def _flat_meta(meta: dict[str, Any]) -> dict[str, str]:
    out = {}
    keys = [*META_FIELDS, *sorted(set(meta) - set(META_FIELDS) - {"targets", "summary"})]
    for key in keys:
        if key in meta:
            out[key] = _meta_text(meta[key])
    for spec, target in (meta.get("targets") or {}).items():
        if not isinstance(target, dict):
            continue
        for key in TARGET_FIELDS:
            if key in target:
                out[f"target {spec}: {key}"] = _meta_text(target[key])
    return out


def _meta_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v.get("name", v)) if isinstance(v, dict) else str(v)
                         for v in value)
    if value is None:
        return ""
    return str(value)


def metadata(run: Run, baseline: Run | None) -> pd.DataFrame:
    """The run's metadata (and the baseline's, side by side) as field/value rows."""
    cur = {"run folder": str(run.path), **_flat_meta(run.meta)}
    if baseline is None:
        return pd.DataFrame({"field": list(cur), "run": list(cur.values())})
    base = {"run folder": str(baseline.path), **_flat_meta(baseline.meta)}
    keys = list(cur) + [k for k in base if k not in cur]
    return pd.DataFrame({"field": keys, "run": [cur.get(k, "") for k in keys],
                         "baseline": [base.get(k, "") for k in keys]})


@dataclass
class ReportTables:
    """Every table of the report; each is written to <field name>.csv."""

    verdict_matrix: pd.DataFrame
    failures: pd.DataFrame
    gflops: pd.DataFrame
    speedup_vs_scalar: pd.DataFrame
    speedup_vs_baseline: pd.DataFrame
    emulated_times: pd.DataFrame
    error_vs_k: pd.DataFrame
    model_totals: pd.DataFrame
    metadata: pd.DataFrame
    tuning: pd.DataFrame
    fingerprints: pd.DataFrame
    fingerprint_summary: pd.DataFrame
    plugins: pd.DataFrame = field(default_factory=pd.DataFrame)
    plugin_probes: pd.DataFrame = field(default_factory=pd.DataFrame)
    plugin_ran: pd.DataFrame = field(default_factory=pd.DataFrame)
    determinism: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=DETERMINISM_COLUMNS))
    fastest: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=views.FASTEST_COLUMNS))  # per shape: fastest of ours and of the peers
    # packing B (a weight, once at load) beside the call, per realization
    load_cost: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=LOAD_COST_COLUMNS))
    # instruction counts of emulated targets (kbench.results.report_counts)
    counts: pd.DataFrame = field(default_factory=pd.DataFrame)
    count_mix: pd.DataFrame = field(default_factory=pd.DataFrame)
    counts_vs_baseline: pd.DataFrame = field(default_factory=pd.DataFrame)
    counts_vs_committed: pd.DataFrame = field(default_factory=pd.DataFrame)
    count_anchors: pd.DataFrame = field(default_factory=pd.DataFrame)
    # machine-code coverage (kbench run --coverage): the run folder's coverage.csv
    coverage: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=COVERAGE_COLUMNS))
    coverage_listing: str = ""  # coverage_uncovered.txt: the uncovered instructions
    # a mutation campaign's run folder (kbench mutate): per area and per mutant
    mutation_areas: pd.DataFrame = field(default_factory=lambda: mutation.area_table(None))
    mutation_mutants: pd.DataFrame = field(default_factory=lambda: mutation.mutant_table(None))

    def frames(self) -> dict[str, pd.DataFrame]:
        """The tables (the fields that are data frames, not text)."""
        return {f.name: v for f in fields(self)
                if isinstance(v := getattr(self, f.name), pd.DataFrame)}


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


COVERAGE_COLUMNS = ["target", "owner", "unit", "kind", "realizations", "instructions",
                    "covered", "percent", "uncovered"]


COVERAGE_LISTING_LINES = 4000  # of coverage_uncovered.txt in the report


def coverage_listing(run: Run) -> str:
    """The run's uncovered instructions, disassembled (coverage_uncovered.txt,
    its first COVERAGE_LISTING_LINES lines); "" when there is none."""
    path = run.path / "coverage_uncovered.txt"
    if not path.is_file():
        return ""
    lines = path.read_text(errors="replace").splitlines()
    body = [ln for ln in lines if ln and not ln.startswith("#")]
    if not body:
        return ""
    if len(lines) > COVERAGE_LISTING_LINES:
        lines = [*lines[:COVERAGE_LISTING_LINES],
                 f"... {len(lines) - COVERAGE_LISTING_LINES} more lines in {path.name}"]
    return "\n".join(lines)


def coverage_table(run: Run) -> pd.DataFrame:
    """The run's machine-code coverage (coverage.csv, `kbench run --coverage`),
    least covered first; empty when the run recorded none."""
    path = run.path / "coverage.csv"
    if not path.is_file():
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    try:
        df = pd.read_csv(path, keep_default_na=False, dtype=str)
    except pd.errors.EmptyDataError:  # not even a header: nothing recorded
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise RunFolderError(f"{path}: not a coverage table "
                             f"({str(exc).strip().splitlines()[0]})") from None
    missing = [c for c in COVERAGE_COLUMNS if c not in df.columns]
    if missing:
        raise RunFolderError(f"{path}: not a coverage table (no {', '.join(missing)} "
                             "column)")
    for column in ("instructions", "covered", "percent"):
        values = pd.to_numeric(df[column], errors="coerce")
        if values.isna().any():
            i = int(values.isna().to_numpy().argmax())
            raise RunFolderError(f"{path}: line {i + 2}, column {column}: "
                                 f"{df[column].iloc[i]!r} is not a number")
        df[column] = values
    if df.empty:
        return pd.DataFrame(columns=COVERAGE_COLUMNS)
    df = df.sort_values(["percent", "target", "owner", "unit"], kind="stable")
    return df[COVERAGE_COLUMNS].reset_index(drop=True)


DETERMINISM_COLUMNS = ["target", "realization", "plugin", "checks", "passed", "failed",
                       "faults", "not_held"]


def determinism_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per target and realization, the determinism checks of the run (two
    calls give the same bits; 3 threads the bits of 1; a cache-blocked
    realization's 4 threads the bits of 1): how many held, failed or ended
    in a fault, and the cases where one did not hold."""
    det = results[results["suite"] == "determinism"] if not results.empty else results
    rows = []
    if not det.empty:
        for (target, real), g in det.groupby(["target", "realization"], sort=False):
            bad = g[g["status"] != "pass"]
            rows.append({"target": target, "realization": real, "plugin": g["plugin"].iloc[0],
                         "checks": len(g), "passed": int((g["status"] == "pass").sum()),
                         "failed": int((g["status"] == "fail").sum()),
                         "faults": int(g["status"].isin(FAULTS).sum() + (g["status"] == "error"
                                                                          ).sum()),
                         "not_held": "; ".join(f"{c}: {m}" for c, m in
                                               zip(bad["case"], bad["message"], strict=True))})
    return pd.DataFrame(rows, columns=DETERMINISM_COLUMNS)


def compute_tables(run: Run, baseline: Run | None) -> ReportTables:
    prints = fingerprints(run.results)
    counts = rcount.count_table(run)
    return ReportTables(
        verdict_matrix=verdict_matrix(run.results), failures=failures(run.results),
        gflops=gflops_table(run), speedup_vs_scalar=speedup_vs_scalar(run),
        speedup_vs_baseline=speedup_vs_baseline(run, baseline),
        emulated_times=emulated_times(run), error_vs_k=error_vs_k(run.results),
        model_totals=model_totals(run), metadata=metadata(run, baseline),
        tuning=tuning_table(run), fingerprints=prints,
        fingerprint_summary=fingerprint_summary(prints),
        plugins=plugin_report.plugin_table(run),
        plugin_probes=plugin_report.probe_table(run.results),
        plugin_ran=plugin_report.ran_table(run.results),
        determinism=determinism_table(run.results),
        coverage=coverage_table(run),
        coverage_listing=coverage_listing(run),
        fastest=views.fastest_per_shape(gflops_table(run)),
        load_cost=load_cost(gflops_table(run), counts),
        counts=counts, count_mix=rcount.mix_table(run),
        counts_vs_baseline=rcount.vs_run(run, baseline),
        counts_vs_committed=rcount.vs_committed(run),
        count_anchors=rcount.anchor_table(run),
        mutation_areas=mutation.area_table(mutation.load(run.path)),
        mutation_mutants=mutation.mutant_table(mutation.load(run.path)),
    )


# ----------------------------------------------------------------------- plots

@dataclass
class Plot:
    title: str
    uri: str  # data:image/png;base64,...
    caption: str = ""


def figure_uri(fig: Figure) -> str:
    """The figure as a PNG data URI."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def series_colors(names: Sequence[str]) -> dict[str, Any]:
    """A fixed colour per series name (the same in every plot): one hue per
    realization family, its blocked variants in shades of it, peers in their
    own hues, "best per shape" near black (kbench.results.report_views)."""
    return views.family_colors(names)


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


def _legend_below(fig: Figure, ax: Any) -> None:
    """A figure-wide legend under the axes, in as many columns as fit inside
    the figure (long realization names get fewer)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        width = int(fig.get_figwidth() / 12 * 140)
        fig.legend(handles, labels, loc="outside lower center",
                   ncol=views.legend_columns(labels, width), fontsize="small", frameon=False)


def plot_performance(gflops: pd.DataFrame, speedups: pd.DataFrame, target: str, catalog: str,
                     colors: dict[str, Any]) -> Figure:
    """GFLOP/s and speedup over the scalar reference per shape and realization."""
    g = gflops[(gflops["target"] == target) & (gflops["catalog"] == catalog)]
    s = speedups[(speedups["target"] == target) & (speedups["catalog"] == catalog)]
    series = sorted(g["series"].unique(), key=lambda n: ("scalar" not in n, n))
    cases = list(dict.fromkeys(g["case"]))
    # compact: thin bars, at most 14 inches however many shapes and series
    height = 1.6 + 0.25 * math.ceil(len(series) / 3) + len(cases) * max(0.3, 0.09 * len(series))
    fig = Figure(figsize=(12, min(height, 14)), layout="constrained")
    ax_g, ax_s = fig.subplots(1, 2, sharey=True)
    _grouped_barh(ax_g, g, cases, "gflops", colors, series)
    ax_g.set_yticklabels(_shape_labels(g))
    ax_g.set_xlabel("GFLOP/s (flops per call / median time)")
    ax_g.set_ylabel("shape (×N: N layers)")
    ax_g.set_title("throughput")
    _grouped_barh(ax_s, s, cases, "speedup", colors, series)
    ax_s.axvline(1.0, color="black", lw=0.8)
    ax_s.set_xlabel("speedup over the scalar reference (×)")
    ax_s.set_title("speedup over the scalar reference")
    _legend_below(fig, ax_g)
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


TARGET_MARKERS = "os^Dv<>p"


def plot_error_vs_k(table: pd.DataFrame, op: str, colors: dict[str, Any]) -> Figure:
    """Observed error versus K, one series per realization (and target, if
    several): max error/bound, max ULP and max RMS relative error."""
    rows = table[table["op"] == op]
    targets = list(dict.fromkeys(rows["target"]))
    fig = Figure(figsize=(13, 5.2), layout="constrained")
    ax_b, ax_u, ax_r = fig.subplots(1, 3)
    # realizations with identical errors at every K (bit-identical kernels): drawn once
    groups = views.identical_error_groups(rows)
    for (target, real, accum), g in rows.groupby(["target", "realization", "accum"]):
        members = groups.get((str(target), str(op), str(real)))
        if members is None:
            continue  # drawn with the first member of its group
        g = g.sort_values("k")
        name = views.group_label(members)
        label = f"{name} @ {target}" if len(targets) > 1 else name
        style = {"color": colors.get(str(real), "0.5"), "ms": 4, "label": label,
                 "marker": TARGET_MARKERS[targets.index(target) % len(TARGET_MARKERS)],
                 "ls": "-" if accum == "fp16" else "--", "lw": 1.6 if accum == "fp16" else 1.0}
        ax_b.plot(g["k"], g["max_err_bound"], **style)
        ax_u.plot(g["k"], g["max_ulp"], **style)
        ax_r.plot(g["k"], g["max_rms_rel"], **style)
    ax_b.axhline(1.0, color="black", lw=0.8)
    ax_b.set_ylim(bottom=0)
    ax_b.set_ylabel("max |error| / bound (1 = at the bound)")
    ax_b.set_title("error relative to the declared bound")
    ax_u.set_yscale("symlog", linthresh=1)
    ax_u.set_ylabel("max error (ULP of the FP16 result)")
    ax_u.set_title("max ULP error")
    if (rows["max_rms_rel"] > 0).any():
        ax_r.set_yscale("log")
    ax_r.set_ylabel("max RMS relative error")
    ax_r.set_title("RMS relative error")
    for ax in (ax_b, ax_u, ax_r):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(LogLocator(base=2))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
        ax.set_xlabel("K (reduction length)")
        ax.grid(alpha=0.3)
    _legend_below(fig, ax_u)
    fig.suptitle(f"{op}: observed error versus K on random real-valued inputs "
                 "(solid: FP16 accumulation, dashed: FP32)", fontweight="bold")
    return fig


def make_plots(tables: ReportTables) -> dict[str, list[Plot]]:
    names = [*tables.gflops["series"], *tables.speedup_vs_baseline["series"],
             *tables.model_totals["series"], *tables.error_vs_k["realization"]]
    colors = series_colors([str(n) for n in names])
    plots: dict[str, list[Plot]] = {"perf": [], "baseline": [], "models": [], "error": [],
                                   "trends": []}
    g = tables.gflops
    for (target, catalog), _ in g.groupby(["target", "catalog"], sort=False):
        fig = plot_performance(g, tables.speedup_vs_scalar, target, catalog, colors)
        plots["perf"].append(Plot(f"{catalog} on {target}", figure_uri(fig),
                                  "a realization without a bar lacks the shape; \"no time\": "
                                  "its timing failed"))
    if (tables.speedup_vs_baseline["speedup"] > 0).any():
        fig = plot_baseline(tables.speedup_vs_baseline, colors)
        plots["baseline"].append(Plot("speedup over the baseline", figure_uri(fig)))
    if tables.model_totals["complete"].astype(bool).any():
        fig = plot_model_totals(tables.model_totals, colors)
        plots["models"].append(Plot("per-model totals", figure_uri(fig),
                                    "realizations with every shape of the model only"))
    for op in tables.error_vs_k["op"].unique():
        fig = plot_error_vs_k(tables.error_vs_k, op, colors)
        plots["error"].append(Plot(f"error versus K: {op}", figure_uri(fig),
                                   "lines that coincide are realizations with the same "
                                   "errors (bit-identical kernels)"))
    return plots


# ------------------------------------------------------------------- HTML view

@dataclass
class Cell:
    text: str
    cls: str = ""


@dataclass
class HtmlTable:
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str = ""


WRAP_AT = 60  # characters: longer texts wrap instead of widening the table


def _fmt_time(ns: float) -> str:
    return time_unit(ns)


def _cell(col: str, value: Any) -> Cell:
    """Format one value by its column's meaning. A missing time (a NaN median:
    the timing gave none) reads n/a, any other missing number –."""
    if isinstance(value, bool | np.bool_):
        return Cell("yes" if value else "no")
    if value is None or (isinstance(value, float | np.floating) and not np.isfinite(value)):
        return Cell(NA if col.endswith("_ns") else "–", "num na")
    if isinstance(value, int | np.integer):
        return Cell(str(value), "num")
    if isinstance(value, float | np.floating):
        v = float(value)
        if col.endswith("_ns"):
            return Cell(_fmt_time(v), "num")
        if col.startswith("speedup"):
            cls = "num better" if v > BETTER else "num worse" if v < WORSE else "num"
            return Cell(f"{v:.2f}×", cls)
        if col == "time_change":
            cls = "num worse" if v > 1 / WORSE - 1 else "num better" if v < WORSE - 1 else "num"
            return Cell(f"{v:+.1%}", cls)
        if col in ("cv", "min_exact_fraction", "kill_rate"):
            return Cell(f"{v:.1%}", "num")
        if col == "accum_match":
            return Cell(fprint.percent(v), "num")
        if col == "count_efficiency":
            return Cell(f"{v:.1%}", "num")
        if col.endswith("_ratio") or col.startswith("ratio"):  # counts: above 1 is more
            return Cell(fixed(v, 3), "num worse" if v > 1.005 else "num better" if v < 0.995
                        else "num")
        if col.startswith(("count_", "kernel_")) or col in rcount.COUNT_NUMBERS:
            return Cell(f"{v:,.0f}", "num")
        return Cell(sig(v, 4), "num")
    text = str(value)
    if col in ("status", "verdict"):
        return Cell(text, text)
    if col == "category":
        return Cell(text, f"accum-{text}")
    return Cell(text, "wrap" if len(text) > WRAP_AT else "")


def html_table(df: pd.DataFrame, columns: Sequence[str] | None = None, caption: str = "",
               limit: int | None = None,
               row_class: Callable[[pd.Series], str] | None = None) -> HtmlTable:
    """A frame as rows of formatted cells. A "target" column is left out when
    every row has the same target."""
    cols = list(columns if columns is not None else df.columns)
    if "target" in cols and df["target"].nunique() <= 1:
        cols.remove("target")
    shown = df if limit is None else df.head(limit)
    table = HtmlTable(cols, caption=caption)
    for _, row in shown.iterrows():
        cells = [_cell(c, row[c]) for c in cols]
        if row_class is not None and (extra := row_class(row)):
            cells = [Cell(c.text, f"{c.cls} {extra}".strip()) for c in cells]
        table.rows.append(cells)
    if limit is not None and len(df) > limit:
        cut = f"first {limit} of {len(df)} rows; all of them in the CSV"
        table.caption = f"{caption}; {cut}" if caption else cut
    return table


def verdict_grid(verdicts: pd.DataFrame) -> HtmlTable:
    """Backend (per target) × catalog, each cell the worst verdict and counts."""
    catalogs = sorted(verdicts["catalog"].unique(), key=lambda c: (c == "contracts", c))
    grid = HtmlTable(["target", "backend", *catalogs])
    for (target, backend), g in verdicts.groupby(["target", "backend"], sort=False):
        by_cat = g.set_index("catalog")
        row = [Cell(str(target)), Cell(str(backend))]
        for cat in catalogs:
            if cat not in by_cat.index:
                row.append(Cell("", "empty"))
                continue
            c = by_cat.loc[cat]
            judged = int(c["cases"] - c["skip"])
            if c["verdict"] in ("pass", "skip"):
                detail = f"{judged}" if c["verdict"] == "pass" else f"{int(c['skip'])} skipped"
            else:
                parts = [f"{int(c['pass'])}/{judged} pass"]
                parts += [f"{int(c[s])} {s}" for s in ("fail", "error", *FAULTS, "mistrusted")
                          if c[s]]
                detail = ", ".join(parts)
            if c["verdict"] != "skip" and c["skip"]:
                detail += f", {int(c['skip'])} skipped"
            row.append(Cell(f"{c['verdict']} · {detail}", f"verdict {c['verdict']}"))
        grid.rows.append(row)
    return grid


def _pivot_gflops(gflops: pd.DataFrame) -> HtmlTable:
    """Shapes as rows, realizations as columns, GFLOP/s in the cells; the
    fastest of ours per shape marked (class best, ★) and the fastest peer
    (class best-peer, ☆), each also named in its own column."""
    series = sorted(gflops["series"].unique(), key=lambda n: (views.is_peer(n), n))
    several = gflops["target"].nunique() > 1
    table = HtmlTable([*(["target"] if several else []), "catalog", "shape", "layers",
                       "fastest (ours)", "fastest peer", *series])
    fastest = views.fastest_per_shape(gflops).set_index(["target", "catalog", "case"])
    for (target, catalog, case), g in gflops.groupby(["target", "catalog", "case"], sort=False):
        vals = g.drop_duplicates("series").set_index("series")["gflops"]
        first = g.iloc[0]
        best = fastest.loc[(target, catalog, case)]
        row = [Cell(str(target))] if several else []
        row += [Cell(str(catalog)), Cell(str(first["shape"])), Cell(str(first["layers"]), "num"),
                Cell(str(best["fastest_ours"]) or "–", "best-name"),
                Cell(str(best["fastest_peer"]) or "–", "best-peer-name")]
        for s in series:
            cell = _cell("gflops", float(vals.get(s, np.nan)))
            if s in vals.index and cell.text == "–":  # timed, but no median came back
                cell = Cell(NA, cell.cls)
            if s == best["fastest_ours"]:
                cell = Cell(f"★ {cell.text}", f"{cell.cls} best")
            elif s == best["fastest_peer"]:
                cell = Cell(f"☆ {cell.text}", f"{cell.cls} best-peer")
            row.append(cell)
        table.rows.append(row)
    return table


def _presence_class(row: pd.Series) -> str:
    return "" if row["presence"] == "both" else "missing"


def _targets_table(runs: dict[str, Run]) -> HtmlTable:
    table = HtmlTable(["run", "target", "kind", "emulated", "arch", "cpu features", "SME bits",
                       "SVE bits", "ISA", "library", "realizations"])
    for label, run in runs.items():
        for spec, t in (run.meta.get("targets") or {}).items():
            if not isinstance(t, dict):
                continue
            reals = t.get("realizations") or []
            table.rows.append([
                Cell(label), Cell(str(spec)), Cell(str(t.get("kind", ""))),
                _cell("emulated", bool(t.get("emulated"))), Cell(str(t.get("arch", ""))),
                Cell(", ".join(t.get("cpu_features") or []) or "–"),
                _cell("sme_vector_bits", t.get("sme_vector_bits") or 0),
                _cell("sve_vector_bits", t.get("sve_vector_bits") or 0),
                Cell(str(t.get("isa", ""))), Cell(str(t.get("library_version", ""))),
                Cell(f"{len(reals)}: {_meta_text(reals)}", "wrap")])
    return table


def _trend_runs(note: str) -> int:
    """The run count the trends note starts with ("12 run(s) of this machine ...")."""
    head = note.split(" ", 1)[0]
    return int(head) if head.isdigit() else 0


def render_html(run: Run, baseline: Run | None, tables: ReportTables,
                plots: dict[str, list[Plot]], csv_names: dict[str, str],
                gate: views.GateView | None = None, trends_note: str = "") -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    results = run.results
    counts = results["status"].value_counts()
    emulated_targets = [spec for spec, t in (run.meta.get("targets") or {}).items()
                        if isinstance(t, dict) and t.get("emulated")]
    t = tables
    speedups = t.speedup_vs_scalar
    header = views.answers(results, run.complete, t.fastest, t.speedup_vs_baseline,
                           t.counts_vs_committed, gate, baseline is not None,
                           _trend_runs(trends_note) if plots.get("trends") else 0,
                           bool(emulated_targets) and len(run.perf()) > 0
                           and t.gflops.empty, len(t.counts) > 0)
    header = integrity.amend_answers(*header, run)  # a damaged folder is not a green run
    meta_rows = t.metadata[~t.metadata["field"].str.startswith("target ")]
    runs = {"run": run} if baseline is None else {"run": run, "baseline": baseline}
    context = {
        "run": run, "baseline": baseline,
        "baseline_name": "" if baseline is None else baseline.path.resolve().name,
        "title": f"kbench report — {run.path.resolve().name}",
        "meta": run.meta,
        "counts": {s: int(counts.get(s, 0)) for s in STATUSES},
        "total": len(results),
        "n_perf": len(run.perf()),
        "emulated_targets": emulated_targets,
        "emulated_label": EMULATED_LABEL,
        "verdict_grid": verdict_grid(t.verdict_matrix),
        "failures": html_table(t.failures, limit=100),
        "n_failures": len(t.failures),
        "gflops_pivot": _pivot_gflops(t.gflops),
        "gflops_rows": len(t.gflops),
        "timings": html_table(t.gflops, ["target", "catalog", "shape", "series", "threads",
                                         "gflops", "time_median_ns", "time_min_ns",
                                         "time_stdev_ns", "cv", "rounds", "reps_per_round",
                                         "pack_time_ns"]),
        "speedup_scalar": html_table(
            speedups[speedups["realization"] != speedups["ref_realization"]],
            ["target", "catalog", "shape", "series", "speedup", "time_median_ns",
             "ref_time_median_ns", "ref_realization"]),
        "emulated": html_table(t.emulated_times, ["target", "catalog", "shape", "series",
                                                  "threads", "label", "time_median_ns",
                                                  "time_min_ns", "time_stdev_ns", "rounds"]),
        "n_emulated": len(t.emulated_times),
        "baseline_table": html_table(t.speedup_vs_baseline,
                                     ["target", "catalog", "shape", "series", "threads",
                                      "speedup", "time_change", "time_median_ns",
                                      "baseline_time_median_ns", "presence"],
                                     row_class=_presence_class),
        "n_baseline_rows": len(t.speedup_vs_baseline),
        "baseline_missing": int((t.speedup_vs_baseline["presence"] != "both").sum()),
        "baseline_timed": 0 if baseline is None else len(timed_rows(baseline)),
        "tuning": html_table(t.tuning),
        "n_tuning": len(t.tuning),
        "models": html_table(t.model_totals, ["target", "model", "series", "speedup_vs_scalar",
                                              "total_time_ns", "gflops", "shapes",
                                              "shapes_in_model", "complete", "layers"]),
        "n_models": len(t.model_totals),
        "errors": html_table(t.error_vs_k, ["target", "op", "realization", "accum", "k",
                                            "cases", "max_err_bound", "max_ulp", "max_rms_rel",
                                            "min_exact_fraction", "failed", "mistrusted"]),
        "n_error_rows": len(t.error_vs_k),
        "worst_status": header[0], "answers": header[1], "integrity": integrity.banner(run),
        "error_sentence": error_sentence(t.error_vs_k),
        "fingerprint_summary": html_table(t.fingerprint_summary),
        "fingerprint_rows": html_table(t.fingerprints, [c for c in FINGERPRINT_COLUMNS
                                                         if c != "label"], limit=500),
        "n_fingerprints": len(t.fingerprints),
        "conclusive": fprint.CONCLUSIVE,
        "plugins": html_table(t.plugins),
        "n_plugins": len(t.plugins),
        "load_cost": html_table(t.load_cost),
        "n_load_cost": len(t.load_cost),
        "determinism": html_table(t.determinism),
        "n_determinism": len(t.determinism),
        "coverage": html_table(t.coverage, limit=500),
        "n_coverage": len(t.coverage),
        "coverage_listing": t.coverage_listing,
        "coverage_full": int((t.coverage["percent"] >= 100).sum()),
        "plugin_probes": html_table(t.plugin_probes, limit=500),
        "n_plugin_probes": len(t.plugin_probes),
        "plugin_ran": html_table(t.plugin_ran, limit=500),
        "n_plugin_ran": len(t.plugin_ran),
        "mutation_areas": html_table(t.mutation_areas),
        "mutation_mutants": html_table(t.mutation_mutants, limit=500),
        "n_mutants": len(t.mutation_mutants),
        "mutation_summary": (run.meta.get("summary") or {}) if run.meta.get("kind")
        == "mutation-campaign" else {},
        "metadata": html_table(meta_rows),
        "targets": _targets_table(runs),
        **rcount.html_context(run, t, html_table),
        "plots": plots,
        "csv_names": csv_names,
        "gate": gate,
        "gate_failures": None if gate is None else html_table(gate.failures),
        "gate_cases": None if gate is None else html_table(gate.cases),
        "trends_note": trends_note,
        "fastest_table": html_table(t.fastest, ["target", "catalog", "shape", "fastest_ours",
                                                "ours_time_ns", "ours_gflops", "fastest_peer",
                                                "peer_time_ns", "peer_vs_ours"]),
    }
    return env.get_template(TEMPLATE_NAME).render(**context)


# --------------------------------------------------------------------- output

@dataclass
class ReportFiles:
    html: Path
    tables: dict[str, Path]  # table name -> CSV file


def write_tables(tables: ReportTables, out_dir: Path) -> dict[str, Path]:
    """One CSV per table that has rows; a table without rows writes no file
    (and removes one an earlier report left in out_dir under its name)."""
    paths = {}
    for name, frame in tables.frames().items():
        path = out_dir / f"{name}.csv"
        if frame.empty:
            path.unlink(missing_ok=True)
            continue
        frame.to_csv(path, index=False)
        paths[name] = path
    return paths


def build_report(run: Run, baseline: Run | None, out_dir: Path, gate: Any = None,
                 history_db: str | Path | None = None) -> ReportFiles:
    """Write report.html (self-contained) and one CSV per table into out_dir.
    gate: a kbench.results.compare.GateResult to show (its verdict and
    statistics); history_db: draw trends over that history database."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = compute_tables(run, baseline)
    csvs = write_tables(tables, out_dir)
    plots = make_plots(tables)
    trends_note = ""
    if history_db is not None:
        trends = views.history_trends(history_db, str(run.meta.get("cpu_model") or ""),
                                      str(run.meta.get("machine") or ""))
        if trends.empty:
            (out_dir / "history_trends.csv").unlink(missing_ok=True)
        else:
            trends.to_csv(out_dir / "history_trends.csv", index=False)
            csvs["history_trends"] = out_dir / "history_trends.csv"
        plots["trends"] = []
        if trends.empty:
            trends_note = f"no timed hardware runs of this machine in {history_db}"
        else:
            colors = series_colors([str(n) for n in trends["realization"]])
            marks = {"this run": str(run.meta.get("date") or "")}
            if baseline is not None:
                marks["baseline"] = str(baseline.meta.get("date") or "")
            fig, left_out = views.plot_trends(trends, colors, marks=marks)
            plots["trends"].append(Plot("history", figure_uri(fig),
                                        f"{left_out} more case(s) in the CSV" if left_out
                                        else ""))
            trends_note = (f"{trends['run_id'].nunique()} run(s) of this machine in "
                           f"{history_db}")
    gate_view = views.gate_view(gate) if gate is not None else None
    html = render_html(run, baseline, tables, plots,
                       {name: p.name for name, p in csvs.items()}, gate_view, trends_note)
    path = out_dir / "report.html"
    path.write_text(html, encoding="utf-8")
    return ReportFiles(path, csvs)
