"""The Python API refuses what it cannot compute correctly, with a typed
error naming the field and the output untouched: outputs that are not
writable, packed buffers that are not one contiguous run of bytes, outputs
that share memory with an input, malformed clamps, threads, pads and
parameter objects, outputs too large to allocate. (ci/sanitize.sh also runs
this file under ASan + UBSan: an out-of-bounds read is a failure there.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kbench
from kbench.errors import (
    ContractViolation,
    InvalidArgument,
    InvalidPackedB,
    KbenchError,
    OutOfMemory,
    Unsupported,
)
from kbench.judge import oracle
from kbench.native import api

RNG = np.random.default_rng(16)


def f16(*shape: int) -> np.ndarray:
    return RNG.integers(-3, 4, size=shape).astype(np.float16)


def run_isolated(code: str) -> subprocess.CompletedProcess[str]:
    """Runs a snippet in a fresh interpreter: a call that would segfault
    must fail the test, not the test session."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


# ---- outputs that are not writable ----------------------------------------------------


def test_conv2d_refuses_a_read_only_memmap_output(tmp_path):
    """Before: the kernel wrote into a read-only mapping: SIGSEGV."""
    res = run_isolated(f"""
        import numpy as np, kbench
        path = {str(tmp_path / "out.bin")!r}
        np.zeros((1, 4, 4, 4), np.float16).tofile(path)
        out = np.memmap(path, dtype=np.float16, mode="r", shape=(1, 4, 4, 4))
        x = np.ones((1, 6, 6, 4), np.float16); w = np.ones((3, 3, 4, 4), np.float16)
        try:
            kbench.conv2d(x, w, out=out)
        except kbench.InvalidArgument as exc:
            print("refused", exc.field)
    """)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert res.stdout.split() == ["refused", "output"]


def test_conv2d_refuses_an_output_over_immutable_bytes():
    """Before: np.frombuffer(bytes) as `out` rewrote an immutable bytes object."""
    raw = bytes(2 * 4 * 4 * 4)
    out = np.frombuffer(raw, dtype=np.float16).reshape(1, 4, 4, 4)
    with pytest.raises(InvalidArgument) as exc:
        kbench.conv2d(f16(1, 6, 6, 4), f16(3, 3, 4, 4), out=out)
    assert exc.value.field == "output"
    assert raw == bytes(2 * 4 * 4 * 4)


def test_gemm_refuses_an_output_over_immutable_bytes():
    raw = bytes(2 * 4 * 4)
    out = np.frombuffer(raw, dtype=np.float16).reshape(4, 4)
    with pytest.raises(InvalidArgument) as exc:
        kbench.gemm(f16(4, 4), f16(4, 4), out=out)
    assert exc.value.field == "problems[0].c" and raw == bytes(32)


# ---- packed buffers that are not one run of bytes ------------------------------------


def _reversed_copy(packed: kbench.PackedB) -> np.ndarray:
    """The same bytes as packed.data, held by a view with a negative stride."""
    backwards = packed.data[::-1].copy()
    view = backwards[::-1]
    assert np.array_equal(view, packed.data) and view.strides == (-1,)
    return view


def test_gemm_refuses_a_negative_stride_packed_buffer():
    """Before: the library read the header and payload forward from the
    view's first element, i.e. past the end of its memory (ASan:
    heap-buffer-overflow)."""
    b = f16(8, 24)
    packed = kbench.pack_b(b)
    bad = kbench.PackedB(_reversed_copy(packed), packed.n, packed.k, packed.native,
                         packed.backend, packed.layout, packed.vector_bits)
    with pytest.raises(InvalidArgument) as exc:
        kbench.gemm(f16(3, 8), bad)
    assert exc.value.field == "problems[0].b.data"
    strided = kbench.PackedB(np.repeat(packed.data, 2)[::2], packed.n, packed.k, False,
                             packed.backend, packed.layout, 0)
    with pytest.raises(InvalidArgument, match="contiguous"):
        kbench.gemm(f16(3, 8), strided)


def test_describe_packed_refuses_a_negative_stride_view():
    packed = kbench.pack_b(f16(8, 24))
    with pytest.raises(InvalidArgument) as exc:
        api.describe_packed(_reversed_copy(packed))
    assert exc.value.field == "B"


@pytest.mark.parametrize("damage,field", [
    (lambda d: d.__setitem__(0, d[0] ^ 1), "B.magic"),
    (lambda d: d.__setitem__(24, d[24] ^ 1), "B.header_checksum"),
    (lambda d: d.__setitem__(70, d[70] ^ 1), "B.payload_checksum"),
])
def test_describe_packed_checks_the_buffer(damage, field):
    """describe_packed reads through the library (kb_describe_packed): a
    damaged buffer is a ContractViolation naming the header field."""
    data = kbench.pack_b(f16(8, 24)).data.copy()
    assert api.describe_packed(data).n == 24
    damage(data)
    with pytest.raises(ContractViolation) as exc:
        api.describe_packed(data)
    assert exc.value.field == field
    with pytest.raises(ContractViolation, match="truncated"):
        api.describe_packed(kbench.pack_b(f16(8, 24)).data[:100].copy())


# ---- outputs that share memory with an input ------------------------------------------


@pytest.mark.parametrize("alias", ["a", "b", "bias", "a_rows"])
def test_gemm_refuses_an_output_sharing_memory_with_an_input(alias):
    """Before: the kernel overwrote A (or B) while still reading it, and
    returned a wrong result without a word."""
    a, b, bias = f16(8, 8), f16(8, 8), f16(8)
    kwargs: dict = {}
    if alias == "a":
        out = a
    elif alias == "b":
        out = b
    elif alias == "a_rows":  # a view that overlaps A's last rows
        big = f16(12, 8)
        a, out = big[:8], big[4:]
    else:
        store = f16(8, 8)
        bias = store[0]
        kwargs["bias"] = bias
        out = store
    before = (a.copy(), b.copy(), out.copy())
    with pytest.raises(InvalidArgument, match="shares memory") as exc:
        kbench.gemm(a, b, out=out, **kwargs)
    assert exc.value.field == "problems[0].c"
    assert np.array_equal(out, before[2]) and np.array_equal(a, before[0])


def test_gemm_batch_refuses_outputs_that_overlap_each_other():
    c = np.zeros((8, 8), np.float16)
    problems = [kbench.GemmOperands(f16(4, 8), f16(8, 8), c[:4]),
                kbench.GemmOperands(f16(4, 8), f16(8, 8), c[2:6])]
    with pytest.raises(InvalidArgument, match=r"shares memory with problems\[0\]\.c") as exc:
        kbench.gemm_batch(problems)
    assert exc.value.field == "problems[1].c" and not c.any()


def test_disjoint_views_of_one_buffer_are_fine():
    """Columns of one array, interleaved but not shared, are not aliasing."""
    store = f16(8, 16)
    a, out = store[:, :8], store[:, 8:]
    b = f16(8, 8)
    expected = oracle.round16(a.astype(np.float64) @ b.astype(np.float64))
    res = kbench.gemm(a, b, out=out)
    assert np.array_equal(res.c[0], expected) and res.c[0] is out


def _counting_overlaps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the pairwise memory comparisons of the alias check."""
    calls = [0]
    pairwise = api._overlaps

    def counted(x: np.ndarray, y: np.ndarray) -> bool:
        calls[0] += 1
        return pairwise(x, y)
    monkeypatch.setattr(api, "_overlaps", counted)
    return calls


def _batch(n: int, out: np.ndarray | None = None) -> list[kbench.GemmOperands]:
    """n problems [2, 4] x [4, 3]: own A, one B shared by all, outputs in
    `out`'s column blocks when given (interleaved, disjoint)."""
    b = f16(4, 3)
    return [kbench.GemmOperands(f16(2, 4), b, None if out is None else out[:, 3 * i:3 * i + 3])
            for i in range(n)]


@pytest.mark.parametrize("columns", [False, True])
def test_the_alias_check_of_a_batch_compares_no_pair_of_disjoint_operands(monkeypatch,
                                                                           columns):
    """Before: every output was compared with every input and earlier output,
    ~3.5 n^2 comparisons (2,000 problems: 16 s). Now one sort of the byte
    intervals clears a batch without any pairwise comparison, however long."""
    calls = _counting_overlaps(monkeypatch)
    for n in (300, 600):
        out = np.zeros((2, 3 * n), np.float16) if columns else None
        res = kbench.gemm_batch(_batch(n, out))
        assert len(res.c) == n and calls[0] == 0
        if columns:
            assert res.c[n - 1].base is out and out.any()


@pytest.mark.parametrize("where", ["c", "a"])
def test_the_alias_check_catches_problem_1999_sharing_with_problem_0(monkeypatch, where):
    calls = _counting_overlaps(monkeypatch)
    out = np.zeros((2, 3 * 2000), np.float16)
    problems = _batch(2000, out)
    shared = problems[0].c if where == "c" else problems[0].a[:, :3]
    problems[1999] = kbench.GemmOperands(problems[1999].a, problems[1999].b, shared)
    with pytest.raises(InvalidArgument, match=rf"shares memory with problems\[0\]\.{where}"
                       ) as exc:
        kbench.gemm_batch(problems)
    assert exc.value.field == "problems[1999].c" and not out.any()
    assert calls[0] <= 4  # only the operands the sort found involved are compared


def test_the_alias_check_catches_two_overlapping_outputs_among_2000():
    rows = np.zeros((2 * 2000, 3), np.float16)
    problems = _batch(2000)
    for i, p in enumerate(problems):
        start = 2 * i - (1 if i == 1234 else 0)  # problem 1234 overlaps 1233 by one row
        problems[i] = kbench.GemmOperands(p.a, p.b, rows[start:start + 2])
    with pytest.raises(InvalidArgument, match=r"shares memory with problems\[1233\]\.c") as exc:
        kbench.gemm_batch(problems)
    assert exc.value.field == "problems[1234].c" and not rows.any()


@pytest.mark.parametrize("force", ["conv2d_direct_scalar_f32acc",
                                   "conv2d_winograd_f2x2_3x3_scalar_f32acc",
                                   "conv2d_im2col_gemm_scalar_f32acc"])
def test_conv2d_refuses_an_output_that_is_its_input(force):
    x = f16(1, 6, 6, 4)
    keep = x.copy()
    params = kbench.ConvParams(pad=(1, 1, 1, 1))
    with pytest.raises(InvalidArgument, match="shares memory with input") as exc:
        kbench.conv2d(x, f16(3, 3, 4, 4), params=params, out=x,
                      selector=kbench.Selector(force=force))
    assert exc.value.field == "output" and np.array_equal(x, keep)


# ---- views that reach outside their buffer --------------------------------------------


OUTSIDE_VIEWS = """
    import numpy as np, kbench
    from numpy.lib.stride_tricks import as_strided
    from kbench.native import api
    from kbench.native.calls import ConvDesc
    from kbench.targets.inprocess import InProcessEngine

    HUGE = 2**62  # bytes between rows: far outside any buffer
    buf = np.ones((8, 8), np.float16)
    ones = lambda *shape: np.ones(shape, np.float16)

    class Before:  # an array interface 16 bytes before buf's memory, as as_strided builds one
        def __init__(self):
            self.base = buf
            self.__array_interface__ = {
                "data": (buf.__array_interface__["data"][0] - 16, False), "shape": (4, 8),
                "strides": (16, 2), "typestr": "<f2", "version": 3}

    engine = InProcessEngine()
    flat = np.zeros(64, np.float16)
    cases = {
        "a_row_stride": lambda: kbench.gemm(as_strided(buf, (4, 8), (HUGE, 2)), ones(8, 4)),
        "b_row_stride": lambda: kbench.gemm(ones(4, 8), as_strided(buf, (8, 4), (HUGE, 2))),
        "c_row_stride": lambda: kbench.gemm(ones(4, 8), ones(8, 8),
                                            out=as_strided(buf, (4, 8), (HUGE, 2))),
        "c_too_many_rows": lambda: kbench.gemm(ones(12, 8), ones(8, 8),
                                               out=as_strided(buf, (12, 8), (16, 2))),
        "a_before_buffer": lambda: kbench.gemm(np.asarray(Before()), ones(8, 4)),
        "bias_negative_stride": lambda: kbench.gemm(
            ones(4, 8), ones(8, 8), bias=as_strided(buf[0], (8,), (-HUGE,))),
        "packed_past_end": lambda: api.describe_packed(
            as_strided(np.zeros(64, np.uint8), (4096,), (1,))),
        "pack_b": lambda: kbench.pack_b(as_strided(buf, (8, 8), (HUGE, 2))),
        "conv_input": lambda: kbench.conv2d(as_strided(buf, (1, 6, 6, 4), (0, HUGE, 8, 2)),
                                            ones(3, 3, 4, 4)),
        "conv_output": lambda: kbench.conv2d(  # contiguous, but twice its buffer's size
            ones(1, 6, 6, 4), ones(3, 3, 4, 4), out=as_strided(buf[4:], (1, 4, 4, 4),
                                                               (128, 32, 8, 2))),
        "raw_a": lambda: api.gemm_raw(4, 8, 8, [api.RawProblem(
            as_strided(flat, (64,), (HUGE,)), 8, flat, 8, np.zeros(32, np.float16), 8)]),
        "engine_conv_input": lambda: engine.conv_raw(
            ConvDesc(1, 6, 6, 4, 4, 3, 3), as_strided(flat, (144,), (HUGE,)), ones(144),
            None, np.zeros(64, np.float16)),
        "engine_pack_b": lambda: engine.pack_raw(None, 8, 8, as_strided(flat, (64,), (HUGE,)),
                                                 8),
    }
    for name, call in cases.items():
        try:
            call()
            print(name, "accepted")
        except kbench.InvalidArgument as exc:
            assert "the view reaches outside its buffer" in str(exc), exc
            print(name, exc.field)
"""


def test_views_reaching_outside_their_buffer_are_refused_naming_the_argument():
    """Before: an as_strided view with a 2^62-byte row stride reached the
    library, which read (or wrote) 2^62 bytes past the array: SIGSEGV."""
    res = run_isolated(OUTSIDE_VIEWS)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert dict(line.split() for line in res.stdout.splitlines()) == {
        "a_row_stride": "problems[0].a", "b_row_stride": "problems[0].b",
        "c_row_stride": "problems[0].c", "c_too_many_rows": "problems[0].c",
        "a_before_buffer": "problems[0].a", "bias_negative_stride": "problems[0].bias",
        "packed_past_end": "B", "pack_b": "B", "conv_input": "input",
        "conv_output": "output", "raw_a": "problems[0].a", "engine_conv_input": "input",
        "engine_pack_b": "B"}


def test_a_view_ending_exactly_at_its_buffer_end_is_fine():
    from numpy.lib.stride_tricks import as_strided
    store = f16(8, 8)
    a = as_strided(store[4:], (4, 8), (16, 2))  # the last four rows, last byte included
    b = f16(8, 4)
    res = kbench.gemm(a, b)
    expected = oracle.round16(store[4:].astype(np.float64) @ b.astype(np.float64))
    assert np.array_equal(res.c[0], expected)
    past = as_strided(store[4:], (5, 8), (16, 2))  # one row more: 16 bytes past the end
    with pytest.raises(InvalidArgument, match=r"problems\[0\]\.a: the view reaches outside its "
                       r"buffer \(bytes 64\.\.144 of a 128-byte buffer") as exc:
        kbench.gemm(past, f16(8, 4))
    assert exc.value.field == "problems[0].a"


def test_views_of_memory_kbench_does_not_own_are_checked_against_it(tmp_path):
    """A memmap and an array over bytes: the buffer is the mapping, the bytes."""
    raw = bytes(2 * 8 * 8)
    over_bytes = np.frombuffer(raw, np.float16).reshape(8, 8)
    assert kbench.gemm(over_bytes[2:6], f16(8, 4)).c[0].shape == (4, 4)
    path = tmp_path / "m.bin"
    np.ones(64, np.float16).tofile(path)
    mapped = np.memmap(path, dtype=np.float16, mode="r+", shape=(8, 8))
    assert kbench.gemm(mapped, f16(8, 4)).c[0].shape == (8, 4)
    from numpy.lib.stride_tricks import as_strided
    with pytest.raises(InvalidArgument, match="reaches outside its buffer") as exc:
        kbench.gemm(as_strided(mapped, (9, 8), (16, 2)), f16(8, 4))
    assert exc.value.field == "problems[0].a"


# ---- malformed arguments: typed errors naming the field -------------------------------


def _packed_fields() -> dict:
    p = kbench.pack_b(f16(8, 24))
    return {"data": p.data, "n": p.n, "k": p.k, "native": p.native, "backend": p.backend,
            "layout": p.layout, "vector_bits": p.vector_bits}


@pytest.mark.parametrize("name,value", [
    ("n", -1), ("n", 0), ("n", True), ("n", 24.0), ("n", "24"), ("k", -1), ("k", None),
    ("data", [0, 1, 2]), ("data", np.zeros(8, np.float16)), ("backend", None),
    ("layout", 1), ("vector_bits", -1), ("vector_bits", 0.5),
])
def test_a_packed_b_with_a_bad_field_is_a_value_error_naming_it(name, value):
    """Before: PackedB(n=-1, ...) was accepted and the call raised cffi's
    OverflowError (can't convert negative int to unsigned), naming nothing."""
    with pytest.raises(ValueError, match=rf"^PackedB\.{name}: ") as exc:
        kbench.PackedB(**{**_packed_fields(), name: value})
    assert isinstance(exc.value, InvalidPackedB) and isinstance(exc.value, InvalidArgument)
    assert isinstance(exc.value, KbenchError) and exc.value.field == f"PackedB.{name}"


def test_a_packed_b_with_numpy_integer_fields_is_accepted():
    fields = _packed_fields()
    packed = kbench.PackedB(**{**fields, "n": np.int64(fields["n"]), "k": np.uint32(fields["k"]),
                               "vector_bits": np.int32(0)})
    assert kbench.gemm(f16(3, 8), packed).c[0].shape == (3, 24)




@pytest.mark.parametrize("clamp", [(1.0,), (0.0, 1.0, 2.0), "ab", 3.0, (None, 1.0),
                                   ("0", "1")])
def test_a_malformed_clamp_is_refused_naming_it(clamp):
    """Before: a one-element tuple raised a bare ValueError (unpacking)."""
    with pytest.raises(InvalidArgument) as exc:
        kbench.gemm(f16(2, 2), f16(2, 2), clamp=clamp)
    assert exc.value.field == "problems[0].clamp"
    with pytest.raises(InvalidArgument) as exc:
        kbench.conv2d(f16(1, 4, 4, 2), f16(3, 3, 2, 2), params=kbench.ConvParams(clamp=clamp))
    assert exc.value.field == "params.clamp"


@pytest.mark.parametrize("threads", [2**31, -1, 2**64, 1.5, True, "4"])
def test_threads_out_of_the_c_range_are_refused(threads):
    """Before: threads = 2**31 raised OverflowError from cffi."""
    with pytest.raises(InvalidArgument) as exc:
        kbench.gemm(f16(2, 2), f16(2, 2), selector=kbench.Selector(threads=threads))
    assert exc.value.field == "selector.threads"


def test_the_largest_c_thread_count_is_accepted():
    res = kbench.gemm(f16(2, 2), f16(2, 2), selector=kbench.Selector(threads=2**31 - 1))
    assert res.realization.name


@pytest.mark.parametrize("field,params", [
    ("params.pad", kbench.ConvParams(pad=(1, 1))),
    ("params.stride", kbench.ConvParams(stride=(1,))),
    ("params.dilation", kbench.ConvParams(dilation=2)),
    ("params", {"stride": (1, 1)}),
    ("params.groups", kbench.ConvParams(groups=1.0)),
    ("desc.pad_top", kbench.ConvParams(pad=(1.5, 0, 0, 0))),
])
def test_malformed_conv_params_are_refused_naming_the_field(field, params):
    """Before: a short pad tuple raised IndexError, a dict AttributeError."""
    with pytest.raises(InvalidArgument) as exc:
        kbench.conv2d(f16(1, 4, 4, 2), f16(3, 3, 2, 2), params=params)
    assert exc.value.field == field


def test_a_pad_too_large_to_allocate_is_out_of_memory_naming_the_output():
    """Before: numpy's MemoryError (or ValueError) escaped with no field."""
    huge = kbench.ConvParams(pad=(10**6, 10**6, 10**6, 10**6))
    with pytest.raises(kbench.WorkLimit) as exc:  # by default: over the work cap first
        kbench.conv2d(f16(1, 2, 2, 2), f16(1, 1, 2, 2), params=huge)
    assert exc.value.field == "limits.max_flops"
    no_caps = kbench.Limits(max_flops=1e30, max_bytes=1e30)
    with pytest.raises(OutOfMemory) as exc:  # no caps: numpy cannot have 8 TB
        kbench.conv2d(f16(1, 2, 2, 2), f16(1, 1, 2, 2), params=huge, limits=no_caps)
    assert exc.value.field == "output"
    beyond = kbench.ConvParams(pad=(2**64, 0, 0, 0))
    with pytest.raises(kbench.SizeOverflow) as exc:
        kbench.conv2d(f16(1, 2, 2, 2), f16(1, 1, 2, 2), params=beyond)
    assert exc.value.field == "desc.pad_top"


def test_the_winograd_refusal_names_the_kernel_shape():
    """Before: forcing Winograd on a 5x5 kernel blamed "groups = 1"."""
    with pytest.raises(Unsupported) as exc:
        kbench.conv2d(f16(1, 8, 8, 2), f16(5, 5, 2, 2),
                      selector=kbench.Selector(force="conv2d_winograd_f2x2_3x3_scalar_f32acc"))
    msg = str(exc.value)
    assert exc.value.field == "selector.force"
    assert "3x3" in msg and "5x5 kernel" in msg and "groups" not in msg


def test_a_gemv_forced_on_a_matrix_names_m():
    gemv = [r.name for r in kbench.realizations() if r.op == "gemm" and r.max_m == 1]
    if not gemv:
        with pytest.raises(Unsupported, match="convolution realization, not a GEMM"):
            kbench.gemm(f16(4, 2), f16(2, 2),
                        selector=kbench.Selector(force="conv2d_direct_scalar_f32acc"))
        return
    with pytest.raises(Unsupported, match="takes M <= 1, the call has M = 4"):
        kbench.gemm(f16(4, 2), f16(2, 2), selector=kbench.Selector(force=gemv[0]))


@pytest.mark.parametrize("selector,field", [
    (kbench.Selector(force=42), "selector.force"),  # type: ignore[arg-type]
    (kbench.Selector(disabled="neon"), "selector.disabled"),  # type: ignore[arg-type]
    (kbench.Selector(table="t.json"), "selector.table"),  # type: ignore[arg-type]
])
def test_selector_fields_of_the_wrong_type_are_refused(selector, field):
    with pytest.raises(InvalidArgument) as exc:
        kbench.gemm(f16(2, 2), f16(2, 2), selector=selector)
    assert exc.value.field == field


# ---- misaligned operands ------------------------------------------------------------


def test_misaligned_operands_are_refused_by_the_library():
    """Found by fuzz_worker: an FP16 operand at an odd address (or a packed
    buffer off its 8-byte header alignment) was read through a misaligned
    pointer, undefined behaviour (UBSan). Every entry point now refuses it."""
    raw = np.zeros(2 * 64 + 1, np.uint8)
    odd = raw[1:].view(np.float16)[:64]  # numpy allows an unaligned view
    assert odd.__array_interface__["data"][0] % 2 == 1
    with pytest.raises(InvalidArgument) as exc:
        kbench.gemm(odd.reshape(8, 8), f16(8, 8))
    assert exc.value.field == "problems[0].A" and "aligned" in exc.value.message
    with pytest.raises(InvalidArgument) as exc:
        kbench.conv2d(odd[:16].reshape(1, 2, 2, 4), f16(1, 1, 4, 4))
    assert exc.value.field == "input"
    packed = kbench.pack_b(f16(8, 24))
    shifted = np.zeros(packed.data.size + 4, np.uint8)[4:]
    shifted[:] = packed.data
    bad = kbench.PackedB(shifted, packed.n, packed.k, False, packed.backend, packed.layout, 0)
    with pytest.raises(InvalidArgument) as exc:
        kbench.gemm(f16(3, 8), bad)
    assert exc.value.field == "problems[0].B" and "8 bytes" in exc.value.message
