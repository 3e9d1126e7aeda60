"""The worker engine: the native library in another process (a static
executable run directly, under qemu-aarch64, or on a board over ssh),
driven over stdin/stdout with the protocol of native/worker/kb_wire.h.

Every numpy argument is sent as its whole base buffer plus an offset, so
guard regions and row padding travel too; output buffers come back and
are copied into place. A worker that dies (a kernel's SIGSEGV or SIGILL)
raises WorkerCrashed for that call, one that ends by itself WorkerExited
and one that does not answer within the call's bound (kbench.targets.
timeouts) is killed and raises WorkerTimedOut; the next call starts a
fresh worker, which loads the same plugins again. A plugin whose loading
kills or hangs the worker is refused with that reason, and the worker is
started again without it. An interrupt (Ctrl-C, SIGTERM) during a request
kills the worker: its reply can no longer be read in step."""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from kbench.errors import (
    GuardPageHit,
    KbenchError,
    ProtocolError,
    WorkerCrashed,
    WorkerExited,
    WorkerTimedOut,
    from_status,
)
from kbench.native import api
from kbench.native.api import RawProblem, Realization, Selector
from kbench.native.calls import CallResult, ConvDesc, HeapUse, TargetInfo, Timing, backend_arg
from kbench.native.plugins import FORMS, PluginInfo, PluginRealizationInfo
from kbench.targets.elf import Elf, ElfError
from kbench.targets.plugins import PluginError, PluginLoads, annotate_all, expand
from kbench.targets.timeouts import CallBounds, conv_flops, gemm_flops, pack_flops

MAGIC = 0x3157424B
PROTOCOL = 5  # KB_WIRE_PROTOCOL: 2 added the realization's block sizes, 3 its NaN rule and
# the layouts a plugin realization declares, 4 its ABI 3 declarations (and an input's
# overread allowance in its buffer word), 5 a GEMM or CONV reply's heap figures (HEAP_NOTES)
REPLY = 0x80000000
PROTOCOL_ERROR = 0xFFFFFFFF
HELLO, GEMM, CONV, PACK, SET_SVL, SHUTDOWN, LOAD_TABLE, LOAD_PLUGIN = 1, 2, 3, 4, 5, 6, 7, 8
CODE_MAP, SET_SVE_VL, FENCE = 9, 10, 11
PACK_PORTABLE, PACK_NATIVE, PACK_PLUGIN, PACK_PLUGIN_LHS = 0, 1, 2, 3  # PACK modes
PACK_FILL_GIVEN = 1 << 16  # with the fill byte in bits 8..15 (default 0xA5)
MAX_PAYLOAD = 1 << 30
# a call reply's heap status (native/worker/kb_heap.h, KB_HEAP_*): 0 measured, else why not
HEAP_NOTES = {1: "not measured: the call was refused before it ran",
              2: "not measured: a timed call (the allocator does not count while one runs)",
              3: "not measured: no realization was forced while plugins are loaded",
              4: "not measured: kbench's scratch lies in guarded mappings in a checking call",
              5: "not measured: this worker was built without heap accounting",
              6: "not measured: another allocator is preloaded into the worker (LD_PRELOAD)"}
HEAP_WHOSE = {1: "plugin", 2: "scratch"}


@dataclass(frozen=True)
class CodeObject:
    """One loaded object of a worker process: its path ("" for the worker
    itself), load bias and executable address ranges [start, end)."""

    path: str
    bias: int
    segments: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class CodeEntry:
    """Where one function of a plugin realization's table starts."""

    phase: str  # kernel, pack_lhs or pack_rhs
    field: str  # the table field, e.g. "matmul.run_matmul"
    address: int


@dataclass(frozen=True)
class CodeMap:
    """Where the code of a worker process lies (CODE_MAP)."""

    objects: tuple[CodeObject, ...]
    plugins: dict[str, tuple[CodeEntry, ...]]  # realization name -> its entries

    def worker(self) -> CodeObject:
        for obj in self.objects:
            if obj.path == "":
                return obj
        raise ProtocolError("code map: the worker itself is not listed", "code_map")


class Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def raw(self, b: bytes) -> None:
        self.parts.append(b)
        self.size += len(b)

    def u32(self, v: int) -> None:
        self.raw(struct.pack("<I", v & 0xFFFFFFFF))

    def i32(self, v: int) -> None:
        self.raw(struct.pack("<i", v))

    def u64(self, v: int) -> None:
        self.raw(struct.pack("<Q", v))

    def f32(self, v: float) -> None:
        self.raw(struct.pack("<f", v))


    def bytes(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = memoryview(data), 0

    def take(self, n: int) -> memoryview:
        if self.pos + n > len(self.data):
            raise ProtocolError("worker reply is truncated", "reply")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def i32(self) -> int:
        return struct.unpack("<i", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def f64(self) -> float:
        return struct.unpack("<d", self.take(8))[0]

    def times(self) -> tuple[list[float], int]:
        n, reps = self.u32(), self.u32()
        return [self.f64() for _ in range(n)], reps

    def str(self) -> str:
        return bytes(self.take(self.u32())).decode(errors="replace")

    def realization(self) -> Realization:
        name, backend, kernel = self.str(), self.str(), self.str()
        op, isa, accum = self.i32(), self.i32(), self.i32()
        kpr, bforms, max_m, max_groups = self.u32(), self.u32(), self.u32(), self.u32()
        conv_class, error_model = self.u32(), self.u32()
        block_m, block_n, block_k = self.u32(), self.u32(), self.u32()
        vbits, threads, nan_clamp = self.u32(), self.i32(), self.u32()
        return Realization.from_fields(name, backend, kernel, op, isa, accum, kpr, bforms, vbits,
                                       threads, max_m, max_groups, False, conv_class,
                                       error_model, (block_m, block_n, block_k), nan_clamp)


def read_heap(r: Reader) -> HeapUse:
    """A call reply's heap figures (protocol 5)."""
    status, whose, before, peak, after = r.u32(), r.u32(), r.u64(), r.u64(), r.u64()
    if status:
        return HeapUse.not_measured(HEAP_NOTES.get(status, f"not measured (status {status})"))
    if whose not in HEAP_WHOSE:
        raise ProtocolError(f"worker sent heap figures of unknown owner kind {whose}", "reply")
    return HeapUse(before, peak, after, HEAP_WHOSE[whose])


def _root(a: np.ndarray) -> np.ndarray:
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class Buffers:
    """The buffer table of one request; pointers are (index, byte offset). An
    input may ask for a guard mode (GUARDS): the worker then places it flush
    against an inaccessible page."""

    def __init__(self, guard: int = 0,
                 declared: PluginRealizationInfo | None = None) -> None:
        self.items: list[tuple[np.ndarray, bool]] = []
        self._index: dict[int, int] = {}
        self.guard = guard  # for every input of the request (0: none)
        # the realization's overread allowances (plugin ABI 3): per buffer index, the
        # bytes past its end the guard page leaves readable
        self.declared = declared
        self.allowance: dict[int, int] = {}

    def ptr(self, w: Writer, a: np.ndarray | None, output: bool = False,
            operand: str = "") -> None:
        """operand: the role of an input (kbench.native.plugins.OPERANDS), for the
        bytes its realization declares it may read past its end."""
        if a is None:
            w.i32(-1)
            w.u64(0)
            return
        base = _root(a)
        if not base.flags.c_contiguous:
            base = a = np.ascontiguousarray(a)
        key = id(base)
        if key not in self._index:
            self._index[key] = len(self.items)
            self.items.append((base, output))
        elif output:
            i = self._index[key]
            self.items[i] = (self.items[i][0], True)
        off = _addr(a) - _addr(base)
        if not 0 <= off <= base.nbytes:
            raise ProtocolError("an argument lies outside its buffer", "buffers")
        index = self._index[key]
        if operand and self.declared is not None:
            self.allowance[index] = max(self.allowance.get(index, 0),
                                        self.declared.allowance(operand))
        w.i32(index)
        w.u64(off)

    def encode(self, w: Writer) -> None:
        w.u32(len(self.items))
        for i, (base, output) in enumerate(self.items):
            data = base.reshape(-1).view(np.uint8).tobytes()
            w.u64(len(data))
            w.u32(1 if output else 0)
            # an input's guard mode, log2 of the alignment its data needs (FP16: 2
            # bytes; a packed buffer's header: 8) and its overread allowance
            align = 1 if base.dtype.itemsize == 2 else 3
            word = self.guard | (align << 8) | (self.allowance.get(i, 0) << 16)
            w.u32(word if self.guard and not output else 0)
            w.raw(data)
            w.raw(b"\0" * ((8 - len(data) % 8) % 8))  # bytes padded to a multiple of 8

    def restore(self, index: int, data: memoryview) -> None:
        base = self.items[index][0]
        flat = base.reshape(-1).view(np.uint8)
        if flat.size != len(data):
            raise ProtocolError("worker returned a buffer of the wrong size", "reply")
        flat[:] = np.frombuffer(data, dtype=np.uint8)


def _selector(w: Writer, sel: Selector | None) -> None:
    sel = sel or Selector()
    mask = 0
    for b in sel.disabled:
        mask |= 1 << api.backend_id(b)
    w.u32(mask)
    if sel.isa_cap is None:
        w.i32(-1)
    elif sel.isa_cap in api.ISA_LEVELS:
        w.i32(api.ISA_LEVELS.index(sel.isa_cap))
    else:
        raise api.InvalidArgument(
            f"selector.isa_cap: {sel.isa_cap!r} is not one of {', '.join(api.ISA_LEVELS)}",
            "selector.isa_cap")
    if sel.threads < 0:
        raise api.InvalidArgument("selector.threads: must not be negative", "selector.threads")
    w.i32(sel.threads)
    w.u32(int(sel.verify_payload))
    w.u32(int(sel.one_call))
    force = (sel.force or "").encode()
    w.u32(len(force))
    w.raw(force)
    w.u32(1 if sel.table is not None else 0)


def _timing(w: Writer, t: Timing | None) -> None:
    if t is not None and t.rounds < 1:
        raise api.InvalidArgument("timing.rounds: must be positive", "timing.rounds")
    w.u32(t.warmup if t else 0)
    w.u32(t.rounds if t else 0)
    w.u64(t.min_round_ns if t else 0)
    w.u32(t.max_reps if t else 0)
    w.u32(int(t.cold) if t else 0)


def _u64(value: int, name: str) -> int:
    return api._size_arg(value, name)



class ProcessGone(Exception):
    """A child closed its output (timed_out False) or gave no reply in time
    (timed_out True; it has been killed)."""

    def __init__(self, timed_out: bool) -> None:
        super().__init__("timed out" if timed_out else "closed")
        self.timed_out = timed_out


def read_exactly(proc: subprocess.Popen[bytes], n: int, timeout: float) -> bytes:
    """n bytes from a child's stdout, each wait at most `timeout` seconds."""
    assert proc.stdout is not None
    out = bytearray()
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while len(out) < n:
            if not sel.select(timeout=timeout):
                proc.kill()
                raise ProcessGone(True)
            chunk = os.read(fd, min(n - len(out), 1 << 22))
            if not chunk:
                raise ProcessGone(False)
            out += chunk
    return bytes(out)


def exit_report(proc: subprocess.Popen[bytes] | None, stderr: Any,
                tail_bytes: int) -> tuple[str, str]:
    """How a child ended ("exit status N" or "signal SIGSEGV"; qemu reports a
    guest's signal as 128 + N) and the tail of its stderr file."""
    code = None
    if proc is not None:
        try:
            code = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    how = f"exit status {code}"
    if code is not None and code < 0:
        how = f"signal {signal.Signals(-code).name}"
    elif code is not None and code > 128:
        with contextlib.suppress(ValueError):
            how = f"signal {signal.Signals(code - 128).name}"
    tail = ""
    if stderr is not None:
        stderr.seek(0)
        tail = stderr.read()[-tail_bytes:].decode(errors="replace").strip()
    return how, tail


GUARD_MARK = "kbench-guard: "  # the worker's report of a read into a guard page
GUARDS = {"end": 1, "start": 2}  # input guard modes (kb_guard_*, KB_GUARD_END / _START)


_AT_OBJECT = re.compile(r" at (/\S+)\+0x([0-9a-f]+)$")


def symbolized(line: str) -> str:
    """A guard report's " at /path/lib.so+0xOFF" with the function that holds
    the faulting instruction named ("at ex_kernel+0x2c in lib.so"), where the
    object can be read here (a worker on this machine) and has a symbol there."""
    m = _AT_OBJECT.search(line)
    if m is None:
        return line
    path, offset = m.group(1), int(m.group(2), 16)
    try:
        f = Elf(path).function_at(offset)
    except (ElfError, ValueError):
        f = None
    where = (f"{f.name}+{offset - f.addr:#x} in {Path(path).name}" if f is not None
             else f"{Path(path).name}+{offset:#x}")
    return line[:m.start()] + f" at {where}"


def death(prefix: str, how: str, during: str, tail: str, timed_out: bool) -> WorkerCrashed:
    """The error for a child that is gone: GuardPageHit (it reported a read
    into a guard page and ended itself), WorkerTimedOut (killed after no
    reply), WorkerCrashed (a signal) or WorkerExited (it ended by itself)."""
    if not timed_out and GUARD_MARK in tail:
        line = symbolized(tail[tail.rindex(GUARD_MARK) + len(GUARD_MARK):].splitlines()[0])
        return GuardPageHit(f"input guard page: {line} (during {during})", "guard")
    text = f"{prefix}: died with {how} during {during}" + (f" ({tail})" if tail else "")
    if timed_out:
        return WorkerTimedOut(text, "worker")
    if how.startswith("signal"):
        return WorkerCrashed(text, "worker")
    return WorkerExited(text.replace("died with", "ended with", 1), "worker")


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGKILL when the parent thread ends,
    so that a worker stuck in an endless loop never outlives the run (also
    when the run itself is killed)."""
    if _PRCTL is not None:
        _PRCTL(1, 9)  # PR_SET_PDEATHSIG, SIGKILL


def _prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def child_preexec() -> Callable[[], None] | None:
    """What a worker process runs before exec: _die_with_parent where it works."""
    return _die_with_parent if _PRCTL is not None else None


@dataclass
class WorkerSpec:
    command: list[str]
    env: dict[str, str]
    emulated: bool
    bounds: CallBounds | None = None  # None: CallBounds(emulated), the default bounds
    plugins: list[str] = field(default_factory=list)  # plugin paths ({arch} allowed)
    arch: str | None = None  # the worker's architecture; None: asked (hello) when needed
    # for the instruction counter (kbench.targets.counting): descriptors the child
    # inherits (its log pipe), its working directory, and whether it sees only `env`
    pass_fds: tuple[int, ...] = ()
    cwd: str | None = None
    inherit_env: bool = True
    # machine-code coverage (kbench.targets.coverage): the folder QEMU logs each
    # process's translated blocks into (the command carries the log options); every
    # process started writes its code map there
    coverage_dir: str | None = None

    def __post_init__(self) -> None:
        if self.bounds is None:
            self.bounds = CallBounds(self.emulated)


def load_fault(path: str, exc: WorkerCrashed) -> str:
    """Why a plugin was refused when loading it took the worker down."""
    what = {"crashed": "loading it crashed the worker",
            "exited": "loading it ended the worker",
            "timed out": "its entry point did not return"}[exc.fault]
    detail = str(exc).split(" during ", 1)[0].split(": ", 1)[-1]
    if exc.fault == "timed out":
        detail = str(exc).split("(no reply within ", 1)[-1].split(",", 1)[0]
        return f"{path}: {what} within {detail} (the worker was killed)"
    return f"{path}: {what} ({detail.removeprefix('died with ').removeprefix('ended with ')})"


class WorkerEngine:
    """A worker process, restarted after a crash."""

    prefix = "worker"  # how the process is named in its errors

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.emulated = spec.emulated
        self.bounds: CallBounds = spec.bounds or CallBounds(spec.emulated)
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self.restarts = 0
        self.plugins = PluginLoads(list(spec.plugins))
        self._refused_plugins: set[str] = set()  # loading them killed or hung the worker
        # tables this worker's library refused, with the refusal (kept across
        # restarts: the same binary refuses the same table again)
        self._refused: list[tuple[api.DispatchTable, KbenchError]] = []

    # -- process ----------------------------------------------------------------

    def _start(self) -> None:
        self._spawn()
        if self.spec.plugins:
            self._load_plugins()
        if self.spec.coverage_dir and self.proc is not None:
            from kbench.targets.coverage import write_process_map
            binary = self.spec.command[-1]
            write_process_map(Path(self.spec.coverage_dir), self.proc.pid, binary,
                              self.code_map())

    def start(self) -> None:
        """Starts the worker (and loads the spec's plugins) unless it runs."""
        if self.proc is None:
            self._start()

    def _spawn(self) -> None:
        self._table = None  # a fresh worker has no table loaded
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the worker
        env = {**os.environ, **self.spec.env} if self.spec.inherit_env else dict(self.spec.env)
        try:
            self.proc = subprocess.Popen(self.spec.command, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._stderr, env=env,
                                         pass_fds=self.spec.pass_fds, cwd=self.spec.cwd,
                                         preexec_fn=child_preexec())
        except OSError as exc:
            raise WorkerCrashed(f"{self.prefix}: cannot start {self.spec.command[0]}: {exc}",
                                "worker") from exc

    def _load_plugins(self) -> None:
        """Loads the spec's plugins into a fresh worker (again after a restart)
        and records what loaded and what was refused, and why. A plugin whose
        loading kills the worker, ends it or hangs it is refused with that
        reason; the worker is started again and loads the others."""
        arch = self.spec.arch
        if arch is None:
            hello = self.call(HELLO, b"", "hello")
            hello.u32()
            hello.str()
            arch = hello.str()  # the rest of the reply is not needed here
        for path in self.spec.plugins:
            full = expand(path, arch)
            if full in self._refused_plugins:
                continue
            try:
                info = self.load_plugin(full)
            except WorkerCrashed as exc:
                self._refuse_plugin(full, load_fault(full, exc))
                self._start()  # a fresh worker, loading every plugin but this one
                return
            except KbenchError as exc:
                self._refuse_plugin(full, str(exc))
                continue
            self.plugins.add(info)

    def _refuse_plugin(self, path: str, message: str) -> None:
        if path not in self._refused_plugins:
            self._refused_plugins.add(path)
            self.plugins.errors.append(PluginError(path, message))

    def load_plugin(self, path: str) -> PluginInfo:
        """LOAD_PLUGIN: loads a plugin library into the running worker."""
        r = self.call(LOAD_PLUGIN, str(path).encode(), "loading the plugin",
                      self.bounds.control())
        status, fld, message = r.i32(), r.str(), r.str()
        if status != 0:
            raise from_status(status, fld, message)
        name, version, real, desc = r.str(), r.str(), r.str(), r.str()
        abi, count = r.u32(), r.u32()
        reals = []
        for _ in range(count):
            rname, op, form, isa = r.str(), r.i32(), r.i32(), r.i32()
            safe, bias_first, usable, note = r.u32(), r.u32(), r.u32(), r.str()
            nan_clamp, rhs_layout, lhs_layout = r.u32(), r.str(), r.str()
            mr, nr, kr = r.u32(), r.u32(), r.u32()
            flags, overread = r.u32(), [r.u32() for _ in range(8)]
            scratch_cap, expect = r.u64(), r.str()
            reals.append(PluginRealizationInfo(
                rname, api.OPS[op], FORMS.get(form, str(form)), api.ISA_LEVELS[isa], bool(safe),
                "first" if bias_first else "last", bool(usable), note,
                api.NAN_CLAMPS[nan_clamp], rhs_layout, lhs_layout, mr, nr, kr,
                **PluginRealizationInfo.declared(flags, overread, scratch_cap, expect)))
        return PluginInfo(name, version, real, abi, desc, tuple(reals))

    def _died(self, during: str, timed_out: bool = False) -> WorkerCrashed:
        proc, self.proc = self.proc, None
        how, tail = exit_report(proc, self._stderr, 400)
        self.restarts += 1
        return death(self.prefix, how, during, tail, timed_out)

    def _read(self, n: int, during: str, deadline_s: float) -> bytes:
        assert self.proc is not None
        try:
            return read_exactly(self.proc, n, deadline_s)
        except ProcessGone as gone:
            raise self._died(f"{during} (no reply within {deadline_s:.0f} s, killed)"
                             if gone.timed_out else during, gone.timed_out) from None

    def call(self, mtype: int, payload: bytes, during: str,
             timeout: float | None = None) -> Reader:
        """One request and its reply, within `timeout` seconds (default: the
        bound of a control request). An interrupt while it runs kills the
        worker (the reply can no longer be read in step) and propagates."""
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        if len(payload) > MAX_PAYLOAD:
            raise ProtocolError(f"request of {len(payload)} bytes exceeds the frame limit",
                                "request")
        wait = self.bounds.control() if timeout is None else timeout
        try:
            try:
                self.proc.stdin.write(struct.pack("<IIQ", MAGIC, mtype, len(payload)) + payload)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise self._died(during) from None
            head = self._read(16, during, wait)
            magic, rtype, length = struct.unpack("<IIQ", head)
            if magic != MAGIC or length > MAX_PAYLOAD:
                self.kill()
                raise ProtocolError("worker sent a malformed frame", "reply")
            body = self._read(length, during, wait)
        except (KeyboardInterrupt, SystemExit):
            self.kill()
            raise
        if rtype == PROTOCOL_ERROR:
            raise ProtocolError(f"worker: {Reader(body).str()}", "request")
        if rtype != (mtype | REPLY):
            self.kill()
            raise ProtocolError(f"worker replied with type {rtype:#x} to {mtype}", "reply")
        return Reader(body)

    def send_raw(self, data: bytes) -> bytes:
        """Writes raw bytes and returns whatever the worker answers until it
        closes its output (for protocol robustness tests)."""
        if self.proc is None:
            self._start()
        assert self.proc is not None
        try:
            out, _ = self.proc.communicate(data, timeout=60)
        finally:
            self.proc = None
        return out

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def discard(self) -> None:
        """Kills the worker without letting it exit normally: after a call that
        wrote outside its buffers its heap may be damaged, and its exit
        handlers could crash on it. The next call starts a fresh worker."""
        if self.proc is not None:
            self.kill()
            self.restarts += 1

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.call(SHUTDOWN, b"", "shutdown", min(10.0, self.bounds.control()))
                assert self.proc is not None
                self.proc.wait(timeout=10)
            except BaseException:  # noqa: BLE001 - closing must not raise (an interrupt neither)
                self.kill()
            self.proc = None

    # -- engine interface ---------------------------------------------------------

    def info(self, name: str) -> TargetInfo:
        r = self.call(HELLO, b"", "hello")
        proto = r.u32()
        if proto != PROTOCOL:
            raise ProtocolError(f"worker speaks protocol {proto}, kbench speaks {PROTOCOL}",
                                "protocol")
        version, arch = r.str(), r.str()
        features, svl, isa, compiled = r.u32(), r.u32(), r.i32(), r.u32()
        isa_cap_env = r.str()
        reals = [r.realization() for _ in range(r.u32())]
        checked_calls = r.u64()
        if r.pos < len(r.data):  # each realization's micro-kernel steps (newer workers)
            steps = [(r.u32(), r.u32(), r.u32()) for _ in range(r.u32())]
            if len(steps) != len(reals):
                raise ProtocolError(f"worker sent steps of {len(steps)} realizations for "
                                    f"{len(reals)}", "hello")
            reals = [replace(x, m_step=m, n_step=n, kr=k)
                     for x, (m, n, k) in zip(reals, steps, strict=True)]
        sve_bits = r.u32() if r.pos < len(r.data) else 0  # the SVE vector length (newer workers)
        reals = annotate_all(reals, self.plugins)
        return TargetInfo(
            name=name, kind="worker", emulated=self.emulated, arch=arch,
            cpu_features=[v for k, v in api.CPU_FEATURES.items() if features & k],
            sme_vector_bits=svl, isa=api.ISA_LEVELS[isa], library_version=version,
            realizations=reals,
            compiled_backends=[b for i, b in enumerate(api.BACKENDS) if compiled & (1 << i)],
            sve_vector_bits=sve_bits,
            extra={"command": self.spec.command, "isa_cap_env": isa_cap_env,
                   "abi_checked_calls": checked_calls,
                   **(self.plugins.to_extra() if self.spec.plugins else {})},
        )

    def _reply(self, r: Reader, bufs: Buffers) -> CallResult:
        status, field, message = r.i32(), r.str(), r.str()
        ran = r.realization()
        times, reps = r.times()
        for _ in range(r.u32()):
            index, _reserved, size = r.u32(), r.u32(), r.u64()
            data = r.take(size)
            r.take((8 - size % 8) % 8)
            bufs.restore(index, data)
        heap = read_heap(r)
        if status != 0:
            raise from_status(status, field, message)
        return CallResult(self.plugins.annotate(ran), times, reps, heap=heap)

    def input_guards(self, realization: str) -> bool:
        """Can this engine run a call with its inputs against guard pages?"""
        return True

    def heap_accounting(self, realization: str) -> bool:
        """Does this engine count a realization's heap blocks? (Every worker's
        allocator does: native/worker/kb_heap.h; CallResult.heap.)"""
        return True

    def _declared(self, sel: Selector | None) -> PluginRealizationInfo | None:
        """The declarations of the plugin realization a selector forces, if any."""
        return self.plugins.declaration(sel.force) if sel is not None and sel.force else None

    def gemm_raw(self, m: int, n: int, k: int, problems: list[RawProblem],
                 selector: Selector | None = None, timing: Timing | None = None,
                 guard: str | None = None) -> CallResult:
        """guard: "end" or "start" puts every input flush against an
        inaccessible page at that end (a checking run); None: plain buffers."""
        self._sync_table(selector)
        w = Writer()
        w.u64(_u64(m, "M"))
        w.u64(_u64(n, "N"))
        w.u64(_u64(k, "K"))
        w.u32(len(problems))
        _selector(w, selector)
        bufs = Buffers(GUARDS.get(guard or "", 0), self._declared(selector))
        pw = Writer()
        for i, p in enumerate(problems):
            bufs.ptr(pw, p.a, operand="A")
            pw.u64(_u64(p.lda, f"problems[{i}].lda"))
            bufs.ptr(pw, p.b, operand="packed B" if p.b_is_backend_native_packed else "B")
            pw.u64(_u64(p.ldb, f"problems[{i}].ldb"))
            pw.u64(_u64(p.b_size, f"problems[{i}].b_size"))
            bufs.ptr(pw, p.c, output=True)
            pw.u64(_u64(p.ldc, f"problems[{i}].ldc"))
            bufs.ptr(pw, p.bias, operand="bias")
            pw.f32(p.clamp_min)
            pw.f32(p.clamp_max)
            pw.u32(int(p.b_is_packed))
            pw.u32(int(p.b_is_backend_native_packed))
        _timing(pw, timing)
        bufs.encode(w)
        w.raw(pw.bytes())
        bound = self.bounds.call(gemm_flops(m, n, k, len(problems)), timing)
        return self._reply(self.call(GEMM, w.bytes(), "GEMM", bound), bufs)

    def conv_raw(self, desc: ConvDesc, x: np.ndarray | None, wt: np.ndarray | None,
                 bias: np.ndarray | None, out: np.ndarray | None,
                 selector: Selector | None = None, timing: Timing | None = None,
                 guard: str | None = None) -> CallResult:
        desc.checked()
        self._sync_table(selector)
        w = Writer()
        for name in ConvDesc.SIZE_FIELDS:
            w.u64(_u64(getattr(desc, name), f"desc.{name}"))
        w.f32(desc.clamp_min)
        w.f32(desc.clamp_max)
        _selector(w, selector)
        bufs = Buffers(GUARDS.get(guard or "", 0), self._declared(selector))
        pw = Writer()
        bufs.ptr(pw, x, operand="A")
        bufs.ptr(pw, wt, operand="B")
        bufs.ptr(pw, bias, operand="bias")
        bufs.ptr(pw, out, output=True)
        _timing(pw, timing)
        bufs.encode(w)
        w.raw(pw.bytes())
        bound = self.bounds.call(conv_flops(desc), timing)
        return self._reply(self.call(CONV, w.bytes(), "convolution", bound), bufs)

    def pack_raw(self, backend: str | int | None, n: int, k: int, b: np.ndarray | None,
                 ldb: int, bias: np.ndarray | None = None, dst_size: int | None = None,
                 selector: Selector | None = None) -> np.ndarray:
        return self._pack(backend, n, k, b, ldb, bias, dst_size, selector, None)[0]

    def time_pack(self, backend: str | int | None, n: int, k: int, b: np.ndarray, ldb: int,
                  bias: np.ndarray | None, timing: Timing,
                  selector: Selector | None = None) -> CallResult:
        return self._pack(backend, n, k, b, ldb, bias, None, selector, timing)[1]

    def pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray | None, ldb: int,
                    bias: np.ndarray | None = None, dst_size: int | None = None,
                    fill: int | None = None, guard: str | None = None) -> np.ndarray:
        """B packed by a plugin realization's own packer, in the worker, into a
        destination filled with `fill` (default 0xA5); guard ("end", "start"): B and
        the bias lie against guard pages, as in a checking call."""
        return self._pack(None, n, k, b, ldb, bias, dst_size, Selector(force=realization), None,
                          PACK_PLUGIN, fill, guard)[0]

    def pack_plugin_lhs(self, realization: str, m: int, k: int, a: np.ndarray, lda: int,
                        fill: int | None = None, guard: str | None = None) -> np.ndarray:
        """A packed by a plugin realization's LHS packer, in the worker."""
        return self._pack(None, m, k, a, lda, None, None, Selector(force=realization), None,
                          PACK_PLUGIN_LHS, fill, guard)[0]

    def time_pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray, ldb: int,
                         bias: np.ndarray | None, timing: Timing) -> CallResult:
        return self._pack(None, n, k, b, ldb, bias, None, Selector(force=realization), timing,
                          PACK_PLUGIN)[1]

    def _pack(self, backend: str | int | None, n: int, k: int, b: np.ndarray | None, ldb: int,
              bias: np.ndarray | None, dst_size: int | None, selector: Selector | None,
              timing: Timing | None, mode: int | None = None, fill: int | None = None,
              guard: str | None = None) -> tuple[np.ndarray, CallResult]:
        be = backend_arg(backend)
        w = Writer()
        if mode is None:
            mode = PACK_PORTABLE if be is None else PACK_NATIVE
        if fill is not None:
            mode |= PACK_FILL_GIVEN | ((int(fill) & 0xFF) << 8)
        w.u32(mode)
        w.i32(0 if be is None else be)
        w.u64(_u64(n, "N"))
        w.u64(_u64(k, "K"))
        w.u64(_u64(ldb, "ldb"))
        _selector(w, selector)
        bufs = Buffers(GUARDS.get(guard or "", 0), self._declared(selector))
        pw = Writer()
        bufs.ptr(pw, b, operand="A" if mode & 0xFF == PACK_PLUGIN_LHS else "B")
        bufs.ptr(pw, bias, operand="bias")
        pw.u64(0 if dst_size is None else _u64(max(dst_size, 1), "dst_size"))
        _timing(pw, timing)
        bufs.encode(w)
        w.raw(pw.bytes())
        r = self.call(PACK, w.bytes(), "packing", self.bounds.call(pack_flops(n, k), timing))
        status, field, message = r.i32(), r.str(), r.str()
        times, reps = r.times()
        size = r.u64()
        if status != 0:
            raise from_status(status, field, message)
        data = np.frombuffer(bytes(r.take(size)), dtype=np.uint8).copy()
        return data, CallResult(None, times, reps)

    def load_table(self, table: api.DispatchTable) -> int:
        """Loads a dispatch table into the worker session; returns its rule count."""
        r = self.call(LOAD_TABLE, table.text.encode(), "load_table")
        status, field, message, rules = r.i32(), r.str(), r.str(), r.u32()
        if status != 0:
            raise from_status(status, field, message)
        self._table = table
        return rules

    def _sync_table(self, sel: Selector | None) -> None:
        """Loads the selector's table into the worker unless it is loaded; a
        table the worker refused before is refused again without re-sending
        it (it may be megabytes, and every case would carry it)."""
        loaded = getattr(self, "_table", None)
        if sel is None or sel.table is None or loaded is sel.table:
            return
        for table, exc in self._refused:
            if table is sel.table:
                raise type(exc)(exc.message, exc.field)
        try:
            self.load_table(sel.table)
        except (WorkerCrashed, ProtocolError):
            raise
        except KbenchError as exc:
            self._refused.append((sel.table, exc))
            raise

    def code_map(self) -> CodeMap:
        """CODE_MAP: the loaded objects' executable ranges and the code
        entries of every loaded plugin realization."""
        r = self.call(CODE_MAP, b"", "code_map")
        objects = []
        for _ in range(r.u32()):
            path, bias = r.str(), r.u64()
            objects.append(CodeObject(path, bias, tuple((r.u64(), r.u64())
                                                        for _ in range(r.u32()))))
        plugins: dict[str, tuple[CodeEntry, ...]] = {}
        for _ in range(r.u32()):
            r.str()  # the plugin's name; realization names carry it
            for _ in range(r.u32()):
                name = r.str()
                plugins[name] = tuple(CodeEntry(r.str(), r.str(), r.u64())
                                      for _ in range(r.u32()))
        return CodeMap(tuple(objects), plugins)

    def set_svl(self, bits: int) -> int:
        """Sets the worker's SME streaming vector length (PR_SME_SET_VL); returns
        the length it runs at now, in bits (the kernel rounds an unoffered
        length down)."""
        return self._set_vl(SET_SVL, "set_svl", bits)

    def set_sve_vl(self, bits: int) -> int:
        """Sets the worker's SVE vector length (PR_SVE_SET_VL), as set_svl sets
        the streaming one; returns the length it runs at now, in bits."""
        return self._set_vl(SET_SVE_VL, "set_sve_vl", bits)

    def _set_vl(self, kind: int, what: str, bits: int) -> int:
        if isinstance(bits, bool) or not isinstance(bits, int) or not 0 < bits < 1 << 32:
            raise api.InvalidArgument(f"bits: a vector length in bits, not {bits!r}", "bits")
        w = Writer()
        w.u32(bits)
        r = self.call(kind, w.bytes(), what)
        status, message, now = r.i32(), r.str(), r.u32()
        if status != 0:
            raise from_status(status, message.split(":")[0], message)
        return now
