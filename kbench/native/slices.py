"""Long calls run in slices, so that Ctrl-C stops them within a second.

A native call cannot be interrupted: Python runs its SIGINT handler only
when the call returns. So a GEMM or convolution of more than FIRST_FLOPS
runs as several calls of the same realization, each on a slice of the
output: GEMM rows of C (and, for a plain B, blocks of its columns when a
single row is itself long), a convolution's images and bands of output rows.
Every output element is computed by the same realization from the same
operands in the same order as in one call, so the bits are the same (the
suites check it); only the slice boundaries differ (a GEMM's output rows
and columns are independent of each other; a convolution's bands of output
rows start on multiples of CONV_ALIGN rows, so that Winograd's 2 x 2 output
tiles fall as in one call). The first
slice does about FIRST_FLOPS of work; each next one is sized from the time
the last took, to last about SLICE_SECONDS. Between slices the interpreter
runs its signal handlers: a KeyboardInterrupt then leaves the output partly
written.

Which realization: a forced one; else a dispatch table's rule for the whole
call's shape (as the library would choose; when that realization cannot
take the call, the library's default order); else the library's default
order, which depends on the shape only through the largest M a realization
takes (max_m, e.g. a GEMV's 1): every slice has more rows than any such
max_m below the call's M, so the first slice is dispatched as the whole call
would be. Every later slice is forced to the realization the first one ran,
and the result names it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from kbench.errors import InvalidArgument, Unsupported

# kbench.native.api's Selector and Realization (not imported: api imports this module)
Selector = Any
Realization = Any

FIRST_FLOPS = 1 << 26  # the work of a call run in one piece, and of a first slice
SLICE_SECONDS = 0.25  # what each later slice is sized to last
CONV_ALIGN = 4  # a convolution's bands of output rows: multiples of this many rows
GROWTH = 4.0  # a slice is at most this many times the one before

# run(r0, r1, c0, c1, selector): rows [r0, r1) and columns [c0, c1) of every
# problem of the call, under the selector; returns the realization that ran
Window = Callable[[int, int, int, int, Selector], Realization]


class Sizer:
    """How many units (rows, columns, output rows) the next slice takes: the
    first about FIRST_FLOPS of work, later ones about SLICE_SECONDS each."""

    def __init__(self, unit_flops: float, align: int = 1, least: int = 1) -> None:
        self.unit = max(1.0, float(unit_flops))
        self.align = align
        self.least = least
        self.count = self._aligned(FIRST_FLOPS / self.unit)

    def _aligned(self, units: float) -> int:
        """At least `least` units and a multiple of `align` (the last slice of a
        call takes what is left)."""
        n = max(int(units), self.least, 1)
        return -(-n // self.align) * self.align if n % self.align else n

    def after(self, seconds: float) -> int:
        """The next slice's size, the last one of `self.count` units having
        taken `seconds`."""
        scale = SLICE_SECONDS / seconds if seconds > 0 else GROWTH
        self.count = self._aligned(self.count * min(GROWTH, max(1.0 / GROWTH, scale)))
        return self.count


def table_choice(selector: Selector, m: int, n: int, k: int) -> str | None:
    """The realization a selector's dispatch table names for an M x N x K GEMM
    (its first gemm rule whose class holds the shape: kb_table_gemm_choice)."""
    if selector.table is None or selector.force is not None:
        return None
    for rule in selector.table.parse()["rules"]:
        if rule["op"] != "gemm":
            continue
        cls = rule["class"]
        if all(float(cls.get(f"{d}_min", 0)) <= v <= float(cls.get(f"{d}_max", float("inf")))
               for d, v in (("m", m), ("n", n), ("k", k))):
            return str(rule["realization"])
    return None


def gemm_rows_floor(listed: Sequence[Realization], m: int) -> int:
    """The fewest rows a slice may have so that the default order picks for it
    what it picks for M rows: one more than the largest max_m below M."""
    below = [r.max_m for r in listed if r.op == "gemm" and r.max_m and r.max_m < m]
    return max(below, default=0) + 1


def _first(run: Window, window: tuple[int, int, int, int], selector: Selector,
           m: int, n: int, k: int) -> Realization:
    """The first slice, dispatched as the whole call would be."""
    want = table_choice(selector, m, n, k)
    if want is None:
        return run(*window, selector)
    try:
        return run(*window, replace(selector, force=want, table=None))
    except (Unsupported, InvalidArgument) as exc:
        if exc.field != "selector.force":
            raise
        # the table names a realization that cannot take this call: the library's
        # default order decides, as it does for the whole call
        return run(*window, replace(selector, table=None))


def gemm(m: int, n: int, k: int, batch: int, selector: Selector,
         listed: Callable[[], Sequence[Realization]], run: Window, columns: bool) -> Realization:
    """Runs an M x N x K GEMM (batch problems) in slices of rows, or, when B
    is plain (`columns`) and the fewest rows a slice may have are themselves
    a long call, in slices of those rows by blocks of columns; returns the
    realization that computed every slice."""
    per_row = 2.0 * n * k * batch
    floor = min(m, 1 if selector.force is not None else gemm_rows_floor(listed(), m))
    by_columns = columns and per_row * floor > FIRST_FLOPS
    sizer = Sizer(2.0 * k * batch * floor) if by_columns else Sizer(per_row, least=floor)
    ran: Realization = None
    r0 = 0
    while r0 < m:
        r1 = min(m, r0 + (floor if by_columns else sizer.count))
        c0 = 0
        while c0 < n:
            c1 = min(n, c0 + sizer.count) if by_columns else n
            started = time.monotonic()
            if ran is None:
                ran = _first(run, (r0, r1, c0, c1), selector, m, n, k)
            else:
                got = run(r0, r1, c0, c1, replace(selector, force=ran.name, table=None))
                assert got.name == ran.name, (got.name, ran.name)
            sizer.after(time.monotonic() - started)
            c0 = c1
        r0 = r1
    assert ran is not None
    return ran


# conv(img, r0, r1, selector): output rows [r0, r1) of image img
ConvWindow = Callable[[int, int, int, Selector], Realization]


def conv(images: int, out_h: int, row_flops: float, rows_ok: bool, selector: Selector,
         run: ConvWindow) -> Realization:
    """Runs a convolution in slices: per image, in bands of output rows when
    `rows_ok` (else whole images); returns the realization that computed
    every slice. The dispatch of a convolution does not depend on its height
    or batch, so every slice is dispatched as the whole call; later slices
    are forced to the first one's realization all the same."""
    sizer = Sizer(row_flops, align=CONV_ALIGN) if rows_ok else None
    ran: Realization = None
    sel = selector
    for img in range(images):
        r0 = 0
        while r0 < out_h:
            r1 = out_h if sizer is None else min(out_h, r0 + sizer.count)
            started = time.monotonic()
            got = run(img, r0, r1, sel)
            if ran is None:
                ran, sel = got, replace(selector, force=got.name, table=None)
            assert got.name == ran.name, (got.name, ran.name)
            if sizer is not None:
                sizer.after(time.monotonic() - started)
            r0 = r1
    assert ran is not None
    return ran


def worth(flops: float) -> bool:
    """Is a call long enough to be run in slices?"""
    return flops > FIRST_FLOPS


__all__ = ["CONV_ALIGN", "FIRST_FLOPS", "SLICE_SECONDS", "Sizer", "conv", "gemm",
           "gemm_rows_floor", "table_choice", "worth"]
