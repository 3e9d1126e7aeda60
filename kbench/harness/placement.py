"""Randomized buffer placement for timing.

A process keeps the addresses it first gave a case's buffers for every
round: the heap hands the same blocks back, so the low address bits that
decide cache-set and 4 KiB-aliasing conflicts between a kernel's operands
stay fixed for the life of the process. Two processes running the same
build can therefore sit in different conflict states for a whole case — a
bias of 10–15% between sides that no number of interleaved rounds averages
out (Mytkowicz et al., ASPLOS 2009, on layout bias; Stabilizer, Curtsinger
and Berger, ASPLOS 2013, re-randomizes layout for the same reason).

`Placement.place` copies each operand's buffer into a fresh allocation at a
random offset — a multiple of ALIGN bytes below `span` — before a round, so
every round draws its own placement and a layout effect becomes round-to-round
variance, shared by both sides, that the paired statistics see. The offsets
keep every alignment the kernels rely on (FP16 elements: 2 bytes; a packed
buffer's header: 8 bytes): a buffer keeps its offset from the start of its
allocation modulo ALIGN; in process the new allocation is numpy's (16-byte
aligned, as the original's), so the address modulo 16 is what it was.
Views into one buffer (a batch's problems) stay views into one new buffer.
A buffer that is not contiguous is left where it is.

Worker targets send a buffer with its leading offset (the pointer is an
offset into it), so the offset reaches the worker's own copy too."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

import numpy as np

from kbench.native import api

ALIGN = 64  # bytes: a cache line; offsets are multiples of it
SPAN = 4096  # bytes: offsets range over one page (every cache set and aliasing distance)


def _root(a: np.ndarray) -> np.ndarray:
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base


def _addr(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


@dataclass
class Placement:
    """Draws a placement per round from its own random stream."""

    rng: random.Random
    span: int = SPAN
    _moved: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    offsets: list[int] = field(default_factory=list, repr=False)  # the last round's, in bytes

    def __post_init__(self) -> None:
        if self.span < ALIGN or self.span % ALIGN:
            raise ValueError(f"span: {self.span} is not a positive multiple of {ALIGN}")

    def new_round(self) -> None:
        """Forgets the last round's buffers: the next place() draws afresh."""
        self._moved.clear()
        self.offsets = []

    def place(self, a: np.ndarray | None) -> np.ndarray | None:
        """The array `a` at this round's place for its buffer (the same new
        buffer for every view of one buffer within a round)."""
        if a is None:
            return None
        root = _root(a)
        if not root.flags.c_contiguous:
            return a
        key = id(root)
        if key not in self._moved:
            pad = ALIGN * self.rng.randrange(self.span // ALIGN)
            fresh = np.empty(pad + root.nbytes, np.uint8)
            fresh[pad:] = root.reshape(-1).view(np.uint8)
            self._moved[key] = (root, fresh)  # keeps root alive: its id stays unique
            self.offsets.append(pad)
        fresh = self._moved[key][1]
        pad = fresh.nbytes - root.nbytes
        return np.ndarray(a.shape, a.dtype, buffer=fresh, offset=pad + _addr(a) - _addr(root),
                          strides=a.strides)

    def problems(self, problems: list[api.RawProblem]) -> list[api.RawProblem]:
        """A new round's placement of a GEMM call's operands and outputs."""
        self.new_round()
        return [replace(p, a=self.place(p.a), b=self.place(p.b), c=self.place(p.c),
                        bias=self.place(p.bias)) for p in problems]
