"""The arithmetic under the anchor comparison (ours against KleidiAI's
recorded counts): the outer-plus-dot products of one phase of a count mix,
read from a results row as a mapping or as an object, and the geometric mean
of the ratios (non-positive ratios left out)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from kbench.results import anchors as anc


def _mix(**phases: dict[str, int]) -> str:
    return json.dumps(phases)


@pytest.mark.parametrize(("phase", "want"), [
    ("kernel", 70.0), ("pack_b", math.nan), ("validate", math.nan)])
def test_the_outer_products_of_a_phase(phase: str, want: float) -> None:
    mix = _mix(kernel={"outer": 64, "dot": 6, "load": 100}, pack_b={"load": 9, "store": 9})
    for row in ({"count_mix": mix}, SimpleNamespace(count_mix=mix)):
        got = anc._outer(row, phase)
        assert (math.isnan(got) and math.isnan(want)) or got == want


def test_outer_or_dot_alone_count() -> None:
    assert anc._outer({"count_mix": _mix(kernel={"dot": 5})}, "kernel") == 5.0
    assert anc._outer({"count_mix": _mix(kernel={"outer": 7})}, "kernel") == 7.0
    assert math.isnan(anc._outer({}, "kernel"))
    assert math.isnan(anc._outer(SimpleNamespace(), "kernel"))


def test_a_field_is_read_from_a_mapping_or_an_object() -> None:
    assert anc._get({"a": 1}, "a") == 1 and anc._get({"a": 1}, "b") is None
    assert anc._get(SimpleNamespace(a=2), "a") == 2 and anc._get(SimpleNamespace(), "a") is None


@pytest.mark.parametrize(("values", "mean"), [
    ([2.0, 8.0], 4.0), ([0.5, 2.0], 1.0), ([3.0], 3.0), ([0.0, 2.0, 8.0], 4.0),
    ([-1.0, 9.0], 9.0), ([1.0, 10.0, 100.0], 10.0)])
def test_the_geometric_mean_leaves_out_non_positive_ratios(values: list[float],
                                                           mean: float) -> None:
    assert anc.geomean(values) == pytest.approx(mean, rel=1e-12)


def test_the_geometric_mean_of_nothing_is_nan() -> None:
    assert math.isnan(anc.geomean([])) and math.isnan(anc.geomean([0.0, -2.0]))


def test_an_anchor_counted_for_any_svl_answers_every_svl() -> None:
    any_svl = anc.Anchor("a", "k", "kernel", {"m": 4}, ("r",), {anc.ANY_SVL: 123})
    assert any_svl.count_at(128) == 123 and any_svl.count_at(512) == 123
    per_svl = anc.Anchor("b", "k", "kernel", {"m": 4}, ("r",), {128: 7, 512: 9})
    assert per_svl.count_at(128) == 7 and per_svl.count_at(512) == 9
    assert per_svl.count_at(2048) is None
    assert per_svl.shape_str() == "M=4"
