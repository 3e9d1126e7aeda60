"""Progress with an ETA for long correctness runs: a line at every tenth of
the case tests (and at the last), with elapsed time and time left.

The time left comes from a cost model, not from the average test so far:
a case test on a target costs a + b * flops seconds, a and b fitted per
target (least squares over the tests of that target done so far; a target
not started yet borrows the fit over every target). The model's sum over
the tests still to run, scaled by the wall time per modelled second so far
(which takes in parallel workers and what the model leaves out), is the
ETA. Catalogs are not ordered by cost — small tails come last, large GEMMs
in the middle — so the average of the first cases misjudges the rest."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path


def hms(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@dataclass
class _Sums:
    """Running sums of (flops, seconds) for one target's finished tests."""

    n: int = 0
    x: float = 0.0
    y: float = 0.0
    xx: float = 0.0
    xy: float = 0.0

    def add(self, x: float, y: float) -> None:
        self.n += 1
        self.x += x
        self.y += y
        self.xx += x * x
        self.xy += x * y

    def merged(self, other: _Sums) -> _Sums:
        return _Sums(self.n + other.n, self.x + other.x, self.y + other.y,
                     self.xx + other.xx, self.xy + other.xy)

    def fit(self) -> tuple[float, float]:
        """(a, b) of seconds = a + b * flops, both >= 0."""
        if self.n == 0:
            return 0.0, 0.0
        mx, my = self.x / self.n, self.y / self.n
        var = self.xx / self.n - mx * mx
        if self.n < 2 or var <= 1e-12 * max(1.0, mx * mx):
            return my, 0.0  # one size seen: the mean
        b = (self.xy / self.n - mx * my) / var
        a = my - b * mx
        if b < 0:
            return my, 0.0
        if a < 0:
            return 0.0, self.xy / self.xx if self.xx > 0 else 0.0
        return a, b


@dataclass
class CostModel:
    """Seconds per case test from its target and flops (see the module text)."""

    done: dict[str, _Sums] = field(default_factory=dict)
    left_n: dict[str, int] = field(default_factory=dict)  # tests not run yet, per target
    left_flops: dict[str, float] = field(default_factory=dict)

    def plan(self, target: str, flops: float) -> None:
        self.left_n[target] = self.left_n.get(target, 0) + 1
        self.left_flops[target] = self.left_flops.get(target, 0.0) + flops

    def finish(self, target: str, flops: float, seconds: float) -> None:
        self.done.setdefault(target, _Sums()).add(flops, max(0.0, seconds))
        self.left_n[target] = max(0, self.left_n.get(target, 0) - 1)
        self.left_flops[target] = max(0.0, self.left_flops.get(target, 0.0) - flops)

    def _fit(self, target: str) -> tuple[float, float]:
        own = self.done.get(target)
        if own is not None and own.n >= 3:
            return own.fit()
        every = _Sums()
        for s in self.done.values():
            every = every.merged(s)
        return every.fit()

    def modelled_done(self) -> float:
        return sum(s.y for s in self.done.values())

    def modelled_left(self) -> float:
        total = 0.0
        for target, n in self.left_n.items():
            if n:
                a, b = self._fit(target)
                total += a * n + b * self.left_flops.get(target, 0.0)
        return total


# case costs remembered between runs (`kbench run` writes them where it keeps its
# history, with the run appended): per target, the fit (a, b), how many tests it
# came from, and the wall time per modelled second of that run
COSTS_VERSION = 1


def load_costs(path: Path | None) -> dict[str, dict[str, float]]:
    """The remembered case costs per target ({} when there are none or the
    file cannot be read: a forecast is never worth a failed run)."""
    if path is None:
        return {}
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != COSTS_VERSION:
        return {}
    targets = data.get("targets")
    if not isinstance(targets, dict):
        return {}
    out = {}
    for name, t in targets.items():
        try:
            out[str(name)] = {k: float(t[k]) for k in ("a", "b", "n", "scale")}
        except (KeyError, TypeError, ValueError):
            continue
    return out


def save_costs(path: Path, model: CostModel, scale: float, min_tests: int = 20) -> None:
    """Merge this run's fits (targets with at least min_tests finished tests)
    into the file, atomically; errors are ignored (see load_costs)."""
    costs = load_costs(path)
    for target, sums in model.done.items():
        if sums.n >= min_tests and scale > 0:
            a, b = sums.fit()
            costs[target] = {"a": a, "b": b, "n": float(sums.n), "scale": scale}
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(f"{path}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": COSTS_VERSION, "targets": costs}, indent=1))
        tmp.replace(path)
    except OSError:
        pass


def expected_seconds(work: dict[str, tuple[str, float]], costs: dict[str, dict[str, float]]
                     ) -> tuple[float | None, list[str]]:
    """(seconds the whole work is expected to take from remembered costs,
    the targets with no remembered cost). None when any target has none."""
    per: dict[str, list[float]] = {}
    for target, flops in work.values():
        n_f = per.setdefault(target, [0.0, 0.0])
        n_f[0] += 1
        n_f[1] += flops
    unknown = sorted(t for t in per if t not in costs)
    if unknown:
        return None, unknown
    total = sum((costs[t]["a"] * n + costs[t]["b"] * f) * costs[t]["scale"]
                for t, (n, f) in per.items())
    return total, []


@dataclass
class ProgressCounter:
    """Counts finished case tests; `tick(elapsed)` returns a line when a new
    tenth of the total is reached (None otherwise). With `work` (test id ->
    (target, flops)) and each test's own duration, the ETA comes from the
    cost model; without, from the average test so far."""

    total: int
    steps: int = 10
    done: int = 0
    failed: int = 0
    work: dict[str, tuple[str, float]] = field(default_factory=dict)
    model: CostModel = field(default_factory=CostModel)
    _shown: int = 0
    _seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        for target, flops in self.work.values():
            self.model.plan(target, flops)

    def scale(self, elapsed_s: float) -> float:
        """Wall seconds per modelled second so far (0: nothing modelled yet)."""
        modelled = self.model.modelled_done()
        return elapsed_s / modelled if modelled > 0 else 0.0

    def left(self, elapsed_s: float) -> float:
        """Seconds still to go."""
        modelled = self.model.modelled_done()
        if modelled > 0:
            return elapsed_s / modelled * self.model.modelled_left()
        return elapsed_s / max(1, self.done) * (self.total - self.done)

    def tick(self, elapsed_s: float, failed: bool = False, test_id: str = "",
             seconds: float | None = None) -> str | None:
        self.done += 1
        self.failed += int(failed)
        if test_id in self.work and test_id not in self._seen and seconds is not None:
            self._seen.add(test_id)
            target, flops = self.work[test_id]
            self.model.finish(target, flops, seconds)
        step = self.done * self.steps // max(1, self.total)
        if step <= self._shown and self.done != self.total:
            return None
        self._shown = step
        left = 0.0 if self.done >= self.total else self.left(elapsed_s)
        bad = f", {self.failed} failed" if self.failed else ""
        return (f"[{self.done}/{self.total} cases {self.done / max(1, self.total):.0%}{bad}; "
                f"elapsed {hms(elapsed_s)} ETA {hms(left)}]")
