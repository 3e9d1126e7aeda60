"""`kbench history --check` on SQLite files, and how a history location is
shown in messages: a healthy file is ok; rows whose parent row is missing
are named, the first three of them with the rest counted; a file that
cannot be opened says so; a password in a postgresql:// URL is never
printed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kbench.results import historydb as hdb


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
