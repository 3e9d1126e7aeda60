"""Accumulation-model fingerprints (kbench.fingerprint): the simulated models
against independent exact arithmetic, each model recognised from its own
output, our scalar backend recognised as FP32 accumulation, exact-by-design
inputs indistinguishable, the onnxruntime peer fingerprinted, and the
fingerprint recorded by the runner."""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest
from qemu_gate import needs_qemu

import kbench
from kbench.harness.runner import Job, run_job
from kbench.judge import fingerprint as fp
from kbench.judge import oracle
from kbench.native.calls import ConvDesc
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.problems.catalog import load_catalog, resolve_catalog
from kbench.targets.spec import parse_target

REQUIRE_ORT = bool(os.environ.get("KBENCH_REQUIRE_ORT"))


# ---------------------------------------------------------------- exact arithmetic

def _round16(q: Fraction) -> float:
    """q rounded to binary16, round to nearest even, computed on rationals
    (no floating point): 11 significant bits, subnormal spacing 2^-24,
    overflow to infinity from 65520 up."""
    if q == 0:
        return 0.0
    sign, mag = (-1.0 if q < 0 else 1.0), abs(q)
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    if Fraction(2) ** e > mag:
        e -= 1
    spacing = Fraction(2) ** (max(e, -14) - 10)
    units = mag / spacing
    whole = units.numerator // units.denominator
    rest = units - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    value = whole * spacing
    return sign * (float("inf") if value >= 65536 else float(value))


def _exact(v: float) -> Fraction:
    return Fraction(float(v))


def _chain16(terms: list[tuple[float, float]], start: float = 0.0) -> float:
    acc = start
    for a, b in terms:
        acc = _round16(_exact(acc) + _exact(a) * _exact(b))
    return acc


def _add16(p: float, q: float) -> float:
    return _round16(_exact(p) + _exact(q))


def _reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, model: str) -> np.ndarray:
    """An independent scalar implementation of the FP16 models and the exact one."""
    m, k = a.shape
    n = b.shape[1]
    out = np.empty((m, n))
    for i in range(m):
        for j in range(n):
            terms = [(float(a[i, t]), float(b[t, j])) for t in range(k)]
            bj = 0.0 if bias is None else float(bias[j])
            if model == "fp32_once":
                out[i, j] = _round16(sum((_exact(x) * _exact(y) for x, y in terms), Fraction(0))
                                     + _exact(bj))
                continue
            if model == "fp16_fma_chain_bias_first":
                out[i, j] = _chain16(terms, bj)
                continue
            if model == "fp16_fma_chain":
                acc = _chain16(terms)
            elif model.startswith("fp16_blocked["):
                size = int(model[len("fp16_blocked["):-1])
                acc = 0.0
                for s in range(0, k, size):
                    acc = _add16(acc, _chain16(terms[s:s + size]))
            else:
                width = int(model[len("fp16_lanes["):-1])
                lanes = [_chain16(terms[lane::width]) for lane in range(width)]
                while len(lanes) > 1:
                    half = len(lanes) // 2
                    lanes = [_add16(lanes[t], lanes[t + half]) for t in range(half)]
                acc = lanes[0]
            out[i, j] = _add16(acc, bj) if bias is not None else acc
    return out


def _wide_operands(rng: np.random.Generator, m: int, k: int, n: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Magnitudes from FP16 subnormals to 2^7, both signs: extreme exponent
    gaps between the accumulator and the products."""
    def draw(shape: tuple[int, ...]) -> np.ndarray:
        mant = rng.uniform(1.0, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        return (mant * np.exp2(rng.integers(-26, 8, size=shape))).astype(np.float16)
    return draw((m, k)), draw((k, n)), draw((n,))


FP16_MODELS = ["fp16_fma_chain", "fp16_fma_chain_bias_first", "fp16_blocked[4]",
               "fp16_blocked[16]", "fp16_lanes[4]", "fp16_lanes[8]"]


@pytest.mark.parametrize("model", ["fp32_once", *FP16_MODELS])
def test_simulated_models_match_exact_rational_arithmetic(model: str) -> None:
    rng = np.random.default_rng(7)
    a, b, bias = _wide_operands(rng, 3, 40, 4)
    want = _reference(a, b, bias, model)
    got = fp.simulate_gemm(a, b, bias, None, model)
    assert fp.same(got, want.astype(np.float16)).all(), (got, want)
    if model != "fp16_fma_chain_bias_first":
        got = fp.simulate_gemm(a, b, None, None, model)
        assert fp.same(got, _reference(a, b, None, model).astype(np.float16)).all()


def test_fp32_chain_is_a_sequential_float32_loop() -> None:
    rng = np.random.default_rng(3)
    a, b, bias = _wide_operands(rng, 3, 50, 4)
    got = fp.simulate_gemm(a, b, bias, None, "fp32_chain")
    got16 = fp.simulate_gemm(a, b, bias, None, "fp32_chain_bias16")
    first = fp.simulate_gemm(a, b, bias, None, "fp32_chain_bias_first")
    for i in range(3):
        for j in range(4):
            acc = np.float32(0.0)
            start = np.float32(bias[j])
            for t in range(50):
                acc = np.float32(acc + np.float32(a[i, t]) * np.float32(b[t, j]))
                start = np.float32(start + np.float32(a[i, t]) * np.float32(b[t, j]))
            assert fp.same(got[i, j], np.float16(np.float32(acc + np.float32(bias[j]))))
            assert fp.same(got16[i, j], np.float16(_add16(float(np.float16(acc)),
                                                          float(bias[j]))))
            assert fp.same(first[i, j], np.float16(start))


def test_clamp_is_applied_last() -> None:
    rng = np.random.default_rng(5)
    a = rng.normal(size=(8, 32)).astype(np.float16)
    b = rng.normal(size=(32, 8)).astype(np.float16)
    free = fp.simulate_gemm(a, b, None, None, "fp16_fma_chain")
    clamped = fp.simulate_gemm(a, b, None, (-1.0, 2.0), "fp16_fma_chain")
    assert np.array_equal(clamped, np.clip(free, -1.0, 2.0))


# ----------------------------------------------------------- identification

def _gemm_operands(m: int, n: int, k: int, bias: bool, seed: int = 11
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(m, k)).astype(np.float16)
    b = rng.normal(size=(k, n)).astype(np.float16)
    return a, b, (rng.normal(size=n).astype(np.float16) if bias else None)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("k, m", [(256, 32), (1024, 16)])
def test_each_model_is_recognised_from_its_own_output(k: int, m: int, bias: bool) -> None:
    a, b, bv = _gemm_operands(m, 64, k, bias)
    models = [m.name for m in fp.candidates(k, bias)]
    assert models[0] == "fp32_once" and len(models) == len(set(models))
    for model in models:
        c = fp.simulate_gemm(a, b, bv, None, model)
        f = fp.gemm(a, b, bv, None, c)
        assert f.scores[model] == f.match == 1.0, (model, f.scores)
        if f.model != model:  # FP32 roundings are rare: the chain may tie with `once`
            assert (f.model, model) in (("fp32_once_bias16", "fp32_chain_bias16"),
                                        ("fp32_once", "fp32_chain"),
                                        ("fp32_once", "fp32_chain_bias_first"),
                                        ("fp32_chain", "fp32_chain_bias_first")), (model, f.scores)
        assert not f.sampled and f.elements == m * 64
        truth = fp.family(model)
        other = max(s for name, s in f.scores.items() if fp.family(name) != truth)
        assert other < 0.5, (model, f.scores)
        if truth == fp.FP16:  # FP16 models tell each other apart by far
            assert max(s for name, s in f.scores.items() if name != model) < 0.6
        elif bias:  # FP32 roundings are rare events: the bias placement still shows
            assert max(s for name, s in f.scores.items()
                       if fp.family(name) == truth and ("bias16" in name) != (
                           "bias16" in model)) < 0.9
        assert fp.accumulates_in_fp32(f) is (truth == fp.FP32)
        assert fp.label(f).startswith(fp.FAMILY_LABELS[truth])
        assert f.correctly_rounded == f.scores["fp32_once"]


@pytest.mark.parametrize("model", ["fp32_chain_bias_first", "fp32_chain", "fp32_once"])
def test_bias_order_witnesses_tell_the_fp32_chains_apart(model: str) -> None:
    """FP32 roundings rarely show in FP16 outputs; the witness columns of
    bias_order_gemm_inputs (every fourth) make a chain started from the bias
    differ from the exact sum and from a chain that adds the bias last, so
    the bias-first chain is recognised, and never mistaken for another."""
    case = GemmCase("fp_bias_order", 3, 64, 300, clamp=True)
    inp = inputs.bias_order_gemm_inputs(case)
    a, b, bias = inp.a[0], inp.b[0], inp.bias[0]
    first = fp.simulate_gemm(a, b, bias, inp.clamp, "fp32_chain_bias_first")
    last = fp.simulate_gemm(a, b, bias, inp.clamp, "fp32_chain")
    assert (first[:, ::4] == 1.0).all() and (last[:, ::4] == np.float16(1 + 2.0**-10)).all()
    assert fp.same(last[:, ::4], inp.refs[0].rounded[:, ::4]).all()
    f = fp.gemm(a, b, bias, inp.clamp, fp.simulate_gemm(a, b, bias, inp.clamp, model))
    assert f.scores[model] == f.match == 1.0, f.scores
    if model == "fp32_chain_bias_first":
        assert f.model == model
        assert max(f.scores[m] for m in ("fp32_once", "fp32_chain")) <= 0.75, f.scores
        assert max(s for name, s in f.scores.items() if name != model) < 0.9, f.scores
    else:  # the exact sum and the bias-last chain may tie; never the bias-first one
        assert f.model in ("fp32_once", "fp32_chain")
        assert f.scores["fp32_chain_bias_first"] <= 0.75, f.scores


def test_a_large_case_is_sampled_and_still_recognised() -> None:
    a, b, bias = _gemm_operands(96, 96, 512, True, seed=2)
    c = fp.simulate_gemm(a, b, bias, None, "fp16_blocked[32]")
    f = fp.gemm(a, b, bias, None, c, work=1 << 18)
    assert f.total == 96 * 96 and f.elements == (1 << 18) // 512 < f.total
    assert f.sampled and (f.model, f.match) == ("fp16_blocked[32]", 1.0)
    capped = fp.gemm(a, b, bias, None, c, max_elements=300)
    assert capped.elements == 300 and capped.model == "fp16_blocked[32]"


def test_a_batch_is_fingerprinted_over_all_its_problems() -> None:
    probs = [_gemm_operands(16, 16, 300, True, seed=s) for s in (1, 2, 3)]
    outs = [fp.simulate_gemm(a, b, bias, (-2.0, 2.0), "fp16_lanes[16]") for a, b, bias in probs]
    f = fp.gemm([p[0] for p in probs], [p[1] for p in probs], [p[2] for p in probs],
                (-2.0, 2.0), outs)
    assert (f.model, f.match, f.total, f.elements) == ("fp16_lanes[16]", 1.0, 768, 768)


def test_specials_match_their_model_with_nan_and_inf() -> None:
    case = GemmCase("fp_specials", 24, 20, 300, bias=True)
    inp = inputs.gemm_inputs(case, "specials")
    a, b, bias = inp.a[0], inp.b[0], inp.bias[0]
    for model in ("fp32_once", "fp16_fma_chain", "fp16_blocked[8]"):
        c = fp.simulate_gemm(a, b, bias, inp.clamp, model)
        assert np.isnan(c).any() and np.isinf(c).any()
        f = fp.gemm(a, b, bias, inp.clamp, c)
        assert (f.model, f.match) == (model, 1.0)


def test_ties_prefer_the_simplest_model() -> None:
    # K = 3: every block and lane model that exists reduces like a short chain,
    # with a bias only fp32_once and fp32_chain can tie when no rounding shows
    a, b, bias = _gemm_operands(8, 8, 3, False)
    c = fp.simulate_gemm(a, b, None, None, "fp16_fma_chain")
    f = fp.gemm(a, b, None, None, c)
    assert [m.name for m in fp.candidates(3, False)] == ["fp32_once", "fp32_chain",
                                                          "fp16_fma_chain"]
    assert f.best in ("fp32_once", "fp32_chain", "fp16_fma_chain")
    tied = [name for name, s in f.scores.items() if s == f.match]
    assert f.best == tied[0]


def test_exact_by_design_inputs_are_indistinguishable() -> None:
    case = GemmCase("fp_exact", 32, 48, 512, bias=True, clamp=True)
    inp = inputs.gemm_inputs(case, "exact")
    c = fp.simulate_gemm(inp.a[0], inp.b[0], inp.bias[0], inp.clamp, "fp16_lanes[8]")
    f = fp.gemm(inp.a, inp.b, inp.bias, inp.clamp, [c])
    assert f.indistinguishable and f.model == fp.INDISTINGUISHABLE
    assert f.agreement == 1.0 and f.correctly_rounded == 1.0
    assert set(f.scores.values()) == {1.0}
    assert fp.accumulates_in_fp32(f) is None
    assert f.category == fp.INDISTINGUISHABLE
    assert fp.label(f).startswith("indistinguishable")


def test_labels_and_categories() -> None:
    assert fp.describe("fp32_once", 1.0) == "FP32 accumulation (fp32_once, 100%)"
    assert fp.describe("fp16_fma_chain", 0.99951) == "FP16 chain (fp16_fma_chain, 99.9%)"
    assert fp.describe("fp16_blocked[16]@chw", 0.4).startswith("unexplained")
    assert fp.category("fp32_chain@hwc", 0.95) == fp.FP32
    assert fp.category("fp16_lanes[8]", 0.95) == fp.FP16
    assert fp.category("fp16_lanes[8]", 0.5) == "unexplained"
    assert fp.category(fp.INDISTINGUISHABLE, 1.0) == fp.INDISTINGUISHABLE
    assert fp.describe("", float("nan")) == "not fingerprinted"
    # a model name of no known family (a hand-edited or newer results.csv) is unexplained
    assert fp.category("weird", 1.0) == "unexplained"
    assert fp.describe("weird", 1.0) == "unexplained (best weird, 100%)"
    assert fp.percent(float("nan")) == "–" and fp.percent(0.5) == "50.0%"
    weak = fp.Fingerprint("fp16_fma_chain", 0.3, {"fp32_once": 0.2, "fp16_fma_chain": 0.3},
                          0.2, 100, 100, "fp16_fma_chain", 0.1)
    assert fp.accumulates_in_fp32(weak) is None


# ---------------------------------------------------------------- convolution

def _conv(n: int = 1, h: int = 9, w: int = 9, c_in: int = 16, c_out: int = 8, k: int = 3,
          stride: int = 1, pad: int = 1, dil: int = 1, groups: int = 1, bias: bool = True,
          seed: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, ConvDesc]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, h, w, c_in)).astype(np.float16)
    wt = rng.normal(size=(k, k, c_in // groups, c_out)).astype(np.float16)
    bv = rng.normal(size=c_out).astype(np.float16) if bias else None
    params = kbench.ConvParams((stride, stride), (pad,) * 4, (dil, dil), groups)
    return x, wt, bv, ConvDesc.from_shapes(x.shape, wt.shape, params)


def test_conv_dots_agree_with_the_oracle_reference() -> None:
    x, w, bias, d = _conv(n=2, h=11, w=10, c_in=12, c_out=6, stride=2, pad=2, dil=2, groups=3)
    ref = oracle.conv_reference(x, w, bias, (2, 2), (2, 2, 2, 2), (2, 2), 3, None)
    assert np.array_equal(fp.simulate_conv(x, w, bias, d, "fp32_once"), ref.rounded)
    for order in fp.ORDERS:
        dots = fp.conv_dots(x, w, bias, d, order)
        exact = (dots.x.astype(np.float64) * dots.y).sum(axis=0) + dots.bias
        assert np.allclose(exact, ref.exact.reshape(-1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("model", ["fp32_chain@hwc", "fp32_chain_bias16@chw",
                                   "fp16_fma_chain@hwc", "fp16_fma_chain@chw",
                                   "fp16_fma_chain_bias_first@chw", "fp16_blocked[16]@chw",
                                   "fp16_lanes[8]@hwc"])
def test_conv_models_and_tap_orders_are_recognised(model: str) -> None:
    x, w, bias, d = _conv(h=10, w=10, c_in=32, c_out=16, stride=1, pad=1)
    out = fp.simulate_conv(x, w, bias, d, model)
    f = fp.conv(x, w, bias, d, out)
    assert f.scores[model] == f.match == 1.0, f.scores
    other = model.replace("@hwc", "@tmp").replace("@chw", "@hwc").replace("@tmp", "@chw")
    if model.startswith("fp16"):  # the order shows in most elements
        assert f.model == model and f.scores[other] < 0.6
    else:  # in FP32 the order changes few elements, and the first order wins a tie
        assert f.model.split("@")[0] == model.split("@")[0]
        assert f.scores[other] > 0.99


def test_conv_orders_coincide_for_pointwise_and_depthwise() -> None:
    for kwargs in ({"k": 1, "pad": 0}, {"groups": 16, "c_out": 16}):
        x, w, bias, d = _conv(**kwargs)
        f = fp.conv(x, w, bias, d, fp.simulate_conv(x, w, bias, d, "fp16_fma_chain@hwc"))
        assert not any(name.endswith("@chw") for name in f.scores)
        assert f.model in ("fp16_fma_chain@hwc", fp.INDISTINGUISHABLE)


# ------------------------------------------------------------ real backends

@pytest.fixture(scope="module")
def host():
    t = parse_target("host")
    yield t
    t.close()


def _realization(target, name: str):
    return next(r for r in target.info().realizations if r.name == name)


def test_the_scalar_backend_accumulates_in_fp32() -> None:
    a, b, bias = _gemm_operands(32, 48, 700, True, seed=9)
    res = kbench.gemm(a, b, bias, selector=kbench.Selector(force="gemm_scalar_f32acc"))
    assert res.realization.name == "gemm_scalar_f32acc"
    f = fp.gemm(a, b, bias, None, res.c)
    # docs/backends.md: FP32, one rounding per product, sequential over K, bias last
    assert (f.model, f.match) == ("fp32_chain", 1.0), f.scores
    assert fp.accumulates_in_fp32(f) is True
    assert max(s for name, s in f.scores.items() if name.startswith("fp16")) < 0.5

    x, w, cb, d = _conv(h=12, w=12, c_in=24, c_out=8, seed=6)
    params = kbench.ConvParams((1, 1), (1, 1, 1, 1))
    for name in ("conv2d_direct_scalar_f32acc", "conv2d_im2col_gemm_scalar_f32acc"):
        out = kbench.conv2d(x, w, cb, params, selector=kbench.Selector(force=name)).output
        f = fp.conv(x, w, cb, d, out)
        # taps in (ky, kx, ci) order, bias last
        assert (f.model, f.match) == ("fp32_chain@hwc", 1.0), (name, f.scores)


@pytest.mark.parametrize("kind", ["uniform", "normal", "specials"])
def test_the_scalar_backend_is_the_fp32_chain_on_every_smoke_case(host, kind: str) -> None:
    """The C scalar backend against the numpy simulation, bit for bit, on every
    case of a catalog (batches, strides, clamps, padding, groups, specials)."""
    cat = load_catalog(resolve_catalog("smoke"))
    for case in cat.gemm:
        inp = inputs.gemm_inputs(case, kind)
        out = host.run_gemm(case, inp, "gemm_scalar_f32acc")
        f = fp.gemm(inp.a, inp.b, inp.bias, inp.clamp, out.outputs)
        assert f.scores["fp32_chain"] == 1.0, (case, f.scores)
    for case in cat.conv:
        cinp = inputs.conv_inputs(case, kind)
        params = kbench.ConvParams(case.stride, case.pad, case.dilation, case.groups, cinp.clamp)
        desc = ConvDesc.from_shapes(cinp.x.shape, cinp.w.shape, params)
        for name in ("conv2d_direct_scalar_f32acc", "conv2d_im2col_gemm_scalar_f32acc"):
            out = host.run_conv(case, cinp, name)
            f = fp.conv(cinp.x, cinp.w, cinp.bias, desc, out.outputs[0])
            assert f.scores["fp32_chain@hwc"] == 1.0, (case, name, f.scores)


def test_runner_fingerprints_peers_by_default_and_any_realization_on_request(host) -> None:
    case = GemmCase("fp_runner", 16, 24, 320, bias=True)
    scalar = _realization(host, "gemm_scalar_f32acc")
    plain = run_job(host, Job(case, "normal", scalar, "host"))
    assert plain.status == "pass" and plain.accum_model == "" and np.isnan(plain.accum_match)
    asked = run_job(host, Job(case, "normal", scalar, "host", fingerprint=True))
    # its FP32 chain (docs/backends.md: sequential, bias last) or, on a tie, the simpler fp32_once
    assert asked.accum_model in ("fp32_once", "fp32_chain") and asked.accum_match == 1.0
    assert f"accum={asked.accum_model}:100.0%" in asked.line()
    exact = run_job(host, Job(case, "exact", scalar, "host", fingerprint=True))
    assert exact.accum_model == ""  # indistinguishable by construction: not computed
    conv = ConvCase("fp_runner_conv", 1, 8, 8, 16, 8, 3, 3, pad=(1, 1, 1, 1), groups=2)
    direct = _realization(host, "conv2d_direct_scalar_f32acc")
    v = run_job(host, Job(conv, "uniform", direct, "host", fingerprint=True))
    assert fp.category(v.accum_model, v.accum_match) in (fp.FP32, fp.INDISTINGUISHABLE)
    assert v.accum_match == 1.0


@needs_qemu
def test_emulated_neon_kernels_fingerprint_as_they_declare() -> None:
    """Real FP16 arithmetic (FMLA .8h under QEMU): the FP16-accumulating NEON
    kernel is the fused FP16 chain started from the bias (docs/backends.md), bit for
    bit, and declares that order (error model gemm_bias_first); the FP32
    ones are FP32."""
    target = parse_target("qemu:cpu=neoverse-n1")
    try:
        reals = {r.name: r for r in target.info().realizations}
        gemm = GemmCase("fp_neon", 12, 40, 400, bias=True, clamp=True)
        conv = ConvCase("fp_neon_conv", 1, 9, 9, 24, 16, 3, 3, pad=(1, 1, 1, 1))
        for name, case, want in (
                ("gemm_neon_f16acc", gemm, "fp16_fma_chain_bias_first"),
                ("gemm_neon_f16acc_mb24_nb64_kb64", gemm, "fp16_fma_chain_bias_first"),
                ("conv2d_igemm_neon_f16acc", conv, "fp16_fma_chain_bias_first@hwc"),
                ("conv2d_im2col_gemm_neon_f16acc", conv, "fp16_fma_chain_bias_first@hwc"),
                ("gemm_neon_f32acc_cvt", gemm, None),
                ("conv2d_igemm_neon_f32acc_cvt", conv, None)):
            v = run_job(target, Job(case, "normal", reals[name], target.name, fingerprint=True))
            assert v.status == "pass", v.line()
            if want is not None:
                assert (v.accum_model, v.accum_match) == (want, 1.0), v.line()
                assert reals[name].error_model == "gemm_bias_first", name
            else:
                assert fp.category(v.accum_model, v.accum_match) == fp.FP32, v.line()
    finally:
        target.close()


# ------------------------------------------------------------------ the ORT peer

@pytest.fixture(scope="module")
def ort_host(host):
    names = {r.name for r in host.info().realizations if r.peer}
    if not {"ort_matmul_f16", "ort_conv_f16"} <= names:
        if REQUIRE_ORT:
            pytest.fail("KBENCH_REQUIRE_ORT is set but the ort peer is unavailable")
        pytest.skip("onnxruntime is not installed (pip install 'kbench[ort]')")
    return host


def _check_peer_fingerprint(v, kernel: str) -> None:
    """Consistent whatever the platform; on a path that computes in FP32
    between Casts (x86: ORT has no FP16 kernel there) an FP32 fingerprint."""
    # mistrusted where ORT's declared (FP16) model bounds nothing: K >= 2048
    assert v.status in ("pass", "mistrusted"), v.line()
    assert v.accum_model, v.line()
    cat = fp.category(v.accum_model, v.accum_match)
    print(f"{v.realization} {v.case}: {fp.describe(v.accum_model, v.accum_match)}")
    if "between Casts" in kernel:
        assert cat == fp.FP32 and v.accum_match >= 0.99, v.line()
    else:
        assert cat in fp.CATEGORIES


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_ort_matmul_gets_a_fingerprint(ort_host, bias: bool) -> None:
    r = _realization(ort_host, "ort_matmul_f16")
    for m, n, k, clamp in ((64, 32, 512, False), (16, 32, 2048, True)):
        case = GemmCase(f"fp_ort_{m}x{n}x{k}_{bias}", m, n, k, bias=bias, clamp=clamp)
        _check_peer_fingerprint(run_job(ort_host, Job(case, "normal", r, "host")), r.kernel)


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_ort_conv_gets_a_fingerprint(ort_host, bias: bool) -> None:
    r = _realization(ort_host, "ort_conv_f16")
    for case in (ConvCase(f"fp_ort_c3_{bias}", 1, 12, 12, 32, 16, 3, 3, pad=(1, 1, 1, 1),
                          bias=bias),
                 ConvCase(f"fp_ort_c1_{bias}", 1, 8, 8, 256, 16, 1, 1, bias=bias),
                 ConvCase(f"fp_ort_g4_{bias}", 2, 10, 10, 64, 32, 3, 3, stride=(2, 2),
                          groups=4, bias=bias)):
        _check_peer_fingerprint(run_job(ort_host, Job(case, "normal", r, "host")), r.kernel)


def test_an_fp32_fp16_tie_is_indistinguishable() -> None:
    """K = 1 with a bias: one fused FP16 multiply-add is one rounding, the same
    as FP32 accumulation rounded once. Both families explain the output
    bit for bit, so the precision cannot be told (while the bias-last FP16
    chain, two roundings, differs: not every model agrees)."""
    a, b, bias = _gemm_operands(64, 64, 1, True, seed=5)
    c = fp.simulate_gemm(a, b, bias, None, "fp16_fma_chain_bias_first")
    f = fp.gemm(a, b, bias, None, c)
    assert f.scores["fp32_once"] == f.scores["fp16_fma_chain_bias_first"] == 1.0
    assert f.agreement < fp.AGREEMENT  # not every model agrees ...
    assert f.model == fp.INDISTINGUISHABLE  # ... but the two families tie
    assert fp.accumulates_in_fp32(f) is None
    # with K large enough the same FP16 model is recognised
    a, b, bias = _gemm_operands(16, 64, 64, True, seed=5)
    c = fp.simulate_gemm(a, b, bias, None, "fp16_fma_chain_bias_first")
    assert fp.gemm(a, b, bias, None, c).model == "fp16_fma_chain_bias_first"
