"""The instruction counter of `qemu:` targets: the aarch64 worker under
qemu-aarch64 with execution logging into a pipe, streamed through
kbench.targets.qemutrace, one fresh worker process per counted case.

What is counted is the production worker binary (the one `qemu:` targets
run), unchanged: phases are found from its symbol table, nothing is added
to the library. The phases of a library call (window kb_gemm_batch or
kb_conv2d) are the functions below, each counted with everything it calls:

    validate   check_packed: the checks of a packed B a call makes (the
               header; the payload checksum where the contract has the call
               verify it)
    checksum   kb_fnv1a64, kb_payload_checksum_on and kb_header_seal: the
               header's FNV-1a and the payload checksum (inside validate in
               a call; in pack_b, sealing the packed buffer)
    pack_lhs   LHS packing and indirection tables: the SME LHS packers,
               the SME convolution's pointer table + packer, im2col, the
               NEON indirect convolution's row-pointer table
    pack_rhs   B (or filter) packed inside the call: plain or portable B for
               the SME kernels, the NEON tail panels (kb_neon_pack_narrow),
               the SME convolution's filter packing
    kernel     the micro-kernels: `run` and `*_core` of every
               kb_matmul_clamp_* / kb_imatmul_clamp_* / kb_conv2d_* file,
               and their KleidiAI-style *_run_matmul / *_run_imatmul
    (other)    everything else in the call: argument checks, dispatch,
               drivers, scratch, threads (the window minus the phases)

and pack_b is a window of its own: kb_pack_b_native or kb_pack_b, as the
perf suite times it.

Determinism: the guest's environment is empty, argv[0] and the executable
path are fixed ("./kb_worker", run from its folder), so the initial stack,
and with it every alignment-dependent path in libc, is the same on every
machine; counts repeat to the instruction."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import KbenchError
from kbench.targets.elf import Elf, Function
from kbench.targets.qemutrace import PhaseMap, TraceCounter, Window, build_phase_map
from kbench.targets.timeouts import CallBounds
from kbench.targets.worker import WorkerEngine, WorkerSpec

WINDOWS = {"kb_gemm_batch": "call", "kb_conv2d": "call",
           "kb_pack_b_native": "pack_b", "kb_pack_b": "pack_b"}
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("validate", ("kb_gemm.c:check_packed",)),
    ("checksum", ("kb_fnv1a64", "kb_payload_checksum_on", "kb_header_seal")),
    ("pack_lhs", ("kb_sme_gemm.c:gemm_pack_lhs", "kb_sme_lhs_pack_block",
                  "kb_sme_conv.c:conv_pack_lhs", "kb_sme_lhs_imatmul_pack_block",
                  "kb_im2col.c:im2col_group", "kb_neon_driver.c:build_table")),
    ("pack_rhs", ("kb_sme_rhs_pack_view", "kb_rhs_imatmul_pack_kxn_x16p2vlx2b_x16_x16_sme_run",
                  "kb_pack_panels", "kb_neon_pack_narrow")),
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
    ranges: str
    version: str
    excluded: list[tuple[int, int]] = field(default_factory=list)

    @classmethod
    def load(cls, qemu: str, worker: str | Path) -> CountTool:
        path = Path(worker).resolve()
        elf = Elf(path)
        pmap = build_phase_map(elf, WINDOWS, PHASES, is_kernel)
        text = elf.section(".text")
        map_path = path.with_suffix(".map")
        excluded = map_ranges(map_path, WORKER_OBJECTS) if map_path.exists() else []
        for addr, (_, name) in pmap.windows.items():
            if any(a <= addr < b for a, b in excluded):
                raise CountError(f"count: {name} lies in the worker's protocol code",
                                 "worker")
        return cls(qemu, path, pmap, dfilter((text.addr, text.addr + text.size), excluded),
                   qemu_version(qemu), excluded)

    def session(self, cpu: str, isa: str | None = None, mode: str = "tb") -> CountingWorker:
        return CountingWorker(self, cpu, isa, mode)


class CountingWorker:
    """A fresh worker under QEMU whose execution log is counted as it runs.
    Use as a context manager; `engine` speaks the worker protocol as usual,
    `windows(n)` waits for the first n counted windows."""

    def __init__(self, tool: CountTool, cpu: str, isa: str | None, mode: str) -> None:
        if mode not in MODES:
            raise CountError(f"count: method {mode!r} is not one of {', '.join(MODES)}",
                             "method")
        self.tool, self.cpu, self.mode = tool, cpu, mode
        self.counter = TraceCounter(tool.pmap, mode)
        rfd, self._wfd = os.pipe()
        cmd = [tool.qemu, "-cpu", cpu, "-0", "kb_worker"]
        if isa:
            cmd += ["-E", f"KBENCH_ISA_CAP={isa}"]
        cmd += [*MODES[mode], "-dfilter", tool.ranges, "-D", f"/dev/fd/{self._wfd}",
                "./" + tool.worker.name]
        # logging every translation block (or instruction) slows the guest down by
        # another factor of ten or more: the bounds of its requests grow with it
        spec = WorkerSpec(cmd, {}, emulated=True, bounds=CallBounds(True, slowdown=COUNT_SLOWDOWN),
                          pass_fds=(self._wfd,), cwd=str(tool.worker.parent), inherit_env=False)
        self.engine = WorkerEngine(spec)
        self._reader = threading.Thread(target=self._read, args=(rfd,), daemon=True)
        self._reader.start()
        self.info: Any = None
        try:
            self.info = self.engine.info("count")  # starts the process
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
