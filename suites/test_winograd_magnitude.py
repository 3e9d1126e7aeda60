"""The Winograd magnitude sum S_w against the same definition written as
loops, one tile and one output at a time, on the shapes its vectorised form
can get wrong: padding that differs on each side, output sizes that leave a
partial 2x2 tile, groups, a bias, and weights that are not 3x3."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.judge import winograd


def _by_loops(x, w, bias, pad, groups):
    n, h, wd, c_in = x.shape
    _, _, cg, c_out = w.shape
    og = c_out // groups
    out_h, out_w = h + pad[0] + pad[1] - 2, wd + pad[2] + pad[3] - 2
    at, bt, g = np.abs(winograd.AT), np.abs(winograd.BT), np.abs(winograd.G)
    xa, wa = np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64))

    def padded(b, r, c, ch):
        r, c = r - pad[0], c - pad[2]
        return xa[b, r, c, ch] if 0 <= r < h and 0 <= c < wd else 0.0

    s = np.zeros((n, out_h, out_w, c_out))
    for b in range(n):
        for ty in range(-(-out_h // 2)):
            for tx in range(-(-out_w // 2)):
                for o in range(c_out):
                    grp = o // og
                    m = np.zeros((4, 4))
                    for p in range(4):
                        for q in range(4):
                            for cl in range(cg):
                                ch = grp * cg + cl
                                v = sum(bt[p, a] * bt[q, e] * padded(b, 2 * ty + a, 2 * tx + e, ch)
                                        for a in range(4) for e in range(4))
                                u = sum(g[p, a] * g[q, e] * wa[a, e, cl, o]
                                        for a in range(3) for e in range(3))
                                m[p, q] += v * u
                    for i in range(2):
                        for j in range(2):
                            oy, ox = 2 * ty + i, 2 * tx + j
                            if oy < out_h and ox < out_w:
                                s[b, oy, ox, o] = sum(at[i, p] * at[j, q] * m[p, q]
                                                      for p in range(4) for q in range(4))
    if bias is not None:
        s += np.abs(bias.astype(np.float64))
    return s


@pytest.mark.parametrize(("shape", "pad", "groups", "c_out", "with_bias"), [
    ((1, 5, 6, 4), (0, 1, 2, 0), 2, 4, False),   # every pad different, odd output height
    ((2, 6, 5, 2), (2, 0, 0, 1), 1, 3, True),    # the other sides, odd output width
    ((1, 4, 4, 6), (1, 1, 1, 1), 3, 6, True),    # three groups of two channels
])
def test_the_magnitude_sum_is_its_definition(shape, pad, groups, c_out, with_bias):
    rng = np.random.default_rng(sum(shape) + groups)
    x = rng.uniform(-2, 2, shape).astype(np.float16)
    w = rng.uniform(-1, 1, (3, 3, shape[3] // groups, c_out)).astype(np.float16)
    bias = rng.uniform(-1, 1, c_out).astype(np.float16) if with_bias else None
    got = winograd.magnitude_sum(x, w, bias, pad, groups)
    want = _by_loops(x, w, bias, pad, groups)
    assert got.shape == want.shape == (shape[0], shape[1] + pad[0] + pad[1] - 2,
                                       shape[2] + pad[2] + pad[3] - 2, c_out)
    assert np.allclose(got, want, rtol=1e-12, atol=0)
    assert (got > 0).all()


@pytest.mark.parametrize("kernel", [(3, 1), (1, 3), (5, 5)])
def test_weights_that_are_not_3x3_are_refused(kernel):
    x = np.ones((1, 6, 6, 2), np.float16)
    w = np.ones((*kernel, 2, 2), np.float16)
    with pytest.raises(ValueError, match=rf"needs 3x3 weights, not {kernel[0]}x{kernel[1]}"):
        winograd.magnitude_sum(x, w, None, (1, 1, 1, 1), 1)
