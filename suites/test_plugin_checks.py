"""What kbench can see wrong in a user's kernels beyond their results:
declared NaN rules of a clamp (plugin ABI 2), tables of ABI version 1,
and packer conformance (kbench.harness.packers) with deliberately faulty
packers (examples/plugins: expackers, exsmepackers) beside the clean
examples whose packers must conform, on the host and on emulated SVLs."""

from __future__ import annotations

import pytest
from plugin_builds import ARCH_PATTERN, lib
from qemu_gate import needs_qemu

from kbench.harness import packers
from kbench.harness.runner import Job, run_job
from kbench.judge.verdict import FAIL, PASS
from kbench.problems.cases import GemmCase
from kbench.targets.plugins import PluginLoads
from kbench.targets.spec import parse_target

SPECIALS = [GemmCase("nan_plain", 7, 8, 15), GemmCase("nan_clamp", 16, 16, 16, bias=True,
                                                      clamp=True),
            GemmCase("nan_tail", 15, 17, 9, bias=True, lda_pad=8, ldc_pad=1)]


@pytest.fixture(scope="module")
def host():
    t = parse_target("host", [lib("exnan"), lib("exv1"), lib("exv2"), lib("exukref"),
                                 lib("expackers")])
    yield t
    t.close()


def _reals(t):
    return {r.name: r for r in t.info().realizations}


def _declared(t):
    return {d.name: d for p in PluginLoads.from_extra(t.info().extra).loaded
            for d in p.realizations}


@pytest.mark.parametrize("case", SPECIALS, ids=lambda c: c.name)
def test_a_declared_fclamp_passes_the_specials(host, case):
    """Before ABI 2 a plugin could not say its clamp is FCLAMP: every specials
    case of an FCLAMP kernel failed, so a user had to drop the specials."""
    r = _reals(host)["exnan.gemm_fclamp"]
    assert r.nan_clamp == "to_min"
    v = run_job(host, Job(case, "specials", r, "host"))
    assert v.status == PASS, v.line()


@pytest.mark.parametrize("case", SPECIALS, ids=lambda c: c.name)
def test_an_undeclared_fclamp_fails_and_says_which_rule_it_follows(host, case):
    v = run_job(host, Job(case, "specials", _reals(host)["exnan.gemm_fclamp_silent"], "host"))
    assert v.status == FAIL
    assert "whose exact value is NaN hold" in v.message
    assert ("declares that NaN propagates, but it follows the rule that its clamp turns NaN "
            "into clamp_min, as FCLAMP does (declare nan_clamp = KB_PLUGIN_NAN_TO_MIN)"
            in v.message), v.message


@pytest.mark.parametrize("case", SPECIALS, ids=lambda c: c.name)
def test_a_false_fclamp_declaration_fails_and_says_so(host, case):
    v = run_job(host, Job(case, "specials", _reals(host)["exnan.gemm_claims_fclamp"], "host"))
    assert v.status == FAIL
    assert ("whose exact value is NaN are NaN: the realization declares that its clamp turns "
            "NaN into clamp_min, but it follows the rule that NaN propagates (declare "
            "nan_clamp = KB_PLUGIN_NAN_PROPAGATE)" in v.message), v.message


def test_the_declared_rule_covers_only_nan_elements(host):
    """The FCLAMP declaration widens nothing else: an infinity where the
    exact value is finite still fails (the checks of special values that do
    not involve NaN are kept)."""
    import numpy as np

    from kbench.judge import oracle
    from kbench.judge.tolerance import AccumModel
    from kbench.judge.verdict import judge
    a = np.array([[1.0, np.nan], [2.0, 3.0]], np.float16)
    b = np.array([[1.0, 2.0], [3.0, 4.0]], np.float16)
    ref = oracle.gemm_reference(a, b, None, None)
    model = AccumModel("fp32", 1)
    fclamp = np.array([[-np.inf, -np.inf], [11.0, 16.0]], np.float16)
    assert judge(fclamp, ref, model, 2, False, False, "to_min").ok
    assert not judge(fclamp, ref, model, 2, False, False, "propagate").ok
    wrong = fclamp.copy()
    wrong[1, 0] = np.float16(np.inf)
    assert not judge(wrong, ref, model, 2, False, False, "to_min").ok
    propagated = np.array([[np.nan, np.nan], [11.0, 16.0]], np.float16)
    assert judge(propagated, ref, model, 2, False, False, "propagate").ok
    assert not judge(propagated, ref, model, 2, False, False, "to_min").ok


def test_a_version_1_table_still_loads_at_its_own_stride(host):
    """exv1 lays its table out as ABI 1 did (shorter realizations): read at
    ABI 2's stride its second and third entries would be garbage."""
    reals = _reals(host)
    plugin = next(p for p in PluginLoads.from_extra(host.info().extra).loaded
                  if p.name == "exv1")
    assert plugin.abi_version == 1
    for name in ("exv1.gemm_a", "exv1.gemm_b", "exv1.gemm_c"):
        assert reals[name].nan_clamp == "propagate"
        v = run_job(host, Job(GemmCase("v1_case", 5, 6, 7, bias=True), "normal", reals[name],
                              "host"))
        assert v.status == PASS, v.line()


def test_a_version_2_table_still_loads_at_its_own_stride(host):
    """exv2 lays its table out as ABI 2 did (before the ABI 3 declarations): read
    at ABI 3's stride its second and third entries would be garbage; it declares
    none of ABI 3's allowances or flags."""
    reals = _reals(host)
    plugin = next(p for p in PluginLoads.from_extra(host.info().extra).loaded
                  if p.name == "exv2")
    assert plugin.abi_version == 2
    for d in plugin.realizations:
        assert (d.packs_bias, d.bias_at_call, d.padding_unspecified) == (True, False, False)
        assert d.overread == (0,) * 6 and d.scratch_cap is None and d.expect_symbols == ()
    for name in ("exv2.gemm_a", "exv2.gemm_b", "exv2.gemm_c"):
        v = run_job(host, Job(GemmCase("v2_case", 5, 6, 7, bias=True), "normal", reals[name],
                              "host"))
        assert v.status == PASS, v.line()


def _checks(t, name, svl=0):
    r, d = _reals(t)[name], _declared(t)[name]
    return {(c.packer, c.check): c for c in packers.checks_for(t, d, "native" in r.bforms, svl)}


def test_the_portable_example_packers_conform(host):
    checks = _checks(host, "exukref.gemm_4x8")
    assert set(checks) == {("rhs", "determinism"), ("rhs", "layout"), ("lhs", "determinism"),
                           ("lhs", "layout")}
    assert all(c.ok for c in checks.values()), checks
    plain = _checks(host, "exukref.gemm_4x8_plain_lhs")
    assert set(plain) == {("rhs", "determinism"), ("rhs", "layout")}  # no LHS packer


@pytest.mark.parametrize("spec", ["host", pytest.param("qemu:svl=512", marks=needs_qemu)])
def test_a_packer_leaving_its_padding_unwritten_is_named(spec):
    """The padding columns of the last block (and their bias) left as they
    were: found by packing twice over two patterns, decoded by the kernel's
    own blocking (nr = 8, kr = 2), in the host worker and the emulated one."""
    t = parse_target(spec, [f"{ARCH_PATTERN}/libexpackers.so"])
    try:
        c = _checks(t, "expackers.gemm_rhs_unwritten")[("rhs", "determinism")]
    finally:
        t.close()
    assert not c.ok
    assert c.problem == ("its packed B of N = 1, K = 1 differs between a destination filled "
                         "with 0x00 and one filled with 0xA5 from byte 2 (where x16p8x2b keeps "
                         "block 0, the bias of column 1 (n = 1, padding past N = 1)): 42 byte(s) "
                         "left unwritten")


def test_a_packer_off_its_declared_layout_by_one_byte_is_decoded(host):
    checks = _checks(host, "expackers.gemm_rhs_one_byte")
    assert checks[("rhs", "determinism")].ok and checks[("lhs", "layout")].ok
    assert checks[("rhs", "layout")].problem == (
        "its packed B of N = 1, K = 1 differs from the declared layout x16p8x2b (kbench's "
        "packing of it) at byte 44 (block 0, column 7 (n = 7, padding past N = 1), k-pair 0 "
        "(k = 0)): 0x01 where the layout holds 0x00; 1 byte(s) differ")


@needs_qemu
@pytest.mark.parametrize("svl", [128, 512])
def test_our_sme_packers_conform_and_a_one_byte_error_is_decoded_at_every_svl(svl):
    """exsme hands over kbench's own SME packers (declared x16p2vlx2b and
    x16p2vlx2): they must equal kbench's independent packing at every SVL;
    exsmepackers' RHS packer differs in one padding byte, found at the last
    column of the block (nr = SVL / 16)."""
    t = parse_target(f"qemu:svl={svl}", [f"{ARCH_PATTERN}/libexsme.so",
                                          f"{ARCH_PATTERN}/libexsmepackers.so"])
    try:
        ours = _checks(t, "exsme.gemm_sme2_mopa", svl)
        assert len(ours) == 4 and all(c.ok for c in ours.values()), ours
        gemv = _checks(t, "exsme.gemv_sme2_dot", svl)
        assert set(gemv) == {("rhs", "determinism"), ("rhs", "layout")}
        assert all(c.ok for c in gemv.values()), gemv
        bad = _checks(t, "exsmepackers.gemm_sme2_rhs_one_byte", svl)[("rhs", "layout")]
        nr = svl // 16
        assert not bad.ok
        assert (f"differs from the declared layout x16p2vlx2b (kbench's packing of it) at byte "
                f"{nr * 2 + (nr - 1) * 4} (block 0, column {nr - 1} (n = {nr - 1}, padding past "
                "N = 1), k-pair 0 (k = 0)): 0x01 where the layout holds 0x00" in bad.problem), \
            bad.problem
    finally:
        t.close()


READS = [GemmCase("rp_tail", 7, 9, 13, bias=True), GemmCase("rp_pad", 5, 6, 7, lda_pad=3,
                                                             ldb_pad=2)]


def _guard_target(spec):
    return parse_target(spec, [f"{ARCH_PATTERN}/libexreadpast.so",
                               f"{ARCH_PATTERN}/libexpackers.so"])


@pytest.mark.parametrize("spec", ["host", pytest.param("qemu:svl=512", marks=needs_qemu)])
@pytest.mark.parametrize("case", READS, ids=lambda c: c.name)
def test_a_read_past_an_input_is_a_finding_naming_the_buffer(spec, case):
    """Before: a read past B was caught only when what lay there happened to
    poison the result, or as a crash of the worker (heap corruption). The
    inputs of a checking run now lie flush against guard pages in the worker
    (the end for exact inputs, the start for the other kind): the read
    faults and the verdict names the buffer, the realization and the shape."""
    t = _guard_target(spec)
    try:
        reals = _reals(t)
        past = run_job(t, Job(case, "exact", reals["exreadpast.gemm_reads_past_b"], spec))
        assert past.status == FAIL
        assert past.message.startswith(
            f"exreadpast.gemm_reads_past_b (plugin exreadpast 1.0.0) on {case.shape_str()} "
            f"({case.name}, exact): input guard page: read past the end of B[0]: byte "), \
            past.message
        before = run_job(t, Job(case, "normal", reals["exreadpast.gemm_reads_before_a"], spec))
        assert before.status == FAIL
        assert "input guard page: read before the start of A[0]: 2 byte(s) before a" \
            in before.message, before.message
        # the worker was started afresh: the next call passes
        ok = run_job(t, Job(case, "exact", reals["expackers.gemm_4x8"], spec))
        assert ok.status == PASS, ok.line()
    finally:
        t.close()


@pytest.mark.parametrize("spec", ["host", pytest.param("qemu:svl=512", marks=needs_qemu)])
def test_a_kernel_reading_past_the_packed_rhs_kbench_made_is_named(spec):
    """kbench's own scratch (the RHS it packs for a micro-kernel) is guarded
    too, piece by piece, in a checking run."""
    t = _guard_target(spec)
    try:
        r = _reals(t)["expackers.gemm_kernel_reads_past_rhs"]
        v = run_job(t, Job(GemmCase("rp_rhs", 5, 13, 7, bias=True), "exact", r, spec))
        assert v.status == FAIL
        assert "input guard page: read past the end of the kbench-packed RHS: byte" \
            in v.message, v.message
    finally:
        t.close()


def test_a_correct_plugin_passes_with_guard_pages_on_both_sides(host):
    """Guard pages change nothing for a kernel that stays inside its inputs,
    at either end (exact inputs: end guard; real inputs: start guard)."""
    r = _reals(host)["exukref.gemm_4x8"]
    for case in READS:
        for kind in ("exact", "normal"):
            v = run_job(host, Job(case, kind, r, "host"))
            assert v.status == PASS, v.line()


def test_the_guard_allocator_names_the_buffer_and_the_offset():
    """kb_guard_describe, which the worker's fault handler calls, on the
    pages around a guarded buffer at both ends."""
    import numpy as np

    from kbench.native import api
    nat = api.load()
    lib, ffi = nat.lib, nat.ffi
    out = ffi.new("char[256]")
    p = lib.kb_guard_alloc(42, 2, lib.KB_GUARD_END, 0, b"B[3]")
    assert p != ffi.NULL
    try:
        addr = int(ffi.cast("uintptr_t", p))
        assert lib.kb_guard_describe(ffi.cast("void *", addr + 42), out, 256) == 1
        assert ffi.string(out).decode() == ("read past the end of B[3]: byte 42 of a 42-byte "
                                            "buffer (0 byte(s) beyond its end, into the guard "
                                            "page after it)")
        # a fault reported at an address inside the buffer: an access that straddles its end
        assert lib.kb_guard_describe(ffi.cast("void *", addr + 40), out, 256) == 1
        assert ffi.string(out).decode() == ("read past the end of B[3]: byte 40 of a 42-byte "
                                            "buffer (an access starting inside it, into the guard "
                                            "page after it)")
        assert lib.kb_guard_describe(ffi.cast("void *", addr - 2), out, 256) == 0
        view = np.frombuffer(ffi.buffer(ffi.cast("char *", addr - 8), 8), np.uint16)
        assert (view == 0x7E49).all()  # NaN poison on the unguarded side
    finally:
        lib.kb_guard_free(p)
    # a declared allowance: the guard page starts that far past the end, NaN poison before it
    p = lib.kb_guard_alloc(42, 2, lib.KB_GUARD_END, 32, b"B[0]")
    try:
        addr = int(ffi.cast("uintptr_t", p))
        view = np.frombuffer(ffi.buffer(ffi.cast("char *", addr + 42), 32), np.uint16)
        assert (view == 0x7E49).all()  # the allowance is readable and holds poison
        assert lib.kb_guard_describe(ffi.cast("void *", addr + 74), out, 256) == 1
        assert ffi.string(out).decode() == ("read past the end of B[0]: byte 74 of a 42-byte "
                                            "buffer (33 byte(s) past its end read, 32 declared "
                                            "readable; the guard page starts 32 past its end)")
    finally:
        lib.kb_guard_free(p)
    q = lib.kb_guard_alloc(10, 2, 2, 0, b"the filter")
    try:
        addr = int(ffi.cast("uintptr_t", q))
        assert lib.kb_guard_describe(ffi.cast("void *", addr - 2), out, 256) == 1
        assert ffi.string(out).decode() == ("read before the start of the filter: 2 byte(s) "
                                            "before a 10-byte buffer (into the guard page before "
                                            "it)")
    finally:
        lib.kb_guard_free(q)


CLOBBERS = {"host": ("exclobber.gemm_clobbers_rbx", "rbx", "exclobber.gemm_clobbers_r12", "r12"),
            "qemu:svl=512": ("exclobber.gemm_clobbers_d9", "d9", "exclobber.gemm_clobbers_x20",
                             "x20")}


@pytest.mark.parametrize("spec", ["host", pytest.param("qemu:svl=512", marks=needs_qemu)])
def test_a_kernel_that_clobbers_a_callee_saved_register_is_named(spec):
    """Before: a plugin kernel that did not restore x19-x28, d8-d15 (or rbx,
    r12-r15 on x86_64) went unnoticed until it corrupted its caller. In a
    checking run every call goes through a trampoline with canaries."""
    t = parse_target(spec, [f"{ARCH_PATTERN}/libexclobber.so"])
    try:
        reals = _reals(t)
        first, reg1, second, reg2 = CLOBBERS[spec]
        for name, reg in ((first, reg1), (second, reg2)):
            v = run_job(t, Job(GemmCase("cc_case", 5, 6, 7, bias=True), "exact", reals[name],
                               spec))
            assert v.status == FAIL
            assert (f"calling convention: {name} (its gemm) returned with {reg} not restored"
                    in v.message), v.message
            assert "(on m5n6k7, cc_case, exact)" in v.message
    finally:
        t.close()


@needs_qemu
@pytest.mark.parametrize("spec", ["qemu:svl=512", "qemu:cpu=neoverse-n1"])
def test_our_kernels_go_through_the_same_check_and_pass(spec):
    """Our SME and NEON micro-kernels are called through the trampoline in a
    checking run too (the worker counts the checked calls) and restore
    everything they must."""
    from kbench.harness.runner import jobs_for
    t = parse_target(spec)
    try:
        before = t.engine.info(spec).extra["abi_checked_calls"]
        ours = [r for r in t.info().realizations if r.op == "gemm" and r.backend in ("sme", "neon")]
        assert ours
        for job in jobs_for([GemmCase("cc_ours", 9, 37, 21, bias=True)], ours, spec):
            v = run_job(t, job)
            assert v.status == PASS, v.line()
        after = t.engine.info(spec).extra["abi_checked_calls"]
        assert after > before, (before, after)
    finally:
        t.close()
