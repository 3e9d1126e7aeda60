"""How judgements combine into verdicts: the problems of a batch into one
judgement (worst of), and a judgement, a guard finding and the realization
that ran into a case's status. The target here is a stub that returns
chosen outputs, so a wrong result, a mistrusted case and a wrong
realization are each made on purpose; the judge and the runner are real."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from kbench.harness.runner import Job, run_job
from kbench.judge.oracle import gemm_reference
from kbench.judge.tolerance import AccumModel
from kbench.judge.verdict import FAIL, MISTRUSTED, PASS, Judgement, combine, judge
from kbench.native.api import Realization
from kbench.problems.cases import GemmCase
from kbench.problems.inputs import GemmInputs
from kbench.targets.spec import Outcome

MODEL = AccumModel("fp32")


def _problem(seed: int):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (3, 4)).astype(np.float16)
    b = rng.uniform(-1, 1, (4, 3)).astype(np.float16)
    return gemm_reference(a, b, None, None)


def _judged(seed: int, wrong: bool) -> Judgement:
    ref = _problem(seed)
    out = ref.rounded.copy()
    if wrong:
        out[1, 2] = np.float16(float(out[1, 2]) + 1.0)
    return judge(out, ref, MODEL, 4, False, False)


@pytest.mark.parametrize("bad", [0, 1, 2])
def test_one_failing_problem_fails_the_batch(bad: int) -> None:
    parts = [_judged(i, wrong=i == bad) for i in range(3)]
    assert [p.ok for p in parts] == [i != bad for i in range(3)]
    j = combine(parts)
    assert not j.ok
    assert j.violations == 1
    assert j.total == 27
    assert j.max_ratio == max(p.max_ratio for p in parts) > 1
    assert j.max_ulp == max(p.max_ulp for p in parts)
    assert f"problem {bad}:" in j.detail


def test_violations_of_every_failing_problem_are_summed() -> None:
    ref = _problem(5)
    twice = ref.rounded.copy()
    twice[0, 0] = np.float16(float(twice[0, 0]) + 1.0)
    twice[2, 1] = np.float16(float(twice[2, 1]) - 1.0)
    parts = [_judged(1, wrong=True), judge(twice, ref, MODEL, 4, False, False),
             _judged(2, wrong=False)]
    assert [p.violations for p in parts] == [1, 2, 0]
    j = combine(parts)
    assert not j.ok and j.violations == 3
    assert "problem 0:" in j.detail and "problem 1:" in j.detail


def test_a_batch_of_passing_problems_passes_and_one_mistrusted_problem_taints_it() -> None:
    parts = [_judged(i, wrong=False) for i in range(3)]
    j = combine(parts)
    assert j.ok and j.violations == 0 and not j.mistrusted
    assert j.exact == sum(p.exact for p in parts)
    zero = gemm_reference(np.zeros((3, 4), np.float16), np.ones((4, 3), np.float16), None, None)
    tainted = combine([*parts, judge(zero.rounded, zero, MODEL, 4, False, False)])
    assert tainted.ok and tainted.mistrusted


def test_batch_rms_is_weighted_by_problem_size() -> None:
    a = Judgement(True, 10, 10, 0, 0.1, 0.0, 0.3, False, "")
    b = Judgement(True, 30, 30, 0, 0.2, 0.0, 0.1, False, "")
    j = combine([a, b])
    assert j.rms_rel == pytest.approx(np.sqrt((0.09 * 10 + 0.01 * 30) / 40))
    assert j.max_ratio == 0.2


# ------------------------------------------------- the status of a case

REAL = Realization(name="gemm_stub_f32acc", backend="scalar", kernel="stub", op="gemm",
                   isa="base", accum="fp32", k_per_rounding=1, bforms=("plain",),
                   vector_bits=0, threads=1)
OTHER = Realization(name="gemm_other_f32acc", backend="scalar", kernel="other", op="gemm",
                    isa="base", accum="fp32", k_per_rounding=1, bforms=("plain",),
                    vector_bits=0, threads=1)
CASE = GemmCase("stub4x4", 4, 4, 2, bias=False)


def _inputs(mostly_zero: bool) -> GemmInputs:
    rng = np.random.default_rng(7)
    a = rng.uniform(0.5, 1.0, (4, 2)).astype(np.float16)
    if mostly_zero:
        a[1:] = 0  # three rows of four zero: the reference is 75% zeros
    b = rng.uniform(0.5, 1.0, (2, 4)).astype(np.float16)
    return GemmInputs([a], [b], [None], None, [gemm_reference(a, b, None, None)], "uniform")


@dataclass
class FixedInputs:
    inp: GemmInputs

    def get(self, case: GemmCase, kind: str) -> GemmInputs:
        return self.inp


@dataclass
class StubTarget:
    """Returns the reference's rounded result, optionally off by one at (0, 0),
    as computed by `ran`, with an optional guard finding."""

    wrong: bool = False
    ran: Realization = REAL
    guard: str = ""
    name: str = "stub"

    def run_gemm(self, case, inp, name, selector, force, guard) -> Outcome:
        out = inp.refs[0].rounded.copy()
        if self.wrong:
            out[0, 0] = np.float16(float(out[0, 0]) + 1.0)
        return Outcome([out], self.ran, None, self.guard)


def _status(target: StubTarget, mostly_zero: bool, force: bool = True) -> tuple[str, str]:
    v = run_job(target, Job(CASE, "uniform", REAL, "stub"), None,  # type: ignore[arg-type]
                FixedInputs(_inputs(mostly_zero)), force)  # type: ignore[arg-type]
    return v.status, v.message


def test_right_results_pass_and_a_mostly_zero_reference_is_mistrusted() -> None:
    assert _status(StubTarget(), False)[0] == PASS
    status, message = _status(StubTarget(), True)
    assert status == MISTRUSTED and "75% of the reference is 0" in message


def test_a_wrong_result_fails_even_on_a_mistrusted_case() -> None:
    assert _status(StubTarget(wrong=True), False)[0] == FAIL
    status, message = _status(StubTarget(wrong=True), True)
    assert status == FAIL, message
    assert "outside the bound" in message


def test_a_guard_finding_fails_a_right_result() -> None:
    status, message = _status(StubTarget(guard="B changed at row 0"), False)
    assert status == FAIL and message == "B changed at row 0"


@pytest.mark.parametrize("force", [True, False])
def test_another_realization_than_the_one_asked_for_fails(force: bool) -> None:
    status, message = _status(StubTarget(ran=OTHER), False, force)
    assert status == FAIL
    assert f"{REAL.name} but {OTHER.name} ran" in message
    assert ("asked for" if force else "dispatch should have chosen") in message
