"""Run folders: results.csv (one row per case x kind x realization),
run.json (machine and build metadata) and verdicts.txt (one line each).

Rows are appended as they come (results.csv is flushed per row), so a run
that is interrupted keeps everything it finished; run.json says whether the
run completed."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
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
    """The name a run folder starts from (see reserve_run_dir)."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(base) / f"{stamp}-{socket.gethostname()}"


class RunDirError(Exception):
    """A run folder cannot be used (taken, not a run folder, not writable)."""


# the lock a running run holds on its folder (kbench.results.runlock)
LOCK_NAME = ".kbench-run.lock"
# files a run writes into its folder: what --force may replace
RUN_FILES = ("run.json", "run.json.tmp", "results.csv", "verdicts.txt", "benchmark.json",
             "dispatch.json", "report", LOCK_NAME)


def reserve_run_dir(base: str | Path = "runs", suffix: str = "") -> Path:
    """Creates and returns a new, empty run folder under base, named
    <date>-<time>-<host><suffix>, with -2, -3, ... appended when that name is
    taken: the folder is created atomically (mkdir), so runs started at the
    same second never share one."""
    first = Path(str(default_run_dir(base)) + suffix)
    try:
        first.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"cannot create {first.parent}: {exc.strerror or exc}") from None
    for n in range(1, 10_000):
        folder = first if n == 1 else first.with_name(f"{first.name}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
        except OSError as exc:
            raise RunDirError(f"cannot create {folder}: {exc.strerror or exc}") from None
    raise RunDirError(f"no free run folder name next to {first}")


def is_run_dir(folder: Path) -> bool:
    return any((folder / name).exists() for name in ("run.json", "results.csv", "verdicts.txt",
                                                      LOCK_NAME))


def claim_out_dir(out: str | Path, force: bool = False, keep: tuple[str, ...] = ()) -> Path:
    """Prepares --out for a new run: a missing or empty folder is used; a
    folder holding a run is refused unless force, which removes that run's
    files first (so no old file is mixed into the new run; the names in
    `keep` stay: the lock the caller holds); any other non-empty folder is
    refused."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise RunDirError(f"{folder} exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()):
        if not is_run_dir(folder):
            raise RunDirError(f"{folder} is not empty and holds no kbench run: choose another "
                              "folder")
        if not force:
            raise RunDirError(f"{folder} already holds a run: choose another folder, or "
                              "--force to replace it")
        import shutil
        for entry in folder.iterdir():
            if entry.name in keep:
                continue
            try:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            except OSError as exc:
                raise RunDirError(f"cannot remove {entry}: {exc.strerror or exc}") from None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".kbench-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise RunDirError(f"cannot write to {folder}: {exc.strerror or exc}") from None
    return folder


def _git(*args: str) -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's name from Linux's cpuinfo (x86 "model name", Arm "CPU part"
    or a board's "Model"), else what the platform module says."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.split(":")[0].strip() in ("model name", "CPU part", "Model"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_metadata() -> dict[str, Any]:
    from kbench.native.build import C_FLAGS  # the flags the extension was built with
    from kbench.results.identity import checkout
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
        "checkout": checkout(),  # which checkout ran it (history references stay within it)
    }


class RunWriter:
    """Writes a run folder incrementally: results.csv is created (never
    overwritten) with its header written out at once, run.json says the run
    is not complete until close(). A write that fails (disk full, folder
    gone) does not raise: the writer keeps the first error in `error`,
    counts the verdicts it could not write in `lost`, and writes nothing
    more; close() then records what it can."""

    def __init__(self, folder: str | Path, metadata: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.metadata = dict(metadata, complete=False)
        self.count = 0
        self.lost = 0
        self.error: OSError | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._csv = open(self.folder / "results.csv", "x", newline="")  # noqa: SIM115
        except FileExistsError:
            raise RunDirError(f"{self.folder} already holds a run (results.csv): runs never "
                              "share a folder") from None
        except OSError as exc:
            raise RunDirError(f"cannot write the run folder {self.folder}: "
                              f"{exc.strerror or exc}") from None
        self._lines = None
        self._failures_file: Any = None  # failures.csv, from the first failed verdict
        try:
            self._csv.write(_csv_line(COLUMNS))
            self._csv.flush()
            self._lines = open(self.folder / "verdicts.txt", "w")  # noqa: SIM115
            self._write_json()
            if self.error is not None:  # run.json could not be written
                raise self.error
        except OSError as exc:
            self.close(False)
            raise RunDirError(f"cannot write the run folder {self.folder}: "
                              f"{exc.strerror or exc}") from None

    def _write_json(self) -> None:
        tmp = self.folder / "run.json.tmp"
        try:
            tmp.write_text(json.dumps(self.metadata, indent=2, default=str))
            tmp.replace(self.folder / "run.json")
        except OSError as exc:
            self.error = self.error or exc
            with contextlib.suppress(OSError):  # never leave a half-written run.json.tmp
                tmp.unlink()

    def add(self, v: Verdict) -> None:
        """Appends a verdict: one whole line per file, flushed, so a run that
        is killed keeps every verdict before the last."""
        if self.error is None:
            row = v.to_dict()
            line = _csv_line([_csv_value(row.get(c)) for c in COLUMNS])
            start = -1  # results.csv's length before the row (-1: not known yet)
            try:
                start = self._csv.tell()
                self._csv.write(line)
                self._csv.flush()
                if self._lines is not None:
                    self._lines.write(v.line() + "\n")
                    self._lines.flush()
            except OSError as exc:
                self.error = exc
            except BaseException:  # an interrupt (SIGINT, SIGTERM) in the middle of the verdict
                if start >= 0 and self._csv.tell() != start:  # its row reached results.csv
                    self.count += 1
                raise
            else:
                self.count += 1
                return
        self.lost += 1

    def add_failure(self, v: Verdict, reproduce: str) -> None:
        """A failed or erroneous verdict: its reproducer under its line in
        verdicts.txt, and a row in failures.csv (written from the first one)."""
        if self.error is not None:
            return
        try:
            if self._lines is not None:
                self._lines.write(f"    reproduce: {reproduce}\n")
                self._lines.flush()
            if self._failures_file is None:
                self._failures_file = open(self.folder / "failures.csv", "w", newline="")  # noqa: SIM115
                self._failures_file.write(_csv_line(FAILURE_COLUMNS))
            row = {k: getattr(v, k) for k in FAILURE_COLUMNS if k != "reproduce"}
            row["reproduce"] = reproduce
            self._failures_file.write(_csv_line([_csv_value(row.get(c)) for c in FAILURE_COLUMNS]))
            self._failures_file.flush()
        except OSError as exc:
            self.error = exc

    def add_all(self, vs: Iterable[Verdict]) -> None:
        for v in vs:
            self.add(v)

    def vanished(self) -> bool:
        """Was the folder removed or replaced under the run (its results.csv
        gone, or another file than the one this writer writes)?"""
        try:
            here = os.stat(self.folder / "results.csv")
            mine = os.fstat(self._csv.fileno())
        except (OSError, ValueError):
            return True
        return (here.st_dev, here.st_ino) != (mine.st_dev, mine.st_ino)

    def close(self, complete: bool, summary: dict[str, Any] | None = None) -> None:
        if self.error is None and self.vanished():
            # another run's folder now, or none: write nothing into it
            self.error = FileNotFoundError(2, f"the run folder {self.folder} was removed or "
                                              "replaced during the run")
            self.lost += self.count
            self.count = 0
            self.metadata["complete"] = False
            for fh in (self._csv, self._lines, self._failures_file):
                with contextlib.suppress(OSError):
                    if fh is not None:
                        fh.close()
            return
        self.metadata["complete"] = complete and self.error is None
        self.metadata["results"] = self.count
        if self.error is not None:
            self.metadata["write_error"] = f"{self.error.strerror or self.error}"
            self.metadata["verdicts_not_written"] = self.lost
        if summary is not None:
            self.metadata["summary"] = summary
        self._write_json()
        for fh in (self._csv, self._lines, self._failures_file):
            try:
                if fh is not None:
                    fh.close()
            except OSError as exc:
                self.error = self.error or exc


def _csv_value(x: Any) -> Any:
    return "" if x is None else x


def _csv_line(values: Iterable[Any]) -> str:
    """One CSV record as a string (written with a single write call, so a
    signal between rows never splits one)."""
    buf = io.StringIO()
    csv.writer(buf).writerow(list(values))
    return buf.getvalue()
