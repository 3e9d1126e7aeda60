"""Every backend clamps as the scalar store step (kb_store_f16) does: a
value below clamp_min becomes clamp_min, above clamp_max clamp_max, and
anything else stays, NaN and the sign of a zero included; but for the
SVE2.1 realizations, which declare KleidiAI's FCLAMP (nan_clamp = to_min:
NaN becomes clamp_min, +0 orders above -0) and are held to it bit for bit. The SME kernels
clamp with FMAX/FMIN (FCLAMP would turn NaN into clamp_min; FMAX/FMIN
differ on zeros of opposite sign, which these accumulators produce only
against a clamp_max of -0, where the kernels switch to compare/select), the
FP16 NEON kernel compares in FP16 against rounded-outward bounds. Checked
bit for bit on outputs that hold NaN rows, infinities, +0 and -0, against
bounds that are zeros of either sign, equal, finite or infinite.

Skipped when QEMU is not installed, unless KBENCH_REQUIRE_QEMU is set."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from qemu_gate import needs_qemu
from sve_model import fdot_model

from kbench.judge import fingerprint as fp
from kbench.judge import oracle
from kbench.native.api import ConvParams
from kbench.native.calls import ConvDesc
from kbench.problems.cases import ConvCase, GemmCase
from kbench.problems.inputs import ConvInputs, GemmInputs
from kbench.targets.spec import Target, parse_target

pytestmark = needs_qemu

BOUNDS = [(-np.inf, np.inf), (-1.0, 1.0), (0.0, 0.0), (-0.0, -0.0), (0.0, -0.0), (-0.0, 0.0),
          (2.0, 2.0), (-3.0, 5.0)]


@pytest.fixture(scope="module", params=["qemu:cpu=max:svl=512", "qemu:cpu=max:svl=128",
                                        "qemu:cpu=neoverse-n1"])
def target(request) -> Iterator[Target]:
    t = parse_target(request.param)
    yield t
    t.close()


def _operands(m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Small integers (every sum exact in FP16 and FP32, whatever the order),
    with a NaN row of A, +inf and -inf columns of B, zero columns whose bias
    is +0 or -0, and a row of A times zero columns giving -0 products."""
    rng = np.random.default_rng(m * 100 + n)
    a = rng.integers(-3, 4, size=(m, k)).astype(np.float16)
    b = rng.integers(-3, 4, size=(k, n)).astype(np.float16)
    bias = rng.integers(-5, 6, size=n).astype(np.float16)
    a[-1, :] = -1  # times a zero column: -0 products only
    b[:, 1] = 0
    b[:, 2] = 0
    bias[1], bias[2] = np.float16(0.0), np.float16(-0.0)
    b[3 % k, 4] = np.inf
    b[0, 5] = -np.inf
    if m > 2:
        a[1, 0] = np.nan
    return a, b, bias


def _inputs(case: GemmCase, bounds: tuple[float, float]) -> GemmInputs:
    a, b, bias = _operands(case.m, case.n, case.k)
    ref = oracle.with_clamp(oracle.gemm_reference(a, b, bias, None), bounds)
    return GemmInputs([a], [b], [bias], bounds, [ref], "exact")


def _same_bits(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return (x.view(np.uint16) == y.view(np.uint16)) | (np.isnan(x) & np.isnan(y))


def test_every_gemm_clamps_like_the_scalar_store(target: Target) -> None:
    reals = [r for r in target.info().realizations if r.op == "gemm" and not r.peer]
    assert any(r.backend == "neon" for r in reals)
    for bounds in BOUNDS:
        for m in (13, 1):
            case = GemmCase(f"clamp_{m}", m, 37, 20, clamp=True, ldc_pad=1)
            inp = _inputs(case, bounds)
            ref = target.run_gemm(case, inp, "gemm_scalar_f32acc").outputs[0]
            assert m == 1 or np.isnan(ref).any()
            assert bounds[1] < np.inf or np.isinf(ref).any()
            for r in reals:
                if r.max_m and m > r.max_m:
                    continue
                got = target.run_gemm(case, inp, r.name)
                assert got.error is None and not got.guard_detail, (r.name, got.error)
                x = got.outputs[0]
                if r.nan_clamp == "to_min":  # FCLAMP of the FP16 result (the SVE2.1 kernels)
                    want = fdot_model(inp.a[0], inp.b[0], inp.bias[0], *bounds)
                    same = _same_bits(x, want)
                    assert same.all(), (r.name, bounds, m, np.argwhere(~same)[:4].tolist())
                    continue
                if r.accum == "fp32":  # exact inputs: the same values, the same zeros
                    want = ref
                else:  # FP16 chain from the bias: a -0 bias stays -0 on -0 products
                    model = ("fp16_fma_chain_bias_first" if r.error_model == "gemm_bias_first"
                             else "fp16_fma_chain")
                    want = fp.simulate_gemm(inp.a[0], inp.b[0], inp.bias[0], bounds, model)
                same = _same_bits(x, want)
                assert same.all(), (r.name, bounds, m, np.argwhere(~same)[:4].tolist(),
                                    x[~same][:4], want[~same][:4])
                assert np.array_equal(np.isnan(x), np.isnan(ref)), (r.name, bounds)


def test_zeros_of_both_signs_reach_the_clamp(target: Target) -> None:
    """The cases above do put +0 and -0 in front of the clamp: the FP16 chain
    keeps a -0 bias on -0 products, the FP32 chains give +0, and clamp_max
    -0 keeps +0 (v > -0 is false) while clamp_min +0 keeps -0."""
    case = GemmCase("clamp_zeros", 13, 37, 20, clamp=True)
    reals = {r.name: r for r in target.info().realizations}
    inp = _inputs(case, (0.0, -0.0))
    x = target.run_gemm(case, inp, "gemm_scalar_f32acc").outputs[0]
    assert x[0, 1].view(np.uint16) == 0x0000 and x[0, 2].view(np.uint16) == 0x0000
    if "gemm_neon_f16acc" in reals:
        inp = _inputs(case, (0.0, 0.0))
        y = target.run_gemm(case, inp, "gemm_neon_f16acc").outputs[0]
        assert y[-1, 2].view(np.uint16) == 0x8000  # -0 bias, -0 products, v < +0 false
        assert y[-1, 1].view(np.uint16) == 0x0000


def test_every_conv_clamps_like_the_scalar_store(target: Target) -> None:
    """The convolutions' store steps (indirect GEMM and im2col on NEON and
    SME, the scalar ones) on integer inputs with a NaN pixel, an infinite
    weight and zero filters with +0/-0 biases. Winograd is left out: its
    transforms spread a non-finite input over a tile (its declared model
    takes finite inputs only)."""
    case = ConvCase("clamp_conv", 1, 6, 7, 8, 37, 3, 3, pad=(1, 1, 1, 1), clamp=True)
    rng = np.random.default_rng(5)
    x = rng.integers(-2, 3, size=(1, 6, 7, 8)).astype(np.float16)
    w = rng.integers(-2, 3, size=(3, 3, 8, 37)).astype(np.float16)
    bias = rng.integers(-4, 5, size=37).astype(np.float16)
    x[0, 2, 3, 1] = np.nan
    w[1, 1, 2, 4] = np.inf
    w[..., 1:3] = 0
    bias[1], bias[2] = np.float16(0.0), np.float16(-0.0)
    reals = [r for r in target.info().realizations
             if r.op == "conv2d" and not r.peer and r.error_model != "winograd_f2x2_3x3"]
    for bounds in ((-1.0, 1.0), (0.0, -0.0), (-0.0, -0.0), (-np.inf, np.inf)):
        ref_o = oracle.with_clamp(oracle.conv_reference(x, w, bias, case.stride, case.pad,
                                                        case.dilation, case.groups, None), bounds)
        inp = ConvInputs(x, w, bias, bounds, ref_o, "exact")
        ref = target.run_conv(case, inp, "conv2d_direct_scalar_f32acc").outputs[0]
        assert np.isnan(ref).any()
        for r in reals:
            got = target.run_conv(case, inp, r.name)
            assert got.error is None and not got.guard_detail, (r.name, got.error)
            out = got.outputs[0]
            assert np.array_equal(np.isnan(out), np.isnan(ref)), (r.name, bounds)
            if r.accum == "fp32":
                want = ref
            else:
                desc = ConvDesc.from_shapes(x.shape, w.shape, ConvParams(
                    case.stride, case.pad, case.dilation, case.groups, bounds))
                want = fp.simulate_conv(x, w, bias, desc, "fp16_fma_chain_bias_first@hwc")
            assert _same_bits(out, want).all(), (r.name, bounds)


@pytest.mark.parametrize("spec", ["qemu:cpu=max:svl=512", "qemu:cpu=max:svl=128"])
def test_a_k_of_several_chunks_clamps_like_the_scalar_store(spec: str) -> None:
    """A K the SME drivers split into chunks (543 pairs: two chunks of the
    default 512 at SVL 512; five of the blocked realizations' 128 at any SVL):
    the last chunk stores from the FP32 partial sums through another kernel
    than a one-pass call (kb_sme2_mopa_acc_core), clamp_max -0's
    compare/select store included. Small integers: every sum exact in FP32, so
    the bits are the scalar store's whatever the chunking."""
    t = parse_target(spec)
    try:
        reals = [r for r in t.info().realizations
                 if r.op == "gemm" and r.backend == "sme" and r.accum == "fp32"
                 and not r.peer and not r.max_m]
        assert any(r.name.startswith("gemm_sme2_mopa_f32acc_mb") for r in reals), reals
        case = GemmCase("clamp_chunked", 13, 37, 1086, clamp=True, ldc_pad=1)
        for bounds in BOUNDS:
            inp = _inputs(case, bounds)
            ref = t.run_gemm(case, inp, "gemm_scalar_f32acc").outputs[0]
            for r in reals:
                got = t.run_gemm(case, inp, r.name)
                assert got.error is None and not got.guard_detail, (r.name, got.error)
                same = _same_bits(got.outputs[0], ref)
                assert same.all(), (r.name, bounds, np.argwhere(~same)[:4].tolist())
    finally:
        t.close()
