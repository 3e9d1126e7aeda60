"""Plugin code of the SVE classes on the emulated targets: `exsve`, the
portable micro-kernel example declared as SVE2.1 code (KB_ISA_SVE2P1,
examples/plugins/ukernel_portable/exukref.c built with -DEX_SVE2P1).

It loads where the CPU has SVE2.1 (qemu:sme=off, max) and nowhere else
(neoverse-n2 has SVE2 only), a cap on SME's branch hides it, and the packed
B kbench makes with its packer records the SVE vector length: after
`set_sve_vl` changes the length inside the worker, that B is refused naming
B.vector_bits, and one packed again is taken. Skipped without QEMU unless
KBENCH_REQUIRE_QEMU is set (as in CI)."""

from __future__ import annotations

import numpy as np
import pytest
from plugin_builds import ARCH_PATTERN, build
from qemu_gate import needs_qemu

from kbench.errors import ContractViolation, Unsupported
from kbench.native.api import RawProblem, Selector
from kbench.native.loader import load
from kbench.targets.spec import parse_target

pytestmark = needs_qemu
EXSVE = f"{ARCH_PATTERN}/libexsve.so"
GEMM = "exsve.gemm_4x8"


def _target(spec: str):
    build("aarch64")
    return parse_target(spec, [EXSVE])


def _expected(a: np.ndarray, b: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """exukref's arithmetic: each output starts from its bias in FP32 and adds
    the products in increasing k, one FP32 rounding each, then rounds to FP16."""
    acc = np.repeat(bias.astype(np.float32)[None, :], a.shape[0], axis=0)
    for k in range(a.shape[1]):
        acc = (acc + np.outer(a[:, k].astype(np.float32), b[k].astype(np.float32))
               ).astype(np.float32)
    return acc.astype(np.float16)


def _vector_bits(packed: np.ndarray) -> int:
    """The vector length kbench's header of a plugin's packed B records."""
    nat = load()
    header = nat.ffi.cast("kb_packed_header *", nat.ffi.from_buffer(packed))
    assert header.header_size == nat.ffi.sizeof("kb_packed_header")
    return int(header.vector_bits)


def _call(t, a, packed, n):
    c = np.full((a.shape[0], n), np.float16(7), np.float16)
    p = RawProblem(a=a, lda=a.shape[1], b=packed, ldb=0, c=c, ldc=n)
    p.b_size, p.b_is_packed, p.b_is_backend_native_packed = packed.size, True, True
    res = t.engine.gemm_raw(a.shape[0], n, a.shape[1], [p], Selector(force=GEMM))
    return res, c


def test_sve21_code_runs_and_its_packed_b_records_the_sve_vector_length():
    rng = np.random.default_rng(64)
    m, n, k = 9, 13, 11
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16)
    bias = rng.integers(-4, 5, n).astype(np.float16)
    t = _target("qemu:sme=off:vl=256")
    try:
        info = t.info()
        assert info.extra["plugin_errors"] == []
        real = {r.name: r for r in info.realizations}[GEMM]
        assert real.isa == "sve2p1" and real.vector_bits == 256
        packed = t.pack_plugin(GEMM, b, bias)
        assert _vector_bits(packed) == 256
        res, c = _call(t, a, packed, n)
        assert res.realization.name == GEMM and np.array_equal(c, _expected(a, b, bias))

        assert t.engine.set_sve_vl(512) == 512
        with pytest.raises(ContractViolation) as exc:
            _call(t, a, packed, n)
        assert exc.value.field == "B.vector_bits"
        assert "packed for a 256-bit vector length, the CPU runs at 512 bits" in str(exc.value)
        again = t.pack_plugin(GEMM, b, bias)
        assert _vector_bits(again) == 512
        _, c = _call(t, a, again, n)
        assert np.array_equal(c, _expected(a, b, bias))
        # the SME streaming vector length is another register: there is none here
        with pytest.raises(Unsupported, match="no SME streaming vector length"):
            t.engine.set_svl(512)
    finally:
        t.close()


def test_on_a_cpu_with_both_branches_sve_code_runs_at_the_sve_length_not_the_svl():
    t = _target("qemu:cpu=max:svl=128:vl=1024")
    try:
        info = t.info()
        real = {r.name: r for r in info.realizations}[GEMM]
        assert real.vector_bits == 1024 and info.sme_vector_bits == 128
        b = np.ones((3, 5), np.float16)
        assert _vector_bits(t.pack_plugin(GEMM, b, None)) == 1024
    finally:
        t.close()


def test_a_cpu_without_sve21_refuses_sve21_code_naming_it():
    t = _target("qemu:cpu=neoverse-n2")
    try:
        info = t.info()
        (err,) = info.extra["plugin_errors"]
        assert ("libexsve.so (exsve 1.0.0): every realization needs an ISA this CPU lacks "
                "(e.g. sve2p1 (FEAT_SVE2p1, no SME); the CPU is aarch64, highest sve2 "
                "(FEAT_SVE2, no SME))") in err["message"]
        assert not any(r.is_plugin for r in info.realizations)
    finally:
        t.close()


@pytest.mark.parametrize("cap, offered", [("sme2", False), ("sme", False), ("fhm", False),
                                          ("sve2", False), ("sve2p1", True)])
def test_a_cap_hides_sve21_code_unless_it_is_on_its_branch(cap, offered):
    t = _target(f"qemu:cpu=max:isa={cap}")
    try:
        info = t.info()
        assert info.extra["plugin_errors"] == []  # the CPU has SVE2.1: the plugin loads
        names = {r.name for r in info.realizations}
        assert (GEMM in names) is offered
        assert any(r.isa in ("sme", "sme2") for r in info.realizations) is (cap.startswith("sme"))
    finally:
        t.close()
