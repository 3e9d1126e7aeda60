"""An emulated aarch64 CPython that runs kbench in process under qemu-aarch64.

Debian bookworm's arm64 CPython 3.11 (its .debs unpacked into a folder that
qemu-aarch64 takes as its sysroot, `-L ROOT`), aarch64 wheels from PyPI
(numpy, cffi, onnx, onnxruntime and their dependencies, pinned to the
versions of the host's Python where it has them) and kbench's cffi module
cross-compiled for aarch64 as a separate top-level module, loaded through
KBENCH_NATIVE. `ensure()` installs what is missing (idempotent; a second
call reads the manifest and touches no network); `status()` says whether
it is all there.

    python -m kbench.targets.pyroot [--force] [--check] [--home DIR] [-- GUEST-PYTHON-ARGS...]

Install folder: $KBENCH_PYROOT, default aarch64-python in the tools folder
($KBENCH_TOOLS, default <repo>/.tools): root/, site/, apt/, pycache/ (the
guest's .pyc files) and manifest.json (package versions, host pins, the
guest check). The extension goes to <repo>/build/pyext/aarch64.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from kbench.errors import KbenchError

REPO = Path(__file__).resolve().parents[2]
NATIVE = REPO / "native"
DEFAULT_HOME = REPO / ".tools" / "aarch64-python"
EXT_DIR = REPO / "build" / "pyext" / "aarch64"
NATIVE_MODULE = "_kbench_native_aarch64"
PY_VERSION = "3.11"
EXT_SUFFIX = ".cpython-311-aarch64-linux-gnu.so"
FORMAT = 1  # bump to force a reinstall after a change of layout

# The arm64 packages CPython 3.11 needs at run time (found by running it);
# HEADER_DEB is unpacked for its include/ folder only (the extension build).
RUNTIME_DEBS = (
    "python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib", "libc6",
    "libgcc-s1", "libstdc++6", "zlib1g", "libexpat1", "libffi8", "libssl3", "libbz2-1.0",
    "liblzma5", "libsqlite3-0", "libncursesw6", "libtinfo6", "libreadline8", "libuuid1",
    "libcrypt1", "libdb5.3", "libnsl2", "libtirpc3", "libgssapi-krb5-2", "libkrb5-3",
    "libk5crypto3", "libcom-err2", "libkrb5support0", "libkeyutils1",
)
HEADER_DEB = "libpython3.11-dev"
DEBS = (*RUNTIME_DEBS, HEADER_DEB)
SUITE = "bookworm"
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")

# What the guest imports: kbench.native, kbench.targets.inprocess, kbench.peers need these (and
# their runtime dependencies, which pip resolves for the aarch64 platform).
GUEST_DISTS = ("numpy", "cffi", "onnx", "onnxruntime")
WHEEL_PLATFORMS = ("manylinux_2_28_aarch64", "manylinux2014_aarch64", "manylinux_2_17_aarch64")

# Variables of the host's environment that must not reach the guest.
GUEST_ENV_DROP = frozenset({
    "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONEXECUTABLE",
    "PYTHONPLATLIBDIR", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "__PYVENV_LAUNCHER__", "LD_PRELOAD",
    "LD_LIBRARY_PATH", "KBENCH_NATIVE",
})

Progress = Callable[[str], None]


@dataclass(frozen=True)
class PyRoot:
    """An installed emulated Python: how to start it and with what environment."""

    root: Path  # unpacked arm64 debs (sysroot for qemu -L)
    site: Path  # unzipped aarch64 wheels
    ext_dir: Path  # folder holding the aarch64 cffi module
    native_module: str  # its module name, for KBENCH_NATIVE

    @property
    def python(self) -> Path:
        return self.root / "usr" / "bin" / f"python{PY_VERSION}"

    @property
    def pycache(self) -> Path:
        """The guest's PYTHONPYCACHEPREFIX: its .pyc files never land beside the sources."""
        return self.root.parent / "pycache"

    def argv(self, qemu: str, cpu: str = "max", extra: list[str] | None = None) -> list[str]:
        """qemu-aarch64 -cpu CPU -L ROOT ROOT/usr/bin/python3.11 <extra...>"""
        return [qemu, "-cpu", cpu, "-L", str(self.root), str(self.python), *(extra or [])]

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """A clean environment for the guest: PYTHONPATH = repo root, ext_dir, site;
        KBENCH_NATIVE; no host PYTHONHOME/VIRTUAL_ENV/LD_*/QEMU_* leaking; no user
        site; a separate pycache prefix so guest and host .pyc files do not fight."""
        src = dict(os.environ if base is None else base)
        out = {k: v for k, v in src.items()
               if k not in GUEST_ENV_DROP and not k.startswith("QEMU_")}
        out["PYTHONPATH"] = os.pathsep.join(str(p) for p in (REPO, self.ext_dir, self.site))
        out["KBENCH_NATIVE"] = self.native_module
        out["PYTHONNOUSERSITE"] = "1"
        out["PYTHONPYCACHEPREFIX"] = str(self.pycache)
        return out


# ---- locations and the manifest -------------------------------------------------


def home_dir(home: Path | None = None) -> Path:
    """The install folder: `home`, else $KBENCH_PYROOT, else aarch64-python in
    the tools folder ($KBENCH_TOOLS, default <repo>/.tools)."""
    if home is not None:
        return Path(home).resolve()
    if os.environ.get("KBENCH_PYROOT"):
        return Path(os.environ["KBENCH_PYROOT"]).resolve()
    if os.environ.get("KBENCH_TOOLS"):
        return Path(os.environ["KBENCH_TOOLS"]).resolve() / "aarch64-python"
    return DEFAULT_HOME


def layout(home: Path | None = None) -> PyRoot:
    h = home_dir(home)
    return PyRoot(root=h / "root", site=h / "site", ext_dir=EXT_DIR, native_module=NATIVE_MODULE)


def ext_path() -> Path:
    return EXT_DIR / (NATIVE_MODULE + EXT_SUFFIX)


def _manifest_path(home: Path) -> Path:
    return home / "manifest.json"


def read_manifest(home: Path | None = None) -> dict[str, Any]:
    """The manifest of an install ({} when there is none or it cannot be read)."""
    try:
        data = json.loads(_manifest_path(home_dir(home)).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == FORMAT else {}


def _write_manifest(home: Path, manifest: dict[str, Any]) -> None:
    path = _manifest_path(home)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**manifest, "format": FORMAT}, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ---- host pins ------------------------------------------------------------------


def _requirement_names(dist: metadata.Distribution) -> list[str]:
    """Names a distribution needs at run time (extras left out)."""
    names = []
    for req in dist.requires or []:
        name, _, marker = req.partition(";")
        if "extra" in marker:
            continue
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", name)
        if m:
            names.append(_canon(m.group(1)))
    return names


def host_pins(roots: tuple[str, ...] = GUEST_DISTS) -> dict[str, str | None]:
    """The host's versions of `roots` and their run-time dependencies (None where
    the host lacks one): the guest gets the same versions."""
    pins: dict[str, str | None] = {}
    todo = [_canon(r) for r in roots]
    while todo:
        name = todo.pop(0)
        if name in pins:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pins[name] = None
            continue
        pins[name] = dist.version
        todo += _requirement_names(dist)
    return dict(sorted(pins.items()))


# ---- status ---------------------------------------------------------------------


def _native_inputs() -> list[Path]:
    files = [*NATIVE.rglob("*.c"), *NATIVE.rglob("*.h")]
    return [*files, REPO / "kbench" / "native" / "build.py"]


def ext_stale_reason() -> str | None:
    """Why the aarch64 extension must be (re)built, or None if it is current."""
    out = ext_path()
    if not out.exists():
        return f"the aarch64 extension {out} is not built"
    newest = max(_native_inputs(), key=lambda p: p.stat().st_mtime_ns)
    if newest.stat().st_mtime_ns > out.stat().st_mtime_ns:
        return f"the aarch64 extension is older than {newest.relative_to(REPO)}"
    stamp = _read_json(out.with_suffix(".json"))
    cffi = _host_version("cffi")
    if stamp.get("cffi") != cffi:
        return f"the aarch64 extension was generated by cffi {stamp.get('cffi')}, host has {cffi}"
    return None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _host_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _debs_reason(pr: PyRoot, manifest: dict[str, Any]) -> str | None:
    if not pr.python.exists():
        return f"no emulated Python at {pr.python}"
    if not manifest:
        return f"no readable manifest in {pr.root.parent}"
    missing = sorted(set(DEBS) - set(manifest.get("debs", {})))
    if missing:
        return f"the root lacks {', '.join(missing)}"
    return None


def _wheels_reason(pr: PyRoot, manifest: dict[str, Any]) -> str | None:
    if not pr.site.is_dir() or "pins" not in manifest:
        return f"no guest packages in {pr.site}"
    pins, wanted = manifest["pins"], host_pins()
    for name in sorted(set(pins) | set(wanted)):
        if pins.get(name) != wanted.get(name):
            return (f"guest packages were pinned to {name} {pins.get(name)}, "
                    f"the host now has {wanted.get(name)}")
    return None


def _state_key(manifest: dict[str, Any]) -> str:
    out = ext_path()
    mtime = out.stat().st_mtime_ns if out.exists() else 0
    text = json.dumps([manifest.get("debs"), manifest.get("wheels"), mtime], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _verify_reason(manifest: dict[str, Any]) -> str | None:
    if manifest.get("verified", {}).get("key") != _state_key(manifest):
        return "the install has not been checked in the guest since it last changed"
    return None


def _problems(pr: PyRoot, manifest: dict[str, Any]) -> list[str]:
    """The first problem of each stage that is not complete."""
    reasons = [_debs_reason(pr, manifest)]
    if reasons[0] and not pr.python.exists():
        return [r for r in reasons if r]
    reasons += [_wheels_reason(pr, manifest), ext_stale_reason()]
    if not any(reasons):
        reasons.append(_verify_reason(manifest))
    return [r for r in reasons if r]


def status(home: Path | None = None) -> tuple[PyRoot | None, str]:
    """(PyRoot, summary) when the emulated Python is installed and current,
    else (None, reason). Reads files only: no network, no guest run."""
    pr = layout(home)
    manifest = read_manifest(home)
    problems = _problems(pr, manifest)
    if problems:
        return None, (f"{'; '.join(problems)}: run `python -m kbench.targets.pyroot` "
                      "(or bash ci/install-pyroot.sh)")
    wheels = manifest.get("wheels", {})
    shown = ", ".join(f"{n} {wheels[n]}" for n in GUEST_DISTS if n in wheels)
    return pr, f"CPython {manifest.get('python', '?')} (arm64) in {pr.root.parent}; {shown}"


# ---- running things -----------------------------------------------------------


def _run(cmd: list[str], what: str, retries: int = 0, timeout: float = 900,
         **kw: Any) -> subprocess.CompletedProcess[str]:
    """Runs a command (retrying a failure `retries` times); KbenchError naming
    `what` and the command's last lines of output when it still fails."""
    for attempt in range(retries + 1):
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
        except FileNotFoundError as exc:
            raise KbenchError(f"{what}: {cmd[0]} not found ({exc})", "pyroot") from exc
        except subprocess.TimeoutExpired as exc:
            res = subprocess.CompletedProcess(cmd, -1, "", f"timed out after {exc.timeout} s")
        if res.returncode == 0:
            return res
        if attempt < retries:
            time.sleep(3)
    tail = "\n".join((res.stderr or res.stdout).strip().splitlines()[-15:])
    raise KbenchError(f"{what} failed (exit {res.returncode}, {retries + 1} attempt(s)): "
                      f"{' '.join(cmd[:4])} ...\n{tail}", "pyroot")


def _need_tool(name: str, hint: str) -> str:
    found = shutil.which(name)
    if not found:
        raise KbenchError(f"{name} is missing: {hint}", "pyroot")
    return found


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    """Serialises installs into one folder (two CI jobs may call ensure at once)."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _replace_dir(tmp: Path, final: Path) -> None:
    if final.exists():
        shutil.rmtree(final)
    tmp.replace(final)


# ---- stage 1: the arm64 debs ------------------------------------------------------


def _mirrors() -> tuple[str, str]:
    """The Debian and Debian security mirrors the machine uses (defaults:
    deb.debian.org)."""
    text = ""
    for path in [Path("/etc/apt/sources.list"), *Path("/etc/apt/sources.list.d").glob("*")]:
        with contextlib.suppress(OSError):
            text += "\n".join(line.split("#")[0] for line in path.read_text().splitlines()) + "\n"
    urls = [u.rstrip("/") for u in re.findall(r"https?://[^\s\]]+", text)]
    main = next((u for u in urls if u.endswith("/debian")), "http://deb.debian.org/debian")
    security = next((u for u in urls if u.endswith("/debian-security")),
                    "http://deb.debian.org/debian-security")
    return main, security


def _apt_options(apt: Path) -> list[str]:
    opts = {
        "Dir::Etc::SourceList": apt / "sources.list", "Dir::Etc::SourceParts": "/dev/null",
        "Dir::Etc::Preferences": "/dev/null", "Dir::Etc::PreferencesParts": "/dev/null",
        "Dir::State::Lists": apt / "lists", "Dir::State::status": apt / "state" / "status",
        "Dir::Cache": apt / "cache", "Dir::Cache::archives": apt / "archives",
        "APT::Architecture": "arm64", "APT::Architectures::": "arm64",
        "APT::Sandbox::User": "root",
    }
    return [x for k, v in opts.items() for x in ("-o", f"{k}={v}")]


def _apt_setup(apt: Path) -> list[str]:
    """A private apt configuration for bookworm arm64 (the machine's apt
    sources and state are not touched)."""
    if not KEYRING.exists():
        raise KbenchError(f"{KEYRING} is missing: apt-get install debian-archive-keyring",
                          "pyroot")
    for d in ("lists/partial", "archives/partial", "cache", "state", "dl"):
        (apt / d).mkdir(parents=True, exist_ok=True)
    (apt / "state" / "status").write_text("")
    main, security = _mirrors()
    signed = f"[signed-by={KEYRING}]"
    (apt / "sources.list").write_text(
        f"deb {signed} {main} {SUITE} main\n"
        f"deb {signed} {main} {SUITE}-updates main\n"
        f"deb {signed} {security} {SUITE}-security main\n")
    return _apt_options(apt)


def _deb_version(path: Path) -> tuple[str, str]:
    name, version, _ = path.name.split("_", 2)
    return name, unquote(version)


def _unpack_deb(deb: Path, root: Path) -> None:
    if deb.name.startswith(HEADER_DEB + "_"):
        with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)],
                              stdout=subprocess.PIPE) as feed:
            _run(["tar", "-x", "-C", str(root), "./usr/include"], f"unpacking {deb.name}",
                 stdin=feed.stdout)
        if feed.returncode:
            raise KbenchError(f"dpkg-deb --fsys-tarfile {deb.name} failed", "pyroot")
        return
    _run(["dpkg-deb", "-x", str(deb), str(root)], f"unpacking {deb.name}")


def install_debs(home: Path, say: Progress) -> dict[str, str]:
    """Fetches the arm64 packages with a private apt configuration and unpacks
    them into home/root. Returns {package: version}."""
    for tool in ("apt-get", "dpkg-deb", "tar"):
        _need_tool(tool, "the emulated Python is built from Debian packages (Debian/Ubuntu host)")
    apt = home / "apt"
    opts = _apt_setup(apt)
    say(f"debs: apt-get update (bookworm arm64, private state in {apt})")
    _run(["apt-get", *opts, "-qq", "update"], "apt-get update (bookworm arm64)", retries=1)
    dl = apt / "dl"
    for old in dl.glob("*.deb"):
        old.unlink()
    say(f"debs: downloading {len(DEBS)} packages")
    _run(["apt-get", *opts, "-qq", "download", *DEBS], "apt-get download (arm64 packages)",
         retries=1, cwd=dl)
    debs = sorted(dl.glob("*.deb"))
    versions = dict(_deb_version(d) for d in debs)
    missing = sorted(set(DEBS) - set(versions))
    if missing:
        raise KbenchError(f"apt-get download did not fetch {', '.join(missing)}", "pyroot")
    tmp = home / "root.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    say(f"debs: unpacking into {home / 'root'}")
    for deb in debs:
        _unpack_deb(deb, tmp)
    _replace_dir(tmp, home / "root")
    for deb in debs:
        deb.unlink()
    shutil.rmtree(apt / "lists", ignore_errors=True)  # 20 MB, fetched again when needed
    return versions


# ---- stage 2: the aarch64 wheels --------------------------------------------------


def _pip_download(dest: Path, pins: dict[str, str | None], say: Progress) -> list[Path]:
    reqs = [f"{n}=={pins[n]}" if pins.get(n) else n for n in map(_canon, GUEST_DISTS)]
    cons = dest / "constraints.txt"
    cons.write_text("".join(f"{n}=={v}\n" for n, v in pins.items() if v))
    plats = [x for p in WHEEL_PLATFORMS for x in ("--platform", p)]
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
           "--progress-bar", "off", "--only-binary=:all:", *plats,
           "--python-version", PY_VERSION, "--implementation", "cp",
           "-d", str(dest), "-c", str(cons), *reqs]
    say(f"wheels: pip download {' '.join(reqs)} (aarch64, cp311)")
    _run(cmd, "pip download of the aarch64 wheels (is PyPI reachable? does every pinned "
         "version have a cp311 aarch64 wheel?)", retries=1)
    return sorted(dest.glob("*.whl"))


def _wheel_name(path: Path) -> tuple[str, str]:
    name, version = path.name.split("-")[:2]
    return _canon(name), version


def unzip_wheel(wheel: Path, site: Path) -> None:
    """Installs a wheel by unzipping it (purelib/platlib .data folded into site;
    scripts, headers and data left out)."""
    base = site.resolve()
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            parts = info.filename.split("/")
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            target = (base / "/".join(parts)).resolve()
            if not target.is_relative_to(base):
                raise KbenchError(f"{wheel.name}: member {info.filename} escapes the folder",
                                  "pyroot")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                target.chmod(mode | 0o600)


def install_wheels(home: Path, say: Progress) -> tuple[dict[str, str | None], dict[str, str]]:
    """Downloads the aarch64 wheels and unzips them into home/site.
    Returns (pins asked for, {distribution: version installed})."""
    pins = host_pins()
    with tempfile.TemporaryDirectory(dir=home, prefix="wheels.") as tmpdir:
        wheels = _pip_download(Path(tmpdir), pins, say)
        tmp = home / "site.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        say(f"wheels: unzipping {len(wheels)} wheels into {home / 'site'}")
        for w in wheels:
            unzip_wheel(w, tmp)
        _replace_dir(tmp, home / "site")
    return pins, dict(sorted(_wheel_name(w) for w in wheels))


# ---- stage 3: the aarch64 cffi module ------------------------------------------------


def _cross_cc() -> list[str]:
    from kbench.targets.crossbuild import toolchain
    tc = toolchain("aarch64")  # names ci/install-toolchain.sh when clang-19 is missing
    if not Path("/usr/aarch64-linux-gnu/include/stdio.h").exists():
        raise KbenchError("the aarch64 sysroot (libc6-dev-arm64-cross) is missing: run "
                          "`bash ci/install-toolchain.sh` first", "toolchain")
    return tc.cc


def build_extension(root: Path, say: Progress) -> Path:
    """Cross-compiles kbench's cffi module for aarch64 (the C that cffi emits
    plus native/src, each file with its ISA flags) against root's Python headers."""
    from kbench.native.build import C_FLAGS, ISA_FLAGS, all_sources, isa_class, make_ffibuilder
    cc = _cross_cc()
    # Debian's python3.11/pyconfig.h includes <aarch64-linux-gnu/python3.11/pyconfig.h>
    inc = [root / "usr" / "include" / f"python{PY_VERSION}", root / "usr" / "include"]
    pyconfig = inc[1] / "aarch64-linux-gnu" / f"python{PY_VERSION}" / "pyconfig.h"
    if not pyconfig.exists():
        raise KbenchError(f"{pyconfig} is missing: run `python -m kbench.targets.pyroot "
                          "--force`", "pyroot")
    obj = EXT_DIR / "obj"
    obj.mkdir(parents=True, exist_ok=True)
    csrc = obj / f"{NATIVE_MODULE}.c"
    with contextlib.redirect_stdout(io.StringIO()):  # cffi prints "generating ..."
        make_ffibuilder(module=NATIVE_MODULE, absolute=True).emit_c_code(str(csrc))
    jobs = [(csrc, [*ISA_FLAGS["core"], *(f"-I{p}" for p in inc)])]
    jobs += [(s, ISA_FLAGS[isa_class(s)]) for s in all_sources()]
    say(f"extension: compiling {len(jobs)} files with {cc[0]} --target=aarch64-linux-gnu")

    def compile_one(job: tuple[Path, list[str]]) -> str:
        src, flags = job
        out = obj / (src.stem if src == csrc else
                     str(src.relative_to(NATIVE)).replace("/", "_")[:-2])
        _run([*cc, *C_FLAGS, "-fPIC", *flags, f"-I{NATIVE / 'include'}", "-c", str(src),
              "-o", f"{out}.o"], f"compiling {src.name} for aarch64")
        return f"{out}.o"

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, jobs))
    final = ext_path()
    tmp = final.with_suffix(".tmp")
    _run([*cc, "-shared", "-fuse-ld=lld", "-pthread", *objects, "-o", str(tmp)],
         "linking the aarch64 extension")
    tmp.replace(final)
    final.with_suffix(".json").write_text(json.dumps({"cffi": _host_version("cffi")}) + "\n")
    say(f"extension: built {final}")
    return final


# ---- stage 4: a check inside the guest ------------------------------------------------

GUEST_CHECK = """\
import json, os, platform, time
t0 = time.perf_counter()
import kbench.targets.inprocess, kbench.native.api as api, kbench.peers
t1 = time.perf_counter()
import numpy, cffi, onnx, onnxruntime
t2 = time.perf_counter()
mod = __import__(os.environ["KBENCH_NATIVE"])
print(json.dumps({
    "machine": platform.machine(), "python": platform.python_version(),
    "native": mod.__file__, "features": list(api.cpu_info().features),
    "import_kbench_engine_s": round(t1 - t0, 2), "import_onnxruntime_s": round(t2 - t1, 2),
    "versions": {"numpy": numpy.__version__, "cffi": cffi.__version__,
                 "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__},
}))
"""


def guest_check(pr: PyRoot, qemu: str | None = None, cpu: str = "max") -> dict[str, Any]:
    """Starts the guest once: imports kbench and the peers' packages, reports what it saw."""
    if qemu is None:
        from kbench.targets.tools import find_qemu
        qemu = find_qemu()
    start = time.perf_counter()
    res = _run(pr.argv(qemu, cpu, ["-c", GUEST_CHECK]), "the guest check", timeout=600,
               env=pr.env())
    data: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    data["start_to_end_s"] = round(time.perf_counter() - start, 2)
    return data


def _verify(pr: PyRoot, manifest: dict[str, Any], say: Progress) -> dict[str, Any]:
    say("check: importing kbench.targets.inprocess, numpy, onnx, onnxruntime in the guest "
        "(-cpu max)")
    data = guest_check(pr)
    if data.get("machine") != "aarch64":
        raise KbenchError(f"the guest reports machine {data.get('machine')!r}", "pyroot")
    if Path(data["native"]).resolve() != ext_path().resolve():
        raise KbenchError(f"the guest loaded {data['native']}, not {ext_path()}", "pyroot")
    wheels = manifest.get("wheels", {})
    for name, version in data["versions"].items():
        if wheels.get(name) != version:
            raise KbenchError(f"the guest imports {name} {version}, installed "
                              f"{wheels.get(name)}", "pyroot")
    say(f"check: ok in {data['start_to_end_s']} s (import kbench.targets.inprocess "
        f"{data['import_kbench_engine_s']} s, onnxruntime {data['import_onnxruntime_s']} s)")
    return {**data, "key": _state_key(manifest)}


# ---- ensure -------------------------------------------------------------------


def ensure(progress: Progress | None = None, force: bool = False,
           home: Path | None = None) -> PyRoot:
    """Installs whatever is missing or stale (debs, wheels, extension, guest
    check) and returns the PyRoot. A complete install costs one manifest read.
    Raises KbenchError naming what is missing (e.g. clang-19: run
    ci/install-toolchain.sh) or what failed."""
    say = progress or (lambda _msg: None)
    if not force:
        ready, why = status(home)
        if ready is not None:
            say(f"up to date: {why}")
            return ready
    h = home_dir(home)
    with _locked(h):
        return _install(h, say, force)


def _install(h: Path, say: Progress, force: bool) -> PyRoot:
    pr = layout(h)
    manifest = read_manifest(h)
    if force or _debs_reason(pr, manifest):
        manifest = {**manifest, "debs": install_debs(h, say)}
        manifest["python"] = _guest_python_version(manifest["debs"])
        manifest["apt_sources"] = (h / "apt" / "sources.list").read_text().splitlines()
        _write_manifest(h, manifest)
    else:
        say("debs: present, skipped")
    if force or _wheels_reason(pr, manifest):
        manifest["pins"], manifest["wheels"] = install_wheels(h, say)
        manifest["wheels_fetched"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        _write_manifest(h, manifest)
    else:
        say("wheels: present, skipped")
    stale = ext_stale_reason()
    if force or stale:
        say(f"extension: {stale or 'forced'}")
        build_extension(pr.root, say)
    else:
        say("extension: up to date, skipped")
    if force or _verify_reason(manifest):
        manifest["verified"] = _verify(pr, manifest, say)
        _write_manifest(h, manifest)
    ready, why = status(h)
    if ready is None:
        raise KbenchError(f"installed, but still incomplete: {why}", "pyroot")
    return ready


def _guest_python_version(debs: dict[str, str]) -> str:
    """'3.11.2' from python3.11-minimal's Debian version '3.11.2-6+deb12u9'."""
    return debs.get("python3.11-minimal", "?").split("-")[0]


def disk_usage(paths: list[Path]) -> int:
    total = 0
    for base in paths:
        for dirpath, _dirs, files in os.walk(base):
            for f in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


# ---- CLI ------------------------------------------------------------------------


def _describe(pr: PyRoot) -> list[str]:
    manifest = read_manifest(pr.root.parent)
    v = manifest.get("verified", {})
    size = disk_usage([pr.root.parent, pr.ext_dir]) / 2**20
    return [
        f"root:   {pr.root} (CPython {manifest.get('python')}, {len(manifest.get('debs', {}))} "
        "arm64 packages)",
        f"site:   {pr.site} ({', '.join(f'{k} {x}' for k, x in manifest['wheels'].items())})",
        f"ext:    {ext_path()} (KBENCH_NATIVE={pr.native_module})",
        f"check:  machine {v.get('machine')}, features {', '.join(v.get('features', []))}; "
        f"import kbench.targets.inprocess {v.get('import_kbench_engine_s')} s, onnxruntime "
        f"{v.get('import_onnxruntime_s')} s",
        f"size:   {size:.0f} MiB",
        f"run:    {' '.join(pr.argv('qemu-aarch64'))}",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kbench.targets.pyroot",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="fetch, unpack and build everything again")
    ap.add_argument("--check", action="store_true",
                    help="only say whether it is installed (exit 1 if not); no network")
    ap.add_argument("--home", type=Path, help="install folder (default $KBENCH_PYROOT, else "
                    "aarch64-python in $KBENCH_TOOLS or .tools)")
    ap.add_argument("--cpu", default="max", help="qemu -cpu model for a guest run (default max)")
    ap.add_argument("guest_args", nargs=argparse.REMAINDER,
                    help="after --: run the guest Python with these arguments")
    args = ap.parse_args(argv)
    guest_args = args.guest_args[1:] if args.guest_args[:1] == ["--"] else args.guest_args
    if args.check:
        pr, why = status(args.home)
        print(why if pr is None else "\n".join([why, *_describe(pr)]))
        return 0 if pr is not None else 1
    t0 = time.perf_counter()
    try:
        pr = ensure(lambda s: print(f"[pyroot] {s}", file=sys.stderr), args.force, args.home)
    except KbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if guest_args:
        from kbench.targets.tools import find_qemu
        return subprocess.run(pr.argv(find_qemu(), args.cpu, guest_args), env=pr.env()).returncode
    print("\n".join(_describe(pr)))
    print(f"time:   {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
