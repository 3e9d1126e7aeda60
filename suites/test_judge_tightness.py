"""The judge is exactly as tight as the error model says, on many cases.

Each test recomputes the bound of DESIGN.md independently (its own ulp from
frexp, its own gamma; only the float64 reference comes from the oracle) and
builds FP16 outputs right at its edge: the last FP16 value inside the bound
(half the elements above the exact value, half below) must pass, the first
one outside must be counted as a violation, element by element. NaN where
the exact value is finite, a finite value where it is NaN, and an infinity
where nothing can overflow must each be violations at every such element.

Parametrized over the smoke and edge GEMM catalogs, two real-valued input
kinds and both accumulation models, so that a judge twice as loose, a ULP
taken one binade up, or a rule that accepts NaN anywhere fails dozens of
these tests, not one."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from kbench.judge.oracle import Reference
from kbench.judge.tolerance import AccumModel
from kbench.judge.verdict import judge
from kbench.problems import catalog, inputs
from kbench.problems.cases import GemmCase

U = {"fp32": 2.0**-24, "fp16": 2.0**-11}
ETA = {"fp32": 2.0**-150, "fp16": 2.0**-25}
OVERFLOW = {"fp32": 3.4028235e38, "fp16": 65520.0}
MARGIN = 1e-9  # keeps the edge values clear of float64 rounding in either bound


def ulp_ref(x: float) -> float:
    """Spacing of binary16 at |x|: 2^(e-10) for 2^e <= |x| < 2^(e+1), e in [-14, 15]."""
    x = abs(x)
    if not math.isfinite(x) or x >= 65504.0:
        return 32.0
    if x < 2.0**-14:
        return 2.0**-24
    _, ex = math.frexp(x)  # x = m * 2^ex with 0.5 <= m < 1
    return 2.0 ** (ex - 1 - 10)


def gamma_ref(n: int, u: float) -> float:
    return n * u / (1.0 - n * u) if n * u < 1.0 else math.inf


def bound_ref(c: float, s: float, k: int, has_bias: bool, accum: str) -> float:
    n = k + (1 if has_bias else 0)
    e = gamma_ref(n, U[accum]) * s + n * ETA[accum] + gamma_ref(k + 1, 2.0**-53) * s
    return 0.5 * ulp_ref(abs(c) + e) + e


def _cases() -> list[GemmCase]:
    out = []
    for name in ("smoke", "edge"):
        cat = catalog.load_catalog(catalog.resolve_catalog(name))
        out += [c for c in cat.gemm if c.m * c.n * c.batch <= 4096 and c.k <= 2000]
    return out


CASES = _cases()
KINDS = ("uniform", "normal")
ACCUMS = ("fp32", "fp16")


@cache
def _inputs(case: GemmCase, kind: str) -> inputs.GemmInputs:
    return inputs.gemm_inputs(case, kind)


def _edges(ref: Reference, k: int, has_bias: bool, accum: str
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(inside, outside, eligible): per element the last FP16 value within the
    independent bound and the first beyond it (upwards on even elements,
    downwards on odd ones), where the element is an ordinary one (finite, no
    overflow possible, both values clear of the edge by MARGIN)."""
    c, s = ref.exact.ravel(), ref.s.ravel()
    inside = ref.rounded.ravel().copy()
    outside = ref.rounded.ravel().copy()
    ok = np.zeros(c.size, bool)
    for i in range(c.size):
        if not (math.isfinite(c[i]) and math.isfinite(s[i])):
            continue
        b = bound_ref(float(c[i]), float(s[i]), k, has_bias, accum)
        if not math.isfinite(b) or abs(c[i]) + 2 * b >= 65504.0:
            continue
        up = i % 2 == 0
        toward = np.float16(np.inf if up else -np.inf)
        v = np.float16(c[i] + (b if up else -b))
        while abs(float(v) - c[i]) <= b * (1 + MARGIN):
            v = np.nextafter(v, toward)
        w = np.nextafter(v, np.float16(-np.inf if up else np.inf))
        if abs(float(w) - c[i]) <= b * (1 - MARGIN):
            inside[i], outside[i], ok[i] = w, v, True
    shape = ref.exact.shape
    return inside.reshape(shape), outside.reshape(shape), ok.reshape(shape)


def _refs(case: GemmCase, kind: str) -> list[Reference]:
    return _inputs(case, kind).refs


@pytest.mark.parametrize("accum", ACCUMS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_last_fp16_value_inside_the_bound_passes_the_next_one_fails(
        case: GemmCase, kind: str, accum: str) -> None:
    model = AccumModel(accum, 1)
    checked = 0
    for ref in _refs(case, kind):
        inside, outside, ok = _edges(ref, case.k, case.bias, accum)
        if not ok.any():
            continue
        j_in = judge(inside, ref, model, case.k, case.bias, False)
        assert j_in.violations == 0, f"values inside the bound refused: {j_in.detail}"
        assert j_in.max_ratio <= 1.0
        j_out = judge(np.where(ok, outside, ref.rounded), ref, model, case.k, case.bias, False)
        assert j_out.violations == int(ok.sum()), (
            f"{int(ok.sum())} values just outside the bound, {j_out.violations} refused")
        assert j_out.max_ratio > 1.0
        checked += int(ok.sum())
    if not checked:
        pytest.skip(f"no element of {case.name} has a finite bound under {accum}")


def _strict(ref: Reference, k: int, has_bias: bool, accum: str) -> np.ndarray:
    """Elements whose exact value is finite and where nothing may overflow:
    there, only a finite value is acceptable."""
    c, s, fs = ref.exact, ref.s, ref.finite_sum
    out = np.zeros(c.shape, bool)
    for idx in np.ndindex(c.shape):
        if not (math.isfinite(c[idx]) and math.isfinite(s[idx])):
            continue
        b = bound_ref(float(c[idx]), float(s[idx]), k, has_bias, accum)
        out[idx] = (abs(c[idx]) + b < 65504.0
                    and fs[idx] * (1 + U[accum]) < OVERFLOW[accum] / 2)
    return out


SPECIAL_CASES = [c for c in CASES if c.m >= 3 and c.n >= 3]


@pytest.mark.parametrize("accum", ACCUMS)
@pytest.mark.parametrize("case", SPECIAL_CASES, ids=lambda c: c.name)
def test_nan_and_inf_only_where_the_model_allows_them(case: GemmCase, accum: str) -> None:
    model = AccumModel(accum, 1)
    nan_refs = strict_total = 0
    for ref in _refs(case, "specials"):
        base = ref.rounded.copy()
        assert judge(base, ref, model, case.k, case.bias, False).violations == 0
        ref_nan = np.isnan(ref.exact)
        if ref_nan.any():  # a finite value where the exact result is NaN
            got = judge(np.where(ref_nan, np.float16(0.0), base), ref, model, case.k,
                        case.bias, False)
            assert got.violations == int(ref_nan.sum())
            nan_refs += int(ref_nan.sum())
        strict = _strict(ref, case.k, case.bias, accum)
        if strict.any():  # NaN, or an infinity, where only a finite value will do
            for bad in (np.float16(np.nan), np.float16(np.inf), np.float16(-np.inf)):
                got = judge(np.where(strict, bad, base), ref, model, case.k, case.bias, False)
                assert got.violations == int(strict.sum()), f"{bad} accepted"
            strict_total += int(strict.sum())
    assert nan_refs and strict_total, "specials inputs gave no NaN or no ordinary element"


def test_the_independent_ulp_agrees_on_binade_edges() -> None:
    for e in range(-14, 16):
        x = 2.0**e
        assert ulp_ref(x) == 2.0 ** (e - 10)
        assert ulp_ref(math.nextafter(x, math.inf)) == 2.0 ** (e - 10)
        if e > -14:
            assert ulp_ref(math.nextafter(x, 0.0)) == 2.0 ** (e - 11)
    assert ulp_ref(0.0) == ulp_ref(2.0**-20) == 2.0**-24


def test_enough_cases_for_many_verdicts() -> None:
    assert len(CASES) >= 20 and len(SPECIAL_CASES) >= 12
