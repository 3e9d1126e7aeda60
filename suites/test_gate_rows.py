"""The regression gate on rows rather than timings: a case that appears in
several rows (passes of a run) takes its worst status, whatever the order;
every failing status fails the gate, an unknown one too; a case missing
from the candidate fails, a new one does not; either run incomplete fails.
Synthetic run folders, written and read back by the real store; the
untimed rows make the outcome independent of any timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.judge.verdict import FAULTS, Verdict
from kbench.results.compare import gate
from kbench.results.runfolder import Run, load_run
from kbench.results.store import RunWriter

META = {"host": "box", "machine": "aarch64", "cpu_model": "Test CPU",
        "git_commit": "0123456789abcdef", "git_dirty": False,
        "date": "2025-01-01T00:00:00+00:00", "command_line": "kbench run",
        "targets": {"host": {"emulated": False, "arch": "aarch64"}}}


def _row(case: str, status: str = "pass") -> Verdict:
    return Verdict(case=case, op="gemm", shape="m8n8k8", kind="exact", target="host",
                   backend="scalar", realization="gemm_scalar_f32acc", kernel="matmul_scalar",
                   accum="fp32", k=8, m=8, n=8, b_form="plain", vector_bits=0, status=status,
                   catalog="synthetic", message=f"{status} row")


def _run(folder: Path, rows: list[Verdict], complete: bool = True) -> Run:
    w = RunWriter(folder, dict(META))
    w.add_all(rows)
    w.close(complete=complete)
    return load_run(folder)


def _gate(tmp_path: Path, base: list[Verdict], cand: list[Verdict],
          base_complete: bool = True, cand_complete: bool = True) -> list[tuple[str, str]]:
    result = gate(_run(tmp_path / "base", base, base_complete),
                  _run(tmp_path / "cand", cand, cand_complete))
    return [(f.reason, f.detail) for f in result.failures]


@pytest.mark.parametrize("statuses, fails", [
    (("pass", "fail"), True), (("fail", "pass"), True),
    (("pass", "pass", "error"), True), (("mistrusted", "fail"), True),
    (("fail", "mistrusted"), True), (("pass", "timeout", "pass"), True),
    (("pass", "mistrusted"), False), (("mistrusted", "pass"), False),
    (("pass", "pass"), False),
])
def test_passes_of_a_case_merge_to_the_worst_status(tmp_path: Path, statuses: tuple[str, ...],
                                                    fails: bool) -> None:
    base = [_row("c1"), _row("c2")]
    cand = [_row("c1"), *(_row("c2", s) for s in statuses)]
    failures = _gate(tmp_path, base, cand)
    assert bool(failures) == fails, failures
    if fails:
        assert [r for r, _ in failures] == ["correctness"]
        worst = next(s for s in ("error", "timeout", "fail") if s in statuses)
        assert failures[0][1].startswith(worst)


@pytest.mark.parametrize("status", ["fail", "error", *FAULTS])
def test_every_failing_status_fails_the_gate(tmp_path: Path, status: str) -> None:
    failures = _gate(tmp_path, [_row("c1")], [_row("c1", status)])
    assert [r for r, _ in failures] == ["correctness"]
    assert failures[0][1] == f"{status}: {status} row"  # a known failure, named as such


def test_an_unknown_status_fails_the_gate(tmp_path: Path) -> None:
    failures = _gate(tmp_path, [_row("c1")], [_row("c1", "weird")])
    assert failures and failures[0][0] == "correctness" and "unknown status" in failures[0][1]


def test_missing_and_new_cases(tmp_path: Path) -> None:
    assert [r for r, _ in _gate(tmp_path / "a", [_row("c1"), _row("c2")], [_row("c1")])] == [
        "missing"]
    assert _gate(tmp_path / "b", [_row("c1")], [_row("c1"), _row("c2")]) == []
    skipped = _gate(tmp_path / "c", [_row("c1")], [_row("c1", "skip")])
    assert [r for r, _ in skipped] == ["missing"]
    assert _gate(tmp_path / "d", [_row("c1", "skip")], [_row("c1", "skip")]) == []


def test_a_duplicated_row_of_a_passing_case_passes(tmp_path: Path) -> None:
    assert _gate(tmp_path, [_row("c1")], [_row("c1"), _row("c1")]) == []


@pytest.mark.parametrize("which", ["base", "cand"])
def test_either_run_incomplete_fails(tmp_path: Path, which: str) -> None:
    failures = _gate(tmp_path, [_row("c1")], [_row("c1")], base_complete=which != "base",
                     cand_complete=which != "cand")
    assert [r for r, _ in failures] == ["incomplete"]
    assert ("the base run" if which == "base" else "the candidate run") in failures[0][1]


def _timed(case: str, times: list[float], emulated: bool = False) -> Verdict:
    v = _row(case)
    v.suite, v.kind, v.emulated = "perf", "uniform", emulated
    v.rounds, v.reps_per_round, v.round_times_ns = len(times), 1, times
    v.time_median_ns = sorted(times)[len(times) // 2]
    return v


@pytest.mark.parametrize("emulated_side", ["base", "cand"])
def test_times_taken_under_emulation_on_either_side_are_never_speed(
        tmp_path: Path, emulated_side: str) -> None:
    """Given round times (not measured): the candidate twice as slow, but one
    side's rows were timed under emulation, so no slowdown is judged."""
    base = [_timed("c1", [1000.0 + p + i for i in range(20)], emulated_side == "base")
            for p in range(3)]  # three passes a side: speed could be judged on hardware
    cand = [_timed("c1", [2000.0 + p + i for i in range(20)], emulated_side == "cand")
            for p in range(3)]
    result = gate(_run(tmp_path / "base", base), _run(tmp_path / "cand", cand))
    (case,) = result.comparison.cases
    assert case.verdict == "not-comparable" and "emulated" in case.note
    assert result.passed, result.failures
    hardware = gate(_run(tmp_path / "b2", [_timed("c1", [1000.0 + p + i for i in range(20)])
                                           for p in range(3)]),
                    _run(tmp_path / "c2", [_timed("c1", [2000.0 + p + i for i in range(20)])
                                           for p in range(3)]))
    # on hardware the same times are a possible slowdown (a first look, not a failure)
    assert hardware.passed and len(hardware.first_look) == 1


def test_count_tally_counts_every_verdict_once() -> None:
    """`kbench compare`'s count line: one more, two fewer, one same, one
    missing, one new, each counted exactly once."""
    from kbench.results.count_compare import FEWER, MISSING, MORE, NEW, SAME, compare_counts

    def counted(case: str, call: float) -> dict[str, object]:
        return {"target": "qemu:svl=512", "catalog": "c", "case": case,
                "realization": "r", "count_call": call, "count_kernel": call / 2}

    base = [counted("up", 100), counted("down1", 100), counted("down2", 100),
            counted("flat", 100), counted("gone", 100)]
    cand = [counted("up", 120), counted("down1", 90), counted("down2", 50),
            counted("flat", 100), counted("born", 100)]
    comp = compare_counts(base, cand)
    assert comp.tally() == {MORE: 1, FEWER: 2, SAME: 1, MISSING: 1, NEW: 1}
    assert [d.key[2] for d in comp.regressions()] == ["up"]


def test_the_unit_test_needs_two_passes_a_side_and_reads_exact_figures_exactly() -> None:
    from kbench.results.compare import holm, unit_test
    many = [1.0, 1.1, 0.9, 1.05]
    for base, cand in (([1.0], many), (many, [5.0]), ([], many), (many, []), ([], [])):
        assert unit_test(base, cand) == (1.0, 1.0)  # fewer than two passes on a side
    # no spread on either side: the direction the medians moved is certain
    assert unit_test([2.0, 2.0, 2.0], [3.0, 3.0]) == (0.0, 1.0)
    assert unit_test([3.0, 3.0], [2.0, 2.0, 2.0]) == (1.0, 0.0)
    assert unit_test([2.0, 2.0], [2.0, 2.0]) == (1.0, 1.0)
    slower, faster = unit_test([1.0, 1.02, 0.98, 1.01], [2.0, 2.05, 1.95, 2.02])
    assert slower < 1e-4 and faster > 0.999
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])


def test_counts_are_read_alike_from_records_and_from_verdict_objects() -> None:
    """index_counts takes results.csv records (dicts) or Verdict objects: the
    same case and counts either way; a record without a catalog field keys
    it as "" and a count column it lacks is NaN."""
    import math
    from types import SimpleNamespace

    from kbench.results.count_compare import index_counts
    from kbench.results.counts import COLUMNS
    record = {"target": "qemu:cpu=max:svl=512", "catalog": "cat", "case": "m8n8k8",
              "realization": "gemm_x", "count_call": 1000.0, "count_kernel": 600.0}
    obj = SimpleNamespace(**record)
    by_record, unstable_r = index_counts([record])
    by_object, unstable_o = index_counts([obj])
    assert list(by_record) == list(by_object) == [("qemu:cpu=max:svl=512", "cat", "m8n8k8",
                                                        "gemm_x")]
    key = next(iter(by_record))
    for counts in (by_record[key], by_object[key]):
        assert (counts["count_call"], counts["count_kernel"]) == (1000.0, 600.0)
        assert all(math.isnan(counts[c]) for c in COLUMNS
                   if c not in ("count_call", "count_kernel"))
    assert unstable_r == unstable_o == set()
    no_catalog = {k: v for k, v in record.items() if k != "catalog"}
    assert list(index_counts([no_catalog])[0]) == [("qemu:cpu=max:svl=512", "", "m8n8k8", "gemm_x")]
    assert list(index_counts([SimpleNamespace(**no_catalog)])[0]) == [
        ("qemu:cpu=max:svl=512", "", "m8n8k8", "gemm_x")]
