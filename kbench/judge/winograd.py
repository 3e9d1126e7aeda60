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
    """S_w for every output of a 3x3, stride-1 convolution (NHWC x, HWIO w)."""
    n, h, wd, c_in = x.shape
    kh, kw, cg, c_out = w.shape
    assert kh == 3 and kw == 3
    og = c_out // groups
    out_h = h + pad[0] + pad[1] - 2
    out_w = wd + pad[2] + pad[3] - 2
    ty, tx = -(-out_h // 2), -(-out_w // 2)
    with np.errstate(invalid="ignore", over="ignore"):
        xa = np.abs(x.astype(np.float64))
        # padded so that every 4x4 tile exists
        xp = np.zeros((n, 2 * ty + 2, 2 * tx + 2, c_in))
        xp[:, pad[0]:pad[0] + h, pad[2]:pad[2] + wd, :] = xa
        tiles = np.empty((n, ty, tx, 4, 4, c_in))
        for i in range(4):
            for j in range(4):
                tiles[:, :, :, i, j, :] = xp[:, i:i + 2 * ty:2, j:j + 2 * tx:2, :]
        v = np.einsum("pi,ntyijc,qj->ntypqc", np.abs(BT), tiles, np.abs(BT))
        ga = np.abs(w.astype(np.float64))  # [3, 3, cg, c_out]
        u = np.einsum("pi,ijco,qj->pqco", np.abs(G), ga, np.abs(G))  # [4, 4, cg, c_out]
        m = np.empty((n, ty, tx, 4, 4, c_out))
        for g in range(groups):
            vg = v[..., g * cg:(g + 1) * cg]
            ug = u[..., g * og:(g + 1) * og]
            m[..., g * og:(g + 1) * og] = np.einsum("ntypqc,pqco->ntypqo", vg, ug)
        y = np.einsum("ip,ntypqo,jq->ntyijo", np.abs(AT), m, np.abs(AT))  # [n,ty,tx,2,2,c_out]
        s = y.transpose(0, 1, 3, 2, 4, 5).reshape(n, 2 * ty, 2 * tx, c_out)[:, :out_h, :out_w, :]
        if bias is not None:
            s = s + np.abs(bias.astype(np.float64))
    return s
