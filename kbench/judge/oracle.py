"""The float64 oracle: the exact result of the FP16 inputs (computed in
float64) and s = sum |a*b| + |bias|, both per output element.

Products of two FP16 values are exact in float64; sums are exact for the
exact-by-design inputs and otherwise off by at most gamma(K, 2^-53) * s,
which the tolerance model adds. Inputs with inf/NaN go through einsum, whose
IEEE semantics do not depend on a BLAS library's shortcuts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reference:
    exact: np.ndarray  # float64, after the clamp
    s: np.ndarray  # float64, sum |a*b| + |bias|
    rounded: np.ndarray  # float16, exact rounded once
    s_finite: np.ndarray | None = None  # the same sum over finite terms only (None: = s)
    clamp: tuple[float, float] | None = None  # the clamp applied to `exact`, if any

    @property
    def finite_sum(self) -> np.ndarray:
        return self.s if self.s_finite is None else self.s_finite


def _finite_abs(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x.astype(np.float64))
    return np.where(np.isfinite(ax), ax, 0.0)


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.isfinite(a).all() and np.isfinite(b).all():
        return a @ b
    with np.errstate(invalid="ignore"):  # 0 x inf, inf - inf (float64 sums of FP16
        return np.einsum("ik,kj->ij", a, b)  # products cannot overflow)


def clamp64(x: np.ndarray, clamp: tuple[float, float] | None) -> np.ndarray:
    if clamp is None:
        return x
    lo, hi = clamp
    return np.where(x < lo, lo, np.where(x > hi, hi, x))  # NaN compares quietly: kept


def round16(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return x.astype(np.float16)


def gemm_unclamped(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    c = _matmul(a64, b64)
    if bias is not None:
        with np.errstate(invalid="ignore"):
            c = c + bias.astype(np.float64)[None, :]
    return c


def gemm_reference(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
                   clamp: tuple[float, float] | None) -> Reference:
    exact = clamp64(gemm_unclamped(a, b, bias), clamp)
    # sums of absolute values: no inf - inf, and _matmul keeps 0 x inf quiet
    s = _matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    s_fin = _finite_abs(a) @ _finite_abs(b)
    if bias is not None:
        s = s + np.abs(bias.astype(np.float64))[None, :]
        s_fin = s_fin + _finite_abs(bias)[None, :]
    return Reference(exact, s, round16(exact), s_fin, clamp)


def im2col(x: np.ndarray, kh: int, kw: int, stride: tuple[int, int],
           pad: tuple[int, int, int, int], dilation: tuple[int, int], groups: int,
           out_h: int, out_w: int) -> np.ndarray:
    """Patches [groups, n*out_h*out_w, kh*kw*cg], columns ordered (ky, kx, ci)."""
    n, h, w, c = x.shape
    cg = c // groups
    xp = np.zeros((n, h + pad[0] + pad[1], w + pad[2] + pad[3], c), dtype=x.dtype)
    xp[:, pad[0]:pad[0] + h, pad[2]:pad[2] + w, :] = x
    cols = np.empty((n, out_h, out_w, kh, kw, c), dtype=x.dtype)
    for ky in range(kh):
        for kx in range(kw):
            y0, x0 = ky * dilation[0], kx * dilation[1]
            cols[:, :, :, ky, kx, :] = xp[:, y0:y0 + stride[0] * (out_h - 1) + 1:stride[0],
                                          x0:x0 + stride[1] * (out_w - 1) + 1:stride[1], :]
    cols = cols.reshape(n * out_h * out_w, kh, kw, groups, cg)
    return np.ascontiguousarray(cols.transpose(3, 0, 1, 2, 4)).reshape(
        groups, n * out_h * out_w, kh * kw * cg)


def conv_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None,
                   stride: tuple[int, int], pad: tuple[int, int, int, int],
                   dilation: tuple[int, int], groups: int,
                   clamp: tuple[float, float] | None) -> Reference:
    """NHWC x, HWIO w -> NHWC reference."""
    n = x.shape[0]
    kh, kw, cg, c_out = w.shape
    og = c_out // groups
    eff_h, eff_w = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
    out_h = (x.shape[1] + pad[0] + pad[1] - eff_h) // stride[0] + 1
    out_w = (x.shape[2] + pad[2] + pad[3] - eff_w) // stride[1] + 1
    cols = im2col(x.astype(np.float64), kh, kw, stride, pad, dilation, groups, out_h, out_w)
    w64 = w.astype(np.float64).reshape(kh * kw * cg, c_out)
    exact = np.empty((n * out_h * out_w, c_out))
    s = np.empty_like(exact)
    s_fin = np.empty_like(exact)
    for g in range(groups):
        wg = w64[:, g * og:(g + 1) * og]
        exact[:, g * og:(g + 1) * og] = _matmul(cols[g], wg)
        s[:, g * og:(g + 1) * og] = _matmul(np.abs(cols[g]), np.abs(wg))
        s_fin[:, g * og:(g + 1) * og] = _finite_abs(cols[g]) @ _finite_abs(wg)
    if bias is not None:
        b64 = bias.astype(np.float64)[None, :]
        with np.errstate(invalid="ignore"):
            exact = exact + b64
            s = s + np.abs(b64)
            s_fin = s_fin + _finite_abs(bias)[None, :]
    shape = (n, out_h, out_w, c_out)
    exact = clamp64(exact, clamp).reshape(shape)
    return Reference(exact, s.reshape(shape), round16(exact), s_fin.reshape(shape), clamp)


def with_clamp(ref: Reference, clamp: tuple[float, float] | None) -> Reference:
    """The same reference with a clamp applied (s is unchanged)."""
    exact = clamp64(ref.exact, clamp)
    return Reference(exact, ref.s, round16(exact), ref.s_finite, clamp)
