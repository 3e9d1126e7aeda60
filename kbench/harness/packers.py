"""Packer conformance of plugin realizations: what kbench can see wrong in a
user's packers without a kernel to catch it by luck.

- Determinism of the packed bytes: each packer (a whole-call realization's
  pack_b, a micro-kernel realization's rhs_pack and lhs_pack) packs the
  same operand twice, into destinations filled first with 0x00 and with
  0xA5. Bytes that differ are bytes the packer leaves unwritten (padding it
  forgot to zero): reported with the first such offset, decoded in the
  declared layout when there is one.
- Declared layouts (plugin ABI 2: rhs_layout, lhs_layout): the packed bytes
  must equal kbench's own packing of that layout (kbench.native.layouts),
  byte for byte and padding included, at the target's vector length.
- Declarations (plugin ABI 3): a packer that takes no bias packs every B
  without one (and its layout is compared with zeros in the bias slots); one
  that leaves its padding unspecified has every byte but the layout's
  padding compared, unwritten padding bytes allowed, and a third check: the
  same GEMM with its B packed into destinations filled with 0x00, 0xA5 and
  0x7E (FP16 NaN) must give the same C, bit for bit (the padding must not
  reach the result).

Operands are FP16 normal values with their row padding (ldb > N, lda > K)
poisoned with NaN, so a packer that reads past a row copies a NaN into the
layout. The shapes cross block and k-group boundaries: N and M of 1, just
under and over a block, K of 1 and odd."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kbench.errors import KbenchError, Unsupported
from kbench.harness.probes import bias_for_call
from kbench.native import api
from kbench.native.layouts import Layout
from kbench.native.plugins import PluginRealizationInfo
from kbench.native.sme_layout import HEADER_SIZE
from kbench.targets.spec import Target

FILLS = (0x00, 0xA5)
PADDING_FILLS = (0x00, 0xA5, 0x7E)  # 0x7E7E is an FP16 NaN
# (outer, K): N for an RHS packer, M for an LHS packer
SHAPES = ((1, 1), (7, 3), (37, 21), (130, 64), (9, 2))


@dataclass(frozen=True)
class Check:
    """One conformance check of one packer of one realization."""

    packer: str  # rhs | lhs
    check: str  # determinism | layout | padding
    problem: str = ""  # "" when it conforms
    shapes: int = 0  # how many shapes it covered
    note: str = ""  # what a check that holds says (its verdict's message)

    @property
    def ok(self) -> bool:
        return not self.problem


def _poisoned(rows: int, cols: int, seed: int) -> np.ndarray:
    """rows x cols normal FP16 values in rows 3 elements longer, padded with NaN."""
    rng = np.random.default_rng(seed)
    buf = np.full((rows, cols + 3), np.float16(np.nan), np.float16)
    buf[:, :cols] = rng.standard_normal((rows, cols)).astype(np.float16)
    return buf[:, :cols]


def _first_difference(x: np.ndarray, y: np.ndarray) -> int:
    """The first byte offset at which two byte arrays differ (or where the
    shorter one ends)."""
    n = min(x.size, y.size)
    diff = np.flatnonzero(x[:n] != y[:n])
    return int(diff[0]) if diff.size else n


def _decoded(layout: Layout | None, offset: int, outer: int, k: int) -> str:
    if layout is None:
        return ""
    if layout.name:
        return f" ({layout.where(offset, outer, k)})"
    # no declared layout: the kernel's own blocking, read as KleidiAI's block layout
    name = f"x16p{layout.block}x{layout.kr}" + ("b" if layout.rhs else "")
    return f" (where {name} keeps {layout.where(offset, outer, k)})"


def _assumed(rhs: bool, block: int, kr: int) -> Layout | None:
    """The kernel's own mr/nr and kr as a layout to decode offsets by (a
    micro-kernel realization that declares none); None without them."""
    return Layout("", rhs, block, kr) if block and kr else None


def _rhs_bytes(target: Target, info: PluginRealizationInfo, b: np.ndarray,
               bias: np.ndarray | None, fill: int) -> np.ndarray:
    """The plugin's packed B: its pack_b's bytes, or (micro-kernel form) the
    rhs_pack bytes after kbench's header; without the bias when its packer
    takes none."""
    packed = target.pack_plugin(info.name, b, bias if info.packs_bias else None, fill)
    return packed[HEADER_SIZE:] if info.form == "micro-kernel" else packed


def _masked(x: np.ndarray, keep: np.ndarray | None) -> np.ndarray:
    """The bytes of x a comparison looks at (all, or those `keep` marks)."""
    if keep is None or keep.size != x.size:
        return x
    return np.where(keep, x, 0).astype(np.uint8)


def check_rhs(target: Target, info: PluginRealizationInfo, svl_bits: int) -> list[Check]:
    """Determinism, and the declared layout if any, of a realization's packed B
    (every byte but the layout's padding when it declares that unspecified)."""
    layout = (Layout.parse(info.rhs_layout, True, svl_bits) if info.rhs_layout else None)
    decode = layout or _assumed(True, info.nr, info.kr)
    loose = info.padding_unspecified and layout is not None
    det, lay = "", ""
    for i, (n, k) in enumerate(SHAPES):
        b, bias = _poisoned(k, n, 2 * i), _poisoned(1, n, 2 * i + 1)[0]
        keep = ~layout.padding(n, k) if loose and layout is not None else None
        first, second = (_masked(_rhs_bytes(target, info, b, bias, f), keep) for f in FILLS)
        if not det and not np.array_equal(first, second):
            at = _first_difference(first, second)
            what = "byte(s) left unwritten" + (" that are not padding" if loose else "")
            det = (f"its packed B of N = {n}, K = {k} differs between a destination filled with "
                   f"0x00 and one filled with 0xA5 from byte {at}{_decoded(decode, at, n, k)}: "
                   f"{int((first != second).sum())} {what}")
        if layout is not None and not lay:
            want = _masked(layout.pack_rhs(b, bias if info.packs_bias else None), keep)
            if first.size != want.size or not np.array_equal(first, want):
                at = _first_difference(first, want)
                lay = _mismatch("B", info.rhs_layout, layout, first, want, at, n, k)
    declared = " (declared unspecified)" if loose else ""
    checks = [Check("rhs", "determinism", det, len(SHAPES),
                    ("every byte but its padding written" if loose else "every byte written")
                    + declared)]
    if layout is not None:
        checks.append(Check("rhs", "layout", lay or _queries(info, layout, info.nr, "nr"),
                            len(SHAPES), f"conforms to {info.rhs_layout}"
                            + (", its padding aside" + declared if loose else "")))
    if loose:
        checks.append(check_padding(target, info))
    return checks


def check_padding(target: Target, info: PluginRealizationInfo, n: int = 37, k: int = 21
                  ) -> Check:
    """A packer that leaves its padding unspecified: the GEMM with B packed into
    destinations filled with each of PADDING_FILLS gives the same C, bit for
    bit (small integers: exact), and the right one."""
    r = next((x for x in target.info().realizations if x.name == info.name), None)
    if r is None:
        return Check("rhs", "padding", f"{info.name} is not listed on {target.name}")
    m = min(5, r.max_m) if r.max_m else 5
    rng = np.random.default_rng(5)
    b = rng.integers(-3, 4, size=(k, n)).astype(np.float16)
    bias = rng.integers(-3, 4, size=n).astype(np.float16)
    a = rng.integers(-3, 4, size=(m, k)).astype(np.float16)
    call_bias = bias_for_call(r, bias)
    with_bias = info.packs_bias or call_bias is not None
    want = (a.astype(np.float64) @ b + (bias if with_bias else 0)).astype(np.float16)
    outs = []
    for fill in PADDING_FILLS:
        packed = target.pack_plugin(info.name, b, bias if info.packs_bias else None, fill)
        c = np.full((m, n), np.float16(-7), np.float16)
        problem = api.RawProblem(a=a, lda=k, b=packed, ldb=0, c=c, ldc=n, bias=call_bias,
                                 b_size=packed.size, b_is_packed=True,
                                 b_is_backend_native_packed=True)
        try:
            target.engine.gemm_raw(m, n, k, [problem], api.Selector(force=info.name,
                                                                          plugins=True))
        except KbenchError as exc:
            return Check("rhs", "padding", f"a GEMM with its B packed into a destination filled "
                                           f"with 0x{fill:02x} failed: {exc}")
        outs.append(c)
    for fill, c in zip(PADDING_FILLS, outs, strict=True):
        wrong = c.view(np.uint16) != want.view(np.uint16)
        if wrong.any():
            i, j = (int(x) for x in np.argwhere(wrong)[0])
            return Check("rhs", "padding", (
                f"the result depends on its unspecified padding: with B of N = {n}, K = {k} "
                f"packed into a destination filled with 0x{fill:02x}, {int(wrong.sum())} of "
                f"{wrong.size} outputs are wrong; first at ({i}, {j}): got {float(c[i, j])!r}, "
                f"expected {float(want[i, j])!r}"), 1)
    return Check("rhs", "padding", "", 1, "C does not depend on its padding (B packed into "
                 + ", ".join(f"0x{f:02x}" for f in PADDING_FILLS) + " gives the same bits)")


def check_lhs(target: Target, info: PluginRealizationInfo, svl_bits: int) -> list[Check]:
    """The same for a micro-kernel realization's LHS packer; [] when it reads
    the LHS in place (no packer)."""
    layout = (Layout.parse(info.lhs_layout, False, svl_bits) if info.lhs_layout else None)
    decode = layout or _assumed(False, info.mr, info.kr)
    det, lay = "", ""
    for i, (m, k) in enumerate(SHAPES):
        a = _poisoned(m, k, 100 + i)
        try:
            first, second = (target.pack_plugin_lhs(info.name, a, f) for f in FILLS)
        except Unsupported:
            return []  # a kernel that reads its LHS in place
        if not det and not np.array_equal(first, second):
            at = _first_difference(first, second)
            det = (f"its packed LHS of M = {m}, K = {k} differs between a destination filled "
                   f"with 0x00 and one filled with 0xA5 from byte {at}"
                   f"{_decoded(decode, at, m, k)}: {int((first != second).sum())} byte(s) left "
                   "unwritten")
        if layout is not None and not lay:
            want = layout.pack_lhs(a)
            if first.size != want.size or not np.array_equal(first, want):
                at = _first_difference(first, want)
                lay = _mismatch("LHS", info.lhs_layout, layout, first, want, at, m, k)
    checks = [Check("lhs", "determinism", det, len(SHAPES), "every byte written")]
    if layout is not None:
        checks.append(Check("lhs", "layout", lay or _queries(info, layout, info.mr, "mr"),
                            len(SHAPES), f"conforms to {info.lhs_layout}"))
    return checks


def _queries(info: PluginRealizationInfo, layout: Layout, block: int, name: str) -> str:
    """'' when the micro-kernel's own queries (get_nr or get_mr, and get_kr)
    give the declared layout's block and KR; else the disagreement: a caller
    following the queries would call the packer with other nr, mr or kr than
    its layout has (kbench reads them only from a micro-kernel GEMM)."""
    if info.form != "micro-kernel" or not info.kr:
        return ""
    if block and block != layout.block or info.kr != layout.kr:
        return (f"its micro-kernel's get_{name}() is {block} and get_kr() is {info.kr}, its "
                f"declared layout {layout.name} has {name.upper()} = {layout.block} and "
                f"KR = {layout.kr} at this vector length")
    return ""


def _mismatch(what: str, name: str, layout: Layout, got: np.ndarray, want: np.ndarray,
              at: int, outer: int, k: int) -> str:
    dims = f"N = {outer}" if layout.rhs else f"M = {outer}"
    n = min(got.size, want.size)
    sizes = "" if got.size == want.size else f"; it is {got.size} bytes, the layout {want.size}"
    if at >= n:
        return f"its packed {what} of {dims}, K = {k}: {sizes[2:]} (declared layout {name})"
    differ = int((got[:n] != want[:n]).sum())
    return (f"its packed {what} of {dims}, K = {k} differs from the declared layout {name} "
            f"(kbench's packing of it) at byte {at} ({layout.where(at, outer, k)}): "
            f"0x{int(got[at]):02x} where the layout holds 0x{int(want[at]):02x}; "
            f"{differ} byte(s) differ{sizes}")


def checks_for(target: Target, info: PluginRealizationInfo, packs_b: bool,
               svl_bits: int) -> list[Check]:
    """Every conformance check that applies to a plugin GEMM realization; a
    packer that raises is a failed check naming the error."""
    out: list[Check] = []
    for side, run in (("rhs", check_rhs), ("lhs", check_lhs)):
        if side == "rhs" and not packs_b:
            continue
        if side == "lhs" and info.form != "micro-kernel":
            continue
        try:
            out += run(target, info, svl_bits)
        except (KbenchError, ValueError) as exc:
            out.append(Check(side, "determinism", f"packing failed: {type(exc).__name__}: {exc}"))
    return out


__all__ = ["FILLS", "SHAPES", "Check", "check_lhs", "check_rhs", "checks_for"]
