"""Cache blocking as a realization parameter.

A cache-blocked realization is its base kernel in a blocked loop (output
blocks of block_m x block_n, K in blocks of block_k with the partial sums
carried at the accumulator's precision): the same computation, another
execution strategy. Here, under emulation: every blocked variant is bit
for bit its unblocked base over awkward shapes (M, N, K not multiples of
the blocks or tiles, K smaller than block_k, strided A/B/C, bias, clamp,
every form of B, batches, threads), real-valued and special inputs; the
block sizes travel through the library, the wire and the listing; default
dispatch keeps the unblocked kernels; `kbench tune` times the blocked
variants as candidates and the dispatcher follows a table that names one.

Skipped without QEMU unless KBENCH_REQUIRE_QEMU is set (as in CI); the
listing and serialization tests run everywhere."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from click.testing import CliRunner
from qemu_gate import needs_qemu

from kbench.cli.main import main as cli_main
from kbench.harness import runner
from kbench.harness.perf import PerfSettings
from kbench.harness.tune import default_realization, table_choice, tune
from kbench.judge.verdict import PASS
from kbench.native import api
from kbench.native.api import DispatchTable, Realization, Selector
from kbench.problems import inputs
from kbench.problems.cases import GemmCase
from kbench.targets.spec import Target, parse_target

BLOCKED_NAME = re.compile(r"^(?P<base>.+)_mb(?P<mb>\d+)_nb(?P<nb>\d+)_kb(?P<kb>\d+)$")
NEON_BLOCKED = {
    "gemm_neon_f32acc_fhm_mb16_nb64_kb64", "gemm_neon_f32acc_fhm_mb64_nb256_kb256",
    "gemm_neon_f32acc_cvt_mb16_nb64_kb64", "gemm_neon_f32acc_cvt_mb64_nb256_kb256",
    "gemm_neon_f16acc_mb24_nb64_kb64", "gemm_neon_f16acc_mb96_nb256_kb256",
}
SME_BLOCKED = {"gemm_sme2_mopa_f32acc_mb128_nb256_kb256"}

# Awkward shapes: no dimension a multiple of a block or a tile (unless said),
# K below every block_k, K = block_k + 1, each dimension alone past the large
# blocks, and one case past them in all three; strides, bias, clamp, B forms.
CASES = [
    GemmCase("blk_k_below_kb", 20, 40, 9, clamp=True, b_form="packed"),
    GemmCase("blk_tails", 37, 83, 150, lda_pad=3, ldb_pad=5, ldc_pad=2, clamp=True),
    GemmCase("blk_kb_plus_1", 30, 75, 257, bias=False, ldc_pad=1, b_form="native"),
    GemmCase("blk_m_past_blocks", 135, 20, 40, lda_pad=1, b_form="native", clamp=True),
    GemmCase("blk_n_past_blocks", 9, 300, 30, ldb_pad=3, ldc_pad=5),
    GemmCase("blk_k_past_blocks", 7, 40, 600, bias=False, b_form="packed", batch=2),
    GemmCase("blk_multiples", 48, 128, 128, b_form="native"),
    GemmCase("blk_all_past_blocks", 98, 258, 257, lda_pad=2, ldb_pad=1, ldc_pad=3, clamp=True),
]
KINDS = ("normal", "specials")

GetTarget = Callable[[str], Target]


@pytest.fixture(scope="module")
def targets() -> Iterator[GetTarget]:
    made: dict[str, Target] = {}

    def get(spec: str) -> Target:
        if spec not in made:
            made[spec] = parse_target(spec)
        return made[spec]

    yield get
    for t in made.values():
        t.close()


def _bits(outcome) -> list[np.ndarray]:
    return [o.view(np.uint16).copy() for o in outcome.outputs]


def _run(target: Target, case: GemmCase, inp, name: str, threads: int = 1) -> list[np.ndarray]:
    o = target.run_gemm(case, inp, name, Selector(threads=threads))
    assert o.error is None and not o.guard_detail, (name, case.name, o.error, o.guard_detail)
    assert o.ran is not None and o.ran.name == name and o.ran.threads == threads
    return _bits(o)


def _blocked(target: Target) -> list[Realization]:
    return [r for r in target.info().realizations if BLOCKED_NAME.match(r.name)]


def _assert_identical(target: Target, names: list[str], cases: list[GemmCase],
                      kinds: tuple[str, ...] = KINDS) -> None:
    for case in cases:
        for kind in kinds:
            inp = inputs.gemm_inputs(case, kind)
            refs: dict[str, list[np.ndarray]] = {}
            for i, name in enumerate(names):
                base = BLOCKED_NAME.match(name)["base"]  # type: ignore[index]
                if base not in refs:
                    refs[base] = _run(target, case, inp, base)
                threads = 1 + 2 * (i % 2)  # every other variant with 3 threads
                got = _run(target, case, inp, name, threads)
                for p, (x, y) in enumerate(zip(got, refs[base], strict=True)):
                    if not np.array_equal(x, y):
                        bad = np.argwhere(x != y)[0]
                        pytest.fail(f"{name} differs from {base} on {case.name} ({kind}, "
                                    f"threads={threads}), problem {p}, first at {tuple(bad)}")


# ---- parameters: library, wire, listing, serialization -----------------------------------


def test_block_fields_round_trip_through_dicts() -> None:
    r = Realization.from_fields("x_mb8_nb16_kb32", "neon", "k", 0, 1, 0, 1, 1, 0, 1,
                                blocks=(8, 16, 32))
    assert (r.block_m, r.block_n, r.block_k) == (8, 16, 32) and r.blocked
    assert r.blocking_str() == "mb=8 nb=16 kb=32"
    d = r.to_dict()
    assert (d["block_m"], d["block_n"], d["block_k"]) == (8, 16, 32)
    assert Realization.from_dict(json.loads(json.dumps(d))) == r
    old = {k: v for k, v in d.items() if not k.startswith("block_")}  # a run before blocking
    assert Realization.from_dict(old).blocking_str() == "none"


def test_host_realizations_report_their_blocking() -> None:
    for r in api.realizations():
        m = BLOCKED_NAME.match(r.name)
        if m:
            assert (r.block_m, r.block_n, r.block_k) == tuple(int(m[d]) for d in ("mb", "nb", "kb"))
        elif r.backend in ("scalar", "neon"):
            assert not r.blocked, r.name


@needs_qemu
def test_blocked_variants_are_listed_with_their_parameters(targets: GetTarget) -> None:
    """Every blocked variant names its block sizes, reports them (through the
    wire), and declares what its base declares; the unblocked NEON kernels
    report no blocking, the default SME loop the blocks it sizes itself."""
    target = targets("qemu:cpu=max")
    reals = {r.name: r for r in target.info().realizations}
    assert set(reals) >= NEON_BLOCKED | SME_BLOCKED
    for r in _blocked(target):
        m = BLOCKED_NAME.match(r.name)
        assert m is not None
        assert (r.block_m, r.block_n, r.block_k) == tuple(int(m[d]) for d in ("mb", "nb", "kb"))
        base = reals[m["base"]]
        assert not (base.backend == "neon" and base.blocked)
        for f in ("op", "backend", "kernel", "isa", "accum", "k_per_rounding", "bforms", "max_m",
                  "error_model", "vector_bits"):
            assert getattr(r, f) == getattr(base, f), (r.name, f)
    sme = reals["gemm_sme2_mopa_f32acc"]
    mr = sme.vector_bits // 16
    assert sme.block_m == 0 and sme.block_k == 2 * (64 * 1024 // (mr * 4))
    assert sme.block_n == 256 * 1024 // (mr * 4)
    # the call reports the parameters of what ran
    case = GemmCase("blk_report", 5, 20, 70)
    o = target.run_gemm(case, inputs.gemm_inputs(case, "exact"),
                        "gemm_neon_f16acc_mb24_nb64_kb64")
    assert o.ran is not None and (o.ran.block_m, o.ran.block_n, o.ran.block_k) == (24, 64, 64)


@needs_qemu
def test_cli_realizations_shows_the_blocking(targets: GetTarget) -> None:
    res = CliRunner().invoke(cli_main, ["realizations", "--target", "qemu:cpu=neoverse-n1"])
    assert res.exit_code == 0, res.output
    blocks = dict(re.findall(r"^  (\S+)\n.*\n.*blocking ([^;]+);", res.output, re.M))
    assert blocks["gemm_neon_f32acc_cvt_mb64_nb256_kb256"] == "mb=64 nb=256 kb=256"
    assert blocks["gemm_neon_f16acc_mb24_nb64_kb64"] == "mb=24 nb=64 kb=64"
    assert blocks["gemm_neon_f32acc_cvt"] == "none"
    assert not any("fhm" in n or "sme" in n for n in blocks)  # neither FHM nor SME on N1
    res = CliRunner().invoke(cli_main, ["realizations", "--target", "qemu:cpu=neoverse-n1",
                                        "--json"])
    assert res.exit_code == 0, res.output
    listed = {d["name"]: d for d in json.loads(res.output)["qemu:cpu=neoverse-n1"]}
    d = listed["gemm_neon_f32acc_cvt_mb16_nb64_kb64"]
    assert (d["block_m"], d["block_n"], d["block_k"]) == (16, 64, 64)


@needs_qemu
@pytest.mark.parametrize("spec", ["qemu:cpu=max", "qemu:cpu=neoverse-n1"])
def test_default_dispatch_keeps_the_unblocked_kernels(targets: GetTarget, spec: str) -> None:
    target = targets(spec)
    reals = target.info().realizations
    for case in (GemmCase("blk_default_big", 100, 300, 300), GemmCase("blk_default", 8, 16, 8)):
        name = default_realization(reals, case)
        assert not BLOCKED_NAME.match(name), name
        o = target.run_gemm(case, inputs.gemm_inputs(case, "exact"), name, force=False)
        assert o.error is None and o.ran is not None and o.ran.name == name


# ---- bit identity with the unblocked base -------------------------------------------------


@needs_qemu
def test_neon_blocked_variants_are_bit_identical_to_their_base(targets: GetTarget) -> None:
    target = targets("qemu:cpu=max")
    names = sorted(r.name for r in _blocked(target) if r.backend == "neon")
    assert set(names) == NEON_BLOCKED
    _assert_identical(target, names, CASES)


@needs_qemu
def test_neon_blocked_variants_without_fhm(targets: GetTarget) -> None:
    """neoverse-n1 has FP16 but no FHM: the FCVTL kernel's and the FP16
    kernel's blocked variants (the FHM ones are not offered)."""
    target = targets("qemu:cpu=neoverse-n1")
    names = sorted(r.name for r in _blocked(target))
    assert set(names) == {n for n in NEON_BLOCKED if "fhm" not in n}
    _assert_identical(target, names, [CASES[1], CASES[5]], ("uniform",))


@needs_qemu
@pytest.mark.parametrize("svl", (128, 2048))
def test_sme_blocked_variant_is_bit_identical_to_its_base(targets: GetTarget, svl: int) -> None:
    """At SVL 128 a 128-row block is 16 row blocks of the 2VL tile and K
    blocks are 128 pairs; at 2048 the tile is 128 x 128, so block_m is one
    tile and block_n two."""
    target = targets(f"qemu:cpu=max:svl={svl}")
    names = sorted(r.name for r in _blocked(target) if r.backend == "sme")
    assert set(names) == SME_BLOCKED
    cases = CASES if svl == 128 else [CASES[1], CASES[3], CASES[4], CASES[5]]
    _assert_identical(target, names, cases)


@needs_qemu
def test_blocked_threads_change_no_bit(targets: GetTarget) -> None:
    """More threads than output blocks, and fewer: the same bits."""
    target = targets("qemu:cpu=max")
    case = GemmCase("blk_threads", 70, 130, 200, clamp=True, ldc_pad=1)
    inp = inputs.gemm_inputs(case, "normal")
    for name in sorted(NEON_BLOCKED | SME_BLOCKED):
        one = _run(target, case, inp, name, 1)
        for threads in (2, 7):
            got = _run(target, case, inp, name, threads)
            assert all(np.array_equal(x, y) for x, y in zip(one, got, strict=True)), \
                (name, threads)


# ---- tuning and dispatch tables -----------------------------------------------------------


def _table(target: Target, rules: list[dict]) -> dict:
    info = target.info()
    return {"kbench_dispatch_table": 1, "library_version": info.library_version,
            "fingerprint": {"arch": info.arch, "cpu_features": info.cpu_features,
                            "sme_vector_bits": info.sme_vector_bits},
            "rules": rules}


@needs_qemu
def test_a_table_choosing_a_blocked_variant_is_followed(targets: GetTarget) -> None:
    """Hand-made table: small GEMMs to a small-block NEON variant, large ones
    to the SME2 blocked loop; the realization each call reports is the
    table's choice (never the default), and the result passes the oracle."""
    target = targets("qemu:cpu=max")
    table_json = _table(target, [
        {"op": "gemm", "class": {"m_min": 2, "m_max": 32},
         "realization": "gemm_neon_f32acc_fhm_mb16_nb64_kb64"},
        {"op": "gemm", "class": {"m_min": 33},
         "realization": "gemm_sme2_mopa_f32acc_mb128_nb256_kb256"},
    ])
    table = DispatchTable(json.dumps(table_json))
    reals = {r.name: r for r in target.info().realizations}
    for case in (GemmCase("blk_table_small", 30, 90, 140, b_form="packed"),
                 GemmCase("blk_table_large", 140, 70, 300, clamp=True)):
        want = table_choice(table_json, case)
        assert want and BLOCKED_NAME.match(want)
        assert default_realization(list(reals.values()), case) != want
        for kind in ("exact", "normal"):
            job = runner.Job(case, kind, reals[want], target.name)
            v = runner.run_job(target, job, Selector(table=table), force=False)
            assert v.status == PASS, v.line()
            assert v.realization == want


@needs_qemu
def test_tune_times_the_blocked_variants_as_candidates(targets: GetTarget) -> None:
    target = targets("qemu:cpu=neoverse-n1")
    case = GemmCase("blk_tune", 40, 80, 130)
    result = tune(target, [("blk", case)], PerfSettings(warmup=0, rounds=2, min_round_ns=0))
    times = result.shapes[0].times()
    assert {n for n in NEON_BLOCKED if "fhm" not in n} <= set(times)
    assert result.table["rules"][0]["realization"] in times
