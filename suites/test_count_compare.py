"""Comparing instruction counts word for word: each case's verdict from its
gated counts (call and B packing), cases of one side only, cases whose
rows disagree named by side, the order of the deltas, and each delta's
label, ratios, grown phases and worst gated column."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kbench.results import count_compare as cc
from kbench.results.counts import COLUMNS


def _row(case: str, call: float, pack_b: float = math.nan, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {c: math.nan for c in COLUMNS}
    row.update({"target": "qemu:svl=512", "catalog": "cat", "case": case, "realization": "r",
                "count_call": call, "count_pack_b": pack_b})
    row.update(kw)
    return row


def test_each_case_gets_its_verdict_from_its_gated_counts() -> None:
    base = [_row("up", 100), _row("down", 100), _row("same", 100), _row("mixed", 100, 50),
            _row("pack", 100, 50), _row("gone", 10), _row("zero_pack", 100, 0.0),
            _row("nan_call", 100, 50)]
    cand = [_row("up", 101), _row("down", 99), _row("same", 100), _row("mixed", 90, 60),
            _row("pack", 100, 40), _row("new", 5), _row("zero_pack", 100, 30.0),
            _row("nan_call", "x", 45)]
    comp = cc.compare_counts(base, cand)
    got = {d.key[2]: d.verdict for d in comp.deltas}
    assert got == {"up": "more", "down": "fewer", "same": "same", "mixed": "more",
                   "pack": "fewer", "gone": "missing", "new": "new", "zero_pack": "same",
                   "nan_call": "missing"}  # a candidate row without a call count is no count
    # the base's cases in its order, then the candidate's new ones
    assert [d.key[2] for d in comp.deltas] == ["up", "down", "same", "mixed", "pack", "gone",
                                              "zero_pack", "nan_call", "new"]
    assert comp.tally() == {"more": 2, "fewer": 2, "same": 2, "missing": 2, "new": 1}
    assert comp.limit == cc.DEFAULT_LIMIT
    assert [d.key[2] for d in comp.counted()] == ["up", "down", "same", "mixed", "pack",
                                                 "zero_pack"]


def test_a_base_of_one_instruction_is_a_count() -> None:
    comp = cc.compare_counts([_row("a", 1.0)], [_row("a", 2.0)])
    assert [d.verdict for d in comp.deltas] == ["more"]


def test_regressions_grow_a_gated_count_beyond_the_limit() -> None:
    base = [_row("a", 1000), _row("b", 1000), _row("c", 1000, 100), _row("d", 1000)]
    cand = [_row("a", 1005), _row("b", 1006), _row("c", 1000, 101), _row("d", 999)]
    comp = cc.compare_counts(base, cand, limit=0.005)
    assert [d.key[2] for d in comp.regressions()] == ["b", "c"]
    exact = cc.compare_counts(base, cand, limit=0.0)
    assert [d.key[2] for d in exact.regressions()] == ["a", "b", "c"]
    with pytest.raises(ValueError) as err:
        cc.compare_counts(base, cand, limit=-0.001)
    assert str(err.value) == "the count limit must be >= 0, got -0.001"


def test_rows_of_one_case_that_disagree_are_named_by_side() -> None:
    base = [_row("a", 100), _row("a", 101), _row("b", 100), _row("b", 100),
            _row("c", 100), _row("c", 100, count_kernel=1.0)]
    cand = [_row("a", 100), _row("b", 100), _row("b", 102), _row("c", 100),
            _row("c", 100, count_kernel=2.0), _row("n", 1), _row("n", 2)]
    comp = cc.compare_counts(base, cand)
    got = {d.key[2]: d.nondeterministic for d in comp.deltas}
    assert got == {"a": "base", "b": "candidate", "c": "base and candidate", "n": "candidate"}


def test_rows_without_a_call_count_are_left_out() -> None:
    index, unstable = cc.index_counts([_row("a", 0), _row("b", math.nan), _row("c", "n/a"),
                                       {"case": "d"}, _row("e", 1)])
    assert [k[2] for k in index] == ["e"] and unstable == set()
    assert list(index) == [("qemu:cpu=max:svl=512", "cat", "e", "r")]


def test_a_delta_reads_its_ratios_grown_phases_and_worst_column() -> None:
    base = {c: math.nan for c in COLUMNS} | {"count_call": 100.0, "count_kernel": 50.0,
                                             "count_pack_b": 0.0, "count_pack_lhs": 10.0}
    cand = {c: math.nan for c in COLUMNS} | {"count_call": 110.0, "count_kernel": 60.0,
                                             "count_pack_b": 5.0, "count_pack_lhs": 8.0}
    d = cc.CountDelta(("t", "cat", "case", "r"), base, cand, cc.MORE)
    assert d.label == "t r cat/case"
    assert cc.CountDelta(("t", "", "case", "r"), base, cand, cc.MORE).label == "t r case"
    assert d.ratio() == 1.1 and d.ratio("count_kernel") == 1.2
    assert math.isnan(d.ratio("count_pack_b")) and math.isnan(d.ratio("count_other"))
    assert math.isnan(d.ratio("count_missing"))
    assert d.grown() == [("call", 100.0, 110.0), ("kernel", 50.0, 60.0), ("pack_b", 0.0, 5.0)]
    assert d.worst() == ("count_call", 1.1)
    empty = cc.CountDelta(("t", "c", "x", "r"), {}, {}, cc.NEW)
    col, r = empty.worst()
    assert col == "count_call" and math.isnan(r) and empty.grown() == []
    pack = cc.CountDelta(("t", "c", "x", "r"), {"count_call": 100.0, "count_pack_b": 10.0},
                         {"count_call": 101.0, "count_pack_b": 12.0}, cc.MORE)
    assert pack.worst() == ("count_pack_b", 1.2)
    call = cc.CountDelta(("t", "c", "x", "r"), {"count_call": 100.0, "count_pack_b": 10.0},
                         {"count_call": 150.0, "count_pack_b": 11.0}, cc.MORE)
    assert call.worst() == ("count_call", 1.5)  # the larger ratio, whatever the name
    one = cc.CountDelta(("t", "c", "x", "r"), {"count_call": 1.0}, {"count_call": 3.0}, cc.MORE)
    assert one.ratio() == 3.0


def test_targets_are_compared_by_their_canonical_name() -> None:
    assert cc.canonical_target("qemu:svl=512") == "qemu:cpu=max:svl=512"
    assert cc.canonical_target("qemu") == cc.canonical_target("qemu:cpu=max")
    assert cc.canonical_target("host") == "host"
    assert cc.canonical_target("qemu:bogus=1") == "qemu:bogus=1"  # unparsable: as it is
    assert cc.canonical_target("qemuish") == "qemuish"
