"""Fleet files: parsing and its one-line errors, `kbench info --fleet`
checking every target at once, and `kbench run --fleet examples/fleet.toml`
end to end: this machine, two emulated CPUs and an ssh "board" on loopback
(an emulated aarch64 box behind a real OpenSSH server) in parallel, one run
folder, one history entry, and a connection killed mid-run failing only
that target's current case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from kb_servers import loopback_ssh

from kbench.results.history import query_runs
from kbench.targets.fleet import FleetError, load_fleet
from kbench.targets.tools import find_qemu

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "fleet.toml"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return path


def test_example_fleet_file() -> None:
    fl = load_fleet(EXAMPLE, {"KBENCH_LOOPBACK_SSH_PORT": "2299"})
    assert fl.specs == ("host", "qemu:cpu=max:svl=512", "qemu:cpu=neoverse-n1",
                        "ssh:127.0.0.1:2299,emulated")
    assert fl.labels["ssh:127.0.0.1:2299,emulated"] == "loopback-arm-board"
    assert load_fleet(EXAMPLE, {}).specs[-1] == "ssh:127.0.0.1:2222,emulated"  # the default


@pytest.mark.parametrize("text, message", [
    ("jobs = 2\n", "no [[target]] tables"),
    ("[[target]]\nlabel = 'a'\n", "target 1: spec must be"),
    ("[[target]]\nspec = 'host'\ncolour = 'red'\n", "target 1: unknown key(s) colour"),
    ("[[target]]\nspec = 'host'\nlabel = 'x'\n[[target]]\nspec = 'worker:host'\nlabel = 'x'\n",
     "label 'x' appears twice"),
    ("[[target]]\nspec = 'host'\n[[target]]\nspec = 'host'\n", "spec 'host' appears twice"),
    ("[[target]]\nspec = 'ssh:${NO_SUCH_VAR_KB}'\n", "${NO_SUCH_VAR_KB} is not set"),
    ("jobs = 0\n[[target]]\nspec = 'host'\n", "jobs must be"),
    ("targets = 1\n", "unknown key(s) targets"),
    ("[[target]\n", "not TOML"),
])
def test_fleet_errors_name_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(FleetError) as exc:
        load_fleet(path, {})
    assert str(exc.value).startswith(str(path)) and message in str(exc.value)


def kbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, timeout=1500, env={**os.environ, **(env or {})})


LATIN1_FLEET = "[[target]]\nlabel = 'café'\nspec = 'host'\n".encode("latin-1")  # é at 23


def test_fleet_file_not_utf8_names_file_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_bytes(LATIN1_FLEET)
    with pytest.raises(FleetError) as exc:
        load_fleet(path, {})
    assert str(exc.value) == (f"{path}: not UTF-8 (byte 0xe9 at offset 23); a fleet file is "
                              "UTF-8 TOML")


@pytest.mark.parametrize("command", ["info", "run"])
def test_fleet_file_not_utf8_is_a_usage_error(tmp_path: Path, command: str) -> None:
    path = tmp_path / "fleet.toml"
    path.write_bytes(LATIN1_FLEET)
    res = kbench(command, "--fleet", str(path), *(["--out", str(tmp_path / "run")]
                                                  if command == "run" else []))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert "not UTF-8 (byte 0xe9 at offset 23)" in res.stderr and "--fleet" in res.stderr


def test_info_fleet_checks_every_target(tmp_path: Path) -> None:
    path = write(tmp_path, "[[target]]\nlabel = 'me'\nspec = 'host'\n"
                           "[[target]]\nlabel = 'native-worker'\nspec = 'worker:host'\n"
                           "[[target]]\nlabel = 'gone'\nspec = 'ssh:nobody@127.0.0.1:1'\n")
    res = kbench("info", "--fleet", str(path))
    assert res.returncode == 1, res.stdout + res.stderr  # one target is unreachable
    lines = res.stdout.splitlines()
    assert lines[0].split()[:4] == ["label", "target", "state", "arch"]
    me = next(line for line in lines if line.startswith("me "))
    assert " ok " in me and ("x86_64" in me or "aarch64" in me)
    gone = next(line for line in lines if line.startswith("gone "))
    assert "UNREACHABLE" in gone and "cannot connect" in gone
    js = kbench("info", "--fleet", str(path), "--json")
    rows = {r["label"]: r for r in json.loads(js.stdout)}
    assert rows["me"]["reachable"] and rows["native-worker"]["realizations"] > 0
    assert not rows["gone"]["reachable"] and rows["gone"]["error"].startswith(
        "ssh:nobody@127.0.0.1:1: cannot connect")


def test_run_fleet_example_in_parallel_with_a_killed_connection(tmp_path: Path) -> None:
    try:
        qemu = find_qemu()
    except Exception:  # noqa: BLE001
        if os.environ.get("KBENCH_REQUIRE_QEMU"):
            raise
        pytest.skip("qemu-aarch64 not installed")
    with loopback_ssh(qemu) as sshd:
        # the ssh worker's connection dies at its 12th request (the probe's own
        # connection sends fewer), i.e. in the middle of one correctness case
        sshd.box(drop_after=12)
        env = {"KBENCH_SSH": sshd.ssh_command, "KBENCH_LOOPBACK_SSH_PORT": str(sshd.port)}
        info = kbench("info", "--fleet", str(EXAMPLE), env=env)
        assert info.returncode == 0, info.stdout + info.stderr
        assert "loopback-arm-board" in info.stdout and "UNREACHABLE" not in info.stdout
        out, db = tmp_path / "run", tmp_path / "history.sqlite"
        # the catalog's own cases (no derived tails): this is about the fleet, not tails
        res = kbench("run", "--fleet", str(EXAMPLE), "--suite", "correctness", "--shapes",
                     "smoke", "--kinds", "exact", "--backend", "scalar", "--backend", "neon",
                     "--tails", "none", "--out", str(out), "--db", str(db), env=env)
        log = sshd.folder / "requests.log"
        assert (sshd.folder / "dropped").exists(), (
            (log.read_text() if log.exists() else "no worker connection ended\n")
            + res.stdout[-3000:] + res.stderr[-3000:])
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]  # one case failed
    ssh_spec = f"ssh:127.0.0.1:{sshd.port},emulated"
    df = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert set(df["target"]) == {"host", "qemu:cpu=max:svl=512", "qemu:cpu=neoverse-n1",
                                 ssh_spec}
    failed = df[df["status"] != "pass"]
    assert len(failed) == 1, failed[["target", "case", "status", "message"]]
    assert failed["target"].iloc[0] == ssh_spec and failed["status"].iloc[0] == "error"
    assert f"{ssh_spec}: connection lost" in failed["message"].iloc[0]
    ssh_rows = df[df["target"] == ssh_spec]
    assert (ssh_rows["status"] == "pass").sum() == len(ssh_rows) - 1 > 10  # it went on
    # the ssh board and the svl=512 CPU computed the same cases
    assert len(ssh_rows) == len(df[df["target"] == "qemu:cpu=max:svl=512"])
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] and meta["fleet"][ssh_spec] == "loopback-arm-board"
    workers = meta["parallel"]
    assert len({w for ws in workers.values() for w in ws}) == 4  # one process per target
    assert meta["targets"][ssh_spec]["emulated"] is True
    runs = query_runs(db)
    assert len(runs) == 1 and int(runs["n_results"].iloc[0]) == len(df)
    assert int(runs["n_failed"].iloc[0]) == 1
