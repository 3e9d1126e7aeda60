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
        sme = "neon" not in name
        # every SME kernel needs KleidiAI's SME helpers; the NEON one none of them
        assert ("kai_common_sme_asm.S" in files) == sme, name
        # a C file with a kernel's queries, and (SME) its assembly
        assert any(f.endswith(".c") for f in files), name
        assert any(f.endswith("_asm.S") for f in files) == sme, name
    assert listed["flags-sme"] == ["-march=armv8.2-a+sve+sve2"]
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
    for row in rows:
        for cell in row[2:]:
            passed, total = (int(x.replace(",", "")) for x in cell.split(" of "))
            assert passed == total > 0, row
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
