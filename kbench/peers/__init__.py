"""Peer backends: other libraries' FP16 GEMM and convolution, run in this
process beside ours for comparison.

A peer computes the same operators from the same inputs, is judged by the
same float64 oracle and error model, and is timed with the same warm-up,
calibration and round structure as the native timer. It is never one of
our backends: its realizations carry `peer=True`, `TargetInfo.backends`
leaves them out (so the packed-B contract suite never sees them), and they
take plain B only. The in-process engine routes a call to a peer when the
selector forces one of the peer's realizations.

Peers time with Python's `time.perf_counter_ns` around the library's own
call, so their times include that library's call overhead (and a Python
loop iteration per call, tens of nanoseconds); the native timer has no
such overhead. Work done to adapt kbench's operands to the peer (copying a
strided A into a dense array, NHWC <-> NCHW transposes, writing the result
into the caller's strided C) happens outside the timed region.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..errors import InvalidArgument

if TYPE_CHECKING:
    from ..api import RawProblem, Realization, Selector
    from ..engine import CallResult, ConvDesc, Timing

FLUSH_BYTES = 32 << 20  # as the native timer: written once before every cold round
MAX_REPS = 1_000_000  # calls per round when Timing.max_reps is 0


class Peer(Protocol):
    """What the in-process engine needs from a peer backend."""

    def available(self) -> bool: ...

    def unavailable_reason(self) -> str: ...

    def realizations(self) -> list[Realization]: ...

    def gemm(self, m: int, n: int, k: int, problems: list[RawProblem],
             selector: Selector | None = None, timing: Timing | None = None) -> CallResult: ...

    def conv(self, desc: ConvDesc, x: np.ndarray | None, w: np.ndarray | None,
             bias: np.ndarray | None, out: np.ndarray | None,
             selector: Selector | None = None, timing: Timing | None = None) -> CallResult: ...


def default_peers() -> list[Peer]:
    """The peers this installation can run (onnxruntime when the `ort` extra is in)."""
    from .ort import OrtPeer

    found: list[Peer] = []
    for peer in (OrtPeer(),):
        if peer.available():
            found.append(peer)
    return found


def time_calls(call: Callable[[], object], timing: Timing) -> tuple[list[float], int]:
    """The native timer's protocol in Python: one validating call, `warmup`
    calls, calls per round calibrated to `min_round_ns` (or fixed at
    `max_reps` when no minimum is set), then `rounds` rounds. Returns the
    time per call of each round (ns) and the calls per round. `cold`
    rewrites a 32 MiB buffer before every round and makes one call per round."""
    if timing.rounds < 1:
        raise InvalidArgument("timing.rounds: must be positive", "timing.rounds")
    call()
    for _ in range(timing.warmup):
        call()
    reps = timing.max_reps if (not timing.min_round_ns and timing.max_reps) else 1
    flush: np.ndarray | None = None
    if timing.cold:
        flush = np.zeros(FLUSH_BYTES, dtype=np.uint8)
        reps = 1
    elif timing.min_round_ns:
        t0 = time.perf_counter_ns()
        call()
        one = time.perf_counter_ns() - t0
        cap = timing.max_reps or MAX_REPS
        want = -(-timing.min_round_ns // one) if one else cap
        reps = max(1, min(int(want), cap))
    times: list[float] = []
    for _ in range(timing.rounds):
        if flush is not None:
            flush += 1
        t0 = time.perf_counter_ns()
        for _ in range(reps):
            call()
        times.append((time.perf_counter_ns() - t0) / reps)
    return times, reps


__all__ = ["Peer", "default_peers", "time_calls"]
