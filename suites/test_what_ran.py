"""What actually ran in a plugin's call on an emulated target
(kbench.targets.whatran): the log of the plugin's own code between two
fences, named by function; the declared expected symbols (plugin ABI 3),
per ISA class for a runtime that picks its path; a silent fallback to
another path fails naming what ran."""

from __future__ import annotations

import pytest
from plugin_builds import pattern
from qemu_gate import needs_qemu

from kbench.errors import InvalidArgument
from kbench.harness.runner import Job, run_job
from kbench.judge.verdict import FAIL, PASS
from kbench.problems.cases import GemmCase
from kbench.targets import whatran
from kbench.targets.qemutrace import TraceError, Window
from kbench.targets.spec import parse_target
from kbench.targets.whatran import BlockTally, Ran, RanFunction

FENCE = (0x9000, 0x9008)


def _block(pc: int, n: int) -> list[bytes]:
    lines = [b"----------------\n", b"IN: f\n"]
    lines += [f"0x{pc + 4 * i:016x}:  d503201f  nop\n".encode() for i in range(n)]
    return [*lines, b"\n", _trace(pc)]


def _trace(pc: int) -> bytes:
    return f"Trace 0: 0x7f00{pc:08x} [00000000/{pc:016x}/00000001/00000200] f\n".encode()


def test_the_tally_adds_each_block_between_two_fences():
    log = [b"noise\n", *_block(0x1000, 3), _trace(0x1000), *_block(0x2000, 5),
           *_block(FENCE[0], 2),  # the fence: the first request ends here
           _trace(0x2000), *_block(0x3000, 1), _trace(FENCE[0])]
    tally = BlockTally(FENCE)
    tally.feed(log)
    first, second = tally.wait_for(2, 1)
    assert first == {0x1000: 6, 0x2000: 5}
    assert second == {0x2000: 5, 0x3000: 1}
    with pytest.raises(TraceError, match="2 of 3 requests read from the log within"):
        tally.wait_for(3, 0.01)


def test_a_block_executed_without_being_logged_is_an_error():
    tally = BlockTally(FENCE)
    tally.feed([_trace(0x1000)])
    with pytest.raises(TraceError, match="block 0x1000 executed without being logged"):
        tally.wait_for(1, 1)


def _ran(*funcs: tuple[str, int, bool]) -> Ran:
    return Ran(tuple(RanFunction(n, "lib.so" if own else "libc.so.6", k, own)
                     for n, k, own in funcs))


def test_the_record_names_the_functions_that_ran_most():
    ran = _ran(("kernel", 800, True), ("pack", 120, True), ("memcpy", 60, False),
               ("entry", 15, True), ("tail", 5, True))
    assert ran.total == 1000
    assert ran.text() == "kernel 80%, pack 12%, memcpy 6%, entry 2%, ... of 1,000 instructions"
    assert [f.name for f in ran.own] == ["kernel", "pack", "entry", "tail"]
    assert Ran(()).text() == ""


@pytest.mark.parametrize("classes, want", [
    (("neon", "fhm", "sme", "sme2", "sve2", "sve2p1"), ("rt_sme2_*",)),
    (("neon", "fhm", "sve2", "sve2p1"), ("rt_sve2p1_*",)),
    (("neon", "fhm"), ("rt_neon_*", "rt_common_*")),
    ((), ("rt_ref_*",)),
])
def test_the_patterns_of_the_first_declared_class_the_cpu_has_apply(classes, want):
    declared = ("sme2:rt_sme2_*", "sve2p1:rt_sve2p1_*", "neon:rt_neon_*", "neon:rt_common_*",
                "rt_ref_*")
    assert whatran.applicable_patterns(declared, classes) == want


def test_a_call_that_never_entered_a_declared_function_fails_naming_what_ran():
    fallback = _ran(("dot", 900, True), ("rt_neon_gemm", 80, True), ("memset", 20, False))
    why = whatran.check(fallback, ("sme2:rt_sme2_*", "neon:rt_neon_*"), ("neon", "sme2"))
    assert why == ("ran elsewhere than it declares: none of rt_sme2_* ran in this call (a "
                   "fallback to another path?); what ran: dot 92%, rt_neon_gemm 8% of 980 "
                   "instructions")
    # the same call on a CPU without SME2 is where it should be; a helper may run the most
    assert whatran.check(fallback, ("sme2:rt_sme2_*", "neon:rt_neon_*"), ("neon",)) == ""
    assert whatran.check(fallback, (), ("neon",)) == ""  # nothing declared
    assert "what ran: none of its own code" in whatran.check(
        _ran(("memcpy", 10, False)), ("rt_*",), ())


def test_what_ran_is_on_unless_turned_off(monkeypatch):
    monkeypatch.delenv(whatran.ENV, raising=False)
    assert whatran.enabled()
    monkeypatch.setenv(whatran.ENV, "0")
    assert not whatran.enabled()
    monkeypatch.setenv(whatran.ENV, "off")
    with pytest.raises(InvalidArgument, match="KBENCH_WHAT_RAN: 'off' is not 0 or 1"):
        whatran.enabled()


def test_a_window_of_blocks_is_named_by_the_functions_holding_them():
    class Symbols:
        def name(self, pc):
            return {0x10: ("a", "lib.so", True), 0x20: ("a", "lib.so", True),
                    0x30: ("b", "lib.so", True)}[pc]

    ran = whatran.summarize(Window("call", "", blocks={0x10: 4, 0x20: 6, 0x30: 30}), Symbols())
    assert [(f.name, f.instructions) for f in ran.functions] == [("b", 30), ("a", 10)]


@needs_qemu
def test_a_plugins_calls_record_what_ran_and_a_fallback_fails():
    t = parse_target("qemu:svl=512", [pattern("exdecl"), pattern("exdecl_bad"),
                                      pattern("exsme")])
    try:
        assert isinstance(t.engine, whatran.TracedWorkerEngine)
        reals = {r.name: r for r in t.info().realizations}
        assert reals["exdecl.gemm_dispatch"].expect_symbols == ("exdecl_fast_*",)
        case = GemmCase("wr", 7, 19, 33, bias=True)
        good = run_job(t, Job(case, "exact", reals["exdecl.gemm_dispatch"], t.name))
        assert good.status == PASS, good.line()
        assert "exdecl_fast_gemm" in good.ran and good.ran.endswith(" instructions")
        bad = run_job(t, Job(case, "exact", reals["exdecl_bad.gemm_dispatch"], t.name))
        assert bad.status == FAIL and bad.max_err_bound < 1  # its result is right
        assert bad.message.startswith("ran elsewhere than it declares: none of exdecl_fast_* "
                                      "ran in this call (a fallback to another path?); what "
                                      "ran: "), bad.message
        assert "exdecl_reference_gemm" in bad.message and "exdecl_reference_gemm" in bad.ran
        # a micro-kernel's call: its kernel and packers, not kbench's loop around them
        sme = run_job(t, Job(GemmCase("wr2", 37, 53, 45, bias=True), "normal",
                             reals["exsme.gemm_sme2_mopa"], t.name))
        assert sme.status == PASS and "kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b" in sme.ran, sme.ran
        # a guard-page fault restarts the worker; the next call is traced again
        over = run_job(t, Job(case, "exact", reals["exdecl_bad.gemm_overread"], t.name))
        assert over.status == FAIL and "33 byte(s) past its end read" in over.message
        again = run_job(t, Job(case, "exact", reals["exdecl.gemm_dispatch"], t.name))
        assert again.status == PASS and "exdecl_fast_gemm" in again.ran
    finally:
        t.close()


@needs_qemu
def test_turned_off_nothing_is_recorded(monkeypatch):
    monkeypatch.setenv(whatran.ENV, "0")
    t = parse_target("qemu:svl=512", [pattern("exdecl_bad")])
    try:
        assert not isinstance(t.engine, whatran.TracedWorkerEngine)
        r = next(r for r in t.info().realizations if r.name == "exdecl_bad.gemm_dispatch")
        v = run_job(t, Job(GemmCase("wr", 7, 19, 33), "exact", r, t.name))
        assert v.status == PASS and v.ran == ""
    finally:
        t.close()


def test_the_reports_what_ran_table():
    import pandas as pd

    from kbench.results import plugin_report
    rows = pd.DataFrame([
        {"target": "qemu:svl=512", "realization": "p.gemm", "message": "",
         "ran": "k_sme2 80%, dot 20% of 100 instructions"},
        {"target": "qemu:svl=512", "realization": "p.gemm", "message": "",
         "ran": "dot 60%, k_sme2 30%, k_tail 10% of 300 instructions"},
        {"target": "qemu:svl=512", "realization": "p.gemm",
         "message": "ran elsewhere than it declares: none of k_* ran", "ran": "ref 100% of 9 "
                                                                                "instructions"},
        {"target": "host", "realization": "p.gemm", "message": "", "ran": ""},
    ])
    t = plugin_report.ran_table(rows)
    assert list(t.columns) == plugin_report.RAN_COLUMNS
    assert t.to_dict("records") == [{
        "target": "qemu:svl=512", "realization": "p.gemm", "traced": 3, "elsewhere": 1,
        "led by": "dot (1), k_sme2 (1), ref (1)", "functions seen": "k_sme2, dot, k_tail, ref"}]
    assert plugin_report.ran_table(rows.drop(columns="ran")).empty
