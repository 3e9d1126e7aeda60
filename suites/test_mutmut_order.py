"""The mutmut campaign's test order (suites/kb_mutmut_order.py): under a
mutant the fastest recorded tests run first; otherwise nothing moves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import kb_mutmut_order as order

SUITES = Path(__file__).resolve().parent


def test_fastest_first_orders_by_recorded_seconds_and_keeps_unknown_ones_last_in_order():
    ids = ["t.py::slow", "t.py::unknown_a", "mutants/t.py::fast", "t.py::mid", "t.py::unknown_b"]
    durations = {"t.py::slow": 9.0, "t.py::fast": 0.01, "t.py::mid": 1.5}
    assert [ids[i] for i in order.fastest_first(ids, durations)] == [
        "mutants/t.py::fast", "t.py::mid", "t.py::slow", "t.py::unknown_a", "t.py::unknown_b"]
    assert order.fastest_first([], durations) == []
    assert order.fastest_first(ids, {}) == [0, 1, 2, 3, 4]


def test_only_a_mutant_run_reorders():
    assert order.under_a_mutant({"MUTANT_UNDER_TEST": "kbench.results.report.x_f__mutmut_3"})
    for value in ("", "stats", "fail", "list_all_tests"):
        assert not order.under_a_mutant({"MUTANT_UNDER_TEST": value})
    assert not order.under_a_mutant({})


def test_durations_come_from_mutmuts_record_and_a_bad_record_is_none(tmp_path):
    assert order.mutmut_durations(tmp_path) == {}
    stats = tmp_path / "mutmut-stats.json"
    stats.write_text(json.dumps({"duration_by_test": {"a": 0.5, "b": 2, "c": "x"}}))
    assert order.mutmut_durations(tmp_path) == {"a": 0.5, "b": 2.0}
    for bad in ("not json", "[1, 2]", json.dumps({"duration_by_test": [1]}), "{}"):
        stats.write_text(bad)
        assert order.mutmut_durations(tmp_path) == {}


def _run_order(tmp_path: Path, mutant: str | None) -> list[str]:
    (tmp_path / "test_three.py").write_text(
        "def test_slow():\n    pass\n\ndef test_new():\n    pass\n\ndef test_fast():\n    pass\n")
    (tmp_path / "mutmut-stats.json").write_text(json.dumps({"duration_by_test": {
        "test_three.py::test_slow": 5.0, "test_three.py::test_fast": 0.1}}))
    env = {k: v for k, v in os.environ.items() if k != "MUTANT_UNDER_TEST"}
    env["PYTHONPATH"] = os.pathsep.join([str(SUITES), env.get("PYTHONPATH", "")])
    if mutant is not None:
        env["MUTANT_UNDER_TEST"] = mutant
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "kb_mutmut_order", "-p", "no:cacheprovider",
         "--collect-only", "-q", "test_three.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    return [line.split("::")[1] for line in out.splitlines() if "::" in line]


def test_pytest_runs_a_mutants_tests_fastest_first_and_others_as_written(tmp_path):
    assert _run_order(tmp_path, "kbench.results.report.x_f__mutmut_1") == [
        "test_fast", "test_slow", "test_new"]
    assert _run_order(tmp_path, None) == ["test_slow", "test_new", "test_fast"]
    assert _run_order(tmp_path, "stats") == ["test_slow", "test_new", "test_fast"]


def test_child_processes_of_the_stats_run_run_the_original_code(monkeypatch):
    assert order.stats_free({"MUTANT_UNDER_TEST": "stats", "A": "1"}) == {
        "MUTANT_UNDER_TEST": "", "A": "1"}
    mutant = {"MUTANT_UNDER_TEST": "kbench.results.report.x_f__mutmut_3"}
    assert order.stats_free(mutant) == mutant and order.stats_free({}) == {}
    show = [sys.executable, "-c", "import os; print(repr(os.environ.get('MUTANT_UNDER_TEST')))"]
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")
    undo = order.children_without_stats()
    try:
        inherited = subprocess.run(show, capture_output=True, text=True).stdout.strip()
        given = subprocess.run(show, capture_output=True, text=True,
                               env={**os.environ, "X": "1"}).stdout.strip()
        monkeypatch.setenv("MUTANT_UNDER_TEST", mutant["MUTANT_UNDER_TEST"])
        under_mutant = subprocess.run(show, capture_output=True, text=True).stdout.strip()
    finally:
        undo()
    assert inherited == given == "''"
    assert under_mutant == repr(mutant["MUTANT_UNDER_TEST"])
    monkeypatch.setenv("MUTANT_UNDER_TEST", "stats")
    assert subprocess.run(show, capture_output=True, text=True).stdout.strip() == "'stats'"
