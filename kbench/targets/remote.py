"""Remote targets: the static worker copied to another machine and driven
over ssh or adb with the same protocol as every worker.

    ssh:[user@]host[:port][,svl=BITS][,vl=BITS][,isa=CAP][,emulated]
    adb:[SERIAL][,svl=BITS][,vl=BITS][,isa=CAP][,emulated]

Before the first call kbench asks the remote for its architecture
(`uname -m`), picks the worker built for it, and looks for it in the
remote's cache folder under a name carrying the first 16 hex digits of its
SHA-256 (`~/.cache/kbench/` over ssh, `/data/local/tmp/kbench/` on Android);
only a missing one is copied (ssh: piped through `cat` into a temporary
name, then renamed; adb: `adb push`). The remote needs a POSIX shell and
nothing else. The worker's hello must name the same architecture.

With plugins (`--plugin`), the dynamically linked worker is deployed instead
(it needs the remote's glibc, /lib/ld-linux-aarch64.so.1: a Linux box, or a
glibc userland on an Android device), and each plugin library ({arch} =
aarch64) is cached beside it under a name carrying its SHA-256, copied only
when missing or different, and loaded from there.

svl= asks the worker for that streaming vector length (prctl
PR_SME_SET_VL) once it has started, vl= for that SVE vector length
(PR_SVE_SET_VL); a CPU that does not run at exactly that length is
refused, naming the length it runs at; isa= caps the worker's ISA
(KBENCH_ISA_CAP). `emulated` marks a remote whose worker runs under an
emulator: its times are recorded but never presented as speed.

Every failure (no connection, an architecture kbench has no worker for, a
binary that does not run, a connection dropped mid-call) is a KbenchError
whose message names the target and the reason; the engine then starts
afresh (a new connection) on the next call.

KBENCH_SSH replaces the ssh command (e.g. `ssh -F ci/ssh_config`), KBENCH_ADB
the adb command."""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kbench.errors import InvalidArgument, KbenchError, WorkerCrashed
from kbench.native import api
from kbench.native.calls import TargetInfo
from kbench.targets.plugins import expand
from kbench.targets.tools import worker_binary
from kbench.targets.worker import WorkerEngine, WorkerSpec

SVL_BITS = (128, 256, 512, 1024, 2048)
# remote `uname -m` -> the worker build that runs there
ARCHES = {"aarch64": "aarch64", "arm64": "aarch64"}
SSH_OPTIONS = ["-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=15",
               "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3"]
PROBE_TIMEOUT_S = 60.0
COPY_TIMEOUT_S = 300.0


class RemoteError(WorkerCrashed):
    """A remote target cannot be reached or its worker cannot run there."""


@dataclass(frozen=True)
class RemoteSpec:
    kind: str  # "ssh" or "adb"
    host: str = ""  # ssh: the host; adb: the serial ("" for the only device)
    user: str | None = None
    port: int | None = None
    svl: int | None = None
    isa: str | None = None
    emulated: bool = False
    vl: int | None = None  # the SVE vector length to set (bits)

    @property
    def name(self) -> str:
        if self.kind == "ssh":
            s = "ssh:" + (f"{self.user}@" if self.user else "") + self.host
            s += f":{self.port}" if self.port else ""
        else:
            s = "adb:" + self.host
        for key, value in (("svl", self.svl), ("vl", self.vl), ("isa", self.isa)):
            if value:
                s += f",{key}={value}"
        return s + (",emulated" if self.emulated else "")


def parse_remote(spec: str) -> RemoteSpec:
    kind, _, rest = spec.partition(":")
    if kind not in ("ssh", "adb"):
        raise InvalidArgument(f"target: {spec!r} is not an ssh: or adb: target", "target")
    address, *options = rest.split(",")
    values: dict[str, str] = {}
    emulated = False
    for opt in options:
        key, sep, value = opt.partition("=")
        if opt == "emulated":
            emulated = True
            continue
        if not sep or key not in ("svl", "vl", "isa") or not value:
            raise InvalidArgument(f"target: {opt!r} in {spec!r}: expected svl=BITS, vl=BITS, "
                                  "isa=CAP or emulated", "target")
        values[key] = value
    svl, vl = (_bits(values, key, spec) for key in ("svl", "vl"))
    isa = values.get("isa")
    if isa is not None and isa not in api.ISA_LEVELS:
        raise InvalidArgument(f"target: isa in {spec!r} must be one of "
                              f"{', '.join(api.ISA_LEVELS)}", "target")
    if kind == "adb":
        if any(c.isspace() for c in address):
            raise InvalidArgument(f"target: {spec!r}: a serial has no spaces", "target")
        return RemoteSpec("adb", address, None, None, svl, isa, emulated, vl)
    user, _, hostport = address.rpartition("@")
    host, _, port = hostport.partition(":")
    if not host or any(c.isspace() or c in "'\"$;|&" for c in address):
        raise InvalidArgument(f"target: {spec!r}: expected ssh:[user@]host[:port]", "target")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise InvalidArgument(f"target: port {port!r} in {spec!r} is not a port number",
                              "target")
    return RemoteSpec("ssh", host, user or None, int(port) if port else None, svl, isa,
                      emulated, vl)


def _bits(values: dict[str, str], key: str, spec: str) -> int | None:
    """A vector length option (svl=, vl=): one of SVL_BITS."""
    if key not in values:
        return None
    if not values[key].isdigit() or int(values[key]) not in SVL_BITS:
        raise InvalidArgument(f"target: {key} in {spec!r} must be one of {SVL_BITS} bits",
                              "target")
    return int(values[key])


def _command(env_name: str, default: str) -> list[str]:
    value = os.environ.get(env_name, "").strip()
    try:
        return shlex.split(value) if value else [default]
    except ValueError as exc:
        raise InvalidArgument(f"{env_name}: {exc}", env_name) from None


class Transport:
    """How commands reach a remote: one-shot commands, long-running ones and copies."""

    cache_dir = ""

    def __init__(self, spec: RemoteSpec) -> None:
        self.spec = spec

    def argv(self, command: str) -> list[str]:
        raise NotImplementedError

    def run(self, command: str, data: bytes | None = None,
            timeout: float = PROBE_TIMEOUT_S) -> str:
        """A remote shell command's output; RemoteError naming the reason if it fails."""
        argv = self.argv(command)
        try:
            res = subprocess.run(argv, input=data or b"", capture_output=True, timeout=timeout)
        except FileNotFoundError:
            raise RemoteError(f"{self.spec.name}: {argv[0]} is not installed",
                              "target") from None
        except subprocess.TimeoutExpired:
            raise RemoteError(f"{self.spec.name}: `{command}` gave no answer within "
                              f"{timeout:.0f} s", "target") from None
        if res.returncode != 0:
            err = res.stderr.decode(errors="replace").strip().splitlines()
            raise RemoteError(f"{self.spec.name}: {self.failure(res.returncode, err)}", "target")
        return res.stdout.decode(errors="replace")

    def failure(self, code: int, stderr: list[str]) -> str:
        tail = stderr[-1] if stderr else "no message"
        return f"remote command failed (exit status {code}: {tail})"

    def copy(self, local: Path, remote: str) -> None:
        raise NotImplementedError


class SshTransport(Transport):
    cache_dir = '"$HOME"/.cache/kbench'

    def argv(self, command: str) -> list[str]:
        s = self.spec
        dest = f"{s.user}@{s.host}" if s.user else s.host
        port = ["-p", str(s.port)] if s.port else []
        return [*_command("KBENCH_SSH", "ssh"), *SSH_OPTIONS, *port, dest, command]

    def failure(self, code: int, stderr: list[str]) -> str:
        tail = stderr[-1] if stderr else "no message"
        if code == 255:  # ssh's own failure: no connection, refused key, host unknown
            return f"cannot connect ({tail})"
        return super().failure(code, stderr)

    def copy(self, local: Path, remote: str) -> None:
        folder = remote.rsplit("/", 1)[0]
        tmp = f"{remote}.part.$$"
        self.run(f"mkdir -p {folder} && cat > {tmp} && chmod 755 {tmp} && mv -f {tmp} {remote}",
                 local.read_bytes(), COPY_TIMEOUT_S)


class AdbTransport(Transport):
    cache_dir = "/data/local/tmp/kbench"

    def _base(self) -> list[str]:
        serial = ["-s", self.spec.host] if self.spec.host else []
        return [*_command("KBENCH_ADB", "adb"), *serial]

    def argv(self, command: str) -> list[str]:
        # -T: no terminal, so the protocol's bytes pass through unchanged
        return [*self._base(), "shell", "-T", command]

    def copy(self, local: Path, remote: str) -> None:
        folder = remote.rsplit("/", 1)[0]
        self.run(f"mkdir -p {folder}")
        tmp = f"{remote}.part"
        argv = [*self._base(), "push", str(local), tmp]
        try:
            res = subprocess.run(argv, capture_output=True, timeout=COPY_TIMEOUT_S)
        except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
            raise RemoteError(f"{self.spec.name}: adb push failed ({exc})", "target") from None
        if res.returncode != 0:
            err = res.stderr.decode(errors="replace").strip().splitlines()
            raise RemoteError(f"{self.spec.name}: adb push failed "
                              f"({err[-1] if err else res.returncode})", "target")
        self.run(f"chmod 755 {tmp} && mv -f {tmp} {remote}")


def transport_for(spec: RemoteSpec) -> Transport:
    return SshTransport(spec) if spec.kind == "ssh" else AdbTransport(spec)


@dataclass(frozen=True)
class Deployment:
    arch: str  # the remote's `uname -m`
    worker: str  # the worker's path on the remote (shell syntax)
    copied: bool  # False: it was already cached there
    plugins: tuple[str, ...] = ()  # the plugins' absolute paths on the remote


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def deploy(transport: Transport, plugins: tuple[Path, ...] = ()) -> Deployment:
    """Makes sure the worker for the remote's architecture (and each plugin
    library) is in its cache: one round trip asks the architecture, the home
    folder and each cached copy's SHA-256 (a copy whose hash differs, e.g.
    cut short, is replaced; a remote without sha256sum is trusted by name).
    With plugins the worker is the dynamically linked one, which needs the
    remote's glibc (its /lib/ld-linux-aarch64.so.1) to load them."""
    name = transport.spec.name
    flavour = "aarch64-dyn" if plugins else "aarch64"
    local = Path(worker_binary(flavour))  # the worker builds kbench ships
    digest = _digest(local)
    files = [(local, digest, f"{transport.cache_dir}/kbench-worker-{flavour}-{digest[:16]}")]
    for plugin in plugins:
        if not plugin.is_file():
            raise InvalidArgument(f"{name}: plugin {plugin} is not a file", "plugin")
        d = _digest(plugin)
        files.append((plugin, d, f"{transport.cache_dir}/kbench-plugin-{d[:16]}-{plugin.name}"))
    probe = "uname -m; echo \"$HOME\"" + "".join(
        f"; if [ -f {remote} ]; then sha256sum {remote} 2>/dev/null || echo unknown; "
        "else echo missing; fi" for _, _, remote in files)
    lines = transport.run(probe).splitlines()
    arch = lines[0].strip() if lines else ""
    if ARCHES.get(arch) != "aarch64":
        raise RemoteError(f"{name}: no kbench worker for the remote architecture "
                          f"{arch or '(none reported)'} (kbench builds its workers for "
                          "aarch64 only)", "target")
    home = lines[1].strip() if len(lines) > 1 else ""
    copied = False
    for i, (path, want, remote) in enumerate(files):
        answer = lines[2 + i].split() if len(lines) > 2 + i else []
        state = answer[0] if answer else "missing"
        if state not in (want, "unknown"):
            transport.copy(path, remote)
            copied = copied or i == 0
    absolute = tuple(remote.replace('"$HOME"', home) for _, _, remote in files[1:])
    if any("$" in p for p in absolute):
        raise RemoteError(f"{name}: the remote did not say where its home folder is", "target")
    return Deployment(arch, files[0][2], copied, absolute)


class RemoteWorkerEngine(WorkerEngine):
    """A worker on a remote machine; deployed on first use, reconnected after a
    failure."""

    def __init__(self, spec: RemoteSpec, plugins: tuple[str, ...] = ()) -> None:
        super().__init__(WorkerSpec([], {}, emulated=spec.emulated, arch="aarch64"))
        self.remote = spec
        self.transport = transport_for(spec)
        self.deployment: Deployment | None = None
        # the local plugin files ({arch}: aarch64, the only remote architecture)
        self.local_plugins = tuple(Path(expand(os.path.abspath(p), "aarch64")) for p in plugins)
        self.plugins.requested = list(plugins)

    def _start(self) -> None:
        if self.deployment is None:
            self.deployment = deploy(self.transport, self.local_plugins)
        launch = f"exec {self.deployment.worker}"
        if self.remote.isa:
            launch = f"export KBENCH_ISA_CAP={self.remote.isa}; {launch}"
        self.spec.command = self.transport.argv(launch)
        self.spec.plugins = list(self.deployment.plugins)  # loaded from the remote's cache
        super()._start()
        self._set_length(self.remote.svl, self.set_svl, "streaming vector length", "an SVL")
        self._set_length(self.remote.vl, self.set_sve_vl, "SVE vector length",
                         "an SVE vector length")

    def _set_length(self, bits: int | None, setter: Callable[[int], int], what: str,
                    short: str) -> None:
        """Asks the started worker for a vector length (svl=, vl=); a worker
        that cannot, or runs at another, is killed and the target refused."""
        if not bits:
            return
        try:
            now = setter(bits)
        except KbenchError as exc:
            self.kill()
            raise RemoteError(f"{self.remote.name}: cannot set the {what} to {bits} bits "
                              f"({exc})", "target") from None
        if now != bits:
            self.kill()
            raise RemoteError(f"{self.remote.name}: asked for {short} of {bits} bits, the CPU "
                              f"runs at {now}", "target")

    def _died(self, during: str, timed_out: bool = False) -> WorkerCrashed:
        proc = self.proc
        base = super()._died(during, timed_out)  # waits for the transport process
        self.deployment = None  # look again: the remote may have been wiped or replaced
        code = proc.returncode if proc is not None else None
        detail = str(base).removeprefix("worker: ")
        if code == 255 and self.remote.kind == "ssh":
            what = "connection lost"
        elif code in (126, 127):
            what = "the worker cannot run there"
        else:
            what = "the worker died"
        err = RemoteError(f"{self.remote.name}: {what}: {detail}", "target")
        # a worker killed by a signal or after no reply is a fault of the code it ran;
        # an exit status is not (ssh and adb end with one when the connection or the
        # device goes away), nor a worker that cannot start there
        err.fault = base.fault if (what == "the worker died"
                                   and base.fault in ("crashed", "timed out")) else ""
        return err

    def info(self, name: str) -> TargetInfo:
        info = super().info(name)
        assert self.deployment is not None
        info.kind = self.remote.kind
        want = ARCHES.get(self.deployment.arch)
        if info.arch != want:
            self.kill()
            raise RemoteError(f"{self.remote.name}: the worker reports architecture "
                              f"{info.arch!r}, the remote's uname says "
                              f"{self.deployment.arch!r}", "target")
        info.extra = {**info.extra, "remote_arch": self.deployment.arch,
                      "remote_worker": self.deployment.worker,
                      "worker_copied": self.deployment.copied}
        return info


def remote_target_engine(spec: str, plugins: tuple[str, ...] = ()
                         ) -> tuple[str, RemoteWorkerEngine]:
    """(canonical name, engine) for an ssh: or adb: spec; plugins (local
    paths, {arch} allowed) are copied to the remote once and loaded there."""
    r = parse_remote(spec)
    return r.name, RemoteWorkerEngine(r, plugins)


__all__ = ["KbenchError", "RemoteError", "RemoteSpec", "RemoteWorkerEngine", "deploy",
           "parse_remote", "remote_target_engine"]
