"""Where a machine-code campaign plants its mutants: every mutation
(kbench.targets.a64patch) of the instructions of a shared library that the
suites executed (the coverage of a baseline run), and the sample a campaign
runs, stratified by function.

A planned mutant carries everything the campaign and its report need: the
function, the offset of the patched word from the function's start and in
the file, the old and new words with their text, the function's listing
around it (llvm-objdump, with the source line where the library has debug
information)."""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import KbenchError
from kbench.targets import a64patch, coverage
from kbench.targets.a64asm import Disassembler
from kbench.targets.elf import Elf, ElfError

CONTEXT = 3  # instructions listed before and after a mutant's


class SiteError(KbenchError):
    """The library cannot be read or planned."""


@dataclass
class Planned:
    id: str
    function: str
    offset: int  # of the patched word from the function's start
    addr: int  # the word's address in the file's address space
    file_offset: int
    operator: str
    variant: str
    old: int
    new: int
    old_text: str
    new_text: str
    source: str = ""  # FILE:LINE of the instruction, from debug info
    listing: list[str] = field(default_factory=list)  # the function around it, ">" marks it

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Planned:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass
class Plan:
    """Every mutant of the executed code, and how many instructions ran."""

    mutants: list[Planned]
    functions: dict[str, tuple[int, int]]  # executed / all instructions per function


def _file_offset(elf: Elf, addr: int) -> int:
    text = elf.section(".text")
    if not text.addr <= addr < text.addr + text.size:
        raise SiteError(f"{elf.path}: address {addr:#x} is outside .text", "plugin")
    return text.offset + addr - text.addr


def plan(library: Path, executed: set[int], disasm: Disassembler,
         functions: Iterable[str] = (), operators: Iterable[str] = ()) -> Plan:
    """Every mutation of the executed instructions of each function of the
    library (functions: fnmatch patterns of the names to keep; operators:
    the families to keep). A library without function symbols (stripped)
    is one function, ".text"; a name several static functions share is
    qualified by its file (FILE:NAME, kbench.targets.coverage.plugin_units)."""
    try:
        elf = Elf(library)
        units = [u.functions[0] for u in coverage.plugin_units(library)]
        if not units:  # stripped: no function symbols, the whole .text as one
            text = elf.section(".text")
            units = [(".text", text.addr, text.addr + text.size)]
    except (ElfError, coverage.CoverageError) as exc:
        raise SiteError(f"mutate: cannot read {library}: {exc}", "plugin") from exc
    pats, ops = list(functions), set(operators)
    gen = a64patch.Generator(disasm.texts)
    counts: dict[str, tuple[int, int]] = {}
    code: list[tuple[str, int, int, list[int]]] = []
    for name, start, end in units:
        if pats and not any(fnmatch.fnmatch(name, p) for p in pats):
            continue
        raw = elf.read(start, end - start)
        code.append((name, start, end, [int.from_bytes(raw[i:i + 4], "little")
                                        for i in range(0, len(raw) // 4 * 4, 4)]))
    disasm.texts([w for *_, words in code for w in words])  # one batch; memoised
    jobs = []
    for name, start, end, words in code:
        insns = [a64patch.Insn(start + 4 * i, w, t)
                 for i, (w, t) in enumerate(zip(words, disasm.texts(words), strict=True))]
        ran = {a for a in executed if start <= a < end}
        counts[name] = (len(ran), len(insns))
        if ran:
            jobs.append((name, start, insns, ran))
    out = [Planned(m.id, m.function, m.offset, m.addr, _file_offset(elf, m.addr), m.operator,
                   m.variant, m.old, m.new, m.old_text, m.new_text)
           for m in gen.functions(jobs) if not ops or m.operator in ops]
    return Plan(out, counts)


def annotate(library: Path, mutants: list[Planned], tool: str | None = None) -> bool:
    """Each mutant's source line and listing around it, from llvm-objdump
    (False when none is on PATH: the mutants keep their decoded text only)."""
    tool = tool or coverage.disassembler()
    if tool is None or not mutants:
        return False
    lo = min(m.addr for m in mutants) - 4 * CONTEXT
    hi = max(m.addr for m in mutants) + 4 * (CONTEXT + 1)
    code = coverage.objdump(tool, str(library), max(0, lo), hi)
    for m in mutants:
        m.source = code.get(m.addr, ("", ""))[1]
        m.listing = []
        for a in range(m.addr - 4 * CONTEXT, m.addr + 4 * (CONTEXT + 1), 4):
            if a not in code:
                continue
            line = f"{'>' if a == m.addr else ' '} {m.offset + a - m.addr:+#x}  {code[a][0]}"
            m.listing.append(line + (f"   => {m.new_text}" if a == m.addr else ""))
    return True


def _rank(key: str, ident: str) -> str:
    return hashlib.sha256(f"{key}/{ident}".encode()).hexdigest()


def quotas(sizes: dict[str, int], n: int) -> dict[str, int]:
    """How many of n go to each group: at least one to each (to the largest
    groups first when n is smaller than their number), the rest in
    proportion to the group sizes (largest remainders), never more than a
    group holds."""
    order = sorted(sizes, key=lambda g: (-sizes[g], g))
    if n < len(order):
        return {g: int(i < n) for i, g in enumerate(order)}
    take = {g: 1 for g in order if sizes[g] > 0}
    left = n - sum(take.values())
    while left > 0:
        room = {g: sizes[g] - take[g] for g in take if sizes[g] > take[g]}
        if not room:
            break
        total = sum(room.values())
        share = {g: left * r / total for g, r in room.items()}
        whole = {g: min(room[g], int(share[g])) for g in room}
        if not sum(whole.values()):  # fewer left than groups with room: largest remainders
            for g in sorted(room, key=lambda g: (-(share[g] - int(share[g])), -sizes[g], g))[
                    :left]:
                whole[g] += 1
        for g, k in whole.items():
            take[g] += k
        left -= sum(whole.values())
    return take


def sample(mutants: list[Planned], n: int | None, key: str = "") -> list[Planned]:
    """The mutants a campaign runs, in its order: with n, a stratified sample
    (quotas() per function, each function's picked by a hash of key and id);
    without, all. Functions take turns, so a campaign stopped by its budget
    has run a stratified part."""
    groups: dict[str, list[Planned]] = {}
    for m in sorted(mutants, key=lambda m: _rank(key, m.id)):
        groups.setdefault(m.function, []).append(m)
    take = quotas({g: len(ms) for g, ms in groups.items()}, n) if n is not None else {
        g: len(ms) for g, ms in groups.items()}
    chosen = {g: groups[g][:take.get(g, 0)] for g in sorted(groups)}
    out: list[Planned] = []
    depth = 0
    while any(len(ms) > depth for ms in chosen.values()):
        out += [ms[depth] for ms in chosen.values() if len(ms) > depth]
        depth += 1
    return out
