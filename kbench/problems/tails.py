"""Tail shapes derived from a realization's own blocking.

A kernel's edge code runs where a dimension is not a multiple of its step:
N mod n_step, M mod m_step, K at 1, around the K loop's unroll and across
a K block. A fixed catalog hits only the residues its authors thought of;
this module derives, for one realization at one vector length, a set of
cases that hits every residue of N mod n_step and of M mod m_step at least
once, K at each boundary, each with and without bias and clamp and in each
form of B the realization takes, plus convolutions whose reduction
(kh * kw * c_in) and c_out hit the same classes. The cases are data (the
catalog "tails"); the same realization on the same target always derives
the same cases, so a printed reproducer (`--shapes tails -k tails/NAME`)
reruns the case it names.

Where the steps come from (`steps_of`): a plugin micro-kernel's declared
mr / nr / kr (its get_mr, get_nr, get_kr); for kbench's own kernels their
own queries (get_m_step, get_n_step, get_kr at the vector length they run
at, which the library reports with each realization); where neither is
reported (a worker of an older build), the tile in the kernel's name
(KleidiAI's convention: `_4x16_`, `_1x2vl_`, `_2vlx2vl_`, "vl" counting
32-bit lanes of the streaming vector length the realization reports, so
2vl is 8 at SVL 128 and 32 at SVL 512) and the K interleave of its packed
RHS (`p16x1b`: 1, `p2vlx2b`: 2); the cache blocking (block_m, block_n,
block_k) the realization reports. A
realization that declares no tile (whole-call plugins, the scalar
reference, direct convolution) gets DEFAULT_STEPS, which covers every
residue mod 16 and mod 8 (so mod 6, 4 and 2 as well) of a NEON-class
kernel."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kbench.problems.cases import ConvCase, GemmCase

CATALOG = "tails"
DEFAULT_STEPS = (8, 16)  # (m_step, n_step) when a realization declares no tile
# K loops unroll by 1, 2, 4 or 8 (the 6x16 FP16 kernel steps 8 k at a time):
# each class is a boundary of one of them, +-1
K_CLASSES = (1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33)
FLAGS = ((True, False), (False, True), (True, True), (False, False))  # (bias, clamp)
NEON_CLASS_N_STEP = 16  # smoke keeps every N residue up to this step, boundaries above
MAX_BLOCK_CROSSING = 1 << 13  # a block dimension derived only below this (run time)

_TILE = re.compile(r"_(\d+)(vl)?x(\d+)(vl)?_")
_RHS_KR = re.compile(r"p(\d+)(?:vl)?x(\d+)b")


@dataclass(frozen=True)
class Steps:
    """A realization's blocking, as far as tails need it."""

    m_step: int
    n_step: int
    kr: int = 1  # K values interleaved in its packed RHS
    block_m: int = 0  # cache blocking, 0 = none
    block_n: int = 0
    block_k: int = 0
    source: str = "default"  # where m_step / n_step come from

    @property
    def neon_class(self) -> bool:
        """Small enough that smoke keeps every N residue."""
        return self.n_step <= NEON_CLASS_N_STEP

    def k_classes(self) -> tuple[int, ...]:
        """K values the tails hit: 1, each unroll boundary +-1, the RHS
        interleave +1, and a K block -1, at, +1 and past a second block."""
        ks = set(K_CLASSES) | {self.kr + 1, 2 * self.kr + 1}
        if 0 < self.block_k < MAX_BLOCK_CROSSING:
            ks |= {self.block_k - 1, self.block_k, self.block_k + 1, 2 * self.block_k + 1}
        return tuple(sorted(k for k in ks if k >= 1))

    def describe(self) -> str:
        s = f"m_step={self.m_step} n_step={self.n_step} kr={self.kr}"
        blocks = " ".join(f"{d}={v}" for d, v in (("mb", self.block_m), ("nb", self.block_n),
                                                    ("kb", self.block_k)) if v)
        return s + (f" {blocks}" if blocks else "") + f" ({self.source})"


def _lanes(count: str, vl: str | None, vector_bits: int) -> int:
    n = int(count or 1)
    return n * max(vector_bits, 128) // 32 if vl else n


def steps_from_kernel(kernel: str, vector_bits: int, blocks: tuple[int, int, int] = (0, 0, 0)
                      ) -> Steps | None:
    """The steps a KleidiAI-style kernel name states (None: it states none)."""
    tiles = _TILE.findall(kernel)
    if not tiles:
        return None
    m, mvl, n, nvl = tiles[-1]
    kr_m = _RHS_KR.findall(kernel)
    kr = int(kr_m[-1][1]) if kr_m else 1
    return Steps(_lanes(m, mvl, vector_bits), _lanes(n, nvl, vector_bits), kr, *blocks,
                 source=f"kernel {kernel}" + (f" at {vector_bits} bits" if mvl or nvl else ""))


def steps_of(kernel: str, vector_bits: int, blocks: tuple[int, int, int] = (0, 0, 0),
             declared: tuple[int, int, int] = (0, 0, 0), how: str = "declared") -> Steps:
    """A realization's steps: declared (mr, nr, kr) when given (a plugin
    micro-kernel's declaration, or how="queries": our kernel's m_step,
    n_step, kr from its queries), else its kernel name's, else DEFAULT_STEPS."""
    mr, nr, kr = declared
    if nr:  # a kernel reading the LHS in place declares no mr: rows take the default
        source = ("the kernel's queries" if how == "queries"
                  else f"declared mr={mr or '-'} nr={nr} kr={kr or 1}")
        return Steps(mr or DEFAULT_STEPS[0], nr, kr or 1, *blocks, source=source)
    found = steps_from_kernel(kernel, vector_bits, blocks)
    if found is not None:
        return found
    return Steps(*DEFAULT_STEPS, 1, *blocks, source="no tile declared: default")


# --------------------------------------------------------------------------- cases


def _gemm(m: int, n: int, k: int, flags: tuple[bool, bool], form: str, why: str,
          clamp_max: float | None = None) -> GemmCase:
    bias, clamp = flags
    name = (f"tail_m{m}_n{n}_k{k}" + ("" if bias else "_nobias") + ("_clamp" if clamp else "")
            + ("_max-0" if clamp_max is not None else "") + f"_{form}")
    return GemmCase(name=name, m=m, n=n, k=k, bias=bias, clamp=clamp, clamp_max=clamp_max,
                    b_form=form, tags=("tails", why))


def _residue_value(step: int, r: int) -> int:
    """A size with residue r mod step past one whole step (r = 0: two steps)."""
    return step + r if r else 2 * step


def gemm_tails(steps: Steps, bforms: tuple[str, ...], max_m: int = 0,
               sample: bool = False) -> list[GemmCase]:
    """Every residue of N mod n_step and of M mod m_step at least once (paired
    along a diagonal, K, bias/clamp and the B form cycling), the boundary N
    values 1, n_step-1, n_step, n_step+1 (only a tail tile, exactly one, one
    more) with each bias/clamp pair and each B form, every K class, and a
    crossing of each cache block, and a clamp whose upper bound is -0
    (kernels whose FMAX/FMIN clamp would turn its -0 into +0 switch to a
    compare/select path there) in each B form, and once over 4 n_step + 1
    columns (kernels that take several blocks at a time). With sample=True the subset smoke runs
    (always a subset of the full set, so that a reproducer naming the
    catalog "tails" reruns a sampled case): for a NEON-class step every N
    residue, above it the boundary residues 0, 1 and n_step-1; each
    boundary N value in one B form; one clamp_max = -0 case (the clamp
    kernels must do by compare and select); K up to 17 where few residue cases
    run; the K-block boundary; no cache-block crossing."""
    forms = tuple(f for f in ("plain", "packed", "native") if f in bforms) or ("plain",)
    ms = 1 if max_m == 1 else steps.m_step
    ns = steps.n_step
    ks = steps.k_classes()
    small = tuple(k for k in ks if k <= 17)
    bk = steps.block_k
    out: list[tuple[GemmCase, bool]] = []  # (case, in the sample)
    for i in range(max(ns, ms)):
        r_n, r_m = i % ns, i % ms
        m = 1 if ms == 1 else _residue_value(ms, r_m)
        out.append((_gemm(m, _residue_value(ns, r_n), small[i % len(small)], FLAGS[i % 4],
                          forms[(i + i // 4) % len(forms)], "residue"),
                    steps.neon_class or r_n in (0, 1, ns - 1)))
    m_edges = (1,) if ms == 1 else (1, ms + 1)
    j = 0
    for b, n in enumerate(sorted({1, max(ns - 1, 1), ns, ns + 1})):
        for form in forms:  # each boundary N value in each B form
            out.append((_gemm(m_edges[j % len(m_edges)], n, ks[j % len(ks)], FLAGS[j % 4],
                              form, "boundary"), form == forms[b % len(forms)]))
            j += 1
    m_edge = m_edges[-1]
    for i, form in enumerate(forms):  # clamp_max -0: the clamp that must keep a zero's sign
        out.append((_gemm(m_edge, ns + 1, small[i % len(small)], (True, True), form,
                          "clamp_max -0", clamp_max=-0.0), i == 0))
    # and over four whole steps and one (kernels that take several blocks at a time)
    out.append((_gemm(m_edge, 4 * ns + 1, small[-1], (True, True), forms[-1], "clamp_max -0",
                      clamp_max=-0.0), False))
    for i, k in enumerate(ks):
        keep = (0 < bk < MAX_BLOCK_CROSSING and k in (bk, bk + 1)) or (
            not steps.neon_class and k <= 17)
        out.append((_gemm(m_edge, ns + 1, k, FLAGS[(i + 1) % 4], forms[i % len(forms)], "k"),
                    keep))
    if 0 < steps.block_m < MAX_BLOCK_CROSSING and max_m != 1:
        out.append((_gemm(steps.block_m + 1, ns + 1, 9, FLAGS[0], forms[0], "block"), False))
    if 0 < steps.block_n < MAX_BLOCK_CROSSING:
        # an N block matters where K is blocked too (its partial sums): cross both
        # where that stays small, else N alone
        k = bk + 1 if 0 < bk <= 512 else 9
        out.append((_gemm(m_edge, steps.block_n + 1, k, FLAGS[2], forms[-1], "block"), False))
    kept = [c for c, picked in out if (picked or not sample) and (not max_m or c.m <= max_m)]
    return list({c.name: c for c in kept}.values())


def _conv(w: int, h: int, c_in: int, c_out: int, kh: int, flags: tuple[bool, bool],
          why: str) -> ConvCase:
    bias, clamp = flags
    pad = (kh // 2,) * 4
    name = (f"tail_conv{kh}x{kh}_h{h}w{w}_c{c_in}o{c_out}" + ("" if bias else "_nobias")
            + ("_clamp" if clamp else ""))
    return ConvCase(name=name, n=1, h=h, w=w, c_in=c_in, c_out=c_out, kh=kh, kw=kh, pad=pad,
                    bias=bias, clamp=clamp, tags=("tails", why))


def conv_tails(steps: Steps, sample: bool = False) -> list[ConvCase]:
    """Convolutions whose GEMM view (M = output pixels, N = c_out, K =
    kh * kw * c_in) hits the tails: 1x1 convolutions (M = w, K = c_in) over
    every N residue, and 3x3 convolutions with padding (the indirect
    table's pad pointer, K = 9 * c_in) at the boundary N values 1,
    n_step-1, n_step+1. With sample=True (a subset, as in gemm_tails): the
    residues 0, 1 and n_step-1 and the 3x3 boundary cases."""
    ms, ns = steps.m_step, steps.n_step
    ks = tuple(k for k in steps.k_classes() if k <= 33)
    out: list[tuple[ConvCase, bool]] = []
    for r in range(ns):
        out.append((_conv(_residue_value(ms, (r + 1) % ms), 1, ks[r % len(ks)],
                          _residue_value(ns, r), 1, FLAGS[r % 4], "residue"),
                    r in (0, 1, ns - 1)))
    for i, n in enumerate(sorted({1, max(ns - 1, 1), ns + 1})):
        out.append((_conv(ms + 1, 1 + i % 2, (1, 3, 2)[i % 3], n, 3, FLAGS[(i + 2) % 4],
                          "boundary"), True))
    kept = [c for c, picked in out if picked or not sample]
    return list({c.name: c for c in kept}.values())


# --------------------------------------------------------------------------- audit


@dataclass(frozen=True)
class Coverage:
    """Which tail classes a list of GEMM-view shapes (m, n, k) hits for some steps."""

    steps: Steps
    n_residues: frozenset[int]
    m_residues: frozenset[int]
    k_classes: frozenset[int]
    boundaries: frozenset[str]

    def missing_n(self) -> list[int]:
        return [r for r in range(self.steps.n_step) if r not in self.n_residues]

    def missing_m(self) -> list[int]:
        return [r for r in range(self.steps.m_step) if r not in self.m_residues]

    def missing_k(self) -> list[int]:
        return [k for k in self.steps.k_classes() if k not in self.k_classes]

    def missing_boundaries(self) -> list[str]:
        return [b for b in boundary_names(self.steps) if b not in self.boundaries]


def boundary_names(steps: Steps) -> list[str]:
    """The boundary classes the audit names."""
    ns, ms = steps.n_step, steps.m_step
    out = ["N=1", f"N={ns - 1}", f"N={ns}", f"N={ns + 1}", "M=1"]
    if ms > 1:
        out.append(f"M={ms + 1}")
    if steps.block_k:
        out.append(f"K>{steps.block_k} (crosses a K block)")
    if steps.block_n:
        out.append(f"N>{steps.block_n} (crosses an N block)")
    if steps.block_m:
        out.append(f"M>{steps.block_m} (crosses an M block)")
    return list(dict.fromkeys(out))


def coverage(steps: Steps, shapes: list[tuple[int, int, int]]) -> Coverage:
    """The residues and boundary classes `shapes` ((m, n, k) each) hit."""
    ns, ms = steps.n_step, steps.m_step
    hit: set[str] = set()
    for m, n, k in shapes:
        for v in {1, ns - 1, ns, ns + 1}:
            if n == v:
                hit.add(f"N={v}")
        if m == 1:
            hit.add("M=1")
        if m == ms + 1:
            hit.add(f"M={ms + 1}")
        if steps.block_k and k > steps.block_k:
            hit.add(f"K>{steps.block_k} (crosses a K block)")
        if steps.block_n and n > steps.block_n:
            hit.add(f"N>{steps.block_n} (crosses an N block)")
        if steps.block_m and m > steps.block_m:
            hit.add(f"M>{steps.block_m} (crosses an M block)")
    return Coverage(steps, frozenset(n % ns for _, n, _ in shapes),
                    frozenset(m % ms for m, _, _ in shapes),
                    frozenset(k for _, _, k in shapes if k in steps.k_classes()),
                    frozenset(hit))


__all__ = ["CATALOG", "DEFAULT_STEPS", "K_CLASSES", "Coverage", "Steps", "boundary_names",
           "conv_tails", "coverage", "gemm_tails", "steps_from_kernel", "steps_of"]
