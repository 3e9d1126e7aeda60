"""What one Python API call may cost: its work (flops) and the memory it
allocates (the outputs it creates, the contiguous copies of strided inputs
it makes). A call over either cap is refused before anything is allocated
or computed, naming the cap and how to raise it: a GEMM of 100,000 x 5,000
by 5,000 x 100,000 (1e14 flops, hours on the scalar backend) or a
convolution over a zero-stride view of 64 GiB is a mistake far more often
than an intent.

The caps: `kbench.Limits(max_flops=..., max_bytes=...)` passed as `limits=`
to gemm, gemm_batch and conv2d, else KBENCH_MAX_CALL_FLOPS and
KBENCH_MAX_CALL_BYTES (read once per process, on first use), else 1e13
flops and 80% of the memory available when first asked (/proc/meminfo;
8 GiB where that cannot be read)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

from kbench.errors import OutOfMemory, WorkLimit

DEFAULT_MAX_FLOPS = 1e13
FLOPS_ENV = "KBENCH_MAX_CALL_FLOPS"
BYTES_ENV = "KBENCH_MAX_CALL_BYTES"


@dataclass(frozen=True)
class Limits:
    """The caps of one API call; None: the process default (see the module)."""

    max_flops: float | None = None
    max_bytes: float | None = None


def _available_bytes() -> float:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 * 0.8
    except (OSError, ValueError, IndexError):
        pass
    return float(8 << 30)


@cache
def defaults() -> Limits:
    """The process's caps: the environment (checked by kbench.native.envvars
    when the library loads), else the built-in ones. Read once."""
    flops = os.environ.get(FLOPS_ENV, "").strip()
    mem = os.environ.get(BYTES_ENV, "").strip()
    return Limits(float(flops) if flops else DEFAULT_MAX_FLOPS,
                  float(mem) if mem else _available_bytes())


def _size(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def check(flops: float, new_bytes: float, limits: Limits | None, allocations: str) -> None:
    """Refuses a call whose work or new memory (`allocations` says what it
    allocates) is over its caps: WorkLimit (field limits.max_flops) or
    OutOfMemory (field limits.max_bytes), before anything is allocated."""
    base = defaults()
    max_flops = (limits.max_flops if limits is not None and limits.max_flops is not None
                 else base.max_flops)
    max_bytes = (limits.max_bytes if limits is not None and limits.max_bytes is not None
                 else base.max_bytes)
    assert max_flops is not None and max_bytes is not None
    if flops > max_flops:
        raise WorkLimit(f"limits.max_flops: the call is {flops:.3g} flops, over the work cap "
                        f"of {max_flops:.3g} (kbench.Limits(max_flops=...) or {FLOPS_ENV}); "
                        "refused before computing", "limits.max_flops")
    if new_bytes > max_bytes:
        raise OutOfMemory(f"limits.max_bytes: the call would allocate {_size(new_bytes)} "
                          f"({int(new_bytes):,} bytes: {allocations}), over the memory cap of "
                          f"{_size(max_bytes)} (kbench.Limits(max_bytes=...) or {BYTES_ENV}); "
                          "refused before allocating", "limits.max_bytes")


__all__ = ["DEFAULT_MAX_FLOPS", "Limits", "WorkLimit", "check", "defaults"]
