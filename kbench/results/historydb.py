"""Where the run history lives: an SQLite file (one machine) or a PostgreSQL
database (a team's runners sharing one history), behind one small class.

Both hold the same two tables with the same columns (kbench.results.history
declares them); PostgreSQL adds `results.seq`, the insertion order that
SQLite keeps as its rowid. SQL is written once with `?` placeholders and the
few functions the two dialects spell differently go through methods here.

Concurrent appends: SQLite takes the write lock at the start of a
transaction (BEGIN IMMEDIATE) and waits for it; PostgreSQL upserts the run
row (INSERT ... ON CONFLICT), whose row lock orders two appends of the same
run, and creates the schema under an advisory lock so that runners starting
at once do not race in CREATE TABLE."""

from __future__ import annotations

import contextlib
import math
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
SQLITE_TIMEOUT_S = 120.0  # how long an SQLite writer waits for another one's lock
_SCHEMA_LOCK = 0x6B62656E6368  # pg_advisory_xact_lock key while creating the schema
_PG_TYPES = {"INTEGER": "BIGINT", "REAL": "DOUBLE PRECISION", "TEXT": "TEXT"}


class HistoryError(ValueError):
    """The history database cannot be opened or written (one line, no traceback)."""


class HistoryBusy(HistoryError):
    """Another process kept the database locked for longer than the wait."""


KBENCH_APP_ID = 0x6B62656E  # "kben": PRAGMA application_id of a kbench SQLite history


def sqlite_busy(exc: BaseException) -> bool:
    """Is this SQLite's "database is locked/busy" (worth waiting for)?"""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _check_sqlite(con: sqlite3.Connection, path: Path) -> None:
    """Refuses, before changing anything, an SQLite file that is neither empty
    nor a kbench history (another application's database, a damaged file)."""
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = "
                                            "'table'")}
    app_id = con.execute("PRAGMA application_id").fetchone()[0]
    if app_id not in (0, KBENCH_APP_ID):
        raise HistoryError(f"{path}: an SQLite database of another application "
                           f"(application_id {app_id:#x}), not a kbench history")
    if not tables:
        return
    if "runs" not in tables or "results" not in tables:
        listed = ", ".join(sorted(tables)[:5])
        raise HistoryError(f"{path}: an SQLite database but not a kbench history (its tables: "
                           f"{listed})")
    have = {row[1] for row in con.execute("PRAGMA table_info(runs)")}
    missing = [c for c in ("id", "path", "date", "complete") if c not in have]
    if missing:
        raise HistoryError(f"{path}: its runs table is not kbench's (no {', '.join(missing)} "
                           "column)")


def is_postgres(db: str | Path) -> bool:
    return isinstance(db, str) and db.startswith(POSTGRES_SCHEMES)


def describe(db: str | Path) -> str:
    """The location for messages, with any password in a URL hidden."""
    return re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", str(db))


def resolve_db(db: str | Path | None, default: Path, env: Mapping[str, str] | None = None
               ) -> str | Path:
    """--db if given, else $KBENCH_DB, else `default`. A postgresql:// URL stays
    a string; anything else is a file path."""
    environ = os.environ if env is None else env
    value = str(db) if db else environ.get("KBENCH_DB")
    if not value:
        return default
    return value if is_postgres(value) else Path(value)


def _pg_driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise HistoryError("a postgresql:// history needs the psycopg driver: "
                           "pip install 'kbench[postgres]'") from None
    return psycopg


def driver_errors() -> tuple[type[BaseException], ...]:
    """The exception types a history operation may raise besides HistoryError."""
    errors: list[type[BaseException]] = [sqlite3.Error, HistoryError]
    with contextlib.suppress(ImportError):
        import psycopg
        errors.append(psycopg.Error)
    return tuple(errors)


class HistoryDB:
    """One open connection to the history (use as a context manager)."""

    def __init__(self, location: str | Path, timeout: float = SQLITE_TIMEOUT_S) -> None:
        self.location = location
        self.postgres = is_postgres(location)
        if self.postgres:
            psycopg = _pg_driver()
            try:
                self.con: Any = psycopg.connect(str(location), autocommit=True,
                                                connect_timeout=30)
            except psycopg.Error as exc:
                raise HistoryError(f"{describe(location)}: cannot connect "
                                   f"({str(exc).strip().splitlines()[0]})") from None
        else:
            path = Path(location)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise HistoryError(f"{path}: cannot create its folder "
                                   f"({exc.strerror or exc})") from None
            if path.is_dir():
                raise HistoryError(f"{path}: is a folder, not a history database")
            try:
                # isolation_level None: transactions are begun explicitly (BEGIN IMMEDIATE)
                self.con = sqlite3.connect(path, timeout=timeout, isolation_level=None)
            except sqlite3.Error as exc:
                raise HistoryError(f"{path}: cannot open ({exc})") from None
            try:
                self.con.execute("PRAGMA foreign_keys = ON")
                _check_sqlite(self.con, path)
            except HistoryError:
                self.con.close()
                raise
            except sqlite3.OperationalError as exc:
                self.con.close()
                if sqlite_busy(exc):
                    raise
                raise HistoryError(f"{path}: {exc}") from None
            except sqlite3.DatabaseError as exc:  # "file is not a database", a damaged file
                self.con.close()
                raise HistoryError(f"{path}: not a usable history database ({exc})") from None

    def __enter__(self) -> HistoryDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()

    # -- SQL ---------------------------------------------------------------------------

    def sql(self, text: str) -> str:
        """`?` placeholders in the driver's style."""
        return text.replace("?", "%s") if self.postgres else text

    def execute(self, text: str, params: Sequence[Any] = ()) -> Any:
        return self.con.execute(self.sql(text), list(params))

    def executemany(self, text: str, rows: Iterable[Sequence[Any]]) -> None:
        if self.postgres:
            with self.con.cursor() as cur:
                cur.executemany(self.sql(text), [list(r) for r in rows])
        else:
            self.con.executemany(text, rows)

    def frame(self, text: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        import pandas as pd  # not at import: the history's usage errors answer at once
        cur = self.execute(text, params)
        columns = [d[0] for d in cur.description]
        return pd.DataFrame.from_records(cur.fetchall(), columns=columns, coerce_float=True)

    def contains(self, haystack: str) -> str:
        """SQL true when `haystack` contains the next parameter."""
        return f"{'strpos' if self.postgres else 'instr'}({haystack}, ?) > 0"

    @property
    def row_order(self) -> str:
        """The column giving results in insertion order."""
        return "seq" if self.postgres else "rowid"

    @contextlib.contextmanager
    def transaction(self) -> Iterator[HistoryDB]:
        """One transaction; SQLite takes the write lock at its start."""
        if self.postgres:
            with self.con.transaction():
                yield self
            return
        self.con.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    # -- schema ------------------------------------------------------------------------

    def _type(self, decl: str) -> str:
        if not self.postgres:
            return decl
        base, _, rest = decl.partition(" ")
        return _PG_TYPES.get(base, base) + (" " + rest if rest else "")

    def ensure_schema(self, run_columns: Mapping[str, str],
                      result_columns: Mapping[str, str]) -> None:
        """Creates the tables, and adds result columns newer than the database."""
        run_cols = ", ".join(f"{n} {self._type(d)}" for n, d in run_columns.items())
        with self.transaction():
            if self.postgres:
                self.execute("SELECT pg_advisory_xact_lock(?)", [_SCHEMA_LOCK])
                self.execute(f"CREATE TABLE IF NOT EXISTS runs (id BIGSERIAL PRIMARY KEY, "
                             f"{run_cols}, added TEXT DEFAULT (CURRENT_TIMESTAMP::text), "
                             "UNIQUE (path, date))")
                self.execute("CREATE TABLE IF NOT EXISTS results (seq BIGSERIAL PRIMARY KEY, "
                             "run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE)")
                have = {r[0] for r in self.execute(
                    "SELECT column_name FROM information_schema.columns WHERE "
                    "table_name = 'results' AND table_schema = current_schema()").fetchall()}
            else:
                if self.execute("PRAGMA application_id").fetchone()[0] == 0:
                    self.execute(f"PRAGMA application_id = {KBENCH_APP_ID}")
                self.execute(f"CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, "
                             f"{run_cols}, added TEXT DEFAULT CURRENT_TIMESTAMP, "
                             "UNIQUE (path, date))")
                self.execute("CREATE TABLE IF NOT EXISTS results (run_id INTEGER NOT NULL "
                             "REFERENCES runs(id) ON DELETE CASCADE)")
                have = {r[1] for r in self.execute("PRAGMA table_info(results)").fetchall()}
            for name, decl in result_columns.items():
                if name not in have:
                    self.execute(f"ALTER TABLE results ADD COLUMN {quote(name)} "
                                 f"{self._type(decl)}")
            self.execute("CREATE INDEX IF NOT EXISTS results_run ON results (run_id, backend)")

    # -- values ------------------------------------------------------------------------

    def value(self, value: Any, decl: str) -> Any:
        """A Python value as the column's type takes it. SQLite stores what it is
        given; PostgreSQL needs numbers in numeric columns and no NUL in text."""
        if not self.postgres or value is None:
            return value
        base = decl.split(" ")[0]
        if base in ("INTEGER", "REAL"):
            try:
                number = float(value)
            except (TypeError, ValueError):
                return None
            if not math.isfinite(number):
                return None if base == "INTEGER" else number
            return int(number) if base == "INTEGER" else number
        return str(value).replace("\x00", "\\0")

    def upsert_run(self, row: Mapping[str, Any], decls: Mapping[str, str]) -> int:
        """Inserts the run row, or updates the one with the same (path, date)
        in place (its id kept); returns the id."""
        names = list(row)
        values = [self.value(row[n], decls.get(n, "TEXT")) for n in names]
        updates = ", ".join(f"{n} = excluded.{n}" for n in names if n not in ("path", "date"))
        cur = self.execute(f"INSERT INTO runs ({', '.join(names)}) VALUES "
                           f"({', '.join('?' * len(names))}) ON CONFLICT (path, date) "
                           f"DO UPDATE SET {updates} RETURNING id", values)
        return int(cur.fetchone()[0])


@dataclass(frozen=True)
class Integrity:
    """What `kbench history --check` found: ok, or one line saying what is damaged."""

    ok: bool
    text: str


SHOWN_PROBLEMS = 3  # integrity problems named in the one line; the rest are counted


def check_sqlite(path: Path) -> Integrity:
    """SQLite's PRAGMA integrity_check and foreign_key_check on the file, opened
    read-only (nothing is changed, whatever is found)."""
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return Integrity(False, f"cannot open ({exc})")
    try:
        problems = [str(r[0]) for r in con.execute("PRAGMA integrity_check").fetchall()]
        if problems == ["ok"]:
            problems = [f"{r[0]} row {r[1]}: its {r[2]} row is missing"
                        for r in con.execute("PRAGMA foreign_key_check").fetchall()]
    except sqlite3.DatabaseError as exc:  # damaged past what integrity_check can walk
        problems = _damaged_tables(con) or [str(exc)]
    finally:
        con.close()
    if not problems:
        return Integrity(True, "ok (SQLite integrity_check and foreign_key_check)")
    more = len(problems) - SHOWN_PROBLEMS
    text = "; ".join(" ".join(p.split()) for p in problems[:SHOWN_PROBLEMS])
    return Integrity(False, f"damaged: {text}" + (f" (and {more} more)" if more > 0 else ""))


def _damaged_tables(con: sqlite3.Connection) -> list[str]:
    """Table by table, what integrity_check finds (or why it could not walk it)."""
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = "
                                           "'table' ORDER BY name").fetchall()]
    except sqlite3.DatabaseError:
        return []
    problems = []
    for name in names:
        try:
            found = [str(r[0]) for r in con.execute(
                f"PRAGMA integrity_check({quote(name)})").fetchall()]
        except sqlite3.DatabaseError as exc:
            found = [str(exc)]
        problems += [f"table {name}: {p}" for p in found if p != "ok"]
    return problems


def check_postgres(location: str) -> Integrity:
    """PostgreSQL checks its own pages; here the tables are read end to end."""
    with HistoryDB(location) as db:
        tables = db.execute("SELECT count(*) FROM information_schema.tables WHERE table_name "
                            "IN ('runs', 'results') AND table_schema = current_schema()"
                            ).fetchone()[0]
        if tables < 2:
            return Integrity(True, "ok (no history tables yet)")
        runs = db.execute("SELECT count(*) FROM runs").fetchone()[0]
        results = db.execute("SELECT count(*) FROM results").fetchone()[0]
    return Integrity(True, f"ok ({runs} runs, {results} results readable; integrity_check "
                           "applies to SQLite files only)")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
