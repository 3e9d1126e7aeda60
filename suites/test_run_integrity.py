"""Honest completeness of run folders: results.csv must be what run.json says
it is. A folder whose results are missing, empty, cut off, duplicated or
of another count than run.json's is named in one line by every reader,
and the gate refuses it (exit 2) instead of passing it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_compare import rounds, row, write_run

from kbench.cli.history import compare, gate_command
from kbench.cli.report import report
from kbench.results.runfolder import load_run


def _good(folder: Path) -> Path:
    write_run(folder, [row("a", times=rounds(1e6, 1)), row("b", times=rounds(2e6, 2)),
                       row("c", suite="correctness")])
    return folder


def _damage(folder: Path, how: str) -> str:
    """Damages a good run folder; returns the line a reader must say."""
    csv = folder / "results.csv"
    if how == "deleted":
        csv.unlink()
        return "results.csv is missing"
    if how == "empty":
        csv.write_bytes(b"")
        return "results.csv is empty (not even its header)"
    if how == "cut":
        data = csv.read_bytes()
        csv.write_bytes(data[:-40])  # the last row loses its end (and its newline)
        return "is cut off (the run was stopped while writing it)"
    if how == "duplicated":
        lines = csv.read_text().splitlines(keepends=True)
        csv.write_text("".join(lines + [lines[-1]]))
        meta = json.loads((folder / "run.json").read_text())
        meta["results"] += 1  # run.json agrees: only the duplicate is wrong
        (folder / "run.json").write_text(json.dumps(meta))
        return "results.csv holds 1 duplicated row(s)"
    if how == "miscounted":
        meta = json.loads((folder / "run.json").read_text())
        meta["results"] = 7
        (folder / "run.json").write_text(json.dumps(meta))
        return "run.json says 7 result(s), results.csv holds 3 row(s)"
    raise AssertionError(how)


DAMAGE = ["deleted", "empty", "cut", "duplicated", "miscounted"]


def test_a_whole_run_has_no_defects(tmp_path: Path) -> None:
    run = load_run(_good(tmp_path / "run"))
    assert run.defects == [] and run.whole


@pytest.mark.parametrize("how", DAMAGE)
def test_the_reader_names_what_is_wrong(tmp_path: Path, how: str) -> None:
    folder = _good(tmp_path / "run")
    said = _damage(folder, how)
    run = load_run(folder)
    assert any(said in d for d in run.defects), run.defects
    assert not run.whole


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("side", ["BASE", "CAND"])
def test_the_gate_refuses_a_damaged_run_instead_of_passing_it(tmp_path: Path, how: str,
                                                              side: str) -> None:
    """Before: the gate passed against a baseline whose results.csv was empty
    or deleted (nothing to compare, nothing failed)."""
    base, cand = _good(tmp_path / "base"), _good(tmp_path / "cand")
    said = _damage(base if side == "BASE" else cand, how)
    res = CliRunner().invoke(gate_command, [str(base), str(cand)])
    assert res.exit_code == 2, res.output
    (line,) = [x for x in res.output.splitlines() if x.strip()]
    assert line.startswith(f"Error: {side}: ") and "not gated" in line and said in line, line


def test_the_gate_still_passes_two_whole_runs(tmp_path: Path) -> None:
    res = CliRunner().invoke(gate_command, [str(_good(tmp_path / "a")),
                                            str(_good(tmp_path / "b"))])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("how", ["cut", "duplicated", "miscounted"])
def test_compare_and_report_go_on_and_say_it(tmp_path: Path, how: str) -> None:
    base, cand = _good(tmp_path / "base"), _good(tmp_path / "cand")
    said = _damage(cand, how)
    res = CliRunner().invoke(compare, [str(base), str(cand)])
    assert res.exit_code == 0, res.output
    assert f"note: {cand}: " in res.output and said in res.output
    res = CliRunner().invoke(report, [str(cand), "--out", str(tmp_path / "report")])
    assert res.exit_code == 0, res.output
    assert said in res.output


def test_verdicts_of_two_suites_for_the_same_case_are_not_duplicates(tmp_path: Path) -> None:
    """A dispatch-table verdict reruns a case that also ran forced: its suite
    tells them apart, so it is not a duplicate."""
    forced = row("c", suite="correctness")
    dispatched = row("c", suite="dispatch")
    write_run(tmp_path / "run", [forced, dispatched])
    assert load_run(tmp_path / "run").defects == []
