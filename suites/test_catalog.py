"""The shipped case catalogs (reference/*.toml) and the catalog loader's validation."""

from __future__ import annotations

import dataclasses
import math
import textwrap
from pathlib import Path

import pytest

from kbench.problems.cases import B_FORMS, Catalog, ConvCase, GemmCase
from kbench.problems.catalog import (
    CatalogError,
    available_catalogs,
    default_catalog_paths,
    load_catalog,
    resolve_catalog,
)

DIMS = (1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257)
GEMM_MAC_CAP = 4_200_000  # batch * m * n * k
CONV_MAC_CAP = 3_000_000  # n * out_h * out_w * c_out * kh * kw * c_in / groups

SHIPPED = sorted(available_catalogs().items())


def _gemm_catalog() -> Catalog:
    return load_catalog(default_catalog_paths()["gemm"])


def _conv_catalog() -> Catalog:
    return load_catalog(default_catalog_paths()["conv"])


# ----------------------------------------------------------------------------- shipped files


def test_reference_catalogs_exist() -> None:
    names = dict(SHIPPED)
    assert {"correctness_gemm", "correctness_conv", "smoke"} <= set(names)
    for path in default_catalog_paths().values():
        assert path.is_file(), path


@pytest.mark.parametrize("path", [p for _, p in SHIPPED], ids=[n for n, _ in SHIPPED])
def test_shipped_catalog_loads(path: Path) -> None:
    catalog = load_catalog(path)
    assert catalog.name and catalog.cases
    names = [case.name for case in catalog.cases]
    assert len(names) == len(set(names))
    for case in catalog.cases:
        assert isinstance(case.tags, tuple)
        if isinstance(case, ConvCase):
            assert isinstance(case.stride, tuple) and isinstance(case.pad, tuple)
            assert isinstance(case.dilation, tuple)
            assert case.out_h >= 1 and case.out_w >= 1


CORRECTNESS = [(n, p) for n, p in SHIPPED
               if n.startswith("correctness") or n in ("smoke", "emulated")]


@pytest.mark.parametrize("path", [p for _, p in CORRECTNESS], ids=[n for n, _ in CORRECTNESS])
def test_shipped_catalog_work_caps(path: Path) -> None:
    """Correctness catalogs stay small enough for the scalar backend and
    emulation; performance catalogs are real model sizes."""
    catalog = load_catalog(path)
    for case in catalog.gemm:
        assert case.flops // 2 <= GEMM_MAC_CAP, case.name
    for case in catalog.conv:
        assert case.flops // 2 <= CONV_MAC_CAP, case.name


def test_gemm_catalog_covers_dims() -> None:
    gemm = _gemm_catalog().gemm
    assert len(gemm) >= 300
    for role in ("m", "n", "k"):
        seen = [getattr(case, role) for case in gemm]
        for dim in DIMS:
            assert seen.count(dim) >= 5, f"{role} = {dim} occurs {seen.count(dim)} times"


def test_gemm_catalog_covers_features() -> None:
    gemm = _gemm_catalog().gemm
    assert {case.b_form for case in gemm} == set(B_FORMS)
    assert {case.bias for case in gemm} == {True, False}
    assert {case.clamp for case in gemm} == {True, False}
    combos = {(case.b_form, case.bias, case.clamp) for case in gemm}
    assert len(combos) == len(B_FORMS) * 2 * 2
    for pad in ("lda_pad", "ldb_pad", "ldc_pad"):
        assert any(getattr(case, pad) > 0 for case in gemm), pad
    assert any(case.batch > 1 for case in gemm)
    assert any("llm" in case.tags for case in gemm)
    assert any(case.m == 1 for case in gemm if "llm" in case.tags)


def test_conv_catalog_covers_features() -> None:
    conv = _conv_catalog().conv
    assert len(conv) >= 60
    kernels = {(case.kh, case.kw) for case in conv}
    assert {(1, 1), (3, 3), (5, 5), (7, 7)} <= kernels
    assert {(1, 1), (2, 2)} <= {case.stride for case in conv}
    assert {(0,) * 4, (1,) * 4, (3,) * 4} <= {case.pad for case in conv}
    assert any(case.pad[0] != case.pad[1] or case.pad[2] != case.pad[3] for case in conv)
    assert (2, 2) in {case.dilation for case in conv}
    assert any(case.groups == 2 for case in conv)
    assert any(case.groups == case.c_in == case.c_out > 1 for case in conv)
    assert any(case.groups == case.c_in > 1 and case.c_out == 2 * case.c_in for case in conv)
    assert {1, 2} <= {case.n for case in conv}
    assert any("net" in case.tags for case in conv)


def test_smoke_catalog_is_small_and_mixed() -> None:
    smoke = load_catalog(resolve_catalog("smoke"))
    assert 0 < len(smoke.gemm) <= 20 and 0 < len(smoke.conv) <= 10
    assert {case.b_form for case in smoke.gemm} == set(B_FORMS)


# ----------------------------------------------------------------------------- resolving


def test_resolve_catalog_by_name_and_path() -> None:
    path = default_catalog_paths()["gemm"]
    assert resolve_catalog("correctness_gemm") == path
    assert resolve_catalog("correctness_gemm.toml") == path
    assert resolve_catalog("correctness-gemm") == path
    assert resolve_catalog(str(path)) == path.resolve()


def test_resolve_catalog_unknown_lists_available() -> None:
    with pytest.raises(CatalogError, match="no_such_catalog") as info:
        resolve_catalog("no_such_catalog")
    assert "correctness_gemm" in str(info.value)
    assert "correctness_conv" in str(info.value)


# ----------------------------------------------------------------------------- validation

HEADER = '[catalog]\nname = "t"\n\n'
GEMM_OK = '[[gemm]]\nname = "g"\nm = 7\nn = 17\nk = 33\n'
CONV_OK = '[[conv]]\nname = "c"\nn = 1\nh = 9\nw = 9\nc_in = 8\nc_out = 16\nkh = 3\nkw = 3\n'


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(textwrap.dedent(body))
    return path


def test_minimal_catalog_defaults(tmp_path: Path) -> None:
    catalog = load_catalog(_write(tmp_path, HEADER + GEMM_OK + CONV_OK))
    assert catalog.name == "t" and catalog.description == ""
    assert catalog.gemm == (GemmCase(name="g", m=7, n=17, k=33),)
    assert catalog.conv == (ConvCase(name="c", n=1, h=9, w=9, c_in=8, c_out=16, kh=3, kw=3),)


def test_lists_become_tuples(tmp_path: Path) -> None:
    body = HEADER + CONV_OK + "stride = [2, 1]\npad = [0, 1, 2, 3]\ndilation = [1, 2]\n"
    body += 'tags = ["a", "b"]\n'
    (case,) = load_catalog(_write(tmp_path, body)).conv
    assert case.stride == (2, 1) and case.pad == (0, 1, 2, 3) and case.dilation == (1, 2)
    assert case.tags == ("a", "b")


GEMM_ALL = {
    "name": '"g"', "m": "7", "n": "17", "k": "33", "batch": "2", "bias": "false",
    "clamp": "true", "lda_pad": "1", "ldb_pad": "3", "ldc_pad": "8", "b_form": '"plain"',
    "layers": "4", "tags": '["x"]', "clamp_max": "-0.0",
}  # fmt: skip
CONV_ALL = {
    "name": '"c"', "n": "2", "h": "9", "w": "7", "c_in": "8", "c_out": "16", "kh": "3",
    "kw": "1", "stride": "[2, 1]", "pad": "[0, 1, 2, 3]", "dilation": "[1, 2]", "groups": "2",
    "bias": "false", "clamp": "true", "layers": "3", "tags": "[]",
}  # fmt: skip


def test_loader_accepts_every_dataclass_field(tmp_path: Path) -> None:
    assert set(GEMM_ALL) == {f.name for f in dataclasses.fields(GemmCase)}
    assert set(CONV_ALL) == {f.name for f in dataclasses.fields(ConvCase)}
    body = HEADER + "[[gemm]]\n" + "".join(f"{k} = {v}\n" for k, v in GEMM_ALL.items())
    body += "[[conv]]\n" + "".join(f"{k} = {v}\n" for k, v in CONV_ALL.items())
    catalog = load_catalog(_write(tmp_path, body))
    assert catalog.gemm == (GemmCase("g", 7, 17, 33, 2, False, True, 1, 3, 8, "plain", 4, ("x",),
                                     -0.0),)
    assert math.copysign(1.0, catalog.gemm[0].clamp_max) == -1.0  # the sign of the zero kept
    assert catalog.conv == (
        ConvCase("c", 2, 9, 7, 8, 16, 3, 1, (2, 1), (0, 1, 2, 3), (1, 2), 2, False, True, 3, ()),
    )


@pytest.mark.parametrize(
    ("body", "match"),
    [
        pytest.param(
            HEADER + GEMM_OK + "mm = 3\n", r"gemm\[0\] 'g'.*unknown key 'mm'", id="unknown-key"
        ),
        pytest.param(
            HEADER + '[[gemm]]\nname = "g"\nn = 17\nk = 33\n',
            r"gemm\[0\] 'g'.*missing required key 'm'",
            id="missing-m",
        ),
        pytest.param(
            HEADER + GEMM_OK.replace("m = 7", "m = 0"),
            r"gemm\[0\] 'g'.*field 'm'.*positive",
            id="m-zero",
        ),
        pytest.param(
            HEADER + GEMM_OK.replace("m = 7", "m = true"),
            r"field 'm'.*integer.*boolean",
            id="m-bool",
        ),
        pytest.param(
            HEADER + GEMM_OK.replace("m = 7", "m = 7.0"), r"field 'm'.*integer", id="m-float"
        ),
        pytest.param(
            HEADER + GEMM_OK + "lda_pad = -1\n", r"field 'lda_pad'.*>= 0", id="negative-pad"
        ),
        pytest.param(
            HEADER + GEMM_OK + 'b_form = "tiled"\n', r"field 'b_form'.*'tiled'", id="bad-b_form"
        ),
        pytest.param(
            HEADER + GEMM_OK + 'b_form = "packed"\nldb_pad = 2\n',
            r"field 'ldb_pad'.*plain",
            id="ldb_pad-packed",
        ),
        pytest.param(HEADER + GEMM_OK + "bias = 1\n", r"field 'bias'.*boolean", id="bias-int"),
        pytest.param(HEADER + GEMM_OK + "clamp_max = -0.0\n", r"field 'clamp_max'.*clamp = true",
                     id="clamp_max-without-clamp"),
        pytest.param(HEADER + GEMM_OK + "clamp = true\nclamp_max = 0.1\n",
                     r"field 'clamp_max'.*FP16 value, got 0.1", id="clamp_max-not-fp16"),
        pytest.param(HEADER + GEMM_OK + "clamp = true\nclamp_max = nan\n",
                     r"field 'clamp_max'.*finite", id="clamp_max-nan"),
        pytest.param(HEADER + GEMM_OK + "clamp = true\nclamp_max = 1e6\n",
                     r"field 'clamp_max'.*finite FP16", id="clamp_max-past-fp16"),
        pytest.param(HEADER + GEMM_OK + 'clamp = true\nclamp_max = "0"\n',
                     r"field 'clamp_max'.*number", id="clamp_max-string"),
        pytest.param(HEADER + GEMM_OK + 'tags = "x"\n', r"field 'tags'", id="tags-string"),
        pytest.param(
            HEADER + GEMM_OK + GEMM_OK.replace("m = 7", "m = 8"),
            r"gemm\[1\] 'g'.*field 'name'.*duplicates gemm\[0\]",
            id="duplicate-name",
        ),
        pytest.param(
            HEADER + GEMM_OK + CONV_OK.replace('"c"', '"g"'),
            r"conv\[0\] 'g'.*field 'name'.*duplicates gemm\[0\]",
            id="duplicate-name-across-ops",
        ),
        pytest.param(
            HEADER + CONV_OK + "groups = 3\n",
            r"conv\[0\] 'c'.*field 'groups'.*c_in",
            id="groups-not-dividing",
        ),
        pytest.param(
            HEADER + CONV_OK.replace("kh = 3", "kh = 11"),
            r"conv\[0\] 'c'.*field 'kh'.*padded input",
            id="kernel-too-big",
        ),
        pytest.param(
            HEADER + CONV_OK + "dilation = [5, 1]\n",
            r"field 'kh'.*extent 11.*9 \+ 0 \+ 0",
            id="dilated-kernel-too-big",
        ),
        pytest.param(
            HEADER + CONV_OK.replace("kw = 3", "kw = 12") + "pad = [0, 0, 1, 1]\n",
            r"field 'kw'.*padded input",
            id="kernel-wider-than-padded",
        ),
        pytest.param(HEADER + CONV_OK + "pad = [1, 1]\n", r"field 'pad'.*4", id="pad-length"),
        pytest.param(
            HEADER + CONV_OK + "pad = [1, -1, 0, 0]\n", r"field 'pad'.*>= 0", id="pad-negative"
        ),
        pytest.param(
            HEADER + CONV_OK + "stride = [0, 1]\n", r"field 'stride'.*positive", id="stride-zero"
        ),
        pytest.param(GEMM_OK, r"missing \[catalog\]", id="missing-catalog-table"),
        pytest.param(HEADER, r"no cases", id="empty"),
        pytest.param(HEADER + "[gemm]\nm = 1\n", r"array of tables", id="gemm-not-array"),
        pytest.param(HEADER + GEMM_OK + "[extra]\n", r"top-level key 'extra'", id="top-level"),
        pytest.param(HEADER + "m = = 3\n", r"invalid TOML", id="syntax"),
    ],
)
def test_invalid_catalog(tmp_path: Path, body: str, match: str) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(CatalogError, match=match) as info:
        load_catalog(path)
    assert str(path) in str(info.value)


def test_all_problems_reported_together(tmp_path: Path) -> None:
    body = HEADER + GEMM_OK.replace("m = 7", "m = 0") + CONV_OK.replace("kh = 3", "kh = 0")
    with pytest.raises(CatalogError) as info:
        load_catalog(_write(tmp_path, body))
    assert "field 'm'" in str(info.value) and "field 'kh'" in str(info.value)


def test_catalog_error_is_value_error() -> None:
    assert issubclass(CatalogError, ValueError)


MODEL_MACS = {  # multiply-accumulates per inference, known for these models
    "resnet50": (4.0e9, 4.2e9),
    "mobilenet_v2": (2.9e8, 3.1e8),
}


@pytest.mark.parametrize("name", sorted(MODEL_MACS))
def test_model_catalogs_add_up_to_the_known_work(name: str) -> None:
    catalog = load_catalog(resolve_catalog(name))
    macs = sum(c.flops // 2 * c.layers for c in catalog.cases)
    lo, hi = MODEL_MACS[name]
    assert lo <= macs <= hi, macs


def test_llm_catalog_shapes_and_layer_counts() -> None:
    cat = load_catalog(resolve_catalog("llm_llama7b"))
    assert {c.m for c in cat.gemm} == {1, 4, 16, 128}
    assert {(c.n, c.k) for c in cat.gemm} == {(4096, 4096), (11008, 4096), (4096, 11008),
                                              (32000, 4096)}
    per_m = sum(c.layers for c in cat.gemm if c.m == 1)
    assert per_m == 128 + 64 + 32 + 1
