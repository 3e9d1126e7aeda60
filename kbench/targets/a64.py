"""Classes of AArch64 instructions (A64, SVE/SVE2, SME/SME2) from their
32-bit encodings, for instruction mixes, and the control-flow kinds the
counting engine follows (calls and returns).

Classes (`CLASSES`):
    outer    outer products into ZA: FMOPA, FMOPS, BFMOPA, SMOPA, UMOPA,
             SUMOPA, USMOPA, BMOPA (every element size)
    dot      dot products: FDOT, BFDOT, SDOT, UDOT, USDOT, SUDOT and the
             vertical FVDOT/BFVDOT/SVDOT/UVDOT (NEON, SVE, SME2 into ZA)
    mla      multiply-adds: FMLA/FMLS (vector, by element, SVE predicated
             and indexed, SME2 into ZA), FMLAL/FMLAL2/FMLSL, FMLALB/FMLALT,
             BFMLAL*, FMAD/FMSB/FNMLA/FNMLS, integer MLA/MLS/SMLAL/UMLAL,
             scalar FMADD/FMSUB/FNMADD/FNMSUB
    load     every load (GPR, SIMD&FP, NEON structure, SVE contiguous,
             gather, broadcast, SME ZA slices and multi-vector, prefetch,
             atomics)
    store    every store
    control  predicate/loop/branch: branches (B, BL, BR, BLR, RET, B.cond,
             CBZ, TBZ, ...), flag-setting compares and arithmetic (CMP, CMN,
             TST, ADDS, SUBS, ANDS, CCMP), and SVE/SME predicate-producing
             instructions (PTRUE, PFALSE, WHILE*, predicate logic, PTEST,
             CNTP, compares into predicates)
    other    everything else (moves, address arithmetic, conversions, FADD,
             MOVA, ZERO, SMSTART, system instructions, ...)

The decoder walks the A64 top-level encoding groups and, inside SVE and
SME, the groups that hold the classes above. It is checked against
clang-19's assembler (suites/test_counts.py) for every form listed there
and against the disassembler QEMU prints for everything it decodes in our
kernels. An encoding it does not know falls into "other"."""

from __future__ import annotations

from enum import IntEnum

CLASSES = ("outer", "dot", "mla", "load", "store", "control", "other")
OUTER, DOT, MLA, LOAD, STORE, CONTROL, OTHER = range(7)


class Flow(IntEnum):
    """How an instruction moves control, as far as the call stack cares."""

    NONE = 0
    CALL = 1  # BL, BLR (and the pointer-authenticating BLRAA, ...)
    RET = 2  # RET (and RETAA, RETAB)
    BRANCH = 3  # any other branch (B, BR, B.cond, CBZ, TBZ, ...)


def _bits(w: int, hi: int, lo: int) -> int:
    return (w >> lo) & ((1 << (hi - lo + 1)) - 1)


def flow(w: int) -> Flow:
    """The control-flow kind of an instruction word."""
    if w & 0x7C000000 == 0x14000000:  # B, BL (imm26)
        return Flow.CALL if w >> 31 else Flow.BRANCH
    if w & 0xFE000000 == 0xD6000000:  # unconditional branch (register)
        opc = _bits(w, 24, 21)
        if opc in (0b0001, 0b1001):  # BLR, BLRAA/BLRAB (and the Z forms)
            return Flow.CALL
        if opc == 0b0010:  # RET, RETAA, RETAB
            return Flow.RET
        return Flow.BRANCH  # BR, BRAA, ERET, ...
    if (w & 0x7E000000 in (0x34000000, 0x36000000)  # CBZ/CBNZ, TBZ/TBNZ
            or w & 0xFF000000 == 0x54000000):  # B.cond, BC.cond
        return Flow.BRANCH
    return Flow.NONE


def classify(w: int) -> int:
    """The class index (into CLASSES) of a 32-bit instruction word."""
    op1 = _bits(w, 28, 25)
    if op1 == 0b0000:
        return _sme(w) if w >> 31 else OTHER
    if op1 == 0b0010:
        return _sve(w)
    if op1 & 0b1110 == 0b1000:
        return _dp_imm(w)
    if op1 & 0b1110 == 0b1010:
        return CONTROL if flow(w) != Flow.NONE else OTHER
    if op1 & 0b0101 == 0b0100:
        return _load_store(w)
    if op1 & 0b0111 == 0b0101:
        return _dp_reg(w)
    if op1 & 0b0111 == 0b0111:
        return _simd_fp(w)
    return OTHER


# ---- base A64 ----------------------------------------------------------------------------


def _dp_imm(w: int) -> int:
    group = _bits(w, 25, 23)
    if group == 0b010:  # add/sub (immediate): S is bit 29
        return CONTROL if w >> 29 & 1 else OTHER
    if group == 0b100 and _bits(w, 30, 29) == 0b11:  # ANDS/TST (immediate)
        return CONTROL
    return OTHER


def _dp_reg(w: int) -> int:
    top = _bits(w, 28, 24)
    if top == 0b01010:  # logical (shifted register): ANDS, BICS
        return CONTROL if _bits(w, 30, 29) == 0b11 else OTHER
    if top == 0b01011:  # add/sub (shifted or extended register)
        return CONTROL if w >> 29 & 1 else OTHER
    if top == 0b11010:
        sub = _bits(w, 23, 21)
        if sub == 0b010:  # conditional compare (CCMP, CCMN)
            return CONTROL
        if sub == 0b000 and w >> 29 & 1:  # ADCS, SBCS
            return CONTROL
    return OTHER


def _load_store(w: int) -> int:
    v = w >> 26 & 1
    cls = _bits(w, 29, 28)
    if cls == 0b01 and not w >> 24 & 1:  # load register (literal), PRFM (literal)
        return LOAD
    if cls == 0b11:  # load/store register (all addressing modes), atomics
        if not w >> 24 & 1 and w >> 21 & 1 and _bits(w, 11, 10) == 0b00:
            return LOAD  # atomic memory operations (LDADD, SWP, ...): read and write
        opc = _bits(w, 23, 22)
        if v:
            return LOAD if opc & 1 else STORE
        return STORE if opc == 0b00 else LOAD
    if cls == 0b00 and not v and w >> 23 & 1 and w >> 21 & 1:  # CAS, CASP
        return LOAD
    return LOAD if w >> 22 & 1 else STORE  # pairs, exclusives, ordered, NEON structures


def _simd_fp(w: int) -> int:
    top = _bits(w, 28, 24)
    if top == 0b11111 and not w >> 30 & 1 and not w >> 31 & 1:
        return MLA  # FMADD, FMSUB, FNMADD, FNMSUB
    u = w >> 29 & 1
    size = _bits(w, 23, 22)
    if top in (0b01111, 0b11111) and not w >> 10 & 1:  # vector/scalar x indexed element
        opc = _bits(w, 15, 12)
        if opc in (0b0001, 0b0101) and not u:  # FMLA, FMLS (by element)
            return MLA
        if size == 0b10 and (opc in (0b0000, 0b0100) and not u or opc in (0b1000, 0b1100) and u):
            return MLA  # FMLAL, FMLSL, FMLAL2, FMLSL2 (by element)
        if opc in (0b0000, 0b0100) and u:  # MLA, MLS (by element)
            return MLA
        if opc in (0b0010, 0b0110, 0b0011, 0b0111):  # SMLAL, UMLAL, SMLSL, SQDMLAL, ...
            return MLA
        if opc == 0b1110 or opc == 0b1111 and size in (0b00, 0b01, 0b10):
            return DOT  # SDOT, UDOT, USDOT, SUDOT, BFDOT (by element)
        return OTHER
    if top != 0b01110 or w >> 31 & 1:
        return OTHER
    if w >> 21 & 1:
        if w >> 10 & 1:  # three same
            opcode = _bits(w, 15, 11)
            if opcode == 0b11001 and not u:
                return MLA  # FMLA, FMLS (vector, single and double)
            if opcode == 0b11101 and not u and size in (0b00, 0b10):
                return MLA  # FMLAL, FMLSL (vector)
            if opcode == 0b11001 and u and size in (0b00, 0b10):
                return MLA  # FMLAL2, FMLSL2 (vector)
            if opcode == 0b10010:  # MLA, MLS (vector)
                return MLA
            return OTHER
        if _bits(w, 11, 10) == 0b00:  # three different
            if _bits(w, 15, 12) in (0b1000, 0b1010, 0b1001, 0b1011):
                return MLA  # SMLAL, UMLAL, SMLSL, UMLSL, SQDMLAL, SQDMLSL
            return OTHER
        return OTHER
    if w >> 10 & 1 and not _bits(w, 15, 14) and _bits(w, 22, 21) == 0b10:  # three same (FP16)
        if _bits(w, 13, 11) == 0b001 and not u:  # FMLA, FMLS (FP16)
            return MLA
        return OTHER
    if w >> 15 & 1 and w >> 10 & 1:  # three same extra
        opcode = _bits(w, 14, 11)
        if opcode in (0b0010, 0b0011):  # SDOT, UDOT, USDOT
            return DOT
        if opcode == 0b1111 and u:  # BFDOT (size 01), BFMLALB/T (size 11)
            return DOT if size == 0b01 else MLA
        if opcode in (0b0000, 0b0001):  # SQRDMLAH, SQRDMLSH
            return MLA
    return OTHER


# ---- SVE -----------------------------------------------------------------------------------


def _sve(w: int) -> int:
    op0 = _bits(w, 31, 29)
    if op0 in (0b100, 0b101, 0b110):
        return LOAD
    if op0 == 0b111:
        return STORE
    top = _bits(w, 31, 24)
    if op0 == 0b000:
        if top == 0x04 and not w >> 21 & 1 and w >> 14 & 1:
            return MLA  # MLA, MLS, MAD, MSB (predicated)
        return OTHER
    if op0 == 0b001:  # 0x24: compares into predicates; 0x25: predicates, WHILE, wide immediates
        if top == 0x25 and w >> 21 & 1 and _bits(w, 15, 14) == 0b11:
            return OTHER  # integer/FP wide immediate (DUP, FDUP, ADD, MUL, ...)
        return CONTROL
    if op0 == 0b010:  # 0x44/0x45: integer multiply-add, dot products
        if top == 0x44:
            opc = _bits(w, 15, 10)
            if opc >> 1 == 0b00000 or opc == 0b011110:
                return DOT  # SDOT, UDOT (vectors and indexed), USDOT
            if not w >> 21 & 1 and opc >> 3 == 0b010 or w >> 21 & 1 and opc >> 1 == 0b00001:
                return MLA  # SMLALB/T, UMLALB/T, ... ; MLA/MLS (indexed)
        return OTHER
    return _sve_fp(w)


def _sve_fp(w: int) -> int:
    top = _bits(w, 31, 24)
    if top == 0x65:
        if w >> 21 & 1:
            return MLA  # FMLA, FMLS, FNMLA, FNMLS, FMAD, FMSB, FNMAD, FNMSB (predicated)
        if _bits(w, 15, 14) == 0b01 or _bits(w, 20, 16) & 0b11100 == 0b10000 and _bits(
                w, 15, 13) == 0b001:
            return CONTROL  # FP compares (vectors, with zero) into predicates
        return OTHER
    # 0x64
    if not w >> 21 & 1:
        return OTHER
    size, opc = _bits(w, 23, 22), _bits(w, 15, 10)
    if opc >> 1 == 0:
        return MLA  # FMLA, FMLS (indexed)
    if size in (0b00, 0b01) and opc in (0b100000, 0b010000):
        return DOT  # FDOT, BFDOT (vectors, indexed)
    if size in (0b10, 0b11) and opc >> 4 in (0b10, 0b01):
        return MLA  # FMLALB, FMLALT, FMLSLB, FMLSLT, BFMLALB, BFMLALT (vectors, indexed)
    return OTHER


# ---- SME -----------------------------------------------------------------------------------


def _sme(w: int) -> int:
    op0 = _bits(w, 31, 29)
    if op0 in (0b100, 0b101) and w >> 23 & 1:
        return OUTER  # FMOPA, FMOPS, BFMOPA, SMOPA, UMOPA, SUMOPA, USMOPA, BMOPA
    if op0 == 0b101:  # SME2 multi-vector loads and stores (contiguous, strided)
        return STORE if w >> 21 & 1 else LOAD
    if op0 == 0b111:  # LD1/ST1 ZA slices, LDR/STR ZA and ZT0
        return STORE if w >> 21 & 1 else LOAD
    if op0 == 0b110 and w >> 24 & 1:
        return _sme2_za(w)
    return OTHER  # MOVA, ZERO, ADDHA, MOVT, LUTI, ...


def _sme2_za(w: int) -> int:
    """SME2 multi-vector instructions (0xc1......): the ZA multiply-adds and
    dot products by group; everything else (clamp, min/max, zip, convert,
    add into ZA) is "other"."""
    group = _bits(w, 23, 20)
    low = _bits(w, 5, 3)
    if group in (0b0101, 0b1101):  # indexed, two/four vectors (32-bit, 64-bit ZA)
        if w >> 12 & 1:
            return DOT  # FDOT, BFDOT, SDOT, UDOT, USDOT, SUDOT (indexed)
        return MLA if low in (0b000, 0b010) else DOT  # FMLA/FMLS; FVDOT, BFVDOT, SVDOT, ...
    if group in (0b0001, 0b1000, 0b1001):  # indexed long (FMLAL, SMLALL, ...) and FMLA .h
        return MLA
    if _bits(w, 15, 13):
        return OTHER  # FCLAMP, FMAX, ZIP, UZP, SEL, FCVT, FRINT, SQRSHR, ... (no ZA)
    if group in (0b0010, 0b0011, 0b0110, 0b0111):  # one vector with ZA group (single)
        op = _bits(w, 12, 10)
        if op in (0b100, 0b101):
            return DOT
        if op in (0b110, 0b111):
            return OTHER if w >> 4 & 1 else MLA  # FMLA/FMLS; ADD/SUB into ZA
        return MLA  # FMLAL, FMLSL, SMLAL, UMLALL, ...
    if group in (0b1010, 0b1011, 0b1110, 0b1111):  # multiple vectors
        op = _bits(w, 12, 10)
        if op == 0b100:
            return MLA if low & 1 else DOT  # FDOT, BFDOT; FMLA/FMLS .h
        if op == 0b101:
            return DOT  # SDOT, UDOT, USDOT
        if op == 0b110:
            return OTHER if w >> 4 & 1 else MLA  # FMLA/FMLS; ADD/SUB
        if op == 0b111:
            return OTHER  # ADD/SUB/FADD/FSUB into ZA
        return MLA  # FMLAL, FMLSL, ...
    return OTHER
