"""Whether qemu-aarch64 is installed, for the suites that drive emulated Arm
targets themselves: they skip without it, except where KBENCH_REQUIRE_QEMU
is set (CI), where its absence is an error at collection."""

from __future__ import annotations

import os

import pytest

from kbench.targets.tools import find_qemu


def _have_qemu() -> bool:
    try:
        find_qemu()
    except Exception:  # noqa: BLE001
        if os.environ.get("KBENCH_REQUIRE_QEMU"):
            raise
        return False
    return True


HAVE_QEMU = _have_qemu()
needs_qemu = pytest.mark.skipif(not HAVE_QEMU, reason="qemu-aarch64 not installed "
                                "(bash ci/install-toolchain.sh)")
