"""The Python API refuses a call over its work or memory cap before it
allocates or computes anything (kbench.native.limits), and runs a long call
in slices (kbench.native.slices) so that Ctrl-C stops it within a second,
with the bits and the realization of one call.

Before: kbench.gemm on 100,000 x 5,000 and 5,000 x 100,000 arrays started
1e14 flops on the scalar backend and ignored SIGINT; kbench.conv2d on a
zero-stride 64 x 1024 x 1024 x 512 view raised numpy's MemoryError."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import kbench
from kbench.native import api, slices


def _wide(rows: int, cols: int) -> np.ndarray:
    """A rows x cols FP16 view of a small buffer (overlapping rows): an operand
    of that shape without the memory."""
    return as_strided(np.zeros(rows + cols, np.float16), (rows, cols), (2, 2))


def test_the_issues_gemm_is_refused_before_anything_runs() -> None:
    with pytest.raises(kbench.WorkLimit) as exc:
        kbench.gemm(_wide(100_000, 5_000), _wide(5_000, 100_000))
    assert exc.value.field == "limits.max_flops"
    assert str(exc.value) == (
        "limits.max_flops: the call is 1e+14 flops, over the work cap of 1e+13 (kbench.Limits("
        "max_flops=...) or KBENCH_MAX_CALL_FLOPS); refused before computing")


def test_a_zero_stride_convolution_is_refused_not_a_memory_error() -> None:
    x = as_strided(np.zeros(1, np.float16), (64, 1024, 1024, 512), (0, 0, 0, 0))
    w = np.ones((3, 3, 512, 512), np.float16)
    with pytest.raises(kbench.WorkLimit):  # 3e14 flops: the work cap first
        kbench.conv2d(x, w)
    with pytest.raises(kbench.OutOfMemory) as exc:  # no work cap: the memory cap
        kbench.conv2d(x, w, limits=kbench.Limits(max_flops=1e30))
    assert exc.value.field == "limits.max_bytes"
    need = x.size * 2 + 64 * 1022 * 1022 * 512 * 2  # the contiguous input copy, the output
    assert str(exc.value).startswith(
        f"limits.max_bytes: the call would allocate 127.8 GiB ({need:,} bytes: its output and "
        "contiguous copies of strided inputs), over the memory cap of ")


def test_limits_per_call() -> None:
    a, b = np.ones((8, 16), np.float16), np.ones((16, 4), np.float16)
    assert kbench.gemm(a, b, limits=kbench.Limits(max_flops=1024)).c[0][0, 0] == 16
    with pytest.raises(kbench.WorkLimit, match="1.02e\\+03 flops, over the work cap of 1e\\+03"):
        kbench.gemm(a, b, limits=kbench.Limits(max_flops=1000))
    with pytest.raises(kbench.OutOfMemory, match="would allocate 64.0 MiB .*its outputs.*, over "
                                                 "the memory cap of 1.0 MiB"):
        kbench.gemm(_wide(4096, 8), _wide(8, 8192), limits=kbench.Limits(max_bytes=2**20))
    out = np.empty((4096, 8192), np.float16)  # given: nothing allocated, within the cap
    with pytest.raises(kbench.InvalidArgument, match="lda"):  # refused by the library only
        kbench.gemm(_wide(4096, 8), _wide(8, 8192), out=out,
                    limits=kbench.Limits(max_bytes=2**20))


def test_the_caps_come_from_the_environment() -> None:
    code = textwrap.dedent("""
        import numpy as np, kbench
        try:
            kbench.gemm(np.ones((8, 16), np.float16), np.ones((16, 4), np.float16))
        except kbench.WorkLimit as e:
            print(e)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "KBENCH_MAX_CALL_FLOPS": "1000"})
    assert out.stdout.strip() == (
        "limits.max_flops: the call is 1.02e+03 flops, over the work cap of 1e+03 (kbench."
        "Limits(max_flops=...) or KBENCH_MAX_CALL_FLOPS); refused before computing"), out.stderr


@pytest.fixture
def small_slices(monkeypatch):
    """Slices of a few thousand flops, so that small calls run in many."""
    monkeypatch.setattr(slices, "FIRST_FLOPS", 1 << 12)


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint16)


@pytest.mark.parametrize("form", ["plain", "packed", "native", "gemv"])
def test_a_sliced_gemm_gives_the_bits_and_realization_of_one_call(form, monkeypatch) -> None:
    rng = np.random.default_rng(3)
    m = 1 if form == "gemv" else 77
    a = rng.standard_normal((m, 150)).astype(np.float16)
    b = rng.standard_normal((150, 90)).astype(np.float16)
    bias = rng.standard_normal(90).astype(np.float16)
    bb = {"plain": b, "gemv": b, "packed": kbench.pack_b(b),
          "native": kbench.pack_b(b, backend="scalar", bias=bias)}[form]
    bias_arg = None if form == "native" else bias
    whole = kbench.gemm_batch([kbench.GemmOperands(a, bb, None, bias_arg, (-2.0, 2.0)),
                               kbench.GemmOperands(a[::-1].copy(), bb, None, bias_arg)])
    calls = []
    real = api.sliced.gemm

    def counting(*args, **kwargs):
        calls.append(args[2:5])
        return real(*args, **kwargs)
    monkeypatch.setattr(api.sliced, "gemm", counting)
    monkeypatch.setattr(slices, "FIRST_FLOPS", 1 << 12)
    parts = kbench.gemm_batch([kbench.GemmOperands(a, bb, None, bias_arg, (-2.0, 2.0)),
                               kbench.GemmOperands(a[::-1].copy(), bb, None, bias_arg)])
    assert calls == [(m, 90, 150)]  # it did run in slices
    assert parts.realization == whole.realization
    for x, y in zip(whole.c, parts.c, strict=True):
        assert np.array_equal(_bits(x), _bits(y))


@pytest.mark.parametrize("name, stride", [("conv2d_direct_scalar_f32acc", (2, 1)),
                                          ("conv2d_im2col_gemm_scalar_f32acc", (1, 2)),
                                          ("conv2d_winograd_f2x2_3x3_scalar_f32acc", (1, 1))])
@pytest.mark.parametrize("pad", [(1, 1, 1, 1), (0, 2, 1, 0), (2, 2, 0, 0), (5, 0, 0, 0)])
def test_a_sliced_convolution_gives_the_bits_of_one_call(name, stride, pad,
                                                         monkeypatch) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 23, 19, 8)).astype(np.float16)
    w = rng.standard_normal((3, 3, 8, 12)).astype(np.float16)
    bias = rng.standard_normal(12).astype(np.float16)
    p = kbench.ConvParams(stride=stride, pad=pad)
    sel = kbench.Selector(force=name)
    whole = kbench.conv2d(x, w, bias, p, selector=sel)
    monkeypatch.setattr(slices, "FIRST_FLOPS", 1 << 10)
    parts = kbench.conv2d(x, w, bias, p, selector=sel)
    assert parts.realization == whole.realization
    assert np.array_equal(_bits(whole.output), _bits(parts.output))
    unforced = kbench.conv2d(x, w, bias, p)  # the default order, slice by slice
    monkeypatch.setattr(slices, "FIRST_FLOPS", 1 << 40)
    assert unforced.realization == kbench.conv2d(x, w, bias, p).realization


def test_in_process_raw_calls_are_sliced_too(small_slices) -> None:
    """The CLI's in-process target calls the library through gemm_raw and
    conv_raw: a long one runs in slices there as well, with the same bits."""
    from kbench.targets.inprocess import InProcessEngine
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 64)).astype(np.float16)
    b = rng.standard_normal((64, 48)).astype(np.float16)
    eng = InProcessEngine()
    outs = []
    for first in (1 << 40, 1 << 12):
        slices.FIRST_FLOPS = first
        c = np.zeros((40, 48), np.float16)
        res = eng.gemm_raw(40, 48, 64, [api.RawProblem(a=a, lda=64, b=b, ldb=48, c=c, ldc=48)])
        outs.append((res.realization, _bits(c).copy()))
    assert outs[0][0] == outs[1][0] and np.array_equal(outs[0][1], outs[1][1])
    # a raw call whose buffers do not hold the whole call is one call: the library refuses it
    with pytest.raises(kbench.InvalidArgument):
        eng.gemm_raw(40, 48, 64, [api.RawProblem(a=a, lda=64, b=b, ldb=47, c=c, ldc=48)])


def test_the_first_slice_is_dispatched_as_the_whole_call() -> None:
    reals = [api.Realization("gemv", "scalar", "k", "gemm", "scalar", "fp32", 1, ("plain",), 0,
                             1, max_m=1),
             api.Realization("small", "scalar", "k", "gemm", "scalar", "fp32", 1, ("plain",), 0,
                             1, max_m=8),
             api.Realization("any", "scalar", "k", "gemm", "scalar", "fp32", 1, ("plain",), 0, 1)]
    assert slices.gemm_rows_floor(reals, 100) == 9  # a slice of 8 rows could pick "small"
    assert slices.gemm_rows_floor(reals, 5) == 2 and slices.gemm_rows_floor(reals, 1) == 1
    table = api.DispatchTable('{"kbench_dispatch_table": 1, "rules": ['
                              '{"op": "gemm", "class": {"m_max": 1}, "realization": "gemv"},'
                              '{"op": "gemm", "class": {"m_min": 64}, "realization": "big"}]}')
    sel = api.Selector(table=table)
    assert slices.table_choice(sel, 100, 8, 8) == "big"  # the whole call's rule
    assert slices.table_choice(sel, 1, 8, 8) == "gemv"
    assert slices.table_choice(sel, 10, 8, 8) is None
    assert slices.table_choice(replace(sel, force="any"), 100, 8, 8) is None
    seen = []

    def run(r0, r1, c0, c1, s):
        seen.append((r0, r1, s.force, s.table is None))
        if s.force == "big":
            raise kbench.Unsupported("realization 'big' cannot", "selector.force")
        return reals[2]
    got = slices.gemm(100, 8, 8, 1, sel, lambda: reals, run, True)
    assert got is reals[2]
    # the table's choice for the whole call is tried first; it cannot take the call, so the
    # default order decides (no table), as the library does; the rest is forced to it
    assert seen[0] == (0, 100, "big", True) and seen[1] == (0, 100, None, True)


INTERRUPTED = textwrap.dedent("""
    import sys, time, numpy as np
    from kbench.native import api
    m = 4000  # 1.3e11 flops: minutes on the scalar backend, under the 1e13 cap
    a, b = np.ones((m, m), np.float16), np.ones((m, m), np.float16)
    try:
        if sys.argv[1] == "api":
            print("calling", flush=True)
            api.gemm(a, b)
        else:  # the in-process target of `kbench run`
            from kbench.targets.inprocess import InProcessEngine
            eng, c = InProcessEngine(), np.zeros((m, m), np.float16)
            p = api.RawProblem(a=a, lda=m, b=b, ldb=m, c=c, ldc=m)
            print("calling", flush=True)
            eng.gemm_raw(m, m, m, [p], api.Selector(force="gemm_scalar_f32acc"))
        print("returned", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


@pytest.mark.parametrize("how", ["api", "raw"])
def test_ctrl_c_stops_a_long_call_within_a_second(how: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED, how], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "calling"
    time.sleep(1.5)  # inside the call (its first slices)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert out.strip() == "interrupted", err
    # a slice lasts about SLICE_SECONDS; the whole call takes minutes here, so a call that
    # did not stop at the next slice would take far longer than this
    assert took < 10, took
