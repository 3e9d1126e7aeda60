"""A64 instruction words as text, by LLVM's own decoder: llvm-mc
--disassemble for batches of words (every word is one input line; a word
LLVM cannot decode gives no output line and a warning naming its line, so
outputs are matched back to their words exactly), and the function listing
of a file with llvm-objdump (kbench.targets.coverage).

The text of a word is normalised: mnemonic and operands separated by single
spaces, without the comment LLVM appends to some immediates ("// =0x1").
An encoding LLVM 16 or later cannot decode (or a reserved one) is None."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence

from kbench.errors import KbenchError
from kbench.targets.coverage import MATTR

# newest first: SME2 needs LLVM 16 or later
ASSEMBLERS = tuple(f"llvm-mc-{v}" for v in range(22, 15, -1)) + ("llvm-mc",)
_DROPPED = re.compile(r"^<stdin>:(\d+):\d+: (?:warning|error): invalid instruction encoding")


class DisassemblerError(KbenchError):
    """llvm-mc is missing, failed, or its output does not line up with its input."""


def find_llvm_mc() -> str | None:
    """The newest llvm-mc on PATH (LLVM 16 or later, for SME2), or None."""
    for name in ASSEMBLERS:
        found = shutil.which(name)
        if found and (name != "llvm-mc" or _major(found) >= 16):
            return found
    return None


def _major(tool: str) -> int:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    m = re.search(r"LLVM version (\d+)", out)
    return int(m.group(1)) if m else 0


def normalise(text: str) -> str:
    """Single spaces, no trailing comment."""
    return " ".join(text.split("//", 1)[0].split())


class Disassembler:
    """Words to text with one llvm-mc process per batch, memoised."""

    def __init__(self, tool: str | None = None) -> None:
        found = tool or find_llvm_mc()
        if found is None:
            raise DisassemblerError(
                "mutate: no llvm-mc of LLVM 16 or later on PATH (it decodes SME2): install "
                "llvm-19 (bash ci/install-toolchain.sh does)", "llvm-mc")
        self.tool = found
        self._memo: dict[int, str | None] = {}

    def texts(self, words: Sequence[int]) -> list[str | None]:
        """The text of each word (None: not a valid encoding)."""
        todo = sorted({w & 0xFFFFFFFF for w in words} - self._memo.keys())
        for start in range(0, len(todo), 200_000):
            self._batch(todo[start:start + 200_000])
        return [self._memo[w & 0xFFFFFFFF] for w in words]

    def text(self, word: int) -> str | None:
        return self.texts([word])[0]

    def _batch(self, words: list[int]) -> None:
        if not words:
            return
        lines = "".join(" ".join(f"0x{b:02x}" for b in w.to_bytes(4, "little")) + "\n"
                        for w in words)
        try:
            proc = subprocess.run([self.tool, "--disassemble", "-triple=aarch64",
                                   f"-mattr={MATTR}"], input=lines, capture_output=True,
                                  text=True, timeout=600, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise DisassemblerError(f"mutate: {self.tool} did not run: {exc}",
                                    "llvm-mc") from exc
        dropped = {int(m.group(1)) - 1 for line in proc.stderr.splitlines()
                   if (m := _DROPPED.match(line))}
        out = [normalise(line) for line in proc.stdout.splitlines()
               if line.strip() and not line.lstrip().startswith(".")]
        if len(out) + len(dropped) != len(words):
            raise DisassemblerError(
                f"mutate: {self.tool} gave {len(out)} instructions and {len(dropped)} invalid "
                f"encodings for {len(words)} words (exit {proc.returncode}): "
                f"{proc.stderr.strip()[:300]}", "llvm-mc")
        it = iter(out)
        for i, w in enumerate(words):
            self._memo[w] = None if i in dropped else next(it)
