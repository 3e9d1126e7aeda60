"""The magnitude sum of the Winograd F(2x2, 3x3) error model: the same
computation as the kernel with every transform and value in absolute value,

    S_w = |A^T| (sum over ci of (|G||g||G^T|) (.) (|B^T||d||B|)) |A| + |bias|,

so that |Y - y| <= gamma(c_in/groups + 12, 2^-24) * S_w bounds the error of
an FP32 Winograd convolution (the transforms add up to 12 roundings to the
channel sum, and S_w, unlike sum |x w|, carries the transforms' growth)."""

from __future__ import annotations

import numpy as np

G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=float)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=float)
EXTRA_ROUNDINGS = 12


def magnitude_sum(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                  pad: tuple[int, int, int, int], groups: int) -> np.ndarray:
    """S_w for every output of a 3x3, stride-1 convolution (NHWC x, HWIO w).

    Non-finite inputs give inf exactly where they enter the output through a
    nonzero transform coefficient: a transform's zero coefficients are
    additions the kernel never makes (0 * inf would otherwise make S_w NaN for
    outputs that an inf in the same tile does not touch). In the channel
    products an inf meets its partner whatever that is (inf * 0 is NaN there)."""
    n, h, wd, c_in = x.shape
    kh, kw, cg, c_out = w.shape
    if (kh, kw) != (3, 3):
        raise ValueError(f"the Winograd F(2x2, 3x3) magnitude sum needs 3x3 weights, not {kh}x{kw}")
    og = c_out // groups
    out_h = h + pad[0] + pad[1] - 2
    out_w = wd + pad[2] + pad[3] - 2
    ty, tx = -(-out_h // 2), -(-out_w // 2)
    xa = np.abs(x.astype(np.float64))
    ga = np.abs(w.astype(np.float64))  # [3, 3, cg, c_out]
    x_bad, g_bad = ~np.isfinite(xa), ~np.isfinite(ga)

    def tiles_of(values: np.ndarray) -> np.ndarray:
        # padded so that every 4x4 tile exists
        xp = np.zeros((n, 2 * ty + 2, 2 * tx + 2, c_in))
        xp[:, pad[0]:pad[0] + h, pad[2]:pad[2] + wd, :] = values
        tiles = np.empty((n, ty, tx, 4, 4, c_in))
        for i in range(4):
            for j in range(4):
                tiles[:, :, :, i, j, :] = xp[:, i:i + 2 * ty:2, j:j + 2 * tx:2, :]
        return np.einsum("pi,ntyijc,qj->ntypqc", np.abs(BT), tiles, np.abs(BT))

    def output_of(v: np.ndarray, u: np.ndarray) -> np.ndarray:
        m = np.empty((n, ty, tx, 4, 4, c_out))
        for g in range(groups):
            vg = v[..., g * cg:(g + 1) * cg]
            ug = u[..., g * og:(g + 1) * og]
            m[..., g * og:(g + 1) * og] = np.einsum("ntypqc,pqco->ntypqo", vg, ug)
        y = np.einsum("ip,ntypqo,jq->ntyijo", np.abs(AT), m, np.abs(AT))  # [n,ty,tx,2,2,c_out]
        return y.transpose(0, 1, 3, 2, 4, 5).reshape(n, 2 * ty, 2 * tx, c_out)[:, :out_h, :out_w, :]

    v = tiles_of(np.where(x_bad, 0.0, xa))
    u = np.einsum("pi,ijco,qj->pqco", np.abs(G), np.where(g_bad, 0.0, ga), np.abs(G))
    s = output_of(v, u)
    if x_bad.any() or g_bad.any():
        # where a non-finite input reaches: 1 for a transformed value it
        # enters, then any product with it, then every output it enters
        v_bad = (tiles_of(x_bad.astype(np.float64)) > 0).astype(np.float64)
        u_bad = (np.einsum("pi,ijco,qj->pqco", np.abs(G), g_bad.astype(np.float64),
                           np.abs(G)) > 0).astype(np.float64)
        reached = output_of(v_bad, np.ones_like(u)) + output_of(np.ones_like(v), u_bad)
        s = np.where(reached > 0, np.inf, s)
    if bias is not None:
        s = s + np.abs(bias.astype(np.float64))
    return s
