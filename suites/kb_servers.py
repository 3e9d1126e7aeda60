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
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
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
