"""The published packed layouts a plugin realization may declare
(kbench_plugin.h, ABI 2: rhs_layout, lhs_layout), packed independently in
numpy, and byte offsets decoded into what the layout keeps there.

RHS "x16p<NR>x<KR>b": blocks of NR columns of N; each block holds the NR
FP16 bias values of its columns, then ceil(K / KR) groups of KR k values,
each an NR x KR tile column by column (n0k0 n0k1 .. n1k0 ..); columns past N
and k past K are zero. LHS "x16p<MR>x<KR>": blocks of MR rows; per group of
KR k values an MR x KR tile row by row (m0k0 m0k1 .. m1k0 ..); rows past M
and k past K are zero. NR / MR is a number, or "<c>vl": c times the vector
length the realization runs at in 32-bit lanes, the streaming one for SME
code and the SVE one for SVE code (KleidiAI's SME f16p2vlx2b is
"x16p2vlx2b": NR = 2 * SVL / 32; its SVE2.1 f16p16vsx2b, 16 vscale =
VL / 8 columns, is "x16p4vlx2b" at the SVE vector length).
kbench.native.sme_layout is the SME case of the same family."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

_NAME = re.compile(r"x16p([1-9][0-9]*)(vl)?x([1248])(b?)")


def _roundup(v: int, m: int) -> int:
    return -(-v // m) * m


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint16)


@dataclass(frozen=True)
class Layout:
    """One layout at one vector length."""

    name: str
    rhs: bool  # RHS (columns of B, bias inside) or LHS (rows of A)
    block: int  # NR columns or MR rows per block
    kr: int  # k values per group

    @classmethod
    def parse(cls, name: str, rhs: bool, svl_bits: int = 0) -> Layout:
        """The layout a declared name means at a vector length (bits: the one
        the realization runs at, SVL or SVE; needed for the "<c>vl" names).
        ValueError for a name kbench does not implement."""
        m = _NAME.fullmatch(name)
        if m is None or bool(m.group(4)) != rhs:
            want = "x16p<NR>x<KR>b" if rhs else "x16p<MR>x<KR>"
            raise ValueError(f"{name!r} is not a layout kbench implements ({want})")
        block = int(m.group(1))
        if m.group(2):
            if svl_bits <= 0 or svl_bits % 32:
                raise ValueError(f"{name}: needs a vector length, the realization runs at "
                                 f"{svl_bits or 'none'}")
            block *= svl_bits // 32
        return cls(name, rhs, block, int(m.group(3)))

    def size(self, outer: int, k: int) -> int:
        """Bytes of the packing of N columns (RHS) or M rows (LHS) over K."""
        kp = _roundup(k, self.kr)
        if self.rhs:
            return -(-outer // self.block) * self.block * (1 + kp) * 2
        return _roundup(outer, self.block) * kp * 2

    def pack_rhs(self, b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        """The packed bytes (uint8) of B [K, N] FP16 and its bias (None: zeros)."""
        k, n = b.shape
        nr, kr = self.block, self.kr
        nb, kp = -(-n // nr), _roundup(k, kr)
        padded = np.zeros((kp, nb * nr), np.uint16)
        padded[:k, :n] = _bits(b)
        bias_row = np.zeros(nb * nr, np.uint16)
        if bias is not None:
            bias_row[:n] = _bits(np.asarray(bias, np.float16).reshape(n))
        # [group, k in group, block, column] -> [block, group, column, k in group]
        tiles = padded.reshape(kp // kr, kr, nb, nr).transpose(2, 0, 3, 1).reshape(nb, -1)
        out = np.concatenate([bias_row.reshape(nb, nr), tiles], axis=1)
        return np.ascontiguousarray(out).reshape(-1).view(np.uint8)

    def pack_lhs(self, a: np.ndarray) -> np.ndarray:
        """The packed bytes (uint8) of A [M, K] FP16."""
        m, k = a.shape
        mr, kr = self.block, self.kr
        mp, kp = _roundup(m, mr), _roundup(k, kr)
        padded = np.zeros((mp, kp), np.uint16)
        padded[:m, :k] = _bits(a)
        # [block, row, group, k in group] -> [block, group, row, k in group]
        tiles = padded.reshape(mp // mr, mr, kp // kr, kr).transpose(0, 2, 1, 3)
        return np.ascontiguousarray(tiles).reshape(-1).view(np.uint8)

    def padding(self, outer: int, k: int) -> np.ndarray:
        """A mask of the bytes of the packing of N columns (RHS) or M rows (LHS)
        over K that are padding: columns past N and their bias slots, rows past
        M, k past K."""
        if self.rhs:
            real = self.pack_rhs(np.ones((k, outer), np.float16), np.ones(outer, np.float16))
        else:
            real = self.pack_lhs(np.ones((outer, k), np.float16))
        return np.repeat(real.view(np.uint16) == 0, 2)

    def where(self, offset: int, outer: int, k: int) -> str:
        """What the layout keeps at a byte offset, e.g. "block 2, column 5
        (n = 21), k-pair 3 (k = 7, padding past K = 7)"."""
        group = "k-pair" if self.kr == 2 else f"k-group of {self.kr}" if self.kr > 1 else "k"
        kp = _roundup(k, self.kr)
        if self.rhs:
            blk, inner = divmod(offset, self.block * (1 + kp) * 2)
            if inner < self.block * 2:
                c = inner // 2
                return (f"block {blk}, the bias of column {c} "
                        f"({_at('n', blk * self.block + c, outer, 'N')})")
            g, rest = divmod((inner - self.block * 2) // 2, self.block * self.kr)
            c, q = divmod(rest, self.kr)
            return (f"block {blk}, column {c} ({_at('n', blk * self.block + c, outer, 'N')}), "
                    f"{group} {g} ({_at('k', g * self.kr + q, k, 'K')})")
        blk, inner = divmod(offset, self.block * kp * 2)
        g, rest = divmod(inner // 2, self.block * self.kr)
        r, q = divmod(rest, self.kr)
        return (f"block {blk}, row {r} ({_at('m', blk * self.block + r, outer, 'M')}), "
                f"{group} {g} ({_at('k', g * self.kr + q, k, 'K')})")


def _at(index: str, value: int, limit: int, dim: str) -> str:
    """"n = 21", or "n = 70, padding past N = 70"."""
    return f"{index} = {value}" + (f", padding past {dim} = {limit}" if value >= limit else "")


__all__ = ["Layout"]
