"""Engines: what a target is made of. An engine makes raw library calls,
in this process (cffi) or in a worker process (the wire protocol), with
the same arguments and the same typed errors either way."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from . import api
from .api import RawProblem, Realization, Selector
from .errors import InvalidArgument, Unsupported
from .native import Native

if TYPE_CHECKING:
    from .peers import Peer


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


@dataclass
class CallResult:
    realization: Realization | None
    times_ns: list[float] = field(default_factory=list)  # per call, one per round
    reps_per_round: int = 0


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

    def close(self) -> None: ...


def _backend_arg(backend: str | int | None) -> int | None:
    if backend is None or isinstance(backend, int):
        return backend
    return api.backend_id(backend)


class InProcessEngine:
    """The cffi module of this machine, plus the peer backends (other libraries
    run in this process for comparison, kbench.peers). A call whose selector
    forces a peer's realization goes to that peer; every other call goes to
    the library."""

    emulated = False

    def __init__(self, nat: Native | None = None, peers: list[Peer] | None = None) -> None:
        self.nat = nat or api.load()
        if peers is None:
            from .peers import default_peers
            peers = default_peers()
        self.peers: list[Peer] = list(peers)

    def info(self, name: str) -> TargetInfo:
        cpu = api.cpu_info(self.nat)
        compiled = [b for i, b in enumerate(api.BACKENDS) if self.nat.lib.kb_backend_compiled(i)]
        peer_realizations = [r for p in self.peers for r in p.realizations()]
        return TargetInfo(
            name=name, kind="in-process", emulated=False, arch=cpu.arch,
            cpu_features=list(cpu.features), sme_vector_bits=cpu.sme_vector_bits, isa=cpu.isa,
            library_version=api.version(self.nat),
            realizations=api.realizations(nat=self.nat) + peer_realizations,
            compiled_backends=compiled,
            extra={"machine": platform.machine(), "processor": platform.processor()},
        )

    def _peer(self, selector: Selector | None) -> Peer | None:
        """The peer whose realization the selector forces, if any."""
        if selector is None or selector.force is None:
            return None
        for p in self.peers:
            if any(r.name == selector.force for r in p.realizations()):
                return p
        return None

    def gemm_raw(self, m: int, n: int, k: int, problems: list[RawProblem],
                 selector: Selector | None = None, timing: Timing | None = None) -> CallResult:
        peer = self._peer(selector)
        if peer is not None:
            return peer.gemm(m, n, k, problems, selector, timing)
        if timing is None:
            return CallResult(api.gemm_raw(m, n, k, problems, selector=selector, nat=self.nat))
        return api.time_gemm_raw(m, n, k, problems, timing.to_c(self.nat), selector=selector,
                                 nat=self.nat)

    def conv_raw(self, desc: ConvDesc, x: np.ndarray | None, w: np.ndarray | None,
                 bias: np.ndarray | None, out: np.ndarray | None,
                 selector: Selector | None = None, timing: Timing | None = None
                 ) -> CallResult:
        peer = self._peer(selector)
        if peer is not None:
            return peer.conv(desc, x, w, bias, out, selector, timing)
        nat = self.nat
        d = nat.ffi.new("kb_conv_desc *")
        desc.checked()
        for name in ConvDesc.SIZE_FIELDS:
            value = int(getattr(desc, name))
            if value >= 2**64:
                from .errors import SizeOverflow
                raise SizeOverflow(f"desc.{name}: {value} does not fit in size_t", f"desc.{name}")
            setattr(d, name, value)
        d.clamp_min, d.clamp_max = float(desc.clamp_min), float(desc.clamp_max)

        def ptr(a: np.ndarray | None) -> Any:
            return nat.ffi.NULL if a is None else api._ptr(nat, a)
        sel, keep = (selector or Selector()).to_c(nat)
        ran = nat.ffi.new("kb_realization *")
        err = nat.new_error()
        if timing is None:
            st = nat.lib.kb_conv2d(d, ptr(x), ptr(w), ptr(bias), ptr(out), sel, ran, err)
            nat.check(st, err)
            return CallResult(Realization.from_c(nat, ran))
        times = nat.ffi.new("double[]", timing.rounds)
        reps = nat.ffi.new("uint32_t *")
        st = nat.lib.kb_time_conv(d, ptr(x), ptr(w), ptr(bias), ptr(out), sel, timing.to_c(nat),
                                  times, reps, ran, err)
        nat.check(st, err)
        del keep
        return CallResult(Realization.from_c(nat, ran), list(times), int(reps[0]))

    def time_pack(self, backend: str | int | None, n: int, k: int, b: np.ndarray, ldb: int,
                  bias: np.ndarray | None, timing: Timing,
                  selector: Selector | None = None) -> CallResult:
        """Times packing B (portable, or a backend's native layout) on its own."""
        nat = self.nat
        be = _backend_arg(backend)
        dst = self.pack_raw(backend, n, k, b, ldb, bias, None, selector)
        err = nat.new_error()
        sel, keep = (selector or Selector()).to_c(nat)
        times = nat.ffi.new("double[]", timing.rounds)
        reps = nat.ffi.new("uint32_t *")
        st = nat.lib.kb_time_pack_b(-1 if be is None else be, n, k, api._ptr(nat, b), ldb,
                                    nat.ffi.NULL if bias is None else api._ptr(nat, bias),
                                    api._ptr(nat, dst, "void *"), dst.size, sel,
                                    timing.to_c(nat), times, reps, err)
        nat.check(st, err)
        del keep
        return CallResult(None, list(times), int(reps[0]))

    def pack_raw(self, backend: str | int | None, n: int, k: int, b: np.ndarray | None,
                 ldb: int, bias: np.ndarray | None = None, dst_size: int | None = None,
                 selector: Selector | None = None) -> np.ndarray:
        nat = self.nat
        be = _backend_arg(backend)
        n, k, ldb = (api._size_arg(n, "N"), api._size_arg(k, "K"), api._size_arg(ldb, "ldb"))
        err = nat.new_error()
        sel, keep = (selector or Selector()).to_c(nat)
        if dst_size is None:
            size = nat.ffi.new("size_t *")
            if be is None:
                nat.check(nat.lib.kb_pack_b_size(n, k, size, err), err)
            else:
                nat.check(nat.lib.kb_pack_b_native_size(be, n, k, sel, size, err), err)
            dst_size = int(size[0])
        dst = np.zeros(max(dst_size, 1), dtype=np.uint8)
        bp = nat.ffi.NULL if b is None else api._ptr(nat, b)
        dp = api._ptr(nat, dst, "void *")
        if be is None:
            st = nat.lib.kb_pack_b(n, k, bp, ldb, dp, dst_size, err)
        else:
            biasp = nat.ffi.NULL if bias is None else api._ptr(nat, bias)
            st = nat.lib.kb_pack_b_native(be, n, k, bp, ldb, biasp, dp, dst_size, sel, err)
        nat.check(st, err)
        del keep
        return dst[:dst_size]

    def set_svl(self, bits: int) -> int:
        raise Unsupported("selector: the in-process engine cannot change the vector length",
                          "selector")

    def close(self) -> None:
        pass


def pack(engine: Engine, b: np.ndarray, backend: str | None = None,
         bias: np.ndarray | None = None, selector: Selector | None = None) -> np.ndarray:
    """Packs a [K, N] FP16 matrix (a strided view is fine) on an engine."""
    if b.dtype != np.float16 or b.ndim != 2 or b.strides[1] != 2:
        raise InvalidArgument("B: must be a 2-D float16 array with contiguous rows", "B")
    k, n = b.shape
    return engine.pack_raw(backend, n, k, b, b.strides[0] // 2, bias, None, selector)
