"""Plugins on the emulated Arm targets: the aarch64 builds of the examples in
the dynamically linked worker under QEMU (qemu:svl=128/256/512, a CPU without
SME) and in the emulated aarch64 Python (qemu-python).

The micro-kernel example (b), kbench's own SME2 kernels and packers handed
over through the plugin ABI only, must give the bits of the same kernels run
as kbench's own realizations at SVL 128, 256 and 512. The faulty example (c)
must be caught: failed verdicts naming it, and a silently wrong result for a
B packed at another vector length. Skipped without QEMU unless
KBENCH_REQUIRE_QEMU is set (as in CI); the qemu-python test needs the
emulated Python (KBENCH_REQUIRE_QEMU_PYTHON)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from plugin_builds import ARCH_PATTERN, build, lib

from kbench.errors import KbenchError
from kbench.harness import probes
from kbench.harness.runner import Job, applicable, run_job
from kbench.native.api import Selector
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets import pyroot
from kbench.targets.spec import parse_target
from kbench.targets.tools import find_qemu

EXAMPLES = ("exwhole", "exsme", "exfaulty", "exukref")
SAME_KERNEL = {  # plugin realization -> our realization of the same micro-kernel
    "exsme.gemm_sme2_mopa": "gemm_sme2_mopa_f32acc",
    "exsme.gemv_sme2_dot": "gemv_sme2_dot_f32acc",
    "exsme.conv2d_igemm_sme2_mopa": "conv2d_igemm_sme2_mopa_f32acc",
}
GEMMS = [GemmCase("sp_tail", 7, 37, 21, bias=True, clamp=True),
         GemmCase("sp_native", 67, 130, 301, b_form="native", bias=True, lda_pad=3, ldc_pad=2),
         GemmCase("sp_k1", 33, 65, 1),
         GemmCase("sp_batch", 64, 64, 64, batch=2, b_form="native", bias=True),
         GemmCase("sp_gemv", 1, 257, 129, bias=True),
         GemmCase("sp_gemv_native", 1, 100, 64, b_form="native", bias=True, clamp=True)]
CONVS = [ConvCase("sp_conv", 2, 9, 9, 8, 12, 3, 3, stride=(2, 1), pad=(1, 0, 1, 1),
                  dilation=(1, 2), bias=True),
         ConvCase("sp_conv_clamp", 1, 14, 14, 19, 37, 3, 3, pad=(1, 1, 1, 1), clamp=True),
         ConvCase("sp_conv_1x1", 2, 5, 5, 9, 7, 1, 1)]


def _qemu() -> None:
    try:
        find_qemu()
    except KbenchError:
        if os.environ.get("KBENCH_REQUIRE_QEMU"):
            raise
        pytest.skip("qemu-aarch64 is not installed (bash ci/install-toolchain.sh)")
    build("aarch64")


def _target(spec: str, names=EXAMPLES):
    _qemu()
    return parse_target(spec, [f"{ARCH_PATTERN}/lib{n}.so" for n in names])


def _bits(outs):
    return [np.ascontiguousarray(o).view(np.uint16) for o in outs]


@pytest.mark.parametrize("svl", [128, 256, 512])
def test_micro_kernel_example_gives_the_bits_of_our_own_realization(svl):
    t = _target(f"qemu:svl={svl}", ["exsme"])
    try:
        info = t.info()
        assert info.extra["plugin_errors"] == []
        reals = {r.name: r for r in info.realizations}
        assert all(reals[p].vector_bits == svl for p in SAME_KERNEL)
        compared = 0
        for case in GEMMS:
            for kind in ("normal", "specials"):
                inp = inputs.gemm_inputs(case, kind)
                for plugin, ours in SAME_KERNEL.items():
                    if reals[plugin].op != "gemm" or not applicable(case, reals[plugin]):
                        continue
                    mine = t.run_gemm(case, inp, ours)
                    theirs = t.run_gemm(case, inp, plugin, Selector(threads=2))
                    # one kernel call over the whole problem (selector.one_call), ours and theirs
                    whole = [t.run_gemm(case, inp, r, Selector(one_call=True, threads=2))
                             for r in (ours, plugin)]
                    for out in (mine, theirs, *whole):
                        assert out.error is None and not out.guard_detail, out.error
                    assert theirs.ran.name == plugin and theirs.ran.plugin == "exsme 1.0.0"
                    for other in (theirs, *whole):
                        for x, y in zip(_bits(mine.outputs), _bits(other.outputs), strict=True):
                            assert np.array_equal(x, y), f"SVL {svl} {case.name} {kind} {plugin}"
                    compared += 1
        for case in CONVS:
            inp = inputs.conv_inputs(case, "specials")
            mine = t.run_conv(case, inp, "conv2d_igemm_sme2_mopa_f32acc")
            theirs = t.run_conv(case, inp, "exsme.conv2d_igemm_sme2_mopa")
            assert mine.error is None and theirs.error is None and not theirs.guard_detail
            assert np.array_equal(_bits(mine.outputs)[0], _bits(theirs.outputs)[0]), case.name
            compared += 1
        assert compared == 2 * (len(GEMMS) + 2) + len(CONVS)  # two GEMV cases run both kernels
    finally:
        t.close()


@pytest.mark.parametrize("svl", [128, 512])
def test_examples_on_an_sme_target(svl):
    """Every example runs on qemu:svl=N; the faulty one is caught: failed
    verdicts naming it, and a silently wrong result for B packed at another SVL,
    which the other plugins refuse (or, not depending on the SVL, get right)."""
    t = _target(f"qemu:svl={svl}")
    try:
        info = t.info()
        assert [p["name"] for p in info.extra["plugins"]] == list(EXAMPLES)
        reals = {r.name: r for r in info.realizations if r.is_plugin}
        case = GemmCase("sp_e2e", 9, 38, 23, bias=True, b_form="native")
        for name in ("exwhole.gemm_f32acc", "exukref.gemm_4x8", "exsme.gemm_sme2_mopa",
                     "exfaulty.gemm_svl_trusting"):
            v = run_job(t, Job(case, "normal", reals[name], t.name))
            assert v.status == "pass" and v.plugin == reals[name].plugin, v.line()
        v = run_job(t, Job(case, "exact", reals["exfaulty.gemm_tailbug"], t.name))
        assert v.status == "fail" and v.realization == "exfaulty.gemm_tailbug"
        assert v.plugin == "exfaulty 0.0.1-broken" and "exfaulty" in v.line()
        vl = ("svl_pack_lo", "svl_call_lo", "svl_pack_hi", "svl_call_hi")
        for name in reals:
            if probes.probed(reals[name]):
                assert set(vl) <= set(probes.probe_names(reals[name], svl)), name
        results = {(name, p): probes.run_probe(t.engine, reals[name], p, t.name, svl)
                   for name in reals if probes.probed(reals[name]) for p in vl}
        found = {key: res.finding for key, res in results.items()}
        for p in vl:  # both ways, at two other lengths
            res = results[("exfaulty.gemm_svl_trusting", p)]
            assert res.finding == probes.SILENTLY_WRONG, (p, res.detail)
            lo, hi = probes.other_lengths(svl)
            other = lo if p.endswith("lo") else hi
            packed, called = (other, svl) if "_pack_" in p else (svl, other)
            assert res.detail.startswith(f"accepts a B packed at SVL {packed} while running at "
                                         f"SVL {called}: "), res.detail
            assert " outputs wrong" in res.detail and res.verdict().status == "fail"
            # kbench's header: B.vector_bits
            assert found[("exsme.gemm_sme2_mopa", p)] == probes.REFUSED
            assert found[("exsme.gemv_sme2_dot", p)] == probes.REFUSED
            assert found[("exwhole.gemm_f32acc", p)] == probes.ACCEPTED  # not SVL-dependent
            assert found[("exfaulty.gemm_tailbug", p)] == probes.ACCEPTED
        # the worker's own vector length is back where it was
        assert t.engine.set_svl(svl) == svl
    finally:
        t.close()


def test_a_cpu_without_sme_refuses_the_sme_plugin_and_goes_on():
    t = _target("qemu:cpu=neoverse-n1")
    try:
        info = t.info()
        errors = [e["message"] for e in info.extra["plugin_errors"]]
        assert len(errors) == 1
        assert "libexsme.so (exsme 1.0.0): every realization needs an ISA this CPU lacks " \
               "(e.g. sme2" in errors[0]
        loaded = {p["name"]: p for p in info.extra["plugins"]}
        assert set(loaded) == {"exwhole", "exfaulty", "exukref"}
        note = next(r for r in loaded["exfaulty"]["realizations"]
                    if r["name"] == "exfaulty.gemm_svl_trusting")
        assert not note["usable"] and "needs sme" in note["note"]
        assert not any(r.name == "exfaulty.gemm_svl_trusting" for r in info.realizations)
        case = CONVS[0]
        conv = next(r for r in info.realizations if r.name == "exwhole.conv2d_direct_f32acc")
        assert run_job(t, Job(case, "specials", conv, t.name)).status == "pass"
    finally:
        t.close()


def test_plugins_come_back_after_the_worker_dies():
    t = _target("qemu:svl=256", ["exwhole"])
    try:
        case = GemmCase("sp_restart", 4, 20, 9, bias=True)
        inp = inputs.gemm_inputs(case, "exact")
        assert t.run_gemm(case, inp, "exwhole.gemm_f32acc").error is None
        t.engine.kill()
        out = t.run_gemm(case, inp, "exwhole.gemm_f32acc")
        assert out.error is None and out.ran.name == "exwhole.gemm_f32acc"
        assert len(t.info().extra["plugin_errors"]) == 0
    finally:
        t.close()


def test_the_emulated_python_loads_plugins():
    _qemu()
    root, reason = pyroot.status()
    if root is None and os.environ.get("KBENCH_REQUIRE_QEMU_PYTHON") != "1":
        pytest.skip(f"the emulated Python is not installed ({reason})")
    t = parse_target("qemu-python:svl=512", [f"{ARCH_PATTERN}/libexwhole.so", lib("exwhole")])
    try:
        info = t.info()
        assert [p["name"] for p in info.extra["plugins"]] == ["exwhole"]
        (err,) = info.extra["plugin_errors"]
        assert "wrong architecture" in err["message"]
        reals = {r.name: r for r in info.realizations if r.is_plugin}
        assert reals["exwhole.gemm_f32acc"].plugin == "exwhole 1.0.0"
        for case, name in ((GemmCase("sp_py", 5, 21, 13, bias=True, b_form="native"),
                            "exwhole.gemm_f32acc"), (CONVS[2], "exwhole.conv2d_direct_f32acc")):
            v = run_job(t, Job(case, "normal", reals[name], t.name))
            assert v.status == "pass" and v.plugin == "exwhole 1.0.0", v.line()
    finally:
        t.close()
