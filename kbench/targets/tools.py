"""Where the cross tools are: QEMU for aarch64 and the worker executables."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from kbench.errors import InvalidArgument, KbenchError

REPO = Path(__file__).resolve().parents[2]


def find_qemu() -> str:
    """qemu-aarch64 with SME2: KBENCH_QEMU, the project's tools folder, or PATH."""
    env = os.environ.get("KBENCH_QEMU")
    if env:
        return env
    tools = Path(os.environ.get("KBENCH_TOOLS", REPO / ".tools"))
    local = tools / "bin" / "qemu-aarch64"
    if local.exists():
        return str(local)
    found = shutil.which("qemu-aarch64")
    if found:
        return found
    raise InvalidArgument("target: qemu-aarch64 not found; run `bash ci/install-toolchain.sh` "
                          "(or set KBENCH_QEMU)", "target")


def worker_binary(arch: str) -> str:
    """KBENCH_WORKER (aarch64) or KBENCH_WORKER_DYN (aarch64-dyn, the dynamically
    linked worker that loads plugins), else the worker built from this checkout."""
    if arch == "aarch64" and os.environ.get("KBENCH_WORKER"):
        return os.environ["KBENCH_WORKER"]
    if arch == "aarch64-dyn" and os.environ.get("KBENCH_WORKER_DYN"):
        return os.environ["KBENCH_WORKER_DYN"]
    from kbench.targets.crossbuild import build, toolchain
    out = toolchain(arch).output if arch == "host" else None
    try:
        return str(build(arch))
    except KbenchError:
        if out is not None and out.exists():
            return str(out)
        raise
