"""The native library's building blocks, seen from Python: FP16 conversion,
CPU detection and the dispatch table, realization reporting, scratch."""

import numpy as np
import pytest

from kbench.errors import Unsupported
from kbench.native import api
from kbench.native import loader as native

NAT = native.load()


def test_fp16_round_trip_is_exact_for_every_value():
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    f = np.array([NAT.lib.kb_f16_to_f32(int(x)) for x in h], dtype=np.float32)
    expected = h.view(np.float16).astype(np.float32)
    nan = np.isnan(expected)
    assert np.array_equal(f[~nan], expected[~nan])
    assert np.isnan(f[nan]).all()
    back = np.array([NAT.lib.kb_f32_to_f16(float(x)) for x in f[~nan]], dtype=np.uint16)
    assert np.array_equal(back, h[~nan])


def test_fp32_to_fp16_rounds_to_nearest_even():
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, size=20000, dtype=np.uint64).astype(np.uint32)
    f = bits.view(np.float32)
    f = f[np.isfinite(f)]
    with np.errstate(over="ignore"):
        expected = f.astype(np.float16).view(np.uint16)
    got = np.array([NAT.lib.kb_f32_to_f16(float(x)) for x in f], dtype=np.uint16)
    assert np.array_equal(got, expected)
    # ties: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> even (1.0)
    assert NAT.lib.kb_f32_to_f16(1.0 + 2.0**-11) == 0x3C00
    assert NAT.lib.kb_f32_to_f16(65519.0) == 0x7BFF
    assert NAT.lib.kb_f32_to_f16(65520.0) == 0x7C00


def test_fp32_to_fp16_ties_go_to_even_everywhere():
    """Every float32 value halfway between two neighbouring FP16 values, in the
    subnormal and the normal range, rounds to the even one (as numpy does)."""
    h = np.arange(0, 0x7BFF, dtype=np.uint16)  # +0 up to the last finite value but one
    lo = h.view(np.float16).astype(np.float64)
    hi = (h + 1).view(np.float16).astype(np.float64)
    mid = ((lo + hi) / 2).astype(np.float32)
    assert np.array_equal(mid.astype(np.float64), (lo + hi) / 2)  # exact in float32
    want = np.where(h % 2 == 0, h, h + 1).astype(np.uint16)
    assert np.array_equal(mid.astype(np.float16).view(np.uint16), want)
    got = np.array([NAT.lib.kb_f32_to_f16(float(x)) for x in mid], dtype=np.uint16)
    assert np.array_equal(got, want)
    neg = np.array([NAT.lib.kb_f32_to_f16(float(-x)) for x in mid[:2048]], dtype=np.uint16)
    assert np.array_equal(neg, want[:2048] | 0x8000)


def test_conv_output_shape_matches_every_catalog_case():
    """kb_conv2d_output_shape against the case's own arithmetic, per axis (the
    catalogs have strides, dilations and paddings that differ between axes)."""
    from kbench.problems import catalog
    cases = [c for name in ("correctness_conv", "emulated", "edge")
             for c in catalog.load_catalog(catalog.resolve_catalog(name)).conv]
    assert any(c.stride[0] != c.stride[1] for c in cases)
    assert any(c.dilation[0] != c.dilation[1] for c in cases)
    for c in cases:
        params = api.ConvParams(c.stride, c.pad, c.dilation, c.groups)
        got = api.conv2d_output_shape((c.n, c.h, c.w, c.c_in),
                                      (c.kh, c.kw, c.c_in // c.groups, c.c_out), params)
        assert got == (c.n, c.out_h, c.out_w, c.c_out), c.name


def test_cpu_and_backends_match_the_architecture():
    cpu = api.cpu_info()
    if cpu.arch == "x86_64":
        assert cpu.features == ()
        assert api.backends() == ["scalar"]
    assert "scalar" in api.backends()
    names = [r.name for r in api.realizations()]
    assert len(names) == len(set(names))


def test_every_call_reports_the_realization_that_ran():
    a = np.ones((3, 4), np.float16)
    b = np.ones((4, 5), np.float16)
    for r in api.realizations():
        if r.op != "gemm":
            continue
        res = api.gemm(a, b, selector=api.Selector(force=r.name))
        assert res.realization.name == r.name
        assert res.realization.backend == r.backend
        assert (res.c[0] == 4).all()
    default = api.gemm(a, b)
    assert default.realization.name in [r.name for r in api.realizations()]


def test_disabling_every_backend_is_an_error_not_a_fallback():
    a = np.ones((2, 2), np.float16)
    sel = api.Selector(disabled=frozenset(api.backends()))
    with pytest.raises(Unsupported) as exc:
        api.gemm(a, a, selector=sel)
    assert exc.value.field == "selector"


def test_isa_cap_hides_backends_above_it():
    assert api.backends(api.Selector(isa_cap="scalar")) == ["scalar"]


def test_environment_isa_cap():
    # read once per process, on first use (suites/test_hotpath.py): a fresh process
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", "from kbench.native import api; "
                          "print(api.backends())"], capture_output=True, text=True, check=True,
                         env={**os.environ, "KBENCH_ISA_CAP": "scalar"}).stdout.strip()
    assert out == "['scalar']"


def test_conv_realizations_agree_bit_for_bit():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 11, 9, 6)).astype(np.float16)
    w = rng.normal(size=(3, 3, 3, 8)).astype(np.float16)
    bias = rng.normal(size=8).astype(np.float16)
    p = api.ConvParams(stride=(2, 1), pad=(1, 2, 0, 1), dilation=(1, 2), groups=2)
    outs = [api.conv2d(x, w, bias, p, selector=api.Selector(force=r.name)).output
            for r in api.realizations() if r.op == "conv2d" and r.backend == "scalar"
            and r.error_model == "gemm"]
    assert len(outs) >= 2
    for o in outs[1:]:
        assert np.array_equal(o.view(np.uint16), outs[0].view(np.uint16))


def test_im2col_scratch_retained_up_to_the_cap_and_freed_above():
    cap = int(NAT.lib.KB_SCRATCH_RETAIN_CAP)
    small_x = np.ones((1, 8, 8, 4), np.float16)
    small_w = np.ones((3, 3, 4, 4), np.float16)
    force = api.Selector(force="conv2d_im2col_gemm_scalar_f32acc")
    api.conv2d(small_x, small_w, selector=force)
    retained_small = api.scratch_retained_bytes()
    assert 0 < retained_small <= cap
    # im2col of 96*96 rows x 3*3*64 columns of FP16 is 10.6 MB > 8 MiB
    big_x = np.ones((1, 96, 96, 64), np.float16)
    big_w = np.full((3, 3, 64, 2), 0.5, np.float16)
    res = api.conv2d(big_x, big_w, params=api.ConvParams(pad=(1, 1, 1, 1)), selector=force)
    assert res.output[0, 48, 48, 0] == 288  # 9 taps * 64 channels * 0.5
    assert api.scratch_retained_bytes() <= cap
    api.conv2d(small_x, small_w, selector=force)
    assert 0 < api.scratch_retained_bytes() <= cap


def test_native_packed_buffer_is_self_describing():
    b = np.arange(35, dtype=np.float16).reshape(5, 7)
    p = api.pack_b(b, backend="scalar", bias=np.ones(7, np.float16))
    assert (p.native, p.backend, p.layout, p.n, p.k) == (True, "scalar", "scalar_f16p16x1b", 7, 5)
    q = api.pack_b(b)
    assert (q.native, q.layout, q.vector_bits) == (False, "portable", 0)
    # portable layout: panels of 16 columns, K rows each, zero padded
    payload = q.data[64:].view(np.float16).reshape(5, 16)
    assert np.array_equal(payload[:, :7], b) and (payload[:, 7:] == 0).all()


def test_winograd_is_declared_and_refuses_other_shapes():
    wino = [r for r in api.realizations() if r.error_model == "winograd_f2x2_3x3"]
    assert wino and wino[0].conv_class == "3x3s1"
    x = np.ones((1, 6, 6, 2), np.float16)
    w = np.ones((3, 3, 2, 2), np.float16)
    force = api.Selector(force=wino[0].name)
    out = api.conv2d(x, w, params=api.ConvParams(pad=(1, 1, 1, 1)), selector=force)
    assert out.output[0, 2, 2, 0] == 18 and out.realization.name == wino[0].name
    with pytest.raises(Unsupported, match="selector.force"):
        api.conv2d(x, w, params=api.ConvParams(stride=(2, 2)), selector=force)
    # default dispatch never picks it for a shape it does not take
    assert api.conv2d(x, w, params=api.ConvParams(dilation=(2, 2))).realization.name != wino[0].name
