"""compare_runs at its edges, each decision on its own: the arguments it
refuses (and the words it refuses them with), how a run is described from
its metadata, how rows of one case merge (the worst status, an unknown
status ranked as an error below a fault, a median from the rows' own
medians when no round times were kept, when a case counts as timed), what a
missing, new, untimed or half-timed case carries, a base median of 0 or
below one nanosecond, the name of the test that gave the p-values, and the
per-realization test at its exact margin. Run folders are synthetic; no
figure here depends on this machine's timing."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from test_compare import by_case, pair, passes, row, write_run

from kbench.results import modt
from kbench.results.compare import (
    MARGIN_SHARE,
    MISSING,
    NEW,
    NOT_COMPARABLE,
    REALIZATION_MIN_CASES,
    UNTIMED,
    CaseComparison,
    RunInfo,
    _index,
    compare_runs,
    realization_tests,
    two_run_tests,
)
from kbench.results.runfolder import Run


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _run(tmp_path: Path, name: str = "r") -> Run:
    return write_run(tmp_path / name, [row("a", times=[1e6, 1.01e6, 0.99e6])])


# --- the arguments ----------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.0, -0.01, 0.5, 1.0, 1.2])
def test_alpha_outside_0_to_half_is_refused_by_name(tmp_path: Path, alpha: float) -> None:
    run = _run(tmp_path)
    with pytest.raises(ValueError) as err:
        compare_runs(run, run, alpha=alpha)
    assert str(err.value) == f"alpha must be in (0, 0.5), got {alpha}"


def test_alpha_just_inside_its_range_is_taken(tmp_path: Path) -> None:
    run = _run(tmp_path)
    for alpha in (1e-9, 0.499):
        assert compare_runs(run, run, alpha=alpha).alpha == alpha


def test_a_negative_slowdown_limit_is_refused_and_zero_is_taken(tmp_path: Path) -> None:
    run = _run(tmp_path)
    with pytest.raises(ValueError) as err:
        compare_runs(run, run, max_slowdown=-0.01)
    assert str(err.value) == "max_slowdown must be >= 0, got -0.01"
    assert compare_runs(run, run, max_slowdown=0.0).max_slowdown == 0.0


def test_an_empty_base_run_is_warned_in_these_words(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", [])
    cand = _run(tmp_path, "cand")
    assert "the base run has no results" in compare_runs(base, cand).warnings
    assert "the base run has no results" not in compare_runs(cand, cand).warnings


# --- how a run is described ----------------------------------------------------

def _meta_run(meta: dict[str, Any]) -> Run:
    return Run(Path("/runs/r1"), meta, pd.DataFrame())


def test_a_run_is_described_from_its_metadata_fields() -> None:
    info = RunInfo.of(_meta_run({"git_commit": "abc123", "git_dirty": 1, "host": "box",
                                 "cpu_model": "Neoverse", "machine": "aarch64",
                                 "date": "2026-01-02", "complete": True}))
    assert info == RunInfo("/runs/r1", "abc123", True, "box", "Neoverse", "aarch64",
                           "2026-01-02", True)
    assert RunInfo.of(_meta_run({"git_dirty": 0})).git_dirty is False


def test_a_run_without_metadata_is_described_with_empty_fields_and_unknown_dirt() -> None:
    for meta in ({}, {"git_commit": None, "git_dirty": None, "host": None, "cpu_model": None,
                      "machine": None, "date": None}):
        info = RunInfo.of(_meta_run(meta))
        assert info == RunInfo("/runs/r1", "", None, "", "", "", "", False)
        assert info.describe() == "unknown commit on  (, ), , INCOMPLETE"


# --- how the rows of one case merge ---------------------------------------------

def _merged(tmp_path: Path, rows: list[Any], edit: Any = None) -> Any:
    run = write_run(tmp_path / "merge", rows)
    if edit is not None:
        edit(run.results)
    (entry,) = _index(run).values()
    return entry


@pytest.mark.parametrize(("statuses", "worst"), [
    (["pass", "fail"], "fail"),
    (["fail", "bogus"], "bogus"),     # an unknown status ranks as an error...
    (["error", "bogus"], "error"),    # ...equal to one (the first row of the rank wins)
    (["bogus", "crashed"], "crashed"),  # ...and below a fault
    (["timeout", "bogus"], "timeout"),
])
def test_the_worst_status_of_a_case_is_kept(tmp_path: Path, statuses: list[str],
                                            worst: str) -> None:
    rows = [row("a", status=s, suite="correctness", message=s) for s in statuses]
    entry = _merged(tmp_path, rows)
    assert (entry.status, entry.message) == (worst, worst)


def _no_round_times(results: pd.DataFrame) -> None:
    results["round_times"] = [[] for _ in range(len(results))]


def test_without_round_times_a_case_takes_the_median_of_its_rows_medians(
        tmp_path: Path) -> None:
    rows = [row("a", times=[t] * 3) for t in (1e6, 4e6, 2e6)]
    entry = _merged(tmp_path, rows, _no_round_times)
    assert entry.times == ()
    assert entry.median_ns == 2e6
    assert entry.timed  # rounds were run, their times are not kept
    # round times, where kept, decide over the rows' medians
    kept = _merged(tmp_path / "kept", [row("a", times=[1e6, 1e6, 5e6])])
    assert kept.median_ns == 1e6


def test_a_case_without_any_time_has_no_median(tmp_path: Path) -> None:
    entry = _merged(tmp_path, [row("a", suite="correctness")])
    assert math.isnan(entry.median_ns) and not entry.timed


@pytest.mark.parametrize(("rounds", "times", "timed"), [
    (1, [], True),           # one round run, its time not kept
    (3, [], True),
    (0, [5.0, 6.0], True),   # times kept without a round count
    (0, [], False),
])
def test_a_case_is_timed_by_its_rounds_or_its_times(tmp_path: Path, rounds: int,
                                                    times: list[float], timed: bool) -> None:
    def edit(results: pd.DataFrame) -> None:
        results["rounds"] = rounds
        results["round_times"] = [list(times)]
    assert _merged(tmp_path, [row("a", times=[1.0, 2.0])], edit).timed is timed


# --- what a case carries ------------------------------------------------------------

def test_missing_and_new_cases_carry_nothing_of_the_run_they_are_not_in(
        tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [row("gone", times=[1e6] * 3)], [row("came", times=[1e6] * 3)])
    cases = by_case(compare_runs(base, cand))
    gone, came = cases["gone"], cases["came"]
    assert (gone.verdict, gone.base_status, gone.cand_status) == (MISSING, "pass", "")
    assert (gone.base_rounds, gone.cand_rounds) == (3, 0)
    assert (came.verdict, came.base_status, came.cand_status) == (NEW, "", "pass")
    assert (came.base_rounds, came.cand_rounds) == (0, 3)
    for c in (gone, came):
        assert all(math.isnan(x) for x in (c.ratio, c.p_slower, c.p_faster))


def test_an_untimed_case_has_no_ratio_or_p_values(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [row("a", suite="correctness")], [row("a", suite="correctness")])
    (c,) = compare_runs(base, cand).cases
    assert c.verdict == UNTIMED and not c.timed
    assert all(math.isnan(x) for x in (c.ratio, c.p_slower, c.p_faster))


def test_a_case_timed_in_one_run_only_is_not_comparable_not_untimed(tmp_path: Path) -> None:
    for base_rows, cand_rows in (([row("a", times=[1e6] * 3)], [row("a")]),
                                 ([row("a")], [row("a", times=[1e6] * 3)])):
        base, cand = pair(tmp_path / str(len(base_rows[0].round_times_ns or [])),
                          base_rows, cand_rows)
        (c,) = compare_runs(base, cand).cases
        assert (c.verdict, c.note, c.timed) == (NOT_COMPARABLE, "no per-round times", True)


def test_a_base_median_of_zero_gives_no_ratio(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [row("a", times=[0.0] * 3)], [row("a", times=[1.0] * 3)])
    (c,) = compare_runs(base, cand).cases
    assert math.isnan(c.ratio)
    assert (c.verdict, c.note) == (NOT_COMPARABLE, "no per-round times")


def test_a_base_median_below_one_nanosecond_still_gives_a_ratio(tmp_path: Path) -> None:
    # round times are kept in whole nanoseconds: 0, 1, 0, 1 has the median 0.5
    base, cand = pair(tmp_path, [row("a", times=[0.0, 1.0, 0.0, 1.0])],
                      [row("a", times=[1.0] * 4)])
    (c,) = compare_runs(base, cand).cases
    assert (c.base_median_ns, c.ratio) == (0.5, 2.0)
    assert (c.verdict, c.note) == (NOT_COMPARABLE, "passes 1 and 1: rounds alone give no "
                                   "p-value")


# --- the test behind the p-values ------------------------------------------------------

def test_the_two_run_test_is_named_with_its_prior_when_the_cases_spread() -> None:
    rng = np.random.default_rng(7)
    units = []
    for i in range(12):
        scale = 0.01 * (1 + i % 4)
        units.append((list(1e6 * (1 + scale * rng.standard_normal(5))),
                      list(1e6 * (1 + scale * rng.standard_normal(5)))))
    fitted = modt.moderated_tests(units, [math.log1p(MARGIN_SHARE * 0.05)] * len(units))
    assert fitted is not None and math.isfinite(fitted[1].df)
    pvalues, test = two_run_tests(units, [0.05] * len(units))
    assert len(pvalues) == len(units)
    assert test == (f"{modt.NAME} (prior on {fitted[1].df:.1f} degrees of freedom), "
                    f"against a move of {MARGIN_SHARE:.0%} of each case's limit")


def test_the_two_run_test_wants_one_limit_per_case() -> None:
    units = [([1.0, 1.1, 1.2], [1.0, 1.1, 1.2])]
    with pytest.raises(ValueError):
        two_run_tests(units, [0.05, 0.05])


# --- the per-realization test ---------------------------------------------------------

def _case(realization: str, i: int, log_ratio: float) -> CaseComparison:
    key = ("perf", "host", "gemm", "cat", f"c{i}", "uniform", realization, 1)
    return CaseComparison(key, "pass", "pass", 1.0, 1.0, 3, 3, 1.0, math.nan, math.nan,
                          "same", log_ratio=log_ratio)


def _realizations(groups: dict[str, list[float]], max_slowdown: float = 0.05
                  ) -> dict[str, tuple[float, float]]:
    cases = [_case(r, i, u) for r, us in groups.items() for i, u in enumerate(us)]
    out = realization_tests(cases, list(range(len(cases))), max_slowdown)
    return {r.key[3]: (r.p_slower, r.p_faster) for r in out}


def test_a_realization_with_too_few_cases_is_skipped_not_the_end_of_the_list() -> None:
    n = REALIZATION_MIN_CASES
    out = _realizations({"few": [0.2] * (n - 1), "enough": [0.2] * n, "more": [0.0] * n})
    assert set(out) == {"enough", "more"}


def test_exact_figures_are_decided_by_their_move_beyond_the_margin() -> None:
    n, m = REALIZATION_MIN_CASES, math.log1p(MARGIN_SHARE * 0.05)
    out = _realizations({"slower": [0.1] * n, "faster": [-0.1] * n, "still": [0.0] * n,
                         "at_plus": [m] * n, "at_minus": [-m] * n})
    assert out == {"slower": (0.0, 1.0), "faster": (1.0, 0.0), "still": (1.0, 1.0),
                   "at_plus": (1.0, 1.0), "at_minus": (1.0, 1.0)}


def test_spread_figures_get_one_sided_p_values() -> None:
    rng = np.random.default_rng(3)
    up = list(0.1 + 0.01 * rng.standard_normal(8))
    down = [-u for u in up]
    out = _realizations({"up": up, "down": down})
    assert out["up"][0] < 1e-4 and out["up"][1] > 1 - 1e-4
    assert out["down"][1] < 1e-4 and out["down"][0] > 1 - 1e-4


# --- when the rounds and the passes are enough -----------------------------------------

@pytest.mark.parametrize(("base_times", "cand_times", "note"), [
    ([1e6], [1e6] * 3, "no per-round times"),      # one round on one side...
    ([1e6] * 3, [1e6], "no per-round times"),      # ...or the other
    ([1e6] * 2, [1e6] * 3, "passes 1 and 1: rounds alone give no p-value"),  # two are enough
    ([1e6] * 3, [1e6] * 2, "passes 1 and 1: rounds alone give no p-value"),
])
def test_a_side_needs_two_round_times(tmp_path: Path, base_times: list[float],
                                      cand_times: list[float], note: str) -> None:
    base, cand = pair(tmp_path, [row("a", times=base_times)], [row("a", times=cand_times)])
    (c,) = compare_runs(base, cand).cases
    assert (c.verdict, c.note) == (NOT_COMPARABLE, note)


def test_two_passes_a_side_are_enough_for_a_p_value(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, passes("a", [1e6] * 2, 1), passes("a", [1e6] * 2, 2))
    (c,) = compare_runs(base, cand).cases
    assert (c.passes, c.base_passes, c.note) == (2, 2, "")
    assert 0 <= c.p_slower <= 1 and 0 <= c.p_faster <= 1


def test_the_warning_counts_every_case_with_too_few_passes(tmp_path: Path) -> None:
    rows = [row(name, times=[1e6] * 3) for name in ("a", "b", "c")]
    base, cand = pair(tmp_path, rows, rows)
    (warning,) = [w for w in compare_runs(base, cand).warnings if "no p-value" in w]
    assert warning.startswith("3 timed case(s) have fewer than 2 passes in a run")


# --- machine drift, both ways -------------------------------------------------------------

def _drift_runs(tmp_path: Path, factor: float) -> tuple[Run, Run]:
    """28 cases of one realization moved by factor, 6 of another not moved."""
    def rows(side: int, f: float) -> list[Any]:
        out = []
        for i in range(28):
            out += passes(f"c{i}", [1e6 * (1 + i) * f] * 3, side * 100 + i, noise=0.002)
        for i in range(6):
            out += passes(f"s{i}", [2e6 * (1 + i)] * 3, side * 100 + 50 + i, noise=0.002,
                          realization="gemm_neon_f16acc")
        return out
    return pair(tmp_path, rows(0, 1.0), rows(1, factor))


@pytest.mark.parametrize(("factor", "way"), [(1.2, "slower"), (0.8, "faster")])
def test_drift_makes_only_the_realizations_that_moved_with_it_inconclusive(
        tmp_path: Path, factor: float, way: str) -> None:
    comp = compare_runs(*_drift_runs(tmp_path, factor), max_slowdown=0.05)
    assert any(f"moved {way} beyond the limit together" in w for w in comp.warnings)
    reals = {r.key[3]: r for r in comp.realizations}
    moved, still = reals["gemm_scalar_f32acc"], reals["gemm_neon_f16acc"]
    assert (moved.verdict, moved.note) == (
        "inconclusive", "moved with the whole run: machine drift, not this change")
    assert (still.verdict, still.note) == ("same", "")


# --- counts from different QEMU versions ---------------------------------------------------

def _counted(name: str, qemu: str) -> Any:
    v = row(name, suite="correctness")
    v.count_qemu = qemu
    return v


@pytest.mark.parametrize(("base_qemu", "cand_qemu", "warned"), [
    (["11.1.0"], ["11.0.0"], "instruction counts come from different QEMU versions (base "
                             "11.1.0, candidate 11.0.0)"),
    (["11.1.0", "9.2.0"], ["11.1.0"], "instruction counts come from different QEMU versions "
                                      "(base 11.1.0, 9.2.0, candidate 11.1.0)"),
    (["11.1.0"], ["9.2.0", "11.0.0"], "instruction counts come from different QEMU versions "
                                      "(base 11.1.0, candidate 11.0.0, 9.2.0)"),
    (["11.1.0"], ["11.1.0"], ""),
    (["11.1.0", ""], ["11.1.0"], ""),   # a case without counts has no version to differ
    ([""], ["11.1.0"], ""),             # nothing counted on one side: nothing to compare
    (["11.1.0"], [""], ""),
])
def test_counts_from_different_qemu_versions_are_warned(
        tmp_path: Path, base_qemu: list[str], cand_qemu: list[str], warned: str) -> None:
    base, cand = pair(tmp_path, [_counted(f"c{i}", q) for i, q in enumerate(base_qemu)],
                      [_counted(f"c{i}", q) for i, q in enumerate(cand_qemu)])
    qemu = [w for w in compare_runs(base, cand).warnings if "QEMU" in w]
    assert qemu == ([warned] if warned else [])


def test_no_test_is_named_when_no_case_was_timed(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [_counted("c0", "11.1.0")], [_counted("c0", "11.1.0")])
    comp = compare_runs(base, cand)
    assert len(comp.cases) == 1 and not comp.timed() and comp.test == ""


def test_a_run_without_any_results_column_compares(tmp_path: Path) -> None:
    empty = Run(tmp_path / "empty", {"complete": True}, pd.DataFrame())
    comp = compare_runs(empty, empty)
    assert comp.cases == [] and comp.warnings == ["the base run has no results"]


def test_a_case_is_keyed_by_its_operator_too(tmp_path: Path) -> None:
    gemm = row("a", times=[1e6] * 3)
    conv = row("a", times=[2e6] * 3)
    conv.op = "conv"
    entries = _index(write_run(tmp_path / "ops", [gemm, conv]))
    assert sorted(k[2] for k in entries) == ["conv", "gemm"]
    assert sorted(e.median_ns for e in entries.values()) == [1e6, 2e6]
