"""`kbench history --check` on SQLite files, and where a history is and
how it is shown in messages: a healthy file is ok; rows whose parent row is
missing are named, the first three of them with the rest counted; a file
that cannot be opened says so; a password in a postgresql:// URL is never
printed. Without --db: $KBENCH_DB, else $XDG_DATA_HOME/kbench, else the
home folder's ~/.local/share/kbench — $HOME only when it is an absolute
path other than /, else the account's home, else a clear error. Also how
times print in the report: in the largest unit their printed value
reaches, negative ones too."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from kbench.results import history as hist
from kbench.results import historydb as hdb
from kbench.results.historydb import HistoryError, resolve_db
from kbench.results.report_html import _fmt_time


@pytest.mark.parametrize(("location", "shown"), [
    ("postgresql://kb:s3cret@db.example:5432/hist", "postgresql://kb:***@db.example:5432/hist"),
    ("postgresql://kb:a:b%40c@db/hist", "postgresql://kb:***@db/hist"),  # an encoded @
    ("postgres://kb:pw@db/hist?sslmode=require", "postgres://kb:***@db/hist?sslmode=require"),
    ("postgresql://kb@db/hist", "postgresql://kb@db/hist"),
    ("postgresql://db:5432/hist", "postgresql://db:5432/hist"),
    ("/var/lib/kbench/history.sqlite", "/var/lib/kbench/history.sqlite"),
])
def test_a_password_in_a_url_is_hidden(location: str, shown: str) -> None:
    assert hdb.describe(location) == shown
    assert hdb.describe(Path("/tmp/h.sqlite")) == "/tmp/h.sqlite"


def _orphans(path: Path, n: int) -> None:
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE runs (id INTEGER PRIMARY KEY);"
                      "CREATE TABLE results (id INTEGER PRIMARY KEY, "
                      "run_id INTEGER REFERENCES runs(id));"
                      "INSERT INTO runs (id) VALUES (1);")
    con.executemany("INSERT INTO results (id, run_id) VALUES (?, ?)",
                    [(10, 1)] + [(20 + i, 99) for i in range(n)])
    con.commit()
    con.close()


def test_a_healthy_file_is_ok(tmp_path: Path) -> None:
    _orphans(tmp_path / "h.sqlite", 0)
    assert hdb.check_sqlite(tmp_path / "h.sqlite") == hdb.Integrity(
        True, "ok (SQLite integrity_check and foreign_key_check)")


@pytest.mark.parametrize(("n", "tail"), [(1, ""), (3, ""), (4, " (and 1 more)"),
                                         (6, " (and 3 more)")])
def test_rows_without_their_parent_are_named_three_at_most(tmp_path: Path, n: int,
                                                            tail: str) -> None:
    _orphans(tmp_path / "h.sqlite", n)
    got = hdb.check_sqlite(tmp_path / "h.sqlite")
    named = "; ".join(f"results row {20 + i}: its runs row is missing" for i in range(min(n, 3)))
    assert got == hdb.Integrity(False, f"damaged: {named}{tail}")


def test_a_file_that_cannot_be_opened_says_so(tmp_path: Path) -> None:
    got = hdb.check_sqlite(tmp_path / "missing" / "h.sqlite")
    assert got.ok is False and got.text.startswith("cannot open (") and got.text.endswith(")")
    assert "unable to open" in got.text
    # opened read-only: checking never creates the file
    assert not (tmp_path / "missing").exists()


def test_a_file_that_is_no_database_says_sqlites_own_words(tmp_path: Path) -> None:
    (tmp_path / "h.sqlite").write_bytes(b"not a database at all, " * 64)
    assert hdb.check_sqlite(tmp_path / "h.sqlite") == hdb.Integrity(
        False, "damaged: file is not a database")


def test_kbench_db_or_the_default() -> None:
    default = Path("/d/history.sqlite")
    assert resolve_db(None, default, {}) == default
    assert resolve_db(None, default, {"KBENCH_DB": ""}) == default
    assert resolve_db(None, default, {"KBENCH_DB": "/x/h.sqlite"}) == Path("/x/h.sqlite")
    assert resolve_db(None, default, {"KBENCH_DB": "postgresql://h/db"}) == "postgresql://h/db"
    assert resolve_db("/y/h.sqlite", default, {"KBENCH_DB": "/x/h.sqlite"}) == Path("/y/h.sqlite")


def test_kbench_db_is_read_from_the_process_environment(monkeypatch) -> None:
    monkeypatch.setenv("KBENCH_DB", "/from/env.sqlite")
    assert resolve_db(None, Path("/d")) == Path("/from/env.sqlite")
    monkeypatch.delenv("KBENCH_DB")
    assert resolve_db(None, Path("/d")) == Path("/d")


def test_xdg_data_home_then_home() -> None:
    assert hist.default_db_path({"XDG_DATA_HOME": "/xdg", "HOME": "/h"}) == \
        Path("/xdg/kbench") / hist.DB_NAME
    assert hist.default_db_path({"XDG_DATA_HOME": "", "HOME": "/h"}) == \
        Path("/h/.local/share/kbench") / hist.DB_NAME
    assert hist.default_db_path({"XDG_DATA_HOME": "rel", "HOME": "/h"}) == \
        Path("/h/.local/share/kbench") / hist.DB_NAME


@pytest.mark.parametrize("home", ["", "relative/home", "/"])
def test_an_unusable_home_falls_back_to_the_account(home: str, monkeypatch) -> None:
    import pwd
    account = pwd.getpwuid(os.getuid()).pw_dir
    env = {"HOME": home} if home else {}
    if account in ("", "/"):
        pytest.skip("this account has no home folder of its own")
    assert hist._home(env) == Path(account)


@pytest.mark.parametrize("account", ["", "relative", "/"])
def test_no_usable_home_at_all_is_a_clear_error(account: str, monkeypatch) -> None:
    import pwd

    class Entry:
        pw_dir = account
    monkeypatch.setattr(pwd, "getpwuid", lambda uid: Entry())
    with pytest.raises(HistoryError) as exc:
        hist._home({"HOME": "/"})
    assert str(exc.value) == ("no home folder for the history: $HOME is empty or not an "
                              "absolute path; set XDG_DATA_HOME or pass --db FILE")
    assert hist._home({"HOME": "/home/me"}) == Path("/home/me")


def test_an_account_without_an_entry_is_no_home(monkeypatch) -> None:
    import pwd

    def missing(uid: int) -> None:
        raise KeyError(uid)
    monkeypatch.setattr(pwd, "getpwuid", missing)
    with pytest.raises(HistoryError):
        hist._home({})


@pytest.mark.parametrize(("ns", "text"), [
    (999.0, "999 ns"), (999.6, "1 µs"), (1e3, "1 µs"), (1500.0, "1.5 µs"), (999_999.0, "1 ms"),
    (1e6, "1 ms"), (2.5e7, "25 ms"), (1e9, "1 s"), (3.2e10, "32 s"), (-2e6, "-2 ms"),
    (-999.0, "-999 ns"), (0.0, "0 ns")])
def test_report_times_take_the_largest_unit_they_reach(ns: float, text: str) -> None:
    assert _fmt_time(ns) == text


def test_only_a_locked_or_busy_sqlite_is_worth_waiting_for() -> None:
    assert hdb.sqlite_busy(sqlite3.OperationalError("database is locked"))
    assert hdb.sqlite_busy(sqlite3.OperationalError("database table is LOCKED"))
    assert hdb.sqlite_busy(sqlite3.OperationalError("SQLITE_BUSY: busy"))
    assert not hdb.sqlite_busy(sqlite3.OperationalError("no such table: runs"))
    assert not hdb.sqlite_busy(sqlite3.DatabaseError("database is locked"))
    assert not hdb.sqlite_busy(OSError("locked"))


def test_the_default_history_is_kbench_db_else_the_data_folder() -> None:
    assert hist.default_db({"KBENCH_DB": "postgresql://h/db", "HOME": "/h"}) == \
        "postgresql://h/db"
    assert hist.default_db({"KBENCH_DB": "/x/h.sqlite"}) == Path("/x/h.sqlite")
    assert hist.default_db({"HOME": "/h"}) == Path("/h/.local/share/kbench") / hist.DB_NAME
