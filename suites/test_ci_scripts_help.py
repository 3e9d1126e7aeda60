"""Every script under ci/ and docs/gen/ answers `--help` with its usage on
standard output and exit status 0 (not a traceback, not a file named
"--help", not the usage-error status)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = sorted([*REPO.glob("ci/*.py"), *REPO.glob("docs/gen/*.py")])


def test_the_scripts_are_found() -> None:
    assert {p.name for p in SCRIPTS} >= {"gate_benchmark.py", "gate_args.py", "kbdocs.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_help_exits_zero_with_usage(script: Path) -> None:
    proc = subprocess.run([sys.executable, str(script), "--help"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert len(proc.stdout.strip()) > 40, proc.stdout
