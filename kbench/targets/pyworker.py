"""The emulated-Python target: kbench's in-process engine (the cffi module
and the peer backends) inside an aarch64 CPython run by qemu-aarch64.

The host side (`PyWorkerEngine`) starts `python3.11 -m kbench.targets.pyworker`
in the aarch64 root that kbench.targets.pyroot installs, under qemu-aarch64 with
the chosen CPU model and SVL, and forwards every engine call to an
`InProcessEngine` there. The kernels, the packers and the peers (ORT with
its own KleidiAI path) run in the emulated process through the aarch64
cffi module; inputs, the oracle and the verdicts stay on the host.

The protocol is private to this module (both ends are this file): frames
of a 4-byte magic, a u32 kind and a u64 length. A request is a pickle of
(method, args, kwargs) followed by the base buffers of its numpy
arguments; an array is pickled as (buffer index, byte offset, shape,
strides, dtype), so a view keeps its place in its buffer and guard regions
and row padding travel with it, as with the C worker. The reply carries
the result (or the error's class, message and field) and every buffer the
call changed, which the host copies back into place. A guest that dies
(a kernel's SIGSEGV, qemu's SIGILL) raises WorkerCrashed for that call
(WorkerExited for an exit() in a kernel, WorkerTimedOut for no reply
within the call's bound, kbench.targets.timeouts); the next call starts
a fresh one.

    python -m kbench.targets.pyworker     # the guest side: serves stdin/stdout
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO

import numpy as np

from kbench import errors
from kbench.errors import InternalError, KbenchError, ProtocolError, WorkerCrashed
from kbench.native.api import DispatchTable, RawProblem, Selector
from kbench.native.calls import CallResult, ConvDesc, TargetInfo, Timing
from kbench.targets.timeouts import CallBounds, conv_flops, gemm_flops, pack_flops
from kbench.targets.worker import (
    ProcessGone,
    child_preexec,
    death,
    exit_report,
    read_exactly,
)

MAGIC = b"KBPY"
VERSION = 2  # 2: tables travel once per guest, by digest
HEAD = struct.Struct("<4sIQ")
HELLO, CALL, REPLY, ERROR, SHUTDOWN = 1, 2, 3, 4, 5
MAX_FRAME = 1 << 31
# the time bounds of calls (kbench.targets.timeouts) scaled up: an emulated CPython
# pickles every buffer, and ORT sessions build slowly under emulation (the base
# bound becomes 1,800 s)
PY_SLOWDOWN = 15.0
START_TIMEOUT = 300.0  # seconds for the guest to import numpy, cffi and the peers

# the engine methods the host may call
METHODS = ("info", "gemm_raw", "conv_raw", "pack_raw", "time_pack", "pack_plugin",
           "pack_plugin_lhs", "time_pack_plugin")


# ---- frames and buffers (both ends) ---------------------------------------------------


def _root(a: np.ndarray) -> np.ndarray:
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    return base


def _addr(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def _write_frame(out: BinaryIO, kind: int, parts: list[bytes | memoryview]) -> None:
    size = sum(len(p) for p in parts)
    out.write(HEAD.pack(MAGIC, kind, size))
    for p in parts:
        out.write(p)
    out.flush()


def _split(body: memoryview) -> tuple[memoryview, list[memoryview]]:
    """A body is: u32 count, u64 sizes[count + 1], then the pickle and the buffers."""
    (count,) = struct.unpack_from("<I", body, 0)
    sizes = struct.unpack_from(f"<{count + 1}Q", body, 4)
    pos = 4 + 8 * (count + 1)
    chunks = []
    for s in sizes:
        if pos + s > len(body):
            raise ProtocolError("emulated python: truncated frame", "reply")
        chunks.append(body[pos:pos + s])
        pos += s
    return chunks[0], chunks[1:]


def _join(pickled: bytes, buffers: list[bytes | memoryview]) -> list[bytes | memoryview]:
    sizes = [len(pickled), *(len(b) for b in buffers)]
    head = struct.pack(f"<I{len(sizes)}Q", len(buffers), *sizes)
    return [head, pickled, *buffers]


class _HostPickler(pickle.Pickler):
    """Pickles a call: arrays by (buffer, offset, layout), tables by digest,
    with their text the first time this guest sees them (`sent` holds the
    digests it has: a table, refused or not, travels once per guest)."""

    def __init__(self, file: io.BytesIO, sent: set[str] | None = None) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.bases: list[np.ndarray] = []
        self._index: dict[int, int] = {}
        self.sent = sent if sent is not None else set()

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            base = _root(obj)
            if not base.flags.c_contiguous:
                base = obj = np.ascontiguousarray(obj)
            key = id(base)
            if key not in self._index:
                self._index[key] = len(self.bases)
                self.bases.append(base)
            off = _addr(obj) - _addr(base)
            if not 0 <= off <= base.nbytes:
                raise ProtocolError("an argument lies outside its buffer", "buffers")
            return ("array", self._index[key], off, obj.shape, obj.strides, obj.dtype.str)
        if isinstance(obj, DispatchTable):
            digest = hashlib.sha256(obj.text.encode()).hexdigest()
            text = None if digest in self.sent else obj.text
            self.sent.add(digest)
            return ("table", digest, text, obj.path)
        return None


class _CallUnpickler(pickle.Unpickler):
    def __init__(self, data: memoryview, bases: list[np.ndarray],
                 tables: dict[str, DispatchTable]) -> None:
        super().__init__(io.BytesIO(data))
        self.bases, self.tables = bases, tables

    def persistent_load(self, pid: Any) -> Any:
        if pid[0] == "array":
            _, index, off, shape, strides, dtype = pid
            base = self.bases[index]
            return np.ndarray(shape, np.dtype(dtype), buffer=base, offset=off, strides=strides)
        if pid[0] == "table":
            _, digest, text, path = pid
            if digest not in self.tables:  # loaded once per guest, like a worker's table
                if text is None:
                    raise ProtocolError("emulated python: a table was referred to before it "
                                        "was sent", "request")
                self.tables[digest] = DispatchTable(text, path)
            return self.tables[digest]
        raise pickle.UnpicklingError(f"unknown persistent id {pid[0]!r}")


# ---- the guest ----------------------------------------------------------------------


def serve(inp: BinaryIO, out: BinaryIO, plugins: list[str] | None = None) -> int:
    """The guest loop: an InProcessEngine (with `plugins` loaded) answering
    frames until SHUTDOWN or EOF."""
    import platform

    from kbench.targets.inprocess import InProcessEngine

    engine = InProcessEngine(plugins=plugins or [])
    tables: dict[str, DispatchTable] = {}
    hello = {"version": VERSION, "machine": platform.machine(),
             "python": platform.python_version(), "pid": os.getpid(),
             "peers": [p.__class__.__name__ for p in engine.peers]}
    _write_frame(out, HELLO, _join(pickle.dumps(hello), []))
    while True:
        head = inp.read(HEAD.size)
        if len(head) < HEAD.size:
            return 0
        magic, kind, size = HEAD.unpack(head)
        if magic != MAGIC or size > MAX_FRAME:
            return 2
        body = memoryview(inp.read(size))
        if len(body) != size:
            return 2
        if kind == SHUTDOWN:
            _write_frame(out, REPLY, _join(pickle.dumps(None), []))
            return 0
        pickled, chunks = _split(body)
        originals = [bytes(c) for c in chunks]
        bases = [np.frombuffer(bytearray(c), dtype=np.uint8) for c in chunks]
        try:
            method, args, kwargs = _CallUnpickler(pickled, bases, tables).load()
            if method not in METHODS:
                raise ProtocolError(f"emulated python: no method {method!r}", "request")
            result = getattr(engine, method)(*args, **kwargs)
            reply = ("ok", result)
        except KbenchError as exc:
            reply = ("err", type(exc).__name__, str(exc), exc.field, "")
        except Exception as exc:  # noqa: BLE001 - any guest failure goes back as a reply
            reply = ("err", "InternalError", f"emulated python: {type(exc).__name__}: {exc}",
                     "", traceback.format_exc(limit=8))
        changed = [i for i, (b, o) in enumerate(zip(bases, originals, strict=True))
                   if b.tobytes() != o]
        payload = pickle.dumps((reply, changed), protocol=pickle.HIGHEST_PROTOCOL)
        _write_frame(out, REPLY, _join(payload, [bases[i].data for i in changed]))


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="the guest side of the qemu-python target")
    ap.add_argument("--plugin", action="append", default=[],
                    help="a plugin library for the in-process engine (repeatable)")
    args = ap.parse_args(argv)
    # the protocol owns the real stdout; anything printed (by a library) goes to stderr
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve(sys.stdin.buffer, proto_out, args.plugin)


# ---- the host ------------------------------------------------------------------------


@dataclass
class PySpec:
    """How to start the guest: argv (qemu ... python3.11), environment, CPU."""

    command: list[str]
    env: dict[str, str]
    cpu: str
    svl: int | None = None
    bounds: CallBounds = field(default_factory=lambda: CallBounds(True, slowdown=PY_SLOWDOWN))
    start_timeout: float = START_TIMEOUT
    extra: dict[str, Any] = field(default_factory=dict)
    plugins: list[str] = field(default_factory=list)  # aarch64 plugin libraries to load


class PyWorkerEngine:
    """An InProcessEngine inside the emulated aarch64 Python (see the module doc)."""

    emulated = True

    def __init__(self, spec: PySpec) -> None:
        self.spec = spec
        self.proc: subprocess.Popen[bytes] | None = None
        self._stderr: Any = None
        self.restarts = 0
        self.hello: dict[str, Any] = {}
        self.start_seconds = 0.0
        self._tables_sent: set[str] = set()  # digests of the tables this guest holds

    # -- process ------------------------------------------------------------------

    def _start(self) -> None:
        self._tables_sent = set()  # a fresh guest holds no table
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the guest
        t0 = time.monotonic()
        try:
            plugin_args = [a for path in self.spec.plugins for a in ("--plugin", path)]
            self.proc = subprocess.Popen([*self.spec.command, "-m", "kbench.targets.pyworker",
                                          *plugin_args],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr, env=self.spec.env,
                                         preexec_fn=child_preexec())
        except OSError as exc:
            raise WorkerCrashed(f"emulated python: cannot start {self.spec.command[0]}: {exc}",
                                "worker") from exc
        kind, body = self._frame("start-up", self.spec.start_timeout)
        if kind != HELLO:
            self.kill()
            raise ProtocolError(f"emulated python: expected hello, got frame {kind}", "reply")
        pickled, _ = _split(body)
        self.hello = pickle.loads(pickled)
        if self.hello.get("version") != VERSION:
            self.kill()
            raise ProtocolError(f"emulated python speaks version {self.hello.get('version')}, "
                                f"kbench speaks {VERSION}", "protocol")
        self.start_seconds = time.monotonic() - t0

    def _died(self, during: str, timed_out: bool = False) -> WorkerCrashed:
        proc, self.proc = self.proc, None
        how, tail = exit_report(proc, self._stderr, 600)
        self.restarts += 1
        return death("emulated python", how, during, tail, timed_out)

    def _read(self, n: int, during: str, timeout: float) -> bytes:
        assert self.proc is not None
        try:
            return read_exactly(self.proc, n, timeout)
        except ProcessGone as gone:
            raise self._died(f"{during} (no reply within {timeout:.0f} s, killed)"
                             if gone.timed_out else during, gone.timed_out) from None

    def _frame(self, during: str, timeout: float) -> tuple[int, memoryview]:
        magic, kind, size = HEAD.unpack(self._read(HEAD.size, during, timeout))
        if magic != MAGIC or size > MAX_FRAME:
            self.kill()
            raise ProtocolError("emulated python sent a malformed frame", "reply")
        return kind, memoryview(self._read(size, during, timeout))

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Runs engine.method(*args, **kwargs) in the guest; numpy arguments the
        call writes come back into place; guest errors are raised here."""
        return self.call_within(None, method, *args, **kwargs)

    def call_within(self, timeout: float | None, method: str, *args: Any, **kwargs: Any) -> Any:
        """`call` with the reply awaited at most `timeout` seconds (None: the
        bound of a control request). An interrupt kills the guest."""
        try:
            return self._call(self.spec.bounds.control() if timeout is None else timeout,
                              method, args, kwargs)
        except (KeyboardInterrupt, SystemExit):
            self.kill()
            raise

    def _call(self, timeout: float, method: str, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
        if self.proc is None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        buf = io.BytesIO()
        pickler = _HostPickler(buf, self._tables_sent)
        pickler.dump((method, args, kwargs))
        parts = _join(buf.getvalue(), [b.reshape(-1).view(np.uint8).data
                                       for b in pickler.bases])
        try:
            _write_frame(self.proc.stdin, CALL, parts)
        except (BrokenPipeError, OSError):
            raise self._died(method) from None
        kind, body = self._frame(method, timeout)
        if kind != REPLY:
            self.kill()
            raise ProtocolError(f"emulated python replied with frame {kind} to a call", "reply")
        pickled, chunks = _split(body)
        reply, changed = pickle.loads(pickled)
        if len(changed) != len(chunks):
            raise ProtocolError("emulated python: changed-buffer count mismatch", "reply")
        for index, data in zip(changed, chunks, strict=True):
            flat = pickler.bases[index].reshape(-1).view(np.uint8)
            if flat.size != len(data):
                raise ProtocolError("emulated python returned a buffer of the wrong size",
                                    "reply")
            flat[:] = np.frombuffer(data, dtype=np.uint8)
        if reply[0] == "ok":
            return reply[1]
        _, cls_name, message, fld, tb = reply
        cls = getattr(errors, cls_name, None)
        if not (isinstance(cls, type) and issubclass(cls, KbenchError)):
            cls = InternalError
        exc = cls(message + (f"\n{tb}" if tb else ""), fld)
        raise exc

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def close(self) -> None:
        if self.proc is not None:
            try:
                assert self.proc.stdin is not None
                _write_frame(self.proc.stdin, SHUTDOWN, [])
                self._frame("shutdown", 30)
                self.proc.wait(timeout=30)
            except BaseException:  # noqa: BLE001 - closing must not raise (an interrupt neither)
                self.kill()
            self.proc = None

    def discard(self) -> None:
        """Kills the guest without a normal exit (its heap may be damaged)."""
        if self.proc is not None:
            self.kill()
            self.restarts += 1

    # -- engine interface -----------------------------------------------------------

    def info(self, name: str) -> TargetInfo:
        info: TargetInfo = self.call("info", name)
        extra = {**info.extra, "command": self.spec.command, "qemu_cpu": self.spec.cpu,
                 "guest_python": self.hello.get("python", ""),
                 "guest_start_seconds": round(self.start_seconds, 2), **self.spec.extra}
        return replace(info, kind="qemu-python", emulated=True, extra=extra)

    def gemm_raw(self, m: int, n: int, k: int, problems: list[RawProblem],
                 selector: Selector | None = None, timing: Timing | None = None) -> CallResult:
        return self.call_within(self.spec.bounds.call(gemm_flops(m, n, k, len(problems)), timing),
                                "gemm_raw", m, n, k, problems, selector, timing)

    def conv_raw(self, desc: ConvDesc, x: np.ndarray | None, w: np.ndarray | None,
                 bias: np.ndarray | None, out: np.ndarray | None,
                 selector: Selector | None = None, timing: Timing | None = None
                 ) -> CallResult:
        return self.call_within(self.spec.bounds.call(conv_flops(desc), timing),
                                "conv_raw", desc, x, w, bias, out, selector, timing)

    def pack_raw(self, backend: str | int | None, n: int, k: int, b: np.ndarray | None,
                 ldb: int, bias: np.ndarray | None = None, dst_size: int | None = None,
                 selector: Selector | None = None) -> np.ndarray:
        return self.call_within(self.spec.bounds.call(pack_flops(n, k)),
                                "pack_raw", backend, n, k, b, ldb, bias, dst_size, selector)

    def time_pack(self, backend: str | int | None, n: int, k: int, b: np.ndarray, ldb: int,
                  bias: np.ndarray | None, timing: Timing,
                  selector: Selector | None = None) -> CallResult:
        return self.call_within(self.spec.bounds.call(pack_flops(n, k), timing),
                                "time_pack", backend, n, k, b, ldb, bias, timing, selector)

    def pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray | None, ldb: int,
                    bias: np.ndarray | None = None, dst_size: int | None = None,
                    fill: int | None = None, guard: str | None = None) -> np.ndarray:
        # the emulated Python has no guard pages: `guard` is for a worker's checking runs
        return self.call_within(self.spec.bounds.call(pack_flops(n, k)),
                                "pack_plugin", realization, n, k, b, ldb, bias, dst_size, fill)

    def pack_plugin_lhs(self, realization: str, m: int, k: int, a: np.ndarray, lda: int,
                        fill: int | None = None, guard: str | None = None) -> np.ndarray:
        return self.call_within(self.spec.bounds.call(pack_flops(m, k)),
                                "pack_plugin_lhs", realization, m, k, a, lda, fill)

    def time_pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray, ldb: int,
                         bias: np.ndarray | None, timing: Timing) -> CallResult:
        return self.call_within(self.spec.bounds.call(pack_flops(n, k), timing),
                                "time_pack_plugin", realization, n, k, b, ldb, bias, timing)

    def set_svl(self, bits: int) -> int:
        from kbench.errors import Unsupported
        raise Unsupported("selector: the emulated-Python target's vector length is fixed at "
                          "start (qemu-python:svl=BITS)", "selector")

    def set_sve_vl(self, bits: int) -> int:
        # as its SVL: the engine in the emulated process is an in-process one, which
        # changes no vector length under the peers that share its process
        from kbench.errors import Unsupported
        raise Unsupported("selector: the emulated-Python target's SVE vector length is fixed "
                          "at start (qemu-python:vl=BITS)", "selector")


if __name__ == "__main__":
    sys.exit(main())
