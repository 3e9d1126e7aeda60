"""The interleaved A/B timing protocol (`kbench ab`): two builds of the
library — two targets, e.g. the base checkout's worker and the candidate's
(`worker:PATH`, `worker:host`, `worker:ssh board ./kb_worker`) — timed in
one run with their rounds alternating, so that background load lands on
both alike.

Per case and realization:

1. verify on both targets (a wrong kernel has no speed; each verdict names
   what ran);
2. prepare both (operands built and B packed once per side);
3. calibrate calls per round once, on the candidate, to --min-round-ms, and
   use that count for both sides (the same work per round);
4. warm both up, then for each of R rounds run one round on each side, in
   an order drawn per round (base first or candidate first: neither side
   always runs into a warm or cold machine first); each round copies its
   operands to a random place first (kbench.harness.placement);
5. with P processes per side (`--processes`, worker targets), the R rounds
   run as P blocks, each in a fresh pair of worker processes (both
   restarted, re-pinned and prepared again before it): a process fixes one
   memory layout — code, heap, the library's scratch — for its life, so one
   pair of processes alone could carry a layout bias through all rounds;
6. judge the paired rounds with kbench.results.abstats (a slower or faster
   verdict needs every block to agree).

With a time budget (`kbench ab --budget`), step 4 is sequential: a case
runs stages of R rounds, judged after each, and stops at the first stage
whose verdict is decided (slower, faster, same or not slower; with
--gate-limit, at that limit too), at --max-looks stages, or when its share of the budget is
spent (what is left, over the cases left). Every look of every case is
judged at confidence 1 - alpha / (m L), m cases and L looks allowed each:
Bonferroni over all the looks the run can take, so the chance of any false
verdict stays within alpha however early the cases stop (conservative;
stopping early spends none of it).

Cases run in catalog order; the order of sides within a round is recorded.
Nothing here asserts speed: the statistics module decides."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kbench.harness.perf import PerfSettings, Prepared, prepare, process_id, verify
from kbench.harness.placement import Placement
from kbench.harness.runner import InputCache, Job
from kbench.judge.verdict import MISTRUSTED, PASS, Verdict
from kbench.native.calls import Timing
from kbench.results.abstats import DECIDED, PairedStats, paired
from kbench.results.machine import cpu_idle_ticks, quietest_cpu
from kbench.targets.spec import Target

BASE, CAND = "base", "cand"


@dataclass(frozen=True)
class AbSettings:
    rounds: int = 60
    min_round_ns: int = 2_000_000
    warmup: int = 2
    threads: int = 1
    min_effect: float = 0.05  # the limit verdicts are judged at (the gate's max_slowdown)
    alpha: float = 0.01
    seed: int = 0
    looks: int = 1  # stages of `rounds` a case may take (sequential with a budget)
    budget_s: float = 0.0  # seconds for the whole run's timing, 0 = none (one stage)
    cases: int = 1  # cases the run times (m of the Bonferroni correction)
    processes: int = 1  # blocks of rounds per stage, each in fresh worker processes
    # more limits a case must also be decided at before sequential sampling stops (the
    # regression gate's max_slowdown: `kbench gate --ab` judges the run again there)
    gate_limits: tuple[float, ...] = ()
    settle: bool = False  # a run that settles cases a gate left inconclusive (kbench ab --settle)

    @property
    def comparisons(self) -> int:
        """Tests the run may make: every look of every case."""
        return max(1, self.cases) * max(1, self.looks)


@dataclass
class AbCase:
    """One case x realization timed on both sides."""

    job: Job
    base_verdict: Verdict
    cand_verdict: Verdict
    reps: int = 0
    base_rounds: list[float] = field(default_factory=list)  # per-call ns, round i
    cand_rounds: list[float] = field(default_factory=list)
    order: str = ""  # per round: "bc" (base first) or "cb"
    stats: PairedStats | None = None
    looks: int = 0  # stages of rounds it took
    blocks: list[int] = field(default_factory=list)  # rounds per block of fresh processes

    @property
    def timed(self) -> bool:
        return bool(self.base_rounds)

    @property
    def failure(self) -> str:
        """Why the case was not timed (a correctness failure on either side), or ""."""
        bad = [f"{side}: {v.status} {v.message}".strip()
               for side, v in ((BASE, self.base_verdict), (CAND, self.cand_verdict))
               if v.status not in (PASS, MISTRUSTED)]
        return "; ".join(bad)

    def row(self) -> dict[str, Any]:
        s = self.stats
        out: dict[str, Any] = {
            "catalog": self.job.catalog, "case": self.job.case.name, "op": self.job.case.op,
            "realization": self.job.realization.name,
            "base_ran": self.base_verdict.realization, "cand_ran": self.cand_verdict.realization,
            "base_status": self.base_verdict.status, "cand_status": self.cand_verdict.status,
            "failure": self.failure, "reps_per_round": self.reps, "order": self.order,
            "looks": self.looks, "blocks": " ".join(str(b) for b in self.blocks),
            "flops": self.job.case.flops,
            "base_round_times_ns": " ".join(f"{t:.10g}" for t in self.base_rounds),
            "cand_round_times_ns": " ".join(f"{t:.10g}" for t in self.cand_rounds),
        }
        if s is not None:
            out.update({k: getattr(s, k) for k in (
                "rounds", "base_median_ns", "cand_median_ns", "base_min_ns", "cand_min_ns",
                "median_ratio", "ci_low", "ci_high", "confidence", "min_ratio", "base_cv",
                "cand_cv", "verdict")})
        else:
            out["verdict"] = "failed" if self.failure else "untimed"
        return out


def pin_together(targets: list[Target], cpu: int | None = None) -> int | None:
    """Pins the processes of both sides to one CPU (the quietest over a short
    sample unless given): with the two sides in separate processes, the
    scheduler could otherwise keep one on a core that another job loads and
    the other on a free one, a difference no interleaving cancels. Returns
    the CPU, or None where affinity cannot be set."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if cpu is None:
        before = cpu_idle_ticks()
        time.sleep(0.3)
        cpu = quietest_cpu(before, cpu_idle_ticks(), allowed)
    if cpu is None:
        return None
    for t in targets:
        pid = process_id(t)
        if pid is not None:
            os.sched_setaffinity(pid, {cpu})
    return cpu


def interleave(base: Callable[[], float], cand: Callable[[], float], rounds: int,
               rng: random.Random) -> tuple[list[float], list[float], str]:
    """Runs `rounds` pairs, each side once per pair, in an order drawn per
    pair; returns (base times, candidate times, order string)."""
    b: list[float] = []
    c: list[float] = []
    order = []
    for _ in range(rounds):
        if rng.random() < 0.5:
            b.append(base())
            c.append(cand())
            order.append("b")
        else:
            c.append(cand())
            b.append(base())
            order.append("c")
        # "b": base ran first in this pair, "c": candidate first
    return b, c, "".join(order)


def sequential(stage: Callable[[], tuple[list[float], list[float], str]],
               decide: Callable[[list[float], list[float]], str], looks: int,
               deadline: float | None = None,
               clock: Callable[[], float] = time.monotonic
               ) -> tuple[list[float], list[float], str, int]:
    """Runs stages until one's verdict (decide over all rounds so far) is
    decided, `looks` stages are done, or the clock passes the deadline;
    returns (base rounds, candidate rounds, order, stages run)."""
    b: list[float] = []
    c: list[float] = []
    order = ""
    taken = 0
    while True:
        sb, sc, so = stage()
        b, c, order, taken = b + sb, c + sc, order + so, taken + 1
        if taken >= looks or decide(b, c) in DECIDED:
            break
        if deadline is not None and clock() >= deadline:
            break
    return b, c, order, taken


def _one_round(prep: Prepared, reps: int) -> Callable[[], float]:
    timing = Timing(warmup=0, rounds=1, min_round_ns=0, max_reps=reps)
    return lambda: float(prep.run(timing).times_ns[0])


def block_sizes(rounds: int, processes: int) -> list[int]:
    """Rounds per block: `rounds` split as evenly as it goes over at most
    `processes` blocks (the first ones take the remainder)."""
    p = max(1, min(processes, rounds))
    return [rounds // p + (1 if i < rounds % p else 0) for i in range(p)]


def restart(targets: list[Target]) -> bool:
    """Starts every worker target afresh (a new process: a new memory
    layout); True if each one could be (in-process targets cannot)."""
    from kbench.targets.worker import WorkerEngine
    fresh = True
    for t in targets:
        if isinstance(t.engine, WorkerEngine):
            t.engine.close()
            t.engine.start()
        else:
            fresh = False
    return fresh


def run_case(base: Target, cand: Target, job_base: Job, job_cand: Job, s: AbSettings,
             rng: random.Random, cache: InputCache, deadline: float | None = None,
             fresh: Callable[[], object] | None = None) -> AbCase:
    """Verify both sides, then time them interleaved (in stages until decided,
    up to s.looks, while the deadline allows: sequential). Each stage runs
    its rounds in s.processes blocks; before each block `fresh` (if given)
    gives both sides new processes, and both are prepared again."""
    perf = PerfSettings(warmup=s.warmup, rounds=1, min_round_ns=s.min_round_ns,
                        threads=s.threads)
    vb = verify(base, job_base, perf, cache)
    vc = verify(cand, job_cand, perf, cache)
    out = AbCase(job_cand, vb, vc)
    if out.failure:
        return out

    def block(rounds: int) -> tuple[list[float], list[float], str]:
        if fresh is not None:
            fresh()
        # each side draws its own buffer placement per round (kbench.harness.placement)
        pb = prepare(base, job_base, perf, cache, Placement(random.Random(rng.random())))
        pc = prepare(cand, job_cand, perf, cache, Placement(random.Random(rng.random())))
        if not out.reps:  # calls per round: calibrated once, on the candidate
            out.reps = pc.run(Timing(warmup=s.warmup, rounds=1,
                                     min_round_ns=s.min_round_ns)).reps_per_round
        else:
            pc.run(Timing(warmup=s.warmup, rounds=1, min_round_ns=0, max_reps=out.reps))
        pb.run(Timing(warmup=s.warmup, rounds=1, min_round_ns=0, max_reps=out.reps))  # warm-up
        out.blocks.append(rounds)
        return interleave(_one_round(pb, out.reps), _one_round(pc, out.reps), rounds, rng)

    def stage() -> tuple[list[float], list[float], str]:
        b: list[float] = []
        c: list[float] = []
        order = ""
        for n in block_sizes(s.rounds, s.processes):
            sb, sc, so = block(n)
            b, c, order = b + sb, c + sc, order + so
        return b, c, order

    out.base_rounds, out.cand_rounds, out.order, out.looks = sequential(
        stage, lambda b, c: decision(b, c, s, out.blocks), s.looks, deadline)
    return out


def decision(base: list[float], cand: list[float], s: AbSettings, blocks: list[int]) -> str:
    """The verdict a sequential look acts on: the verdict at --min-effect,
    unless the case is not yet decided at one of s.gate_limits (then that
    limit's verdict, so sampling goes on): a case slower by 10% is decided
    at a 2.5% limit long before its interval clears a 5% gate limit."""
    verdict = paired(base, cand, s.min_effect, s.alpha, s.comparisons, blocks).verdict
    for limit in s.gate_limits:
        if verdict not in DECIDED:
            break
        verdict_there = paired(base, cand, limit, s.alpha, s.comparisons, blocks).verdict
        if verdict_there not in DECIDED:
            return verdict_there
    return verdict


def judge(cases: list[AbCase], s: AbSettings) -> None:
    """Sets each timed case's statistics (Bonferroni over the timed cases and,
    sequential, over the looks each may take)."""
    timed = [c for c in cases if c.timed]
    m = s.comparisons if s.looks > 1 else len(timed)  # as the looks were judged
    for c in timed:
        c.stats = paired(c.base_rounds, c.cand_rounds, s.min_effect, s.alpha, m, c.blocks)
