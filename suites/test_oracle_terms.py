"""The float64 oracle's every output, term by term (kbench/judge/oracle.py):
the exact result after the clamp it was given (and the clamp recorded),
the scale s = sum |a b| + |bias| the error bound is proportional to, and
the same sum over finite terms only, against loops written here; the
padding of im2col on each side alone; and no floating-point exception
escaping the oracle on inputs with inf and NaN (it runs under the caller's
error state, which may raise)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbench.judge import oracle

F16 = np.float16


def _gemm_loop(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
               clamp: tuple[float, float] | None) -> tuple[np.ndarray, ...]:
    m, k = a.shape
    n = b.shape[1]
    exact, s, s_fin = np.zeros((m, n)), np.zeros((m, n)), np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            terms = [float(a[i, t]) * float(b[t, j]) for t in range(k)]
            if bias is not None:
                terms.append(float(bias[j]))
            exact[i, j] = math.fsum(terms) if all(map(math.isfinite, terms)) else sum(terms)
            s[i, j] = sum(abs(t) for t in terms)
            s_fin[i, j] = sum(abs(float(a[i, t])) * abs(float(b[t, j])) for t in range(k)
                              if math.isfinite(float(a[i, t])) and math.isfinite(float(b[t, j])))
            if bias is not None and math.isfinite(float(bias[j])):
                s_fin[i, j] += abs(float(bias[j]))
    if clamp is not None:
        exact = np.where(exact < clamp[0], clamp[0], np.where(exact > clamp[1], clamp[1], exact))
    return exact, s, s_fin


def test_gemm_reference_applies_its_clamp_and_records_it() -> None:
    a = np.array([[1, 2], [3, -4]], F16)
    b = np.array([[1, 0], [0, 1]], F16)
    bias = np.array([0.5, -0.5], F16)
    ref = oracle.gemm_reference(a, b, bias, (-1.0, 2.0))
    np.testing.assert_array_equal(ref.exact, [[1.5, 1.5], [2.0, -1.0]])
    np.testing.assert_array_equal(ref.rounded, ref.exact.astype(F16))
    assert ref.rounded.dtype == F16 and ref.clamp == (-1.0, 2.0)
    free = oracle.gemm_reference(a, b, bias, None)
    np.testing.assert_array_equal(free.exact, [[1.5, 1.5], [3.5, -4.5]])
    assert free.clamp is None
    again = oracle.with_clamp(free, (-1.0, 2.0))
    np.testing.assert_array_equal(again.exact, ref.exact)
    assert again.clamp == (-1.0, 2.0) and again.s is free.s


def test_the_scale_adds_the_absolute_bias_and_the_finite_sum_drops_infinite_terms() -> None:
    a = np.array([[1, -2], [np.inf, 2]], F16)
    b = np.array([[3], [5]], F16)
    bias = np.array([-7], F16)
    ref = oracle.gemm_reference(a, b, bias, None)
    assert ref.exact[0, 0] == -14 and ref.s[0, 0] == 20 and ref.s_finite[0, 0] == 20
    assert ref.exact[1, 0] == np.inf and ref.s[1, 0] == np.inf
    assert ref.finite_sum[1, 0] == 10 + 7  # |2 * 5| + |-7|: the infinite term left out
    inf_bias = oracle.gemm_reference(a[:1], b, np.array([-np.inf], F16), None)
    assert inf_bias.exact[0, 0] == -np.inf and inf_bias.s[0, 0] == np.inf
    assert inf_bias.finite_sum[0, 0] == 13
    no_bias = oracle.gemm_reference(a[:1], b, None, None)
    assert no_bias.s[0, 0] == 13 and no_bias.finite_sum[0, 0] == 13


@pytest.mark.parametrize("seed", [0, 1])
def test_gemm_reference_is_the_loop_with_specials_bias_and_clamp(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-4, 4, (5, 7)).astype(F16)
    b = rng.uniform(-4, 4, (7, 6)).astype(F16)
    bias = rng.uniform(-8, 8, 6).astype(F16)
    a[1, 2], b[3, 4], bias[5] = np.inf, -np.inf, np.nan
    with np.errstate(all="raise"):  # the oracle keeps its own quiet inside
        ref = oracle.gemm_reference(a, b, bias, (-3.0, 5.0))
    with np.errstate(invalid="ignore", over="ignore"):
        exact, s, s_fin = _gemm_loop(a, b, bias, (-3.0, 5.0))
    np.testing.assert_array_equal(np.isnan(ref.exact), np.isnan(exact))
    ok = ~np.isnan(exact)
    np.testing.assert_allclose(ref.exact[ok], exact[ok], rtol=1e-12)
    np.testing.assert_array_equal(np.isinf(ref.s), np.isinf(s))
    np.testing.assert_allclose(ref.s[np.isfinite(s)], s[np.isfinite(s)], rtol=1e-12)
    np.testing.assert_allclose(ref.finite_sum, s_fin, rtol=1e-12)
    assert np.isfinite(ref.finite_sum).all()


def _conv_loop(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, stride: tuple,
               pad: tuple, dil: tuple, groups: int, clamp: tuple | None
               ) -> tuple[np.ndarray, ...]:
    n, h, wd, _ = x.shape
    kh, kw, cg, c_out = w.shape
    og = c_out // groups
    oh = (h + pad[0] + pad[1] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pad[2] + pad[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    exact, s, s_fin = (np.zeros((n, oh, ow, c_out)) for _ in range(3))
    for img in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for co in range(c_out):
                    g = co // og
                    terms, fin = [], 0.0
                    for ky in range(kh):
                        for kx in range(kw):
                            iy = oy * stride[0] + ky * dil[0] - pad[0]
                            ix = ox * stride[1] + kx * dil[1] - pad[2]
                            for ci in range(cg):
                                xv = float(x[img, iy, ix, g * cg + ci]) if (
                                    0 <= iy < h and 0 <= ix < wd) else 0.0
                                wv = float(w[ky, kx, ci, co])
                                terms.append(xv * wv)
                                if math.isfinite(xv) and math.isfinite(wv):
                                    fin += abs(xv) * abs(wv)
                    if bias is not None:
                        terms.append(float(bias[co]))
                        fin += abs(float(bias[co])) if math.isfinite(float(bias[co])) else 0.0
                    exact[img, oy, ox, co] = sum(terms)
                    s[img, oy, ox, co] = sum(abs(t) for t in terms)
                    s_fin[img, oy, ox, co] = fin
    if clamp is not None:
        exact = np.where(exact < clamp[0], clamp[0], np.where(exact > clamp[1], clamp[1], exact))
    return exact, s, s_fin


@pytest.mark.parametrize("pad", [(0, 2, 1, 0), (2, 0, 0, 2), (1, 1, 2, 1)])
def test_conv_reference_is_the_loop_with_each_side_padded_alone(pad: tuple) -> None:
    """Padding on one side only (bottom larger than left, right larger than
    top, ...): the padded image of im2col must be as tall and as wide as
    all four sides say."""
    rng = np.random.default_rng(sum(pad))
    x = rng.uniform(-2, 2, (2, 5, 4, 4)).astype(F16)
    w = rng.uniform(-2, 2, (3, 2, 2, 6)).astype(F16)
    bias = rng.uniform(-4, 4, 6).astype(F16)
    args = ((2, 1), pad, (1, 2), 2)
    with np.errstate(all="raise"):
        ref = oracle.conv_reference(x, w, bias, *args, (-2.5, 3.0))
    exact, s, s_fin = _conv_loop(x, w, bias, *args, (-2.5, 3.0))
    assert ref.exact.shape == exact.shape
    np.testing.assert_allclose(ref.exact, exact, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ref.s, s, rtol=1e-12)
    np.testing.assert_allclose(ref.finite_sum, s_fin, rtol=1e-12)
    assert ref.clamp == (-2.5, 3.0)
    np.testing.assert_array_equal(ref.rounded, ref.exact.astype(F16))
    free = oracle.conv_reference(x, w, bias, *args, None)
    assert free.clamp is None and free.exact.max() > 3.0 and free.exact.min() < -2.5


def test_conv_reference_scale_and_finite_sum_with_specials_per_group() -> None:
    x = np.ones((1, 3, 3, 4), F16)
    w = np.ones((1, 1, 2, 4), F16)
    x[0, 1, 1, 0] = np.inf  # group 0's input only
    bias = np.array([-1, -1, np.inf, -1], F16)
    with np.errstate(all="raise"):
        ref = oracle.conv_reference(x, w, bias, (1, 1), (0, 0, 0, 0), (1, 1), 2, None)
    exact, s, s_fin = _conv_loop(x, w, bias, (1, 1), (0, 0, 0, 0), (1, 1), 2, None)
    np.testing.assert_array_equal(ref.exact, exact)
    np.testing.assert_array_equal(ref.s, s)
    np.testing.assert_array_equal(ref.finite_sum, s_fin)
    assert ref.finite_sum[0, 1, 1, 0] == 1 + 1  # the inf term left out, |bias| kept
    assert ref.finite_sum[0, 0, 0, 2] == 2  # an infinite bias left out


@pytest.mark.parametrize("pad", [(0, 3, 0, 0), (0, 0, 3, 0), (0, 0, 0, 3), (3, 0, 0, 0)])
def test_im2col_pads_each_side_by_its_own_amount(pad: tuple) -> None:
    x = np.arange(1, 7, dtype=np.float64).reshape(1, 2, 3, 1)
    oh, ow = 2 + pad[0] + pad[1], 3 + pad[2] + pad[3]
    cols = oracle.im2col(x, 1, 1, (1, 1), pad, (1, 1), 1, oh, ow)
    img = cols.reshape(oh, ow)
    np.testing.assert_array_equal(img[pad[0]:pad[0] + 2, pad[2]:pad[2] + 3], x[0, :, :, 0])
    assert img.sum() == x.sum() and cols.dtype == x.dtype
    assert oracle.im2col(x.astype(np.float32), 1, 1, (1, 1), pad, (1, 1), 1, oh,
                         ow).dtype == np.float32  # the patches keep the input's type


def test_the_oracle_raises_no_floating_point_error_on_specials() -> None:
    """inf - inf, 0 x inf and results beyond FP16's range, under an error
    state that raises: the oracle's own handling keeps every one quiet."""
    a = np.array([[np.inf, 0, 1], [-np.inf, 1, 65504]], F16)
    b = np.array([[0, 1], [np.inf, 1], [65504, 2]], F16)
    bias = np.array([np.inf, -np.inf], F16)
    x = np.full((1, 2, 2, 1), np.inf, F16)
    x[0, 0, 0, 0] = 0
    w = np.array([0, 65504], F16).reshape(1, 1, 1, 2)
    with np.errstate(all="raise"):
        for clamp in (None, (-1.0, 1.0)):
            ref = oracle.gemm_reference(a, b, bias, clamp)
            assert np.isnan(ref.exact).any() or clamp is not None
            conv = oracle.conv_reference(x, w, np.array([-np.inf, 1], F16), (1, 1),
                                         (1, 0, 0, 1), (1, 1), 1, clamp)
            assert conv.exact.shape == (1, 3, 3, 2)
        inf_minus_inf = oracle.conv_reference(np.full((1, 1, 1, 1), np.inf, F16),
                                              np.ones((1, 1, 1, 1), F16),
                                              np.array([-np.inf], F16), (1, 1), (0, 0, 0, 0),
                                              (1, 1), 1, None)
        assert np.isnan(inf_minus_inf.exact).all()
        big = oracle.gemm_reference(np.full((1, 2), 65504, F16), np.full((2, 1), 65504, F16),
                                    None, None)
        assert big.rounded[0, 0] == np.inf  # rounds past FP16's range, quietly
        assert np.isnan(oracle.clamp64(np.array([np.nan]), (0.0, 1.0))[0])
