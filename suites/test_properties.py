"""Properties of the Python API and the command line's inputs, over generated
inputs (Hypothesis): every input either works, and its result is judged
correct by the oracle under the realization that ran, or raises a typed
error (a KbenchError subclass) naming the field, with the output untouched.
The same for catalogs, dispatch tables (the Python reader and the native
loader accept or refuse the same tables) and run folders (read, or refused
with RunFolderError naming the file).

The budget is a settings profile: "kbench-ci" (the default: 40 examples per
property, derandomized, so CI runs the same examples every time) or
"kbench-long" (HYPOTHESIS_PROFILE=kbench-long: 2000 examples, random)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import kbench
from kbench.cli.main import main as cli_main
from kbench.errors import KbenchError
from kbench.judge import oracle
from kbench.judge.tolerance import AccumModel
from kbench.judge.verdict import Verdict, judge
from kbench.native import api
from kbench.problems.catalog import CatalogError, load_catalog
from kbench.results.compare import compare_runs, gate
from kbench.results.runfolder import RunFolderError, load_run
from kbench.results.store import RunWriter

settings.register_profile("kbench-ci", max_examples=40, derandomize=True, deadline=None,
                          database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.register_profile("kbench-long", max_examples=2000, deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kbench-ci"))

GEMM_FIELDS = {"problems[0].a", "problems[0].b", "problems[0].c", "problems[0].bias",
               "problems[0].clamp", "problems[0].clamp_min", "problems[0].clamp_max",
               "problems[0].b.data", "problems[0].B", "problems[0].A", "problems[0].C",
               "problems[0].lda", "problems[0].ldb", "problems[0].ldc",
               "problems[0].b_is_backend_native_packed", "B.n", "B.k", "selector.threads",
               "selector.force", "selector", "M", "N", "K",
               "limits.max_flops", "limits.max_bytes"}  # a call over a cap (kbench.Limits)
CONV_FIELDS = {"input", "filter", "bias", "output", "params", "params.pad", "params.stride",
               "params.dilation", "params.groups", "params.clamp", "desc.clamp_min",
               "desc.clamp_max", "selector.force", "selector", "selector.threads",
               "limits.max_flops", "limits.max_bytes"} | {
    f"desc.{k}" for k in ("n", "h", "w", "c_in", "c_out", "kh", "kw", "stride_h", "stride_w",
                          "pad_top", "pad_bottom", "pad_left", "pad_right", "dil_h", "dil_w",
                          "groups")}

VALUES = st.one_of(st.integers(-4, 4).map(float),
                   st.floats(-70000, 70000, allow_nan=False, width=32),
                   st.sampled_from([0.0, -0.0, 6e-8, 65504.0, -65504.0, np.inf, -np.inf,
                                    np.nan]))


@st.composite
def fp16_matrix(draw: st.DrawFn, rows: int, cols: int) -> np.ndarray:
    """A float16 matrix, sometimes a strided view (row padding, reversed
    rows, a column-major copy), rarely of another dtype or rank."""
    pad = draw(st.integers(0, 3))
    data = np.array(draw(st.lists(VALUES, min_size=rows * (cols + pad),
                                  max_size=rows * (cols + pad))), dtype=np.float64)
    with np.errstate(over="ignore"):
        base = data.astype(np.float16).reshape(rows, cols + pad)
    view = base[:, :cols]
    shape = draw(st.sampled_from(["plain"] * 8 + ["reversed", "fortran", "float32", "1d"]))
    if shape == "reversed":
        view = view[::-1]
    elif shape == "fortran":
        view = np.asfortranarray(view)
    elif shape == "float32":
        view = view.astype(np.float32)
    elif shape == "1d":
        view = view.reshape(-1)
    return view


FINITE = st.floats(-70000, 70000, allow_nan=False, width=32)
CLAMPS = st.one_of(st.none(), st.none(), st.none(),
                   st.tuples(FINITE, FINITE).map(sorted).map(tuple),
                   st.tuples(FINITE, FINITE).map(sorted).map(tuple),
                   st.tuples(VALUES, VALUES),
                   st.sampled_from([(1.0,), (0.0, 1.0, 2.0), "lo", (None, 1.0), (np.nan, 1.0)]))
THREADS = st.one_of(st.integers(0, 4), st.sampled_from([-1, 2**31, 2**31 - 1, 2**64]))


def _typed(exc: BaseException, fields: set[str]) -> None:
    assert isinstance(exc, KbenchError), f"{type(exc).__name__}: {exc}"
    event(f"refused: {exc.field}")
    assert exc.field, f"no field: {exc}"
    assert exc.field in fields, (exc.field, str(exc))
    assert str(exc).startswith(exc.field) or exc.field in str(exc), str(exc)


@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 24), st.data())
def test_gemm_works_and_is_correct_or_raises_a_typed_error(m, n, k, data):
    a = data.draw(fp16_matrix(m, k), "a")
    b_form = data.draw(st.sampled_from(["plain", "portable", "native", "wrong_shape"]), "b_form")
    b_plain = data.draw(fp16_matrix(k, n), "b")
    bias = data.draw(st.one_of(st.none(), st.just("ok"), st.just("short")), "bias")
    bias_arr = None if bias is None else np.arange(n if bias == "ok" else n + 1,
                                                   dtype=np.float16)
    clamp = data.draw(CLAMPS, "clamp")
    threads = data.draw(THREADS, "threads")
    alias = data.draw(st.sampled_from(["none", "out", "out", "a", "b", "bias"]), "out")
    b: object = b_plain
    try:
        if b_form in ("portable", "native") and isinstance(b_plain, np.ndarray):
            b = kbench.pack_b(b_plain, backend="scalar" if b_form == "native" else None,
                              bias=bias_arr if b_form == "native" else None)
            if b_form == "native":
                bias_arr = None
        elif b_form == "wrong_shape":
            b = np.ones((k + 1, n), np.float16)
    except KbenchError as exc:
        _typed(exc, {"B", "bias"})
        return
    out = None
    if alias == "out":
        out = np.full((m, n), 7, np.float16)
    elif alias == "a" and isinstance(a, np.ndarray) and a.shape == (m, n):
        out = a
    elif alias == "b" and isinstance(b, np.ndarray) and b.shape == (m, n):
        out = b
    elif alias == "bias" and bias_arr is not None and m == 1 and bias_arr.shape == (n,):
        out = bias_arr.reshape(1, n)
    before = None if out is None else out.copy()
    inputs = [x.copy() if isinstance(x, np.ndarray) else x for x in (a, b_plain, bias_arr)]
    try:
        res = kbench.gemm(a, b, bias_arr, clamp=clamp, out=out,
                          selector=kbench.Selector(threads=threads))
    except KbenchError as exc:
        _typed(exc, GEMM_FIELDS)
        if out is not None:
            assert np.array_equal(out.view(np.uint16), before.view(np.uint16)), "out written"
        return
    c = res.c[0]
    if out is not None:
        assert c is out
    # a call that worked: it had float16 2-D operands and is judged by the oracle
    a64, b64 = np.asarray(inputs[0]), np.asarray(inputs[1])
    ref = oracle.gemm_reference(a64, b64, inputs[2] if b_form != "native" else None, clamp)
    if b_form == "native" and bias is not None:
        ref = oracle.gemm_reference(a64, b64, np.arange(n, dtype=np.float16), clamp)
    model = AccumModel(res.realization.accum, res.realization.k_per_rounding)
    has_bias = bias is not None and (b_form == "native" or bias == "ok")
    j = judge(c, ref, model, k, has_bias, False)
    assert j.ok, (res.realization.name, j.detail)
    event(f"judged: {b_form}")


@st.composite
def conv_params(draw: st.DrawFn) -> object:
    kind = draw(st.sampled_from(["ok"] * 16 + ["dict", "short_pad", "float_stride", "huge"]))
    if kind == "dict":
        return {"stride": (1, 1)}
    pad = tuple(draw(st.integers(0, 2)) for _ in range(4))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    if kind == "short_pad":
        pad = pad[:2]
    elif kind == "float_stride":
        stride = (1.5, 1)
    elif kind == "huge":
        pad = (10**5, 10**5, 10**5, 10**5)
    return kbench.ConvParams(stride=stride, pad=pad, dilation=dilation,
                             groups=draw(st.sampled_from([1, 1, 1, 1, 2, 3])),
                             clamp=draw(CLAMPS))


@given(st.integers(1, 2), st.integers(1, 7), st.integers(1, 7), st.integers(1, 4),
       st.integers(1, 4), st.integers(1, 3), st.integers(1, 3), conv_params(), st.data())
def test_conv2d_works_and_is_correct_or_raises_a_typed_error(n, h, w, c_in, c_out, kh, kw,
                                                              params, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), "seed"))
    groups = getattr(params, "groups", 1)
    x = rng.integers(-3, 4, (n, h, w, c_in)).astype(np.float16)
    wt = rng.integers(-3, 4, (kh, kw, max(1, c_in // max(groups, 1)), c_out)).astype(np.float16)
    bias = data.draw(st.one_of(st.none(), st.just(np.ones(c_out, np.float16)),
                               st.just(np.ones(c_out + 1, np.float16))), "bias")
    force = data.draw(st.sampled_from([None, "conv2d_direct_scalar_f32acc",
                                       "conv2d_winograd_f2x2_3x3_scalar_f32acc",
                                       "conv2d_im2col_gemm_scalar_f32acc"]), "force")
    alias = data.draw(st.sampled_from(["none", "out", "input"]), "alias")
    out = None
    try:
        shape = api.conv2d_output_shape(x.shape, wt.shape, params)  # type: ignore[arg-type]
    except KbenchError:
        shape = None
    if alias == "out" and shape is not None:
        out = np.full(shape, 7, np.float16)
    elif alias == "input" and shape == x.shape:
        out = x
    before = None if out is None else out.copy()
    keep = x.copy()
    try:
        res = kbench.conv2d(x, wt, bias, params,  # type: ignore[arg-type]
                            out=out, selector=kbench.Selector(force=force))
    except KbenchError as exc:
        _typed(exc, CONV_FIELDS)
        if out is not None:
            assert np.array_equal(out.view(np.uint16), before.view(np.uint16)), "out written"
        assert np.array_equal(x.view(np.uint16), keep.view(np.uint16))
        return
    p = params
    assert isinstance(p, kbench.ConvParams)
    ref = oracle.conv_reference(x, wt, bias, p.stride, p.pad, p.dilation, p.groups,
                                api._clamp(p.clamp) if p.clamp is not None else None)
    model = AccumModel(res.realization.accum, res.realization.k_per_rounding)
    k = kh * kw * (c_in // p.groups)
    if res.realization.error_model != "gemm":  # Winograd: exact small-integer inputs only
        assert np.all(np.isfinite(res.output.astype(np.float64)) | ~np.isfinite(ref.exact))
        return
    j = judge(res.output, ref, model, k, bias is not None, False)
    assert j.ok, (res.realization.name, j.detail)
    event(f"judged: {res.realization.name}")


@given(st.integers(0, 40), st.integers(0, 40), st.sampled_from([None, "scalar", "neon", "x"]),
       st.booleans())
def test_pack_b_describes_itself_or_raises_a_typed_error(k, n, backend, with_bias):
    b = np.ones((k, n), np.float16)
    bias = np.ones(max(n, 1), np.float16)[:n] if with_bias else None
    try:
        packed = kbench.pack_b(b, backend=backend, bias=bias)
    except KbenchError as exc:
        _typed(exc, {"B", "bias", "backend", "N", "K"})
        return
    assert (packed.k, packed.n, packed.native) == (k, n, backend is not None)
    assert api.describe_packed(packed.data).n == n
    event(f"packed: {packed.layout}")


# ---- catalogs, dispatch tables and run folders -----------------------------------------

CATALOG_VALUES = st.one_of(st.integers(-3, 70000), st.booleans(), st.text(max_size=6),
                           st.floats(allow_nan=False, allow_infinity=False),
                           st.lists(st.integers(-2, 5), max_size=5))
GEMM_KEYS = ["name", "m", "n", "k", "bias", "clamp", "b_form", "lda_pad", "ldb_pad", "ldc_pad",
             "batch", "tags", "layers", "junk"]
CONV_KEYS = ["name", "n", "h", "w", "c_in", "c_out", "kh", "kw", "stride", "pad", "dilation",
             "groups", "bias", "clamp", "layers", "tags"]


def _toml(value: object) -> str:
    return json.dumps(value) if not isinstance(value, bool) else str(value).lower()


@given(st.lists(st.tuples(st.sampled_from(["gemm", "conv"]),
                          st.dictionaries(st.sampled_from(sorted(set(GEMM_KEYS + CONV_KEYS))),
                                          CATALOG_VALUES, max_size=10)), max_size=4))
def test_a_catalog_loads_or_names_the_entry_and_field(entries):
    lines = ['[catalog]', 'name = "prop"', '']
    for table, fields in entries:
        lines.append(f"[[{table}]]")
        lines += [f"{key} = {_toml(v)}" for key, v in fields.items()]
        lines.append("")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "prop.toml"
        path.write_text("\n".join(lines))
        try:
            cat = load_catalog(path)
        except CatalogError as exc:
            assert str(path) in str(exc) or path.name in str(exc), str(exc)
            return
    assert cat.name == "prop" and len(cat.cases) == len(entries)


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                         st.floats(allow_nan=False), st.text(max_size=8))
JSON = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)
CLASS_KEYS = ["m_min", "m_max", "n_min", "n_max", "k_min", "k_max", "kh", "kw", "stride_h",
              "stride_w", "depthwise", "other"]


@given(st.lists(st.fixed_dictionaries(
    {"op": st.sampled_from(["gemm", "conv2d", "gemv", 3]),
     "class": st.one_of(st.dictionaries(st.sampled_from(CLASS_KEYS), JSON_SCALARS, max_size=5),
                        JSON),
     "realization": st.one_of(st.sampled_from(["gemm_scalar_f32acc",
                                               "conv2d_direct_scalar_f32acc"]), JSON)}),
    max_size=4), st.one_of(st.none(), JSON))
def test_python_and_the_native_loader_read_every_table_alike(rules, extra):
    """Both accept a table or both refuse it (same field for the checks both
    make); tables come from json.dumps, so their syntax is JSON."""
    cpu = api.cpu_info()
    table = {"kbench_dispatch_table": 1, "library_version": api.version(),
             "fingerprint": {"arch": cpu.arch, "cpu_features": list(cpu.features),
                             "sme_vector_bits": cpu.sme_vector_bits}, "rules": rules}
    if extra is not None:
        table["extra"] = extra
    text = json.dumps(table)
    try:
        api.DispatchTable(text).parse()
        python_ok = True
    except KbenchError as exc:
        assert exc.field.startswith("table")
        python_ok = False
    try:
        api.DispatchTable(text).rules(api.load())
        native_ok = True
    except KbenchError as exc:
        assert exc.field.startswith("table")
        native_ok = False
    assert python_ok == native_ok, text
    event(f"both {'accept' if python_ok else 'refuse'}")


def _verdict(i: int, status: str = "pass") -> Verdict:
    return Verdict(case=f"c{i}", op="gemm", shape="m1n1k1", kind="exact", target="host",
                   backend="scalar", realization="gemm_scalar_f32acc", kernel="k", accum="fp32",
                   k=1, m=1, n=1, b_form="plain", vector_bits=0, status=status,
                   rounds=2, round_times_ns=[100.0, 101.0], time_median_ns=100.5)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.sampled_from(["run.json", "results.csv"]), st.integers(0, 4000), st.binary(max_size=40),
       st.booleans())
def test_a_damaged_run_folder_is_read_or_refused_naming_the_file(name, at, junk, truncate):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        w = RunWriter(folder, {"host": "h", "cpu_model": "c", "machine": "x86_64"})
        for i in range(3):
            w.add(_verdict(i))
        w.close(True)
        path = folder / name
        data = path.read_bytes()
        at = min(at, len(data))
        path.write_bytes(data[:at] + junk + (b"" if truncate else data[at + len(junk):]))
        try:
            run = load_run(folder)
        except RunFolderError as exc:
            assert str(path) in str(exc), str(exc)
            event(f"refused {name}")
            return
        event(f"read {name}")
        # what loads, every reader takes
        compare_runs(run, run)
        gate(run, run)
        assert run.state()


# ---- the command line's inputs -------------------------------------------------------


@given(st.lists(st.sampled_from(["--rounds", "--max-time", "--min-round-ms", "--passes",
                                 "--threads", "--kinds", "--backend", "--target",
                                 "--realization"]), max_size=4),
       st.lists(st.one_of(st.sampled_from(["0", "-1", "1", "2.5", "inf", "nan", "1e999",
                                           "host", "exact,normal", "bogus", "worker:'x",
                                           "qemu:cpu=nope", "scalar", ""]),
                          st.text(max_size=6)), min_size=4, max_size=4))
def test_run_options_are_taken_or_refused_with_a_usage_error(options, values):
    """Every option value either reaches the suites or is refused with exit
    status 2 and one "Error:" line (pytest itself is replaced here: nothing
    runs)."""
    import pytest as pytest_module
    args: list[str] = []
    for opt, value in zip(options, values, strict=False):
        args += [opt, value]
    called: list[list[str]] = []
    real_main = pytest_module.main
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["KBENCH_NO_INSTALL"] = "1"
        pytest_module.main = lambda a: called.append(a) or 0  # type: ignore[assignment]
        try:
            res = CliRunner().invoke(cli_main,
                                     ["run", "--suite", "perf", "--shapes", "smoke",
                                      "--no-history", "--out", str(Path(tmp) / "run"), *args])
        finally:
            pytest_module.main = real_main
            os.environ.pop("KBENCH_NO_INSTALL", None)
    assert isinstance(res.exception, SystemExit | type(None)), repr(res.exception)
    event(f"exit {res.exit_code}")
    if res.exit_code == 0:
        assert len(called) == 1
    else:
        assert res.exit_code == 2 and not called, res.output
        assert sum(line.startswith("Error:") for line in res.output.splitlines()) == 1


@given(st.text(alphabet=st.sampled_from(list("workehstqmu:=' \"\\;cpvlia0128x-")), max_size=24))
def test_a_target_spec_parses_or_is_refused_naming_the_target(spec):
    from kbench.targets.spec import parse_qemu, parse_target
    try:
        if spec.startswith("qemu"):
            parse_qemu(spec)  # parsing only: no QEMU started, nothing built
        else:
            parse_target(spec).close()
    except KbenchError as exc:
        assert exc.field == "target", (spec, exc)

