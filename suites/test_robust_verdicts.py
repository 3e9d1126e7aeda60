"""Verdicts that must not be wrong: an infinity where a finite clamp fixes the
answer fails, the gate fails unknown statuses and runs that do not say they
completed, and a case whose inputs cannot be generated is an error verdict
(the run is not "complete with 0 failed")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kbench.harness import runner
from kbench.judge import oracle
from kbench.judge.tolerance import FP16_OVERFLOW, AccumModel
from kbench.judge.verdict import ERROR, Verdict, judge
from kbench.problems.cases import ConvCase, GemmCase
from kbench.problems.catalog import load_catalog, resolve_catalog
from kbench.problems.inputs import conv_inputs
from kbench.results.compare import gate
from kbench.results.runfolder import load_run
from kbench.results.store import RunWriter
from kbench.targets.spec import parse_target

FP32 = AccumModel("fp32")


def test_an_unclamped_infinity_fails_where_the_clamp_fixes_the_answer():
    """The review's case: sweep_k7x7_n1h9w9_c8o13_clamp with specials
    (K = 392). Where the sum of |a*b| is large the error bound reaches the
    FP16 overflow threshold, and the judge used to accept +inf there, even
    though the answer is the clamp bound 0.0425 and a clamped FP32 result
    can never be infinite."""
    cat = load_catalog(resolve_catalog("correctness_conv"))
    case = next(c for c in cat.conv if c.name == "sweep_k7x7_n1h9w9_c8o13_clamp")
    inp = conv_inputs(case, "specials")
    ref = inp.ref
    err = FP32.accumulation_error(ref.s, case.reduction, case.bias)
    wide = (np.abs(ref.exact) + err >= FP16_OVERFLOW) & np.isfinite(ref.s) & np.isfinite(ref.exact)
    assert wide.any(), "the case no longer has an element with a bound this wide"
    assert judge(ref.rounded, ref, FP32, case.reduction, case.bias, False).ok
    skipped = ref.rounded.copy()
    skipped[wide] = np.copysign(np.inf, ref.exact[wide])  # a kernel that skips the clamp
    j = judge(skipped, ref, FP32, case.reduction, case.bias, False)
    assert not j.ok and j.violations == int(wide.sum())


@pytest.mark.parametrize("clamp,inf_ok", [((-1.0, 1.0), (False, False)),
                                          ((-np.inf, 1.0), (False, True)),
                                          ((-1.0, np.inf), (True, False)),
                                          ((-1.0, 70000.0), (True, False)),  # fl16(hi) = inf
                                          ((-65519.0, 65519.0), (False, False)),
                                          (None, (True, True))])
def test_which_infinities_a_clamp_rules_out(clamp, inf_ok):
    """inf_ok: is (+inf at the first element, -inf at the second) accepted?"""
    exact = np.array([60000.0, -60000.0])
    s = np.array([1e12, 1e12])  # bound wide enough for rounding to overflow
    ref = oracle.with_clamp(oracle.Reference(exact, s, oracle.round16(exact)), clamp)
    for i, sign in enumerate((1.0, -1.0)):
        out = ref.rounded.astype(np.float64).copy()
        out[i] = sign * np.inf
        assert judge(out.astype(np.float16), ref, FP32, 64, False, False).ok == inf_ok[i], (
            clamp, sign)


def test_the_clamp_travels_with_the_reference():
    a, b = np.ones((2, 3), np.float16), np.ones((3, 2), np.float16)
    assert oracle.gemm_reference(a, b, None, (-1.0, 2.0)).clamp == (-1.0, 2.0)
    unclamped = oracle.gemm_reference(a, b, None, None)
    assert unclamped.clamp is None and oracle.with_clamp(unclamped, (0.0, 1.0)).clamp == (0, 1)


# ---- the gate -------------------------------------------------------------------------


def _run(folder: Path, statuses: list[str], complete: object = True) -> Path:
    w = RunWriter(folder, {"host": "h", "cpu_model": "c", "machine": "x86_64"})
    for i, status in enumerate(statuses):
        w.add(Verdict(case=f"c{i}", op="gemm", shape="m1n1k1", kind="exact", target="host",
                      backend="scalar", realization="gemm_scalar_f32acc", kernel="k",
                      accum="fp32", k=1, m=1, n=1, b_form="plain", vector_bits=0, status=status))
    w.close(complete=True)
    if complete is not True:  # what a hand-edited or foreign run.json may say
        meta = json.loads((folder / "run.json").read_text())
        meta["complete"] = complete
        (folder / "run.json").write_text(json.dumps(meta))
    return folder


@pytest.mark.parametrize("status", ["pzss", "PASS", "", "failed", "xfail"])
def test_the_gate_fails_an_unknown_status(tmp_path, status):
    """Before: only "fail" and "error" failed the gate; "pzss" passed."""
    base = load_run(_run(tmp_path / "base", ["pass", "pass"]))
    cand = load_run(_run(tmp_path / "cand", ["pass", status]))
    result = gate(base, cand)
    assert not result.passed
    assert any(f.reason == "correctness" and "c1" in f.case for f in result.failures)


@pytest.mark.parametrize("complete", ["no", "false", 1, "yes", None, [True]])
def test_the_gate_fails_a_run_that_does_not_say_it_completed(tmp_path, complete):
    """Before: run.json "complete": "no" was truthy, so the gate passed it."""
    base = load_run(_run(tmp_path / "base", ["pass"]))
    cand = load_run(_run(tmp_path / "cand", ["pass"], complete))
    result = gate(base, cand)
    assert not result.passed and [f.reason for f in result.failures] == ["incomplete"]
    assert not cand.complete


def test_known_statuses_still_pass_the_gate(tmp_path):
    base = load_run(_run(tmp_path / "base", ["pass", "mistrusted", "skip"]))
    cand = load_run(_run(tmp_path / "cand", ["pass", "mistrusted", "skip"]))
    assert gate(base, cand).passed


# ---- input generation -------------------------------------------------------------------


@pytest.mark.parametrize("case", [GemmCase("huge_gemm", 2**40, 2**40, 2**20),
                                  ConvCase("huge_conv", 1, 2**31, 2**31, 4, 4, 3, 3)])
def test_inputs_that_cannot_be_generated_are_an_error_verdict(case):
    """Before: numpy's MemoryError (or ValueError) escaped run_job: no
    verdict was recorded and the run ended "complete" with 0 failed."""
    target = parse_target("host")
    want = next(r for r in target.info().realizations if r.op == case.op)
    v = runner.run_job(target, runner.Job(case, "normal", want, "host"))
    assert v.status == ERROR and v.message.startswith("inputs: ")
    assert v.realization == want.name


def test_the_winograd_magnitude_sum_is_inf_exactly_where_an_inf_input_reaches():
    """An inf input makes S_w infinite for the outputs whose 3x3 window holds
    it and leaves every other output of the same 4x4 tile finite: the
    transforms' zero coefficients carry nothing (0 * inf is no NaN there).
    A NaN S_w made a right finite output of the Winograd kernel fail."""
    from kbench.judge import winograd
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (1, 9, 9, 3)).astype(np.float16)
    w = rng.uniform(-1, 1, (3, 3, 3, 4)).astype(np.float16)
    pad = (1, 1, 1, 1)
    base = winograd.magnitude_sum(x, w, None, pad, 1)
    assert np.isfinite(base).all()
    for (i, j, c) in [(4, 4, 0), (0, 8, 2), (8, 0, 1), (5, 2, 1)]:
        xi = x.copy()
        xi[0, i, j, c] = np.inf
        s = winograd.magnitude_sum(xi, w, np.ones(4, np.float16), pad, 1)
        assert not np.isnan(s).any()
        oy, ox = np.meshgrid(np.arange(9), np.arange(9), indexing="ij")
        window = (np.abs(oy - i) <= 1) & (np.abs(ox - j) <= 1)  # pad 1: output (y, x) sees y-1..y+1
        assert np.isinf(s[0][window]).all()
        assert np.isfinite(s[0][~window]).all()
        assert np.allclose(s[0][~window], base[0][~window] + 1.0)
    wi = w.copy()
    wi[1, 1, 2, 3] = -np.inf  # an inf weight reaches every output of its channel
    s = winograd.magnitude_sum(x, wi, None, pad, 1)
    assert np.isinf(s[..., 3]).all() and np.isfinite(s[..., :3]).all()


def test_the_winograd_kernel_passes_specials_with_an_inf_beside_finite_outputs():
    """The smoke case that failed with an S_w of NaN passes (host)."""
    case = next(c for c in load_catalog(resolve_catalog("smoke")).conv
                if c.name == "smoke_k3x3_p1_n1h9w9_c3o8")
    target = parse_target("host")
    real = next(r for r in target.info().realizations
                if r.name == "conv2d_winograd_f2x2_3x3_scalar_f32acc")
    v = runner.run_job(target, runner.Job(case, "specials", real, target.name))
    assert v.status == "pass", v.line()
