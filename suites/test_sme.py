"""The SME/SME2 backend under QEMU: its packed layout byte for byte against an
independent packer (kbench/sme_layout.py) at every streaming vector length,
shape-specialized dispatch (GEMV for M = 1, MOPA otherwise), the SME1 ISA cap,
the vector-length contract of native buffers, bounded memory over many calls,
thread-count independence and bit equality with the scalar reference on
exact-by-design inputs.

Skipped when QEMU is not installed, unless KBENCH_REQUIRE_QEMU is set."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from qemu_gate import needs_qemu

from kbench.errors import ContractViolation, Unsupported
from kbench.judge import fingerprint as fp
from kbench.native import sme_layout
from kbench.native.api import RawProblem, Selector
from kbench.native.calls import ConvDesc, Engine, pack
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets.spec import Target, parse_target

SVLS = (128, 256, 512, 1024, 2048)
SME2_ROWS = {"gemv_sme2_dot_f32acc", "gemm_sme2_mopa_f32acc", "conv2d_igemm_sme2_mopa_f32acc",
             "gemm_sme2_mopa_f32acc_mb128_nb256_kb256"}  # the last: cache-blocked (test_blocking)
SME1_ROWS = {"gemv_sme_f32acc", "gemm_sme_mopa_f32acc", "conv2d_igemm_sme_mopa_f32acc"}
HEADER = struct.Struct("<IHHHHIQQIIQQQ")  # kb_packed_header, 64 bytes
LAYOUT_SME = 4
BACKEND_SME = 2

GetTarget = Callable[[str], Target]


@pytest.fixture(scope="module")
def targets() -> Iterator[GetTarget]:
    """One worker per target spec for the whole module."""
    made: dict[str, Target] = {}

    def get(spec: str) -> Target:
        if spec not in made:
            made[spec] = parse_target(spec)
        return made[spec]

    yield get
    for t in made.values():
        t.close()


def _fp16_bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Arbitrary FP16 bit patterns (NaNs, infinities and subnormals included)."""
    return rng.integers(0, 1 << 16, size=shape, dtype=np.uint16).view(np.float16)


def _sme_names(target: Target, op: str | None = None) -> set[str]:
    return {r.name for r in target.info().realizations
            if r.backend == "sme" and (op is None or r.op == op)}


# ---- the independent packer itself (no QEMU needed) -------------------------------------


@pytest.mark.parametrize("svl", SVLS)
def test_python_packers_compute_the_gemm(svl: int) -> None:
    """Walking the two packed layouts block by block gives A @ B + bias."""
    rng = np.random.default_rng(svl)
    nr = sme_layout.block(svl)
    for m, n, k in ((1, 1, 1), (3, nr + 1, 5), (nr + 2, 2 * nr - 1, 8)):
        a = rng.integers(-4, 5, size=(m, k)).astype(np.float16)
        b = rng.integers(-4, 5, size=(k, n)).astype(np.float16)
        bias = rng.integers(-9, 10, size=n).astype(np.float16)
        lhs, rhs = sme_layout.pack_lhs(a, svl), sme_layout.pack_rhs(b, bias, svl)
        assert lhs.size == -(-m // nr) * nr * (k + k % 2) * 2
        assert rhs.size == -(-n // nr) * nr * (2 + (k + k % 2) * 2)
        got = sme_layout.matmul_packed(lhs, rhs, m, n, k, svl)
        want = a.astype(np.float64) @ b.astype(np.float64) + bias.astype(np.float64)
        assert np.array_equal(got, want)
        b2, bias2 = sme_layout.unpack_rhs(rhs, n, k, svl)
        assert np.array_equal(b2.view(np.uint16), b.view(np.uint16))
        assert np.array_equal(bias2.view(np.uint16), bias.view(np.uint16))


def test_python_rhs_packer_order_by_hand() -> None:
    """SVL 128: nr = 8; K = 3 pads to two pairs; N = 9 makes two blocks."""
    k, n = 3, 9
    b = (np.arange(k * n).reshape(k, n) + 1).astype(np.float16)
    bias = (np.arange(n) + 100).astype(np.float16)
    h = sme_layout.pack_rhs(b, bias, 128).view(np.uint16).view(np.float16).astype(int)
    stride = 8 * (2 + 4 * 2) // 2  # FP16 values per block
    first, second = h[:stride], h[stride:]
    assert list(first[:8]) == [100, 101, 102, 103, 104, 105, 106, 107]
    # pair 0: n0k0 n0k1 n1k0 n1k1 ... (b[0][j] = j + 1, b[1][j] = j + 10)
    assert list(first[8:14]) == [1, 10, 2, 11, 3, 12]
    # pair 1: k = 2 and the zero padding k = 3
    assert list(first[24:28]) == [19, 0, 20, 0]
    assert list(second[:2]) == [108, 0]
    assert list(second[8:12]) == [9, 18, 0, 0]
    assert list(second[24:28]) == [27, 0, 0, 0]


# ---- native packed payload == the independent packer, at every SVL ---------------------


@needs_qemu
@pytest.mark.parametrize("svl", SVLS)
def test_native_payload_matches_independent_packer(targets: GetTarget, svl: int) -> None:
    target = targets(f"qemu:cpu=max:svl={svl}")
    assert target.info().sme_vector_bits == svl
    nr = sme_layout.block(svl)
    rng = np.random.default_rng(1000 + svl)
    shapes = [(1, 1), (2, 3), (7, nr - 1), (8, nr), (17, nr + 1), (33, 2 * nr + 3), (64, 37)]
    for i, (k, n) in enumerate(shapes):
        wide = _fp16_bits(rng, (k, n + 3 * (i % 2)))  # odd shapes use ldb > N
        b = wide[:, :n]
        bias = _fp16_bits(rng, (n,)) if i % 3 != 1 else None
        buf = pack(target.engine, b, "sme", bias)
        fields = HEADER.unpack(bytes(buf[:64]))
        (_magic, _ver, hsize, layout, backend, vbits, hn, hk, flags, block_n, psize) = fields[:11]
        assert (hsize, layout, backend, vbits, hn, hk, flags, block_n) == \
            (64, LAYOUT_SME, BACKEND_SME, svl, n, k, 1, nr), (k, n)
        want = sme_layout.pack_rhs(b, bias, svl)
        assert psize == want.size == buf.size - 64
        payload = buf[64:]
        if not np.array_equal(payload, want):
            bad = int(np.flatnonzero(payload != want)[0])
            pytest.fail(f"SVL {svl}, K={k} N={n}: first differing payload byte {bad} "
                        f"(block {bad // (want.size // -(-n // nr))})")


# ---- dispatch ------------------------------------------------------------------------------


def _exact_gemm(engine: Engine, m: int, n: int, k: int, native: bool = False
                ) -> tuple[str, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.integers(-3, 4, size=(m, k)).astype(np.float16)
    b = rng.integers(-3, 4, size=(k, n)).astype(np.float16)
    bias = rng.integers(-5, 6, size=n).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    p = RawProblem(a, k, b, n, c, n, bias)
    if native:
        buf = pack(engine, b, "sme", bias)
        p = RawProblem(a, k, buf, 0, c, n, None, b_size=buf.size, b_is_packed=True,
                       b_is_backend_native_packed=True)
    res = engine.gemm_raw(m, n, k, [p])
    want = a.astype(np.float64) @ b.astype(np.float64) + bias.astype(np.float64)
    return res.realization.name, c, want.astype(np.float16)


@needs_qemu
def test_dispatch_picks_gemv_for_m1_and_mopa_otherwise(targets: GetTarget) -> None:
    target = targets("qemu:cpu=max:svl=512")
    assert _sme_names(target) == SME2_ROWS | SME1_ROWS
    for m, native, want_name in ((1, False, "gemv_sme2_dot_f32acc"),
                                 (1, True, "gemv_sme2_dot_f32acc"),
                                 (2, False, "gemm_sme2_mopa_f32acc"),
                                 (40, True, "gemm_sme2_mopa_f32acc")):
        name, c, want = _exact_gemm(target.engine, m, 45, 19, native)
        assert name == want_name, (m, native)
        assert np.array_equal(c, want)
    # the realization reports the vector length it ran at
    res = target.engine.gemm_raw(1, 4, 4, [RawProblem(np.ones((1, 4), np.float16), 4,
                                                      np.ones((4, 4), np.float16), 4,
                                                      np.zeros((1, 4), np.float16), 4)])
    assert res.realization.vector_bits == 512


@needs_qemu
def test_conv_groups_one_on_sme_others_fall_back(targets: GetTarget) -> None:
    target = targets("qemu:cpu=max:svl=512")
    x = np.ones((1, 6, 6, 4), np.float16)
    for groups, sme in ((1, True), (2, False)):
        w = np.ones((3, 3, 4 // groups, 4), np.float16)
        out = np.zeros((1, 4, 4, 4), np.float16)
        desc = ConvDesc(1, 6, 6, 4, 4, 3, 3, groups=groups)
        res = target.engine.conv_raw(desc, x, w, None, out)
        if sme:
            assert res.realization.name == "conv2d_igemm_sme2_mopa_f32acc"
        else:
            assert res.realization.backend != "sme"  # the fallback is reported
        assert (out == 36 // groups).all()
    desc = ConvDesc(1, 6, 6, 4, 4, 3, 3, groups=2)
    out = np.zeros((1, 4, 4, 4), np.float16)
    with pytest.raises(Unsupported, match="selector.force"):
        target.engine.conv_raw(desc, x, np.ones((3, 3, 2, 4), np.float16), None, out,
                               Selector(force="conv2d_igemm_sme2_mopa_f32acc"))


@needs_qemu
def test_sme1_cap_offers_only_sme1_rows(targets: GetTarget) -> None:
    target = targets("qemu:cpu=max:isa=sme")
    assert _sme_names(target) == SME1_ROWS
    assert all(r.isa != "sme2" for r in target.info().realizations)
    assert _exact_gemm(target.engine, 1, 70, 33)[0] == "gemv_sme_f32acc"
    name, c, want = _exact_gemm(target.engine, 9, 70, 33, native=True)
    assert name == "gemm_sme_mopa_f32acc"
    assert np.array_equal(c, want)


@needs_qemu
def test_no_sme_rows_without_sme(targets: GetTarget) -> None:
    target = targets("qemu:cpu=neoverse-v1")
    assert _sme_names(target) == set()
    assert "sme" not in target.info().backends
    with pytest.raises(Unsupported, match="backend"):
        pack(target.engine, np.ones((4, 4), np.float16), "sme")


# ---- the vector-length contract ----------------------------------------------------------


@needs_qemu
def test_svl_switch_after_packing_is_a_contract_violation() -> None:
    target = parse_target("qemu:cpu=max:svl=512")  # its own worker: the SVL changes
    try:
        eng = target.engine
        rng = np.random.default_rng(5)
        a = rng.integers(-3, 4, size=(5, 40)).astype(np.float16)
        b = rng.integers(-3, 4, size=(40, 50)).astype(np.float16)
        bias = rng.integers(-3, 4, size=50).astype(np.float16)
        want = (a.astype(np.float64) @ b.astype(np.float64) + bias).astype(np.float16)
        for m in (5, 1):  # MOPA and GEMV
            buf = pack(eng, b, "sme", bias)
            assert eng.set_svl(256) == 256
            c = np.full((m, 50), np.float16(7), np.float16)
            p = RawProblem(a[:m], 40, buf, 0, c, 50, None, b_size=buf.size, b_is_packed=True,
                           b_is_backend_native_packed=True)
            with pytest.raises(ContractViolation, match="vector length") as exc:
                eng.gemm_raw(m, 50, 40, [p])
            assert exc.value.field == "B.vector_bits"
            assert (c == 7).all()  # nothing written
            # packed again at the running SVL, it runs and is right
            buf = pack(eng, b, "sme", bias)
            p = RawProblem(a[:m], 40, buf, 0, c, 50, None, b_size=buf.size, b_is_packed=True,
                           b_is_backend_native_packed=True)
            res = eng.gemm_raw(m, 50, 40, [p])
            assert res.realization.backend == "sme" and res.realization.vector_bits == 256
            assert np.array_equal(c, want[:m])
            assert eng.set_svl(512) == 512
    finally:
        target.close()


# ---- memory over many calls --------------------------------------------------------------


def _vm_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@needs_qemu
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_memory_does_not_grow_over_1000_mixed_calls() -> None:
    """Scratch is retained up to 8 MiB and larger buffers are freed after the
    call; a long K is packed in chunks. Sizes cycle through GEMV, small and
    chunked-K MOPA GEMMs, a convolution and a call whose repacked B exceeds
    8 MiB; after one warm-up cycle the worker's resident memory stays put."""
    target = parse_target("qemu:cpu=max:svl=128")  # its own worker; SVL 128: nr = 8
    try:
        eng = target.engine
        rng = np.random.default_rng(11)
        # K = 4200 takes two LHS chunks of 2048 k pairs; B of the last one, repacked
        # (1100 x 2048 values in blocks of 8 columns), needs 9 MB of scratch
        shapes = [(1, 64, 64), (7, 33, 129), (20, 30, 300), (1, 300, 600), (8, 8, 4200),
                  (3, 17, 5), (1, 1100, 2048)]
        calls = []
        for m, n, k in shapes:
            a = rng.integers(-2, 3, size=(m, k)).astype(np.float16)
            b = rng.integers(-2, 3, size=(k, n)).astype(np.float16)
            c = np.zeros((m, n), np.float16)
            want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
            calls.append((m, n, k, RawProblem(a, k, b, n, c, n), c, want))
        x = rng.integers(-2, 3, size=(1, 9, 9, 16)).astype(np.float16)
        w = rng.integers(-2, 3, size=(3, 3, 16, 24)).astype(np.float16)
        out = np.zeros((1, 9, 9, 24), np.float16)
        desc = ConvDesc(1, 9, 9, 16, 24, 3, 3, pad_top=1, pad_bottom=1, pad_left=1, pad_right=1)

        def call(i: int) -> None:
            if i % 10 == 9:
                assert eng.conv_raw(desc, x, w, None, out).realization.backend == "sme"
                return
            # the > 8 MiB call every 50th, the others in turn
            j = len(shapes) - 1 if i % 50 == 0 else i % (len(shapes) - 1)
            m, n, k, p, _, _ = calls[j]
            assert eng.gemm_raw(m, n, k, [p]).realization.backend == "sme"

        for i in range(60):  # warm-up: every size, including the large one
            call(i)
        pid = eng.proc.pid  # type: ignore[attr-defined]  # the qemu-aarch64 process
        before = _vm_rss_kib(pid)
        for i in range(1000):
            call(i)
        after = _vm_rss_kib(pid)
        for _m, _n, _k, _p, c, want in calls:
            assert np.array_equal(c, want)
        assert after - before < 2048, f"resident memory grew by {after - before} KiB"
    finally:
        target.close()


# ---- threads and bit equality ------------------------------------------------------------

GEMM_CASES = [
    GemmCase("sme_chunked_k", 70, 100, 1100, clamp=True, lda_pad=3, ldc_pad=2),
    GemmCase("sme_few_rows", 5, 300, 64),
    GemmCase("sme_gemv", 1, 333, 77, ldc_pad=1),
    GemmCase("sme_native", 33, 70, 45, b_form="native"),
]
CONV_CASE = ConvCase("sme_conv", 2, 11, 10, 7, 20, 3, 3, stride=(2, 1), pad=(1, 2, 0, 1),
                     dilation=(1, 2))


def _bits(out: list[np.ndarray]) -> list[np.ndarray]:
    return [o.view(np.uint16).copy() for o in out]


@needs_qemu
def test_threads_do_not_change_a_bit(targets: GetTarget) -> None:
    target = targets("qemu:cpu=max:svl=512")
    for r in target.info().realizations:
        if r.backend != "sme":
            continue
        cases = [CONV_CASE] if r.op == "conv2d" else \
            [c for c in GEMM_CASES if not r.max_m or c.m <= r.max_m]
        for case in cases:
            results = []
            for threads in (1, 4):
                sel = Selector(threads=threads)
                if isinstance(case, GemmCase):
                    o = target.run_gemm(case, inputs.gemm_inputs(case, "normal"), r.name, sel)
                else:
                    o = target.run_conv(case, inputs.conv_inputs(case, "normal"), r.name, sel)
                assert o.error is None and not o.guard_detail, (r.name, case.name, o.error)
                assert o.ran is not None and o.ran.name == r.name and o.ran.threads == threads
                results.append(_bits(o.outputs))
            for x, y in zip(*results, strict=True):
                assert np.array_equal(x, y), f"{r.name} {case.name}: threads=4 differs"


@needs_qemu
@pytest.mark.parametrize("svl", (128, 2048))
def test_exact_inputs_match_scalar_bit_for_bit(targets: GetTarget, svl: int) -> None:
    """Exact-by-design inputs: every SME realization equals the scalar one
    (at SVL 2048 a K of 1100 is also packed in chunks)."""
    target = targets(f"qemu:cpu=max:svl={svl}")
    names = _sme_names(target)
    for case in GEMM_CASES:
        inp = inputs.gemm_inputs(case, "exact")
        ref = target.run_gemm(case, inp, "gemm_scalar_f32acc")
        assert ref.error is None
        for name in sorted(names - {"conv2d_igemm_sme2_mopa_f32acc",
                                    "conv2d_igemm_sme_mopa_f32acc"}):
            if name.startswith("gemv") and case.m > 1:
                continue
            o = target.run_gemm(case, inp, name)
            assert o.error is None and not o.guard_detail, (name, case.name, o.error)
            for x, y in zip(_bits(o.outputs), _bits(ref.outputs), strict=True):
                assert np.array_equal(x, y), f"{name} {case.name} differs from scalar"
    cinp = inputs.conv_inputs(CONV_CASE, "exact")
    ref = target.run_conv(CONV_CASE, cinp, "conv2d_direct_scalar_f32acc")
    for name in ("conv2d_igemm_sme2_mopa_f32acc", "conv2d_igemm_sme_mopa_f32acc"):
        o = target.run_conv(CONV_CASE, cinp, name)
        assert o.error is None and not o.guard_detail
        assert np.array_equal(_bits(o.outputs)[0], _bits(ref.outputs)[0]), name


@needs_qemu
@pytest.mark.parametrize("svl", (128, 512))
def test_sme1_gemv_is_the_fp32_chain_from_the_bias(targets: GetTarget, svl: int) -> None:
    """The SME GEMV starts its FP32 chain from the bias (as KleidiAI's SME
    GEMV does): one FP32 rounding per product in k order after it. It equals
    the simulated fp32_chain_bias_first on real-valued inputs (specials
    included; +0/-0 and NaN payloads aside), with K through the main loop
    (16 k per step), the leftover pairs and an odd last k; on the witness
    inputs it differs from a bias-last chain, and is fingerprinted as its
    model."""
    target = targets(f"qemu:cpu=max:svl={svl}")
    ran = next(r for r in target.info().realizations if r.name == "gemv_sme_f32acc")
    assert ran.error_model == "gemm_bias_first"
    for kind in ("uniform", "normal", "specials"):
        for k in (301, 32, 7, 1):
            case = GemmCase(f"sme_gemv_order_{kind}_{k}", 1, 129, k, clamp=kind == "normal")
            inp = inputs.gemm_inputs(case, kind)
            o = target.run_gemm(case, inp, "gemv_sme_f32acc")
            assert o.error is None and not o.guard_detail, (case.name, o.error)
            want = fp.simulate_gemm(inp.a[0], inp.b[0], inp.bias[0], inp.clamp,
                                    "fp32_chain_bias_first")
            assert fp.same(o.outputs[0], want).all(), case.name
    case = GemmCase("sme_gemv_bias_order", 1, 257, 301, clamp=True)
    inp = inputs.bias_order_gemm_inputs(case)
    o = target.run_gemm(case, inp, "gemv_sme_f32acc")
    assert o.error is None
    assert (o.outputs[0][0, ::4] == 1.0).all()  # the witnesses: 1 + 2^-11 rounded to even
    f = fp.gemm(inp.a, inp.b, inp.bias, inp.clamp, o.outputs)
    assert (f.model, f.match) == ("fp32_chain_bias_first", 1.0), f.scores



@needs_qemu
@pytest.mark.parametrize("svl", (128, 2048))
def test_sme2_and_sme1_mopa_agree_bit_for_bit(targets: GetTarget, svl: int) -> None:
    """The SME1 MOPA kernel computes what the SME2 one does, step for step
    (the same FMOPA chain from the bias; only loads and stores differ): equal
    bits on real-valued inputs, specials included, over tails in M, N and K,
    an odd K, K in several LHS chunks (SVL 2048), every B form and a clamp,
    and so do their indirect convolutions."""
    target = targets(f"qemu:cpu=max:svl={svl}")
    cases = [GemmCase("sme_twins_tail", 37, 53, 45, clamp=True, lda_pad=1, ldc_pad=2),
             GemmCase("sme_twins_chunked", 70, 130, 1100, b_form="native"),
             GemmCase("sme_twins_packed", 9, 17, 64, b_form="packed", bias=False)]
    for case in cases:
        for kind in ("uniform", "normal", "specials"):
            inp = inputs.gemm_inputs(case, kind)
            x = target.run_gemm(case, inp, "gemm_sme2_mopa_f32acc")
            y = target.run_gemm(case, inp, "gemm_sme_mopa_f32acc")
            assert x.error is None and y.error is None, (case.name, x.error, y.error)
            assert np.array_equal(_bits(x.outputs)[0], _bits(y.outputs)[0]), (case.name, kind)
    cinp = inputs.conv_inputs(CONV_CASE, "normal")
    x = target.run_conv(CONV_CASE, cinp, "conv2d_igemm_sme2_mopa_f32acc")
    y = target.run_conv(CONV_CASE, cinp, "conv2d_igemm_sme_mopa_f32acc")
    assert np.array_equal(_bits(x.outputs)[0], _bits(y.outputs)[0])
