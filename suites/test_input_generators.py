"""The input generators: every class of special value the specials kind
promises is there (asserted class by class, GEMM and convolution), the
exact kind's products and partial sums stay exact, clamps cut both tails,
and row padding is NaN, so a kernel that reads past K (or N) is caught by
the judge rather than silently multiplying zeros."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.judge.oracle import gemm_reference
from kbench.judge.tolerance import AccumModel
from kbench.judge.verdict import judge
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase


def _classes(x: np.ndarray) -> set[str]:
    v = x.astype(np.float64).ravel()
    out = set()
    sub = (v != 0) & (np.abs(v) < 2.0**-14) & np.isfinite(v)
    for name, mask in (("nan", np.isnan(v)), ("+inf", v == np.inf), ("-inf", v == -np.inf),
                       ("+0", (v == 0) & ~np.signbit(v)), ("-0", (v == 0) & np.signbit(v)),
                       ("+subnormal", sub & (v > 0)), ("-subnormal", sub & (v < 0)),
                       ("huge", np.isfinite(v) & (np.abs(v) >= 60000.0))):
        if mask.any():
            out.add(name)
    return out


@pytest.mark.parametrize("seed_case", ["gen_m8n8k8", "gen_other", "gen_third"])
def test_gemm_specials_hold_every_class(seed_case: str) -> None:
    # 16x16x16: about 25 sprinkled values per operand, so each of the six
    # zero and subnormal values occurs (the draw is seeded: the same every run)
    case = GemmCase(seed_case, 16, 16, 16)
    inp = inputs.gemm_inputs(case, "specials")
    a, b = inp.a[0], inp.b[0]
    found = _classes(a) | _classes(b)
    want = {"nan", "+inf", "-inf", "+0", "-0", "+subnormal", "-subnormal", "huge"}
    assert want <= found, want - found
    assert "nan" in _classes(a)  # the NaN row is in A, the infinities in B
    assert {"+inf", "-inf"} <= _classes(b)
    exact = inp.refs[0].exact
    assert np.isnan(exact).any()
    assert (exact == np.inf).any() and (exact == -np.inf).any()
    # one row/column pair whose finite products overflow FP16 on the way
    assert (inp.refs[0].finite_sum >= 65520.0).any()


def test_conv_specials_hold_nan_inf_and_huge_filter_columns_and_odd_channel_inputs() -> None:
    case = ConvCase("gen_conv", 1, 4, 4, 3, 4, 3, 3, pad=(1, 1, 1, 1))
    inp = inputs.conv_inputs(case, "specials")
    w = _classes(inp.w)
    assert {"nan", "+inf", "huge"} <= w, w
    x = _classes(inp.x)
    assert {"nan", "+inf", "huge"} <= x, x  # c_in = 3 is odd: inf and NaN in pixels' channel 0
    pixels = inp.x.reshape(-1, 3)
    assert np.isinf(pixels[1:, 0].astype(np.float64)).sum() == 1
    assert np.isnan(pixels[1:, 0].astype(np.float64)).sum() == 1
    assert np.isnan(inp.ref.exact).any() and np.isinf(inp.ref.exact).any()
    even = inputs.conv_inputs(ConvCase("gen_conv_even", 1, 4, 4, 4, 4, 3, 3,
                                       pad=(1, 1, 1, 1)), "specials")
    assert "+inf" not in _classes(even.x)  # even c_in: the pixels carry no inf


@pytest.mark.parametrize("k", [1, 7, 64, 300, 2048, 5000])
def test_exact_inputs_keep_every_partial_sum_an_exact_small_integer(k: int) -> None:
    case = GemmCase(f"gen_exact_k{k}", 4, 4, k)
    inp = inputs.gemm_inputs(case, "exact")
    a, b, bias = (x.astype(np.float64) for x in (inp.a[0], inp.b[0], inp.bias[0]))
    assert np.all(a == np.round(a)) and np.all(b == np.round(b))
    # the largest partial sum any order can reach: the sum of |a*b| plus |bias|
    worst = np.abs(a) @ np.abs(b) + np.abs(bias)[None, :]
    assert worst.max() <= inputs.EXACT_LIMIT
    ra, rb, rbias, live = inputs._exact_ranges(k, True)
    assert (ra * rb * live + rbias) <= inputs.EXACT_LIMIT
    assert ((ra + 1) * (rb + 1) * live + rbias > inputs.EXACT_LIMIT) or ra == 8


def test_clamp_bounds_cut_both_tails() -> None:
    case = GemmCase("gen_clamped", 16, 16, 16, clamp=True)
    inp = inputs.gemm_inputs(case, "uniform")
    lo, hi = inp.clamp
    unclamped = gemm_reference(inp.a[0], inp.b[0], inp.bias[0], None).exact
    below, above = (unclamped < lo).mean(), (unclamped > hi).mean()
    assert 0.08 < below < 0.22 and 0.08 < above < 0.22, (below, above)
    assert inp.refs[0].exact.min() == lo and inp.refs[0].exact.max() == hi


def test_row_padding_is_nan_so_a_read_past_k_is_caught() -> None:
    case = GemmCase("gen_padded", 4, 4, 3, bias=False, lda_pad=5, ldb_pad=3)
    inp = inputs.gemm_inputs(case, "uniform")
    a, b = inp.a[0], inp.b[0]
    assert a.shape == (4, 3) and a.base is not None and a.base.shape == (4, 8)
    assert np.isnan(a.base[:, 3:].astype(np.float64)).all()
    assert np.isnan(b.base[:, 4:].astype(np.float64)).all()
    # a kernel that reads one element past K of each row of A (times a zero
    # row of B) turns every output into NaN, and the judge says so
    past = a.base[:, :4].astype(np.float64) @ np.vstack([b.astype(np.float64), np.zeros((1, 4))])
    j = judge(past.astype(np.float16), inp.refs[0], AccumModel("fp32"), 3, False, False)
    assert not j.ok and j.violations == 16
