"""Builds the worker: the native library plus native/worker as a static
executable, for this machine (gcc/cc) or cross-compiled for aarch64 with
clang-19. Files of each ISA get their own -march flags so that NEON FP16
and SME/SME2 code live in one binary and are chosen at run time.

    python -m kbench.targets.crossbuild [--arch aarch64|host] [--force]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kbench.errors import KbenchError
from kbench.native.build import ISA_FLAGS, isa_class

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
BUILD = ROOT / "build" / "worker"
COMMON = ["-std=c11", "-O2", "-fno-fast-math", "-Wall", "-Wextra",
          f"-I{NATIVE / 'include'}", f"-I{NATIVE / 'worker'}"]


@dataclass(frozen=True)
class Toolchain:
    arch: str
    cc: list[str]
    link: list[str]

    @property
    def output(self) -> Path:
        return BUILD / self.arch / "kb_worker"


def toolchain_compiler(arch: str) -> str:
    """The C compiler for an architecture (it may not be installed)."""
    if arch == "aarch64":
        return os.environ.get("KBENCH_CLANG") or shutil.which("clang-19") or "clang-19"
    return os.environ.get("CC", "cc")


def toolchain(arch: str) -> Toolchain:
    if arch == "host":
        return Toolchain("host", [toolchain_compiler("host")], ["-pthread"])
    if arch == "aarch64":
        clang = toolchain_compiler("aarch64")
        if not shutil.which(clang):
            raise KbenchError("clang-19 is missing: run `bash ci/install-toolchain.sh` first",
                              "toolchain")
        return Toolchain("aarch64", [clang, "--target=aarch64-linux-gnu"],
                         ["-static", "-fuse-ld=lld", "-pthread"])
    raise KbenchError(f"arch: {arch!r} is not host or aarch64", "arch")


def isa_flags(path: Path, arch: str) -> list[str]:
    """Per-file ISA flags (kbench/_build.py holds the table)."""
    if arch != "aarch64":
        return []
    return ISA_FLAGS[isa_class(path)]


def sources(arch: str) -> list[Path]:
    lib = [p for p in sorted((NATIVE / "src").rglob("*.c"))
           if arch == "aarch64" or isa_class(p) == "core"]
    return lib + sorted((NATIVE / "worker").glob("*.c"))


def _stale(out: Path) -> bool:
    if not out.exists():
        return True
    newest = max(p.stat().st_mtime for p in [*NATIVE.rglob("*.c"), *NATIVE.rglob("*.h")])
    return newest > out.stat().st_mtime


def object_path(src: Path, out: Path) -> Path:
    """Where the object of a source file of the worker `out` is built."""
    return out.parent / "obj" / (str(src.relative_to(NATIVE)).replace("/", "_")[:-2] + ".o")


@contextmanager
def _build_lock(folder: Path) -> Iterator[None]:
    """Holds an exclusive lock on the build folder: processes that find the
    worker stale at once (several `kbench run`s starting together) build it
    one after another, never into the same object files."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".build.lock", "a") as fh:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def build(arch: str = "aarch64", force: bool = False, quiet: bool = True) -> Path:
    """Builds (if stale) and returns the worker executable."""
    tc = toolchain(arch)
    out = tc.output
    if not force and not _stale(out):
        return out
    with _build_lock(out.parent):
        if not force and not _stale(out):  # another process built it while we waited
            return out
        objdir = out.parent / "obj"
        objdir.mkdir(parents=True, exist_ok=True)
        objects = []
        for src in sources(arch):
            obj = object_path(src, out)
            cmd = [*tc.cc, *COMMON, *isa_flags(src, arch), "-c", str(src), "-o", str(obj)]
            _run(cmd, quiet)
            objects.append(str(obj))
        tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
        _run([*tc.cc, *tc.link, *objects, "-o", str(tmp)], quiet)
        tmp.replace(out)
    return out


def _run(cmd: list[str], quiet: bool) -> None:
    if not quiet:
        print(" ".join(cmd), file=sys.stderr)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise KbenchError(f"build: {' '.join(cmd[:3])} ... failed:\n{res.stderr.strip()}", "build")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="aarch64", choices=["aarch64", "host"])
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    try:
        path = build(args.arch, args.force, quiet=not args.verbose)
    except KbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
