"""Exact dynamic instruction counts from QEMU's execution log, per phase.

QEMU user mode logs, with `-d exec,nochain`, one line per executed
translation block (TB); with `-d in_asm` the guest instructions of every
block it translates. Two independent ways of counting follow from that:

- "tb" (the default): `-d in_asm,exec,nochain`; each execution of a block
  adds the number of instructions QEMU translated into it;
- "insn": `-one-insn-per-tb -d exec,nochain`; every block is one
  instruction, so every line is one executed instruction.

The parser follows the call stack through the log: a block that ends in a
call (BL, BLR) pushes a frame for the function it enters, one that ends in
RET pops it. A *window* opens when execution enters a window function
(kb_gemm_batch, kb_conv2d: a library call; kb_pack_b_native, kb_pack_b:
packing B) and closes when that function returns; every instruction in
between is counted, under the innermost *phase* function on the stack
(check_packed: validate, the micro-kernels: kernel, ...) or under the
window's own name. The instruction words come from the ELF file, so each
window also has an instruction mix per phase (kbench.targets.a64); in "tb"
mode the words the log prints are used (checked against the ELF file where
it has them), so code placed at run time — a shared library, a plugin —
is classified too, and a phase map can be set once the process has told
where its objects lie (TraceCounter.set_map).

Completeness is checked, not assumed: a call whose callee was not logged
(outside the -dfilter ranges) shows up as the next logged block being the
return address, and makes the window an error instead of a short count."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kbench.errors import KbenchError
from kbench.targets import a64
from kbench.targets.elf import Elf, Function

NCLASS = len(a64.CLASSES)
ROOT = ""  # the label of code in a window outside every phase function


class TraceError(KbenchError):
    """The log cannot be counted exactly (out of sync, a call not logged, ...)."""


@dataclass(frozen=True)
class PhaseMap:
    """Where windows and phases start, and the instruction words."""

    windows: Mapping[int, tuple[str, str]]  # entry address -> (kind, function name)
    phases: Mapping[int, str]  # entry address -> phase name
    words: Mapping[int, int]  # address -> instruction word (executable code)

    def word(self, addr: int) -> int:
        try:
            return self.words[addr]
        except KeyError:
            raise TraceError(f"trace: no instruction at {addr:#x} in the ELF file",
                             "trace") from None


def build_phase_map(elf: Elf, windows: Mapping[str, str],
                    phases: Iterable[tuple[str, Iterable[str]]],
                    kernel_rule: Callable[[Function], bool] | None = None,
                    bias: int = 0, extra_phases: Mapping[int, str] | None = None) -> PhaseMap:
    """A PhaseMap from function names ("name" for a global, "file.c:name" for
    a static function); every name must exist (a stale table is an error).
    `kernel_rule(function) -> bool` adds phase "kernel" functions by rule.
    `bias`: where the object was loaded (a position-independent executable);
    `extra_phases`: phase entry points at run-time addresses (a plugin's)."""
    funcs = elf.functions()
    by_name: dict[str, list[Function]] = {}
    for f in funcs:
        by_name.setdefault(f.qualified, []).append(f)
        if not f.local:
            by_name.setdefault(f.name, []).append(f)

    def find(name: str) -> list[Function]:
        found = by_name.get(name)
        if not found:
            raise TraceError(f"trace: function {name!r} is not in {elf.path} (the phase table "
                             "in kbench.targets.counting is out of date)", "trace")
        return found

    win: dict[int, tuple[str, str]] = {}
    for name, kind in windows.items():
        for f in find(name):
            win[bias + f.addr] = (kind, name)
    ph: dict[int, str] = {}
    for phase, names in phases:
        for name in names:
            for f in find(name):
                ph[bias + f.addr] = phase
    if kernel_rule is not None:
        for f in funcs:
            if kernel_rule(f):
                ph[bias + f.addr] = "kernel"
    for addr, phase in (extra_phases or {}).items():
        ph[addr] = phase
    text = elf.section(".text")
    raw = elf.read(text.addr, text.size)
    words = {bias + text.addr + 4 * i: int.from_bytes(raw[4 * i:4 * i + 4], "little")
             for i in range(len(raw) // 4)}
    return PhaseMap(win, ph, words)


EMPTY_MAP = PhaseMap({}, {}, {})  # no window opens: until the real map is known


@dataclass
class Window:
    """One counted window: instructions per phase path and their mix."""

    kind: str  # "call" or "pack_b"
    function: str
    counts: dict[str, int] = field(default_factory=dict)  # phase path -> instructions
    mix: dict[str, list[int]] = field(default_factory=dict)  # phase path -> per class
    # first address of each executed block -> its instructions executed in the window
    # (kept when the counter is asked to: which code ran, kbench.targets.whatran)
    blocks: dict[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def phase_total(self, phase: str) -> int:
        """Instructions under a phase (its own and those of phases inside it)."""
        return sum(n for path, n in self.counts.items() if phase in path.split(">"))

    def top_total(self, phase: str) -> int:
        """Instructions whose outermost phase is `phase` (ROOT: none)."""
        return sum(n for path, n in self.counts.items() if path.split(">")[0] == phase)

    def top_mix(self, phase: str | None) -> list[int]:
        """The class counts of an outermost phase (None: the whole window)."""
        out = [0] * NCLASS
        for path, m in self.mix.items():
            if phase is None or path.split(">")[0] == phase:
                out = [a + b for a, b in zip(out, m, strict=True)]
        return out


class _Block:
    """A translation block (or one instruction in "insn" mode)."""

    __slots__ = ("pc", "size", "flow", "last", "hist", "phase")

    def __init__(self, pc: int, addrs: list[int], pmap: PhaseMap,
                 logged: list[int] | None = None) -> None:
        """logged: the instruction words as the log printed them (code of
        objects the map has no words for: a shared library, a plugin);
        where the map has a word too they must agree."""
        self.pc = pc
        self.size = len(addrs)
        if logged is None:
            words = [pmap.word(a) for a in addrs]
        else:
            words = logged
            for a, w in zip(addrs, logged, strict=True):
                known = pmap.words.get(a)
                if known is not None and known != w:
                    raise TraceError(f"trace: the log shows {w:#010x} at {a:#x}, the ELF file "
                                     f"{known:#010x} (a different binary?)", "trace")
        hist = [0] * NCLASS
        for w in words:
            hist[a64.classify(w)] += 1
        self.hist = hist
        self.last = addrs[-1]
        self.flow = a64.flow(words[-1])
        self.phase = pmap.phases.get(pc)


class TraceCounter:
    """Feeds on QEMU log lines (bytes, from a reader thread) and collects
    closed windows in order. Thread-safe for one feeder and any waiters."""

    def __init__(self, pmap: PhaseMap, mode: str = "tb", keep_blocks: bool = False) -> None:
        if mode not in ("tb", "insn"):
            raise ValueError(f"mode must be 'tb' or 'insn', got {mode!r}")
        self.pmap, self.mode, self.keep_blocks = pmap, mode, keep_blocks
        self.blocks: dict[bytes, _Block] = {}
        self.windows: list[Window] = []
        self.error = ""
        self.lines = 0
        self._cond = threading.Condition()
        self._pending: list[int] | None = None  # addresses of the block being logged
        self._window: Window | None = None
        self._stack: list[str] = []  # phase path per frame
        self._counts: dict[str, dict[_Block, int]] = {}
        self._cur: dict[_Block, int] = {}
        self._call_ret = -1  # return address of a call just made, -1 if none
        self._next_map: PhaseMap | None = None  # set_map's, applied between windows
        self._words: list[int] = []  # the logged words of the block being logged

    def set_map(self, pmap: PhaseMap) -> None:
        """Replaces the phase map (a process whose code was placed at run time:
        its map is known only once it runs). Applied by the feeding thread
        before the next block it sees outside a window, so call it before the
        process makes the calls to be counted."""
        with self._cond:
            self._next_map = pmap

    def _apply_map(self) -> None:
        with self._cond:
            pmap, self._next_map = self._next_map, None
        if pmap is None:
            return
        self.pmap = pmap
        for block in self.blocks.values():
            block.phase = pmap.phases.get(block.pc)

    # ---- feeding -------------------------------------------------------------------------

    def feed(self, lines: Iterable[bytes]) -> None:
        """Consumes lines until they end (the log's writer closed it)."""
        try:
            if self.mode == "tb":
                self._feed_tb(lines)
            else:
                self._feed_insn(lines)
        except TraceError as exc:
            self._fail(str(exc))
            for _ in lines:  # keep draining, so QEMU never blocks on a full pipe
                pass
        finally:
            with self._cond:
                self._cond.notify_all()

    def _feed_tb(self, lines: Iterable[bytes]) -> None:
        blocks = self.blocks
        n = 0
        for line in lines:
            n += 1
            head = line[:2]
            if head == b"Tr":  # Trace 0: 0xHOST [ .../PC/FLAGS/CFLAGS] sym
                key = line[line.index(b":") + 2:line.index(b"]")]
                block = blocks.get(key)
                if self._pending is not None:
                    addrs, self._pending = self._pending, None
                    pc = int(key.split(b"/")[1], 16)
                    if not addrs or addrs[0] != pc:
                        raise TraceError(f"trace: block logged for {addrs[0] if addrs else 0:#x} "
                                         f"but {pc:#x} executed (log out of sync)", "trace")
                    block = blocks[key] = _Block(pc, addrs, self.pmap, self._words)
                elif block is None:
                    raise TraceError(f"trace: block {key.decode(errors='replace')} executed "
                                     "without being logged", "trace")
                self._exec(block)
            elif head == b"0x":
                if self._pending is not None:  # 0xADDR:  WORD  disassembly
                    colon = line.index(b":")
                    self._pending.append(int(line[2:colon], 16))
                    self._words.append(int(line[colon + 1:].split(None, 1)[0], 16))
            elif head == b"IN":
                self._pending = []
                self._words = []
        self.lines += n

    def _feed_insn(self, lines: Iterable[bytes]) -> None:
        blocks = self.blocks
        n = 0
        for line in lines:
            n += 1
            if line[:2] != b"Tr":
                continue
            key = line[line.index(b":") + 2:line.index(b"]")]
            block = blocks.get(key)
            if block is None:
                pc = int(key.split(b"/")[1], 16)
                block = blocks[key] = _Block(pc, [pc], self.pmap)
            self._exec(block)
        self.lines += n

    # ---- the call stack --------------------------------------------------------------------

    def _set_label(self, label: str) -> None:
        self._stack[-1] = label
        self._cur = self._counts.setdefault(label, {})

    def _exec(self, block: _Block) -> None:
        window = self._window
        if window is None:
            if self._next_map is not None:
                self._apply_map()
            entry = self.pmap.windows.get(block.pc)
            if entry is None:
                return
            window = self._window = Window(entry[0], entry[1])
            self._stack = [ROOT]
            self._counts = {}
            self._cur = self._counts.setdefault(ROOT, {})
            self._call_ret = -1
        elif self._call_ret >= 0:
            if block.pc == self._call_ret:
                raise TraceError(f"trace: a call from {self._call_ret - 4:#x} in "
                                 f"{window.function} ran code that was not logged (widen "
                                 "-dfilter)", "trace")
            self._call_ret = -1
            parent = self._stack[-1]
            label = parent
            if block.phase is not None and block.phase not in parent.split(">"):
                label = block.phase if parent == ROOT else f"{parent}>{block.phase}"
            self._stack.append(label)
            self._cur = self._counts.setdefault(label, {})
        elif block.phase is not None:  # entered by a branch (a tail call)
            parent = self._stack[-1]
            if block.phase not in parent.split(">"):
                self._set_label(block.phase if parent == ROOT else f"{parent}>{block.phase}")
        cur = self._cur
        cur[block] = cur.get(block, 0) + 1
        flow = block.flow
        if flow == a64.Flow.CALL:
            self._call_ret = block.last + 4
        elif flow == a64.Flow.RET:
            self._stack.pop()
            if not self._stack:
                self._close()
            else:
                self._cur = self._counts.setdefault(self._stack[-1], {})

    def _close(self) -> None:
        window = self._window
        assert window is not None
        for label, per_block in self._counts.items():
            total = 0
            mix = [0] * NCLASS
            for block, times in per_block.items():
                total += times * block.size
                if self.keep_blocks:
                    window.blocks[block.pc] = window.blocks.get(block.pc, 0) + times * block.size
                for c, k in enumerate(block.hist):
                    if k:
                        mix[c] += times * k
            if total:
                window.counts[label] = total
                window.mix[label] = mix
        self._window = None
        self._counts = {}
        with self._cond:
            self.windows.append(window)
            self._cond.notify_all()

    def _fail(self, message: str) -> None:
        with self._cond:
            self.error = self.error or message
            self._cond.notify_all()

    # ---- waiting ---------------------------------------------------------------------------

    def wait_for(self, n: int, timeout: float) -> list[Window]:
        """The first n closed windows; raises TraceError on a parse error or
        when they have not all closed within `timeout` seconds."""
        with self._cond:
            self._cond.wait_for(lambda: len(self.windows) >= n or bool(self.error), timeout)
            if self.error:
                raise TraceError(self.error, "trace")
            if len(self.windows) < n:
                raise TraceError(f"trace: {len(self.windows)} of {n} counted windows closed "
                                 f"within {timeout:.0f} s", "trace")
            return list(self.windows[:n])
