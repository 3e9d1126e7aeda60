"""Determinism: the same inputs twice give bit-identical outputs, and 3
threads give the bits of 1 thread, for every realization of every chosen
target (plugins included; threads only where a realization takes them);
and every cache-blocked realization gives the same bits with threads = 4 as
with threads = 1, on shapes spanning several K blocks and enough output
blocks for four threads to run at once (a thread that shares another's
partial-sum scratch changes bits there)."""

import numpy as np
import pytest

from kbench.harness import runner
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


@pytest.mark.parametrize("case", GEMM, ids=lambda c: c.name)
def test_gemm_bit_identical(kb_session, kb_spec, case):
    spec = kb_spec  # one target per test, so that targets can run in parallel
    for r in kb_session.chosen(spec, "gemm"):
        if not runner.applicable(case, r):
            continue
        target = kb_session.target(spec)
        inp = inputs.gemm_inputs(case, "normal")
        first = target.run_gemm(case, inp, r.name)
        second = target.run_gemm(case, inp, r.name)
        assert first.error is None and second.error is None
        for x, y in zip(_bits(first.outputs), _bits(second.outputs), strict=True):
            assert np.array_equal(x, y), f"{spec} {r.name}: outputs differ between runs"


@pytest.mark.parametrize("case", CONV, ids=lambda c: c.name)
def test_conv_bit_identical(kb_session, kb_spec, case):
    spec = kb_spec
    for r in kb_session.chosen(spec, "conv2d"):
        if not runner.applicable(case, r):
            continue
        target = kb_session.target(spec)
        inp = inputs.conv_inputs(case, "uniform")
        a = target.run_conv(case, inp, r.name)
        b = target.run_conv(case, inp, r.name)
        assert a.error is None and b.error is None
        assert np.array_equal(_bits(a.outputs)[0], _bits(b.outputs)[0]), r.name


THREADS = [GemmCase("threads_gemm", 37, 45, 70, clamp=True, bias=True, ldc_pad=1),
           GemmCase("threads_native", 37, 45, 70, b_form="native", bias=True)]
THREADS_CONV = [ConvCase("threads_conv", 3, 9, 9, 8, 20, 3, 3, pad=(1, 1, 1, 1))]


def _threaded(r, run):
    """Runs `run(threads)` at 1 and 3 threads; None when the realization does not
    take threads (it reports 1 thread whatever is asked)."""
    one, three = run(1), run(3)
    assert one.error is None and three.error is None, (one.error, three.error)
    if three.ran.threads == 1:
        return None
    assert three.ran.name == r.name and three.ran.threads == 3
    return one, three


@pytest.mark.parametrize("case", THREADS, ids=lambda c: c.name)
def test_threads_change_no_bit_gemm(kb_session, kb_spec, case):
    """Every realization that takes threads (ours, and plugins that declare
    themselves thread safe) gives the same bits on 3 threads as on 1."""
    spec = kb_spec
    target = kb_session.target(spec)
    for r in kb_session.chosen(spec, "gemm"):
        if r.peer or not runner.applicable(case, r):
            continue
        inp = inputs.gemm_inputs(case, "uniform")
        pair = _threaded(r, lambda t, r=r, target=target, inp=inp: target.run_gemm(
            case, inp, r.name, Selector(threads=t)))
        if pair is None:
            continue
        for x, y in zip(_bits(pair[0].outputs), _bits(pair[1].outputs), strict=True):
            assert np.array_equal(x, y), f"{spec} {r.name}: 3 threads differ from 1"


@pytest.mark.parametrize("case", THREADS_CONV, ids=lambda c: c.name)
def test_threads_change_no_bit_conv(kb_session, kb_spec, case):
    spec = kb_spec
    target = kb_session.target(spec)
    for r in kb_session.chosen(spec, "conv2d"):
        if r.peer or not runner.applicable(case, r):
            continue
        inp = inputs.conv_inputs(case, "uniform")
        pair = _threaded(r, lambda t, r=r, target=target, inp=inp: target.run_conv(
            case, inp, r.name, Selector(threads=t)))
        if pair is None:
            continue
        assert np.array_equal(_bits(pair[0].outputs)[0], _bits(pair[1].outputs)[0]), \
            f"{spec} {r.name}: 3 threads differ from 1"


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
    ran, differ = 0, []
    target = kb_session.target(spec)
    for r in kb_session.chosen(spec, "gemm"):
        if not is_blocked(r):
            continue
        case = blocked_case(r)
        inp = inputs.gemm_inputs(case, "normal")
        one = target.run_gemm(case, inp, r.name, Selector(threads=1))
        four = target.run_gemm(case, inp, r.name, Selector(threads=4))
        for o in (one, four):
            assert o.error is None and not o.guard_detail, (spec, r.name, o.error)
        assert four.ran is not None and four.ran.threads == 4, (spec, r.name)
        if not all(np.array_equal(x, y) for x, y in
                   zip(_bits(one.outputs), _bits(four.outputs), strict=True)):
            differ.append(f"{spec} {r.name}")
        ran += 1
    if not ran:
        pytest.skip(f"no cache-blocked realization on {spec}")
    assert not differ, "threads = 4 differs from threads = 1: " + ", ".join(differ)
