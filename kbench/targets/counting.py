"""The instruction counter of `qemu:` targets: the aarch64 worker under
qemu-aarch64 with execution logging into a pipe, streamed through
kbench.targets.qemutrace, one fresh worker process per counted case.

What is counted is the production worker binary (the one `qemu:` targets
run), unchanged: phases are found from its symbol table, nothing is added
to the library. The phases of a library call (window kb_gemm_batch or
kb_conv2d) are the functions below, each counted with everything it calls:

    validate   check_packed (and a plugin's check_header): the checks of a
               packed B a call makes (the header; the payload checksum where
               the contract has the call verify it)
    checksum   kb_fnv1a64, kb_payload_checksum(_on) and kb_header_seal: the
               header's FNV-1a and the payload checksum (inside validate in
               a call; in pack_b, sealing the packed buffer)
    pack_lhs   LHS packing and indirection tables: the SME LHS packers,
               the SME convolution's pointer table + packer, im2col, the
               NEON indirect convolution's row-pointer table
    pack_rhs   B (or filter) packed inside the call: plain or portable B for
               the SME and SVE2.1 kernels, the NEON tail panels
               (kb_neon_pack_narrow), the SME convolution's filter packing
    kernel     the micro-kernels: `run` and `*_core` of every
               kb_matmul_clamp_* / kb_imatmul_clamp_* / kb_conv2d_* file,
               and their KleidiAI-style *_run_matmul / *_run_imatmul
    (other)    everything else in the call: argument checks, dispatch,
               drivers, scratch, threads (the window minus the phases)

and pack_b is a window of its own: kb_pack_b_native, kb_pack_b or
kb_pack_b_plugin, as the perf suite times it.

Plugins: a plugin is loaded by the dynamically linked worker (aarch64-dyn,
under `qemu-aarch64 -L SYSROOT`), whose objects the dynamic loader places at
run time. That worker is logged whole (no -dfilter); once it has loaded the
plugins it is asked where its code lies (the worker's CODE_MAP: its own load
bias, and the entry address of every function of each plugin realization's
table), and the phase map is set from that: the same windows and phases as
for our code, plus the plugin's functions — run_matmul, run_matmul_lhs,
run_imatmul and the whole-call gemm/conv2d as kernel, its lhs_pack as
pack_lhs, its rhs_pack/pack_b as pack_rhs — each counted with everything it
calls. What kbench runs around a plugin's micro-kernel (the loops, the
packing buffers, the checks of the calling convention) is `other`. Only the
"tb" method counts plugins (it reads each instruction's word from the log;
"insn" would need the words of every loaded object).

Determinism: the guest's environment is empty, argv[0] and the executable
path are fixed ("./kb_worker", run from its folder), so the initial stack,
and with it every alignment-dependent path in libc, is the same on every
machine; counts repeat to the instruction."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import KbenchError
from kbench.targets.crossbuild import SYSROOT_AARCH64
from kbench.targets.elf import Elf, Function
from kbench.targets.qemutrace import (
    EMPTY_MAP,
    PhaseMap,
    TraceCounter,
    Window,
    build_phase_map,
)
from kbench.targets.timeouts import CallBounds
from kbench.targets.worker import CodeEntry, CodeMap, WorkerEngine, WorkerSpec

WINDOWS = {"kb_gemm_batch": "call", "kb_conv2d": "call",
           "kb_pack_b_native": "pack_b", "kb_pack_b": "pack_b", "kb_pack_b_plugin": "pack_b"}
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("validate", ("kb_gemm.c:check_packed", "kb_plugin_run.c:check_header")),
    ("checksum", ("kb_fnv1a64", "kb_payload_checksum_on", "kb_payload_checksum",
                  "kb_header_seal")),
    ("pack_lhs", ("kb_sme_gemm.c:gemm_pack_lhs", "kb_sme_lhs_pack_block",
                  "kb_sme_conv.c:conv_pack_lhs", "kb_sme_lhs_imatmul_pack_block",
                  "kb_im2col.c:im2col_group", "kb_neon_driver.c:build_table")),
    ("pack_rhs", ("kb_sme_rhs_pack_view", "kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_run",
                  "kb_pack_panels", "kb_neon_pack_narrow", "kb_sve_rhs_pack_view")),
)
KERNEL_FILES = ("kb_matmul_clamp_", "kb_imatmul_clamp_", "kb_conv2d_")
WORKER_OBJECTS = ("worker_kb_wire.o", "worker_kb_worker.o")  # the protocol, never counted
MODES = {"tb": ["-d", "in_asm,exec,nochain"],
         "insn": ["-one-insn-per-tb", "-d", "exec,nochain"]}
METHOD = {"tb": "qemu-tb", "insn": "qemu-insn"}
WINDOW_TIMEOUT = 1800.0  # seconds for the log of one case to be counted
COUNT_SLOWDOWN = 10.0  # the request bounds of a counting worker (kbench.targets.timeouts)


class CountError(KbenchError):
    """A case could not be counted exactly."""


def is_kernel(f: Function) -> bool:
    """The kernel rule: micro-kernel entry points, by file and name."""
    if f.local:
        return f.file.startswith(KERNEL_FILES) and (f.name == "run" or f.name.endswith("_core"))
    return (f.name.startswith(("kb_matmul_clamp_", "kb_imatmul_clamp_"))
            and f.name.endswith(("_run_matmul", "_run_imatmul")))


def map_ranges(map_path: Path, objects: tuple[str, ...]) -> list[tuple[int, int]]:
    """[start, end) of the .text of the named objects in an lld linker map."""
    out = []
    pattern = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+(\S+):\(\.text\)$")
    for line in map_path.read_text().splitlines():
        m = pattern.match(line)
        if m and Path(m.group(3)).name in objects:
            start = int(m.group(1), 16)
            out.append((start, start + int(m.group(2), 16)))
    return sorted(out)


def dfilter(text: tuple[int, int], excluded: list[tuple[int, int]]) -> str:
    """-dfilter ranges covering `text` minus the excluded ranges."""
    parts, lo = [], text[0]
    for a, b in sorted(excluded):
        if a > lo:
            parts.append(f"{lo:#x}..{a - 1:#x}")
        lo = max(lo, b)
    if lo < text[1]:
        parts.append(f"{lo:#x}..{text[1] - 1:#x}")
    return ",".join(parts)


def qemu_version(qemu: str) -> str:
    """"11.1.3" from `qemu-aarch64 -version` ("" if it cannot be read)."""
    try:
        out = subprocess.run([qemu, "-version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else ""


@dataclass
class CountTool:
    """Everything needed to count on one worker binary with one QEMU: the
    phase map from its symbols and the logging ranges from its linker map."""

    qemu: str
    worker: Path
    pmap: PhaseMap
    ranges: str  # -dfilter ranges ("": log everything)
    version: str
    excluded: list[tuple[int, int]] = field(default_factory=list)
    elf: Elf | None = None  # a dynamic worker's, for its map at run time
    dynamic: bool = False

    @classmethod
    def load(cls, qemu: str, worker: str | Path, dynamic: bool = False) -> CountTool:
        path = Path(worker).resolve()
        elf = Elf(path)
        pmap = build_phase_map(elf, WINDOWS, PHASES, is_kernel)  # every name must exist
        if dynamic:
            return cls(qemu, path, pmap, "", qemu_version(qemu), [], elf, True)
        text = elf.section(".text")
        map_path = path.with_suffix(".map")
        excluded = map_ranges(map_path, WORKER_OBJECTS) if map_path.exists() else []
        for addr, (_, name) in pmap.windows.items():
            if any(a <= addr < b for a, b in excluded):
                raise CountError(f"count: {name} lies in the worker's protocol code",
                                 "worker")
        return cls(qemu, path, pmap, dfilter((text.addr, text.addr + text.size), excluded),
                   qemu_version(qemu), excluded)

    def session(self, cpu: str, isa: str | None = None, mode: str = "tb",
                plugins: tuple[str, ...] = (),
                kernel_entries: Mapping[str, str] | None = None) -> CountingWorker:
        return CountingWorker(self, cpu, isa, mode, plugins, kernel_entries)

    def runtime_map(self, code: CodeMap, kernel_entries: Mapping[str, str] | None = None
                    ) -> PhaseMap:
        """The phase map of a dynamic worker at the addresses it runs at, with
        the entry points of its plugins' realizations. kernel_entries maps a
        plugin realization to a function of its library ("file.c:name" for a
        static one, as elf.Function.qualified): that function (with what it
        calls) is the realization's kernel phase instead of its table's
        kernel entry, whose own instructions (an adapter's argument
        marshalling) go to other."""
        assert self.elf is not None
        entries = dict(kernel_entries or {})
        unknown = sorted(set(entries) - set(code.plugins))
        if unknown:
            raise CountError(f"count: --kernel-entry names {', '.join(unknown)}, which no "
                             "loaded plugin offers", "kernel_entry")
        extra: dict[int, str] = {}
        for real, table in code.plugins.items():
            for e in table:
                if not (real in entries and e.phase == "kernel"):
                    extra[e.address] = e.phase
        for real, name in entries.items():
            extra[plugin_function(code, code.plugins[real], name)] = "kernel"
        return build_phase_map(self.elf, WINDOWS, PHASES, is_kernel, bias=code.worker().bias,
                               extra_phases=extra)


def plugin_function(code: CodeMap, table: tuple[CodeEntry, ...], name: str) -> int:
    """The run-time address of function `name` of the object that holds a
    plugin realization's table entries."""
    for obj in code.objects:
        inside = obj.path and any(a <= e.address < b for e in table for a, b in obj.segments)
        if not inside:
            continue
        found = [f for f in Elf(obj.path).functions() if name in (f.qualified, f.name)]
        if len(found) != 1:
            raise CountError(f"count: --kernel-entry {name}: {len(found)} functions of that "
                             f"name in {obj.path} (give file.c:name for a static one)",
                             "kernel_entry")
        return obj.bias + found[0].addr
    raise CountError(f"count: --kernel-entry {name}: the realization's code lies in no "
                     "loaded plugin object", "kernel_entry")


class CountingWorker:
    """A fresh worker under QEMU whose execution log is counted as it runs.
    Use as a context manager; `engine` speaks the worker protocol as usual,
    `windows(n)` waits for the first n counted windows."""

    def __init__(self, tool: CountTool, cpu: str, isa: str | None, mode: str,
                 plugins: tuple[str, ...] = (),
                 kernel_entries: Mapping[str, str] | None = None) -> None:
        if mode not in MODES:
            raise CountError(f"count: method {mode!r} is not one of {', '.join(MODES)}",
                             "method")
        if plugins and not tool.dynamic:
            raise CountError("count: plugins are counted in the dynamic worker only", "plugin")
        if tool.dynamic and mode != "tb":
            raise CountError("count: plugins are counted with --method tb only (insn mode "
                             "would need the instruction words of every loaded object)",
                             "method")
        self.tool, self.cpu, self.mode = tool, cpu, mode
        self.counter = TraceCounter(EMPTY_MAP if tool.dynamic else tool.pmap, mode)
        rfd, self._wfd = os.pipe()
        cmd = [tool.qemu]
        if tool.dynamic:
            cmd += ["-L", str(SYSROOT_AARCH64)]
        cmd += ["-cpu", cpu, "-0", "kb_worker"]
        if isa:
            cmd += ["-E", f"KBENCH_ISA_CAP={isa}"]
        cmd += MODES[mode]
        if tool.ranges:
            cmd += ["-dfilter", tool.ranges]
        cmd += ["-D", f"/dev/fd/{self._wfd}", "./" + tool.worker.name]
        # logging every translation block (or instruction) slows the guest down by
        # another factor of ten or more: the bounds of its requests grow with it
        spec = WorkerSpec(cmd, {}, emulated=True, bounds=CallBounds(True, slowdown=COUNT_SLOWDOWN),
                          pass_fds=(self._wfd,), cwd=str(tool.worker.parent), inherit_env=False,
                          plugins=[os.path.abspath(p) for p in plugins], arch="aarch64")
        self.engine = WorkerEngine(spec)
        self._reader = threading.Thread(target=self._read, args=(rfd,), daemon=True)
        self._reader.start()
        self.info: Any = None
        self.code: CodeMap | None = None
        try:
            self.info = self.engine.info("count")  # starts the process (and loads the plugins)
            refused = self.engine.plugins.errors
            if refused:
                raise CountError(f"count: plugin {refused[0].path} was not loaded: "
                                 f"{refused[0].message}", "plugin")
            if tool.dynamic:
                self.code = self.engine.code_map()
                self.counter.set_map(tool.runtime_map(self.code, kernel_entries))
        except BaseException:
            self.engine.close()
            raise
        finally:
            os.close(self._wfd)  # the child holds the only write end now

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=1 << 20) as log:
            self.counter.feed(log)

    def windows(self, n: int, timeout: float = WINDOW_TIMEOUT) -> list[Window]:
        return self.counter.wait_for(n, timeout)

    def close(self) -> None:
        self.engine.close()
        self._reader.join(timeout=60)

    def __enter__(self) -> CountingWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
