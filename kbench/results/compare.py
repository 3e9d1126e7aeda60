"""Comparing two runs case by case, and the regression gate built on it.

A case is the same case in both runs when its identity columns (KEY)
agree. For a timed case the comparison reports the ratio of the median
per-call times (candidate / base) and a test over the case's passes; the
verdict is faster, slower or same. The p-values are adjusted for multiple
comparisons (Holm's step-down method over every case compared as speed),
so alpha bounds the chance that an identical build gets any "slower"
verdict, not the chance per case.

Rounds measured back to back share the machine's state: a burst of
background load shifts every round of a case at once, and no test that
treats rounds as independent can tell that from a slowdown. The unit of
the statistics is therefore the pass, never the round: a perf run with
several passes (`kbench run --passes N`: the whole catalog N times, so
each case's rounds are spread over the run; on worker targets each pass
in a fresh worker process) records one row per case per pass, and the
test is on the logarithms of the per-pass medians (TWO_RUN_TEST): a
one-sided moderated t over all the cases compared (kbench.results.modt:
with 3 passes a case's own variance has 4 degrees of freedom, too few for
a test that must survive Holm's adjustment, so each variance is shrunk
towards that of the run's cases of its size), or Welch's t per case when
the cases are too few to fit that. Two runs are two processes, and a case
differs between two processes of one build by more than the passes of
either show, so the null of each test is a move of MARGIN_SHARE of the
limit, not none. A slowdown of a whole realization moves all of its cases,
while two processes of one build move single cases each their own way: so
each realization with REALIZATION_MIN_CASES or more tested cases is also
tested with its cases' log ratios as the units (realization_tests), in the
same Holm family as the cases, and fails the gate by its median case's
ratio. A case with fewer than MIN_UNITS passes on either side gets
no p-value at all: it is "not-comparable", and the comparison says so. The
comparison also computes, per candidate pass, the ratio of that pass's
median to the base median, and takes the lower median of those ratios
(the value that more than half the passes reach): a slowdown that shows
in only one pass is not a slowdown. Times measured
under emulation, on another CPU, or on a target the gate is told not to
compare are never compared as speed: such cases are "not-comparable" and
count only for correctness and presence.

The gate fails a candidate run on any correctness failure or error (any
suite), on any case of the base run that is missing from the candidate (or
skipped there while the base ran it), on instruction counts that grew, and
on a run that did not complete. Speed fails it only from interleaved runs
(`kbench gate --ab`, kbench.results.abgate): two runs measured apart are a
first look, and a two-run "slower" (significant and beyond the limit) is
reported as a possible slowdown with the `kbench ab --settle` command that
decides it, never as a failure. Its figure is the statistic the test used:
the ratio of the per-pass geometric means (gated_ratio). A two-run
verdict is "same" only when that ratio lies within the limit both ways; a
ratio outside it that the test could not call is "not significant".

Two runs measured apart also differ by what changed on the machine between
them: load, clock, memory layout. Such a shift moves every case of a run
together, and a test per case cannot tell it from a regression. When most
cases compared as speed (at least DRIFT_SHARE of them, and at least
DRIFT_MIN_CASES) moved the same way and their median ratio is beyond the
slowdown limit, the comparison reports machine drift: those cases' verdicts
are "inconclusive", not slower or faster, and the gate does not fail on them
(unless strict) but says how to settle it (`kbench ab`, base and candidate
interleaved, so that drift is shared by both)."""

from __future__ import annotations

import fnmatch
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import ttest_1samp, ttest_ind

from kbench.judge.numbers import time_unit
from kbench.judge.verdict import FAILING, FAULTS
from kbench.results import abgate, modt
from kbench.results.abgate import AbRun, AbVerdict
from kbench.results.count_compare import (
    DEFAULT_LIMIT,
    CountComparison,
    canonical_target,
    compare_counts,
    failure_detail,
    markdown_table,
)
from kbench.results.count_compare import (
    MISSING as COUNT_MISSING,
)
from kbench.results.runfolder import Run

KEY = ("suite", "target", "op", "catalog", "case", "kind", "realization", "threads")

FASTER, SLOWER, SAME = "faster", "slower", "same"
NOT_SIGNIFICANT = "not significant"  # outside the limit, but the test could not call it
FIRST_LOOK = "speed not gated (first look)"  # the two-run gate's word for a case it does not fail
POSSIBLE_SLOWDOWN = "possible slowdown"
NOT_COMPARABLE, MISSING, NEW, UNTIMED = "not-comparable", "missing", "new", "untimed"
INCONCLUSIVE = "inconclusive"
MIN_UNITS = 2  # passes per run below which a case gets no p-value (rounds are no units)
UNIT_TEST = "one-sided Welch t on log per-pass medians, per case"
# Two runs are two processes: beside the pass-to-pass spread a run shows, a case
# differs between two processes of the same build by an amount no pass of either
# run can show (of the order of a percent, a few percent for some cases, on this
# project's test machine). The two-run test's null is therefore "slower by at most
# MARGIN_SHARE of the limit", not "not slower at all".
MARGIN_SHARE = 0.5
REALIZATION_MIN_CASES = 5  # tested cases a realization needs for its own test
TWO_RUN_TEST = (f"{modt.NAME}, or {UNIT_TEST} when fewer than {modt.MIN_CASES} cases "
                f"spread; each against a move of {MARGIN_SHARE:.0%} of its limit; and per "
                f"realization of {REALIZATION_MIN_CASES} or more cases a one-sided t over its "
                "cases' log ratios")
DRIFT_MIN_CASES = 8  # fewer cases compared as speed: no run-wide shift is inferred
DRIFT_SHARE = 0.75  # this share of them moving one way beyond the limit is machine drift
FAILED = FAILING  # fail, error and the faults (crashed, exited, timeout)
OK_STATUSES = ("pass", "mistrusted", "skip")  # every other status fails the gate
_STATUS_RANK = {"skip": 0, "pass": 1, "mistrusted": 2, "fail": 3, "error": 4,
                **{f: 5 for f in FAULTS}}

CaseKey = tuple[str, str, str, str, str, str, str, int]


@dataclass(frozen=True)
class RunInfo:
    """What a report says about a run."""

    path: str
    git_commit: str
    git_dirty: bool | None
    host: str
    cpu_model: str
    arch: str
    date: str
    complete: bool

    @classmethod
    def of(cls, run: Run) -> RunInfo:
        m = run.meta
        dirty = m.get("git_dirty")
        return cls(path=str(run.path), git_commit=str(m.get("git_commit") or ""),
                   git_dirty=None if dirty is None else bool(dirty),
                   host=str(m.get("host") or ""), cpu_model=str(m.get("cpu_model") or ""),
                   arch=str(m.get("machine") or ""), date=str(m.get("date") or ""),
                   complete=run.complete)

    def describe(self) -> str:
        commit = self.git_commit[:12] or "unknown commit"
        if self.git_dirty:
            commit += "+dirty"
        state = "" if self.complete else ", INCOMPLETE"
        return f"{commit} on {self.host} ({self.cpu_model}, {self.arch}), {self.date}{state}"


@dataclass(frozen=True)
class _Entry:
    """One case of one run (rows with the same key merged)."""

    status: str
    message: str
    times: tuple[float, ...]
    passes: tuple[tuple[float, ...], ...]  # round times per row (pass), in run order
    median_ns: float
    emulated: bool
    timed: bool


@dataclass(frozen=True)
class CaseComparison:
    key: CaseKey
    base_status: str  # "" when the case is not in that run
    cand_status: str
    base_median_ns: float
    cand_median_ns: float
    base_rounds: int
    cand_rounds: int
    ratio: float  # cand median / base median (NaN if not comparable)
    p_slower: float  # one-sided, over per-pass medians: candidate larger (Holm-adjusted)
    p_faster: float  # one-sided, over per-pass medians: candidate smaller (Holm-adjusted)
    verdict: str
    timed: bool = False  # timed in either run
    note: str = ""
    pass_ratio: float = math.nan  # lower median of per-pass ratios (NaN: one pass)
    passes: int = 1  # candidate passes
    base_passes: int = 1
    # the slowdown limit this case is held to: --max-slowdown, or its run-to-run
    # spread over the history where that is wider (--history); NaN: not tested
    limit: float = math.nan
    # mean log per-pass median, candidate minus base (NaN: not tested): the case's
    # unit in its realization's test
    log_ratio: float = math.nan

    @property
    def robust_ratio(self) -> float:
        """The ratio the gate holds against its limit: the pass ratio when
        the candidate ran several passes, else the ratio of medians."""
        return self.ratio if math.isnan(self.pass_ratio) else self.pass_ratio

    @property
    def gated_ratio(self) -> float:
        """The figure the two-run test judged: the ratio of the per-pass
        geometric means (exp of log_ratio); for a case not tested, the
        robust ratio."""
        return math.exp(self.log_ratio) if math.isfinite(self.log_ratio) else self.robust_ratio

    @property
    def ab_label(self) -> str:
        """The case as `kbench ab` names it: realization catalog/case."""
        _, _, _, catalog, case, _, realization, _ = self.key
        return f"{realization} {catalog}/{case}"

    @property
    def label(self) -> str:
        suite, target, op, catalog, case, kind, realization, threads = self.key
        where = f"{catalog}/{case}" if catalog else case
        t = f" x{threads}" if threads > 1 else ""
        return f"{target} {realization}{t} {where} [{kind}]"

    @property
    def p_value(self) -> float:
        """The one-sided p in the direction the medians moved."""
        return self.p_faster if self.ratio < 1 else self.p_slower


RealizationKey = tuple[str, str, str, str, int]  # suite, target, op, realization, threads


@dataclass(frozen=True)
class RealizationComparison:
    """A realization's cases tested together (realization_tests): a change
    that moves all of them shows in their log ratios as units even where no
    case alone reaches a verdict."""

    key: RealizationKey
    cases: int
    median_ratio: float  # the median of its cases' ratios of per-pass mean logs
    p_slower: float  # Holm-adjusted with the cases
    p_faster: float
    verdict: str = SAME
    note: str = ""

    @property
    def label(self) -> str:
        suite, target, op, realization, threads = self.key
        t = f" x{threads}" if threads > 1 else ""
        return f"{target} {realization}{t} [{self.cases} cases together]"


@dataclass
class Comparison:
    base: RunInfo
    cand: RunInfo
    alpha: float
    max_slowdown: float
    cases: list[CaseComparison]
    warnings: list[str] = field(default_factory=list)
    instructions: CountComparison = field(default_factory=CountComparison)  # exact counts
    test: str = ""  # the test that gave the p-values (two_run_tests); "" when none ran
    realizations: list[RealizationComparison] = field(default_factory=list)

    def timed(self) -> list[CaseComparison]:
        return [c for c in self.cases if c.timed]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.timed():
            out[c.verdict] = out.get(c.verdict, 0) + 1
        return out

    def frame(self) -> pd.DataFrame:
        rows = [{**dict(zip(KEY, c.key, strict=True)), "base_status": c.base_status,
                 "cand_status": c.cand_status, "base_median_ns": c.base_median_ns,
                 "cand_median_ns": c.cand_median_ns, "base_rounds": c.base_rounds,
                 "cand_rounds": c.cand_rounds, "ratio": c.ratio, "p_slower": c.p_slower,
                 "p_faster": c.p_faster, "pass_ratio": c.pass_ratio, "passes": c.passes,
                 "verdict": c.verdict, "note": c.note, "limit": c.limit}
                for c in self.cases]
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class GateFailure:
    reason: str  # correctness | missing | slowdown | count | incomplete | suite
    case: str  # the case label, "" for a run-level failure
    detail: str


@dataclass(frozen=True)
class FirstLook:
    """A speed finding of the two-run gate (no --ab): reported, never a
    failure; `kbench ab --settle` decides it."""

    case: str  # the case or realization label
    ratio: float  # the statistic the test judged (gated_ratio; a realization: its median)
    detail: str
    settle: str  # the command that settles it ("" for a realization: settle its cases)


@dataclass
class GateResult:
    comparison: Comparison
    failures: list[GateFailure]
    interleaved: list[AbVerdict] = field(default_factory=list)  # --ab: the speed verdicts
    ab_paths: list[str] = field(default_factory=list)  # --ab: the interleaved run folders
    ab_runs: list[AbRun] = field(default_factory=list)  # --ab: the interleaved runs
    first_look: list[FirstLook] = field(default_factory=list)  # no --ab: possible slowdowns
    unjudged: list[str] = field(default_factory=list)  # --ab: timed cases no folder judged

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def warnings(self) -> list[str]:
        return self.comparison.warnings

    @property
    def ab_path(self) -> str:
        """The interleaved run folders, comma-separated ("" without --ab)."""
        return ", ".join(self.ab_paths)

    @property
    def undecided(self) -> list[AbVerdict]:
        """--ab: the inconclusive cases (the one undecided count)."""
        return [v for v in self.interleaved if v.verdict == abgate.INCONCLUSIVE]

    def settle_commands(self) -> list[str]:
        """--ab: one command per inconclusive case not yet settled."""
        return abgate.settle_commands(self.interleaved, self.ab_runs,
                                      self.comparison.max_slowdown)


def unit_medians(entry: _Entry) -> list[float]:
    """A case's figure per unit: the median of each pass's rounds (one row
    of results.csv each)."""
    return [float(np.median(g)) for g in entry.passes if g]


def unit_test(base: Sequence[float], cand: Sequence[float],
              margin: float = 0.0) -> tuple[float, float]:
    """(p_slower, p_faster): one-sided p-values for "the candidate's
    per-pass medians are larger" and "... smaller", from Welch's t-test on
    their logarithms (a ratio is a difference of logs; the spread between
    passes is what the test sees, the number of rounds in a pass is not).
    With a margin m (a log ratio >= 0), "larger by more than m" and
    "smaller by more than m". Fewer than MIN_UNITS passes on a side: (1, 1),
    no evidence either way. Passes without any spread on both sides: 0 in
    the direction the medians moved beyond the margin (the figures are
    exact), 1 otherwise. The gate's test when the cases are too few to fit
    the moderated test's prior (TWO_RUN_TEST).

    Why one-sided: each verdict answers a directional question, and the
    gate asks only one: is the candidate slower? At the same alpha the
    one-sided test detects a slowdown with more power than a two-sided
    test, which would spend half of alpha on speedups the gate never fails.
    The two are applied separately (at most one can be below any alpha <
    0.5), so the false-alarm rate per case on identical builds is at most
    alpha, and a "faster" or "slower" verdict at most 2 alpha."""
    if len(base) < MIN_UNITS or len(cand) < MIN_UNITS:
        return 1.0, 1.0
    lb, lc = np.log(np.asarray(base, float)), np.log(np.asarray(cand, float))
    with np.errstate(invalid="ignore"):  # inf - inf of an infinite median: NaN, below
        spread = np.ptp(lb), np.ptp(lc)
    if spread == (0, 0):
        d = float(lc.mean() - lb.mean())
        return (0.0 if d > margin else 1.0), (0.0 if d < -margin else 1.0)
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        # scipy warns of "catastrophic cancellation" when one side barely spreads, and of
        # NaN statistics: the p-values say what they can, NaN is no evidence (below)
        warnings.simplefilter("ignore", RuntimeWarning)
        slower = float(ttest_ind(lc - margin, lb, equal_var=False,
                                 alternative="greater").pvalue)
        faster = float(ttest_ind(lc + margin, lb, equal_var=False, alternative="less").pvalue)
    return (1.0 if math.isnan(slower) else slower), (1.0 if math.isnan(faster) else faster)


def two_run_tests(units: Sequence[tuple[Sequence[float], Sequence[float]]],
                  limits: Sequence[float]) -> tuple[list[tuple[float, float]], str]:
    """(p_slower, p_faster) per case of two runs, from its per-pass medians
    (base, candidate), before Holm's adjustment; and the name of the test
    that gave them. Each case is tested against MARGIN_SHARE of its slowdown
    limit (see TWO_RUN_TEST): the moderated t over all the cases when they
    are enough to fit its prior (kbench.results.modt), else Welch's t per
    case (unit_test)."""
    margins = [math.log1p(MARGIN_SHARE * lim) for lim in limits]
    null = f", against a move of {MARGIN_SHARE:.0%} of each case's limit"
    fitted = modt.moderated_tests(units, margins)
    if fitted is not None:
        pvalues, prior = fitted
        return pvalues, (f"{modt.NAME} (prior on {prior.df:.1f} degrees of freedom){null}"
                         if math.isfinite(prior.df) else
                         f"{modt.NAME} (the cases agree: each has its size's variance){null}")
    return ([unit_test(b, c, m) for (b, c), m in zip(units, margins, strict=True)],
            UNIT_TEST + null)


def realization_tests(cases: Sequence[CaseComparison], tested: Sequence[int],
                      max_slowdown: float) -> list[RealizationComparison]:
    """Per realization with at least REALIZATION_MIN_CASES tested cases: one-
    sided t-tests over its cases' log ratios as units (before Holm's
    adjustment), against a move of MARGIN_SHARE of the limit. A change that
    slows a realization moves all its cases; a case's move between two
    processes of one build is its own (the between-process effect the
    margin is for), so over the cases it is spread, not shift."""
    groups: dict[RealizationKey, list[float]] = {}
    for i in tested:
        c = cases[i]
        if math.isfinite(c.log_ratio):
            suite, target, op, _, _, _, realization, threads = c.key
            groups.setdefault((suite, target, op, realization, threads), []).append(c.log_ratio)
    m = math.log1p(MARGIN_SHARE * max_slowdown)
    out = []
    for key, units in groups.items():
        if len(units) < REALIZATION_MIN_CASES:
            continue
        u = np.asarray(units)
        if np.ptp(u) == 0:  # exact figures: 0 in the direction they moved beyond m
            slower, faster = (0.0 if u[0] > m else 1.0), (0.0 if u[0] < -m else 1.0)
        else:
            slower = float(ttest_1samp(u - m, 0.0, alternative="greater").pvalue)
            faster = float(ttest_1samp(u + m, 0.0, alternative="less").pvalue)
        out.append(RealizationComparison(key, len(units), float(np.exp(np.median(u))),
                                         slower, faster))
    return out


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: the i-th smallest of m p-values becomes
    max over j <= i of min(1, (m - j) * p_(j)). Rejecting adjusted p < alpha
    keeps the chance of any false rejection among the m at most alpha,
    whatever the dependence between the tests."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def pass_ratio(base: _Entry, cand: _Entry) -> float:
    """Lower median of (median of candidate pass i) / (base median): the
    ratio that more than half of the candidate's passes reach. NaN with a
    single candidate pass."""
    groups = [g for g in cand.passes if g]
    if len(groups) < 2 or not base.median_ns > 0:
        return math.nan
    ratios = sorted(float(np.median(g)) / base.median_ns for g in groups)
    return ratios[(len(ratios) - 1) // 2]


def _key(row: Any) -> CaseKey:
    return (str(row.suite), str(row.target), str(row.op), str(row.catalog), str(row.case),
            str(row.kind), str(row.realization), int(row.threads))


case_key = _key  # a result row's case key (kbench.results.noise)


def _index(run: Run) -> dict[CaseKey, _Entry]:
    """Merge rows per key: worst status, all per-round times."""
    groups: dict[CaseKey, list[Any]] = {}
    for row in run.results.itertuples(index=False):
        groups.setdefault(_key(row), []).append(row)
    out: dict[CaseKey, _Entry] = {}
    for key, rows in groups.items():
        worst = max(rows, key=lambda r: _STATUS_RANK.get(str(r.status), 4))
        passes = tuple(tuple(float(t) for t in r.round_times) for r in rows)
        times = tuple(t for g in passes for t in g)
        medians = [float(r.time_median_ns) for r in rows if pd.notna(r.time_median_ns)]
        median = (float(np.median(times)) if times
                  else float(np.median(medians)) if medians else math.nan)
        out[key] = _Entry(status=str(worst.status), message=str(worst.message), times=times,
                          passes=passes, median_ns=median,
                          emulated=any(bool(r.emulated) for r in rows),
                          timed=any(int(r.rounds) > 0 for r in rows) or bool(times))
    return out


def _emulated_targets(run: Run) -> set[str]:
    targets = run.meta.get("targets") or {}
    return {name for name, t in targets.items() if isinstance(t, dict) and t.get("emulated")}


def _speed_target(target: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(target, p) for p in patterns)


def compare_runs(base: Run, cand: Run, alpha: float = 0.01, max_slowdown: float = 0.05,
                 speed_targets: Sequence[str] = ("*",),
                 max_count_growth: float = DEFAULT_LIMIT,
                 interleaved: bool = False,
                 noise: Mapping[CaseKey, float] | None = None) -> Comparison:
    """Compare every case of two runs.

    Timed cases get the ratio of medians (candidate / base), the pass
    ratio, and the two one-sided p-values of unit_test over the per-pass
    medians, each Holm-adjusted over the cases compared as speed; the
    verdict is "slower" if p_slower < alpha and the ratio and the pass
    ratio are above 1, "faster" if p_faster < alpha and they are below 1,
    else "same". Cases timed under emulation (in either run), on targets
    outside speed_targets (fnmatch patterns), on different CPUs, without
    per-round times, or with fewer than MIN_UNITS passes on a side (rounds
    alone give no p-value) are "not-comparable". A base case
    absent from the candidate is "missing", a candidate case absent from
    the base "new", an untimed case in both "untimed". With interleaved
    (the gate's --ab), no time of the two runs is compared: every timed
    case is "not-comparable", its speed judged from the interleaved run.
    noise (the gate's --history, kbench.results.noise): per case a limit
    wider than max_slowdown, its run-to-run spread on this machine; a case
    that moved by less is "same", with a note saying so."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
    if max_slowdown < 0:
        raise ValueError(f"max_slowdown must be >= 0, got {max_slowdown}")
    b_info, c_info = RunInfo.of(base), RunInfo.of(cand)
    warnings: list[str] = []
    same_cpu = (b_info.cpu_model, b_info.arch) == (c_info.cpu_model, c_info.arch)
    if not same_cpu:
        warnings.append(f"base and candidate ran on different CPUs ({b_info.cpu_model}, "
                        f"{b_info.arch} vs {c_info.cpu_model}, {c_info.arch}): no speed compared")
    if base.results.empty:
        warnings.append("the base run has no results")
    emulated = _emulated_targets(base) | _emulated_targets(cand)
    b_idx, c_idx = _index(base), _index(cand)
    keys = list(b_idx) + [k for k in c_idx if k not in b_idx]
    cases: list[CaseComparison] = []
    tested: list[int] = []  # indices of the cases compared as speed
    units: list[tuple[list[float], list[float]]] = []  # their per-pass medians (base, cand)
    few_units = 0
    for key in keys:
        b, c = b_idx.get(key), c_idx.get(key)
        nan = math.nan
        common = dict(key=key, base_status=b.status if b else "",
                      cand_status=c.status if c else "",
                      base_median_ns=b.median_ns if b else nan,
                      cand_median_ns=c.median_ns if c else nan,
                      base_rounds=len(b.times) if b else 0, cand_rounds=len(c.times) if c else 0,
                      timed=bool((b and b.timed) or (c and c.timed)))
        if b is None or c is None:
            verdict = NEW if b is None else MISSING
            cases.append(CaseComparison(**common, ratio=nan, p_slower=nan, p_faster=nan,
                                        verdict=verdict))
            continue
        if not (b.timed or c.timed):
            cases.append(CaseComparison(**common, ratio=nan, p_slower=nan, p_faster=nan,
                                        verdict=UNTIMED))
            continue
        ratio = c.median_ns / b.median_ns if b.median_ns > 0 else nan
        note = ""
        if b.emulated or c.emulated or key[1] in emulated:
            note = "emulated: times are not speed"
        elif interleaved:
            note = INTERLEAVED_NOTE
        elif not _speed_target(key[1], speed_targets):
            note = "target not speed-comparable"
        elif not same_cpu:
            note = "different CPUs"
        elif len(b.times) < 2 or len(c.times) < 2 or math.isnan(ratio):
            note = "no per-round times"
        elif min(len(unit_medians(b)), len(unit_medians(c))) < MIN_UNITS:
            note = (f"passes {len(unit_medians(b))} and {len(unit_medians(c))}: rounds alone "
                    "give no p-value")
            few_units += 1
        if note:
            not_times = "emulated" in note or note == INTERLEAVED_NOTE  # no ratio to show
            cases.append(CaseComparison(**common, ratio=nan if not_times else ratio,
                                        p_slower=nan, p_faster=nan, verdict=NOT_COMPARABLE,
                                        note=note))
            continue
        limit = max(max_slowdown, (noise or {}).get(key, 0.0))
        units.append((unit_medians(b), unit_medians(c)))
        cases.append(CaseComparison(**common, ratio=ratio, p_slower=nan,
                                    p_faster=nan, verdict=SAME,
                                    pass_ratio=pass_ratio(b, c), passes=len(c.passes),
                                    base_passes=len(b.passes), limit=limit))
        tested.append(len(cases) - 1)
    pvalues, test = two_run_tests(units, [cases[i].limit for i in tested])
    for i, (ps, pf), (ub, uc) in zip(tested, pvalues, units, strict=True):
        cases[i] = replace(cases[i], p_slower=ps, p_faster=pf,
                           log_ratio=_log_ratio(ub, uc))
    reals = realization_tests(cases, tested, max_slowdown)
    if reals:
        test += (f"; per realization of {REALIZATION_MIN_CASES} or more cases also a one-"
                 "sided t over its cases' log ratios, against the same margin, in the same "
                 "Holm family")
    cases, reals = _adjusted(cases, tested, reals, alpha, max_slowdown)
    cases = _within_noise(cases, tested, max_slowdown)
    cases, drift = _drift(cases, tested, max_slowdown)
    if drift:
        warnings.append(drift)
        way = SLOWER if run_shift(cases, tested, max_slowdown)[0] > 1 else FASTER
        reals = [replace(r, verdict=INCONCLUSIVE, note="moved with the whole run: machine "
                         "drift, not this change") if r.verdict == way else r for r in reals]
    if few_units:
        warnings.append(f"{few_units} timed case(s) have fewer than {MIN_UNITS} passes in a "
                        "run: the rounds of one pass share the machine's state and are not "
                        "independent samples, so no p-value is computed and their speed is "
                        f"not gated (time both runs with kbench run --passes 3 or more, or "
                        "gate speed interleaved: kbench gate --ab)")
    instructions = compare_counts(base.results.to_dict("records"),
                                  cand.results.to_dict("records"), max_count_growth)
    qemu = {name: {str(v) for v in run.results.get("count_qemu", []) if str(v)}
            for name, run in (("base", base), ("candidate", cand))}
    if qemu["base"] and qemu["candidate"] and qemu["base"] != qemu["candidate"]:
        warnings.append(f"instruction counts come from different QEMU versions (base "
                        f"{', '.join(sorted(qemu['base']))}, candidate "
                        f"{', '.join(sorted(qemu['candidate']))})")
    return Comparison(b_info, c_info, alpha, max_slowdown, cases, warnings, instructions,
                      test if tested else "", reals)


def _log_ratio(base: Sequence[float], cand: Sequence[float]) -> float:
    with np.errstate(divide="ignore", invalid="ignore"):
        d = float(np.mean(np.log(np.asarray(cand, float)))
                  - np.mean(np.log(np.asarray(base, float))))
    return d if math.isfinite(d) else math.nan


def _adjusted(cases: list[CaseComparison], tested: list[int],
              reals: list[RealizationComparison], alpha: float, max_slowdown: float = 0.05
              ) -> tuple[list[CaseComparison], list[RealizationComparison]]:
    """Holm-adjusts the p-values of the tested cases and the realizations
    together (one family: alpha bounds the chance of any verdict of either
    kind on identical builds) and sets their verdicts."""
    if not tested:
        return cases, reals
    n = len(tested)
    slower = holm([cases[i].p_slower for i in tested] + [r.p_slower for r in reals])
    faster = holm([cases[i].p_faster for i in tested] + [r.p_faster for r in reals])
    out_r = []
    for r, ps, pf in zip(reals, slower[n:], faster[n:], strict=True):
        verdict = (SLOWER if ps < alpha and r.median_ratio > 1 else
                   FASTER if pf < alpha and r.median_ratio < 1 else
                   _unmoved(r.median_ratio, max_slowdown))
        out_r.append(replace(r, p_slower=ps, p_faster=pf, verdict=verdict))
    slower, faster = slower[:n], faster[:n]
    out = list(cases)
    for i, ps, pf in zip(tested, slower, faster, strict=True):
        c = cases[i]
        up = c.ratio > 1 and not c.robust_ratio <= 1
        down = c.ratio < 1 and not c.robust_ratio >= 1
        verdict = (SLOWER if ps < alpha and up else FASTER if pf < alpha and down
                   else _unmoved(c.gated_ratio, c.limit))
        out[i] = replace(c, p_slower=ps, p_faster=pf, verdict=verdict)
    return out, out_r


def _unmoved(ratio: float, limit: float) -> str:
    """The verdict of a case (or realization) the test did not call: "same"
    only when its ratio lies within the limit both ways, else "not
    significant" (a large move the test could not tell from noise is not
    "same")."""
    inside = 1 / (1 + limit) <= ratio <= 1 + limit
    return SAME if inside else NOT_SIGNIFICANT


def _within_noise(cases: list[CaseComparison], tested: list[int],
                  max_slowdown: float) -> list[CaseComparison]:
    """A slower or faster case whose move stays inside its own run-to-run
    spread (a limit widened by --history) is "same", with the note why."""
    out = list(cases)
    for i in tested:
        c = out[i]
        if not c.limit > max_slowdown or c.verdict not in (SLOWER, FASTER):
            continue
        moved = c.robust_ratio if c.verdict == SLOWER else 1 / c.robust_ratio
        if moved <= 1 + c.limit:
            out[i] = replace(c, verdict=SAME, note=f"{c.verdict} by {moved - 1:.1%}, within "
                             f"its run-to-run spread {c.limit:.1%} on this machine (--history)")
    return out


def run_shift(cases: Sequence[CaseComparison], tested: Sequence[int],
              max_slowdown: float) -> tuple[float, int]:
    """(median ratio of the tested cases, how many moved that way beyond the
    limit); (1.0, 0) when fewer than DRIFT_MIN_CASES were tested."""
    ratios = [cases[i].robust_ratio for i in tested if cases[i].robust_ratio > 0]
    if len(ratios) < DRIFT_MIN_CASES:
        return 1.0, 0
    shift = float(np.median(ratios))
    if shift >= 1:
        moved = sum(r > 1 + max_slowdown for r in ratios)
    else:
        moved = sum(r < 1 / (1 + max_slowdown) for r in ratios)
    return shift, moved


def _drift(cases: list[CaseComparison], tested: list[int],
           max_slowdown: float) -> tuple[list[CaseComparison], str]:
    """Cases that moved with a run-wide shift become inconclusive (see the
    module text); the warning that says so ("" without drift)."""
    shift, moved = run_shift(cases, tested, max_slowdown)
    n = sum(1 for i in tested if cases[i].robust_ratio > 0)
    beyond = shift > 1 + max_slowdown or shift < 1 / (1 + max_slowdown)
    if not n or not beyond or moved < DRIFT_SHARE * n:
        return cases, ""
    way = SLOWER if shift > 1 else FASTER
    note = (f"moved with the whole run ({shift - 1:+.1%} median over {n} cases): machine "
            "drift, not this change")
    out = list(cases)
    changed = 0
    for i in tested:
        if out[i].verdict == way:
            out[i] = replace(out[i], verdict=INCONCLUSIVE, note=note)
            changed += 1
    return out, (f"machine drift: {moved} of {n} cases compared as speed moved {way} beyond "
                 f"the limit together (median ratio {shift:.3f}, {shift - 1:+.1%}); "
                 f"{changed} {way} verdict(s) are inconclusive instead: two runs measured "
                 "apart cannot tell such a shift from a change. Settle it with base and "
                 "candidate interleaved: kbench ab --base worker:BASE_CHECKOUT/build/worker/"
                 "host/kb_worker --cand worker:host")


def gate(base: Run, cand: Run, alpha: float = 0.01, max_slowdown: float = 0.05,
         speed_targets: Sequence[str] = ("*",),
         max_count_growth: float = DEFAULT_LIMIT, strict: bool = False,
         ab: AbRun | Sequence[AbRun] | None = None,
         noise: Mapping[CaseKey, float] | None = None) -> GateResult:
    """The regression gate: compare_runs plus the failures that fail a change.
    With ab (one or more interleaved `kbench ab` runs, the later winning per
    case), speed is judged from them alone (kbench.results.abgate): a
    slower case fails, an inconclusive one only under strict. Without ab,
    speed is a first look: possible slowdowns are listed with the command
    that settles each (first_look), never failures. noise: per-case limits
    widened to their run-to-run spread (--history, kbench.results.noise)."""
    runs = [] if ab is None else [ab] if isinstance(ab, AbRun) else list(ab)
    comp = compare_runs(base, cand, alpha, max_slowdown, speed_targets, max_count_growth,
                        interleaved=bool(runs), noise=noise)
    interleaved = abgate.judge_all(runs, max_slowdown, alpha) if runs else []
    failures = _ab_failures(runs, interleaved, strict, max_slowdown) if runs else []
    unjudged: list[str] = []
    if runs:
        if not any(v.stats is not None for v in interleaved):
            comp.warnings.append(f"the interleaved run {', '.join(str(r.path) for r in runs)} "
                                 "timed no case: speed is not gated")
        judged = {v.label for v in interleaved}
        unjudged = list(dict.fromkeys(c.ab_label for c in comp.cases
                                      if c.note == INTERLEAVED_NOTE
                                      and c.ab_label not in judged))
        for r in runs:
            if r.limit == r.limit and abs(r.limit - max_slowdown) > 1e-12:
                comp.warnings.append(f"{r.path}: `kbench ab` judged it at ±{r.limit:.1%}; the "
                                     f"gate judges it again at its own limit ±{max_slowdown:.1%}"
                                     " (run kbench ab with --min-effect "
                                     f"{max_slowdown * 100:g}% for one set of verdicts)")
    for name, info in (("candidate", comp.cand), ("base", comp.base)):
        if not info.complete:
            failures.append(GateFailure("incomplete", "", f"the {name} run did not complete "
                                        f"({info.path}): its results cannot be trusted whole"))
    c_idx = _index(cand)
    for case in comp.cases:
        entry = c_idx.get(case.key)
        if entry is not None and entry.status in FAILED:
            failures.append(GateFailure("correctness", case.label,
                                        f"{entry.status}: {entry.message}".rstrip(": ")))
        elif entry is not None and entry.status not in OK_STATUSES:
            failures.append(GateFailure("correctness", case.label,
                                        f"unknown status {entry.status!r} (a verdict is one of "
                                        f"{', '.join((*OK_STATUSES, *FAILED))})"))
        if case.verdict == MISSING and case.base_status:
            failures.append(GateFailure("missing", case.label, "in the base run, not in the "
                                        "candidate"))
        elif case.cand_status == "skip" and case.base_status not in ("", "skip"):
            failures.append(GateFailure("missing", case.label, "ran in the base run, skipped "
                                        f"in the candidate: {entry.message if entry else ''}"))
    failures += _count_failures(comp, c_idx)
    status = cand.meta.get("pytest_exit_status")
    if status not in (None, 0) and not any(f.reason == "correctness" for f in failures):
        failures.append(GateFailure("suite", "", f"the candidate's suites exited with status "
                                    f"{status} without a failing result row (a test outside the "
                                    "case verdicts failed, e.g. determinism)"))
    first = [] if runs else first_look(comp)
    return GateResult(comp, failures, interleaved, [str(r.path) for r in runs], runs, first,
                      unjudged)


INTERLEAVED_NOTE = "speed from the interleaved run (--ab)"
SETTLE_BASE = "worker:BASE_CHECKOUT/build/worker/host/kb_worker"  # the base build's worker


def first_look(comp: Comparison) -> list[FirstLook]:
    """The two-run gate's speed findings: each case (and realization) the
    test called slower beyond its limit, with the statistic the test judged
    and the command that settles it. Never failures: two runs measured
    apart cannot tell a slowdown from what changed on the machine between
    them."""
    out = []
    for c in comp.cases:
        if first_look_word(c, comp) != POSSIBLE_SLOWDOWN:
            continue
        limit = c.limit if c.limit >= comp.max_slowdown else comp.max_slowdown
        why = (f"limit {limit:.1%}: its run-to-run spread (--history), wider than "
               f"{comp.max_slowdown:.1%}" if limit > comp.max_slowdown else f"limit {limit:.1%}")
        in_passes = ("" if math.isnan(c.pass_ratio) else
                     f", {c.pass_ratio - 1:+.1%} in more than half of {c.passes} passes")
        out.append(FirstLook(
            c.label, c.gated_ratio,
            f"{c.gated_ratio - 1:+.1%} (ratio of per-pass geometric means; {why}){in_passes}, "
            f"p = {c.p_slower:.2g} < {comp.alpha:g} over {c.base_passes} and {c.passes} "
            f"passes ({_short(comp.test)}, Holm-adjusted)",
            abgate.settle_command(SETTLE_BASE, "worker:host", c.ab_label, comp.max_slowdown)))
    for r in comp.realizations:
        if r.verdict == SLOWER and r.median_ratio > 1 + comp.max_slowdown:
            out.append(FirstLook(
                r.label, r.median_ratio,
                f"{r.median_ratio - 1:+.1%}: the median of its {r.cases} cases' ratios of "
                f"per-pass geometric means (limit {comp.max_slowdown:.1%}), p = "
                f"{r.p_slower:.2g} < {comp.alpha:g} (one-sided t over the cases' log "
                f"ratios against a move of {MARGIN_SHARE:.0%} of the limit, Holm-adjusted with "
                "the cases)", ""))
    return out


def _ab_failures(runs: Sequence[AbRun], verdicts: list[AbVerdict], strict: bool,
                 limit: float) -> list[GateFailure]:
    """What fails the gate in the interleaved runs: one not complete, a case
    that failed to verify, a slowdown beyond the limit (inconclusive:
    --strict)."""
    out = []
    for ab in runs:
        if not ab.complete:
            out.append(GateFailure("incomplete", "", f"the interleaved run did not complete "
                                   f"({ab.path}): its speed verdicts cannot be trusted whole"))
    for v in verdicts:
        if v.verdict == abgate.FAILED:
            out.append(GateFailure("correctness", v.label, f"interleaved run: {v.detail}"))
        elif v.verdict == SLOWER:
            out.append(GateFailure("slowdown", v.label, f"interleaved (kbench ab): {v.detail}"))
        elif strict and v.verdict == abgate.INCONCLUSIVE:
            settle = abgate.settle_commands([v], runs, limit)
            out.append(GateFailure("inconclusive", v.label, f"interleaved: {v.detail}"
                                   + (f"; settle it: {settle[0]}" if settle else "")
                                   + " (--strict)"))
    return out


def _count_failures(comp: Comparison, c_idx: dict[CaseKey, _Entry]) -> list[GateFailure]:
    """Instruction counts: growth past the limit, counts that differ between
    passes, and counts the base had but a candidate that ran the case lacks."""
    present = {(canonical_target(k[1]), k[3], k[4], k[6]) for k, e in c_idx.items()
               if e.status not in FAILED}
    out = [GateFailure("count", d.label, failure_detail(d, comp.instructions.limit))
           for d in comp.instructions.regressions()]
    for d in comp.instructions.deltas:
        if d.nondeterministic:
            out.append(GateFailure("count", d.label, f"counts differ between rows of the "
                                   f"{d.nondeterministic} run: not deterministic"))
        if d.verdict == COUNT_MISSING and d.key in present:
            out.append(GateFailure("count", d.label, "counted in the base run, not in the "
                                   "candidate (run it with --count-method tb)"))
    return out


def _tally(words: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for w in words:
        out[w] = out.get(w, 0) + 1
    return out


def _short(test: str) -> str:
    """The test's name for a failure line: moderated or Welch t."""
    return ("moderated t on log pass medians" if test.startswith(modt.NAME)
            else "Welch t on log pass medians")


def _fmt_ns(ns: float) -> str:
    if ns != ns:  # NaN
        return "–"
    return time_unit(ns)


def _fmt_ratio(r: float) -> str:
    return "–" if r != r else f"{r:.3f} ({r - 1:+.1%})"


def _fmt_pass(c: CaseComparison) -> str:
    return "–" if c.pass_ratio != c.pass_ratio else f"{c.pass_ratio:.3f} ({c.passes} passes)"


def _fmt_p(p: float) -> str:
    """A p-value; one that underflowed to 0 is shown as below the smallest double."""
    return "–" if p != p else "< 1e-300" if p == 0 else f"{p:.2g}"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def first_look_word(c: CaseComparison, comp: Comparison) -> str:
    """A case's speed word in the two-run gate (no --ab): never "same" and
    never a failure: "possible slowdown" where the test called it slower
    beyond its limit, "possible speedup" for the mirror image, else "speed
    not gated (first look)"; a case not compared keeps its verdict."""
    if c.verdict in (NOT_COMPARABLE, MISSING, NEW, UNTIMED):
        return c.verdict
    limit = c.limit if c.limit >= comp.max_slowdown else comp.max_slowdown
    # beyond the limit in the figure the test judged and in more than half of the passes
    if c.verdict == SLOWER and c.gated_ratio > 1 + limit and c.robust_ratio > 1 + limit:
        return POSSIBLE_SLOWDOWN
    if (c.verdict == FASTER and c.gated_ratio < 1 / (1 + limit)
            and c.robust_ratio < 1 / (1 + limit)):
        return "possible speedup"
    return FIRST_LOOK


def gated_sort(cases: list[CaseComparison]) -> list[CaseComparison]:
    """By the statistic the test judged, largest (slowest) first; cases
    without one last."""
    return sorted(cases, key=lambda c: -(c.gated_ratio if c.gated_ratio == c.gated_ratio
                                         else -math.inf))


def _perf_table(cases: list[CaseComparison], max_rows: int,
                word: Any = None) -> list[str]:
    """The two-run table, sorted by the gated statistic (largest first);
    word(case): the verdict to show (default: the comparison's)."""
    rows = gated_sort(cases)
    out = ["| target | realization | case | kind | base median | candidate median "
           "| gated ratio | median ratio | pass ratio | p | verdict |",
           "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for c in rows[:max_rows]:
        _, target, _, catalog, case, kind, realization, threads = c.key
        real = realization + (f" ×{threads}" if threads > 1 else "")
        shown = word(c) if word is not None else c.verdict
        verdict = f"**{shown}**" if shown in (SLOWER, MISSING, POSSIBLE_SLOWDOWN) else shown
        if c.note:
            verdict += f" ({_md(c.note)})"
        gated = _fmt_ratio(c.gated_ratio) if math.isfinite(c.log_ratio) else "–"
        out.append(f"| {_md(target)} | `{_md(real)}` | {_md(case)} | {_md(kind)} "
                   f"| {_fmt_ns(c.base_median_ns)} | {_fmt_ns(c.cand_median_ns)} "
                   f"| {gated} | {_fmt_ratio(c.ratio)} | {_fmt_pass(c)} | {_fmt_p(c.p_value)} "
                   f"| {verdict} |")
    if len(rows) > max_rows:
        out.append(f"\n… and {len(rows) - max_rows} more timed case(s).")
    return out


def ab_tally(verdicts: list[AbVerdict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in verdicts:
        out[v.verdict] = out.get(v.verdict, 0) + 1
    return out


AB_ORDER = {abgate.FAILED: 0, SLOWER: 1, abgate.INCONCLUSIVE: 2, abgate.UNTIMED: 3,
            abgate.NOT_SLOWER: 4, FASTER: 5, SAME: 6}


def _ab_markdown(result: GateResult, max_rows: int) -> list[str]:
    tally = ", ".join(f"{n} {v}" for v, n in sorted(ab_tally(result.interleaved).items()))
    limit = result.comparison.max_slowdown
    lines = [f"### Speed, interleaved ({tally or 'no case'})", "",
             f"From {', '.join(f'`{_md(p)}`' for p in result.ab_paths)} (`kbench ab`: base "
             "and candidate rounds alternating; where several folders judged a case, the "
             f"later one's verdict stands). At the limit ±{limit:.1%}: slower (the "
             f"interval above {1 + limit:.3f}) fails; not slower (below it), same (within "
             f"±{limit:.1%}) and faster pass; inconclusive (the interval straddles "
             f"{1 + limit:.3f}, or its minima or blocks disagree) is not a failure unless "
             "--strict.", "",
             "| case | paired ratio [interval] | verdict | why |", "|---|---:|---|---|"]
    shown = sorted(result.interleaved, key=lambda v: AB_ORDER.get(v.verdict, 7))[:max_rows]
    for v in shown:
        mark = f"**{v.verdict}**" if v.verdict in (SLOWER, abgate.INCONCLUSIVE,
                                                   abgate.FAILED) else v.verdict
        why = v.stats.reason if v.stats is not None else v.detail
        if v.at_the_limit:
            why = f"at the limit after settling: {why}"
        lines.append(f"| {_md(v.label)} | {abgate.ratio_text(v)} | {mark} | {_md(why)} |")
    if len(result.interleaved) > max_rows:
        lines.append(f"\n… and {len(result.interleaved) - max_rows} more case(s).")
    commands = result.settle_commands()
    if commands:
        lines += ["", f"Settle the {len(commands)} inconclusive case(s), one command each, then "
                  "gate again with each folder as one more `--ab` (the later folder wins):", "",
                  "```sh", *commands, "```"]
    if result.unjudged:
        lines += ["", f"Unjudged: {len(result.unjudged)} timed case(s) no interleaved folder "
                  "judged: " + ", ".join(_md(u) for u in result.unjudged[:max_rows])]
    return lines


def _first_look_markdown(result: GateResult, max_rows: int) -> list[str]:
    found = result.first_look
    lines = [f"### Speed: first look, not gated ({len(found)} possible slowdown(s))", "",
             "Two runs measured apart differ by what changed on the machine between them: "
             "their speed findings never fail the gate. Settle a possible slowdown with "
             "`kbench ab` (base and candidate interleaved), then gate with `--ab`."]
    if found:
        lines += ["", "| case | gated ratio | detail |", "|---|---:|---|"]
        lines += [f"| {_md(f.case)} | {_fmt_ratio(f.ratio)} | {_md(f.detail)} |"
                  for f in found[:max_rows]]
        commands = [f.settle for f in found if f.settle]
        if commands:
            lines += ["", "```sh", *commands[:max_rows], "```"]
    return lines


def markdown(result: GateResult | Comparison, max_rows: int = 200) -> str:
    """A Markdown report (for a CI job summary): the verdict and what decides
    it first (failures, the speed verdicts), then the settings, the counts,
    the two-run timing table sorted by the gated statistic and the
    correctness counts of the candidate."""
    gate_result = result if isinstance(result, GateResult) else None
    comp = result.comparison if isinstance(result, GateResult) else result
    with_ab = gate_result is not None and bool(gate_result.ab_paths)
    lines: list[str] = []
    if gate_result is not None:
        mark = "PASSED" if gate_result.passed else "FAILED"
        lines += [f"## kbench gate: {mark}"]
        if gate_result.failures:
            lines += ["", f"### Failures ({len(gate_result.failures)})", "",
                      "| reason | case | detail |", "|---|---|---|"]
            for f in gate_result.failures:
                lines.append(f"| {f.reason} | {_md(f.case) or '–'} | {_md(f.detail)} |")
        lines += ["", *(_ab_markdown(gate_result, max_rows) if with_ab
                        else _first_look_markdown(gate_result, max_rows))]
        lines += ["", "### Settings"]
    else:
        lines.append("## kbench compare")
    lines += ["", f"- base: `{_md(comp.base.path)}`: {_md(comp.base.describe())}",
              f"- candidate: `{_md(comp.cand.path)}`: {_md(comp.cand.describe())}",
              f"- slowdown limit {comp.max_slowdown:.1%}, alpha {comp.alpha:g} "
              + ("(speed from the interleaved run(s) only: the two runs' times are not "
                 "compared)" if with_ab else
                 f"({comp.test or TWO_RUN_TEST}, Holm-adjusted over the cases compared; the "
                 "unit is the pass, never the round; the gated ratio is the ratio of the "
                 "per-pass geometric means the test judged)") + "; emulated times are never "
              "compared as speed",
              f"- instruction counts (emulated targets) are compared exactly: a call or B "
              f"packing that grew by more than {comp.instructions.limit:.2%} fails"]
    counts = comp.counts()
    if counts and not with_ab:
        if gate_result is not None:
            words = _tally(first_look_word(c, comp) for c in comp.timed())
        else:
            words = counts
        lines.append("- timed cases: " + ", ".join(f"{n} {v}" for v, n in sorted(words.items())))
    for w in comp.warnings:
        lines.append(f"- warning: {_md(w)}")
    unsure = [c for c in comp.cases if c.verdict == INCONCLUSIVE]
    if unsure and gate_result is not None:
        lines += ["", f"### Machine drift ({len(unsure)} case(s), not failures)",
                  "", *(f"- {_md(c.label)}: {c.gated_ratio - 1:+.1%}, {_md(c.note)}"
                        for c in unsure[:max_rows])]
    if comp.instructions.deltas:
        tally = ", ".join(f"{n} {v}" for v, n in sorted(comp.instructions.tally().items()))
        lines += ["", f"### Instruction counts ({tally})", "",
                  *markdown_table(comp.instructions, max_rows)]
    if comp.realizations:
        lines += ["", f"### Realizations, their cases together ({len(comp.realizations)})", "",
                  "| target | realization | cases | median gated ratio | p (slower) | verdict |",
                  "|---|---|---:|---:|---:|---|"]
        for r in sorted(comp.realizations, key=lambda r: -r.median_ratio):
            suite, target, op, realization, threads = r.key
            t = f" ×{threads}" if threads > 1 else ""
            shown = r.verdict
            if gate_result is not None:
                shown = (POSSIBLE_SLOWDOWN if r.verdict == SLOWER
                         and r.median_ratio > 1 + comp.max_slowdown else FIRST_LOOK)
            verdict = f"**{shown}**" if shown in (SLOWER, POSSIBLE_SLOWDOWN) else shown
            lines.append(f"| {_md(target)} | `{_md(realization)}{t}` | {r.cases} "
                         f"| {_fmt_ratio(r.median_ratio)} | {_fmt_p(r.p_slower)} "
                         f"| {verdict}{f' ({_md(r.note)})' if r.note else ''} |")
    timed = comp.timed()
    if timed and with_ab:
        lines += ["", f"### Timed cases of the two runs ({len(timed)})", "",
                  "Not compared: their speed comes from the interleaved run(s) above."]
    elif timed:
        word = (lambda c: first_look_word(c, comp)) if gate_result is not None else None
        lines += ["", f"### Timed cases ({len(timed)}), largest gated ratio first", "",
                  *_perf_table(timed, max_rows, word)]
    by_suite: dict[str, dict[str, int]] = {}
    for c in comp.cases:
        if c.cand_status:
            suite = by_suite.setdefault(c.key[0], {})
            suite[c.cand_status] = suite.get(c.cand_status, 0) + 1
    if by_suite:
        statuses = ["pass", "fail", "error", *FAULTS, "mistrusted", "skip"]
        lines += ["", "### Candidate results by suite", "",
                  "| suite | " + " | ".join(statuses) + " |",
                  "|---|" + "---:|" * len(statuses)]
        for suite, n in sorted(by_suite.items()):
            lines.append(f"| {suite} | " + " | ".join(str(n.get(s, 0)) for s in statuses) + " |")
    lines.append("")
    return "\n".join(lines)
