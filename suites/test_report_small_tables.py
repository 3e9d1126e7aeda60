"""The report's smaller tables word for word from frames in memory: the
verdict matrix, what a weight costs at load, speedups over a baseline,
determinism checks, accumulation fingerprints and their summary; and which
builder compute_tables hands which input."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from kbench.judge import fingerprint as fprint
from kbench.results import report as rep
from kbench.results import report_perf as rep_perf
from kbench.results import report_verdicts as rep_verdicts
from kbench.results.runfolder import Run

# ---- the verdict matrix -----------------------------------------------------------------


def test_the_verdict_matrix_counts_every_status_and_names_the_worst() -> None:
    rows = [("host", "neon", "cat", "", "pass"), ("host", "neon", "cat", "", "fail"),
            ("host", "neon", "cat", "", "mistrusted"), ("host", "neon", "", "contracts", "pass"),
            ("host", "scalar", "cat", "", "skip"), ("host", "sme", "cat", "", "crashed"),
            ("host", "plugin:x", "cat", "", "error"), ("host", "neon", "cat", "", "weird"),
            ("arm", "aaa", "cat", "", "timeout"), ("host", "scalar", None, "contracts", "skip")]
    df = pd.DataFrame(rows, columns=["target", "backend", "catalog", "suite", "status"])
    table = rep.verdict_matrix(df)
    assert list(table.columns) == rep_verdicts.VERDICT_COLUMNS
    z = {s: 0 for s in rep.STATUSES}
    want = [
        ("arm", "aaa", "cat", 1, {**z, "timeout": 1}, "timeout"),
        ("host", "scalar", "cat", 1, {**z, "skip": 1}, "skip"),
        ("host", "scalar", "contracts", 1, {**z, "skip": 1}, "skip"),
        ("host", "neon", "cat", 3, {**z, "pass": 1, "fail": 1, "mistrusted": 1}, "fail"),
        ("host", "neon", "contracts", 1, {**z, "pass": 1}, "pass"),
        ("host", "sme", "cat", 1, {**z, "crashed": 1}, "crashed"),
        ("host", "plugin:x", "cat", 1, {**z, "error": 1}, "error")]
    got = table.to_dict("records")
    assert [(r["target"], r["backend"], r["catalog"], r["cases"],
             {s: r[s] for s in rep.STATUSES}, r["verdict"]) for r in got] == want
    assert table.index.tolist() == list(range(7))
    assert rep.verdict_matrix(df.iloc[:0]).empty
    assert list(rep.verdict_matrix(df.iloc[:0]).columns) == rep_verdicts.VERDICT_COLUMNS


def test_a_cell_of_unknown_statuses_only_counts_none_and_reads_skip() -> None:
    df = pd.DataFrame({"target": ["t", "t"], "backend": ["b", "c"], "catalog": "k",
                       "suite": "s", "status": ["weird", "pass"]})
    table = rep.verdict_matrix(df)
    assert table[["backend", "cases", "verdict"]].values.tolist() == [["b", 0, "skip"],
                                                                      ["c", 1, "pass"]]


def test_the_worst_verdict_follows_the_severity_order() -> None:
    for statuses, worst in [(["pass", "mistrusted"], "mistrusted"), (["error", "fail"], "fail"),
                            (["pass", "error"], "error"), (["skip", "pass"], "pass"),
                            (["exited", "crashed"], "crashed"), (["skip"], "skip")]:
        df = pd.DataFrame({"target": "t", "backend": "b", "catalog": "c", "suite": "s",
                           "status": statuses})
        assert rep.verdict_matrix(df)["verdict"].tolist() == [worst], statuses


# ---- load cost ---------------------------------------------------------------------------

def test_load_cost_sums_cases_where_b_was_packed_on_its_own() -> None:
    """Rows in the order their (target, realization) first appear; a case
    counts only with a positive pack time and a positive call time (0, a
    text cell, or none leaves it out)."""
    gflops = pd.DataFrame({
        "target": ["h2", "h", "h", "h", "h", "h", "h"],
        "realization": ["a", "a", "a", "a", "b", "a", "a"],
        "time_median_ns": [10.0, 100.0, 300.0, 50.0, 0.0, 70.0, "y"],
        "pack_time_ns": ["20", 50.0, 150.0, "x", 9.0, 0.0, 5.0]})
    counts = pd.DataFrame({"target": ["q"], "realization": ["s"], "count_call": [1000.0],
                           "count_pack_b": [250.0]})
    table = rep.load_cost(gflops, counts)
    assert list(table.columns) == rep.LOAD_COST_COLUMNS
    assert table.to_dict("records") == [
        {"target": "h2", "realization": "a", "measure": "median time, ns (sum over cases)",
         "cases": 1, "call": 10.0, "pack_b": 20.0, "pack_b_per_call": 2.0},
        {"target": "h", "realization": "a", "measure": "median time, ns (sum over cases)",
         "cases": 2, "call": 400.0, "pack_b": 200.0, "pack_b_per_call": 0.5},
        {"target": "q", "realization": "s", "measure": "instructions (sum over cases)",
         "cases": 1, "call": 1000.0, "pack_b": 250.0, "pack_b_per_call": 0.25}]


def test_load_cost_of_frames_without_their_columns_is_empty() -> None:
    empty = pd.DataFrame()
    no_pack = pd.DataFrame({"target": ["h"], "realization": ["a"], "time_median_ns": [1.0]})
    no_call = pd.DataFrame({"target": ["h"], "realization": ["a"], "pack_time_ns": [1.0]})
    no_count = pd.DataFrame({"target": ["h"], "realization": ["a"], "count_pack_b": [1.0]})
    for g, c in [(empty, empty), (no_pack, empty), (no_call, no_count)]:
        table = rep.load_cost(g, c)
        assert table.empty and list(table.columns) == rep.LOAD_COST_COLUMNS


# ---- speedup over a baseline -----------------------------------------------------------

def _timed(rows: list[tuple[str, str, float, float]], series: bool = True) -> pd.DataFrame:
    out = []
    for case, real, t, g in rows:
        row = {c: "x" for c in rep_perf.PERF_KEY}
        row.update(case=case, realization=real, threads=1, time_median_ns=t, gflops=g)
        if series:
            row["series"] = f"{real}*"
        out.append(row)
    return pd.DataFrame(out)


def test_speedup_over_a_baseline_keeps_rows_of_one_side_and_says_so(monkeypatch) -> None:
    cur = _timed([("a", "r", 100.0, 2.0), ("b", "r", 50.0, 4.0), ("c", "r", 10.0, 1.0),
                  ("e", "r", 0.0, 0.0)])
    base = _timed([("a", "r", 200.0, 1.0), ("b", "r", 50.0, 4.0), ("d", "r", 30.0, 3.0),
                   ("e", "r", 5.0, 1.0)], series=False)
    runs = {"run": cur, "base": base}
    monkeypatch.setattr(rep_perf, "timed_rows", lambda run: runs[run.name].copy())
    table = rep_perf.speedup_vs_baseline(Run(Path("run"), {}, pd.DataFrame()),
                                    Run(Path("base"), {}, pd.DataFrame()))
    assert list(table.columns) == rep_perf.SPEEDUP_BASELINE_COLUMNS
    got = [(r["case"], r["series"], r["time_median_ns"], r["baseline_time_median_ns"],
            r["speedup"], r["time_change"], r["gflops"], r["baseline_gflops"], r["presence"])
           for r in table.to_dict("records")]
    nan = math.nan
    want = [("a", "r*", 100.0, 200.0, 2.0, -0.5, 2.0, 1.0, "both"),
            ("b", "r*", 50.0, 50.0, 1.0, 0.0, 4.0, 4.0, "both"),
            ("c", "r*", 10.0, nan, nan, nan, 1.0, nan, "no baseline row"),
            ("d", "r", nan, 30.0, nan, nan, nan, 3.0, "only in baseline"),
            ("e", "r*", 0.0, 5.0, nan, -1.0, 0.0, 1.0, "both")]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert all((a == b) or (isinstance(a, float) and math.isnan(a) and math.isnan(b))
                   for a, b in zip(g, w, strict=True)), (g, w)
    assert table.index.tolist() == [0, 1, 2, 3, 4]


def test_without_a_baseline_there_is_no_speedup_table() -> None:
    table = rep.speedup_vs_baseline(Run(Path("r"), {}, pd.DataFrame()), None)
    assert table.empty and list(table.columns) == rep_perf.SPEEDUP_BASELINE_COLUMNS


# ---- determinism -------------------------------------------------------------------------

def test_the_determinism_table_counts_checks_and_names_what_did_not_hold() -> None:
    rows = [("h", "r", "", "pass", "c1", ""), ("h", "r", "", "fail", "c2", "bits differ"),
            ("h", "r", "", "crashed", "c3", "SIGSEGV"), ("h", "r", "", "error", "c4", "e"),
            ("h", "r", "", "mistrusted", "c5", "m"), ("h", "p.x", "p", "pass", "c1", ""),
            ("a", "r", "", "timeout", "c1", "t")]
    df = pd.DataFrame(rows, columns=["target", "realization", "plugin", "status", "case",
                                     "message"]).assign(suite="determinism")
    other = df.assign(suite="correctness", status="fail")
    table = rep.determinism_table(pd.concat([df, other], ignore_index=True))
    assert list(table.columns) == rep.DETERMINISM_COLUMNS
    assert [list(r) for r in table.itertuples(index=False)] == [
        ["h", "r", "", 5, 1, 1, 2, "c2: bits differ; c3: SIGSEGV; c4: e; c5: m"],
        ["h", "p.x", "p", 1, 1, 0, 0, ""],
        ["a", "r", "", 1, 0, 0, 1, "c1: t"]]
    for results in (pd.DataFrame(), other):
        t = rep.determinism_table(results)
        assert t.empty and list(t.columns) == rep.DETERMINISM_COLUMNS


# ---- fingerprints --------------------------------------------------------------------------

def _print(target: str, real: str, case: str, model: str, match: Any, kind: str = "uniform",
           catalog: str = "cat", accum: str = "fp32") -> dict[str, Any]:
    return {"target": target, "realization": real, "catalog": catalog, "case": case,
            "kind": kind, "k": 64, "accum_model": model, "accum_match": match, "accum": accum,
            "status": "pass", "op": "gemm", "shape": "s"}


def test_fingerprints_are_listed_fp16_first_with_their_labels() -> None:
    rows = [_print("h", "r", "c1", "fp32_once", 1.0),
            _print("h", "r", "c2", "fp16_fma_chain", "0.99"),
            _print("h", "r", "c3", fprint.INDISTINGUISHABLE, 1.0),
            _print("h", "r", "c4", "fp16_fma_chain", 0.5),
            _print("h", "r", "c0", "fp32_once", 1.0, kind="normal"),
            _print("h", "r", "c5", "", 1.0), _print("h", "r", "c6", None, 1.0),
            _print("a", "q", "c1", "fp32_once", "x")]
    table = rep.fingerprints(pd.DataFrame(rows))
    assert list(table.columns) == rep.FINGERPRINT_COLUMNS
    got = [(r["target"], r["case"], r["kind"], r["category"], r["declared"], r["label"])
           for r in table.to_dict("records")]
    assert got == [
        ("a", "c1", "uniform", "unexplained", "fp32", "unexplained (best fp32_once, –)"),
        ("h", "c2", "uniform", "fp16", "fp32", "FP16 chain (fp16_fma_chain, 99.0%)"),
        ("h", "c4", "uniform", "unexplained", "fp32", "unexplained (best fp16_fma_chain, 50.0%)"),
        ("h", "c0", "normal", "fp32", "fp32", "FP32 accumulation (fp32_once, 100%)"),
        ("h", "c1", "uniform", "fp32", "fp32", "FP32 accumulation (fp32_once, 100%)"),
        ("h", "c3", "uniform", "indistinguishable", "fp32",
         "indistinguishable (every model matches)")]
    assert table["accum_match"].dtype == float and math.isnan(table["accum_match"].iloc[0])
    assert table.index.tolist() == list(range(6))


def test_results_without_fingerprints_have_an_empty_table() -> None:
    for df in (pd.DataFrame({"case": ["a"]}), pd.DataFrame([_print("h", "r", "c", "", 1.0)])):
        table = rep.fingerprints(df)
        assert table.empty and list(table.columns) == rep.FINGERPRINT_COLUMNS


def test_the_fingerprint_summary_counts_categories_and_lists_fp16_cases() -> None:
    rows = [_print("h", "r", f"c{i:02d}", "fp16_fma_chain", 1.0) for i in range(13)]
    rows += [_print("h", "r", "c00", "fp16_fma_chain", 1.0, kind="normal"),
             _print("h", "r", "d1", "fp32_once", 1.0), _print("h", "r", "d2", "fp32_once", 1.0),
             _print("h", "r", "d3", fprint.INDISTINGUISHABLE, 1.0),
             _print("h", "r", "d4", "fp16_lanes[8]", 0.2),
             _print("h", "q", "e1", "fp32_once", 1.0, accum="fp16")]
    summary = rep.fingerprint_summary(rep.fingerprints(pd.DataFrame(rows)))
    assert list(summary.columns) == rep_verdicts.FINGERPRINT_SUMMARY_COLUMNS
    q, r = summary.to_dict("records")  # in the table's order: realization q first
    listed = ", ".join(f"c{i:02d}" for i in range(12)) + ", … (13 in all)"
    assert r == {"target": "h", "realization": "r", "op": "gemm", "declared": "fp32",
                 "results": 18, "fp16": 14, "unexplained": 1, "fp32": 2,
                 "indistinguishable": 1,
                 "models": "fp16_fma_chain ×14, fp32_once ×2, fp16_lanes[8] ×1",
                 "fp16_cases": listed}
    assert q == {"target": "h", "realization": "q", "op": "gemm", "declared": "fp16",
                 "results": 1, "fp16": 0, "unexplained": 0, "fp32": 1, "indistinguishable": 0,
                 "models": "fp32_once ×1", "fp16_cases": ""}


def test_twelve_fp16_cases_are_listed_without_a_count() -> None:
    rows = [_print("h", "r", f"c{i:02d}", "fp16_fma_chain", 1.0) for i in range(12)]
    [r] = rep.fingerprint_summary(rep.fingerprints(pd.DataFrame(rows))).to_dict("records")
    assert r["fp16_cases"] == ", ".join(f"c{i:02d}" for i in range(12))
    empty = rep.fingerprint_summary(rep.fingerprints(pd.DataFrame({"case": []})))
    assert empty.empty and list(empty.columns) == rep_verdicts.FINGERPRINT_SUMMARY_COLUMNS


# ---- compute_tables ------------------------------------------------------------------------

def test_compute_tables_hands_each_builder_its_input(monkeypatch) -> None:
    run = Run(Path("r"), {}, pd.DataFrame({"x": [1]}))
    base = Run(Path("b"), {}, pd.DataFrame({"x": [2]}))
    seen: dict[str, tuple[Any, ...]] = {}
    calls: list[tuple[str, tuple[Any, ...]]] = []

    def fake(name: str):
        def build(*args: Any) -> pd.DataFrame:
            seen[name] = args
            calls.append((name, args))
            df = pd.DataFrame({"from": [name]})
            df.attrs["tag"] = name
            return df
        return build
    for name in ("verdict_matrix", "failures", "gflops_table", "speedup_vs_scalar",
                 "speedup_vs_baseline", "emulated_times", "error_vs_k", "model_totals",
                 "metadata", "tuning_table", "fingerprints", "fingerprint_summary",
                 "determinism_table", "coverage_table", "load_cost"):
        monkeypatch.setattr(rep, name, fake(name))
    monkeypatch.setattr(rep, "coverage_listing", lambda r: f"listing of {r.name}")
    for name in ("count_table", "mix_table", "vs_run", "vs_committed", "anchor_table"):
        monkeypatch.setattr(rep.rcount, name, fake(name))
    for name in ("plugin_table", "probe_table"):
        monkeypatch.setattr(rep.plugin_report, name, fake(name))
    monkeypatch.setattr(rep.views, "fastest_per_shape", fake("fastest_per_shape"))
    monkeypatch.setattr(rep.mutation, "load", lambda path: {"mutants": [], "from": str(path)})
    monkeypatch.setattr(rep.mutation, "area_table", fake("area_table"))
    monkeypatch.setattr(rep.mutation, "mutant_table", fake("mutant_table"))
    t = rep.compute_tables(run, base)
    results = run.results
    assert all(seen[n][0] is results for n in ("verdict_matrix", "failures", "error_vs_k",
                                                "fingerprints", "determinism_table",
                                                "probe_table"))
    assert all(seen[n] == (run,) for n in ("gflops_table", "speedup_vs_scalar",
                                           "emulated_times", "model_totals", "tuning_table",
                                           "coverage_table", "count_table", "mix_table",
                                           "vs_committed", "anchor_table", "plugin_table"))
    assert [args for name, args in calls if name == "gflops_table"] == [(run,)] * 3
    assert seen["speedup_vs_baseline"] == (run, base) and seen["metadata"] == (run, base)
    assert seen["vs_run"] == (run, base)
    assert seen["fingerprint_summary"][0].attrs["tag"] == "fingerprints"
    assert seen["fastest_per_shape"][0].attrs["tag"] == "gflops_table"
    g, c = seen["load_cost"]
    assert g.attrs["tag"] == "gflops_table" and c.attrs["tag"] == "count_table"
    assert seen["area_table"] == ({"mutants": [], "from": "r"},)
    assert seen["mutant_table"] == ({"mutants": [], "from": "r"},)
    fields = {"verdict_matrix": "verdict_matrix", "failures": "failures",
              "gflops": "gflops_table", "speedup_vs_scalar": "speedup_vs_scalar",
              "speedup_vs_baseline": "speedup_vs_baseline", "emulated_times": "emulated_times",
              "error_vs_k": "error_vs_k", "model_totals": "model_totals",
              "metadata": "metadata", "tuning": "tuning_table", "fingerprints": "fingerprints",
              "fingerprint_summary": "fingerprint_summary", "plugins": "plugin_table",
              "plugin_probes": "probe_table", "determinism": "determinism_table",
              "coverage": "coverage_table", "fastest": "fastest_per_shape",
              "load_cost": "load_cost", "counts": "count_table", "count_mix": "mix_table",
              "counts_vs_baseline": "vs_run", "counts_vs_committed": "vs_committed",
              "count_anchors": "anchor_table", "mutation_areas": "area_table",
              "mutation_mutants": "mutant_table"}
    for field, name in fields.items():
        assert getattr(t, field)["from"].tolist() == [name], field
    assert t.coverage_listing == "listing of r"


@pytest.mark.parametrize("value", [None, ""])
def test_text_columns_read_missing_as_empty(value: Any) -> None:
    df = pd.DataFrame({"target": ["t", "t"], "backend": ["b", "b"], "catalog": [value, "c"],
                       "suite": ["s", "s"], "status": ["pass", "pass"]})
    assert rep.verdict_matrix(df)["catalog"].tolist() == ["c", "s"]


def test_load_cost_counts_fractions_and_reads_counts_without_times() -> None:
    gflops = pd.DataFrame({"target": ["h"], "realization": ["a"], "time_median_ns": [0.5],
                           "pack_time_ns": [0.25]})
    counts = pd.DataFrame({"target": ["q"], "realization": ["s"], "count_call": [8.0],
                           "count_pack_b": [2.0]})
    table = rep.load_cost(gflops, counts)
    assert table[["target", "call", "pack_b", "pack_b_per_call"]].values.tolist() == [
        ["h", 0.5, 0.25, 0.5], ["q", 8.0, 2.0, 0.25]]
    only_counts = rep.load_cost(pd.DataFrame(), counts)
    assert only_counts["target"].tolist() == ["q"]


def test_the_fingerprint_summary_keeps_the_tables_order() -> None:
    rows = [_print("h", "z", "c1", "fp32_once", 1.0), _print("h", "a", "c1", "fp32_once", 1.0),
            _print("a", "m", "c1", "fp32_once", 1.0)]
    table = pd.DataFrame(rows).assign(category="fp32", declared="fp32")
    summary = rep.fingerprint_summary(table)
    assert summary[["target", "realization"]].values.tolist() == [["h", "z"], ["h", "a"],
                                                                   ["a", "m"]]


# ---- failures ------------------------------------------------------------------------------

def test_failures_are_the_failing_rows_alone_with_their_columns() -> None:
    base = {c: "x" for c in rep_verdicts.FAILURE_COLUMNS} | {"max_err_bound": 0.5, "max_ulp": 2.0,
                                                  "suite": "s"}
    rows = [base | {"case": "c0", "status": "pass"}, base | {"case": "c1", "status": "fail"},
            base | {"case": "c2", "status": "pass"}, base | {"case": "c3", "status": "error"},
            base | {"case": "c4", "status": "mistrusted", "message": None}]
    got = rep.failures(pd.DataFrame(rows))
    assert list(got.columns) == rep_verdicts.FAILURE_COLUMNS and list(got.index) == [0, 1]
    assert got["case"].tolist() == ["c1", "c3"]
