"""The run history database, on synthetic run folders written through
RunWriter and read back by the real loader; every test runs against an
SQLite file and against a throwaway PostgreSQL server (kb_servers)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from kb_servers import Postgres

from kbench.cli.history import history
from kbench.judge.verdict import Verdict
from kbench.results.history import (
    append_run,
    connect,
    default_db_path,
    query_runs,
    run_results,
)
from kbench.results.runfolder import Run, load_run
from kbench.results.store import RunWriter, claim_out_dir


def verdict(case: str, backend: str = "scalar", status: str = "pass",
            times: list[float] | None = None) -> Verdict:
    v = Verdict(case=case, op="gemm", shape="m4n4k4", kind="exact", target="host",
                backend=backend, realization=f"gemm_{backend}_f32acc", kernel="k", accum="fp32",
                k=4, m=4, n=4, b_form="plain", vector_bits=0, status=status, exact=16, total=16,
                tags=["t1", "t2"], catalog="synthetic")
    if times:
        v.suite, v.rounds, v.round_times_ns = "perf", len(times), times
        v.time_median_ns = float(np.median(times))
    return v


def make_run(folder: Path, rows: list[Verdict], complete: bool | None = True,
             **meta: Any) -> Run:
    """complete=None leaves the writer open, like a run killed mid-way."""
    metadata = {"host": "alpha-box", "machine": "aarch64", "cpu_model": "Neoverse-V2",
                "git_commit": "c0ffee0123456789", "git_dirty": False,
                "date": "2025-03-01T10:00:00+00:00", "command_line": "kbench run",
                "c_flags": ["-O2", "-march=armv8.2-a+fp16"],
                "targets": {"host": {"emulated": False, "library_version": "0.3.0"}}, **meta}
    claim_out_dir(folder, force=True)  # a folder used again is replaced, as `--force` does
    w = RunWriter(folder, metadata)
    w.add_all(rows)
    if complete is not None:
        w.close(complete=complete)
    return load_run(folder)


_FRESH = itertools.count()


def fresh_pg_database(server: Postgres) -> str:
    """A new, empty database on the server; its URL."""
    import psycopg
    name = f"t{os.getpid()}_{next(_FRESH)}"
    with psycopg.connect(server.url, autocommit=True) as con:
        con.execute(f"CREATE DATABASE {name}")
    return server.url.replace("/kbench?", f"/{name}?")


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """The history location: an SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return tmp_path / "data" / "history.sqlite"
    return fresh_pg_database(request.getfixturevalue("pg_server"))


def test_default_db_path() -> None:
    assert default_db_path({"XDG_DATA_HOME": "/data"}) == Path("/data/kbench/history.sqlite")
    home = Path.home() / ".local" / "share" / "kbench" / "history.sqlite"
    assert default_db_path({}) == home
    assert default_db_path({"XDG_DATA_HOME": "relative/dir"}) == home  # per the XDG spec


def test_append_and_read_back(tmp_path: Path, db: Path | str) -> None:
    run = make_run(tmp_path / "r1", [verdict("a"), verdict("b", status="fail"),
                                     verdict("p", times=[1000.0, 1010.0, 990.0])])
    run_id = append_run(db, run)
    listing = query_runs(db)
    assert listing["id"].tolist() == [run_id]
    first = listing.iloc[0]
    assert (first["host"], first["cpu_model"], first["arch"]) == ("alpha-box", "Neoverse-V2",
                                                                  "aarch64")
    assert (first["n_results"], first["n_failed"], first["n_timed"]) == (3, 1, 1)
    assert bool(first["complete"]) and first["git_dirty"] is False
    assert first["path"] == str((tmp_path / "r1").resolve())
    assert first["backends"] == "scalar"
    results = run_results(db, run_id)
    assert results["case"].tolist() == ["a", "b", "p"]
    assert results["status"].tolist() == ["pass", "fail", "pass"]
    assert results.loc[2, "round_times_ns"] == "1000 1010 990"
    assert results.loc[0, "tags"] == "t1 t2"
    with connect(db) as con:
        version, targets, flags = con.execute(
            "SELECT library_version, targets, c_flags FROM runs").fetchone()
    assert version == "0.3.0" and '"library_version": "0.3.0"' in targets
    assert flags == "-O2 -march=armv8.2-a+fp16"


def test_append_is_idempotent(tmp_path: Path, db: Path | str) -> None:
    run = make_run(tmp_path / "r1", [verdict("a"), verdict("b")])
    first = append_run(db, run)
    assert append_run(db, run) == first
    assert len(query_runs(db)) == 1
    assert len(run_results(db, first)) == 2
    # another run folder, or the same folder re-run at another date, is a new run
    other = append_run(db, make_run(tmp_path / "r2", [verdict("a")]))
    rerun = append_run(db, make_run(tmp_path / "r1", [verdict("a")],
                                    date="2025-03-02T10:00:00+00:00"))
    assert len({first, other, rerun}) == 3
    assert query_runs(db)["id"].tolist() == [rerun, other, first]  # newest first


def test_incomplete_run_is_kept_and_marked(tmp_path: Path, db: Path | str) -> None:
    folder = tmp_path / "killed"
    killed = make_run(folder, [verdict("a"), verdict("b")], complete=None)
    run_id = append_run(db, killed)
    row = query_runs(db).iloc[0]
    assert not row["complete"] and row["n_results"] == 2
    # the same run folder, completed later, updates the same history entry
    finished = make_run(folder, [verdict("a"), verdict("b"), verdict("c")], complete=True)
    assert append_run(db, finished) == run_id
    row = query_runs(db).iloc[0]
    assert row["complete"] and row["n_results"] == 3
    assert run_results(db, run_id)["case"].tolist() == ["a", "b", "c"]


def test_interrupted_run_closed_incomplete(tmp_path: Path, db: Path | str) -> None:
    append_run(db, make_run(tmp_path / "int", [verdict("a")], complete=False))
    assert query_runs(db)["complete"].tolist() == [False]


@pytest.fixture
def three_runs(tmp_path: Path, db: Path | str) -> dict[str, int]:
    return {
        "x86": append_run(db, make_run(tmp_path / "x86", [verdict("a")], host="ci-x86",
                                       machine="x86_64", cpu_model="AMD EPYC 7763",
                                       git_commit="aaaa1111", date="2025-03-01T00:00:00")),
        "arm": append_run(db, make_run(tmp_path / "arm", [verdict("a"), verdict("b", "neon")],
                                       host="ci-arm", machine="aarch64",
                                       cpu_model="Neoverse-N1", git_commit="bbbb2222",
                                       date="2025-03-02T00:00:00")),
        "arm2": append_run(db, make_run(tmp_path / "arm2", [verdict("a", "sme")],
                                        host="board", machine="aarch64",
                                        cpu_model="Apple M4", git_commit="bbbb3333",
                                        git_dirty=True, date="2025-03-03T00:00:00")),
    }


def test_filters(db: Path | str, three_runs: dict[str, int]) -> None:
    def ids(**kw: Any) -> list[int]:
        return query_runs(db, **kw)["id"].tolist()
    r = three_runs
    assert ids() == [r["arm2"], r["arm"], r["x86"]]
    assert ids(machine="ci-x86") == [r["x86"]]
    assert ids(machine="epyc") == [r["x86"]]  # CPU model, any case
    assert ids(machine="aarch64") == [r["arm2"], r["arm"]]
    assert ids(machine="ci-") == [r["arm"], r["x86"]]
    assert ids(backend="neon") == [r["arm"]]
    assert ids(backend="scalar") == [r["arm"], r["x86"]]
    assert ids(backend="sve") == []
    assert ids(commit="bbbb") == [r["arm2"], r["arm"]]
    assert ids(commit="BBBB2222") == [r["arm"]]
    assert ids(commit="bbbb", machine="Apple") == [r["arm2"]]
    assert ids(limit=1) == [r["arm2"]]
    assert ids(limit=None) == ids()
    assert query_runs(db, commit="bbbb3")["git_dirty"].tolist() == [True]


def test_cli_history(tmp_path: Path, db: Path | str) -> None:
    runner = CliRunner()
    empty = runner.invoke(history, ["--db", str(db)])
    if isinstance(db, Path):
        assert empty.exit_code == 0 and "no history yet" in empty.output and not db.exists()
    else:  # a server is always there: an empty history lists no runs
        assert empty.exit_code == 0 and empty.output.strip() == "no runs", empty.output
    make_run(tmp_path / "arm", [verdict("a", "neon")], host="ci-arm", git_commit="bbbb2222")
    make_run(tmp_path / "x86", [verdict("a")], host="ci-x86", machine="x86_64",
             git_commit="aaaa1111", date="2025-03-05T00:00:00", complete=False)
    out = runner.invoke(history, ["--db", str(db), "--add", str(tmp_path / "arm"),
                                  "--add", str(tmp_path / "x86")])
    assert out.exit_code == 0, out.output
    assert out.output.count("recorded ") == 2
    lines = out.output.splitlines()
    assert "aaaa1111" in lines[3] and "INCOMPLETE" in lines[3]
    assert "bbbb2222" in lines[4] and "complete" in lines[4]
    filtered = runner.invoke(history, ["--db", str(db), "--backend", "neon"])
    assert filtered.exit_code == 0
    assert "bbbb2222" in filtered.output and "aaaa1111" not in filtered.output
    assert "aaaa1111" in runner.invoke(history, ["--db", str(db), "--machine", "x86"]).output
    none = runner.invoke(history, ["--db", str(db), "--commit", "ffff"])
    assert none.output.strip() == "no runs"
    assert runner.invoke(history, ["--db", str(db), "--add", str(tmp_path)]).exit_code == 2


def test_cli_history_default_db_follows_xdg(tmp_path: Path) -> None:
    make_run(tmp_path / "r", [verdict("a")])
    out = CliRunner().invoke(history, ["--add", str(tmp_path / "r")],
                             env={"XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert out.exit_code == 0, out.output
    assert (tmp_path / "xdg" / "kbench" / "history.sqlite").exists()


SMOKE_RUN = ["run", "--suite", "correctness", "--shapes", "smoke", "--backend", "scalar",
             "--kinds", "exact"]


def _run_unwritable_history(tmp_path: Path, name: str, *extra: str) -> Any:
    from kbench.cli.main import main
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the history's folder should be")
    return CliRunner().invoke(main, [*SMOKE_RUN, "--db", str(blocker / "history.sqlite"),
                                     "--out", str(tmp_path / name), *extra])


@pytest.mark.parametrize("strict", [False, True])
def test_a_run_whose_history_is_not_written_exits_1(tmp_path: Path, strict: bool) -> None:
    """Not written is an exit status, not only a line: a run that passed exits 1
    (--strict-history, once needed for that, is the default and still taken)."""
    res = _run_unwritable_history(tmp_path, "run", *(["--strict-history"] if strict else []))
    assert res.exit_code == 1, res.output
    assert "history: run not appended (" in res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("kbench run: history not written (")
    assert "cannot create its folder" in last and last.endswith("; exit status 1")
    assert (tmp_path / "run" / "results.csv").is_file()


def test_no_history_asks_for_none_and_exits_0(tmp_path: Path) -> None:
    from kbench.cli.main import main
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the history's folder should be")
    res = CliRunner().invoke(main, [*SMOKE_RUN, "--db", str(blocker / "history.sqlite"),
                                    "--no-history", "--no-report", "--out",
                                    str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert "not written" not in res.stderr


def test_a_run_that_failed_keeps_its_exit_status_when_history_is_not_written(
        tmp_path: Path) -> None:
    res = _run_unwritable_history(tmp_path, "run", "-k", "no_such_case")
    assert res.exit_code == 5, res.output  # pytest's "no tests collected", not 1
    assert res.stderr.strip().splitlines()[-1].startswith(
        "kbench run: history not written (")


def test_run_appended_to_history_gives_no_warning(tmp_path: Path) -> None:
    from kbench.cli.main import main
    db = tmp_path / "h.sqlite"
    res = CliRunner().invoke(main, [*SMOKE_RUN, "--db", str(db), "--strict-history",
                                    "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert f"history: run #1 in {db}" in res.stdout and "warning" not in res.stderr
    # the run says which checkout ran it and which catalogs (kbench.results.identity)
    from kbench.results.identity import catalog_set, checkout
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["checkout"] == checkout() and Path(meta["checkout"]["root"]).is_dir()
    assert meta["catalogs"] == catalog_set(["smoke"]) and len(meta["catalogs"]["smoke"]) == 16


PAGE = 4096  # SQLite's default page size, the size of the history's pages


def _history_of_runs(tmp_path: Path, db: Path | str, runs: int = 5) -> None:
    for i in range(runs):
        append_run(db, make_run(tmp_path / f"r{i}", [verdict(f"c{j}") for j in range(200)],
                                date=f"2025-03-0{i + 1}T00:00:00"))


def test_history_check_of_a_healthy_database(tmp_path: Path, db: Path | str) -> None:
    _history_of_runs(tmp_path, db)
    out = CliRunner().invoke(history, ["--db", str(db), "--check"])
    assert out.exit_code == 0, out.output
    assert out.output.count("\n") == 1 and ": ok (" in out.output
    if isinstance(db, str):
        assert "5 runs, 1000 results readable" in out.output


def test_history_check_of_a_database_without_history_tables(db: Path | str) -> None:
    """A PostgreSQL database kbench never wrote to is ok and says so (an
    SQLite file that does not exist cannot be opened for the check)."""
    from kbench.results.historydb import Integrity, check_postgres, check_sqlite
    if isinstance(db, str):
        assert check_postgres(db) == Integrity(True, "ok (no history tables yet)")
    else:
        got = check_sqlite(db)
        assert got.ok is False and got.text.startswith("cannot open (")


def test_the_driver_errors_without_psycopg(monkeypatch) -> None:
    import sqlite3
    import sys

    from kbench.results.historydb import HistoryError, driver_errors
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    assert driver_errors() == (sqlite3.Error, HistoryError)


def test_history_check_finds_a_zeroed_page(tmp_path: Path) -> None:
    db = tmp_path / "history.sqlite"
    _history_of_runs(tmp_path, db)
    data = bytearray(db.read_bytes())
    assert len(data) >= 20 * PAGE and len(data) % PAGE == 0
    middle = len(data) // PAGE // 2
    data[middle * PAGE:(middle + 1) * PAGE] = bytes(PAGE)
    db.write_bytes(data)
    out = CliRunner().invoke(history, ["--db", str(db), "--check"])
    assert out.exit_code == 1, out.output
    assert out.output.count("\n") == 1 and "Traceback" not in out.output
    assert out.output.startswith(f"history: {db}: damaged: table results: ")
    # what SQLite said of the damaged table; the healthy runs table is not listed
    assert out.output.endswith(": damaged: table results: database disk image is malformed\n")
    assert "table runs" not in out.output
    assert db.read_bytes() == data  # the check changed nothing


def test_history_check_of_a_missing_database(tmp_path: Path) -> None:
    out = CliRunner().invoke(history, ["--db", str(tmp_path / "none.sqlite"), "--check"])
    assert out.exit_code == 1 and "no history database there" in out.output
    assert not (tmp_path / "none.sqlite").exists()


def test_concurrent_appends_each_return_their_own_run_id(tmp_path: Path,
                                                         db: Path | str) -> None:
    """Two threads append their own runs into one database at once: the id each
    append returns is the row of its own run folder (the id comes from the
    INSERT ... RETURNING of that row, not from a later look-up)."""
    import threading
    folders = {w: [make_run(tmp_path / f"w{w}_{i}", [verdict(f"c{j}") for j in range(50)],
                            host=f"writer-{w}") for i in range(4)] for w in range(2)}
    barrier = threading.Barrier(2)
    got: dict[int, list[int]] = {0: [], 1: []}
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for run in folders[w]:
                barrier.wait(timeout=60)
                got[w].append(append_run(db, run, wait=120))
        except BaseException as exc:  # noqa: BLE001 - re-raised by the test below
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    paths = dict(zip(query_runs(db, limit=None)["id"], query_runs(db, limit=None)["path"],
                     strict=True))
    assert len(paths) == 8
    for w in range(2):
        assert [paths[i] for i in got[w]] == [str(r.path.resolve()) for r in folders[w]]
