"""The judge's rules at their exact edges, each on a small hand-made case
whose answer is known: where rounding may overflow (65520, not 65504) and
with which sign, infinite exact values and the finite-term sum, what a clamp
allows on each side, the NaN rules, the error model's pieces (ulp16, gamma,
K', eta) and when a case is mistrusted. A worst-case FP16 chain checks that
the declared bound is tight: the observed error must reach a documented
fraction of it, so a bound twice as loose fails.

The references come from the oracle (float64 of the FP16 inputs); outputs
are chosen by hand or by a simulated accumulator. Nothing is timed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbench.judge.oracle import gemm_reference, with_clamp
from kbench.judge.tolerance import AccumModel, gamma, ulp16
from kbench.judge.verdict import judge

FP32, FP16 = AccumModel("fp32"), AccumModel("fp16")
# The worst-case FP16 chain below errs by at least this fraction of its bound
# (about 0.91 for the declared bound; a bound twice as loose gives 0.46).
TIGHTNESS_FLOOR = 0.75


def h(*rows: list[float]) -> np.ndarray:
    return np.array(rows, dtype=np.float16)


def ok(out: list[float] | np.ndarray, ref, model: AccumModel = FP32, k: int = 2,
       nan_clamp: str = "propagate") -> bool:
    arr = np.asarray(out, dtype=np.float16).reshape(ref.exact.shape)
    return judge(arr, ref, model, k, False, False, nan_clamp).ok


def sum_of(*terms: float):
    """A 1x1 GEMM whose exact result is the sum of the (FP16) terms."""
    a = h(list(terms))
    return gemm_reference(a, np.ones((len(terms), 1), np.float16), None, None)


# ------------------------------------------------------------ overflow edges

def test_inf_is_allowed_from_the_rounding_threshold_65520_not_from_65504() -> None:
    at = sum_of(65504.0, 16.0)  # exactly 65520: rounds (to even) to inf
    below = sum_of(65504.0, 8.0)  # 65512: rounds to 65504
    top = sum_of(65504.0, 0.0)  # 65504 itself
    assert ok([np.inf], at) and ok([65504.0], at)
    assert not ok([np.inf], below) and ok([65504.0], below)
    assert not ok([np.inf], top) and ok([65504.0], top)


def test_an_infinity_of_the_wrong_sign_is_never_allowed() -> None:
    pos = sum_of(65504.0, 16.0)
    neg = sum_of(-65504.0, -16.0)
    assert ok([np.inf], pos) and not ok([-np.inf], pos)
    assert ok([-np.inf], neg) and not ok([np.inf], neg)


def test_an_infinite_exact_value_needs_that_infinity_not_nan() -> None:
    """The finite-term sum leaves out the infinite term: nothing finite can
    overflow here, so NaN (or the other infinity) is wrong where +-inf is exact."""
    for sign in (1.0, -1.0):
        ref = gemm_reference(h([1.0, 1.0]), h([sign * np.inf], [1.0]), None, None)
        assert ref.exact[0, 0] == sign * np.inf
        assert ref.finite_sum[0, 0] == 1.0
        assert ok([sign * np.inf], ref, FP16)
        assert not ok([np.nan], ref, FP16) and not ok([np.nan], ref, FP32)
        assert not ok([-sign * np.inf], ref, FP16)


def test_nan_is_allowed_only_where_the_finite_terms_may_overflow_the_accumulator() -> None:
    # 256*128 twice: 65536 overflows an FP16 accumulator (any non-finite value
    # allowed), never an FP32 one (only the correctly signed inf, by rounding)
    ref = gemm_reference(h([256.0, 256.0]), h([128.0], [128.0]), None, None)
    assert ok([np.nan], ref, FP16) and ok([-np.inf], ref, FP16)
    assert not ok([np.nan], ref, FP32) and not ok([-np.inf], ref, FP32)
    assert ok([np.inf], ref, FP32)


# ------------------------------------------------------------------- clamps

def test_a_capped_side_forbids_its_infinity_even_where_the_accumulator_overflows() -> None:
    big = gemm_reference(h([256.0, 256.0]), h([128.0], [128.0]), None, None)
    both = with_clamp(big, (-1.0, 1.0))
    assert ok([1.0], both, FP16) and not ok([np.inf], both, FP16)
    hi_only = with_clamp(big, (-np.inf, 1.0))  # capped above, open below
    assert not ok([np.inf], hi_only, FP16) and ok([-np.inf], hi_only, FP16)
    neg = gemm_reference(h([-256.0, -256.0]), h([128.0], [128.0]), None, None)
    lo_only = with_clamp(neg, (-1.0, np.inf))  # capped below, open above
    assert not ok([-np.inf], lo_only, FP16) and ok([np.inf], lo_only, FP16)
    assert ok([-1.0], lo_only, FP16)


def test_an_infinite_input_clamped_to_a_bound_must_give_that_bound() -> None:
    ref = with_clamp(gemm_reference(h([1.0]), h([np.inf]), None, None), (-1.0, 1.0))
    assert ref.exact[0, 0] == 1.0 and np.isinf(ref.s[0, 0])
    assert ok([1.0], ref, k=1)
    assert not ok([0.5], ref, k=1) and not ok([0.0], ref, k=1)


def test_a_clamp_that_turns_nan_into_a_bound_must_give_the_declared_bound() -> None:
    ref = with_clamp(gemm_reference(h([np.nan]), h([1.0]), None, None), (-2.0, 3.0))
    assert np.isnan(ref.exact[0, 0])
    assert ok([-2.0], ref, k=1, nan_clamp="to_min") and not ok([3.0], ref, k=1,
                                                                 nan_clamp="to_min")
    assert ok([3.0], ref, k=1, nan_clamp="to_max") and not ok([-2.0], ref, k=1,
                                                                nan_clamp="to_max")
    assert ok([np.nan], ref, k=1) and not ok([-2.0], ref, k=1)
    assert not ok([np.nan], ref, k=1, nan_clamp="to_min")


# ------------------------------------------------------- the model's pieces

def test_ulp16_at_binade_edges_subnormals_and_beyond_the_range() -> None:
    assert ulp16(np.array(1.0)) == 2.0**-10
    assert ulp16(np.array(2.0**-14)) == 2.0**-24  # smallest normal
    assert ulp16(np.array(2.0**-20)) == 2.0**-24  # subnormal: the fixed spacing
    assert ulp16(np.array(65504.0)) == 32.0
    assert ulp16(np.array(1e6)) == 32.0  # beyond the range: the top binade's
    assert ulp16(np.array(np.inf)) == 32.0


def test_gamma_is_nu_over_one_minus_nu_and_infinite_from_nu_one() -> None:
    nu = 1000 * 2.0**-11
    assert gamma(1000, 2.0**-11) == pytest.approx(nu / (1 - nu), rel=1e-15)
    assert gamma(2048, 2.0**-11) == math.inf
    assert gamma(4096, 2.0**-11) == math.inf


def test_roundings_on_the_chain() -> None:
    assert AccumModel("fp32").roundings(5, False) == 5
    assert AccumModel("fp32").roundings(5, True) == 6
    assert AccumModel("fp32", 2).roundings(5, False) == 3  # ceil(5 / 2)
    assert AccumModel("fp32", 2).roundings(4, True) == 3
    assert AccumModel("fp32", 2, bias_rounding=False).roundings(5, True) == 3
    assert AccumModel("fp16", 1, extra_roundings=4).roundings(9, True) == 14
    assert AccumModel("fp16", 0).roundings(3, False) == 3


def test_underflow_term_is_half_the_smallest_subnormal_spacing() -> None:
    smallest16 = float(np.nextafter(np.float16(0), np.float16(1)))
    smallest32 = float(np.nextafter(np.float32(0), np.float32(1)))
    assert FP16.underflow_error == smallest16 / 2
    assert FP32.underflow_error == smallest32 / 2
    assert FP16.unit_roundoff == 2.0**-11 and FP32.unit_roundoff == 2.0**-24


def _fp16_chain(terms: np.ndarray) -> np.float16:
    acc = np.float16(0)
    for t in terms:
        acc = np.float16(acc + t)
    return acc


def test_the_fp16_bound_is_tight_on_a_worst_case_chain() -> None:
    """1024 followed by 63 terms just under half an ulp of 1024: an FP16
    chain rounds each one away and stays at 1024, the most a sequential
    chain of this length can lose at this magnitude."""
    k = 64
    terms = np.array([1024.0] + [0.5 - 2.0**-11] * (k - 1), np.float16)
    ref = gemm_reference(terms[None, :], np.ones((k, 1), np.float16), None, None)
    out = np.array([[_fp16_chain(terms)]], np.float16)
    j = judge(out, ref, FP16, k, False, False)
    assert j.ok, j.detail
    assert TIGHTNESS_FLOOR < j.max_ratio <= 1.0, j.max_ratio


# --------------------------------------------------------------- mistrust

def test_mistrusted_when_most_is_zero_all_equal_or_unbounded() -> None:
    a = np.zeros((4, 2), np.float16)
    a[0] = 1.0
    mostly_zero = gemm_reference(a, h([1.0, 2.0], [3.0, 4.0]), None, None)
    j = judge(mostly_zero.rounded, mostly_zero, FP32, 2, False, False)
    assert j.ok and j.mistrusted
    equal = gemm_reference(np.ones((2, 2), np.float16), np.ones((2, 2), np.float16), None, None)
    j = judge(equal.rounded, equal, FP32, 2, False, False)
    assert j.ok and j.mistrusted and "all equal" in j.detail
    rng = np.random.default_rng(0)
    wide = gemm_reference(rng.uniform(-1, 1, (2, 2048)).astype(np.float16),
                          rng.uniform(-1, 1, (2048, 2)).astype(np.float16), None, None)
    assert judge(wide.rounded, wide, FP16, 2048, False, False).mistrusted
    assert not judge(wide.rounded, wide, FP32, 2048, False, False).mistrusted
    assert not judge(wide.rounded, wide, FP16, 2048, False, True).mistrusted


def test_exact_counts_matching_nans_and_reports_exact_infinities() -> None:
    ref = gemm_reference(h([1.0], [np.nan], [2.0]), h([np.inf, 1.0]), None, None)
    out = ref.rounded.copy()
    j = judge(out, ref, FP32, 1, False, False)
    assert j.ok and j.exact == j.total == 6
    assert j.inf_exact == 2  # 1*inf and 2*inf


# ------------------------------------------- found by the generated campaign

def test_a_clamp_keeps_the_finite_term_sum_so_nan_stays_wrong_at_a_clamped_inf() -> None:
    ref = with_clamp(gemm_reference(h([1.0, 1.0]), h([np.inf], [1.0]), None, None), (-1.0, 1.0))
    assert ref.finite_sum[0, 0] == 1.0  # the infinite term is not in it
    assert ok([1.0], ref, FP16) and not ok([np.nan], ref, FP16)
    assert not ok([np.inf], ref, FP16)


def test_without_a_clamp_a_nan_to_min_rule_means_minus_infinity() -> None:
    ref = gemm_reference(h([np.nan]), h([1.0]), None, None)
    assert ok([-np.inf], ref, k=1, nan_clamp="to_min")
    assert not ok([np.inf], ref, k=1, nan_clamp="to_min")
    assert ok([np.inf], ref, k=1, nan_clamp="to_max")
    assert not ok([-np.inf], ref, k=1, nan_clamp="to_max")


def test_ulp_and_relative_error_figures() -> None:
    ref = sum_of(1.0, 0.5)  # exactly 1.5, an FP16 value (ulp 2^-10)
    out = np.array([[1.5 + 2 * 2.0**-10]], np.float16)
    j = judge(out, ref, FP32, 2, False, False)
    assert j.max_ulp == 2.0
    assert j.rms_rel == pytest.approx(2 * 2.0**-10 / 1.5)
    low = judge(np.array([[1.5 - 2.0**-10]], np.float16), ref, FP32, 2, False, False)
    assert low.max_ulp == 1.0 and low.rms_rel == pytest.approx(2.0**-10 / 1.5)


def test_a_model_for_finite_inputs_only_promises_just_a_non_finite_output_there() -> None:
    """Winograd's transforms mix an infinite input into every output of its
    tile: where an input is not finite, any non-finite output is accepted,
    and a finite one is not."""
    model = AccumModel("fp32", finite_inputs_only=True)
    ref = gemm_reference(h([1.0, 1.0]), h([np.inf], [1.0]), None, None)  # exact +inf
    assert ok([np.nan], ref, model) and ok([-np.inf], ref, model)
    assert not ok([np.nan], ref, FP32)
    assert not ok([1.0], ref, model)
