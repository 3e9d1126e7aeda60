"""Input generators. Every array is FP16; every draw is seeded from the
case name and the input kind, so a case is the same on every run and target.

Kinds:
- exact: small integers chosen so that every product and every partial sum
  is an integer of magnitude <= 2048, exact in FP16 and FP32 alike: every
  correct backend must match the oracle bit for bit.
- uniform / normal: real values at a scale picked per case (1/16, 1, 4).
- specials: uniform values plus +-0, subnormals, one NaN row, +-inf in one
  column and a near-65504 row and column whose products overflow (for a
  convolution: in filter columns, and where c_in is odd and groups = 1 also
  +inf and NaN in the first channel of two input pixels).
Clamp bounds (when a case clamps) sit at the 15th and 85th percentiles of
the unclamped result, rounded to FP16, so a clamp never flattens a case.
A GEMM case with a fixed clamp_max (-0.0: the bound whose sign of zero a
kernel must keep) has its bias shifted down, where it has one, until
CLAMP_MAX_BELOW of the result lies below the bound (for exact inputs only
as far as every partial sum of a bias-first chain stays an integer within
+-2048), so that the clamped result is not mostly that bound.

A case whose inputs, outputs and float64 oracle would not fit in memory is
refused before anything is allocated (CaseTooLarge, with the bytes it
would need): the limit is 80% of the memory available when the run starts,
or KBENCH_MAX_CASE_BYTES.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from functools import cache

import numpy as np

from kbench.judge import oracle
from kbench.problems.cases import ConvCase, GemmCase

EXACT_LIMIT = 2048  # partial sums stay integers within +-2048
CLAMP_MAX_BELOW = 0.7  # the share of the result below a fixed clamp_max
SCALES = (1.0 / 16.0, 1.0, 4.0)


class CaseTooLarge(ValueError):
    """A case would need more memory than this machine allows a case."""


MAX_BYTES_ENV = "KBENCH_MAX_CASE_BYTES"


def case_bytes(case: GemmCase | ConvCase) -> int:
    """An upper estimate of the memory a case takes to generate, run and
    judge: its FP16 inputs and outputs three times over (generated, the
    guarded copies a target gets, a worker's copy), and the float64 oracle
    (the operands and their magnitudes, and six result-sized arrays; for a
    convolution its float64 patches, twice)."""
    if isinstance(case, GemmCase):
        fp16 = case.m * case.lda + case.k * case.ldb + case.m * case.ldc + case.n
        oracle_bytes = 16 * (case.m * case.k + case.k * case.n) + 48 * case.m * case.n
        return case.batch * (6 * fp16 + oracle_bytes)
    pixels = case.n * case.out_h * case.out_w
    fp16 = (case.n * case.h * case.w * case.c_in
            + case.kh * case.kw * (case.c_in // max(1, case.groups)) * case.c_out
            + pixels * case.c_out + case.c_out)
    patches = pixels * case.kh * case.kw * case.c_in
    return 6 * fp16 + 16 * patches + 48 * pixels * case.c_out


@cache
def memory_limit() -> int:
    """Bytes one case may take: KBENCH_MAX_CASE_BYTES, else 80% of the memory
    available now (/proc/meminfo), else 8 GiB."""
    env = os.environ.get(MAX_BYTES_ENV, "").strip()
    if env:
        try:
            value = int(float(env))
        except ValueError:
            raise CaseTooLarge(f"{MAX_BYTES_ENV}={env!r} is not a number of bytes") from None
        if value > 0:
            return value
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(int(line.split()[1]) * 1024 * 0.8)
    except (OSError, ValueError, IndexError):
        pass
    return 8 << 30


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def check_size(case: GemmCase | ConvCase) -> None:
    """Raises CaseTooLarge, before anything is allocated, for a case that
    would not fit (the message says how much it needs and the limit)."""
    need, limit = case_bytes(case), memory_limit()
    if need > limit:
        raise CaseTooLarge(
            f"{case.name} ({case.shape_str()}) would need about {_gib(need)} for its inputs, "
            f"outputs and float64 oracle ({need:,} bytes); the limit is {_gib(limit)} "
            f"(80% of the memory available, or {MAX_BYTES_ENV}): refused before allocating")


def seed_for(name: str, kind: str, salt: int = 0) -> int:
    return zlib.crc32(f"{name}/{kind}/{salt}".encode())


def _exact_ranges(k: int, has_bias: bool) -> tuple[int, int, int, int]:
    """(ra, rb, rbias, k_live): |a| <= ra, |b| <= rb, |bias| <= rbias, and
    only the first k_live terms of each dot product are non-zero."""
    budget = EXACT_LIMIT - (16 if has_bias else 0)
    k_live = min(k, budget)
    r = 1
    while (r + 1) * (r + 1) * k_live <= budget and r < 8:
        r += 1
    return r, r, (16 if has_bias else 0), k_live


def _real(rng: np.random.Generator, shape: tuple[int, ...], kind: str, scale: float) -> np.ndarray:
    if kind == "normal":
        x = rng.normal(0.0, scale, size=shape)
    else:
        x = rng.uniform(-scale, scale, size=shape)
    return x.astype(np.float16)


def _sprinkle_specials(rng: np.random.Generator, a: np.ndarray, b: np.ndarray) -> None:
    """In place: +-0 and subnormals everywhere, NaN in one row of a, +-inf in
    one column of b, and huge values in one row/column pair so it overflows."""
    subn = np.array([2.0**-24, -(2.0**-24), 3 * 2.0**-20, -(2.0**-15), 0.0, -0.0], np.float16)
    for x in (a, b):
        mask = rng.random(x.shape) < 0.05
        x[mask] = rng.choice(subn, size=int(mask.sum()))
    m, k = a.shape
    kb, n = b.shape
    if m >= 3:
        a[1, rng.integers(k)] = np.float16(np.nan)
    if n >= 3:
        b[rng.integers(kb), 1] = np.float16(np.inf)
        if kb >= 2:
            b[rng.integers(kb), 2] = np.float16(-np.inf)
    if m >= 4 and n >= 4:
        a[2, :] = np.float16(0.0)
        a[2, 0] = np.float16(60000.0)
        b[0, 3] = np.float16(65504.0)
        if k >= 2 and kb >= 2:
            a[2, 1] = np.float16(-65504.0)


def _pick_clamp(values: np.ndarray, integer: bool) -> tuple[float, float] | None:
    v = values[np.isfinite(values)]
    if v.size == 0:
        return None
    lo, hi = np.quantile(v, [0.15, 0.85])
    if integer:
        lo, hi = np.floor(lo), np.ceil(hi)
    with np.errstate(over="ignore"):  # a quantile past FP16's range: no clamp (below)
        lo16, hi16 = float(np.float16(lo)), float(np.float16(hi))
    if not (np.isfinite(lo16) and np.isfinite(hi16)) or lo16 > hi16:
        return None
    return lo16, hi16


def _sprinkle_conv_specials(rng: np.random.Generator, x: np.ndarray, w: np.ndarray,
                            positions: int, groups: int = 1) -> None:
    """Like _sprinkle_specials, with the non-finite values in filter columns
    (one output channel each), so a small output is not all NaN; and, where
    c_in is odd and groups = 1, +inf and NaN in channel 0 of two input pixels
    (not the first): a packer that reads one channel past a pixel's odd-length
    channel run, meant to pad it with zero, meets them (0 * inf is NaN)."""
    subn = np.array([2.0**-24, -(2.0**-24), 3 * 2.0**-20, -(2.0**-15), 0.0, -0.0], np.float16)
    for arr in (x, w):
        mask = rng.random(arr.shape) < 0.05
        arr[mask] = rng.choice(subn, size=int(mask.sum()))
    flat_w = w.reshape(-1, w.shape[-1])
    taps, c_out = flat_w.shape
    if c_out >= 4:
        flat_w[rng.integers(taps), 1] = np.float16(np.nan)
        flat_w[rng.integers(taps), 2] = np.float16(np.inf)
        flat_w[0, 3] = np.float16(65504.0)
        if positions >= 4:
            x.reshape(-1, x.shape[-1])[0, 0] = np.float16(60000.0)
    pixels = x.reshape(-1, x.shape[-1])
    if x.shape[-1] % 2 == 1 and groups == 1 and len(pixels) >= 3:
        p, q = rng.choice(np.arange(1, len(pixels)), size=2, replace=False)
        pixels[p, 0] = np.float16(np.inf)
        pixels[q, 0] = np.float16(np.nan)


@dataclass
class GemmInputs:
    """Operands of every problem in the batch; a, b, c are padded buffers
    viewed to their logical shape (row stride = lda, ldb, ldc)."""

    a: list[np.ndarray]
    b: list[np.ndarray]
    bias: list[np.ndarray | None]
    clamp: tuple[float, float] | None
    refs: list[oracle.Reference]
    kind: str


@dataclass
class ConvInputs:
    x: np.ndarray
    w: np.ndarray
    bias: np.ndarray | None
    clamp: tuple[float, float] | None
    ref: oracle.Reference
    kind: str


def _padded(values: np.ndarray, ld: int) -> np.ndarray:
    """Copies values [rows, cols] into a buffer with row stride ld (padding NaN)."""
    rows, cols = values.shape
    buf = np.full((rows, ld), np.float16(np.nan), dtype=np.float16)
    buf[:, :cols] = values
    return buf[:, :cols]


def _operands(rng: np.random.Generator, kind: str, scale: float, a_shape: tuple[int, ...],
              b_shape: tuple[int, ...], n_bias: int | None,
              k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, int]:
    if kind == "exact":
        ra, rb, rbias, k_live = _exact_ranges(k, n_bias is not None)
        a = rng.integers(-ra, ra + 1, size=a_shape).astype(np.float16)
        b = rng.integers(-rb, rb + 1, size=b_shape).astype(np.float16)
        bias = (rng.integers(-rbias, rbias + 1, size=n_bias).astype(np.float16)
                if n_bias is not None else None)
        return a, b, bias, k_live
    base = "uniform" if kind == "specials" else kind
    a = _real(rng, a_shape, base, scale)
    b = _real(rng, b_shape, base, scale)
    bias = _real(rng, (n_bias,), base, scale * scale * 4) if n_bias is not None else None
    return a, b, bias, k


def _below_clamp_max(a: np.ndarray, b: np.ndarray, bias: np.ndarray, hi: float,
                     exact: bool) -> np.ndarray:
    """bias shifted down (one shift for every column) until CLAMP_MAX_BELOW
    of the finite results lie below hi, by a sixteenth of their spread more
    (by whole numbers for exact inputs, and no further than keeps bias +
    every prefix of each dot product >= -EXACT_LIMIT)."""
    c = oracle.gemm_unclamped(a, b, bias)
    v = c[np.isfinite(c)]
    if v.size == 0:
        return bias
    q, q10, q90 = np.quantile(v, [CLAMP_MAX_BELOW, 0.1, 0.9])
    margin = max((q90 - q10) / 16, abs(q) / 16, 2.0**-14)
    delta = max(q - hi + (max(np.ceil(margin), 1.0) if exact else margin), 0.0)
    if exact:
        prod = a.astype(np.float64)[:, :, None] * b.astype(np.float64)[None, :, :]
        lowest = bias.astype(np.float64) + np.minimum(np.cumsum(prod, axis=1).min(axis=(0, 1)), 0)
        delta = min(np.ceil(delta), max(float(lowest.min()) + EXACT_LIMIT, 0.0))
    with np.errstate(over="ignore", invalid="ignore"):
        shifted = (bias.astype(np.float64) - delta).astype(np.float16)
    return np.where(np.isfinite(shifted), shifted, bias).astype(np.float16)


def gemm_inputs(case: GemmCase, kind: str) -> GemmInputs:
    check_size(case)
    rng = np.random.default_rng(seed_for(case.name, kind))
    scale = SCALES[seed_for(case.name, "scale") % len(SCALES)]
    a_list, b_list, bias_list, unclamped = [], [], [], []
    for _ in range(case.batch):
        a, b, bias, k_live = _operands(rng, kind, scale, (case.m, case.k), (case.k, case.n),
                                       case.n if case.bias else None, case.k)
        if kind == "exact" and k_live < case.k:
            a[:, k_live:] = 0
        if kind == "specials":
            _sprinkle_specials(rng, a, b)
        if case.clamp and case.clamp_max is not None and bias is not None:
            bias = _below_clamp_max(a, b, bias, case.clamp_max, kind == "exact")
        a_list.append(_padded(a, case.lda))
        b_list.append(_padded(b, case.ldb))
        bias_list.append(bias)
        unclamped.append(oracle.gemm_reference(a, b, bias, None))
    clamp = None
    if case.clamp:
        clamp = _pick_clamp(np.concatenate([r.exact.ravel() for r in unclamped]),
                            integer=kind == "exact")
        if case.clamp_max is not None:
            lo = clamp[0] if clamp else -np.inf
            clamp = (min(lo, case.clamp_max), case.clamp_max)
    refs = [oracle.with_clamp(r, clamp) for r in unclamped]
    return GemmInputs(a_list, b_list, bias_list, clamp, refs, kind)


def conv_inputs(case: ConvCase, kind: str) -> ConvInputs:
    check_size(case)
    rng = np.random.default_rng(seed_for(case.name, kind))
    scale = SCALES[seed_for(case.name, "scale") % len(SCALES)]
    cg = case.c_in // case.groups
    x, w, bias, k_live = _operands(rng, kind, scale, (case.n, case.h, case.w, case.c_in),
                                   (case.kh, case.kw, cg, case.c_out),
                                   case.c_out if case.bias else None, case.reduction)
    if kind == "exact" and k_live < case.reduction:
        # keep the first taps only: zero the filter beyond k_live in (ky, kx, ci) order
        flat = w.reshape(-1, case.c_out)
        flat[k_live:, :] = 0
    if kind == "specials":
        _sprinkle_conv_specials(rng, x, w, case.n * case.out_h * case.out_w, case.groups)
    ref = oracle.conv_reference(x, w, bias, case.stride, case.pad, case.dilation, case.groups,
                                None)
    clamp = _pick_clamp(ref.exact.ravel(), integer=kind == "exact") if case.clamp else None
    return ConvInputs(x, w, bias, clamp, oracle.with_clamp(ref, clamp), kind)


def bias_order_gemm_inputs(case: GemmCase, kind: str = "normal") -> GemmInputs:
    """Real-valued inputs on which an FP32 chain that starts from the bias
    differs from one that adds it last (and from FP32 rounded once): every
    fourth column j is a witness with bias[j] = 1 and terms 2^-11 (k = 0)
    and four of 2^-25 (k = 1..4), the rest zero. Exactly, and for a chain
    that adds the bias last, the sum lies above 1 + 2^-11 and rounds to
    1 + 2^-10 in FP16; a chain started from the bias reaches 1 + 2^-11
    exactly, loses each 2^-25 (a quarter of an FP32 ulp at 1), and rounds
    the tie to 1. The other columns are ordinary `kind` inputs, which tell
    apart the models that the witnesses do not (FP16 chains, bias in FP16).
    Needs case.k >= 5 and case.bias; the clamp, if any, keeps 1 + 2^-10."""
    if case.k < 5 or not case.bias:
        raise ValueError(f"case {case.name}: a bias-order witness needs k >= 5 and a bias")
    base = gemm_inputs(case, kind)
    a_list, b_list, bias_list, refs = [], [], [], []
    for a_buf, b_buf, bias in zip(base.a, base.b, base.bias, strict=True):
        a, b = a_buf.copy(), b_buf.copy()
        bias = np.array(bias, np.float16)
        a[:, 0], a[:, 1:5] = np.float16(2.0**-5), np.float16(2.0**-12)
        wit = np.arange(0, case.n, 4)
        b[:, wit] = 0
        b[0, wit], b[1:5, wit] = np.float16(2.0**-6), np.float16(2.0**-13)
        bias[wit] = 1
        a_list.append(_padded(a, case.lda))
        b_list.append(_padded(b, case.ldb))
        bias_list.append(bias)
        refs.append(oracle.gemm_reference(a, b, bias, None))
    clamp = None
    if case.clamp:  # bounds that keep the witnesses' value 1 + 2^-10
        lo, hi = _pick_clamp(np.concatenate([r.exact.ravel() for r in refs]), False) or (0, 2)
        clamp = (min(lo, 1.0), max(hi, 2.0))
    return GemmInputs(a_list, b_list, bias_list, clamp,
                      [oracle.with_clamp(r, clamp) for r in refs], kind)
