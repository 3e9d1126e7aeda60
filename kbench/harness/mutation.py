"""The mutation campaign: applies each mutant of the catalog in a scratch
tree, rebuilds what it touches, runs the suites it declares and records
whether they killed it.

A mutant is *killed* when every one of its kill runs fails (so a mutant
caught on one target but not on another that runs the same code is a
survivor); *survived* otherwise; *equivalent* when it survives and its file
explains why no test can tell; *stale* when its fragment no longer occurs
exactly once (the code was rewritten); *invalid* when a kill run already
fails without the mutant (the baseline), so a failure would prove nothing;
*error* when it could not be built or run. The kill rate counts killed over
every mutant that was not stale.

With lanes > 1 the mutants run that many at a time, each lane in a
scratch tree and build cache of its own (a mutant edits its tree in place),
taking the next mutant in the campaign's order when it is free; the time
budget and the pinned mutants hold for the campaign as a whole.

Output, in a run folder: run.json (kind "mutation-campaign", the summary),
mutation.json (every mutant: status, per run the exit code, the failed
tests and their count, the time), mutants.csv, an empty results.csv (so
`kbench report` reads the folder) and logs/ (each run's pytest output)."""

from __future__ import annotations

import contextlib
import csv
import fnmatch
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbench.harness import mutants as mut
from kbench.harness.mutbuild import ARTIFACTS, Builder, BuildError, ScratchTree
from kbench.results.store import COLUMNS, machine_metadata

KILLED, SURVIVED, EQUIVALENT, STALE, INVALID, ERROR = (
    "killed", "survived", "equivalent", "stale", "invalid", "error")
STATUSES = (KILLED, SURVIVED, EQUIVALENT, STALE, INVALID, ERROR)
Say = Callable[[str], None]


@dataclass
class RunOutcome:
    """One kill run of one mutant (or of the unmutated tree: the baseline)."""

    target: str
    suites: list[str]
    args: list[str]
    exit_code: int
    killed: bool
    tests: int = 0
    failed: int = 0  # failed tests (each kbench verdict is one test)
    failed_tests: list[str] = field(default_factory=list)  # the first few
    seconds: float = 0.0
    note: str = ""
    log: str = ""


@dataclass
class MutantResult:
    id: str
    area: str
    description: str
    status: str
    detail: str = ""
    equivalent: str = ""
    pinned: bool = False
    runs: list[RunOutcome] = field(default_factory=list)
    built: list[str] = field(default_factory=list)
    compiled: int = 0
    seconds: float = 0.0

    @property
    def killing_tests(self) -> int:
        return sum(r.failed for r in self.runs)


@dataclass
class Options:
    repo: Path
    catalog: Path
    out: Path
    select: list[str] = field(default_factory=list)  # id patterns (fnmatch)
    areas: list[str] = field(default_factory=list)
    sample: int | None = None  # pinned + this many others, rotated by `rotate`
    rotate: str = ""
    budget_s: float | None = None  # start no new unpinned mutant after this (from the start)
    quick: bool = False  # stop each kill run at its first failure (-x)
    baseline: bool = True
    timeout_s: float = 1200.0
    jobs: int = 2
    artifacts: list[str] | None = None  # builds to make (None: whatever the runs may use)
    lanes: int = 1  # mutants run at a time, each in its own scratch tree


def select(catalog: list[mut.Mutant], opts: Options) -> list[mut.Mutant]:
    """The mutants to run, in order: by id/area filters, then (with a sample)
    the pinned ones first and the others rotated by the rotation key."""
    chosen = [m for m in catalog
              if (not opts.select or any(fnmatch.fnmatch(m.id, p) for p in opts.select))
              and (not opts.areas or m.area in opts.areas)]
    if opts.sample is None:
        return chosen
    pinned = [m for m in chosen if m.pinned]
    others = sorted((m for m in chosen if not m.pinned),
                    key=lambda m: hashlib.sha256(f"{opts.rotate}/{m.id}".encode()).hexdigest())
    return pinned + others[:opts.sample]


def _junit(path: Path) -> tuple[int, list[str]]:
    """(tests, failed test ids) from a pytest JUnit XML file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return 0, []
    tests, failed = 0, []
    for case in root.iter("testcase"):
        tests += 1
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(f"{case.get('classname', '')}::{case.get('name', '')}")
    return tests, failed


@dataclass
class _Shared:
    """What the lanes of one campaign share (under the lock)."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    baselines: dict[str, RunOutcome] = field(default_factory=dict)
    results: list[MutantResult] = field(default_factory=list)
    log_n: int = 0


class Campaign:
    def __init__(self, opts: Options, say: Say, lane: int = 0,
                 shared: _Shared | None = None) -> None:
        self.opts, self.say, self.lane = opts, say, lane
        self.out = Path(opts.out).resolve()  # the suites run in the scratch tree
        root = Path(opts.repo).resolve() / "build" / "mutation"
        # lane 0 keeps the single campaign's folders; each further lane has its own
        self.cache = root if lane == 0 else root / f"lane{lane}"
        self.tree = ScratchTree(opts.repo, self.cache / "tree")
        self.tools = Path(os.environ.get("KBENCH_TOOLS", Path(opts.repo) / ".tools")).resolve()
        self.builder = Builder(self.tree, self.cache, self.tools, say, opts.jobs)
        self.shared = shared or _Shared()

    @property
    def baselines(self) -> dict[str, RunOutcome]:
        return self.shared.baselines

    @property
    def results(self) -> list[MutantResult]:
        return self.shared.results

    # ---- running suites -------------------------------------------------------------

    def _pytest(self, run: mut.KillRun, label: str, quick: bool) -> RunOutcome:
        with self.shared.lock:
            self.shared.log_n += 1
            stem = f"{self.shared.log_n:04d}-{label}"
        logs = self.out / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        junit = logs / f"{stem}.xml"
        log = logs / f"{stem}.log"
        cmd = [sys.executable, "-m", "pytest", *run.pytest_args(), f"--junitxml={junit}"]
        if quick:
            cmd.append("-x")
        env = self.tree.env(self.tools, self.builder.scratch_pyroot
                            if self.builder.scratch_pyroot.exists() else None)
        start = time.monotonic()
        note = ""
        with open(log, "w") as fh:
            fh.write(" ".join(cmd) + "\n\n")
            fh.flush()
            proc = subprocess.Popen(cmd, cwd=self.tree.path, env=env, stdout=fh,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = proc.wait(timeout=self.opts.timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                code, note = -1, f"timed out after {self.opts.timeout_s:.0f} s"
        tests, failed = _junit(junit)
        # failed tests (1), a collection error (2), a crash of the test process (a
        # signal: negative) or a hang fail CI: killed; no tests collected (5) or a
        # usage error (4) say nothing about the mutant
        killed = code not in (0, 4, 5)
        if code == 2 and not note:
            note = "interrupted or collection error"
        elif code == 3:
            note = "pytest internal error"
        elif code < -1:
            try:
                note = f"the test process died ({signal.Signals(-code).name})"
            except ValueError:
                note = f"the test process died (signal {-code})"
        elif code in (4, 5):
            note = {4: "pytest usage error", 5: "no tests collected"}[code]
        return RunOutcome(run.target, list(run.suites), list(run.args), code, killed, tests,
                          len(failed), failed[:10], round(time.monotonic() - start, 1), note,
                          str(log.relative_to(self.out)))

    def _artifacts(self, kills: tuple[mut.KillRun, ...]) -> list[str]:
        """What the runs may use: every build this machine can make, except the
        emulated-Python module unless a run targets qemu-python (its link and
        key are the costly part)."""
        avail = self.builder.available()
        want = [a for a in ARTIFACTS if not avail[a]
                and (self.opts.artifacts is None or a in self.opts.artifacts)]
        if not any(k.target.startswith("qemu-python") for k in kills):
            want = [a for a in want if a != "aarch64-pyext"]
        return want

    def _missing(self, kills: tuple[mut.KillRun, ...]) -> str:
        avail = self.builder.available()
        for k in kills:
            if k.target.startswith("qemu-python") and avail["aarch64-pyext"]:
                return avail["aarch64-pyext"]
            if k.target.startswith("qemu") and avail["aarch64-worker"]:
                return avail["aarch64-worker"]
        return ""

    # ---- the campaign ---------------------------------------------------------------

    def prepare(self, chosen: list[mut.Mutant]) -> None:
        n = self.tree.create()
        self.say(f"scratch tree{f' of lane {self.lane}' if self.lane else ''}: {n} files in "
                 f"{self.tree.path}")
        kills = tuple(k for m in chosen for k in m.kills)
        want = self._artifacts(kills)
        start = time.monotonic()
        self.builder.ensure(want)
        self.say(f"baseline builds ({', '.join(want)}): {self.builder.compiled} objects "
                 f"compiled in {time.monotonic() - start:.0f} s")

    def baseline(self, run: mut.KillRun) -> RunOutcome:
        """The run on the unmutated tree (once per distinct run, whichever lane
        asks first; another lane asking meanwhile waits for it)."""
        with self.shared.lock:
            return self._baseline(run)

    def _baseline(self, run: mut.KillRun) -> RunOutcome:
        if run.key not in self.baselines:
            out = self._pytest(run, "baseline", False)
            self.baselines[run.key] = out
            state = "passes" if not out.killed and out.exit_code == 0 else \
                f"FAILS (exit {out.exit_code}, {out.failed} failed tests)"
            self.say(f"  baseline {run.key}: {state} in {out.seconds:.0f} s")
        return self.baselines[run.key]

    def run_one(self, m: mut.Mutant) -> MutantResult:
        start = time.monotonic()
        res = MutantResult(m.id, m.area, m.description, ERROR, equivalent=m.equivalent,
                           pinned=m.pinned)
        stale = mut.stale_reason(m, self.tree.path)
        if stale:
            res.status, res.detail = STALE, stale
            return res
        missing = self._missing(m.kills)
        if missing:
            res.detail = f"cannot run here: {missing}"
            return res
        try:  # the unmutated builds, in place again after an earlier mutant's
            self.builder.ensure(self._artifacts(m.kills))
        except BuildError as exc:
            res.detail = f"baseline build failed: {exc}"
            return res
        if self.opts.baseline:
            for k in m.kills:
                b = self.baseline(k)
                if b.exit_code != 0:
                    res.status = INVALID
                    res.detail = f"the run {k.key!r} fails without the mutant (exit {b.exit_code})"
                    return res
        originals = mut.apply(m, self.tree.path)
        try:
            self.tree.touched(list(originals))
            try:
                res.built = self.builder.ensure(self._artifacts(m.kills)) if m.native else []
                res.compiled = self.builder.compiled
            except BuildError as exc:
                res.detail = f"build failed: {exc}"
                return res
            for k in m.kills:
                res.runs.append(self._pytest(k, m.id, self.opts.quick))
        finally:
            mut.restore(originals)
            self.tree.touched(list(originals))
        if all(r.killed for r in res.runs):
            res.status = KILLED
            res.detail = "; ".join(f"{r.target}: {r.failed} failed" + (f" ({r.note})"
                                                                       if r.note else "")
                                   for r in res.runs)
        else:
            alive = [r for r in res.runs if not r.killed]
            res.status = EQUIVALENT if m.equivalent else SURVIVED
            res.detail = "; ".join(f"survived {r.target} {' '.join(r.suites)}"
                                   + (f" ({r.note})" if r.note else "") for r in alive)
        res.seconds = round(time.monotonic() - start, 1)
        return res

    def run(self, catalog: list[mut.Mutant]) -> dict[str, Any]:
        chosen = select(catalog, self.opts)
        from kbench.errors import KbenchError
        from kbench.results.runlock import lock_folder
        from kbench.results.store import RunDirError
        try:  # held until this process exits: a second campaign into the folder is refused
            self._lock = lock_folder(self.out)
        except RunDirError as exc:
            raise KbenchError(f"--out: {exc}", "out") from None
        meta = {"kind": "mutation-campaign", **machine_metadata(),
                "catalog": str(self.opts.catalog), "mutants_in_catalog": len(catalog),
                "selected": [m.id for m in chosen], "quick": self.opts.quick,
                "baseline": self.opts.baseline, "budget_s": self.opts.budget_s,
                "rotate": self.opts.rotate, "lanes": self.opts.lanes, "complete": False}
        self._write_meta(meta)
        (self.out / "results.csv").write_text(",".join(COLUMNS) + "\n")
        start = time.monotonic()
        lanes = [self] + [Campaign(self.opts, self.say, i, self.shared)
                          for i in range(1, max(1, self.opts.lanes))]
        queue = list(enumerate(chosen))
        not_run: list[str] = []
        # lane 0 builds first, alone on the cores; the later lanes build while it runs mutants
        prepared = threading.Event()

        def next_mutant() -> tuple[int, mut.Mutant] | None:
            """The next mutant to run (None: none left); pinned mutants always
            run, the others only while the budget lasts."""
            with self.shared.lock:
                while queue:
                    i, m = queue.pop(0)
                    over = (self.opts.budget_s is not None
                            and time.monotonic() - start > self.opts.budget_s)
                    if not over or m.pinned:
                        return i, m
                    rest = [m.id] + [x.id for _, x in queue if not x.pinned]
                    if not not_run:
                        self.say(f"budget of {self.opts.budget_s:.0f} s spent: {len(rest)} "
                                 "mutants not run")
                    not_run.extend(x for x in rest if x not in not_run)
                    queue[:] = [(j, x) for j, x in queue if x.pinned]
                return None

        def work(lane: Campaign) -> None:
            if lane.lane:
                prepared.wait()
            try:
                lane.prepare(chosen)
            finally:
                prepared.set()
            while (item := next_mutant()) is not None:
                i, m = item
                self.say(f"[{i + 1}/{len(chosen)}] {m.id} ({m.area})")
                r = lane.run_one(m)
                with self.shared.lock:
                    self.results.append(r)
                    who = f" {m.id}" if len(lanes) > 1 else ""
                    self.say(f"  ->{who} {r.status.upper()} in {r.seconds:.0f} s"
                             + (f": {r.detail}" if r.detail else ""))
                    self._write_results()

        if len(lanes) == 1:
            work(self)
        else:
            errors: list[BaseException] = []

            def guarded(lane: Campaign) -> None:
                try:
                    work(lane)
                except BaseException as exc:  # re-raised below, in the caller's thread
                    with self.shared.lock:
                        errors.append(exc)
                        queue.clear()
            threads = [threading.Thread(target=guarded, args=(lane,), daemon=True)
                       for lane in lanes]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise errors[0]
        # results in the campaign's order, whichever lane finished first
        order = {m.id: i for i, m in enumerate(chosen)}
        self.results.sort(key=lambda r: order.get(r.id, len(order)))
        summary = summarize(self.results)
        summary["not_run"] = not_run
        summary["seconds"] = round(time.monotonic() - start, 1)
        meta.update(complete=True, summary=summary)
        self._write_meta(meta)
        self._write_results(summary)
        return summary

    def _write_meta(self, meta: dict[str, Any]) -> None:
        tmp = self.out / "run.json.tmp"
        tmp.write_text(json.dumps(meta, indent=2, default=str))
        tmp.replace(self.out / "run.json")

    def _write_results(self, summary: dict[str, Any] | None = None) -> None:
        data = {"mutants": [asdict(r) for r in self.results],
                "baselines": {k: asdict(v) for k, v in self.baselines.items()},
                "summary": summary or summarize(self.results)}
        (self.out / "mutation.json").write_text(json.dumps(data, indent=1))
        with open(self.out / "mutants.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "area", "status", "killing_tests", "seconds", "compiled",
                        "detail", "equivalent", "description"])
            for r in self.results:
                w.writerow([r.id, r.area, r.status, r.killing_tests, r.seconds, r.compiled,
                            r.detail, r.equivalent, r.description])


def summarize(results: list[MutantResult]) -> dict[str, Any]:
    """Counts per status and per area, the kill rate (killed over every mutant
    that is not stale) and the unexplained survivors."""
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    areas: dict[str, dict[str, int]] = {}
    for r in results:
        a = areas.setdefault(r.area, dict.fromkeys(STATUSES, 0))
        a[r.status] += 1
    live = len(results) - counts[STALE]
    return {
        "mutants": len(results), "counts": counts, "areas": areas,
        "kill_rate": counts[KILLED] / live if live else 0.0,
        "survivors": [r.id for r in results if r.status == SURVIVED],
        "equivalent": [r.id for r in results if r.status == EQUIVALENT],
        "problems": [r.id for r in results if r.status in (INVALID, ERROR)],
    }
