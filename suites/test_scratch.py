"""Scratch memory: the worker's interposed allocator (native/worker/kb_heap.c)
and the scratch check (kbench.harness.scratch).

- the judgement over identical calls (a leak, a cap, neither, not measured),
  the case sized to a cap, whose cap applies, the protocol's heap figures;
- attribution in a worker: a plugin's blocks are its own in any thread it
  starts, kbench's packing around a plugin micro-kernel and the threads
  kbench starts are not charged to it, our realizations hold kbench's
  scratch; timed, guarded (ours) and unforced calls say why they are not
  measured; the in-process engine measures nothing;
- the example plugin exscratch on the host worker and on qemu:svl=512 (the
  dynamically linked worker), our realizations in the static aarch64 worker
  (whose allocator is wrapped at link time), and `kbench run` failing the
  planted defects by name with a reproduce line, the heap columns in
  results.csv, and `kbench count`'s heap lines."""

from __future__ import annotations

import csv
import math
import struct

import pandas as pd
import pytest
from cli_run import kbench
from plugin_builds import lib, pattern
from qemu_gate import needs_qemu

from kbench.errors import ProtocolError
from kbench.harness import runner, scratch
from kbench.judge.verdict import FAIL, PASS, SKIP
from kbench.native import api
from kbench.native.calls import HEAP_NOT_HERE, HeapUse, Timing
from kbench.native.plugins import PluginRealizationInfo
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets.spec import parse_target
from kbench.targets.worker import HEAP_NOTES, Reader, read_heap

CASE = GemmCase("heap_case", 5, 24, 19, bias=True)
KB = 1024


def _uses(*after: int, peak: int = 0) -> list[HeapUse]:
    return [HeapUse(0, max(peak, a), a, "plugin") for a in after]


# ---- the judgement ---------------------------------------------------------------------


def test_a_first_call_may_keep_scratch_and_the_later_ones_hold_as_much():
    j = scratch.judge_heap(_uses(4096, 4096, 4096, peak=5000), 8192)
    assert j.status == PASS
    assert j.message == ("it holds 4,096, 4,096 and 4,096 bytes after 3 identical calls "
                         "(peak 5,000); declared cap 8,192 per thread")
    assert scratch.judge_heap(_uses(0, 0, 0), None).message.endswith("; no cap declared")


def test_growth_over_every_later_call_is_a_leak_named_by_its_least_growth():
    j = scratch.judge_heap(_uses(1000, 2000, 3500), None)
    assert j.status == FAIL
    assert j.message == ("leaks 1,000 bytes per call: it holds 1,000, 2,000 and 3,500 bytes "
                         "after 3 identical calls (peak 3,500)")
    # a cache that still grows on the second call and then holds is no leak
    assert scratch.judge_heap(_uses(1000, 2000, 2000), None).status == PASS
    # nor is one that grows on the third only
    assert scratch.judge_heap(_uses(1000, 1000, 1500), None).status == PASS
    # two calls cannot tell a leak from a cache
    assert scratch.judge_heap(_uses(1000, 2000), None).status == PASS
    one = scratch.judge_heap(_uses(9000, peak=20_000), 4096)
    assert (one.status, one.message) == (FAIL, "keeps 9,000 bytes after a call, its declared "
                                         "cap is 4,096 per thread: it holds 9,000 bytes after "
                                         "the call (peak 20,000)")


def test_more_than_the_cap_after_any_call_fails_naming_the_cap():
    j = scratch.judge_heap(_uses(100, 70_000, 100), 65536)
    assert j.status == FAIL
    assert j.message.startswith("keeps 70,000 bytes after a call, its declared cap is 65,536 "
                                "per thread: it holds 100, 70,000 and 100 bytes")
    at_cap = scratch.judge_heap(_uses(65536, 65536, 65536), 65536)
    assert at_cap.status == PASS
    both = scratch.judge_heap(_uses(70_000, 71_000, 72_000), 65536)
    assert both.status == FAIL
    assert both.message.startswith("leaks 1,000 bytes per call; keeps 72,000 bytes after a "
                                   "call, its declared cap is 65,536 per thread: ")


def test_a_call_not_measured_is_a_skip_saying_why():
    why = HEAP_NOTES[2]
    j = scratch.judge_heap([*_uses(1, 2), HeapUse.not_measured(why)], 10)
    assert (j.status, j.message) == (SKIP, f"heap {why}")
    assert scratch.judge_heap([], None).status == SKIP


def test_the_case_sized_to_a_cap_has_a_b_larger_than_it():
    for cap in (64 * KB, api.SCRATCH_RETAIN_CAP, 1000, 1):
        case = scratch.cap_case(cap)
        assert case is not None and case.n == case.k and case.m == scratch.CAP_CASE_M
        assert case.n * case.k * 2 > cap >= (case.n - 1) * (case.k - 1) * 2
    assert scratch.cap_case(api.SCRATCH_RETAIN_CAP).n == 2049
    assert scratch.cap_case(64 << 20) is None  # its B would be too large to run


def test_whose_cap_applies():
    ours = api.Realization("gemm_x", "scalar", "k", "gemm", "scalar", "fp32", 1, ("plain",),
                           0, 1)
    assert scratch.cap_of(ours, None) == api.SCRATCH_RETAIN_CAP
    peer = api.Realization("npf32.gemm", "npf32", "k", "gemm", "scalar", "fp32", 1,
                           ("plain",), 0, 1, peer=True)
    assert scratch.cap_of(peer, None) is None
    plugin = api.Realization("p.g", "plugin:p", "k", "gemm", "scalar", "fp32", 1, ("plain",),
                             0, 1, plugin="p 1.0")
    assert scratch.cap_of(plugin, None) is None
    decl = PluginRealizationInfo("p.g", "gemm", "whole-call", "scalar", True, "last", True,
                                 "", scratch_cap=4096)
    assert scratch.cap_of(plugin, decl) == 4096
    undeclared = PluginRealizationInfo("p.g", "gemm", "whole-call", "scalar", True, "last",
                                       True, "")
    assert scratch.cap_of(plugin, undeclared) is None


def test_kbench_scratch_cap_is_the_library_s():
    assert api.SCRATCH_RETAIN_CAP == api.load().lib.KB_SCRATCH_RETAIN_CAP


def test_a_reply_s_heap_figures():
    def reply(status: int, whose: int, *figures: int) -> Reader:
        return Reader(struct.pack("<IIQQQ", status, whose, *figures))

    assert read_heap(reply(0, 1, 10, 30, 20)) == HeapUse(10, 30, 20, "plugin")
    assert read_heap(reply(0, 2, 0, 5, 5)) == HeapUse(0, 5, 5, "scratch")
    for status, note in HEAP_NOTES.items():
        got = read_heap(reply(status, 0, 0, 0, 0))
        assert not got.measured and got.note == note
    with pytest.raises(ProtocolError, match="unknown owner kind 7"):
        read_heap(reply(0, 7, 0, 0, 0))
    with pytest.raises(ProtocolError, match="truncated"):
        read_heap(Reader(b"\0" * 12))


# ---- attribution in the host worker -------------------------------------------------


@pytest.fixture(scope="module")
def host():
    t = parse_target("worker:host", [lib("exscratch"), lib("exukref")])
    yield t
    t.close()


def _gemm(t, name, case=CASE, **kw):
    out = t.run_gemm(case, inputs.gemm_inputs(case, "normal"), name, **kw)
    assert out.error is None, out.error
    return out


def test_a_plugin_s_lost_blocks_are_its_own(host):
    uses = [_gemm(host, "exscratch.gemm_leaks").heap for _ in range(3)]
    assert all(u.measured and u.whose == "plugin" for u in uses)
    assert [b.after - a.after for a, b in zip(uses, uses[1:], strict=False)] == [1000, 1000]
    assert all(u.before == p.after for p, u in zip(uses, uses[1:], strict=False))
    # its call's FP32 copy of B is in its peak, freed before it returns
    assert all(u.peak - u.before == 1000 + CASE.k * CASE.n * 4 for u in uses)


def _every_allocation_function_is_counted(t) -> None:
    """exscratch.gemm_allocators calls each allocation function of the C library
    and checks its result (alignment, zeroed or kept contents, usable size; a
    failed check is a refusal naming it) and keeps EX_ALLOC_KEPT bytes."""
    import os
    page = os.sysconf("SC_PAGE_SIZE")
    for _ in range(2):
        u = _gemm(t, "exscratch.gemm_allocators").heap
        assert u.after == ALLOC_KEPT
        # the most at once: its first six blocks and the pvalloc'd page, or all it keeps
        # and its copy of B
        assert u.peak == max(100 + 300 + 1000 + 1280 + 50 + 70 + page,
                             ALLOC_KEPT + CASE.k * CASE.n * 4)


def test_every_allocation_function_is_counted_on_the_host_worker(host):
    _every_allocation_function_is_counted(host)


@needs_qemu
def test_every_allocation_function_is_counted_under_qemu():
    t = parse_target("qemu:svl=512", [lib("exscratch", "aarch64")])
    try:
        _every_allocation_function_is_counted(t)
    finally:
        t.close()


@pytest.mark.parametrize("arch", ["host", pytest.param("aarch64", marks=needs_qemu)])
def test_cxx_operator_new_goes_through_malloc_and_counts(arch):
    """exscratchxx (C++): a new[] copy of B kept to the next call, delete[]d then."""
    spec, path = (("worker:host", lib("exscratchxx")) if arch == "host"
                  else ("qemu:svl=512", lib("exscratchxx", "aarch64")))
    t = parse_target(spec, [path])
    try:
        for _ in range(2):
            u = _gemm(t, "exscratchxx.gemm_new").heap
            assert (u.peak, u.after) == (CASE.k * CASE.n * 4, CASE.k * CASE.n * 4)
    finally:
        t.close()


def test_blocks_of_a_thread_the_plugin_starts_are_its_own(host):
    uses = [_gemm(host, "exscratch.gemm_thread_leaks").heap for _ in range(3)]
    assert [b.after - a.after for a, b in zip(uses, uses[1:], strict=False)] == [512, 512]
    threaded = _gemm(host, "exscratch.gemm_threaded").heap
    assert threaded.peak - threaded.before >= CASE.k * CASE.n * 4  # the thread's buffer


def test_kbench_s_packing_around_a_micro_kernel_is_not_the_plugin_s(host):
    """exukref allocates nothing: kbench packs its LHS and RHS into kbench's
    scratch (tagged in native/src/core/kb_scratch.c), which our own
    realizations' figures show instead."""
    big = GemmCase("heap_ukernel", 37, 45, 70, bias=True)
    held = _gemm(host, "gemm_scalar_f32acc", CASE).heap
    for name in ("exukref.gemm_4x8", "exukref.gemm_4x8_plain_lhs"):
        u = _gemm(host, name, big).heap
        assert (u.whose, u.before, u.peak, u.after) == ("plugin", 0, 0, 0), name
    ours = _gemm(host, "gemm_scalar_f32acc", CASE).heap
    assert ours.whose == "scratch" and ours.before > held.after  # the packing scratch kept


def test_threads_kbench_starts_are_not_charged_to_the_call(host):
    """A plugin micro-kernel that kbench's loop runs on 3 threads: glibc's
    bookkeeping of each thread kb_parallel starts (its dynamic thread vector,
    kept with the cached stack: what exscratch.gemm_threaded holds after a
    call) and their scratch are kbench's, not the plugin's."""
    from kbench.native.api import Selector
    big = GemmCase("heap_threads", 37, 45, 70, bias=True)
    three = _gemm(host, "exukref.gemm_4x8", big, selector=Selector(threads=3))
    assert three.ran is not None and three.ran.threads == 3
    assert (three.heap.before, three.heap.peak, three.heap.after) == (0, 0, 0)


def test_calls_the_worker_does_not_measure_say_why(host):
    # a timed call: nothing is counted while it runs
    inp = inputs.gemm_inputs(CASE, "normal")
    res, _ = host.time_gemm(CASE, inp, "exscratch.gemm_capped", Timing(warmup=0, rounds=1))
    assert res.heap.note == HEAP_NOTES[2]
    # ours in a checking call: kbench's scratch lies in guarded mappings
    assert _gemm(host, "gemm_scalar_f32acc", guard="end").heap.note == HEAP_NOTES[4]
    # a plugin's in a checking call is measured (guard pages change nothing of its own)
    assert _gemm(host, "exscratch.gemm_capped", guard="end").heap.measured
    # no realization forced while plugins are loaded: the blocks have no owner in advance
    out = host.run_gemm(CASE, inp, "gemm_scalar_f32acc", force=False)
    assert out.error is None and out.heap.note == HEAP_NOTES[3]


def _preloadable_allocator() -> str | None:
    """AddressSanitizer's runtime (gcc's libasan), an allocator of its own that
    also allocates from its interceptors (strdup, ...) without calling malloc."""
    import shutil
    import subprocess
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    path = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True,
                          text=True).stdout.strip()
    return path if path.startswith("/") else None


def test_a_preloaded_allocator_takes_every_block_and_nothing_is_counted(monkeypatch):
    """A worker started under LD_PRELOAD of another allocator (ci/sanitize.sh runs
    the suites so; users preload jemalloc or tcmalloc) must not mix its blocks
    with glibc's (a block one allocator handed out, freed by the other, aborts
    the worker): every call goes to the preloaded allocator and each call's
    figures say why they are missing."""
    asan = _preloadable_allocator()
    if asan is None:
        pytest.skip("no preloadable allocator here (gcc's libasan)")
    monkeypatch.setenv("LD_PRELOAD", asan)
    monkeypatch.setenv("ASAN_OPTIONS", "detect_leaks=0")
    t = parse_target("worker:host", [lib("exscratch"), lib("exscratchxx")])
    try:
        for name in ("exscratch.gemm_leaks", "exscratch.gemm_allocators",
                     "exscratch.gemm_threaded", "exscratchxx.gemm_new"):
            for _ in range(2):
                u = _gemm(t, name).heap
                assert not u.measured and u.note == HEAP_NOTES[6], name
    finally:
        t.close()


def test_a_correctness_verdict_carries_the_call_s_heap():
    """(A fresh worker: exscratch's realizations share their thread's scratch, and a
    block is the realization's whose call allocated it.)"""
    t = parse_target("worker:host", [lib("exscratch")])
    try:
        reals = {r.name: r for r in t.info().realizations}
        v = runner.run_job(t, runner.Job(CASE, "normal", reals["exscratch.gemm_capped"],
                                         "worker:host"))
        assert v.status == PASS and v.heap_peak >= CASE.k * CASE.n * 4
        assert v.heap_retained >= CASE.k * CASE.n * 4  # kept: within its cap
        ours = runner.run_job(t, runner.Job(CASE, "exact", reals["gemm_scalar_f32acc"],
                                            "worker:host"))
        assert ours.status == PASS and math.isnan(ours.heap_peak)  # guarded: not measured
    finally:
        t.close()


def test_the_in_process_engine_measures_nothing():
    t = parse_target("host")
    try:
        out = _gemm(t, "gemm_scalar_f32acc")
        assert out.heap.note == HEAP_NOT_HERE
        assert not scratch.measures(t, "gemm_scalar_f32acc")
    finally:
        t.close()


def test_the_host_target_measures_its_plugins_only():
    t = parse_target("host", [lib("exscratch")])
    try:
        assert scratch.measures(t, "exscratch.gemm_leaks")
        assert not scratch.measures(t, "gemm_scalar_f32acc")
        reals = {r.name: r for r in t.info().realizations}
        [v] = scratch.check_realization(t, "host", reals["gemm_scalar_f32acc"])
        assert v.status == SKIP and "heap not measured on host" in v.message
        [v] = scratch.check_realization(t, "host", reals["exscratch.gemm_leaks"])
        assert v.status == FAIL and "leaks 1,000 bytes per call" in v.message
    finally:
        t.close()


# ---- the check on the example plugin --------------------------------------------------

EXPECTED = {  # (realization, case) -> what the check finds
    ("exscratch.gemm_capped", "scratch_gemm"): (PASS, "declared cap 65,536 per thread"),
    ("exscratch.gemm_capped", "scratch_over_cap"): (PASS, "declared cap 65,536 per thread"),
    ("exscratch.gemm_keeps_past_cap", "scratch_gemm"): (PASS, "declared cap 65,536"),
    ("exscratch.gemm_keeps_past_cap", "scratch_over_cap"):
        (FAIL, "keeps 132,496 bytes after a call, its declared cap is 65,536 per thread"),
    ("exscratch.gemm_leaks", "scratch_gemm"): (FAIL, "leaks 1,000 bytes per call"),
    ("exscratch.gemm_threaded", "scratch_gemm"): (PASS, "declared cap 4,096 per thread"),
    ("exscratch.gemm_threaded", "scratch_over_cap"): (PASS, "declared cap 4,096 per thread"),
    ("exscratch.gemm_thread_leaks", "scratch_gemm"): (FAIL, "leaks 512 bytes per call"),
    # one call on the case sized to the cap: its leak shows on the base case only
    ("exscratch.gemm_thread_leaks", "scratch_over_cap"): (PASS, "bytes after the call"),
    ("exscratch.gemm_allocators", "scratch_gemm"):
        (PASS, "it holds 3,377, 3,377 and 3,377 bytes after 3 identical calls"),
    ("exscratch.gemm_allocators", "scratch_over_cap"): (PASS, "it holds 3,377 bytes after"),
}
ALLOC_KEPT = 100 + 300 + 1000 + 1280 + 50 + 70 + 500 + 77  # exscratch.c EX_ALLOC_KEPT


def _check_plugin(spec: str, plugin: str) -> dict[tuple[str, str], tuple[str, str]]:
    t = parse_target(spec, [plugin])
    try:
        found = {}
        for r in t.info().realizations:
            if r.is_plugin:
                for v in scratch.check_realization(t, spec, r):
                    assert v.suite == "determinism" and v.catalog == "scratch"
                    found[(v.realization, v.case)] = (v.status, v.message)
        return found
    finally:
        t.close()


def _matches(found: dict[tuple[str, str], tuple[str, str]]) -> None:
    assert set(found) == set(EXPECTED)
    for key, (status, text) in EXPECTED.items():
        assert found[key][0] == status and text in found[key][1], (key, found[key])


def test_the_example_plugin_on_the_host_worker():
    _matches(_check_plugin("worker:host", lib("exscratch")))


@needs_qemu
def test_the_example_plugin_on_qemu_svl_512():
    _matches(_check_plugin("qemu:svl=512", lib("exscratch", "aarch64")))


@needs_qemu
def test_our_realizations_in_the_static_worker_hold_kbench_s_scratch():
    """No plugin: the statically linked worker, whose allocator is wrapped at
    link time (-Wl,--wrap=malloc,...)."""
    t = parse_target("qemu:svl=512")
    try:
        assert t.engine.spec.command[-1].endswith("/aarch64/kb_worker")
        conv = ConvCase("heap_conv", 1, 9, 9, 8, 12, 3, 3, pad=(1, 1, 1, 1))
        out = t.run_conv(conv, inputs.conv_inputs(conv, "normal"),
                         "conv2d_im2col_gemm_scalar_f32acc")
        assert out.error is None and out.heap.whose == "scratch"
        assert 0 < out.heap.after <= api.SCRATCH_RETAIN_CAP
        reals = [r for r in t.info().realizations if r.op == "gemm"][:4]
        for r in reals:
            for v in scratch.check_realization(t, "qemu:svl=512", r):
                assert v.status == PASS, v.line()
                assert v.case == "scratch_gemm"  # ours skip the cap case when emulated
    finally:
        t.close()


# ---- kbench run and kbench count ------------------------------------------------------


def _run(tmp_path, target: str) -> tuple[int, list[dict[str, str]], list[dict[str, str]]]:
    out = tmp_path / "run"
    res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "--target", target,
                 "--plugin", pattern("exscratch"), "--realization", "exscratch.gemm_leaks",
                 "--realization", "exscratch.gemm_keeps_past_cap", "--realization",
                 "exscratch.gemm_capped", "--realization", "gemm_scalar_f32acc",
                 "--no-history", "--no-report", "--out", str(out))
    rows = list(csv.DictReader((out / "results.csv").open()))
    fails = list(csv.DictReader((out / "failures.csv").open()))
    return res.returncode, rows, fails


@pytest.mark.parametrize("target", ["worker:host", pytest.param("qemu:svl=512",
                                                                 marks=needs_qemu)])
def test_kbench_run_fails_the_planted_defects_by_name(tmp_path, target):
    rc, rows, fails = _run(tmp_path, target)
    assert rc == 1
    found = {(f["realization"], f["case"]): f for f in fails}
    assert set(found) == {("exscratch.gemm_leaks", "scratch_gemm"),
                          ("exscratch.gemm_keeps_past_cap", "scratch_over_cap")}
    leak = found[("exscratch.gemm_leaks", "scratch_gemm")]
    assert leak["suite"] == "determinism" and "leaks 1,000 bytes per call" in leak["message"]
    assert leak["reproduce"].startswith(f"kbench run --suite correctness --target {target} "
                                        "--realization exscratch.gemm_leaks")
    assert "--plugin" in leak["reproduce"]
    cap = found[("exscratch.gemm_keeps_past_cap", "scratch_over_cap")]
    assert "its declared cap is 65,536 per thread" in cap["message"]
    checks = {(r["realization"], r["case"]): r for r in rows if r["catalog"] == "scratch"}
    assert checks[("exscratch.gemm_capped", "scratch_over_cap")]["status"] == "pass"
    assert checks[("gemm_scalar_f32acc", "scratch_gemm")]["status"] == "pass"
    # the correctness verdicts of a plugin carry its heap figures (a block is the
    # realization's whose call allocated it: exscratch's share their thread's scratch)
    plugin_rows = [r for r in rows if r["suite"] == "correctness"
                   and r["realization"].startswith("exscratch.")]
    assert plugin_rows and all(r["heap_peak"] and not math.isnan(float(r["heap_peak"]))
                               for r in plugin_rows)
    assert any(float(r["heap_retained"]) > 0 for r in plugin_rows)
    ours = [r for r in rows if r["suite"] == "correctness" and r["realization"] ==
            "gemm_scalar_f32acc"]
    assert ours and all(math.isnan(float(r["heap_peak"])) for r in ours)  # guarded calls


@needs_qemu
def test_kbench_count_shows_the_counted_call_s_heap():
    res = kbench("count", "--target", "qemu:svl=512", "--plugin", pattern("exscratch"),
                 "--realization", "exscratch.gemm_leaks", "--shape", "5x17x9", "--b-form",
                 "plain")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    # the counted call is the second (after a warm-up): it holds two lost records
    peak = 2000 + 17 * 9 * 4
    assert f"heap peak:     {peak:>13,} bytes during the call (its own blocks)" in lines
    assert f"heap retained: {2000:>13,} bytes still held after it" in lines
    # ours, counted in the static worker: kbench's scratch
    res = kbench("count", "--target", "qemu:svl=128", "--realization", "gemm_sme2_mopa_f32acc",
                 "--shape", "5x17x9", "--json", "--no-verify")
    assert res.returncode == 0, res.stderr
    import json
    (row,) = json.loads(res.stdout)
    assert 0 < row["heap_peak"] <= api.SCRATCH_RETAIN_CAP
    assert row["heap_retained"] == row["heap_peak"]  # the warm-up's scratch, kept


# ---- the report's section --------------------------------------------------------------


def _frame(rows: list[dict]) -> pd.DataFrame:
    base = {"suite": "correctness", "catalog": "smoke", "case": "c", "message": "",
            "plugin": "", "heap_peak": math.nan, "heap_retained": math.nan}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_the_report_s_scratch_table():
    from pathlib import Path

    from kbench.results import report_scratch as rs
    from kbench.results.runfolder import Run
    meta = {"targets": {"qemu": {"plugins": [{"realizations": [
        {"name": "p.capped", "scratch_cap": 4096}, {"name": "p.free", "scratch_cap": None}]}]}}}
    df = _frame([
        {"target": "qemu", "realization": "p.capped", "plugin": "p 1", "status": "pass",
         "heap_peak": 5000.0, "heap_retained": 100.0},
        {"target": "qemu", "realization": "p.capped", "plugin": "p 1", "status": "pass",
         "heap_peak": 7000.0, "heap_retained": 300.0},
        {"target": "qemu", "realization": "p.capped", "plugin": "p 1", "status": "fail",
         "suite": "determinism", "catalog": "scratch", "case": "scratch_over_cap",
         "message": "scratch: keeps 9,000 bytes after a call, its declared cap is 4,096 per "
                    "thread: it holds ...", "heap_peak": 9000.0, "heap_retained": 9000.0},
        {"target": "qemu", "realization": "p.capped", "plugin": "p 1", "status": "pass",
         "suite": "determinism", "catalog": "scratch", "case": "scratch_gemm",
         "message": "scratch: it holds ..."},
        {"target": "qemu", "realization": "p.free", "plugin": "p 1", "status": "pass",
         "suite": "determinism", "catalog": "scratch", "case": "scratch_gemm",
         "message": "scratch: it holds 0, 0 and 0 ...", "heap_peak": 10.0,
         "heap_retained": 0.0},
        {"target": "host", "realization": "gemm_x", "status": "skip", "suite": "determinism",
         "catalog": "scratch", "case": "scratch_gemm", "message": "scratch: heap not measured"},
        {"target": "host", "realization": "gemm_y", "status": "pass"},  # not measured: no row
    ])
    table = rs.scratch_table(Run(Path("r"), meta, df))
    assert list(table.columns) == rs.COLUMNS
    rows = {r["realization"]: r for r in table.to_dict("records")}
    assert set(rows) == {"p.capped", "p.free", "gemm_x"}
    capped = rows["p.capped"]
    assert (capped["cap"], capped["calls"], capped["max_peak"], capped["max_retained"],
            capped["check"]) == ("4,096", 3, 9000.0, 9000.0, "fail")
    assert capped["finding"] == ("scratch_over_cap: keeps 9,000 bytes after a call, its "
                                 "declared cap is 4,096 per thread: it holds ...")
    assert (rows["p.free"]["cap"], rows["p.free"]["check"]) == ("none declared", "pass")
    assert rows["p.free"]["finding"] == "scratch_gemm: it holds 0, 0 and 0 ..."
    ours = rows["gemm_x"]
    assert ours["cap"] == f"{api.SCRATCH_RETAIN_CAP:,} (kbench's)" and ours["calls"] == 0
    assert ours["check"] == "skip" and math.isnan(ours["max_peak"])
    ctx = rs.html_context(table, lambda t: len(t))
    assert ctx == {"scratch": 3, "n_scratch": 3, "scratch_failed": 1}
    # a run from before the heap columns: no rows, and the determinism table never
    # counts the scratch check's verdicts among its checks
    assert rs.scratch_table(Run(Path("r"), {}, df.drop(columns=["heap_peak"]))).empty
    from kbench.results import report as rep
    assert rep.determinism_table(df).empty


def test_the_report_shows_the_section(tmp_path):
    from kbench.results.report import build_report
    from kbench.results.runfolder import load_run
    out = tmp_path / "run"
    res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "--target",
                 "worker:host", "--plugin", pattern("exscratch"), "--realization",
                 "exscratch.gemm_leaks", "--realization", "exscratch.gemm_capped",
                 "--no-history", "--no-report", "--out", str(out), "-k", "m1_n17")
    assert res.returncode == 1, res.stdout[-2000:]
    files = build_report(load_run(out), None, tmp_path / "report")
    html = files.html.read_text()
    assert 'id="scratch"' in html and "1 failed" in html
    rows = {r["realization"]: r for r in csv.DictReader(files.tables["scratch"].open())}
    assert rows["exscratch.gemm_leaks"]["check"] == "fail"
    assert rows["exscratch.gemm_capped"]["cap"] == "65,536"
    assert int(rows["exscratch.gemm_capped"]["calls"]) >= 2
