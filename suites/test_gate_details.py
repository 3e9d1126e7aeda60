"""The regression gate's smaller decisions, each at its edge: the per-pass
test when one side has a single pass, no spread on one or both sides, or an
infinite median; the pass ratio with two passes and with a base median of
0; how a run is described; every run-level and per-case failure's case and
text (incomplete runs, a failing row without a message, an unknown status,
a case skipped by the candidate, an interleaved run that timed nothing);
and an interleaved run folder that cannot be read, with its message."""

from __future__ import annotations

import csv
import json
import math
import warnings
from pathlib import Path

import pytest
from test_compare import passes, row, write_run
from test_gate_ab import write_ab

from kbench.cli.history import gate_text
from kbench.results.abgate import AbRunError, _blocks, load_ab
from kbench.results.compare import RunInfo, _Entry, gate, pass_ratio, unit_test


@pytest.fixture(autouse=True)
def _warnings_are_errors():
    """The gate prints its verdicts; numpy and scipy warnings must not leak."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_the_per_pass_test_needs_two_passes_on_each_side() -> None:
    assert unit_test([1.0], [2.0, 2.1, 2.2]) == (1.0, 1.0)
    assert unit_test([1.0, 1.1, 1.2], [2.0]) == (1.0, 1.0)
    assert unit_test([], []) == (1.0, 1.0)


def test_passes_without_spread_are_exact_only_when_both_sides_have_none() -> None:
    assert unit_test([1.0, 1.0], [2.0, 2.0]) == (0.0, 1.0)  # both constant: exact
    assert unit_test([2.0, 2.0], [1.0, 1.0]) == (1.0, 0.0)
    assert unit_test([1.0, 1.0], [1.0, 1.0]) == (1.0, 1.0)
    # one side constant, the other spread: a t-test, so neither p is 0 or 1
    for base, cand in (([1.0, 1.0, 1.0], [2.0, 2.2, 2.1]), ([1.0, 1.1, 1.05], [2.0] * 3)):
        slower, faster = unit_test(base, cand)
        assert 0.0 < slower < 0.01 and 0.99 < faster < 1.0
        slower, faster = unit_test(cand, base)
        assert 0.99 < slower < 1.0 and 0.0 < faster < 0.01


def test_an_undefined_t_statistic_is_no_evidence_either_way() -> None:
    assert unit_test([1.0, 2.0], [math.inf, math.inf]) == (1.0, 1.0)
    assert unit_test([math.inf, math.inf], [1.0, 2.0]) == (1.0, 1.0)


def _entry(passes_: list[list[float]], median: float) -> _Entry:
    times = tuple(t for p in passes_ for t in p)
    return _Entry("pass", "", times, tuple(tuple(p) for p in passes_), median, False, True)


def test_the_pass_ratio_from_two_passes_and_without_a_base_median() -> None:
    cand = _entry([[1.1, 1.1], [1.3, 1.3]], 1.2)
    assert pass_ratio(_entry([[1.0]], 1.0), cand) == pytest.approx(1.1)  # the lower median
    assert pass_ratio(_entry([[0.5]], 0.5), cand) == pytest.approx(2.2)
    assert math.isnan(pass_ratio(_entry([[0.0]], 0.0), cand))
    assert math.isnan(pass_ratio(_entry([[1.0]], math.nan), cand))
    assert math.isnan(pass_ratio(_entry([[1.0]], 1.0), _entry([[1.1, 1.2]], 1.15)))
    three = _entry([[1.0], [3.0], [2.0]], 2.0)
    assert pass_ratio(_entry([[1.0]], 1.0), three) == 2.0


def test_a_run_is_described_by_commit_host_cpu_date_and_state() -> None:
    info = RunInfo("p", "0123456789abcdef", False, "box", "CPU", "x86_64", "2025-01-01", True)
    assert info.describe() == "0123456789ab on box (CPU, x86_64), 2025-01-01"
    dirty = RunInfo("p", "0123456789abcdef", True, "box", "CPU", "x86_64", "d", False)
    assert dirty.describe() == "0123456789ab+dirty on box (CPU, x86_64), d, INCOMPLETE"
    unknown = RunInfo("p", "", None, "box", "CPU", "x86_64", "d", True)
    assert unknown.describe() == "unknown commit on box (CPU, x86_64), d"


def test_run_level_failures_name_no_case_and_say_why(tmp_path: Path) -> None:
    rows = passes("k", [1e6] * 3, 1)
    base = write_run(tmp_path / "base", rows)
    cand = write_run(tmp_path / "cand", rows, complete=False)
    result = gate(base, cand)
    (fail,) = result.failures
    assert (fail.reason, fail.case) == ("incomplete", "")
    assert fail.detail == (f"the candidate run did not complete ({tmp_path / 'cand'}): its "
                           "results cannot be trusted whole")
    assert f"FAIL incomplete: the candidate run did not complete ({tmp_path / 'cand'})" in \
        gate_text(result)
    assert "| incomplete | – | the candidate run did not complete" in \
        __import__("kbench.results.compare", fromlist=["markdown"]).markdown(result)
    assert result.interleaved == [] and result.ab_runs == [] and result.ab_path == ""


def test_case_failures_carry_the_case_and_an_exact_detail(tmp_path: Path) -> None:
    base_rows = [row("quiet", suite="correctness"), row("odd", suite="correctness"),
                 row("gone_skip", suite="correctness"), *passes("k", [1e6] * 3, 2)]
    cand_rows = [row("quiet", suite="correctness", status="fail"),
                 row("odd", suite="correctness", status="weird"),
                 row("gone_skip", suite="correctness", status="skip",
                     message="not a 3x3 convolution"),
                 row("new_skip", suite="correctness", status="skip", message="no"),
                 *passes("k", [1e6] * 3, 3)]
    result = gate(write_run(tmp_path / "b", base_rows), write_run(tmp_path / "c", cand_rows))
    got = {f.case.split("/")[-1].split(" ")[0]: f for f in result.failures}
    assert set(got) == {"quiet", "odd", "gone_skip"}  # a new skipped case fails nothing
    assert got["quiet"].case == "host gemm_scalar_f32acc synthetic/quiet [exact]"
    assert (got["quiet"].reason, got["quiet"].detail) == ("correctness", "fail")
    assert got["odd"].detail == ("unknown status 'weird' (a verdict is one of pass, mistrusted, "
                                 "skip, fail, error, crashed, exited, timeout)")
    assert got["gone_skip"].case.endswith("synthetic/gone_skip [exact]")
    assert (got["gone_skip"].reason, got["gone_skip"].detail) == (
        "missing", "ran in the base run, skipped in the candidate: not a 3x3 convolution")


def test_an_interleaved_run_that_timed_nothing_warns_and_its_failures_say_why(
        tmp_path: Path) -> None:
    rows = passes("k", [1e6] * 3, 4)
    base, cand = write_run(tmp_path / "b", rows), write_run(tmp_path / "c", rows)
    folder = write_ab(tmp_path / "ab", {}, failed=set(range(28)), complete=False)
    result = gate(base, cand, ab=load_ab(folder))
    assert f"the interleaved run {folder} timed no case: speed is not gated" in \
        result.comparison.warnings
    first = result.failures[0]
    assert (first.reason, first.case) == ("incomplete", "")
    assert first.detail == (f"the interleaved run did not complete ({folder}): its speed "
                            "verdicts cannot be trusted whole")
    corr = result.failures[1]
    assert corr.case == "gemm_scalar_f32acc synthetic/c0"
    assert corr.detail == "interleaved run: candidate: fail (max err/bound 3.2)"
    timed = gate(base, cand, ab=load_ab(write_ab(tmp_path / "ab2", {}, noisy={0})), strict=True)
    assert not any("timed no case" in w for w in timed.comparison.warnings)
    (unsure,) = [f for f in timed.failures if f.reason == "inconclusive"]
    assert unsure.case == "gemm_scalar_f32acc synthetic/c0"


def test_unreadable_interleaved_folders_say_what_is_wrong(tmp_path: Path) -> None:
    listed = tmp_path / "listed"
    listed.mkdir()
    (listed / "run.json").write_text("[1, 2]")
    with pytest.raises(AbRunError, match=r"listed: a run of kind 'run', not an interleaved "
                                         r"`kbench ab` run$"):
        load_ab(listed)
    other = tmp_path / "other"
    other.mkdir()
    (other / "run.json").write_text(json.dumps({"kind": "tune"}))
    with pytest.raises(AbRunError, match=r"other: a run of kind 'tune', not an interleaved"):
        load_ab(other)
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "run.json").write_text(json.dumps({"kind": "ab", "complete": False}))
    assert load_ab(unfinished).rows == [] and not load_ab(unfinished).complete
    short = tmp_path / "short"
    short.mkdir()
    (short / "run.json").write_text(json.dumps({"kind": "ab", "complete": True}))
    with (short / "ab.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["catalog", "case", "realization", "verdict"])
        w.writerow(["c", "k", "r", "same"])
    with (short / "ab.csv").open("a", newline="") as fh:
        fh.write("c,k2\n")
    with pytest.raises(AbRunError, match=r"short/ab.csv line 3: no realization, verdict "
                                         r"column$"):
        load_ab(short)


def test_a_block_of_one_round_is_a_block() -> None:
    assert _blocks("1 59") == [1, 59]
    assert _blocks("0 60") == [] and _blocks("") is None and _blocks("1 x") == []


def test_ratio_text_without_a_ratio_or_without_an_interval() -> None:
    from kbench.results.abgate import AbVerdict, ratio_text
    from kbench.results.abstats import PairedStats
    nan = math.nan

    def stats(median: float, lo: float, hi: float) -> PairedStats:
        return PairedStats(3, 1.0, 1.0, 1.0, 1.0, median, lo, hi, 0.99, 1.0, 0.0, 0.0, "same")
    assert ratio_text(AbVerdict("r c/k", "failed", None, "")) == "–"
    assert ratio_text(AbVerdict("r c/k", "untimed", stats(nan, nan, nan), "")) == "–"
    assert ratio_text(AbVerdict("r c/k", "inconclusive", stats(1.02, nan, nan), "")) == "1.020"
    assert ratio_text(AbVerdict("r c/k", "same", stats(1.0, 0.99, 1.01), "")) == \
        "1.000 [0.990, 1.010]"
