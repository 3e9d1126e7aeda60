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

May import: kbench.errors, kbench.native, kbench.judge, kbench.problems.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from kbench.native.api import RawProblem, Realization, Selector
    from kbench.native.calls import CallResult, ConvDesc, Timing


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
    from kbench.peers.ort import OrtPeer

    found: list[Peer] = []
    for peer in (OrtPeer(),):
        if peer.available():
            found.append(peer)
    return found


__all__ = ["Peer", "default_peers"]
