"""An independent model of the SVE2.1 kernels' arithmetic (ours and Arm
KleidiAI's kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot compute
alike), for the suites that hold them to it bit for bit."""

from __future__ import annotations

import numpy as np


def fclamp16(h: np.ndarray, lo16: np.float16, hi16: np.float16) -> np.ndarray:
    """FCLAMP of FP16 values: FMAXNM with the lower bound, then FMINNM with the
    upper one (a NaN becomes the lower bound; +0 orders above -0)."""
    x = np.where(np.isnan(h), lo16, h)
    x = np.where((x < lo16) | ((x == lo16) & np.signbit(x) & ~np.signbit(lo16)), lo16, x)
    x = np.where((x > hi16) | ((x == hi16) & ~np.signbit(x) & np.signbit(hi16)), hi16, x)
    return x.astype(np.float16)


def fdot_model(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
               lo: float = -np.inf, hi: float = np.inf) -> np.ndarray:
    """The kernels' arithmetic, independently: each output starts from its
    bias in FP32; per k pair (a zero past an odd K) the two products summed
    exactly and rounded to FP32 (FDOT's FPDot), then added to the accumulator
    and rounded; the result rounded to FP16; then FCLAMP against the bounds
    rounded to FP16: a NaN becomes the lower bound, +0 orders above -0."""
    m, k = a.shape
    n = b.shape[1]
    kp = (k + 1) // 2
    a64 = np.zeros((m, 2 * kp))
    a64[:, :k] = a.astype(np.float64)
    b64 = np.zeros((2 * kp, n))
    b64[:k] = b.astype(np.float64)
    start = np.zeros(n, np.float32) if bias is None else bias.astype(np.float32)
    acc = np.broadcast_to(start, (m, n)).copy()
    with np.errstate(all="ignore"):
        for p in range(kp):
            s = (a64[:, 2 * p, None] * b64[None, 2 * p, :]
                 + a64[:, 2 * p + 1, None] * b64[None, 2 * p + 1, :]).astype(np.float32)
            acc = (acc + s).astype(np.float32)
        h = acc.astype(np.float16)
        lo16, hi16 = np.float16(lo), np.float16(hi)
    return fclamp16(h, lo16, hi16)
