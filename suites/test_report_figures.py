"""The figures kbench prints and reports, from given times: flop counts of
GEMM and of convolutions (stride, padding, dilation, groups), the statistic
each figure uses (GFLOP/s and pack time from the median, never the fastest
round), units (the per-model total in milliseconds), speedups against the
right scalar row, per-model totals weighted by layer counts, and the pooled
passes of a case. Synthetic rows written and read back by the real store."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kbench.harness.perf import with_times
from kbench.judge.verdict import Verdict
from kbench.native.calls import CallResult
from kbench.problems.cases import ConvCase, GemmCase
from kbench.results import report
from kbench.results.runfolder import Run, load_run
from kbench.results.store import RunWriter
from kbench.results.summary import perf_frame

META = {"host": "box", "machine": "aarch64", "cpu_model": "Test CPU",
        "git_commit": "0123456789abcdef", "git_dirty": False,
        "date": "2025-01-01T00:00:00+00:00", "command_line": "kbench run",
        "targets": {"host": {"emulated": False, "arch": "aarch64"}}}


def test_gemm_flops_count_every_problem_of_a_batch() -> None:
    assert GemmCase("g", 3, 5, 7).flops == 2 * 3 * 5 * 7
    assert GemmCase("g", 3, 5, 7, batch=4).flops == 4 * 2 * 3 * 5 * 7


@pytest.mark.parametrize("kw, out_hw, reduction", [
    (dict(), (6, 6), 3 * 3 * 8),
    (dict(stride=(2, 1)), (3, 6), 3 * 3 * 8),
    (dict(pad=(1, 1, 2, 0)), (8, 8), 3 * 3 * 8),
    (dict(dilation=(2, 1)), (4, 6), 3 * 3 * 8),
    (dict(groups=2), (6, 6), 3 * 3 * 4),
    (dict(groups=8, c_out=8), (6, 6), 3 * 3 * 1),
])
def test_conv_flops_follow_the_output_size_and_the_group_reduction(
        kw: dict, out_hw: tuple[int, int], reduction: int) -> None:
    case = ConvCase(**{**dict(name="c", n=2, h=8, w=8, c_in=8, c_out=4, kh=3, kw=3), **kw})
    assert (case.out_h, case.out_w) == out_hw
    assert case.reduction == reduction
    assert case.flops == 2 * 2 * out_hw[0] * out_hw[1] * case.c_out * reduction


def _verdict(case: str = "c1", realization: str = "gemm_scalar_f32acc", backend: str = "scalar",
             b_form: str = "plain", threads: int = 1, layers: int = 1, flops: int = 2_000_000,
             catalog: str = "model", times: list[float] | None = None) -> Verdict:
    v = Verdict(case=case, op="gemm", shape=f"shape_{case}", kind="uniform", target="host",
                backend=backend, realization=realization, kernel="k", accum="fp32", k=8, m=8,
                n=8, b_form=b_form, vector_bits=0, status="pass", catalog=catalog, suite="perf",
                layers=layers, flops=flops, threads=threads)
    if times is not None:
        v = with_times(v, times, 1, None)
    return v


def test_timing_statistics_and_gflops_come_from_the_median_round() -> None:
    v = with_times(_verdict(), [4000.0, 1000.0, 2000.0, 9000.0, 3000.0], 7,
                   CallResult(None, times_ns=[50.0, 10.0, 30.0]))
    assert (v.rounds, v.reps_per_round) == (5, 7)
    assert v.time_median_ns == 3000.0 and v.time_min_ns == 1000.0
    assert v.time_mean_ns == 3800.0
    assert v.time_stdev_ns == pytest.approx(float(np.std([4, 1, 2, 9, 3], ddof=1)) * 1000)
    assert v.gflops == pytest.approx(2_000_000 / 3000.0)  # flops per ns = GFLOP/s
    assert v.pack_time_ns == 30.0


def test_the_printed_per_model_time_is_in_milliseconds_and_weighted_by_layers() -> None:
    rows = [_verdict("c1", layers=3, times=[2e6] * 3), _verdict("c2", layers=1, times=[5e5] * 3)]
    frame = perf_frame(rows)
    (row,) = frame.to_dict("records")
    assert row["timed"] == 2
    assert row["weighted_ms"] == pytest.approx(3 * 2.0 + 0.5)
    geo = math.sqrt((2e6 / 2e6) * (2e6 / 5e5))  # geometric mean of 1 and 4 GFLOP/s
    assert float(row["geomean_gflops"]) == pytest.approx(geo, rel=1e-3)


def test_the_printed_perf_summary_names_emulated_times_and_keeps_only_timed_rows() -> None:
    """One row per target and realization in the order they ran; emulated
    times give "emulated", never a GFLOP/s figure; correctness rows and perf
    rows that were not timed are left out."""
    from dataclasses import replace
    fast = _verdict("c1", realization="gemm_neon_f32acc", backend="neon", times=[1e6] * 3)
    slow = _verdict("c1", times=[4e6] * 3)
    emu = replace(_verdict("c2", times=[3e6] * 3), target="qemu:svl=512", emulated=True)
    single = replace(_verdict("c3", realization="gemm_x", times=[2e6]), target="t1")
    untimed = _verdict("c4", realization="gemm_untimed")  # verified, never timed
    check = replace(_verdict("c5", realization="gemm_check", times=[1e6] * 3),
                    suite="correctness")
    frame = perf_frame([emu, slow, fast, single, untimed, check])  # not in sorted order
    got = [(r["target"], r["realization"], r["timed"], r["geomean_gflops"])
           for r in frame.to_dict("records")]
    assert got == [("qemu:svl=512", "gemm_scalar_f32acc", 1, "emulated"),
                   ("host", "gemm_scalar_f32acc", 1, "0.5"), ("host", "gemm_neon_f32acc", 1, "2"),
                   ("t1", "gemm_x", 1, "1")]
    assert frame["weighted_ms"].tolist() == pytest.approx([3.0, 4.0, 1.0, 2.0], rel=1e-9)
    tiny = perf_frame([_verdict("c6", flops=0, times=[1e6] * 3)])
    assert tiny["geomean_gflops"].tolist() == ["1e-12"]  # 0 GFLOP/s clipped, never -inf


def _run(folder: Path, rows: list[Verdict]) -> Run:
    w = RunWriter(folder, dict(META))
    w.add_all(rows)
    w.close(complete=True)
    return load_run(folder)


def test_speedups_are_against_the_fastest_row_of_the_scalar_reference(tmp_path: Path) -> None:
    rows = [
        _verdict(times=[1000.0] * 3, b_form="plain"),
        _verdict(times=[1500.0] * 3, b_form="packed"),  # the reference's slower B form
        _verdict(realization="gemm_scalar_f16acc", times=[800.0] * 3),  # not the reference
        _verdict(realization="gemm_neon_f32acc", backend="neon", times=[250.0] * 3),
    ]
    table = report.speedup_vs_scalar(_run(tmp_path / "run", rows))
    neon = table[table["realization"] == "gemm_neon_f32acc"].iloc[0]
    assert neon["ref_realization"] == "gemm_scalar_f32acc"
    assert neon["ref_time_median_ns"] == 1000.0
    assert neon["speedup"] == pytest.approx(4.0)
    slow_form = table[(table["realization"] == "gemm_scalar_f32acc")
                      & (table["b_form"] == "packed")].iloc[0]
    assert slow_form["speedup"] == pytest.approx(1000.0 / 1500.0)


def test_speedups_against_a_baseline_are_baseline_over_run(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", [_verdict(times=[2000.0] * 3)])
    run = _run(tmp_path / "run", [_verdict(times=[500.0] * 3)])
    table = report.speedup_vs_baseline(run, base)
    (row,) = table.to_dict("records")
    assert row["speedup"] == pytest.approx(4.0)
    assert row["time_change"] == pytest.approx(-0.75)


def test_model_totals_weight_each_shape_by_its_layers(tmp_path: Path) -> None:
    rows = [
        _verdict("c1", layers=3, times=[1000.0] * 3),
        _verdict("c2", layers=2, times=[4000.0] * 3),
        _verdict("c1", "gemm_neon_f32acc", "neon", layers=3, times=[100.0] * 3),
        _verdict("c2", "gemm_neon_f32acc", "neon", layers=2, times=[5000.0] * 3),
        _verdict("c1", "gemm_sme_f32acc", "sme", layers=3, times=[200.0] * 3),  # c1 only
    ]
    totals = report.model_totals(_run(tmp_path / "run", rows)).set_index("realization")
    scalar = totals.loc["gemm_scalar_f32acc"]
    assert scalar["total_time_ns"] == 3 * 1000.0 + 2 * 4000.0
    assert scalar["layers"] == 5 and bool(scalar["complete"])
    assert scalar["total_gflop"] == 5 * 2_000_000 / 1e9  # exactly: GFLOP is 1e9 FLOP
    assert scalar["gflops"] == pytest.approx(5 * 2_000_000 / 11000.0)
    assert scalar["speedup_vs_scalar"] == pytest.approx(1.0)
    neon = totals.loc["gemm_neon_f32acc"]
    assert neon["speedup_vs_scalar"] == pytest.approx(11000.0 / (300.0 + 10000.0))
    sme = totals.loc["gemm_sme_f32acc"]
    assert not bool(sme["complete"]) and math.isnan(sme["speedup_vs_scalar"])
    best = totals.loc["(fastest per shape)"]
    assert best["total_time_ns"] == 3 * 100.0 + 2 * 4000.0  # neon for c1, scalar for c2
    assert best["speedup_vs_scalar"] == pytest.approx(11000.0 / 8300.0)


def test_gflops_are_derived_from_the_median_where_a_row_lacks_them(tmp_path: Path) -> None:
    v = _verdict(times=[1000.0, 4000.0, 2000.0])
    v.gflops = float("nan")
    rows = report.timed_rows(_run(tmp_path / "run", [v]))
    assert rows["gflops"].iloc[0] == pytest.approx(2_000_000 / 2000.0)


def test_pooled_passes_recompute_the_median_and_gflops(tmp_path: Path) -> None:
    rows = [_verdict(times=[1000.0, 1100.0, 1200.0]), _verdict(times=[3000.0, 3100.0, 900.0])]
    pooled = _run(tmp_path / "run", rows).perf_pooled()
    (row,) = pooled.to_dict("records")
    assert row["rounds"] == 6
    assert row["time_median_ns"] == pytest.approx(1150.0)
    assert row["time_min_ns"] == 900.0
    assert row["gflops"] == pytest.approx(2_000_000 / 1150.0)
    assert isinstance(pooled, pd.DataFrame)


def test_the_run_summary_counts_each_status_per_realization() -> None:
    """The table printed after a run: one row per target, backend,
    realization and accumulation in the order they ran; skipped verdicts left
    out; each status counted in its own column, the faults together; the
    worst error and ulp, the least and mean exact fraction."""
    from dataclasses import replace

    from kbench.results.summary import summary_dict, summary_frame, summary_text

    def v(case: str, status: str, real: str = "gemm_scalar_f32acc", err: float = 0.1,
          ulp: float = 1.0, exact: float = 0.5) -> Verdict:
        return replace(_verdict(case, realization=real), suite="correctness", status=status,
                       max_err_bound=err, max_ulp=ulp, exact=int(exact * 64), total=64)
    rows = [v("a", "pass", "gemm_z", 0.2, 2.0, 0.25), v("b", "fail", "gemm_z", 1.5, 9.0, 0.75),
            v("c", "mistrusted", "gemm_z"), v("d", "error", "gemm_z"), v("e", "crashed", "gemm_z"),
            v("f", "timeout", "gemm_z"), v("g", "exited", "gemm_z"), v("h", "skip", "gemm_z", 99.0),
            v("i", "pass", "gemm_a"), v("j", "skip", "gemm_only_skipped")]
    frame = summary_frame(rows)
    assert list(frame.columns) == [
        "target", "backend", "realization", "accum", "cases", "passed", "failed", "mistrusted",
        "errors", "faults", "worst_err_bound", "worst_ulp", "min_exact", "mean_exact"]
    got = frame.to_dict("records")
    assert [r["realization"] for r in got] == ["gemm_z", "gemm_a"]  # run order, no skip-only
    z = got[0]
    assert (z["cases"], z["passed"], z["failed"], z["mistrusted"], z["errors"], z["faults"]) == \
        (7, 1, 1, 1, 1, 3)
    assert z["worst_err_bound"] == 1.5 and z["worst_ulp"] == 9.0  # the skipped 99 not counted
    assert z["min_exact"] == 0.25 and z["mean_exact"] == pytest.approx((0.25 + 0.75 + 2.5) / 7)
    assert got[1]["cases"] == 1 and got[1]["passed"] == 1 and got[1]["faults"] == 0
    assert summary_dict(rows) == got
    empty = summary_frame([v("h", "skip")])
    assert empty.empty and list(empty.columns) == list(frame.columns)
    assert summary_text([]) == "no verdicts" and summary_text([v("h", "skip")]) == "no verdicts"
    text = summary_text(rows)
    assert text.splitlines()[0].split() == list(frame.columns)
    assert text.splitlines()[1].split()[0] == "host"  # no index column
    odd = [v("p", "pass", err=0.123456, ulp=2.0)]
    assert summary_text(odd).splitlines()[1].split()[-4:] == ["0.123", "2", "0.5", "0.5"]
    assert "performance" not in text
    timed = _verdict("t", times=[2e6] * 3)
    text = summary_text([*rows, timed])
    head, perf = text.split("\n\nperformance (median per call; weighted by layer counts):\n")
    assert head.splitlines()[0].split() == list(frame.columns)
    assert perf.splitlines()[0].split() == ["target", "realization", "timed", "weighted_ms",
                                            "geomean_gflops"]
    assert perf.splitlines()[1].split() == ["host", "gemm_scalar_f32acc", "1", "2", "1"]
    odd_time = _verdict("t", times=[1.234567e6] * 3)
    perf = summary_text([*rows, odd_time]).split("weighted by layer counts):\n")[1]
    assert perf.splitlines()[1].split()[:4] == ["host", "gemm_scalar_f32acc", "1", "1.235"]


def test_the_terminal_summary_explains_its_columns_and_a_huge_ulp_on_a_passing_row() -> None:
    """Under the table: a note for each passing row whose worst_ulp is huge
    (a cancelling result, not a wrong one), none for a failing row or a small
    ULP, then the legend; every column the summary prints is explained in
    kbench.results.columns (and so in docs/cli.md and on the report's hover)."""
    from dataclasses import replace

    from kbench.results.columns import TERMINAL
    from kbench.results.summary import HUGE_ULP, LEGEND, summary_frame, summary_text

    def v(case: str, status: str, real: str, ulp: float) -> Verdict:
        return replace(_verdict(case, realization=real), suite="correctness", status=status,
                       accum="fp16", max_err_bound=0.4, max_ulp=ulp, exact=1, total=4)
    rows = [v("a", "pass", "gemm_fp16", 1.85e9), v("b", "pass", "gemm_small", HUGE_ULP),
            v("c", "fail", "gemm_bad", 1e9)]
    lines = summary_text(rows).splitlines()
    assert lines[-1] == LEGEND
    notes = [ln for ln in lines if ln.startswith("note:")]
    assert notes == ["note: gemm_fp16 on host passes with worst_ulp 1.85e+09 (fp16 "
                     "accumulation): where the exact result cancels to near 0 an FP16 ULP is "
                     "2^-24, so an error well within the bound (worst_err_bound 0.4) reads as "
                     "that many ULPs"]
    assert set(summary_frame(rows).columns) <= set(TERMINAL)
    for column in ("worst_err_bound", "worst_ulp", "min_exact", "mean_exact"):
        assert column in LEGEND


def test_the_google_benchmark_document_of_a_perf_run() -> None:
    """Google Benchmark's JSON (compare.py reads it): one benchmark per
    realization/catalog/case (threads and a non-host target in the name), its
    passes pooled, real and CPU time the median round, iterations every call
    made; emulated and untimed rows left out; the machine in the context."""
    from dataclasses import replace

    from kbench.results.interop import benchmark_name, google_benchmark_json
    a1 = _verdict("c1", times=[4000.0, 1000.0, 3000.0])
    a2 = _verdict("c1", times=[2000.0, 5000.0])
    wide = replace(_verdict("c2", threads=4, times=[800.0] * 3), target="pi5")
    emu = replace(_verdict("c3", times=[9.0] * 3), emulated=True)
    untimed = _verdict("c4")
    meta = {"date": "2026-01-01", "host": "box", "cpus": 8, "cpu_model": "CPU X",
            "git_commit": "abc123", "machine_state": {"start": {"load_avg": [0.5, 0.4, 0.3]}}}
    doc = google_benchmark_json([a1, wide, emu, a2, untimed], meta)
    names = [b["name"] for b in doc["benchmarks"]]
    assert names == ["gemm_scalar_f32acc/model/c1", "gemm_scalar_f32acc/model/c2/threads:4@pi5"]
    assert benchmark_name(replace(a1, catalog="")) == "gemm_scalar_f32acc/c1"
    first, second = doc["benchmarks"]
    assert (first["family_index"], second["family_index"]) == (0, 1)
    assert first["real_time"] == first["cpu_time"] == 3000.0  # median of the 5 pooled rounds
    assert first["iterations"] == 5 * a1.reps_per_round and first["time_unit"] == "ns"
    assert (first["kbench_rounds"], first["kbench_passes"]) == (5, 2)
    assert first["kbench_min_ns"] == 1000.0 and first["kbench_mean_ns"] == 3000.0
    assert first["kbench_stdev_ns"] == pytest.approx(float(np.std([4, 1, 3, 2, 5], ddof=1))
                                                     * 1000)
    assert first["kbench_gflops"] == pytest.approx(2_000_000 / 3000.0)
    assert (first["kbench_realization"], first["kbench_case"], first["kbench_catalog"],
            first["kbench_target"], first["kbench_status"]) == (
        "gemm_scalar_f32acc", "c1", "model", "host", "pass")
    assert second["threads"] == 4 and second["kbench_stdev_ns"] == 0.0
    ctx = doc["context"]
    assert (ctx["date"], ctx["host_name"], ctx["num_cpus"], ctx["load_avg"],
            ctx["kbench_cpu_model"], ctx["kbench_commit"]) == (
        "2026-01-01", "box", 8, [0.5, 0.4, 0.3], "CPU X", "abc123")
    assert google_benchmark_json([], {})["context"]["load_avg"] == []


class _Asked(Exception):
    """Raised by the recorder below once the report's header is asked for."""


def _header_args(run: Run, monkeypatch, baseline: Run | None = None, gate: object = None,
                 plots: dict | None = None, note: str = "") -> tuple:
    from kbench.results import report_views as views
    seen: list[tuple] = []

    def record(*args: object) -> None:
        seen.append(args)
        raise _Asked
    monkeypatch.setattr(views, "answers", record)
    tables = report.compute_tables(run, baseline)
    with pytest.raises(_Asked):
        report.render_html(run, baseline, tables, plots or {}, {}, gate, note)
    (args,) = seen
    return args


def test_the_report_header_is_asked_what_the_run_holds(tmp_path: Path, monkeypatch) -> None:
    """render_html asks for the header's answers with the run's completeness,
    the gate, whether a baseline is shown, the trend chart's run count, and
    whether the run's only timings are emulated ones (then: counts or not)."""
    timed = _run(tmp_path / "hw", [_verdict(times=[1000.0] * 3)])
    args = _header_args(timed, monkeypatch)
    assert args[1] is True and args[5] is None and args[6] is False  # complete, gate, baseline
    assert args[7] == 0 and args[8] is False and args[9] is False
    gate = object()
    args = _header_args(timed, monkeypatch, baseline=timed, gate=gate,
                        plots={"trends": ["chart"]}, note="12 run(s) of this machine in h.db")
    assert args[5] is gate and args[6] is True and args[7] == 12
    args = _header_args(timed, monkeypatch, plots={"trends": []},
                        note="no timed hardware runs of this machine in h.db")
    assert args[7] == 0
    emulated_meta = {**META, "targets": {"host": {"emulated": True, "arch": "aarch64"}}}
    w = RunWriter(tmp_path / "emu", emulated_meta)
    counted = _verdict(times=[1000.0] * 3)
    counted.count_call, counted.count_kernel = 5000.0, 4000.0
    w.add_all([counted])
    w.close(complete=False)
    emu = load_run(tmp_path / "emu")
    args = _header_args(emu, monkeypatch)
    assert args[1] is False and args[8] is True and args[9] is True  # emulated only, counted


def test_the_report_escapes_markup_in_what_runs_record(tmp_path: Path) -> None:
    """A case name or message holding markup (a plugin names its own cases) is
    shown as text in report.html, never as markup."""
    from dataclasses import replace
    bad = replace(_verdict(case="c<i>x</i>"), status="fail", message="<script>alert(1)</script>")
    run = _run(tmp_path / "run", [bad, _verdict(case="ok")])
    html = report.build_report(run, None, tmp_path / "report").html.read_text(encoding="utf-8")
    assert "c&lt;i&gt;x&lt;/i&gt;" in html and "<i>x</i>" not in html
    assert "&lt;script&gt;alert(1)" in html and "<script>alert(1)" not in html
