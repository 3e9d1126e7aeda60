"""The run history: every run folder appended to one database, an SQLite
file or a shared PostgreSQL database (kbench.results.historydb).

Two tables: `runs` (one row per run folder: machine, build, date, whether
it completed, its targets, counts of results) and `results` (every row of
the folder's results.csv, tagged with its run id). Appending is idempotent
per (run folder path, date): appending the same run again refreshes its
rows and keeps its id, so an interrupted run that is added, resumed and
added again never appears twice."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from kbench.judge.verdict import FAILING
from kbench.results.historydb import (
    KBENCH_APP_ID,
    HistoryBusy,
    HistoryDB,
    HistoryError,
    quote,
    resolve_db,
    sqlite_busy,
)
from kbench.results.runfolder import Run
from kbench.results.store import COLUMNS

DB_NAME = "history.sqlite"
FAILED = FAILING
OK_STATUSES = ("pass", "mistrusted", "skip")
DEFAULT_WAIT_S = 60.0  # how long an append waits for a busy database (KBENCH_HISTORY_WAIT)

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
                       "threads", "rounds", "reps_per_round", "emulated", "perf_pass"}
_TEXT_RESULT_COLUMNS = {"case", "op", "shape", "kind", "target", "backend", "realization",
                        "kernel", "accum", "b_form", "status", "message", "catalog", "tags",
                        "suite", "round_times_ns", "plugin", "count_method",
                        "count_note", "count_qemu", "count_cpu", "count_mix",
                        "count_floor_kind", "process"}

LISTING = ["id", "date", "host", "cpu_model", "arch", "git_commit", "git_dirty", "complete",
           "emulated", "target_names", "backends", "n_results", "n_failed", "n_timed", "path"]


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
    raw = (os.environ if env is None else env).get("KBENCH_HISTORY_WAIT")
    try:
        value = float(raw)  # type: ignore[arg-type]  # unset (None) or empty: the default
    except (TypeError, ValueError):
        return DEFAULT_WAIT_S
    return value if 0 <= value < math.inf else DEFAULT_WAIT_S


def _result_type(column: str) -> str:
    if column in _INT_RESULT_COLUMNS:
        return "INTEGER"
    if column in _TEXT_RESULT_COLUMNS:
        return "TEXT"
    return "REAL"


_quote = quote


def default_db(env: Mapping[str, str] | None = None) -> str | Path:
    """$KBENCH_DB (a file or a postgresql:// URL), else default_db_path()."""
    return resolve_db(None, default_db_path(env), env)


def connect(db: str | Path, timeout: float | None = None) -> HistoryDB:
    """Open (creating if needed) the history database with its schema. A file
    that is not a kbench history is refused (HistoryError) without being
    changed; SQLite's "database is locked" passes through as
    sqlite3.OperationalError (append_run waits and retries)."""
    con = HistoryDB(db) if timeout is None else HistoryDB(db, timeout)
    try:
        con.ensure_schema(_RUN_COLUMNS, {c: _result_type(c) for c in COLUMNS})
    except BaseException:
        con.close()
        raise
    return con


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
    backends = sorted({b for b in df["backend"].astype(str) if b and b != "-"})
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
    and results are replaced, never duplicated. db_path: an SQLite file or
    a postgresql:// URL. While another process holds an SQLite database, the
    append waits and retries for up to `wait` seconds (default:
    history_wait()), calling on_wait with a message when it starts waiting;
    then HistoryBusy. Every other failure is a HistoryError (or the
    PostgreSQL driver's error)."""
    wait = history_wait() if wait is None else wait
    deadline = time.monotonic() + wait
    pause = 0.05
    told = False
    while True:
        left = deadline - time.monotonic()
        try:
            return _append_once(db_path, run, timeout=max(0.01, min(2.0, left)))
        except sqlite3.OperationalError as exc:
            if not sqlite_busy(exc):
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


def _append_once(db_path: str | Path, run: Run, timeout: float) -> int:
    row = _run_row(run)
    columns = [c for c in COLUMNS if c in run.results.columns]
    frame = run.results[columns]
    decls = [_result_type(c) for c in columns]
    with connect(db_path, timeout) as con, con.transaction():
        run_id = con.upsert_run({n: _sql_value(v) for n, v in row.items()}, _RUN_COLUMNS)
        con.execute("DELETE FROM results WHERE run_id = ?", [run_id])
        con.executemany(
            f"INSERT INTO results (run_id, {', '.join(map(_quote, columns))}) "
            f"VALUES (?, {', '.join('?' * len(columns))})",
            ([run_id, *(con.value(_sql_value(v), d) for v, d in zip(values, decls, strict=True))]
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
    con = connect(db_path)
    if machine:
        host, cpu = "lower(coalesce(host, ''))", "lower(coalesce(cpu_model, ''))"
        where.append(f"({con.contains(host)} OR {con.contains(cpu)} OR "
                     "lower(coalesce(arch, '')) = ?)")
        params += [machine.lower()] * 3
    if backend:
        where.append("EXISTS (SELECT 1 FROM results r WHERE r.run_id = runs.id "
                     "AND r.backend = ?)")
        params.append(backend)
    if commit:
        where.append("substr(lower(coalesce(git_commit, '')), 1, CAST(? AS INTEGER)) = ?")
        params += [len(commit), commit.lower()]
    sql = f"SELECT {', '.join(LISTING)} FROM runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY date DESC, id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    with con:
        df = con.frame(sql, params)
    for c in ("complete", "emulated"):
        df[c] = df[c].fillna(0).astype(bool)
    df["git_dirty"] = pd.Series([None if pd.isna(v) else bool(v) for v in df["git_dirty"]],
                                index=df.index, dtype=object)
    return df


def run_results(db_path: str | Path, run_id: int) -> pd.DataFrame:
    """The result rows stored for one run (results.csv columns)."""
    with connect(db_path) as con:
        df = con.frame(f"SELECT {', '.join(map(_quote, COLUMNS))} FROM results "
                       f"WHERE run_id = ? ORDER BY {con.row_order}", [int(run_id)])
    df["emulated"] = df["emulated"].fillna(0).astype(bool)
    return df


__all__ = ["KBENCH_APP_ID", "HistoryBusy", "HistoryError", "append_run", "connect", "default_db",
           "default_db_path", "history_wait", "query_runs", "run_results"]
