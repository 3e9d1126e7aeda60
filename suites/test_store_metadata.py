"""What every run.json records about the machine and the checkout (the
fields history, compare and the report read back): the CPU model from
cpuinfo, the commit of the kbench checkout whatever the working directory,
whether it was dirty, Python, compiler and flags; and which files make a
folder a run folder."""

from __future__ import annotations

import platform
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from kbench.results import store

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("text", "model"), [
    ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n"
     "model name\t: second\n", "Intel(R) Xeon(R) CPU @ 2.20GHz"),
    ("processor : 0\nBogoMIPS : 50.00\nCPU part : 0xd4f\n", "0xd4f"),
    ("Hardware : BCM2835\nModel : Raspberry Pi 5 Model B: rev 1.0\n",
     "Raspberry Pi 5 Model B: rev 1.0"),  # a colon in the value is kept
])
def test_the_cpu_model_is_read_from_cpuinfo(tmp_path: Path, text: str, model: str) -> None:
    p = tmp_path / "cpuinfo"
    p.write_text(text)
    assert store._cpu_model(p) == model


def test_without_cpuinfo_the_platform_names_the_cpu(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(platform, "processor", lambda: "")
    assert store._cpu_model(tmp_path / "none") == platform.machine()
    p = tmp_path / "cpuinfo"
    p.write_text("processor : 0\nflags : fpu\n")
    monkeypatch.setattr(platform, "processor", lambda: "some cpu")
    assert store._cpu_model(p) == "some cpu"


def test_run_metadata_names_the_checkout_wherever_it_runs(tmp_path: Path,
                                                          monkeypatch) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                          text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    monkeypatch.chdir(tmp_path)  # not a repository: the checkout's commit all the same
    meta = store.machine_metadata()
    assert set(meta) == {"host", "platform", "machine", "cpu_model", "python", "compiler",
                         "c_flags", "git_commit", "git_dirty", "date", "command_line",
                         "checkout"}
    assert meta["git_commit"] == head.stdout.strip()
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=REPO, capture_output=True,
                         text=True).stdout.strip()
    assert meta["checkout"]["root"] == str(Path(top).resolve())  # the checkout, not the cwd
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True,
                           text=True).stdout.strip() != ""
    assert meta["git_dirty"] is dirty
    assert meta["python"] == platform.python_version() == sys.version.split()[0]
    assert meta["compiler"] == (sysconfig.get_config_var("CC") or "")
    assert meta["machine"] == platform.machine() and meta["cpu_model"] == store._cpu_model()
    assert meta["c_flags"] and meta["date"].endswith("+00:00")


def test_outside_a_checkout_the_commit_is_empty_and_dirtiness_unknown(monkeypatch) -> None:
    monkeypatch.setattr(store, "_git", lambda *args: "")
    meta = store.machine_metadata()
    assert meta["git_commit"] == "" and meta["git_dirty"] is None


@pytest.mark.parametrize("name", ["run.json", "results.csv", "verdicts.txt", store.LOCK_NAME])
def test_any_run_file_makes_a_run_folder(tmp_path: Path, name: str) -> None:
    assert not store.is_run_dir(tmp_path)
    (tmp_path / "other.txt").write_text("x")
    assert not store.is_run_dir(tmp_path)
    (tmp_path / name).write_text("x")
    assert store.is_run_dir(tmp_path)


def test_dirtiness_the_compiler_and_the_command_line_are_recorded(monkeypatch) -> None:
    answers = {("rev-parse", "HEAD"): "c0ffee" * 6, ("status", "--porcelain"): " M kbench/x.py"}
    monkeypatch.setattr(store, "_git", lambda *args: answers.get(args, ""))
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/kbench", "run", "--shapes", "smoke"])
    meta = store.machine_metadata()
    assert meta["git_commit"] == "c0ffee" * 6 and meta["git_dirty"] is True
    assert meta["command_line"] == "kbench run --shapes smoke"
    answers[("status", "--porcelain")] = ""
    assert store.machine_metadata()["git_dirty"] is False
    monkeypatch.setattr(sysconfig, "get_config_var", lambda name: None)
    assert store.machine_metadata()["compiler"] == ""


def test_a_git_that_fails_or_hangs_gives_no_commit(monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise subprocess.TimeoutExpired(args[0], 10)
    monkeypatch.setattr(subprocess, "run", broken)
    assert store._git("rev-parse", "HEAD") == ""

    def missing(*args, **kwargs):
        raise FileNotFoundError("git")
    monkeypatch.setattr(subprocess, "run", missing)
    assert store._git("rev-parse", "HEAD") == ""


def test_run_folders_are_reserved_one_per_run(tmp_path: Path) -> None:
    """<date>-<time>-<host><suffix>, then -2, -3 ... when taken (created with
    mkdir, so two runs of the same second never share one); a base that
    cannot be created is a RunDirError naming it."""
    import re
    import socket
    first = store.reserve_run_dir(tmp_path / "runs", "-x")
    assert re.fullmatch(rf"\d{{8}}-\d{{6}}-{re.escape(socket.gethostname())}-x", first.name)
    assert first.is_dir() and list(first.iterdir()) == []
    again = [store.reserve_run_dir(tmp_path / "runs", "-x") for _ in range(3)]
    names = {p.name for p in [first, *again]}
    assert len(names) == 4 and all(p.parent == tmp_path / "runs" for p in again)
    assert any(n.endswith("-x-2") for n in names) or len({n[:15] for n in names}) > 1
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(store.RunDirError) as exc:
        store.reserve_run_dir(blocker / "runs")
    assert str(exc.value).startswith(f"cannot create {blocker / 'runs'}: ")


def test_a_failure_is_written_with_its_reproducer(tmp_path: Path) -> None:
    """add_failure: the reproducer under the verdict's line in verdicts.txt and
    a failures.csv row (header first), and nothing after a write error."""
    import csv

    from kbench.judge.verdict import Verdict
    v = Verdict(case="c1", op="gemm", shape="m8n8k8", kind="exact", target="host",
                backend="scalar", realization="gemm_scalar_f32acc", kernel="k", accum="fp32",
                k=8, m=8, n=8, b_form="plain", vector_bits=0, status="fail", catalog="cat",
                suite="correctness", message="max err 3 | bound 1")
    w = store.RunWriter(tmp_path / "r", {"date": "2026-01-01"})
    w.add(v)
    w.add_failure(v, "kbench run --case c1")
    w.add_failure(v, "kbench run --case c1 --seed 2")
    w.close(complete=True)
    lines = (tmp_path / "r" / "verdicts.txt").read_text().splitlines()
    assert "    reproduce: kbench run --case c1" in lines
    with open(tmp_path / "r" / "failures.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["reproduce"] for r in rows] == ["kbench run --case c1",
                                              "kbench run --case c1 --seed 2"]
    assert list(rows[0]) == list(store.FAILURE_COLUMNS)
    assert (rows[0]["case"], rows[0]["status"], rows[0]["message"]) == ("c1", "fail",
                                                                        "max err 3 | bound 1")
    broken = store.RunWriter(tmp_path / "b", {"date": "2026-01-01"})
    broken.error = OSError("disk full")
    broken.add_failure(v, "kbench run")
    assert not (tmp_path / "b" / "failures.csv").exists()


def test_claiming_out_refuses_what_it_must_not_replace(tmp_path: Path) -> None:
    """--out: a file, a folder of other files, or a run without --force is
    refused with what to do; nested missing folders are made."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}")
    cases = [
        (tmp_path / "file", f"{tmp_path / 'file'} exists and is not a folder"),
        (tmp_path / "other", f"{tmp_path / 'other'} is not empty and holds no kbench run: "
                             "choose another folder"),
        (tmp_path / "run", f"{tmp_path / 'run'} already holds a run: choose another folder, or "
                           "--force to replace it"),
    ]
    for folder, text in cases:
        with pytest.raises(store.RunDirError) as exc:
            store.claim_out_dir(folder)
        assert str(exc.value) == text
    nested = tmp_path / "a" / "b" / "c"
    assert store.claim_out_dir(nested) == nested and nested.is_dir()
    assert list(nested.iterdir()) == []  # the write probe is gone


def test_force_removes_the_old_runs_files_but_never_follows_a_link(tmp_path: Path) -> None:
    run, outside = tmp_path / "run", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    run.mkdir()
    (run / "results.csv").write_text("x")
    (run / "report").mkdir()
    (run / "report" / "report.html").write_text("x")
    (run / "linked").symlink_to(outside, target_is_directory=True)
    assert store.claim_out_dir(run, force=True) == run
    assert list(run.iterdir()) == []
    assert (outside / "keep.txt").read_text() == "x"


def test_a_file_that_cannot_be_removed_or_written_is_named(tmp_path: Path, monkeypatch) -> None:
    import errno
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.csv").write_text("x")

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(self))
    monkeypatch.setattr(Path, "unlink", refuse)
    with pytest.raises(store.RunDirError) as exc:
        store.claim_out_dir(run, force=True)
    assert str(exc.value) == f"cannot remove {run / 'results.csv'}: Permission denied"
    monkeypatch.undo()

    def full(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(self))
    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(store.RunDirError) as exc:
        store.claim_out_dir(tmp_path / "new")
    assert str(exc.value) == f"cannot write to {tmp_path / 'new'}: No space left on device"


def test_run_folder_defaults_nesting_and_errors(tmp_path: Path, monkeypatch) -> None:
    """Under ./runs by default, with no suffix; a missing base is made with its
    parents; an error names the folder and the system's reason alone; a name
    taken 9,999 times over is given up with a message."""
    import errno
    import re
    import socket
    monkeypatch.chdir(tmp_path)
    host = re.escape(socket.gethostname())
    assert store.default_run_dir().parent == Path("runs")
    first = store.reserve_run_dir()
    assert first.parent == Path("runs") and re.fullmatch(rf"\d{{8}}-\d{{6}}-{host}", first.name)
    deep = store.reserve_run_dir(tmp_path / "a" / "b" / "runs")
    assert deep.is_dir() and deep.parent == tmp_path / "a" / "b" / "runs"
    (tmp_path / "file").write_text("x")
    with pytest.raises(store.RunDirError) as exc:
        store.reserve_run_dir(tmp_path / "file" / "runs")
    assert str(exc.value) == f"cannot create {tmp_path / 'file' / 'runs'}: Not a directory"

    real_mkdir = Path.mkdir
    tries: list[Path] = []

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        if kwargs.get("parents"):
            return real_mkdir(self, *args, **kwargs)
        tries.append(self)
        raise (FileExistsError(errno.EEXIST, "File exists") if fail == "taken"
               else PermissionError(errno.EACCES, "Permission denied"))
    monkeypatch.setattr(Path, "mkdir", refuse)
    fail = "denied"
    with pytest.raises(store.RunDirError) as exc:
        store.reserve_run_dir(tmp_path / "runs", "-s")
    assert str(exc.value) == f"cannot create {tries[0]}: Permission denied"
    assert tries[0].name.endswith("-s")
    fail, tries[:] = "taken", []
    with pytest.raises(store.RunDirError) as exc:
        store.reserve_run_dir(tmp_path / "runs", "-s")
    assert len(tries) == 9_999 and tries[-1].name.endswith("-s-9999")
    assert str(exc.value) == f"no free run folder name next to {tries[0]}"


def test_a_failures_csv_that_cannot_be_written_is_the_writers_error(tmp_path: Path) -> None:
    from kbench.judge.verdict import Verdict
    v = Verdict(case="c1", op="gemm", shape="m8n8k8", kind="exact", target="host",
                backend="scalar", realization="gemm_scalar_f32acc", kernel="k", accum="fp32",
                k=8, m=8, n=8, b_form="plain", vector_bits=0, status="fail", catalog="cat",
                suite="correctness")
    w = store.RunWriter(tmp_path / "r", {"date": "2026-01-01"})
    (tmp_path / "r" / "failures.csv").mkdir()  # open() of it for writing fails
    w.add_failure(v, "kbench run --case c1")
    assert isinstance(w.error, IsADirectoryError)
    w.close(complete=False)
