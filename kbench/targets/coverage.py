"""Machine-code coverage of kernels and packers on emulated targets.

A worker under QEMU started with `-d in_asm -D DIR/%d.log` logs every
translation block the first time it runs it: the address of each guest
instruction in it. A block runs from its first instruction to its last (it
ends at every branch), so an instruction is *covered* when it lies in a
logged block; the one exception is a block left by a fault part way, which
takes the worker down with it. Each worker process also writes where its
code lies (`DIR/PID.map.json`: the CODE_MAP reply, with the binary it runs),
so that addresses of a position-independent worker and of its plugins are
turned back into offsets of their files.

Units, each with its instruction count (the union of its function symbols'
ranges, 4 bytes per instruction) and what ran:
- ours: every object of a kernel family folder (native/src/<backend>/<family>/
  kb_*.c: one micro-kernel or packer per file), from the worker's linker map;
- a plugin: every function of its .so (its symbol table).

Uncovered instructions are listed as ranges, function+offset, and (when an
llvm-objdump is on PATH) with their disassembly and, where the file has
debug info, the source line of each (`listing`). A function of
ours that the source marks with KB_NOT_DRIVEN(fn, reason) (native/src/core/
kb_internal.h: the public micro-kernel interface, which kbench's drivers do
not call) is counted apart, with its reason, from the section kb_not_driven
of the binary.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import KbenchError
from kbench.targets.elf import Elf, ElfError

MAP_SUFFIX = ".map.json"
COLUMNS = ["target", "owner", "unit", "kind", "backend", "family", "realizations",
           "instructions", "covered", "percent", "uncovered", "not_driven"]
NOT_DRIVEN_SECTION = "kb_not_driven"
# an object of a family folder in the worker's lld map: src_<backend>_<family>_kb_<name>.o
_FAMILY_OBJECT = re.compile(r"^src_(scalar|neon|sme|sve)_(.+?)_(kb_[a-z0-9_]+)\.o$")
_MAP_TEXT = re.compile(r"^\s*([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+\d+\s+(\S+):\(\.text\)$")
_PACKER = ("kb_rhs_", "kb_lhs_")
# newest first: SME2 needs LLVM 16 or later (older ones print <unknown> there)
DISASSEMBLERS = tuple(f"llvm-objdump-{v}" for v in range(22, 13, -1)) + ("llvm-objdump",)
MATTR = "+sme2,+sme,+sme-f64f64,+sve2,+sve2p1,+fullfp16,+fp16fml,+bf16,+dotprod,+i8mm"
_OBJDUMP_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(.*?)\s*$")


class CoverageError(KbenchError):
    """The coverage logs or the files they refer to cannot be read."""


def qemu_flags(log_dir: Path) -> list[str]:
    """QEMU options logging every translated block into LOG_DIR/<pid>.log."""
    return ["-d", "in_asm", "-D", str(log_dir / "%d.log")]


def write_process_map(log_dir: Path, pid: int, binary: str, code: Any) -> None:
    """LOG_DIR/<pid>.map.json: the worker binary, its loaded objects (path,
    bias, segments) and where each plugin realization's functions start
    (`code`: a kbench.targets.worker.CodeMap; not imported, the worker imports
    this module)."""
    rows = [{"path": o.path, "bias": o.bias, "segments": [list(s) for s in o.segments]}
            for o in code.objects]
    entries = {name: [e.address for e in es] for name, es in code.plugins.items()}
    (log_dir / f"{pid}{MAP_SUFFIX}").write_text(json.dumps(
        {"binary": binary, "objects": rows, "entries": entries}))


def executed(log: Path) -> set[int]:
    """Addresses of every instruction in the blocks a QEMU in_asm log holds."""
    out: set[int] = set()
    try:
        with open(log, "rb") as fh:
            inside = False
            for line in fh:
                if line.startswith(b"IN:"):
                    inside = True
                elif inside and line.startswith(b"0x"):
                    out.add(int(line[2:line.index(b":")], 16))
                elif not line.strip() or line.startswith(b"---"):
                    inside = False
    except OSError as exc:
        raise CoverageError(f"coverage: cannot read {log}: {exc}", "coverage") from exc
    return out


@dataclass
class Unit:
    """Code whose instructions are counted together: a kernel or packer
    object of ours, or one function of a plugin. Ranges are file offsets
    (addresses of the ELF file), [start, end)."""

    owner: str  # "kbench" or the plugin's path
    name: str
    kind: str  # kernel, packer, function
    backend: str
    functions: list[tuple[str, int, int]]  # (name, start, end)
    family: str = ""  # ours: the kernel family folder
    binary: str = ""  # the file the ranges are addresses of
    # functions the source marks KB_NOT_DRIVEN: (name, instructions, reason), not counted
    not_driven: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def ranges(self) -> list[tuple[int, int]]:
        return _union([(a, b) for _, a, b in self.functions])

    @property
    def instructions(self) -> int:
        return sum(b - a for a, b in self.ranges) // 4


@dataclass
class UnitCoverage:
    target: str
    unit: Unit
    covered: int
    uncovered: list[tuple[int, int]] = field(default_factory=list)
    realizations: list[str] = field(default_factory=list)  # that run this code
    # uncovered address -> (instruction, source line or ""), when disassembled
    listing: dict[int, tuple[str, str]] = field(default_factory=dict)

    @property
    def percent(self) -> float:
        n = self.unit.instructions
        return 100.0 * self.covered / n if n else 100.0

    def uncovered_text(self, limit: int = 0) -> str:
        """Uncovered ranges as function+offset (every one with limit 0)."""
        parts = [self._where(a, b) for a, b in self.uncovered]
        if limit and len(parts) > limit:
            parts = [*parts[:limit], f"... ({len(parts) - limit} more)"]
        return "; ".join(parts)

    def _where(self, a: int, b: int) -> str:
        for name, s, e in self.unit.functions:
            if s <= a < e:
                n = (b - a) // 4
                return f"{name}+{a - s:#x}..+{b - s:#x} ({n} insn)"
        return f"{a:#x}..{b:#x}"

    def row(self) -> dict[str, object]:
        return {"target": self.target, "owner": self.unit.owner, "unit": self.unit.name,
                "kind": self.unit.kind, "backend": self.unit.backend,
                "family": self.unit.family, "realizations": " ".join(self.realizations),
                "instructions": self.unit.instructions, "covered": self.covered,
                "percent": round(self.percent, 2), "uncovered": self.uncovered_text(),
                "not_driven": "; ".join(f"{n} ({k} insn): {why}"
                                        for n, k, why in self.unit.not_driven)}


def _union(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(r for r in ranges if r[1] > r[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _functions_in(elf: Elf, lo: int, hi: int) -> list[tuple[str, int, int]]:
    return [(f.name, f.addr, f.addr + f.size) for f in elf.functions()
            if f.size and lo <= f.addr < hi]


def not_driven(elf: Elf) -> dict[tuple[str, str], str]:
    """(source file stem, function) -> reason, from the KB_NOT_DRIVEN records."""
    try:
        s = elf.section(NOT_DRIVEN_SECTION)
    except ElfError:
        return {}
    parts = [p.decode(errors="replace") for p in elf.data[s.offset:s.offset + s.size].split(b"\0")
             if p]
    if len(parts) % 3:
        raise CoverageError(f"coverage: {elf.path}: section {NOT_DRIVEN_SECTION} is not "
                            "(file, function, reason) records", "coverage")
    return {(Path(parts[i]).stem, parts[i + 1]): parts[i + 2] for i in range(0, len(parts), 3)}


def our_units(binary: Path) -> list[Unit]:
    """The kernel and packer objects of a worker binary, from its lld map
    (BINARY.map beside it) and its function symbols."""
    map_path = binary.with_suffix(".map")
    try:
        text = map_path.read_text()
        elf = Elf(binary)
    except (OSError, ElfError) as exc:
        raise CoverageError(f"coverage: cannot read {map_path} or {binary}: {exc}",
                            "coverage") from exc
    exempt = not_driven(elf)
    units = []
    for line in text.splitlines():
        m = _MAP_TEXT.match(line)
        if not m or not int(m.group(2), 16):
            continue
        obj = _FAMILY_OBJECT.match(Path(m.group(3)).name)
        if obj is None:
            continue
        start = int(m.group(1), 16)
        name = obj.group(3)
        kind = "packer" if name.startswith(_PACKER) else "kernel"
        funcs = _functions_in(elf, start, start + int(m.group(2), 16))
        skipped = [(f, (b - a) // 4, exempt[(name, f)]) for f, a, b in funcs
                   if (name, f) in exempt]
        funcs = [f for f in funcs if (name, f[0]) not in exempt]
        if funcs or skipped:
            units.append(Unit("kbench", name, kind, obj.group(1), funcs, obj.group(2),
                              str(binary), skipped))
    if not units:
        raise CoverageError(f"coverage: no kernel objects in {map_path}", "coverage")
    have = {(u.name, f) for u in units for f, *_ in [*u.functions, *u.not_driven]}
    stale = sorted(f"{stem}: {fn}" for stem, fn in exempt if (stem, fn) not in have)
    if stale:  # a record that names no function of a kernel or packer file
        raise CoverageError(f"coverage: KB_NOT_DRIVEN names no such function: "
                            f"{', '.join(stale)}", "coverage")
    return sorted(units, key=lambda u: (u.backend, u.name))


def plugin_units(path: Path) -> list[Unit]:
    """One unit per function of a plugin's .so (named FILE:NAME where static
    functions of several files share a name)."""
    try:
        elf = Elf(path)
        text = elf.section(".text")
    except ElfError as exc:
        raise CoverageError(f"coverage: cannot read plugin {path}: {exc}", "coverage") from exc
    seen: dict[int, Unit] = {}
    funcs = [f for f in elf.functions() if f.size and text.addr <= f.addr < text.addr + text.size]
    names: dict[str, set[int]] = {}
    for f in funcs:
        names.setdefault(f.name, set()).add(f.addr)
    for f in funcs:
        if f.addr in seen:  # an alias of a function already listed
            continue
        # a name static functions of several files share: FILE:NAME (or NAME@ADDRESS)
        name = f.name if len(names[f.name]) == 1 else (
            f.qualified if f.local and f.file else f"{f.name}@{f.addr:#x}")
        seen[f.addr] = Unit(str(path), name, "function", "plugin", [(name, f.addr, f.end)],
                            binary=str(path))
    return sorted(seen.values(), key=lambda u: u.functions[0][1])


def _offsets(log_dir: Path) -> tuple[dict[str, set[int]], dict[str, set[tuple[str, int]]]]:
    """Every process's executed addresses as offsets into the file they lie
    in (the worker binary or a plugin, by path), and the (realization, offset)
    entry points of each plugin file."""
    by_file: dict[str, set[int]] = {}
    entries: dict[str, set[tuple[str, int]]] = {}
    for map_file in sorted(log_dir.glob(f"*{MAP_SUFFIX}")):
        pid = map_file.name[:-len(MAP_SUFFIX)]
        log = log_dir / f"{pid}.log"
        if not log.exists():
            continue
        try:
            meta = json.loads(map_file.read_text())
        except (OSError, ValueError) as exc:
            raise CoverageError(f"coverage: cannot read {map_file}: {exc}", "coverage") from exc
        objects = [(o["path"] or meta["binary"], o["bias"], o["segments"])
                   for o in meta["objects"]]
        addrs = executed(log)
        for path, bias, segments in objects:
            mine = {a - bias for a in addrs if any(s <= a < e for s, e in segments)}
            key = os.path.realpath(path)  # a plugin given by a relative path is the same file
            if mine:
                by_file.setdefault(key, set()).update(mine)
            for name, starts in meta.get("entries", {}).items():
                for a in starts:
                    if any(s <= a < e for s, e in segments):
                        entries.setdefault(key, set()).add((name, a - bias))
    return by_file, entries


def executed_offsets(log_dir: Path, path: str | Path) -> set[int]:
    """The file addresses of every instruction of the file at `path` that
    ran in any worker process whose logs are in log_dir."""
    offsets, _ = _offsets(log_dir)
    return offsets.get(os.path.realpath(path), set())


def measure(target: str, log_dir: Path, plugins: Iterable[str] = ()) -> list[UnitCoverage]:
    """Coverage of our kernel and packer objects and of every function of
    each plugin, from the logs of every worker process of one target."""
    offsets, entries = _offsets(log_dir)
    binaries = {json.loads(p.read_text())["binary"] for p in log_dir.glob(f"*{MAP_SUFFIX}")}
    out: list[UnitCoverage] = []
    for binary in sorted(binaries):
        out += [_cover(target, u, offsets.get(os.path.realpath(binary), set()))
                for u in our_units(Path(binary))]
    for plugin in plugins:
        key = os.path.realpath(plugin)
        for u in plugin_units(Path(plugin)):
            row = _cover(target, u, offsets.get(key, set()))
            _, a, b = u.functions[0]
            row.realizations = sorted({n for n, off in entries.get(key, set())
                                       if a <= off < b})
            out.append(row)
    rows = _merge_binaries(out)
    disassemble(rows)
    return rows


def disassembler() -> str | None:
    """The newest llvm-objdump on PATH, or None."""
    for name in DISASSEMBLERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def objdump(tool: str, binary: str, lo: int, hi: int) -> dict[int, tuple[str, str]]:
    """address -> (instruction, source line) over [lo, hi) of a file."""
    try:
        proc = subprocess.run([tool, "-d", "-l", "--no-show-raw-insn", f"--mattr={MATTR}",
                               f"--start-address={lo:#x}", f"--stop-address={hi:#x}", binary],
                              capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    out: dict[int, tuple[str, str]] = {}
    where = ""
    for line in proc.stdout.splitlines():
        if line.startswith(";"):  # --line-numbers: "; FILE:LINE" before the code it covers
            text = line[1:].strip()
            if not text.endswith("():"):  # not the function's name (it has no line)
                where = text
            continue
        m = _OBJDUMP_INSN.match(line)
        if m:
            out[int(m.group(1), 16)] = (" ".join(m.group(2).split()), where)
    return out


def disassemble(rows: list[UnitCoverage], tool: str | None = None) -> bool:
    """Fills each row's listing of its uncovered instructions (one
    disassembler run per file); False when no llvm-objdump is found."""
    tool = tool or disassembler()
    if tool is None:
        return False
    by_file: dict[str, list[UnitCoverage]] = {}
    for r in rows:
        if r.uncovered and r.unit.binary:
            by_file.setdefault(r.unit.binary, []).append(r)
    for binary, group in by_file.items():
        ranges = [rng for r in group for rng in r.uncovered]
        code = objdump(tool, binary, min(a for a, _ in ranges), max(b for _, b in ranges))
        for r in group:
            r.listing = {a: code[a] for lo, hi in r.uncovered for a in range(lo, hi, 4)
                         if a in code}
    return True


def listing_lines(rows: Iterable[UnitCoverage]) -> list[str]:
    """Every uncovered range of every row, instruction by instruction (with
    the source line where known) when disassembled."""
    lines: list[str] = []
    for r in rows:
        if not r.uncovered:
            continue
        lines.append(f"{r.target}  {r.unit.name}  ({r.unit.owner}; {r.covered}/"
                     f"{r.unit.instructions} covered)")
        for a, b in r.uncovered:
            lines.append(f"  {r._where(a, b)}")
            last = ""
            for addr in range(a, b, 4):
                insn, where = r.listing.get(addr, ("", ""))
                if where and where != last:
                    lines.append(f"      ; {where}")
                    last = where
                lines.append(f"    {addr:8x}  {insn}".rstrip())
        lines.append("")
    return lines


def write_listing(path: Path, rows: Iterable[UnitCoverage]) -> None:
    rows = list(rows)
    head = ["# Instructions of kernels and packers never executed (kbench run --coverage):",
            "# per target and unit, each range as function+offset, then its instructions"
            + ("" if any(r.listing for r in rows) or not any(r.uncovered for r in rows)
               else " (addresses only: no llvm-objdump on PATH)"), ""]
    path.write_text("\n".join(head + listing_lines(rows)))


def _merge_binaries(rows: list[UnitCoverage]) -> list[UnitCoverage]:
    """One row per unit name and owner: a run that used the static and the
    dynamic worker (with plugins) keeps the better-covered copy."""
    best: dict[tuple[str, str], UnitCoverage] = {}
    for r in rows:
        key = (r.unit.owner, r.unit.name)
        if key not in best or r.percent > best[key].percent:
            best[key] = r
    return list(best.values())


def _cover(target: str, unit: Unit, ran: set[int]) -> UnitCoverage:
    """What of a unit ran; uncovered ranges never span two functions."""
    covered = 0
    missing: list[tuple[int, int]] = []
    starts = {a for _, a, _ in unit.functions}
    for a, b in unit.ranges:
        for addr in range(a, b, 4):
            if addr in ran:
                covered += 1
            elif missing and missing[-1][1] == addr and addr not in starts:
                missing[-1] = (missing[-1][0], addr + 4)
            else:
                missing.append((addr, addr + 4))
    return UnitCoverage(target, unit, covered, missing)


def write_csv(path: Path, rows: Iterable[UnitCoverage]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow(r.row())


def summary_lines(rows: list[UnitCoverage], limit: int = 3) -> list[str]:
    """A line per unit: target, unit, covered/instructions, the first
    uncovered ranges."""
    lines = []
    width = max((len(r.unit.name) for r in rows), default=0)
    for r in sorted(rows, key=lambda r: (r.target, r.unit.owner != "kbench", r.unit.owner,
                                         r.unit.name)):
        head = (f"{r.target} {r.unit.name:<{width}} {r.covered:>6}/{r.unit.instructions:<6} "
                f"{r.percent:6.2f}%")
        if r.uncovered:
            head += f"  uncovered: {r.uncovered_text(limit)}"
        lines.append(head)
    return lines
