"""The kbench CLI in a child process, as a user's shell runs it, for the
suites that need a real process (worker processes, exit codes, run folders)."""

from __future__ import annotations

import subprocess
import sys


def kbench(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    """`python -m kbench.cli ARGS`, output captured as text."""
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, timeout=timeout)
