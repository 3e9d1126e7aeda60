"""Guard values around every input, and non-finite values in convolution inputs.

A kernel or packer that reads past one of its inputs must meet a NaN on
every target and every run, not whatever happens to lie in memory there
(the worker receives each input's whole buffer, guards included). A call
that writes into an input is caught in process. Convolution `specials`
put +inf and NaN into input pixels where c_in is odd and groups = 1, so a
packer that reads one channel too far, meaning to pad it with zero, turns
0 * inf into NaN."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.harness import runner
from kbench.judge.verdict import FAIL, PASS
from kbench.native.calls import CallResult
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets import worker
from kbench.targets.inprocess import InProcessEngine
from kbench.targets.spec import GUARD, INPUT_SENTINEL, GuardedInputs, Target


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _offset(a: np.ndarray) -> int:
    """Element offset of a's first element in its root buffer."""
    root = _root(a)
    return (a.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // 2


@pytest.mark.parametrize("shape, ld", [((5, 7), 7), ((5, 7), 10), ((9,), 0), ((2, 3, 4, 5), 0)])
def test_a_guarded_copy_keeps_values_and_strides_with_nan_around(shape, ld) -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=shape).astype(np.float16)
    if ld:
        buf = np.full((shape[0], ld), 9.0, np.float16)
        buf[:, :shape[1]] = values
        values = buf[:, :shape[1]]
    g = GuardedInputs()
    copy = g.copy("A", values)
    assert copy is not None and copy.shape == values.shape and copy.strides == values.strides
    assert np.array_equal(copy.view(np.uint16), values.view(np.uint16))
    raw = _root(copy).view(np.uint16)
    start = _offset(copy)
    assert start == GUARD and (raw[:GUARD] == INPUT_SENTINEL).all()
    span = (shape[0] - 1) * (ld or 0) + shape[1] if ld else values.size
    assert (raw[GUARD + span:] == INPUT_SENTINEL).all() and raw.size - GUARD - span >= GUARD
    assert np.isnan(raw[GUARD + span:].view(np.float16)).all()  # reading past gives NaN
    if ld and ld > shape[1]:  # row padding between rows is the sentinel too
        body = raw[GUARD:GUARD + shape[0] * ld].reshape(shape[0], ld)
        assert (body[:, shape[1]:] == INPUT_SENTINEL).all()
    assert g.damage() == ""
    copy[(0,) * copy.ndim] += 1
    assert "input A" in g.damage()
    assert g.copy("none", None) is None


class _OverreadEngine(InProcessEngine):
    """A faulty 'kernel': runs the library, then copies the element just past
    the end of A (or of the convolution input) into the first output."""

    def gemm_raw(self, m, n, k, problems, selector=None, timing=None) -> CallResult:
        res = super().gemm_raw(m, n, k, problems, selector, timing)
        p = problems[0]
        a_end = _offset(p.a) + (m - 1) * p.lda + k
        p.c.reshape(-1)[0] = _root(p.a).view(np.float16)[a_end]
        return res

    def conv_raw(self, desc, x, w, bias, out, selector=None, timing=None) -> CallResult:
        res = super().conv_raw(desc, x, w, bias, out, selector, timing)
        out.reshape(-1)[0] = _root(x).view(np.float16)[_offset(x) + x.size]
        return res


class _WritingEngine(InProcessEngine):
    """A faulty 'kernel' that writes into its B operand."""

    def gemm_raw(self, m, n, k, problems, selector=None, timing=None) -> CallResult:
        res = super().gemm_raw(m, n, k, problems, selector, timing)
        problems[0].b.view(np.uint16)[0, 0] ^= 1
        return res


def _job(target: Target, case, name: str) -> runner.Job:
    r = next(x for x in target.info().realizations if x.name == name)
    return runner.Job(case, "exact", r, "host")


def test_a_read_past_an_input_meets_nan_and_fails_the_verdict() -> None:
    case = GemmCase("overread", 4, 8, 9)  # lda = K: nothing but the guard follows A
    good, bad = Target("host", InProcessEngine()), Target("host", _OverreadEngine())
    job = _job(good, case, "gemm_scalar_f32acc")
    assert runner.run_job(good, job).status == PASS
    v = runner.run_job(bad, job)
    assert v.status == FAIL, v.line()
    conv = ConvCase("overread_conv", 1, 5, 5, 3, 4, 3, 3, pad=(1, 1, 1, 1))
    cjob = _job(good, conv, "conv2d_direct_scalar_f32acc")
    assert runner.run_job(good, cjob).status == PASS
    assert runner.run_job(Target("host", _OverreadEngine()), cjob).status == FAIL


def test_a_write_into_an_input_fails_the_verdict() -> None:
    case = GemmCase("writes_b", 4, 8, 9)
    bad = Target("host", _WritingEngine())
    v = runner.run_job(bad, _job(bad, case, "gemm_scalar_f32acc"))
    assert v.status == FAIL and "input B[0]" in v.message


def test_the_worker_receives_each_input_with_its_guards() -> None:
    """The worker protocol sends a view's whole root buffer and an offset:
    for a guarded input, the guards travel and the pointer skips them."""
    g = GuardedInputs()
    a = g.copy("A", np.ones((3, 4), np.float16))
    assert a is not None
    bufs, w = worker.Buffers(), worker.Writer()
    bufs.ptr(w, a)
    (sent, _), = bufs.items
    assert sent.nbytes == (2 * GUARD + 12) * 2
    index, offset = np.frombuffer(w.bytes(), dtype=np.dtype([("i", "<i4"), ("o", "<u8")]))[0]
    assert index == 0 and offset == GUARD * 2


def test_conv_specials_put_inf_and_nan_into_odd_channel_inputs() -> None:
    odd = ConvCase("odd_specials", 1, 6, 6, 3, 8, 3, 3, pad=(1, 1, 1, 1))
    x = inputs.conv_inputs(odd, "specials").x.reshape(-1, 3)
    assert np.isposinf(x[1:, 0]).sum() == 1 and np.isnan(x[1:, 0]).sum() == 1
    assert np.isfinite(x[0]).all() and np.isfinite(x[:, 1:]).all()
    for case in (ConvCase("even_specials", 1, 6, 6, 4, 8, 3, 3),
                 ConvCase("grouped_specials", 1, 6, 6, 3, 6, 3, 3, groups=3)):
        assert np.isfinite(inputs.conv_inputs(case, "specials").x).all()
