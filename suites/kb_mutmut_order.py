"""Fastest tests first while mutmut runs a mutant (ci/mutmut.sh).

mutmut runs each mutant against the tests that reached its function, with
``pytest -x``: the first failure kills the mutant. It passes them in no
particular order, so a mutant of the report module that a 0.05 s table test
kills often waits for whole HTML reports to be built first. Under a mutant
(``MUTANT_UNDER_TEST`` names one) this orders the collected tests by the
durations mutmut itself recorded (``mutmut-stats.json`` in the working
folder), fastest first; tests it has no duration for keep their order, last.
Which tests run, and so whether a mutant is killed or survives, is unchanged:
a survivor still runs all of them. Outside a mutmut mutant run nothing moves.

During mutmut's stats run (``MUTANT_UNDER_TEST=stats``: every function records
which test called it) the processes the suites start (``python -m kbench.cli``
in a test's own folder) run the original code instead: their calls would be
lost with the process anyway, and mutmut, looking there for its configuration
in their working folder, would fail them. Under a mutant they inherit it, as
before, so a mutant a subprocess reveals is still killed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path


def mutmut_durations(folder: Path) -> dict[str, float]:
    """Seconds per test id as mutmut recorded them, {} without a record."""
    try:
        data = json.loads((folder / "mutmut-stats.json").read_text())
    except (OSError, ValueError):
        return {}
    durations = data.get("duration_by_test") if isinstance(data, dict) else None
    if not isinstance(durations, dict):
        return {}
    return {str(k): float(v) for k, v in durations.items() if isinstance(v, (int, float))}


def under_a_mutant(environ: dict[str, str]) -> bool:
    """True while mutmut runs tests against one mutant (not its stats or clean runs)."""
    return "__mutmut_" in environ.get("MUTANT_UNDER_TEST", "")


def fastest_first(nodeids: list[str], durations: dict[str, float]) -> list[int]:
    """Indexes of ``nodeids`` in the order to run them: by recorded duration,
    unknown ones last in their own order (a stable sort)."""
    def seconds(i: int) -> float:
        nodeid = nodeids[i]
        key = nodeid[len("mutants/"):] if nodeid.startswith("mutants/") else nodeid
        return durations.get(key, math.inf)
    return sorted(range(len(nodeids)), key=seconds)


def stats_free(env: Mapping[str, str]) -> dict[str, str]:
    """env for a child process: the stats run's marker replaced by "" (no mutant:
    the original code, nothing recorded); any other value kept."""
    out = dict(env)
    if out.get("MUTANT_UNDER_TEST") == "stats":
        out["MUTANT_UNDER_TEST"] = ""
    return out


def children_without_stats() -> Callable[[], None]:
    """Makes every subprocess.Popen from now on start with stats_free(env);
    returns the undo."""
    original = subprocess.Popen.__init__

    def init(self, *args, env=None, **kwargs):  # noqa: ANN001, ANN002, ANN003
        original(self, *args, env=stats_free(os.environ if env is None else env), **kwargs)

    subprocess.Popen.__init__ = init

    def undo() -> None:
        subprocess.Popen.__init__ = original
    return undo


def pytest_configure(config) -> None:
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        children_without_stats()


def pytest_collection_modifyitems(session, config, items) -> None:
    if not under_a_mutant(dict(os.environ)):
        return
    durations = mutmut_durations(Path.cwd())
    if not durations:
        return
    order = fastest_first([item.nodeid for item in items], durations)
    items[:] = [items[i] for i in order]
