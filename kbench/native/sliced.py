"""The native calls behind kbench.native.slices: a GEMM or convolution
already checked and laid out as the library takes it (kb_gemm_problem
array, kb_conv_desc and pointers) run slice by slice, each slice a
kb_gemm_batch or kb_conv2d call on offset pointers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kbench.native import slices
from kbench.native.loader import Native
from kbench.native.slices import Realization, Selector

# the Realization of a filled kb_realization* (api.Realization.from_c)
Made = Callable[[Any], Realization]


def gemm(nat: Native, made: Made, m: int, n: int, k: int, arr: Any, batch: int,
         selector: Selector, listed: Callable[[], Sequence[Realization]],
         plain: bool) -> Realization:
    """The batch of `arr` (kb_gemm_problem[batch], every pointer valid for the
    whole call) in slices; `plain`: B is a plain matrix (columns may be sliced)."""
    ffi = nat.ffi

    def run(r0: int, r1: int, c0: int, c1: int, sel: Selector) -> Realization:
        sub = ffi.new("kb_gemm_problem[]", batch)
        for i in range(batch):
            p, q = arr[i], sub[i]
            q.lda, q.ldb, q.ldc, q.b_size = p.lda, p.ldb, p.ldc, p.b_size
            q.clamp_min, q.clamp_max = p.clamp_min, p.clamp_max
            q.b_is_packed, q.b_is_backend_native_packed = (p.b_is_packed,
                                                           p.b_is_backend_native_packed)
            q.A = p.A + r0 * p.lda
            q.C = p.C + r0 * p.ldc + c0
            q.B = ffi.cast("kb_f16 *", p.B) + c0 if plain else p.B
            q.bias = ffi.NULL if p.bias == ffi.NULL else p.bias + c0
        csel, keep = sel.to_c(nat)
        ran = ffi.new("kb_realization *")
        err = nat.new_error()
        status = nat.lib.kb_gemm_batch(r1 - r0, c1 - c0, k, sub, batch, csel, ran, err)
        del keep
        nat.check(status, err)
        return made(ran)

    return slices.gemm(m, n, k, batch, selector, listed, run, plain)


def conv(nat: Native, made: Made, d: Any, x: Any, w: Any, bias: Any, out: Any,
         selector: Selector, out_hw: tuple[int, int]) -> Realization:
    """The convolution of desc `d` (pointers valid for the whole call) in
    slices: per image, and in bands of output rows when no padding row lies
    beyond the kernel's reach (then every band reads some input row)."""
    ffi = nat.ffi
    out_h, out_w = out_hw
    reach = (d.kh - 1) * d.dil_h
    rows_ok = d.pad_top <= reach and d.pad_bottom <= reach
    image_in, image_out = d.h * d.w * d.c_in, out_h * out_w * d.c_out

    def run(img: int, r0: int, r1: int, sel: Selector) -> Realization:
        sub = ffi.new("kb_conv_desc *")
        sub[0] = d[0]
        sub.n = 1
        first = 0
        if (r0, r1) != (0, out_h):
            start = r0 * d.stride_h - d.pad_top  # the input rows output rows r0..r1 read
            end = (r1 - 1) * d.stride_h - d.pad_top + reach + 1
            first, last = max(start, 0), min(end, d.h)
            sub.h, sub.pad_top, sub.pad_bottom = last - first, first - start, end - last
        csel, keep = sel.to_c(nat)
        ran = ffi.new("kb_realization *")
        err = nat.new_error()
        status = nat.lib.kb_conv2d(sub, x + img * image_in + first * d.w * d.c_in, w, bias,
                                   out + img * image_out + r0 * out_w * d.c_out, csel, ran,
                                   err)
        del keep
        nat.check(status, err)
        return made(ran)

    row_flops = 2.0 * out_w * d.c_out * d.kh * d.kw * (d.c_in // max(1, d.groups))
    return slices.conv(d.n, out_h, row_flops, rows_ok, selector, run)


def conv_flops(d: Any, out_hw: tuple[int, int]) -> float:
    return 2.0 * d.n * out_hw[0] * out_hw[1] * d.c_out * d.kh * d.kw * (
        d.c_in // max(1, d.groups))


__all__ = ["conv", "conv_flops", "gemm"]
