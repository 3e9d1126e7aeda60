"""How long one request to a worker process may take before the parent
kills that process and reports the call as timed out.

The bound of a call follows its size: a base for the process round trip
plus the call's flops at a deliberately slow rate (a naive scalar loop
runs 1 GFLOP/s and more on any host, so the host rate of 20 MFLOP/s leaves
a margin of 50; emulated targets are about 50 times slower again, and the
instruction counter's logging slower still). A timed call also runs its
warm-up, its calibration and its rounds. `--call-timeout SECONDS` replaces
the bound with a fixed one for every request (loading a plugin included).

The bound only ever stops a process that has stopped answering: a call
that finishes within it is never affected, and the bound is not a
measurement."""

from __future__ import annotations

from dataclasses import dataclass

from kbench.native.calls import ConvDesc, Timing

HOST_BASE_S = 30.0  # process round trip, page faults of large buffers, a slow disk
EMULATED_BASE_S = 120.0  # QEMU start-up, the dynamic loader and libc under emulation
HOST_FLOPS_PER_S = 2e7
EMULATED_FLOPS_PER_S = 4e5
CALIBRATION_CALLS = 64  # calls a timed request may spend finding its repetitions per round
MAX_BOUND_S = 86400.0  # a day: the bound of an absurd size (a request the worker refuses anyway)


@dataclass(frozen=True)
class CallBounds:
    """The time bounds of one worker's requests."""

    emulated: bool = False
    fixed: float | None = None  # --call-timeout: every request, whatever its size
    slowdown: float = 1.0  # e.g. the instruction counter logging every block

    def __post_init__(self) -> None:
        if self.fixed is not None and not self.fixed > 0:
            raise ValueError(f"call timeout: must be a positive number of seconds, "
                             f"not {self.fixed!r}")

    @property
    def base(self) -> float:
        return (EMULATED_BASE_S if self.emulated else HOST_BASE_S) * self.slowdown

    def control(self) -> float:
        """Hello, loading a plugin or a dispatch table, setting the SVL, shutdown."""
        return self.fixed if self.fixed is not None else self.base

    def call(self, flops: int, timing: Timing | None = None) -> float:
        """A GEMM, convolution or packing call of `flops` operations (timed
        with `timing`, or a single call)."""
        if self.fixed is not None:
            return self.fixed
        rate = (EMULATED_FLOPS_PER_S if self.emulated else HOST_FLOPS_PER_S) / self.slowdown
        one = max(0, int(flops)) / rate
        if timing is None:
            return min(MAX_BOUND_S, self.base + one)
        calls = timing.warmup + CALIBRATION_CALLS + timing.rounds * max(1, timing.max_reps or 1)
        rounds_floor = 2 * timing.rounds * timing.min_round_ns / 1e9 * self.slowdown
        return min(MAX_BOUND_S, self.base + calls * one + rounds_floor)

    def describe(self) -> str:
        if self.fixed is not None:
            return f"{self.fixed:g} s per call (--call-timeout)"
        return (f"{self.base:.0f} s plus the call's flops at "
                f"{(EMULATED_FLOPS_PER_S if self.emulated else HOST_FLOPS_PER_S) / 1e6:g} "
                "MFLOP/s")


def gemm_flops(m: int, n: int, k: int, batch: int) -> int:
    return 2 * int(m) * int(n) * max(1, int(k)) * max(1, int(batch))


def conv_flops(desc: ConvDesc) -> int:
    """The multiply-adds of a convolution, counted as 2 flops each (an upper
    bound for any shape the library takes; 0 for one it refuses anyway)."""
    def out(size: int, k: int, stride: int, pad: int, dil: int) -> int:
        span = dil * (k - 1) + 1
        return max(0, (size + pad - span) // max(1, stride) + 1)
    oh = out(desc.h, desc.kh, desc.stride_h, desc.pad_top + desc.pad_bottom, desc.dil_h)
    ow = out(desc.w, desc.kw, desc.stride_w, desc.pad_left + desc.pad_right, desc.dil_w)
    per_out = desc.kh * desc.kw * max(1, desc.c_in // max(1, desc.groups))
    return 2 * desc.n * oh * ow * desc.c_out * per_out


def pack_flops(n: int, k: int) -> int:
    """Packing moves every element once: counted like a call of 2*N*K flops."""
    return 2 * max(1, int(n)) * max(1, int(k))


__all__ = ["CallBounds", "conv_flops", "gemm_flops", "pack_flops"]
