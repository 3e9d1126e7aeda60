"""One history for many runners: the same schema on SQLite and PostgreSQL,
KBENCH_DB, several processes appending at once (nothing lost, nothing
doubled), and `kbench run --db postgresql://...` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_history import fresh_pg_database, make_run, verdict

from kbench.cli.history import history
from kbench.cli.main import main
from kbench.results.history import connect, default_db, query_runs, run_results
from kbench.results.historydb import HistoryError, describe, resolve_db

REPO = Path(__file__).resolve().parents[1]


def _columns(db: Path | str, table: str) -> list[str]:
    with connect(db) as con:
        cur = con.execute(f"SELECT * FROM {table} WHERE 1 = 0")
        return [d[0] for d in cur.description]


def test_same_tables_and_columns_on_both_backends(tmp_path: Path, pg_server) -> None:
    lite, pg = tmp_path / "h.sqlite", fresh_pg_database(pg_server)
    for table in ("runs", "results"):
        sqlite_cols = _columns(lite, table)
        pg_cols = [c for c in _columns(pg, table) if c != "seq"]  # SQLite's rowid
        assert pg_cols == sqlite_cols, table
    assert "case" in _columns(pg, "results") and "host" in _columns(pg, "runs")


def test_locations_kbench_db_and_password_hiding(tmp_path: Path) -> None:
    default = tmp_path / "d.sqlite"
    url = "postgresql://ci:s3cret@db.example:5432/kbench"
    assert resolve_db(None, default, {}) == default
    assert resolve_db(None, default, {"KBENCH_DB": url}) == url
    assert resolve_db(None, default, {"KBENCH_DB": str(tmp_path / "x.db")}) == tmp_path / "x.db"
    assert resolve_db(str(tmp_path / "y.db"), default, {"KBENCH_DB": url}) == tmp_path / "y.db"
    assert default_db({"KBENCH_DB": url}) == url
    assert default_db({"XDG_DATA_HOME": "/data"}) == Path("/data/kbench/history.sqlite")
    assert "s3cret" not in describe(url) and describe(url).startswith("postgresql://ci:***@")


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    url = f"postgresql://nobody@/kbench?host={tmp_path}&port=1"  # no server on that socket
    with pytest.raises(HistoryError, match="cannot connect"):
        connect(url)
    out = CliRunner().invoke(history, ["--db", url])
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert out.output.count("\n") == 1 and "cannot connect" in out.output


def test_history_cli_reads_kbench_db(tmp_path: Path, pg_server) -> None:
    url = fresh_pg_database(pg_server)
    make_run(tmp_path / "r", [verdict("a"), verdict("b", status="fail")], host="runner-7")
    out = CliRunner().invoke(history, ["--add", str(tmp_path / "r")], env={"KBENCH_DB": url})
    assert out.exit_code == 0, out.output
    assert "runner-7" in out.output and "***" not in out.output
    runs = query_runs(url)
    assert runs["host"].tolist() == ["runner-7"] and runs["n_failed"].tolist() == [1]


RUNNER = """
import sys
from kbench.results.history import append_run
from kbench.results.runfolder import load_run
db = sys.argv[1]
for folder in sys.argv[2:]:
    append_run(db, load_run(folder))
"""


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_three_runners_appending_at_once_lose_nothing(tmp_path: Path, backend: str,
                                                       request: pytest.FixtureRequest) -> None:
    """Three processes each append their own four runs and one run they all
    share: 13 history entries, every row of each, the shared one once."""
    db: Path | str = tmp_path / "h.sqlite"
    if backend == "postgresql":
        db = fresh_pg_database(request.getfixturevalue("pg_server"))
    rows = 300
    folders: dict[int, list[Path]] = {}
    for runner in range(3):
        folders[runner] = [tmp_path / f"r{runner}_{i}" for i in range(4)]
        for i, f in enumerate(folders[runner]):
            make_run(f, [verdict(f"c{j}") for j in range(rows + runner * 10 + i)],
                     host=f"runner-{runner}", date=f"2025-04-0{i + 1}T00:00:00")
    shared = tmp_path / "shared"
    make_run(shared, [verdict(f"s{j}") for j in range(rows)], host="shared")
    procs = [subprocess.Popen([sys.executable, "-c", RUNNER, str(db),
                               *map(str, folders[r][:2]), str(shared), *map(str, folders[r][2:])],
                              stderr=subprocess.PIPE, text=True)
             for r in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    runs = query_runs(db, limit=None)
    assert len(runs) == 13 and runs["id"].is_unique
    by_path = {Path(p).name: (int(i), int(n)) for p, i, n in
               zip(runs["path"], runs["id"], runs["n_results"], strict=True)}
    for runner in range(3):
        for i, f in enumerate(folders[runner]):
            run_id, n = by_path[f.name]
            assert n == rows + runner * 10 + i
            stored = run_results(db, run_id)
            assert stored["case"].tolist() == [f"c{j}" for j in range(n)]
    shared_id, n = by_path["shared"]
    assert n == rows and len(run_results(db, shared_id)) == rows


def test_kbench_run_appends_to_postgres(tmp_path: Path, pg_server) -> None:
    url = fresh_pg_database(pg_server)
    out = tmp_path / "run"
    res = CliRunner().invoke(main, ["run", "--suite", "correctness", "--shapes", "smoke",
                                    "--backend", "scalar", "--kinds", "exact", "--db", url,
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "history: run #1 in postgresql://postgres@/" in res.output
    runs = query_runs(url)
    assert len(runs) == 1 and runs["path"].iloc[0] == str(out.resolve())
    stored = run_results(url, int(runs["id"].iloc[0]))
    csv_rows = (out / "results.csv").read_text().count("\n") - 1
    assert len(stored) == csv_rows > 0 and set(stored["backend"]) == {"scalar"}


def test_report_history_reads_postgres(tmp_path: Path, pg_server) -> None:
    """`kbench report --history --db postgresql://...`: the trend charts read the
    shared history like an SQLite one."""
    from kbench.results.report_views import history_trends
    url = fresh_pg_database(pg_server)
    runs = []
    for i in range(2):
        out = tmp_path / f"perf{i}"
        res = CliRunner().invoke(main, ["run", "--suite", "perf", "--shapes", "smoke",
                                        "--backend", "scalar", "-k", "m3_n2_k1", "--rounds", "2",
                                        "--max-time", "0.01", "--db", url, "--out", str(out)])
        assert res.exit_code == 0, res.output
        runs.append(out)
    meta = json.loads((runs[1] / "run.json").read_text())
    trends = history_trends(url, str(meta.get("cpu_model") or ""), str(meta.get("machine") or ""))
    assert set(trends["run_id"]) == {1, 2} and (trends["time_median_ns"] > 0).all()
    res = CliRunner().invoke(main, ["report", str(runs[1]), "--history", "--db", url,
                                    "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    assert "trend" in (tmp_path / "rep" / "report.html").read_text().lower()
