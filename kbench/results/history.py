"""The run history: every run folder appended to one SQLite database.

Two tables: `runs` (one row per run folder: machine, build, date, whether
it completed, its targets, counts of results) and `results` (every row of
the folder's results.csv, tagged with its run id). Appending is idempotent
per (run folder path, date): appending the same run again refreshes its
rows and keeps its id, so an interrupted run that is added, resumed and
added again never appears twice."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kbench.results.runfolder import Run
from kbench.results.store import COLUMNS

DB_NAME = "history.sqlite"
FAILED = ("fail", "error")
OK_STATUSES = ("pass", "mistrusted", "skip")

_RUN_COLUMNS: dict[str, str] = {
    "path": "TEXT NOT NULL",
    "date": "TEXT NOT NULL",
    "host": "TEXT",
    "cpu_model": "TEXT",
    "arch": "TEXT",
    "platform": "TEXT",
    "compiler": "TEXT",
    "c_flags": "TEXT",
    "git_commit": "TEXT",
    "git_dirty": "INTEGER",
    "complete": "INTEGER NOT NULL",
    "command_line": "TEXT",
    "library_version": "TEXT",
    "target_names": "TEXT",  # space-separated target specs
    "backends": "TEXT",  # space-separated backends that produced results
    "emulated": "INTEGER",  # any target emulated
    "targets": "TEXT",  # run.json "targets", as JSON
    "meta": "TEXT",  # the whole run.json
    "n_results": "INTEGER",
    "n_failed": "INTEGER",  # status fail or error
    "n_timed": "INTEGER",
}

_INT_RESULT_COLUMNS = {"k", "m", "n", "vector_bits", "exact", "total", "layers", "flops",
                       "threads", "rounds", "reps_per_round", "emulated"}
_TEXT_RESULT_COLUMNS = {"case", "op", "shape", "kind", "target", "backend", "realization",
                        "kernel", "accum", "b_form", "status", "message", "catalog", "tags",
                        "suite", "round_times_ns"}

LISTING = ["id", "date", "host", "cpu_model", "arch", "git_commit", "git_dirty", "complete",
           "emulated", "target_names", "backends", "n_results", "n_failed", "n_timed", "path"]


KBENCH_APP_ID = 0x6B62656E  # "kben": PRAGMA application_id of a kbench history
DEFAULT_WAIT_S = 60.0  # how long an append waits for a busy database (KBENCH_HISTORY_WAIT)


class HistoryError(Exception):
    """The history database cannot be used (one line: the file and why)."""


class HistoryBusy(HistoryError):
    """Another process kept the database locked for longer than the wait."""


def _home(environ: Mapping[str, str]) -> Path:
    """$HOME when it is an absolute path, else the account's home folder."""
    home = environ.get("HOME") or ""
    if home and Path(home).is_absolute() and Path(home) != Path("/"):
        return Path(home)
    try:
        import pwd
        account = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError, OSError):
        account = ""
    if account and Path(account).is_absolute() and Path(account) != Path("/"):
        return Path(account)
    raise HistoryError("no home folder for the history: $HOME is empty or not an absolute "
                       "path; set XDG_DATA_HOME or pass --db FILE")


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    """$XDG_DATA_HOME/kbench/history.sqlite, or ~/.local/share/kbench/history.sqlite
    (~: $HOME if it is absolute, else the account's home; never the root
    folder). HistoryError if there is no usable home."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_DATA_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else _home(environ) / ".local" / "share"
    return root / "kbench" / DB_NAME


def history_wait(env: Mapping[str, str] | None = None) -> float:
    """Seconds an append waits for a busy database: KBENCH_HISTORY_WAIT or 60."""
    raw = (os.environ if env is None else env).get("KBENCH_HISTORY_WAIT", "")
    try:
        value = float(raw) if raw else DEFAULT_WAIT_S
    except ValueError:
        return DEFAULT_WAIT_S
    return value if 0 <= value < float("inf") else DEFAULT_WAIT_S


def _result_type(column: str) -> str:
    if column in _INT_RESULT_COLUMNS:
        return "INTEGER"
    if column in _TEXT_RESULT_COLUMNS:
        return "TEXT"
    return "REAL"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _check_kbench_db(con: sqlite3.Connection, path: Path) -> bool:
    """Is this a kbench history (True) or an empty database (False)? Anything
    else is refused before it is changed in any way."""
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = "
                                            "'table'")}
    app_id = con.execute("PRAGMA application_id").fetchone()[0]
    if not tables and app_id in (0, KBENCH_APP_ID):
        return False
    if app_id not in (0, KBENCH_APP_ID):
        raise HistoryError(f"{path}: an SQLite database of another application "
                           f"(application_id {app_id:#x}), not a kbench history")
    if "runs" not in tables or "results" not in tables:
        listed = ", ".join(sorted(tables)[:5]) or "none"
        raise HistoryError(f"{path}: an SQLite database but not a kbench history (its tables: "
                           f"{listed})")
    have = {row[1] for row in con.execute("PRAGMA table_info(runs)")}
    missing = [c for c in ("id", "path", "date", "complete") if c not in have]
    if missing:
        raise HistoryError(f"{path}: its runs table is not kbench's (no {', '.join(missing)} "
                           "column)")
    return True


def connect(db_path: str | Path, timeout: float = 5.0) -> sqlite3.Connection:
    """Open (creating if needed) the history database with its schema. A file
    that is not a kbench history is refused (HistoryError) without being
    changed; sqlite3.OperationalError "database is locked" passes through
    (append_run waits and retries)."""
    path = Path(db_path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HistoryError(f"{path}: cannot create its folder ({exc.strerror or exc})") from None
    if path.is_dir():
        raise HistoryError(f"{path}: is a folder, not a history database")
    try:
        con = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise HistoryError(f"{path}: cannot open ({exc})") from None
    try:
        con.execute("PRAGMA foreign_keys = ON")
        if not _check_kbench_db(con, path) or _missing_result_columns(con):
            # create or extend the schema in one write transaction: several
            # processes opening a new database at once must not each add columns
            con.execute("BEGIN IMMEDIATE")
            try:
                _create_schema(con, known=_check_kbench_db(con, path))
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
    except HistoryError:
        con.close()
        raise
    except sqlite3.OperationalError as exc:
        con.close()
        if _busy(exc):
            raise
        raise HistoryError(f"{path}: {exc}") from None
    except sqlite3.DatabaseError as exc:  # "file is not a database", a damaged file
        con.close()
        raise HistoryError(f"{path}: not a usable history database ({exc})") from None
    return con


def _missing_result_columns(con: sqlite3.Connection) -> list[str]:
    have = {row[1] for row in con.execute("PRAGMA table_info(results)")}
    return [c for c in COLUMNS if c not in have]


def _create_schema(con: sqlite3.Connection, known: bool) -> None:
    if not known:
        con.execute(f"PRAGMA application_id = {KBENCH_APP_ID}")
    run_cols = ", ".join(f"{name} {decl}" for name, decl in _RUN_COLUMNS.items())
    con.execute(f"CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, {run_cols}, "
                "added TEXT DEFAULT CURRENT_TIMESTAMP, UNIQUE (path, date))")
    con.execute("CREATE TABLE IF NOT EXISTS results (run_id INTEGER NOT NULL "
                "REFERENCES runs(id) ON DELETE CASCADE)")
    for column in _missing_result_columns(con):  # added to the schema since the file was made
        con.execute(f"ALTER TABLE results ADD COLUMN {_quote(column)} {_result_type(column)}")
    con.execute("CREATE INDEX IF NOT EXISTS results_run ON results (run_id, backend)")


def _busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)


def _sql_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:  # NaN
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return " ".join(value)  # e.g. c_flags
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, default=str)
    return value


def _run_row(run: Run) -> dict[str, Any]:
    meta, df = run.meta, run.results
    targets = meta.get("targets") or {}
    versions = sorted({str(t.get("library_version", "")) for t in targets.values()
                       if isinstance(t, dict)} - {""})
    backends = sorted({str(b) for b in df["backend"] if isinstance(b, str) and b and b != "-"})
    dirty = meta.get("git_dirty")
    return {
        "path": str(run.path.resolve()),
        "date": str(meta.get("date", "")),
        "host": meta.get("host"),
        "cpu_model": meta.get("cpu_model"),
        "arch": meta.get("machine"),
        "platform": meta.get("platform"),
        "compiler": meta.get("compiler"),
        "c_flags": meta.get("c_flags"),
        "git_commit": meta.get("git_commit"),
        "git_dirty": None if dirty is None else int(bool(dirty)),
        "complete": int(run.complete),
        "command_line": meta.get("command_line"),
        "library_version": " ".join(versions),
        "target_names": " ".join(sorted(targets) or sorted(set(df["target"].astype(str)))),
        "backends": " ".join(backends),
        "emulated": int(bool(df["emulated"].any()) or any(
            bool(t.get("emulated")) for t in targets.values() if isinstance(t, dict))),
        "targets": json.dumps(targets, default=str),
        "meta": json.dumps(meta, default=str),
        "n_results": len(df),
        "n_failed": int((~df["status"].isin(OK_STATUSES)).sum()),  # unknown statuses too
        "n_timed": int((df["rounds"] > 0).sum()),
    }


def append_run(db_path: str | Path, run: Run, wait: float | None = None,
               on_wait: Callable[[str], None] | None = None) -> int:
    """Add a run (and all its result rows) to the history; return its id.

    The same run folder with the same date gets the same id: its run row
    and results are replaced, never duplicated. While another process holds
    the database, the append waits and retries for up to `wait` seconds
    (default: history_wait()), calling on_wait with a message when it starts
    waiting; then HistoryBusy. Every other failure is a HistoryError."""
    wait = history_wait() if wait is None else wait
    deadline = time.monotonic() + wait
    pause = 0.05
    told = False
    while True:
        left = deadline - time.monotonic()
        try:
            return _append_once(Path(db_path), run, timeout=max(0.01, min(2.0, left)))
        except sqlite3.OperationalError as exc:
            if not _busy(exc):
                raise HistoryError(f"{db_path}: {exc}") from None
            left = deadline - time.monotonic()
            if left <= 0:
                raise HistoryBusy(f"{db_path}: locked by another process for {wait:g} s") from None
            if on_wait is not None and not told:
                on_wait(f"history: {db_path} is busy (another kbench is writing to it); "
                        f"retrying for up to {left:.0f} s")
                told = True
            time.sleep(min(pause, left))
            pause = min(pause * 2, 1.0)
        except sqlite3.Error as exc:
            raise HistoryError(f"{db_path}: {exc}") from None


def _append_once(db_path: Path, run: Run, timeout: float) -> int:
    row = _run_row(run)
    names = list(row)
    with closing(connect(db_path, timeout)) as con:
        con.isolation_level = None  # one explicit transaction, the write lock taken first
        con.execute("BEGIN IMMEDIATE")
        try:
            run_id = _write_run(con, run, row, names)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    return run_id


def _write_run(con: sqlite3.Connection, run: Run, row: dict[str, Any], names: list[str]) -> int:
    found = con.execute("SELECT id FROM runs WHERE path = ? AND date = ?",
                        (row["path"], row["date"])).fetchone()
    if found is None:
        cur = con.execute(f"INSERT INTO runs ({', '.join(names)}) VALUES "
                          f"({', '.join('?' * len(names))})",
                          [_sql_value(row[n]) for n in names])
        run_id = int(cur.lastrowid or 0)
    else:
        run_id = int(found[0])
        con.execute(f"UPDATE runs SET {', '.join(f'{n} = ?' for n in names)} WHERE id = ?",
                    [*(_sql_value(row[n]) for n in names), run_id])
        con.execute("DELETE FROM results WHERE run_id = ?", (run_id,))
    columns = [c for c in COLUMNS if c in run.results.columns]
    frame = run.results[columns]
    con.executemany(
        f"INSERT INTO results (run_id, {', '.join(map(_quote, columns))}) "
        f"VALUES (?, {', '.join('?' * len(columns))})",
        ([run_id, *(_sql_value(v) for v in values)]
         for values in frame.itertuples(index=False, name=None)))
    return run_id


def query_runs(db_path: str | Path, machine: str | None = None, backend: str | None = None,
               commit: str | None = None, limit: int | None = 50) -> pd.DataFrame:
    """Runs, newest first, as a frame with the LISTING columns.

    machine: a case-insensitive substring of the host name, the CPU model
    or the architecture; backend: runs with at least one result of that
    backend; commit: a prefix of the git commit. limit None: all runs."""
    where: list[str] = []
    params: list[Any] = []
    if machine:
        where.append("(instr(lower(coalesce(host, '')), lower(?)) > 0 OR "
                     "instr(lower(coalesce(cpu_model, '')), lower(?)) > 0 OR "
                     "lower(coalesce(arch, '')) = lower(?))")
        params += [machine] * 3
    if backend:
        where.append("EXISTS (SELECT 1 FROM results r WHERE r.run_id = runs.id "
                     "AND r.backend = ?)")
        params.append(backend)
    if commit:
        where.append("substr(lower(coalesce(git_commit, '')), 1, ?) = lower(?)")
        params += [len(commit), commit]
    sql = f"SELECT {', '.join(LISTING)} FROM runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY date DESC, id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    with closing(connect(db_path)) as con:
        df = pd.read_sql_query(sql, con, params=params)
    for c in ("complete", "emulated"):
        df[c] = df[c].fillna(0).astype(bool)
    df["git_dirty"] = pd.Series([None if pd.isna(v) else bool(v) for v in df["git_dirty"]],
                                index=df.index, dtype=object)
    return df


def run_results(db_path: str | Path, run_id: int) -> pd.DataFrame:
    """The result rows stored for one run (results.csv columns)."""
    with closing(connect(db_path)) as con:
        df = pd.read_sql_query(
            f"SELECT {', '.join(map(_quote, COLUMNS))} FROM results WHERE run_id = ? "
            "ORDER BY rowid", con, params=[int(run_id)])
    df["emulated"] = df["emulated"].fillna(0).astype(bool)
    return df
