"""Instruction counts of a case as results carry them: the phase columns,
the instruction mix (JSON), the floor of the principal instruction and the
efficiency against it.

The floor is the smallest number of the kernel family's principal
instruction that the shape needs at that vector length, each instruction
used at its widest:

    SME/SME2 2VLx2VL MOPA  widening FMOPA, a VL32 x VL32 tile over a k pair:
                           ceil(M / VL32) * ceil(N / VL32) * ceil(K / 2)
    SME2 GEMV (FDOT)       FDOT into ZA, four vectors of VL32 columns over a
                           k pair (vgx4): M * ceil(N / (4 VL32)) * ceil(K / 2)
    SME GEMV (FMLALB/T)    VL32 columns, one k: M * ceil(N / VL32) * K
    SVE2.1 GEMM, GEMV      FDOT (2-way, by element), VL32 columns over a k pair:
      (FDOT)               M * ceil(N / VL32) * ceil(K / 2)
    NEON FMLAL, FMLA .4s   4 columns, one k: M * ceil(N / 4) * K
    NEON FMLA .8h          8 columns, one k: M * ceil(N / 8) * K

with VL32 = SVL / 32 (for SVE code the SVE vector length / 32), a batch
counted per problem and a convolution as its GEMM (M = n * out_h * out_w,
N = c_out / groups, K = kh * kw * c_in / groups, per group). efficiency =
floor / kernel instructions. Counts are not cycles: they say how much work a
kernel asks of the machine, not how fast a given core does it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from kbench.problems.cases import Case, ConvCase, GemmCase

CLASSES = ("outer", "dot", "mla", "load", "store", "control", "other")  # kbench.targets.a64
CALL_PHASES = ("validate", "pack_lhs", "pack_rhs", "kernel", "other")  # they sum to call
PHASES = ("call", "validate", "checksum", "pack_lhs", "pack_rhs", "kernel", "other", "pack_b",
          "pack_b_checksum")
COLUMNS = tuple(f"count_{p}" for p in PHASES)
GATED = ("count_call", "count_pack_b")  # what the count gate holds against its limit


@dataclass(frozen=True)
class Floor:
    instructions: int
    kind: str  # the principal instruction
    cls: str  # its class in the mix


def gemm_view(case: Case) -> tuple[int, int, int, int]:
    """(problems, M, N, K) of a case's GEMM (a convolution per group)."""
    if isinstance(case, GemmCase):
        return case.batch, case.m, case.n, case.k
    assert isinstance(case, ConvCase)
    return (case.groups, case.n * case.out_h * case.out_w, case.c_out // case.groups,
            case.reduction)


def floor(kernel: str, svl_bits: int, case: Case) -> Floor | None:
    """The floor of a realization's kernel on a case, None for kernels
    without one (scalar, Winograd)."""
    problems, m, n, k = gemm_view(case)
    vl32 = svl_bits // 32
    c = math.ceil
    if "2vlx2vl_sme" in kernel and "mopa" in kernel and vl32:
        return Floor(problems * c(m / vl32) * c(n / vl32) * c(k / 2), "FMOPA (widening)", "outer")
    if "_sme2_dot" in kernel and vl32:
        return Floor(problems * m * c(n / (4 * vl32)) * c(k / 2), "FDOT (vgx4)", "dot")
    if "_sve2p1_dot" in kernel and vl32:
        return Floor(problems * m * c(n / vl32) * c(k / 2), "FDOT (SVE, by element)", "dot")
    if "_sme_mla" in kernel and vl32:
        return Floor(problems * m * c(n / vl32) * k, "FMLALB/FMLALT", "mla")
    if "neon_fhm_mlal" in kernel:
        return Floor(problems * m * c(n / 4) * k, "FMLAL/FMLAL2", "mla")
    if "neon_cvt_mla" in kernel:
        return Floor(problems * m * c(n / 4) * k, "FMLA .4s", "mla")
    if "6x16_neon_mla" in kernel:
        return Floor(problems * m * c(n / 8) * k, "FMLA .8h", "mla")
    return None


def mix_json(mix: dict[str, list[int]]) -> str:
    """{"kernel": {"outer": n, ...}, ...} as compact JSON (zero classes left out)."""
    return json.dumps({phase: {name: n for name, n in zip(CLASSES, counts, strict=True) if n}
                       for phase, counts in mix.items()}, separators=(",", ":"), sort_keys=True)


def parse_mix(text: Any) -> dict[str, dict[str, int]]:
    """The mix column back ({} for a row without counts)."""
    if not isinstance(text, str) or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return {str(p): {str(k): int(v) for k, v in d.items()} for p, d in data.items()
            if isinstance(d, dict)}


def has_counts(row: Any) -> bool:
    """Whether a results row (Verdict or frame row) carries counts."""
    value = getattr(row, "count_call", math.nan)
    try:
        return value == value and float(value) > 0
    except (TypeError, ValueError):
        return False


def summary_text(rows: list[Any]) -> str:
    """Per target and realization: counted cases, instructions of all their
    calls and kernels, and the kernels' efficiency range ("" if none)."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        if has_counts(r):
            groups.setdefault((r.target, r.realization), []).append(r)
    if not groups:
        return ""
    width = max(len(real) for _, real in groups)
    lines = [f"{'target':24s} {'realization':{width}s} {'cases':>5s} {'call (sum)':>14s} "
             f"{'kernel (sum)':>14s}  efficiency"]
    for (target, real), rs in groups.items():
        eff = [r.count_efficiency for r in rs if r.count_efficiency == r.count_efficiency]
        span = f"{min(eff):.1%} .. {max(eff):.1%}" if eff else "–"
        lines.append(f"{target:24s} {real:{width}s} {len(rs):>5d} "
                     f"{sum(r.count_call for r in rs):>14,.0f} "
                     f"{sum(r.count_kernel for r in rs):>14,.0f}  {span}")
    return "\n".join(lines)
