"""What a user may name a run by, where a command takes one (`compare`,
`gate`, `report --baseline`): a run folder; or, from the history database,
a run id (`4`), `latest`, `latest~N` (the run N before the newest) or a
prefix of a git commit (at least 4 hex digits; the newest run of it). The
history is shared by every checkout of a user: `latest`, `latest~N` and
commit prefixes count the runs of one checkout (the caller's, unless it asks
for every checkout); an id names any run.

A run found in the history is read from its folder when that folder still
holds the same run (same run.json date), else rebuilt from the rows the
history holds (run.json and every results.csv row), through the same reader
and checks as a folder."""

from __future__ import annotations

import csv
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when used: a name that names nothing is answered at once
    import pandas as pd

    from kbench.results.runfolder import Run

_LATEST = re.compile(r"latest(?:~(\d+))?")
_COMMIT = re.compile(r"[0-9a-fA-F]{4,40}")
FORMS = "a run folder, a history run id, latest, latest~N or a commit prefix"


class RunRefError(ValueError):
    """A name that is no run folder and names no run in the history."""


@dataclass(frozen=True)
class Resolved:
    run: Run
    source: str  # "folder" | "history"
    run_id: int | None = None  # the history id, when found there
    note: str = ""  # one line for the user (e.g. the folder is gone)


def is_history_ref(ref: str) -> bool:
    """Does ref have the form of a history reference (id, latest, commit)?"""
    return bool(ref.isdigit() or _LATEST.fullmatch(ref) or _COMMIT.fullmatch(ref))


def history_roots(db: str | Path) -> dict[int, str]:
    """Each history run's checkout root (kbench.results.identity), by run id
    ("" when its run.json records none)."""
    from kbench.results.history import connect
    from kbench.results.identity import checkout_root
    with connect(db) as con:
        rows = con.execute("SELECT id, meta FROM runs").fetchall()
    out = {}
    for run_id, text in rows:
        try:
            meta = json.loads(text or "{}")
        except ValueError:
            meta = {}
        out[int(run_id)] = checkout_root(meta) if isinstance(meta, dict) else ""
    return out


def _within(runs: pd.DataFrame, db: str | Path, root: str) -> tuple[pd.DataFrame, str]:
    """The runs of the checkout at `root`, and what the others are (for a
    message: "" when there are none)."""
    roots = history_roots(db)
    mine = runs["id"].map(lambda i: roots.get(int(i), "") == root).astype(bool)
    others = int((~mine).sum())
    why = (f"; {others} more of other checkouts or from before kbench recorded checkouts "
           "(--all-checkouts takes them too, or name a run by its id)" if others else "")
    return runs[mine], why


def _pick(runs: pd.DataFrame, ref: str, scope: str = "", more: str = "") -> pd.Series:
    """The row of `runs` (newest first) that ref names, or RunRefError. `scope`
    says whose runs `runs` are (e.g. " of this checkout") and `more` what
    else there is, for the messages."""
    if runs.empty:
        raise RunRefError(f"{ref!r}: no such run folder, and the history holds no runs{scope}"
                          f"{more}")
    latest = _LATEST.fullmatch(ref)
    if latest:
        back = int(latest.group(1) or 0)
        if back >= len(runs):
            raise RunRefError(f"{ref!r}: the history holds {len(runs)} run(s){scope}, so the "
                              f"oldest is latest~{len(runs) - 1}{more}")
        return runs.iloc[back]
    if ref.isdigit():
        hit = runs[runs["id"].astype(int) == int(ref)]
        if hit.empty:
            ids = runs["id"].astype(int)
            raise RunRefError(f"{ref!r}: no such run folder, and no run {ref} in the history "
                              f"(ids {ids.min()}-{ids.max()}; `kbench history` lists them)")
        return hit.iloc[0]
    commits = runs["git_commit"].fillna("").astype(str).str.lower()
    hit = runs[commits.str.startswith(ref.lower())]
    if hit.empty:
        raise RunRefError(f"{ref!r}: no such run folder, and no run of a commit starting "
                          f"with {ref} in the history{scope}{more}")
    distinct = sorted(set(commits[hit.index]))  # one commit, whatever the case it was stored in
    if len(distinct) > 1:
        raise RunRefError(f"{ref!r} is ambiguous: commits {', '.join(c[:12] for c in distinct)} "
                          "in the history; give more digits")
    return hit.iloc[0]  # newest first: the newest run of that commit


def _cell(value: object) -> object:
    """A history value as results.csv spells it (NULL and NaN: empty; a
    whole float of an integer column: the integer)."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _write_csv(path: Path, rows: pd.DataFrame) -> None:
    with open(path, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(list(rows.columns))
        for values in rows.itertuples(index=False, name=None):
            out.writerow([_cell(v) for v in values])


def _from_history(db: str | Path, row: pd.Series) -> tuple[Run, str]:
    """The run a history row stands for: its folder if it still holds that
    run, else the history's own copy."""
    from kbench.results.history import connect, run_results
    from kbench.results.runfolder import RunFolderError, load_run

    path = Path(str(row["path"]))
    try:
        run = load_run(path)
        if str(run.meta.get("date", "")) == str(row["date"]):
            return run, ""
        why = "holds another run now"
    except RunFolderError:
        why = "is gone" if not path.exists() else "is no longer a readable run folder"
    with connect(db) as con:
        meta_text = con.execute("SELECT meta FROM runs WHERE id = ?",
                                [int(row["id"])]).fetchone()[0]
    meta = json.loads(meta_text or "{}")
    rows = run_results(db, int(row["id"]))
    with tempfile.TemporaryDirectory(prefix="kbench-history-run-") as tmp:
        (Path(tmp) / "run.json").write_text(json.dumps(meta))
        _write_csv(Path(tmp) / "results.csv", rows)
        run = load_run(tmp)
    run.path = path
    return run, (f"run {int(row['id'])}: its folder {path} {why}; read from the history "
                 "(every result row it holds)")


def resolve_run(ref: str, db: str | Path | None = None, checkout: str | None = None
                ) -> Resolved:
    """The run `ref` names (see the module text). A folder wins over a
    history reference of the same spelling. With `checkout` (a checkout
    root, kbench.results.identity), `latest`, `latest~N` and commit prefixes
    count only that checkout's runs (an id names any run). RunFolderError
    for a folder that cannot be read; RunRefError for a name that names
    nothing."""
    path = Path(ref)
    if path.is_dir():
        from kbench.results.runfolder import load_run
        return Resolved(load_run(path), "folder")
    if not is_history_ref(ref):
        raise RunRefError(f"{ref!r}: no such run folder (a run is named by {FORMS})")
    from kbench.results.history import default_db_path, query_runs
    from kbench.results.historydb import is_postgres, resolve_db

    where = resolve_db(db, default_db_path())
    if not is_postgres(where) and not Path(where).is_file():
        raise RunRefError(f"{ref!r}: no such run folder, and no history database at {where} "
                          "to look it up in (--db, $KBENCH_DB)")
    runs, scope, more = query_runs(where, limit=None), "", ""
    if checkout is not None and not ref.isdigit():
        runs, more = _within(runs, where, checkout)
        scope = f" of this checkout ({checkout})"
    row = _pick(runs, ref, scope, more)
    run, note = _from_history(where, row)
    return Resolved(run, "history", int(row["id"]), note)


__all__ = ["FORMS", "Resolved", "RunRefError", "history_roots", "is_history_ref",
           "resolve_run"]
