"""Machine-code mutation operators (kbench.targets.a64patch) on code
assembled here from text by LLVM: each operator turns the instructions it
applies to into exactly the instruction it promises (the text LLVM decodes
from the new word), touches nothing it does not apply to or that did not
run, and names its mutants the same way every time. Also the batch
disassembler (kbench.targets.a64asm) and the stratified sample
(kbench.harness.mcsites)."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from kbench.harness import mcsites
from kbench.targets import a64patch
from kbench.targets.a64asm import Disassembler, find_llvm_mc
from kbench.targets.coverage import MATTR
from kbench.targets.elf import Elf

LLVM_MC = find_llvm_mc()
needs_llvm = pytest.mark.skipif(LLVM_MC is None, reason="no llvm-mc of LLVM 16 or later "
                                "(bash ci/install-toolchain.sh installs llvm-19)")


def assemble(tmp: Path, src: str) -> list[int]:
    """The words of a function assembled by llvm-mc (local branches resolved)."""
    assert LLVM_MC is not None
    (tmp / "f.s").write_text("f:\n" + src)
    subprocess.run([LLVM_MC, "-triple=aarch64", f"-mattr={MATTR}", "-filetype=obj", "-o",
                    str(tmp / "f.o"), str(tmp / "f.s")], check=True)
    return Elf(tmp / "f.o").words(".text")


def mutate(tmp: Path, src: str, executed: set[int] | None = None
           ) -> tuple[list[a64patch.Insn], list[a64patch.Mutation]]:
    d = Disassembler()
    words = assemble(tmp, src)
    insns = [a64patch.Insn(4 * i, w, t) for i, (w, t) in enumerate(zip(words, d.texts(words),
                                                                          strict=True))]
    ran = {i.addr for i in insns} if executed is None else executed
    return insns, a64patch.Generator(d.texts).function("f", 0, insns, ran)


def at(muts: list[a64patch.Mutation], offset: int) -> dict[str, str]:
    """variant -> new text of the mutations of one instruction."""
    return {m.variant: m.new_text for m in muts if m.offset == offset}


@needs_llvm
def test_every_operator_makes_the_instruction_it_promises(tmp_path: Path) -> None:
    src = """
  ptrue p2.h
  mov x20, x3
  add x22, x21, x2
  b.lt 1f
  csel x0, x1, x2, lt
1:
  whilelt p0.h, x0, x1
  fmopa za1.s, p0/m, p0/m, z0.h, z1.h
  fmopa za1.s, p0/m, p0/m, z2.h, z3.h
  st1h {z0.h}, p1, [x0]
  add x0, x1, #16
  ldr x1, [x0, #8]
  lsl x21, x17, #5
  ld1h {z4.s}, p0/z, [x24, #1, mul vl]
  cntw x16
  fmax z0.h, p0/m, z0.h, z1.h
  fclamp {z0.h, z1.h}, z2.h, z3.h
  cbz x9, 1b
  tbz w15, #2, 1b
  st1h {za0h.h[w12, 0]}, p0, [x0, x1, lsl #1]
  ret
"""
    insns, muts = mutate(tmp_path, src)
    assert at(muts, 0x8) == {"nop": "nop", "reg x21>x20": "add x22, x20, x2",
                             "reg x2>x20": "add x22, x21, x20"}
    assert at(muts, 0xC)["cond"].startswith("b.ge ")
    assert at(muts, 0x10)["cond"] == "csel x0, x1, x2, ge"
    assert at(muts, 0x14)["cond"] == "whilele p0.h, x0, x1"
    second = at(muts, 0x1C)
    assert second["fma-drop"] == "nop"
    assert second["fma-negate"] == "fmops za1.s, p0/m, p0/m, z2.h, z3.h"
    assert second["fma-twice"] == "fmopa za1.s, p0/m, p0/m, z0.h, z1.h"
    assert second["tile za2"] == "fmopa za2.s, p0/m, p0/m, z2.h, z3.h"
    assert "fma-twice" not in at(muts, 0x18)  # the first of its kind in its block
    assert at(muts, 0x20)["pred p1>p0"] == "st1h { z0.h }, p0, [x0]"  # the nearest written
    assert at(muts, 0x24)["imm+1"] == "add x0, x1, #17"
    assert at(muts, 0x24)["imm-1"] == "add x0, x1, #15"
    assert at(muts, 0x28)["imm+1"] == "ldr x1, [x0, #16]"
    assert at(muts, 0x28)["imm-1"] == "ldr x1, [x0]"
    assert at(muts, 0x2C)["imm+1"] == "lsl x21, x17, #6"
    assert at(muts, 0x2C)["imm-1"] == "lsl x21, x17, #4"
    assert at(muts, 0x30)["imm+1"] == "ld1h { z4.s }, p0/z, [x24, #2, mul vl]"
    assert at(muts, 0x30)["imm-1"] == "ld1h { z4.s }, p0/z, [x24]"
    assert at(muts, 0x34)["imm+1"] == "cntw x16, all, mul #2"
    fmax = at(muts, 0x38)
    assert fmax["minmax fmin"] == "fmin z0.h, p0/m, z0.h, z1.h"
    assert fmax["minmax fmaxnm"] == "fmaxnm z0.h, p0/m, z0.h, z1.h"
    assert at(muts, 0x3C)["minmax bounds"] == "fclamp { z0.h, z1.h }, z3.h, z2.h"
    assert at(muts, 0x40)["cond"].startswith("cbnz x9, ")
    assert at(muts, 0x44)["cond"].startswith("tbnz w15, #2, ")
    tile = at(muts, 0x48)
    assert tile["tile za1"] == "st1h {za1h.h[w12, 0]}, p0, [x0, x1, lsl #1]"
    assert tile["imm+1"] == "st1h {za0h.h[w12, 1]}, p0, [x0, x1, lsl #1]"
    # every mutant's new word decodes to its text, differs from the old word, and keeps
    # what the id says
    d = Disassembler()
    by_addr = {i.addr: i for i in insns}
    for m in muts:
        assert m.new != m.old and d.text(m.new) == m.new_text
        assert by_addr[m.addr].word == m.old and by_addr[m.addr].text == m.old_text
        assert m.id == f"f+{m.offset:#x}/{m.variant.replace(' ', ':')}"
        assert m.operator in a64patch.OPERATORS


@needs_llvm
def test_only_executed_instructions_are_mutated_and_ids_repeat(tmp_path: Path) -> None:
    src = "  add x0, x1, #1\n  add x2, x3, #2\n  sub x4, x5, #3\n  ret\n"
    _, muts = mutate(tmp_path, src, executed={0x4})
    assert muts and {m.offset for m in muts} == {0x4}
    _, again = mutate(tmp_path, src, executed={0x4})
    assert [m.id for m in muts] == [m.id for m in again]
    assert len({m.id for m in muts}) == len(muts)


@needs_llvm
def test_operators_do_not_apply_where_they_cannot(tmp_path: Path) -> None:
    # no condition to invert, no immediate, no other register of the class written
    # before, no product: a move of a register keeps only "nop"
    _, muts = mutate(tmp_path, "  mov x0, x1\n")
    assert [m.variant for m in muts] == ["nop"]
    # a product with another kind before it is not a fma-twice; a branch's offset is no
    # immediate to move; a PC-relative address neither
    _, muts = mutate(tmp_path, "  fmla z0.h, p0/m, z1.h, z2.h\n  fmopa za0.s, p0/m, p0/m, "
                               "z0.h, z1.h\n  b #8\n  adrp x0, #4096\n")
    assert "fma-twice" not in at(muts, 0x4)
    assert not any(v.startswith("imm") for v in at(muts, 0x8))
    assert not any(v.startswith("imm") for v in at(muts, 0xC))
    # the first product of a new block (a branch target) is not a copy of the one before
    _, muts = mutate(tmp_path, "  fmopa za0.s, p0/m, p0/m, z0.h, z1.h\n1:\n  fmopa za0.s, "
                               "p0/m, p0/m, z2.h, z3.h\n  b.ne 1b\n")
    assert "fma-twice" not in at(muts, 0x4)


def test_patch_replaces_one_word_and_checks_the_old_one() -> None:
    data = bytes(range(16))
    old = int.from_bytes(data[4:8], "little")
    out = a64patch.patch(data, 4, old, a64patch.NOP)
    assert out[:4] == data[:4] and out[8:] == data[8:]
    assert int.from_bytes(out[4:8], "little") == a64patch.NOP
    with pytest.raises(ValueError, match="not 0x"):
        a64patch.patch(data, 8, old, a64patch.NOP)


@needs_llvm
def test_the_batch_disassembler_matches_one_word_at_a_time() -> None:
    rnd = random.Random(7)
    words = [rnd.getrandbits(32) for _ in range(40)] + [a64patch.NOP, 0xFFFFFFFF]
    batch = Disassembler().texts(words)
    assert any(t is None for t in batch) and any(t is not None for t in batch)
    single = Disassembler()
    assert batch == [single.texts([w])[0] for w in words]
    assert batch[-2] == "nop" and batch[-1] is None


def test_quotas_are_stratified_and_cover_every_function() -> None:
    sizes = {"big": 100, "mid": 30, "one": 1, "empty": 0}
    q = mcsites.quotas(sizes, 20)
    assert sum(q.values()) == 20 and q["one"] == 1 and "empty" not in q
    assert q["big"] > q["mid"] > q["one"]
    assert mcsites.quotas(sizes, 2) == {"big": 1, "mid": 1, "one": 0, "empty": 0}
    assert mcsites.quotas({"a": 3, "b": 2}, 50) == {"a": 3, "b": 2}  # never more than there are


def _planned(fn: str, i: int) -> mcsites.Planned:
    return mcsites.Planned(f"{fn}+{4 * i:#x}/nop", fn, 4 * i, 4 * i, 4 * i, "nop", "nop", 0, 0,
                           "x", "nop")


def test_the_sample_is_deterministic_by_key_and_takes_turns() -> None:
    pool = [_planned("a", i) for i in range(40)] + [_planned("b", i) for i in range(10)] + [
        _planned("c", 0)]
    s1 = mcsites.sample(pool, 10, "")
    assert s1 == mcsites.sample(list(reversed(pool)), 10, "")
    assert {m.function for m in s1} == {"a", "b", "c"}
    assert [m.function for m in s1[:3]] == ["a", "b", "c"]  # one of each function first
    assert s1 != mcsites.sample(pool, 10, "other key")
    assert len(mcsites.sample(pool, None)) == len(pool)
