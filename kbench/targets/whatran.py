"""What actually ran in a call of a plugin realization on an emulated target.

A runtime picks its path at run time (SME2, SVE2.1 or NEON) and falls back
when an override declines; from outside only its outputs are seen, so a
silent fallback to another path passes every check of the result. Under
QEMU kbench sees more. On a `qemu:` target with plugins the worker runs with
execution logging into a pipe (`-d in_asm,exec,nochain`, as the instruction
counter does: kbench.targets.counting), restricted (-dfilter) to the code of
the plugins' own objects (every loaded object but the worker and the C
runtime), and every request comes back with the instructions each block of
that code executed, named by the function that holds it (the object's
symbols). A FENCE request after each request marks where its log ends.

Each verdict of such a call records the plugin functions that ran the most
instructions (results.csv `ran`, e.g. "exrt_sme2_kernel 81%, exrt_pack 6%,
... of 12,340 instructions"). A realization that declares the functions its
calls must run in (plugin ABI 3 `expect_symbols`, glob patterns, optionally
per ISA class: "sme2:kai_matmul_*sme2*") fails a call in which no function
of its own code matching the patterns that apply on this CPU ran, naming
what ran instead.

Cost: the traced worker logs only the plugin's blocks, but block chaining is
off for the whole process, so every call on that target runs slower than in
a plain worker (docs/plugins.md gives the measured factor). `KBENCH_WHAT_RAN=0`
turns it off: verdicts then record nothing and no declared symbols are
checked (run.json says so)."""

from __future__ import annotations

import bisect
import fnmatch
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.errors import InvalidArgument, KbenchError, WorkerCrashed
from kbench.native.calls import CallResult
from kbench.targets.crossbuild import SYSROOT_AARCH64
from kbench.targets.elf import Elf, ElfError, Function
from kbench.targets.qemutrace import TraceError, Window
from kbench.targets.worker import CodeMap, WorkerEngine, WorkerSpec

TRACE_FLAGS = ["-d", "in_asm,exec,nochain"]
# the guest in an address space of its own (QEMU's reserved_va): the dynamic loader then
# places every object at the same address on every start, which the log's filter needs
RESERVED_VA = ["-R", "0x8000000000"]
TRACE_SLOWDOWN = 10.0  # request bounds of a traced worker (kbench.targets.timeouts)
WINDOW_WAIT_S = 120.0  # for the log of a call to be read after its reply came
TOP = 4  # functions a verdict names
ENV = "KBENCH_WHAT_RAN"
# objects of the C runtime: not the plugin's own code
RUNTIME_OBJECTS = ("ld-linux", "libc.so", "libm.so", "libpthread", "libdl.so", "librt.so",
                   "libgcc_s", "libstdc++", "linux-vdso")


def enabled() -> bool:
    """Is "what ran" on (the default), or turned off with KBENCH_WHAT_RAN=0?"""
    value = os.environ.get(ENV, "").strip()
    if value in ("", "1"):
        return True
    if value == "0":
        return False
    raise InvalidArgument(f"{ENV}: {value!r} is not 0 or 1 (0 turns off the record of which "
                          "code a plugin's call ran on emulated targets)", ENV)


@dataclass(frozen=True)
class RanFunction:
    name: str  # the function (or "<object>+0x..." where no symbol covers it)
    obj: str  # the object's file name
    instructions: int
    own: bool  # the plugin's own code (not the worker, not the C runtime)


@dataclass(frozen=True)
class Ran:
    """The code one call executed, by function, most first."""

    functions: tuple[RanFunction, ...]

    @property
    def total(self) -> int:
        return sum(f.instructions for f in self.functions)

    @property
    def own(self) -> tuple[RanFunction, ...]:
        return tuple(f for f in self.functions if f.own)

    def text(self, top: int = TOP) -> str:
        """"exrt_sme2_kernel 81%, memcpy 6%, ... of 12,340 instructions"."""
        total = self.total
        if not total:
            return ""
        shown = ", ".join(f"{f.name} {f.instructions / total:.0%}" for f in self.functions[:top])
        more = ", ..." if len(self.functions) > top else ""
        return f"{shown}{more} of {total:,} instructions"


class Symbolizer:
    """Names the function at a run-time address of a worker process."""

    def __init__(self, code: CodeMap, worker_binary: str,
                 sysroot: Path = SYSROOT_AARCH64) -> None:
        self.objects = code.objects
        self.worker_binary = worker_binary
        self.sysroot = sysroot
        self._funcs: dict[str, tuple[list[int], list[Function]]] = {}
        self._sections: dict[str, list[tuple[int, int, str]]] = {}
        self._cache: dict[int, tuple[str, str, bool]] = {}

    def _local(self, path: str) -> str:
        """The file of an object as this machine reads it: the worker's own
        binary, a library of the guest's root under the cross sysroot, or the
        path itself (a plugin)."""
        if path == "":
            return self.worker_binary
        under = self.sysroot / path.lstrip("/")
        return str(under) if under.exists() else path

    def _functions(self, path: str) -> tuple[list[int], list[Function]]:
        if path not in self._funcs:
            try:
                elf = Elf(self._local(path))
                funcs = elf.functions() or elf.functions(11)  # SHT_DYNSYM when stripped
                self._sections[path] = [(s.addr, s.addr + s.size, s.name) for s in elf.sections
                                        if s.addr and s.name]
            except ElfError:
                funcs = []
            funcs = [f for f in funcs if f.size]
            self._funcs[path] = ([f.addr for f in funcs], funcs)
        return self._funcs[path]

    def _section(self, path: str, offset: int) -> str:
        """The section that holds an offset no function symbol covers (.plt: the
        stubs of calls into other objects), or ''."""
        return next((name for a, b, name in self._sections.get(path, ()) if a <= offset < b), "")

    def name(self, pc: int) -> tuple[str, str, bool]:
        """(function, object file name, the plugin's own code?) of an address."""
        hit = self._cache.get(pc)
        if hit is not None:
            return hit
        out = (f"{pc:#x}", "?", False)
        for obj in self.objects:
            if not any(a <= pc < b for a, b in obj.segments):
                continue
            file = Path(obj.path).name if obj.path else Path(self.worker_binary).name
            own = obj.path != "" and not any(r in file for r in RUNTIME_OBJECTS)
            addrs, funcs = self._functions(obj.path)
            offset = pc - obj.bias
            i = bisect.bisect_right(addrs, offset) - 1
            if i >= 0 and funcs[i].addr <= offset < funcs[i].end:
                out = (funcs[i].name, file, own)
            elif section := self._section(obj.path, offset):
                out = (f"{file}:{section}", file, own)
            else:
                out = (f"{file}+{offset:#x}", file, own)
            break
        self._cache[pc] = out
        return out


def summarize(window: Window, symbols: Symbolizer) -> Ran:
    """The functions a window's blocks lie in, with the instructions each ran."""
    per: dict[tuple[str, str, bool], int] = {}
    for pc, n in window.blocks.items():
        key = symbols.name(pc)
        per[key] = per.get(key, 0) + n
    funcs = sorted((RanFunction(name, obj, n, own) for (name, obj, own), n in per.items()),
                   key=lambda f: (-f.instructions, f.name))
    return Ran(tuple(funcs))


def applicable_patterns(patterns: tuple[str, ...], classes: tuple[str, ...]) -> tuple[str, ...]:
    """The declared patterns that apply on a CPU with these ISA classes: those of
    the first class named (in declaration order) that the CPU has, or, where
    no named class applies, those without a class (kbench_plugin.h)."""
    for p in patterns:
        isa, sep, _ = p.partition(":")
        if sep and isa in classes:
            return tuple(q.partition(":")[2] for q in patterns if q.partition(":")[0] == isa
                         and ":" in q)
    return tuple(p for p in patterns if ":" not in p)


def check(ran: Ran, patterns: tuple[str, ...], classes: tuple[str, ...]) -> str:
    """'' when the call ran code of a function the realization declares for this
    CPU, else why not (naming what ran); '' when nothing is declared for it.
    The test is that a declared function ran at all, not that it ran the most:
    helpers both paths share (a dot product, a packer) may outweigh the entry
    of either, while a fallback to another path never enters the declared one."""
    want = applicable_patterns(patterns, classes)
    if not want:
        return ""
    own = ran.own
    if any(fnmatch.fnmatchcase(f.name, w) for f in own for w in want):
        return ""
    total = sum(f.instructions for f in own)
    shown = (", ".join(f"{f.name} {f.instructions / total:.0%}" for f in own[:TOP])
             + (", ..." if len(own) > TOP else "") + f" of {total:,} instructions"
             if own else "none of its own code")
    return (f"ran elsewhere than it declares: none of {' or '.join(want)} ran in this call "
            f"(a fallback to another path?); what ran: {shown}")


class BlockTally:
    """Feeds on a QEMU log of `-d in_asm,exec,nochain` restricted (-dfilter) to
    the plugin's code and the worker's fence function: per executed block the
    instructions it ran, added up between two fences into one record per
    request. Thread-safe for one feeder and any waiters."""

    def __init__(self, fence: tuple[int, int]) -> None:
        self.fence = fence  # [start, end) of kb_worker_fence in this process
        self.records: list[dict[int, int]] = []
        self.error = ""
        self._sizes: dict[bytes, tuple[int, int]] = {}  # block key -> (pc, instructions)
        self._cond = threading.Condition()

    def feed(self, lines: Any) -> None:
        sizes, tally = self._sizes, {}
        pending: list[int] | None = None
        lo, hi = self.fence
        try:
            for line in lines:
                head = line[:2]
                if head == b"Tr":  # Trace 0: 0xHOST [.../PC/FLAGS/CFLAGS] sym
                    key = line[line.index(b":") + 2:line.index(b"]")]
                    block = sizes.get(key)
                    if block is None:
                        pc = int(key.split(b"/")[1], 16)
                        if pending is None or not pending or pending[0] != pc:
                            raise TraceError(f"what ran: block {pc:#x} executed without being "
                                             "logged (log out of sync)", "trace")
                        block = sizes[key] = (pc, len(pending))
                        pending = None
                    pc, n = block
                    if lo <= pc < hi:
                        with self._cond:
                            self.records.append(tally)
                            self._cond.notify_all()
                        tally = {}
                    else:
                        tally[pc] = tally.get(pc, 0) + n
                elif head == b"0x":
                    if pending is not None:
                        pending.append(int(line[2:line.index(b":")], 16))
                elif head == b"IN":
                    pending = []
        except (TraceError, ValueError) as exc:
            with self._cond:
                self.error = str(exc)
            for _ in lines:  # keep draining, so QEMU never blocks on a full pipe
                pass
        finally:
            with self._cond:
                self._cond.notify_all()

    def wait_for(self, n: int, timeout: float) -> list[dict[int, int]]:
        """The first n records; raises TraceError on a parse error or timeout."""
        with self._cond:
            self._cond.wait_for(lambda: len(self.records) >= n or bool(self.error), timeout)
            if self.error:
                raise TraceError(self.error, "trace")
            if len(self.records) < n:
                raise TraceError(f"what ran: {len(self.records)} of {n} requests read from the "
                                 f"log within {timeout:.0f} s", "trace")
            return list(self.records[:n])


@dataclass
class _Trace:
    tally: BlockTally
    reader: threading.Thread
    symbols: Symbolizer
    seen: int = 0  # records read so far


FENCE_FUNCTION = "kb_worker_fence"  # the worker function a FENCE request runs


def _own_objects(code: CodeMap) -> list[Any]:
    """The plugin's objects: every loaded object but the worker and the C runtime."""
    return [o for o in code.objects if o.path
            and not any(r in Path(o.path).name for r in RUNTIME_OBJECTS)]


def _layout(code: CodeMap) -> list[tuple[str, int, tuple[tuple[int, int], ...]]]:
    return sorted((o.path, o.bias, o.segments) for o in code.objects)


class TracedWorkerEngine(WorkerEngine):
    """A worker under QEMU whose calls into plugin code are traced: each call's
    result carries the plugin code it ran (CallResult.ran).

    QEMU logs the blocks it executes only inside address ranges fixed when it
    starts (-dfilter), and a plugin's code lies where the dynamic loader put
    it, known once it is loaded. So the worker is started once plainly, its
    plugins loaded and its code map read, then started again with the log
    restricted to the plugin's objects and the worker's fence function (the
    guest's layout is the same from one start to the next: checked, and a
    worker whose layout moved is traced whole instead). After every request
    that may call the library kbench sends a FENCE request: the blocks logged
    before the fence's own are the request's, exactly, however far the log's
    reader lags. See the module doc."""

    prefix = "traced worker"

    def __init__(self, spec: WorkerSpec) -> None:
        from kbench.targets.timeouts import CallBounds
        bounds = spec.bounds or CallBounds(True)
        spec.bounds = CallBounds(bounds.emulated, bounds.fixed,
                                 bounds.slowdown * TRACE_SLOWDOWN)
        super().__init__(spec)
        self._base = [*spec.command[:-1], *RESERVED_VA, spec.command[-1]]
        self._trace: _Trace | None = None
        self._filter: tuple[str, tuple[int, int], list[Any]] | None = None
        self._elf: Elf | None = None
        self._probing = False
        self._wfd = -1
        self._rfd = -1

    def _fence_range(self, code: CodeMap) -> tuple[int, int]:
        if self._elf is None:
            self._elf = Elf(self._base[-1])
        f = next((f for f in self._elf.functions() if f.name == FENCE_FUNCTION), None)
        if f is None:
            raise TraceError(f"what ran: {FENCE_FUNCTION} is not in {self._base[-1]} (rebuild "
                             "the worker: python -m kbench.targets.crossbuild --arch "
                             "aarch64-dyn)", "trace")
        bias = code.worker().bias
        return bias + f.addr, bias + f.end

    def _probe_layout(self) -> None:
        """Starts the worker plainly once: where its plugins' code lies."""
        self._probing = True
        try:
            WorkerEngine._start(self)
            code = self.code_map()
            WorkerEngine.close(self)
        finally:
            self._probing = False
        ranges = [seg for o in _own_objects(code) for seg in o.segments]
        fence = self._fence_range(code)
        parts = [f"{a:#x}..{b - 1:#x}" for a, b in sorted([*ranges, fence])]
        self._filter = (",".join(parts), fence, _layout(code))

    def _spawn(self) -> None:
        if self._probing:
            self.spec.command = list(self._base)
            self.spec.pass_fds = ()
            super()._spawn()
            return
        if self._filter is None:
            self._probe_layout()
        assert self._filter is not None
        ranges, _, _ = self._filter
        self._rfd, self._wfd = os.pipe()
        self.spec.command = [*self._base[:-1], *TRACE_FLAGS, "-dfilter", ranges,
                             "-D", f"/dev/fd/{self._wfd}", self._base[-1]]
        self.spec.pass_fds = (self._wfd,)
        try:
            super()._spawn()
        except BaseException:
            os.close(self._rfd)
            raise
        finally:
            os.close(self._wfd)  # the child holds the only write end now

    def _start(self) -> None:
        super()._start()
        if self._probing:
            return
        assert self._filter is not None
        _, fence, layout = self._filter
        code = self.code_map()
        if _layout(code) != layout:  # the loader placed the code elsewhere this time
            self.kill()
            self._filter = None
            raise TraceError("what ran: the worker's code moved between two starts; "
                             f"trace with {ENV}=0 off", "trace")
        tally = BlockTally(fence)
        rfd = self._rfd

        def read() -> None:
            with os.fdopen(rfd, "rb", buffering=1 << 20) as log:
                tally.feed(log)

        reader = threading.Thread(target=read, daemon=True, name="kbench-what-ran")
        reader.start()
        self._trace = _Trace(tally, reader, Symbolizer(code, self._base[-1]))
        self._fenced()  # what loading ran (the plugin's initializers) is not a call's

    def _fenced(self) -> dict[int, int] | None:
        """The plugin code the requests since the last fence ran (block -> instructions)."""
        from kbench.targets.worker import FENCE
        trace = self._trace
        if trace is None:
            return None
        self.call(FENCE, b"", "fence")
        try:
            records = trace.tally.wait_for(trace.seen + 1, WINDOW_WAIT_S)
        except TraceError:
            return None  # the log could not be read: nothing is recorded for this call
        trace.seen += 1
        return records[trace.seen - 1]

    def _ran(self) -> Ran | None:
        blocks = self._fenced()
        trace = self._trace
        if blocks is None or trace is None:
            return None
        return summarize(Window("call", "", blocks=blocks), trace.symbols)

    def _traced(self, run: Any) -> Any:
        try:
            res = run()
        except WorkerCrashed:
            self._trace = None  # a fresh worker starts a fresh log
            raise
        except KbenchError:
            if self.proc is not None:
                self._fenced()  # what the refused request ran is not the next call's
            raise
        return res

    def gemm_raw(self, *args: Any, **kwargs: Any) -> CallResult:
        res = self._traced(lambda: super(TracedWorkerEngine, self).gemm_raw(*args, **kwargs))
        return _with(res, self._ran())

    def conv_raw(self, *args: Any, **kwargs: Any) -> CallResult:
        res = self._traced(lambda: super(TracedWorkerEngine, self).conv_raw(*args, **kwargs))
        return _with(res, self._ran())

    def _pack(self, *args: Any, **kwargs: Any) -> Any:
        out = self._traced(lambda: super(TracedWorkerEngine, self)._pack(*args, **kwargs))
        self._fenced()  # the packing's blocks: read, so that the next call's are its own
        return out

    def info(self, name: str) -> Any:
        from dataclasses import replace
        info = super().info(name)
        return replace(info, extra={**info.extra, "what_ran": (
            "every call's plugin code is traced (kbench.targets.whatran); "
            f"{ENV}=0 turns it off")})

    def _died(self, during: str, timed_out: bool = False) -> WorkerCrashed:
        self._trace = None
        return super()._died(during, timed_out)

    def close(self) -> None:
        trace = self._trace
        super().close()
        if trace is not None:
            trace.reader.join(timeout=30)
        self._trace = None


def _with(res: CallResult, ran: Ran | None) -> CallResult:
    from dataclasses import replace
    return replace(res, ran=ran) if ran is not None else res


__all__ = ["ENV", "Ran", "RanFunction", "Symbolizer", "TracedWorkerEngine", "applicable_patterns",
           "check", "enabled", "summarize"]
