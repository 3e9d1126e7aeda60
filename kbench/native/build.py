"""cffi build script (API mode) for the native library.

The cdef is derived from native/include/kbench.h, the one public header, so
the binding cannot drift from it. `make_ffibuilder` also builds the
sanitizer variant used by ci/sanitize.sh.
"""

from __future__ import annotations

import re
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "native"
HEADER = NATIVE / "include" / "kbench.h"

C_FLAGS = ["-std=c11", "-O2", "-fno-fast-math", "-Wall", "-Wextra"]

# Per-file ISA flags on aarch64: the backend folder decides what a file may
# use, so NEON FP16, SME and SVE2.1 code share one library and are picked at
# run time. SME and SVE files are compiled without SVE/SME code generation:
# their kernels use those instructions in their own assembly only (the SME
# ones entering streaming mode themselves), so the C around them runs on any
# aarch64 CPU.
BACKEND_DIRS = ("neon", "sme", "sve")
ISA_FLAGS = {
    "core": ["-march=armv8-a"],
    "neon": ["-march=armv8.2-a+fp16"],
    "neon_fhm": ["-march=armv8.2-a+fp16+fp16fml"],
    "sme": ["-march=armv8.2-a+fp16"],
    "sve": ["-march=armv8.2-a+fp16"],
}


def isa_class(path: Path) -> str:
    parts = path.relative_to(NATIVE).parts
    if "sme" in parts:
        return "sme"
    if "sve" in parts:
        return "sve"
    if "neon" in parts:
        return "neon_fhm" if "fhm" in path.name else "neon"
    return "core"


def is_arm64(machine: str | None = None) -> bool:
    import platform
    return (machine or platform.machine()).lower() in ("aarch64", "arm64")


def header_cdef(text: str) -> str:
    """Turns the public header into a cdef: preprocessor lines dropped,
    integer #defines kept (plain literals by value, so that array sizes
    can use them; expressions as `...`, which cffi reads from C)."""
    out: list[str] = []
    literals: dict[str, str] = {}
    skip_cpp = False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r"#define\s+(KB_[A-Z0-9_]+)\s+(\S.*)$", s)
            if m and not m.group(1).startswith("KB_STR"):
                value = m.group(2).split("/*")[0].strip()
                if re.fullmatch(r"\d+", value):
                    literals[m.group(1)] = value
                    out.append(f"#define {m.group(1)} {value}")
                else:
                    out.append(f"#define {m.group(1)} ...")
            skip_cpp = s.startswith("#ifdef __cplusplus")
            continue
        if skip_cpp:
            continue
        if s.startswith('extern "C"') or s == "}":
            continue
        out.append(line)
    cdef = "\n".join(out)
    for name, value in literals.items():
        cdef = re.sub(rf"\[{name}\]", f"[{value}]", cdef)
    return cdef


def all_sources() -> list[Path]:
    return sorted((NATIVE / "src").rglob("*.c"))


def sources(absolute: bool = False) -> list[str]:
    """C files built with the common flags (relative to the repo for setuptools,
    or absolute): everything but the Arm backends, which need their own flags."""
    files = [p for p in all_sources() if isa_class(p) == "core"]
    return [str(p if absolute else p.relative_to(ROOT)) for p in files]


def backend_objects(out_dir: Path) -> list[str]:
    """On an Arm64 host: compiles the NEON and SME files with their ISA flags
    and returns the objects to link into the extension."""
    import subprocess
    import sysconfig
    if not is_arm64():
        return []
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    out_dir.mkdir(parents=True, exist_ok=True)
    objs = []
    for src in all_sources():
        cls = isa_class(src)
        if cls == "core":
            continue
        obj = out_dir / (src.stem + ".o")
        subprocess.run([*cc, *C_FLAGS, "-fPIC", *ISA_FLAGS[cls], f"-I{NATIVE / 'include'}",
                        "-c", str(src), "-o", str(obj)], check=True)
        objs.append(str(obj))
    return objs


def make_ffibuilder(module: str = "kbench._native", extra_flags: list[str] | None = None,
                    extra_link: list[str] | None = None, absolute: bool = False) -> FFI:
    ffi = FFI()
    ffi.cdef(header_cdef(HEADER.read_text()))
    ffi.set_source(
        module,
        '#include "kbench.h"\n',
        sources=sources(absolute),
        include_dirs=[str(NATIVE / "include")],
        extra_compile_args=C_FLAGS + list(extra_flags or []),
        extra_link_args=list(extra_link or []),
        extra_objects=backend_objects(ROOT / "build" / f"backend-objects-{module}"),
    )
    return ffi


# setup.py's cffi_modules takes this object; an installed wheel has no C sources (its
# extension is built) and only reads C_FLAGS from this module.
ffibuilder = make_ffibuilder() if HEADER.is_file() else None

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
