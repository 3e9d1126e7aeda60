"""The Python API over the native library: numpy arrays in, numpy arrays out.

Arrays are FP16 (numpy.float16). A 2-D operand may be a strided view whose
rows are further apart than their length: its row stride becomes lda/ldb/ldc.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from kbench.errors import (
    InvalidArgument,
    InvalidPackedB,
    KbenchError,
    OutOfMemory,
    SizeOverflow,
)
from kbench.native import envvars, sliced, slices
from kbench.native import limits as call_limits
from kbench.native import loader as native_loader
from kbench.native import table as table_rules
from kbench.native.isa import ISA_LEVELS
from kbench.native.limits import Limits
from kbench.native.loader import Native

BACKENDS = ("scalar", "neon", "sme", "sve")
ACCUM = ("fp32", "fp16")
OPS = ("gemm", "conv2d")
BFORMS = {1: "plain", 2: "packed", 4: "native"}
LAYOUTS = {1: "portable", 2: "scalar_f16p16x1b", 3: "neon", 4: "sme_x16p2vlx2b",
           5: "sve_x16p4vlx2b"}
CONV_CLASSES = ("any", "3x3s1")
ERROR_MODELS = ("gemm", "winograd_f2x2_3x3", "gemm_bias_first")
# what a realization's clamp makes of a NaN result (kb_realization.nan_clamp; a plugin's
# KB_PLUGIN_NAN_* declaration): it stays NaN, or becomes clamp_min / clamp_max
NAN_CLAMPS = ("propagate", "to_min", "to_max")
CPU_FEATURES = {1: "fp16", 2: "fhm", 4: "sve", 8: "sme", 16: "sme2", 32: "sve2", 64: "sve2p1"}
PLUGIN_BACKEND = "plugin"  # backend of plugin realizations: "plugin:<plugin name>" in Python
# KB_SCRATCH_RETAIN_CAP (kbench.h): the most scratch kbench keeps per thread between calls,
# the cap its own realizations are held to by the scratch check (kbench.harness.scratch)
SCRATCH_RETAIN_CAP = 8 << 20


def load(module: str | None = None) -> Native:
    """The native library (loaded once), after the KBENCH_* variables that
    shape a call were checked (kbench.native.envvars: once per process)."""
    _environment_checked()
    return native_loader.load(module)


@cache
def _environment_checked() -> None:
    import os
    envvars.check_api(os.environ, ISA_LEVELS)


def backend_id(name: str) -> int:
    if name not in BACKENDS:
        raise InvalidArgument(f"backend: {name!r} is not one of {', '.join(BACKENDS)}", "backend")
    return BACKENDS.index(name)


class DispatchTable:
    """A tuned dispatch table (JSON from `kbench tune`). The native library
    checks it against this machine and library version when it is loaded."""

    def __init__(self, text: str, path: str = "") -> None:
        self.text = text
        self.path = path
        self._loaded: dict[int, Any] = {}
        self._refused: dict[int, KbenchError] = {}  # per library: why it was refused
        self._parsed: dict[str, Any] | None = None

    @classmethod
    def from_file(cls, path: str) -> DispatchTable:
        from pathlib import Path
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InvalidArgument(f"table: cannot read {path}: {exc}", "table") from exc
        return cls(table_rules.decode(data, str(path)), str(path))

    def parse(self) -> dict[str, Any]:
        """The table as a dict, read by the native loader's rules
        (kbench.native.table): InvalidArgument naming the field otherwise."""
        if self._parsed is None:
            self._parsed = table_rules.parse(self.text)
        return self._parsed

    def native(self, nat: Native) -> Any:
        """The loaded kb_dispatch_table* for this library (loaded once; a
        refusal is remembered and raised again without reloading)."""
        key = id(nat)
        if key in self._refused:
            exc = self._refused[key]
            raise type(exc)(exc.message, exc.field)
        if key not in self._loaded:
            data = self.text.encode()
            out = nat.ffi.new("kb_dispatch_table **")
            err = nat.new_error()
            try:
                nat.check(nat.lib.kb_load_dispatch_table(data, len(data), out, err), err)
            except KbenchError as exc:
                self._refused[key] = exc
                raise
            self._loaded[key] = nat.ffi.gc(out[0], nat.lib.kb_free_dispatch_table)
        return self._loaded[key]

    def rules(self, nat: Native | None = None) -> int:
        nat = nat or load()
        return int(nat.lib.kb_dispatch_table_rules(self.native(nat)))


@dataclass(frozen=True)
class Selector:
    """Which realizations a call may use."""

    disabled: frozenset[str] = frozenset()
    isa_cap: str | None = None  # one of ISA_LEVELS; None = no cap (KBENCH_ISA_CAP still applies)
    force: str | None = None  # realization name
    threads: int = 1
    verify_payload: bool = False  # also verify a packed B's payload checksum (O(size))
    table: DispatchTable | None = None  # tuned choices per shape class
    plugins: bool = False  # realizations of loaded plugins take part (kbench.native.plugins)
    one_call: bool = False  # a GEMM's micro-kernel once over the whole problem, 1 thread

    def to_c(self, nat: Native) -> tuple[Any, list[Any]]:
        """Returns the kb_selector* and the objects that must outlive it."""
        self.checked()
        sel = nat.ffi.new("kb_selector *")
        nat.lib.kb_selector_default(sel)
        keep: list[Any] = []
        for b in self.disabled:
            sel.disabled_backends |= 1 << backend_id(b)
        if self.isa_cap is not None:
            if self.isa_cap not in ISA_LEVELS:
                raise InvalidArgument(
                    f"selector.isa_cap: {self.isa_cap!r} is not one of {', '.join(ISA_LEVELS)}",
                    "selector.isa_cap",
                )
            # within both this cap and KBENCH_ISA_CAP's (the classes are a tree, not a chain)
            sel.isa_cap = nat.lib.kb_isa_meet(sel.isa_cap, ISA_LEVELS.index(self.isa_cap))
        if self.force is not None:
            name = nat.ffi.new("char[]", self.force.encode())
            keep.append(name)
            sel.force = name
        sel.threads = int(self.threads)
        sel.verify_payload = int(self.verify_payload)
        if self.table is not None:
            ptr = self.table.native(nat)
            keep.append(ptr)
            sel.table = ptr
        sel.plugins = int(self.plugins)
        sel.one_call = int(self.one_call)
        return sel, keep


    def checked(self) -> Selector:
        """Raises InvalidArgument naming the field for a value of the wrong type
        or range (the C selector holds an int for threads, a string for force)."""
        if isinstance(self.disabled, str) or not all(isinstance(b, str) for b in self.disabled):
            raise InvalidArgument(f"selector.disabled: must be a set of backend names, got "
                                  f"{self.disabled!r}", "selector.disabled")
        for b in self.disabled:
            if b not in BACKENDS:
                raise InvalidArgument(f"selector.disabled: {b!r} is not one of "
                                      f"{', '.join(BACKENDS)}", "selector.disabled")
        if self.force is not None and not isinstance(self.force, str):
            raise InvalidArgument(f"selector.force: must be a realization name, got "
                                  f"{self.force!r}", "selector.force")
        if self.force is not None and ("\0" in self.force or len(self.force.encode()) > 255):
            raise InvalidArgument("selector.force: not a realization name (NUL byte or longer "
                                  "than 255 bytes)", "selector.force")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int | np.integer):
            raise InvalidArgument(f"selector.threads: must be an integer, got {self.threads!r}",
                                  "selector.threads")
        if not 0 <= self.threads <= INT_MAX:
            what = "must not be negative" if self.threads < 0 else f"must be at most {INT_MAX}"
            raise InvalidArgument(f"selector.threads: {what}, got {self.threads}",
                                  "selector.threads")
        if self.table is not None and not isinstance(self.table, DispatchTable):
            raise InvalidArgument(f"selector.table: must be a kbench DispatchTable, got "
                                  f"{type(self.table).__name__}", "selector.table")
        return self


INT_MAX = 2**31 - 1  # the C int fields of kb_selector


@dataclass(frozen=True)
class Realization:
    """A way the library computes an operator, and what it declares."""

    name: str
    backend: str
    kernel: str
    op: str
    isa: str
    accum: str
    k_per_rounding: int
    bforms: tuple[str, ...]
    vector_bits: int
    threads: int
    max_m: int = 0  # GEMM shape class: largest M it takes (1 = GEMV), 0 = any
    max_groups: int = 0  # convolution: largest groups it takes, 0 = any
    peer: bool = False  # another library's kernel (kbench.peers), shown for comparison only
    conv_class: str = "any"  # convolution shapes it takes: any | 3x3s1
    error_model: str = "gemm"  # gemm | winograd_f2x2_3x3 | gemm_bias_first
    # cache blocking of the loop around the micro-kernel, 0 = none (whole dimension);
    # K blocks carry partial sums at accumulator precision (no bit changes)
    block_m: int = 0
    block_n: int = 0
    block_k: int = 0
    # a plugin's realization (kbench.native.plugins): "<plugin> <version>"; its name is
    # "<plugin>.<realization>" and its backend "plugin:<plugin>". Never one of ours.
    plugin: str = ""
    nan_clamp: str = "propagate"  # NAN_CLAMPS: what its clamp makes of a NaN result
    # the micro-kernel's steps from its own queries (get_m_step, get_n_step, get_kr)
    # at its vector length, 0 = none reported (kbench.problems.tails)
    m_step: int = 0
    n_step: int = 0
    kr: int = 0
    # a plugin GEMM's packed B and the bias (plugin ABI 3 flags): "inside" (its packer
    # takes the bias), "at_call" (its packer takes none; a call with its packed B takes the
    # bias separately) or "none" (neither: a native-B case with a bias does not apply)
    native_bias: str = "inside"
    # a plugin realization's declared expected symbols (ABI 3 expect_symbols): glob
    # patterns, optionally "<isa class>:pattern" (kbench.targets.whatran)
    expect_symbols: tuple[str, ...] = ()

    @classmethod
    def from_fields(cls, name: str, backend: str, kernel: str, op: int, isa: int, accum: int,
                    k_per_rounding: int, bforms: int, vector_bits: int, threads: int,
                    max_m: int = 0, max_groups: int = 0, peer: bool = False,
                    conv_class: int = 0, error_model: int = 0,
                    blocks: tuple[int, int, int] = (0, 0, 0), nan_clamp: int = 0,
                    steps: tuple[int, int, int] = (0, 0, 0)) -> Realization:
        if backend == PLUGIN_BACKEND:  # the library says "plugin"; the name says whose
            backend = f"{PLUGIN_BACKEND}:{name.split('.', 1)[0]}"
        return cls(
            name=name, backend=backend, kernel=kernel, op=OPS[op], isa=ISA_LEVELS[isa],
            accum=ACCUM[accum], k_per_rounding=int(k_per_rounding) or 1,
            bforms=tuple(v for k, v in BFORMS.items() if bforms & k),
            vector_bits=int(vector_bits), threads=int(threads), max_m=int(max_m),
            max_groups=int(max_groups), peer=bool(peer), conv_class=CONV_CLASSES[conv_class],
            error_model=ERROR_MODELS[error_model], block_m=int(blocks[0]),
            block_n=int(blocks[1]), block_k=int(blocks[2]), nan_clamp=NAN_CLAMPS[nan_clamp],
            m_step=int(steps[0]), n_step=int(steps[1]), kr=int(steps[2]),
        )

    @classmethod
    def from_c(cls, nat: Native, r: Any) -> Realization:
        s = nat.ffi.string
        return cls.from_fields(s(r.name).decode(), s(r.backend).decode(), s(r.kernel).decode(),
                               r.op, r.isa, r.accum, r.k_per_rounding, r.bforms, r.vector_bits,
                               r.threads, r.max_m, r.max_groups, False, r.conv_class,
                               r.error_model, (r.block_m, r.block_n, r.block_k), r.nan_clamp,
                               (r.m_step, r.n_step, r.kr))

    @property
    def is_plugin(self) -> bool:
        """A realization of a loaded plugin (someone else's kernel, never ours)."""
        return self.backend.startswith(PLUGIN_BACKEND + ":")

    @property
    def blocked(self) -> bool:
        """Does the loop around the micro-kernel block any dimension?"""
        return bool(self.block_m or self.block_n or self.block_k)

    def blocking_str(self) -> str:
        """The block sizes, e.g. 'mb=64 nb=256 kb=256' (a dimension not blocked
        is left out), or 'none'."""
        if not self.blocked:
            return "none"
        return " ".join(f"{d}={v}" for d, v in (("mb", self.block_m), ("nb", self.block_n),
                                                 ("kb", self.block_k)) if v)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "backend": self.backend, "kernel": self.kernel, "op": self.op,
            "isa": self.isa, "accum": self.accum, "k_per_rounding": self.k_per_rounding,
            "bforms": list(self.bforms), "vector_bits": self.vector_bits, "threads": self.threads,
            "max_m": self.max_m, "max_groups": self.max_groups, "peer": self.peer,
            "conv_class": self.conv_class, "error_model": self.error_model,
            "block_m": self.block_m, "block_n": self.block_n, "block_k": self.block_k,
            "plugin": self.plugin, "nan_clamp": self.nan_clamp,
            "m_step": self.m_step, "n_step": self.n_step, "kr": self.kr,
            "native_bias": self.native_bias, "expect_symbols": list(self.expect_symbols),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Realization:
        return cls(**{**d, "bforms": tuple(d["bforms"]), "peer": bool(d.get("peer", False)),
                      "expect_symbols": tuple(d.get("expect_symbols", ()))})


@dataclass(frozen=True)
class CpuInfo:
    arch: str
    features: tuple[str, ...]
    sme_vector_bits: int
    isa: str  # the best class (kb_cpu_info.isa: SME's branch over SVE's)
    sve_vector_bits: int = 0


@dataclass(frozen=True)
class PackedB:
    """A packed B buffer (header + payload) as bytes, with what it was packed for."""

    data: np.ndarray = field(repr=False)  # uint8
    n: int
    k: int
    native: bool
    backend: str
    layout: str
    vector_bits: int

    def __post_init__(self) -> None:
        """InvalidPackedB (an InvalidArgument and a ValueError) naming the field
        of the wrong type or range."""
        if not isinstance(self.data, np.ndarray) or self.data.dtype != np.uint8:
            what = (f"a {self.data.dtype} array" if isinstance(self.data, np.ndarray)
                    else type(self.data).__name__)
            _packed_field("data", f"must be a uint8 numpy array, got {what}")
        for name in ("n", "k"):
            value = getattr(self, name)
            if not _is_int(value) or value <= 0:
                _packed_field(name, f"must be a positive integer, got {value!r}")
        for name in ("backend", "layout"):
            if not isinstance(getattr(self, name), str):
                _packed_field(name, f"must be a string, got {getattr(self, name)!r}")
        if not _is_int(self.vector_bits) or self.vector_bits < 0:
            _packed_field("vector_bits", f"must be a non-negative integer, got "
                                         f"{self.vector_bits!r}")


def _is_int(value: Any) -> bool:
    return not isinstance(value, bool | np.bool_) and isinstance(value, int | np.integer)


def _packed_field(name: str, what: str) -> None:
    raise InvalidPackedB(f"PackedB.{name}: {what}", f"PackedB.{name}")


@dataclass(frozen=True)
class GemmResult:
    c: list[np.ndarray]
    realization: Realization


@dataclass(frozen=True)
class ConvResult:
    output: np.ndarray
    realization: Realization


# ---- helpers -----------------------------------------------------------------


def _root_extent(x: np.ndarray) -> tuple[int, int]:
    """The bytes of the memory x is a view of: the extent of the array at the
    root of its chain of bases (through as_strided's interface objects), or
    of the buffer object it was made over (bytes, mmap, ...)."""
    obj: Any = x
    last = x
    while True:
        if isinstance(obj, np.ndarray):
            last = obj
            if obj.base is None:
                return _extent(obj)
            obj = obj.base
        elif isinstance(getattr(obj, "base", None), np.ndarray):  # as_strided's DummyArray
            obj = obj.base
        else:
            break
    try:
        raw = np.frombuffer(obj, dtype=np.uint8)
    except (TypeError, ValueError, BufferError):  # opaque memory: trust its owner's array
        return _extent(last)
    return _extent(raw) if raw.size else _extent(last)


def in_buffer(x: np.ndarray, name: str) -> np.ndarray:
    """Refuses a view that reaches outside the memory it is a view of (an
    as_strided view with a stride or shape its buffer does not have): the
    library would read or write whatever lies there. Returns x."""
    if x.size == 0:
        return x
    lo, hi = _extent(x)
    root_lo, root_hi = _root_extent(x)
    if lo < root_lo or hi > root_hi:
        raise InvalidArgument(f"{name}: the view reaches outside its buffer (bytes "
                              f"{lo - root_lo}..{hi - root_lo} of a {root_hi - root_lo}-byte "
                              f"buffer; strides {x.strides}, shape {x.shape})", name)
    return x


def _matrix(x: np.ndarray, name: str, writable: bool = False) -> tuple[np.ndarray, int]:
    """Checks an FP16 matrix view; returns it with its leading dimension."""
    if not isinstance(x, np.ndarray):
        raise InvalidArgument(f"{name}: expected a numpy array, got {type(x).__name__}", name)
    if x.dtype != np.float16:
        raise InvalidArgument(f"{name}: dtype must be float16, got {x.dtype}", name)
    if x.ndim != 2:
        raise InvalidArgument(f"{name}: must be 2-D, got {x.ndim}-D", name)
    rows, cols = x.shape
    if rows == 0 or cols == 0:
        raise InvalidArgument(f"{name}: dimensions must be positive, got {x.shape}", name)
    if x.strides[1] != 2 or x.strides[0] <= 0 or x.strides[0] % 2:
        raise InvalidArgument(
            f"{name}: rows must be contiguous with a positive row stride, strides {x.strides}", name
        )
    if writable and not x.flags.writeable:
        raise InvalidArgument(f"{name}: must be writable", name)
    return in_buffer(x, name), x.strides[0] // 2


def _ptr(nat: Native, x: np.ndarray, ctype: str = "kb_f16 *") -> Any:
    return nat.ffi.cast(ctype, x.__array_interface__["data"][0])


def _vector(x: np.ndarray | None, n: int, name: str) -> np.ndarray | None:
    if x is None:
        return None
    if not isinstance(x, np.ndarray) or x.dtype != np.float16:
        raise InvalidArgument(f"{name}: must be a float16 numpy array", name)
    if x.shape != (n,):
        raise InvalidArgument(f"{name}: shape must be ({n},), got {x.shape}", name)
    return np.ascontiguousarray(in_buffer(x, name))


def _clamp(clamp: tuple[float, float] | None, name: str = "clamp") -> tuple[float, float]:
    """(lo, hi) as floats; None is no clamp. NaN and lo > hi are the library's
    to refuse (it names the field)."""
    if clamp is None:
        return float("-inf"), float("inf")
    if isinstance(clamp, str | bytes) or not hasattr(clamp, "__len__") or len(clamp) != 2:
        raise InvalidArgument(f"{name}: must be None or a (lo, hi) pair, got {clamp!r}", name)
    out = []
    for value in clamp:
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer
                                                     | np.floating):
            raise InvalidArgument(f"{name}: bounds must be numbers, got {value!r}", name)
        try:
            out.append(float(value))
        except OverflowError:  # an int beyond float range: the clamp does nothing there
            out.append(float("inf") if value > 0 else float("-inf"))
    return out[0], out[1]


def _empty(shape: tuple[int, ...], name: str) -> np.ndarray:
    """A new FP16 output array; OutOfMemory naming the field if it cannot be had."""
    try:
        return np.empty(shape, dtype=np.float16)
    except (MemoryError, ValueError, OverflowError) as exc:
        raise OutOfMemory(f"{name}: cannot allocate a float16 array of shape {shape} "
                          f"({exc})", name) from None


def _overlaps(x: np.ndarray, y: np.ndarray) -> bool:
    """Do two arrays share any byte? (Undecided cases count as sharing.)"""
    try:
        return bool(np.shares_memory(x, y, max_work=1 << 16))
    except np.exceptions.TooHardError:
        return True


def _address(x: np.ndarray) -> int:
    return int(x.__array_interface__["data"][0])


def _extent(x: np.ndarray) -> tuple[int, int]:
    """The first and one-past-the-last byte address any element of x touches."""
    lo = hi = _address(x)
    for size, stride in zip(x.shape, x.strides, strict=True):
        step = (size - 1) * stride
        lo, hi = (lo + step, hi) if step < 0 else (lo, hi + step)
    return lo, hi + x.itemsize


def _spans(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes x occupies as sorted, disjoint [lo, hi) intervals: one for a
    contiguous array, one per row for a matrix of contiguous rows (columns of
    a wider array), else its whole extent (which covers it)."""
    if x.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if x.flags.c_contiguous:
        lo = _address(x)
        return np.array([lo], np.int64), np.array([lo + x.nbytes], np.int64)
    if x.ndim == 2 and x.strides[1] == x.itemsize and x.strides[0] >= x.shape[1] * x.itemsize:
        lo = _address(x) + np.arange(x.shape[0], dtype=np.int64) * x.strides[0]
        return lo, lo + x.shape[1] * x.itemsize
    lo, hi = _extent(x)
    return np.array([lo], np.int64), np.array([hi], np.int64)


def _sharing_operands(outputs: list[np.ndarray], inputs: list[np.ndarray]) -> set[int]:
    """Indices (outputs first, then inputs) of the operands that share a byte
    with an output, found in one sort of every operand's byte intervals:
    O(R log R) for R intervals, however many operands there are."""
    operands = outputs + inputs
    parts = [_spans(x) for x in operands]
    lo = np.concatenate([p[0] for p in parts])
    hi = np.concatenate([p[1] for p in parts])
    owner = np.repeat(np.arange(len(operands)), [len(p[0]) for p in parts])
    order = np.argsort(lo, kind="stable")
    lo, hi, owner = lo[order], hi[order], owner[order]
    written = owner < len(outputs)
    floor = np.iinfo(np.int64).min
    # an operand's own intervals are disjoint: any overlap is between two operands
    reach_all = np.maximum.accumulate(np.concatenate([[floor], hi[:-1]]))
    reach_out = np.maximum.accumulate(np.concatenate([[floor], np.where(written, hi,
                                                                         floor)[:-1]]))
    ceiling = np.iinfo(np.int64).max
    next_all = np.concatenate([lo[1:], [ceiling]])
    out_lo = np.where(written, lo, ceiling)
    next_out = np.concatenate([np.minimum.accumulate(out_lo[::-1])[::-1][1:], [ceiling]])
    clash = np.where(written, (lo < reach_all) | (next_all < hi),
                     (lo < reach_out) | (next_out < hi))
    return set(owner[clash].tolist())


def _no_aliasing(outputs: list[tuple[str, np.ndarray]],
                 inputs: list[tuple[str, np.ndarray]]) -> None:
    """Refuses an output that shares memory with an input or another output:
    kernels read their inputs while they write, so such a call would compute
    a wrong result. Names the first output (in order) that shares memory with
    an input or an earlier output, and the first such operand. One sort finds
    the outputs involved; only those are compared operand by operand."""
    outs, ins = [x for _, x in outputs], [x for _, x in inputs]
    suspects = sorted(i for i in _sharing_operands(outs, ins) if i < len(outs))
    if not suspects:
        return
    extents = np.array([_extent(x) for x in outs + ins], dtype=np.int64).reshape(-1, 2)
    out_ext, in_ext = extents[:len(outs)], extents[len(outs):]
    for i in suspects:
        lo, hi = out_ext[i]
        near_in = np.flatnonzero((in_ext[:, 0] < hi) & (in_ext[:, 1] > lo))
        near_out = np.flatnonzero((out_ext[:i, 0] < hi) & (out_ext[:i, 1] > lo))
        for other_name, other in [inputs[j] for j in near_in] + [outputs[j] for j in near_out]:
            if _overlaps(outs[i], other):
                name = outputs[i][0]
                raise InvalidArgument(f"{name}: shares memory with {other_name}; the output "
                                      "must not overlap any operand", name)


# ---- public API ---------------------------------------------------------------


def cpu_info(nat: Native | None = None) -> CpuInfo:
    nat = nat or load()
    c = nat.ffi.new("kb_cpu_info *")
    nat.lib.kb_cpu_detect(c)
    return CpuInfo(
        arch=nat.ffi.string(c.arch).decode(),
        features=tuple(v for k, v in CPU_FEATURES.items() if c.features & k),
        sme_vector_bits=int(c.sme_vector_bits),
        isa=ISA_LEVELS[c.isa],
        sve_vector_bits=int(c.sve_vector_bits),
    )


def version(nat: Native | None = None) -> str:
    nat = nat or load()
    return nat.ffi.string(nat.lib.kb_version()).decode()


def realizations(selector: Selector | None = None, nat: Native | None = None) -> list[Realization]:
    nat = nat or load()
    sel, keep = (selector or Selector()).to_c(nat)
    count = nat.lib.kb_list_realizations(sel, nat.ffi.NULL, 0)
    arr = nat.ffi.new("kb_realization[]", max(count, 1))
    nat.lib.kb_list_realizations(sel, arr, count)
    del keep
    return [Realization.from_c(nat, arr[i]) for i in range(count)]


def backends(selector: Selector | None = None, nat: Native | None = None) -> list[str]:
    """Backends with at least one realization usable on this CPU."""
    seen: list[str] = []
    for r in realizations(selector, nat):
        if r.backend not in seen:
            seen.append(r.backend)
    return seen


def pack_b(b: np.ndarray, *, backend: str | None = None, bias: np.ndarray | None = None,
           selector: Selector | None = None, nat: Native | None = None) -> PackedB:
    """Packs B [K, N] in the portable layout, or in `backend`'s native layout
    (which carries the bias inside)."""
    nat = nat or load()
    b, ldb = _matrix(b, "B")
    k, n = b.shape
    err = nat.new_error()
    size = nat.ffi.new("size_t *")
    if backend is None:
        if bias is not None:
            raise InvalidArgument("bias: the portable layout carries no bias; pass it to gemm()",
                                  "bias")
        nat.check(nat.lib.kb_pack_b_size(n, k, size, err), err)
        out = np.zeros(size[0], dtype=np.uint8)
        nat.check(nat.lib.kb_pack_b(n, k, _ptr(nat, b), ldb, _ptr(nat, out, "void *"), out.size,
                                    err), err)
    else:
        bid = backend_id(backend)
        bias = _vector(bias, n, "bias")
        sel, keep = (selector or Selector()).to_c(nat)
        nat.check(nat.lib.kb_pack_b_native_size(bid, n, k, sel, size, err), err)
        out = np.zeros(size[0], dtype=np.uint8)
        bias_p = _ptr(nat, bias) if bias is not None else nat.ffi.NULL
        nat.check(nat.lib.kb_pack_b_native(bid, n, k, _ptr(nat, b), ldb, bias_p,
                                           _ptr(nat, out, "void *"), out.size, sel, err), err)
        del keep
    return describe_packed(out, nat)


def _packed_bytes(data: Any, name: str) -> np.ndarray:
    """A packed buffer as the library reads it: one contiguous run of bytes
    from its first element (a view with negative or gapped strides is not)."""
    if (not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 1
            or not data.flags.c_contiguous):
        what = (type(data).__name__ if not isinstance(data, np.ndarray)
                else f"{data.ndim}-D {data.dtype} array with strides {data.strides}")
        raise InvalidArgument(f"{name}: a packed buffer must be a contiguous 1-D uint8 array, "
                              f"got a {what}", name)
    return in_buffer(data, name)


def verify_packed(b: PackedB | np.ndarray, nat: Native | None = None) -> PackedB:
    """Verifies a packed buffer on its own, payload checksum included (O(size)):
    do it once where a buffer is loaded or received. Calls check the header
    only (O(1)) unless the selector sets verify_payload. Returns the buffer's
    description; raises ContractViolation naming the field."""
    nat = nat or load()
    data = _packed_bytes(b.data if isinstance(b, PackedB) else b, "B")
    err = nat.new_error()
    nat.check(nat.lib.kb_verify_packed_b(_ptr(nat, data, "void *"), data.size, err), err)
    return describe_packed(data, nat)


def payload_checksum(data: bytes | np.ndarray, nat: Native | None = None) -> int:
    """The library's payload checksum of packed buffers (kb_payload_checksum;
    the definition is in kbench.h) of a byte string or a contiguous array."""
    nat = nat or load()
    raw = np.ascontiguousarray(np.frombuffer(data, np.uint8) if isinstance(data, bytes | bytearray)
                               else np.asarray(data)).view(np.uint8).reshape(-1)
    ptr = _ptr(nat, raw, "void *") if raw.size else nat.ffi.NULL
    return int(nat.lib.kb_payload_checksum(ptr, raw.size))


def check_sme_state(nat: Native | None = None) -> None:
    """Raises InternalError (field "SVCR") if an earlier call left streaming
    mode or ZA on (kb_check_sme_state; it also switches them off). A no-op
    on CPUs without SME. The in-process engine calls it after every call."""
    nat = nat or load()
    err = nat.new_error()
    nat.check(nat.lib.kb_check_sme_state(err), err)


def describe_packed(data: np.ndarray, nat: Native | None = None) -> PackedB:
    """Reads and checks the header of a packed buffer (kb_describe_packed:
    magic, version, checksums, layout, sizes); ContractViolation naming the
    header field if it is not a sound packed buffer."""
    nat = nat or load()
    data = _packed_bytes(data, "B")
    h = nat.ffi.new("kb_packed_header *")
    err = nat.new_error()
    nat.check(nat.lib.kb_describe_packed(_ptr(nat, data, "void *") if data.size else nat.ffi.NULL,
                                         data.size, h, err), err)
    return PackedB(
        data=data, n=int(h.n), k=int(h.k), native=int(h.layout) != 1,
        backend=BACKENDS[h.backend] if h.backend < len(BACKENDS) else str(int(h.backend)),
        layout=LAYOUTS.get(int(h.layout), str(int(h.layout))), vector_bits=int(h.vector_bits),
    )


@dataclass
class GemmOperands:
    """One problem of a batch."""

    a: np.ndarray
    b: np.ndarray | PackedB
    c: np.ndarray | None = None  # output view; allocated when None
    bias: np.ndarray | None = None
    clamp: tuple[float, float] | None = None


def gemm_batch(problems: list[GemmOperands], *, selector: Selector | None = None,
               nat: Native | None = None, limits: Limits | None = None) -> GemmResult:
    """Runs a batch of problems that share M, N, K. Outputs are written into
    each problem's `c` view (allocated if missing) and returned. A batch over
    the work or memory cap (`limits`, kbench.native.limits) is refused before
    anything is allocated; a long one runs in slices (kbench.native.slices),
    so that Ctrl-C stops it within a second."""
    nat = nat or load()
    if not problems:
        raise InvalidArgument("problems: the batch is empty", "problems")
    for i, p in enumerate(problems):
        if not isinstance(p, GemmOperands):
            raise InvalidArgument(f"problems[{i}]: expected kbench.GemmOperands, got "
                                  f"{type(p).__name__}", f"problems[{i}]")
    first_a, _ = _matrix(problems[0].a, "problems[0].a")
    m, k = first_a.shape
    n = problems[0].b.n if isinstance(problems[0].b, PackedB) else _matrix(problems[0].b,
                                                                          "problems[0].b")[0].shape[1]
    flops = 2.0 * m * n * k * len(problems)
    call_limits.check(flops, 2.0 * m * n * sum(p.c is None for p in problems), limits,
                      "its outputs")
    arr = nat.ffi.new("kb_gemm_problem[]", len(problems))
    keep: list[Any] = []
    outs: list[np.ndarray] = []
    read: list[tuple[str, np.ndarray]] = []  # every operand the call reads
    written: list[tuple[str, np.ndarray]] = []
    for i, p in enumerate(problems):
        a, lda = _matrix(p.a, f"problems[{i}].a")
        if a.shape != (m, k):
            raise InvalidArgument(f"problems[{i}].a: shape {a.shape}, batch has ({m}, {k})",
                                  f"problems[{i}].a")
        q = arr[i]
        q.A = _ptr(nat, a)
        q.lda = lda
        read.append((f"problems[{i}].a", a))
        if isinstance(p.b, PackedB):
            data = _packed_bytes(p.b.data, f"problems[{i}].b.data")
            if data.size == 0:
                raise InvalidArgument(f"problems[{i}].b.data: the packed buffer is empty",
                                      f"problems[{i}].b.data")
            q.B = _ptr(nat, data, "void *")
            q.b_size = data.size
            q.b_is_packed = 1
            q.b_is_backend_native_packed = int(bool(p.b.native))
            keep.append(data)
            read.append((f"problems[{i}].b", data))
        else:
            b, ldb = _matrix(p.b, f"problems[{i}].b")
            if b.shape != (k, n):
                raise InvalidArgument(f"problems[{i}].b: shape {b.shape}, expected ({k}, {n})",
                                      f"problems[{i}].b")
            q.B = _ptr(nat, b, "void *")
            q.ldb = ldb
            keep.append(b)
            read.append((f"problems[{i}].b", b))
        c = p.c if p.c is not None else _empty((m, n), f"problems[{i}].c")
        c, ldc = _matrix(c, f"problems[{i}].c", writable=True)
        if c.shape != (m, n):
            raise InvalidArgument(f"problems[{i}].c: shape {c.shape}, expected ({m}, {n})",
                                  f"problems[{i}].c")
        q.C = _ptr(nat, c)
        q.ldc = ldc
        outs.append(c)
        written.append((f"problems[{i}].c", c))
        bias = _vector(p.bias, n, f"problems[{i}].bias")
        if bias is not None:
            keep.append(bias)
            q.bias = _ptr(nat, bias)
            read.append((f"problems[{i}].bias", bias))
        q.clamp_min, q.clamp_max = _clamp(p.clamp, f"problems[{i}].clamp")
        keep.append(a)
    _no_aliasing(written, read)
    chosen = (selector or Selector()).checked()
    if slices.worth(flops):
        return GemmResult(outs, sliced.gemm(
            nat, lambda r: Realization.from_c(nat, r), m, n, k, arr, len(problems), chosen,
            lambda: realizations(chosen, nat), not any(isinstance(p.b, PackedB)
                                                       for p in problems)))
    sel, sel_keep = chosen.to_c(nat)
    ran = nat.ffi.new("kb_realization *")
    err = nat.new_error()
    status = nat.lib.kb_gemm_batch(m, n, k, arr, len(problems), sel, ran, err)
    del sel_keep, keep
    nat.check(status, err)
    return GemmResult(outs, Realization.from_c(nat, ran))


def gemm(a: np.ndarray, b: np.ndarray | PackedB, bias: np.ndarray | None = None, *,
         clamp: tuple[float, float] | None = None, out: np.ndarray | None = None,
         selector: Selector | None = None, nat: Native | None = None,
         limits: Limits | None = None) -> GemmResult:
    """C = clamp(A @ B + bias). B is a [K, N] array or a PackedB. `limits`:
    the call's work and memory caps (see gemm_batch)."""
    return gemm_batch([GemmOperands(a, b, out, bias, clamp)], selector=selector, nat=nat,
                      limits=limits)


@dataclass(frozen=True)
class ConvParams:
    stride: tuple[int, int] = (1, 1)
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, bottom, left, right
    dilation: tuple[int, int] = (1, 1)
    groups: int = 1
    clamp: tuple[float, float] | None = None


def _conv_params(params: Any) -> ConvParams:
    """The parameters, checked for type and arity (values are checked with
    the descriptor): InvalidArgument naming params.<field> otherwise."""
    if params is None:
        return ConvParams()
    if not isinstance(params, ConvParams):
        raise InvalidArgument(f"params: expected kbench.ConvParams, got {type(params).__name__}",
                              "params")
    for name, size, what in (("stride", 2, "(h, w)"), ("pad", 4, "(top, bottom, left, right)"),
                             ("dilation", 2, "(h, w)")):
        value = getattr(params, name)
        if (isinstance(value, str | bytes) or not hasattr(value, "__len__")
                or len(value) != size):
            raise InvalidArgument(f"params.{name}: must be {size} integers {what}, got {value!r}",
                                  f"params.{name}")
    _clamp(params.clamp, "params.clamp")
    return params


def conv_desc(nat: Native, x_shape: tuple[int, ...], w_shape: tuple[int, ...],
              p: ConvParams) -> Any:
    """Fills a kb_conv_desc from NHWC / HWIO shapes."""
    p = _conv_params(p)
    d = nat.ffi.new("kb_conv_desc *")
    vals = {
        "n": x_shape[0], "h": x_shape[1], "w": x_shape[2], "c_in": x_shape[3],
        "c_out": w_shape[3], "kh": w_shape[0], "kw": w_shape[1],
        "stride_h": p.stride[0], "stride_w": p.stride[1],
        "pad_top": p.pad[0], "pad_bottom": p.pad[1], "pad_left": p.pad[2], "pad_right": p.pad[3],
        "dil_h": p.dilation[0], "dil_w": p.dilation[1], "groups": p.groups,
    }
    for key, v in vals.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise InvalidArgument(f"desc.{key}: must be a non-negative integer, got {v!r}",
                                  f"desc.{key}")
        if v > SIZE_MAX:
            raise SizeOverflow(f"desc.{key}: {v} does not fit in size_t", f"desc.{key}")
        setattr(d, key, int(v))
    d.clamp_min, d.clamp_max = _clamp(p.clamp, "params.clamp")
    return d


def conv2d_output_shape(x_shape: tuple[int, ...], w_shape: tuple[int, ...], params: ConvParams,
                        nat: Native | None = None) -> tuple[int, int, int, int]:
    nat = nat or load()
    for name, shape in (("input", x_shape), ("filter", w_shape)):
        if len(shape) != 4:
            raise InvalidArgument(f"{name}: shape {tuple(shape)} is not 4-D", name)
    d = conv_desc(nat, x_shape, w_shape, params)
    oh = nat.ffi.new("size_t *")
    ow = nat.ffi.new("size_t *")
    err = nat.new_error()
    nat.check(nat.lib.kb_conv2d_output_shape(d, oh, ow, err), err)
    return (x_shape[0], int(oh[0]), int(ow[0]), w_shape[3])


def conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None = None,
           params: ConvParams | None = None, *, out: np.ndarray | None = None,
           selector: Selector | None = None, nat: Native | None = None,
           limits: Limits | None = None) -> ConvResult:
    """NHWC x [n, h, w, c_in], HWIO w [kh, kw, c_in/groups, c_out]. A call
    over the work or memory cap (`limits`: its output and the contiguous
    copies of strided inputs count) is refused before anything is allocated;
    a long one runs in slices, so that Ctrl-C stops it within a second."""
    nat = nat or load()
    params = _conv_params(params)
    for name, arr, nd in (("input", x, 4), ("filter", w, 4)):
        if not isinstance(arr, np.ndarray) or arr.dtype != np.float16 or arr.ndim != nd:
            raise InvalidArgument(f"{name}: must be a {nd}-D float16 numpy array", name)
    x, w = in_buffer(x, "input"), in_buffer(w, "filter")  # copied below, within the caps
    groups = params.groups
    if isinstance(groups, bool) or not isinstance(groups, int | np.integer):
        raise InvalidArgument(f"params.groups: must be an integer, got {groups!r}",
                              "params.groups")
    if groups <= 0 or x.shape[3] % groups or w.shape[2] * groups != x.shape[3]:
        raise InvalidArgument(
            f"filter: shape {w.shape} does not fit c_in = {x.shape[3]} with groups = {groups}",
            "filter",
        )
    shape = conv2d_output_shape(x.shape, w.shape, params, nat)
    copies = sum(a.nbytes for a in (x, w) if not a.flags.c_contiguous)
    call_limits.check(2.0 * float(np.prod(shape)) * w.shape[0] * w.shape[1] * w.shape[2],
                      copies + (2.0 * float(np.prod(shape)) if out is None else 0.0), limits,
                      "its output and contiguous copies of strided inputs")
    x, w = np.ascontiguousarray(x), np.ascontiguousarray(w)
    if out is None:
        out = _empty(shape, "output")
    if (not isinstance(out, np.ndarray) or out.dtype != np.float16 or out.shape != shape
            or not out.flags.c_contiguous):
        raise InvalidArgument(f"output: must be a contiguous float16 array of shape {shape}",
                              "output")
    if not out.flags.writeable:
        raise InvalidArgument("output: must be writable", "output")
    in_buffer(out, "output")
    bias = _vector(bias, w.shape[3], "bias")
    _no_aliasing([("output", out)], [("input", x), ("filter", w)]
                 + ([("bias", bias)] if bias is not None else []))
    d = conv_desc(nat, x.shape, w.shape, params)
    chosen = (selector or Selector()).checked()
    bptr = _ptr(nat, bias) if bias is not None else nat.ffi.NULL
    if slices.worth(sliced.conv_flops(d, shape[1:3])):
        return ConvResult(out, sliced.conv(nat, lambda r: Realization.from_c(nat, r), d,
                                           _ptr(nat, x), _ptr(nat, w), bptr, _ptr(nat, out),
                                           chosen, shape[1:3]))
    sel, keep = chosen.to_c(nat)
    ran = nat.ffi.new("kb_realization *")
    err = nat.new_error()
    status = nat.lib.kb_conv2d(d, _ptr(nat, x), _ptr(nat, w), bptr, _ptr(nat, out), sel, ran,
                               err)
    del keep
    nat.check(status, err)
    return ConvResult(out, Realization.from_c(nat, ran))


def scratch_retained_bytes(nat: Native | None = None) -> int:
    nat = nat or load()
    return int(nat.lib.kb_scratch_retained_bytes())


# ---- the unchecked low-level entry ----------------------------------------------

SIZE_MAX = 2**64 - 1


@dataclass
class RawProblem:
    """One problem for gemm_raw: flat buffers (None = NULL) and explicit strides.

    Nothing here is checked against the buffers' lengths: the native library
    validates what it can see (dimensions, strides, overflow, packed headers),
    and the caller answers for the rest. Workers and the contract suite use it."""

    a: np.ndarray | None
    lda: int
    b: np.ndarray | None
    ldb: int
    c: np.ndarray | None
    ldc: int
    bias: np.ndarray | None = None
    clamp_min: float = float("-inf")
    clamp_max: float = float("inf")
    b_size: int = 0
    b_is_packed: bool = False
    b_is_backend_native_packed: bool = False


def covers(x: np.ndarray | None, rows: int, ld: int, cols: int) -> bool:
    """Does x hold every element of a rows x cols FP16 matrix of row stride ld
    from its first byte on?"""
    if x is None or rows == 0 or cols == 0:
        return False
    lo, hi = _extent(x)
    return lo == _address(x) and hi - lo >= ((rows - 1) * ld + cols) * 2


def _raw_covered(m: int, n: int, k: int, problems: list[RawProblem]) -> bool:
    """A raw call runs in slices only when its buffers hold the whole call
    (so that slicing skips none of the library's checks of the whole call)."""
    for p in problems:
        b_ok = (p.b is not None and p.b.nbytes >= p.b_size > 0 if p.b_is_packed
                else covers(p.b, k, p.ldb, n))
        if not (covers(p.a, m, p.lda, k) and covers(p.c, m, p.ldc, n) and b_ok
                and (p.bias is None or covers(p.bias, 1, n, n))):
            return False
    return True


def _size_arg(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidArgument(f"{name}: must be an integer, got {value!r}", name)
    if value < 0:
        raise InvalidArgument(f"{name}: must not be negative, got {value}", name)
    if value > SIZE_MAX:
        from kbench.errors import SizeOverflow
        raise SizeOverflow(f"{name}: {value} does not fit in size_t", name)
    return int(value)


def gemm_raw(m: int, n: int, k: int, problems: list[RawProblem], *,
             selector: Selector | None = None, nat: Native | None = None) -> Realization:
    """kb_gemm_batch with explicit dimensions; returns the realization that ran."""
    return _gemm_raw(m, n, k, problems, selector, nat, None)[0]


def time_gemm_raw(m: int, n: int, k: int, problems: list[RawProblem], timing: Any, *,
                  selector: Selector | None = None, nat: Native | None = None
                  ) -> tuple[Realization, list[float], int]:
    """kb_time_gemm: the native timer around the call (timing: a kb_timing*).
    Returns the realization that ran, the time per call of each round (ns)
    and the calls per round."""
    return _gemm_raw(m, n, k, problems, selector, nat, timing)


def _gemm_raw(m: int, n: int, k: int, problems: list[RawProblem], selector: Selector | None,
              nat: Native | None, timing: Any) -> tuple[Realization, list[float], int]:
    nat = nat or load()
    m, n, k = _size_arg(m, "M"), _size_arg(n, "N"), _size_arg(k, "K")
    arr = nat.ffi.new("kb_gemm_problem[]", max(len(problems), 1))
    keep: list[Any] = []

    def ptr(x: np.ndarray | None, ctype: str, name: str) -> Any:
        if x is None:
            return nat.ffi.NULL
        keep.append(in_buffer(x, name))
        return _ptr(nat, x, ctype)

    for i, p in enumerate(problems):
        q = arr[i]
        q.A = ptr(p.a, "kb_f16 *", f"problems[{i}].a")
        q.B = ptr(p.b, "void *", f"problems[{i}].b")
        q.C = ptr(p.c, "kb_f16 *", f"problems[{i}].c")
        q.bias = ptr(p.bias, "kb_f16 *", f"problems[{i}].bias")
        q.lda = _size_arg(p.lda, f"problems[{i}].lda")
        q.ldb = _size_arg(p.ldb, f"problems[{i}].ldb")
        q.ldc = _size_arg(p.ldc, f"problems[{i}].ldc")
        q.b_size = _size_arg(p.b_size, f"problems[{i}].b_size")
        q.clamp_min, q.clamp_max = float(p.clamp_min), float(p.clamp_max)
        q.b_is_packed = int(p.b_is_packed)
        q.b_is_backend_native_packed = int(p.b_is_backend_native_packed)
    sel, sel_keep = (selector or Selector()).to_c(nat)
    ran = nat.ffi.new("kb_realization *")
    err = nat.new_error()
    pp = arr if problems else nat.ffi.NULL
    if timing is None:
        chosen = selector or Selector()
        if slices.worth(2.0 * m * n * k * len(problems)) and _raw_covered(m, n, k, problems):
            return sliced.gemm(nat, lambda r: Realization.from_c(nat, r), m, n, k, arr,
                               len(problems), chosen, lambda: realizations(chosen, nat),
                               not any(p.b_is_packed for p in problems)), [], 0
        nat.check(nat.lib.kb_gemm_batch(m, n, k, pp, len(problems), sel, ran, err), err)
        return Realization.from_c(nat, ran), [], 0
    times = nat.ffi.new("double[]", max(int(timing.rounds), 1))
    reps = nat.ffi.new("uint32_t *")
    nat.check(nat.lib.kb_time_gemm(m, n, k, pp, len(problems), sel, timing, times, reps, ran, err),
              err)
    return Realization.from_c(nat, ran), list(times)[:timing.rounds], int(reps[0])
