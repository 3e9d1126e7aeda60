"""The accumulation-fingerprint simulator's contract piece by piece
(kbench/judge/fingerprint.py), beside the model-recognition tests of
test_fingerprint.py: the candidate table as the module documents it, the
dot-product sets (FP16 throughout, sampled elements, batches joined), the
sample (fixed, without repeats, bounded), the chunked whole-output
simulation, the comparison rule (NaN only equals NaN), the thresholds at
their exact values, the labels, and no floating-point exception escaping
on specials under an error state that raises."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.judge import fingerprint as fpm
from kbench.native.calls import ConvDesc

F16 = np.float16


def _desc(x: np.ndarray, w: np.ndarray, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1),
          groups: int = 1, clamp=(-np.inf, np.inf)) -> ConvDesc:
    from kbench.native import api
    params = api.ConvParams(stride, pad, dil, groups, clamp)
    return ConvDesc.from_shapes(x.shape, w.shape, params)


def _operands(m: int, k: int, n: int, seed: int = 3) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, (m, k)).astype(F16)
    b = rng.uniform(-2, 2, (k, n)).astype(F16)
    bias = rng.uniform(-4, 4, n).astype(F16)
    return a, b, bias


# ---------------------------------------------------------------- the candidate table


def test_the_candidate_table_is_the_documented_one() -> None:
    table = {m.name: (m.family, m.kind, m.width, m.bias) for m in fpm.candidates(40, True)}
    assert table == {
        "fp32_once": ("fp32", "once", 0, "exact"),
        "fp32_once_bias16": ("fp32", "once", 0, "fp16"),
        "fp32_chain": ("fp32", "chain32", 0, "last"),
        "fp32_chain_bias16": ("fp32", "chain32", 0, "fp16"),
        "fp32_chain_bias_first": ("fp32", "chain32", 0, "first"),
        "fp16_fma_chain": ("fp16", "chain16", 0, "last"),
        "fp16_fma_chain_bias_first": ("fp16", "chain16", 0, "first"),
        **{f"fp16_blocked[{b}]": ("fp16", "blocked", b, "last") for b in (4, 8, 16, 32)},
        **{f"fp16_lanes[{n}]": ("fp16", "lanes", n, "last") for n in (4, 8, 16, 32)},
    }
    assert list(table)[:7] == ["fp32_once", "fp32_once_bias16", "fp32_chain",
                               "fp32_chain_bias16", "fp32_chain_bias_first", "fp16_fma_chain",
                               "fp16_fma_chain_bias_first"]  # the tie order: simplest first
    for m in fpm.candidates(70, True):
        assert m.family == fpm.family(m.name) and m.order_dependent == (m.kind != "once")
    without = [m.name for m in fpm.candidates(70, False)]
    assert not [n for n in without if "bias" in n]
    # blocks and lanes only shorter than K: at K = 16 a block of 16 is the plain chain
    at16 = [m.name for m in fpm.candidates(16, False)]
    assert "fp16_blocked[16]" not in at16 and "fp16_lanes[16]" not in at16
    assert "fp16_blocked[8]" in at16 and "fp16_lanes[8]" in at16
    at17 = [m.name for m in fpm.candidates(17, False)]
    assert "fp16_blocked[16]" in at17 and "fp16_lanes[16]" in at17


def test_family_of_a_name_without_one_is_empty() -> None:
    assert fpm.family("fp32_chain") == "fp32" and fpm.family("fp16_lanes[4]") == "fp16"
    assert fpm.family(fpm.INDISTINGUISHABLE) == "" and fpm.family("") == ""


# ---------------------------------------------------------------- dot-product sets


def test_dot_sets_hold_fp16_whatever_the_operands_dtype() -> None:
    a, b, bias = _operands(3, 5, 4)
    c = (a.astype(np.float64) @ b.astype(np.float64)).astype(F16)
    d = fpm.gemm_dots(a.astype(np.float64), b.astype(np.float32), bias.astype(np.float64)[None, :],
                      (-1.0, 1e6), c.astype(np.float32), np.array([0, 5, 11]))
    for arr in (d.x, d.y, d.bias, d.lo, d.hi, d.observed):
        assert arr is not None and arr.dtype == F16
    assert d.x.shape == (5, 3) and d.size == 3 and d.k == 5
    np.testing.assert_array_equal(d.x[:, 1], a[1])  # element 5 = row 1, column 1
    np.testing.assert_array_equal(d.y[:, 2], b[:, 3])  # element 11 = row 2, column 3
    np.testing.assert_array_equal(d.bias, bias[[0, 1, 3]])
    np.testing.assert_array_equal(d.observed, c.reshape(-1)[[0, 5, 11]])
    assert d.hi[0] == np.inf and d.lo[0] == -1  # 1e6 is past FP16's range: no bound


def test_clamp_bounds_past_fp16_become_infinities_quietly() -> None:
    with np.errstate(all="raise"):
        lo, hi = fpm._bounds((-1e6, 1e6), 2)
    assert lo.dtype == hi.dtype == F16
    assert list(lo) == [-np.inf, -np.inf] and list(hi) == [np.inf, np.inf]
    lo, hi = fpm._bounds(None, 1)
    assert lo[0] == -np.inf and hi[0] == np.inf


def test_conv_dots_take_the_elements_asked_for_in_the_default_order() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, (1, 5, 5, 3)).astype(F16)
    w = rng.uniform(-2, 2, (3, 3, 3, 4)).astype(F16)
    bias = rng.uniform(-2, 2, (1, 4)).astype(F16).astype(np.float64)  # a row, read flat
    desc = _desc(x, w, pad=(1, 1, 1, 1))
    out = np.zeros((1, 5, 5, 4), np.float32)
    pick = np.array([0, 7, 99])
    d = fpm.conv_dots(x.astype(np.float32), w, bias, desc, out=out, elements=pick)
    whole = fpm.conv_dots(x, w, bias.reshape(-1).astype(F16), desc, "hwc", out)
    assert d.size == 3 and whole.size == 100
    for arr in (d.x, d.y, d.bias, d.lo, d.hi, d.observed):
        assert arr is not None and arr.dtype == F16
    np.testing.assert_array_equal(d.x, whole.x[:, pick])
    np.testing.assert_array_equal(d.y, whole.y[:, pick])
    np.testing.assert_array_equal(d.bias, whole.bias[pick])
    with pytest.raises(ValueError, match=r"order: 'cwh' is not one of \('hwc', 'chw'\)"):
        fpm.conv_dots(x, w, None, desc, "cwh")


def test_concat_joins_batches_with_and_without_bias_and_observed() -> None:
    a, b, bias = _operands(2, 4, 3)
    c = np.zeros((2, 3), F16)
    one = fpm.gemm_dots(a, b, bias, None, c)
    two = fpm.gemm_dots(a, b, bias, None, c, np.array([1, 2]))
    assert fpm.concat([one]) is one
    both = fpm.concat([one, two])
    assert both.size == 8 and both.bias is not None and both.bias.size == 8
    assert both.observed is not None and both.observed.size == 8
    np.testing.assert_array_equal(both.x[:, 6:], two.x)
    bare = fpm.concat([fpm.gemm_dots(a, b, None, None), fpm.gemm_dots(a, b, None, None)])
    assert bare.bias is None and bare.observed is None and bare.size == 12
    half = fpm.concat([one, fpm.gemm_dots(a, b, bias, None)])  # one without its output
    assert half.observed is None


def test_the_sample_is_fixed_without_repeats_and_bounded() -> None:
    got = fpm.sample(10_000, 4, 4000, seed=1)
    assert got is not None and got.size == 1000 and np.unique(got).size == 1000
    assert np.all(np.diff(got) > 0)  # sorted
    np.testing.assert_array_equal(got, fpm.sample(10_000, 4, 4000, seed=1))
    assert not np.array_equal(got, fpm.sample(10_000, 4, 4000, seed=2))
    near = fpm.sample(1001, 4, 4000, seed=0)  # all but one: still no repeats
    assert near is not None and np.unique(near).size == 1000
    assert fpm.sample(1000, 4, 4000, seed=0) is None  # exactly the budget: all of them
    assert fpm.sample(100, 4, 4000, seed=0) is None
    assert fpm.sample(10_000, 1, 4000, seed=0).size == 4000  # K = 1: work elements
    assert fpm.sample(10_000, 10**6, 4000, seed=0).size == fpm.MIN_ELEMENTS
    assert fpm.sample(10_000, 4, 4000, seed=0, max_elements=1).size == 1
    assert fpm.sample(10_000, 4, 4000, seed=0, max_elements=0).size == 1


def test_chunks_are_pieces_of_work_over_k() -> None:
    parts = fpm._chunks(10, 1, work=3)
    assert [list(p) for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [list(p) for p in fpm._chunks(3, 5, work=2)] == [[0], [1], [2]]  # K > work
    assert [list(p) for p in fpm._chunks(4, 1, work=4)] == [[0, 1, 2, 3]]
    assert [list(p) for p in fpm._chunks(4, 0, work=2)] == [[0, 1], [2, 3]]


# ---------------------------------------------------------------- simulation


def test_every_model_outputs_fp16_and_specials_raise_no_error() -> None:
    a, b, bias = _operands(4, 40, 5)
    a[0, 3], a[1, 0], b[7, 2], bias[4] = np.inf, np.nan, -np.inf, np.inf
    a[2, :] = 60000  # FP16 chains overflow
    models = fpm.candidates(40, True)
    d = fpm.gemm_dots(a, b, bias, (-3.0, 3.0))
    with np.errstate(all="raise"):
        out = fpm.simulate(d, models)
    assert set(out) == {m.name for m in models}
    for name, r in out.items():
        assert r.dtype == F16 and r.shape == (20,), name
        finite = r[np.isfinite(r)]
        assert finite.min() >= -3 and finite.max() <= 3, name  # clamped last


def test_whole_output_simulation_in_chunks_is_the_one_piece_simulation(monkeypatch) -> None:
    """simulate_gemm and simulate_conv cut the output into pieces of
    about work / K elements; cut into many small pieces, each element is
    what one piece over everything gives."""
    a, b, bias = _operands(5, 20, 7)
    rng = np.random.default_rng(9)
    x = rng.uniform(-2, 2, (1, 4, 4, 4)).astype(F16)
    w = rng.uniform(-2, 2, (3, 3, 4, 6)).astype(F16)
    desc = _desc(x, w, pad=(1, 1, 1, 1))
    want_g = fpm.simulate_gemm(a, b, bias, None, "fp16_blocked[8]")
    want_c = fpm.simulate_conv(x, w, None, desc, "fp16_blocked[16]@chw")
    real = fpm._chunks
    monkeypatch.setattr(fpm, "_chunks", lambda total, k: real(total, k, work=3 * k))
    got_g = fpm.simulate_gemm(a, b, bias, None, "fp16_blocked[8]")
    got_c = fpm.simulate_conv(x, w, None, desc, "fp16_blocked[16]@chw")
    assert got_g.dtype == got_c.dtype == F16
    assert got_g.shape == (5, 7) and got_c.shape == (1, 4, 4, 6)
    np.testing.assert_array_equal(got_g, want_g)
    np.testing.assert_array_equal(got_c, want_c)
    whole = fpm.simulate(fpm.gemm_dots(a, b, bias, None), [m for m in fpm.candidates(20, True)
                                                           if m.name == "fp16_blocked[8]"])
    np.testing.assert_array_equal(got_g.reshape(-1), whole["fp16_blocked[8]"])
    hwc = fpm.simulate_conv(x, w, None, desc, "fp16_fma_chain")  # no suffix: (kh, kw, ci)
    np.testing.assert_array_equal(hwc, fpm.simulate_conv(x, w, None, desc, "fp16_fma_chain@hwc"))


def test_unknown_models_are_refused_with_the_candidates_named() -> None:
    a, b, _ = _operands(2, 6, 2)
    with pytest.raises(ValueError, match=r"model: 'fp16_blocked\[8\]' is not a candidate here "
                                         r"\(fp32_once, fp32_chain, fp16_fma_chain, "
                                         r"fp16_blocked\[4\], fp16_lanes\[4\]\)"):
        fpm.simulate_gemm(a, b, None, None, "fp16_blocked[8]")
    x = np.ones((1, 3, 3, 4), F16)
    w = np.ones((3, 3, 4, 2), F16)
    desc = _desc(x, w)
    # K = 3 x 3 x 4 = 36: blocks of 32 exist
    assert fpm.simulate_conv(x, w, None, desc, "fp16_blocked[32]@hwc").shape == (1, 1, 1, 2)
    with pytest.raises(ValueError, match=r"model: 'fp16_blocked\[64\]' is not a candidate here"
                                         r" \(fp32_once, .*, fp16_lanes\[32\]\)"):
        fpm.simulate_conv(x, w, None, desc, "fp16_blocked[64]@hwc")


# ---------------------------------------------------------------- comparing and scoring


def test_same_takes_nan_only_for_nan_and_zero_for_either_sign() -> None:
    p = np.array([np.nan, np.nan, 0.0, -0.0, 1.0, np.inf], F16)
    q = np.array([np.nan, 1.0, -0.0, 0.0, np.nan, np.inf], F16)
    assert list(fpm.same(p, q)) == [True, False, True, True, False, True]
    with np.errstate(all="raise"):
        fpm.same(p, q)


def test_thresholds_hold_at_their_exact_values() -> None:
    assert fpm.category("fp32_chain", fpm.CONCLUSIVE) == "fp32"
    assert fpm.category("fp32_chain", np.nextafter(fpm.CONCLUSIVE, 0)) == "unexplained"
    assert fpm.category("", 1.0) == "unexplained"
    assert fpm.category(fpm.INDISTINGUISHABLE, 0.0) == fpm.INDISTINGUISHABLE
    # 999 of 1000 elements on which every candidate agrees: agreement exactly 0.999
    a, b, _ = _operands(1000, 1, 1, seed=5)
    c = (a.astype(np.float64) @ b.astype(np.float64)).astype(F16)
    d = fpm.gemm_dots(a, b, None, None, c)
    assert fpm.score({"": d}, fpm.candidates(1, False), 1000).indistinguishable
    obs = d.observed.copy()
    obs[0] = np.nan  # one element no model reproduces
    scored = fpm.score({"": fpm.DotSet(d.x, d.y, None, d.lo, d.hi, obs)},
                       fpm.candidates(1, False), 1000)
    assert scored.match == 0.999 and scored.agreement == 1.0
    assert scored.correctly_rounded == 0.999 and scored.total == 1000


def test_score_needs_an_observed_output_and_takes_an_empty_set_as_agreeing() -> None:
    a, b, _ = _operands(2, 3, 2)
    d = fpm.gemm_dots(a, b, None, None)
    with pytest.raises(ValueError, match="^score: the dot products carry no observed output$"):
        fpm.score({"": d}, fpm.candidates(3, False), 4)
    empty = fpm.DotSet(np.zeros((3, 0), F16), np.zeros((3, 0), F16), None,
                       np.zeros(0, F16), np.zeros(0, F16), np.zeros(0, F16))
    fp = fpm.score({"": empty}, fpm.candidates(3, False), 0)
    assert fp.elements == 0 and fp.agreement == 1.0 and fp.indistinguishable
    assert set(fp.scores.values()) == {1.0} and fp.match == 1.0


def test_gemm_fingerprints_sample_each_problem_with_its_own_seed(monkeypatch) -> None:
    a, b, bias = _operands(40, 8, 30)
    c = (a.astype(np.float64) @ b.astype(np.float64) + bias).astype(F16)
    fp = fpm.gemm(a, b, bias, None, c, max_elements=1)
    assert fp.elements == 1 and fp.total == 1200 and fp.sampled
    seeds = []
    real = fpm.sample

    def spy(total, k, work, seed, max_elements=None):
        seeds.append(seed)
        return real(total, k, work, seed, max_elements)
    monkeypatch.setattr(fpm, "sample", spy)
    batch = fpm.gemm([a, a, a], [b, b, b], bias, None, [c, c, c], work=8 * 300)
    assert seeds == [0, 1, 2] and batch.total == 3600 and batch.elements == 3 * 256
    again = fpm.gemm([a, a, a], [b, b, b], bias, None, [c, c, c], work=8 * 300)
    assert again == batch  # the same sample every time
    with pytest.raises(ValueError):
        fpm.gemm([a, a], [b], bias, None, [c, c])


def test_conv_fingerprints_take_k_from_the_whole_window_and_both_orders() -> None:
    rng = np.random.default_rng(6)

    def case(kh: int, kw: int, cg: int, max_elements=None,
             model: str = "fp16_fma_chain@hwc") -> fpm.Fingerprint:
        x = rng.uniform(-2, 2, (1, 4, 4, cg)).astype(F16)
        w = rng.uniform(-2, 2, (kh, kw, cg, 3)).astype(F16)
        desc = _desc(x, w)
        out = fpm.simulate_conv(x, w, None, desc, model)
        return fpm.conv(x, w, None, desc, out, max_elements=max_elements)
    square = case(3, 3, 4, model="fp16_blocked[4]@hwc")  # K = 36
    assert "fp16_blocked[32]@hwc" in square.scores and "fp16_lanes[32]@chw" in square.scores
    assert square.best == "fp16_blocked[4]@hwc" and square.total == 2 * 2 * 3
    assert any(k.endswith("@chw") for k in case(1, 2, 4).scores)  # two taps: two orders
    assert any(k.endswith("@chw") for k in case(3, 3, 2).scores)  # two channels: two orders
    assert not any(k.endswith("@chw") for k in case(1, 1, 4).scores)  # pointwise: one
    small = case(1, 1, 8, max_elements=5)
    assert small.elements == 5 and small.total == 4 * 4 * 3


def test_labels_name_the_best_model_when_every_model_matches() -> None:
    assert fpm.describe(fpm.INDISTINGUISHABLE, 1.0) == "indistinguishable (every model matches)"
    assert (fpm.describe(fpm.INDISTINGUISHABLE, 1.0, "fp32_once")
            == "indistinguishable (every model matches) (fp32_once, 100%)")
    assert fpm.describe("fp32_chain", 0.5) == "unexplained (best fp32_chain, 50.0%)"
    assert fpm.describe("", 1.0) == "not fingerprinted"
    assert fpm.describe("fp16_lanes[8]", 0.9995) == "FP16 chain (fp16_lanes[8], 99.9%)"
    fp = fpm.Fingerprint(fpm.INDISTINGUISHABLE, 1.0, {}, 1.0, 4, 4, "fp32_chain", 1.0)
    assert fpm.label(fp) == "indistinguishable (every model matches) (fp32_chain, 100%)"


def _crafted(monkeypatch, preds: dict[str, np.ndarray]) -> fpm.Fingerprint:
    """score() on predictions given here (simulate replaced): every figure of
    the fingerprint then comes from fractions of 1000 elements."""
    names = list(preds)
    models = [m for m in fpm.candidates(40, False) if m.name in names]
    assert [m.name for m in models] == names
    monkeypatch.setattr(fpm, "simulate",
                        lambda d, ms: {m.name: preds[m.name] for m in ms})
    obs = np.zeros(1000, F16)
    d = fpm.DotSet(np.zeros((40, 1000), F16), np.zeros((40, 1000), F16), None,
                   np.zeros(1000, F16), np.zeros(1000, F16), obs)
    return fpm.score({"": d}, models, 1000)


def test_agreement_and_a_cross_family_tie_at_their_exact_thresholds(monkeypatch) -> None:
    """All candidates agreeing on exactly 999 of 1000 elements is
    AGREEMENT: indistinguishable. An FP16 model matching every element and
    an FP32 one exactly 999 of them (1 - AGREEMENT behind) is a tie of the
    families: indistinguishable too; 998 of them is not."""
    zero, one_off, two_off = (np.zeros(1000, F16) for _ in range(3))
    one_off[0] = 1
    two_off[:2] = 1
    fp = _crafted(monkeypatch, {"fp32_once": zero, "fp32_chain": one_off})  # one family
    assert fp.agreement == 0.999 and fp.indistinguishable and fp.best == "fp32_once"
    apart1 = _crafted(monkeypatch, {"fp32_once": zero, "fp32_chain": two_off})
    assert apart1.agreement == 0.998 and apart1.model == "fp32_once"
    tie = _crafted(monkeypatch, {"fp32_once": one_off, "fp32_chain": one_off,
                                 "fp16_fma_chain": zero, "fp16_lanes[4]": two_off})
    assert tie.scores["fp32_once"] == 0.999 and tie.agreement == 0.998
    assert tie.indistinguishable and tie.best == "fp16_fma_chain"
    apart = _crafted(monkeypatch, {"fp32_once": two_off, "fp32_chain": two_off,
                                   "fp16_fma_chain": zero})
    assert apart.model == "fp16_fma_chain" and apart.scores["fp32_once"] == 0.998


def test_a_sampled_conv_fingerprint_is_the_same_every_time() -> None:
    rng = np.random.default_rng(8)
    x = rng.uniform(-2, 2, (1, 12, 12, 8)).astype(F16)
    w = rng.uniform(-2, 2, (3, 3, 8, 8)).astype(F16)
    desc = _desc(x, w, pad=(1, 1, 1, 1))
    out = fpm.simulate_conv(x, w, None, desc, "fp32_chain@hwc")
    first = fpm.conv(x, w, None, desc, out, max_elements=40)
    again = fpm.conv(x, w, None, desc, out, max_elements=40)
    assert first.sampled and first.elements == 40 and first == again
