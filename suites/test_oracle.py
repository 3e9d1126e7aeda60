"""The oracle, the error model and the judge: they must pass right results
and catch wrong ones (a verdict that cannot fail is worthless)."""

import dataclasses

import numpy as np
import pytest

from kbench.harness import runner
from kbench.judge import oracle
from kbench.judge.tolerance import AccumModel, gamma, ulp16
from kbench.judge.verdict import FAIL, MISTRUSTED, PASS, judge
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets.inprocess import InProcessEngine
from kbench.targets.spec import GUARD, Outcome, Target

FP32 = AccumModel("fp32")
FP16 = AccumModel("fp16")


def test_ulp16():
    x = np.array([0.0, 2.0**-24, 2.0**-14, 1.0, 1.5, 2.0, 1024.0, 2048.0, 65504.0, np.inf])
    want = np.array([2.0**-24, 2.0**-24, 2.0**-24, 2.0**-10, 2.0**-10, 2.0**-9, 1.0, 2.0,
                     32.0, 32.0])
    assert np.array_equal(ulp16(x), want)


def test_gamma_and_roundings():
    assert gamma(1, 2.0**-24) == pytest.approx(2.0**-24)
    assert gamma(2**24, 2.0**-24) == float("inf")
    assert FP32.roundings(100, True) == 101
    assert AccumModel("fp32", 2).roundings(101, False) == 51


def test_fp16_bound_grows_faster_with_k():
    s = np.array([100.0])
    c = np.array([10.0])
    for k in (16, 256, 4096):
        assert FP16.bound(c, s, k, False)[0] > 100 * FP32.accumulation_error(s, k, False)[0]


def _naive(a, b, bias):
    m, k = a.shape
    n = b.shape[1]
    out = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            out[i, j] = sum(float(a[i, t]) * float(b[t, j]) for t in range(k))
            if bias is not None:
                out[i, j] += float(bias[j])
    return out


def test_oracle_matches_a_naive_loop_with_specials():
    case = GemmCase("naive", 6, 7, 9)
    inp = inputs.gemm_inputs(case, "specials")
    a, b = np.asarray(inp.a[0]), np.asarray(inp.b[0])
    with np.errstate(invalid="ignore", over="ignore"):
        want = _naive(a, b, inp.bias[0])
    ref = oracle.gemm_reference(a, b, inp.bias[0], None)
    assert np.isnan(ref.exact).sum() > 0
    np.testing.assert_array_equal(ref.exact, want)


def test_conv_oracle_matches_a_naive_loop():
    case = ConvCase("cn", 1, 5, 6, 4, 6, 3, 2, stride=(2, 1), pad=(1, 0, 1, 2),
                    dilation=(1, 2), groups=2)
    inp = inputs.conv_inputs(case, "uniform")
    x, w = inp.x.astype(np.float64), inp.w.astype(np.float64)
    out = np.zeros((1, case.out_h, case.out_w, 6))
    for oy in range(case.out_h):
        for ox in range(case.out_w):
            for co in range(6):
                g = co // 3
                acc = 0.0
                for ky in range(3):
                    for kx in range(2):
                        iy, ix = oy * 2 + ky - 1, ox + kx * 2 - 1
                        if 0 <= iy < 5 and 0 <= ix < 6:
                            acc += sum(x[0, iy, ix, g * 2 + ci] * w[ky, kx, ci, co]
                                       for ci in range(2))
                out[0, oy, ox, co] = acc + float(inp.bias[co])
    np.testing.assert_allclose(inp.ref.exact, out, rtol=1e-12, atol=1e-12)


def test_exact_inputs_keep_every_partial_sum_small():
    for k in (1, 64, 257, 4096):
        case = GemmCase(f"e{k}", 3, 5, k)
        inp = inputs.gemm_inputs(case, "exact")
        ref = inp.refs[0]
        assert ref.s.max() <= inputs.EXACT_LIMIT
        assert np.array_equal(ref.exact, np.round(ref.exact))


def test_clamp_bounds_are_fp16_values_that_clip_some_outputs():
    case = GemmCase("cl", 16, 16, 32, clamp=True)
    inp = inputs.gemm_inputs(case, "uniform")
    lo, hi = inp.clamp
    assert float(np.float16(lo)) == lo and float(np.float16(hi)) == hi
    r = inp.refs[0].rounded
    assert 0.05 < float(((r == lo) | (r == hi)).mean()) < 0.6


def test_inputs_are_reproducible():
    case = GemmCase("rep", 4, 4, 4)
    x = inputs.gemm_inputs(case, "normal")
    y = inputs.gemm_inputs(case, "normal")
    assert np.array_equal(x.a[0], y.a[0]) and np.array_equal(x.b[0], y.b[0])


def _ref(values):
    exact = np.asarray(values, dtype=np.float64)
    s = np.abs(exact) + 1.0
    return oracle.Reference(exact, s, oracle.round16(exact))


def test_judge_passes_correct_rounding_and_fails_beyond_the_bound():
    ref = _ref([1.0001, -3.3, 100.7, 0.25])
    good = ref.rounded.copy()
    assert judge(good, ref, FP32, 8, False, False).ok
    bad = good.copy()
    bad[2] = np.float16(float(bad[2]) + 4 * 0.0625)
    j = judge(bad, ref, FP32, 8, False, False)
    assert not j.ok and j.violations == 1 and j.max_ratio > 1


def test_judge_exact_by_design_demands_bit_equality():
    exact = np.array([1.0, 2.0, 3.0, 4.0])
    ref = oracle.Reference(exact, np.full(4, 1e4), oracle.round16(exact))
    off = ref.rounded.copy()
    off[1] = np.nextafter(off[1], np.float16(10))  # 1 ulp: inside the bound, still wrong
    assert judge(off, ref, FP32, 64, False, False).ok
    j = judge(off, ref, FP32, 64, False, True)
    assert not j.ok and "exact-by-design" in j.detail


def test_judge_nan_and_inf_rules():
    ref = _ref([np.nan, np.inf, 1.0, 2.0])
    good = np.array([np.nan, np.inf, 1.0, 2.0], np.float16)
    assert judge(good, ref, FP32, 4, False, False).ok
    for i, v in ((0, 1.0), (1, 65504.0), (2, np.nan), (3, np.inf)):
        bad = good.copy()
        bad[i] = v
        assert not judge(bad, ref, FP32, 4, False, False).ok, (i, v)


def test_judge_overflow_allows_inf_only_near_the_top():
    exact = np.array([65519.9, 65530.0, 65000.0])
    ref = oracle.Reference(exact, np.array([1e6, 65530.0, 65000.0]), oracle.round16(exact))
    ok = np.array([np.inf, np.inf, 64992.0], np.float16)  # 65519.9 + error may round up
    assert judge(ok, ref, FP32, 2, False, False).ok
    wrong = np.array([65504.0, 65504.0, 64992.0], np.float16)  # 65530 must become inf
    assert not judge(wrong, ref, FP32, 2, False, False).ok
    wrong = np.array([np.inf, np.inf, np.inf], np.float16)  # 65000 must not
    assert not judge(wrong, ref, FP32, 2, False, False).ok


def test_judge_mistrusts_uninformative_references():
    ref = _ref([0.0, 0.0, 0.0, 1.0])
    assert judge(ref.rounded, ref, FP32, 2, False, False).mistrusted
    same = _ref([3.0] * 6)
    assert judge(same.rounded, same, FP32, 2, False, False).mistrusted
    assert not judge(_ref([1.0, 2.0]).rounded, _ref([1.0, 2.0]), FP32, 2, False, False).mistrusted


def _host():
    return Target("host", InProcessEngine())


class _Faulty(Target):
    """A target that breaks results in a chosen way, to prove verdicts catch it."""

    def __init__(self, fault):
        super().__init__("host", InProcessEngine())
        self.fault = fault

    def run_gemm(self, case, inp, realization, selector=None, force=True, guard=None):
        out = super().run_gemm(case, inp, realization, selector, force, guard)
        if self.fault == "one_ulp":
            o = out.outputs[0]
            o.view(np.uint16)[0, 0] ^= 1
        elif self.fault == "fallback":
            out = Outcome(out.outputs, dataclasses.replace(out.ran, name="other_kernel"))
        elif self.fault == "padding":
            out = Outcome(out.outputs, out.ran, None, "problem 0: ldc padding between rows changed")
        return out


@pytest.mark.parametrize("fault", ["one_ulp", "fallback", "padding"])
def test_runner_catches_faults(fault):
    case = GemmCase("fault", 8, 8, 16, ldc_pad=2)
    host = _host()
    r = [x for x in host.info().realizations if x.op == "gemm"][0]
    job = runner.Job(case, "exact", r, "host")
    assert runner.run_job(host, job).status == PASS
    assert runner.run_job(_Faulty(fault), job).status == FAIL


def test_guard_detects_writes_into_ldc_padding():
    from kbench.targets.spec import GuardedBuffer
    g = GuardedBuffer(3, 4, 6)
    assert g.damage() == ""
    g.raw[GUARD + 4] = 0  # row 0, column 4: padding
    assert "padding" in g.damage()
    g2 = GuardedBuffer(3, 4, 6)
    g2.raw[-1] = 0
    assert "after" in g2.damage()


def test_mistrusted_status_reaches_the_verdict():
    case = GemmCase("zeros", 4, 4, 4, bias=False)
    host = _host()
    r = [x for x in host.info().realizations if x.op == "gemm"][0]

    class Zeros(Target):
        def run_gemm(self, case, inp, realization, selector=None, force=True, guard=None):
            for a in inp.a:
                a[...] = 0
            for ref_i, _ in enumerate(inp.refs):
                inp.refs[ref_i] = oracle.gemm_reference(np.asarray(inp.a[ref_i]),
                                                        np.asarray(inp.b[ref_i]), None, None)
            return super().run_gemm(case, inp, realization, selector, force, guard)

    zeros = Zeros("host", InProcessEngine())
    assert runner.run_job(zeros, runner.Job(case, "exact", r, "host")).status == MISTRUSTED


def test_underflow_term_covers_subnormal_fma_results():
    # two FP16 FMAs into the subnormal range may each err by 2^-25 absolute
    exact = np.array([-1.048396370606497e-05, 1.0])
    ref = oracle.Reference(exact, np.abs(exact), oracle.round16(exact))
    got = np.array([-1.043081283569336e-05, 1.0], np.float16)
    assert judge(got, ref, FP16, 2, False, False).ok
    assert FP16.accumulation_error(np.zeros(1), 2, False)[0] == 2 * 2.0**-25
    # an FP32 accumulator's underflow error is negligible: the same miss fails there
    assert not judge(got, ref, FP32, 2, False, False).ok


def test_a_clamped_inf_must_equal_the_clamp_bound():
    exact = np.array([2.0, 0.5])  # the first was +inf before clamp(-2, 2)
    ref = oracle.Reference(exact, np.array([np.inf, 3.0]), oracle.round16(exact))
    assert judge(np.array([2.0, 0.5], np.float16), ref, FP32, 4, False, False).ok
    assert not judge(np.array([1.5, 0.5], np.float16), ref, FP32, 4, False, False).ok
    assert not judge(np.array([2.0, 0.5], np.float16), ref, FP32, 4, False, False).mistrusted


def test_overflowing_fp16_accumulator_may_turn_inf_into_nan():
    exact = np.array([np.inf, 5.0])
    ref = oracle.Reference(exact, np.array([np.inf, 5.0]), oracle.round16(exact),
                           s_finite=np.array([1e6, 5.0]))
    got = np.array([np.nan, 5.0], np.float16)
    assert judge(got, ref, FP16, 8, False, False).ok  # a partial sum may reach -inf
    assert not judge(got, ref, FP32, 8, False, False).ok
