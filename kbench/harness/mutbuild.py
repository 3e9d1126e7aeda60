"""The scratch tree a mutation campaign works in, and the builds it needs.

The scratch tree is a copy of the repository's files (tracked and new ones,
as they are in the working tree), so mutants never touch the checkout. Its
suites run with PYTHONPATH pointing at it, so both the Python package and
the native builds are the scratch tree's.

Builds are incremental by content: every object file is cached under a key
made of its compiler command, its source and every header of native/, so a
mutant recompiles exactly the files it changes (and only for the builds
that contain them) and relinks what contains them:

    host            kbench/_native*.so: the cffi module of this machine
    host-worker     build/worker/host/kb_worker (worker:host; test_layout's nm)
    aarch64-worker  build/worker/aarch64/kb_worker (the qemu: targets)
    aarch64-pyext   build/pyext/aarch64/_kbench_native_aarch64*.so (qemu-python:)

Each artifact lands where the project's own build would put it, newer than
every source, so nothing inside the suites rebuilds it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from kbench.errors import KbenchError
from kbench.native import build as native_build
from kbench.targets import crossbuild, pyroot

ARTIFACTS = ("host", "host-worker", "aarch64-worker", "aarch64-pyext")
Say = Callable[[str], None]


class BuildError(KbenchError):
    """A compile or link command failed (the message holds its stderr)."""


def tracked_files(repo: Path) -> list[str]:
    """Files of the working tree that git tracks or would add (not ignored)."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise KbenchError(f"mutation: cannot list the files of {repo} with git: {exc}",
                          "repo") from exc
    return sorted({f for f in out.decode().split("\0") if f})


class ScratchTree:
    """A copy of the repository that mutants are applied to. Every write gets
    a new, later modification time (whole seconds, never reused), so neither
    a cached .pyc nor a build's staleness check can mistake a file for an
    earlier version of itself."""

    def __init__(self, repo: Path, path: Path) -> None:
        self.repo, self.path = Path(repo).resolve(), Path(path).resolve()
        self.clock = int(time.time())

    def create(self) -> int:
        if self.path.exists():
            shutil.rmtree(self.path)
        count = 0
        for rel in tracked_files(self.repo):
            src = self.repo / rel
            if not src.is_file() or rel.startswith(".tools/"):
                continue
            dst = self.path / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            shutil.copymode(src, dst)
            count += 1
        return count

    def tick(self) -> int:
        self.clock = max(int(time.time()), self.clock + 1)
        return self.clock

    def touched(self, paths: list[Path]) -> None:
        """Gives files just written a fresh modification time."""
        t = self.tick()
        for p in paths:
            os.utime(p, (t, t))

    def newest(self, paths: list[Path]) -> None:
        """Makes build outputs newer than every source written so far."""
        t = self.tick()
        for p in paths:
            os.utime(p, (t, t))

    def env(self, tools: Path, pyroot_home: Path | None = None) -> dict[str, str]:
        """The environment of a suite run inside the tree."""
        env = {k: v for k, v in os.environ.items()
               if k not in ("KBENCH_NATIVE", "KBENCH_WORKER", "PYTHONHOME", "PYTHONPATH")}
        env["PYTHONPATH"] = str(self.path)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["KBENCH_TOOLS"] = str(tools)
        env["KBENCH_NO_INSTALL"] = "1"
        if pyroot_home is not None:
            env["KBENCH_PYROOT"] = str(pyroot_home)
        return env


@dataclass(frozen=True)
class _Compile:
    src: Path
    cmd: tuple[str, ...]  # compiler and flags, without -c SRC -o OBJ
    name: str  # object name inside the build (for the project's obj/ folders)


def _sha(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()[:24]


class Builder:
    """Builds the scratch tree's artifacts from cached objects."""

    def __init__(self, tree: ScratchTree, cache: Path, tools: Path, say: Say,
                 jobs: int = 2) -> None:
        self.tree, self.cache, self.tools, self.say, self.jobs = tree, Path(cache), tools, say, jobs
        (self.cache / "objects").mkdir(parents=True, exist_ok=True)
        (self.cache / "artifacts").mkdir(parents=True, exist_ok=True)
        self.compiled = 0  # objects compiled (not from the cache) by the last ensure()

    # ---- what can be built here --------------------------------------------------

    def available(self) -> dict[str, str]:
        """Artifact -> '' if it can be built here, else why not."""
        out = dict.fromkeys(ARTIFACTS, "")
        if not shutil.which(crossbuild.toolchain_compiler("aarch64")):
            out["aarch64-worker"] = out["aarch64-pyext"] = \
                "clang-19 is missing (bash ci/install-toolchain.sh)"
        elif self.pyroot_home() is None:
            out["aarch64-pyext"] = "the emulated Python is not installed " \
                                   "(python -m kbench.targets.pyroot)"
        return out

    def pyroot_home(self) -> Path | None:
        home = self.tools / "aarch64-python"
        if os.environ.get("KBENCH_PYROOT"):
            home = Path(os.environ["KBENCH_PYROOT"])
        ok = (home / "root" / "usr" / "bin" / f"python{pyroot.PY_VERSION}").exists() and \
            (home / "manifest.json").exists()
        return home if ok else None

    @property
    def scratch_pyroot(self) -> Path:
        return self.cache / "pyroot"

    # ---- sources and commands -----------------------------------------------------

    def _native(self) -> Path:
        return self.tree.path / "native"

    def _sources(self) -> list[Path]:
        return sorted((self._native() / "src").rglob("*.c"))

    def _isa(self, src: Path) -> str:
        # classification by path parts only (the same rule as the project's build)
        return native_build.isa_class(native_build.NATIVE / src.relative_to(self._native()))

    def _headers_key(self) -> str:
        parts: list[bytes | str] = []
        for h in sorted(self._native().rglob("*.h")):
            parts += [str(h.relative_to(self._native())), h.read_bytes()]
        return _sha(*parts)

    def _obj_name(self, src: Path) -> str:
        return str(src.relative_to(self._native())).replace("/", "_")[:-2]

    def _wrapper(self, module: str) -> Path:
        """The C source cffi emits for a module name (cached by header and build script)."""
        header = self._native() / "include" / "kbench.h"
        script = self.tree.path / "kbench" / "native" / "build.py"
        key = _sha(module, header.read_bytes(), script.read_bytes())
        out = self.cache / "objects" / f"wrapper-{key}.c"
        if not out.exists():
            code = ("import sys; from kbench.native.build import make_ffibuilder; "
                    "make_ffibuilder(module=sys.argv[1], absolute=True).emit_c_code(sys.argv[2])")
            tmp = out.with_suffix(".tmp.c")
            self._run([sys.executable, "-c", code, module, str(tmp)], "generating the cffi C",
                      env=self.tree.env(self.tools))
            tmp.replace(out)
        return out

    def _jobs(self, kind: str) -> tuple[list[_Compile], list[str]]:
        """(compile jobs, link command prefix) of an artifact."""
        inc = f"-I{self._native() / 'include'}"
        if kind == "host":
            cc = (sysconfig.get_config_var("CC") or "cc").split()
            flags = [*cc, *native_build.C_FLAGS, "-fPIC", inc]
            jobs = [_Compile(s, tuple(flags), self._obj_name(s)) for s in self._sources()
                    if self._isa(s) == "core"]
            py_inc = f"-I{sysconfig.get_paths()['include']}"
            jobs.append(_Compile(self._wrapper("kbench._native"), (*flags, py_inc), "wrapper"))
            return jobs, [*cc, "-shared", "-pthread"]
        if kind in ("host-worker", "aarch64-worker"):
            arch = "host" if kind == "host-worker" else "aarch64"
            tc = crossbuild.toolchain(arch)
            common = [f for f in crossbuild.COMMON if not f.startswith("-I")]
            common += [inc, f"-I{self._native() / 'worker'}"]
            srcs = [s for s in self._sources() if arch == "aarch64" or self._isa(s) == "core"]
            srcs += sorted((self._native() / "worker").glob("*.c"))
            # the worker's own defines too (the static one wraps the allocator: KB_HEAP_WRAP)
            jobs = [_Compile(s, (*tc.cc, *common, *tc.defines,
                                 *(native_build.ISA_FLAGS[self._isa(s)]
                                   if arch == "aarch64" and s.parent.name != "worker" else [])),
                             self._obj_name(s)) for s in srcs]
            return jobs, [*tc.cc, *tc.link]
        if kind == "aarch64-pyext":
            cc = crossbuild.toolchain("aarch64").cc
            home = self.pyroot_home()
            assert home is not None
            root = home / "root"
            py_inc = [f"-I{root / 'usr' / 'include' / f'python{pyroot.PY_VERSION}'}",
                      f"-I{root / 'usr' / 'include'}"]
            base = [*cc, *native_build.C_FLAGS, "-fPIC"]
            jobs = [_Compile(s, (*base, *native_build.ISA_FLAGS[self._isa(s)], inc),
                             self._obj_name(s)) for s in self._sources()]
            jobs.append(_Compile(self._wrapper(pyroot.NATIVE_MODULE),
                                 (*base, *native_build.ISA_FLAGS["core"], inc, *py_inc),
                                 "wrapper"))
            return jobs, [*cc, "-shared", "-fuse-ld=lld", "-pthread"]
        raise BuildError(f"mutation: unknown build {kind!r}", "build")

    def _outputs(self, kind: str) -> list[Path]:
        t = self.tree.path
        if kind == "host":
            return [t / "kbench" / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"]
        if kind == "host-worker":
            return [t / "build" / "worker" / "host" / "kb_worker"]
        if kind == "aarch64-worker":
            return [t / "build" / "worker" / "aarch64" / "kb_worker"]
        return [t / "build" / "pyext" / "aarch64" / (pyroot.NATIVE_MODULE + pyroot.EXT_SUFFIX)]

    # ---- building -----------------------------------------------------------------

    def _run(self, cmd: list[str], what: str, env: dict[str, str] | None = None) -> None:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if res.returncode != 0:
            raise BuildError(f"mutation build: {what} failed: {' '.join(cmd[:4])} ...\n"
                             f"{res.stderr.strip()[-3000:]}", "build")

    def _object(self, job: _Compile, headers: str) -> Path:
        key = _sha(" ".join(job.cmd), str(job.src.relative_to(self.tree.path))
                   if job.src.is_relative_to(self.tree.path) else job.src.name,
                   job.src.read_bytes(), headers)
        obj = self.cache / "objects" / f"{key}.o"
        if not obj.exists():
            tmp = obj.with_suffix(f".{os.getpid()}.tmp.o")
            self._run([*job.cmd, "-c", str(job.src), "-o", str(tmp)], f"compiling {job.src.name}")
            tmp.replace(obj)
            self.compiled += 1
        return obj

    def ensure(self, kinds: list[str]) -> list[str]:
        """Builds (or takes from the cache) every artifact in kinds and puts it
        in place; returns the artifacts that had to be linked anew."""
        self.compiled = 0
        headers = self._headers_key()
        linked = []
        for kind in kinds:
            jobs, link = self._jobs(kind)
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                objects = list(pool.map(lambda j: self._object(j, headers), jobs))
            key = _sha(kind, " ".join(link), *(o.name for o in objects))
            art = self.cache / "artifacts" / f"{kind}-{key}"
            if not art.exists():
                tmp = art.with_suffix(".tmp")
                self._run([*link, *map(str, objects), "-lm", "-o", str(tmp)], f"linking {kind}")
                tmp.replace(art)
                linked.append(kind)
            outs = self._outputs(kind)
            for out in outs:
                out.parent.mkdir(parents=True, exist_ok=True)
                tmp = out.with_name(out.name + ".tmp")
                shutil.copyfile(art, tmp)
                os.chmod(tmp, 0o755)
                tmp.replace(out)
            placed = list(outs)
            if kind.endswith("worker"):  # the project's obj/ folder (suites/test_layout.py)
                objdir = outs[0].parent / "obj"
                objdir.mkdir(exist_ok=True)
                for job, obj in zip(jobs, objects, strict=True):
                    dst = objdir / f"{job.name}.o"
                    shutil.copyfile(obj, dst)
                    placed.append(dst)
            if kind == "aarch64-pyext":
                stamp = outs[0].with_suffix(".json")
                stamp.write_text(json.dumps({"cffi": pyroot._host_version("cffi")}) + "\n")
                placed.append(stamp)
            self.tree.newest(placed)
            if kind == "aarch64-pyext":
                self._scratch_pyroot()
        return linked

    def _scratch_pyroot(self) -> None:
        """A pyroot home for the scratch tree: the installed root, site and apt
        folders (linked, never written), its own pycache and a manifest whose
        guest check names the scratch tree's extension (the real install's
        manifest is not touched)."""
        home = self.pyroot_home()
        assert home is not None
        mine = self.scratch_pyroot
        mine.mkdir(parents=True, exist_ok=True)
        for part in ("root", "site", "apt"):
            link = mine / part
            if not link.exists():
                link.symlink_to(home / part, target_is_directory=True)
        manifest = json.loads((home / "manifest.json").read_text())
        (mine / "manifest.json").write_text(json.dumps(manifest))
        code = ("from kbench.targets import pyroot; import json; "
                "m = pyroot.read_manifest(); print(pyroot._state_key(m))")
        env = self.tree.env(self.tools, mine)
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, cwd=self.tree.path)
        if res.returncode != 0:
            raise BuildError(f"mutation: the scratch pyroot key: {res.stderr.strip()}", "pyroot")
        manifest["verified"] = {**manifest.get("verified", {}), "key": res.stdout.strip(),
                                "note": "mutation scratch tree: the suites import it"}
        (mine / "manifest.json").write_text(json.dumps(manifest, indent=1))
