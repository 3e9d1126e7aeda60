"""The report of a run folder: tables (pandas), plots (matplotlib, embedded
as PNG data URIs) and one self-contained HTML page (jinja2), plus one CSV
per table. The sections a reader sees come from their own modules: the
answers on top (kbench.results.report_views), the verdicts
(report_verdicts), performance on hardware (report_perf) or instruction
counts on emulated targets (report_counts), and the history
(report_views' trends); this module gathers their tables, draws the page
and writes the files."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from kbench.judge import fingerprint as fprint
from kbench.resources import resource_dir
from kbench.results import integrity, mcmutation, mutation, plugin_report, report_scratch
from kbench.results import report_counts as rcount
from kbench.results import report_views as views
from kbench.results.columns import COLUMN_HELP
from kbench.results.report_html import (
    Cell,
    HtmlTable,
    Plot,
    figure_uri,
    format_cell,
    html_table,
    series_colors,
)
from kbench.results.report_perf import (
    EMULATED_LABEL,
    LOAD_COST_COLUMNS,
    emulated_times,
    gflops_pivot,
    gflops_table,
    load_cost,
    model_totals,
    plot_baseline,
    plot_model_totals,
    plot_performance,
    presence_class,
    speedup_rows,
    speedup_vs_baseline,
    speedup_vs_scalar,
    timed_rows,
    tuning_table,
)
from kbench.results.report_verdicts import (
    COVERAGE_COLUMNS,
    DETERMINISM_COLUMNS,
    FINGERPRINT_COLUMNS,
    STATUSES,
    coverage_listing,
    coverage_table,
    determinism_table,
    error_sentence,
    error_vs_k,
    failures,
    fingerprint_summary,
    fingerprints,
    plot_error_vs_k,
    verdict_grid,
    verdict_matrix,
)
from kbench.results.runfolder import Run

TEMPLATE_DIR = resource_dir("reports")


TEMPLATE_NAME = "report.html.j2"
# the page's first sections after the answers, on a run of hardware timings (the README's
# picture shows them; its caption is generated from this and views.QUESTIONS)
FIRST_SECTIONS = ("Verdicts", "Performance")
LONG_TEXT = 20  # characters: a longer cell may break anywhere, so wide tables fit the page


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
    # per counted shape: the fewest instructions (the emulated "fastest", rcount)
    fastest_counts: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=rcount.FASTEST_COUNT_COLUMNS))
    count_anchors: pd.DataFrame = field(default_factory=pd.DataFrame)
    # machine-code coverage (kbench run --coverage): the run folder's coverage.csv
    coverage: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=COVERAGE_COLUMNS))
    coverage_listing: str = ""  # coverage_uncovered.txt: the uncovered instructions
    # a mutation campaign's run folder (kbench mutate): per area and per mutant
    mutation_areas: pd.DataFrame = field(default_factory=lambda: mutation.area_table(None))
    mutation_mutants: pd.DataFrame = field(default_factory=lambda: mutation.mutant_table(None))
    # heap held around each measured call, and the scratch check (kbench.results.report_scratch)
    scratch: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(
        columns=report_scratch.COLUMNS))

    def frames(self) -> dict[str, pd.DataFrame]:
        """The tables (the fields that are data frames, not text)."""
        return {f.name: v for f in fields(self)
                if isinstance(v := getattr(self, f.name), pd.DataFrame)}


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
        fastest_counts=rcount.fastest_by_counts(run),
        count_anchors=rcount.anchor_table(run),
        mutation_areas=mutation.area_table(mutation.load(run.path)),
        mutation_mutants=mutation.mutant_table(mutation.load(run.path)),
        scratch=report_scratch.scratch_table(run),
    )


def make_plots(tables: ReportTables) -> dict[str, list[Plot]]:
    names = [*tables.gflops["series"], *tables.speedup_vs_baseline["series"],
             *tables.model_totals["series"], *tables.error_vs_k["realization"],
             *tables.counts.get("realization", [])]
    colors = series_colors([str(n) for n in names])
    plots: dict[str, list[Plot]] = {"perf": [], "baseline": [], "models": [], "error": [],
                                   "trends": [], "counts": []}
    for target in dict.fromkeys(tables.counts.get("target", [])):
        fig = rcount.plot_counts(tables.counts, tables.count_anchors, str(target), colors)
        plots["counts"].append(Plot(f"instructions per shape on {target}", figure_uri(fig),
                                    "dots: realizations (ours and plugins'); ×: a peer "
                                    "anchor's measured count of that phase; 1× = the fewest "
                                    "on the shape"))
    g = tables.gflops
    for (target, catalog), _ in g.groupby(["target", "catalog"], sort=False):
        fig = plot_performance(g, tables.speedup_vs_scalar, target, catalog, colors)
        sp = tables.speedup_vs_scalar
        shown = (speedup_rows(sp[(sp["target"] == target) & (sp["catalog"] == catalog)])
                 if {"target", "catalog", "speedup"} <= set(sp.columns) else sp.iloc[0:0])
        plots["perf"].append(Plot(f"{catalog} on {target}", figure_uri(fig),
                                  "a realization without a bar lacks the shape; \"no time\": "
                                  "its timing failed" + ("" if len(shown) else
                                                         "; no speedup panel: no realization "
                                                         "but the scalar reference was timed "
                                                         "on these shapes")))
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
                format_cell("emulated", bool(t.get("emulated"))), Cell(str(t.get("arch", ""))),
                Cell(", ".join(t.get("cpu_features") or []) or "–"),
                format_cell("sme_vector_bits", t.get("sme_vector_bits") or 0),
                format_cell("sve_vector_bits", t.get("sve_vector_bits") or 0),
                Cell(str(t.get("isa", ""))), Cell(str(t.get("library_version", ""))),
                Cell(f"{len(reals)}: {_meta_text(reals)}", "wrap")])
    return table


def _trend_runs(note: str) -> int:
    """The run count the trends note starts with ("12 run(s) of this machine ...")."""
    head = note.split(" ", 1)[0]
    return int(head) if head.isdigit() else 0


def render_html(run: Run, baseline: Run | None, tables: ReportTables,
                plots: dict[str, list[Plot]], csv_names: dict[str, str],
                gate: views.GateView | None = None, trends_note: str = "",
                sections: str = "") -> str:
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
                           and t.gflops.empty, len(t.counts) > 0, t.fastest_counts)
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
        # one pivot per operator: a GEMM's columns are empty on a convolution's shapes
        "gflops_pivots": ([gflops_pivot(g) for _, g in t.gflops.groupby("op", sort=False)]
                          if "op" in t.gflops and len(t.gflops) else [gflops_pivot(t.gflops)]),
        "gflops_rows": len(t.gflops),
        "timings": html_table(t.gflops, ["target", "catalog", "shape", "series", "threads",
                                         "gflops", "time_median_ns", "time_min_ns",
                                         "time_stdev_ns", "cv", "noisy", "rounds",
                                         "reps_per_round", "pack_time_ns"]),
        "speedup_scalar": html_table(
            speedup_rows(speedups),
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
                                     row_class=presence_class),
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
        **report_scratch.html_context(t.scratch, html_table),
        "plots": plots,
        "csv_names": csv_names,
        "gate": gate,
        "gate_failures": None if gate is None else html_table(gate.failures),
        "gate_cases": None if gate is None else html_table(gate.cases),
        "trends_note": trends_note,
        "sections": sections,  # sections rendered by their own modules (mcmutation)
        "fastest_table": html_table(t.fastest, ["target", "catalog", "shape", "kernels",
                                                "winner", "fastest_ours", "ours_time_ns",
                                                "ours_gflops", "fastest_peer", "peer_time_ns",
                                                "peer_vs_ours", "noisy", "why"]),
        "fastest_counts": html_table(t.fastest_counts, [
            "target", "catalog", "shape", "counted", "kernels", "winner", "call", "runner_up",
            "runner_up_vs_winner", "fewest_kernel", "kernel_instructions", "fewest_pack_b",
            "pack_b", "principal", "principal_per_floor", "why"]),
        "n_fastest_counts": len(t.fastest_counts),
        # an emulated run without hardware timings: its counts answer first, its
        # emulated timings last and folded
        "counts_first": len(t.counts) > 0 and t.gflops.empty,
        "column_help": COLUMN_HELP,
        "long_text": LONG_TEXT,
    }
    return env.get_template(TEMPLATE_NAME).render(**context)


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
                       {name: p.name for name, p in csvs.items()}, gate_view, trends_note,
                       mcmutation.report_section(run.path, out_dir))
    path = out_dir / "report.html"
    path.write_text(html, encoding="utf-8")
    return ReportFiles(path, csvs)

