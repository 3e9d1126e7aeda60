"""Moderated t-tests: many cases, few passes each.

A gate over two runs of 3 passes has 2 degrees of freedom per side for a
case's pass-to-pass variance, an estimate so poor that a t-test on it needs
an enormous effect to reach a Holm-adjusted alpha over dozens of cases (a
10% slowdown is then found by luck). The cases of one run, though, share a
machine: their variances are draws from one distribution whose shape the
run's own cases reveal. The empirical-Bayes moderated t of Smyth (2004,
"Linear models and empirical Bayes methods for assessing differential
expression in microarray experiments") uses that: the variances s_i^2 of
all cases (each on d_i degrees of freedom) are fitted as a scaled
F-distribution, s_i^2 ~ s0^2 F(d_i, d0), by matching the moments of
log s_i^2; each case's variance is then the posterior
(d0 s0^2 + d_i s_i^2) / (d0 + d_i), on d0 + d_i degrees of freedom. A case
keeps its own evidence (d_i of the weight) and borrows d0 from its peers;
d0 is large when the cases agree, small when they do not.

Variances grow with a case's size on a real machine (a large case meets
more cache and layout effects), so the prior's scale follows a trend: the
log-variance moment is fitted as a straight line in the case's log time,
and each case is shrunk towards the prior of its own size.

Everything is on the logarithms of per-pass medians: a ratio is a difference
of logs, and the pass is the unit (kbench.results.compare)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

MIN_CASES = 8  # cases with a positive variance needed to fit the prior
NAME = "one-sided moderated t (empirical Bayes over the cases) on log per-pass medians"


@dataclass(frozen=True)
class Prior:
    """The fitted prior: d0 (inf: every case has the variance of its size)
    and the prior variance s0^2 = exp(intercept + slope * log time)."""

    df: float
    intercept: float
    slope: float

    def variance(self, log_time: float) -> float:
        return math.exp(self.intercept + self.slope * log_time)


def _trigamma_inverse(v: float) -> float:
    """y with trigamma(y) = v (v > 0); trigamma falls from inf to 0."""
    lo, hi = 1e-8, 1e8
    if v >= float(special.polygamma(1, lo)):
        return lo
    if v <= float(special.polygamma(1, hi)):
        return math.inf
    return float(optimize.brentq(lambda y: float(special.polygamma(1, y)) - v, lo, hi))


def fit_prior(s2: Sequence[float], df: Sequence[float],
              log_time: Sequence[float]) -> Prior | None:
    """The prior of variances s2 (each on df degrees of freedom) of cases of
    log times log_time; None with fewer than MIN_CASES usable cases (a
    positive, finite variance and a finite time)."""
    s2a, dfa, xa = (np.asarray(v, float) for v in (s2, df, log_time))
    ok = (s2a > 0) & np.isfinite(s2a) & (dfa > 0) & np.isfinite(dfa) & np.isfinite(xa)
    if int(ok.sum()) < MIN_CASES:
        return None
    s2a, dfa, xa = s2a[ok], dfa[ok], xa[ok]
    # E[log s^2] = log s0^2 + digamma(d/2) - log(d/2) - (digamma(d0/2) - log(d0/2))
    # Var[log s^2] = trigamma(d/2) + trigamma(d0/2)
    e = np.log(s2a) - special.digamma(dfa / 2) + np.log(dfa / 2)
    if np.ptp(xa) > 0:
        slope, intercept = (float(c) for c in np.polyfit(xa, e, 1))
        fitted_df = 2
    else:
        slope, intercept, fitted_df = 0.0, float(e.mean()), 1
    resid = e - (intercept + slope * xa)
    n = len(e)
    v = float(np.sum(resid ** 2)) / (n - fitted_df) - float(np.mean(special.polygamma(1, dfa / 2)))
    # v is finite; no variance beyond the cases' own (v <= 0) gives d0 = inf
    d0 = 2 * _trigamma_inverse(v)
    if math.isfinite(d0):
        intercept += float(special.digamma(d0 / 2)) - math.log(d0 / 2)
    return Prior(df=d0, intercept=intercept, slope=slope)


def _stats(base: np.ndarray, cand: np.ndarray) -> tuple[float, float, float]:
    """(sum of squares about each side's mean, its degrees of freedom, mean log time)."""
    ss = float(np.sum((base - base.mean()) ** 2) + np.sum((cand - cand.mean()) ** 2))
    return ss, float(len(base) + len(cand) - 2), float(np.mean(np.concatenate([base, cand])))


def moderated_tests(pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
                    margins: Sequence[float] | None = None
                    ) -> tuple[list[tuple[float, float]], Prior] | None:
    """(p_slower, p_faster) per (base, candidate) pair of per-pass medians
    (each side at least 2, positive), one-sided, from the moderated t of
    the candidate's mean log over the base's; and the fitted prior. With
    margins (per pair, a log ratio m >= 0), p_slower tests "the mean log
    ratio exceeds m" and p_faster "it is below -m". None when the pairs
    are too few (or too alike) to fit a prior: the caller tests each case
    on its own then. A pair with a non-finite log gets (1, 1)."""
    logs = []
    for b, c in pairs:
        with np.errstate(divide="ignore", invalid="ignore"):
            logs.append((np.log(np.asarray(b, float)), np.log(np.asarray(c, float))))
    with np.errstate(invalid="ignore"):  # inf - inf of an infinite median: NaN, no evidence
        rows = [_stats(b, c) for b, c in logs]
        prior = fit_prior([ss / d if d > 0 else math.nan for ss, d, _ in rows],
                          [d for _, d, _ in rows], [x for *_, x in rows])
    if prior is None:
        return None
    out = []
    for (b, c), (ss, d, x), m in zip(logs, rows, margins or [0.0] * len(rows), strict=True):
        diff = float(c.mean() - b.mean())
        if not (math.isfinite(diff) and math.isfinite(ss) and math.isfinite(x)):
            out.append((1.0, 1.0))
            continue
        s0 = prior.variance(x)
        if math.isinf(prior.df):
            var, df = s0, math.inf
        else:
            var, df = (prior.df * s0 + ss) / (prior.df + d), prior.df + d
        se = math.sqrt(var * (1 / len(b) + 1 / len(c)))
        out.append((float(stats.t.sf((diff - m) / se, df)),
                    float(stats.t.cdf((diff + m) / se, df))))
    return out, prior


__all__ = ["MIN_CASES", "NAME", "Prior", "fit_prior", "moderated_tests"]
