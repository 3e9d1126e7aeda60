"""Performance measurement of one case on one realization: verify first
(a wrong kernel has no speed), then time natively inside the target, then
time packing B on its own. The numbers are per call; GFLOP/s use the
median. Results from an emulated target are labelled emulated and are
never a speed."""

from __future__ import annotations

import os
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from kbench.harness.placement import Placement
from kbench.harness.runner import InputCache, Job, run_job
from kbench.judge.verdict import MISTRUSTED, PASS, Verdict
from kbench.native import api
from kbench.native.calls import CallResult, ConvDesc, Timing
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.results.noise import NOISY_CV  # rounds varying more: the progress line says NOISY
from kbench.targets.spec import GuardedBuffer, Target

PERF_KIND = "uniform"
# Rounds a case keeps per pass. A case that got more (pytest-benchmark spends --max-time
# in rounds of one call when its calibration round was slow, e.g. on a busy machine:
# 35,125 rounds of a 14 us call) has consecutive rounds merged into rounds of more calls,
# as a longer round would have measured them: results.csv stays small and readable.
MAX_ROUNDS = 1000


@dataclass(frozen=True)
class PerfSettings:
    warmup: int = 2
    rounds: int = 10
    min_round_ns: int = 2_000_000  # calls per round calibrated to last >= 2 ms
    cold: bool = False  # flush caches before every round (one call per round)
    threads: int = 1

    def timing(self, rounds: int | None = None) -> Timing:
        return Timing(self.warmup, rounds or self.rounds, 0 if self.cold else self.min_round_ns,
                      0, self.cold)


class VirtualClock:
    """A clock that moves only when told how long a native call took, so that
    pytest-benchmark's calibration and statistics run on native times. Each
    read adds a nanosecond so that its precision probe terminates."""

    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        self.t += 1e-9
        return self.t

    def advance(self, ns: float) -> None:
        self.t += ns * 1e-9


def verify(target: Target, job: Job, settings: PerfSettings,
           cache: InputCache | None = None) -> Verdict:
    """The correctness verdict that gates timing (perf-suite row, untimed)."""
    v = run_job(target, job, api.Selector(threads=settings.threads), cache)
    v.suite = "perf"
    v.emulated = target.emulated
    return v


def bounded_rounds(round_ns: list[float], reps: int, cap: int | None = None
                   ) -> tuple[list[float], int]:
    """At most `cap` rounds (default MAX_ROUNDS): more are merged, `merge` =
    ceil(n / cap) consecutive rounds at a time, into one round of merge x reps
    calls whose per-call time is their mean (what one round of that many calls
    measures; the last round merges what is left). Returns the rounds and the
    calls per round."""
    n, cap = len(round_ns), cap or MAX_ROUNDS
    if n <= cap:
        return list(round_ns), reps
    merge = -(-n // cap)
    times = np.asarray(round_ns, dtype=float)
    starts = np.arange(0, n, merge)
    sizes = np.diff(np.append(starts, n))
    return (np.add.reduceat(times, starts) / sizes).tolist(), reps * merge


def with_times(v: Verdict, round_ns: list[float], reps: int, packing: CallResult | None
               ) -> Verdict:
    """The verdict with timing statistics filled in (over at most MAX_ROUNDS
    rounds: see bounded_rounds)."""
    taken = len(round_ns)
    round_ns, reps = bounded_rounds(round_ns, reps)
    med = statistics.median(round_ns)
    out = replace(
        v, rounds=len(round_ns), reps_per_round=reps, round_times_ns=list(round_ns),
        time_min_ns=min(round_ns), time_median_ns=med, time_mean_ns=statistics.fmean(round_ns),
        time_stdev_ns=statistics.stdev(round_ns) if len(round_ns) > 1 else 0.0,
        gflops=(v.flops / med) if med > 0 else float("nan"),
    )
    if packing is not None and packing.times_ns:
        out.pack_time_ns = statistics.median(packing.times_ns)
    if taken > len(round_ns):
        note = (f"{taken:,} rounds timed, kept as {len(round_ns):,} rounds of "
                f"{reps:,} calls (consecutive rounds merged)")
        out.message = f"{out.message}; {note}" if out.message else note
    return out


def process_id(target: Target) -> int | None:
    """The process that runs a target's kernels on this machine (a worker's
    pid; this process for in-process targets; None if unknown)."""
    proc = getattr(target.engine, "proc", None)
    if proc is not None:
        return int(proc.pid)
    if target.engine.__class__.__name__ == "InProcessEngine":
        return os.getpid()
    return None


@dataclass
class Prepared:
    """A case ready to be timed again and again: operands built and B packed
    once; `run(timing)` times the kernel, `packing` is the packing time."""

    run: Callable[[Timing], CallResult]
    packing: CallResult | None


def prepare(target: Target, job: Job, settings: PerfSettings,
            cache: InputCache | None = None, placement: Placement | None = None) -> Prepared:
    """With a placement, every run() copies the operands and outputs to a new
    random place first (kbench.harness.placement): each timed call draws its
    own buffer layout."""
    case, name = job.case, job.realization.name
    sel = target._forced(api.Selector(threads=settings.threads), name)
    if isinstance(case, GemmCase):
        inp = cache.get(case, job.kind) if cache else inputs.gemm_inputs(case, job.kind)
        assert isinstance(inp, inputs.GemmInputs)
        bufs = [GuardedBuffer(case.m, case.n, case.ldc) for _ in range(case.batch)]
        problems = target.gemm_problems(case, inp, job.realization, sel, bufs)
        packing = None
        if case.b_form in ("packed", "native"):
            packing = target.time_packing(case, inp, job.realization, settings.timing(), sel)

        def run_gemm(timing: Timing) -> CallResult:
            placed = placement.problems(problems) if placement else problems
            return target.engine.gemm_raw(case.m, case.n, case.k, placed, sel, timing)
        return Prepared(run_gemm, packing)
    cinp = cache.get(case, job.kind) if cache else inputs.conv_inputs(case, job.kind)
    assert isinstance(cinp, inputs.ConvInputs) and isinstance(case, ConvCase)
    out = np.empty((case.n, case.out_h, case.out_w, case.c_out), np.float16)
    params = api.ConvParams(case.stride, case.pad, case.dilation, case.groups, cinp.clamp)
    desc = ConvDesc.from_shapes(cinp.x.shape, cinp.w.shape, params)
    x, w = np.ascontiguousarray(cinp.x), np.ascontiguousarray(cinp.w)

    def run_conv(timing: Timing) -> CallResult:
        if placement is None:
            return target.engine.conv_raw(desc, x, w, cinp.bias, out, sel, timing)
        placement.new_round()
        return target.engine.conv_raw(desc, placement.place(x), placement.place(w),
                                      placement.place(cinp.bias), placement.place(out), sel,
                                      timing)
    return Prepared(run_conv, None)


def time_native(target: Target, job: Job, settings: PerfSettings,
                cache: InputCache | None = None,
                placement: Placement | None = None) -> tuple[CallResult, CallResult | None]:
    """Native rounds inside the target (and packing B, timed on its own).
    On a target whose times are speeds (not emulated) the operands and
    outputs are first copied to a random place (kbench.harness.placement),
    drawn afresh at every call: each pass of a case (`kbench run --passes`)
    gets its own buffer layout, so a layout that one process happened to
    give a case becomes pass-to-pass variance that the gate's per-pass test
    sees, instead of a bias of the whole run. Emulated targets keep their
    buffers where they are: their instruction counts stay independent of
    where the allocator put them."""
    if placement is None and not target.emulated:
        placement = Placement(random.Random())
    prep = prepare(target, job, settings, cache, placement)
    return prep.run(settings.timing()), prep.packing


def measure(target: Target, job: Job, settings: PerfSettings,
            cache: InputCache | None = None) -> Verdict:
    """Verify, then time: the perf-suite row for one case and realization."""
    v = verify(target, job, settings, cache)
    if v.status not in (PASS, MISTRUSTED):
        return v
    res, packing = time_native(target, job, settings, cache)
    return with_times(v, res.times_ns, res.reps_per_round, packing)


def eta_line(done: int, total: int, elapsed_s: float, v: Verdict) -> str:
    """A progress line: position, elapsed, ETA, and the row's headline."""
    left = (elapsed_s / done) * (total - done) if done else 0.0

    def hms(s: float) -> str:
        s = int(s)
        return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"
    if v.rounds and v.count_call == v.count_call:  # counted: instructions, not time
        speed = f"{v.count_call:12,.0f} instructions (kernel {v.count_kernel:,.0f})"
    elif v.rounds:
        cv = v.time_stdev_ns / v.time_mean_ns if v.time_mean_ns > 0 else float("nan")
        speed = (f"{v.time_median_ns / 1e3:10.1f} us  "
                 + ("emulated, not a speed" if v.emulated
                    else f"{v.gflops:8.2f} GFLOP/s  CV {cv:5.1%}"
                    + ("  NOISY" if cv > NOISY_CV else "")))
    else:
        speed = v.status.upper() + (f" {v.message}" if v.message else "")
    return (f"[{done}/{total} elapsed {hms(elapsed_s)} ETA {hms(left)}] {v.target} "
            f"{v.realization} {v.case}: {speed}")
