"""The machine-code mutation campaign (`kbench mutate --plugin LIB --target
T`): mutants of a user's shared library, one instruction word each, in the
code kbench's suites executed on the target, judged by kbench's suites and,
beside them, by another test suite (--external-test).

1. Baseline: `kbench run` of the chosen suites on the unmutated library with
   machine-code coverage (kbench.targets.coverage), whose QEMU logs say which
   instructions of the library ran. Where a chosen realization declares the
   functions its calls must run in (expect_symbols), what ran in each call
   decides verdicts too (kbench.targets.whatran), which a run with coverage
   does not trace: the suites then also run as a user's run does. Each run
   must pass, and so must the external test.
2. Plan: every mutation of the executed instructions (kbench.harness.mcsites,
   kbench.targets.a64patch), and the sample (stratified by function).
3. Each mutant: a copy of the library with the word patched at its file
   offset; `kbench run` of the chosen suites on it (each plugin call in the
   target's worker: a crash, exit or hang is a verdict), stopping at the
   first failure, with coverage (or, where what ran decides verdicts, as a
   user's run, and with coverage again only if every suite passed); the
   external test on the same file. kbench's status: killed (a verdict
   failed, the run hung past its bound, or kbench refused to load the
   library: `kbench info` gives the reason); not-reached (every suite passed
   and the mutated instruction never ran); likely-equivalent (every suite
   passed and the equivalence probe, kbench.harness.mcprobe, saw
   bit-identical outputs and the same instruction trace); survived (every
   suite passed otherwise); error (a run could not judge it).

The run folder: run.json (kind "mc-mutation-campaign", the settings,
complete or not), baseline/ (the baseline run with coverage; baseline-run/
the one as a user's run, where that is needed), plan.json (every planned
mutant and the sample), journal.jsonl (one line per finished mutant,
appended as it finishes), mcmutation.json and mutants.csv (rewritten after
each mutant), logs/ (each mutant's kbench run and external test output) and
an empty results.csv, so `kbench report` reads the folder. A campaign
interrupted (Ctrl-C, SIGTERM) keeps every finished mutant and says
INCOMPLETE; the same command with --out that folder resumes it, running
only the mutants not finished."""

from __future__ import annotations

import contextlib
import csv
import fnmatch
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import KbenchError
from kbench.harness import coverage_run, mcprobe, mcsites
from kbench.results import mcmutation as mcm
from kbench.results.store import COLUMNS, machine_metadata
from kbench.targets import coverage, whatran
from kbench.targets.a64asm import Disassembler
from kbench.targets.a64patch import patch
from kbench.targets.crossbuild import SYSROOT_AARCH64
from kbench.targets.spec import parse_qemu
from kbench.targets.tools import find_qemu

PLAN, JOURNAL, CSV = "plan.json", "journal.jsonl", "mutants.csv"
DEFAULT_SHAPES = ("smoke", "tails")
CSV_COLUMNS = ["id", "function", "offset", "file_offset", "operator", "variant", "status",
               "external", "detail", "external_detail", "source", "old_text", "new_text",
               "seconds"]
Say = Callable[[str], None]


class CampaignError(KbenchError):
    """The campaign cannot start or go on (a failing baseline, a folder of
    another campaign, ...)."""


class Interrupted(KbenchError):  # noqa: N818 - what happened, as the CLI says it
    """Ctrl-C or SIGTERM: the folder is finalised as incomplete."""


@dataclass
class Options:
    library: Path
    target: str
    out: Path
    realizations: tuple[str, ...] = ()
    suite: str = "all"
    shapes: tuple[str, ...] = DEFAULT_SHAPES
    sample: int | None = None
    rotate: str = ""
    budget_s: float | None = None
    timeout_s: float | None = None  # per kbench run (None: from the baseline's time)
    lanes: int = 1
    external: str = ""
    select: tuple[str, ...] = ()  # id patterns (fnmatch)
    functions: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()
    probe: bool = True

    def settings(self, sha: str) -> dict[str, Any]:
        """What a resumed campaign must share with the one it resumes (the
        selection, --mutant, --sample and --rotate, may change: finished
        mutants are kept, the others run)."""
        return {"library": str(self.library), "library_sha256": sha, "target": self.target,
                "realizations": list(self.realizations), "suite": self.suite,
                "shapes": list(self.shapes), "external": self.external,
                "functions": list(self.functions), "operators": list(self.operators),
                "probe": self.probe}

    def selection(self) -> dict[str, Any]:
        return {"select": list(self.select), "sample": self.sample, "rotate": self.rotate}


@dataclass
class Result:
    id: str
    function: str
    offset: int
    file_offset: int
    operator: str
    variant: str
    old_text: str
    new_text: str
    source: str
    listing: list[str]
    status: str = mcm.ERROR
    detail: str = ""
    external: str = ""  # killed, survived ("" without an external test)
    external_detail: str = ""
    seconds: float = 0.0
    log: str = ""


@dataclass
class Baseline:
    seconds: float
    external_seconds: float = 0.0
    cases: int = 0
    executed: int = 0  # instructions of the library that ran
    instructions: int = 0
    functions: dict[str, list[int]] = field(default_factory=dict)  # executed, all
    # a chosen realization declares the functions its calls must run in (expect_symbols):
    # what ran, traced in a run without coverage, decides verdicts
    traced: bool = False


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def qemu_prefix(spec: str) -> str:
    """`{target}` of an external test: the QEMU command line that runs an
    aarch64 program as the target's worker runs (its CPU and vector length,
    the cross sysroot for a dynamically linked program)."""
    q = parse_qemu(spec)
    cmd = [find_qemu(), "-L", str(SYSROOT_AARCH64), "-cpu", q.qemu_cpu]
    if q.isa:
        cmd += ["-E", f"KBENCH_ISA_CAP={q.isa}"]
    return shlex.join(cmd)


def external_command(template: str, library: Path, spec: str) -> str:
    return template.replace("{lib}", shlex.quote(str(library))).replace(
        "{target}", qemu_prefix(spec))


def pace_eta(elapsed: float, finished: int, left: int) -> float:
    """Seconds until the campaign ends at its own pace so far: the wall time
    since this invocation's first mutant started (every lane at once) per
    mutant it finished, times the mutants left."""
    return elapsed / finished * left if finished else 0.0


def _fmt(seconds: float) -> str:
    s = int(max(0, seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class _Procs:
    """The child processes running now (killed as a group on an interrupt)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen[bytes]] = set()
        self.stopping = threading.Event()

    def run(self, cmd: list[str], log: Path, timeout: float) -> tuple[int | None, float]:
        """(exit code, or None when it ran past timeout and was killed; seconds)."""
        start = time.monotonic()
        with open(log, "ab") as fh:
            fh.write(("$ " + shlex.join(cmd) + "\n").encode())
            fh.flush()
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            with self.lock:
                self.running.add(proc)
            try:
                code: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill(proc)
                code = None
            except BaseException:  # an interrupt: the child (its own session) goes too
                self.kill(proc)
                raise
            finally:
                with self.lock:
                    self.running.discard(proc)
            fh.write(f"\n[exit {code}, {time.monotonic() - start:.1f} s]\n".encode())
        return code, time.monotonic() - start

    @staticmethod
    def kill(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def stop(self) -> None:
        self.stopping.set()
        with self.lock:
            procs = list(self.running)
        for p in procs:
            self.kill(p)


class Campaign:
    def __init__(self, opts: Options, say: Say) -> None:
        self.opts, self.say = opts, say
        self.out = Path(opts.out).resolve()
        self.lib = Path(opts.library).resolve()
        self.procs = _Procs()
        self.lock = threading.Lock()
        self.results: dict[str, Result] = {}
        self.baseline: Baseline | None = None
        self.base_probe: mcprobe.Probe | None = None
        self.probe_lock = threading.Lock()
        self.meta: dict[str, Any] = {}
        self.not_run: list[str] = []
        self.planned: dict[str, int] = {}  # planned mutants per operator
        self.started = time.monotonic()
        self.seconds = 0.0  # wall time of the earlier invocations (run.json)

    # ---- kbench runs -------------------------------------------------------------------

    def kbench_cmd(self, library: Path, run_dir: Path, mutant: bool, with_coverage: bool
                   ) -> list[str]:
        """`kbench run` of the campaign's suites on a library. Without coverage
        it runs as a user's run does (on a qemu: target with plugins, what ran
        in each call is traced and checked: kbench.targets.whatran); with it,
        QEMU logs the blocks it runs instead, which say what code ran."""
        o = self.opts
        cmd = [sys.executable, "-m", "kbench.cli", "run", "--suite", o.suite, "--target",
               o.target, "--plugin", str(library), "--no-history", "--no-report",
               "--out", str(run_dir), "--force", "-n", "1",
               # a plugin probe's or packer check's finding fails the run, as any verdict
               "--strict-plugins"]
        cmd += ["--coverage"] if with_coverage else []
        cmd += [a for r in o.realizations for a in ("--realization", r)] or ["--backend",
                                                                            "plugin"]
        cmd += [a for s in o.shapes for a in ("--shapes", s)]
        if mutant:
            assert self.baseline is not None
            cmd += ["--call-timeout", f"{self.call_timeout():.0f}", "-x"]
        return cmd

    def call_timeout(self) -> float:
        """A call of a mutant may take at most this long: the whole baseline run
        twice (no single call of it took longer), at least 20 s."""
        assert self.baseline is not None
        return max(20.0, 2 * self.baseline.seconds)

    def run_timeout(self) -> float:
        assert self.baseline is not None
        if self.opts.timeout_s is not None:
            return self.opts.timeout_s
        return 4 * self.baseline.seconds + 3 * self.call_timeout() + 60

    def external_timeout(self) -> float:
        assert self.baseline is not None
        return max(60.0, 10 * self.baseline.external_seconds)

    # ---- setup ---------------------------------------------------------------------------

    def _load_or_start(self, sha: str) -> list[mcsites.Planned]:
        """The mutants to run: the selection from the plan of the campaign being
        resumed, or from a plan made afresh after the baseline."""
        settings = self.opts.settings(sha)
        from kbench.results.runlock import lock_folder
        from kbench.results.store import LOCK_NAME, RunDirError
        fresh = not self.out.exists() or not any(self.out.iterdir())
        try:  # held until this process exits: a second campaign into the folder is refused
            self._lock = lock_folder(self.out)
        except RunDirError as exc:
            raise CampaignError(f"mutate: --out: {exc}", "out") from None
        meta_path = self.out / "run.json"
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
            except (OSError, ValueError) as exc:
                raise CampaignError(f"mutate: {meta_path} cannot be read ({exc}); use another "
                                    "--out", "out") from exc
            if meta.get("kind") != mcm.KIND:
                raise CampaignError(f"mutate: {self.out} holds another kind of run "
                                    f"({meta.get('kind', 'a kbench run')}); use another --out",
                                    "out")
            differ = [k for k, v in settings.items() if meta.get("settings", {}).get(k) != v]
            if differ:
                raise CampaignError(
                    f"mutate: {self.out} holds a campaign with other settings ("
                    + ", ".join(f"{k}: {meta['settings'].get(k)!r} there, {settings[k]!r} now"
                                for k in differ[:3]) + "); use another --out", "out")
            if (self.out / PLAN).exists():
                self.meta = meta
                self.seconds = float(meta.get("seconds", 0.0))
                return self._choose(self._resume())
        elif not fresh and any(p.name != LOCK_NAME for p in self.out.iterdir()):
            raise CampaignError(f"mutate: {self.out} exists and is not a campaign's folder; "
                                "use another --out", "out")
        self.out.mkdir(parents=True, exist_ok=True)
        self.meta = {"kind": mcm.KIND, **machine_metadata(), "settings": settings,
                     "complete": False, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
        self._write_meta()
        (self.out / "results.csv").write_text(",".join(COLUMNS) + "\n")
        return self._choose(self._start())

    def _choose(self, planned: list[mcsites.Planned]) -> list[mcsites.Planned]:
        """This invocation's selection of the planned mutants, with their listings."""
        pool = [m for m in planned
                if not self.opts.select or any(_match(m.id, p) for p in self.opts.select)]
        chosen = mcsites.sample(pool, self.opts.sample, self.opts.rotate)
        mcsites.annotate(self.lib, chosen)
        self.meta["selection"] = self.opts.selection()
        self.planned = _count(planned, "operator")
        done = sum(m.id in self.results for m in chosen)
        self.say(f"{len(planned)} mutants planned in the executed code; running {len(chosen)}"
                 + (f" (a sample stratified by function, key {self.opts.rotate!r})"
                    if self.opts.sample is not None else "")
                 + (f", {done} of them finished before" if done else ""))
        return chosen

    def _resume(self) -> list[mcsites.Planned]:
        plan = json.loads((self.out / PLAN).read_text())
        self.baseline = Baseline(**plan["baseline"])
        journal = self.out / JOURNAL
        if journal.exists():
            for line in journal.read_text().splitlines():
                try:
                    r = Result(**json.loads(line))
                except (ValueError, TypeError):
                    continue  # a line cut short by a kill: its mutant runs again
                self.results[r.id] = r
        self.say(f"resuming {self.out}: its baseline, its plan and {len(self.results)} "
                 "finished mutants")
        return [mcsites.Planned.from_json(d) for d in plan["planned"]]

    def _start(self) -> list[mcsites.Planned]:
        disasm = Disassembler()  # before the baseline: without llvm-mc no plan can be made
        base_dir = self.out / "baseline"
        secs = self._baseline_run(base_dir, True)
        traced = whatran.enabled() and self._declares_symbols(base_dir)
        if traced:  # the mutants run without coverage, as a user's run: so must this one
            secs = max(secs, self._baseline_run(self.out / "baseline-run", False))
        logs = coverage_run.log_dir(base_dir, self.opts.target)
        executed = coverage.executed_offsets(logs, self.lib)
        if not executed:
            raise CampaignError(f"mutate: no instruction of {self.lib} ran in the baseline (see "
                                f"{self.out / 'baseline.log'})", "plugin")
        self.baseline = Baseline(round(secs, 1), cases=_rows(base_dir / "results.csv"),
                                 traced=traced)
        ext_s = 0.0
        if self.opts.external:
            cmd = external_command(self.opts.external, self.lib, self.opts.target)
            code, ext_s = self.procs.run(["/bin/sh", "-c", cmd], self.out / "baseline.log", 3600)
            self._check_interrupt()
            if code != 0:
                raise CampaignError(
                    f"mutate: the external test fails on the unmutated library (exit {code}: "
                    f"{cmd}; see {self.out / 'baseline.log'}): it cannot judge mutants",
                    "external-test")
        self.baseline.external_seconds = round(ext_s, 2)
        plan = mcsites.plan(self.lib, executed, disasm, self.opts.functions,
                            self.opts.operators)
        self.baseline.executed = len(executed)
        self.baseline.instructions = sum(n for _, n in plan.functions.values())
        self.baseline.functions = {k: list(v) for k, v in plan.functions.items()}
        self.say(f"baseline passed in {secs:.0f} s ({self.baseline.cases} verdicts); "
                 f"{len(executed)} of the library's instructions ran"
                 + (f"; external test passed in {ext_s:.1f} s" if self.opts.external else ""))
        tmp = self.out / (PLAN + ".tmp")
        tmp.write_text(json.dumps({"baseline": asdict(self.baseline),
                                   "by_operator": _count(plan.mutants, "operator"),
                                   "planned": [m.to_json() for m in plan.mutants]}))
        tmp.replace(self.out / PLAN)
        return plan.mutants

    def _baseline_run(self, run_dir: Path, with_coverage: bool) -> float:
        """A baseline `kbench run` (it must pass); its seconds."""
        how = "with coverage" if with_coverage else "as the mutants run (what ran traced)"
        self.say(f"baseline: kbench run on the unmutated library {how} -> {run_dir}")
        code, took = self.procs.run(self.kbench_cmd(self.lib, run_dir, False, with_coverage),
                                    self.out / "baseline.log", 7200)
        self._check_interrupt()
        if code != 0 or _first_failure(run_dir / "results.csv"):
            raise CampaignError(
                f"mutate: the suites do not pass on the unmutated library {how} (exit {code}; "
                f"see {self.out / 'baseline.log'}): a mutant's failure would prove nothing",
                "plugin")
        return took

    def _declares_symbols(self, run_dir: Path) -> bool:
        """Does a chosen realization of the library declare the functions its
        calls must run in? Only then does what ran (kbench.targets.whatran,
        off in a run with coverage) decide a verdict."""
        try:
            meta = json.loads((run_dir / "run.json").read_text())
        except (OSError, ValueError):
            return True  # unknown: run the mutants as a user's run, to be sure
        return any(r.get("plugin") and r.get("expect_symbols")
                   and (not self.opts.realizations or r.get("name") in self.opts.realizations)
                   for t in (meta.get("targets") or {}).values() if isinstance(t, dict)
                   for r in t.get("realizations") or [] if isinstance(r, dict))

    def _check_interrupt(self) -> None:
        if self.procs.stopping.is_set():
            raise Interrupted("interrupted", "interrupt")

    # ---- one mutant ------------------------------------------------------------------------

    def run_one(self, m: mcsites.Planned, index: int, lane: int) -> Result | None:
        """The mutant's result (None: interrupted, nothing recorded)."""
        start = time.monotonic()
        r = Result(m.id, m.function, m.offset, m.file_offset, m.operator, m.variant,
                   m.old_text, m.new_text, m.source, list(m.listing))
        work = self.out / "work" / f"lane{lane:02d}"
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        lib = work / self.lib.name
        lib.write_bytes(patch(self.lib.read_bytes(), m.file_offset, m.old, m.new))
        (self.out / "logs").mkdir(exist_ok=True)
        log = self.out / "logs" / f"{index:04d}.log"
        log.write_text(f"{m.id}: {m.old_text} -> {m.new_text}\n")
        r.log = str(log.relative_to(self.out))
        run_dir = work / "run"
        # traced: as a user's run (what ran decides verdicts), then, if it passes, again with
        # coverage for the reach; else one run with coverage does both
        traced = self.baseline is not None and self.baseline.traced
        code, secs = self.procs.run(self.kbench_cmd(lib, run_dir, True, not traced), log,
                                    self.run_timeout())
        if self.procs.stopping.is_set():
            return None
        r.status, r.detail = self._judge(code, secs, run_dir, lib, m, log, reach=not traced)
        if traced and r.status == mcm.SURVIVED:  # did the mutated instruction run?
            cov_dir = work / "coverage-run"
            code, secs = self.procs.run(self.kbench_cmd(lib, cov_dir, True, True), log,
                                        self.run_timeout())
            if self.procs.stopping.is_set():
                return None
            r.status, r.detail = self._judge(code, secs, cov_dir, lib, m, log, reach=True)
        if self.opts.external:
            cmd = external_command(self.opts.external, lib, self.opts.target)
            ecode, esecs = self.procs.run(["/bin/sh", "-c", cmd], log, self.external_timeout())
            if self.procs.stopping.is_set():
                return None
            if ecode == 0:
                r.external, r.external_detail = mcm.SURVIVED, f"passed in {esecs:.1f} s"
            else:
                r.external = mcm.KILLED
                r.external_detail = (f"timed out after {esecs:.0f} s" if ecode is None else
                                     f"exit {ecode}" if ecode > 0 else
                                     f"died of {_signame(-ecode)}")
        if r.status == mcm.SURVIVED and self.opts.probe:
            r.status, r.detail = self._probe(lib)
            if self.procs.stopping.is_set():
                return None
        if r.status == mcm.EQUIVALENT and r.external == mcm.KILLED:
            r.status = mcm.SURVIVED
            r.detail += "; the external test tells it apart, so it is not equivalent"
        r.seconds = round(time.monotonic() - start, 1)
        return r

    def _judge(self, code: int | None, secs: float, run_dir: Path, lib: Path,
               m: mcsites.Planned, log: Path, reach: bool = False) -> tuple[str, str]:
        """kbench's status from a run; reach: the run had coverage, and a pass
        is a survivor only if the mutated instruction ran in it."""
        if code is None:
            return mcm.KILLED, f"the suites did not finish within {secs:.0f} s (a hang)"
        failure = _first_failure(run_dir / "results.csv")
        if code == 1 or (code == 0 and failure):
            return mcm.KILLED, failure or "a suite failed"
        if code == 0:
            if reach and m.addr not in coverage.executed_offsets(
                    coverage_run.log_dir(run_dir, self.opts.target), lib):
                return mcm.NOT_REACHED, "every suite passed; the mutated instruction never ran"
            return mcm.SURVIVED, "every suite passed"
        refused = self._refusal(lib, log)
        if refused:
            return mcm.KILLED, f"kbench refused the library: {refused}"
        how = f"died of {_signame(-code)}" if code < 0 else f"exit {code}"
        return mcm.ERROR, f"kbench run could not judge the mutant ({how}; see its log)"

    def _refusal(self, lib: Path, log: Path) -> str:
        """Why kbench refuses to load the library on the target ('' if it loads):
        `kbench info --plugin` says so in one line naming the file."""
        cmd = [sys.executable, "-m", "kbench.cli", "info", "--plugin", str(lib), "--target",
               self.opts.target]
        code, _ = self.procs.run(cmd, log, 300)
        if code == 0 or code is None:
            return ""
        for line in log.read_text(errors="replace").splitlines()[::-1]:
            if line.startswith("kbench:") and str(lib) in line:
                return line.split(f"{lib}:", 1)[-1].strip()[:300]
        return ""

    def _probe(self, lib: Path) -> tuple[str, str]:
        with self.probe_lock:  # the baseline's probe once, whichever lane asks first
            if self.base_probe is None:
                # from a path as long as the mutants' (work/laneNN/...): the worker's heap,
                # and with it a few alignment-dependent paths of its libc, depend on it
                base = self.out / "work" / "base00" / self.lib.name
                base.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self.lib, base)
                self.base_probe = mcprobe.probe(str(base), self.opts.target,
                                                self.opts.shapes, self.opts.realizations)
        got = mcprobe.probe(str(lib), self.opts.target, self.opts.shapes,
                            self.opts.realizations)
        same, why = mcprobe.compare(self.base_probe, got)
        return (mcm.EQUIVALENT if same else mcm.SURVIVED), f"every suite passed; {why}"

    # ---- the campaign --------------------------------------------------------------------

    def _prepared(self) -> list[mcsites.Planned]:
        """This invocation's mutants, after the baseline and the plan (or from
        the folder being resumed); an interrupt meanwhile finalises the folder."""
        try:
            return self._load_or_start(sha256(self.lib))
        except KeyboardInterrupt:
            self.procs.stop()
            self._finish([], interrupted=True)
            raise Interrupted("interrupted during the baseline", "interrupt") from None
        except CampaignError:  # refused: the folder is not this campaign's to write
            lock = getattr(self, "_lock", None)
            if lock is not None:
                lock.release()
            raise

    def plan_only(self) -> list[mcsites.Planned]:
        """The baseline and the plan (or the plan of the folder being resumed),
        without running a mutant: what `--list` shows."""
        chosen = self._prepared()
        self._write(chosen)
        self._write_meta()  # complete: false, nothing run yet
        return chosen

    def run(self) -> dict[str, Any]:
        """Runs (or resumes) the campaign; returns mcmutation.json's content.
        Raises Interrupted after finalising the folder on Ctrl-C/SIGTERM."""
        started = time.monotonic()
        chosen = self._prepared()
        index = {m.id: i for i, m in enumerate(chosen)}
        todo = [m for m in chosen if m.id not in self.results]
        total, done_before = len(chosen), len(chosen) - len(todo)
        queue = list(todo)
        session_done: list[float] = []
        first_start = time.monotonic()

        def next_mutant() -> mcsites.Planned | None:
            with self.lock:
                if not queue or self.procs.stopping.is_set():
                    return None
                over = (self.opts.budget_s is not None
                        and time.monotonic() - started > self.opts.budget_s)
                if over:
                    self.not_run = [x.id for x in queue]
                    self.say(f"budget of {self.opts.budget_s / 60:.1f} min spent: "
                             f"{len(queue)} mutants not run")
                    queue.clear()
                    return None
                return queue.pop(0)

        def work(lane: int) -> None:
            while (m := next_mutant()) is not None:
                r = self.run_one(m, index[m.id], lane)
                if r is None:
                    return
                with self.lock:
                    self.results[r.id] = r
                    session_done.append(time.monotonic())
                    self._journal(r)
                    self._write(chosen)
                    self._progress(r, len(self.results), total, done_before, session_done,
                                   first_start)

        lanes = max(1, min(self.opts.lanes, len(todo) or 1))
        errors: list[BaseException] = []

        def guarded(lane: int) -> None:
            try:
                work(lane)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                with self.lock:
                    errors.append(exc)
                    queue.clear()

        threads = [threading.Thread(target=guarded, args=(i,), daemon=True)
                   for i in range(lanes)]
        if todo:
            assert self.baseline is not None
            est = len(todo) * (self.baseline.seconds + self.baseline.external_seconds + 2) / lanes
            self.say(f"running {len(todo)} mutants on {lanes} lane(s); first estimate "
                     f"~{_fmt(est)} (from the baseline's time)")
        try:
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except KeyboardInterrupt:
            self.procs.stop()
            for t in threads:
                t.join(60)
            self._finish(chosen, interrupted=True)
            raise Interrupted(f"interrupted: {len(self.results)} of {total} mutants done",
                              "interrupt") from None
        if errors:
            self.procs.stop()
            self._finish(chosen, interrupted=True)
            raise errors[0]
        return self._finish(chosen, interrupted=False)

    def _progress(self, r: Result, done: int, total: int, before: int, stamps: list[float],
                  first: float) -> None:
        elapsed = time.monotonic() - first
        eta = pace_eta(elapsed, len(stamps), total - done)
        width = 24
        bar = "#" * round(width * done / total) + "-" * (width - round(width * done / total))
        ext = f"; external: {r.external}" if r.external else ""
        self.say(f"[{bar}] {done}/{total} {done / total:4.0%} elapsed {_fmt(elapsed)} "
                 f"ETA {_fmt(eta)}  {r.id}: {r.status}{ext} ({r.seconds:.1f} s)")

    def _journal(self, r: Result) -> None:
        with open(self.out / JOURNAL, "a") as fh:
            fh.write(json.dumps(asdict(r)) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def _ordered(self, chosen: list[mcsites.Planned]) -> list[Result]:
        return [self.results[m.id] for m in chosen if m.id in self.results]

    def _write(self, chosen: list[mcsites.Planned], complete: bool = False) -> dict[str, Any]:
        rows = [asdict(r) for r in self._ordered(chosen)]
        data = {"kind": mcm.KIND, "complete": complete, "settings": self.meta["settings"],
                "selection": self.meta.get("selection", {}),
                "baseline": asdict(self.baseline) if self.baseline else {},
                "planned": sum(self.planned.values()), "planned_by_operator": self.planned,
                "sampled": len(chosen), "not_run": self.not_run,
                "seconds": self.elapsed(),
                "summary": mcm.summarize(rows, bool(self.opts.external)), "mutants": rows}
        tmp = self.out / (mcm.DATA + ".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.out / mcm.DATA)
        tmp = self.out / (CSV + ".tmp")
        with open(tmp, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, extrasaction="ignore")
            w.writeheader()
            for row in rows:
                w.writerow({**row, "offset": f"{row['offset']:#x}",
                            "file_offset": f"{row['file_offset']:#x}"})
        tmp.replace(self.out / CSV)
        return data

    def _finish(self, chosen: list[mcsites.Planned], interrupted: bool) -> dict[str, Any]:
        complete = not interrupted and len(self.results) + len(self.not_run) >= len(chosen) \
            and bool(chosen or self.baseline)
        data = self._write(chosen, complete) if self.meta else {}
        if self.meta:
            self.meta.update(complete=complete, interrupted=interrupted,
                             summary=data.get("summary", {}), not_run=self.not_run,
                             seconds=self.elapsed())
            self._write_meta()
        shutil.rmtree(self.out / "work", ignore_errors=True)
        return data

    def elapsed(self) -> float:
        """Wall seconds of every invocation of this campaign so far."""
        return round(self.seconds + time.monotonic() - self.started, 1)

    def _write_meta(self) -> None:
        tmp = self.out / "run.json.tmp"
        tmp.write_text(json.dumps(self.meta, indent=2, default=str))
        tmp.replace(self.out / "run.json")


def _match(ident: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(ident, pattern)


def _count(mutants: list[mcsites.Planned], attr: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for m in mutants:
        key = getattr(m, attr)
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def _rows(path: Path) -> int:
    try:
        with open(path, newline="") as fh:
            return max(0, sum(1 for _ in csv.reader(fh)) - 1)
    except OSError:
        return 0


def _first_failure(path: Path) -> str:
    """The first verdict of a run that is neither pass nor skip, in one line."""
    try:
        with open(path, newline="") as fh:
            for row in csv.DictReader(fh):
                if row.get("status") not in ("pass", "skip", ""):
                    msg = " ".join(str(row.get("message", "")).split())
                    return (f"{row['status']}: {row.get('realization', '')} "
                            f"{row.get('case', '')} {row.get('kind', '')}: {msg}")[:300]
    except (OSError, csv.Error):
        pass
    return ""


def _signame(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
