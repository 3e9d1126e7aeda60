"""Randomized buffer placement (kbench.harness.placement): every timed round
of `kbench ab` copies its operands to a new random place, so a layout that
one process happened to give a case's buffers cannot bias a side for the
whole case. Checked: values and views survive the move, offsets stay within
the alignment rules and vary between rounds, and a kernel run on placed
buffers — in process and through a worker — computes what it computes on
the originals."""

from __future__ import annotations

import random

import numpy as np
import pytest

from kbench.harness import perf
from kbench.harness.placement import ALIGN, SPAN, Placement
from kbench.harness.runner import Job
from kbench.native import api
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets import crossbuild
from kbench.targets.spec import parse_target


def _addr(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def test_a_placed_array_has_the_same_values_shape_and_strides_in_a_new_buffer() -> None:
    pl = Placement(random.Random(1))
    root = np.arange(6 * 10, dtype=np.float16).reshape(6, 10)
    view = root[1:5, 2:9]  # strided: rows of 10, 7 used
    pl.new_round()
    moved = pl.place(view)
    assert moved is not None
    assert moved.shape == view.shape and moved.strides == view.strides
    assert moved.dtype == view.dtype
    np.testing.assert_array_equal(moved, view)
    assert not np.shares_memory(moved, root)
    moved[0, 0] = 99  # the original is untouched by writes to the placed copy
    assert root[1, 2] == 12


def test_offsets_are_multiples_of_the_line_below_the_span_and_vary() -> None:
    pl = Placement(random.Random(7))
    a = np.ones((8, 8), np.float16)
    seen = set()
    for _ in range(40):
        pl.new_round()
        moved = pl.place(a)
        assert moved is not None
        (pad,) = pl.offsets
        assert pad % ALIGN == 0 and 0 <= pad < SPAN
        # the offset inside the new allocation is the pad: a worker's copy (64-byte
        # aligned) keeps the alignment the original had inside its own buffer
        fresh = moved.base
        assert isinstance(fresh, np.ndarray)
        assert _addr(moved) - _addr(fresh) == pad
        seen.add(pad)
    assert len(seen) > 10  # rounds draw different placements


def test_views_of_one_buffer_move_together_within_a_round() -> None:
    pl = Placement(random.Random(3))
    root = np.arange(3 * 16, dtype=np.float16).reshape(3, 16)
    pl.new_round()
    parts = [pl.place(root[i]) for i in range(3)]
    assert len(pl.offsets) == 1  # one buffer, one offset
    assert all(p is not None and p.base is parts[0].base for p in parts)  # type: ignore[union-attr]
    for i, p in enumerate(parts):
        np.testing.assert_array_equal(p, root[i])
    pl.new_round()
    other = pl.place(root[0])
    assert other is not None and other.base is not parts[0].base  # a new round: a new buffer


def test_none_and_non_contiguous_buffers_are_left_alone() -> None:
    pl = Placement(random.Random(0))
    assert pl.place(None) is None
    fortran = np.asfortranarray(np.ones((4, 5), np.float16))
    assert pl.place(fortran) is fortran
    with pytest.raises(ValueError, match="multiple of 64"):
        Placement(random.Random(0), span=100)


def test_placed_problems_keep_strides_and_flags() -> None:
    a = np.ones((4, 6), np.float16)
    b = np.ones((6, 8), np.float16)
    c = np.zeros((4, 8), np.float16)
    p = api.RawProblem(a=a, lda=6, b=b, ldb=8, c=c, ldc=8, clamp_min=-1.0, clamp_max=2.0)
    pl = Placement(random.Random(5))
    (q,) = pl.problems([p])
    assert len(pl.offsets) == 3  # a, b, c (no bias)
    assert q.bias is None and (q.lda, q.ldb, q.ldc) == (6, 8, 8)
    assert (q.clamp_min, q.clamp_max) == (-1.0, 2.0)
    assert not np.shares_memory(q.c, c)


@pytest.fixture(scope="module", params=["host", "worker"])
def target(request):
    if request.param == "worker":
        crossbuild.build("host")
        t = parse_target("worker:host")
    else:
        t = parse_target("host")
    t.info()
    yield t
    t.close()


@pytest.mark.parametrize("case", [
    GemmCase(name="m9_n17_k33_packed", m=9, n=17, k=33, b_form="packed", batch=2),
    GemmCase(name="m5_n8_k16_ldc", m=5, n=8, k=16, ldc_pad=4, clamp=True),
    ConvCase(name="k3x3_p1", n=1, h=7, w=9, c_in=5, c_out=6, kh=3, kw=3, pad=(1, 1, 1, 1)),
], ids=lambda c: c.name)
def test_a_kernel_on_placed_buffers_computes_what_it_does_in_place(target, case) -> None:
    """A scalar realization taking the case, run on buffers placed with
    offset 0 and on buffers at random offsets: every operand and output is
    equal bit for bit (through a worker, the offsets travel with the buffers)."""
    from kbench.harness.runner import InputCache, applicable
    real = next(r for r in target.info().realizations
                if applicable(case, r) and r.backend == "scalar")
    job = Job(case, perf.PERF_KIND, real, target.name)
    cache = InputCache()
    settings = perf.PerfSettings(warmup=0, rounds=1, min_round_ns=0)
    timing = settings.timing(rounds=1)
    captured: list[np.ndarray] = []

    class Recording(Placement):
        def place(self, a):  # type: ignore[override]
            moved = super().place(a)
            if moved is not None:
                captured.append(moved)
            return moved

    def run(placement: Placement) -> list[np.ndarray]:
        captured.clear()
        res = perf.prepare(target, job, settings, cache, placement).run(timing)
        assert res.times_ns and res.times_ns[0] > 0
        return [np.array(x) for x in captured]

    in_place = run(Recording(random.Random(0), span=ALIGN))  # every offset 0
    for seed in (21, 22):
        placed = run(Recording(random.Random(seed)))
        assert len(placed) == len(in_place)
        for x, y in zip(in_place, placed, strict=True):
            np.testing.assert_array_equal(x, y)


def test_kbench_runs_timed_calls_draw_a_layout_per_call_except_on_emulated_targets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """perf.time_native (each case of each pass of `kbench run --suite perf`)
    times the kernel on operands copied to a random place, drawn afresh per
    call, keeping each buffer's address modulo ALIGN; on an emulated target
    the buffers stay where they are (instruction counts must not depend on
    the allocator)."""
    from kbench.harness.runner import InputCache, applicable
    t = parse_target("host")
    case = GemmCase(name="m5_n8_k16", m=5, n=8, k=16)
    real = next(r for r in t.info().realizations
                if applicable(case, r) and r.backend == "scalar")
    job = Job(case, perf.PERF_KIND, real, t.name)
    settings = perf.PerfSettings(warmup=0, rounds=1, min_round_ns=0)
    cache = InputCache()
    seen: list[tuple[int, int, int]] = []
    gemm_raw = t.engine.gemm_raw

    def recording(m, n, k, problems, sel, timing):  # type: ignore[no-untyped-def]
        p = problems[0]
        seen.append((_addr(p.a), _addr(p.b), _addr(p.c)))
        return gemm_raw(m, n, k, problems, sel, timing)

    monkeypatch.setattr(t.engine, "gemm_raw", recording)
    monkeypatch.setattr(t.engine, "emulated", True, raising=False)
    assert t.emulated
    for _ in range(3):
        res, _packing = perf.time_native(t, job, settings, cache)
        assert res.times_ns
    in_place = seen[:]
    assert in_place[0][:2] == in_place[1][:2] == in_place[2][:2]  # a and b: the cached inputs
    monkeypatch.setattr(t.engine, "emulated", False)
    seen.clear()
    for _ in range(12):
        perf.time_native(t, job, settings, cache)
    assert len(seen) == 12
    for addrs in seen:
        # a and b keep their alignment: numpy allocates at 16 bytes, offsets are
        # multiples of ALIGN (c is a fresh guarded buffer per call anyway)
        assert all(x % 16 == y % 16 for x, y in zip(addrs[:2], in_place[0][:2], strict=True))
        assert addrs[0] != in_place[0][0] and addrs[1] != in_place[0][1]  # copies
    assert len({a % SPAN for a, _b, _c in seen}) > 1  # drawn per call (64 offsets each)
    assert len({b % SPAN for _a, b, _c in seen}) > 1
