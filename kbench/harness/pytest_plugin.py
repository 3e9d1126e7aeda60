"""pytest plugin behind the suites and `kbench run`.

Options choose targets, backends, realizations, catalogs and input kinds;
tests that take the `kb_job` fixture are parametrized over every case x
input kind x realization the targets offer, so a new backend or kernel is
picked up without new test code. Verdicts are recorded, written to a run
folder (--kb-out) as they come, and summarized at the end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kbench.errors import KbenchError
from kbench.harness import contracts
from kbench.harness.contracts import ContractCase
from kbench.harness.perf import PERF_KIND, PerfSettings, VirtualClock, eta_line
from kbench.harness.runner import InputCache, Job, applicable, jobs_for, random_kind
from kbench.harness.tune import default_realization, table_choice
from kbench.judge.verdict import Verdict
from kbench.native.api import DispatchTable, Realization
from kbench.native.calls import TargetInfo
from kbench.problems import catalog as catalogs
from kbench.problems.cases import Case, ConvCase, GemmCase
from kbench.results.store import RunDirError, RunWriter, machine_metadata
from kbench.results.summary import summary_dict, summary_text
from kbench.targets.spec import Target, parse_target


@dataclass
class KbSession:
    """Everything the plugin keeps for one pytest session (no module state)."""

    target_specs: list[str]
    backends: list[str]
    realizations: list[str]
    catalog_names: list[str]
    kinds: tuple[str, ...] | None
    out: Path | None
    targets: dict[str, Target] = field(default_factory=dict)
    infos: dict[str, TargetInfo] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    writer: RunWriter | None = None
    inputs: InputCache = field(default_factory=InputCache)
    perf_enabled: bool = False
    perf_settings: PerfSettings = field(default_factory=PerfSettings)
    perf_passes: int = 1  # sweeps of the perf catalogs (--kb-passes)
    clock: VirtualClock = field(default_factory=VirtualClock)
    perf_done: int = 0
    perf_total: int = 0
    perf_start: float = 0.0
    pending_lines: list[str] = field(default_factory=list)
    table: DispatchTable | None = None
    fingerprint_all: bool = False  # --kb-fingerprint: every realization, not peers only

    @property
    def fingerprint(self) -> bool | None:
        """What jobs ask for (Job.fingerprint): True for every realization,
        None for the default (peers only)."""
        return True if self.fingerprint_all else None

    def dispatch_jobs(self) -> list[Job]:
        """With a dispatch table: every case, run unforced; the realization
        that must run is the table's choice, or the default order's."""
        if self.table is None:
            return []
        rules = self.table.parse()  # checked when the session was configured
        out: list[Job] = []
        for op in ("gemm", "conv2d"):
            for cat_name, case in self.cases(op):
                for spec in self.target_specs:
                    reals = {r.name: r for r in self.info(spec).realizations}
                    name = table_choice(rules, case) or default_realization(
                        list(reals.values()), case)
                    if name not in reals or not applicable(case, reals[name]):
                        name = default_realization(list(reals.values()), case)
                    if name:
                        out += [Job(case, k, reals[name], spec, cat_name, self.fingerprint)
                                for k in (self.kinds or ("exact", random_kind(case)))]
        return out
    _cases: dict[str, list[tuple[str, Case]]] | None = None

    def target(self, spec: str) -> Target:
        if spec not in self.targets:
            self.targets[spec] = parse_target(spec)
        return self.targets[spec]

    def info(self, spec: str) -> TargetInfo:
        if spec not in self.infos:
            self.infos[spec] = self.target(spec).info()
        return self.infos[spec]

    def cases(self, op: str) -> list[tuple[str, Case]]:
        """(catalog name, case) for every case of the chosen catalogs."""
        if self._cases is None:
            found: dict[str, list[tuple[str, Case]]] = {"gemm": [], "conv2d": []}
            names = self.catalog_names or [str(p) for p in
                                           catalogs.default_catalog_paths().values()]
            for name in names:
                cat = catalogs.load_catalog(catalogs.resolve_catalog(name))
                found["gemm"] += [(cat.name, c) for c in cat.gemm]
                found["conv2d"] += [(cat.name, c) for c in cat.conv]
            self._cases = found
        return self._cases[op]

    def chosen(self, spec: str, op: str) -> list[Realization]:
        """The target's realizations for op that the backend/realization filters keep."""
        return [r for r in self.info(spec).realizations if r.op == op
                and (not self.backends or r.backend in self.backends)
                and (not self.realizations or r.name in self.realizations)]

    def jobs(self, op: str) -> list[Job]:
        """Case-major (then target, realization, kind), so that one case's
        inputs and oracle serve every realization on every target."""
        out: list[Job] = []
        chosen = {spec: self.chosen(spec, op) for spec in self.target_specs}
        for cat_name, case in self.cases(op):
            for spec in self.target_specs:
                out += jobs_for([case], chosen[spec], spec, cat_name, self.kinds,
                                self.fingerprint)
        return out

    def perf_jobs(self) -> list[Job]:
        """Every case of the chosen catalogs on every chosen realization that
        takes it, one real-valued input kind (cases are data, not code)."""
        out: list[Job] = []
        for op in ("gemm", "conv2d"):
            chosen = {spec: self.chosen(spec, op) for spec in self.target_specs}
            for cat_name, case in self.cases(op):
                for spec in self.target_specs:
                    out += jobs_for([case], chosen[spec], spec, cat_name, (PERF_KIND,),
                                    self.fingerprint)
        return out

    def contract_cases(self, spec: str) -> list[ContractCase]:
        return contracts.all_cases(self.target(spec).engine)

    def record(self, v: Verdict) -> None:
        self.verdicts.append(v)
        if self.writer is not None:
            self.writer.add(v)

    def perf_progress(self, config: pytest.Config, v: Verdict) -> None:
        """Queues a verdict line per perf problem, with its position and an ETA
        (printed after the test, outside output capture)."""
        if not self.perf_start:
            self.perf_start = time.monotonic() - 1e-3
        self.perf_done += 1
        self.pending_lines.append(
            eta_line(self.perf_done, self.perf_total, time.monotonic() - self.perf_start, v))


SESSION = pytest.StashKey[KbSession]()


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("kbench")
    g.addoption("--kb-target", action="append", default=[],
                help="target to run on: host (default); repeatable")
    g.addoption("--kb-backend", action="append", default=[],
                help="only realizations of this backend (scalar, neon, sme); repeatable")
    g.addoption("--kb-realization", action="append", default=[],
                help="only this realization; repeatable")
    g.addoption("--kb-shapes", action="append", default=[],
                help="catalog file or name in reference/; repeatable "
                     "(default: correctness_gemm and correctness_conv)")
    g.addoption("--kb-kinds", default="",
                help="comma-separated input kinds (exact, uniform, normal, specials); "
                     "default: exact plus one real-valued kind per case")
    g.addoption("--kb-out", default="", help="write a run folder here")
    g.addoption("--kb-perf", action="store_true",
                help="collect the performance suite (kbench run --suite perf)")
    g.addoption("--kb-rounds", type=int, default=10, help="perf: timed rounds per case")
    g.addoption("--kb-min-round-ms", type=float, default=2.0,
                help="perf: calls per round calibrated to last at least this long")
    g.addoption("--kb-warmup", type=int, default=2, help="perf: untimed warm-up calls")
    g.addoption("--kb-cold", action="store_true",
                help="perf: flush caches before every round (one call per round)")
    g.addoption("--kb-threads", type=int, default=1, help="perf: threads per call")
    g.addoption("--kb-passes", type=int, default=1,
                help="perf: sweep the catalogs this many times, each case's rounds split "
                     "over the passes (one row per case per pass), so that a stretch of "
                     "background load touches one pass of a case, not all of its rounds")
    g.addoption("--kb-fingerprint", action="store_true",
                help="fingerprint the accumulation model of every realization's output "
                     "(results.csv accum_model, accum_match); default: peers only")
    g.addoption("--kb-dispatch", default="",
                help="a tuned dispatch table: also run every case unforced and check that "
                     "the realization the table names is the one that ran")


def _positive(config: pytest.Config, option: str) -> int:
    value = int(config.getoption(option))
    if value < 1:
        raise pytest.UsageError(f"{option} must be at least 1, got {value}")
    return value


def _per_pass(rounds: int, passes: int) -> int:
    """Rounds of one pass: the total split over the passes, at least 2 per pass."""
    return max(2, -(-int(rounds) // max(1, int(passes))))


def pytest_configure(config: pytest.Config) -> None:
    kinds = tuple(k for k in config.getoption("--kb-kinds").split(",") if k) or None
    out = config.getoption("--kb-out")
    config.stash[SESSION] = KbSession(
        target_specs=config.getoption("--kb-target") or ["host"],
        backends=config.getoption("--kb-backend"),
        realizations=config.getoption("--kb-realization"),
        catalog_names=config.getoption("--kb-shapes"),
        kinds=kinds,
        out=Path(out) if out else None,
        perf_enabled=config.getoption("--kb-perf"),
        perf_passes=_positive(config, "--kb-passes"),
        perf_settings=PerfSettings(
            warmup=config.getoption("--kb-warmup"),
            rounds=_per_pass(config.getoption("--kb-rounds"), config.getoption("--kb-passes")),
            min_round_ns=int(config.getoption("--kb-min-round-ms") * 1e6),
            cold=config.getoption("--kb-cold"), threads=config.getoption("--kb-threads")),
        fingerprint_all=config.getoption("--kb-fingerprint"),
    )
    config.pluginmanager.register(_ProgressPrinter(config), "kbench-progress")
    kb = config.stash[SESSION]
    if kb.out is not None:  # created here, where a refusal is a one-line usage error
        try:
            kb.writer = RunWriter(kb.out, {"kind": "suite-run", **machine_metadata()})
        except RunDirError as exc:
            raise pytest.UsageError(f"--kb-out: {exc}") from None
    table_path = config.getoption("--kb-dispatch")
    if table_path:
        try:  # a table the dispatcher would read differently, or not at all, stops here
            table = DispatchTable.from_file(table_path)
            table.parse()
        except KbenchError as exc:
            raise pytest.UsageError(f"--kb-dispatch {table_path}: {exc}") from None
        config.stash[SESSION].table = table


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kb_contract" in metafunc.fixturenames:
        kb = metafunc.config.stash[SESSION]
        params = [(spec, case) for spec in kb.target_specs for case in kb.contract_cases(spec)]
        metafunc.parametrize("kb_contract", params,
                             ids=[f"{spec}-{case.name}" for spec, case in params])
    if "kb_perf_job" in metafunc.fixturenames:
        kb = metafunc.config.stash[SESSION]
        jobs = kb.perf_jobs() if kb.perf_enabled else []
        passes = kb.perf_passes
        # pass-major: the whole sweep, then the whole sweep again
        perf_jobs = [j for _ in range(passes) for j in jobs]
        kb.perf_total = len(perf_jobs)
        suffix = [f"-pass{i // len(jobs) + 1}" if passes > 1 else ""
                  for i in range(len(perf_jobs))]
        metafunc.parametrize("kb_perf_job", perf_jobs,
                             ids=[f"{j.target}-{j.realization.name}-{j.case.name}{sfx}"
                                  for j, sfx in zip(perf_jobs, suffix, strict=True)])
    if "kb_dispatch_job" in metafunc.fixturenames:
        kb = metafunc.config.stash[SESSION]
        djobs = kb.dispatch_jobs()
        metafunc.parametrize("kb_dispatch_job", djobs,
                             ids=[f"{j.target}-table-{j.case.name}-{j.kind}" for j in djobs])
    if "kb_job" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("kb_op")
    if marker is None:
        raise pytest.UsageError(f"{metafunc.function.__name__} takes kb_job but has no kb_op mark")
    session = metafunc.config.stash[SESSION]
    jobs = session.jobs(marker.args[0])
    metafunc.parametrize("kb_job", jobs, ids=[j.id for j in jobs])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    kb = session.config.stash[SESSION]
    if kb.writer is not None:
        kb.writer.metadata["targets"] = {k: v.to_dict() for k, v in kb.infos.items()}
        kb.writer.metadata["pytest_exit_status"] = int(exitstatus)
        complete = int(exitstatus) in (0, 1) and not session.shouldstop
        kb.writer.close(complete=complete, summary={"by_realization": summary_dict(kb.verdicts)})
        if kb.writer.error is not None and int(exitstatus) == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the run folder is not whole
    for t in kb.targets.values():
        t.close()


class _ProgressPrinter:
    """Prints queued perf verdict lines once a test has finished reporting
    (outside output capture)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        kb = self.config.stash.get(SESSION, None)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if kb is None or reporter is None or not kb.pending_lines:
            return
        reporter.ensure_newline()
        for line in kb.pending_lines:
            reporter.write_line(line)
        kb.pending_lines.clear()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    kb = terminalreporter.config.stash[SESSION]
    writer = kb.writer
    if writer is not None and writer.error is not None:
        terminalreporter.write_line(
            f"run folder: cannot write {kb.out}: {writer.error.strerror or writer.error}; "
            f"{writer.lost} verdict(s) after the first {writer.count} were not written",
            red=True)
    if not kb.verdicts:
        return
    terminalreporter.section("kbench verdicts")
    terminalreporter.write_line(summary_text(kb.verdicts))
    if kb.out is not None:
        terminalreporter.write_line(f"run folder: {kb.out}")


@pytest.fixture
def kb_session(request: pytest.FixtureRequest) -> KbSession:
    return request.config.stash[SESSION]


@pytest.fixture
def kb_target(kb_session: KbSession, kb_job: Job) -> Target:
    return kb_session.target(kb_job.target)


@pytest.fixture
def kb_host_targets(kb_session: KbSession) -> list[tuple[str, Target]]:
    """Every chosen target, for suites that are not parametrized by case."""
    return [(spec, kb_session.target(spec)) for spec in kb_session.target_specs]


def is_gemm(case: Case) -> bool:
    return isinstance(case, GemmCase)


def is_conv(case: Case) -> bool:
    return isinstance(case, ConvCase)
