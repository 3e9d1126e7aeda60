"""A run folder in use is locked: the process that runs into it holds an
exclusive flock on RUN_FOLDER/.kbench-run.lock (which names its pid and
command line) from the moment it claims the folder until it exits. So
`--out X --force` refuses a folder a live run is writing, naming that
process, instead of deleting its verdicts under it; and a run whose folder
was removed or replaced meanwhile (its lock file is not the one it holds)
knows it, and claims nothing about it (kbench.cli.main: no history row).

The kernel releases a flock when its process ends, however it ends
(SIGKILL included): a lock file left behind by a dead run locks nothing."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
from pathlib import Path

from kbench.results.store import (
    LOCK_NAME,
    RunDirError,
    claim_out_dir,
    is_run_dir,
    reserve_run_dir,
)


def _who(text: str) -> str:
    pid, _, command = text.strip().partition("\n")
    return f"pid {pid}" + (f": {command}" if command else "") if pid else "another process"


class RunLock:
    """An exclusive lock on a run folder, held until release() or exit."""

    def __init__(self, folder: Path, fd: int) -> None:
        self.folder = folder
        self.fd = fd

    @classmethod
    def take(cls, folder: str | Path) -> RunLock:
        """Locks the folder (which must exist); RunDirError naming the process
        that holds it when another does."""
        folder = Path(folder)
        path = folder / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise RunDirError(f"cannot lock {folder}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = _who(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
            finally:
                os.close(fd)
            raise RunDirError(f"{folder} is in use by a run that is still running ({holder}); "
                              "wait for it to end, or choose another folder") from None
        mine = f"{os.getpid()}\n{' '.join([os.path.basename(sys.argv[0]), *sys.argv[1:]])}\n"
        with contextlib.suppress(OSError):  # who holds it: for the message above only
            os.ftruncate(fd, 0)
            os.pwrite(fd, mine.encode(), 0)
        return cls(folder, fd)

    def lost(self) -> bool:
        """Was the folder removed or replaced since it was locked (its lock
        file gone, or another file)? Then nothing in it is this run's."""
        try:
            here = os.stat(self.folder / LOCK_NAME)
            held = os.fstat(self.fd)
        except OSError:
            return True
        return (here.st_dev, here.st_ino) != (held.st_dev, held.st_ino)

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)  # closing releases the flock; the file stays
            self.fd = -1


def lock_folder(folder: str | Path) -> RunLock:
    """Creates the folder if need be and locks it (RunDirError naming the
    process that holds it): for commands that write into a folder they may
    resume (kbench ab, kbench mutate), where two at once would mix their
    files."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"cannot create {folder}: {exc.strerror or exc}") from None
    return RunLock.take(folder)


def claim_locked(out: str | Path | None, force: bool, runs: Path, suffix: str = ""
                 ) -> tuple[Path, RunLock]:
    """The run folder and its lock: --out (a folder holding a run is refused
    unless force, and refused whatever force says while a run is writing
    it; force then removes the old run's files), or a new folder under
    `runs`. RunDirError otherwise."""
    if out is None:
        folder = reserve_run_dir(runs, suffix)
        return folder, RunLock.take(folder)
    folder = Path(out)
    if folder.is_dir() and is_run_dir(folder):
        lock = RunLock.take(folder)  # before anything is removed: a live run keeps it
        try:
            return claim_out_dir(folder, force, keep=(LOCK_NAME,)), lock
        except RunDirError:
            lock.release()
            raise
    folder = claim_out_dir(folder, force)
    return folder, RunLock.take(folder)


__all__ = ["LOCK_NAME", "RunLock", "claim_locked", "lock_folder"]
