"""The in-process engine: the cffi module of this machine, plus the peers
(other libraries run in this process for comparison) and the plugins it was
asked to load (kbench.targets.plugins)."""

from __future__ import annotations

import functools
import platform
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

import numpy as np

from kbench.errors import KbenchError, SizeOverflow, Unsupported
from kbench.native import api, sliced, slices
from kbench.native import plugins as native_plugins
from kbench.native.api import RawProblem, Realization, Selector
from kbench.native.calls import CallResult, ConvDesc, TargetInfo, Timing, backend_arg
from kbench.native.loader import Native
from kbench.peers import Peer, load_peers
from kbench.targets.plugins import PluginError, PluginLoads, annotate_all, expand, host_arch

F = TypeVar("F", bound=Callable[..., Any])


def _long_conv(nat: Native, d: Any, x: np.ndarray | None, out: np.ndarray | None
               ) -> tuple[int, int] | None:
    """The output height and width of a convolution long enough to run in
    slices whose input and output arrays hold the whole call (else None: one
    call, the library checking it whole)."""
    oh, ow = nat.ffi.new("size_t *"), nat.ffi.new("size_t *")
    if nat.lib.kb_conv2d_output_shape(d, oh, ow, nat.new_error()) != 0:
        return None
    hw = (int(oh[0]), int(ow[0]))
    if not slices.worth(sliced.conv_flops(d, hw)):
        return None
    whole_in, whole_out = d.n * d.h * d.w * d.c_in, d.n * hw[0] * hw[1] * d.c_out
    if not (api.covers(x, 1, whole_in, whole_in) and api.covers(out, 1, whole_out, whole_out)):
        return None
    return hw


def state_checked(method: F) -> F:
    """After the call (also when it raised), SVCR must show streaming mode and
    ZA off: a call that left them on raises InternalError naming SVCR
    (api.check_sme_state, which also switches them off)."""
    @functools.wraps(method)
    def call(self: InProcessEngine, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        finally:
            api.check_sme_state(self.nat)
    return call  # type: ignore[return-value]


class InProcessEngine:
    """The cffi module of this machine, plus the peer backends (other libraries
    run in this process for comparison, kbench.peers). A call whose selector
    forces a peer's realization goes to that peer; every other call goes to
    the library. After every call, a peer's too, streaming mode and ZA must
    be off (state_checked)."""

    emulated = False

    def __init__(self, nat: Native | None = None, peers: list[Peer] | None = None,
                 plugins: Sequence[str] = ()) -> None:
        self.nat = nat or api.load()
        self.peer_errors: dict[str, str] = {}
        if peers is None:
            loaded = load_peers()
            peers, self.peer_errors = loaded.peers, loaded.errors
        self.peers: list[Peer] = list(peers)
        self.plugins = PluginLoads(list(plugins))
        for path in plugins:
            self._load_plugin(expand(path, host_arch()))

    def _load_plugin(self, path: str) -> None:
        """Loads one plugin file into this process; a refusal is recorded with its
        reason (the engine goes on without it)."""
        try:
            self.plugins.add(native_plugins.load_plugin(path, self.nat))
        except KbenchError as exc:
            self.plugins.errors.append(PluginError(path, str(exc)))

    def _sel(self, selector: Selector | None) -> Selector | None:
        """The selector with this engine's plugins taking part (when it has any)."""
        if not self.plugins.loaded:
            return selector
        return replace(selector or Selector(), plugins=True)

    def _ran(self, res: CallResult) -> CallResult:
        return replace(res, realization=self.plugins.annotate(res.realization))

    def info(self, name: str) -> TargetInfo:
        cpu = api.cpu_info(self.nat)
        compiled = [b for i, b in enumerate(api.BACKENDS) if self.nat.lib.kb_backend_compiled(i)]
        peer_realizations = [r for p in self.peers for r in p.realizations()]
        ours = annotate_all(api.realizations(self._sel(None), nat=self.nat), self.plugins)
        return TargetInfo(
            name=name, kind="in-process", emulated=False, arch=cpu.arch,
            cpu_features=list(cpu.features), sme_vector_bits=cpu.sme_vector_bits, isa=cpu.isa,
            library_version=api.version(self.nat),
            realizations=ours + peer_realizations,
            compiled_backends=compiled,
            extra={"machine": platform.machine(), "processor": platform.processor(),
                   **(self.plugins.to_extra() if self.plugins.requested else {}),
                   **({"peer_errors": dict(self.peer_errors)} if self.peer_errors else {})},
        )

    def _peer(self, selector: Selector | None) -> Peer | None:
        """The peer whose realization the selector forces, if any."""
        if selector is None or selector.force is None:
            return None
        for p in self.peers:
            if any(r.name == selector.force for r in p.realizations()):
                return p
        return None

    @state_checked
    def gemm_raw(self, m: int, n: int, k: int, problems: list[RawProblem],
                 selector: Selector | None = None, timing: Timing | None = None) -> CallResult:
        peer = self._peer(selector)
        if peer is not None:
            return peer.gemm(m, n, k, problems, selector, timing)
        selector = self._sel(selector)
        if timing is None:
            return self._ran(CallResult(api.gemm_raw(m, n, k, problems, selector=selector,
                                                     nat=self.nat)))
        ran, times, reps = api.time_gemm_raw(m, n, k, problems, timing.to_c(self.nat),
                                             selector=selector, nat=self.nat)
        return self._ran(CallResult(ran, times, reps))

    @state_checked
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
                raise SizeOverflow(f"desc.{name}: {value} does not fit in size_t", f"desc.{name}")
            setattr(d, name, value)
        d.clamp_min, d.clamp_max = float(desc.clamp_min), float(desc.clamp_max)

        def ptr(a: np.ndarray | None, name: str) -> Any:
            return nat.ffi.NULL if a is None else api._ptr(nat, api.in_buffer(a, name))
        xp, wp, bp, outp = (ptr(x, "input"), ptr(w, "filter"), ptr(bias, "bias"),
                            ptr(out, "output"))
        sel, keep = (self._sel(selector) or Selector()).to_c(nat)
        ran = nat.ffi.new("kb_realization *")
        err = nat.new_error()
        if timing is None:
            long = _long_conv(nat, d, x, out)
            if long is not None:  # in slices: Ctrl-C stops it within a second
                return self._ran(CallResult(sliced.conv(
                    nat, lambda r: Realization.from_c(nat, r), d, xp, wp, bp, outp,
                    self._sel(selector) or Selector(), long)))
            st = nat.lib.kb_conv2d(d, xp, wp, bp, outp, sel, ran, err)
            nat.check(st, err)
            return self._ran(CallResult(Realization.from_c(nat, ran)))
        times = nat.ffi.new("double[]", timing.rounds)
        reps = nat.ffi.new("uint32_t *")
        st = nat.lib.kb_time_conv(d, xp, wp, bp, outp, sel, timing.to_c(nat), times, reps, ran,
                                  err)
        nat.check(st, err)
        del keep
        return self._ran(CallResult(Realization.from_c(nat, ran), list(times), int(reps[0])))

    @state_checked
    def time_pack(self, backend: str | int | None, n: int, k: int, b: np.ndarray, ldb: int,
                  bias: np.ndarray | None, timing: Timing,
                  selector: Selector | None = None) -> CallResult:
        """Times packing B (portable, or a backend's native layout) on its own."""
        nat = self.nat
        be = backend_arg(backend)
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

    @state_checked
    def pack_raw(self, backend: str | int | None, n: int, k: int, b: np.ndarray | None,
                 ldb: int, bias: np.ndarray | None = None, dst_size: int | None = None,
                 selector: Selector | None = None) -> np.ndarray:
        nat = self.nat
        be = backend_arg(backend)
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
        # filled with a pattern, not zeros: a packer must write every byte of its
        # layout (zero padding included), and a byte it skips shows up
        dst = np.full(max(dst_size, 1), 0xA5, dtype=np.uint8)
        bp = nat.ffi.NULL if b is None else api._ptr(nat, api.in_buffer(b, "B"))
        dp = api._ptr(nat, dst, "void *")
        if be is None:
            st = nat.lib.kb_pack_b(n, k, bp, ldb, dp, dst_size, err)
        else:
            biasp = nat.ffi.NULL if bias is None else api._ptr(nat, api.in_buffer(bias, "bias"))
            st = nat.lib.kb_pack_b_native(be, n, k, bp, ldb, biasp, dp, dst_size, sel, err)
        nat.check(st, err)
        del keep
        return dst[:dst_size]

    def pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray | None, ldb: int,
                    bias: np.ndarray | None = None, dst_size: int | None = None,
                    fill: int | None = None, guard: str | None = None) -> np.ndarray:
        """B packed by a plugin realization's own packer (its bytes, as they are),
        into a destination filled with `fill` (default 0). In this process there
        are no guard pages (`guard` is for a worker's checking runs)."""
        return native_plugins.pack_raw(realization, n, k, b, ldb, bias, dst_size, self.nat,
                                       0 if fill is None else fill)

    def pack_plugin_lhs(self, realization: str, m: int, k: int, a: np.ndarray, lda: int,
                        fill: int | None = None, guard: str | None = None) -> np.ndarray:
        """A packed by a plugin realization's LHS packer (its bytes)."""
        return native_plugins.pack_lhs_raw(realization, m, k, a, lda, self.nat,
                                           0 if fill is None else fill)

    def time_pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray, ldb: int,
                         bias: np.ndarray | None, timing: Timing) -> CallResult:
        times, reps = native_plugins.time_pack_raw(realization, n, k, b, ldb, bias,
                                                   timing.to_c(self.nat), self.nat)
        return CallResult(None, times, reps)

    def set_svl(self, bits: int) -> int:
        raise Unsupported("selector: the in-process engine cannot change the vector length",
                          "selector")

    def set_sve_vl(self, bits: int) -> int:
        raise Unsupported("selector: the in-process engine cannot change the SVE vector length",
                          "selector")

    def close(self) -> None:
        pass
