"""NEON FP16 backend specifics, on emulated Arm targets: the FP32-accumulating
kernels follow the scalar reference's order bit for bit, the FP16 kernel is
the simulated FP16 chain started from the bias bit for bit, threads change
no bit, the native layout is what the header declares, and the FP16
accumulator's accuracy loss at large K shows up in the data."""

import numpy as np
import pytest
from qemu_gate import needs_qemu

from kbench.harness import runner
from kbench.judge import fingerprint as fp
from kbench.judge.tolerance import AccumModel
from kbench.native.api import Selector
from kbench.native.calls import pack
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets.spec import parse_target

pytestmark = needs_qemu


@pytest.fixture(scope="module", params=["qemu:cpu=max", "qemu:cpu=neoverse-n1"])
def target(request):
    t = parse_target(request.param)
    yield t
    t.close()


def _names(target, op, backend="neon"):
    return [r.name for r in target.info().realizations if r.op == op and r.backend == backend]


def _gemm(target, case, kind, name, threads=1):
    inp = inputs.gemm_inputs(case, kind)
    out = target.run_gemm(case, inp, name, Selector(threads=threads))
    assert out.error is None and not out.guard_detail, (out.error, out.guard_detail)
    assert out.ran.name == name
    return [o.view(np.uint16) for o in out.outputs]


def test_neon_is_offered_where_fp16_arithmetic_is():
    t = parse_target("qemu:cpu=cortex-a53")
    try:
        assert "neon" not in t.info().backends
    finally:
        t.close()
    assert "neon" in parse_target("qemu:cpu=neoverse-n1").info().backends


def test_fp32_kernels_match_the_scalar_order_bit_for_bit(target):
    case = GemmCase("neon_vs_scalar", 13, 37, 129, clamp=True, lda_pad=2, ldc_pad=3)
    ref = _gemm(target, case, "normal", "gemm_scalar_f32acc")
    f32 = [n for n in _names(target, "gemm") if "f32acc" in n]
    assert f32
    for name in f32:
        got = _gemm(target, case, "normal", name)
        assert all(np.array_equal(x, y) for x, y in zip(got, ref, strict=True)), name


@pytest.mark.parametrize("b_form", ["plain", "packed", "native"])
def test_threads_change_no_bit(target, b_form):
    case = GemmCase(f"threads_{b_form}", 37, 45, 70, b_form=b_form, clamp=True, ldc_pad=1)
    for name in _names(target, "gemm"):
        one = _gemm(target, case, "uniform", name, threads=1)
        four = _gemm(target, case, "uniform", name, threads=4)
        assert all(np.array_equal(x, y) for x, y in zip(one, four, strict=True)), name
    conv = ConvCase("threads_conv", 2, 9, 9, 8, 20, 3, 3, pad=(1, 1, 1, 1), groups=2)
    cin = inputs.conv_inputs(conv, "uniform")
    for name in _names(target, "conv2d"):
        a = target.run_conv(conv, cin, name, Selector(threads=1))
        b = target.run_conv(conv, cin, name, Selector(threads=4))
        assert a.error is None and b.error is None
        assert np.array_equal(a.outputs[0].view(np.uint16), b.outputs[0].view(np.uint16)), name


def test_native_layout_is_blocks_of_16_with_bias_first(target):
    rng = np.random.default_rng(2)
    k, n = 5, 21
    b = rng.normal(size=(k, n)).astype(np.float16)
    bias = rng.normal(size=n).astype(np.float16)
    buf = pack(target.engine, b, "neon", bias)
    header = buf[:64]
    assert int(header[8:10].view("<u2")[0]) == 3  # KB_LAYOUT_NEON
    payload = buf[64:].view(np.float16).reshape(2, 1 + k, 16)
    want = np.zeros((2, 1 + k, 16), np.float16)
    for j in range(2):
        cols = slice(16 * j, min(16 * j + 16, n))
        width = cols.stop - cols.start
        want[j, 0, :width] = bias[cols]
        want[j, 1:, :width] = b[:, cols]
    assert np.array_equal(payload.view(np.uint16), want.view(np.uint16))


def test_fp16_accumulation_loses_accuracy_with_k(target):
    """The data users ask for: error grows with K for FP16 accumulation and
    stays put for FP32 accumulation; both within their declared bounds."""
    stats = {}
    f16 = [n for n in _names(target, "gemm") if "f16acc" in n][0]
    f32 = [n for n in _names(target, "gemm") if "f32acc" in n][0]
    reals = {r.name: r for r in target.info().realizations}
    for k in (32, 1024):
        case = GemmCase(f"ksweep_{k}", 4, 32, k, bias=False)
        for name in (f16, f32):
            v = runner.run_job(target, runner.Job(case, "uniform", reals[name], target.name))
            assert v.status == "pass", v.line()
            stats[name, k] = v
    assert stats[f16, 1024].rms_rel > 2 * stats[f16, 32].rms_rel
    assert stats[f16, 1024].max_ulp > 2 * stats[f16, 32].max_ulp
    assert stats[f16, 1024].exact_fraction < stats[f16, 32].exact_fraction
    assert stats[f16, 1024].rms_rel > 20 * stats[f32, 1024].rms_rel
    assert stats[f32, 1024].exact_fraction > 0.95
    assert stats[f16, 1024].exact_fraction < 0.5


def test_a_vacuous_bound_is_mistrusted_not_passed(target):
    """gamma(K', 2^-11) is infinite from K' = 2048 on: real-valued inputs cannot
    be judged there, exact-by-design inputs still must match bit for bit."""
    f16 = [r for r in target.info().realizations if r.op == "gemm" and r.accum == "fp16"][0]
    case = GemmCase("vacuous", 2, 16, 2100, bias=False)
    v = runner.run_job(target, runner.Job(case, "uniform", f16, target.name))
    assert v.status == "mistrusted" and "no bound" in v.message
    v = runner.run_job(target, runner.Job(case, "exact", f16, target.name))
    assert v.status == "pass"


F16_SHAPES = [(13, 37, 129), (6, 16, 8), (1, 5, 3), (7, 33, 17), (12, 16, 1), (5, 48, 250)]


@pytest.mark.parametrize("kind", ["uniform", "normal", "specials"])
def test_fp16_kernel_is_the_fp16_chain_from_the_bias(target, kind):
    """gemm_neon_f16acc (and its blocked variants) equal the simulated
    fp16_fma_chain_bias_first bit for bit (NaN payloads aside; the clamp
    keeps both signs of zero as kb_store_f16 does): full and partial 6x16
    tiles, K through the 8-k step and the single-k tail, every B form,
    with and without bias and clamp."""
    names = [n for n in _names(target, "gemm") if "f16acc" in n]
    assert "gemm_neon_f16acc" in names
    for i, (m, n, k) in enumerate(F16_SHAPES):
        case = GemmCase(f"f16_chain_{m}x{n}x{k}", m, n, k, bias=i % 3 != 2, clamp=i % 2 == 0,
                        lda_pad=i % 2, ldc_pad=1, b_form=["plain", "packed", "native"][i % 3])
        inp = inputs.gemm_inputs(case, kind)
        want = fp.simulate_gemm(inp.a[0], inp.b[0], inp.bias[0], inp.clamp,
                                "fp16_fma_chain_bias_first" if case.bias else "fp16_fma_chain")
        for name in names:
            got = target.run_gemm(case, inp, name)
            assert got.error is None and not got.guard_detail, (name, got.error)
            x = got.outputs[0]
            same = (x.view(np.uint16) == want.view(np.uint16)) | (np.isnan(x) & np.isnan(want))
            assert same.all(), (name, case.name, np.flatnonzero(~same)[:5])


def test_bias_first_declares_k_roundings():
    """The bias that starts a chain costs no rounding: K' = K, not K + 1."""
    first, last = AccumModel("fp16", bias_rounding=False), AccumModel("fp16")
    assert first.roundings(100, True) == 100 and last.roundings(100, True) == 101
    assert first.roundings(100, False) == last.roundings(100, False) == 100
