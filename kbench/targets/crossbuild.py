"""Builds the worker: the native library plus native/worker as a static
executable, for this machine (gcc/cc) or cross-compiled for aarch64 with
clang-19. Files of each ISA get their own -march flags so that NEON FP16
and SME/SME2 code live in one binary and are chosen at run time.

Plugins need a worker that can dlopen a shared library. The static aarch64
worker cannot (glibc's dlopen in a static executable needs the very shared
libraries it avoids), so it is built without dlopen (-DKB_NO_DLOPEN: it
refuses plugins with a clear error) and a second variant, `aarch64-dyn`, is
linked dynamically against the cross sysroot's glibc (libc6-dev-arm64-cross,
/usr/aarch64-linux-gnu); qemu targets with plugins run it as
`qemu-aarch64 -L /usr/aarch64-linux-gnu ...`. The host worker is dynamic.

    python -m kbench.targets.crossbuild [--arch aarch64|aarch64-dyn|host] [--force]
    python -m kbench.targets.crossbuild --extra-insns N    # test only: the count knob
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


ARCHES = ("aarch64", "aarch64-dyn", "host")
# The static worker's heap accounting (native/worker/kb_heap.c) wraps the allocator at link
# time: every reference to these functions, libc.a's own included, goes through it. The
# dynamically linked workers interpose them instead (their definitions come first).
HEAP_FUNCTIONS = ("malloc", "free", "calloc", "realloc", "reallocarray", "memalign",
                  "aligned_alloc", "posix_memalign", "valloc", "pvalloc", "malloc_usable_size")
HEAP_WRAP = ["-Wl," + ",".join(f"--wrap={f}" for f in HEAP_FUNCTIONS)]
SYSROOT_AARCH64 = Path("/usr/aarch64-linux-gnu")  # libc6-dev-arm64-cross: ld.so and libc


@dataclass(frozen=True)
class Toolchain:
    arch: str
    cc: list[str]
    link: list[str]
    defines: tuple[str, ...] = ()  # extra -D flags for every file

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
        return Toolchain("host", [toolchain_compiler("host")], ["-pthread", "-ldl"])
    if arch in ("aarch64", "aarch64-dyn"):
        clang = toolchain_compiler("aarch64")
        if not shutil.which(clang):
            raise KbenchError("clang-19 is missing: run `bash ci/install-toolchain.sh` first",
                              "toolchain")
        if arch == "aarch64":
            return Toolchain("aarch64", [clang, "--target=aarch64-linux-gnu"],
                             ["-static", "-fuse-ld=lld", "-pthread", *HEAP_WRAP],
                             ("-DKB_NO_DLOPEN", "-DKB_HEAP_WRAP"))
        if not (SYSROOT_AARCH64 / "lib" / "ld-linux-aarch64.so.1").exists():
            raise KbenchError(f"the aarch64 sysroot ({SYSROOT_AARCH64}) has no dynamic loader: "
                              "run `bash ci/install-toolchain.sh` first", "toolchain")
        return Toolchain("aarch64-dyn", [clang, "--target=aarch64-linux-gnu"],
                         ["-fuse-ld=lld", "-pthread"])
    raise KbenchError(f"arch: {arch!r} is not one of {', '.join(ARCHES)}", "arch")


def isa_flags(path: Path, arch: str) -> list[str]:
    """Per-file ISA flags (kbench/_build.py holds the table)."""
    if not arch.startswith("aarch64"):
        return []
    return ISA_FLAGS[isa_class(path)]


def sources(arch: str) -> list[Path]:
    lib = [p for p in sorted((NATIVE / "src").rglob("*.c"))
           if arch.startswith("aarch64") or isa_class(p) == "core"]
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
            cmd = [*tc.cc, *COMMON, *tc.defines, *isa_flags(src, arch), "-c", str(src), "-o",
                   str(obj)]
            _run(cmd, quiet)
            objects.append(str(obj))
        _link(tc, objects, out, [], quiet)
    return out


def _link(tc: Toolchain, objects: list[str], out: Path, extra: list[str], quiet: bool) -> None:
    """Links the worker, with a linker map beside it (kb_worker.map: where each
    object's code went, read by the instruction counter); both appear at once."""
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    tmp_map = out.with_name(f"{out.name}.map.tmp{os.getpid()}")
    _run([*tc.cc, *tc.link, *extra, *objects, f"-Wl,-Map,{tmp_map}", "-o", str(tmp)], quiet)
    tmp_map.replace(out.with_suffix(".map"))
    tmp.replace(out)


KNOB_SOURCE = NATIVE / "test" / "kb_test_extra_insns.S"


def extra_insns(iterations: int) -> int:
    """Instructions the test knob adds to every SME MOPA GEMM driver call."""
    return 2 * iterations + 2


def build_extra_insns(iterations: int, quiet: bool = True) -> Path:
    """TEST ONLY: the aarch64 worker with the deterministic instruction knob:
    the production objects, plus native/test/kb_test_extra_insns.S wrapped
    around kb_sme_gemm_mopa_run (extra_insns(iterations) more instructions per
    driver call). Built into build/worker/aarch64-extra<iterations>/."""
    if not 1 <= iterations <= 65535:
        raise KbenchError(f"iterations: {iterations} is not in 1..65535", "iterations")
    tc = toolchain("aarch64")
    base = build("aarch64", quiet=quiet)
    out = BUILD / f"aarch64-extra{iterations}" / "kb_worker"
    with _build_lock(out.parent):
        if out.exists() and out.stat().st_mtime >= max(base.stat().st_mtime,
                                                        KNOB_SOURCE.stat().st_mtime):
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        knob = out.parent / "kb_test_extra_insns.o"
        _run([*tc.cc, f"-DKB_EXTRA_ITERS={iterations}", "-c", str(KNOB_SOURCE), "-o",
              str(knob)], quiet)
        objects = [str(object_path(src, base)) for src in sources("aarch64")]
        _link(tc, [*objects, str(knob)], out, ["-Wl,--wrap=kb_sme_gemm_mopa_run"], quiet)
    return out


TEST_PROGRAMS = ("kb_test_checksum",)


def build_test_program(name: str, quiet: bool = True) -> Path:
    """TEST ONLY: native/test/<name>.c linked with the library's aarch64
    objects (not the worker's) into build/worker/aarch64-test/<name>."""
    if name not in TEST_PROGRAMS:
        raise KbenchError(f"test program {name!r} is not one of {', '.join(TEST_PROGRAMS)}",
                          "program")
    tc = toolchain("aarch64")
    base = build("aarch64", quiet=quiet)
    src = NATIVE / "test" / f"{name}.c"
    out = BUILD / "aarch64-test" / name
    with _build_lock(out.parent):
        if out.exists() and out.stat().st_mtime >= max(base.stat().st_mtime,
                                                        src.stat().st_mtime):
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        obj = out.parent / f"{name}.o"
        _run([*tc.cc, *COMMON, *tc.defines, *ISA_FLAGS["core"], "-c", str(src), "-o", str(obj)],
             quiet)
        lib = [str(object_path(p, base)) for p in sources("aarch64")
               if p.parent != NATIVE / "worker"]
        # not a worker: its allocator is glibc's own, unwrapped (kb_heap.c is the worker's)
        plain = Toolchain(tc.arch, tc.cc, [f for f in tc.link if f not in HEAP_WRAP], tc.defines)
        _link(plain, [*lib, str(obj)], out, [], quiet)
    return out


def _run(cmd: list[str], quiet: bool) -> None:
    if not quiet:
        print(" ".join(cmd), file=sys.stderr)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise KbenchError(f"build: {' '.join(cmd[:3])} ... failed:\n{res.stderr.strip()}", "build")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="aarch64", choices=list(ARCHES))
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--extra-insns", type=int, default=0, metavar="ITERATIONS",
                    help="TEST ONLY: build the aarch64 worker whose SME MOPA GEMM driver runs "
                         "2 * ITERATIONS + 2 extra instructions per call (the count gate's knob)")
    args = ap.parse_args(argv)
    try:
        if args.extra_insns:
            print(build_extra_insns(args.extra_insns, quiet=not args.verbose))
            return 0
        path = build(args.arch, args.force, quiet=not args.verbose)
    except KbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
