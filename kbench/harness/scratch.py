"""The scratch-memory check: what a realization still holds on the heap after
a call, over identical calls, and against the cap it declares.

Heap figures come from a worker's interposed allocator (native/worker/
kb_heap.h, kbench.native.calls.HeapUse): per call, the bytes the realization
held when the call started, the most it held at once during the call, and
what it still held when the call returned, where a plugin realization holds
every block allocated during its own calls (its packer's included, in any
thread: threads it starts count) and not freed, and kbench's own
realizations hold kbench's scratch.

The check calls a realization REPEATS times with the same arguments, without
guard pages (as a production call runs), and judges what it holds after each
call:

- more after every call but the first than after the one before is a leak:
  "leaks N bytes per call", N the least growth (the first call may set up
  scratch it keeps, and a second may still grow a cache: both calls after
  it must grow);
- more after any call than its cap is a failure: "keeps N bytes after a call,
  its declared cap is C per thread" (the call runs on one thread). A plugin
  declares its cap (KB_PLUGIN_SCRATCH_CAPPED, scratch_cap); kbench's own
  realizations keep at most KB_SCRATCH_RETAIN_CAP of scratch per thread, and
  are held to it. Without a cap what a realization keeps is shown, and only
  a leak fails.

A realization with a cap is also called once on a case sized to the cap
(cap_case): B alone, N x K FP16 values, is larger than the cap, so that a
library whose scratch grows with its operands must give back what is over
its cap (one call: the base case looks for a leak). On an emulated target
kbench's own realizations skip that case: packing a B of 8 MiB for each of
them under QEMU takes minutes; the host worker runs it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from kbench.errors import WorkerCrashed
from kbench.harness import runner
from kbench.judge.verdict import ERROR, FAIL, PASS, SKIP, Verdict
from kbench.native import api
from kbench.native.calls import HeapUse
from kbench.native.plugins import PluginRealizationInfo
from kbench.problems import inputs
from kbench.problems.cases import Case, ConvCase, GemmCase
from kbench.targets.plugins import PluginLoads
from kbench.targets.spec import Outcome, Target

REPEATS = 3  # identical calls of the base case
CAP_REPEATS = 1  # calls of the case sized to the cap
SUITE = "determinism"
KIND = "normal"
GEMM_CASE = GemmCase("scratch_gemm", 9, 40, 31, bias=True, clamp=True)
CONV_CASE = ConvCase("scratch_conv", 1, 9, 9, 8, 12, 3, 3, pad=(1, 1, 1, 1))
CAP_CASE_NAME = "scratch_over_cap"
CAP_CASE_M = 4
CAP_CASE_MAX_N = 4096  # a cap above 32 MiB gets no case of its own (B would be too large)


def measures(target: Target, realization: str) -> bool:
    """Does the target's engine count heap blocks for this realization's calls?
    (A worker does; the host target's worker does for plugin realizations.)"""
    check = getattr(target.engine, "heap_accounting", None)
    return check is not None and bool(check(realization))


def cap_of(r: api.Realization, declared: PluginRealizationInfo | None) -> int | None:
    """The bytes a realization may hold after a call, per thread: a plugin's
    declared scratch_cap (None: none declared), kbench's KB_SCRATCH_RETAIN_CAP
    for ours, none for a peer."""
    if r.is_plugin:
        return declared.scratch_cap if declared is not None else None
    return None if r.peer else api.SCRATCH_RETAIN_CAP


def cap_case(cap: int) -> GemmCase | None:
    """A GEMM whose B alone (N x K FP16 values) is larger than `cap` bytes."""
    n = math.isqrt(cap // 2) + 1
    if n > CAP_CASE_MAX_N:
        return None
    return GemmCase(CAP_CASE_NAME, CAP_CASE_M, n, n, bias=True)


def _runnable(case: GemmCase | ConvCase, r: api.Realization) -> Case | None:
    """The case as the realization takes it (its form of B, M within its
    shape class, without a bias where its packed B takes none), or None."""
    if isinstance(case, GemmCase) and r.max_m and case.m > r.max_m:
        case = replace(case, m=r.max_m)
    for c in (case, replace(case, bias=False)):
        run = runner.adapted(c, r)
        if runner.applicable(run, r):
            return run
    return None


def cases_for(target: Target, r: api.Realization, cap: int | None) -> list[Case]:
    """The cases a realization is checked on: one of its operator, and with a
    cap the GEMM sized to it (not for our own on an emulated target)."""
    base = GEMM_CASE if r.op == "gemm" else CONV_CASE
    chosen = [base]
    if cap is not None and r.op == "gemm" and (r.is_plugin or not target.emulated):
        big = cap_case(cap)
        if big is not None:
            chosen.append(big)
    return [c for c in (_runnable(c, r) for c in chosen) if c is not None]


@dataclass(frozen=True)
class HeapJudgement:
    status: str
    message: str


def _bytes(n: int) -> str:
    return f"{n:,}"


def judge_heap(uses: list[HeapUse], cap: int | None) -> HeapJudgement:
    """The finding over identical calls' heap figures (see the module)."""
    missing = next((u for u in uses if not u.measured), None)
    if missing is not None or not uses:
        why = missing.note if missing else "not measured"
        return HeapJudgement(status=SKIP, message=f"heap {why}")
    after = [u.after for u in uses]
    peak = f"(peak {_bytes(max(u.peak for u in uses))})"
    if len(after) > 1:
        held = ", ".join(_bytes(a) for a in after[:-1]) + f" and {_bytes(after[-1])}"
        seen = f"it holds {held} bytes after {len(uses)} identical calls {peak}"
    else:
        seen = f"it holds {_bytes(after[0])} bytes after the call {peak}"
    problems = []
    growth = [b - a for a, b in zip(after, after[1:], strict=False)]  # calls 2, 3, ...
    if len(growth) >= 2 and all(g > 0 for g in growth):
        problems.append(f"leaks {_bytes(min(growth))} bytes per call")
    if cap is not None and max(after) > cap:
        problems.append(f"keeps {_bytes(max(after))} bytes after a call, its declared cap is "
                        f"{_bytes(cap)} per thread")
    if problems:
        return HeapJudgement(FAIL, f"{'; '.join(problems)}: {seen}")
    said = (f"declared cap {_bytes(cap)} per thread" if cap is not None
            else "no cap declared")
    return HeapJudgement(PASS, f"{seen}; {said}")


def _call(target: Target, case: Case, r: api.Realization, inp: Any) -> Outcome:
    if isinstance(case, GemmCase):
        return target.run_gemm(case, inp, r.name)
    assert isinstance(case, ConvCase)
    return target.run_conv(case, inp, r.name)


def _failed_call(job: runner.Job, outcome: Outcome) -> Verdict:
    if isinstance(outcome.error, WorkerCrashed):
        v = runner.fault_verdict(job, outcome.error, outcome.guard_detail)
        v.suite = SUITE
        return v
    return runner.job_verdict(job, ERROR, f"scratch check: {outcome.error or ''} "
                                          f"{outcome.guard_detail}".strip(), SUITE)


def check_case(target: Target, spec: str, r: api.Realization, case: Case,
               cap: int | None, repeats: int = REPEATS) -> Verdict:
    """One verdict: the realization called `repeats` times on `case`."""
    job = runner.Job(case, KIND, r, spec, "scratch")
    inp = (inputs.gemm_inputs(case, KIND) if isinstance(case, GemmCase)
           else inputs.conv_inputs(case, KIND))  # type: ignore[arg-type]
    uses = []
    for _ in range(repeats):
        outcome = _call(target, case, r, inp)
        if outcome.error is not None or outcome.guard_detail:
            return _failed_call(job, outcome)
        uses.append(outcome.heap)
    j = judge_heap(uses, cap)
    v = runner.job_verdict(job, j.status, f"scratch: {j.message}", SUITE)
    last = uses[-1]
    if last.measured:
        v.heap_peak, v.heap_retained = max(u.peak for u in uses), last.after
    return v


def check_realization(target: Target, spec: str, r: api.Realization) -> list[Verdict]:
    """The scratch verdicts of one realization on a target (one skip verdict
    when the target does not count its heap)."""
    if not measures(target, r.name):
        job = runner.Job(GEMM_CASE if r.op == "gemm" else CONV_CASE, KIND, r, spec, "scratch")
        return [runner.job_verdict(job, SKIP, f"scratch: heap not measured on {spec}: its calls "
                                              "run in this process (only a worker interposes "
                                              "the allocator)", SUITE)]
    declared = PluginLoads.from_extra(target.info().extra).declaration(r.name)
    cap = cap_of(r, declared)
    return [check_case(target, spec, r, c, cap,
                       CAP_REPEATS if c.name == CAP_CASE_NAME else REPEATS)
            for c in cases_for(target, r, cap)]
