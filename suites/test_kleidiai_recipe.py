"""The KleidiAI recipe (examples/plugins/kleidiai): an adapter and a Makefile that
build Arm KleidiAI's FP16 kernels into a plugin from a user's checkout.

KleidiAI's code is not in this repository and CI has no checkout, so here the
adapter is compiled against its own declarations only (`make check`, for
aarch64, warnings as errors), the Makefile's refusals are checked, and its
lists are checked against the adapter's table. The run against a real
checkout is a dated record (docs/records/kleidiai_recipe.toml, `python
docs/gen/kbdocs.py record kleidiai_recipe` with KLEIDIAI_SRC set)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "examples" / "plugins" / "kleidiai"


def _make(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-s", "-C", str(RECIPE), *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env})


def _have_cross_compiler() -> bool:
    if os.uname().machine == "aarch64" or shutil.which("clang-19"):
        return True
    if os.environ.get("KBENCH_REQUIRE_QEMU"):  # CI installs the toolchain
        raise AssertionError("clang-19 is not installed (bash ci/install-toolchain.sh)")
    return False


def _table_names() -> list[str]:
    """The realization names of the adapter's table, in order."""
    src = (RECIPE / "kbx_kleidiai.c").read_text()
    table = src[src.index("realizations[] = {"):src.index("static const kb_plugin table")]
    return re.findall(r'(?:SME2_GEMM\(|\.name = )"([a-z0-9_]+)"', table)


def _listed() -> dict[str, list[str]]:
    res = _make("list")
    assert res.returncode == 0, res.stderr
    return {line.split()[0]: line.split()[1:] for line in res.stdout.splitlines()}


@pytest.mark.skipif(not _have_cross_compiler(), reason="no aarch64 compiler (clang-19)")
def test_the_adapter_compiles_against_its_declarations(tmp_path: Path) -> None:
    res = _make("check", f"OUT={tmp_path}")
    assert res.returncode == 0, res.stdout + res.stderr
    obj = tmp_path / "obj" / "kbx_kleidiai_check.o"
    assert obj.stat().st_size > 0
    # an aarch64 object that refers to KleidiAI's functions (left for the link with a checkout)
    assert obj.read_bytes()[18] == 183  # e_machine EM_AARCH64


def test_a_build_without_a_checkout_says_what_is_missing(tmp_path: Path) -> None:
    res = _make(f"OUT={tmp_path}", KLEIDIAI_SRC="")
    assert res.returncode != 0 and "KLEIDIAI_SRC is not set" in res.stderr
    res = _make(f"OUT={tmp_path}", KLEIDIAI_SRC=str(tmp_path))
    assert res.returncode != 0
    assert f"{tmp_path} is not a KleidiAI checkout" in res.stderr
    assert not (tmp_path / "libkbkleidiai.so").exists()


def test_every_realization_of_the_table_has_its_files_listed() -> None:
    names = _table_names()
    listed = _listed()
    assert names == [n for n in listed if not n.startswith("flags-")]
    for name, files in listed.items():
        if name.startswith("flags-"):
            continue
        assert files and len(set(files)) == len(files), name
        sme, sve = "_sme" in name, "_sve" in name
        assert sme + sve + ("_neon" in name) == 1, name
        # every SME kernel needs KleidiAI's SME helpers, every SVE one its SVE helper
        # (kai_get_sve_vector_length_u8); the NEON one none of them
        assert ("kai_common_sme_asm.S" in files) == sme, name
        assert ("kai_common_sve_asm.S" in files) == sve, name
        # a C file with a kernel's queries, and (SME, SVE) its assembly
        assert any(f.endswith(".c") for f in files), name
        assert any(f.endswith("_asm.S") for f in files) == (sme or sve), name
    assert listed["flags-sme"] == ["-march=armv8.2-a+sve+sve2"]
    assert listed["flags-sve"] == ["-march=armv8.2-a+sve+sve2"]
    # the SVE2.1 kernel with its SVE packer
    assert [f.rsplit("/", 1)[-1] for f in listed["gemm_sve2p1_dot"]] == [
        "kai_common_sve_asm.S", "kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot.c",
        "kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot_asm.S",
        "kai_rhs_pack_kxn_x16p16vsx2bx16_x16_x16_sve.c",
        "kai_rhs_pack_kxn_x16p16vsx2bx16_x16_x16_sve_asm.S"]
    # the generic 8vsx8vs kernel runs six variants, each in its own assembly file
    variants = [f for f in listed["gemm_sme2_mopa_8vsx8vs"] if "_sme2_mopa_asm.S" in f]
    assert sorted(re.search(r"_(\d+vsx\d+vs)_", f).group(1) for f in variants) == sorted(
        ["8vsx8vs", "16vsx4vs", "8vsx4vs", "4vsx16vs", "4vsx8vs", "4vsx4vs"])


def test_the_table_names_each_kernel_as_kleidiai_spells_it() -> None:
    src = (RECIPE / "kbx_kleidiai.c").read_text()
    table = src[src.index("realizations[] = {"):src.index("static const kb_plugin table")]
    kernels = re.findall(r'"(kai_i?matmul_clamp_f16_[a-z0-9_]+)"', table)
    assert len(kernels) == len(_table_names())
    listed = _listed()
    for name, kernel in zip(_table_names(), kernels, strict=True):
        # the kernel's own C file is among the files that realization compiles
        assert any(f.endswith(f"/{kernel}.c") for f in listed[name]), (name, kernel)


def test_the_record_of_the_last_run_against_a_checkout_passed_everything() -> None:
    rec = tomllib.loads((REPO / "docs" / "records" / "kleidiai_recipe.toml").read_text())
    assert "exit status 0" in rec["summary"]
    rows = rec["table"]["rows"]
    assert sorted(r[0].strip("`").removeprefix("kleidiai.") for r in rows) == sorted(
        _table_names())
    columns = rec["table"]["columns"]
    for row in rows:
        sme = "_sme" in row[0]
        for column, cell in zip(columns[2:], row[2:], strict=True):
            if sme and "SVE2.1" in column:  # a target without SME: its SME code is not offered
                assert cell == "–", row
                continue
            passed, total = (int(x.replace(",", "")) for x in cell.split(" of "))
            assert passed == total > 0, row
    # the SVE2.1 kernel passed at three SVE vector lengths, and the SME ones at two SVLs
    assert sum("SVE2.1" in c for c in columns) == 3 and sum("SVL" in c for c in columns) == 2
    assert re.search(r"KleidiAI checkout v\d+\.\d+\.\d+\S* \([0-9a-f]{40}\)",
                     rec["record"]["note"])


BUILT = RECIPE / "build" / "aarch64" / "libkbkleidiai.so"
SIDE_BY_SIDE = [(37, 53, 45), (65, 7, 31), (4, 4096, 64), (129, 255, 63), (7, 9, 13),
                (17, 31, 9), (100, 100, 100), (33, 1000, 32), (200, 33, 30), (1, 77, 19)]


@pytest.mark.skipif(not BUILT.exists(), reason="the recipe's plugin is not built (make -C "
                    "examples/plugins/kleidiai KLEIDIAI_SRC=...)")
@pytest.mark.parametrize("svl", [128, 512])
def test_our_sme2_mopa_is_bit_identical_to_kleidiais_kernel_of_the_same_layout(svl: int) -> None:
    """Side by side with a built recipe plugin: our SME2 MOPA GEMM and KleidiAI's
    2vlx2vl SME2 kernel (the packed layouts are the same) give the same bits on
    ragged and small-M shapes, bias included (CI has no checkout: it skips)."""
    import numpy as np

    from kbench.native import api
    from kbench.targets.spec import parse_target
    t = parse_target(f"qemu:svl={svl}", [str(BUILT)])
    rng = np.random.default_rng(svl)
    try:
        for m, n, k in SIDE_BY_SIDE:
            a = rng.standard_normal((m, k)).astype(np.float16)
            b = rng.standard_normal((k, n)).astype(np.float16)
            bias = rng.standard_normal(n).astype(np.float16)
            outs = []
            for real in ("gemm_sme2_mopa_f32acc", "kleidiai.gemm_sme2_mopa"):
                c = np.zeros((m, n), np.float16)
                t.engine.gemm_raw(m, n, k, [api.RawProblem(a=a, lda=k, b=b, ldb=n, c=c, ldc=n,
                                                           bias=bias)],
                                  api.Selector(force=real))
                outs.append(c.view(np.uint16).copy())
            assert np.count_nonzero(outs[0] != outs[1]) == 0, (m, n, k)
            assert np.count_nonzero(outs[0]) > 0
    finally:
        t.close()


@pytest.mark.skipif(not BUILT.exists(), reason="the recipe's plugin is not built (make -C "
                    "examples/plugins/kleidiai KLEIDIAI_SRC=...)")
@pytest.mark.parametrize("vl", [128, 256, 512, 2048])
def test_our_sve21_gemm_and_gemv_are_bit_identical_to_kleidiais_sve21_kernel(vl: int) -> None:
    """Side by side with a built recipe plugin on the SVE2.1-only target: our
    gemm_sve2p1_dot_f32acc (and, on one row, gemv_sve2p1_dot_f32acc) and KleidiAI's
    SVE2.1 kernel (the packed layout is the same, x16p4vlx2b at the SVE vector length)
    give the same bits on ragged and small-M shapes, with a bias, with and without a
    clamp, and on inputs that hold NaN and infinities (FCLAMP makes the same bound of
    both's NaN). CI has no checkout: it skips."""
    import numpy as np

    from kbench.native import api
    from kbench.targets.spec import parse_target
    t = parse_target(f"qemu:sme=off:vl={vl}", [str(BUILT)])
    rng = np.random.default_rng(vl)
    try:
        for i, (m, n, k) in enumerate(SIDE_BY_SIDE):
            a = rng.standard_normal((m, k)).astype(np.float16)
            b = rng.standard_normal((k, n)).astype(np.float16)
            bias = rng.standard_normal(n).astype(np.float16)
            if i % 3 == 2:  # NaN and infinities in the sums
                a[0, 0] = np.nan
                b[k - 1, n - 1] = np.inf
                b[0, n // 2] = -np.inf
            lo, hi = ((-np.inf, np.inf), (-1.0, 1.5))[i % 2]
            for ours, rows in (("gemm_sve2p1_dot_f32acc", m), ("gemv_sve2p1_dot_f32acc", 1)):
                outs = []
                for real in (ours, "kleidiai.gemm_sve2p1_dot"):
                    c = np.zeros((rows, n), np.float16)
                    res = t.engine.gemm_raw(rows, n, k, [api.RawProblem(
                        a=a[:rows], lda=k, b=b, ldb=n, c=c, ldc=n, bias=bias, clamp_min=lo,
                        clamp_max=hi)], api.Selector(force=real, plugins=True))
                    assert res.realization.name == real and res.realization.vector_bits == vl
                    outs.append(c.view(np.uint16).copy())
                assert np.count_nonzero(outs[0] != outs[1]) == 0, (ours, vl, m, n, k)
                assert np.count_nonzero(outs[0]) > 0
    finally:
        t.close()


@pytest.mark.skipif(not BUILT.exists(), reason="the recipe's plugin is not built (make -C "
                    "examples/plugins/kleidiai KLEIDIAI_SRC=...)")
def test_the_sve21_kernel_sums_each_k_pair_once_then_adds_it() -> None:
    """KleidiAI's SVE2.1 kernel (FDOT, 2-way FP16 into FP32) with a built recipe plugin:
    a 4-term case tells three models apart. With the bias 1, row 0 adds the products
    2^-24 and 2^-48, row 1 the products 2^-24 and 2^-24, then -1 to both: a chain that
    rounds each product gives 0 and 0, one that rounds each pair's sum and then its
    addition 0 and 2^-23, one that adds the pair to the accumulator in one rounding
    2^-23 and 2^-23. The kernel is the second (the Arm ARM's FPDot, then the
    accumulation), which k_per_rounding = 1 bounds; and its packed B records the SVE
    vector length and is refused at another (CI has no checkout: it skips)."""
    import numpy as np

    from kbench.errors import ContractViolation
    from kbench.native import api
    from kbench.targets.spec import parse_target
    t = parse_target("qemu:sme=off:vl=256", [str(BUILT)])
    real = "kleidiai.gemm_sve2p1_dot"
    try:
        a = np.array([[2**-12, 2**-24, -1, 0], [2**-12, 1, -1, 0]], np.float16)
        b = np.array([[2**-12], [2**-24], [1], [0]], np.float16)
        c = np.full((2, 1), np.float16(7), np.float16)
        t.engine.gemm_raw(2, 1, 4, [api.RawProblem(a=a, lda=4, b=b, ldb=1, c=c, ldc=1,
                                                   bias=np.ones(1, np.float16))],
                          api.Selector(force=real))
        assert c.ravel().tolist() == [0.0, 2.0**-23]
        b = np.ones((5, 40), np.float16)
        packed = t.pack_plugin(real, b, np.zeros(40, np.float16))
        assert t.engine.set_sve_vl(512) == 512
        c = np.zeros((3, 40), np.float16)
        p = api.RawProblem(a=np.ones((3, 5), np.float16), lda=5, b=packed, ldb=0, c=c, ldc=40)
        p.b_size, p.b_is_packed, p.b_is_backend_native_packed = packed.size, True, True
        with pytest.raises(ContractViolation, match="B.vector_bits: packed for a 256-bit"):
            t.engine.gemm_raw(3, 40, 5, [p], api.Selector(force=real))
        assert not c.any()
    finally:
        t.close()
