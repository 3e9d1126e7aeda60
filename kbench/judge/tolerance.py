"""The error model of DESIGN.md: a per-element bound from K, the accumulator
and s = sum|a*b| + |bias|.

    |C_impl - c| <= 1/2 ulp16(|c| + e) + e,
    e = gamma(K', u_acc) * s + K' * eta_acc + e64

c is the exact result after the clamp, K' the number of roundings on the
accumulation chain, u_acc the accumulator's unit roundoff. The half ulp is
taken at |c| + e rather than |c|: the accumulated value may sit in the next
binade up, whose ulp is twice as large. eta_acc is half the accumulator's
smallest subnormal spacing (2^-25 for FP16, 2^-150 for FP32): a fused
multiply-add whose result underflows errs by up to that much in absolute
terms, which no relative term covers. e64 covers the float64 oracle's own
rounding (gamma(K, 2^-53) * s), far below every other term.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FP16_MAX = 65504.0
FP16_OVERFLOW = 65520.0  # exact values at or above this round to inf
U_FP32 = 2.0**-24
U_FP16 = 2.0**-11
U_FP64 = 2.0**-53


def gamma(n: int | float, u: float) -> float:
    """gamma(n, u) = n u / (1 - n u); inf when n u >= 1."""
    nu = n * u
    return float("inf") if nu >= 1.0 else nu / (1.0 - nu)


def ulp16(x: np.ndarray) -> np.ndarray:
    """Spacing of binary16 numbers at |x| (2^-24 in the subnormal range, 32 at the top)."""
    ax = np.abs(np.asarray(x, dtype=np.float64))
    ax = np.where(np.isfinite(ax), ax, FP16_MAX)
    e = np.floor(np.log2(np.maximum(ax, 2.0**-14)))
    e = np.minimum(e, 15.0)
    return np.exp2(e - 10.0)


@dataclass(frozen=True)
class AccumModel:
    """How a realization accumulates, as it declares it."""

    accum: str  # "fp32" or "fp16"
    k_per_rounding: int = 1  # products summed exactly before each rounding
    extra_roundings: int = 0  # roundings outside the sum (e.g. Winograd transforms)
    finite_inputs_only: bool = False  # non-finite inputs give some non-finite output
    bias_rounding: bool = True  # False: the bias starts the chain (loaded, not added)

    @property
    def unit_roundoff(self) -> float:
        return U_FP32 if self.accum == "fp32" else U_FP16

    @property
    def underflow_error(self) -> float:
        """Half the smallest subnormal spacing of the accumulator format."""
        return 2.0**-25 if self.accum == "fp16" else 2.0**-150

    @property
    def overflow_threshold(self) -> float:
        """Partial sums whose magnitude can reach this may overflow the accumulator."""
        return FP16_OVERFLOW if self.accum == "fp16" else 3.4028235e38

    def roundings(self, k: int, has_bias: bool) -> int:
        """K': roundings on the longest chain (+1 for a bias added to it)."""
        kpr = max(1, self.k_per_rounding)
        return -(-k // kpr) + self.extra_roundings + (1 if has_bias and self.bias_rounding else 0)

    def accumulation_error(self, s: np.ndarray, k: int, has_bias: bool) -> np.ndarray:
        n = self.roundings(k, has_bias)
        return (gamma(n, self.unit_roundoff) * s + n * self.underflow_error
                + gamma(k + 1, U_FP64) * s)

    def bound(self, c: np.ndarray, s: np.ndarray, k: int, has_bias: bool) -> np.ndarray:
        """Per-element bound on |C_impl - c| for finite exact values c."""
        e = self.accumulation_error(s, k, has_bias)
        return 0.5 * ulp16(np.abs(c) + e) + e
