"""The SME backend's packed layouts, packed independently in numpy.

Written from the layout definitions (not from the C packers), so that the
tests can compare the library's native packed payload with it byte for byte.

Let VL32 = SVL / 32 (SVL in bits) and nr = mr = 2 * VL32; K is interleaved
by 2 (k pairs).

RHS "x16p2vlx2b": for each block of nr columns of N, first the nr FP16 bias
values of the block, then ceil(K / 2) k pairs, each an nr x 2 tile of FP16
values in the order n0k0 n0k1 n1k0 n1k1 ...; columns past N and the k past an
odd K are zero. Block stride nr * (2 + roundup(K, 2) * 2) bytes, total
ceil(N / nr) blocks.

LHS "x16p2vlx2": for each block of mr rows, per k pair an mr x 2 tile in the
order m0k0 m0k1 m1k0 m1k1 ...; roundup(M, mr) * roundup(K, 2) * 2 bytes.
"""

from __future__ import annotations

import numpy as np

HEADER_SIZE = 64  # bytes of the self-describing header before the payload


def block(svl_bits: int) -> int:
    """nr = mr = 2 * VL32 for a streaming vector length in bits."""
    if svl_bits <= 0 or svl_bits % 128:
        raise ValueError(f"svl_bits: {svl_bits} is not a multiple of 128")
    return 2 * (svl_bits // 32)


def _roundup(v: int, m: int) -> int:
    return -(-v // m) * m


def rhs_size(n: int, k: int, svl_bits: int) -> int:
    """Bytes of the x16p2vlx2b packing of a K x N RHS."""
    nr = block(svl_bits)
    return -(-n // nr) * nr * (2 + _roundup(k, 2) * 2)


def lhs_size(m: int, k: int, svl_bits: int) -> int:
    """Bytes of the x16p2vlx2 packing of an M x K LHS."""
    return _roundup(m, block(svl_bits)) * _roundup(k, 2) * 2


def _bits(x: np.ndarray) -> np.ndarray:
    """FP16 values as their uint16 bit patterns (NaN payloads kept)."""
    if x.dtype != np.float16:
        raise TypeError(f"expected float16, got {x.dtype}")
    return np.ascontiguousarray(x).view(np.uint16)


def pack_rhs(b: np.ndarray, bias: np.ndarray | None, svl_bits: int) -> np.ndarray:
    """x16p2vlx2b payload (uint8) of b [K, N] FP16 with bias [N] (None = zeros)."""
    k, n = b.shape
    nr = block(svl_bits)
    nb, kp = -(-n // nr), _roundup(k, 2)
    padded = np.zeros((kp, nb * nr), np.uint16)
    padded[:k, :n] = _bits(b)
    bias_row = np.zeros(nb * nr, np.uint16)
    if bias is not None:
        bias_row[:n] = _bits(np.asarray(bias).reshape(n))
    # [kpair, k in pair, block, column in block] -> [block, kpair, column, k in pair]
    pairs = padded.reshape(kp // 2, 2, nb, nr).transpose(2, 0, 3, 1).reshape(nb, -1)
    blocks = np.concatenate([bias_row.reshape(nb, nr), pairs], axis=1)
    out = np.ascontiguousarray(blocks).reshape(-1).view(np.uint8)
    assert out.size == rhs_size(n, k, svl_bits)
    return out


def pack_lhs(a: np.ndarray, svl_bits: int) -> np.ndarray:
    """x16p2vlx2 payload (uint8) of a [M, K] FP16."""
    m, k = a.shape
    mr = block(svl_bits)
    mp, kp = _roundup(m, mr), _roundup(k, 2)
    padded = np.zeros((mp, kp), np.uint16)
    padded[:m, :k] = _bits(a)
    # [block, row in block, kpair, k in pair] -> [block, kpair, row, k in pair]
    tiles = padded.reshape(mp // mr, mr, kp // 2, 2).transpose(0, 2, 1, 3)
    out = np.ascontiguousarray(tiles).reshape(-1).view(np.uint8)
    assert out.size == lhs_size(m, k, svl_bits)
    return out


def unpack_rhs(payload: np.ndarray, n: int, k: int, svl_bits: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(B [K, N], bias [N]) as FP16 from an x16p2vlx2b payload."""
    nr = block(svl_bits)
    nb, kp = -(-n // nr), _roundup(k, 2)
    h = np.ascontiguousarray(payload[:rhs_size(n, k, svl_bits)]).view(np.uint16)
    blocks = h.reshape(nb, nr + kp * nr)
    bias = blocks[:, :nr].reshape(-1)[:n]
    b = blocks[:, nr:].reshape(nb, kp // 2, nr, 2).transpose(1, 3, 0, 2).reshape(kp, nb * nr)
    return b[:k, :n].view(np.float16), bias.view(np.float16)


def matmul_packed(lhs: np.ndarray, rhs: np.ndarray, m: int, n: int, k: int,
                  svl_bits: int) -> np.ndarray:
    """float64 result of a packed LHS times a packed RHS plus its bias, block by
    block as the MOPA kernels walk the layouts: each k pair of an mr-row block
    and an nr-column block is an outer product of mr and nr FP16 pairs."""
    nr = mr = block(svl_bits)
    kp = _roundup(k, 2) // 2
    lh = np.ascontiguousarray(lhs).view(np.float16).astype(np.float64)
    rh = np.ascontiguousarray(rhs).view(np.float16).astype(np.float64)
    lblocks = lh.reshape(-1, kp, mr, 2)
    rblocks = rh.reshape(-1, nr + kp * nr * 2)
    out = np.zeros((lblocks.shape[0] * mr, rblocks.shape[0] * nr))
    for bi, lb in enumerate(lblocks):
        for bj, rb in enumerate(rblocks):
            bias, pairs = rb[:nr], rb[nr:].reshape(kp, nr, 2)
            tile = np.broadcast_to(bias, (mr, nr)).copy()
            for p in range(kp):
                tile += np.outer(lb[p, :, 0], pairs[p, :, 0])
                tile += np.outer(lb[p, :, 1], pairs[p, :, 1])
            out[bi * mr:(bi + 1) * mr, bj * nr:(bj + 1) * nr] = tile
    return out[:m, :n]


__all__ = ["HEADER_SIZE", "block", "lhs_size", "matmul_packed", "pack_lhs", "pack_rhs",
           "rhs_size", "unpack_rhs"]
