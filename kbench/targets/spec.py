"""Targets compute and time; the host owns inputs, the oracle and verdicts.

A target is an engine (in-process or worker) with a name. It runs one GEMM
or convolution case with a forced realization and returns the outputs and
the realization that actually ran. Every output buffer sits between guard
regions, and GEMM outputs have their ldc padding checked too: a kernel
that writes outside its output is caught here.

A call that wrote outside its buffers leaves the process that ran it
suspect: a worker is discarded (killed, not shut down) and the next call
starts a fresh one.

Target specs:
    host                                  the cffi module of this machine; with
                                          plugins, their realizations in the host
                                          worker (kbench.targets.isolated)
    qemu[:cpu=MODEL][:sme=off][:svl=BITS][:vl=BITS][:isa=CAP][:fa64=off]
                                          the aarch64 worker under qemu-aarch64
                                          (fa64=off: SME without FEAT_SME_FA64;
                                          sme=off: max without SME, an SVE2.1 CPU;
                                          vl=: the SVE vector length)
    qemu-python[:cpu=MODEL][:sme=off][:svl=BITS][:vl=BITS][:fa64=off]
                                          the aarch64 cffi module (and the peers) in an
                                          aarch64 CPython under qemu-aarch64
                                          (kbench.targets.pyworker)
    worker:host                           the worker built for this machine
    worker:CMD                            any command line speaking the protocol
    ssh:[user@]host[:port][,svl=BITS][,vl=BITS][,isa=CAP][,emulated]
                                          the static worker copied to a remote
                                          machine and run over ssh
                                          (kbench.targets.remote)
    adb:[SERIAL][,svl=BITS][,vl=BITS][,isa=CAP]     the same on an Android device over adb
"""

from __future__ import annotations

import difflib
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from kbench.errors import InvalidArgument, KbenchError
from kbench.native import api, envvars
from kbench.native.calls import (
    HEAP_NOT_HERE,
    CallResult,
    ConvDesc,
    Engine,
    HeapUse,
    TargetInfo,
    Timing,
    pack,
)
from kbench.native.isa import SME_CLASSES
from kbench.problems.cases import ConvCase, GemmCase
from kbench.problems.inputs import ConvInputs, GemmInputs
from kbench.targets import whatran
from kbench.targets.crossbuild import SYSROOT_AARCH64
from kbench.targets.inprocess import InProcessEngine
from kbench.targets.isolated import IsolatedHostEngine
from kbench.targets.plugins import expand, host_arch
from kbench.targets.pyworker import PY_SLOWDOWN, PySpec, PyWorkerEngine
from kbench.targets.remote import remote_target_engine
from kbench.targets.timeouts import CallBounds
from kbench.targets.tools import find_qemu, worker_binary
from kbench.targets.worker import WorkerEngine, WorkerSpec

GUARD = 64  # FP16 elements on each side of an output
SENTINEL = np.uint16(0x7E5A)  # a NaN payload no kernel produces
# qemu-aarch64 11.1.3's models (`-cpu help`; it has no neoverse-v2)
QEMU_MODELS = ("max", "neoverse-v1", "neoverse-n1", "cortex-a53", "cortex-a76", "neoverse-n2",
               "a64fx", "cortex-a710")
SVL_BITS = (128, 256, 512, 1024, 2048)
VL_BITS = SVL_BITS  # SVE vector lengths a qemu: target takes (vl=): Armv9 allows powers of two

__all__ = ["GUARD", "INPUT_SENTINEL", "SENTINEL", "GuardedBuffer", "GuardedInputs", "Outcome",
           "Target", "TargetInfo", "parse_target"]


@dataclass
class Outcome:
    outputs: list[np.ndarray]
    ran: api.Realization | None
    error: KbenchError | None = None
    guard_detail: str = ""  # non-empty: something outside the output changed
    code: Any = None  # the code the call executed (kbench.targets.whatran.Ran), where traced
    heap: HeapUse = HeapUse.not_measured(HEAP_NOT_HERE)  # the call's heap figures


class GuardedBuffer:
    """rows x ld FP16 elements between two guard regions, all set to SENTINEL."""

    def __init__(self, rows: int, cols: int, ld: int) -> None:
        self.rows, self.cols, self.ld = rows, cols, ld
        self.raw = np.full(GUARD * 2 + rows * ld, SENTINEL, dtype=np.uint16)
        self.view = self.raw[GUARD:GUARD + rows * ld].view(np.float16).reshape(rows, ld)[:, :cols]

    def damage(self) -> str:
        """Describes any write outside the logical output, '' if none."""
        problems = []
        if (self.raw[:GUARD] != SENTINEL).any():
            problems.append("guard bytes before the output changed")
        if (self.raw[GUARD + self.rows * self.ld:] != SENTINEL).any():
            problems.append("guard bytes after the output changed")
        if self.ld > self.cols:
            body = self.raw[GUARD:GUARD + self.rows * self.ld].reshape(self.rows, self.ld)
            if (body[:, self.cols:] != SENTINEL).any():
                problems.append("ldc padding between rows changed")
        return "; ".join(problems)

    def untouched(self) -> bool:
        return bool((self.raw == SENTINEL).all())


INPUT_SENTINEL = np.uint16(0x7E49)  # another NaN payload: what lies around every input


class GuardedInputs:
    """Copies of a call's inputs between guard regions of INPUT_SENTINEL (a
    NaN), row padding included: a kernel or packer that reads past an input
    reads NaN, deterministically and on every target (the worker receives
    each input's whole buffer, guards and all), instead of whatever happens
    to lie there. After an in-process call, a changed guard or input means
    the call wrote into its inputs.

    With pages=True (a worker that puts inputs against guard pages) each copy
    is exactly the input's extent instead, the last row ending at its last
    element (row padding still INPUT_SENTINEL): the worker places it flush
    against an inaccessible page, so that a read one element past it faults
    and is reported naming the buffer."""

    def __init__(self, pages: bool = False) -> None:
        self.pages = pages
        self._items: list[tuple[str, np.ndarray, np.ndarray]] = []  # name, raw, raw before

    def copy(self, name: str, a: np.ndarray | None) -> np.ndarray | None:
        """A guarded copy of an FP16 input (any shape; a 2-D view keeps its
        row stride, its padding becomes INPUT_SENTINEL)."""
        if a is None:
            return None
        if a.ndim == 2 and a.strides[1] == 2 and a.strides[0] % 2 == 0 and a.strides[0] > 0:
            rows, cols = a.shape
            ld = max(cols, a.strides[0] // 2)
        else:
            a = np.ascontiguousarray(a)
            rows, cols, ld = 1, a.size, a.size
        if self.pages:
            raw = np.full((rows - 1) * ld + cols, INPUT_SENTINEL, dtype=np.uint16)
            body = np.ndarray((rows, cols), np.float16, buffer=raw, strides=(ld * 2, 2))
        else:
            raw = np.full(GUARD * 2 + rows * ld, INPUT_SENTINEL, dtype=np.uint16)
            body = raw[GUARD:GUARD + rows * ld].view(np.float16).reshape(rows, ld)[:, :cols]
        body[...] = a.reshape(rows, cols)
        self._items.append((name, raw, raw.copy()))
        return body if a.ndim == 2 else body.reshape(a.shape)

    def damage(self) -> str:
        """Describes any input or guard that changed, '' if none."""
        return "; ".join(f"input {name} or its guards changed" for name, raw, before
                         in self._items if not np.array_equal(raw, before))


class Target:
    """A named engine plus the guarded case runner every suite uses."""

    def __init__(self, name: str, engine: Engine) -> None:
        self.name = name
        self.engine = engine
        self._info: TargetInfo | None = None

    def info(self) -> TargetInfo:
        if self._info is None:
            self._info = self.engine.info(self.name)
        return self._info

    @property
    def emulated(self) -> bool:
        return bool(getattr(self.engine, "emulated", False))

    def _realization(self, name: str) -> api.Realization:
        for r in self.info().realizations:
            if r.name == name:
                return r
        raise InvalidArgument(f"realization: {name!r} is not available on {self.name}",
                              "realization")

    @staticmethod
    def _forced(selector: api.Selector | None, realization: str | None) -> api.Selector:
        """The selector with `realization` forced (None: the selector's own choice,
        e.g. its dispatch table or the default order)."""
        sel = selector or api.Selector()
        if realization is None:
            return sel
        return replace(sel, force=realization)

    def gemm_problems(self, case: GemmCase, inp: GemmInputs, realization: api.Realization,
                      sel: api.Selector, bufs: list[GuardedBuffer],
                      guards: GuardedInputs | None = None,
                      guard: str | None = None) -> list[api.RawProblem]:
        """The raw problems of a case, B packed as the case asks (native packing
        in the realization's backend, on this target); with guards, every input
        is a guarded copy, and with `guard` a plugin's packer reads B and the
        bias against guard pages as its kernel does."""
        problems = []
        for i in range(case.batch):
            a, b, bias = inp.a[i], inp.b[i], inp.bias[i]
            if guards is not None:
                a, b = guards.copy(f"A[{i}]", a), guards.copy(f"B[{i}]", b)
                bias = guards.copy(f"bias[{i}]", bias)
                assert a is not None and b is not None
            p = api.RawProblem(a=a, lda=a.strides[0] // 2, b=b, ldb=b.strides[0] // 2,
                               c=bufs[i].view, ldc=case.ldc, bias=bias)
            if inp.clamp is not None:
                p.clamp_min, p.clamp_max = inp.clamp
            if case.b_form in ("packed", "native"):
                native = case.b_form == "native"
                # a plugin whose packer takes no bias packs without one; its call takes the
                # bias separately ("at_call") or the case does not apply ("none")
                inside = realization.native_bias == "inside"
                packed = (self.pack_plugin(realization.name, b, bias if inside else None,
                                           guard=guard)
                          if native and realization.is_plugin else
                          pack(self.engine, b, realization.backend if native else None,
                               bias if native else None, sel))
                p.b, p.ldb, p.b_size = packed, 0, packed.size
                p.b_is_packed, p.b_is_backend_native_packed = True, native
                if native:
                    p.bias = bias if realization.native_bias == "at_call" else None
            problems.append(p)
        return problems

    def time_gemm(self, case: GemmCase, inp: GemmInputs, realization: str, timing: Timing,
                  selector: api.Selector | None = None) -> tuple[CallResult, CallResult | None]:
        """Times the kernel natively, and packing B on its own when B is packed."""
        sel = self._forced(selector, realization)
        r = self._realization(realization)
        bufs = [GuardedBuffer(case.m, case.n, case.ldc) for _ in range(case.batch)]
        problems = self.gemm_problems(case, inp, r, sel, bufs)
        res = self.engine.gemm_raw(case.m, case.n, case.k, problems, sel, timing)
        packing = None
        if case.b_form in ("packed", "native"):
            packing = self.time_packing(case, inp, r, timing, sel)
        return res, packing

    def pack_plugin(self, realization: str, b: np.ndarray, bias: np.ndarray | None,
                    fill: int | None = None, guard: str | None = None) -> np.ndarray:
        """B [K, N] packed by a plugin realization's own packer, on this target
        (into a destination filled with the byte `fill`, when given; with its
        inputs against guard pages, when `guard` is given and the engine can)."""
        if b.dtype != np.float16 or b.ndim != 2 or b.strides[1] != 2:
            raise InvalidArgument("B: must be a 2-D float16 array with contiguous rows", "B")
        k, n = b.shape
        if guard is not None and self._pages(realization, guard):
            return self.engine.pack_plugin(realization, n, k, b, b.strides[0] // 2, bias, None,
                                           fill, guard)
        if fill is None:
            return self.engine.pack_plugin(realization, n, k, b, b.strides[0] // 2, bias)
        return self.engine.pack_plugin(realization, n, k, b, b.strides[0] // 2, bias, None, fill)

    def pack_plugin_lhs(self, realization: str, a: np.ndarray, fill: int | None = None
                        ) -> np.ndarray:
        """A [M, K] packed by a plugin realization's LHS packer, on this target."""
        if a.dtype != np.float16 or a.ndim != 2 or a.strides[1] != 2:
            raise InvalidArgument("A: must be a 2-D float16 array with contiguous rows", "A")
        m, k = a.shape
        return self.engine.pack_plugin_lhs(realization, m, k, a, a.strides[0] // 2, fill)

    def time_packing(self, case: GemmCase, inp: GemmInputs, r: api.Realization,
                     timing: Timing, sel: api.Selector) -> CallResult:
        """Times packing B on its own: portable, the backend's native layout, or a
        plugin realization's own packer."""
        native = case.b_form == "native"
        b = inp.b[0]
        if native and r.is_plugin:
            return self.engine.time_pack_plugin(r.name, case.n, case.k, b, b.strides[0] // 2,
                                                inp.bias[0] if r.native_bias == "inside"
                                                else None, timing)
        return self.engine.time_pack(r.backend if native else None, case.n, case.k, b,
                                     b.strides[0] // 2, inp.bias[0] if native else None,
                                     timing, sel)

    def time_conv(self, case: ConvCase, inp: ConvInputs, realization: str, timing: Timing,
                  selector: api.Selector | None = None) -> CallResult:
        sel = self._forced(selector, realization)
        out = np.empty((case.n, case.out_h, case.out_w, case.c_out), np.float16)
        params = api.ConvParams(case.stride, case.pad, case.dilation, case.groups, inp.clamp)
        desc = ConvDesc.from_shapes(inp.x.shape, inp.w.shape, params)
        return self.engine.conv_raw(desc, np.ascontiguousarray(inp.x),
                                    np.ascontiguousarray(inp.w), inp.bias, out, sel, timing)

    def _pages(self, realization: str, guard: str | None) -> bool:
        """Does this call put its inputs against guard pages? (asked for, and
        the engine can for this realization: a worker)"""
        check = getattr(self.engine, "input_guards", None)
        return guard is not None and check is not None and check(realization)

    def run_gemm(self, case: GemmCase, inp: GemmInputs, realization: str,
                 selector: api.Selector | None = None, force: bool = True,
                 guard: str | None = None) -> Outcome:
        """Runs a case with `realization` forced; with force=False the selector
        chooses (realization then only decides the backend that packs B).
        guard ("end", "start"): on an engine that can, every input lies
        against an inaccessible page at that end (GuardedInputs)."""
        sel = self._forced(selector, realization if force else None)
        bufs = [GuardedBuffer(case.m, case.n, case.ldc) for _ in range(case.batch)]
        pages = self._pages(realization, guard)
        guards = GuardedInputs(pages)
        try:
            r = self._realization(realization)
            problems = self.gemm_problems(case, inp, r, sel, bufs, guards,
                                          guard if pages else None)
            res = (self.engine.gemm_raw(case.m, case.n, case.k, problems, sel, guard=guard)
                   if pages else self.engine.gemm_raw(case.m, case.n, case.k, problems, sel))
        except KbenchError as exc:
            damage = "; ".join(d for d in (*(b.damage() for b in bufs), guards.damage()) if d)
            if not damage and not all(b.untouched() for b in bufs):
                damage = "the output was written although the call failed"
            self._discard_if(damage)
            return Outcome([], None, exc, damage)
        damage = "; ".join([f"problem {i}: {d}" for i, b in enumerate(bufs) if (d := b.damage())]
                           + ([d] if (d := guards.damage()) else []))
        self._discard_if(damage)
        return Outcome([b.view.copy() for b in bufs], res.realization, None, damage, res.ran,
                       res.heap)

    def _discard_if(self, damage: str) -> None:
        """A call that wrote outside its buffers: the process that ran it is
        discarded (a worker; the in-process engine has nothing to discard)."""
        discard = getattr(self.engine, "discard", None)
        if damage and discard is not None:
            discard()

    def run_conv(self, case: ConvCase, inp: ConvInputs, realization: str,
                 selector: api.Selector | None = None, force: bool = True,
                 guard: str | None = None) -> Outcome:
        sel = self._forced(selector, realization if force else None)
        shape = (case.n, case.out_h, case.out_w, case.c_out)
        count = int(np.prod(shape))
        buf = GuardedBuffer(1, count, count)
        out = buf.view.reshape(shape)
        params = api.ConvParams(case.stride, case.pad, case.dilation, case.groups, inp.clamp)
        pages = self._pages(realization, guard)
        guards = GuardedInputs(pages)
        try:
            desc = ConvDesc.from_shapes(inp.x.shape, inp.w.shape, params)
            args = (desc, guards.copy("input", inp.x), guards.copy("filter", inp.w),
                    guards.copy("bias", inp.bias), out, sel)
            res = (self.engine.conv_raw(*args, guard=guard) if pages
                   else self.engine.conv_raw(*args))
        except KbenchError as exc:
            damage = "" if buf.untouched() else "the output was written although the call failed"
            damage = "; ".join(d for d in (damage, guards.damage()) if d)
            self._discard_if(damage)
            return Outcome([], None, exc, damage)
        damage = "; ".join(d for d in (buf.damage(), guards.damage()) if d)
        self._discard_if(damage)
        return Outcome([out.copy()], res.realization, None, damage, res.ran, res.heap)

    def close(self) -> None:
        self.engine.close()


# ---- target specs -------------------------------------------------------------------


@dataclass(frozen=True)
class QemuSpec:
    cpu: str = "max"
    svl: int | None = None  # bits
    isa: str | None = None  # KBENCH_ISA_CAP inside the worker
    kind: str = "qemu"  # or "qemu-python"
    fa64: bool = True  # False: an SME CPU without FEAT_SME_FA64 (sme_fa64=off)
    sme: bool = True  # False: max without SME (sme=off): SVE2.1 and no SME
    vl: int | None = None  # the SVE vector length in bits (sve-default-vector-length)

    @property
    def qemu_cpu(self) -> str:
        """The -cpu argument: the model, SME off, the SVL and SVE vector length in
        bytes, FA64 off, as asked."""
        return (self.cpu + ("" if self.sme else ",sme=off")
                + (f",sme-default-vector-length={self.svl // 8}" if self.svl else "")
                + (f",sve-default-vector-length={self.vl // 8}" if self.vl else "")
                + ("" if self.fa64 else ",sme_fa64=off"))

    @property
    def name(self) -> str:
        s = f"{self.kind}:cpu={self.cpu}"
        if not self.sme:
            s += ":sme=off"
        if self.svl:
            s += f":svl={self.svl}"
        if self.vl:
            s += f":vl={self.vl}"
        if self.isa:
            s += f":isa={self.isa}"
        if not self.fa64:
            s += ":fa64=off"
        return s


QEMU_OPTIONS = ("cpu", "sme", "svl", "vl", "isa", "fa64")


def _bits(values: dict[str, str], key: str, what: str, cpu: str) -> int | None:
    """A vector length option (svl=, vl=): one of VL_BITS, on cpu=max only."""
    if key not in values:
        return None
    if not values[key].isdigit() or int(values[key]) not in VL_BITS:
        raise InvalidArgument(f"target: {key} must be one of {VL_BITS} bits", "target")
    if cpu != "max":
        raise InvalidArgument(f"target: {key}= needs cpu=max (only it takes any {what}), "
                              f"not {cpu}", "target")
    return int(values[key])


def _switch(values: dict[str, str], key: str, cpu: str) -> bool:
    """An SME switch of max (sme=, fa64=): on (the default) or off, off on cpu=max only."""
    value = values.get(key, "on")
    if value not in ("on", "off"):
        raise InvalidArgument(f"target: {key} must be on or off, not {value!r}", "target")
    if value == "off" and cpu != "max":
        raise InvalidArgument(f"target: {key}=off needs cpu=max (only it has SME), not {cpu}",
                              "target")
    return value == "on"


def parse_qemu(spec: str) -> QemuSpec:
    parts = spec.split(":")
    if parts[0] not in ("qemu", "qemu-python"):
        raise InvalidArgument(f"target: {spec!r} is not a qemu target", "target")
    values: dict[str, str] = {}
    for p in parts[1:]:
        key, sep, value = p.partition("=")
        if not sep or key not in QEMU_OPTIONS or not value:
            raise InvalidArgument(f"target: {p!r} in {spec!r}: expected cpu=MODEL, sme=off, "
                                  "svl=BITS, vl=BITS, isa=CAP or fa64=off", "target")
        values[key] = value
    cpu = values.get("cpu", "max")
    if cpu not in QEMU_MODELS:
        raise InvalidArgument(f"target: cpu {cpu!r} is not one of {', '.join(QEMU_MODELS)}",
                              "target")
    sme = _switch(values, "sme", cpu)
    svl = _bits(values, "svl", "streaming vector length", cpu)
    if svl and not sme:
        raise InvalidArgument("target: svl= sets the SME streaming vector length, and sme=off "
                              "leaves no SME (vl= sets the SVE vector length)", "target")
    vl = _bits(values, "vl", "SVE vector length", cpu)
    isa = values.get("isa")
    if isa is not None and isa not in api.ISA_LEVELS:
        raise InvalidArgument(f"target: isa must be one of {', '.join(api.ISA_LEVELS)}",
                              "target")
    if isa in SME_CLASSES and not sme:
        raise InvalidArgument(f"target: isa={isa} caps at an SME class, and sme=off leaves no "
                              "SME (cap at fhm, sve2 or sve2p1)", "target")
    fa64 = _switch(values, "fa64", cpu)
    if not fa64 and not sme:
        raise InvalidArgument("target: fa64=off turns off an SME feature, and sme=off leaves "
                              "no SME", "target")
    return QemuSpec(cpu, svl, isa, parts[0], fa64, sme, vl)


def qemu_worker_spec(q: QemuSpec, plugins: Sequence[str] = (),
                     call_timeout: float | None = None,
                     coverage_dir: Path | None = None) -> WorkerSpec:
    """The aarch64 worker under QEMU: the static one, or with plugins the
    dynamically linked one with the cross sysroot as its root (-L), so that its
    glibc can dlopen an aarch64 plugin (kbench.targets.crossbuild). With
    coverage_dir, QEMU logs the blocks it translates there
    (kbench.targets.coverage)."""
    cpu = q.qemu_cpu
    env = {"KBENCH_ISA_CAP": q.isa} if q.isa else {}
    # the guest's environment: only the ISA cap is passed in
    cmd = [find_qemu()]
    if plugins:
        cmd += ["-L", str(SYSROOT_AARCH64)]
    cmd += ["-cpu", cpu]
    if env:
        cmd += ["-E", f"KBENCH_ISA_CAP={q.isa}"]
    if coverage_dir is not None:
        from kbench.targets.coverage import qemu_flags
        coverage_dir.mkdir(parents=True, exist_ok=True)
        cmd += qemu_flags(coverage_dir)
    cmd.append(worker_binary("aarch64-dyn" if plugins else "aarch64"))
    return WorkerSpec(cmd, {}, emulated=True, bounds=CallBounds(True, call_timeout),
                      plugins=[_absolute(p) for p in plugins], arch="aarch64",
                      coverage_dir=str(coverage_dir) if coverage_dir is not None else None)


def _absolute(path: str) -> str:
    """A plugin path as the worker process should see it (absolute; {arch} kept)."""
    return path if os.path.isabs(path) else os.path.abspath(path)


def qemu_python_spec(q: QemuSpec, plugins: Sequence[str] = (),
                     call_timeout: float | None = None) -> PySpec:
    """The emulated aarch64 CPython of kbench.targets.pyroot (installed on first use)."""
    from kbench.targets import pyroot
    root, reason = pyroot.status()
    if root is None:
        if envvars.flag(os.environ, "KBENCH_NO_INSTALL"):
            raise InvalidArgument(f"target: the emulated Python is not installed ({reason}); "
                                  "run `python -m kbench.targets.pyroot`", "target")
        root = pyroot.ensure(progress=lambda msg: print(f"kbench: {msg}", file=sys.stderr))
    env = root.env()
    if q.isa:
        env["KBENCH_ISA_CAP"] = q.isa
    return PySpec(root.argv(find_qemu(), q.qemu_cpu), env, q.qemu_cpu, q.svl,
                  bounds=CallBounds(True, call_timeout, PY_SLOWDOWN),
                  extra={"python_root": str(root.root)},
                  plugins=[expand(_absolute(p), "aarch64") for p in plugins])


# the kinds of target spec (what comes before the first ":")
TARGET_KINDS = ("host", "qemu", "qemu-python", "worker", "ssh", "adb")


def parse_target(spec: str, plugins: Sequence[str] = (), *, plugin_in_process: bool = False,
                 call_timeout: float | None = None, coverage_dir: Path | None = None) -> Target:
    """The target for a spec; `plugins` are plugin library paths ({arch} is
    replaced by the target's architecture) that the target loads: on the
    host in the host worker (kbench.targets.isolated), or with
    plugin_in_process into this process (unsafe: for debugging).
    `call_timeout` (seconds) replaces the time bound of every request to a
    worker process (kbench.targets.timeouts). `coverage_dir`: a qemu: target
    logs the code its workers run there (kbench.targets.coverage); other
    targets ignore it (coverage_supported says which take it)."""
    if call_timeout is not None and not call_timeout > 0:
        raise InvalidArgument(f"call timeout: must be a positive number of seconds, not "
                              f"{call_timeout!r}", "call_timeout")
    if spec == "host":
        if plugins and not plugin_in_process:
            return Target("host", IsolatedHostEngine(plugins, CallBounds(False, call_timeout)))
        return Target("host", InProcessEngine(plugins=plugins))
    if spec == "qemu" or spec.startswith("qemu:"):
        q = parse_qemu(spec)
        wspec = qemu_worker_spec(q, plugins, call_timeout, coverage_dir)
        if plugins and coverage_dir is None and whatran.enabled():
            # a plugin's calls say which code ran (kbench.targets.whatran)
            return Target(q.name, whatran.TracedWorkerEngine(wspec))
        return Target(q.name, WorkerEngine(wspec))
    if spec == "qemu-python" or spec.startswith("qemu-python:"):
        q = parse_qemu(spec)
        return Target(q.name, PyWorkerEngine(qemu_python_spec(q, plugins, call_timeout)))
    if spec.startswith(("ssh:", "adb:")) or spec == "adb":
        name, engine = remote_target_engine("adb:" if spec == "adb" else spec, tuple(plugins))
        engine.bounds = CallBounds(engine.emulated, call_timeout)
        return Target(name, engine)
    if spec.startswith("worker:"):
        rest = spec[len("worker:"):]
        arch = None
        if rest == "host":
            cmd = [worker_binary("host")]
            arch = host_arch()
        else:
            try:
                cmd = shlex.split(rest)
            except ValueError as exc:  # e.g. an unbalanced quote
                raise InvalidArgument(f"target: cannot read the command line of {spec!r}: "
                                      f"{exc}", "target") from None
            if not cmd:
                raise InvalidArgument("target: worker: needs a command line", "target")
        return Target(spec, WorkerEngine(WorkerSpec(cmd, {}, emulated=False,
                                                    bounds=CallBounds(False, call_timeout),
                                                    plugins=[_absolute(p) for p in plugins],
                                                    arch=arch)))
    kind, _, rest = spec.partition(":")
    close = difflib.get_close_matches(kind, TARGET_KINDS, n=1, cutoff=0.6)
    hint = (f" (did you mean {close[0] + (':' + rest if rest else '')!r}?)"
            if close and close[0] != kind else "")
    raise InvalidArgument(f"target: {spec!r} is not a known target{hint} (host, "
                          "qemu[:cpu=MODEL][:sme=off][:svl=BITS][:vl=BITS][:isa=CAP][:fa64=off], "
                          "qemu-python[:cpu=MODEL][:sme=off][:svl=BITS][:vl=BITS][:fa64=off], "
                          "worker:host, "
                          "worker:CMD, ssh:[user@]host[:port][,svl=BITS][,vl=BITS][,isa=CAP], "
                          "adb:[SERIAL])",
                          "target")
