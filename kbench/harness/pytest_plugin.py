"""pytest plugin behind the suites and `kbench run`.

Options choose targets, backends, realizations, catalogs and input kinds;
tests that take the `kb_job` fixture are parametrized over every case x
input kind x realization the targets offer, so a new backend or kernel is
picked up without new test code. Verdicts are recorded, written to a run
folder (--kb-out) as they come, and summarized at the end."""

from __future__ import annotations

import json
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kbench.errors import KbenchError
from kbench.harness import contracts, coverage_run, probes
from kbench.harness.contracts import ContractCase
from kbench.harness.counting import Counter
from kbench.harness.coverage_run import CoverageResult
from kbench.harness.parallel import (
    PROBES_KEY,
    VERDICTS_ATTR,
    Probe,
    decode_probes,
    encode_probes,
    group_by_target,
    is_worker,
    probe_targets,
    unavailable,
    verdict_from_wire,
    verdict_to_wire,
)
from kbench.harness.perf import PERF_KIND, PerfSettings, VirtualClock, eta_line
from kbench.harness.progress import (
    Features,
    ProgressCounter,
    expected_seconds,
    features,
    hms,
    load_costs,
    load_memory,
    save_costs,
)
from kbench.harness.runner import (
    InputCache,
    Job,
    adapted,
    applicable,
    jobs_for,
    random_kind,
    why_not,
)
from kbench.harness.selection import (
    CaseFilter,
    derived_tails,
    filter_errors,
    realization_steps,
    reproducer,
)
from kbench.harness.tune import default_realization, table_choice
from kbench.judge.verdict import ERROR, FAILING, Verdict
from kbench.native.api import BACKENDS, DispatchTable, Realization
from kbench.native.calls import TargetInfo
from kbench.native.plugins import PluginRealizationInfo
from kbench.problems import catalog as catalogs
from kbench.problems import tails
from kbench.problems.cases import Case, ConvCase, GemmCase
from kbench.results.counts import summary_text as count_summary_text
from kbench.results.identity import catalog_set
from kbench.results.store import RunDirError, RunWriter, machine_metadata
from kbench.results.summary import summary_dict, summary_text
from kbench.targets.coverage import summary_lines as coverage_summary_lines
from kbench.targets.plugins import PluginLoads
from kbench.targets.spec import Target, parse_target
from kbench.targets.worker import WorkerEngine


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
    perf_pass: int = 1  # the pass the perf suite is in
    perf_start: float = 0.0
    pending_lines: list[str] = field(default_factory=list)
    table: DispatchTable | None = None
    fingerprint_all: bool = False  # --kb-fingerprint: every realization, not peers only
    # targets in parallel (kbench.harness.parallel): probes made by the controlling
    # process, targets that cannot be used (spec -> reason), and in an xdist worker
    # the verdicts waiting to ride back on the next test report
    probes: dict[str, Probe] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    worker: bool = False
    outgoing: list[dict[str, Any]] = field(default_factory=list)
    workers: dict[str, set[str]] = field(default_factory=dict)  # target -> xdist workers
    plugins: list[str] = field(default_factory=list)  # --kb-plugin paths, on every target
    plugin_in_process: bool = False  # --kb-plugin-in-process: host plugins in this process
    call_timeout: float | None = None  # --kb-call-timeout: a fixed bound per worker request
    strict_plugins: bool = False  # --kb-strict-plugins: plugin findings fail the run
    probe_targets: dict[str, Target] = field(default_factory=dict)
    plugin_notes: list[str] = field(default_factory=list)  # refused plugin files, once each
    case_filter: CaseFilter | None = None  # --kb-case (kbench run -k)
    catalog_args: dict[str, str] = field(default_factory=dict)  # catalog name -> as given
    case_tests: int = 0  # tests parametrized over cases (kb_job, kb_perf_job)
    selected_jobs: int = 0  # jobs those tests were given
    progress: ProgressCounter | None = None  # correctness progress with an ETA
    counter: Counter | None = None  # perf on qemu targets: instruction counts (--kb-count-method)
    incomplete: str = ""  # the INCOMPLETE line of the terminal summary ("" when complete)
    tails_mode: str = ""  # derived tails: "" none, "sample", "full" (see tails_mode())
    tails_choice: str = "auto"  # --kb-tails: auto (by catalog), full, sample or none
    coverage: bool = False  # --kb-coverage: qemu: workers log the code they run
    min_coverage: float | None = None  # --kb-min-coverage: percent below which the run fails
    coverage_result: CoverageResult | None = None
    interrupted: bool = False  # Ctrl-C or SIGTERM: no target is started (or loaded) any more

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
            cov = (coverage_run.log_dir(self.out, spec)
                   if self.coverage and self.out is not None and coverage_run.supported(spec)
                   else None)
            self.targets[spec] = parse_target(spec, self.plugins,
                                              plugin_in_process=self.plugin_in_process,
                                              call_timeout=self.call_timeout, coverage_dir=cov)
        return self.targets[spec]

    def info(self, spec: str) -> TargetInfo:
        """The target's description; a target that cannot be reached has none
        (no realizations, so no jobs) and its reason in `unavailable`."""
        if spec in self.unavailable:
            return TargetInfo(spec, "unavailable", False, "", [], 0, "scalar", "", [])
        if spec not in self.infos and self.interrupted:
            # stopping: a target not reached is not started now (loading its plugins
            # again could hang as long as what was interrupted)
            self.unavailable[spec] = f"{spec}: not reached (the run was interrupted)"
            return self.info(spec)
        if spec not in self.infos:
            probed = self.probes.get(spec)
            if probed is not None and probed.info is not None and probed.ok:
                self.infos[spec] = probed.info
            elif probed is not None:
                self.unavailable[spec] = probed.error
                return self.info(spec)
            else:
                try:
                    self.infos[spec] = self.target(spec).info()
                except KbenchError as exc:
                    self.unavailable[spec] = unavailable(spec, exc)
                    return self.info(spec)
            for e in self.infos[spec].extra.get("plugin_errors", []):
                self.plugin_notes.append(f"{spec}: {e['message']} (the run goes on without it)")
        return self.infos[spec]

    def probe_target(self, spec: str) -> Target:
        """Where a target's plugin contract probes run: the target itself (on
        the host its plugins run in the host worker), or with plugins loaded
        into this process (--kb-plugin-in-process) the host worker with the
        same plugins, so that a probe that crashes takes down a worker, not
        kbench."""
        if spec != "host" or not self.plugin_in_process:
            return self.target(spec)
        if spec not in self.probe_targets:
            self.probe_targets[spec] = parse_target("worker:host", self.plugins,
                                                    call_timeout=self.call_timeout)
        return self.probe_targets[spec]

    def probe_jobs(self) -> list[tuple[str, Realization, str]]:
        """(target, realization that packs its own B, probe) for every chosen
        target: a plugin's misuse probes, and the vector-length probes of every
        realization whose packed B may depend on a length the target has
        (kbench.harness.probes.probe_names)."""
        return [(spec, r, name) for spec in self.target_specs
                for r in self.info(spec).realizations if self.wanted(r)
                for name in probes.probe_names(r, *self.vector_lengths(spec))]

    def vector_lengths(self, spec: str) -> tuple[int, int]:
        """The target's SME streaming and SVE vector lengths in bits (0: none)."""
        info = self.info(spec)
        return info.sme_vector_bits, int(getattr(info, "sve_vector_bits", 0) or 0)

    def packer_jobs(self) -> list[tuple[str, Realization, PluginRealizationInfo]]:
        """(target, plugin GEMM realization, its declaration) for every chosen
        plugin GEMM whose packers kbench can call: one that packs its own B
        (native B form) or a micro-kernel (LHS packer)."""
        out = []
        for spec in self.target_specs:
            info = self.info(spec)
            declared = {d.name: d for p in PluginLoads.from_extra(info.extra).loaded
                        for d in p.realizations}
            for r in info.realizations:
                d = declared.get(r.name)
                if (d is not None and r.op == "gemm" and self.wanted(r)
                        and ("native" in r.bforms or d.form == "micro-kernel")):
                    out.append((spec, r, d))
        return out

    def cases(self, op: str) -> list[tuple[str, Case]]:
        """(catalog name, case) for every case of the chosen catalogs."""
        if self._cases is None:
            found: dict[str, list[tuple[str, Case]]] = {"gemm": [], "conv2d": []}
            names = self.catalog_names or [str(p) for p in
                                           catalogs.default_catalog_paths().values()]
            self.tails_mode = (tails_mode(self.catalog_names) if self.tails_choice == "auto"
                               else "" if self.tails_choice == "none" else self.tails_choice)
            keep = self.case_filter
            for name in names:
                if name == tails.CATALOG:  # derived per realization (tail_jobs)
                    continue
                cat = catalogs.load_catalog(catalogs.resolve_catalog(name))
                self.catalog_args.setdefault(cat.name, name)
                found["gemm"] += [(cat.name, c) for c in cat.gemm
                                  if keep is None or keep.matches(cat.name, c.name)]
                found["conv2d"] += [(cat.name, c) for c in cat.conv
                                    if keep is None or keep.matches(cat.name, c.name)]
            self._cases = found
        return self._cases[op]

    def steps(self, spec: str, r: Realization) -> tails.Steps:
        """The realization's blocking on this target (kbench.problems.tails)."""
        return realization_steps(self.info(spec), r)

    def tail_cases(self, spec: str, r: Realization) -> list[Case]:
        """The tails derived for one realization on one target (the catalog
        "tails"; sampled for smoke), those -k keeps. Peers (another
        library's kernels, shown for comparison, no blocking of theirs
        known) get none."""
        self.cases(r.op)
        if not self.tails_mode or r.peer:
            return []
        keep = self.case_filter
        return [c for c in derived_tails(self.steps(spec, r), r, self.tails_mode == "sample")
                if keep is None or keep.matches(tails.CATALOG, c.name)]

    def tail_jobs(self, op: str) -> list[Job]:
        """Every chosen realization's own tails, grouped by case (one case's
        inputs serve every realization that derived it)."""
        out: list[Job] = []
        for spec in self.target_specs:
            for r in self.chosen(spec, op):
                out += jobs_for(self.tail_cases(spec, r), [r], spec, tails.CATALOG, self.kinds,
                                self.fingerprint)
        order = {name: i for i, name in enumerate(dict.fromkeys(j.case.name for j in out))}
        return sorted(out, key=lambda j: order[j.case.name])

    def tails_metadata(self) -> dict[str, Any]:
        """run.json "tails": the mode and, per target and realization, the
        steps its tails were derived from and how many cases they are."""
        self.cases("gemm")
        out: dict[str, Any] = {"mode": self.tails_mode or "none", "targets": {}}
        if not self.tails_mode:
            return out
        for spec in self.target_specs:
            if spec in self.unavailable:
                continue
            out["targets"][spec] = {
                r.name: {"steps": self.steps(spec, r).describe(),
                         "cases": len(self.tail_cases(spec, r))}
                for op in ("gemm", "conv2d") for r in self.chosen(spec, op)}
        return out

    def not_applicable(self) -> list[tuple[str, str, int, list[tuple[str, str, str]]]]:
        """(target, realization, catalog cases of its operator, [(catalog,
        case, why)]) for every chosen realization and every catalog case of
        its operator it does not take, even with another form of B: what
        the run did not run, and why."""
        out = []
        for spec in self.target_specs:
            for op in ("gemm", "conv2d"):
                cases = self.cases(op)
                for r in self.chosen(spec, op):
                    lost = [(cat, c.name, why) for cat, c in cases
                            if (why := why_not(adapted(c, r), r))]
                    if lost:
                        out.append((spec, r.name, len(cases), lost))
        return out

    def not_applicable_lines(self) -> list[str]:
        """The summary's lines about catalog cases a realization does not
        take: one per target, realization and reason, naming the cases."""
        lines = []
        for spec, name, total, lost in self.not_applicable():
            reasons: dict[str, list[str]] = {}
            for cat, case, why in lost:
                reasons.setdefault(why, []).append(f"{cat}/{case}")
            for why, which in reasons.items():
                shown = ", ".join(which[:6]) + (f", ... ({len(which) - 6} more)"
                                                if len(which) > 6 else "")
                lines.append(f"{spec} {name}: {len(which)} of {total} catalog case(s) not run, "
                             f"{why}: {shown}")
        return lines

    def chosen(self, spec: str, op: str) -> list[Realization]:
        """The target's realizations for op that the backend/realization filters keep."""
        return [r for r in self.info(spec).realizations if r.op == op and self.wanted(r)]

    def wanted(self, r: Realization) -> bool:
        """Do the backend/realization filters keep r? (--kb-backend plugin keeps
        every plugin's realizations, plugin:NAME one plugin's.)"""
        backend_ok = (not self.backends or r.backend in self.backends
                      or (r.is_plugin and "plugin" in self.backends))
        return backend_ok and (not self.realizations or r.name in self.realizations)

    def jobs(self, op: str) -> list[Job]:
        """Case-major (then target, realization, kind), so that one case's
        inputs and oracle serve every realization on every target."""
        out: list[Job] = []
        chosen = {spec: self.chosen(spec, op) for spec in self.target_specs}
        for cat_name, case in self.cases(op):
            for spec in self.target_specs:
                out += jobs_for([case], chosen[spec], spec, cat_name, self.kinds,
                                self.fingerprint, adapt=True)
        return out + self.tail_jobs(op)

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

    def nothing_selected(self, what: str) -> str:
        """Why a case-parametrized test got no case: the filters in force."""
        parts = [f"catalogs {', '.join(self.catalog_names) or 'default'}"]
        if self.case_filter is not None:
            parts.append(f"-k {self.case_filter.expr!r}")
        if self.backends:
            parts.append(f"backends {', '.join(self.backends)}")
        if self.realizations:
            parts.append(f"realizations {', '.join(self.realizations)}")
        parts.append(f"targets {', '.join(self.target_specs)}")
        noun = f"no {what} " if what else "no case "
        return noun.replace("  ", " ") + "selected by " + "; ".join(parts)

    def close_targets(self) -> None:
        for t in [*self.targets.values(), *self.probe_targets.values()]:
            t.close()
        self.targets.clear()
        self.probe_targets.clear()

    def selects_ours(self) -> bool:
        """Do the backend and realization filters keep any realization of ours?
        (A run of plugins or peers only runs no contract case of our backends.)"""
        if self.backends and not any(b in BACKENDS for b in self.backends):
            return False
        # plugin realizations ("<plugin>.<name>") only: none of ours
        return not (self.realizations and all("." in r for r in self.realizations))

    def contract_cases(self, spec: str) -> list[ContractCase]:
        info = self.info(spec)
        if spec in self.unavailable or not self.selects_ours():
            return []
        probed = self.probes.get(spec)
        if probed is not None:
            return contracts.cases_for(info.backends, probed.natives)
        return contracts.all_cases(self.target(spec).engine)

    def catalog_arg(self, catalog: str) -> str:
        """How a reproducer names a catalog: one shipped in reference/ by its
        name (the command works in any checkout), any other file by its path."""
        arg = self.catalog_args.get(catalog, catalog)
        try:
            path = catalogs.resolve_catalog(arg)
        except catalogs.CatalogError:
            return arg
        shipped = catalogs.available_catalogs().get(path.stem)
        if shipped is not None and shipped.resolve() == path.resolve():
            return path.stem
        return arg

    def reproducer(self, v: Verdict) -> str:
        """The command that reruns just this verdict (a plugin's with every
        --plugin of this run, and the options that decide where it runs)."""
        cmd = reproducer(v, self.catalog_arg(v.catalog))
        if v.plugin:
            extra = [a for path in self.plugins for a in ("--plugin", path)]
            if self.plugin_in_process:
                extra.append("--plugin-in-process")
            if self.call_timeout is not None:
                extra += ["--call-timeout", f"{self.call_timeout:g}"]
            if v.suite == "plugin-contracts":  # a probe's finding fails a run only then
                extra.append("--strict-plugins")
            cmd += " " + shlex.join(extra) if extra else ""
        return cmd

    def record(self, v: Verdict) -> None:
        self.verdicts.append(v)
        if self.writer is not None:
            self.writer.add(v)
            if v.status in FAILING:
                self.writer.add_failure(v, self.reproducer(v))
        if self.worker:
            self.outgoing.append(verdict_to_wire(v))

    def unavailable_verdict(self, spec: str) -> Verdict | None:
        """An error verdict for a target that cannot be reached, None if it can."""
        self.info(spec)
        reason = self.unavailable.get(spec)
        if reason is None:
            return None
        return Verdict(case="target", op="target", shape="", kind="-", target=spec, backend="-",
                       realization="target", kernel="-", accum="-", k=0, m=0, n=0, b_form="",
                       vector_bits=0, status=ERROR, message=reason)

    def targets_metadata(self) -> dict[str, Any]:
        """run.json "targets": each target's description, or why it was unavailable."""
        out: dict[str, Any] = {k: v.to_dict() for k, v in self.infos.items()}
        for spec, reason in self.unavailable.items():
            out[spec] = {"name": spec, "unavailable": reason, "emulated": False}
        return out

    def start_perf_test(self, test_id: str) -> None:
        """Before each perf test (its parametrize id, which ends in -passN
        with several passes): at the first test of a new pass every worker
        target of this session is shut down, so that each pass runs in a
        fresh process with a memory layout of its own (a pass is the unit of
        the comparison's statistics, kbench.results.compare; the next call
        starts the worker)."""
        m = re.search(r"-pass(\d+)$", test_id)
        this = int(m.group(1)) if m and self.perf_passes > 1 else 1
        if this != self.perf_pass:
            self.perf_pass = this
            for t in self.targets.values():
                if isinstance(t.engine, WorkerEngine):
                    t.engine.close()

    def perf_progress(self, config: pytest.Config, v: Verdict) -> None:
        """Queues a verdict line per perf problem, with its position and an ETA
        (printed after the test, outside output capture)."""
        if not self.perf_start:
            self.perf_start = time.monotonic() - 1e-3
        self.perf_done += 1
        line = eta_line(self.perf_done, self.perf_total, time.monotonic() - self.perf_start, v)
        if self.perf_passes > 1 and self.perf_total:
            per_pass = self.perf_total // self.perf_passes
            this = min(self.perf_passes, (self.perf_done - 1) // max(1, per_pass) + 1)
            line = line.replace("] ", f" pass {this}/{self.perf_passes}] ", 1)
        self.pending_lines.append(line)


SESSION = pytest.StashKey[KbSession]()
PERF_ITEMS = pytest.StashKey[list[pytest.Item]]()  # perf tests, for benchmark.json params


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
    g.addoption("--kb-run-id", default="",
                help="the run's id in run.json (kbench run checks its folder still holds it)")
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
    g.addoption("--kb-fleet", default="",
                help="JSON {target spec: label} of a fleet file, kept in run.json")
    g.addoption("--kb-tails", default="auto", choices=("auto", "full", "sample", "none"),
                help="tail shapes derived from each realization's blocking: auto (full with "
                     "the default, correctness and edge catalogs, a sample with smoke and "
                     "emulated, none with the others), full, sample or none")
    g.addoption("--kb-costs", default="",
                help="case costs remembered from earlier runs (a JSON file): the run says "
                     "up front how long it is expected to take")
    g.addoption("--kb-tail-seconds", type=float, default=0.0,
                help="seconds the run is expected to take after its last test (the "
                     "summary, results, history, report): added to the ETA")
    g.addoption("--kb-save-costs", action="store_true",
                help="write this run's case costs into --kb-costs when every case test ran")
    g.addoption("--kb-case", default="",
                help="only cases whose CATALOG/CASE matches this regular expression "
                     "(re.search; kbench run -k)")
    g.addoption("--kb-count-method", default="tb", choices=("tb", "insn", "none"),
                help="perf on qemu targets: count instructions per phase from QEMU's log of "
                     "translation blocks (tb, default) or of single instructions (insn, slower, "
                     "the cross-check); none: do not count")
    g.addoption("--kb-dispatch", default="",
                help="a tuned dispatch table: also run every case unforced and check that "
                     "the realization the table names is the one that ran")
    g.addoption("--kb-plugin", action="append", default=[],
                help="a plugin library (kbench_plugin.h) every target loads; {arch} in the "
                     "path becomes the target's architecture; repeatable")
    g.addoption("--kb-plugin-in-process", action="store_true",
                help="load the host's plugins into this process instead of the host worker "
                     "(for a debugger; unsafe: a crash, exit() or hang in a plugin ends or "
                     "freezes the run)")
    g.addoption("--kb-call-timeout", type=float, default=None,
                help="seconds a worker process may take for one request before it is killed "
                     "and the call becomes a timeout verdict (default: a bound from the call's "
                     "flops and the target, kbench.targets.timeouts)")
    g.addoption("--kb-cli", action="store_true",
                help="set by `kbench run`: an interrupt ends with kbench's own one-line "
                     "summary, not pytest's KeyboardInterrupt banner and traceback")
    g.addoption("--kb-coverage", action="store_true",
                help="qemu: targets: record which instructions of every kernel and packer "
                     "(ours, and each plugin's functions) ran; coverage.csv in the run folder")
    g.addoption("--kb-min-coverage", type=float, default=None,
                help="with --kb-coverage: a unit covered below this percent fails the run")
    g.addoption("--kb-strict-plugins", action="store_true",
                help="plugin contract-probe findings (silently wrong, crashed) and failed "
                     "plugin verdicts of the probe suite fail the run instead of being recorded")


# the `kbench run` option behind each pytest option a message may name (users
# meet kbench run's names; pytest's follow in parentheses)
RUN_OPTION = {"--kb-out": "--out", "--kb-dispatch": "--dispatch", "--kb-passes": "--passes",
              "--kb-call-timeout": "--call-timeout"}


def option_name(option: str) -> str:
    """An option as a message names it: kbench run's name (pytest's)."""
    run = RUN_OPTION.get(option)
    return f"{run} ({option})" if run else option


# catalogs whose run derives every realization's full tails (kbench.problems.tails);
# smoke and emulated (the quick and the emulated-CI correctness runs) a sample of
# them; other catalogs (models, perf, counts) none
FULL_TAIL_CATALOGS = frozenset({"correctness_gemm", "correctness_conv", "edge", tails.CATALOG})
SAMPLE_TAIL_CATALOGS = frozenset({"smoke", "emulated"})


def tails_mode(catalog_names: list[str]) -> str:
    """What the chosen catalogs derive: "full" (no catalog given: the
    default correctness catalogs; or one of FULL_TAIL_CATALOGS), "sample"
    (smoke, emulated), "" (none)."""
    if not catalog_names:
        return "full"
    stems = {Path(n).name.removesuffix(".toml").replace("-", "_") for n in catalog_names}
    if stems & FULL_TAIL_CATALOGS:
        return "full"
    return "sample" if stems & SAMPLE_TAIL_CATALOGS else ""


def _positive(config: pytest.Config, option: str) -> int:
    value = int(config.getoption(option))
    if value < 1:
        raise pytest.UsageError(f"{option_name(option)} must be at least 1, got {value}")
    return value


def _call_timeout(config: pytest.Config) -> float | None:
    value = config.getoption("--kb-call-timeout")
    if value is not None and not (value > 0 and value != float("inf")):
        raise pytest.UsageError(f"{option_name('--kb-call-timeout')} must be a positive number "
                                f"of seconds, got {value}")
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
        plugins=config.getoption("--kb-plugin"),
        strict_plugins=config.getoption("--kb-strict-plugins"),
        plugin_in_process=config.getoption("--kb-plugin-in-process"),
        call_timeout=_call_timeout(config),
        tails_choice=config.getoption("--kb-tails"),
        coverage=config.getoption("--kb-coverage") or config.getoption("--kb-min-coverage")
        is not None,
        min_coverage=config.getoption("--kb-min-coverage"),
    )
    kb = config.stash[SESSION]
    if config.getoption("--kb-case"):
        try:
            kb.case_filter = CaseFilter(config.getoption("--kb-case"))
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from exc
    if kb.backends or kb.realizations:
        # a filter that names nothing the targets offer is a usage error, not a green run
        errors = filter_errors({spec: kb.info(spec) for spec in kb.target_specs},
                               kb.backends, kb.realizations)
        if errors:
            kb.close_targets()
            raise pytest.UsageError("\n".join(errors))
    method = config.getoption("--kb-count-method")
    if method != "none":
        config.stash[SESSION].counter = Counter(method, plugins=tuple(kb.plugins))
    config.pluginmanager.register(_ProgressPrinter(config), "kbench-progress")
    config.pluginmanager.register(_TargetsInParallel(config), "kbench-parallel")
    config.pluginmanager.register(_Completeness(config), "kbench-completeness")
    if config.getoption("--kb-cli"):
        config.pluginmanager.register(_QuietInterrupt(config), "kbench-quiet-interrupt")
        config.pluginmanager.register(_OneProgressLine(), "kbench-one-progress-line")
        config.pluginmanager.register(_OneCount(config), "kbench-one-count")
    kb = config.stash[SESSION]
    kb.worker = is_worker(config)
    if kb.worker and PROBES_KEY in config.workerinput:  # type: ignore[attr-defined]
        kb.probes = decode_probes(config.workerinput[PROBES_KEY])  # type: ignore[attr-defined]
    if kb.out is not None and not kb.worker:  # workers send their verdicts to the controller
        try:  # created here, where a refusal is a one-line usage error
            kb.writer = RunWriter(kb.out, {"kind": "suite-run", **machine_metadata(),
                                           "catalogs": catalog_set(kb.catalog_names),
                                           "run_id": config.getoption("--kb-run-id")})
        except RunDirError as exc:
            raise pytest.UsageError(f"{option_name('--kb-out')}: {exc}") from None
    table_path = config.getoption("--kb-dispatch")
    if table_path:
        try:  # a table the dispatcher would read differently, or not at all, stops here
            table = DispatchTable.from_file(table_path)
            table.parse()
        except KbenchError as exc:
            raise pytest.UsageError(f"{option_name('--kb-dispatch')} {table_path}: {exc}"
                                    ) from None
        config.stash[SESSION].table = table


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "kb_spec" in metafunc.fixturenames:
        specs = metafunc.config.stash[SESSION].target_specs
        metafunc.parametrize("kb_spec", specs, ids=specs)
    if "kb_contract" in metafunc.fixturenames:
        kb = metafunc.config.stash[SESSION]
        params = [(spec, case) for spec in kb.target_specs for case in kb.contract_cases(spec)]
        _parametrize(metafunc, "kb_contract", params,
                     [f"{spec}-{case.name}" for spec, case in params],
                     "the filters select no realization of kbench's own backends (a run of "
                     "plugins or peers): their contract cases do not run"
                     if not kb.selects_ours() else "no contract case on the chosen targets")
    if "kb_perf_job" in metafunc.fixturenames:
        kb = metafunc.config.stash[SESSION]
        jobs = kb.perf_jobs() if kb.perf_enabled else []
        passes = kb.perf_passes
        # pass-major: the whole sweep, then the whole sweep again
        perf_jobs = [j for _ in range(passes) for j in jobs]
        kb.perf_total = len(perf_jobs)
        suffix = [f"-pass{i // len(jobs) + 1}" if passes > 1 else ""
                  for i in range(len(perf_jobs))]
        if kb.perf_enabled:  # without --kb-perf the suite is off, not empty
            kb.case_tests += 1
            kb.selected_jobs += len(perf_jobs)
        _parametrize(metafunc, "kb_perf_job", perf_jobs,
                     [f"{j.target}-{j.realization.name}-{j.case.name}{sfx}"
                      for j, sfx in zip(perf_jobs, suffix, strict=True)],
                     "the perf suite is collected with --kb-perf (kbench run --suite perf)"
                     if not kb.perf_enabled else kb.nothing_selected("timed"))
    if "kb_packer" in metafunc.fixturenames:
        kb = metafunc.config.stash[SESSION]
        packers = kb.packer_jobs()
        _parametrize(metafunc, "kb_packer", packers,
                     [f"{spec}-{r.name}" for spec, r, _ in packers],
                     "no plugin realization has a packer kbench can call "
                     "(kbench run --plugin PATH)")
    if "kb_probe" in metafunc.fixturenames:
        kb = metafunc.config.stash[SESSION]
        pjobs = kb.probe_jobs()
        _parametrize(metafunc, "kb_probe", pjobs,
                     [f"{spec}-{r.name}-{name}" for spec, r, name in pjobs],
                     "no realization gets contract probes here: plugins that pack their own "
                     "B (kbench run --plugin PATH), and realizations whose packed B depends on "
                     "a vector length an SME or SVE target can switch")
    if "kb_dispatch_job" in metafunc.fixturenames:
        kb = metafunc.config.stash[SESSION]
        djobs = kb.dispatch_jobs()
        _parametrize(metafunc, "kb_dispatch_job", djobs,
                     [f"{j.target}-table-{j.case.name}-{j.kind}" for j in djobs],
                     "no dispatch table given (--kb-dispatch; kbench run --dispatch FILE)"
                     if kb.table is None else kb.nothing_selected("run under the table"))
    if "kb_job" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("kb_op")
    if marker is None:
        raise pytest.UsageError(f"{metafunc.function.__name__} takes kb_job but has no kb_op mark")
    session = metafunc.config.stash[SESSION]
    jobs = session.jobs(marker.args[0])
    session.case_tests += 1
    session.selected_jobs += len(jobs)
    _parametrize(metafunc, "kb_job", jobs, [j.id for j in jobs],
                 session.nothing_selected(f"{marker.args[0]} case"))


def _parametrize(metafunc: pytest.Metafunc, name: str, values: list[Any], ids: list[str],
                 why_empty: str) -> None:
    """Parametrize over values; with none, one test skipped with the reason
    (pytest's own empty parameter set is skipped without saying why)."""
    if values:
        metafunc.parametrize(name, values, ids=ids)
    else:
        metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(reason=why_empty))],
                             ids=["none"])


def pytest_sessionstart(session: pytest.Session) -> None:
    kb = session.config.stash[SESSION]
    if kb.writer is not None and kb.perf_enabled:  # what else ran on the machine: load,
        from kbench.results.machine import machine_state  # governor (and at the end)
        kb.writer.metadata["machine_state"] = {"start": machine_state()}


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: Any,
                                 output_json: dict[str, Any]) -> None:
    """benchmark.json: each entry's params as plain values (not the job object)."""
    from kbench.results.interop import serializable_params
    jobs = {item.nodeid: item.callspec.params.get("kb_perf_job")
            for item in config.stash.get(PERF_ITEMS, [])}
    for entry in output_json.get("benchmarks", []):
        job = jobs.get(entry.get("fullname", ""))
        if job is not None:
            entry["params"] = serializable_params(job)
            entry["param"] = entry["params"]["realization"] + "/" + entry["params"]["case"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[PERF_ITEMS] = [i for i in items if "kb_perf_job" in
                                getattr(getattr(i, "callspec", None), "params", {})]


def _write_interop(kb: KbSession) -> None:
    """gbench.json (Google Benchmark's JSON) beside results.csv for perf runs."""
    from kbench.results.interop import google_benchmark_json
    if kb.writer is None or not kb.perf_enabled:
        return
    data = google_benchmark_json(kb.verdicts, kb.writer.metadata)
    (kb.writer.folder / "gbench.json").write_text(json.dumps(data, indent=1))


def _noise(verdicts: list[Verdict]) -> dict[str, Any]:
    """Per timed case its CV (stdev / mean of the per-round times), and the
    cases above the NOISY_CV threshold, for run.json."""
    from kbench.harness.perf import NOISY_CV
    cvs: dict[str, float] = {}
    for v in verdicts:  # with passes: the noisiest pass of a case
        if v.rounds and v.time_mean_ns > 0 and not v.emulated:
            key = f"{v.target} {v.realization} {v.catalog}/{v.case}"
            cvs[key] = max(cvs.get(key, 0.0), v.time_stdev_ns / v.time_mean_ns)
    return {"threshold": NOISY_CV, "cv": cvs,
            "noisy": sorted(k for k, cv in cvs.items() if cv > NOISY_CV)}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    kb = session.config.stash[SESSION]
    kb.interrupted = kb.interrupted or int(exitstatus) == int(pytest.ExitCode.INTERRUPTED)
    _write_interop(kb)
    empty = kb.case_tests > 0 and kb.selected_jobs == 0
    if empty and int(exitstatus) in (0, 1):
        # filters that select no case: not a green run
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        exitstatus = session.exitstatus
    if kb.writer is not None:
        kb.writer.metadata["targets"] = kb.targets_metadata()
        fleet = session.config.getoption("--kb-fleet")
        if fleet:
            kb.writer.metadata["fleet"] = json.loads(fleet)
        kb.writer.metadata["not_applicable"] = [
            {"target": spec, "realization": name, "cases": [
                {"catalog": cat, "case": case, "why": why} for cat, case, why in lost]}
            for spec, name, _, lost in kb.not_applicable()]
        kb.writer.metadata["tails"] = kb.tails_metadata()
        if kb.workers:  # run in parallel: which worker process ran each target
            kb.writer.metadata["parallel"] = {t: sorted(w) for t, w in kb.workers.items()}
        kb.writer.metadata["pytest_exit_status"] = int(exitstatus)
        if empty:
            kb.writer.metadata["empty_selection"] = kb.nothing_selected("")
        if "machine_state" in kb.writer.metadata:
            from kbench.results.machine import machine_state
            kb.writer.metadata["machine_state"]["end"] = machine_state()
            kb.writer.metadata["noise"] = _noise(kb.verdicts)
        tally = session.config.pluginmanager.get_plugin("kbench-completeness")
        missing = tally.record(kb.writer.metadata) if tally is not None else []
        complete = int(exitstatus) in (0, 1) and not session.shouldstop and not missing
        kb.writer.close(complete=complete, summary={"by_realization": summary_dict(kb.verdicts)})
        if not complete:
            tests = kb.writer.metadata.get("tests", {})
            why = ("interrupted" if int(exitstatus) == int(pytest.ExitCode.INTERRUPTED)
                   else "stopped early" if session.shouldstop
                   else f"{len(missing)} test(s) did not finish" if missing
                   else f"pytest exit status {int(exitstatus)}")
            kb.incomplete = (f"INCOMPLETE: {tests.get('finished', 0)} of "
                             f"{tests.get('scheduled', 0)} tests finished ({why}); "
                             f"run.json says complete: false")
        if (kb.writer.error is not None or missing) and int(exitstatus) == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # the run folder is not whole
    if kb.strict_plugins and kb.plugin_notes and int(session.exitstatus) == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # --strict-plugins: a plugin is missing
    kb.close_targets()
    if kb.coverage and kb.out is not None and not kb.worker:  # every worker process has ended
        reals = {spec: kb.info(spec).realizations for spec in kb.target_specs
                 if spec not in kb.unavailable}
        chosen = {spec: [r for r in rs if kb.wanted(r)] for spec, rs in reals.items()}
        kb.close_targets()  # info() may have opened one again
        kb.coverage_result = coverage_run.collect(kb.out, kb.target_specs, kb.plugins, chosen)
        low = (kb.coverage_result.below(kb.min_coverage) if kb.min_coverage is not None
               else [])
        if low and int(session.exitstatus) == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # --min-coverage


class _TargetsInParallel:
    """The xdist side of a run over several targets (kbench.harness.parallel):
    probes handed to the workers, tests grouped by target, verdicts carried
    back on reports and written once by the controlling process."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        kb = self.config.stash[SESSION]
        if not kb.probes:
            kb.probes = probe_targets(kb.target_specs, kb.target)  # with --kb-plugin
            for spec in kb.target_specs:
                kb.info(spec)
        node.workerinput[PROBES_KEY] = encode_probes(kb.probes)

    @pytest.hookimpl(trylast=True)  # after deselection; ids then go to the controller
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        kb = self.config.stash[SESSION]
        if kb.worker and self.config.getvalue("loadgroup"):
            group_by_target(items, kb.target_specs[0])

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        report = yield
        kb = self.config.stash[SESSION]
        if kb.worker and kb.outgoing:
            setattr(report, VERDICTS_ATTR, list(kb.outgoing))
            kb.outgoing.clear()
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        kb = self.config.stash[SESSION]
        if kb.worker:
            return
        node = getattr(report, "node", None)  # the xdist worker that sent the report
        worker = getattr(getattr(node, "gateway", None), "id", "")
        for wire in getattr(report, VERDICTS_ATTR, None) or []:
            v = verdict_from_wire(wire)
            kb.record(v)
            if worker:
                kb.workers.setdefault(v.target, set()).add(str(worker))


class _OneProgressLine:
    """`kbench run` without -v shows one progress display, kbench's own
    lines (cases done of total, elapsed, ETA; a line per perf case): pytest's
    dots and letters for tests that pass, skip or xfail are not printed (a
    failure's letter is; the summary still counts everything)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config
                                 ) -> tuple[str, str, str] | None:
        if config.option.verbose > 0:
            return None
        if hasattr(report, "wasxfail"):
            return ("xfailed", "", "XFAIL") if report.skipped else None
        if report.skipped:
            return "skipped", "", "SKIPPED"
        if report.passed and report.when == "call":
            return "passed", "", "PASSED"
        return None


class _OneCount:
    """Under `kbench run`: one count of what the run did. pytest's closing
    line counts pytest's tests (a case test judges several input kinds, and
    other suites run beside the cases); kbench's counts the results it wrote,
    the rows of results.csv that the report and the history count too, and
    says how many tests made them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.monotonic()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.monotonic()
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.summary_stats = lambda: self.closing_line(reporter)

    def closing_line(self, reporter: Any) -> None:
        kb = self.config.stash.get(SESSION, None)
        verdicts = kb.verdicts if kb is not None else []
        tally: dict[str, int] = {}
        for v in verdicts:
            tally[v.status] = tally.get(v.status, 0) + 1
        tests = {r.nodeid for k in ("passed", "failed", "error", "skipped")
                 for r in reporter.stats.get(k, []) if hasattr(r, "nodeid")}
        failed = {r.nodeid for k in ("failed", "error") for r in reporter.stats.get(k, [])
                  if hasattr(r, "nodeid")}
        parts = ", ".join(f"{n:,} {status}" for status, n in sorted(tally.items()))
        line = (f"kbench run: {len(verdicts):,} results ({parts or 'none'}; the rows of "
                f"results.csv, the report and the history) from {len(tests):,} tests"
                + (f", {len(failed):,} of them failed" if failed else "")
                + f", in {hms(time.monotonic() - self.started)}")
        reporter.write_line(line, red=bool(failed), green=not failed, bold=True)


class _QuietInterrupt:
    """Under `kbench run`: Ctrl-C or SIGTERM prints no KeyboardInterrupt banner
    or source line (kbench run says in one line what was interrupted, and
    the summary says INCOMPLETE)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and hasattr(reporter, "_report_keyboardinterrupt"):
            reporter._report_keyboardinterrupt = lambda: None  # pytest prints it from two places
            reporter._keyboardinterrupt_memo = None


class _Completeness:
    """Which scheduled tests finished: a run is complete only when every test
    it scheduled (each case's verdict among them) ran to its teardown, here
    or in an xdist worker. A worker process that died takes its running test
    with it (xdist reports it with when="???"); that test, and any test that
    never reported, make the run incomplete (run.json lists them)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.scheduled: set[str] = set()
        self.finished: set[str] = set()
        self.lost: list[str] = []  # tests whose process died under them

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if not is_worker(self.config):
            self.scheduled |= {i.nodeid for i in items}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.scheduled |= set(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if is_worker(self.config):
            return
        if report.when == "teardown":
            self.finished.add(report.nodeid)
        elif report.when not in ("setup", "call"):  # xdist: the worker died running it
            self.lost.append(report.nodeid)

    def record(self, metadata: dict[str, Any]) -> list[str]:
        """Writes the tally into run.json's metadata; returns the tests that
        did not finish (lost ones first)."""
        missing = list(dict.fromkeys([*self.lost, *sorted(self.scheduled - self.finished)]))
        metadata["tests"] = {"scheduled": len(self.scheduled),
                             "finished": len(self.finished & self.scheduled)}
        if missing:
            metadata["tests"]["not_finished"] = missing[:50]
            metadata["tests"]["not_finished_count"] = len(missing)
        return missing


def pytest_collection_finish(session: pytest.Session) -> None:
    """Says which plugin files a target refused, and why, before the tests run."""
    kb = session.config.stash[SESSION]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        for note in kb.plugin_notes:
            reporter.write_line(f"kbench: plugin not loaded on {note}", yellow=True)


def job_features(job: Job) -> Features:
    """The cost model's features of a case test (kbench.harness.progress):
    its GEMM view, M x N x K and the batch."""
    case = job.case
    if isinstance(case, GemmCase):
        return features(case.m, case.n, case.k, case.batch)
    return features(case.n * case.out_h * case.out_w, case.c_out, case.reduction)


def other_work(nodeid: str) -> tuple[str, Features]:
    """A test that is not a case test, for the ETA: its file's group, a fixed
    cost only."""
    return f"other:{nodeid.split('::', 1)[0]}", (1.0, 0.0, 0.0, 0.0)


class _ProgressPrinter:
    """Prints queued perf verdict lines once a test has finished reporting
    (outside output capture)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.case_ids: set[str] = set()
        self.other_ids: set[str] = set()
        self.elapsed = 0.0  # at the last case test
        self.last_test_end: float | None = None  # epoch second the last test ended
        self.started = 0.0
        self.case_started = False
        self.failed: dict[str, bool] = {}
        self.last_end: dict[str, float] = {}  # per worker process: when its last test ended

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Counts the correctness case tests (kb_job) for the ETA, each with
        its target and shape features for the cost model."""
        work, others = {}, {}
        for item in session.items:
            job = getattr(getattr(item, "callspec", None), "params", {}).get("kb_job")
            if isinstance(job, Job):
                work[item.nodeid] = (job.target, job_features(job))
            else:
                others[item.nodeid] = other_work(item.nodeid)
        self._start(work, others)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """With worker processes the controller collects nothing: the case
        tests are the ids whose parameter is a job's id."""
        kb = self.config.stash.get(SESSION, None)
        if kb is None or self.case_ids:
            return
        jobs = {j.id: j for op in ("gemm", "conv2d") for j in kb.jobs(op)}
        work, others = {}, {}
        for nodeid in ids:
            base = nodeid[:nodeid.rfind("]") + 1]  # without --dist loadgroup's "@group"
            job = jobs.get(base[base.find("[") + 1:-1]) if base else None
            if job is not None:
                work[nodeid] = (job.target, job_features(job))
            else:
                others[nodeid] = other_work(nodeid)
        self._start(work, others)

    def _start(self, work: dict[str, tuple[str, Features]],
               others: dict[str, tuple[str, Features]]) -> None:
        kb = self.config.stash.get(SESSION, None)
        self.case_ids = set(work)
        self.other_ids = set(others)
        if kb is not None and len(self.case_ids) >= 20:
            path = self.config.getoption("--kb-costs")
            memory = load_memory(Path(path)) if path else {}
            kb.progress = ProgressCounter(len(self.case_ids), work={**work, **others},
                                          prior=load_costs(Path(path)) if path else {},
                                          tail=max(0.0, self.config.getoption(
                                              "--kb-tail-seconds")), memory=memory)
            self._expected({**work, **others}, memory, len(work))
        self.started = time.monotonic()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Every case test ran: its costs (and the other suites') are
        remembered for the next run's forecast (--kb-save-costs)."""
        kb = self.config.stash.get(SESSION, None)
        path = self.config.getoption("--kb-costs")
        if (kb is None or kb.progress is None or not path or kb.worker
                or not self.config.getoption("--kb-save-costs")
                or kb.progress.done < kb.progress.total):
            return
        save_costs(Path(path), kb.progress.model, kb.progress.scale(self.elapsed),
                   last_test_end=self.last_test_end, seconds=kb.progress.seconds)

    def _expected(self, work: dict[str, tuple[str, Features]], memory: dict[str, float],
                  cases: int) -> None:
        """The expected duration, up front, from the costs remembered (--kb-costs)."""
        path = self.config.getoption("--kb-costs")
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if not path or reporter is None:
            return
        seconds, unknown = expected_seconds(work, load_costs(Path(path)), memory)
        if seconds is not None:
            seconds += max(0.0, self.config.getoption("--kb-tail-seconds"))
        unknown = [u for u in unknown if not u.startswith("other:")]
        n = f"{cases:,} case tests"
        if seconds is None:
            reporter.write_line(f"kbench run: {n}; no expected duration yet for "
                                f"{', '.join(unknown)} (learned from a complete run appended "
                                "to the history; the ETA follows from the first tenth)")
        else:
            reporter.write_line(f"kbench run: {n}, expected to take about {hms(seconds)} "
                                "(case costs of the last complete run of these targets here)")

    def pytest_runtest_logstart(self, nodeid: str, location: Any) -> None:
        """The ETA's clock starts with the first test it models (a case test
        or another test of the run: both count in the seconds done)."""
        if not self.case_started and (nodeid in self.case_ids or nodeid in self.other_ids):
            self.case_started = True
            self.started = time.monotonic()

    def _wall(self, report: pytest.TestReport) -> float:
        """A test's wall seconds in its process: from the end of the test
        before it there (or the clock's start) to its own end. Setup, call and
        teardown durations leave out what pytest and kbench do between them
        (verdicts judged and written, reports sent): on emulated targets
        three quarters of a run's time."""
        node = getattr(report, "node", None)  # the xdist worker that ran it
        worker = str(getattr(getattr(node, "gateway", None), "id", ""))
        now = time.monotonic()
        wall = max(0.0, now - self.last_end.get(worker, self.started))
        self.last_end[worker] = now
        return wall

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A test is counted at its teardown, with its wall seconds (_wall)."""
        kb = self.config.stash.get(SESSION, None)
        if kb is None or kb.progress is None:
            return
        if report.nodeid in self.other_ids:  # the run's other tests: in the ETA only
            if report.when == "teardown":
                kb.progress.observe(report.nodeid, self._wall(report))
                self.last_test_end = time.time()
            return
        if report.nodeid not in self.case_ids:
            return
        self.failed[report.nodeid] = self.failed.get(report.nodeid, False) or report.failed
        if report.when != "teardown":
            return
        elapsed = time.monotonic() - self.started
        self.last_test_end = time.time()
        line = kb.progress.tick(elapsed, self.failed.pop(report.nodeid),
                                report.nodeid, self._wall(report))
        self.elapsed = elapsed
        if line:
            kb.pending_lines.append(line)

    def pytest_runtest_logfinish(self, nodeid: str, location: Any) -> None:
        kb = self.config.stash.get(SESSION, None)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if kb is None or reporter is None or not kb.pending_lines:
            return
        reporter.ensure_newline()
        if getattr(reporter._tw, "width_of_current_line", 0):  # after -q progress dots
            reporter.write("\n")
        for line in kb.pending_lines:
            reporter.write_line(line)
        kb.pending_lines.clear()


LISTED_FAILURES = 40  # failing results named in the terminal; every one is in failures.csv


def failing_lines(verdicts: list[Verdict], reporter: Any) -> list[str]:
    """kbench's own list of what failed (pytest's short summary is off unless
    -v): each failing result, and each failed test that wrote no result (a
    contract or determinism test, a collection error)."""
    bad = [v for v in verdicts if v.status in FAILING]
    lines = [f"{v.status.upper()} {v.target} {v.realization} "
             f"{v.catalog + '/' if v.catalog else ''}{v.case} [{v.kind}]"
             + (f": {v.message}" if v.message else "") for v in bad[:LISTED_FAILURES]]
    if len(bad) > LISTED_FAILURES:
        lines.append(f"... and {len(bad) - LISTED_FAILURES} more failing result(s) in "
                     "failures.csv")
    printer = reporter.config.pluginmanager.get_plugin("kbench-progress")
    cases = getattr(printer, "case_ids", set())
    judged = {v.case for v in bad}
    for k in ("failed", "error"):
        for r in reporter.stats.get(k, []):
            nodeid = getattr(r, "nodeid", "")
            if nodeid in cases or any(f"-{c}-" in nodeid for c in judged):
                continue  # a case test: its failing results are listed above
            crash = getattr(getattr(r, "longrepr", None), "reprcrash", None)
            why = str(getattr(crash, "message", "") or "").splitlines()[0:1]
            lines.append(f"{k.upper()} {nodeid or 'collection'}" + (f": {why[0]}" if why else ""))
    return lines


def skipped_lines(reporter: Any) -> list[str]:
    """Why tests did not apply (pytest's short summary of skips is off unless -v):
    one line per reason, with how many tests it skipped."""
    reasons: dict[str, int] = {}
    for r in reporter.stats.get("skipped", []):
        if hasattr(r, "wasxfail"):
            continue  # an expected failure (a plugin's finding), not a skip
        longrepr = getattr(r, "longrepr", None)
        why = str(longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3
                  else longrepr or "")
        why = why.removeprefix("Skipped: ").strip() or "no reason given"
        reasons[why] = reasons.get(why, 0) + 1
    return [f"{n} test(s) skipped: {why}" for why, n in reasons.items()]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    kb = terminalreporter.config.stash[SESSION]
    if kb.case_tests and not kb.selected_jobs:
        terminalreporter.section("kbench: nothing selected")
        terminalreporter.write_line(kb.nothing_selected("") + ": exit status 5, not a pass")
    skipped = skipped_lines(terminalreporter)
    if skipped and terminalreporter.config.getoption("verbose") <= 0:
        terminalreporter.section("kbench: tests that do not apply here (skipped), and why")
        for line in skipped:
            terminalreporter.write_line(line)
    writer = kb.writer
    if writer is not None and writer.error is not None:
        terminalreporter.write_line(
            f"run folder: cannot write {kb.out}: {writer.error.strerror or writer.error}; "
            f"{writer.lost} verdict(s) after the first {writer.count} were not written",
            red=True)
    if not kb.verdicts:
        if kb.incomplete:
            terminalreporter.write_line(kb.incomplete, red=True)
        return
    terminalreporter.section("kbench verdicts")
    terminalreporter.write_line(summary_text(kb.verdicts))
    for line in failing_lines(kb.verdicts, terminalreporter):
        terminalreporter.write_line(line, red=True)
    lines = kb.not_applicable_lines()
    if lines:
        terminalreporter.section("kbench: catalog cases a realization does not take")
        for line in lines:
            terminalreporter.write_line(line)
    for note in kb.plugin_notes:
        terminalreporter.write_line(f"plugin not loaded on {note}")
    if kb.strict_plugins and kb.plugin_notes:
        terminalreporter.write_line("--strict-plugins: a plugin could not be loaded: the run fails",
                                    red=True)
    cov = kb.coverage_result
    if cov is not None:
        terminalreporter.section("kbench machine-code coverage (instructions executed)")
        for line in coverage_summary_lines(cov.rows):
            terminalreporter.write_line(line)
        for note in cov.notes:
            terminalreporter.write_line(f"coverage: {note}")
        if kb.min_coverage is not None and cov.below(kb.min_coverage):
            terminalreporter.write_line(
                f"--min-coverage {kb.min_coverage:g}: {len(cov.below(kb.min_coverage))} "
                "unit(s) below it: the run fails", red=True)
    counted = count_summary_text(kb.verdicts)
    if counted:
        terminalreporter.section("kbench instruction counts (one single-threaded call, exact)")
        terminalreporter.write_line(counted)
    if kb.out is not None:
        terminalreporter.write_line(f"run folder: {kb.out}")
    if kb.incomplete:
        terminalreporter.write_line(kb.incomplete, red=True)


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
