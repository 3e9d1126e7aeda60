"""Determinism: the same inputs twice give bit-identical outputs, and 3
threads give the bits of 1 thread, for every realization of every chosen
target (plugins included; threads only where a realization takes them),
threads splitting M and, on a GEMV and a narrow convolution, N;
and every cache-blocked realization gives the same bits with threads = 4 as
with threads = 1, on shapes spanning several K blocks and enough output
blocks for four threads to run at once (a thread that shares another's
partial-sum scratch changes bits there). And the same call three times
holds no more heap after each call than after the one before, nor more
than the realization's cap (kbench.harness.scratch), where a worker counts
its heap.

A call that fails does not stop the others: each test checks every
realization and fails at the end with every problem it found; a call
whose process crashed, exited or timed out (a plugin's) is also recorded
as that fault's verdict."""

import numpy as np
import pytest

from kbench.errors import WorkerCrashed
from kbench.harness import runner, scratch
from kbench.judge.verdict import ERROR, FAIL, FAILING, PASS
from kbench.native.api import Selector
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase

GEMM = [GemmCase("det_gemm_tail", 17, 33, 65, clamp=True, lda_pad=3, ldc_pad=5),
        GemmCase("det_gemv", 1, 129, 257),
        GemmCase("det_packed", 9, 40, 31, b_form="packed", batch=2),
        GemmCase("det_native", 9, 40, 31, b_form="native")]
CONV = [ConvCase("det_conv", 2, 9, 9, 8, 12, 3, 3, stride=(2, 1), pad=(1, 0, 1, 1),
                 dilation=(1, 2), groups=2)]


def _bits(outputs):
    return [o.view(np.uint16).copy() for o in outputs]


class Findings:
    """What one test finds over every realization it checks: a verdict per
    realization and case (suite determinism: results.csv, the report), and
    the problems the test fails with at the end."""

    def __init__(self, kb_session, spec):
        self.kb, self.spec, self.problems = kb_session, spec, []

    def _job(self, r, case, kind):
        return runner.Job(case, kind, r, self.spec, "determinism")

    def ran(self, r, case, kind, *outcomes) -> bool:
        """True when every call succeeded and wrote only its outputs; else the
        problem is recorded (a fault as its own status) and noted."""
        for o in outcomes:
            if o.error is None and not o.guard_detail:
                continue
            job = self._job(r, case, kind)
            if isinstance(o.error, WorkerCrashed):
                v = runner.fault_verdict(job, o.error, o.guard_detail)
                v.suite = "determinism"
            else:
                v = runner.job_verdict(job, ERROR, f"{o.error or ''} {o.guard_detail}".strip(),
                                       "determinism")
            self.kb.record(v)
            self.problems.append(f"{self.spec} {r.name} {case.name}: {v.message}")
            return False
        return True

    def result(self, r, case, kind, same, what):
        """The verdict of one determinism check: `what` held (pass) or not (fail)."""
        message = what if same else f"not {what}"
        self.kb.record(runner.job_verdict(self._job(r, case, kind), PASS if same else FAIL,
                                          message, "determinism"))
        if not same:
            self.problems.append(f"{self.spec} {r.name} {case.name}: {message}")

    def check(self):
        assert not self.problems, "\n".join(self.problems)


def _same(x, y):
    return all(np.array_equal(a, b) for a, b in zip(_bits(x), _bits(y), strict=True))


@pytest.mark.parametrize("case", GEMM, ids=lambda c: c.name)
def test_gemm_bit_identical(kb_session, kb_spec, case):
    spec = kb_spec  # one target per test, so that targets can run in parallel
    found = Findings(kb_session, spec)
    for r in kb_session.chosen(spec, "gemm"):
        if not runner.applicable(case, r):
            continue
        target = kb_session.target(spec)
        inp = inputs.gemm_inputs(case, "normal")
        first = target.run_gemm(case, inp, r.name)
        second = target.run_gemm(case, inp, r.name)
        if found.ran(r, case, "normal", first, second):
            found.result(r, case, "normal", _same(first.outputs, second.outputs),
                         "bit-identical over two calls")
    found.check()


@pytest.mark.parametrize("case", CONV, ids=lambda c: c.name)
def test_conv_bit_identical(kb_session, kb_spec, case):
    spec = kb_spec
    found = Findings(kb_session, spec)
    for r in kb_session.chosen(spec, "conv2d"):
        if not runner.applicable(case, r):
            continue
        target = kb_session.target(spec)
        inp = inputs.conv_inputs(case, "uniform")
        a = target.run_conv(case, inp, r.name)
        b = target.run_conv(case, inp, r.name)
        if found.ran(r, case, "uniform", a, b):
            found.result(r, case, "uniform", _same(a.outputs, b.outputs),
                         "bit-identical over two calls")
    found.check()


# M = 1 and a convolution of 9 output pixels: one band of rows, so threads split N into
# ranges of whole n_step blocks (a micro-kernel's get_rhs_packed_offset and
# get_dst_offset are then asked for columns past 0; one thread never asks)
THREADS = [GemmCase("threads_gemm", 37, 45, 70, clamp=True, bias=True, ldc_pad=1),
           GemmCase("threads_native", 37, 45, 70, b_form="native", bias=True),
           GemmCase("threads_gemv", 1, 261, 70, clamp=True, bias=True)]
THREADS_CONV = [ConvCase("threads_conv", 3, 9, 9, 8, 20, 3, 3, pad=(1, 1, 1, 1)),
                ConvCase("threads_conv_wide", 1, 5, 5, 8, 80, 3, 3)]


def _threaded(found, r, case, run):
    """Runs `run(threads)` at 1 and 3 threads; None when a call failed (noted)
    or the realization does not take threads (it reports 1 thread whatever
    is asked)."""
    one, three = run(1), run(3)
    if not found.ran(r, case, "uniform", one, three) or three.ran.threads == 1:
        return None
    assert three.ran.name == r.name and three.ran.threads == 3
    return one, three


@pytest.mark.parametrize("case", THREADS, ids=lambda c: c.name)
def test_threads_change_no_bit_gemm(kb_session, kb_spec, case):
    """Every realization that takes threads (ours, and plugins that declare
    themselves thread safe) gives the same bits on 3 threads as on 1."""
    spec = kb_spec
    target = kb_session.target(spec)
    found = Findings(kb_session, spec)
    for r in kb_session.chosen(spec, "gemm"):
        if r.peer or not runner.applicable(case, r):
            continue
        inp = inputs.gemm_inputs(case, "uniform")
        pair = _threaded(found, r, case, lambda t, r=r, target=target, inp=inp: target.run_gemm(
            case, inp, r.name, Selector(threads=t)))
        if pair is not None:
            found.result(r, case, "uniform", _same(pair[0].outputs, pair[1].outputs),
                         "the bits of 1 thread on 3 threads")
    found.check()


@pytest.mark.parametrize("case", THREADS_CONV, ids=lambda c: c.name)
def test_threads_change_no_bit_conv(kb_session, kb_spec, case):
    spec = kb_spec
    target = kb_session.target(spec)
    found = Findings(kb_session, spec)
    for r in kb_session.chosen(spec, "conv2d"):
        if r.peer or not runner.applicable(case, r):
            continue
        inp = inputs.conv_inputs(case, "uniform")
        pair = _threaded(found, r, case, lambda t, r=r, target=target, inp=inp: target.run_conv(
            case, inp, r.name, Selector(threads=t)))
        if pair is not None:
            found.result(r, case, "uniform", _same(pair[0].outputs, pair[1].outputs),
                         "the bits of 1 thread on 3 threads")
    found.check()


def blocked_case(r) -> GemmCase:
    """A shape for a blocked realization: K spans three K blocks (the last one
    short), M five output-row blocks (five blocks of work for four threads),
    N one 16-column tile and a tail."""
    return GemmCase(f"det_threads_{r.name}", 4 * r.block_m + 5, 23, 2 * r.block_k + 3,
                    bias=True, clamp=True, lda_pad=1)


MAX_BLOCK_K = 256


def is_blocked(r) -> bool:
    """The cache-blocked variants (block sizes in their names), not loops that
    only report the blocks their scratch budget gives."""
    return bool(r.block_m and r.block_n and r.block_k) and r.block_k <= MAX_BLOCK_K


def test_blocked_threads_bit_identical(kb_session, kb_spec):
    spec = kb_spec  # one target per test, so that targets can run in parallel
    ran = 0
    target = kb_session.target(spec)
    found = Findings(kb_session, spec)
    for r in kb_session.chosen(spec, "gemm"):
        if not is_blocked(r):
            continue
        case = blocked_case(r)
        inp = inputs.gemm_inputs(case, "normal")
        one = target.run_gemm(case, inp, r.name, Selector(threads=1))
        four = target.run_gemm(case, inp, r.name, Selector(threads=4))
        ran += 1
        if not found.ran(r, case, "normal", one, four):
            continue
        assert four.ran is not None and four.ran.threads == 4, (spec, r.name)
        found.result(r, case, "normal", _same(one.outputs, four.outputs),
                     "the bits of threads = 1 with threads = 4")
    if not ran:
        pytest.skip(f"no cache-blocked realization on {spec}")
    found.check()


def test_scratch_memory(kb_session, kb_spec):
    """Every realization (ours and plugins) on a target whose worker counts
    heap blocks: three identical calls, no growth in what it holds after
    each, and no more than its cap (a plugin's declared scratch_cap, ours
    KB_SCRATCH_RETAIN_CAP); a realization with a cap also on a GEMM whose B
    is larger than the cap. A verdict per realization and case; a
    realization whose heap this target does not count gets a skip verdict
    saying so."""
    spec = kb_spec
    target = kb_session.target(spec)
    chosen = [r for op in ("gemm", "conv2d") for r in kb_session.chosen(spec, op)]
    if not any(scratch.measures(target, r.name) for r in chosen):
        pytest.skip(f"{spec} counts no heap blocks (only a worker interposes the allocator)")
    problems = []
    for r in chosen:
        for v in scratch.check_realization(target, spec, r):
            kb_session.record(v)
            if v.status in FAILING:
                problems.append(f"{spec} {r.name} {v.case}: {v.message}")
    assert not problems, "\n".join(problems)
