"""Tuning's shape classes and rules at their exact edges: every tuned shape
is matched by its own class, the GEMM classes partition M, N and K (a value
on either side of each edge falls in exactly one class), the convolution
classes separate what decides which realizations apply, the first matching
rule wins, the winner is the least total time among the realizations that
passed on every shape, and a shape the budget leaves out is listed as
skipped, never lost. Times are given, not measured; the clock is stubbed."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from kbench.harness import tune
from kbench.judge.verdict import FAIL, MISTRUSTED, PASS, Verdict
from kbench.native.api import Realization
from kbench.problems.cases import ConvCase, GemmCase

EDGES = sorted({1, 2, 3, 31, 32, 33, 34, 63, 64, 65, 127, 128, 129, 255, 256, 1000, 1023,
                1024, 1025, 4095, 4096, 4097})


def _gemm(m: int, n: int = 8, k: int = 8) -> GemmCase:
    return GemmCase(f"t_m{m}n{n}k{k}", m, n, k)


@pytest.mark.parametrize("v", EDGES)
def test_every_gemm_shape_matches_its_own_class(v: int) -> None:
    for case in (_gemm(v), _gemm(8, v), _gemm(8, 8, v), _gemm(v, v, v)):
        op, cls = tune.shape_class(case)
        assert tune.class_matches(op, cls, case), (case, cls)


def test_m_classes_are_gemv_small_and_large() -> None:
    assert tune.gemm_class(_gemm(1))["m_max"] == 1
    assert (tune.gemm_class(_gemm(2))["m_min"], tune.gemm_class(_gemm(32))["m_max"]) == (2, 32)
    big = tune.gemm_class(_gemm(33))
    assert big["m_min"] == 33 and "m_max" not in big


@pytest.mark.parametrize("dim", ["m", "n", "k"])
def test_gemm_classes_partition_each_dimension(dim: int) -> None:
    """Two values fall in the same class exactly when one class matches both:
    classes neither overlap nor leave gaps, at every edge."""
    values = list(range(1, 300)) + EDGES

    def case(v: int) -> GemmCase:
        return _gemm(**{"m": 8, "n": 8, "k": 8, dim: v})  # type: ignore[arg-type]
    classes = {v: tune.gemm_class(case(v)) for v in values}
    for v, w in itertools.product(values[::7] + EDGES, repeat=2):
        same = classes[v] == classes[w]
        assert tune.class_matches("gemm", classes[v], case(w)) == same, (dim, v, w, classes[v])


def test_power_of_two_ranges() -> None:
    cls = tune.gemm_class(_gemm(8, 64, 100))
    assert (cls["n_min"], cls["n_max"], cls["k_min"], cls["k_max"]) == (64, 127, 64, 127)


def _conv(**kw: object) -> ConvCase:
    base = dict(name="t_conv", n=1, h=8, w=8, c_in=8, c_out=8, kh=3, kw=3)
    return ConvCase(**{**base, **kw})  # type: ignore[arg-type]


def test_conv_classes_separate_what_decides_applicability() -> None:
    plain = _conv()
    variants = {"dilated": _conv(dilation=(2, 2)), "dilated rows": _conv(dilation=(2, 1)),
                "dilated columns": _conv(dilation=(1, 2)), "strided": _conv(stride=(2, 1)),
                "1x1": _conv(kh=1, kw=1), "depthwise": _conv(groups=8),
                "grouped": _conv(groups=2), "wide": _conv(kw=5)}
    op, cls = tune.shape_class(plain)
    assert tune.class_matches(op, cls, plain)
    for name, other in variants.items():
        o_op, o_cls = tune.shape_class(other)
        assert tune.class_matches(o_op, o_cls, other), name
        assert not tune.class_matches(op, cls, other), name
        assert not tune.class_matches(o_op, o_cls, plain), name
    assert not tune.class_matches("gemm", tune.gemm_class(_gemm(8)), plain)


def test_the_first_matching_rule_wins() -> None:
    case = _gemm(1)
    table = {"rules": [
        {"op": "gemm", "class": {"m_min": 2, "m_max": 32}, "realization": "small"},
        {"op": "gemm", "class": {"m_min": 1, "m_max": 1}, "realization": "gemv"},
        {"op": "gemm", "class": {}, "realization": "any"}]}
    assert tune.table_choice(table, case) == "gemv"
    assert tune.table_choice(table, _gemm(40)) == "any"
    assert tune.table_choice({"rules": []}, case) is None


def _verdict(case: GemmCase, realization: str, time_ns: float, status: str = PASS) -> Verdict:
    v = Verdict(case=case.name, op="gemm", shape=case.shape_str(), kind="uniform",
                target="stub", backend="scalar", realization=realization, kernel="k",
                accum="fp32", k=case.k, m=case.m, n=case.n, b_form="plain", vector_bits=0,
                status=status)
    v.rounds, v.time_median_ns = 5, time_ns
    return v


INFO = SimpleNamespace(library_version="0", arch="aarch64", cpu_features=(),
                       sme_vector_bits=0, name="stub")


def _shape(case: GemmCase, times: dict[str, tuple[float, str]]) -> tune.ShapeResult:
    sr = tune.ShapeResult(case, "cat", default="slow")
    sr.verdicts = {r: _verdict(case, r, t, s) for r, (t, s) in times.items()}
    return sr


def test_the_winner_is_the_least_total_among_realizations_eligible_everywhere() -> None:
    a, b = _gemm(4, 8, 8), _gemm(5, 9, 9)
    assert tune.gemm_class(a) == tune.gemm_class(b)
    shapes = [
        _shape(a, {"slow": (900.0, PASS), "mid": (500.0, PASS), "fast": (300.0, PASS),
                   "broken": (10.0, FAIL), "untrusted": (400.0, MISTRUSTED)}),
        _shape(b, {"slow": (900.0, PASS), "mid": (500.0, PASS), "broken": (10.0, FAIL),
                   "untrusted": (400.0, MISTRUSTED)}),  # "fast" does not take b
    ]
    table = tune.build_table(INFO, shapes, False)
    (rule,) = table["rules"]
    assert rule["realization"] == "untrusted" and rule["time_ns"] == 800.0
    assert rule["runner_up"] == {"realization": "mid", "time_ns": 1000.0}
    assert rule["default_time_ns"] == 1800.0
    assert sorted(rule["shapes"]) == sorted([a.name, b.name])
    assert tune.class_matches(rule["op"], rule["class"], a)


class _Clock:
    """monotonic() for tune(): each reading advances by one second."""

    def __init__(self) -> None:
        self.t = 0.0

    def monotonic(self) -> float:
        self.t += 1.0
        return self.t


REAL = Realization(name="gemm_stub_f32acc", backend="scalar", kernel="stub", op="gemm",
                   isa="base", accum="fp32", k_per_rounding=1, bforms=("plain",),
                   vector_bits=0, threads=1)


@pytest.mark.parametrize("budget", [0.5, 1.5, 2.5, 100.0])
def test_a_budget_that_runs_out_lists_every_shape_it_leaves_out(
        monkeypatch: pytest.MonkeyPatch, budget: float) -> None:
    cases = [("cat", _gemm(m)) for m in (1, 2, 40, 3)]
    monkeypatch.setattr(tune, "time", _Clock())
    monkeypatch.setattr(tune, "measure",
                        lambda target, job, settings, cache: _verdict(job.case, REAL.name, 1e3))
    target = SimpleNamespace(info=lambda: SimpleNamespace(**vars(INFO), realizations=[REAL]),
                             name="stub", emulated=False)
    result = tune.tune(target, cases, None, budget_s=budget)  # type: ignore[arg-type]
    tuned = [sr.case.name for sr in result.shapes]
    assert tuned + result.skipped == [c.name for _, c in cases]
    assert len(tuned) == min(len(cases), int(budget))  # one clock second per shape
