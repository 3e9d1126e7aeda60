"""Plugins in this process: loading a plugin library into the native library
(kb_plugin_load, see native/include/kbench_plugin.h), what a loaded plugin
declares, and packing B with a plugin realization's own packer.

A load that fails raises the KbenchError of the native status with a
message naming the file and the reason (wrong architecture, missing symbol,
newer ABI, an ISA this CPU lacks, a malformed table). A loaded plugin stays
loaded for the life of the process; its realizations are listed and run only
under a Selector with `plugins=True`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kbench.errors import InvalidArgument
from kbench.native import api
from kbench.native.loader import Native, load

FORMS = {1: "whole-call", 2: "micro-kernel"}
# the operands a realization may declare an overread allowance for (ABI 3, overread[],
# KB_PLUGIN_OPERAND_*), in index order
OPERANDS = ("A", "B", "packed B", "bias", "packed LHS", "indirection table")
# its declaration flags (ABI 3, kbench_plugin.h)
PACK_NO_BIAS, PACK_BIAS_AT_CALL, PACK_PADDING_UNSPECIFIED, SCRATCH_CAPPED = 1, 2, 4, 8


@dataclass(frozen=True)
class PluginRealizationInfo:
    """One declared realization of a plugin, as kbench sees it."""

    name: str  # "<plugin>.<realization>"
    op: str
    form: str  # whole-call | micro-kernel
    isa: str
    thread_safe: bool
    bias: str  # first | last: where the bias enters the accumulation chain
    usable: bool  # False: this CPU lacks its ISA (see note)
    note: str = ""
    nan_clamp: str = "propagate"  # propagate | to_min | to_max (ABI 2; api.NAN_CLAMPS)
    rhs_layout: str = ""  # the published layout of its packed B, "" if none declared
    lhs_layout: str = ""  # the same for its packed LHS
    # a usable micro-kernel GEMM's blocking (get_mr, get_nr, get_kr), 0 otherwise
    mr: int = 0
    nr: int = 0
    kr: int = 0
    # what it declares it does on purpose (ABI 3; kbench_plugin.h): its packer takes no
    # bias, a call with its packed B takes the bias separately, its packer leaves padding
    # bytes as they are; bytes it may read past the end of each operand (OPERANDS order);
    # the heap it may keep after a call per thread (None: not declared); the glob patterns
    # of the functions its calls must do their work in
    packs_bias: bool = True
    bias_at_call: bool = False
    padding_unspecified: bool = False
    overread: tuple[int, ...] = (0,) * len(OPERANDS)
    scratch_cap: int | None = None
    expect_symbols: tuple[str, ...] = ()

    @property
    def native_bias(self) -> str:
        """How its packed B and a bias go together (api.Realization.native_bias)."""
        if self.packs_bias:
            return "inside"
        return "at_call" if self.bias_at_call else "none"

    def allowance(self, operand: str) -> int:
        """Bytes it may read past the end of an operand (OPERANDS)."""
        return self.overread[OPERANDS.index(operand)]

    @classmethod
    def declared(cls, flags: int, overread: list[int], scratch_cap: int,
                 expect: str) -> dict[str, Any]:
        """The keyword arguments of the ABI 3 declarations as the library gives them."""
        return {"packs_bias": not flags & PACK_NO_BIAS,
                "bias_at_call": bool(flags & PACK_BIAS_AT_CALL),
                "padding_unspecified": bool(flags & PACK_PADDING_UNSPECIFIED),
                "overread": tuple(int(v) for v in overread[:len(OPERANDS)]),
                "scratch_cap": int(scratch_cap) if flags & SCRATCH_CAPPED else None,
                "expect_symbols": tuple(expect.split())}


@dataclass(frozen=True)
class PluginInfo:
    """A loaded plugin."""

    name: str
    version: str
    path: str
    abi_version: int
    description: str = ""
    realizations: tuple[PluginRealizationInfo, ...] = field(default_factory=tuple)

    @property
    def label(self) -> str:
        """How verdicts and reports name it: "<name> <version>"."""
        return f"{self.name} {self.version}"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["realizations"] = [asdict(r) for r in self.realizations]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PluginInfo:
        reals = tuple(PluginRealizationInfo(**{
            **r, **{k: tuple(r[k]) for k in ("overread", "expect_symbols") if k in r}})
            for r in d.get("realizations", []))
        return cls(d["name"], d["version"], d["path"], int(d["abi_version"]),
                   d.get("description", ""), reals)


def _text(nat: Native, chars: Any) -> str:
    return nat.ffi.string(chars).decode(errors="replace")


def _info(nat: Native, index: int, c: Any) -> PluginInfo:
    reals = []
    for i in range(int(c.realizations)):
        r = nat.ffi.new("kb_plugin_realization_info *")
        err = nat.new_error()
        nat.check(nat.lib.kb_plugin_realization_get(index, i, r, err), err)
        reals.append(PluginRealizationInfo(
            name=_text(nat, r.name), op=api.OPS[r.op], form=FORMS.get(r.form, str(r.form)),
            isa=api.ISA_LEVELS[r.isa], thread_safe=bool(r.thread_safe),
            bias="first" if r.bias_first else "last", usable=bool(r.usable),
            note=_text(nat, r.note), nan_clamp=api.NAN_CLAMPS[r.nan_clamp],
            rhs_layout=_text(nat, r.rhs_layout), lhs_layout=_text(nat, r.lhs_layout),
            mr=int(r.mr), nr=int(r.nr), kr=int(r.kr),
            **PluginRealizationInfo.declared(int(r.flags), list(r.overread), int(r.scratch_cap),
                                             _text(nat, r.expect_symbols))))
    return PluginInfo(_text(nat, c.name), _text(nat, c.version), _text(nat, c.path),
                      int(c.abi_version), _text(nat, c.description), tuple(reals))


def loaded(nat: Native | None = None) -> list[PluginInfo]:
    """Every plugin loaded into this process, in load order."""
    nat = nat or load()
    out = []
    for i in range(int(nat.lib.kb_plugin_count())):
        c = nat.ffi.new("kb_plugin_info *")
        err = nat.new_error()
        nat.check(nat.lib.kb_plugin_get(i, c, err), err)
        out.append(_info(nat, i, c))
    return out


def load_plugin(path: str, nat: Native | None = None) -> PluginInfo:
    """Loads a plugin library (again: returns the one already loaded)."""
    nat = nat or load()
    c = nat.ffi.new("kb_plugin_info *")
    err = nat.new_error()
    nat.check(nat.lib.kb_plugin_load(str(path).encode(), c, err), err)
    name = _text(nat, c.name)
    for p in loaded(nat):
        if p.name == name:
            return p
    raise InvalidArgument(f"plugin: {path} loaded but is not listed", "plugin")


def pack_raw(realization: str, n: int, k: int, b: np.ndarray | None, ldb: int,
             bias: np.ndarray | None = None, dst_size: int | None = None,
             nat: Native | None = None, fill: int = 0) -> np.ndarray:
    """B [K, N] (rows ldb apart) packed by a plugin realization's own packer,
    into a destination filled with the byte `fill` first."""
    nat = nat or load()
    n, k, ldb = api._size_arg(n, "N"), api._size_arg(k, "K"), api._size_arg(ldb, "ldb")
    name = realization.encode()
    err = nat.new_error()
    if dst_size is None:
        size = nat.ffi.new("size_t *")
        nat.check(nat.lib.kb_pack_b_plugin_size(name, n, k, size, err), err)
        dst_size = int(size[0])
    dst = np.full(max(dst_size, 1), fill & 0xFF, dtype=np.uint8)
    bp = nat.ffi.NULL if b is None else api._ptr(nat, api.in_buffer(b, "B"))
    biasp = nat.ffi.NULL if bias is None else api._ptr(nat, api.in_buffer(bias, "bias"))
    nat.check(nat.lib.kb_pack_b_plugin(name, n, k, bp, ldb, biasp, api._ptr(nat, dst, "void *"),
                                       dst_size, err), err)
    return dst[:dst_size]


def pack_lhs_raw(realization: str, m: int, k: int, a: np.ndarray, lda: int,
                 nat: Native | None = None, fill: int = 0) -> np.ndarray:
    """A [M, K] (rows lda apart) packed by a plugin realization's LHS packer
    (the micro-kernel form with a packed LHS), into a destination filled with
    the byte `fill` first."""
    nat = nat or load()
    m, k, lda = api._size_arg(m, "M"), api._size_arg(k, "K"), api._size_arg(lda, "lda")
    name = realization.encode()
    err = nat.new_error()
    size = nat.ffi.new("size_t *")
    nat.check(nat.lib.kb_pack_lhs_plugin_size(name, m, k, size, err), err)
    dst = np.full(max(int(size[0]), 1), fill & 0xFF, dtype=np.uint8)
    nat.check(nat.lib.kb_pack_lhs_plugin(name, m, k, api._ptr(nat, api.in_buffer(a, "A")), lda,
                                         api._ptr(nat, dst, "void *"), int(size[0]), err), err)
    return dst[:int(size[0])]


def time_pack_raw(realization: str, n: int, k: int, b: np.ndarray, ldb: int,
                  bias: np.ndarray | None, timing: Any, nat: Native | None = None
                  ) -> tuple[list[float], int]:
    """kb_time_pack_b_plugin (timing: a kb_timing*): time per call of each round
    (ns) and the calls per round."""
    nat = nat or load()
    dst = pack_raw(realization, n, k, b, ldb, bias, None, nat)
    err = nat.new_error()
    times = nat.ffi.new("double[]", max(int(timing.rounds), 1))
    reps = nat.ffi.new("uint32_t *")
    nat.check(nat.lib.kb_time_pack_b_plugin(
        realization.encode(), n, k, api._ptr(nat, b), ldb,
        nat.ffi.NULL if bias is None else api._ptr(nat, bias), api._ptr(nat, dst, "void *"),
        dst.size, timing, times, reps, err), err)
    return list(times)[:timing.rounds], int(reps[0])


__all__ = ["FORMS", "PluginInfo", "PluginRealizationInfo", "load_plugin", "loaded", "pack_raw",
           "time_pack_raw"]
