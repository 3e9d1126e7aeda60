"""The judge's edges that mutmut's generated mutants of kbench/judge/verdict.py
found untested (docs/mutation.md, "Generated mutants"): bounds met exactly,
overflow thresholds at their value, the NaN-rule message a plugin author
reads, the figures of a verdict line, empty outputs and how a batch
combines. Each test builds the oracle's Reference by hand, so the exact
value, the sum |a*b| and the clamp are what the test says."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.judge.oracle import Reference
from kbench.judge.tolerance import FP16_OVERFLOW, AccumModel
from kbench.judge.verdict import Judgement, Verdict, combine, judge

FP32 = AccumModel("fp32")
FP16 = AccumModel("fp16")


def _ref(c, s=None, s_finite=None, clamp=None) -> Reference:
    c = np.asarray(c, dtype=np.float64).reshape(1, -1)
    with np.errstate(over="ignore", invalid="ignore"):
        s = np.abs(c) if s is None else np.asarray(s, dtype=np.float64).reshape(c.shape)
        rounded = c.astype(np.float16)
    fin = None if s_finite is None else np.asarray(s_finite, dtype=np.float64).reshape(c.shape)
    return Reference(exact=c, s=s, rounded=rounded, s_finite=fin, clamp=clamp)


def _out(values) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float64).reshape(1, -1).astype(np.float16)


def _judge(out, ref, model=FP32, k=1, has_bias=False, exact=False, nan_clamp="propagate"):
    return judge(_out(out), ref, model, k, has_bias, exact, nan_clamp)


# -- bounds and thresholds met exactly ------------------------------------------------

def test_an_error_equal_to_the_bound_passes():
    """1 + 2^-11 lies halfway between two FP16 numbers: rounded to even it is 1.0,
    an error of exactly half an ulp, which is the whole bound when s = 0."""
    c = 1.0 + 2.0**-11
    j = _judge([1.0], _ref([c], s=[0.0]))
    assert j.ok and j.violations == 0
    assert j.max_ratio == 1.0


def test_an_exact_value_at_the_overflow_threshold_may_round_to_inf():
    """65520 rounds to +inf (the tie between 65504 and 2^16, to even): the output
    inf is correct although |c| + e equals the threshold only."""
    j = _judge([np.inf], _ref([FP16_OVERFLOW], s=[0.0]))
    assert j.ok, j.detail
    j = _judge([-np.inf], _ref([FP16_OVERFLOW], s=[0.0]))
    assert not j.ok  # the wrong sign is never allowed


def test_the_bias_rounding_counts_toward_overflow():
    """With a bias K' = 2: |c| + gamma(2, 2^-11) s reaches 65520 where with K' = 1
    it would not, so inf is allowed for a biased case only."""
    c = 65470.0
    ref = _ref([c], s=[c])
    assert _judge([np.inf], ref, FP16, k=1, has_bias=True).ok
    assert not _judge([np.inf], ref, FP16, k=1, has_bias=False).ok


def test_the_accumulator_overflows_only_from_its_threshold():
    """An FP16 accumulator whose finite |a*b| sum is 40000 cannot overflow: a NaN
    there is wrong (twice the sum would reach 65520, once does not)."""
    j = _judge([np.nan], _ref([3.0], s=[40000.0]), FP16)
    assert not j.ok and j.violations == 1


def test_a_sum_exactly_at_the_accumulator_threshold_may_overflow():
    u = FP16.unit_roundoff
    s = FP16_OVERFLOW / (1.0 + u)
    while s * (1.0 + u) < FP16_OVERFLOW:
        s = np.nextafter(s, np.inf)
    while s * (1.0 + u) > FP16_OVERFLOW:
        s = np.nextafter(s, -np.inf)
    if s * (1.0 + u) != FP16_OVERFLOW:
        pytest.skip("no float64 sum meets the threshold exactly")
    j = _judge([np.nan], _ref([3.0], s=[s]), FP16)
    assert j.ok, j.detail


def test_a_nan_exact_value_may_be_inf_where_the_accumulator_may_overflow():
    """An inf input meeting an overflowing partial sum: exact NaN, output inf."""
    ref = _ref([np.nan], s=[np.inf], s_finite=[1e39])
    assert _judge([np.inf], ref).ok
    assert not _judge([np.inf], _ref([np.nan], s=[np.inf], s_finite=[10.0])).ok


# -- the NaN-to-bound rule of a clamp ------------------------------------------------------

CLAMP = (-1000.0, 1000.0)


def test_an_overflowing_accumulator_may_give_the_nan_bound():
    """FCLAMP turns the NaN of an overflowed FP16 accumulator into clamp_min."""
    ref = _ref([900.0], s=[70000.0], clamp=CLAMP)
    assert _judge([-1000.0], ref, FP16, nan_clamp="to_min").ok
    assert not _judge([-1000.0], ref, FP16, nan_clamp="propagate").ok


def test_the_nan_bound_is_no_free_pass():
    # without an overflowing accumulator the bound is wrong for a finite exact value
    ref = _ref([5.0], s=[5.0], clamp=CLAMP)
    assert not _judge([-1000.0], ref, FP16, nan_clamp="to_min").ok
    # with one, a finite output still has to be within the (large) bound
    ref = _ref([900.0], s=[70000.0], clamp=CLAMP)
    assert not _judge([100.0], ref, FP16, nan_clamp="to_min").ok


def _nan_case(declared, got):
    ref = _ref([np.nan, np.nan, 1.0, 2.0], s=[np.inf, np.inf, 1.0, 2.0],
               s_finite=[1.0, 1.0, 1.0, 2.0], clamp=CLAMP)
    return _judge(got, ref, nan_clamp=declared)


def test_the_message_when_nan_propagates_but_the_rule_is_to_min():
    j = _nan_case("to_min", [np.nan, np.nan, 1.0, 2.0])
    assert not j.ok and j.violations == 2
    assert j.detail == (
        "2 element(s) whose exact value is NaN are NaN: the realization declares that its "
        "clamp turns NaN into clamp_min, but it follows the rule that NaN propagates "
        "(declare nan_clamp = KB_PLUGIN_NAN_PROPAGATE)")


def test_the_message_when_the_bound_is_clamp_min_but_nan_should_propagate():
    j = _nan_case("propagate", [-1000.0, -1000.0, 1.0, 2.0])
    assert j.detail == (
        "2 element(s) whose exact value is NaN hold -1000 (clamp_min): the realization "
        "declares that NaN propagates, but it follows the rule that its clamp turns NaN "
        "into clamp_min, as FCLAMP does (declare nan_clamp = KB_PLUGIN_NAN_TO_MIN)")


def test_the_message_when_the_bound_is_clamp_max():
    j = _nan_case("to_min", [1000.0, 1000.0, 1.0, 2.0])
    assert j.detail == (
        "2 element(s) whose exact value is NaN hold 1000 (clamp_max): the realization "
        "declares that its clamp turns NaN into clamp_min, but it follows the rule that its "
        "clamp turns NaN into clamp_max (declare nan_clamp = KB_PLUGIN_NAN_TO_MAX)")


def test_the_message_names_only_the_failing_nan_elements():
    """One NaN element follows the declared rule, one the other: the message is about
    the failing one alone."""
    j = _nan_case("propagate", [np.nan, -1000.0, 1.0, 2.0])
    assert j.violations == 1
    assert j.detail.startswith("1 element(s) whose exact value is NaN hold -1000 (clamp_min)")


def test_no_rule_message_for_values_no_rule_gives():
    j = _nan_case("propagate", [7.0, 7.0, 1.0, 2.0])
    assert j.detail.startswith("2 element(s) outside the bound; first at (0, 0)")
    j = _nan_case("to_max", [-1000.0, 7.0, 1.0, 2.0])
    assert "outside the bound" in j.detail and "rule" not in j.detail


def test_exact_by_design_keeps_the_nan_rule():
    """Bit-equal to the rounded reference is not enough: NaN where the declared rule
    wants clamp_min fails an exact-by-design case too."""
    j = _nan_case("to_min", [np.nan, np.nan, 1.0, 2.0])
    ref = _ref([np.nan, np.nan, 1.0, 2.0], s=[np.inf, np.inf, 1.0, 2.0],
               s_finite=[1.0, 1.0, 1.0, 2.0], clamp=CLAMP)
    jx = _judge([np.nan, np.nan, 1.0, 2.0], ref, exact=True, nan_clamp="to_min")
    assert not j.ok and not jx.ok and jx.violations == 2


def test_exact_by_design_fails_the_mismatches_only():
    ref = _ref([1.0, 2.0, 3.0, 4.0])
    j = _judge([1.0, 2.0, 3.0, 4.00390625], ref, exact=True)
    assert j.violations == 1 and j.exact == 3
    assert j.detail == "exact-by-design mismatch in 1 element(s)"


# -- figures: the first violation, ratio, ulp, relative error, exact count -------------

def test_the_first_violation_is_named_where_it_is():
    c = np.arange(1.0, 7.0)
    ref = Reference(exact=c.reshape(2, 3), s=np.abs(c).reshape(2, 3),
                    rounded=c.reshape(2, 3).astype(np.float16))
    out = c.copy()
    out[5] = 60.0
    j = judge(out.reshape(2, 3).astype(np.float16), ref, FP32, 1, False, False)
    assert j.violations == 1
    # plain numbers, not numpy reprs such as np.float64(60.0)
    assert j.detail == ("1 element(s) outside the bound; first at (1, 2): got 60.0, exact 6.0, "
                        "bound 0.00195")


def test_figures_are_taken_over_finite_elements_only():
    """An infinity in the output or the exact value adds nothing to err/bound, ulp or
    the relative error; the finite elements are exact here, so all three are 0."""
    ref = _ref([1.0, 2.0, np.inf, 70000.0], s=[1.0, 2.0, np.inf, 70000.0])
    j = _judge([1.0, 2.0, np.inf, np.inf], ref)
    assert j.ok, j.detail
    assert (j.max_ratio, j.max_ulp, j.rms_rel) == (0.0, 0.0, 0.0)
    assert j.inf_exact == 1  # the inf input's inf; 70000 rounding to inf is not an inf input
    # a finite exact value with an infinite output: the failure shows in the count, not
    # as an infinite ratio, ulp or relative error
    j = _judge([1.0, np.inf], _ref([1.0, 3.0]))
    assert j.violations == 1
    assert (j.max_ratio, j.max_ulp, j.rms_rel) == (0.0, 0.0, 0.0)
    # a rounded reference of inf against a finite output
    j = _judge([1.0, 65504.0], _ref([1.0, 70000.0]))
    assert j.max_ulp == 0.0 and j.rms_rel == 0.0


def test_the_relative_error_floor_is_the_smallest_normal():
    """|c| below 2^-14 is divided by 2^-14: 2^-20 computed as 0 errs by 2^-6."""
    j = _judge([0.0], _ref([2.0**-20], s=[1.0]))
    assert j.rms_rel == pytest.approx(2.0**-6, rel=1e-12)


def test_an_output_nan_where_the_exact_value_is_finite_is_not_exact():
    j = _judge([1.0, np.nan], _ref([1.0, 2.0]))
    assert j.exact == 1 and j.violations == 1


def test_a_clean_judgement_has_an_empty_detail():
    j = _judge([1.0, 2.0, 3.0], _ref([1.0, 2.0, 3.0]))
    assert j.ok and j.detail == "" and j.exact == 3


def test_an_empty_output_is_judged_without_figures():
    ref = Reference(exact=np.zeros((0, 3)), s=np.zeros((0, 3)),
                    rounded=np.zeros((0, 3), dtype=np.float16))
    j = judge(np.zeros((0, 3), dtype=np.float16), ref, FP32, 1, False, False)
    assert (j.ok, j.total, j.max_ratio, j.max_ulp, j.rms_rel) == (True, 0, 0.0, 0.0, 0.0)
    assert not j.mistrusted


# -- mistrust ---------------------------------------------------------------------------

def test_an_all_nan_reference_is_mistrusted():
    nan = [np.nan] * 4
    j = _judge(nan, _ref(nan, s=[np.inf] * 4))
    assert j.mistrusted and j.detail == "reference is all equal"


def test_zero_share_mistrust_at_its_edges():
    two = _judge([0.0, 0.0], _ref([0.0, 0.0], s=[1.0, 1.0]))
    assert two.mistrusted and two.detail == "100% of the reference is 0"
    half = _judge([0.0, 0.0, 1.0, 2.0], _ref([0.0, 0.0, 1.0, 2.0], s=[1.0, 1.0, 1.0, 2.0]))
    assert not half.mistrusted and half.detail == ""


def test_a_model_with_no_bound_is_mistrusted_and_named():
    """FP16 accumulation over K = 2047 plus a bias: K' = 2048, gamma(2048, 2^-11) is
    infinite. Without the bias (K' = 2047) there is a bound."""
    c = [1.0, 2.0, 0.0, 0.0]
    ref = _ref(c, s=[1.0, 2.0, 1.0, 1.0])
    j = _judge(c, ref, FP16, k=2047, has_bias=True)
    assert j.mistrusted
    assert j.detail == "the declared fp16 model gives no bound at K' = 2048"
    assert not _judge(c, ref, FP16, k=2047, has_bias=False).mistrusted


# -- a verdict's row and line -------------------------------------------------------------

def _verdict(**kw) -> Verdict:
    base = dict(case="m2_n2_k2", op="gemm", shape="2x2x2", kind="normal", target="host",
                backend="scalar", realization="gemm_scalar_f32acc", kernel="k", accum="fp32",
                k=2, m=2, n=2, b_form="plain", vector_bits=0, status="pass")
    base.update(kw)
    return Verdict(**base)


def test_a_verdict_row_carries_its_exact_fraction_and_tags():
    d = _verdict(exact=3, total=4, tags=["tail", "edge"]).to_dict()
    assert d["exact_fraction"] == 0.75
    assert d["tags"] == "tail edge"
    assert "exact_fraction" in d and "tags" in d


def test_err_bound_text():
    assert _verdict(max_err_bound=0.123456, total=4).err_bound_text() == "0.123"
    assert _verdict(max_err_bound=0.5, inf_exact=2, total=4).err_bound_text() == \
        "0.5 (+2 inf-exact)"
    assert _verdict(max_err_bound=0.0, inf_exact=4, total=4).err_bound_text() == "inf-exact"
    assert _verdict(max_err_bound=0.0, inf_exact=0, total=0).err_bound_text() == "0"


def test_a_verdict_line_shows_only_what_the_verdict_has():
    plain = _verdict(exact=4, total=4).line()
    assert plain.startswith("PASS ")
    assert plain.endswith("exact=100.0%")
    assert "accum=" not in plain and "[plugin" not in plain
    full = _verdict(exact=4, total=4, accum_model="fp32_chain", accum_match=1.0,
                    plugin="exsme 1.0", message="note").line()
    assert full.endswith("exact=100.0% accum=fp32_chain:100.0% [plugin exsme 1.0]  note")


# -- a batch ------------------------------------------------------------------------------

def _j(**kw) -> Judgement:
    base = dict(ok=True, total=4, exact=4, violations=0, max_ratio=0.0, max_ulp=0.0,
                rms_rel=0.0, mistrusted=False, detail="")
    base.update(kw)
    return Judgement(**base)


def test_a_batch_joins_details_and_counts_exact_infinities():
    b = combine([_j(detail="a", inf_exact=1), _j(), _j(detail="b", inf_exact=2)])
    assert b.detail == "problem 0: a; problem 2: b"
    assert b.inf_exact == 3 and b.total == 12


def test_an_empty_batch_has_no_relative_error():
    b = combine([_j(total=0, exact=0)])
    assert b.total == 0 and b.rms_rel == 0.0


# -- inputs the judge refuses or must survive ------------------------------------------------

def test_an_unknown_nan_rule_is_refused():
    """A rule the judge does not know would silently act as another one (to_max)."""
    with pytest.raises(ValueError, match="unknown NaN rule 'to_zero'.*propagate, to_min, to_max"):
        _judge([1.0], _ref([1.0]), nan_clamp="to_zero")


def test_the_judge_raises_no_floating_point_error_on_special_values():
    """A caller running with numpy errors raised (np.errstate(all="raise"), or
    warnings as errors) still gets a verdict: infinities, NaN and overflowing
    sums in the reference, the output and the bound are the judge's daily input."""
    import warnings
    c = [np.inf, -np.inf, np.nan, 70000.0, 0.0, 1.0]
    ref = _ref(c, s=[np.inf, np.inf, np.inf, 70000.0, 0.0, 1.0],
               s_finite=[1.0, 1.0, 1.0, 70000.0, 0.0, 1.0])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        j = _judge([np.inf, np.nan, np.nan, np.inf, 0.0, np.nan], ref, FP16, k=4)
    assert not j.ok and j.violations == 2  # NaN for -inf, NaN for 1.0
    # clamp bounds beyond FP16's range round to infinities: no bound caps a side,
    # and the to_max rule's bound for NaN is +inf
    wide = _ref([np.nan, 1.0], s=[np.inf, 1.0], s_finite=[1.0, 1.0], clamp=(-1e6, 1e6))
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        j = _judge([np.inf, 1.0], wide, nan_clamp="to_max")
    assert j.ok, j.detail


def test_an_empty_output_under_a_model_with_no_bound_names_the_model():
    """Nothing to count: the zero share is 0, not 100% (nor a mean over nothing)."""
    import warnings
    ref = Reference(exact=np.zeros((0, 3)), s=np.zeros((0, 3)),
                    rounded=np.zeros((0, 3), dtype=np.float16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        j = judge(np.zeros((0, 3), dtype=np.float16), ref, FP16, 2048, False, False)
    assert j.mistrusted and j.detail == "the declared fp16 model gives no bound at K' = 2048"


def test_exact_by_design_mismatches_add_to_the_other_failures():
    """A NaN where the declared rule wants clamp_max is wrong even though it equals
    the rounded reference; a mismatch elsewhere adds one failure, it does not
    replace the other two."""
    ref = _ref([np.nan, np.nan, 1.0, 2.0], s=[np.inf, np.inf, 1.0, 2.0],
               s_finite=[1.0, 1.0, 1.0, 2.0], clamp=CLAMP)
    j = _judge([np.nan, np.nan, 1.0, 2.001953125], ref, exact=True, nan_clamp="to_max")
    assert j.violations == 3 and j.exact == 3
