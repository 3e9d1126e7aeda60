"""How compare_runs turns p-values and ratios into verdicts, each step on
hand-made cases at its exact edges: the Holm step (_adjusted) for cases and
realizations (p equal to alpha, a ratio of exactly 1, the pass ratio
disagreeing with the ratio of medians, the adjusted p-values kept), the
--history widening (_within_noise: a move exactly at a case's own spread,
faster moves measured as 1/ratio, the note word for word), and machine
drift (run_shift and _drift: too few cases, a median of exactly 1, moves
exactly at the limit either way, exactly the drift share, cases without a
ratio left out)."""

from __future__ import annotations

import math

import pytest

from kbench.results.compare import (
    DRIFT_MIN_CASES,
    DRIFT_SHARE,
    FASTER,
    INCONCLUSIVE,
    NOT_SIGNIFICANT,
    SAME,
    SLOWER,
    CaseComparison,
    RealizationComparison,
    _adjusted,
    _drift,
    _within_noise,
    run_shift,
)

NAN = math.nan
LIMIT = 0.05


def case(i: int, ratio: float, p_slower: float = 1.0, p_faster: float = 1.0,
         pass_ratio: float = NAN, verdict: str = SAME, limit: float = LIMIT) -> CaseComparison:
    key = ("perf", "host", "gemm", "cat", f"c{i}", "uniform", "gemm_x", 1)
    return CaseComparison(key, "pass", "pass", 1.0, ratio, 3, 3, ratio, p_slower, p_faster,
                          verdict, timed=True, pass_ratio=pass_ratio, limit=limit)


def real(median_ratio: float, p_slower: float = 1.0, p_faster: float = 1.0
         ) -> RealizationComparison:
    return RealizationComparison(("perf", "host", "gemm", "gemm_x", 1), 5, median_ratio,
                                 p_slower, p_faster)


def verdict_of(c: CaseComparison, alpha: float = 0.01) -> str:
    out, _ = _adjusted([c], [0], [], alpha)
    return out[0].verdict


# --- the Holm step: cases ------------------------------------------------------------------

def test_a_p_value_equal_to_alpha_is_no_verdict() -> None:
    # no verdict, and 20% away: "not significant", never "same"
    assert verdict_of(case(0, 1.2, p_slower=0.01)) == NOT_SIGNIFICANT
    assert verdict_of(case(0, 0.8, p_faster=0.01)) == NOT_SIGNIFICANT
    assert verdict_of(case(0, 1.04, p_slower=0.01)) == SAME
    assert verdict_of(case(0, 1.2, p_slower=0.0099)) == SLOWER
    assert verdict_of(case(0, 0.8, p_faster=0.0099)) == FASTER


@pytest.mark.parametrize(("ratio", "pass_ratio", "verdict"), [
    (1.2, NAN, SLOWER),     # one pass: the ratio of medians decides
    (1.0, 1.2, NOT_SIGNIFICANT),  # a ratio of exactly 1 did not move up... (the passes'
    (0.99, 1.2, NOT_SIGNIFICANT),  # ...nor one below 1: 1.2 is no "same" either)
    (1.2, 1.0, SAME),       # the passes' ratio exactly 1: not up either, and within the limit
    (1.2, 0.9, NOT_SIGNIFICANT),
    (1.2, 1.1, SLOWER),
])
def test_slower_needs_the_ratio_and_the_pass_ratio_above_1(ratio: float, pass_ratio: float,
                                                           verdict: str) -> None:
    assert verdict_of(case(0, ratio, p_slower=1e-6, pass_ratio=pass_ratio)) == verdict


@pytest.mark.parametrize(("ratio", "pass_ratio", "verdict"), [
    (0.8, NAN, FASTER),
    (1.0, 0.8, NOT_SIGNIFICANT),
    (1.01, 0.8, NOT_SIGNIFICANT),
    (1.5, 0.8, NOT_SIGNIFICANT),
    (0.8, 1.0, SAME),
    (0.8, 1.5, NOT_SIGNIFICANT),
    (0.8, 0.9, FASTER),
])
def test_faster_needs_the_ratio_and_the_pass_ratio_below_1(ratio: float, pass_ratio: float,
                                                           verdict: str) -> None:
    assert verdict_of(case(0, ratio, p_faster=1e-6, pass_ratio=pass_ratio)) == verdict


# --- the Holm step: realizations ------------------------------------------------------------

def _real_verdict(r: RealizationComparison) -> RealizationComparison:
    # one tested case with no evidence and the realization: a family of 2 (Holm: 2 * p)
    _, (out,) = _adjusted([case(0, 1.0)], [0], [r], 0.01)
    return out


@pytest.mark.parametrize(("r", "verdict"), [
    (real(1.2, p_slower=0.004), SLOWER),
    (real(1.2, p_slower=0.005), NOT_SIGNIFICANT),  # 2 * 0.005 is alpha itself; 20% is no "same"
    (real(1.0, p_slower=1e-6), SAME),        # a median ratio of 1 did not move
    (real(0.8, p_faster=0.004), FASTER),
    (real(0.8, p_faster=0.005), NOT_SIGNIFICANT),
    (real(1.0, p_faster=1e-6), SAME),
    (real(1.5, p_faster=1e-6), NOT_SIGNIFICANT),  # faster p, but the median moved up
    (real(1.05, p_slower=0.5), SAME),        # exactly at the limit: still within it
    (real(1 / 1.05, p_faster=0.5), SAME),
])
def test_a_realizations_verdict_at_its_edges(r: RealizationComparison, verdict: str) -> None:
    assert _real_verdict(r).verdict == verdict


def test_the_realization_keeps_its_holm_adjusted_p_values() -> None:
    out = _real_verdict(real(1.2, p_slower=0.004, p_faster=0.3))
    assert (out.p_slower, out.p_faster) == (0.008, 0.6)


@pytest.mark.parametrize("ratio", [0.22, 0.5, 0.94, 1 / 1.05, 1.0, 1.05, 1.051, 1.5, 3.0, 3.24])
@pytest.mark.parametrize("p", [1.0, 0.5, 0.01])
def test_same_only_for_a_gated_ratio_within_the_limit(ratio: float, p: float) -> None:
    """Whatever the test says, a case it did not call is "same" exactly when
    its ratio lies within [1 / (1 + limit), 1 + limit]."""
    got = verdict_of(case(0, ratio, p_slower=p, p_faster=p))
    inside = 1 / (1 + LIMIT) <= ratio <= 1 + LIMIT
    assert got == (SAME if inside else NOT_SIGNIFICANT)
    # the log ratio (the figure the test judged) decides over the ratio of medians
    tested = CaseComparison(case(0, 1.0).key, "pass", "pass", 1.0, 1.0, 3, 3, 1.0, p, p,
                            SAME, timed=True, limit=LIMIT, log_ratio=math.log(ratio))
    assert tested.gated_ratio == pytest.approx(ratio)
    assert verdict_of(tested) == (SAME if inside else NOT_SIGNIFICANT)


# --- the --history widening --------------------------------------------------------------

def test_a_move_within_a_cases_own_spread_is_same_with_the_reason() -> None:
    cases = [case(0, 1.3, verdict=SLOWER),                      # no wider limit: kept
             case(1, 1.10, verdict=SLOWER, limit=0.15),          # within 15%
             case(2, 1.15, verdict=SLOWER, limit=0.15),          # exactly at it
             case(3, 1.20, verdict=SLOWER, limit=0.15),          # beyond
             case(4, 0.9, verdict=FASTER, limit=0.15),           # 1/0.9: 11.1% faster
             case(5, 0.8, verdict=FASTER, limit=0.15),           # 1/0.8: 25% faster
             case(6, 1.10, verdict=SAME, limit=0.15)]
    out = _within_noise(cases, list(range(len(cases))), LIMIT)
    assert [c.verdict for c in out] == [SLOWER, SAME, SAME, SLOWER, SAME, FASTER, SAME]
    assert out[1].note == ("slower by 10.0%, within its run-to-run spread 15.0% on this "
                           "machine (--history)")
    assert out[4].note == ("faster by 11.1%, within its run-to-run spread 15.0% on this "
                           "machine (--history)")
    assert [c.note for c in out if c.verdict != SAME] == ["", "", ""]


# --- machine drift ------------------------------------------------------------------------

def shift_of(ratios: list[float]) -> tuple[float, int]:
    cases = [case(i, r) for i, r in enumerate(ratios)]
    return run_shift(cases, list(range(len(cases))), LIMIT)


def test_too_few_cases_give_no_shift() -> None:
    assert shift_of([1.5] * (DRIFT_MIN_CASES - 1)) == (1.0, 0)
    assert shift_of([1.5] * (DRIFT_MIN_CASES - 1) + [0.0]) == (1.0, 0)  # 0: no ratio
    assert shift_of([1.5] * DRIFT_MIN_CASES) == (1.5, DRIFT_MIN_CASES)


def test_the_shift_counts_moves_strictly_beyond_the_limit() -> None:
    up = 1 + LIMIT
    down = 1 / (1 + LIMIT)
    # a median of exactly 1 counts the moves up
    assert shift_of([0.5, 0.5, 0.5, 1.0, 1.0, 1.2, 1.2, up]) == (1.0, 2)
    assert shift_of([1.2] * 6 + [up, 1.01]) == (1.2, 6)
    assert shift_of([0.8] * 5 + [down, 0.98, 1.02]) == (0.8, 5)


def drift_of(ratios: list[float]) -> tuple[list[CaseComparison], str]:
    cases = [case(i, r, verdict=SLOWER if r > 1 else FASTER if r < 1 else SAME)
             for i, r in enumerate(ratios)]
    return _drift(cases, list(range(len(cases))), LIMIT)


def test_exactly_the_drift_share_moving_is_drift() -> None:
    n = 28
    moved = math.ceil(DRIFT_SHARE * n)
    assert moved == DRIFT_SHARE * n  # 21 of 28: exactly the share
    out, warning = drift_of([1.2] * moved + [1.0] * (n - moved))
    assert warning.startswith(f"machine drift: {moved} of {n} cases compared as speed moved "
                              "slower beyond the limit together")
    assert [c.verdict for c in out] == [INCONCLUSIVE] * moved + [SAME] * (n - moved)
    _, warning = drift_of([1.2] * (moved - 1) + [1.0] * (n - moved + 1))
    assert warning == ""


def test_cases_without_a_ratio_are_not_counted_in_the_share() -> None:
    n, moved = 28, 21
    out, warning = drift_of([1.2] * moved + [1.0] * (n - moved) + [0.0])
    assert warning.startswith(f"machine drift: {moved} of {n} cases")
    assert out[-1].verdict == FASTER  # the case without a ratio keeps its own verdict
