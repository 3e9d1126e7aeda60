"""An emulated aarch64 machine behind a real login, for the remote-target
tests (stdlib only: it runs as sshd's ForceCommand and as a stand-in adb).

    kb_emulated_box.py login STATE   the login of the loopback sshd: runs
                                     $SSH_ORIGINAL_COMMAND on "the box"
    kb_emulated_box.py adb ARGS...   a stand-in adb: devices, push, shell
                                     against the folder $KBENCH_FAKE_ADB_ROOT

"The box" is this machine with two differences: `uname -m` answers the
architecture in STATE/box.json (aarch64 unless a test says otherwise), and
an aarch64 executable started with `exec PATH` (how kbench starts its
worker) runs under qemu-aarch64 with the -cpu in box.json, an aarch64 glibc
at /lib (box_root). box.json may
also hold emulate = false (aarch64 executables then fail to run, as on a
box of another architecture) and drop_after = N: the N-th request frame sent to a worker kills the
connection (the sshd process serving it, or the adb shell) before the
worker sees it, once (a marker file remembers it happened); until then each
worker connection that ends appends its request count to STATE/requests.log."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path

LAUNCH = re.compile(r"^(?:export KBENCH_ISA_CAP=(\w+); )?exec (\S+)$")
AARCH64_MACHINE = 183  # ELF e_machine
DEVICE_ROOT = "/data/local/tmp"


def is_aarch64_elf(path: Path) -> bool:
    try:
        head = path.read_bytes()[:20]
    except OSError:
        return False
    return head[:4] == b"\x7fELF" and struct.unpack("<H", head[18:20])[0] == AARCH64_MACHINE


def load_box(state: Path) -> dict:
    box = {"arch": "aarch64", "cpu": "max", "qemu": "qemu-aarch64"}
    path = state / "box.json"
    if path.exists():
        box.update(json.loads(path.read_text()))
    return box


def shim_path(state: Path, arch: str) -> str:
    """A folder with a `uname` that reports the box's architecture, first on PATH."""
    shims = state / "shims"
    shims.mkdir(exist_ok=True)
    uname = shims / "uname"
    uname.write_text(f'#!/bin/sh\nif [ "$1" = "-m" ]; then echo {arch}; '
                     'else exec /bin/uname "$@"; fi\n')
    uname.chmod(0o755)
    return f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}"


def kill_connection(mode: str) -> None:
    """ssh: SIGKILL the sshd process serving this login (the client sees the
    connection drop); adb: the stand-in itself is the connection."""
    if mode == "login":
        pid = os.getppid()
        while pid > 1:
            stat = Path(f"/proc/{pid}/stat").read_text()
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            if comm.startswith("sshd"):
                os.kill(pid, signal.SIGKILL)
                break
            pid = int(stat[stat.rindex(")") + 2:].split()[1])
    os._exit(255)


GLIBC = Path("/usr/aarch64-linux-gnu")  # the box's aarch64 glibc (libc6-arm64-cross)


def box_root(state: Path) -> Path:
    """The box's file system as the emulated worker sees it (qemu -L): STATE,
    with the aarch64 glibc at /lib, so a dynamically linked worker starts and
    loads plugins; the adb device's /data/local/tmp is STATE/data/local/tmp,
    and any other path falls through to this machine's."""
    lib = state / "lib"
    if not lib.exists() and (GLIBC / "lib").is_dir():
        lib.symlink_to(GLIBC / "lib")
    return state


def run_worker(box: dict, state: Path, path: Path, isa: str | None, mode: str) -> int:
    argv = [box["qemu"], "-L", str(box_root(state)), "-cpu", box["cpu"]]
    if isa:
        argv += ["-E", f"KBENCH_ISA_CAP={isa}"]
    argv.append(str(path))
    drop = int(box.get("drop_after", 0))
    marker = state / "dropped"
    if not drop or marker.exists():
        sys.stdout.flush()
        os.execv(argv[0], argv)
    child = subprocess.Popen(argv, stdin=subprocess.PIPE)
    assert child.stdin is not None
    inp = sys.stdin.buffer
    count = 0
    while True:
        head = inp.read(16)
        if len(head) < 16:
            break
        count += 1
        if count == drop:
            marker.write_text(f"dropped at request {count}\n")
            child.kill()
            kill_connection(mode)
        length = struct.unpack("<IIQ", head)[2]
        body = inp.read(length)
        child.stdin.write(head + body)
        child.stdin.flush()
    child.stdin.close()
    with open(state / "requests.log", "a") as log:  # for a test's failure message
        log.write(f"a worker connection ended after {count} request(s)\n")
    return child.wait()


def run_on_box(command: str, state: Path, mode: str, path_map: tuple[str, str] | None) -> int:
    box = load_box(state)
    if path_map:
        command = command.replace(*path_map)
    home = state / "home"  # the box's own home folder
    home.mkdir(exist_ok=True)
    env = dict(os.environ, PATH=shim_path(state, box["arch"]), HOME=str(home))
    launch = LAUNCH.match(command.strip())
    if launch and box.get("emulate", True):
        path = Path(launch.group(2).replace('"$HOME"', str(home)))
        if is_aarch64_elf(path):
            return run_worker(box, state, path, launch.group(1), mode)
    return subprocess.call(["/bin/sh", "-c", command], env=env)


def adb(args: list[str]) -> int:
    root = Path(os.environ["KBENCH_FAKE_ADB_ROOT"])
    serials = os.environ.get("KBENCH_FAKE_ADB_SERIALS", "emulator-5554").split()
    serial = None
    if args[:1] == ["-s"]:
        serial, args = args[1], args[2:]
    if args[:1] == ["devices"]:
        print("List of devices attached")
        for s in serials:
            print(f"{s}\tdevice")
        return 0
    if serial is None and len(serials) != 1:
        print("adb: more than one device/emulator", file=sys.stderr)
        return 1
    if serial is not None and serial not in serials:
        print(f"adb: device '{serial}' not found", file=sys.stderr)
        return 1
    device = root / (serial or serials[0])
    (device / DEVICE_ROOT.lstrip("/")).mkdir(parents=True, exist_ok=True)
    path_map = (DEVICE_ROOT, str(device) + DEVICE_ROOT)
    if args[:1] == ["push"] and len(args) == 3:
        dest = Path(args[2].replace(*path_map))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args[1], dest)
        print(f"{args[1]}: 1 file pushed.")
        return 0
    if args[:1] == ["shell"]:
        rest = [a for a in args[1:] if a not in ("-T", "-t", "-n")]
        return run_on_box(" ".join(rest), device, "adb", path_map)
    print(f"adb: unsupported command {' '.join(args)}", file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["login"]:
        return run_on_box(os.environ.get("SSH_ORIGINAL_COMMAND", ""), Path(argv[1]), "login",
                          None)
    if argv[:1] == ["adb"]:
        return adb(argv[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
