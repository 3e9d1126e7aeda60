"""Accumulation-model fingerprints of black-box backends.

A backend's FP16 output is compared, bit for bit, with what each candidate
accumulation model computes from the same FP16 inputs (simulated in numpy).
The model that reproduces the most elements is the fingerprint.

Candidate models, in the fixed order used to break ties (simplest first):

    fp32_once                   exact dot product (float64) + bias, rounded once to FP16:
                                FP32 accumulation whose own roundings never show
    fp32_once_bias16            exact dot product rounded to FP16, then the bias added in
                                FP16 (a separate Add after the MatMul, as in an ONNX graph)
    fp32_chain                  sequential FP32 chain acc = fl32(acc + a_k*b_k), bias added in
                                FP32 at the end, then rounded to FP16 (kbench's scalar backend)
    fp32_chain_bias16           the same chain rounded to FP16, then the bias added in FP16
    fp32_chain_bias_first       the sequential FP32 chain starting from the bias (converted to
                                FP32 exactly), then rounded to FP16
    fp16_fma_chain              acc = fl16(acc + a_k*b_k) as one fused operation, from 0;
                                bias added in FP16 at the end
    fp16_fma_chain_bias_first   the same chain starting from the bias
    fp16_blocked[b]             K split into consecutive blocks of b terms (b = 4, 8, 16, 32,
                                64, only b < K), each an FP16 FMA chain from 0; block sums
                                added in FP16 in order; bias last
    fp16_lanes[L]               L lanes (L = 4, 8, 16, 32, only L < K): lane l is an FP16 FMA
                                chain over k = l (mod L); then the lanes are reduced in FP16
                                by halving (lane i += lane i + w/2 while the width w > 1), as a
                                SIMD horizontal add does; bias last

Bias variants exist only when there is a bias (without one they coincide).
The clamp is applied last in every model (its bounds taken as FP16 values).

Convolutions become GEMMs through im2col built in numpy. The order of K
matters for every chain, so order-dependent models are tried with the taps
in (kh, kw, ci) order (suffix `@hwc`, NHWC-native) and in (ci, kh, kw) order
(suffix `@chw`, what an NCHW runtime such as onnxruntime uses); the two
orders coincide (and only `@hwc` is tried) for 1x1 filters and depthwise
groups. Padding positions are terms of the chain with the value 0, as in an
im2col or indirect GEMM with a zero row: a zero term leaves an FP16 or FP32
chain unchanged (only the sign of a zero may change, and +0 == -0 here), but
0 times a non-finite weight is NaN, as in the oracle.

Why the numpy simulation of a fused FP16 multiply-add is exact. A product of
two FP16 values has at most 22 significant bits and is exact in float64 (and
in float32). For the sum acc + p with acc an FP16 value: if the smaller
operand is at least 2^-30 times the larger, both have at most 22 significant
bits spanning at most 53 bit positions, so the float64 sum is exact and
rounding it to FP16 is the one rounding of the fused operation. Otherwise
the smaller operand is below 2^-30 of the larger: if the larger is acc, an
FP16 value, both the exact and the float64 sum lie within 2^-29 ulp16 of
it and round to it; if the larger is the product p with |p| < 2^16, acc is
below 2^-14, a multiple of 2^-24, and p a multiple of 2^(e-21) (e its
exponent), so the exact sum spans at most 40 bits and float64 holds it;
with |p| >= 2^16 the result overflows to the same infinity either way. So
fl16(fl64(acc + p)) equals the fused fl16(acc + p) for all finite inputs,
and IEEE infinities and NaNs propagate alike. The same argument (with 24
bits) makes float32 arithmetic on exact FP16 products a faithful FP32 FMA.

The float64 "exact" dot product is itself rounded (by at most about
K 2^-53 times the sum of |a b|); like the oracle's, it can differ from the
true value's rounding only in astronomically rare elements.

Cost: one pass over K per model, vectorised over the compared elements.
When M*N*K exceeds the work budget, a fixed pseudo-random sample of the
output elements is compared (at least MIN_ELEMENTS, or all of them), and
the result says so (`elements` < `total`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from kbench.native.calls import ConvDesc

INDISTINGUISHABLE = "indistinguishable"
AGREEMENT = 0.999  # models agreeing on at least this fraction cannot be told apart
CONCLUSIVE = 0.9  # a best match below this explains nothing ("unexplained")
DEFAULT_WORK = 1 << 21  # compared elements x K per case
MIN_ELEMENTS = 256
BLOCKS = (4, 8, 16, 32, 64)
LANES = (4, 8, 16, 32)
ORDERS = ("hwc", "chw")  # conv: taps in (kh, kw, ci) or (ci, kh, kw) order

FP32, FP16 = "fp32", "fp16"
FAMILY_LABELS = {FP32: "FP32 accumulation", FP16: "FP16 chain"}
CATEGORIES = (FP32, FP16, INDISTINGUISHABLE, "unexplained")


@dataclass(frozen=True)
class Model:
    """One candidate accumulation model."""

    name: str
    family: str  # FP32 or FP16
    kind: str  # once | chain32 | chain16 | blocked | lanes
    width: int = 0  # blocked: terms per block; lanes: lane count
    bias: str = "last"  # exact | last | first | fp16 (added in FP16 after rounding)

    @property
    def order_dependent(self) -> bool:
        return self.kind != "once"


def candidates(k: int, has_bias: bool) -> list[Model]:
    """The candidate models for dot products of length k, simplest first."""
    out = [Model("fp32_once", FP32, "once", bias="exact")]
    if has_bias:
        out.append(Model("fp32_once_bias16", FP32, "once", bias="fp16"))
    out.append(Model("fp32_chain", FP32, "chain32"))
    if has_bias:
        out.append(Model("fp32_chain_bias16", FP32, "chain32", bias="fp16"))
        out.append(Model("fp32_chain_bias_first", FP32, "chain32", bias="first"))
    out.append(Model("fp16_fma_chain", FP16, "chain16"))
    if has_bias:
        out.append(Model("fp16_fma_chain_bias_first", FP16, "chain16", bias="first"))
    out += [Model(f"fp16_blocked[{b}]", FP16, "blocked", b) for b in BLOCKS if b < k]
    out += [Model(f"fp16_lanes[{n}]", FP16, "lanes", n) for n in LANES if n < k]
    return out


def family(model: str) -> str:
    """FP32, FP16, or '' (indistinguishable, empty) for a model name."""
    for fam in (FP32, FP16):
        if model.startswith(fam + "_"):
            return fam
    return ""


# ------------------------------------------------------------------ dot products


@dataclass(frozen=True)
class DotSet:
    """E dot products of length K: terms x[k, e] * y[k, e] in chain order,
    plus a bias and clamp bounds per element. The observed output, when
    known, sits beside them."""

    x: np.ndarray  # (K, E) float16
    y: np.ndarray  # (K, E) float16
    bias: np.ndarray | None  # (E,) float16
    lo: np.ndarray  # (E,) float16 lower clamp bounds (-inf: none)
    hi: np.ndarray  # (E,) float16
    observed: np.ndarray | None = None  # (E,) float16

    @property
    def k(self) -> int:
        return int(self.x.shape[0])

    @property
    def size(self) -> int:
        return int(self.x.shape[1])


def _bounds(clamp: tuple[float, float] | None, e: int) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = (-math.inf, math.inf) if clamp is None else clamp
    with np.errstate(over="ignore"):
        return (np.full(e, lo, np.float64).astype(np.float16),
                np.full(e, hi, np.float64).astype(np.float16))


def concat(sets: list[DotSet]) -> DotSet:
    """One set of the dot products of several (same K, same bias presence)."""
    if len(sets) == 1:
        return sets[0]
    has_obs = all(s.observed is not None for s in sets)
    return DotSet(
        np.concatenate([s.x for s in sets], axis=1), np.concatenate([s.y for s in sets], axis=1),
        None if sets[0].bias is None else np.concatenate([s.bias for s in sets]),  # type: ignore[misc]
        np.concatenate([s.lo for s in sets]), np.concatenate([s.hi for s in sets]),
        np.concatenate([s.observed for s in sets]) if has_obs else None)  # type: ignore[misc]


def sample(total: int, k: int, work: int, seed: int,
           max_elements: int | None = None) -> np.ndarray | None:
    """Flat indices of the elements to compare (sorted), None for all of them:
    work / k elements (at least MIN_ELEMENTS, at most max_elements)."""
    want = max(MIN_ELEMENTS, work // max(k, 1))
    if max_elements is not None:
        want = max(1, min(want, max_elements))
    if total <= want:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(total, size=want, replace=False))


def gemm_dots(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
              clamp: tuple[float, float] | None, c: np.ndarray | None = None,
              elements: np.ndarray | None = None) -> DotSet:
    """The dot products of C = A[M,K] B[K,N] (+ bias[N]) at the flat output
    indices `elements` (None: all M*N), with the observed C when given."""
    m, k = a.shape
    n = b.shape[1]
    flat = np.arange(m * n) if elements is None else elements
    rows, cols = flat // n, flat % n
    x = np.ascontiguousarray(a[rows, :].T, dtype=np.float16).reshape(k, flat.size)
    y = np.ascontiguousarray(b[:, cols], dtype=np.float16).reshape(k, flat.size)
    bv = None if bias is None else np.asarray(bias, np.float16).reshape(-1)[cols]
    obs = None if c is None else np.asarray(c, np.float16)[rows, cols]
    return DotSet(x, y, bv, *_bounds(clamp, flat.size), obs)


def conv_dots(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, desc: ConvDesc,
              order: str = "hwc", out: np.ndarray | None = None,
              elements: np.ndarray | None = None) -> DotSet:
    """The dot products of a convolution (NHWC x, HWIO w) at the flat indices
    `elements` of the NHWC output (None: all), taps in `order` (ORDERS).
    Padding positions are zero terms (see the module doc)."""
    if order not in ORDERS:
        raise ValueError(f"order: {order!r} is not one of {ORDERS}")
    d = desc
    kh, kw, cg, c_out = w.shape
    og = c_out // d.groups
    oh = (d.h + d.pad_top + d.pad_bottom - d.dil_h * (kh - 1) - 1) // d.stride_h + 1
    ow = (d.w + d.pad_left + d.pad_right - d.dil_w * (kw - 1) - 1) // d.stride_w + 1
    total = d.n * oh * ow * c_out
    flat = np.arange(total) if elements is None else elements
    pos, co = flat // c_out, flat % c_out
    img, rem = pos // (oh * ow), pos % (oh * ow)
    oy, ox = rem // ow, rem % ow
    xp = np.zeros((d.n, d.h + d.pad_top + d.pad_bottom, d.w + d.pad_left + d.pad_right, d.c_in),
                  np.float16)
    xp[:, d.pad_top:d.pad_top + d.h, d.pad_left:d.pad_left + d.w, :] = x
    iy = oy[:, None] * d.stride_h + np.arange(kh)[None, :] * d.dil_h  # (E, kh)
    ix = ox[:, None] * d.stride_w + np.arange(kw)[None, :] * d.dil_w  # (E, kw)
    ch = (co // og)[:, None] * cg + np.arange(cg)[None, :]  # (E, cg)
    patches = xp[img[:, None, None, None], iy[:, :, None, None], ix[:, None, :, None],
                 ch[:, None, None, :]]  # (E, kh, kw, cg)
    taps = np.moveaxis(w[:, :, :, co], -1, 0)  # (E, kh, kw, cg)
    if order == "chw":
        patches, taps = patches.transpose(0, 3, 1, 2), taps.transpose(0, 3, 1, 2)
    kk = kh * kw * cg
    xs = np.ascontiguousarray(patches.reshape(flat.size, kk).T)
    ys = np.ascontiguousarray(taps.reshape(flat.size, kk).T)
    bv = None if bias is None else np.asarray(bias, np.float16).reshape(-1)[co]
    obs = None if out is None else np.asarray(out, np.float16).reshape(-1)[flat]
    clamp = (d.clamp_min, d.clamp_max)
    return DotSet(xs, ys, bv, *_bounds(clamp, flat.size), obs)


# -------------------------------------------------------------------- simulation


def _r16(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float16)


@dataclass
class _Fp16Plan:
    """Rows of one FP16 state array that the FP16 models accumulate into."""

    rows: int = 0
    active: list[list[int]] = field(default_factory=list)  # per model: its rows by k mod width
    totals: dict[str, int] = field(default_factory=dict)  # blocked model -> its total row

    def add(self, count: int) -> list[int]:
        got = list(range(self.rows, self.rows + count))
        self.rows += count
        return got


def simulate(d: DotSet, models: list[Model]) -> dict[str, np.ndarray]:
    """Each model's FP16 output (E,) for the dot products of `d`."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _simulate(d, models)


def _simulate(d: DotSet, models: list[Model]) -> dict[str, np.ndarray]:
    k, e = d.k, d.size
    prods = d.x.astype(np.float64) * d.y  # exact (see the module doc)
    bias64 = None if d.bias is None else d.bias.astype(np.float64)
    acc: dict[str, np.ndarray] = {}  # model -> accumulated value before the bias stage
    fp16 = [m for m in models if m.family == FP16]
    if any(m.kind == "once" for m in models):
        acc["once"] = prods.sum(axis=0)  # (K = 0 would sum to zeros)
    starts = {_chain32_key(m, d) for m in models if m.kind == "chain32"}
    if starts:
        p32 = prods.astype(np.float32)
        for key in starts:
            a32 = np.zeros(e, np.float32)
            if key != "chain32":  # the bias starts the chain (exact in FP32)
                np.add(a32, d.bias.astype(np.float32), out=a32)  # type: ignore[union-attr]
            for i in range(k):
                np.add(a32, p32[i], out=a32)
            acc[key] = a32
    if fp16:
        plan = _Fp16Plan()
        for m in fp16:
            plan.active.append(plan.add(m.width if m.kind == "lanes" else 1))
            if m.kind == "blocked":
                plan.totals[m.name] = plan.add(1)[0]
        state = np.zeros((plan.rows, e), np.float16)
        for m, rows in zip(fp16, plan.active, strict=True):
            if m.bias == "first" and d.bias is not None:
                state[rows[0]] = d.bias
        blocked = [(m.width, rows[0], plan.totals[m.name])
                   for m, rows in zip(fp16, plan.active, strict=True) if m.kind == "blocked"]
        folds: dict[int, tuple[list[int], list[int]]] = {}  # step -> (block rows, totals)
        for width, row, total in blocked:
            for i in range(width, k, width):
                folds.setdefault(i, ([], []))[0].append(row)
                folds[i][1].append(total)
        schedule = np.array([[rows[i % len(rows)] for rows in plan.active] for i in range(k)],
                            dtype=np.intp).reshape(k, len(fp16))
        for i in range(k):
            if i in folds:  # a block ends: add its sum to the total, start the next from 0
                rows_i, totals_i = folds[i]
                state[totals_i] = _r16(state[totals_i].astype(np.float64) + state[rows_i])
                state[rows_i] = 0
            sel = schedule[i]
            state[sel] = _r16(state[sel] + prods[i])
        if blocked:
            rows_b, totals_b = [b[1] for b in blocked], [b[2] for b in blocked]
            state[totals_b] = _r16(state[totals_b].astype(np.float64) + state[rows_b])
        for m, rows in zip(fp16, plan.active, strict=True):
            if m.kind == "blocked":
                acc[m.name] = state[plan.totals[m.name]]
            elif m.kind == "lanes":
                lanes = state[rows]
                while lanes.shape[0] > 1:
                    half = lanes.shape[0] // 2
                    lanes = _r16(lanes[:half].astype(np.float64) + lanes[half:])
                acc[m.name] = lanes[0]
            else:
                acc[m.name] = state[rows[0]]
    out: dict[str, np.ndarray] = {}
    for m in models:
        v = (acc[m.kind] if m.kind == "once" else acc[_chain32_key(m, d)]
             if m.kind == "chain32" else acc[m.name])
        if bias64 is None or m.bias == "first":
            r = _r16(v)
        elif m.bias == "fp16":
            r = _r16(_r16(v).astype(np.float64) + bias64)
        elif m.kind == "chain32":  # bias last, in the FP32 accumulator
            r = _r16(v + d.bias.astype(np.float32))  # type: ignore[union-attr]
        else:  # bias last, in float64: exact onto the exact sum ("exact", the "once"
            r = _r16(v.astype(np.float64) + bias64)  # models), or onto an FP16 accumulator
        out[m.name] = _clamp(r, d.lo, d.hi)
    return out


def _chain32_key(m: Model, d: DotSet) -> str:
    """The FP32 chain a chain32 model reads: from 0, or from the bias."""
    return "chain32_bias_first" if m.bias == "first" and d.bias is not None else "chain32"


def _clamp(r: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.where(r < lo, lo, np.where(r > hi, hi, r)).astype(np.float16)


def same(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Elementwise equality of FP16 arrays: +0 == -0, any NaN == any NaN
    (comparisons with NaN are quiet: no floating-point exception)."""
    return (p == q) | (np.isnan(p) & np.isnan(q))


# --------------------------------------------------------------------- results


@dataclass(frozen=True)
class Fingerprint:
    """The accumulation model that best reproduces an output.

    model: the best-matching candidate, or INDISTINGUISHABLE when every
    candidate agrees on at least AGREEMENT of the compared elements (e.g.
    exact-by-design inputs, or K = 1); best: the best candidate in either
    case; match: its fraction of bit-identical elements; scores: every
    candidate's; correctly_rounded: the fraction equal to the exact result
    rounded once; agreement: the fraction on which all candidates agree;
    elements: elements compared (< total when sampled)."""

    model: str
    match: float
    scores: dict[str, float]
    correctly_rounded: float
    elements: int
    total: int
    best: str = ""
    agreement: float = 1.0

    @property
    def indistinguishable(self) -> bool:
        return self.model == INDISTINGUISHABLE

    @property
    def sampled(self) -> bool:
        return self.elements < self.total

    @property
    def family(self) -> str:
        return family(self.model)

    @property
    def category(self) -> str:
        """One of CATEGORIES."""
        return category(self.model, self.match)


def category(model: str, match: float) -> str:
    """fp32, fp16, indistinguishable or unexplained (best match < CONCLUSIVE,
    or a model name of no known family, as a hand-edited results.csv may hold)."""
    if model == INDISTINGUISHABLE:
        return INDISTINGUISHABLE
    if not model or not match >= CONCLUSIVE:
        return "unexplained"
    return family(model) or "unexplained"


def percent(x: float) -> str:
    """A match fraction as a percentage, rounded down (99.95% shows 99.9%)."""
    if not math.isfinite(x):
        return "–"
    if x >= 1.0:
        return "100%"
    return f"{math.floor(x * 1000) / 10:.1f}%"


def label(fp: Fingerprint) -> str:
    """One line: e.g. 'FP32 accumulation (fp32_once, 100%)'."""
    return describe(fp.model, fp.match, fp.best)


def describe(model: str, match: float, best: str = "") -> str:
    """The label from a model name and its match (as stored in results.csv)."""
    if not model:
        return "not fingerprinted"
    cat = category(model, match)
    if cat == INDISTINGUISHABLE:
        return "indistinguishable (every model matches)" + (
            f" ({best}, {percent(match)})" if best else "")
    if cat == "unexplained":
        return f"unexplained (best {model}, {percent(match)})"
    return f"{FAMILY_LABELS[cat]} ({model}, {percent(match)})"


def accumulates_in_fp32(fp: Fingerprint) -> bool | None:
    """True for an FP32 fingerprint, False for FP16, None when inconclusive
    (indistinguishable, or no candidate explains the output)."""
    cat = fp.category
    return None if cat not in (FP32, FP16) else cat == FP32


def score(sets: dict[str, DotSet], models: list[Model], total: int) -> Fingerprint:
    """Compares the observed outputs with every model. `sets` maps a name
    suffix ('' or '@hwc'/'@chw') to the dot products in that K order; each
    order-dependent model runs on every set, order-independent ones on the
    first."""
    preds: dict[str, np.ndarray] = {}
    first = next(iter(sets))
    obs = sets[first].observed
    if obs is None:
        raise ValueError("score: the dot products carry no observed output")
    order_free = [m for m in models if not m.order_dependent]
    preds.update(simulate(sets[first], order_free))
    dependent = [m for m in models if m.order_dependent]
    by_order = {suffix: simulate(s, dependent) for suffix, s in sets.items()}
    for m in dependent:  # model-major, then K order: the documented tie order
        for suffix in sets:
            preds[m.name + suffix] = by_order[suffix][m.name]
    e = obs.size
    scores = {name: float(same(p, obs).mean()) if e else 1.0 for name, p in preds.items()}
    names = list(preds)
    best = max(names, key=lambda n: (scores[n], -names.index(n)))
    ref = preds[names[0]]
    agree_mask = np.ones(e, bool)
    for p in preds.values():
        agree_mask &= same(p, ref)
    agreement = float(agree_mask.mean()) if e else 1.0
    # an FP32 and an FP16 model explaining the output equally well (e.g. K = 1 with a
    # bias: one FP16 fused multiply-add is one rounding, as FP32 rounded once) cannot
    # tell the accumulator's precision either
    contenders = {family(n) for n in names if scores[n] >= scores[best] - (1 - AGREEMENT)}
    tied = {FP32, FP16} <= contenders
    model = INDISTINGUISHABLE if agreement >= AGREEMENT or tied else best
    return Fingerprint(model, scores[best], scores, scores["fp32_once"], e, total, best,
                       agreement)


def gemm(a: list[np.ndarray] | np.ndarray, b: list[np.ndarray] | np.ndarray,
         bias: list[np.ndarray | None] | np.ndarray | None, clamp: tuple[float, float] | None,
         c: list[np.ndarray] | np.ndarray, work: int = DEFAULT_WORK,
         max_elements: int | None = None) -> Fingerprint:
    """The fingerprint of a GEMM output C (one problem, or lists for a batch),
    compared on about work / K elements (at most max_elements)."""
    a_l = a if isinstance(a, list) else [a]
    b_l = b if isinstance(b, list) else [b]
    c_l = c if isinstance(c, list) else [c]
    bias_l = bias if isinstance(bias, list) else [bias] * len(a_l)
    k = a_l[0].shape[1]
    total = sum(int(ci.size) for ci in c_l)
    per = work // len(a_l)  # sample() takes at least MIN_ELEMENTS whatever it is
    cap = None if max_elements is None else max(1, max_elements // len(a_l))
    sets = []
    for i, (ai, bi, ci, si) in enumerate(zip(a_l, b_l, c_l, bias_l, strict=True)):
        pick = sample(ci.size, k, per, seed=i, max_elements=cap)
        sets.append(gemm_dots(ai, bi, si, clamp, ci, pick))
    dots = concat(sets)
    return score({"": dots}, candidates(k, dots.bias is not None), total)


def conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, desc: ConvDesc,
         out: np.ndarray, work: int = DEFAULT_WORK,
         max_elements: int | None = None) -> Fingerprint:
    """The fingerprint of a convolution output (NHWC x and out, HWIO w),
    compared on about work / K elements per K order (at most max_elements)."""
    kh, kw, cg, _ = w.shape
    k = kh * kw * cg
    orders = ORDERS if kh * kw > 1 and cg > 1 else ORDERS[:1]
    pick = sample(out.size, k, work // len(orders), seed=0, max_elements=max_elements)
    sets = {f"@{o}": conv_dots(x, w, bias, desc, o, out, pick) for o in orders}
    return score(sets, candidates(k, bias is not None), int(out.size))


def simulate_gemm(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
                  clamp: tuple[float, float] | None, model: str) -> np.ndarray:
    """C[M,N] as `model` computes it (every element, no sampling)."""
    m, n = a.shape[0], b.shape[1]
    found = {x.name: x for x in candidates(a.shape[1], bias is not None)}
    if model not in found:
        raise ValueError(f"model: {model!r} is not a candidate here ({', '.join(found)})")
    out = np.empty(m * n, np.float16)
    for part in _chunks(m * n, a.shape[1]):
        out[part] = simulate(gemm_dots(a, b, bias, clamp, None, part), [found[model]])[model]
    return out.reshape(m, n)


def _chunks(total: int, k: int, work: int = DEFAULT_WORK) -> list[np.ndarray]:
    """Flat indices 0..total-1 in pieces of about work / k (bounded memory)."""
    step = max(1, work // max(k, 1))
    return [np.arange(i, min(i + step, total)) for i in range(0, total, step)]


def simulate_conv(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, desc: ConvDesc,
                  model: str) -> np.ndarray:
    """The NHWC output as `model` computes it; an order-dependent model needs
    its order suffix (`@hwc` or `@chw`)."""
    name, _, order = model.partition("@")
    kh, kw, cg, c_out = w.shape
    found = {x.name: x for x in candidates(kh * kw * cg, bias is not None)}
    if name not in found:
        raise ValueError(f"model: {name!r} is not a candidate here ({', '.join(found)})")
    oh = (desc.h + desc.pad_top + desc.pad_bottom - desc.dil_h * (kh - 1) - 1) // desc.stride_h + 1
    ow = (desc.w + desc.pad_left + desc.pad_right - desc.dil_w * (kw - 1) - 1) // desc.stride_w + 1
    out = np.empty(desc.n * oh * ow * c_out, np.float16)
    for part in _chunks(out.size, kh * kw * cg):
        d = conv_dots(x, w, bias, desc, order or "hwc", None, part)
        out[part] = simulate(d, [found[name]])[name]
    return out.reshape(desc.n, oh, ow, c_out)


__all__ = ["AGREEMENT", "CATEGORIES", "CONCLUSIVE", "DEFAULT_WORK", "INDISTINGUISHABLE",
           "DotSet", "Fingerprint", "Model", "accumulates_in_fp32", "candidates", "category",
           "conv", "conv_dots", "describe", "family", "gemm", "gemm_dots", "label", "percent",
           "same", "score", "simulate", "simulate_conv", "simulate_gemm"]
