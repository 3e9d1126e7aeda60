"""Determinism: the same inputs twice give bit-identical outputs, for every
realization of every chosen target."""

import numpy as np
import pytest

from kbench.harness import runner
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
