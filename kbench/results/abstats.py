"""Statistics of an interleaved A/B timing run (`kbench ab`): base and
candidate rounds alternate, so each candidate round has a base round taken
moments before or after it, under the same machine state. The decision
rests on the *paired ratios* cand_i / base_i (background load that lasts
longer than a round hits both sides of a pair alike and cancels), with a
distribution-free confidence interval of their median, and on the ratio of
per-round minima (the least-disturbed round of each side).

Per case:

- median paired ratio and its confidence interval from order statistics
  (the binomial sign-test interval, at confidence 1 - alpha/m for m cases
  compared: Bonferroni, so alpha bounds the chance of any false verdict in
  the run);
- min ratio = min(cand rounds) / min(base rounds);
- coefficient of variation (stdev / mean) of each side's rounds.

Verdict at the limit L (`min_effect`, the regression gate's max_slowdown),
named by what the interval [lo, hi] shows; the same words in `kbench ab`
and `kbench gate --ab`, so one run has one undecided count:

- "slower": lo > 1 + L (the whole interval above the limit), the min
  ratio exceeds 1 + L / 2 and, when the rounds ran in blocks of fresh
  processes (`blocks`), the blocks agree: every block's median paired
  ratio exceeds 1 + L / 2 as well, but for as many blocks as a sign test
  over the blocks allows at the level of three of three, 1/8 (none of up
  to five blocks, one of six, six of eighteen) — a process keeps one
  memory layout for its life, so a shift that only some process pairs
  show is layout, not the build. Fails the gate;
- "faster": the mirror image (hi < 1 - L, minima and blocks agreeing);
- "same": the interval lies within [1 - L, 1 + L];
- "not slower": hi <= 1 + L, but not same or faster (the interval reaches
  below 1 - L, or the minima of a faster-looking case disagree): a
  slowdown past the limit is excluded, so it passes the gate;
- "inconclusive": the interval straddles 1 + L (lo <= 1 + L < hi), or it
  lies above 1 + L while the minima or the blocks of processes disagree,
  or there are too few rounds for an interval at that confidence; the
  reason names which, with the interval and the limit. Not a pass and not
  a regression: settle it with more rounds (`kbench ab --settle`).

Pure functions on numbers: no timing, no I/O, no scipy (the interval needs
only binomial tail sums)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

SLOWER, FASTER, SAME = "slower", "faster", "same"
NOT_SLOWER, INCONCLUSIVE = "not slower", "inconclusive"
VERDICTS = (SLOWER, INCONCLUSIVE, NOT_SLOWER, SAME, FASTER)  # worst first
DECIDED = (SLOWER, NOT_SLOWER, SAME, FASTER)  # every verdict the gate can act on
PASSING = (NOT_SLOWER, SAME, FASTER)


def binom_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return math.fsum(math.comb(n, i) for i in range(k + 1)) / 2.0**n


def median_ci_ranks(n: int, confidence: float) -> tuple[int, int] | None:
    """1-based ranks (lo, hi) of the order statistics that bracket the
    median with at least `confidence` (the sign-test interval), or None if
    n is too small for it."""
    tail = (1.0 - confidence) / 2.0
    best = None
    for k in range(1, n // 2 + 1):  # interval [x_(k), x_(n+1-k)]
        if binom_cdf_half(k - 1, n) <= tail:
            best = k
        else:
            break
    return None if best is None else (best, n + 1 - best)


def min_rounds(confidence: float) -> int:
    """Fewest rounds for which the median interval exists at `confidence`
    (one round never has one: there is no pair of order statistics)."""
    n = 2
    while median_ci_ranks(n, confidence) is None:
        n += 1
    return n


def cv(xs: Sequence[float]) -> float:
    """Coefficient of variation (sample stdev / mean); NaN for fewer than 2."""
    if len(xs) < 2:
        return math.nan
    mean = statistics.fmean(xs)
    return statistics.stdev(xs) / mean if mean > 0 else math.nan


@dataclass(frozen=True)
class PairedStats:
    rounds: int
    base_median_ns: float
    cand_median_ns: float
    base_min_ns: float
    cand_min_ns: float
    median_ratio: float
    ci_low: float
    ci_high: float
    confidence: float
    min_ratio: float
    base_cv: float
    cand_cv: float
    verdict: str
    block_ratios: tuple[float, ...] = ()  # median paired ratio per block of processes
    reason: str = ""  # why the verdict: what the interval shows against the limit

    @property
    def noise(self) -> float:
        """The larger CV of the two sides."""
        return max(self.base_cv, self.cand_cv)

    def describe(self, min_effect: float) -> str:
        ci = (f"[{self.ci_low:.3f}, {self.ci_high:.3f}]" if not math.isnan(self.ci_low)
              else "[–]")
        why = f"{self.reason}; " if self.reason else ""
        return (f"{self.verdict}: {why}paired ratio {self.median_ratio:.3f} "
                f"({self.confidence:.2%} CI {ci}), min ratio {self.min_ratio:.3f}, "
                f"CV base {self.base_cv:.1%} cand {self.cand_cv:.1%}, {self.rounds} rounds"
                + (f" in {len(self.block_ratios)} blocks (ratios "
                   + " ".join(f"{r:.3f}" for r in self.block_ratios) + ")"
                   if self.block_ratios else "")
                + f", limit ±{min_effect:.1%}")


def block_medians(ratios: Sequence[float], blocks: Sequence[int]) -> tuple[float, ...]:
    """The median of each block of consecutive paired ratios (blocks: their
    lengths, summing to len(ratios))."""
    if any(b < 1 for b in blocks) or sum(blocks) != len(ratios):
        raise ValueError(f"blocks {list(blocks)} do not split {len(ratios)} rounds")
    out, at = [], 0
    for b in blocks:
        out.append(statistics.median(ratios[at:at + b]))
        at += b
    return tuple(out)


BLOCK_LEVEL = 0.125  # all of three blocks beyond half the limit: a sign test at 1/8


def dissent_allowed(blocks: int) -> int:
    """How many of `blocks` block medians may fall short of half the limit
    while the blocks still agree: the most d for which B - d of B blocks
    beyond it are as unlikely under a coin flip per block (a one-sided sign
    test) as three of three, 1/8 — none of up to five blocks, one of six,
    six of eighteen (six looks of three blocks)."""
    d = 0  # (d + 1 dissenters of `blocks` or more: the tail is 1, past BLOCK_LEVEL)
    while binom_cdf_half(d + 1, blocks) <= BLOCK_LEVEL:
        d += 1
    return d


def blocks_agree(block_ratios: Sequence[float], beyond: Callable[[float], bool]) -> bool:
    """The blocks of fresh processes agree on a change: all but
    dissent_allowed(B) of the B block medians lie beyond half the limit
    (`beyond`); no blocks (one pair of processes): nothing to disagree."""
    if not block_ratios:
        return True
    short = sum(not beyond(r) for r in block_ratios)
    return short <= dissent_allowed(len(block_ratios))


def paired(base: Sequence[float], cand: Sequence[float], min_effect: float = 0.025,
           alpha: float = 0.01, comparisons: int = 1,
           blocks: Sequence[int] | None = None) -> PairedStats:
    """Statistics and verdict of one case from its interleaved rounds
    (base[i] and cand[i] are a pair; per-call times). blocks: the lengths
    of the consecutive runs of rounds taken by one pair of processes each
    (None or one block: a single pair)."""
    if len(base) != len(cand):
        raise ValueError(f"paired rounds: {len(base)} base vs {len(cand)} candidate")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if min_effect < 0:
        raise ValueError(f"min_effect must be >= 0, got {min_effect}")
    n = len(base)
    confidence = 1.0 - alpha / max(1, comparisons)
    if n == 0 or min(base) <= 0 or min(cand) <= 0:
        nan = math.nan
        return PairedStats(n, nan, nan, nan, nan, nan, nan, nan, confidence, nan, nan, nan,
                           INCONCLUSIVE, (), f"no usable rounds ({n} pairs, a time <= 0)")
    in_order = [c / b for b, c in zip(base, cand, strict=True)]
    per_block = block_medians(in_order, blocks) if blocks and len(blocks) > 1 else ()
    ratios = sorted(in_order)
    med = statistics.median(ratios)
    ranks = median_ci_ranks(n, confidence)
    lo, hi = (ratios[ranks[0] - 1], ratios[ranks[1] - 1]) if ranks else (math.nan, math.nan)
    min_ratio = min(cand) / min(base)
    verdict, reason = judge_interval(lo, hi, min_ratio, per_block, min_effect, n, confidence)
    return PairedStats(n, statistics.median(base), statistics.median(cand), min(base),
                       min(cand), med, lo, hi, confidence, min_ratio, cv(base), cv(cand),
                       verdict, per_block, reason)


def judge_interval(lo: float, hi: float, min_ratio: float, block_ratios: Sequence[float],
                   limit: float, rounds: int = 0, confidence: float = math.nan
                   ) -> tuple[str, str]:
    """(verdict, reason) of an interval [lo, hi] of the median paired ratio at
    the limit (see the module text); NaN bounds: too few rounds."""
    up, down = 1.0 + limit, 1.0 - limit
    ci = f"[{lo:.3f}, {hi:.3f}]"
    at = f"the limit {up:.3f} (+{limit:.1%})"
    if math.isnan(lo) or math.isnan(hi):
        return INCONCLUSIVE, (f"too few rounds ({rounds}) for an interval at "
                              f"{confidence:.2%} confidence")
    if lo > up:
        if not min_ratio > 1.0 + limit / 2:
            return INCONCLUSIVE, (f"the interval {ci} lies above {at} but the minima disagree "
                                  f"(min ratio {min_ratio:.3f}, not above "
                                  f"{1 + limit / 2:.3f})")
        if not blocks_agree(block_ratios, lambda r: r > 1.0 + limit / 2):
            return INCONCLUSIVE, (f"the interval {ci} lies above {at} but its blocks of "
                                  "fresh processes disagree (a layout effect, not the build)")
        return SLOWER, f"the interval {ci} lies above {at}"
    if (hi < down and min_ratio < 1.0 - limit / 2
            and blocks_agree(block_ratios, lambda r: r < 1.0 - limit / 2)):
        return FASTER, f"the interval {ci} lies below {down:.3f} (-{limit:.1%})"
    if lo >= down and hi <= up:
        return SAME, f"the interval {ci} lies within ±{limit:.1%}"
    if hi <= up:
        return NOT_SLOWER, f"the interval {ci} lies below {at}: no slowdown past it"
    return INCONCLUSIVE, f"the interval {ci} straddles {at}"
