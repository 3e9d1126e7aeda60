"""Run folders and the history: nothing lost, nothing mixed, one line per
problem. Runs never share or overwrite a folder, results.csv has its header
before the first verdict, every reader turns a corrupt or empty folder into
one line naming the file, the history append waits for a busy database and
otherwise says how to add the run later, SIGTERM finalises a run like
Ctrl-C, and the command line refuses bad values with a message."""

from __future__ import annotations

import datetime as real_dt
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbench.cli.history import gate_command, history
from kbench.cli.main import _append_history
from kbench.cli.main import main as cli
from kbench.cli.report import report as report_command
from kbench.errors import InvalidArgument
from kbench.judge.verdict import Verdict
from kbench.results import store
from kbench.results.history import (
    HistoryBusy,
    HistoryError,
    append_run,
    connect,
    default_db_path,
    query_runs,
)
from kbench.results.runfolder import RunFolderError, load_run
from kbench.results.store import RunDirError, RunWriter, claim_out_dir, reserve_run_dir
from kbench.targets import crossbuild
from kbench.targets.spec import parse_target

REPO = Path(__file__).resolve().parents[1]
TINY = """[catalog]
name = "tiny"

[[gemm]]
name = "tiny_m2_n3_k4"
m = 2
n = 3
k = 4

[[gemm]]
name = "tiny_m5_n7_k9"
m = 5
n = 7
k = 9
bias = true
"""


def verdict(case: str = "c", backend: str = "scalar", status: str = "pass") -> Verdict:
    return Verdict(case=case, op="gemm", shape="m1n1k1", kind="exact", target="host",
                   backend=backend, realization="gemm_scalar_f32acc", kernel="k", accum="fp32",
                   k=1, m=1, n=1, b_form="plain", vector_bits=0, status=status, total=1)


def write_run(folder: Path, rows: list[Verdict], complete: bool = True) -> Path:
    w = RunWriter(folder, {"host": "h", "cpu_model": "c", "machine": "x86_64",
                           "date": "2025-01-01T00:00:00+00:00"})
    w.add_all(rows)
    w.close(complete)
    return folder


def kbench_cli(*args: str, cwd: Path, env: dict[str, str] | None = None,
               **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "kbench.cli", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, **(env or {})}, **popen)  # type: ignore[arg-type]


# ---- folders are never shared --------------------------------------------------------


def test_runs_started_in_the_same_second_get_their_own_folders(tmp_path, monkeypatch):
    """Before: the folder name had one-second resolution and the folder was
    simply reused: two runs wrote into one results.csv."""
    frozen = real_dt.datetime(2025, 5, 1, 12, 0, 0)

    class Clock(real_dt.datetime):
        @classmethod
        def now(cls, tz: object = None) -> real_dt.datetime:  # type: ignore[override]
            return frozen

    monkeypatch.setattr(store.dt, "datetime", Clock)
    folders = [reserve_run_dir(tmp_path / "runs") for _ in range(3)]
    assert len(set(folders)) == 3 and all(f.is_dir() for f in folders)
    assert folders[1].name == folders[0].name + "-2" and folders[2].name.endswith("-3")


def test_three_concurrent_runs_make_three_folders_and_three_history_rows(tmp_path):
    (tmp_path / "tiny.toml").write_text(TINY)
    db = tmp_path / "history.sqlite"
    procs = [kbench_cli("run", "--suite", "correctness", "--shapes", "tiny.toml",
                        "--realization", "gemm_scalar_f32acc", "--db", str(db), cwd=tmp_path)
             for _ in range(3)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    for p, out in zip(procs, outputs, strict=True):
        assert p.returncode == 0, out[-3000:]
    folders = sorted((tmp_path / "runs").iterdir())
    assert len(folders) == 3
    for folder in folders:
        run = load_run(folder)
        suites = run.results["suite"].value_counts().to_dict()
        # 2 cases x 2 input kinds, and the determinism verdicts of the same run
        assert run.complete and suites.get("correctness") == 4, suites
        assert suites.get("determinism", 0) >= 1, suites
        n_results = len(run.results)
    listing = query_runs(db)
    assert len(listing) == 3, "\n".join(o[-600:] for o in outputs)
    assert sorted(listing["path"]) == sorted(str(f.resolve()) for f in folders)
    assert set(listing["n_results"]) == {n_results}


def test_out_on_an_existing_run_is_refused_without_force(tmp_path):
    """Before: --out EXISTING silently wrote over the run, leaving its old
    benchmark.json and report/ mixed into the new one."""
    (tmp_path / "tiny.toml").write_text(TINY)
    out = write_run(tmp_path / "run", [verdict("old")])
    (out / "benchmark.json").write_text("{}")
    (out / "report").mkdir()
    (out / "report" / "report.html").write_text("old")
    before = (out / "results.csv").read_bytes()
    args = ["run", "--suite", "correctness", "--shapes", str(tmp_path / "tiny.toml"),
            "--realization", "gemm_scalar_f32acc", "--no-history", "--out", str(out)]
    refused = kbench_cli(*args, cwd=tmp_path)
    text = refused.communicate(timeout=300)[0]
    assert refused.returncode == 1, text
    assert "already holds a run" in text and "--force" in text and "Traceback" not in text
    assert (out / "results.csv").read_bytes() == before
    forced = kbench_cli(*args, "--force", cwd=tmp_path)
    text = forced.communicate(timeout=300)[0]
    assert forced.returncode == 0, text[-3000:]
    assert not (out / "benchmark.json").exists() and not (out / "report").exists()
    run = load_run(out)
    assert run.complete and "old" not in set(run.results["case"])


def test_out_on_a_folder_that_holds_something_else_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match="holds no kbench run"):
        claim_out_dir(tmp_path, force=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert claim_out_dir(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "empty").mkdir()
    assert claim_out_dir(tmp_path / "empty").is_dir()


def test_a_second_writer_never_shares_a_folder(tmp_path):
    write_run(tmp_path / "run", [verdict()])
    with pytest.raises(RunDirError, match="already holds a run"):
        RunWriter(tmp_path / "run", {})


def test_results_csv_has_its_header_before_the_first_verdict(tmp_path):
    """Before: the header sat in a buffer until the first row, so a run
    killed before its first verdict left a 0-byte results.csv."""
    w = RunWriter(tmp_path / "run", {})
    header = (tmp_path / "run" / "results.csv").read_text()
    assert header.startswith("case,op,shape,kind,") and header.endswith("\n")
    run = load_run(tmp_path / "run")
    assert not run.has_results and run.state() == "incomplete, no results"
    w.close(False)


# ---- readers: an empty folder and corrupt files --------------------------------------


def _empty_run(folder: Path) -> Path:
    """What a run killed before its first verdict left behind (before the fix)."""
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"complete": False, "host": "h"}))
    (folder / "results.csv").write_bytes(b"")
    return folder


def test_readers_take_a_run_with_no_rows(tmp_path):
    """Before: report, gate and history --add died with pandas'
    EmptyDataError."""
    empty = _empty_run(tmp_path / "empty")
    base = write_run(tmp_path / "base", [verdict()])
    runner = CliRunner()
    rep = runner.invoke(report_command, [str(empty), "--out", str(tmp_path / "rep")])
    assert rep.exit_code == 0 and rep.exception is None, rep.output
    assert "incomplete run, with no results" in rep.output
    gated = runner.invoke(gate_command, [str(base), str(empty)])
    # the gate refuses it (a gate over no results would pass nothing by comparing nothing)
    assert gated.exit_code == 2 and isinstance(gated.exception, SystemExit), gated.output
    assert gated.output.strip().startswith(
        f"Error: CAND: {empty}: not gated: results.csv is empty (not even its header); 1 "
        "verdict row(s) of BASE are not in CAND: ")  # and it names that row
    added = runner.invoke(history, ["--db", str(tmp_path / "h.sqlite"), "--add", str(empty)])
    assert added.exit_code == 0, added.output
    assert query_runs(tmp_path / "h.sqlite")["n_results"].tolist() == [0]


CORRUPTIONS = {
    "random_run_json": ("run.json", lambda f: (f / "run.json").write_bytes(os.urandom(300)
                                                                          + b"\xff")),
    "run_json_list": ("run.json", lambda f: (f / "run.json").write_text("[]")),
    "run_json_targets": ("run.json", lambda f: (f / "run.json").write_text(
        '{"complete": true, "targets": [1, 2]}')),
    "nul_bytes": ("results.csv", lambda f: (f / "results.csv").write_bytes(
        (f / "results.csv").read_bytes() + b"a,b\x00c\n")),
    "random_csv": ("results.csv", lambda f: (f / "results.csv").write_bytes(
        b"\x89PNG" + os.urandom(200))),
    "text_times": ("results.csv", lambda f: _edit_cell(f, "time_median_ns", "fast")),
    "text_rounds": ("results.csv", lambda f: _edit_cell(f, "rounds", "three")),
    "text_round_times": ("results.csv", lambda f: _edit_cell(f, "round_times_ns", "1 2 x")),
    "extra_fields": ("results.csv", lambda f: (f / "results.csv").write_text(
        (f / "results.csv").read_text() + "a" + ",x" * 60 + "\n")),
    "not_a_header": ("results.csv", lambda f: (f / "results.csv").write_text("x,y\n1,2\n")),
}


def _edit_cell(folder: Path, column: str, value: str) -> None:
    lines = (folder / "results.csv").read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index(column)] = value
    (folder / "results.csv").write_text("\n".join([lines[0], ",".join(cells), *lines[2:]])
                                        + "\n")


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@pytest.mark.parametrize("command", ["report", "gate", "compare", "history"])
def test_a_corrupt_run_folder_is_one_line_naming_the_file(tmp_path, corruption, command):
    """Before: tracebacks (UnicodeDecodeError, AttributeError on a list,
    ValueError on non-numeric times, pandas parser errors)."""
    filename, damage = CORRUPTIONS[corruption]
    base = write_run(tmp_path / "base", [verdict("a"), verdict("b")])
    bad = write_run(tmp_path / "bad", [verdict("a"), verdict("b")])
    damage(bad)
    with pytest.raises(RunFolderError, match=filename):
        load_run(bad)
    args = {"report": [str(bad), "--out", str(tmp_path / "rep")],
            "gate": [str(base), str(bad)], "compare": [str(base), str(bad)],
            "history": ["--db", str(tmp_path / "h.sqlite"), "--add", str(bad)]}[command]
    res = CliRunner().invoke(cli, [command, *args])
    assert isinstance(res.exception, SystemExit) and res.exit_code in (1, 2), res.output
    errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and str(bad / filename) in errors[0], res.output
    assert "Traceback" not in res.output


def test_a_row_with_an_empty_backend_is_appended(tmp_path):
    """Before: pandas read the empty backend as NaN, `astype(str)` kept it
    (pandas 3) and sorting the backends raised TypeError in the append."""
    run = write_run(tmp_path / "run", [verdict("a", backend=""), verdict("b")])
    run_id = append_run(tmp_path / "h.sqlite", load_run(run))
    row = query_runs(tmp_path / "h.sqlite").iloc[0]
    assert row["id"] == run_id and row["backends"] == "scalar" and row["n_results"] == 2


# ---- the history database --------------------------------------------------------------


def test_the_append_waits_for_a_busy_database_then_goes_on(tmp_path):
    """Before: sqlite's 5 s busy timeout ran out and the run was never
    recorded. Now the append retries, saying so; here the other writer lets
    go when the first message comes."""
    db = tmp_path / "h.sqlite"
    append_run(db, load_run(write_run(tmp_path / "first", [verdict()])))
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    messages: list[str] = []

    def release(message: str) -> None:
        messages.append(message)
        holder.execute("ROLLBACK")
        holder.close()

    run_id = append_run(db, load_run(write_run(tmp_path / "second", [verdict()])), wait=600,
                        on_wait=release)
    assert len(messages) == 1 and "busy" in messages[0]
    assert len(query_runs(db)) == 2 and run_id in query_runs(db)["id"].tolist()


def test_a_database_locked_for_too_long_says_how_to_add_the_run_later(tmp_path, capsys,
                                                                     monkeypatch):
    db = tmp_path / "h.sqlite"
    append_run(db, load_run(write_run(tmp_path / "first", [verdict()])))
    run_dir = write_run(tmp_path / "second", [verdict()])
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    with pytest.raises(HistoryBusy, match="locked by another process for 0.3 s"):
        append_run(db, load_run(run_dir), wait=0.3)
    monkeypatch.setenv("KBENCH_HISTORY_WAIT", "0.3")
    _append_history(run_dir, str(db))
    err = capsys.readouterr().err
    assert "run not appended" in err and f"kbench history --add {run_dir} --db {db}" in err
    holder.execute("ROLLBACK")
    holder.close()
    assert len(query_runs(db)) == 1


def test_an_empty_home_does_not_put_the_history_at_the_root():
    """Before: HOME="" gave /.local/share/kbench (or a path relative to the
    current folder)."""
    for env in ({"HOME": ""}, {"HOME": "/"}, {"HOME": "relative"}, {}):
        path = default_db_path(env)
        assert path.is_absolute() and not str(path).startswith("/.local"), (env, path)
        assert path.name == "history.sqlite" and path.parent.name == "kbench"
    assert default_db_path({"HOME": "/home/u"}) == Path("/home/u/.local/share/kbench/"
                                                       "history.sqlite")


def test_an_unrelated_sqlite_file_is_refused_and_left_unchanged(tmp_path):
    """Before: --db on another application's database added kbench's tables
    to it before failing."""
    other = tmp_path / "app.sqlite"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE notes (id INTEGER, text TEXT)")
        con.execute("INSERT INTO notes VALUES (1, 'keep me')")
    before = other.read_bytes()
    with pytest.raises(HistoryError, match="not a kbench history"):
        connect(other)
    run = write_run(tmp_path / "run", [verdict()])
    res = CliRunner().invoke(history, ["--db", str(other), "--add", str(run)])
    assert res.exit_code == 1 and "not a kbench history" in res.output, res.output
    res = CliRunner().invoke(history, ["--db", str(other)])
    assert res.exit_code == 1 and "not a kbench history" in res.output
    assert other.read_bytes() == before


@pytest.mark.parametrize("content", [b"not a database at all" * 50, b"SQLite format 3\x00"
                                     + os.urandom(2000)])
def test_a_damaged_history_database_is_one_line(tmp_path, content):
    bad = tmp_path / "h.sqlite"
    bad.write_bytes(content)
    run = write_run(tmp_path / "run", [verdict()])
    for args in (["--db", str(bad)], ["--db", str(bad), "--add", str(run)]):
        res = CliRunner().invoke(history, args)
        assert res.exit_code == 1 and isinstance(res.exception, SystemExit), res.output
        assert res.output.startswith("Error: history: ") and str(bad) in res.output
        assert len(res.output.strip().splitlines()) == 1


# ---- SIGTERM -----------------------------------------------------------------------


def test_sigterm_finalises_the_run_and_appends_it_like_ctrl_c(tmp_path):
    """Before: SIGTERM killed kbench run on the spot: run.json never said how
    many results there were and the run never reached the history."""
    db = tmp_path / "h.sqlite"
    proc = kbench_cli("run", "--suite", "correctness", "--shapes", "correctness_gemm",
                      "--realization", "gemm_scalar_f32acc", "--db", str(db), "--out",
                      str(tmp_path / "run"), cwd=tmp_path)
    csv_path = tmp_path / "run" / "results.csv"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # wait for the first verdict on disk
        if csv_path.exists() and len(csv_path.read_text().splitlines()) >= 2:
            break
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 128 + signal.SIGTERM, out[-3000:]
    run = load_run(tmp_path / "run")
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["complete"] is False and meta["results"] == len(run.results) >= 1
    assert not (tmp_path / "run" / "run.json.tmp").exists()
    listing = query_runs(db)
    assert len(listing) == 1 and not listing.iloc[0]["complete"]
    assert listing.iloc[0]["n_results"] == len(run.results)


# ---- the command line: bad values, unwritable or full folders --------------------------


@pytest.mark.parametrize("option,value", [("--min-round-ms", "inf"), ("--max-time", "nan"),
                                          ("--min-round-ms", "-1"), ("--max-time", "1e999")])
def test_non_finite_times_are_refused(option, value):
    """Before: click's FloatRange accepted inf and nan."""
    res = CliRunner().invoke(cli, ["run", "--suite", "perf", option, value, "--backend",
                                   "bogus"])
    assert res.exit_code == 2 and option in res.output and "finite" in res.output, res.output


def test_tune_refuses_a_non_finite_budget():
    res = CliRunner().invoke(cli, ["tune", "--shapes", "smoke", "--budget", "inf"])
    assert res.exit_code == 2 and "--budget" in res.output


def test_an_unbalanced_quote_in_a_worker_command_is_a_message():
    """Before: shlex's ValueError escaped as a traceback."""
    with pytest.raises(InvalidArgument, match="No closing quotation") as exc:
        parse_target("worker:ssh board './kb_worker")
    assert exc.value.field == "target"
    res = CliRunner().invoke(cli, ["run", "--target", "worker:ssh 'board", "--no-history"])
    assert res.exit_code == 2 and "No closing quotation" in res.output
    assert isinstance(res.exception, SystemExit)


def test_an_out_folder_that_cannot_be_made_is_one_line(tmp_path):
    """Before: pytest INTERNALERROR (a traceback) when the run folder could
    not be written."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = CliRunner().invoke(cli, ["run", "--out", str(blocker / "run"), "--no-history"])
    assert res.exit_code == 1 and res.output.startswith("Error: --out: cannot"), res.output
    proc = subprocess.run([sys.executable, "-m", "pytest", str(REPO / "suites" /
                                                              "test_correctness.py"),
                           "-q", "-p", "no:cacheprovider", "--kb-out", str(blocker / "run"),
                           "--kb-shapes", "smoke", "-k", "nothing"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4 and "INTERNALERROR" not in out and "--kb-out" in out, out


def _limit_file_size(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_full_disk_during_a_run_is_reported_and_leaves_a_readable_folder(tmp_path):
    """A file-size limit stands in for a full disk: results.csv stops growing
    after a few rows. Before: an OSError inside pytest (INTERNALERROR) and a
    folder left with run.json.tmp."""
    out = tmp_path / "run"
    proc = kbench_cli("run", "--suite", "correctness", "--shapes", "smoke", "--realization",
                      "gemm_scalar_f32acc", "--no-history", "--out", str(out), cwd=tmp_path,
                      preexec_fn=lambda: _limit_file_size(3000))
    text = proc.communicate(timeout=600)[0]
    assert proc.returncode not in (0, 3), text[-3000:]  # failed, but not an internal error
    assert "INTERNALERROR" not in text and "Traceback" not in text
    assert "run folder: cannot write" in text and "were not written" in text
    assert not (out / "run.json.tmp").exists()
    run = load_run(out)
    assert not run.complete and run.has_results


# ---- start-up and the cross build -------------------------------------------------------


@pytest.mark.parametrize("module,argv", [("click", ["--version"]),
                                         ("pandas", ["count", "--help"])])
def test_ctrl_c_while_kbench_starts_is_not_a_traceback(tmp_path, module, argv):
    """A KeyboardInterrupt raised while kbench's modules import (here: by an
    import hook): while the CLI loads, and while a command imported on use
    loads pandas. Before: a traceback, then "Aborted!" with exit 1."""
    script = (
        "import sys\n"
        "class Stop:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r}:\n"
        "            raise KeyboardInterrupt\n"
        "        return None\n"
        "sys.meta_path.insert(0, Stop())\n"
        f"sys.argv = ['kbench', *{argv!r}]\n"
        "from kbench.cli import main\n"
        "sys.exit(main())\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip() == "kbench: interrupted" and "Traceback" not in res.stderr


def test_concurrent_first_use_of_a_stale_worker_builds_it_once_at_a_time():
    """Several processes finding the host worker stale at once. Before: they
    compiled into the same object files and raced on kb_worker.tmp
    (FileNotFoundError: kb_worker.tmp -> kb_worker)."""
    out = crossbuild.toolchain("host").output
    for _ in range(2):
        crossbuild.build("host")
        os.utime(out, (1, 1))  # older than every source: stale
        procs = [subprocess.Popen([sys.executable, "-m", "kbench.targets.crossbuild", "--arch",
                                   "host"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, cwd=REPO) for _ in range(4)]
        results = [(p.wait(timeout=600), p.stdout.read() if p.stdout else "") for p in procs]
        for code, text in results:
            assert code == 0, text
        assert not list(out.parent.glob("*.tmp*"))
        target = parse_target("worker:host")
        assert target.info().library_version
        target.close()
