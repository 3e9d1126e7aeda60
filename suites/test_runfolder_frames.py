"""A run folder without results.csv reads as an empty results frame of the
same columns and column types as a results.csv holding only its header, so
every reader (compare, gate, report) treats both alike."""

from __future__ import annotations

import json
from pathlib import Path

from kbench.results import runfolder as rf


def test_a_missing_results_file_reads_like_a_header_only_one(tmp_path: Path) -> None:
    missing, header = tmp_path / "missing", tmp_path / "header"
    for d in (missing, header):
        d.mkdir()
        (d / "run.json").write_text(json.dumps({"results": 0}))
    (header / "results.csv").write_text(",".join(rf.COLUMNS) + "\n")
    a, b = rf.load_run(missing), rf.load_run(header)
    assert a.defects == ["results.csv is missing"] and b.defects == []
    assert list(a.results.columns) == list(b.results.columns) == [*rf.COLUMNS, "round_times"]
    assert a.results.dtypes.to_dict() == b.results.dtypes.to_dict()
    kinds = {str(t) for t in a.results.dtypes}
    assert {"float64", "int64", "bool", "object"} <= kinds
    assert a.results.empty and not a.has_results


def test_a_runs_state_says_complete_and_whether_it_has_results(tmp_path: Path) -> None:
    """Only a JSON true completes a run; a run without rows says so."""
    for name, complete, rows, state in [("a", True, False, "complete, no results"),
                                        ("b", "yes", False, "incomplete, no results"),
                                        ("c", True, True, "complete"),
                                        ("d", None, True, "incomplete")]:
        d = tmp_path / name
        d.mkdir()
        meta = {"results": 1 if rows else 0}
        if complete is not None:
            meta["complete"] = complete
        (d / "run.json").write_text(json.dumps(meta))
        if rows:
            line = {c: "" for c in rf.COLUMNS}
            line.update({"suite": "correctness", "target": "host", "case": "c1",
                         "status": "pass"})
            (d / "results.csv").write_text(",".join(rf.COLUMNS) + "\n"
                                           + ",".join(line[c] for c in rf.COLUMNS) + "\n")
        assert rf.load_run(d).state() == state, name


def test_the_kill_rate_of_an_area_leaves_stale_mutants_out() -> None:
    from kbench.results.mutation import area_table
    data = {"mutants": [{"area": "gate", "status": "killed"}, {"area": "gate", "status": "killed"},
                        {"area": "gate", "status": "survived"}, {"area": "gate", "status": "stale"},
                        {"area": "judge", "status": "stale"}]}
    rows = {r["area"]: r for r in area_table(data).to_dict("records")}
    assert rows["gate"]["mutants"] == 4 and rows["gate"]["kill_rate"] == 2 / 3
    assert rows["judge"]["kill_rate"] != rows["judge"]["kill_rate"]  # nothing live: NaN
    assert rows["all"]["mutants"] == 5 and rows["all"]["kill_rate"] == 2 / 3
    assert list(area_table(data)["area"]) == ["gate", "judge", "all"]
    assert area_table(None).empty and area_table({"mutants": []}).empty


def test_a_bad_cell_is_shown_up_to_40_characters() -> None:
    path = Path("runs/x/results.csv")
    exact = "y" * 40
    err = rf._bad_cell(path, 7, "time_median_ns", exact, "a number")
    assert str(err) == f"{path}: line 7, column time_median_ns: {exact!r} is not a number"
    err = rf._bad_cell(path, 9, "rounds", exact + "1", "an integer")
    assert f"{exact + '...'!r} is not an integer" in str(err)
    long = "z" * 40 + "tail"
    err = rf._bad_cell(path, 8, "rounds", long, "an integer")
    assert str(err) == f"{path}: line 8, column rounds: {'z' * 40 + '...'!r} is not an integer"
