"""Machine-code mutants of A64 code: operators that turn one instruction word
into another (one 4-byte word, so a shared library is patched in place at
the word's file offset and never relinked).

Every candidate edit is checked by LLVM's decoder (kbench.targets.a64asm):
an operator says what the new instruction must read as (the same text with
one operand changed, a mnemonic swapped for its counterpart, ...) and the
edit is kept only if the decoded text is exactly that. So the operators
need to know few encodings: they try the fields an instruction may hold
the operand in, and LLVM says which one does.

Operators (OPERATORS; each stands for a class of real bug, docs/mutation.md):

    nop         an instruction deleted (replaced by NOP); products: fma-drop
    cond        a condition inverted: B.cond, CSEL/CSINC/CSINV/CSNEG/CSET,
                CCMP/CCMN, FCSEL, CBZ<->CBNZ, TBZ<->TBNZ; SVE/SME2 WHILE
                bounds made inclusive or exclusive (LT<->LE, LO<->LS,
                GT<->GE, HI<->HS)
    imm+1/imm-1 an immediate one encoding step up or down (ADD/SUB/CMP,
                MOV, shifts, load/store offsets, SVE vector-length
                multiples, element counts, ZA slice offsets)
    reg         a source register replaced by another register of the same
                class written earlier in the function (the nearest one)
    fma-drop    an outer product, dot product or multiply-add deleted
    fma-twice   a product overwritten by a copy of the previous product of
                the same kind in its block: one product added twice, its
                neighbour never
    fma-negate  accumulate with the other sign (FMOPA<->FMOPS, FMLA<->FMLS,
                FMLAL<->FMLSL, MLA<->MLS, FMADD<->FMSUB, ...)
    minmax      FMAX<->FMIN, FMAXNM<->FMINNM, FMAX<->FMAXNM, FMIN<->FMINNM,
                SMAX/UMAX<->SMIN/UMIN; FCLAMP/SCLAMP/UCLAMP bounds swapped
    pred        a store's governing predicate replaced by another predicate
                register written earlier in the function
    tile        the ZA tile of an outer product, ZA load/store or move
                replaced by the next tile of its element size

A mutant's id is FUNCTION+OFFSET/OPERATOR (the offset of the patched word
from the function's start, in hex; a register operator names both
registers): the same library gives the same ids, so campaigns compare."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kbench.targets import a64

NOP = 0xD503201F
OPERATORS: dict[str, str] = {
    "nop": "an instruction deleted (replaced by NOP)",
    "cond": "a condition inverted (branch, select, compare-and-branch, WHILE bound)",
    "imm": "an immediate one encoding step up or down (imm+1, imm-1)",
    "reg": "a source register replaced by another live register of its class",
    "fma-drop": "an outer product, dot product or multiply-add deleted",
    "fma-twice": "a product overwritten by the previous product of its kind (added twice)",
    "fma-negate": "a product accumulated with the other sign",
    "minmax": "max for min, NaN-propagating for NaN-ignoring, clamp bounds swapped",
    "pred": "a store under another predicate register",
    "tile": "another ZA tile",
}
PRODUCTS = (a64.OUTER, a64.DOT, a64.MLA)
WINDOW = 64  # instructions looked back for a live register
TWICE_WINDOW = 8  # instructions looked back for the product a fma-twice copies

_INVERSE = {"eq": "ne", "hs": "lo", "cs": "cc", "mi": "pl", "vs": "vc", "hi": "ls",
            "ge": "lt", "gt": "le"}
COND_INVERSE = {**_INVERSE, **{v: k for k, v in _INVERSE.items()}}
WHILE_FLIP = {"whilelt": "whilele", "whilele": "whilelt", "whilelo": "whilels",
              "whilels": "whilelo", "whilegt": "whilege", "whilege": "whilegt",
              "whilehi": "whilehs", "whilehs": "whilehi"}
BRANCH_FLIP = {"cbz": "cbnz", "cbnz": "cbz", "tbz": "tbnz", "tbnz": "tbz"}
_NEGATE_PAIRS = (("fmopa", "fmops"), ("bfmopa", "bfmops"), ("smopa", "smops"),
                 ("umopa", "umops"), ("sumopa", "sumops"), ("usmopa", "usmops"),
                 ("bmopa", "bmops"), ("fmla", "fmls"), ("bfmla", "bfmls"),
                 ("fmlal", "fmlsl"), ("fmlal2", "fmlsl2"), ("fmlalb", "fmlslb"),
                 ("fmlalt", "fmlslt"), ("bfmlal", "bfmlsl"), ("bfmlalb", "bfmlslb"),
                 ("bfmlalt", "bfmlslt"), ("mla", "mls"), ("smlal", "smlsl"),
                 ("umlal", "umlsl"), ("smlal2", "smlsl2"), ("umlal2", "umlsl2"),
                 ("fmadd", "fmsub"), ("fnmadd", "fnmsub"), ("fmad", "fmsb"),
                 ("fnmla", "fnmls"), ("fnmad", "fnmsb"), ("madd", "msub"), ("mad", "msb"))
NEGATE = {**dict(_NEGATE_PAIRS), **{b: a for a, b in _NEGATE_PAIRS}}
MINMAX: dict[str, tuple[str, ...]] = {
    "fmax": ("fmin", "fmaxnm"), "fmin": ("fmax", "fminnm"),
    "fmaxnm": ("fminnm", "fmax"), "fminnm": ("fmaxnm", "fmin"),
    "smax": ("smin",), "smin": ("smax",), "umax": ("umin",), "umin": ("umax",),
    "bfmax": ("bfmin", "bfmaxnm"), "bfmin": ("bfmax", "bfminnm"),
    "bfmaxnm": ("bfminnm", "bfmax"), "bfminnm": ("bfmaxnm", "bfmin"),
}
CLAMPS = ("fclamp", "bfclamp", "sclamp", "uclamp")
TILES = {"b": 1, "h": 2, "s": 4, "d": 8, "q": 16}
_COUNT = re.compile(r"^(?:sq|uq)?(?:cnt|inc|dec)[bhwd]$")
_TOKEN = re.compile(r"([A-Za-z0-9_.#/+-]+)")
_GPR = re.compile(r"^([xw])(\d+)$")
_FP = re.compile(r"^([bhsdqv])(\d+)(\.\w+)?$")
_Z = re.compile(r"^(z)(\d+)(\.\w+)?$")
_P = re.compile(r"^(pn|p)(\d+)(/[zm]|\.\w+)?$")
_TILE = re.compile(r"^za(\d+)([hv]?)\.([bhsdq])$")
_NO_WRITE = ("cmp", "cmn", "tst", "ccmp", "ccmn", "fcmp", "fcmpe", "fccmp", "fccmpe", "cbz",
             "cbnz", "tbz", "tbnz", "br", "blr", "ret", "b", "bl", "prfm", "prfum", "ptest",
             "smstart", "smstop", "msr", "hint", "nop")

Disasm = Callable[[Sequence[int]], list[str | None]]


@dataclass(frozen=True)
class Insn:
    """One instruction of a function: its address (in the file's address
    space), word and decoded text."""

    addr: int
    word: int
    text: str | None


@dataclass(frozen=True)
class Mutation:
    """One patched word: operator (with its variant, e.g. imm+1 or reg
    x5>x9), where and what it was and becomes."""

    function: str
    offset: int  # from the function's start
    addr: int
    operator: str  # the family in OPERATORS
    variant: str  # what the id shows: imm+1, reg x5>x9, cond, ...
    old: int
    new: int
    old_text: str
    new_text: str

    @property
    def id(self) -> str:
        return f"{self.function}+{self.offset:#x}/{self.variant.replace(' ', ':')}"


# ---- text --------------------------------------------------------------------------------

def mnemonic(text: str) -> str:
    return text.split(" ", 1)[0]


def split(text: str) -> list[str]:
    """Alternating separators and tokens (tokens at odd indices)."""
    return _TOKEN.split(text)


def canonical(text: str) -> str:
    """An element count with its default pattern and multiplier spelled out
    ("cntw x16" -> "cntw x16, all, mul #1"), so a changed multiplier is one
    changed token."""
    if _COUNT.match(mnemonic(text)) and "mul" not in text:
        return text + (", mul #1" if "," in text else ", all, mul #1")
    return text


def register(token: str) -> tuple[str, int, str] | None:
    """(class, number, view) of a register token: class gpr (x/w), fp
    (b/h/s/d/q/v), z, p, pn; view is what must stay the same (x or w, the
    element suffix, /z or /m). None for anything else (zr, sp, za, ...)."""
    for pattern, cls in ((_GPR, "gpr"), (_FP, "fp"), (_Z, "z"), (_P, "")):
        m = pattern.match(token)
        if m:
            if cls == "gpr":
                num = int(m.group(2))
                return ("gpr", num, m.group(1)) if num < 31 else None
            view = (m.group(1) + (m.group(3) or "")) if cls in ("fp", "z") else (m.group(3) or "")
            return (cls or m.group(1), int(m.group(2)), view)
    return None


def respell(token: str, number: int) -> str:
    """A register token with another number, same view."""
    return re.sub(r"^([a-z]+?)(\d+)", lambda m: f"{m.group(1)}{number}", token, count=1)


def _bare(token: str) -> str:
    """A register token without its element suffix or /z, /m."""
    return token.split("/")[0].split(".")[0]


def _numeric(token: str) -> int | None:
    t = token[1:] if token.startswith("#") else token
    try:
        return int(t, 0)
    except ValueError:
        return None


def writes_first(text: str, cls: int) -> bool:
    """Does the first register operand receive the result?"""
    return cls != a64.STORE and mnemonic(text) not in _NO_WRITE and not mnemonic(
        text).startswith("b.")


def operands(text: str) -> list[tuple[int, tuple[str, int, str]]]:
    """(token index, register) of every register operand, in order."""
    parts = split(text)
    return [(i, r) for i in range(3, len(parts), 2) if (r := register(parts[i])) is not None]


def written(insn: Insn) -> tuple[str, int] | None:
    """(class, number) of the register an instruction writes (its first
    register operand), None if it writes none that a swap could take."""
    if insn.text is None:
        return None
    ops = operands(insn.text)
    if not ops or not writes_first(insn.text, a64.classify(insn.word)):
        return None
    _, (cls, num, _view) = ops[0]
    return cls, num


# ---- branches ----------------------------------------------------------------------------

def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value >> (bits - 1) else value


def branch_target(addr: int, w: int) -> int | None:
    """Where a direct branch goes (B, BL, B.cond, CBZ/CBNZ, TBZ/TBNZ), else None."""
    if w & 0x7C000000 == 0x14000000:
        return addr + 4 * _signed(w & 0x3FFFFFF, 26)
    if w & 0xFF000000 == 0x54000000 or w & 0x7E000000 == 0x34000000:
        return addr + 4 * _signed(w >> 5 & 0x7FFFF, 19)
    if w & 0x7E000000 == 0x36000000:
        return addr + 4 * _signed(w >> 5 & 0x3FFF, 14)
    return None


# ---- candidate edits ---------------------------------------------------------------------

def _field(w: int, lo: int, width: int, value: int) -> int | None:
    if value < 0 or value >> width:
        return None
    mask = ((1 << width) - 1) << lo
    return (w & ~mask & 0xFFFFFFFF) | (value << lo)


def _flips(w: int) -> list[int]:
    return [w ^ (1 << b) for b in range(32)]


def _settings(w: int, value: int, widths: Iterable[int], top: int = 32) -> list[int]:
    out = []
    for width in widths:
        for lo in range(0, top - width + 1):
            new = _field(w, lo, width, value)
            if new is not None and new != w:
                out.append(new)
    return out


def _imm_steps(w: int) -> list[int]:
    out: set[int] = set()
    for width in (*range(1, 13), 16):
        for lo in range(0, 32 - width + 1):
            v = w >> lo & ((1 << width) - 1)
            for nv in ((v + 1) % (1 << width), (v - 1) % (1 << width)):  # a signed 0 - 1: -1
                new = _field(w, lo, width, nv)
                if new is not None:
                    out.add(new)
    if w & 0x1F800000 == 0x13000000:  # bitfield moves: LSL moves immr and imms together
        r, s = w >> 16 & 63, w >> 10 & 63
        for d in (1, -1):
            a, b = _field(w, 16, 6, (r + d) % 64), _field(w, 10, 6, (s + d) % 64)
            if a is not None and b is not None:
                out.add((a & ~(63 << 10)) | (b & (63 << 10)))
    out.discard(w)
    return sorted(out)


@dataclass
class _Want:
    """Candidate words for one instruction and operator, and the check their
    decoded text must pass (given the original's and the candidate's)."""

    insn: Insn
    operator: str
    words: list[int]
    # -> (variant name, rank: the lowest rank of a variant is kept), or None: not this operator
    check: Callable[[str, str], tuple[str, int] | None]


def _same_but_one(old: str, new: str) -> tuple[int, str, str] | None:
    a, b = split(canonical(old)), split(canonical(new))
    if len(a) != len(b) or a[0::2] != b[0::2]:
        return None
    diff = [i for i in range(1, len(a), 2) if a[i] != b[i]]
    return (diff[0], a[diff[0]], b[diff[0]]) if len(diff) == 1 else None


_OFFSET = re.compile(r"\[(\w+), #-?\w+((?:, mul vl)?)\]")


def _zero_offsets(old: str, new: str) -> str:
    """The new text with a memory operand's zero offset spelled out as the old
    text spells its offset ("[x0]" -> "[x0, #0]", "[x24]" -> "[x24, #0, mul vl]")."""
    for m in _OFFSET.finditer(old):
        new = new.replace(f"[{m.group(1)}]", f"[{m.group(1)}, #0{m.group(2)}]")
    return new


def _imm_check(old: str, new: str) -> tuple[str, int] | None:
    """One immediate changed, nothing else: imm+1 or imm-1 by its direction,
    ranked by how far it moved (the nearest value is kept)."""
    d = _same_but_one(old, _zero_offsets(old, new))
    if d is None or d[0] == 1:  # the mnemonic must stay
        return None
    x, y = _numeric(d[1]), _numeric(d[2])
    if x is None or y is None or x == y:
        return None
    return ("imm+1" if y > x else "imm-1"), abs(y - x)


def _cond_check(old: str, new: str) -> tuple[str, int] | None:
    mo, mn = mnemonic(old), mnemonic(new)
    rest_o, rest_n = old[len(mo):], new[len(mn):]
    if WHILE_FLIP.get(mo) == mn or BRANCH_FLIP.get(mo) == mn:
        return ("cond", 0) if rest_o == rest_n else None
    if mo.startswith("b.") and mn == "b." + COND_INVERSE.get(mo[2:], "?"):
        return ("cond", 0) if rest_o == rest_n else None
    d = _same_but_one(old, new)
    if d is not None and d[0] != 1 and COND_INVERSE.get(d[1]) == d[2]:
        return "cond", 0
    return None


def _negate_check(old: str, new: str) -> tuple[str, int] | None:
    mo, mn = mnemonic(old), mnemonic(new)
    if NEGATE.get(mo) == mn and old[len(mo):] == new[len(mn):]:
        return "fma-negate", 0
    return None


def _minmax_check(old: str, new: str) -> tuple[str, int] | None:
    mo, mn = mnemonic(old), mnemonic(new)
    if mn in MINMAX.get(mo, ()) and old[len(mo):] == new[len(mn):]:
        return f"minmax {mn}", 0
    return None


def _exactly(want: str, variant: str) -> Callable[[str, str], tuple[str, int] | None]:
    """A check accepting one exact text."""
    return lambda _old, new: (variant, 0) if new == want else None


def _expect(text: str, index: int, token: str) -> str:
    parts = split(text)
    parts[index] = token
    return "".join(parts)


def _swap_clamp(text: str) -> str | None:
    parts = split(text)
    ops = [i for i in range(3, len(parts), 2)]
    if len(ops) < 3:
        return None
    a, b = ops[-2], ops[-1]
    parts[a], parts[b] = parts[b], parts[a]
    return "".join(parts)


class Generator:
    """The mutations of a function's executed instructions."""

    def __init__(self, disasm: Disasm) -> None:
        self.disasm = disasm

    def function(self, name: str, start: int, insns: Sequence[Insn], executed: set[int]
                 ) -> list[Mutation]:
        """Every mutation of the instructions at the addresses in `executed`
        (the others are never patched). `insns` is the whole function, in
        address order, with texts decoded by the same disassembler."""
        return self.functions([(name, start, insns, executed)])

    def functions(self, jobs: Sequence[tuple[str, int, Sequence[Insn], set[int]]]
                  ) -> list[Mutation]:
        """function() for several functions, with one disassembler batch."""
        wants: list[tuple[str, int, _Want]] = []
        for name, start, insns, executed in jobs:
            targets = {t for i in insns if (t := branch_target(i.addr, i.word)) is not None}
            for k, insn in enumerate(insns):
                if insn.addr in executed and insn.text is not None and insn.word != NOP:
                    wants += [(name, start, w) for w in self._wants(insns, k, targets)]
        texts = dict(zip(*self._decode(w for _, _, want in wants for w in want.words),
                         strict=True))
        out: dict[str, Mutation] = {}
        for name, start, want in wants:
            assert want.insn.text is not None
            mn = mnemonic(want.insn.text)
            found: dict[str, tuple[int, int, str]] = {}
            for w in want.words:
                new_text = texts[w]
                if new_text is None or w == want.insn.word or (
                        want.operator == "imm" and mnemonic(new_text) != mn):
                    continue
                got = want.check(want.insn.text, new_text)
                if got is not None and (got[0] not in found or got[1] < found[got[0]][0]):
                    found[got[0]] = (got[1], w, new_text)
            for variant, (_rank, w, new_text) in sorted(found.items()):
                m = Mutation(name, want.insn.addr - start, want.insn.addr, want.operator,
                             variant, want.insn.word, w, want.insn.text, new_text)
                out.setdefault(m.id, m)
        return sorted(out.values(), key=lambda m: (m.function, m.offset, m.variant))

    def _decode(self, words: Iterable[int]) -> tuple[list[int], list[str | None]]:
        unique = sorted(set(words))
        return unique, self.disasm(unique)

    # ---- per instruction ----------------------------------------------------------------

    def _wants(self, insns: Sequence[Insn], k: int, targets: set[int]) -> list[_Want]:
        insn = insns[k]
        text = insn.text
        assert text is not None
        w = insn.word
        cls = a64.classify(w)
        mn = mnemonic(text)
        if mn == "udf":
            return []
        out: list[_Want] = []
        product = cls in PRODUCTS
        op = "fma-drop" if product else "nop"
        out.append(_Want(insn, op, [NOP], _exactly("nop", op)))
        flow = a64.flow(w)
        if flow == a64.Flow.BRANCH or mn in WHILE_FLIP or "," in text and any(
                t in COND_INVERSE for t in split(text)[3::2]):
            out.append(_Want(insn, "cond", _flips(w), _cond_check))
        system = w >> 25 & 0b1110 == 0b1010  # branches, exceptions, system
        pcrel = w & 0x1F000000 == 0x10000000 or w & 0x3B000000 == 0x18000000  # ADR(P), literal
        # a logical immediate is a bit pattern, not a number one step from another
        bitmask = w & 0x1F800000 == 0x12000000 or w & 0xFF3C0000 == 0x05000000
        if (not system and not pcrel and not bitmask and flow == a64.Flow.NONE
                and any(_numeric(t) is not None for t in split(canonical(text))[3::2])):
            out.append(_Want(insn, "imm", _imm_steps(w), _imm_check))
        if product:
            if mn in NEGATE:
                out.append(_Want(insn, "fma-negate", _flips(w), _negate_check))
            twice = self._twice(insns, k, targets)
            if twice is not None:
                out.append(twice)
        if mn in MINMAX:
            out.append(_Want(insn, "minmax", _flips(w), _minmax_check))
        if mn in CLAMPS:
            want = _swap_clamp(text)
            if want is not None:
                out.append(_Want(insn, "minmax", _settings_pairs(w),
                                 _exactly(want, "minmax bounds")))
        out += self._registers(insns, k, cls)
        out += self._tiles(insn)
        return out

    def _twice(self, insns: Sequence[Insn], k: int, targets: set[int]) -> _Want | None:
        insn = insns[k]
        mn = mnemonic(insn.text or "")
        for j in range(k - 1, max(-1, k - 1 - TWICE_WINDOW), -1):
            prev = insns[j]
            if insns[j + 1].addr in targets or a64.flow(prev.word) != a64.Flow.NONE:
                return None  # another block
            if prev.text is not None and mnemonic(prev.text) == mn:
                if prev.word == insn.word:
                    return None
                return _Want(insn, "fma-twice", [prev.word], _exactly(prev.text, "fma-twice"))
        return None

    def _registers(self, insns: Sequence[Insn], k: int, cls: int) -> list[_Want]:
        """reg: each source register operand replaced by the nearest register of
        its class written before it; pred: a store's predicate likewise."""
        insn = insns[k]
        text = insn.text
        assert text is not None
        ops = operands(text)
        first_written = writes_first(text, cls)
        out = []
        for n, (index, (rcls, num, _view)) in enumerate(ops):
            if n == 0 and first_written:
                continue  # the destination
            is_pred = rcls in ("p", "pn")
            if is_pred and cls != a64.STORE:
                continue  # predicates: the store operator only
            other = self._live(insns, k, rcls, num)
            if other is None:
                continue
            token = split(text)[index]
            want = _expect(text, index, respell(token, other))
            op = "pred" if is_pred else "reg"
            variant = f"{op} {_bare(token)}>{_bare(respell(token, other))}"
            out.append(_Want(insn, op, _settings(insn.word, other, (3, 4, 5)),
                             _exactly(want, variant)))
        return out

    @staticmethod
    def _live(insns: Sequence[Insn], k: int, rcls: str, num: int) -> int | None:
        """The register of this class written nearest before instruction k (not
        `num`); for a predicate with none written, the next one (num + 1)."""
        for j in range(k - 1, max(-1, k - 1 - WINDOW), -1):
            wr = written(insns[j])
            if wr is not None and wr[0] == rcls and wr[1] != num:
                return wr[1]
        if rcls == "p":
            return (num + 1) % 8
        if rcls == "pn":
            return 8 + (num - 7) % 8
        return None

    @staticmethod
    def _tiles(insn: Insn) -> list[_Want]:
        text = insn.text
        assert text is not None
        parts = split(text)
        out = []
        for i in range(3, len(parts), 2):
            m = _TILE.match(parts[i])
            if not m or TILES[m.group(3)] < 2:
                continue
            tile = (int(m.group(1)) + 1) % TILES[m.group(3)]
            want = _expect(text, i, f"za{tile}{m.group(2)}.{m.group(3)}")
            out.append(_Want(insn, "tile", _settings(insn.word, tile, (1, 2, 3, 4), 16),
                             _exactly(want, f"tile za{tile}")))
        return out


def _settings_pairs(w: int) -> list[int]:
    """Two 5-bit register fields exchanged (5 and 16, 0 and 16, 0 and 5, 10 and 16)."""
    out = []
    for a, b in ((5, 16), (0, 16), (0, 5), (10, 16), (5, 10)):
        x, y = w >> a & 31, w >> b & 31
        v = _field(w, a, 5, y)
        if v is not None:
            v2 = _field(v, b, 5, x)
            if v2 is not None and v2 != w:
                out.append(v2)
    return out


# ---- patching ----------------------------------------------------------------------------

def patch(data: bytes, file_offset: int, old: int, new: int) -> bytes:
    """The bytes with the word at file_offset replaced; the word there must be `old`."""
    have = int.from_bytes(data[file_offset:file_offset + 4], "little")
    if have != old:
        raise ValueError(f"word at file offset {file_offset:#x} is {have:#010x}, not {old:#010x}")
    return data[:file_offset] + new.to_bytes(4, "little") + data[file_offset + 4:]
