"""Contracts: every misuse in DESIGN.md's packed-B list, bad arguments, and
1,200 random corruptions of packed buffers. Each must raise the typed error
naming the field, with C, its guards and every input unchanged."""

import pytest

from kbench import api, contracts, native
from kbench.errors import ContractViolation, InvalidArgument
from kbench.verdict import FAIL, PASS, Verdict

NAT = native.load()
CASES = contracts.all_cases(NAT)


@pytest.mark.contracts
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_contract(kb_session, case):
    result = contracts.check(case, NAT)
    kb_session.record(Verdict(
        case=case.name, op="contract", shape="", kind="misuse", target="host", backend="-",
        realization="contracts", kernel="-", accum="-", k=0, m=0, n=0, b_form="",
        vector_bits=0, status=PASS if result.ok else FAIL, message=result.message))
    assert result.ok, result.message


def test_case_count_and_kinds():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert sum(n.startswith("corrupt_header") for n in names) >= 500
    assert sum(n.startswith("corrupt_payload") for n in names) >= 500
    for be in contracts.native_backends(NAT):
        for misuse in ("wrong_n", "wrong_k", "with_separate_bias", "backend_disabled_after_packing",
                       "wrong_vector_length", "truncated"):
            assert f"{be}_native_{misuse}" in names


def test_checker_rejects_a_call_that_succeeds():
    ok_case = contracts.ContractCase(
        "accepts", ContractViolation, "B.n",
        lambda nat: (None, lambda: None))
    assert not contracts.check(ok_case, NAT).ok


def test_checker_rejects_wrong_field_and_type():
    def call(nat):
        sc = contracts.Scenario(nat)
        return sc, lambda: api.gemm_raw(0, sc.n, sc.k, [sc.problem()], nat=nat)
    assert not contracts.check(contracts.ContractCase("f", InvalidArgument, "N", call), NAT).ok
    assert not contracts.check(contracts.ContractCase("t", ContractViolation, "M", call), NAT).ok
    assert contracts.check(contracts.ContractCase("ok", InvalidArgument, "M", call), NAT).ok


def test_checker_sees_writes_to_c():
    def call(nat):
        sc = contracts.Scenario(nat)

        def write_then_fail():
            sc.c.view[0, 0] = 1.0
            raise InvalidArgument("M: test", "M")
        return sc, write_then_fail
    result = contracts.check(contracts.ContractCase("w", InvalidArgument, "M", call), NAT)
    assert not result.ok and "C" in result.message


def test_reseal_keeps_header_checksum_valid():
    sc = contracts.Scenario(NAT)
    buf = contracts.reseal(sc.pack(), n=sc.n + 1)
    with pytest.raises(ContractViolation) as exc:
        api.gemm_raw(sc.m, sc.n, sc.k, [sc.packed_problem(buf, False)], nat=NAT)
    assert exc.value.field == "B.n"
