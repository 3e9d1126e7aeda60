"""The report's verdict sections: "Correct?" — the verdict matrix per
target, backend and catalog, every failure, the observed error against K,
the accumulation fingerprints, the determinism checks and the machine-code
coverage of a run."""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from kbench.judge import fingerprint as fprint
from kbench.judge.numbers import sig
from kbench.judge.verdict import FAILING, FAULTS
from kbench.results import report_scratch
from kbench.results import report_views as views
from kbench.results.report_html import (
    Cell,
    HtmlTable,
    legend_below,
)
from kbench.results.runfolder import Run, RunFolderError

STATUSES = ("pass", "fail", "mistrusted", "error", *FAULTS, "skip")


SEVERITY = (*FAULTS, "fail", "error", "mistrusted", "pass", "skip")  # worst first


BACKEND_ORDER = views.OUR_BACKENDS


REAL_KINDS = ("uniform", "normal")  # random real-valued inputs: the error trend


TEXT_COLUMNS = ("case", "op", "shape", "kind", "target", "backend", "realization", "kernel",
                "accum", "b_form", "status", "message", "catalog", "suite")


def clean_text(df: pd.DataFrame) -> pd.DataFrame:
    """Text columns as strings ("" where missing), whatever the run recorded."""
    return df.assign(**{c: df[c].fillna("").astype(str) for c in TEXT_COLUMNS if c in df})


VERDICT_COLUMNS = ["target", "backend", "catalog", "cases", *STATUSES, "verdict"]


def verdict_matrix(results: pd.DataFrame) -> pd.DataFrame:
    """Verdict counts per target, backend and catalog (contract checks, which
    have no catalog, are listed under their suite), with the worst verdict."""
    if results.empty:
        return pd.DataFrame(columns=VERDICT_COLUMNS)
    results = clean_text(results)
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
    bad = clean_text(results)
    bad = bad[bad["status"].isin(FAILING)]
    return bad[FAILURE_COLUMNS].reset_index(drop=True)


ERROR_COLUMNS = ["target", "op", "realization", "accum", "k", "cases", "max_err_bound",
                 "max_ulp", "median_max_ulp", "max_rms_rel", "min_exact_fraction", "failed",
                 "mistrusted"]


def error_vs_k(results: pd.DataFrame) -> pd.DataFrame:
    """Observed error per realization and reduction length K, over the
    random real-valued inputs of the correctness suite. A case whose declared
    model bounds nothing (mistrusted, no bound) has no error/bound ratio."""
    results = clean_text(results)
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


CATEGORY_ORDER = (fprint.FP16, "unexplained", fprint.FP32, fprint.INDISTINGUISHABLE)


def fingerprints(results: pd.DataFrame) -> pd.DataFrame:
    """Every fingerprinted result (kbench.fingerprint): the accumulation model
    that reproduces the output best, its bit-match fraction, its category
    (fp32, fp16, indistinguishable, unexplained) and a one-line label; the
    realization's declared accumulator beside it."""
    if "accum_model" not in results:
        return pd.DataFrame(columns=FINGERPRINT_COLUMNS)
    rows = clean_text(results)
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
    if "catalog" in det.columns:  # the scratch check's verdicts have a section of their own
        det = det[det["catalog"] != report_scratch.CATALOG]
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


TARGET_MARKERS = "os^Dv<>p"
FLAT = {"max_err_bound": "0 at every K:\nevery output exact",
        "max_ulp": "0 ULP at every K:\nevery output the correctly\nrounded one",
        "max_rms_rel": "0 at every K:\nno relative error"}


def flat_panels(rows: pd.DataFrame) -> dict[str, str]:
    """The panels of the error plot whose every point is 0 (or missing): a
    line flat on 0 says nothing a sentence does not, and its axis would be
    made up (matplotlib spreads ±0.05 around a constant); column -> the
    sentence said instead."""
    out = {}
    for column, text in FLAT.items():
        vals = (pd.to_numeric(rows[column], errors="coerce").dropna() if column in rows
                else pd.Series([], dtype=float))
        if vals.empty or bool((vals == 0).all()):
            out[column] = text
    return out


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
    flat = flat_panels(rows)
    legend_below(fig, ax_b if "max_ulp" in flat else ax_u)  # before any lines go
    for column, text in flat.items():  # said in words, not a line on 0
        ax = {"max_err_bound": ax_b, "max_ulp": ax_u, "max_rms_rel": ax_r}[column]
        for line in list(ax.get_lines()):
            line.remove()
        ax.set_yscale("linear")
        ax.set_yticks([])
        ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center",
                fontsize="medium", color="0.25")
    fig.suptitle(f"{op}: observed error versus K on random real-valued inputs "
                 "(solid: FP16 accumulation, dashed: FP32)", fontweight="bold")
    return fig

