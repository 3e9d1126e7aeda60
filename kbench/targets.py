"""Targets compute and time; the host owns inputs, the oracle and verdicts.

A target runs one GEMM or convolution case with a forced realization and
returns the outputs and the realization that actually ran. Every output
buffer sits between guard regions, and GEMM outputs have their ldc padding
checked too: a kernel that writes outside its output is caught here."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from . import api
from .errors import InvalidArgument, KbenchError
from .inputs import ConvInputs, GemmInputs
from .problems import ConvCase, GemmCase

GUARD = 64  # FP16 elements on each side of an output
SENTINEL = np.uint16(0x7E5A)  # a NaN payload no kernel produces


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
    realizations: list[api.Realization]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "emulated": self.emulated, "arch": self.arch,
            "cpu_features": self.cpu_features, "sme_vector_bits": self.sme_vector_bits,
            "isa": self.isa, "library_version": self.library_version,
            "realizations": [r.to_dict() for r in self.realizations], **self.extra,
        }


@dataclass
class Outcome:
    outputs: list[np.ndarray]
    ran: api.Realization | None
    error: KbenchError | None = None
    guard_detail: str = ""  # non-empty: something outside the output changed


class Target(Protocol):
    name: str

    def info(self) -> TargetInfo: ...

    def run_gemm(self, case: GemmCase, inp: GemmInputs, realization: str,
                 selector: api.Selector | None = None) -> Outcome: ...

    def run_conv(self, case: ConvCase, inp: ConvInputs, realization: str,
                 selector: api.Selector | None = None) -> Outcome: ...

    def close(self) -> None: ...


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


def gemm_operands(case: GemmCase, inp: GemmInputs, realization: api.Realization,
                  buffers: list[GuardedBuffer], nat: api.Native | None = None,
                  selector: api.Selector | None = None) -> list[api.GemmOperands]:
    """Operands for one case in its B form; native packing uses the realization's backend."""
    ops = []
    for i in range(case.batch):
        b: np.ndarray | api.PackedB = inp.b[i]
        bias = inp.bias[i]
        if case.b_form == "packed":
            b = api.pack_b(inp.b[i], nat=nat)
        elif case.b_form == "native":
            b = api.pack_b(inp.b[i], backend=realization.backend, bias=bias, nat=nat,
                           selector=selector)
            bias = None
        ops.append(api.GemmOperands(inp.a[i], b, buffers[i].view, bias, inp.clamp))
    return ops


class InProcessTarget:
    """The cffi module built for this machine."""

    name = "host"

    def __init__(self, native_module: str | None = None) -> None:
        self.nat = api.load(native_module) if native_module else api.load()

    def info(self) -> TargetInfo:
        cpu = api.cpu_info(self.nat)
        return TargetInfo(
            name=self.name, kind="in-process", emulated=False, arch=cpu.arch,
            cpu_features=list(cpu.features), sme_vector_bits=cpu.sme_vector_bits, isa=cpu.isa,
            library_version=api.version(self.nat),
            realizations=api.realizations(nat=self.nat),
            extra={"machine": platform.machine(), "processor": platform.processor()},
        )

    def _realization(self, name: str) -> api.Realization:
        for r in api.realizations(nat=self.nat):
            if r.name == name:
                return r
        raise InvalidArgument(f"realization: {name!r} is not available on {self.name}",
                              "realization")

    def run_gemm(self, case: GemmCase, inp: GemmInputs, realization: str,
                 selector: api.Selector | None = None) -> Outcome:
        sel = selector or api.Selector()
        sel = api.Selector(sel.disabled, sel.isa_cap, realization, sel.threads, sel.trust_payload)
        bufs = [GuardedBuffer(case.m, case.n, case.ldc) for _ in range(case.batch)]
        try:
            ops = gemm_operands(case, inp, self._realization(realization), bufs, self.nat, sel)
            res = api.gemm_batch(ops, selector=sel, nat=self.nat)
        except KbenchError as exc:
            damage = "; ".join(d for d in (b.damage() for b in bufs) if d)
            if not damage and not all(b.untouched() for b in bufs):
                damage = "the output was written although the call failed"
            return Outcome([], None, exc, damage)
        damage = "; ".join(f"problem {i}: {d}" for i, b in enumerate(bufs) if (d := b.damage()))
        return Outcome([b.view.copy() for b in bufs], res.realization, None, damage)

    def run_conv(self, case: ConvCase, inp: ConvInputs, realization: str,
                 selector: api.Selector | None = None) -> Outcome:
        sel = selector or api.Selector()
        sel = api.Selector(sel.disabled, sel.isa_cap, realization, sel.threads, sel.trust_payload)
        shape = (case.n, case.out_h, case.out_w, case.c_out)
        cols = int(np.prod(shape))
        buf = GuardedBuffer(1, cols, cols)
        out = buf.raw[GUARD:GUARD + cols].view(np.float16).reshape(shape)
        params = api.ConvParams(case.stride, case.pad, case.dilation, case.groups, inp.clamp)
        try:
            res = api.conv2d(inp.x, inp.w, inp.bias, params, out=out, selector=sel, nat=self.nat)
        except KbenchError as exc:
            damage = "" if buf.untouched() else "the output was written although the call failed"
            return Outcome([], None, exc, damage)
        return Outcome([out.copy()], res.realization, None, buf.damage())

    def close(self) -> None:
        pass


def parse_target(spec: str) -> Target:
    """`host` now; worker targets (`qemu[:cpu=MODEL][:svl=BITS]`) come with the worker."""
    if spec == "host":
        return InProcessTarget()
    raise InvalidArgument(f"target: {spec!r} is not a known target (available: host)", "target")
