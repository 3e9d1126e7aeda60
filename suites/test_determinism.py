"""Determinism: the same inputs twice give bit-identical outputs, for every
realization of every chosen target; and every cache-blocked realization gives
the same bits with threads = 4 as with threads = 1, on shapes spanning several
K blocks and enough output blocks for four threads to run at once (a thread
that shares another's partial-sum scratch changes bits there)."""

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
def test_gemm_bit_identical(kb_session, case):
    for spec in kb_session.target_specs:
        target = kb_session.target(spec)
        for r in kb_session.chosen(spec, "gemm"):
            if not runner.applicable(case, r):
                continue
            inp = inputs.gemm_inputs(case, "normal")
            first = target.run_gemm(case, inp, r.name)
            second = target.run_gemm(case, inp, r.name)
            assert first.error is None and second.error is None
            for x, y in zip(_bits(first.outputs), _bits(second.outputs), strict=True):
                assert np.array_equal(x, y), f"{spec} {r.name}: outputs differ between runs"


@pytest.mark.parametrize("case", CONV, ids=lambda c: c.name)
def test_conv_bit_identical(kb_session, case):
    for spec in kb_session.target_specs:
        target = kb_session.target(spec)
        for r in kb_session.chosen(spec, "conv2d"):
            if not runner.applicable(case, r):
                continue
            inp = inputs.conv_inputs(case, "uniform")
            a = target.run_conv(case, inp, r.name)
            b = target.run_conv(case, inp, r.name)
            assert a.error is None and b.error is None
            assert np.array_equal(_bits(a.outputs)[0], _bits(b.outputs)[0]), r.name


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


def test_blocked_threads_bit_identical(kb_session):
    ran, differ = 0, []
    for spec in kb_session.target_specs:
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
        pytest.skip(f"no cache-blocked realization on {', '.join(kb_session.target_specs)}")
    assert not differ, "threads = 4 differs from threads = 1: " + ", ".join(differ)
