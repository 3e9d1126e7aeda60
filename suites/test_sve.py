"""The SVE2.1 backend under QEMU: its packed layout (x16p4vlx2b, KleidiAI's
x16p16vsx2b) byte for byte against the independent packer of
kbench.native.layouts at every SVE vector length, its GEMM and GEMV bit for
bit against an independent model of their arithmetic (FP32 from the bias,
one FDOT per k pair: the pair's sum rounded to FP32, then its addition;
FP16; FCLAMP against the bounds rounded to FP16) over shapes that reach
every row count of a band, every number of vectors of the last block and
every K path, in every form of B, dispatch (SVE2.1 before NEON on a CPU
without SME, after SME on one with it), the vector-length contract of its
packed B, and thread-count independence.

Skipped when QEMU is not installed, unless KBENCH_REQUIRE_QEMU is set."""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from qemu_gate import needs_qemu
from sve_model import fdot_model

from kbench.errors import ContractViolation, Unsupported
from kbench.native.api import RawProblem, Selector
from kbench.native.calls import pack
from kbench.native.layouts import Layout
from kbench.targets.spec import Target, parse_target

pytestmark = needs_qemu

VLS = (128, 256, 512, 1024, 2048)
GEMM = "gemm_sve2p1_dot_f32acc"
GEMV = "gemv_sve2p1_dot_f32acc"
HEADER = struct.Struct("<IHHHHIQQIIQQQ")  # kb_packed_header, 64 bytes
LAYOUT_SVE = 5
BACKEND_SVE = 3

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


def _problem(eng, a, b, bias, form: str, lo: float, hi: float, c: np.ndarray) -> RawProblem:
    if form == "plain":
        return RawProblem(a, a.strides[0] // 2, b, b.strides[0] // 2, c, c.strides[0] // 2, bias,
                          clamp_min=lo, clamp_max=hi)
    native = form == "native"
    buf = pack(eng, b, "sve" if native else None, bias if native else None)
    return RawProblem(a, a.strides[0] // 2, buf, 0, c, c.strides[0] // 2,
                      None if native else bias, clamp_min=lo, clamp_max=hi, b_size=buf.size,
                      b_is_packed=True, b_is_backend_native_packed=native)


def _run(eng, real: str, a, b, bias, form: str, lo=-np.inf, hi=np.inf, threads: int = 1,
         ldc_pad: int = 0) -> tuple[np.ndarray, str]:
    m, n = a.shape[0], b.shape[1]
    wide = np.full((m, n + ldc_pad), np.float16(7), np.float16)
    c = wide[:, :n]
    res = eng.gemm_raw(m, n, a.shape[1], [_problem(eng, a, b, bias, form, lo, hi, c)],
                       Selector(force=real, threads=threads))
    assert (wide[:, n:] == 7).all()  # nothing past N
    return c, res.realization.name


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return bool(np.array_equal(got.view(np.uint16), want.view(np.uint16)))


# ---- the packed layout -----------------------------------------------------------------


@pytest.mark.parametrize("vl", VLS)
def test_native_payload_matches_the_independent_packer(targets: GetTarget, vl: int) -> None:
    """kb_pack_b_native for the SVE backend writes kbench's header (layout 5,
    backend sve, the SVE vector length, block_n = 4 VL32) and a payload equal
    to kbench.native.layouts' x16p4vlx2b at that length, for arbitrary FP16
    bit patterns (NaN, infinities, subnormals), with and without a bias,
    ldb > N, odd K, N below, at and past a block."""
    t = targets(f"qemu:sme=off:vl={vl}")
    assert t.info().sve_vector_bits == vl
    layout = Layout.parse("x16p4vlx2b", True, vl)
    nr = layout.block
    assert nr == vl // 8
    rng = np.random.default_rng(vl)
    for i, (k, n) in enumerate([(1, 1), (2, 3), (7, nr - 1), (8, nr), (17, nr + 1),
                                (33, 2 * nr + 3), (64, 37), (5, 4 * nr + 1)]):
        wide = rng.integers(0, 1 << 16, size=(k, n + 3 * (i % 2)), dtype=np.uint16)
        b = wide.view(np.float16)[:, :n]
        bias = rng.integers(0, 1 << 16, size=n, dtype=np.uint16).view(np.float16) \
            if i % 3 != 1 else None
        buf = pack(t.engine, b, "sve", bias)
        (_m, _v, hsize, lay, backend, vbits, hn, hk, flags, block_n, psize) = \
            HEADER.unpack(bytes(buf[:64]))[:11]
        assert (hsize, lay, backend, vbits, hn, hk, flags, block_n) == \
            (64, LAYOUT_SVE, BACKEND_SVE, vl, n, k, 1, nr), (k, n)
        want = layout.pack_rhs(np.ascontiguousarray(b), bias)
        assert psize == want.size == buf.size - 64, (k, n)
        payload = buf[64:]
        if not np.array_equal(payload, want):
            bad = int(np.flatnonzero(payload != want)[0])
            pytest.fail(f"VL {vl}, K={k} N={n}: payload byte {bad} differs: "
                        f"{layout.where(bad, n, k)}")


# ---- bit for bit against the model ------------------------------------------------------

# M: every band height (bands of five, then 1-4 rows); N: the last block with 1, 2, 3 and
# 4 vectors of columns (partial and whole), several blocks; K: below one step of four k
# pairs, whole steps, the 32-pair main loop, odd K and every tail of 1-7 values
def _shapes(nr: int) -> list[tuple[int, int, int]]:
    v = nr // 4
    return [(1, 1, 1), (2, v, 2), (3, v + 1, 3), (4, 2 * v, 7), (5, 2 * v + 1, 8),
            (6, 3 * v, 9), (7, 3 * v + 1, 15), (8, nr - 1, 16), (9, nr, 17),
            (10, nr + v - 1, 63), (11, 2 * nr + 2 * v + 1, 64), (12, 3 * nr - 1, 65),
            (13, 2 * nr + 3 * v + 3, 70), (14, nr + 1, 131), (16, 4 * nr + 5, 45)]


@pytest.mark.parametrize("spec", ["qemu:sme=off:vl=128", "qemu:sme=off:vl=256",
                                  "qemu:sme=off:vl=2048", "qemu:cpu=max:svl=128"])
def test_gemm_and_gemv_are_bit_identical_to_the_model(targets: GetTarget, spec: str) -> None:
    """Random normal inputs, a bias, clamps that bite; every shape in every B
    form; the GEMV on the first row of each. On max (SME too) the SVE code
    runs at the SVE vector length, 512 bits by default."""
    t = targets(spec)
    vl = t.info().sve_vector_bits
    names = {r.name: r for r in t.info().realizations}
    assert names[GEMM].vector_bits == vl and names[GEMM].backend == "sve"
    assert names[GEMV].max_m == 1 and names[GEMM].nan_clamp == "to_min"
    rng = np.random.default_rng(vl + len(spec))
    forms = ("plain", "native", "packed")
    for i, (m, n, k) in enumerate(_shapes(vl // 8)):
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, n)).astype(np.float16)
        bias = rng.standard_normal(n).astype(np.float16) if i % 4 else None
        lo, hi = ((-1.5, 2.0), (-np.inf, np.inf), (0.0, 0.5))[i % 3]
        form = forms[i % 3]
        want = fdot_model(a, b, bias, lo, hi)
        got, ran = _run(t.engine, GEMM, a, b, bias, form, lo, hi, ldc_pad=i % 2)
        assert ran == GEMM and _same(got, want), (spec, m, n, k, form)
        got, ran = _run(t.engine, GEMV, a[:1], b, bias, forms[(i + 1) % 3], lo, hi)
        assert ran == GEMV and _same(got, want[:1]), (spec, 1, n, k)


def test_the_sum_of_a_k_pair_is_rounded_once_then_added(targets: GetTarget) -> None:
    """A four-term case tells the FDOT apart: with the bias 1, row 0 adds the
    products 2^-24 and 2^-48, row 1 2^-24 and 2^-24, then -1 to both. A chain
    rounding each product gives 0 and 0, one that rounds each pair's sum and
    then its addition (FDOT) 0 and 2^-23, one that adds the pair to the
    accumulator in one rounding 2^-23 and 2^-23."""
    t = targets("qemu:sme=off:vl=256")
    a = np.array([[2**-12, 2**-24, -1, 0], [2**-12, 1, -1, 0]], np.float16)
    b = np.array([[2**-12], [2**-24], [1], [0]], np.float16)
    for real in (GEMM, GEMV):
        rows = a if real == GEMM else a[1:]
        got, _ = _run(t.engine, real, rows, b, np.ones(1, np.float16), "plain")
        assert got.ravel().tolist() == ([0.0, 2.0**-23] if real == GEMM else [2.0**-23])


def test_nan_becomes_clamp_min_and_inputs_past_k_stay_out(targets: GetTarget) -> None:
    """FCLAMP: a NaN result (NaN in A, inf - inf in the sum) is the lower
    bound, -inf without a clamp; an odd K's missing value is +0 (A is read
    under a predicate up to K: a NaN right after each row of A changes
    nothing)."""
    t = targets("qemu:sme=off:vl=128")
    for m, n, k in ((7, 9, 13), (1, 40, 33)):
        wide = np.full((m, k + 1), np.float16(np.nan), np.float16)
        a = wide[:, :k]
        a[...] = 1
        b = np.ones((k, n), np.float16)
        a[0, 0] = np.nan
        b[1, 1] = np.inf
        b[2, 1] = -np.inf
        for real in (GEMM, GEMV):
            rows = a if real == GEMM else a[:1]
            for lo, hi in ((-2.0, 3.0), (-np.inf, np.inf)):
                got, _ = _run(t.engine, real, rows, b, None, "plain", lo, hi)
                assert (got[0] == np.float16(lo)).all()  # row 0: NaN in A
                if len(rows) > 1:
                    assert got[1, 1] == np.float16(lo)  # inf - inf
                    assert got[1, 0] == min(k, hi)
                assert _same(got, fdot_model(rows, b, None, lo, hi))


# ---- dispatch -----------------------------------------------------------------------------


def test_dispatch_prefers_sve21_over_neon_without_sme_and_sme_with_it(targets: GetTarget) -> None:
    a = np.ones((9, 20), np.float16)
    b = np.ones((20, 30), np.float16)
    for spec, m, want in (("qemu:sme=off:vl=256", 1, GEMV), ("qemu:sme=off:vl=256", 9, GEMM),
                          ("qemu:cpu=max:svl=256", 1, "gemv_sme2_dot_f32acc"),
                          ("qemu:cpu=max:svl=256", 9, "gemm_sme2_mopa_f32acc")):
        t = targets(spec)
        c = np.zeros((m, 30), np.float16)
        res = t.engine.gemm_raw(m, 30, 20, [RawProblem(a[:m], 20, b, 30, c, 30)])
        assert res.realization.name == want and (c == 20).all()
        if "sve" in want:
            assert res.realization.backend == "sve" and res.realization.vector_bits == 256
    # disabled, or capped below SVE2.1: NEON takes the call, and says so
    t = targets("qemu:sme=off:vl=256")
    c = np.zeros((9, 30), np.float16)
    for sel in (Selector(disabled=frozenset({"sve"})), Selector(isa_cap="sve2")):
        res = t.engine.gemm_raw(9, 30, 20, [RawProblem(a, 20, b, 30, c, 30)], sel)
        assert res.realization.backend == "neon"
    with pytest.raises(Unsupported, match="backend"):
        pack(targets("qemu:cpu=neoverse-n1").engine, b, "sve")


# ---- the vector-length contract ------------------------------------------------------------


def test_a_b_packed_at_another_sve_vector_length_is_refused() -> None:
    t = parse_target("qemu:sme=off:vl=256")  # its own worker: the length changes
    try:
        eng = t.engine
        rng = np.random.default_rng(3)
        a = rng.standard_normal((6, 40)).astype(np.float16)
        b = rng.standard_normal((40, 50)).astype(np.float16)
        bias = rng.standard_normal(50).astype(np.float16)
        for m, real in ((6, GEMM), (1, GEMV)):
            buf = pack(eng, b, "sve", bias)
            assert eng.set_sve_vl(512) == 512
            c = np.full((m, 50), np.float16(7), np.float16)
            p = RawProblem(a[:m], 40, buf, 0, c, 50, None, b_size=buf.size, b_is_packed=True,
                           b_is_backend_native_packed=True)
            with pytest.raises(ContractViolation, match="packed for a 256-bit") as exc:
                eng.gemm_raw(m, 50, 40, [p], Selector(force=real))
            assert exc.value.field == "B.vector_bits" and (c == 7).all()
            got, _ = _run(eng, real, a[:m], b, bias, "native")  # packed again: right
            assert _same(got, fdot_model(a[:m], b, bias))
            assert eng.set_sve_vl(256) == 256
    finally:
        t.close()


# ---- threads -----------------------------------------------------------------------------


def test_threads_do_not_change_a_bit(targets: GetTarget) -> None:
    """The GEMM's rows split in bands of whole five-row steps, the GEMV's
    columns in whole blocks: 1 to 7 threads give the same bits."""
    t = targets("qemu:sme=off:vl=128")
    rng = np.random.default_rng(9)
    a = rng.standard_normal((37, 70)).astype(np.float16)
    b = rng.standard_normal((70, 301)).astype(np.float16)
    bias = rng.standard_normal(301).astype(np.float16)
    for real, rows in ((GEMM, a), (GEMV, a[:1])):
        want = fdot_model(rows, b, bias, -3.0, 3.0)
        for threads in (1, 2, 3, 7):
            got, _ = _run(t.engine, real, rows, b, bias, "native", -3.0, 3.0, threads)
            assert _same(got, want), (real, threads)


# ---- the public micro-kernel interface, through the plugin ABI ----------------------------


def test_the_micro_kernel_interface_through_the_plugin_abi_gives_the_same_bits() -> None:
    """examples/plugins/sve_ukernel (exsveuk): the GEMM and GEMV micro-kernels and the
    packer of this backend handed to kbench through their public interface (the
    kernels' run_matmul, the packer's run, their queries) and driven by kbench's
    generic micro-kernel loop give our realizations' bits, with their packer's B."""
    from plugin_builds import ARCH_PATTERN, build
    build("aarch64")
    t = parse_target("qemu:sme=off:vl=256", [f"{ARCH_PATTERN}/libexsveuk.so"])
    try:
        rng = np.random.default_rng(21)
        for m, n, k in ((17, 75, 45), (6, 130, 111), (1, 300, 15)):
            a = rng.standard_normal((m, k)).astype(np.float16)
            b = rng.standard_normal((k, n)).astype(np.float16)
            bias = rng.standard_normal(n).astype(np.float16)
            for ours, theirs in ((GEMM, "exsveuk.gemm_sve2p1_dot"),
                                 (GEMV, "exsveuk.gemv_sve2p1_dot")):
                rows = a if ours == GEMM else a[:1]
                want, _ = _run(t.engine, ours, rows, b, bias, "native", -2.0, 2.0)
                c = np.zeros((len(rows), n), np.float16)
                packed = t.pack_plugin(theirs, b, bias)
                p = RawProblem(rows, k, packed, 0, c, n, None, clamp_min=-2.0, clamp_max=2.0,
                               b_size=packed.size, b_is_packed=True,
                               b_is_backend_native_packed=True)
                res = t.engine.gemm_raw(len(rows), n, k, [p], Selector(force=theirs, plugins=True))
                assert res.realization.name == theirs and _same(c, want), (theirs, m, n, k)
                assert _same(want, fdot_model(rows, b, bias, -2.0, 2.0))
    finally:
        t.close()
