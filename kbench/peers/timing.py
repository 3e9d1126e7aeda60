"""The native timer's protocol in Python, for peers that time their own calls."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from kbench.errors import InvalidArgument

if TYPE_CHECKING:
    from kbench.native.calls import Timing

FLUSH_BYTES = 32 << 20  # as the native timer: written once before every cold round
MAX_REPS = 1_000_000  # calls per round when Timing.max_reps is 0


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
