"""Peer anchor tables word for word: what a table holds once read, every
refusal naming the file, the anchor and the field, and which of our rows an
anchor is set against (operator, realization, shape, batch, phase count,
SVL, passes), with the ratio and the outer products against the floor."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from kbench.results import anchors as anc

SOURCE = '[source]\nname = "peer"\nwhat = "w"\nmethod = "m"\n'


def _table(tmp_path: Path, body: str, source: str = SOURCE) -> anc.AnchorTable:
    p = tmp_path / "t.toml"
    p.write_text(source + body)
    return anc.load_anchors(p)


def _refused(tmp_path: Path, body: str, source: str = SOURCE) -> tuple[str, Any]:
    with pytest.raises(anc.AnchorError) as err:
        _table(tmp_path, body, source)
    return str(err.value), err.value


def test_a_table_reads_back_every_field(tmp_path: Path) -> None:
    t = _table(tmp_path, '''
[[anchor]]
label = "lab"
kernel = "kern"
phase = "kernel"
ours = ["a", "b"]
m = 2
n = 3
k = 4
svl512 = 100
svl128 = 50
outer_svl512 = 7
[[anchor]]
kernel = "only_kernel"
phase = "pack_b"
ours = ["c"]
any_svl = 9
[[anchor]]
phase = "pack_lhs"
ours = ["d"]
n = 5
svl256 = 1
''', SOURCE + 'note = "n"\ncommit = "abc"\nflags = "-O2"\ndate = "2026-01-02"\n')
    assert (t.name, t.what, t.method, t.note) == ("peer", "w", "m", "n")
    assert (t.commit, t.flags, t.date) == ("abc", "-O2", "2026-01-02")
    assert t.path == str(tmp_path / "t.toml")
    a, b, c = t.anchors
    assert (a.label, a.kernel, a.phase, a.ours) == ("lab", "kern", "kernel", ("a", "b"))
    assert dict(a.shape) == {"m": 2, "n": 3, "k": 4}
    assert dict(a.counts) == {512: 100, 128: 50} and dict(a.outer) == {512: 7}
    assert (b.label, b.kernel, b.phase) == ("only_kernel", "only_kernel", "pack_b")
    assert dict(b.counts) == {anc.ANY_SVL: 9} and dict(b.outer) == {} and dict(b.shape) == {}
    assert (c.label, c.kernel, c.shape_str()) == ("", "", "N=5")
    assert a.shape_str() == "M=2 x N=3 x K=4"


def test_a_table_without_optional_source_fields_has_them_empty(tmp_path: Path) -> None:
    t = _table(tmp_path, "")
    assert (t.note, t.commit, t.flags, t.date, t.anchors) == ("", "", "", "", ())


def test_count_at_prefers_a_count_for_any_svl() -> None:
    a = anc.Anchor("l", "k", "kernel", {}, ("x",), {512: 10, 256: 20})
    assert (a.count_at(512), a.count_at(256), a.count_at(128)) == (10, 20, None)
    b = anc.Anchor("l", "k", "kernel", {}, ("x",), {anc.ANY_SVL: 5, 512: 10})
    assert (b.count_at(512), b.count_at(128)) == (5, 5)


@pytest.mark.parametrize("source", [
    "", "[source]\nname = \"a\"\nwhat = \"b\"\n",
    "[source]\nname = 1\nwhat = \"b\"\nmethod = \"c\"\n",
    "source = \"x\"\n", "[source]\nname = \"a\"\nwhat = [\"b\"]\nmethod = \"c\"\n"])
def test_a_source_without_its_three_strings_is_refused(tmp_path: Path, source: str) -> None:
    said, err = _refused(tmp_path, "", source)
    assert said == f"{tmp_path / 't.toml'}: [source] needs name, what and method strings"
    assert isinstance(err, anc.AnchorError) and err.field == "source"


def test_a_file_that_is_not_toml_or_not_there_is_named(tmp_path: Path) -> None:
    p = tmp_path / "t.toml"
    p.write_text("[source\n")
    with pytest.raises(anc.AnchorError) as err:
        anc.load_anchors(p)
    assert str(err.value).startswith(f"{p}: ") and err.value.field == "anchors"
    with pytest.raises(anc.AnchorError) as err:
        anc.load_anchors(tmp_path / "none.toml")
    assert str(err.value).startswith(f"{tmp_path / 'none.toml'}: [Errno 2]")


GOOD = 'phase = "kernel"\nours = ["a"]\nsvl512 = 1\n'


@pytest.mark.parametrize("anchor,said", [
    ('phase = "bogus"\nours = ["a"]\nsvl512 = 1\n',
     "phase 'bogus' is not one of kernel, pack_lhs, pack_b"),
    ('ours = ["a"]\nsvl512 = 1\n', "phase None is not one of kernel, pack_lhs, pack_b"),
    ('phase = "kernel"\nsvl512 = 1\n', "ours must be a non-empty list of realization names"),
    ('phase = "kernel"\nours = []\nsvl512 = 1\n',
     "ours must be a non-empty list of realization names"),
    ('phase = "kernel"\nours = "a"\nsvl512 = 1\n',
     "ours must be a non-empty list of realization names"),
    ('phase = "kernel"\nours = ["a", 1]\nsvl512 = 1\n',
     "ours must be a non-empty list of realization names"),
    ('phase = "kernel"\nours = ["a"]\n', "no counts (svlNNN = ... or any_svl = ...)"),
    ('phase = "kernel"\nours = ["a"]\nsvl_512 = 3\n', "no counts (svlNNN = ... or any_svl = ...)"),
    ('phase = "kernel"\nours = ["a"]\nouter_svl512 = 3\n',
     "no counts (svlNNN = ... or any_svl = ...)"),
    (GOOD + "svl256 = 0\n", "svl256 must be a positive integer"),
    (GOOD + "svl256 = -1\n", "svl256 must be a positive integer"),
    (GOOD + "svl256 = 1.5\n", "svl256 must be a positive integer"),
    (GOOD + "svl256 = true\n", "svl256 must be a positive integer"),
    (GOOD + "any_svl = \"1\"\n", "any_svl must be a positive integer"),
    (GOOD + "outer_svl512 = 0\n", "outer_svl512 must be a positive integer"),
    (GOOD + "m = 0\n", "m, n, k must be positive integers"),
    (GOOD + "n = 2.0\n", "m, n, k must be positive integers"),
    (GOOD + "k = true\n", "m, n, k must be positive integers"),
    (GOOD + "m = 1\nk = -3\n", "m, n, k must be positive integers")])
def test_a_bad_anchor_is_refused_naming_it(tmp_path: Path, anchor: str, said: str) -> None:
    body = "[[anchor]]\n" + GOOD + "[[anchor]]\n" + anchor
    message, err = _refused(tmp_path, body)
    assert message == f"{tmp_path / 't.toml'}: anchor[1]: {said}"
    # the field the error names: the key, or what is wrong
    field = said.split()[0] if said.split()[0] in ("svl256", "any_svl", "outer_svl512") else {
        "phase": "phase", "ours": "ours", "no": "counts", "m,": "shape"}[said.split()[0]]
    assert err.field == field


def test_a_one_is_a_positive_count_and_shape(tmp_path: Path) -> None:
    t = _table(tmp_path, "[[anchor]]\n" + GOOD + "m = 1\nn = 1\nk = 1\nouter_svl512 = 1\n")
    a = t.anchors[0]
    assert dict(a.counts) == {512: 1} and dict(a.outer) == {512: 1}
    assert dict(a.shape) == {"m": 1, "n": 1, "k": 1}


def test_load_tables_reads_the_tables_that_exist(tmp_path: Path) -> None:
    p = tmp_path / "t.toml"
    p.write_text(SOURCE)
    got = anc.load_tables([p, tmp_path / "missing.toml", p])
    assert [t.name for t in got] == ["peer", "peer"]
    assert [t.name for t in anc.load_tables()] == [anc.load_anchors(q).name
                                                    for q in anc.DEFAULT_TABLES]


# ---- matching our rows --------------------------------------------------------------

def _anchor(phase: str = "kernel", shape: dict[str, int] | None = None,
            counts: dict[int, int] | None = None, label: str = "L",
            ours: tuple[str, ...] = ("r1",)) -> anc.Anchor:
    return anc.Anchor(label, "kern", phase, {"m": 4, "n": 8, "k": 16} if shape is None
                      else shape, ours, {512: 200} if counts is None else counts)


def _row(**kw: Any) -> dict[str, Any]:
    row = {"op": "gemm", "realization": "r1", "m": 4, "n": 8, "k": 16, "shape": "m4n8k16",
           "count_kernel": 100.0, "count_pack_lhs": 30.0, "count_pack_b": 50.0,
           "count_pack_b_checksum": 20.0, "vector_bits": 512, "target": "qemu:svl=512",
           "case": "c1", "count_mix": "", "count_floor": 8.0}
    row.update(kw)
    return row


def _table_of(*anchors: anc.Anchor, name: str = "peer") -> anc.AnchorTable:
    return anc.AnchorTable(name, "w", "m", "", tuple(anchors), "p")


def test_a_matching_row_is_set_against_its_anchor() -> None:
    a = _anchor()
    [m] = anc.match_anchors(_table_of(a, name="tbl"), [_row()])
    assert (m.anchor, m.target, m.realization, m.case, m.svl) == (a, "qemu:svl=512", "r1",
                                                                   "c1", 512)
    assert (m.ours, m.theirs, m.ratio, m.source, m.floor) == (100.0, 200, 0.5, "tbl", 8.0)
    assert math.isnan(m.ours_without_checksum) and math.isnan(m.ours_outer)
    assert math.isnan(m.outer_per_floor)


@pytest.mark.parametrize("change", [
    {"op": "conv"}, {"realization": "r2"}, {"m": 5}, {"n": 9}, {"k": 15}, {"m": None},
    {"m": math.nan}, {"n": "x"}, {"k": math.inf},
    {"shape": "m4n8k16_b2k3x3"}, {"shape": "k1x1"}, {"count_kernel": 0.0},
    {"count_kernel": -1.0}, {"count_kernel": math.nan}, {"count_kernel": None},
    {"count_kernel": "x"}, {"vector_bits": 256}, {"vector_bits": None}, {"vector_bits": math.nan}])
def test_a_row_that_does_not_match_is_left_out(change: dict[str, Any]) -> None:
    assert anc.match_anchors(_table_of(_anchor()), [_row(**change)]) == []


def test_a_missing_dimension_matches_no_anchor_of_that_dimension() -> None:
    a = _anchor(shape={"m": 1}, counts={anc.ANY_SVL: 5})
    rows = [_row(m=None, case="none"), _row(m=math.nan, case="nan"), _row(m=1, case="one")]
    assert [m.case for m in anc.match_anchors(_table_of(a), rows)] == ["one"]


@pytest.mark.parametrize("first", [
    {"op": "conv"}, {"m": 5}, {"shape": "m4_k3x3"}, {"count_kernel": 0.0},
    {"vector_bits": 128}])
def test_a_row_left_out_does_not_stop_the_rows_after_it(first: dict[str, Any]) -> None:
    rows = [_row(case="skipped", **first), _row(case="kept")]
    assert [m.case for m in anc.match_anchors(_table_of(_anchor()), rows)] == ["kept"]


def test_one_instruction_is_a_count() -> None:
    [m] = anc.match_anchors(_table_of(_anchor()), [_row(count_kernel=1.0)])
    assert m.ours == 1.0 and m.ratio == 1 / 200


def test_outer_or_dot_products_alone_are_counted() -> None:
    dot = anc.match_anchors(_table_of(_anchor()), [_row(count_mix='{"kernel": {"dot": 3}}')])
    outer = anc.match_anchors(_table_of(_anchor()), [_row(count_mix='{"kernel": {"outer": 5}}')])
    assert dot[0].ours_outer == 3.0 and outer[0].ours_outer == 5.0


def test_rows_match_by_text_and_number_alike() -> None:
    rows = [_row(m="4", n=8.0, k="16", vector_bits="512", count_kernel="100",
                 shape=None, realization="r1")]
    [m] = anc.match_anchors(_table_of(_anchor()), rows)
    assert m.ours == 100.0 and m.svl == 512


def test_a_shape_ending_in_a_batch_is_left_out_only_at_its_end() -> None:
    a = _anchor()
    assert len(anc.match_anchors(_table_of(a), [_row(shape="k3x3_m4")])) == 1
    assert anc.match_anchors(_table_of(a), [_row(shape="xk12x34")]) == []


def test_an_anchor_for_any_svl_or_fewer_dimensions_matches_more_rows() -> None:
    a = _anchor(shape={"n": 8}, counts={anc.ANY_SVL: 50})
    rows = [_row(vector_bits=128, m=1, k=3, case="a"), _row(vector_bits=0, case="b"),
            _row(n=7, case="c")]
    got = anc.match_anchors(_table_of(a), rows)
    assert [(m.case, m.svl, m.theirs, m.ratio) for m in got] == [("a", 128, 50, 2.0),
                                                                 ("b", 0, 50, 2.0)]


def test_another_pass_of_a_case_is_matched_once() -> None:
    a = _anchor()
    rows = [_row(), _row(count_kernel=120.0), _row(case="c2"), _row(target="other"),
            _row(realization="r2")]
    got = anc.match_anchors(_table_of(_anchor(ours=("r1", "r2"))), rows)
    assert [(m.case, m.target, m.realization, m.ours) for m in got] == [
        ("c1", "qemu:svl=512", "r1", 100.0), ("c2", "qemu:svl=512", "r1", 100.0),
        ("c1", "other", "r1", 100.0), ("c1", "qemu:svl=512", "r2", 100.0)]
    # two anchors of one label but different shapes, or two labels, each get the row
    two = _table_of(a, _anchor(label="M"), _anchor(shape={"m": 4}))
    assert [m.anchor.label + m.anchor.shape_str() for m in anc.match_anchors(two, [_row()])] == [
        "LM=4 x N=8 x K=16", "MM=4 x N=8 x K=16", "LM=4"]


def test_each_phase_reads_its_own_count_and_pack_b_its_unsealed_one() -> None:
    rows = [_row(count_mix='{"kernel": {"outer": 6, "dot": 2, "ld": 9}, "pack_b": {"outer": 0},'
                           ' "pack_lhs": {"ld": 4}}')]
    lhs = anc.match_anchors(_table_of(_anchor("pack_lhs")), rows)
    assert [(m.ours, m.theirs) for m in lhs] == [(30.0, 200)]
    assert math.isnan(lhs[0].ours_without_checksum) and math.isnan(lhs[0].ours_outer)
    [pb] = anc.match_anchors(_table_of(_anchor("pack_b")), rows)
    assert (pb.ours, pb.ours_without_checksum, pb.ours_outer) == (50.0, 30.0, 0.0)
    [k] = anc.match_anchors(_table_of(_anchor("kernel")), rows)
    assert (k.ours_outer, k.floor, k.outer_per_floor) == (8.0, 8.0, 1.0)
    nochk = anc.match_anchors(_table_of(_anchor("pack_b")), [_row(count_pack_b_checksum=None)])
    assert math.isnan(nochk[0].ours_without_checksum)


def test_rows_may_be_objects_with_attributes() -> None:
    class Row:
        def __init__(self, **kw: Any) -> None:
            self.__dict__.update(kw)

    [m] = anc.match_anchors(_table_of(_anchor()), [Row(**_row())])
    assert m.ours == 100.0 and m.case == "c1"
    assert anc.match_anchors(_table_of(_anchor()), [Row(op="gemm")]) == []


def test_the_ratio_and_the_floor_share_guard_their_zeros() -> None:
    a = _anchor()
    m = anc.AnchorMatch(a, "t", "r", "c", 512, 10.0, 0, ours_outer=4.0, floor=0.0)
    assert math.isnan(m.ratio) and math.isnan(m.outer_per_floor)
    m = anc.AnchorMatch(a, "t", "r", "c", 512, 10.0, 4, ours_outer=4.0, floor=2.0)
    assert (m.ratio, m.outer_per_floor) == (2.5, 2.0)
    m = anc.AnchorMatch(a, "t", "r", "c", 512, 10.0, 4, ours_outer=4.0, floor=-2.0)
    assert math.isnan(m.outer_per_floor)


def test_match_tables_sets_rows_against_every_table() -> None:
    rows = iter([_row()])
    got = anc.match_tables([_table_of(_anchor(), name="a"), _table_of(_anchor(), name="b")],
                           rows)
    assert [m.source for m in got] == ["a", "b"]


def test_the_best_anchor_per_counted_case_has_the_fewest_instructions() -> None:
    def match(label: str, theirs: int, phase: str = "kernel", case: str = "c",
              svl: int = 512) -> anc.AnchorMatch:
        return anc.AnchorMatch(_anchor(phase, label=label), "t", "r", case, svl, 100.0, theirs)

    ms = [match("a", 300), match("b", 200), match("c", 200), match("d", 250),
          match("p", 10, "pack_b"), match("e", 400, case="c2"), match("f", 90, svl=256)]
    assert [m.anchor.label for m in anc.best_matches(ms)] == ["b", "e", "f"]
    assert [m.anchor.label for m in anc.best_matches(ms, "pack_b")] == ["p"]
    assert [m.anchor.label for m in anc.best_matches(ms, None)] == ["b", "p", "e", "f"]
    assert anc.best_matches([]) == []
