"""`kbench ab`'s statistics on synthetic samples with known effects, in both
directions: an A/A run is "same", a +5% candidate "slower", a -5% one
"faster" (and swapping the sides swaps the verdict); the interval is made of
the order statistics the sign test names, at the Bonferroni-corrected
confidence over the cases compared; the minima must agree with the medians
on either side. Rounds are generated, never timed."""

from __future__ import annotations

import math
import random

import pytest

from kbench.harness import ab
from kbench.results import abstats

ALPHA, EFFECT = 0.01, 0.025


def _pairs(n: int, seed: int, effect: float = 0.0, spread: float = 0.004,
           load: float = 0.3) -> tuple[list[float], list[float]]:
    """Interleaved rounds around 1 ms: load that hits both rounds of a pair
    (shared), independent jitter per round, the candidate scaled by 1 + effect."""
    rng = random.Random(seed)
    base, cand = [], []
    for _ in range(n):
        shared = 1.0 + (rng.uniform(0.2, 1.5) if rng.random() < load else 0.0)
        base.append(1e6 * shared * math.exp(rng.gauss(0, spread)))
        cand.append(1e6 * shared * (1 + effect) * math.exp(rng.gauss(0, spread)))
    return base, cand


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_a_over_a_is_same(seed: int) -> None:
    base, cand = _pairs(40, seed)
    s = abstats.paired(base, cand, EFFECT, ALPHA, 8)
    assert s.verdict == abstats.SAME, s.describe(EFFECT)
    assert s.ci_low <= 1.0 <= s.ci_high


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_a_known_five_percent_effect_is_classified_in_both_directions(seed: int) -> None:
    base, slow = _pairs(41, seed, effect=0.05)  # odd: the median is one ratio
    s = abstats.paired(base, slow, EFFECT, ALPHA, 8)
    assert s.verdict == abstats.SLOWER, s.describe(EFFECT)
    assert s.median_ratio == pytest.approx(1.05, abs=0.01)
    assert s.min_ratio > 1.0
    _, fast = _pairs(41, seed, effect=1 / 1.05 - 1)
    f = abstats.paired(base, fast, EFFECT, ALPHA, 8)
    assert f.verdict == abstats.FASTER, f.describe(EFFECT)
    assert f.median_ratio == pytest.approx(1 / 1.05, abs=0.01)
    # the same rounds with the sides swapped: the mirror verdict and ratio
    r = abstats.paired(slow, base, EFFECT, ALPHA, 8)
    assert r.verdict == abstats.FASTER
    assert r.median_ratio == pytest.approx(1 / s.median_ratio, rel=1e-9)


def _coverage(n: int, k: int) -> float:
    """P(x_(k) <= median <= x_(n+1-k)) for n samples of a continuous variable:
    1 - 2 P(Binomial(n, 1/2) < k)."""
    return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2.0**n


def test_the_interval_is_the_sign_test_order_statistics() -> None:
    base = [1000.0] * 30
    cand = [1000.0 * (1 + i / 1000) for i in (17, 3, 29, 8, 1, 22, 14, 0, 26, 5, 11, 19, 2, 28,
                                                9, 24, 6, 15, 21, 4, 27, 12, 18, 7, 25, 10, 20,
                                                13, 23, 16)]
    ratios = sorted(c / b for b, c in zip(base, cand, strict=True))
    for comparisons in (1, 16):
        s = abstats.paired(base, cand, EFFECT, ALPHA, comparisons)
        assert s.confidence == 1 - ALPHA / comparisons
        lo, hi = abstats.median_ci_ranks(30, s.confidence)
        # the narrowest symmetric interval that still covers the median at that confidence
        assert hi == 31 - lo and _coverage(30, lo) >= s.confidence > _coverage(30, lo + 1)
        assert (s.ci_low, s.ci_high) == (ratios[lo - 1], ratios[hi - 1])
        assert s.median_ratio == pytest.approx((ratios[14] + ratios[15]) / 2)


def _borderline() -> tuple[list[float], list[float]]:
    """30 pairs: 7 at +1%, 23 at +6%. At 99% the sign-test interval (ranks
    8..23) lies above +2.5%; at 1 - 0.01/16 (ranks 6..25) it does not."""
    base = [2000.0] * 7 + [1000.0] * 23
    cand = [2020.0] * 7 + [1060.0] * 23
    return base, cand


def test_the_confidence_is_corrected_for_the_number_of_cases() -> None:
    base, cand = _borderline()
    alone = abstats.paired(base, cand, EFFECT, ALPHA, 1)
    assert alone.verdict == abstats.SLOWER and alone.ci_low > 1 + EFFECT
    among = abstats.paired(base, cand, EFFECT, ALPHA, 16)
    assert among.verdict == abstats.INCONCLUSIVE and among.ci_low < 1 + EFFECT


def _case(base: list[float], cand: list[float]) -> ab.AbCase:
    c = ab.AbCase(None, None, None)  # type: ignore[arg-type]
    c.base_rounds, c.cand_rounds = list(base), list(cand)
    return c


def test_kbench_ab_corrects_over_every_timed_case() -> None:
    settings = ab.AbSettings(min_effect=EFFECT, alpha=ALPHA)
    base, cand = _borderline()
    one = [_case(base, cand), _case([], [])]  # the untimed case is not a comparison
    ab.judge(one, settings)
    assert one[0].stats is not None and one[0].stats.verdict == abstats.SLOWER
    assert one[0].stats.confidence == 1 - ALPHA and one[1].stats is None
    many = [_case(base, cand) for _ in range(16)]
    ab.judge(many, settings)
    assert {c.stats.confidence for c in many if c.stats} == {1 - ALPHA / 16}
    assert all(c.stats is not None and c.stats.verdict == abstats.INCONCLUSIVE for c in many)


def test_one_fast_or_slow_round_does_not_make_an_a_over_a_run_a_change() -> None:
    base = [1000.0] * 30
    cand = [1000.0] * 30
    cand[0] = 980.0  # the candidate's minimum 2% below, its median unchanged
    s = abstats.paired(base, cand, EFFECT, ALPHA, 1)
    assert s.min_ratio < 1 - EFFECT / 2 and s.verdict == abstats.SAME
    base2 = [1000.0] * 29 + [900.0]  # the base's minimum 10% below
    s2 = abstats.paired(base2, [1000.0] * 30, EFFECT, ALPHA, 1)
    assert s2.min_ratio > 1 + EFFECT / 2 and s2.verdict == abstats.SAME


@pytest.mark.parametrize("direction", [1, -1])
def test_minima_must_reach_half_the_effect_in_the_medians_direction(direction: int) -> None:
    """Medians 8% apart but minima only 0.5% apart (between 1 and
    1 +- min_effect / 2): not a change in either direction."""
    f = 1.08 if direction > 0 else 1 / 1.08
    base = [1000.0 + i for i in range(30)]
    cand = [b * f for b in base]
    m = 1.005 if direction > 0 else 0.995
    base[0] = min(*base[1:], *cand[1:]) - 1.0  # one pair holds both minima
    cand[0] = base[0] * m
    s = abstats.paired(base, cand, EFFECT, ALPHA, 1)
    assert (s.ci_low > 1 + EFFECT) if direction > 0 else (s.ci_high < 1 - EFFECT)
    assert abs(s.min_ratio - m) < 1e-12
    # slower-looking: inconclusive, the reason naming the minima; faster-looking: no
    # slowdown is in doubt, so "not slower"
    want = abstats.INCONCLUSIVE if direction > 0 else abstats.NOT_SLOWER
    assert s.verdict == want, s.describe(EFFECT)
    if direction > 0:
        assert "but the minima disagree (min ratio 1.005, not above 1.012)" in s.reason
    clear = [b * f for b in base]
    assert abstats.paired(base, clear, EFFECT, ALPHA, 1).verdict == (
        abstats.SLOWER if direction > 0 else abstats.FASTER)


def test_too_few_rounds_at_the_corrected_confidence() -> None:
    need = abstats.min_rounds(1 - ALPHA / 16)
    base, cand = _pairs(need - 1, 3, effect=0.2, load=0.0)
    assert abstats.paired(base, cand, EFFECT, ALPHA, 16).verdict == abstats.INCONCLUSIVE
    base, cand = _pairs(need, 3, effect=0.2, load=0.0)
    assert abstats.paired(base, cand, EFFECT, ALPHA, 16).verdict == abstats.SLOWER


def test_paired_refuses_bad_arguments_and_names_them() -> None:
    with pytest.raises(ValueError, match="3 base vs 2 candidate"):
        abstats.paired([1.0, 2.0, 3.0], [1.0, 2.0])
    for alpha in (0.0, 1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
            abstats.paired([1.0] * 9, [1.0] * 9, alpha=alpha)
    with pytest.raises(ValueError, match="min_effect must be >= 0"):
        abstats.paired([1.0] * 9, [1.0] * 9, min_effect=-0.01)
    assert abstats.paired([1.0] * 30, [1.0] * 30, min_effect=0.0).verdict == abstats.SAME


def test_paired_defaults_are_a_two_and_a_half_percent_limit_at_99_percent() -> None:
    base = [1000.0 + i for i in range(30)]
    slower = [b * 1.03 for b in base]  # 3%: beyond the default 2.5% limit
    s = abstats.paired(base, slower)
    assert s == abstats.paired(base, slower, min_effect=0.025, alpha=0.01, comparisons=1)
    assert s.confidence == pytest.approx(0.99) and s.verdict == abstats.SLOWER
    assert abstats.paired(base, [b * 1.02 for b in base]).verdict == abstats.SAME


def test_paired_without_usable_rounds_is_too_few_and_says_nothing_else() -> None:
    for base, cand in (([], []), ([0.0] + [1.0] * 29, [1.0] * 30),
                       ([1.0] * 30, [1.0] * 29 + [0.0]), ([-1.0] * 30, [1.0] * 30)):
        s = abstats.paired(base, cand)
        assert s.verdict == abstats.INCONCLUSIVE and s.rounds == len(base)
        assert s.confidence == pytest.approx(0.99)
        figures = (s.base_median_ns, s.cand_median_ns, s.base_min_ns, s.cand_min_ns,
                   s.median_ratio, s.ci_low, s.ci_high, s.min_ratio, s.base_cv, s.cand_cv)
        assert all(isinstance(x, float) and math.isnan(x) for x in figures)
    one = abstats.paired([1000.0], [1100.0])  # one pair: figures, but no interval
    assert one.verdict == abstats.INCONCLUSIVE and one.base_median_ns == 1000.0
    assert one.median_ratio == pytest.approx(1.1) and math.isnan(one.ci_low)
    sub_ns = abstats.paired([0.5] * 30, [0.5] * 30)  # times below 1 ns are times
    assert sub_ns.verdict == abstats.SAME and sub_ns.median_ratio == 1.0


def test_paired_slower_needs_both_bounds_strictly_beyond_the_limit() -> None:
    """The interval's low end exactly at 1 + limit is not slower; nor is a
    ratio of minima exactly at 1 + limit / 2 (both exact in binary)."""
    base = [1000.0] * 30
    at_limit = abstats.paired(base, [1250.0] * 30, min_effect=0.25)
    assert at_limit.ci_low == 1.25 and at_limit.verdict != abstats.SLOWER
    above = abstats.paired(base, [1250.0] + [2000.0] * 29, min_effect=0.5)
    assert above.ci_low == 2.0 and above.min_ratio == 1.25
    assert above.verdict == abstats.INCONCLUSIVE  # min ratio at half the limit: not slower
    assert abstats.paired(base, [1260.0] + [2000.0] * 29,
                          min_effect=0.5).verdict == abstats.SLOWER
    faster = abstats.paired(base, [750.0] * 30, min_effect=0.25)
    assert faster.ci_high == 0.75 and faster.verdict != abstats.FASTER


def _layout_case(block_ratios: list[float], per_block: int = 15, loaded: int = 1
                 ) -> tuple[list[float], list[float], list[int]]:
    """Rounds in blocks of fresh processes: within block i every pair has the
    candidate at block_ratios[i] x the base; the last `loaded` blocks ran
    under load (both sides 2x slower), so the per-round minima come from the
    others."""
    rng = random.Random(5)
    base, cand = [], []
    for i, r in enumerate(block_ratios):
        scale = 2.0 if i >= len(block_ratios) - loaded else 1.0
        for _ in range(per_block):
            b = 1e6 * scale * math.exp(rng.gauss(0, 0.002))
            base.append(b)
            cand.append(b * r * math.exp(rng.gauss(0, 0.002)))
    return base, cand, [per_block] * len(block_ratios)


def test_a_shift_that_one_block_of_processes_does_not_show_is_not_a_verdict() -> None:
    """Three process pairs 13% apart, the fourth not: pooled, the interval and
    the minima say slower; the blocks say layout (a pair of processes keeps
    one layout for its life), so the verdict is inconclusive — and in the
    other direction not faster, only not slower."""
    base, cand, blocks = _layout_case([1.13, 1.13, 1.13, 1.0])
    pooled = abstats.paired(base, cand, EFFECT, ALPHA, 8)
    assert pooled.verdict == abstats.SLOWER and pooled.block_ratios == ()
    s = abstats.paired(base, cand, EFFECT, ALPHA, 8, blocks)
    assert s.verdict == abstats.INCONCLUSIVE, s.describe(EFFECT)
    assert s.ci_low > 1 + EFFECT and s.min_ratio > 1 + EFFECT / 2  # only the blocks object
    assert s.block_ratios == pytest.approx((1.13, 1.13, 1.13, 1.0), abs=0.005)
    assert "60 rounds in 4 blocks (ratios 1.129 1.130 1.131 1.000)" in s.describe(EFFECT)
    f = abstats.paired(cand, base, EFFECT, ALPHA, 8, blocks)  # the mirror: faster, pooled
    assert abstats.paired(cand, base, EFFECT, ALPHA, 8).verdict == abstats.FASTER
    assert f.verdict == abstats.NOT_SLOWER  # not faster (the blocks object), not slower either


@pytest.mark.parametrize("effect", [0.05, 0.10])
def test_a_real_change_every_block_shows_is_decided_in_both_directions(effect: float) -> None:
    base, cand, blocks = _layout_case([1 + effect] * 3)
    assert abstats.paired(base, cand, EFFECT, ALPHA, 8, blocks).verdict == abstats.SLOWER
    assert abstats.paired(cand, base, EFFECT, ALPHA, 8, blocks).verdict == abstats.FASTER
    # a block that agrees only weakly (below half the limit) is enough to hold it back
    base, cand, blocks = _layout_case([1 + effect, 1 + effect, 1 + EFFECT / 2 - 0.002])
    s = abstats.paired(base, cand, EFFECT, ALPHA, 8, blocks)
    assert s.block_ratios[-1] < 1 + EFFECT / 2
    assert s.verdict != abstats.SLOWER


def test_the_blocks_may_hold_a_few_dissenters_as_a_sign_test_at_one_eighth_allows() -> None:
    """Three of three blocks beyond half the limit is a sign test at 1/8; a
    sequential run's many blocks (six looks of three) are held to the same
    level, not to "every one of 18": one stray block of 18 does not veto a
    change every other block shows, seven do."""
    assert [abstats.dissent_allowed(b) for b in (1, 2, 3, 4, 5, 6, 9, 18)] == [
        0, 0, 0, 0, 0, 1, 2, 6]
    for b in range(1, 40):  # the tail of what is allowed never exceeds 1/8 (from 3 blocks
        d = abstats.dissent_allowed(b)  # on; fewer must all agree); one more would
        assert b < 3 or abstats.binom_cdf_half(d, b) <= abstats.BLOCK_LEVEL
        assert d + 1 >= b or abstats.binom_cdf_half(d + 1, b) > abstats.BLOCK_LEVEL
    one_stray = [1.10] * 17 + [0.99]
    base, cand, blocks = _layout_case(one_stray, per_block=10)
    assert abstats.paired(base, cand, EFFECT, ALPHA, 8, blocks).verdict == abstats.SLOWER
    assert abstats.paired(cand, base, EFFECT, ALPHA, 8, blocks).verdict == abstats.FASTER
    # dissenters just short of half the limit, the others' rounds enough for the pooled
    # interval (the minima from the others: they ran unloaded)
    six = [1.10] * 12 + [1.01] * 6
    base, cand, blocks = _layout_case(six, per_block=10, loaded=6)
    assert abstats.paired(base, cand, EFFECT, ALPHA, 1, blocks).verdict == abstats.SLOWER
    assert abstats.paired(cand, base, EFFECT, ALPHA, 1, blocks).verdict == abstats.FASTER
    seven = [1.10] * 11 + [1.01] * 7
    base, cand, blocks = _layout_case(seven, per_block=10, loaded=7)
    s = abstats.paired(base, cand, EFFECT, ALPHA, 1, blocks)
    assert s.ci_low > 1 + EFFECT and s.min_ratio > 1 + EFFECT / 2  # only the blocks object
    assert s.verdict == abstats.INCONCLUSIVE
    assert abstats.paired(cand, base, EFFECT, ALPHA, 1, blocks).verdict == abstats.NOT_SLOWER
    # exactly at half the limit is short of it
    assert not abstats.blocks_agree([1 + EFFECT / 2] * 3, lambda r: r > 1 + EFFECT / 2)
    assert abstats.blocks_agree((), lambda r: False)


def test_block_medians_need_blocks_that_split_the_rounds() -> None:
    assert abstats.block_medians([1.0, 2.0, 3.0, 10.0], [3, 1]) == (2.0, 10.0)
    for bad in ([2, 1], [4, 1], [0, 4], [-1, 5]):
        with pytest.raises(ValueError, match="do not split 4 rounds"):
            abstats.block_medians([1.0] * 4, bad)
    # one block is a single pair of processes: no block rule, no block ratios
    base, cand, _ = _layout_case([1.13, 1.13, 1.13, 1.0])
    assert abstats.paired(base, cand, EFFECT, ALPHA, 8, [60]).block_ratios == ()


def test_block_sizes_split_rounds_evenly_over_the_processes() -> None:
    assert ab.block_sizes(60, 3) == [20, 20, 20]
    assert ab.block_sizes(14, 3) == [5, 5, 4]
    assert ab.block_sizes(2, 5) == [1, 1]  # never an empty block
    assert ab.block_sizes(7, 1) == [7]
    assert ab.block_sizes(7, 0) == [7]


def test_binomial_tails_and_interval_ranks_at_their_edges() -> None:
    """The sign-test interval's arithmetic at its exact edges: the binomial
    tail outside 0..n, the smallest ranks (k = 1), a tail met exactly, and
    the widest k the loop may reach (n // 2)."""
    assert abstats.binom_cdf_half(-1, 3) == 0.0
    assert [abstats.binom_cdf_half(k, 3) for k in range(4)] == [0.125, 0.5, 0.875, 1.0]
    assert abstats.binom_cdf_half(5, 3) == 1.0
    assert abstats.median_ci_ranks(6, 0.95) == (1, 6)  # only the extremes: k = 1
    assert abstats.median_ci_ranks(4, 0.75) == (1, 4)
    assert abstats.median_ci_ranks(6, 1 - 2 / 64) == (1, 6)  # P(X <= 0) = 1/64: met exactly
    assert abstats.median_ci_ranks(3, 0.0) == (1, 3)  # k stops at n // 2
    assert abstats.median_ci_ranks(4, 0.0) == (2, 3)
    assert abstats.median_ci_ranks(5, 0.95) is None
    assert abstats.min_rounds(0.0) == 2 and abstats.min_rounds(0.95) == 6
    # the fewest, odd or even: one round fewer has no interval
    for conf, n in [(0.75, 3), (0.9, 5), (0.99, 8), (0.999, 11)]:
        assert abstats.min_rounds(conf) == n
        assert abstats.median_ci_ranks(n - 1, conf) is None
        assert abstats.median_ci_ranks(n, conf) is not None


def test_cv_is_nan_without_a_positive_mean() -> None:
    assert abstats.cv([0.2, 0.4]) == pytest.approx(0.4714045, rel=1e-6)
    assert math.isnan(abstats.cv([-1.0, 1.0])) and math.isnan(abstats.cv([-2.0, -4.0]))
    assert math.isnan(abstats.cv([3.0]))


def test_no_sum_of_binomial_tails_meets_the_block_level_exactly() -> None:
    """dissent_allowed compares tails with BLOCK_LEVEL = 1/8 by <=; no tail
    of up to 400 blocks equals 1/8 exactly, so < would decide alike (the
    comparison is the documented one, the equality case does not occur)."""
    from fractions import Fraction
    for b in range(3, 401):
        total, c = 1, b  # the tails it compares: P(X <= d + 1), d >= 0
        for k in range(1, b + 1):
            total += c
            assert Fraction(total, 2**b) != Fraction(1, 8)
            if Fraction(total, 2**b) > Fraction(1, 8):
                break
            c = c * (b - k) // (k + 1)


def _blocks_case(edge: float, faster: bool = False) -> tuple[list[float], list[float], list[int]]:
    """Four blocks: three whose rounds all pair at 2.0 (0.4 faster), one of a
    single round at exactly `edge` in a loaded moment (both sides doubled),
    so the pooled interval and the minima are decided and only that block
    sits on its threshold."""
    far = 0.4 if faster else 2.0
    base = [1000.0] * 60 + [2000.0]
    cand = [1000.0 * far] * 60 + [2000.0 * edge]
    return base, cand, [20, 20, 20, 1]


def test_a_block_exactly_at_half_the_limit_does_not_agree() -> None:
    effect = 0.5  # half of it: 1.25 and 0.75, exact in binary
    base, cand, blocks = _blocks_case(1.25)
    s = abstats.paired(base, cand, effect, ALPHA, 1, blocks)
    assert s.block_ratios == (2.0, 2.0, 2.0, 1.25) and s.ci_low == 2.0 and s.min_ratio == 2.0
    assert s.verdict == abstats.INCONCLUSIVE
    assert abstats.paired(*_blocks_case(1.2501)[:2], effect, ALPHA, 1,
                          blocks).verdict == abstats.SLOWER
    base, cand, blocks = _blocks_case(0.75, faster=True)
    f = abstats.paired(base, cand, effect, ALPHA, 1, blocks)
    assert f.block_ratios == (0.4, 0.4, 0.4, 0.75) and f.verdict == abstats.NOT_SLOWER
    assert abstats.paired(*_blocks_case(0.7499, faster=True)[:2], effect, ALPHA, 1,
                          blocks).verdict == abstats.FASTER


def test_two_blocks_are_held_to_the_block_rule() -> None:
    base, cand, _ = _layout_case([1.13, 1.0], per_block=30)
    s = abstats.paired(base, cand, EFFECT, ALPHA, 1, [30, 30])
    assert s.block_ratios == pytest.approx((1.13, 1.0), abs=0.005)
    assert s.verdict != abstats.SLOWER


def test_faster_needs_minima_below_half_the_limit_strictly() -> None:
    """The mirror of the slower test: the paired interval lies below
    1 - limit, the ratio of minima exactly at 1 - limit / 2 is not enough."""
    base = [1000.0] + [4000.0] * 29
    cand = [3000.0, 750.0] + [1600.0] * 28  # pairs 3.0, 0.1875, then 0.4 ...
    s = abstats.paired(base, cand, min_effect=0.5)
    assert s.ci_high < 0.5 and s.min_ratio == 0.75 and s.verdict == abstats.NOT_SLOWER
    cand[1] = 749.0
    assert abstats.paired(base, cand, min_effect=0.5).verdict == abstats.FASTER


def test_paired_stats_carry_both_sides_medians_and_minima() -> None:
    base = [100.0, 300.0, 200.0, 400.0, 500.0] * 4
    cand = [110.0, 330.0, 220.0, 440.0, 550.0] * 4
    s = abstats.paired(base, cand)
    assert (s.base_median_ns, s.cand_median_ns, s.base_min_ns, s.cand_min_ns) == (
        300.0, 330.0, 100.0, 110.0)
    assert s.rounds == 20 and s.median_ratio == pytest.approx(1.1)


def test_describe_says_every_figure_and_no_interval_when_there_is_none() -> None:
    s = abstats.PairedStats(12, 1.0, 1.1, 0.9, 1.0, 1.1, 1.05, 1.15, 0.99, 1.111, 0.02, 0.03,
                            "slower")
    assert s.describe(0.025) == ("slower: paired ratio 1.100 (99.00% CI [1.050, 1.150]), "
                                 "min ratio 1.111, CV base 2.0% cand 3.0%, 12 rounds, "
                                 "limit ±2.5%")
    nan = math.nan
    t = abstats.PairedStats(3, 1.0, 1.0, 1.0, 1.0, 1.0, nan, nan, 0.99, 1.0, nan, nan,
                            "too-few-rounds", (1.0, 1.0))
    assert t.describe(0.05) == ("too-few-rounds: paired ratio 1.000 (99.00% CI [–]), min ratio "
                                "1.000, CV base nan% cand nan%, 3 rounds in 2 blocks (ratios "
                                "1.000 1.000), limit ±5.0%")
