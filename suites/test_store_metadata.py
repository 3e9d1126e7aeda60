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
                         "c_flags", "git_commit", "git_dirty", "date", "command_line"}
    assert meta["git_commit"] == head.stdout.strip()
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


@pytest.mark.parametrize("name", ["run.json", "results.csv", "verdicts.txt"])
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
