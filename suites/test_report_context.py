"""What render_html hands the report template, key by key: which table of
the report each section shows, with which columns, row limit and row
highlight; the counts and figures of the summary; the header's answers and
what it was asked with; the template environment (autoescape, strict
undefined). The template itself is rendered by suites/test_report*.py; here
it is replaced by one that returns its context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kbench.results import report as rep
from kbench.results.runfolder import Run


class _Env:
    made: list[dict[str, Any]] = []

    def __init__(self, **kw: Any) -> None:
        _Env.made.append(kw)

    def get_template(self, name: str) -> Any:
        _Env.made.append({"template": name})

        class _T:
            @staticmethod
            def render(**ctx: Any) -> Any:
                return ctx
        return _T()


def _tagged(name: str, **cols: list[Any]) -> pd.DataFrame:
    df = pd.DataFrame(cols)
    df.attrs["tag"] = name
    return df


def _tables() -> rep.ReportTables:
    t = rep.ReportTables(
        verdict_matrix=_tagged("verdict_matrix", x=[1]),
        failures=_tagged("failures", x=[1, 2, 3]),
        gflops=_tagged("gflops", x=[1, 2]),
        speedup_vs_scalar=_tagged("speedup_vs_scalar", realization=["a", "b", "c", "d"],
                                  ref_realization=["a", "a", "a", "a"],
                                  speedup=[1.0, 2.0, 0.5, float("nan")]),
        speedup_vs_baseline=_tagged("speedup_vs_baseline",
                                    presence=["both", "base only", "new", "new"]),
        emulated_times=_tagged("emulated_times", x=[1, 2, 3, 4, 5]),
        error_vs_k=_tagged("error_vs_k", x=[1] * 6),
        model_totals=_tagged("model_totals", x=[1] * 7),
        metadata=_tagged("metadata", field=["date", "target host", "targets", "host"],
                         value=[1, 2, 3, 4]),
        tuning=_tagged("tuning", x=[1] * 8),
        fingerprints=_tagged("fingerprints", x=[1] * 9),
        fingerprint_summary=_tagged("fingerprint_summary", x=[1]),
        plugins=_tagged("plugins", x=[1] * 10),
        plugin_probes=_tagged("plugin_probes", x=[1] * 11),
        plugin_ran=_tagged("plugin_ran", x=[1] * 15),
        determinism=_tagged("determinism", x=[1] * 12),
        fastest=_tagged("fastest", x=[1] * 2),
        load_cost=_tagged("load_cost", x=[1] * 13),
        counts=_tagged("counts", x=[1]),
        counts_vs_committed=_tagged("counts_vs_committed", x=[1]),
        coverage=_tagged("coverage", percent=[100.0, 99.9, 100.5, 50.0]),
        coverage_listing="listing",
        mutation_areas=_tagged("mutation_areas", x=[1]),
        mutation_mutants=_tagged("mutation_mutants", x=[1] * 14),
        scratch=_tagged("scratch", check=["fail", "pass", "error", "skip", "crashed"]))
    return t


def _run(path: Path, meta: dict[str, Any]) -> Run:
    results = pd.DataFrame({
        "status": ["pass", "pass", "fail", "crashed", "weird", "skip"],
        "suite": ["perf", "perf", "correctness", "perf", "perf", "perf"],
        "rounds": [3, 0, 0, 2, 1, 5]})
    return Run(path, meta, results)


@pytest.fixture
def context(monkeypatch, tmp_path: Path):
    calls: dict[str, list[Any]] = {"answers": []}
    _Env.made = []
    monkeypatch.setattr(rep.jinja2, "Environment", _Env)
    monkeypatch.setattr(rep, "html_table", lambda df, columns=None, limit=None,
                        row_class=None: ("table", df.attrs.get("tag"), len(df),
                                         None if columns is None else list(columns), limit,
                                         row_class))
    monkeypatch.setattr(rep, "verdict_grid", lambda df: ("grid", df.attrs.get("tag")))
    monkeypatch.setattr(rep, "gflops_pivot", lambda df: ("pivot", df.attrs.get("tag")))
    monkeypatch.setattr(rep, "error_sentence", lambda df: ("sentence", df.attrs.get("tag")))
    monkeypatch.setattr(rep, "_targets_table", lambda runs: ("targets", sorted(runs)))
    monkeypatch.setattr(rep, "timed_rows", lambda run: run.results.head(2))
    monkeypatch.setattr(rep.rcount, "html_context",
                        lambda run, t, table: {"counts_extra": (run.name, table is rep.html_table,
                                                                t.counts.attrs["tag"])})

    def answers(*args: Any) -> tuple[str, str]:
        calls["answers"].append(args)
        return "WORST", "ANSWERS"
    monkeypatch.setattr(rep.views, "answers", answers)

    def make(meta: dict[str, Any], baseline: bool = False, gate: Any = None,
             trends_note: str | None = None, plots: dict[str, list[Any]] | None = None,
             tables: rep.ReportTables | None = None) -> dict[str, Any]:
        run = _run(tmp_path / "run", meta)
        base = _run(tmp_path / "base", {}) if baseline else None
        # gate and trends note as keywords only when given: their defaults are checked too
        extra = {k: v for k, v in (("gate", gate), ("trends_note", trends_note))
                 if v is not None}
        return rep.render_html(run, base, tables or _tables(), plots or {}, {"gflops": "g.csv"},
                               **extra)
    return make, calls


TARGETS = {"host": {"emulated": False}, "qemu:a": {"emulated": True}, "bad": "x",
           "qemu:b": {"emulated": 1}}


def test_the_template_environment_escapes_and_refuses_unknown_names(context) -> None:
    make, _ = context
    make({})
    env, template = _Env.made
    assert template == {"template": "report.html.j2"}
    loader = env.pop("loader")
    assert loader.searchpath == [str(rep.TEMPLATE_DIR)]
    assert env == {"autoescape": True, "undefined": rep.jinja2.StrictUndefined,
                   "trim_blocks": True, "lstrip_blocks": True}


def test_the_context_word_for_word(context, tmp_path: Path) -> None:
    make, calls = context
    gate = type("G", (), {"failures": _tagged("gate_failures", x=[1]),
                          "cases": _tagged("gate_cases", x=[1, 2])})()
    plots = {"perf": ["p"], "trends": ["t1", "t2"]}
    meta = {"targets": TARGETS, "kind": "mutation-campaign", "summary": {"killed": 3},
            "complete": True}
    ctx = make(meta, baseline=True, gate=gate, trends_note="12 run(s) of this machine",
               plots=plots)
    assert ctx.pop("run").path == tmp_path / "run"
    assert ctx.pop("baseline").path == tmp_path / "base"
    assert ctx.pop("meta") is not None and ctx.pop("gate") is gate
    expect = {
        "baseline_name": "base", "title": "kbench report — run",
        "counts": {**{s: 0 for s in rep.STATUSES}, "pass": 2, "fail": 1, "crashed": 1,
                   "skip": 1},
        "total": 6, "n_perf": 4, "emulated_targets": ["qemu:a", "qemu:b"],
        "emulated_label": "emulated — not a speed",
        "verdict_grid": ("grid", "verdict_matrix"),
        "failures": ("table", "failures", 3, None, 100, None), "n_failures": 3,
        "gflops_pivots": [("pivot", "gflops")], "gflops_rows": 2,
        "timings": ("table", "gflops", 2, [
            "target", "catalog", "shape", "series", "threads", "gflops", "time_median_ns",
            "time_min_ns", "time_stdev_ns", "cv", "noisy", "rounds", "reps_per_round",
            "pack_time_ns"], None, None),
        "speedup_scalar": ("table", "speedup_vs_scalar", 2, [
            "target", "catalog", "shape", "series", "speedup", "time_median_ns",
            "ref_time_median_ns", "ref_realization"], None, None),
        "emulated": ("table", "emulated_times", 5, [
            "target", "catalog", "shape", "series", "threads", "label", "time_median_ns",
            "time_min_ns", "time_stdev_ns", "rounds"], None, None),
        "n_emulated": 5,
        "baseline_table": ("table", "speedup_vs_baseline", 4, [
            "target", "catalog", "shape", "series", "threads", "speedup", "time_change",
            "time_median_ns", "baseline_time_median_ns", "presence"], None,
            rep.presence_class),
        "n_baseline_rows": 4, "baseline_missing": 3, "baseline_timed": 2,
        "tuning": ("table", "tuning", 8, None, None, None), "n_tuning": 8,
        "models": ("table", "model_totals", 7, [
            "target", "model", "series", "speedup_vs_scalar", "total_time_ns", "gflops",
            "shapes", "shapes_in_model", "complete", "layers"], None, None),
        "n_models": 7,
        "errors": ("table", "error_vs_k", 6, [
            "target", "op", "realization", "accum", "k", "cases", "max_err_bound", "max_ulp",
            "max_rms_rel", "min_exact_fraction", "failed", "mistrusted"], None, None),
        "n_error_rows": 6, "worst_status": "WORST", "answers": "ANSWERS", "integrity": [],
        "error_sentence": ("sentence", "error_vs_k"),
        "fingerprint_summary": ("table", "fingerprint_summary", 1, None, None, None),
        "fingerprint_rows": ("table", "fingerprints", 9,
                             [c for c in rep.FINGERPRINT_COLUMNS if c != "label"], 500, None),
        "n_fingerprints": 9, "conclusive": rep.fprint.CONCLUSIVE,
        "plugins": ("table", "plugins", 10, None, None, None), "n_plugins": 10,
        "load_cost": ("table", "load_cost", 13, None, None, None), "n_load_cost": 13,
        "determinism": ("table", "determinism", 12, None, None, None), "n_determinism": 12,
        "coverage": ("table", "coverage", 4, None, 500, None), "n_coverage": 4,
        "coverage_listing": "listing", "coverage_full": 2,
        "scratch": ("table", "scratch", 5, None, None, None), "n_scratch": 5,
        "scratch_failed": 3,
        "plugin_probes": ("table", "plugin_probes", 11, None, 500, None),
        "n_plugin_probes": 11,
        "plugin_ran": ("table", "plugin_ran", 15, None, 500, None), "n_plugin_ran": 15,
        "mutation_areas": ("table", "mutation_areas", 1, None, None, None),
        "mutation_mutants": ("table", "mutation_mutants", 14, None, 500, None),
        "n_mutants": 14, "mutation_summary": {"killed": 3},
        "metadata": ("table", "metadata", 3, None, None, None),
        "targets": ("targets", ["baseline", "run"]),
        "counts_extra": ("run", True, "counts"),
        "plots": plots, "csv_names": {"gflops": "g.csv"},
        "gate_failures": ("table", "gate_failures", 1, None, None, None),
        "gate_cases": ("table", "gate_cases", 2, None, None, None),
        "trends_note": "12 run(s) of this machine",
        "sections": "",  # no section of its own module (a machine-code campaign's) by default
        "fastest_table": ("table", "fastest", 2, [
            "target", "catalog", "shape", "kernels", "winner", "fastest_ours", "ours_time_ns",
            "ours_gflops", "fastest_peer", "peer_time_ns", "peer_vs_ours", "noisy", "why"],
            None, None),
        "fastest_counts": ("table", None, 0, [
            "target", "catalog", "shape", "counted", "kernels", "winner", "call", "runner_up",
            "runner_up_vs_winner", "fewest_kernel", "kernel_instructions", "fewest_pack_b",
            "pack_b", "principal", "principal_per_floor", "why"], None, None),
        "n_fastest_counts": 0,
        # counts, but timings on hardware too: the counts do not come first
        "counts_first": False,
        "column_help": rep.COLUMN_HELP, "long_text": rep.LONG_TEXT,
    }
    assert ctx == expect
    [args] = calls["answers"]
    assert args[0].equals(_run(tmp_path, {}).results) and args[1] is True
    assert [a.attrs["tag"] for a in args[2:5]] == ["fastest", "speedup_vs_baseline",
                                                   "counts_vs_committed"]
    assert args[5] is gate and args[6:10] == (True, 12, False, True) and len(args) == 11
    assert list(args[10].columns) == rep.rcount.FASTEST_COUNT_COLUMNS


def test_without_baseline_gate_or_trends(context) -> None:
    make, calls = context
    ctx = make({"targets": {"host": {}}, "kind": "run", "summary": {"killed": 1}})
    assert (ctx["baseline"], ctx["baseline_name"], ctx["baseline_timed"]) == (None, "", 0)
    assert (ctx["gate"], ctx["gate_failures"], ctx["gate_cases"]) == (None, None, None)
    assert ctx["targets"] == ("targets", ["run"]) and ctx["mutation_summary"] == {}
    assert ctx["emulated_targets"] == [] and ctx["trends_note"] == ""
    [args] = calls["answers"]
    # not complete; no baseline; no trend plots: no trend runs, whatever the note says
    assert args[1] is False and args[6:10] == (False, 0, False, True)


def test_trend_runs_come_from_the_note_only_with_trend_plots(context) -> None:
    make, calls = context
    make({}, trends_note="7 run(s)", plots={"trends": ["a"]})
    make({}, trends_note="7 run(s)", plots={"perf": ["a"]})
    make({}, trends_note="many run(s)", plots={"trends": ["a"]})
    assert [a[7] for a in calls["answers"]] == [7, 0, 0]


def test_the_header_is_told_when_emulated_timings_are_all_there_is(context, monkeypatch
                                                                    ) -> None:
    make, calls = context
    no_hw = _tables()
    no_hw.gflops = _tagged("gflops")
    make({"targets": {"qemu:a": {"emulated": True}}}, tables=no_hw)
    make({"targets": {"host": {}}}, tables=no_hw)
    make({"targets": {"qemu:a": {"emulated": True}}})
    no_counts = _tables()
    no_counts.counts = _tagged("counts")
    make({}, tables=no_counts)
    assert [a[8:10] for a in calls["answers"]] == [(True, True), (False, True), (False, True),
                                                   (False, False)]
    # one timed row under emulation is enough; none is not
    for n, want in ((1, True), (0, False)):
        monkeypatch.setattr(Run, "perf", lambda self, n=n: self.results.head(n))
        make({"targets": {"qemu:a": {"emulated": True}}}, tables=no_hw)
        assert calls["answers"][-1][8] is want


def test_a_mutation_summary_is_shown_only_for_a_campaign(context) -> None:
    make, _ = context
    assert make({"kind": "mutation-campaign"})["mutation_summary"] == {}
    assert make({"kind": "mutation-campaign", "summary": None})["mutation_summary"] == {}
    assert make({"summary": {"a": 1}})["mutation_summary"] == {}


def test_coverage_full_counts_functions_at_100_percent_or_more(context) -> None:
    make, _ = context
    empty = _tables()
    empty.coverage = _tagged("coverage", percent=[])
    assert make({}, tables=empty)["coverage_full"] == 0
    assert make({})["coverage_full"] == 2
