"""The instruction floor each kernel family is judged against (the
efficiency column of every count): the fewest principal instructions its
layout can issue for a case, exact per family, SVL and case kind, with the
instruction and its class in the mix; kernels without a floor get none.
Also which rows carry counts and the printed per-realization summary."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from kbench.problems.cases import ConvCase, GemmCase
from kbench.results import counts as rc

GEMM = GemmCase("g", m=7, n=37, k=13, batch=2)
# a grouped convolution: 3 groups, M = 1*5*6 output pixels, N = 12/3, K = 2*3*3 per group
CONV = ConvCase("c", n=1, h=7, w=8, c_in=6, c_out=12, kh=3, kw=3, groups=3)

MOPA = "kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa"
MOPA2 = "kb_imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa"
DOT = "kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot"
MLA = "kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla"
FHM = "kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal"
CVT = "kb_matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla"
H8 = "kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla"


def c(x: float) -> int:
    return math.ceil(x)


@pytest.mark.parametrize(("kernel", "svl", "count", "kind", "cls"), [
    # per problem: ceil(M/VL32) x ceil(N/VL32) tiles x ceil(K/2) widening outer products
    (MOPA, 512, 2 * c(7 / 16) * c(37 / 16) * c(13 / 2), "FMOPA (widening)", "outer"),
    (MOPA2, 128, 2 * c(7 / 4) * c(37 / 4) * c(13 / 2), "FMOPA (widening)", "outer"),
    # a row of M times ceil(N / 4 VL32) groups of four vectors, ceil(K/2) pairs
    (DOT, 512, 2 * 7 * c(37 / 64) * c(13 / 2), "FDOT (vgx4)", "dot"),
    (DOT, 128, 2 * 7 * c(37 / 16) * c(13 / 2), "FDOT (vgx4)", "dot"),
    (MLA, 512, 2 * 7 * c(37 / 16) * 13, "FMLALB/FMLALT", "mla"),
    (FHM, 0, 2 * 7 * c(37 / 4) * 13, "FMLAL/FMLAL2", "mla"),
    (CVT, 0, 2 * 7 * c(37 / 4) * 13, "FMLA .4s", "mla"),
    (H8, 0, 2 * 7 * c(37 / 8) * 13, "FMLA .8h", "mla"),
])
def test_the_floor_of_each_family_on_a_gemm(kernel: str, svl: int, count: int, kind: str,
                                            cls: str) -> None:
    assert rc.floor(kernel, svl, GEMM) == rc.Floor(count, kind, cls)
    assert cls in rc.CLASSES


def test_the_floor_of_a_grouped_convolution_is_per_group() -> None:
    assert rc.gemm_view(CONV) == (3, 30, 4, 18)
    assert rc.gemm_view(GEMM) == (2, 7, 37, 13)
    assert rc.floor(MOPA, 512, CONV) == rc.Floor(3 * 2 * 1 * 9, "FMOPA (widening)", "outer")
    assert rc.floor(H8, 0, CONV) == rc.Floor(3 * 30 * 1 * 18, "FMLA .8h", "mla")


@pytest.mark.parametrize("kernel", [
    "kb_matmul_clamp_f16_f16_f16_scalar_f32acc", "conv2d_winograd_f23_scalar_f32acc",
    # an SME kernel without a vector length has no floor (never a division by zero)
    MOPA, DOT, MLA])
def test_kernels_without_a_floor_get_none(kernel: str) -> None:
    assert rc.floor(kernel, 0, GEMM) is None


def test_a_mopa_floor_needs_the_2vlx2vl_tile() -> None:
    # an outer-product kernel of another tile, or a 2vlx2vl kernel that is not MOPA: no MOPA floor
    assert rc.floor("kb_x_1vlx4vl_sme_mopa", 512, GEMM) is None
    assert rc.floor("kb_x_2vlx2vl_sme_other", 512, GEMM) is None


@pytest.mark.parametrize(("value", "has"), [
    (1.0, True), (12345, True), ("7", True), (0.0, False), (0.5, True), (-3.0, False),
    (math.nan, False), (None, False), ("x", False)])
def test_a_row_has_counts_when_its_call_count_is_positive(value: object, has: bool) -> None:
    assert rc.has_counts(SimpleNamespace(count_call=value)) is has
    assert rc.has_counts(SimpleNamespace()) is False


def _counted(target: str, real: str, call: float, kernel: float, eff: float) -> SimpleNamespace:
    return SimpleNamespace(target=target, realization=real, count_call=call,
                           count_kernel=kernel, count_efficiency=eff)


def test_the_summary_sums_per_target_and_realization() -> None:
    rows = [_counted("qemu:svl=512", "gemm_sme_mopa_f32acc", 1000, 800, 0.5),
            _counted("qemu:svl=512", "gemm_sme_mopa_f32acc", 3000, 2000, 0.25),
            _counted("qemu:svl=512", "gemm_scalar_f32acc", 5000, 4000, math.nan),
            _counted("qemu:svl=128", "gemm_sme_mopa_f32acc", 7000, 6000, 0.75),
            _counted("qemu:svl=128", "gemm_sme_mopa_f32acc", math.nan, 1, 0.1)]
    lines = rc.summary_text(rows).splitlines()
    w = len("gemm_sme_mopa_f32acc")
    assert lines[0] == (f"{'target':24s} {'realization':{w}s} {'cases':>5s} {'call (sum)':>14s} "
                        f"{'kernel (sum)':>14s}  efficiency")
    assert lines[1:] == [
        f"{'qemu:svl=512':24s} {'gemm_sme_mopa_f32acc':{w}s} {2:>5d} {4000:>14,.0f} "
        f"{2800:>14,.0f}  25.0% .. 50.0%",
        f"{'qemu:svl=512':24s} {'gemm_scalar_f32acc':{w}s} {1:>5d} {5000:>14,.0f} "
        f"{4000:>14,.0f}  –",
        f"{'qemu:svl=128':24s} {'gemm_sme_mopa_f32acc':{w}s} {1:>5d} {7000:>14,.0f} "
        f"{6000:>14,.0f}  75.0% .. 75.0%"]
    assert rc.summary_text([_counted("t", "r", 0, 0, 0.5)]) == ""
    assert rc.summary_text([]) == ""


def test_the_count_mix_round_trips_as_compact_json() -> None:
    """mix_json: per phase, the instruction classes that occur (zeros left
    out), keys sorted, no spaces; parse_mix reads it back, and anything that
    is not such a text as no counts."""
    mix = {"kernel": [64, 6, 0, 100, 20, 3, 1], "pack_b": [0, 0, 0, 9, 9, 0, 0]}
    text = rc.mix_json(mix)
    assert text == ('{"kernel":{"control":3,"dot":6,"load":100,"other":1,"outer":64,"store":20},'
                    '"pack_b":{"load":9,"store":9}}')
    assert rc.parse_mix(text) == {"kernel": {"outer": 64, "dot": 6, "load": 100, "store": 20,
                                             "control": 3, "other": 1},
                                  "pack_b": {"load": 9, "store": 9}}
    for bad in (None, "", "  ", "{not json", 3.0, '{"kernel": 5}'):
        assert rc.parse_mix(bad) == {}, bad
