"""Machine-readable output and runs named through the history: `--json` on
`run`, `compare`, `gate`, `history` (and `count`'s list), each document
validated against its JSON Schema in reports/schema/; and `compare`, `gate`
and `report --baseline` taking a history id, `latest`, `latest~N` or a
commit prefix besides a run folder. Run folders are synthetic (RunWriter),
times seeded: nothing depends on this machine's timing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from test_compare import HERE, rounds, row, write_run

from kbench.cli.history import compare, gate_command, history
from kbench.cli.report import report
from kbench.resources import resource_dir
from kbench.results import json_out
from kbench.results.history import append_run
from kbench.results.json_out import SCHEMAS, schema_id
from kbench.results.runfolder import Run, load_run
from kbench.results.runref import RunRefError, resolve_run

SCHEMA_DIR = resource_dir("reports") / "schema"


def schema(name: str) -> dict:
    return json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text())


def validate(doc: object, name: str) -> None:
    jsonschema.Draft202012Validator(schema(name)).validate(doc)


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    jsonschema.Draft202012Validator.check_schema(schema(name))
    if name != "count":
        assert schema(name)["properties"]["schema"] == {"const": schema_id(name)}


@pytest.fixture
def history_db(tmp_path: Path) -> tuple[Path, list[Path]]:
    """Three runs of two commits in one history, three passes each (the unit
    of the comparison's statistics): the last one 10% slower on one case."""
    db = tmp_path / "h.sqlite"
    folders = []
    for i, (commit, scale) in enumerate([("aaaa1111", 1.0), ("bbbb2222", 1.0),
                                         ("bbbb2222", 1.1)]):
        folder = tmp_path / f"run{i}"
        write_run(folder, [*(row("c1", times=rounds(1e6 * scale, 10 * p + i, n=15))
                             for p in range(1, 4)),
                           *(row("c2", times=rounds(2e6, 10 * p + 5 + i, n=15))
                             for p in range(1, 4)),
                           row("chk", suite="correctness")],
                  git_commit=commit * 5, date=f"2026-01-0{i + 1}T00:00:00+00:00")
        append_run(db, load_run(folder))
        folders.append(folder)
    return db, folders


def test_history_refs_name_the_runs(history_db: tuple[Path, list[Path]]) -> None:
    db, folders = history_db
    assert resolve_run("latest", db).run.path == folders[2]
    assert resolve_run("latest~2", db).run.path == folders[0]
    assert resolve_run("1", db).run_id == 1 and resolve_run("1", db).run.path == folders[0]
    assert resolve_run("aaaa", db).run.path == folders[0]
    assert resolve_run("bbbb2222", db).run.path == folders[2]  # the newest run of the commit
    assert resolve_run(str(folders[1]), db).source == "folder"
    for bad, said in [("latest~3", "latest~2"), ("9", "no run 9"), ("cccc", "commit starting"),
                      ("not-a-run", "a run is named by")]:
        with pytest.raises(RunRefError, match=said):
            resolve_run(bad, db)


def test_an_ambiguous_commit_prefix_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    for i, commit in enumerate(["abcd0001", "abcd0002"]):
        write_run(tmp_path / f"r{i}", [row("chk", suite="correctness")], git_commit=commit,
                  date=f"2026-02-0{i + 1}T00:00:00+00:00")
        append_run(db, load_run(tmp_path / f"r{i}"))
    with pytest.raises(RunRefError, match="ambiguous"):
        resolve_run("abcd", db)
    assert resolve_run("abcd0002", db).run.meta["git_commit"] == "abcd0002"


def test_a_run_whose_folder_is_gone_is_read_from_the_history(
        history_db: tuple[Path, list[Path]]) -> None:
    db, folders = history_db
    before = load_run(folders[2])
    shutil.rmtree(folders[2])
    found = resolve_run("latest", db)
    assert found.source == "history" and found.note == (
        f"run 3: its folder {folders[2]} is gone; read from the history (every result row "
        "it holds)")
    assert found.run.path == folders[2]
    got = found.run.results.sort_values(["suite", "case"]).reset_index(drop=True)
    want = before.results.sort_values(["suite", "case"]).reset_index(drop=True)
    assert list(got["case"]) == list(want["case"])
    assert list(got["status"]) == list(want["status"])
    assert [len(t) for t in got["round_times"]] == [len(t) for t in want["round_times"]]
    assert [x for t in got["round_times"] for x in t] == pytest.approx(
        [x for t in want["round_times"] for x in t])
    assert found.run.meta["git_commit"] == before.meta["git_commit"]
    assert not found.run.defects


def test_a_folder_that_holds_another_run_now_is_not_read_for_the_old_one(
        history_db: tuple[Path, list[Path]]) -> None:
    db, folders = history_db
    shutil.rmtree(folders[0])
    write_run(folders[0], [row("other", suite="correctness")],
              date="2026-03-01T00:00:00+00:00")  # a new run in the same folder
    found = resolve_run("1", db)
    assert found.source == "history" and found.note == (
        f"run 1: its folder {folders[0]} holds another run now; read from the history (every "
        "result row it holds)")
    assert set(found.run.results["case"]) == {"c1", "c2", "chk"}
    assert resolve_run(str(folders[0]), db).run.results["case"].tolist() == ["other"]


def test_compare_latest_1_latest_json(history_db: tuple[Path, list[Path]]) -> None:
    db, folders = history_db
    res = CliRunner().invoke(compare, ["latest~1", "latest", "--json", "--db", str(db)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    validate(doc, "compare")
    assert doc["base"]["history_id"] == 2 and doc["candidate"]["history_id"] == 3
    assert doc["base"]["path"] == str(folders[1]) and doc["candidate"]["path"] == str(folders[2])
    cases = {c["case"]: c for c in doc["cases"]}
    assert cases["c1"]["verdict"] == "slower" and cases["c1"]["ratio"] == pytest.approx(1.1,
                                                                                        rel=0.02)
    assert cases["c2"]["verdict"] == "same"
    assert cases["chk"]["timed"] is False and cases["chk"]["ratio"] is None
    assert doc["timed_tally"] == {"slower": 1, "same": 1}


def test_gate_json_by_id_and_commit(history_db: tuple[Path, list[Path]]) -> None:
    db, folders = history_db
    res = CliRunner().invoke(gate_command, ["aaaa", "3", "--json", "--db", str(db)])
    # two runs measured apart: the slowdown is a first look, not a failure
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    validate(doc, "gate")
    assert doc["passed"] is True and doc["failures"] == []
    (found,) = doc["first_look"]
    assert "c1" in found["case"] and "--settle" in found["settle"]
    res = CliRunner().invoke(gate_command, ["1", "2", "--json", "--db", str(db)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    validate(doc, "gate")
    assert doc["passed"] is True and doc["failures"] == [] and doc["first_look"] == []


def test_a_bad_ref_is_one_line_and_exit_2(history_db: tuple[Path, list[Path]],
                                          tmp_path: Path) -> None:
    db, _ = history_db
    res = CliRunner().invoke(compare, ["latest~7", "latest", "--db", str(db)])
    assert res.exit_code == 2
    assert res.output.strip().splitlines() == [
        f"Error: BASE: 'latest~7': the history holds 3 run(s) of this checkout "
        f"({HERE['root']}), so the oldest is latest~2"]
    res = CliRunner().invoke(gate_command, ["latest", "latest",
                                            "--db", str(tmp_path / "none.sqlite")])
    assert res.exit_code == 2 and "no history database at" in res.output


def test_history_json(history_db: tuple[Path, list[Path]], tmp_path: Path) -> None:
    db, folders = history_db
    res = CliRunner().invoke(history, ["--json", "--db", str(db)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    validate(doc, "history")
    assert [r["id"] for r in doc["runs"]] == [3, 2, 1]
    assert doc["runs"][0]["path"] == str(folders[2].resolve())
    # 2 timed cases x 3 passes and 1 check
    assert doc["runs"][0]["complete"] is True and doc["runs"][0]["n_results"] == 7
    empty = CliRunner().invoke(history, ["--json", "--db", str(tmp_path / "new.sqlite")])
    assert empty.exit_code == 0
    doc = json.loads(empty.stdout)
    validate(doc, "history")
    assert doc["runs"] == []


def test_report_baseline_from_history(history_db: tuple[Path, list[Path]],
                                      tmp_path: Path) -> None:
    db, folders = history_db
    out = tmp_path / "rep"
    res = CliRunner().invoke(report, [str(folders[2]), "--baseline", "latest~1", "--db", str(db),
                                      "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert str(folders[1]) in (out / "report.html").read_text()


def test_a_schema_violation_is_caught() -> None:
    """The schemas hold: a gate document that passed with a failure does
    not validate, nor a compare document with a p-value above 1."""
    doc = {"schema": "kbench/gate/1", "passed": True,
           "failures": [{"reason": "slowdown", "case": "x", "detail": "y"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema("gate")).validate(doc)
    s = schema("compare")["properties"]["cases"]["items"]["properties"]["p_slower"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(1.5, s)


def test_kbench_run_json_is_the_only_stdout(tmp_path: Path) -> None:
    """`kbench run --json`: stdout is one JSON document that validates;
    progress and the text summary went to stderr."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "KBENCH_RUN_REPORT": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "run", "--shapes", "smoke", "-k", "m17",
         "--backend", "scalar", "--no-history", "--out", str(out), "--json"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    validate(doc, "run")
    assert doc["run_folder"] == str(out) and doc["complete"] is True and doc["exit_code"] == 0
    run = load_run(out)
    assert doc["results"] == len(run.results) > 0
    assert sum(doc["status"].values()) == len(run.results)
    assert any(r["realization"] == "gemm_scalar_f32acc" for r in doc["by_realization"])
    assert "passed" in proc.stderr and "kbench run: suite=" in proc.stderr
    # the run wrote its report by default and said where
    assert doc["report"] == str(out / "report" / "report.html")
    assert (out / "report" / "report.html").is_file()
    assert f"report: {out / 'report' / 'report.html'}" in proc.stderr


def test_kbench_run_no_report(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = {**os.environ, "KBENCH_RUN_REPORT": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "run", "--shapes", "smoke", "-k", "m17",
         "--backend", "scalar", "--no-history", "--out", str(out), "--no-report"],
        capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (out / "report").exists() and "report:" not in proc.stdout


def test_count_json_validates(tmp_path: Path) -> None:
    """count --json's list (produced in suites/test_counts.py under QEMU) has
    its schema too; here a document of its form validates and one without
    a call count does not."""
    good = [{"case": "m8n8k8", "shape": "8x8x8", "realization": "gemm_neon_f16acc",
             "target": "qemu:svl=128", "verified": "pass (max error/bound 0.1)",
             "count_call": 1234, "count_kernel": 1000, "ratios": {"x": {"call": 1.1}}}]
    validate(good, "count")
    with pytest.raises(jsonschema.ValidationError):
        validate([{k: v for k, v in good[0].items() if k != "count_call"}], "count")


def test_plain_values_of_a_json_document() -> None:
    """What `--json` makes of a frame's cells: JSON's own types kept (a bool is
    no number), numpy scalars as Python numbers, NaN and NA as null, anything
    else as its text."""
    assert [json_out._plain(v) for v in (None, "s", True, False)] == [None, "s", True, False]
    assert json_out._plain(True) is True
    for value, want in ((np.float32(1.5), 1.5), (np.int64(7), 7), (np.bool_(True), True),
                        (3, 3), (float("nan"), None), (np.float64("inf"), None)):
        got = json_out._plain(value)
        assert got == want and type(got) is type(want), (value, got)
    assert json_out._plain(pd.NA) is None and json_out._plain(pd.NaT) is None
    assert json_out._plain(Path("runs/a")) == "runs/a"


def test_history_doc_rows() -> None:
    runs = pd.DataFrame({"id": [np.int64(2), np.int64(1)], "git_dirty": [1.0, np.nan],
                         "complete": [1, 0], "emulated": [0, np.nan], "note": ["a", None]})
    doc = json_out.history_doc("h.sqlite", runs)
    assert doc == {"schema": "kbench/history/1", "database": "h.sqlite", "runs": [
        {"id": 2, "git_dirty": True, "complete": True, "emulated": False, "note": "a"},
        {"id": 1, "git_dirty": None, "complete": False, "emulated": False, "note": None}]}
    clean = json_out.history_doc("h", pd.DataFrame({"git_dirty": [0]}))["runs"][0]
    assert clean["git_dirty"] is False


def test_run_doc_of_a_run_folder(tmp_path: Path) -> None:
    """`kbench run --json` built in-process: failures read as text (a case named
    like a number stays text), no failures.csv is an empty list, and a summary
    without per-realization rows, or not a table at all, gives none."""
    results = pd.DataFrame({"status": ["pass", "fail", "pass"],
                            "target": ["qemu:svl=128", "host", "host"]})
    run = Run(path=tmp_path, meta={"complete": True, "summary": {
        "by_realization": [{"realization": "r", "passed": np.int64(2), "time": np.nan}]}},
        results=results)
    doc = json_out.run_doc(run, 1, report="r.html")
    assert doc["failures"] == [] and doc["targets"] == ["host", "qemu:svl=128"]
    assert doc["status"] == {"pass": 2, "fail": 1} and doc["results"] == 3
    assert doc["by_realization"] == [{"realization": "r", "passed": 2, "time": None}]
    assert doc["exit_code"] == 1 and doc["report"] == "r.html" and "coverage" not in doc
    (tmp_path / "failures.csv").write_text("case,status,reproduce\n0012,fail,kbench run -k 0012\n")
    (tmp_path / "coverage.csv").write_text(
        "unit,realizations,instructions,covered,percent\nk1,a b,10,9,90.0\n")
    doc = json_out.run_doc(run, 1)
    assert doc["failures"] == [{"case": "0012", "status": "fail",
                                "reproduce": "kbench run -k 0012"}]
    assert doc["coverage"] == [{"unit": "k1", "realizations": ["a", "b"], "instructions": 10,
                                "covered": 9, "percent": 90.0}]
    for summary in ({"passed": 3}, ["not", "a", "table"], None):
        doc = json_out.run_doc(replace(run, meta={"summary": summary}), 0)
        assert doc["by_realization"] == []


def test_history_values_spelled_as_results_csv_spells_them() -> None:
    from kbench.results.runref import _cell
    assert [_cell(v) for v in (None, float("nan"), 2.0, 2.5, "x", 3, "")] == [
        "", "", 2, 2.5, "x", 3, ""]
    assert type(_cell(2.0)) is int


def test_an_unreadable_folder_or_a_history_row_without_metadata(
        history_db: tuple[Path, list[Path]]) -> None:
    """A folder that exists but is no run folder any more is said so (not "gone");
    a history row without stored metadata is read with none."""
    import sqlite3
    db, folders = history_db
    (folders[1] / "results.csv").write_text("not,a,results,header\n")
    found = resolve_run("2", db)
    assert found.source == "history" and found.note == (
        f"run 2: its folder {folders[1]} is no longer a readable run folder; read from the "
        "history (every result row it holds)")
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET meta = NULL WHERE id = 2")
    found = resolve_run("2", db)
    assert found.source == "history" and found.run.meta == {}
    assert set(found.run.results["case"]) == {"c1", "c2", "chk"}


def test_a_run_without_a_date_is_read_from_its_folder(tmp_path: Path) -> None:
    """The history stores a missing date as "", and the folder's run.json still
    matches it: the folder is read (no note), not the history's copy."""
    folder = tmp_path / "nodate"
    write_run(folder, [row("c1", suite="correctness")])
    meta = json.loads((folder / "run.json").read_text())
    del meta["date"]
    (folder / "run.json").write_text(json.dumps(meta))
    db = tmp_path / "h.sqlite"
    run_id = append_run(db, load_run(folder))
    found = resolve_run(str(run_id), db)
    assert found.note == "" and found.run.path == folder and found.run_id == run_id
