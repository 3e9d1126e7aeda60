"""Run folders: results.csv (one row per case x kind x realization),
run.json (machine and build metadata) and verdicts.txt (one line each).

Rows are appended as they come (results.csv is flushed per row), so a run
that is interrupted keeps everything it finished; run.json says whether the
run completed."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any

from kbench.judge.verdict import Verdict

COLUMNS = [f.name for f in fields(Verdict)] + ["exact_fraction"]
# failures.csv: one row per failed or erroneous verdict, with the command that reruns it
FAILURE_COLUMNS = ["status", "suite", "target", "realization", "catalog", "case", "kind",
                   "message", "reproduce"]


def default_run_dir(base: str | Path = "runs") -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(base) / f"{stamp}-{socket.gethostname()}"


def _git(*args: str) -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":")[0].strip() in ("model name", "CPU part", "Model"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_metadata() -> dict[str, Any]:
    from kbench.native.build import C_FLAGS  # the flags the extension was built with

    commit = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain")) if commit else None
    import sysconfig
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "python": sys.version.split()[0],
        "compiler": sysconfig.get_config_var("CC") or "",
        "c_flags": C_FLAGS,
        "git_commit": commit,
        "git_dirty": dirty,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command_line": " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]),
    }


class RunWriter:
    """Writes a run folder incrementally."""

    def __init__(self, folder: str | Path, metadata: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.metadata = dict(metadata, complete=False)
        self._csv = open(self.folder / "results.csv", "w", newline="")  # noqa: SIM115
        self._writer = csv.DictWriter(self._csv, fieldnames=COLUMNS)
        self._writer.writeheader()
        self._lines = open(self.folder / "verdicts.txt", "w")  # noqa: SIM115
        self._failures: csv.DictWriter[str] | None = None
        self._failures_file: Any = None
        self.count = 0
        self._write_json()

    def _write_json(self) -> None:
        tmp = self.folder / "run.json.tmp"
        tmp.write_text(json.dumps(self.metadata, indent=2, default=str))
        tmp.replace(self.folder / "run.json")

    def add(self, v: Verdict) -> None:
        self._writer.writerow(v.to_dict())
        self._csv.flush()
        self._lines.write(v.line() + "\n")
        self._lines.flush()
        self.count += 1

    def add_failure(self, v: Verdict, reproduce: str) -> None:
        """A failed or erroneous verdict: its reproducer under its line in
        verdicts.txt, and a row in failures.csv (written from the first one)."""
        self._lines.write(f"    reproduce: {reproduce}\n")
        self._lines.flush()
        if self._failures is None:
            self._failures_file = open(self.folder / "failures.csv", "w", newline="")  # noqa: SIM115
            self._failures = csv.DictWriter(self._failures_file, fieldnames=FAILURE_COLUMNS)
            self._failures.writeheader()
        row = {k: getattr(v, k) for k in FAILURE_COLUMNS if k != "reproduce"}
        self._failures.writerow({**row, "reproduce": reproduce})
        assert self._failures_file is not None
        self._failures_file.flush()

    def add_all(self, vs: Iterable[Verdict]) -> None:
        for v in vs:
            self.add(v)

    def close(self, complete: bool, summary: dict[str, Any] | None = None) -> None:
        self.metadata["complete"] = complete
        self.metadata["results"] = self.count
        if summary is not None:
            self.metadata["summary"] = summary
        self._write_json()
        self._csv.close()
        self._lines.close()
        if self._failures_file is not None:
            self._failures_file.close()
