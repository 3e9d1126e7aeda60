"""Builds the example plugins (examples/plugins/Makefile) for the plugin
suites: for this machine, and cross-compiled for aarch64 where clang-19 and
the sysroot are installed (otherwise the aarch64 tests skip, unless
KBENCH_REQUIRE_QEMU is set, as in CI). `make` is incremental: every suite
may ask, only the first build compiles."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

from kbench.targets.plugins import host_arch

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "plugins"
ARCH_PATTERN = str(EXAMPLES / "build" / "{arch}")


@cache
def _make(arch: str) -> str:
    """'' when built, else why not."""
    if not shutil.which("make"):
        return "make is not installed"
    if arch == "aarch64" and arch != host_arch() and not shutil.which("clang-19"):
        return "clang-19 is not installed (bash ci/install-toolchain.sh)"
    res = subprocess.run(["make", "-s", "-C", str(EXAMPLES), f"ARCH={arch}", "all", "broken",
                          "faults"], capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise AssertionError(f"building the example plugins for {arch} failed:\n{res.stderr}")
    return ""


def build(arch: str) -> Path:
    """The folder of the example plugins built for `arch` (skips if it cannot be built)."""
    why = _make(arch)
    if why:
        if os.environ.get("KBENCH_REQUIRE_QEMU") or arch == host_arch():
            pytest.fail(f"example plugins for {arch}: {why}")
        pytest.skip(f"example plugins for {arch}: {why}")
    return EXAMPLES / "build" / arch


def lib(name: str, arch: str | None = None) -> str:
    """A plugin library built for `arch` (default: this machine), as a path string."""
    return str(build(arch or host_arch()) / f"lib{name}.so")


def pattern(name: str) -> str:
    """The library's path with {arch} left in (every target picks its own build)."""
    build(host_arch())
    return f"{ARCH_PATTERN}/lib{name}.so"
