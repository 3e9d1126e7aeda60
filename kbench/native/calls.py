"""The call-level interface every engine speaks: raw library calls and what
they return. An engine (in-process cffi, the worker over its wire protocol,
the emulated Python, a peer library) takes the same arguments and raises
the same typed errors; the engines themselves live in kbench.targets."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Protocol

import numpy as np

from kbench.errors import InvalidArgument
from kbench.native import api
from kbench.native.api import RawProblem, Realization, Selector
from kbench.native.loader import Native


@dataclass
class ConvDesc:
    """kb_conv_desc, field for field."""

    n: int
    h: int
    w: int
    c_in: int
    c_out: int
    kh: int
    kw: int
    stride_h: int = 1
    stride_w: int = 1
    pad_top: int = 0
    pad_bottom: int = 0
    pad_left: int = 0
    pad_right: int = 0
    dil_h: int = 1
    dil_w: int = 1
    groups: int = 1
    clamp_min: float = float("-inf")
    clamp_max: float = float("inf")

    SIZE_FIELDS = ("n", "h", "w", "c_in", "c_out", "kh", "kw", "stride_h", "stride_w",
                   "pad_top", "pad_bottom", "pad_left", "pad_right", "dil_h", "dil_w", "groups")

    def checked(self) -> ConvDesc:
        """Raises InvalidArgument for a negative or non-integer size field."""
        for name in self.SIZE_FIELDS:
            api._size_arg(getattr(self, name), f"desc.{name}")
        return self

    @classmethod
    def from_shapes(cls, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
                    p: api.ConvParams) -> ConvDesc:
        lo, hi = api._clamp(p.clamp)
        return cls(x_shape[0], x_shape[1], x_shape[2], x_shape[3], w_shape[3], w_shape[0],
                   w_shape[1], p.stride[0], p.stride[1], *p.pad, p.dilation[0], p.dilation[1],
                   p.groups, lo, hi).checked()


@dataclass(frozen=True)
class HeapUse:
    """Heap bytes a call's realization held (a worker's interposed allocator,
    native/worker/kb_heap.h): when the call started, the most at once during
    it, and when it returned; `whose` is "plugin" (blocks allocated during its
    own calls, in any thread) or "scratch" (kbench's scratch: what our own
    realizations hold). `note` says why a call was not measured ("" when it
    was)."""

    before: int = 0
    peak: int = 0
    after: int = 0
    whose: str = ""
    note: str = ""

    @property
    def measured(self) -> bool:
        return not self.note

    @classmethod
    def not_measured(cls, why: str) -> HeapUse:
        return cls(note=why)


# why an engine's calls have no heap figures (only a worker interposes the allocator)
HEAP_NOT_HERE = "not measured on this target (only a worker interposes the allocator)"


@dataclass
class CallResult:
    realization: Realization | None
    times_ns: list[float] = field(default_factory=list)  # per call, one per round
    reps_per_round: int = 0
    # the code the call executed, by function (kbench.targets.whatran.Ran), where the
    # engine traces it (a plugin's call on an emulated target); None otherwise
    ran: Any = None
    heap: HeapUse = field(default_factory=lambda: HeapUse.not_measured(HEAP_NOT_HERE))


@dataclass(frozen=True)
class Timing:
    """The native timer's settings (kb_timing)."""

    warmup: int = 1
    rounds: int = 5
    min_round_ns: int = 0  # calibrate calls per round to last at least this
    max_reps: int = 0  # 0: up to 1,000,000
    cold: bool = False  # flush caches before every round (one call per round)

    def to_c(self, nat: Native) -> Any:
        t = nat.ffi.new("kb_timing *")
        if self.rounds < 1:
            raise InvalidArgument("timing.rounds: must be positive", "timing.rounds")
        t.warmup, t.rounds = int(self.warmup), int(self.rounds)
        t.min_round_ns, t.max_reps = int(self.min_round_ns), int(self.max_reps)
        t.cold = int(self.cold)
        return t


@dataclass
class TargetInfo:
    name: str
    kind: str  # "in-process" | "worker"
    emulated: bool
    arch: str
    cpu_features: list[str]
    sme_vector_bits: int
    isa: str
    library_version: str
    realizations: list[Realization]
    compiled_backends: list[str] = field(default_factory=list)
    sve_vector_bits: int = 0  # the SVE vector length (non-streaming), 0 without SVE
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        d["realizations"] = [r.to_dict() for r in self.realizations]
        return {**d, **self.extra}

    @property
    def backends(self) -> list[str]:
        """Our backends with a realization here (peers are never among them)."""
        return [b for b in api.BACKENDS
                if any(r.backend == b and not r.peer for r in self.realizations)]

    @property
    def peers(self) -> list[str]:
        """Peer backends (other libraries, kbench.peers) with a realization here."""
        out: list[str] = []
        for r in self.realizations:
            if r.peer and r.backend not in out:
                out.append(r.backend)
        return out


class Engine(Protocol):
    def info(self, name: str) -> TargetInfo: ...

    def gemm_raw(self, m: int, n: int, k: int, problems: list[RawProblem],
                 selector: Selector | None = None, timing: Timing | None = None) -> CallResult: ...

    def conv_raw(self, desc: ConvDesc, x: np.ndarray | None, w: np.ndarray | None,
                 bias: np.ndarray | None, out: np.ndarray | None,
                 selector: Selector | None = None, timing: Timing | None = None
                 ) -> CallResult: ...

    def pack_raw(self, backend: str | int | None, n: int, k: int, b: np.ndarray | None,
                 ldb: int, bias: np.ndarray | None = None, dst_size: int | None = None,
                 selector: Selector | None = None) -> np.ndarray: ...

    def time_pack(self, backend: str | int | None, n: int, k: int, b: np.ndarray, ldb: int,
                  bias: np.ndarray | None, timing: Timing,
                  selector: Selector | None = None) -> CallResult: ...

    def pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray | None, ldb: int,
                    bias: np.ndarray | None = None, dst_size: int | None = None,
                    fill: int | None = None, guard: str | None = None) -> np.ndarray: ...

    def time_pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray, ldb: int,
                         bias: np.ndarray | None, timing: Timing) -> CallResult: ...

    def close(self) -> None: ...


def backend_arg(backend: str | int | None) -> int | None:
    if backend is None or isinstance(backend, int):
        return backend
    return api.backend_id(backend)


def pack(engine: Engine, b: np.ndarray, backend: str | None = None,
         bias: np.ndarray | None = None, selector: Selector | None = None) -> np.ndarray:
    """Packs a [K, N] FP16 matrix (a strided view is fine) on an engine."""
    if b.dtype != np.float16 or b.ndim != 2 or b.strides[1] != 2:
        raise InvalidArgument("B: must be a 2-D float16 array with contiguous rows", "B")
    k, n = b.shape
    return engine.pack_raw(backend, n, k, b, b.strides[0] // 2, bias, None, selector)
