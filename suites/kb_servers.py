"""Throwaway servers for the suites, all on this machine: a PostgreSQL server
(initdb in a temporary folder, reached over a unix socket), an OpenSSH
server on a loopback port whose login is an emulated aarch64 box (uname
says aarch64, aarch64 executables run under qemu-aarch64), and a stand-in
`adb` on PATH with a local folder as the device. Each is started and stopped
by the test that uses it.

A server whose Debian package is missing makes its tests skip with the
reason, unless KBENCH_REQUIRE_POSTGRES / KBENCH_REQUIRE_SSHD is set (CI sets
both), which makes them fail instead.

Run as a script to keep a loopback "Arm box" up for trying the ssh target by
hand: `python suites/kb_servers.py sshd [--port 2222]`."""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def missing(what: str, require_env: str, reason: str) -> None:
    """Skips (or, with require_env set, fails) a test that needs `what`."""
    if os.environ.get(require_env):
        pytest.fail(f"{require_env} is set but {what} is unavailable: {reason}")
    pytest.skip(f"{what} unavailable: {reason}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(check, timeout: float, what: str) -> None:  # noqa: ANN001 - a callable
    """Polls `check` until it is true; the wait bounds start-up, no test result
    depends on it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s")


# ---- PostgreSQL ------------------------------------------------------------------------


def postgres_bin() -> Path | None:
    for pattern in ("/usr/lib/postgresql/*/bin",):
        for d in sorted(glob.glob(pattern), reverse=True):
            if (Path(d) / "initdb").exists() and (Path(d) / "pg_ctl").exists():
                return Path(d)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


@dataclass
class Postgres:
    url: str
    folder: Path
    bindir: Path
    user: str | None  # the account the server runs as (postgres refuses root)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")


@contextlib.contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A PostgreSQL server in a temporary folder, listening on a unix socket
    only; its URL names a fresh database `kbench`."""
    bindir = postgres_bin()
    if bindir is None:
        missing("PostgreSQL", "KBENCH_REQUIRE_POSTGRES",
                "initdb not found (apt-get install postgresql)")
    assert bindir is not None
    user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
            user = "postgres"
        except KeyError:
            missing("PostgreSQL", "KBENCH_REQUIRE_POSTGRES", "running as root and there is no "
                    "postgres account to run the server as")
    folder = Path(tempfile.mkdtemp(prefix="kbench-pg-"))
    if user:
        shutil.chown(folder, user)
    port = free_port()
    server = Postgres("", folder, bindir, user)
    init = server._run("initdb", "-D", str(folder / "data"), "-A", "trust", "-U", "postgres",
                       "--no-sync")
    if init.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {init.stderr[-400:]}")
    opts = (f"-k {folder} -p {port} -c listen_addresses='' -c fsync=off "
            "-c max_connections=50")
    start = server._run("pg_ctl", "-D", str(folder / "data"), "-l", str(folder / "log"),
                        "-o", opts, "-w", "-t", "60", "start")
    if start.returncode != 0:
        log = (folder / "log").read_text(errors="replace")[-400:] if (
            folder / "log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {start.stderr[-300:]} {log}")
    try:
        made = server._run("createdb", "-h", str(folder), "-p", str(port), "-U", "postgres",
                           "kbench")
        if made.returncode != 0:
            raise RuntimeError(f"createdb failed: {made.stderr[-300:]}")
        server.url = f"postgresql://postgres@/kbench?host={folder}&port={port}"
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Postgres]:
    """One PostgreSQL server for the session (tests make their own databases)."""
    with postgres_server() as server:
        yield server


# ---- OpenSSH on loopback, an emulated aarch64 box behind it ----------------------------

BOX = HERE / "kb_emulated_box.py"


@dataclass
class LoopbackSsh:
    """sshd on 127.0.0.1:port; `spec` is the kbench target, `ssh_command` what
    KBENCH_SSH must be for kbench to log in with the throwaway key."""

    port: int
    folder: Path
    user: str
    process: subprocess.Popen[bytes]

    @property
    def spec(self) -> str:
        return f"ssh:{self.user}@127.0.0.1:{self.port}"

    @property
    def ssh_command(self) -> str:
        return f"ssh -F {self.folder / 'ssh_config'}"

    def box(self, **settings: object) -> None:
        """Sets what the box behind the login is (see kb_emulated_box)."""
        (self.folder / "box.json").write_text(json.dumps({**self.defaults, **settings}))

    defaults: dict[str, object] = field(default_factory=dict)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def sshd_binary() -> str | None:
    return shutil.which("sshd") or next(
        (p for p in ("/usr/sbin/sshd", "/sbin/sshd") if os.access(p, os.X_OK)), None)


@contextlib.contextmanager
def loopback_ssh(qemu: str, cpu: str = "max", port: int | None = None) -> Iterator[LoopbackSsh]:
    """An OpenSSH server on a loopback port with a throwaway host key and client
    key, logging in the current user into an emulated aarch64 box."""
    sshd = sshd_binary()
    keygen = shutil.which("ssh-keygen")
    if sshd is None or keygen is None or shutil.which("ssh") is None:
        missing("an OpenSSH server", "KBENCH_REQUIRE_SSHD",
                "sshd/ssh/ssh-keygen not found (apt-get install openssh-server openssh-client)")
    assert sshd is not None and keygen is not None
    user = pwd.getpwuid(os.geteuid()).pw_name
    folder = Path(tempfile.mkdtemp(prefix="kbench-sshd-"))
    folder.chmod(0o755)
    for key in ("host_key", "client_key"):
        subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key)],
                       check=True, capture_output=True)
    shutil.copy(folder / "client_key.pub", folder / "authorized_keys")
    port = port or free_port()
    login = f"{sys.executable} {BOX} login {folder}"
    (folder / "sshd_config").write_text(textwrap.dedent(f"""\
        Port {port}
        ListenAddress 127.0.0.1
        HostKey {folder / 'host_key'}
        PidFile {folder / 'sshd.pid'}
        AuthorizedKeysFile {folder / 'authorized_keys'}
        PubkeyAuthentication yes
        PasswordAuthentication no
        KbdInteractiveAuthentication no
        UsePAM no
        StrictModes no
        PermitRootLogin prohibit-password
        MaxStartups 50:30:100
        MaxSessions 50
        ForceCommand {login}
        LogLevel ERROR
        """))
    (folder / "ssh_config").write_text(textwrap.dedent(f"""\
        Host *
            IdentityFile {folder / 'client_key'}
            IdentitiesOnly yes
            StrictHostKeyChecking no
            UserKnownHostsFile /dev/null
            LogLevel ERROR
        """))
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation folder
    log = open(folder / "sshd.log", "wb")  # noqa: SIM115 - closed with the server
    proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(folder / "sshd_config")],
                            stdout=log, stderr=subprocess.STDOUT)
    server = LoopbackSsh(port, folder, user, proc, {"arch": "aarch64", "cpu": cpu,
                                                    "qemu": qemu})
    server.box()

    def listening() -> bool:
        if proc.poll() is not None:
            raise RuntimeError("sshd exited: "
                               + (folder / "sshd.log").read_text(errors="replace")[-400:])
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    try:
        _wait_for(listening, 30, "sshd")
        yield server
    finally:
        server.stop()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


# ---- a stand-in adb ----------------------------------------------------------------------


@dataclass
class FakeAdb:
    root: Path  # one folder per device serial under it
    bindir: Path  # holds the `adb` executable; first on PATH
    serials: list[str]

    def env(self) -> dict[str, str]:
        return {"PATH": f"{self.bindir}:{os.environ.get('PATH', '')}",
                "KBENCH_FAKE_ADB_ROOT": str(self.root),
                "KBENCH_FAKE_ADB_SERIALS": " ".join(self.serials)}

    def box(self, serial: str, **settings: object) -> None:
        device = self.root / serial
        device.mkdir(parents=True, exist_ok=True)
        (device / "box.json").write_text(json.dumps(settings))


@contextlib.contextmanager
def fake_adb(qemu: str, serials: tuple[str, ...] = ("emulator-5554",),
             cpu: str = "max") -> Iterator[FakeAdb]:
    folder = Path(tempfile.mkdtemp(prefix="kbench-adb-"))
    bindir = folder / "bin"
    bindir.mkdir()
    exe = bindir / "adb"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {BOX} adb \"$@\"\n")
    exe.chmod(0o755)
    adb = FakeAdb(folder / "devices", bindir, list(serials))
    for s in serials:
        adb.box(s, arch="aarch64", cpu=cpu, qemu=qemu)
    try:
        yield adb
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _serve_sshd(argv: list[str]) -> int:
    """Keeps a loopback "Arm box" up until Ctrl-C (for trying the ssh target)."""
    import argparse

    from kbench.targets.tools import find_qemu
    ap = argparse.ArgumentParser(description=_serve_sshd.__doc__)
    ap.add_argument("--port", type=int, default=2222)
    ap.add_argument("--cpu", default="max", help="qemu -cpu of the box")
    args = ap.parse_args(argv)
    with loopback_ssh(find_qemu(), args.cpu, args.port) as server:
        print(f"export KBENCH_SSH='{server.ssh_command}'")
        print(f"target: {server.spec}   (Ctrl-C stops the server)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.process.wait()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["sshd"]:
        print("usage: python suites/kb_servers.py sshd [--port 2222] [--cpu MODEL]")
        sys.exit(2)
    sys.exit(_serve_sshd(sys.argv[2:]))
