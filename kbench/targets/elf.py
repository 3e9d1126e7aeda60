"""Just enough of ELF64 (little-endian) to count instructions in the worker:
the function symbols with their sizes and source files, and the bytes of
the code they point at. Written for the static aarch64 worker (and for
objects assembled by clang in the tests); no relocation, no DWARF.

Local symbols are grouped after the STT_FILE symbol of their source file,
so a static function is named "file.c:name" where a bare name is ambiguous
(several kernels have a static `run`)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from kbench.errors import KbenchError

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
SHT_SYMTAB, SHT_NOBITS, SHT_DYNSYM = 2, 8, 11
STT_FUNC, STT_FILE, STT_GNU_IFUNC = 2, 4, 10
STB_LOCAL = 0


@dataclass(frozen=True)
class Section:
    name: str
    addr: int
    offset: int
    size: int
    kind: int


@dataclass(frozen=True)
class Function:
    """A function symbol: `file` is its source file for a local symbol, ''
    for a global one."""

    name: str
    addr: int
    size: int
    file: str
    local: bool

    @property
    def qualified(self) -> str:
        return f"{self.file}:{self.name}" if self.local else self.name

    @property
    def end(self) -> int:
        return self.addr + self.size


class ElfError(KbenchError):
    """The file is not an ELF64 little-endian file this reader understands."""


class Elf:
    """An ELF file read into memory."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.data = self.path.read_bytes()
        except OSError as exc:
            raise ElfError(f"{self.path}: cannot read ({exc})", "elf") from exc
        if len(self.data) < _EHDR.size or self.data[:4] != b"\x7fELF":
            raise ElfError(f"{self.path}: not an ELF file", "elf")
        ident, _type, self.machine, _v, self.entry, _ph, shoff, _f, _eh, _phe, _phn, shentsize, \
            shnum, shstrndx = _EHDR.unpack_from(self.data, 0)
        if ident[4] != 2 or ident[5] != 1:
            raise ElfError(f"{self.path}: only ELF64 little-endian is read", "elf")
        raw = [_SHDR.unpack_from(self.data, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx] if shnum else None
        self.sections: list[Section] = []
        for sh in raw:
            name = self._cstr(names[4] + sh[0]) if names else ""
            self.sections.append(Section(name, sh[3], sh[4], sh[5], sh[1]))
        self._raw_sections = raw

    def _cstr(self, offset: int) -> str:
        end = self.data.index(b"\0", offset)
        return self.data[offset:end].decode(errors="replace")

    def section(self, name: str) -> Section:
        for s in self.sections:
            if s.name == name:
                return s
        raise ElfError(f"{self.path}: no {name} section", "elf")

    def functions(self, table: int = SHT_SYMTAB) -> list[Function]:
        """Every function symbol with a size (STT_FUNC and IFUNC), by address, of
        the full symbol table (or of `table`: SHT_DYNSYM, the exported ones)."""
        out: list[Function] = []
        for sh in self._raw_sections:
            if sh[1] != table:
                continue
            strtab = self._raw_sections[sh[6]]
            current_file = ""
            for i in range(sh[5] // _SYM.size):
                name_off, info, _other, shndx, value, size = _SYM.unpack_from(
                    self.data, sh[4] + i * _SYM.size)
                kind, bind = info & 0xF, info >> 4
                name = self._cstr(strtab[4] + name_off) if name_off else ""
                if kind == STT_FILE:
                    current_file = name
                elif kind in (STT_FUNC, STT_GNU_IFUNC) and shndx != 0 and name:
                    local = bind == STB_LOCAL
                    out.append(Function(name, value, size, current_file if local else "", local))
        return sorted(out, key=lambda f: (f.addr, f.name))

    def function_at(self, addr: int) -> Function | None:
        """The function whose code holds a virtual address: from the full symbol
        table, or the exported symbols of a stripped file; None if none does."""
        for table in (SHT_SYMTAB, SHT_DYNSYM):
            found = [f for f in self.functions(table) if f.addr <= addr < f.end]
            if found:
                return found[-1]
        return None

    def read(self, addr: int, size: int) -> bytes:
        """Bytes at a virtual address of a loaded section of an executable."""
        for s in self.sections:
            loaded = s.addr and s.kind != SHT_NOBITS
            if loaded and s.addr <= addr and addr + size <= s.addr + s.size:
                start = s.offset + addr - s.addr
                return self.data[start:start + size]
        raise ElfError(f"{self.path}: address {addr:#x} (+{size}) is in no loaded section",
                       "elf")

    def words(self, section: str = ".text") -> list[int]:
        """The 32-bit little-endian words of a section (instructions)."""
        s = self.section(section)
        body = self.data[s.offset:s.offset + s.size]
        return list(struct.unpack(f"<{len(body) // 4}I", body[:len(body) // 4 * 4]))
