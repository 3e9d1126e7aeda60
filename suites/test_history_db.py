"""The history database class word for word on SQLite files (and its
PostgreSQL spellings, without a server): which files it refuses before
changing anything and how it says so, the schema it creates and extends,
the values each column type takes, upserting a run row, transactions."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from kbench.results import historydb as hdb


def _sqlite(path: Path, *statements: str) -> Path:
    con = sqlite3.connect(path)
    for s in statements:
        con.execute(s)
    con.commit()
    con.close()
    return path


def _refused(path: Path) -> str:
    with pytest.raises(hdb.HistoryError) as err:
        hdb.HistoryDB(path)
    return str(err.value)


def _pg() -> hdb.HistoryDB:
    db = hdb.HistoryDB.__new__(hdb.HistoryDB)
    db.postgres = True
    return db


def test_a_database_of_another_application_is_refused(tmp_path: Path) -> None:
    p = _sqlite(tmp_path / "a.sqlite", "PRAGMA application_id = 1234", "CREATE TABLE t (x)")
    assert _refused(p) == (f"{p}: an SQLite database of another application "
                           "(application_id 0x4d2), not a kbench history")


def test_a_database_without_the_history_tables_is_refused_naming_five(tmp_path: Path) -> None:
    p = _sqlite(tmp_path / "a.sqlite", *[f"CREATE TABLE t{i} (x)" for i in range(7)])
    assert _refused(p) == (f"{p}: an SQLite database but not a kbench history (its tables: "
                           "t0, t1, t2, t3, t4)")
    q = _sqlite(tmp_path / "b.sqlite", "CREATE TABLE runs (x)")
    assert _refused(q).endswith("(its tables: runs)")
    r = _sqlite(tmp_path / "c.sqlite", "CREATE TABLE results (x)", "CREATE TABLE other (y)")
    assert _refused(r).endswith("(its tables: other, results)")


def test_a_runs_table_that_is_not_kbenchs_is_refused_naming_its_missing_columns(
        tmp_path: Path) -> None:
    p = _sqlite(tmp_path / "a.sqlite", "CREATE TABLE runs (id, date)",
                "CREATE TABLE results (run_id)")
    assert _refused(p) == f"{p}: its runs table is not kbench's (no path, complete column)"
    q = _sqlite(tmp_path / "b.sqlite", "CREATE TABLE runs (path, complete)",
                "CREATE TABLE results (run_id)")
    assert _refused(q) == f"{q}: its runs table is not kbench's (no id, date column)"
    ok = _sqlite(tmp_path / "c.sqlite", "CREATE TABLE runs (id, path, date, complete)",
                 "CREATE TABLE results (run_id)", f"PRAGMA application_id = {hdb.KBENCH_APP_ID}")
    with hdb.HistoryDB(ok) as db:
        assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_files_that_are_not_a_database_or_a_file_are_named(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 50)
    assert _refused(junk) == (f"{junk}: not a usable history database (file is not a "
                              "database)")
    folder = tmp_path / "dir.sqlite"
    folder.mkdir()
    assert _refused(folder) == f"{folder}: is a folder, not a history database"
    (tmp_path / "file").write_text("")
    under = tmp_path / "file" / "h.sqlite"
    assert _refused(under).startswith(f"{under}: cannot create its folder (")


def test_a_new_file_and_its_folders_are_made(tmp_path: Path) -> None:
    p = tmp_path / "a" / "b" / "h.sqlite"
    with hdb.HistoryDB(p) as db:
        assert not db.postgres and db.location == p
        assert (db.row_order, db.sql("a = ?"), db.contains("x")) == ("rowid", "a = ?",
                                                                     "instr(x, ?) > 0")
    assert p.is_file()


def test_the_schema_is_created_once_and_extended_with_new_result_columns(
        tmp_path: Path) -> None:
    p = tmp_path / "h.sqlite"
    runs = {"path": "TEXT", "date": "TEXT", "complete": "INTEGER"}
    with hdb.HistoryDB(p) as db:
        db.ensure_schema(runs, {"backend": "TEXT", "k": "INTEGER"})
        assert db.execute("PRAGMA application_id").fetchone()[0] == hdb.KBENCH_APP_ID
        db.ensure_schema(runs, {"backend": "TEXT", "k": "INTEGER", 'odd"name': "REAL",
                                "t": "REAL"})
        cols = [(r[1], r[2]) for r in db.execute("PRAGMA table_info(results)").fetchall()]
        assert cols == [("run_id", "INTEGER"), ("backend", "TEXT"), ("k", "INTEGER"),
                        ('odd"name', "REAL"), ("t", "REAL")]
        run_cols = [r[1] for r in db.execute("PRAGMA table_info(runs)").fetchall()]
        assert run_cols == ["id", "path", "date", "complete", "added"]
        index = db.execute("SELECT sql FROM sqlite_master WHERE name = 'results_run'"
                           ).fetchone()[0]
        assert "results (run_id, backend)" in index
        fks = db.execute("PRAGMA foreign_key_list(results)").fetchall()
        assert [(r[2], r[3], r[4], r[6]) for r in fks] == [("runs", "run_id", "id", "CASCADE")]
    # an application id another kbench set is kept
    with hdb.HistoryDB(p) as db:
        db.ensure_schema(runs, {})
        assert db.execute("PRAGMA application_id").fetchone()[0] == hdb.KBENCH_APP_ID


def test_a_run_row_is_inserted_once_and_updated_in_place(tmp_path: Path) -> None:
    runs = {"path": "TEXT", "date": "TEXT", "complete": "INTEGER", "n": "INTEGER"}
    with hdb.HistoryDB(tmp_path / "h.sqlite") as db:
        db.ensure_schema(runs, {"backend": "TEXT"})
        first = db.upsert_run({"path": "/r", "date": "d1", "complete": 0, "n": 1}, runs)
        other = db.upsert_run({"path": "/r", "date": "d2", "complete": 1, "n": 2}, runs)
        again = db.upsert_run({"path": "/r", "date": "d1", "complete": 1, "n": 5}, runs)
        assert (first, other, again) == (1, 2, 1)
        rows = db.execute("SELECT id, path, date, complete, n FROM runs ORDER BY id").fetchall()
        assert rows == [(1, "/r", "d1", 1, 5), (2, "/r", "d2", 1, 2)]
        frame = db.frame("SELECT id, n FROM runs WHERE n > ? ORDER BY id", [1])
        assert frame.to_dict("records") == [{"id": 1, "n": 5}, {"id": 2, "n": 2}]


def test_a_transaction_commits_or_rolls_back(tmp_path: Path) -> None:
    with hdb.HistoryDB(tmp_path / "h.sqlite") as db:
        db.execute("CREATE TABLE t (x)")
        with db.transaction():
            db.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
        with pytest.raises(KeyError), db.transaction():
            db.execute("INSERT INTO t VALUES (?)", [3])
            raise KeyError("stop")
        assert [r[0] for r in db.execute("SELECT x FROM t ORDER BY x").fetchall()] == [1, 2]
        assert not db.con.in_transaction


def test_sqlite_takes_values_as_they_are() -> None:
    db = hdb.HistoryDB.__new__(hdb.HistoryDB)
    db.postgres = False
    for value in (None, "x\x00", math.inf, "3", 2.5):
        assert db.value(value, "INTEGER") is value
    assert db._type("INTEGER NOT NULL") == "INTEGER NOT NULL"


@pytest.mark.parametrize("value,decl,want", [
    ("3", "INTEGER", 3), (2.7, "INTEGER", 2), (-2.7, "INTEGER NOT NULL", -2),
    ("x", "INTEGER", None), (math.inf, "INTEGER", None), (math.nan, "INTEGER", None),
    (None, "INTEGER", None), ([1], "REAL", None), ("1.5", "REAL", 1.5), (3, "REAL", 3.0),
    (math.inf, "REAL", math.inf), ("a\x00b", "TEXT", "a\\0b"), (7, "TEXT", "7"),
    (None, "TEXT", None), ("v", "BLOB", "v")])
def test_postgresql_takes_numbers_in_numeric_columns_and_no_nul(value, decl, want) -> None:
    got = _pg().value(value, decl)
    assert got == want and type(got) is type(want)


def test_postgresql_keeps_nan_in_a_real_column() -> None:
    assert math.isnan(_pg().value("nan", "REAL"))


def test_postgresql_spells_types_placeholders_and_functions_its_way() -> None:
    db = _pg()
    assert db._type("INTEGER") == "BIGINT" and db._type("REAL") == "DOUBLE PRECISION"
    assert db._type("INTEGER NOT NULL") == "BIGINT NOT NULL"
    assert db._type("TEXT DEFAULT ''") == "TEXT DEFAULT ''" and db._type("BLOB x") == "BLOB x"
    assert db.sql("a = ? AND b = ?") == "a = %s AND b = %s"
    assert db.contains("col") == "strpos(col, ?) > 0" and db.row_order == "seq"


def test_locations_and_messages() -> None:
    assert hdb.is_postgres("postgresql://h/db") and hdb.is_postgres("postgres://h/db")
    assert not hdb.is_postgres(Path("postgresql://h")) and not hdb.is_postgres("pg://h")
    assert hdb.describe("postgresql://u:secret@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert hdb.describe("postgresql://u@h/db") == "postgresql://u@h/db"
    assert hdb.describe(Path("/a/b.sqlite")) == "/a/b.sqlite"
    default = Path("/d.sqlite")
    assert hdb.resolve_db(None, default, {}) == default
    assert hdb.resolve_db(None, default, {"KBENCH_DB": ""}) == default
    assert hdb.resolve_db(None, default, {"KBENCH_DB": "x.sqlite"}) == Path("x.sqlite")
    assert hdb.resolve_db("postgres://h/db", default, {"KBENCH_DB": "x"}) == "postgres://h/db"
    assert hdb.resolve_db(Path("y.sqlite"), default, {"KBENCH_DB": "x"}) == Path("y.sqlite")
    assert hdb.quote('a"b') == '"a""b"'
    busy = sqlite3.OperationalError("database is locked")
    assert hdb.sqlite_busy(busy) and hdb.sqlite_busy(sqlite3.OperationalError("BUSY"))
    assert not hdb.sqlite_busy(sqlite3.OperationalError("no such table"))
    assert not hdb.sqlite_busy(RuntimeError("locked"))


def test_a_postgresql_history_without_its_driver_says_how_to_install_it(monkeypatch) -> None:
    import sys
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg raises ImportError
    with pytest.raises(hdb.HistoryError) as err:
        hdb.HistoryDB("postgresql://u@h/db")
    assert str(err.value) == ("a postgresql:// history needs the psycopg driver: "
                              "pip install 'kbench[postgres]'")
    assert hdb.driver_errors() == (sqlite3.Error, hdb.HistoryError)


class _FakePg:
    """A PostgreSQL connection that records what it is asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, list[object]]] = []

    def execute(self, text: str, params: list[object]) -> object:
        self.asked.append((text, params))
        return type("Cur", (), {"fetchone": staticmethod(lambda: (7,))})()


def test_postgresql_upserts_a_run_row_with_each_value_as_its_column_takes_it() -> None:
    db = _pg()
    db.con = _FakePg()
    got = db.upsert_run({"path": "/r", "date": "d", "n": "5", "x": 3},
                        {"path": "TEXT", "date": "TEXT", "n": "INTEGER"})
    [(text, params)] = db.con.asked
    assert got == 7 and params == ["/r", "d", 5, "3"]  # a column without a type: text
    assert text == ("INSERT INTO runs (path, date, n, x) VALUES (%s, %s, %s, %s) ON CONFLICT "
                    "(path, date) DO UPDATE SET n = excluded.n, x = excluded.x RETURNING id")


def test_the_environment_is_read_when_none_is_given(monkeypatch) -> None:
    monkeypatch.setenv("KBENCH_DB", "from-env.sqlite")
    assert hdb.resolve_db(None, Path("/d.sqlite")) == Path("from-env.sqlite")
    monkeypatch.delenv("KBENCH_DB")
    assert hdb.resolve_db(None, Path("/d.sqlite")) == Path("/d.sqlite")


def test_values_are_stored_as_sql_takes_them() -> None:
    import numpy as np

    from kbench.results import history as hist
    sv = hist._sql_value
    assert sv(None) is None and sv(float("nan")) is None and sv(np.float64("nan")) is None
    assert sv(True) == 1 and sv(np.bool_(False)) == 0 and type(sv(np.int64(3))) is int
    assert sv(["-O2", "-g"]) == "-O2 -g" and sv(("a",)) == "a" and sv([]) == ""
    assert sv([1, "a"]) == '[1, "a"]' and sv({"p": Path("/x")}) == '{"p": "/x"}'
    assert sv(2.5) == 2.5 and sv("t") == "t" and sv(np.float32(1.5)) == 1.5


@pytest.mark.parametrize("raw,want", [("", 60.0), ("5", 5.0), ("0", 0.0), ("-1", 60.0),
                                      ("inf", 60.0), ("nan", 60.0), ("x", 60.0),
                                      ("0.25", 0.25)])
def test_the_append_wait_is_read_from_the_environment(raw: str, want: float) -> None:
    from kbench.results import history as hist
    assert hist.history_wait({"KBENCH_HISTORY_WAIT": raw}) == want
    assert hist.history_wait({}) == hist.DEFAULT_WAIT_S == 60.0


def test_each_results_column_has_its_sql_type() -> None:
    from kbench.results import history as hist
    assert hist._result_type("k") == "INTEGER" and hist._result_type("rounds") == "INTEGER"
    assert hist._result_type("status") == "TEXT" and hist._result_type("case") == "TEXT"
    assert hist._result_type("time_median_ns") == "REAL"
    assert hist._result_type("anything_else") == "REAL"


# ---- append_run's wait for a busy SQLite history (a clock of its own) ------------------------

class _Clock:
    """time.monotonic and time.sleep of a clock that moves only when slept on.

    More than 100 pauses is a loop that never reaches its deadline (pauses
    that shrink instead of growing): it fails at once instead of spinning."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        assert len(self.sleeps) <= 100, "the wait never reaches its deadline"


def test_a_busy_history_is_retried_with_doubling_pauses_up_to_the_deadline(
        monkeypatch, tmp_path: Path) -> None:
    from kbench.results import history as hist
    clock, timeouts, messages = _Clock(), [], []

    def busy(db: object, run: object, timeout: float) -> int:
        timeouts.append(timeout)
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(hist, "time", clock)
    monkeypatch.setattr(hist, "_append_once", busy)
    db = tmp_path / "h.sqlite"
    with pytest.raises(hist.HistoryBusy) as err:
        hist.append_run(db, object(), wait=2.5, on_wait=messages.append)  # type: ignore[arg-type]
    assert str(err.value) == f"{db}: locked by another process for 2.5 s"
    # pauses from 0.05 s, doubled up to 1 s, the last one cut to the time left
    assert clock.sleeps == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 0.95])
    # each attempt waits in SQLite for at most 2 s and the time left, never below 10 ms
    assert timeouts == pytest.approx([2.0, 2.0, 2.0, 2.0, 1.75, 0.95, 0.01])
    assert messages == [f"history: {db} is busy (another kbench is writing to it); retrying "
                        "for up to 2 s"]  # said once, with the time left then


def test_a_history_that_frees_itself_is_appended_after_one_pause(monkeypatch) -> None:
    from kbench.results import history as hist
    clock, tries = _Clock(), []

    def busy_once(db: object, run: object, timeout: float) -> int:
        tries.append(timeout)
        if len(tries) == 1:
            raise sqlite3.OperationalError("database is busy")
        return 7

    monkeypatch.setattr(hist, "time", clock)
    monkeypatch.setattr(hist, "_append_once", busy_once)
    assert hist.append_run("h.sqlite", object(), wait=0.5) == 7  # type: ignore[arg-type]
    assert tries == [0.5, 0.45] and clock.sleeps == [0.05]


def test_one_append_waits_in_sqlite_for_the_timeout_it_is_given(monkeypatch) -> None:
    from kbench.results import history as hist
    seen: list[object] = []

    def busy(db: object, timeout: object = "connect's default") -> None:
        seen.append(timeout)
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(hist, "connect", busy)
    monkeypatch.setattr(hist, "_run_row", lambda run: {})
    with pytest.raises(sqlite3.OperationalError):
        hist._append_once("h.sqlite", SimpleNamespace(results=pd.DataFrame()), timeout=0.25)
    assert seen == [0.25]


def test_a_long_wait_pauses_at_most_one_second_at_a_time(monkeypatch) -> None:
    from kbench.results import history as hist
    clock = _Clock()

    def busy(db: object, run: object, timeout: float) -> int:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(hist, "time", clock)
    monkeypatch.setattr(hist, "_append_once", busy)
    with pytest.raises(hist.HistoryBusy):
        hist.append_run("h.sqlite", object(), wait=5.0)  # type: ignore[arg-type]
    assert clock.sleeps == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 0.45])


@pytest.mark.parametrize("error", [sqlite3.OperationalError("no such column: spread"),
                                   sqlite3.IntegrityError("NOT NULL constraint failed")])
def test_an_append_that_fails_for_another_reason_than_a_lock_names_the_file_and_the_error(
        monkeypatch, error: sqlite3.Error) -> None:
    from kbench.results import history as hist
    tries: list[float] = []

    def fails(db: object, run: object, timeout: float) -> int:
        tries.append(timeout)
        raise error

    monkeypatch.setattr(hist, "_append_once", fails)
    with pytest.raises(hist.HistoryError) as err:
        hist.append_run("h.sqlite", object(), wait=5.0)  # type: ignore[arg-type]
    assert str(err.value) == f"h.sqlite: {error}" and len(tries) == 1  # no retry


# ---- opening: what each driver is asked, and how a failure to open is told ----------------------

class _FakeDriver:
    """psycopg as far as HistoryDB uses it: connect (recorded) and Error."""

    class Error(Exception):
        pass

    def __init__(self, fail: str | None = None) -> None:
        self.fail, self.asked = fail, []

    def connect(self, *args: object, **kwargs: object) -> object:
        self.asked.append((args, kwargs))
        if self.fail is not None:
            raise self.Error(self.fail)
        return "connection"


def test_postgresql_is_opened_in_autocommit_with_a_30_s_connect_timeout(monkeypatch) -> None:
    # autocommit: every transaction is begun explicitly (HistoryDB.transaction), so no
    # statement may leave one open behind it
    driver = _FakeDriver()
    monkeypatch.setattr(hdb, "_pg_driver", lambda: driver)
    db = hdb.HistoryDB("postgresql://u:pw@h/db")
    assert db.postgres and db.con == "connection"
    assert driver.asked == [(("postgresql://u:pw@h/db",),
                             {"autocommit": True, "connect_timeout": 30})]


def test_a_postgresql_server_that_cannot_be_reached_is_named_without_its_password(
        monkeypatch) -> None:
    driver = _FakeDriver(fail='  connection to server at "h" failed: refused\n'
                              '\tIs the server running on that host?\n')
    monkeypatch.setattr(hdb, "_pg_driver", lambda: driver)
    with pytest.raises(hdb.HistoryError) as err:
        hdb.HistoryDB("postgresql://u:pw@h/db")
    assert str(err.value) == ('postgresql://u:***@h/db: cannot connect '
                              '(connection to server at "h" failed: refused)')


def test_sqlite_is_opened_with_the_lock_timeout_and_without_implicit_transactions(
        monkeypatch, tmp_path: Path) -> None:
    real, asked = sqlite3.connect, []

    def connect(*args: object, **kwargs: object) -> sqlite3.Connection:
        asked.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(hdb.sqlite3, "connect", connect)
    with hdb.HistoryDB(tmp_path / "a.sqlite", timeout=0.25) as db:
        assert db.con.isolation_level is None
        assert db.con.execute("PRAGMA foreign_keys").fetchone() == (1,)
    with hdb.HistoryDB(tmp_path / "b.sqlite"):
        pass
    assert asked == [{"timeout": 0.25, "isolation_level": None},
                     {"timeout": hdb.SQLITE_TIMEOUT_S, "isolation_level": None}]


def test_a_history_folder_that_cannot_be_made_is_named_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "sub" / "h.sqlite"  # its folder would be made inside a file
    assert _refused(path) == f"{path}: cannot create its folder (Not a directory)"


def test_sqlite_failures_while_opening_are_named_with_the_file(monkeypatch,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"

    def cannot(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("unable to open database file")

    with monkeypatch.context() as m:
        m.setattr(hdb.sqlite3, "connect", cannot)
        assert _refused(path) == f"{path}: cannot open (unable to open database file)"

    def check_fails(message: str) -> None:  # the check of an opened file raises this
        def check(con: object, where: object) -> None:
            raise sqlite3.OperationalError(message)
        monkeypatch.setattr(hdb, "_check_sqlite", check)

    check_fails("disk I/O error")
    assert _refused(path) == f"{path}: disk I/O error"
    check_fails("database is locked")
    with pytest.raises(sqlite3.OperationalError, match="locked"):  # append_run retries it
        hdb.HistoryDB(path)


def test_connect_passes_a_timeout_on_and_otherwise_leaves_the_default(monkeypatch) -> None:
    from kbench.results import history as hist
    opened: list[tuple[object, ...]] = []

    class Opened:
        def __init__(self, *args: object) -> None:
            opened.append(args)

        def ensure_schema(self, runs: object, results: object) -> None:
            pass

    monkeypatch.setattr(hist, "HistoryDB", Opened)
    hist.connect("h.sqlite")
    hist.connect("h.sqlite", 0.5)
    assert opened == [("h.sqlite",), ("h.sqlite", 0.5)]
