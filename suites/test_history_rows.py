"""What the history records about a run, from its rows and its metadata:
failed counts every status outside pass, mistrusted and skip (an unknown
one too), timed counts rows with rounds, emulated holds when any row or any
target is emulated, and runs are listed newest first. An SQLite file in a
temporary folder; synthetic run folders written by the real store."""

from __future__ import annotations

from pathlib import Path

from kbench.judge.verdict import Verdict
from kbench.results.history import append_run, query_runs
from kbench.results.runfolder import Run, load_run
from kbench.results.store import RunWriter


def _row(case: str, status: str = "pass", rounds: int = 0) -> Verdict:
    v = Verdict(case=case, op="gemm", shape="m8n8k8", kind="exact", target="t",
                backend="scalar", realization="gemm_scalar_f32acc", kernel="k", accum="fp32",
                k=8, m=8, n=8, b_form="plain", vector_bits=0, status=status)
    if rounds:
        v.rounds, v.round_times_ns, v.time_median_ns = rounds, [1.0] * rounds, 1.0
    return v


def _run(folder: Path, rows: list[Verdict], date: str, emulated_target: bool) -> Run:
    meta = {"host": "box", "machine": "aarch64", "cpu_model": "CPU", "date": date,
            "targets": {"t": {"emulated": emulated_target, "arch": "aarch64"}}}
    w = RunWriter(folder, meta)
    w.add_all(rows)
    w.close(complete=True)
    return load_run(folder)


def test_counts_flags_and_order(tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    old = _run(tmp_path / "old", [_row("a"), _row("b", "mistrusted"), _row("c", "skip"),
                                  _row("d", "weird"), _row("e", "timeout"),
                                  _row("f", rounds=3)], "2025-01-01T00:00:00+00:00", True)
    new = _run(tmp_path / "new", [_row("a"), _row("b", "fail")], "2025-02-01T00:00:00+00:00",
               False)
    old_id, new_id = append_run(db, old), append_run(db, new)
    runs = query_runs(db)
    assert list(runs["id"]) == [new_id, old_id]  # newest first
    first = runs.set_index("id").loc[old_id]
    assert first["n_results"] == 6
    assert first["n_failed"] == 2  # the unknown status and the timeout
    assert first["n_timed"] == 1
    assert bool(first["emulated"])  # its target is emulated, though no row says so
    second = runs.set_index("id").loc[new_id]
    assert (second["n_failed"], second["n_timed"], bool(second["emulated"])) == (1, 0, False)


def test_a_runs_rows_read_back_with_emulated_as_a_flag(tmp_path: Path) -> None:
    """run_results: the rows stored for one run, in their order, the emulated
    column a bool (a row stored without it reads False, never NaN or 1)."""
    import sqlite3

    from kbench.results.history import run_results
    db = tmp_path / "history.sqlite"
    emu = _row("b")
    emu.emulated = True
    run = _run(tmp_path / "r", [_row("a"), emu, _row("c")], "2025-01-01T00:00:00+00:00", False)
    run_id = append_run(db, run)
    with sqlite3.connect(db) as con:  # a row written before the column was kept
        con.execute("UPDATE results SET emulated = NULL WHERE \"case\" = 'c'")
    rows = run_results(db, run_id)
    assert list(rows["case"]) == ["a", "b", "c"]
    assert rows["emulated"].dtype == bool and list(rows["emulated"]) == [False, True, False]


def test_listing_flags_read_back_as_booleans_and_an_unknown_dirtiness_as_none(
        tmp_path: Path) -> None:
    """query_runs: complete and emulated are bools (an emulated NULL reads
    False), git_dirty True, False or None (not recorded)."""
    import sqlite3
    db = tmp_path / "history.sqlite"
    ids = [append_run(db, _run(tmp_path / f"r{i}", [_row("a")], f"2025-0{i + 1}-01T00:00:00+00:00",
                                False)) for i in range(3)]
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET git_dirty = NULL, complete = 0, emulated = NULL "
                    "WHERE id = ?", (ids[0],))
        con.execute("UPDATE runs SET git_dirty = 1 WHERE id = ?", (ids[1],))
        con.execute("UPDATE runs SET git_dirty = 0 WHERE id = ?", (ids[2],))
    listing = query_runs(db).set_index("id")
    assert listing.loc[ids[0], "git_dirty"] is None
    assert listing.loc[ids[1], "git_dirty"] is True and listing.loc[ids[2], "git_dirty"] is False
    assert listing["complete"].dtype == bool and listing["emulated"].dtype == bool
    assert not listing.loc[ids[0], "complete"] and not listing.loc[ids[0], "emulated"]
    assert listing.loc[ids[1], "complete"]
    assert list(query_runs(db)["id"]) == ids[::-1]  # newest first


def _history(tmp_path: Path) -> tuple[Path, list[int], list[Run]]:
    db = tmp_path / "history.sqlite"
    runs = [_run(tmp_path / f"h{i}", [_row("a"), _row(f"only{i}")],
                 f"2025-0{i + 1}-01T00:00:00+00:00", False) for i in range(3)]
    return db, [append_run(db, r) for r in runs], runs


def test_a_run_is_named_by_folder_id_latest_or_commit(tmp_path: Path) -> None:
    """resolve_run in-process: a folder wins; an id, latest, latest~N name a
    history run, read from its folder while that still holds it; a name of
    no form, or any history name without a database, is a clear error."""
    import shutil

    import pytest

    from kbench.results.runref import Resolved, RunRefError, resolve_run
    db, ids, runs = _history(tmp_path)
    got = resolve_run(str(tmp_path / "h1"), db)
    assert isinstance(got, Resolved) and got.source == "folder" and got.run_id is None
    assert got.note == "" and got.run.meta["date"] == runs[1].meta["date"]
    for ref, i in ((str(ids[0]), 0), ("latest", 2), ("latest~1", 1), ("latest~2", 0)):
        got = resolve_run(ref, db)
        assert (got.source, got.run_id, got.note) == ("history", ids[i], ""), ref
        assert got.run.meta["date"] == runs[i].meta["date"]
        assert sorted(got.run.results["case"]) == ["a", f"only{i}"]
    with pytest.raises(RunRefError) as exc:
        resolve_run("no-such-thing", db)
    assert str(exc.value) == ("'no-such-thing': no such run folder (a run is named by a run "
                              "folder, a history run id, latest, latest~N or a commit prefix)")
    with pytest.raises(RunRefError) as exc:
        resolve_run("latest", tmp_path / "none.sqlite")
    assert str(exc.value) == (f"'latest': no such run folder, and no history database at "
                              f"{tmp_path / 'none.sqlite'} to look it up in (--db, $KBENCH_DB)")
    # a run whose folder is gone is rebuilt from the history's rows, and says so
    shutil.rmtree(tmp_path / "h0")
    got = resolve_run(str(ids[0]), db)
    assert got.source == "history" and got.run_id == ids[0]
    assert got.note == (f"run {ids[0]}: its folder {tmp_path / 'h0'} is gone; read from the "
                        "history (every result row it holds)")
    assert sorted(got.run.results["case"]) == ["a", "only0"] and got.run.path == tmp_path / "h0"


def test_the_history_named_by_kbench_db(tmp_path: Path, monkeypatch) -> None:
    from kbench.results.runref import resolve_run
    db, ids, _ = _history(tmp_path)
    monkeypatch.setenv("KBENCH_DB", str(db))
    assert resolve_run("latest").run_id == ids[2]


def test_the_run_and_history_json_documents(tmp_path: Path) -> None:
    """`kbench run --json` and `kbench history --json` built in-process and
    checked against their JSON Schemas: the status tally, the targets, the
    summary per realization, the failures and coverage files as written,
    the defects; the history's runs newest first with plain values."""
    import json

    import jsonschema

    from kbench.results.json_out import history_doc, run_doc
    run = _run(tmp_path / "r", [_row("a"), _row("b", "fail"), _row("c", "fail"),
                                _row("d", rounds=3)], "2025-01-01T00:00:00+00:00", False)
    head = "status,suite,target,realization,catalog,case,kind,message,reproduce\n"
    (run.path / "failures.csv").write_text(
        head + "fail,correctness,t,gemm_scalar_f32acc,cat,b,exact,max err 3,kbench run -k b\n"
        "fail,correctness,t,gemm_scalar_f32acc,cat,c,exact,,kbench run -k c\n")
    (run.path / "coverage.csv").write_text(
        "target,owner,unit,kind,realizations,instructions,covered,percent,uncovered,not_driven\n"
        "qemu:svl=512,kb,k1,kernel,r1 r2,100,97,97.0,3,\n")
    summary = {"target": "t", "backend": "scalar", "realization": "gemm_scalar_f32acc",
               "accum": "fp32", "cases": 4, "passed": 2, "failed": 2, "mistrusted": 0,
               "errors": 0, "faults": 0, "worst_ulp": float("nan")}
    run.meta["summary"] = {"by_realization": [summary]}
    doc = json.loads(json.dumps(run_doc(run, 1, report="r/report.html")))
    schema = json.loads((Path(__file__).resolve().parents[1] / "reports" / "schema"
                         / "run.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["schema"] == "kbench/run/1" and doc["run_folder"] == str(run.path)
    assert doc["complete"] is True and doc["exit_code"] == 1 and doc["results"] == 4
    assert doc["status"] == {"pass": 2, "fail": 2} and doc["targets"] == ["t"]
    assert doc["by_realization"] == [{**summary, "worst_ulp": None}]
    assert [(f["case"], f["message"], f["reproduce"]) for f in doc["failures"]] == [
        ("b", "max err 3", "kbench run -k b"), ("c", "", "kbench run -k c")]
    (cov,) = doc["coverage"]
    assert (cov["unit"], cov["realizations"], cov["instructions"], cov["covered"],
            cov["percent"]) == ("k1", ["r1", "r2"], 100, 97, 97.0)
    assert doc["defects"] == [] and doc["report"] == "r/report.html"
    db = tmp_path / "history.sqlite"
    ids = [append_run(db, run), append_run(db, _run(tmp_path / "s", [_row("a")],
                                                    "2025-02-01T00:00:00+00:00", True))]
    hist = json.loads(json.dumps(history_doc(str(db), query_runs(db))))
    jsonschema.validate(hist, json.loads((Path(__file__).resolve().parents[1] / "reports"
                                          / "schema" / "history.schema.json").read_text()))
    assert hist["schema"] == "kbench/history/1" and hist["database"] == str(db)
    assert [r["id"] for r in hist["runs"]] == ids[::-1]
    newest = hist["runs"][0]
    assert newest["complete"] is True and newest["emulated"] is True
    assert hist["runs"][1]["emulated"] is False and newest["host"] == "box"
    assert newest["n_results"] == 1 and hist["runs"][1]["n_failed"] == 2


def test_picking_a_run_by_id_latest_or_commit_and_the_errors() -> None:
    """_pick over a listing (newest first): latest~N counts back, an id is
    found wherever it is, a commit prefix (any case) names the newest run of
    its one commit; each miss or ambiguity is one line saying what exists."""
    import pandas as pd
    import pytest

    from kbench.results.runref import RunRefError, _pick
    runs = pd.DataFrame({"id": [7, 5, 4, 2], "git_commit": ["ABCDEF01", "abcdef01", "abc99999",
                                                            None]})
    assert int(_pick(runs, "latest")["id"]) == 7 and int(_pick(runs, "latest~3")["id"]) == 2
    assert int(_pick(runs, "4")["id"]) == 4
    assert int(_pick(runs, "abcdef")["id"]) == 7  # the newest run of that commit
    assert int(_pick(runs, "ABC9")["id"]) == 4
    cases = [
        ("latest~4", "'latest~4': the history holds 4 run(s), so the oldest is latest~3"),
        ("3", "'3': no such run folder, and no run 3 in the history (ids 2-7; "
              "`kbench history` lists them)"),
        ("beef", "'beef': no such run folder, and no run of a commit starting with beef in "
                 "the history"),
    ]
    for ref, text in cases:
        with pytest.raises(RunRefError) as exc:
            _pick(runs, ref)
        assert str(exc.value) == text
    with pytest.raises(RunRefError) as exc:
        _pick(runs.assign(git_commit=["abcd1111", "abcd2222", "x", "y"]), "abcd")
    assert str(exc.value) == ("'abcd' is ambiguous: commits abcd1111, abcd2222 in the history; "
                              "give more digits")
    full = ["abcd" + "1" * 36, "abcd" + "2" * 36, "x", "y"]  # full commits: 12 digits shown
    with pytest.raises(RunRefError) as exc:
        _pick(runs.assign(git_commit=full), "abcd")
    assert str(exc.value) == ("'abcd' is ambiguous: commits abcd11111111, abcd22222222 in the "
                              "history; give more digits")
    with pytest.raises(RunRefError) as exc:
        _pick(runs.iloc[0:0], "latest")
    assert str(exc.value) == "'latest': no such run folder, and the history holds no runs"


def test_trends_read_timed_hardware_rows_of_this_machine(tmp_path: Path) -> None:
    """history_trends: per run, case and realization the median time of its
    passes, from the last N runs of this CPU model and architecture only,
    oldest first; untimed and emulated rows left out."""
    import json

    from kbench.results.report_views import TREND_COLUMNS, history_trends

    def timed(case: str, ns: float, emulated: bool = False) -> Verdict:
        v = _row(case, rounds=3)
        v.time_median_ns, v.emulated = ns, emulated
        return v
    db = tmp_path / "history.sqlite"
    ids = []
    for i, (cpu, rows) in enumerate([
            ("CPU", [timed("a", 100.0), timed("a", 300.0), timed("e", 5.0, emulated=True),
                     _row("u")]),
            ("other", [timed("a", 999.0)]),
            ("CPU", [timed("a", 50.0)])]):
        run = _run(tmp_path / f"t{i}", rows, f"2025-0{i + 1}-01T00:00:00+00:00", False)
        run.meta["cpu_model"] = cpu
        (run.path / "run.json").write_text(json.dumps(run.meta))
        ids.append(append_run(db, load_run(run.path)))
    trends = history_trends(db, "CPU", "aarch64")
    assert list(trends.columns) == TREND_COLUMNS
    assert list(zip(trends["run_id"], trends["case"], trends["time_median_ns"], strict=True)) == [
        (ids[0], "a", 200.0), (ids[2], "a", 50.0)]
    assert list(history_trends(db, "CPU", "aarch64", limit_runs=1)["run_id"]) == [ids[2]]
    assert history_trends(db, "CPU", "x86_64").empty
    assert list(history_trends(db, "CPU", "x86_64").columns) == TREND_COLUMNS


def test_without_db_or_kbench_db_the_default_history_is_read(tmp_path: Path, monkeypatch) -> None:
    from kbench.results.runref import resolve_run
    monkeypatch.delenv("KBENCH_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    db = tmp_path / "data" / "kbench" / "history.sqlite"
    ids = [append_run(db, _run(tmp_path / f"r{i}", [_row("a")], f"2025-01-0{i + 1}T00:00:00+00:00",
                                False)) for i in range(2)]
    got = resolve_run("latest")
    assert got.source == "history" and got.run_id == ids[1]


def test_any_run_of_a_long_history_is_named_not_only_the_listings_newest(tmp_path: Path) -> None:
    """`kbench history` lists the newest 50 runs; a reference reaches every run."""
    from kbench.results.runref import resolve_run
    db = tmp_path / "history.sqlite"
    ids = [append_run(db, _run(tmp_path / f"r{i}", [_row("a")],
                                f"2025-01-01T00:{i:02d}:00+00:00", False)) for i in range(53)]
    assert len(query_runs(db)) == 50
    assert resolve_run(str(ids[0]), db).run_id == ids[0]
    assert resolve_run("latest~52", db).run_id == ids[0]


def test_a_postgresql_history_is_named_by_its_url(tmp_path: Path, pg_server) -> None:
    import os

    import psycopg

    from kbench.results.runref import resolve_run
    name = f"refs_{os.getpid()}"
    with psycopg.connect(pg_server.url, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {name}")
    url = pg_server.url.replace("/kbench?", f"/{name}?")
    ids = [append_run(url, _run(tmp_path / f"r{i}", [_row("a")], f"2025-01-0{i + 1}T00:00:00+00:00",
                                 False)) for i in range(2)]
    got = resolve_run("latest~1", url)
    assert got.source == "history" and got.run_id == ids[0]


def test_trends_default_to_the_last_50_runs(tmp_path: Path) -> None:
    from kbench.results.report_views import history_trends
    db = tmp_path / "history.sqlite"
    ids = []
    for i in range(51):
        v = _row("a", rounds=3)
        v.time_median_ns = 100.0 + i
        run = _run(tmp_path / f"r{i}", [v], f"2025-01-01T00:00:{i:02d}+00:00", False)
        ids.append(append_run(db, run))
    trends = history_trends(db, "CPU", "aarch64")
    assert list(trends["run_id"]) == ids[1:]  # the oldest of 51 left out
    assert list(trends["time_median_ns"]) == [100.0 + i for i in range(1, 51)]


def test_the_run_row_word_for_word(tmp_path: Path) -> None:
    """What a run adds to the runs table, field by field, straight from the
    run in memory: versions and names sorted and joined, a "-" backend left
    out, emulated from a row or a target, failures counting unknown statuses."""
    import json

    import pandas as pd

    from kbench.results.history import _run_row
    targets = {"qemu:b": {"library_version": "2.0", "emulated": True},
               "host": {"library_version": "1.0"}, "x": {"library_version": ""},
               "y": {"library_version": "1.0"}, "bad": "not a record", "z": {},
               "w": {"path": Path("/p")}}
    meta = {"date": "2026-01-02T03:04:05", "host": "h", "cpu_model": "c", "machine": "m",
            "platform": "p", "compiler": "cc", "c_flags": "-O2", "git_commit": "abc",
            "git_dirty": "yes", "complete": True, "command_line": "kbench run",
            "targets": targets}
    df = pd.DataFrame({"backend": ["neon", "-", "", "ref", "neon"],
                       "target": ["t2", "t1", "t1", "t1", "t1"],
                       "emulated": [False] * 5,
                       "status": ["pass", "mistrusted", "skip", "fail", "weird"],
                       "rounds": [0, 3, 1, 0, -1]})
    folder = tmp_path / "run"
    row = _run_row(Run(folder, meta, df))
    assert row == {
        "path": str(folder.resolve()), "date": "2026-01-02T03:04:05", "host": "h",
        "cpu_model": "c", "arch": "m", "platform": "p", "compiler": "cc", "c_flags": "-O2",
        "git_commit": "abc", "git_dirty": 1, "complete": 1, "command_line": "kbench run",
        "library_version": "1.0 2.0", "target_names": "bad host qemu:b w x y z",
        "backends": "neon ref", "emulated": 1, "targets": json.dumps(targets, default=str),
        "meta": json.dumps(meta, default=str), "n_results": 5, "n_failed": 2, "n_timed": 2}
    assert json.loads(row["targets"])["w"] == {"path": "/p"}
    # no targets: the rows' own target names; a target that does not say it is emulated
    bare = _run_row(Run(folder, {"git_dirty": 0, "complete": "yes"}, df))
    assert (bare["target_names"], bare["emulated"], bare["git_dirty"]) == ("t1 t2", 0, 0)
    assert (bare["date"], bare["host"], bare["library_version"], bare["complete"]) == (
        "", None, "", 0)
    assert bare["targets"] == "{}" and bare["meta"] == json.dumps({"git_dirty": 0,
                                                                    "complete": "yes"})
    flagged = _run_row(Run(folder, {"targets": {"t": {"emulated": False}}},
                           df.assign(emulated=[False, False, True, False, False])))
    assert flagged["emulated"] == 1 and flagged["git_dirty"] is None
    odd = _run_row(Run(folder, {"targets": {"t": {"emulated": 0}}, "date": 7,
                                "when": Path("x")}, df))
    assert odd["emulated"] == 0 and odd["date"] == "7"
    assert json.loads(odd["meta"])["when"] == "x"  # a value JSON cannot hold, as text
