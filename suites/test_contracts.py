"""Contracts: every misuse in DESIGN.md's packed-B list, bad arguments, and
1,200 random corruptions of packed buffers, every header field refused one by
one on a resealed buffer and payload flips at the first, a middle and the last
byte for every layout, on every chosen target. Each
must raise the typed error naming the field, with C, its guards and every
input unchanged."""

import numpy as np
import pytest

from kbench.errors import ContractViolation, InvalidArgument
from kbench.harness import contracts
from kbench.judge.verdict import FAIL, PASS, Verdict


@pytest.mark.contracts
def test_contract(kb_session, kb_contract):
    spec, case = kb_contract
    result = contracts.check(case, kb_session.target(spec).engine)
    kb_session.record(Verdict(
        case=case.name, op="contract", shape="", kind="misuse", target=spec, backend="-",
        realization="contracts", kernel="-", accum="-", k=0, m=0, n=0, b_form="",
        vector_bits=0, status=PASS if result.ok else FAIL, message=result.message,
        suite="contracts"))
    assert result.ok, result.message


def test_case_count_and_kinds(kb_session, kb_spec):
    spec = kb_spec  # one target per test, so that targets can run in parallel
    if spec in kb_session.unavailable:
        pytest.skip(f"{spec} is unavailable (test_targets fails it)")
    if not kb_session.selects_ours():
        pytest.skip("the filters select no realization of kbench's own backends: their "
                    "contract cases do not run")
    cases = kb_session.contract_cases(spec)
    names = [c.name for c in cases]
    assert len(names) == len(set(names))
    assert sum(n.startswith("corrupt_header") for n in names) >= 500
    assert sum(n.startswith("corrupt_payload") for n in names) >= 500
    natives = contracts.native_backends(kb_session.target(spec).engine)
    for be in natives:
        for misuse in ("wrong_n", "wrong_k", "with_separate_bias",
                       "backend_disabled_after_packing", "wrong_vector_length", "truncated"):
            assert f"{be}_native_{misuse}" in names
    # every header field refused one by one on a resealed buffer, and payload
    # flips at the first, a middle and the last byte, for every layout
    for lay in ["portable", *natives]:
        for fld in contracts.RESEALED_FIELDS:
            assert f"{lay}_resealed_{fld}" in names
        assert f"{lay}_header_checksum_changed" in names
        assert f"{lay}_resealed_payload_checksum" in names
        for where in contracts.FLIPS:
            assert f"{lay}_payload_flip_{where}" in names


@pytest.fixture
def engine(kb_session):
    spec = kb_session.target_specs[0]
    if spec in kb_session.unavailable:
        pytest.skip(f"{spec} is unavailable (test_targets fails it)")
    return kb_session.target(spec).engine


def test_checker_rejects_a_call_that_succeeds(engine):
    ok_case = contracts.ContractCase("accepts", ContractViolation, "B.n",
                                     lambda eng: (None, lambda: None))
    assert not contracts.check(ok_case, engine).ok


def test_checker_rejects_wrong_field_and_type(engine):
    def call(eng):
        sc = contracts.Scenario(eng)
        return sc, lambda: eng.gemm_raw(0, sc.n, sc.k, [sc.problem()])
    assert not contracts.check(contracts.ContractCase("f", InvalidArgument, "N", call), engine).ok
    assert not contracts.check(contracts.ContractCase("t", ContractViolation, "M", call),
                               engine).ok
    assert contracts.check(contracts.ContractCase("ok", InvalidArgument, "M", call), engine).ok


def test_checker_sees_writes_to_c(engine):
    def call(eng):
        sc = contracts.Scenario(eng)

        def write_then_fail():
            sc.c.view[0, 0] = 1.0
            raise InvalidArgument("M: test", "M")
        return sc, write_then_fail
    result = contracts.check(contracts.ContractCase("w", InvalidArgument, "M", call), engine)
    assert not result.ok and "C" in result.message


def test_reseal_keeps_header_checksum_valid(engine):
    sc = contracts.Scenario(engine)
    buf = contracts.reseal(sc.pack(), n=sc.n + 1)
    with pytest.raises(ContractViolation) as exc:
        engine.gemm_raw(sc.m, sc.n, sc.k, [sc.packed_problem(buf, False)])
    assert exc.value.field == "B.n"


def _corrupt_native(engine, sc):
    """A native-packed B (the first backend with a native layout) with one
    payload byte flipped, and the backend."""
    be = contracts.native_backends(engine)[0]
    buf = sc.pack(be).copy()
    buf[contracts.HEADER_SIZE + (buf.size - contracts.HEADER_SIZE) // 2] ^= 0x10
    return be, buf


def test_calls_check_the_header_only_the_payload_where_verified(engine):
    """The contract's cost model: a call checks the header (O(1)); the payload
    checksum is verified by a call that asks for it (verify_payload) or by
    kbench.verify_packed, never in a production or timed call."""
    sc = contracts.Scenario(engine)
    be, buf = _corrupt_native(engine, sc)
    problem = sc.packed_problem(buf, True, bias=None)
    engine.gemm_raw(sc.m, sc.n, sc.k, [problem])  # production call: header only
    with pytest.raises(ContractViolation) as exc:
        engine.gemm_raw(sc.m, sc.n, sc.k, [problem], contracts.VERIFY)
    assert exc.value.field == "B.payload_checksum"


def test_timed_region_does_not_touch_the_payload_checksum(engine):
    """A timed call over a buffer whose payload checksum no longer matches runs:
    had the timed call hashed the payload, it would have refused the buffer."""
    from kbench.native.calls import Timing
    sc = contracts.Scenario(engine)
    be, buf = _corrupt_native(engine, sc)
    res = engine.gemm_raw(sc.m, sc.n, sc.k, [sc.packed_problem(buf, True, bias=None)],
                          None, Timing(warmup=1, rounds=2, max_reps=3))
    assert res.realization is not None and res.realization.backend == be
    assert len(res.times_ns) == 2 and res.reps_per_round == 3
    with pytest.raises(ContractViolation):
        engine.gemm_raw(sc.m, sc.n, sc.k, [sc.packed_problem(buf, True, bias=None)],
                        contracts.VERIFY, Timing(warmup=1, rounds=2, max_reps=3))


def test_reseal_changes_one_field_and_keeps_the_header_valid(engine):
    """The resealed cases change exactly the named field: the rest of the
    header and the whole payload are the packed bytes, and the header
    checksum is valid again (so only the field can be what is refused)."""
    sc = contracts.Scenario(engine)
    for be in [None, *contracts.native_backends(engine)]:
        buf = sc.pack(be)
        for fld in contracts.RESEALED_FIELDS:
            name, value = contracts.resealed_value(buf, fld)
            out = contracts.reseal(buf, **{name: value})
            before, after = contracts.header_values(buf), contracts.header_values(out)
            changed = {k for k in before if before[k] != after[k]} - {"header_checksum"}
            assert changed == {name}, (be, fld, changed)
            assert np.array_equal(out[contracts.HEADER_SIZE:], buf[contracts.HEADER_SIZE:])
            zeroed = out[:64].copy()
            zeroed[56:64] = 0
            assert after["header_checksum"] == contracts.fnv1a64(zeroed.tobytes())


def test_payload_offsets_are_the_first_a_middle_and_the_last_byte():
    buf = np.zeros(64 + 100, np.uint8)
    assert [contracts.payload_offset(buf, w) for w in contracts.FLIPS] == [64, 114, 163]
def test_the_perf_suite_times_the_production_call(kb_session):
    """What `kbench run --suite perf` times (kbench.harness.perf.prepare) on a
    native-packed B whose payload no longer matches its checksum: the
    timed rounds run, on the realization asked for, so the perf suite's
    timed region holds no payload hash; the same buffer fails verification.
    The payload checksum's own cost is counted as a phase of its own by the
    instruction-count engine (docs/errors.md, "The packed-B contract")."""
    from kbench.harness import perf
    from kbench.harness.runner import Job, applicable
    from kbench.native.calls import Timing
    from kbench.problems.cases import GemmCase

    target = kb_session.target(kb_session.target_specs[0])
    case = GemmCase("perf_production_call", 5, 20, 33, b_form="native")
    for be in contracts.native_backends(target.engine):
        real = next(r for r in target.info().realizations
                    if r.backend == be and r.op == "gemm" and applicable(case, r))
        corrupted = []
        build = target.gemm_problems

        def corrupt(*args, build=build, corrupted=corrupted, **kwargs):
            problems = build(*args, **kwargs)
            for p in problems:
                p.b[contracts.HEADER_SIZE + (p.b.size - contracts.HEADER_SIZE) // 2] ^= 0x10
                corrupted.append(p)
            return problems
        target.gemm_problems = corrupt  # type: ignore[method-assign]
        try:
            prep = perf.prepare(target, Job(case, "uniform", real, target.name),
                                perf.PerfSettings())
        finally:
            del target.gemm_problems
        assert corrupted and prep.packing is not None
        res = prep.run(Timing(warmup=1, rounds=2, max_reps=2))
        assert res.realization is not None and res.realization.name == real.name
        assert len(res.times_ns) == 2
        with pytest.raises(ContractViolation) as exc:
            target.engine.gemm_raw(case.m, case.n, case.k, corrupted, contracts.VERIFY)
        assert exc.value.field == "B.payload_checksum", be


def test_verify_packed_checks_header_and_payload():
    import numpy as np

    import kbench
    b = np.arange(12, dtype=np.float16).reshape(3, 4)
    for packed in (kbench.pack_b(b), kbench.pack_b(b, backend="scalar")):
        assert kbench.verify_packed(packed).n == 4
        for offset in (contracts.HEADER_SIZE, packed.data.size // 2 + 32, packed.data.size - 1):
            bad = packed.data.copy()
            bad[offset] ^= 1
            with pytest.raises(ContractViolation) as exc:
                kbench.verify_packed(bad)
            assert exc.value.field == "B.payload_checksum"
        bad = packed.data.copy()
        bad[3] ^= 1
        with pytest.raises(ContractViolation) as exc:
            kbench.verify_packed(bad)
        assert exc.value.field == "B.magic"
        with pytest.raises(ContractViolation) as exc:
            kbench.verify_packed(packed.data[:-1])
        assert exc.value.field == "B.size"
