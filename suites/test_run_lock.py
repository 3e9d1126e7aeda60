"""A run folder in use is locked (kbench.results.runlock): `--out X --force`
refuses a folder another process is running into, naming that process; a
lock left by a dead run locks nothing; and a run whose folder was removed or
replaced while it ran writes nothing into the new one and records no
history row for it (it exits 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbench.cli.main import main
from kbench.judge.verdict import Verdict
from kbench.results.runlock import LOCK_NAME, RunLock, claim_locked
from kbench.results.store import RunDirError, RunWriter

SMOKE = ["run", "--suite", "correctness", "--shapes", "smoke", "--backend", "scalar",
         "--kinds", "exact", "-k", "m1_n17", "--no-report"]

HOLDER = """
import sys, time
from kbench.results.runlock import RunLock
lock = RunLock.take(sys.argv[1])
print("locked", flush=True)
sys.stdin.read()  # until the test closes our stdin
"""


@pytest.fixture
def live_run(tmp_path: Path):
    """A folder holding a run, locked by another live process (as a running
    `kbench run --out` holds it); yields the folder and that process."""
    folder = tmp_path / "X"
    folder.mkdir()
    (folder / "results.csv").write_text("case,status\na,pass\n")
    (folder / "run.json").write_text(json.dumps({"complete": False}))
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    yield folder, proc
    proc.stdin.close()
    proc.wait(timeout=30)


def test_force_refuses_a_folder_a_live_run_holds_and_names_it(live_run, tmp_path: Path) -> None:
    folder, proc = live_run
    before = sorted(p.name for p in folder.iterdir())
    res = CliRunner().invoke(main, [*SMOKE, "--no-history", "--out", str(folder), "--force"])
    assert res.exit_code == 1, res.output
    assert res.output.strip().splitlines()[-1] == (
        f"Error: --out: {folder} is in use by a run that is still running (pid {proc.pid}: "
        f"-c {folder}); wait for it to end, or choose another folder")
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing removed
    assert (folder / "results.csv").read_text() == "case,status\na,pass\n"
    with pytest.raises(RunDirError, match="in use by a run that is still running"):
        claim_locked(folder, True, tmp_path / "runs")  # without --force too


def test_a_lock_left_by_a_dead_run_locks_nothing(live_run) -> None:
    folder, proc = live_run
    proc.stdin.close()
    proc.wait(timeout=30)  # it ends: the kernel releases its lock; the file stays
    assert (folder / LOCK_NAME).is_file()
    res = CliRunner().invoke(main, [*SMOKE, "--no-history", "--out", str(folder), "--force"])
    assert res.exit_code == 0, res.output
    assert json.loads((folder / "run.json").read_text())["complete"] is True
    assert int((folder / LOCK_NAME).read_text().split()[0]) == os.getpid()


def test_a_folder_with_only_a_stale_lock_is_a_run_folder(tmp_path: Path) -> None:
    folder = tmp_path / "X"
    folder.mkdir()
    RunLock.take(folder).release()  # a run killed before it wrote results.csv
    with pytest.raises(RunDirError, match="already holds a run"):
        claim_locked(folder, False, tmp_path / "runs")
    got, lock = claim_locked(folder, True, tmp_path / "runs")
    assert got == folder and [p.name for p in folder.iterdir()] == [LOCK_NAME]
    assert not lock.lost()
    lock.release()


def _verdict(case: str) -> Verdict:
    return Verdict(case=case, op="gemm", shape="m1n1k1", kind="exact", target="host",
                   backend="scalar", realization="gemm_scalar_f32acc", kernel="k", accum="fp32",
                   k=1, m=1, n=1, b_form="plain", vector_bits=0, status="pass")


def test_a_writer_whose_folder_was_replaced_writes_nothing_into_the_new_one(
        tmp_path: Path) -> None:
    import shutil
    folder = tmp_path / "X"
    first = RunWriter(folder, {"run_id": "first"})
    first.add(_verdict("a"))
    assert not first.vanished()
    shutil.rmtree(folder)  # removed under the run, and another run starts there
    second = RunWriter(folder, {"run_id": "second"})
    second.add(_verdict("b"))
    first.add(_verdict("c"))
    assert first.vanished()
    first.close(complete=True)
    assert first.metadata["complete"] is False and first.count == 0 and first.lost == 2
    assert "was removed or replaced during the run" in str(first.error)
    second.close(complete=True)
    meta = json.loads((folder / "run.json").read_text())
    assert meta["run_id"] == "second" and meta["complete"] is True and meta["results"] == 1


@pytest.mark.parametrize("how", ["replaced", "removed"])
def test_a_run_whose_folder_vanished_records_no_history_row(tmp_path: Path, monkeypatch,
                                                           how: str) -> None:
    """The suites run; meanwhile the folder is replaced by another run's (or
    removed): kbench run says so, exits 1 and appends nothing to the history."""
    import shutil

    import pytest as real_pytest
    folder, db = tmp_path / "X", tmp_path / "h.sqlite"

    def suites(args: list[str]) -> int:
        shutil.rmtree(folder)
        if how == "replaced":
            other = RunWriter(folder, {"run_id": "someone-else"})
            other.add(_verdict("theirs"))
            other.close(complete=True)
        return 0
    monkeypatch.setattr(real_pytest, "main", suites)
    res = CliRunner().invoke(main, [*SMOKE, "--db", str(db), "--out", str(folder)])
    assert res.exit_code == 1, res.output
    assert res.stderr.strip().splitlines()[-1] == (
        f"kbench run: the run folder {folder} was removed or replaced while the run wrote it: "
        "its verdicts are lost, and nothing about it is recorded; exit status 1")
    assert "history: run #" not in res.output and not db.exists()
    if how == "replaced":  # the other run's folder is left as it is
        assert json.loads((folder / "run.json").read_text())["run_id"] == "someone-else"


@pytest.mark.parametrize("command", [
    ["ab", "--base", "worker:host", "--cand", "worker:host", "--shapes", "smoke",
     "--backend", "scalar", "-k", "m1_n17", "--rounds", "2"],
    ["mutate", "--no-baseline", "--mutant", "*", "--sample", "1"],
])
def test_ab_and_a_mutation_campaign_refuse_a_folder_another_process_writes(
        live_run, command: list[str]) -> None:
    """`kbench ab --out X` and `kbench mutate --out X` write into a folder they
    may resume: a second process into the same folder would mix their files,
    so each locks it as a run does and is refused, naming the holder, with
    nothing in it touched."""
    folder, proc = live_run
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    res = CliRunner().invoke(main, [*command, "--out", str(folder)])
    assert res.exit_code == 1, res.output
    assert (f"--out: {folder} is in use by a run that is still running (pid {proc.pid}"
            in res.output), res.output
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


def test_lock_folder_creates_the_folder_and_a_second_lock_is_refused(tmp_path: Path) -> None:
    from kbench.results.runlock import lock_folder
    folder = tmp_path / "new" / "ab"
    lock = lock_folder(folder)
    assert (folder / LOCK_NAME).is_file()
    proc = subprocess.run([sys.executable, "-c", HOLDER, str(folder)], input="",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "in use by a run that is still running" in proc.stderr
    lock.release()
    proc = subprocess.run([sys.executable, "-c", HOLDER, str(folder)], input="",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "locked"
