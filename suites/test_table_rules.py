"""The Python reader of dispatch tables (kbench.native.table.parse) on the
edges of what it accepts: the format version (1, not 2, not true), class
bounds from 0 up, kernel sizes and strides from 1 to 2^31 - 1, depthwise a
boolean, a key at most once per object. Pure parsing: no library, no CPU."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kbench.errors import InvalidArgument
from kbench.native.table import CONV_LIMIT, parse


def _table(cls: dict[str, Any] | None = None, op: str = "gemm", **top: Any) -> str:
    return json.dumps({"kbench_dispatch_table": 1,
                       "rules": [{"op": op, "class": cls or {}, "realization": "r"}], **top})


def _refused(text: str) -> str:
    with pytest.raises(InvalidArgument) as exc:
        parse(text)
    return exc.value.field


@pytest.mark.parametrize("version", [2, 0, True, "1", None])
def test_only_format_version_1_is_read(version: Any) -> None:
    text = _table(kbench_dispatch_table=version)
    assert _refused(text) == "table.kbench_dispatch_table"
    assert parse(_table())["kbench_dispatch_table"] == 1


@pytest.mark.parametrize("key", ["m_min", "n_max", "k_min"])
def test_gemm_bounds_start_at_zero(key: str) -> None:
    assert parse(_table({key: 0}))["rules"][0]["class"][key] == 0
    assert _refused(_table({key: -1})) == f"table.rules[0].class.{key}"


@pytest.mark.parametrize("key", ["kh", "stride_w"])
def test_conv_sizes_are_integers_from_1_to_the_int32_limit(key: str) -> None:
    for ok in (1, CONV_LIMIT):
        assert parse(_table({key: ok}, "conv2d"))["rules"][0]["class"][key] == ok
    for bad in (0, CONV_LIMIT + 1, 1.5):
        assert _refused(_table({key: bad}, "conv2d")) == f"table.rules[0].class.{key}"


def test_depthwise_is_a_boolean() -> None:
    assert parse(_table({"depthwise": False}, "conv2d"))["rules"][0]["class"]["depthwise"] is False
    assert _refused(_table({"depthwise": 0}, "conv2d")) == "table.rules[0].class.depthwise"


def test_a_key_twice_in_one_object_is_refused() -> None:
    text = '{"kbench_dispatch_table": 1, "rules": [], "rules": []}'
    assert _refused(text) == "table"
