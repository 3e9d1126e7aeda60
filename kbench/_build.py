"""cffi build script (API mode) for the native library.

The cdef is derived from native/include/kbench.h, the one public header, so
the binding cannot drift from it. `make_ffibuilder` also builds the
sanitizer variant used by ci/sanitize.sh.
"""

from __future__ import annotations

import re
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "native"
HEADER = NATIVE / "include" / "kbench.h"

C_FLAGS = ["-std=c11", "-O2", "-fno-fast-math", "-Wall", "-Wextra"]


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


def sources(absolute: bool = False) -> list[str]:
    """The library's C files (relative to the repo for setuptools, or absolute)."""
    files = sorted((NATIVE / "src").rglob("*.c"))
    return [str(p if absolute else p.relative_to(ROOT)) for p in files]


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
    )
    return ffi


ffibuilder = make_ffibuilder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
