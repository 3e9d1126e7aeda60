"""Progress with an ETA for long correctness runs: a line at every tenth of
the case tests (and at the last), with elapsed time and time left.

The time left comes from a cost model, not from the average test so far.
A case test's seconds (its wall time in its process, from the end of the
test before it: setup, call, teardown and what kbench does between them)
are modelled per target
as c0 + c1·MNK + c2·MN + c3·(MK + KN), batch included (GEMM view of a
convolution: M output pixels, N output channels, K taps x input channels):
a fixed cost, the products (oracle and kernel), the output (judging it) and
the inputs (making and sending them); the coefficients are a non-negative
least-squares fit over the tests of that target done so far (a target not
started yet takes the fit an earlier complete run of it left, else the fit
over every target; the run's other suites are groups of their own, with a
fixed cost per test). The model's sum over the
tests still to run, scaled by the wall time per modelled second so far
(which takes in parallel workers and what the model leaves out), is the
ETA. Catalogs are not ordered by cost — small tails come last, large GEMMs
in the middle — and a fit on flops alone, from the small cases of the first
tenth, doubles the forecast (measured on the default catalogs under
qemu:svl=512: flops alone +124% at 20% of the run, these four terms +5%).

What follows the last test (the summary, the results and the history
written, the report) is no test; its seconds are remembered per kind of run
(targets, suite, report or not) from the last complete one (`save_tail`)
and added to the ETA (the end of a run, left alone, is what made a real
run's forecast short; docs/records/eta_accuracy.toml).

A run that repeats tests of an earlier complete one (the same catalogs on
the same targets, as most runs do) knows more than any fit: each such
test's own seconds from that run (`save_costs` keeps them per test id,
hashed). Those tests are forecast from their remembered seconds, converted
to this run's speed by the ratio of this run's seconds to the remembered
ones over the remembered tests done so far; only the tests never run before
go through the fit (a fit over a partial run swings with the few large
cases it has seen; measured on a loaded machine: +116% at 20%)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

Features = tuple[float, float, float, float]
N_FEATURES = 4


def features(m: int, n: int, k: int, batch: int = 1) -> Features:
    """(1, MNK, MN, MK + KN), times the batch: what a case test's cost is fitted on."""
    b = float(max(1, batch))
    return (1.0, b * m * n * k, b * m * n, b * (m * k + k * n))


def hms(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _fit(rows: list[Features], seconds: list[float]) -> np.ndarray:
    """Non-negative least squares of seconds on the feature rows (columns
    scaled to unit size first, so that the solver sees comparable numbers)."""
    from scipy.optimize import nnls
    if not rows:
        return np.zeros(N_FEATURES)
    x = np.asarray(rows, dtype=float)
    y = np.asarray(seconds, dtype=float)
    scale = np.abs(x).max(axis=0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(x / scale, y)
    return coef / scale


@dataclass
class CostModel:
    """Seconds per case test from its target and features (see the module text)."""

    done_x: dict[str, list[Features]] = field(default_factory=dict)
    done_y: dict[str, list[float]] = field(default_factory=dict)
    left: dict[str, np.ndarray] = field(default_factory=dict)  # summed features still to run
    prior: dict[str, np.ndarray] = field(default_factory=dict)  # remembered fits (load_costs)
    _fits: dict[str, np.ndarray] = field(default_factory=dict)  # cached until the next finish

    def plan(self, target: str, x: Features) -> None:
        self.left[target] = self.left.get(target, np.zeros(N_FEATURES)) + np.asarray(x)

    def finish(self, target: str, x: Features, seconds: float, planned: bool = True) -> None:
        """A finished test into the fit (and, when planned, off the work left)."""
        self.done_x.setdefault(target, []).append(x)
        self.done_y.setdefault(target, []).append(max(0.0, seconds))
        if planned and target in self.left:
            self.left[target] = np.maximum(self.left[target] - np.asarray(x), 0.0)
        self._fits.clear()

    def fit(self, target: str) -> np.ndarray:
        """The target's coefficients: from its own tests once it has 3, else
        the fit an earlier run of it left (prior), else all tests'."""
        if len(self.done_y.get(target, ())) < 3 and target in self.prior:
            return self.prior[target]
        key = target if len(self.done_y.get(target, ())) >= 3 else ""
        if key not in self._fits:
            if key:
                rows, ys = self.done_x[key], self.done_y[key]
            else:
                rows = [x for xs in self.done_x.values() for x in xs]
                ys = [y for v in self.done_y.values() for y in v]
            self._fits[key] = _fit(rows, ys)
        return self._fits[key]

    def modelled_done(self) -> float:
        return sum(sum(v) for v in self.done_y.values())

    def modelled_left(self) -> float:
        return float(sum(self.fit(t) @ x for t, x in self.left.items() if x.any()))


# case costs remembered between runs (`kbench run` writes them where it keeps its
# history, with the run appended): per target, the fitted coefficients, how many
# tests they came from, and the wall time per modelled second of that run
COSTS_VERSION = 2


def load_costs(path: Path | None) -> dict[str, dict[str, object]]:
    """The remembered case costs per target ({} when there are none or the
    file cannot be read: a forecast is never worth a failed run)."""
    if path is None:
        return {}
    targets = _read(path).get("targets")
    if not isinstance(targets, dict):
        return {}
    out: dict[str, dict[str, object]] = {}
    for name, t in targets.items():
        try:
            coef = [float(c) for c in t["coef"]]
            if len(coef) != N_FEATURES:
                continue
            out[str(name)] = {"coef": coef, "n": float(t["n"]), "scale": float(t["scale"])}
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _read(path: Path) -> dict[str, object]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == COSTS_VERSION else {}


def _write(path: Path, data: dict[str, object]) -> None:
    """The file replaced atomically; errors are ignored (see load_costs)."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(f"{path}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**data, "version": COSTS_VERSION}, indent=1))
        tmp.replace(path)
    except OSError:
        pass


MAX_REMEMBERED_TESTS = 400_000  # past this, a file keeps only the last run's tests


def test_key(test_id: str) -> str:
    """A test id as the costs file keeps it (16 hex digits of its hash)."""
    return hashlib.blake2b(test_id.encode(), digest_size=8).hexdigest()


def load_memory(path: Path | None) -> dict[str, float]:
    """Each remembered test's seconds, by test_key ({} when none)."""
    tests = _read(path).get("tests") if path is not None else None
    if not isinstance(tests, dict):
        return {}
    out: dict[str, float] = {}
    for k, v in tests.items():
        if isinstance(v, (int, float)) and v >= 0:
            out[str(k)] = float(v)
    return out


def save_costs(path: Path, model: CostModel, scale: float, min_tests: int = 20,
               last_test_end: float | None = None,
               seconds: dict[str, float] | None = None) -> None:
    """Merge this run's fits (targets with at least min_tests finished tests;
    groups of other tests whatever their number: a fixed cost each) and its
    tests' own seconds (test id -> seconds) into the file; with
    last_test_end (the epoch second the run's last test ended), kept for
    `save_tail`."""
    data = _read(path)
    costs = load_costs(path)
    for target, ys in model.done_y.items():
        if (len(ys) >= min_tests or target.startswith("other:")) and scale > 0:
            costs[target] = {"coef": [float(c) for c in model.fit(target)],
                             "n": float(len(ys)), "scale": scale}
    data["targets"] = costs
    if seconds:
        ours = {test_key(t): round(max(0.0, s), 5) for t, s in seconds.items()}
        tests = load_memory(path)
        tests = {**tests, **ours} if len(tests) + len(ours) <= MAX_REMEMBERED_TESTS else ours
        data["tests"] = tests
    if last_test_end is not None:
        data["last_test_end"] = float(last_test_end)
    _write(path, data)


def tail_key(targets: list[str] | tuple[str, ...], suite: str, report: bool) -> str:
    """What a run's time after its last test depends on."""
    return f"{suite}|{','.join(sorted(targets))}|{'report' if report else 'no-report'}"


def load_tail(path: Path | None, key: str) -> float:
    """Seconds the last complete run of this kind took after its last test (0: none)."""
    tails = _read(path).get("tails") if path is not None else None
    try:
        return max(0.0, float(tails[key])) if isinstance(tails, dict) and key in tails else 0.0
    except (TypeError, ValueError):
        return 0.0


def save_tail(path: Path, key: str, since: float, now: float) -> bool:
    """Remember now - last_test_end as this kind of run's tail, when the file's
    last_test_end was written by this run (at or after `since`, the run's
    start, both epoch seconds); False when it was not."""
    data = _read(path)
    end = data.get("last_test_end")
    if not isinstance(end, (int, float)) or not since <= end <= now:
        return False
    tails = data.get("tails")
    tails = dict(tails) if isinstance(tails, dict) else {}
    tails[key] = round(now - float(end), 3)
    data["tails"] = tails
    del data["last_test_end"]  # used once
    _write(path, data)
    return True


def expected_seconds(work: dict[str, tuple[str, Features]],
                     costs: dict[str, dict[str, object]],
                     memory: dict[str, float] | None = None) -> tuple[float | None, list[str]]:
    """(seconds the whole work is expected to take from remembered costs,
    the targets with no remembered cost). None when any target has none.
    A test in memory (load_memory) counts with its own remembered seconds."""
    memory = memory or {}
    per: dict[str, np.ndarray] = {}
    known: dict[str, float] = {}
    for test_id, (target, x) in work.items():
        mem = memory.get(test_key(test_id)) if memory else None
        if mem is None:
            per[target] = per.get(target, np.zeros(N_FEATURES)) + np.asarray(x)
        else:
            known[target] = known.get(target, 0.0) + mem
    unknown = sorted(t for t in {*per, *known} if t not in costs and not t.startswith("other:"))
    if unknown:
        return None, unknown
    total = 0.0
    for t in {*per, *known} & set(costs):  # a group of other tests never timed: left out
        coef = np.asarray(costs[t]["coef"], dtype=float)
        modelled = float(coef @ per[t]) if t in per else 0.0
        total += (modelled + known.get(t, 0.0)) * float(costs[t]["scale"])  # type: ignore[arg-type]
    return total, []


@dataclass
class ProgressCounter:
    """Counts finished case tests; `tick(elapsed)` returns a line when a new
    tenth of the total is reached (None otherwise). With `work` (test id ->
    (target, features)) and each test's own duration, the ETA comes from the
    cost model; without, from the average test so far. `work` may hold the
    run's other tests too (group "other:FILE", features (1, 0, 0, 0)): they
    count in the ETA, not in the line's cases."""

    total: int
    steps: int = 10
    done: int = 0
    failed: int = 0
    work: dict[str, tuple[str, Features]] = field(default_factory=dict)
    model: CostModel = field(default_factory=CostModel)
    prior: dict[str, dict[str, object]] = field(default_factory=dict)  # load_costs()
    tail: float = 0.0  # seconds after the last test (load_tail)
    memory: dict[str, float] = field(default_factory=dict)  # load_memory()
    seconds: dict[str, float] = field(default_factory=dict)  # this run's, per test id
    _shown: int = 0
    _seen: set[str] = field(default_factory=set)
    _remembered: dict[str, float] = field(default_factory=dict)  # test id -> its memory
    _mem_left: float = 0.0  # remembered seconds of the remembered tests still to run
    _mem_done_run: float = 0.0  # this run's seconds of the remembered tests done
    _mem_done_memory: float = 0.0  # ... and their remembered seconds

    def __post_init__(self) -> None:
        for test_id, (target, x) in self.work.items():
            mem = self.memory.get(test_key(test_id)) if self.memory else None
            if mem is None:
                self.model.plan(target, x)
            else:
                self._remembered[test_id] = mem
                self._mem_left += mem
        for target, c in self.prior.items():
            self.model.prior[target] = np.asarray(c["coef"], dtype=float)

    def modelled_left(self) -> float:
        """This run's seconds still to run: the remembered tests' memory at
        this run's speed so far, plus the fit over the others."""
        run, mem = self._mem_done_run, self._mem_done_memory
        speed = run / mem if mem > 0 and run > 0 else 1.0
        return speed * self._mem_left + self.model.modelled_left()

    def scale(self, elapsed_s: float) -> float:
        """Wall seconds per modelled second so far (0: nothing modelled yet)."""
        modelled = self.model.modelled_done()
        return elapsed_s / modelled if modelled > 0 else 0.0

    def left(self, elapsed_s: float) -> float:
        """Seconds still to go (the tail after the last test included)."""
        modelled = self.model.modelled_done()
        if modelled > 0:
            return elapsed_s / modelled * self.modelled_left() + self.tail
        return elapsed_s / max(1, self.done) * (self.total - self.done) + self.tail

    def observe(self, test_id: str, seconds: float) -> None:
        """A finished test's seconds into the model (a case test, or another
        test of the run in `work`, counted in the ETA but not in the line)."""
        if test_id in self.work and test_id not in self._seen:
            self._seen.add(test_id)
            self.seconds[test_id] = seconds
            target, x = self.work[test_id]
            mem = self._remembered.get(test_id)
            self.model.finish(target, x, seconds, planned=mem is None)
            if mem is not None:
                self._mem_left = max(0.0, self._mem_left - mem)
                self._mem_done_run += max(0.0, seconds)
                self._mem_done_memory += mem

    def tick(self, elapsed_s: float, failed: bool = False, test_id: str = "",
             seconds: float | None = None) -> str | None:
        self.done += 1
        self.failed += int(failed)
        if seconds is not None:
            self.observe(test_id, seconds)
        step = self.done * self.steps // max(1, self.total)
        if step <= self._shown and self.done != self.total:
            return None
        self._shown = step
        bad = f", {self.failed} failed" if self.failed else ""
        head = f"[{self.done}/{self.total} cases {self.done / max(1, self.total):.0%}{bad}; "
        if self.done >= self.total:  # no ETA for cases that are done: what still runs
            return f"{head}elapsed {hms(elapsed_s)}; {self.still_running()}]"
        return f"{head}elapsed {hms(elapsed_s)} ETA {hms(self.left(elapsed_s))}]"

    def still_running(self) -> str:
        """What the run still does once its cases are done: the other tests
        of `work` not yet finished (by file), or the run's end."""
        left = [g.split(":", 1)[1] for t, (g, _) in self.work.items()
                if g.startswith("other:") and t not in self._seen]
        if not left:
            return "cases done; finishing the run folder"
        files = sorted({f.rsplit("/", 1)[-1] for f in left})
        return (f"cases done; still running {len(left)} other test(s): "
                + ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4
                                          else ""))
