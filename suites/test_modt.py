"""The moderated t of two runs (kbench.results.modt): its prior is recovered
from variances drawn from a known one, it is calibrated on identical
builds, it finds a slowdown that a per-case Welch t cannot with 3 passes a
side, and its margin is a shift of the null."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from kbench.results import modt
from kbench.results.compare import holm, unit_test


def _draw_variances(rng: np.random.Generator, n: int, d: float, d0: float,
                    s0: np.ndarray) -> np.ndarray:
    """s^2 of n cases: sigma^2 ~ d0 s0^2 / chi2(d0), s^2 ~ sigma^2 chi2(d) / d."""
    sigma2 = d0 * s0 ** 2 / rng.chisquare(d0, n)
    return sigma2 * rng.chisquare(d, n) / d


def test_the_prior_is_recovered_from_variances_drawn_from_it() -> None:
    rng = np.random.default_rng(1)
    n, d, d0 = 4000, 4.0, 6.0
    x = rng.uniform(8, 16, n)  # log times
    s0 = 0.004 * np.exp(0.1 * x)  # sd grows with size: log s0^2 = 2 log 0.004 + 0.2 x
    prior = modt.fit_prior(_draw_variances(rng, n, d, d0, s0), [d] * n, x)
    assert prior is not None
    assert prior.df == pytest.approx(d0, rel=0.25)
    assert prior.slope == pytest.approx(0.2, abs=0.03)
    for xi in (9.0, 12.0, 15.0):
        assert math.sqrt(prior.variance(xi)) == pytest.approx(0.004 * math.exp(0.1 * xi),
                                                              rel=0.1)


def test_variances_that_agree_exactly_give_an_infinite_prior() -> None:
    """Every case on its size's trend line: no spread beyond the chi-square's
    own, so the prior's degrees of freedom are infinite (the pooled variance)."""
    x = np.linspace(8, 12, 20)
    s2 = np.exp(-8 + 0.1 * x)
    prior = modt.fit_prior(s2, [4.0] * 20, x)
    assert prior is not None and math.isinf(prior.df)
    # the line fitted to E[log s^2] - digamma(d/2) + log(d/2), nothing added for d0
    assert prior.variance(10.0) == pytest.approx(
        math.exp(-8 + 1.0 - float(special.digamma(2.0)) + math.log(2.0)), rel=1e-9)


def test_too_few_usable_cases_give_no_prior() -> None:
    k = modt.MIN_CASES
    good = [1e-4] * (k - 1)
    assert modt.fit_prior(good, [4.0] * (k - 1), range(k - 1)) is None
    # zero, NaN and infinite variances or times are not usable
    assert modt.fit_prior([*good, 0.0, math.nan, math.inf], [4.0] * (k + 2),
                          [*range(k - 1), 1, 2, 3]) is None
    assert modt.fit_prior([*good, 2e-4], [4.0] * k, [*range(k - 1), math.nan]) is None
    prior = modt.fit_prior([*good, 2e-4], [4.0] * k, [5.0] * k)  # one size: no slope
    assert prior is not None and prior.slope == 0.0


def _pairs(rng: np.random.Generator, n: int, effect: np.ndarray,
           sd: np.ndarray, passes: int = 3) -> list[tuple[list[float], list[float]]]:
    out = []
    for i in range(n):
        base = 1e5 * np.exp(rng.normal(0, sd[i], passes))
        cand = 1e5 * np.exp(effect[i] + rng.normal(0, sd[i], passes))
        out.append((list(base), list(cand)))
    return out


def test_on_identical_builds_the_p_values_are_calibrated() -> None:
    rng = np.random.default_rng(7)
    n = 3000
    sd = np.sqrt(_draw_variances(rng, n, 1e9, 5.0, np.full(n, 0.015)))  # true sds per case
    fitted = modt.moderated_tests(_pairs(rng, n, np.zeros(n), sd))
    assert fitted is not None
    slower = np.array([p for p, _ in fitted[0]])
    faster = np.array([p for _, p in fitted[0]])
    for p in (slower, faster):
        for level in (0.01, 0.05, 0.2):
            assert abs(float(np.mean(p < level)) - level) < max(0.01, 0.25 * level)


def test_a_ten_percent_slowdown_of_some_cases_is_found_where_welch_finds_little() -> None:
    """74 cases, 3 passes a side, sds around 1.7%: 23 cases slowed by 10%.
    After Holm's adjustment the moderated t flags most of them, the per-case
    Welch t almost none; no untouched case is flagged."""
    rng = np.random.default_rng(3)
    n, slowed = 74, 23
    sd = np.sqrt(_draw_variances(rng, n, 1e9, 4.0, np.full(n, 0.017)))
    effect = np.where(np.arange(n) < slowed, math.log(1.1), 0.0)
    pairs = _pairs(rng, n, effect, sd)
    fitted = modt.moderated_tests(pairs)
    assert fitted is not None
    mod = holm([p for p, _ in fitted[0]])
    welch = holm([unit_test(b, c)[0] for b, c in pairs])
    mod_hits = {i for i, p in enumerate(mod) if p < 0.01}
    welch_hits = {i for i, p in enumerate(welch) if p < 0.01}
    assert mod_hits <= set(range(slowed)) and welch_hits <= set(range(slowed))
    assert len(mod_hits) >= 12 and len(welch_hits) <= 4


def test_a_margin_is_a_shift_of_the_null() -> None:
    """p_slower against a margin m equals p_slower of the candidate scaled by
    e^-m against none; p_faster likewise with e^m; the prior is the same
    (variances do not move with a scale)."""
    rng = np.random.default_rng(5)
    n, m = 40, math.log1p(0.025)
    pairs = _pairs(rng, n, rng.normal(0, 0.05, n), np.full(n, 0.02))
    with_margin, prior = modt.moderated_tests(pairs, [m] * n)
    down = [(b, [c_ * math.exp(-m) for c_ in c]) for b, c in pairs]
    up = [(b, [c_ * math.exp(m) for c_ in c]) for b, c in pairs]
    shifted_down, prior_down = modt.moderated_tests(down)
    shifted_up, _ = modt.moderated_tests(up)
    assert prior_down.df == pytest.approx(prior.df) and prior_down.slope == pytest.approx(
        prior.slope, abs=1e-6)
    for (ps, pf), (ps0, _), (_, pf0) in zip(with_margin, shifted_down, shifted_up, strict=True):
        assert ps == pytest.approx(ps0, rel=1e-6, abs=1e-12)
        assert pf == pytest.approx(pf0, rel=1e-6, abs=1e-12)


def test_the_p_values_are_those_of_the_posterior_variance() -> None:
    """One case worked by hand from the fitted prior: the posterior variance
    (d0 s0^2 + d s^2) / (d0 + d) on d0 + d degrees of freedom."""
    rng = np.random.default_rng(11)
    sd = np.sqrt(_draw_variances(rng, 60, 1e9, 3.0, np.full(60, 0.02)))
    pairs = _pairs(rng, 60, np.zeros(60), sd)
    pairs[0] = ([1.00e5, 1.02e5, 0.99e5], [1.08e5, 1.10e5, 1.07e5])
    (res, prior) = modt.moderated_tests(pairs)
    assert 1 < prior.df < 20
    b, c = np.log(pairs[0][0]), np.log(pairs[0][1])
    ss = float(((b - b.mean()) ** 2).sum() + ((c - c.mean()) ** 2).sum())
    x = float(np.mean(np.concatenate([b, c])))
    var = (prior.df * prior.variance(x) + ss) / (prior.df + 4)
    t = float(c.mean() - b.mean()) / math.sqrt(var * (2 / 3))
    assert res[0][0] == pytest.approx(float(stats.t.sf(t, prior.df + 4)), rel=1e-9)
    assert res[0][1] == pytest.approx(float(stats.t.cdf(t, prior.df + 4)), rel=1e-9)


def test_a_case_with_an_infinite_or_zero_time_has_no_evidence() -> None:
    rng = np.random.default_rng(2)
    pairs = _pairs(rng, 12, np.zeros(12), np.full(12, 0.02))
    pairs[3] = ([1e5, math.inf, 1e5], [1e5, 1e5, 1e5])
    pairs[4] = ([1e5, 1e5, 1e5], [0.0, 1e5, 1e5])
    res, _ = modt.moderated_tests(pairs)
    assert res[3] == (1.0, 1.0) and res[4] == (1.0, 1.0)
    assert modt.moderated_tests(pairs[:modt.MIN_CASES - 1]) is None


def test_the_trigamma_inverse_solves_over_its_whole_range() -> None:
    from scipy import special

    from kbench.results.modt import _trigamma_inverse
    for v in (1e-7, 1e-3, 0.5, 1.0, 10.0, 1e4, 1e12):
        y = _trigamma_inverse(v)
        assert float(special.polygamma(1, y)) == pytest.approx(v, rel=1e-6)
    # beyond the bracket: a trigamma that small is an infinite prior, that large the least df
    assert _trigamma_inverse(1e-9) == math.inf
    assert _trigamma_inverse(0.0) == math.inf and _trigamma_inverse(-1.0) == math.inf
    assert _trigamma_inverse(1e17) == 1e-8


def test_times_without_a_finite_log_warn_nothing() -> None:
    """A zero, negative or infinite time is no evidence, silently: numpy's
    divide and invalid warnings (log 0, log of a negative, inf - inf) stay
    inside the test."""
    import warnings
    rng = np.random.default_rng(5)
    pairs = _pairs(rng, 12, np.zeros(12), np.full(12, 0.02))
    pairs[1] = ([1e5, 1e5, 1e5], [0.0, 0.0, 1e5])
    pairs[2] = ([-1.0, 1e5, 1e5], [1e5, 1e5, 1e5])
    pairs[3] = ([math.inf, math.inf, 1e5], [1e5, 1e5, 1e5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res, _ = modt.moderated_tests(pairs)
    assert res[1:4] == [(1.0, 1.0)] * 3


def test_a_case_of_one_pass_a_side_has_no_variance_but_a_test() -> None:
    """One pass on each side: no degrees of freedom of its own (its variance
    is not used for the prior); its test borrows the prior's variance."""
    rng = np.random.default_rng(6)
    pairs = _pairs(rng, 12, np.zeros(12), np.full(12, 0.02))
    pairs.append(([1e5], [1.2e5]))
    res, _ = modt.moderated_tests(pairs)
    assert res[:12] == modt.moderated_tests(pairs[:12])[0]
    slower, faster = res[12]
    assert slower < 0.5 < faster


def test_cases_of_one_degree_of_freedom_fit_a_prior() -> None:
    """Two passes on one side and one on the other: one degree of freedom a
    case, enough for the prior."""
    rng = np.random.default_rng(8)
    pairs = [(b[:2], c[:1]) for b, c in _pairs(rng, modt.MIN_CASES, np.zeros(8),
                                               np.full(8, 0.02))]
    assert modt.moderated_tests(pairs) is not None
    s2 = [float(np.var(np.log(b), ddof=1)) for b, _ in pairs]
    assert modt.fit_prior(s2, [1.0] * len(s2), [11.5] * len(s2)) is not None


def test_a_case_without_degrees_of_freedom_is_left_out_of_the_prior() -> None:
    rng = np.random.default_rng(9)
    s2 = list(0.02 ** 2 * rng.chisquare(4, 10) / 4)
    x = list(np.linspace(10.0, 14.0, 10))
    prior = modt.fit_prior(s2, [4.0] * 10, x)
    assert modt.fit_prior([*s2, 1e-2], [*[4.0] * 10, 0.0], [*x, 12.0]) == prior
    assert modt.fit_prior([*s2, 1e-2], [*[4.0] * 10, math.inf], [*x, 12.0]) == prior
    assert modt.fit_prior([*s2, 1e-2], [*[4.0] * 10, math.nan], [*x, 12.0]) == prior


def test_the_prior_needs_one_margin_per_case() -> None:
    rng = np.random.default_rng(10)
    pairs = _pairs(rng, 12, np.zeros(12), np.full(12, 0.02))
    with pytest.raises(ValueError):
        modt.moderated_tests(pairs, [0.01] * 11)


def _moment_prior(e: np.ndarray, x: np.ndarray, d: float) -> float:
    """Smyth's d0 from the log-variance moments, written out: the residual
    variance about the fitted mean (n - 1 degrees of freedom, n - 2 about a
    line) less the sampling part trigamma(d/2), inverted through trigamma."""
    design = np.column_stack([np.ones_like(x), x]) if np.ptp(x) > 0 else np.ones((len(x), 1))
    coef, *_ = np.linalg.lstsq(design, e, rcond=None)
    resid = e - design @ coef
    v = float(resid @ resid) / (len(e) - design.shape[1]) - float(special.polygamma(1, d / 2))
    return 2 * modt._trigamma_inverse(v)


@pytest.mark.parametrize("spread", [0.0, 0.5, 4.0])
def test_the_prior_degrees_of_freedom_are_the_moment_estimate(spread: float) -> None:
    """Log times all equal (a mean is fitted), spread by less than 1 and by
    more (a line is fitted, whatever the spread)."""
    n, d = 10, 4.0
    x = 11.0 + np.linspace(0.0, spread, n)
    wobble = np.array([0.9, -0.7, 0.4, -1.1, 0.8, -0.2, 1.0, -0.6, 0.3, -0.8])
    s2 = np.exp(-9.0 + 2.0 * (x - 11.0) + wobble)
    prior = modt.fit_prior(list(s2), [d] * n, list(x))
    e = np.log(s2) - special.digamma(d / 2) + np.log(d / 2)
    assert prior.df == pytest.approx(_moment_prior(e, x, d), rel=1e-9)
    if spread:  # the line through the log-variance moments
        assert prior.slope == pytest.approx(float(np.polyfit(x, e, 1)[0]), rel=1e-9)
        assert prior.slope > 0.5
    else:
        assert prior.slope == 0.0
