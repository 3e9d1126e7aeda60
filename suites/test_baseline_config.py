"""The instruction-count baseline's configuration and file, at their edges:
every malformed [baseline] table is refused naming the file and the field,
the growth limit reads as a fraction or a percentage with 0 and 1 allowed,
and the CSV round-trips every column (a missing floor or outer count stays
empty), newline-terminated, with its provenance header."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kbench.results import baseline as bl


@pytest.mark.parametrize(("value", "frac"), [
    ("0.5%", 0.005), (0.005, 0.005), (" 2% ", 0.02), ("0", 0.0), (0, 0.0), ("1", 1.0),
    ("150%", 1.5), ("0%", 0.0)])
def test_a_limit_reads_as_a_fraction_or_a_percentage(value: object, frac: float) -> None:
    assert bl.parse_limit(value) == pytest.approx(frac, abs=0)


@pytest.mark.parametrize(("value", "says"), [
    ("abc", "is not a fraction"), ("%", "is not a fraction"), ("1.5", "must be a fraction >= 0"),
    (2, "must be a fraction >= 0"), ("-0.1", "must be a fraction >= 0"),
    ("-1%", "must be a fraction >= 0"), ("nan", "must be a fraction >= 0"),
    ("inf%", "must be a fraction >= 0"), ("inf", "must be a fraction >= 0")])
def test_a_bad_limit_is_refused_naming_it(value: object, says: str) -> None:
    with pytest.raises(bl.BaselineError) as exc:
        bl.parse_limit(value)
    assert exc.value.field == "limit"
    assert str(exc.value) == f"limit: {value!r} {says} (write 0.5% or 0.005)"


GOOD = 'catalog = "smoke"\ntargets = ["qemu:svl=128"]\nbackends = ["sme"]\n'


@pytest.mark.parametrize(("body", "field", "says"), [
    ("", "baseline", "needs a [baseline] table"),
    ("[other]\nx = 1\n", "baseline", "needs a [baseline] table"),
    ("baseline = 3\n", "baseline", "needs a [baseline] table"),
    ("[baseline]\ncatalog = \n", "baseline", "Invalid value"),
    ("[baseline]\n" + GOOD.replace('targets = ["qemu:svl=128"]\n', ""), "targets",
     "[baseline] targets must be a non-empty list of strings"),
    ("[baseline]\n" + GOOD.replace('["qemu:svl=128"]', "[]"), "targets",
     "[baseline] targets must be a non-empty list of strings"),
    ("[baseline]\n" + GOOD.replace('["qemu:svl=128"]', '"qemu:svl=128"'), "targets",
     "[baseline] targets must be a non-empty list of strings"),
    ("[baseline]\n" + GOOD.replace('["sme"]', '["sme", 3]'), "backends",
     "[baseline] backends must be a non-empty list of strings"),
    ("[baseline]\n" + GOOD.replace('backends = ["sme"]\n', ""), "backends",
     "[baseline] backends must be a non-empty list of strings"),
    ("[baseline]\n" + GOOD.replace('backends = ["sme"]\n', "realizations = []\n"),
     "realizations", "[baseline] realizations must be a non-empty list of strings"),
    ("[baseline]\n" + GOOD + "realizations = []\n", "realizations",
     "[baseline] realizations must be a non-empty list of strings"),
    ("[baseline]\n" + GOOD.replace('catalog = "smoke"\n', ""), "catalog",
     "[baseline] catalog must be a catalog name"),
    ("[baseline]\n" + GOOD.replace('"smoke"', "4"), "catalog",
     "[baseline] catalog must be a catalog name"),
    ("[baseline]\n" + GOOD + "zeta = 1\nalpha = 2\n", "baseline",
     "unknown [baseline] key(s) alpha, zeta"),
    ("[baseline]\n" + GOOD + 'limit = "x"\n', "limit", "limit: 'x' is not a fraction"),
])
def test_a_bad_config_is_refused_naming_the_file_and_field(tmp_path: Path, body: str,
                                                             field: str, says: str) -> None:
    p = tmp_path / "b.toml"
    p.write_text(body)
    with pytest.raises(bl.BaselineError) as exc:
        bl.load_config(p)
    assert exc.value.field == field and says in str(exc.value)
    if field != "limit":
        assert str(exc.value).startswith(f"{p}: ")


def test_a_missing_config_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(bl.BaselineError) as exc:
        bl.load_config(tmp_path / "none.toml")
    assert exc.value.field == "baseline" and str(exc.value).startswith(f"{tmp_path}/none.toml: ")


def test_a_good_config_reads_every_key(tmp_path: Path) -> None:
    p = tmp_path / "b.toml"
    p.write_text("[baseline]\n" + GOOD + 'limit = "1%"\n')
    cfg = bl.load_config(p)
    assert cfg == bl.BaselineConfig("smoke", ("qemu:cpu=max:svl=128",), ("sme",), 0.01, ())
    p.write_text("[baseline]\n" + GOOD)
    assert bl.load_config(p).limit == bl.DEFAULT_LIMIT
    # realizations in place of backends
    p.write_text("[baseline]\n" + GOOD.replace('backends = ["sme"]', 'realizations = ["r1"]'))
    cfg = bl.load_config(p)
    assert cfg.backends == () and cfg.realizations == ("r1",)
    assert cfg.selection_args() == ["--realization", "r1"]


def _row(case: str, **extra: float) -> dict:
    row = {"target": "qemu:cpu=max:svl=128", "catalog": "smoke", "case": case,
           "realization": "gemm_sme_mopa_f32acc"}
    row.update({c: 100.0 + i for i, c in enumerate(bl.COLUMNS)})
    row.update(extra)
    return row


def test_the_csv_round_trips_every_column(tmp_path: Path) -> None:
    rows = [_row("b", count_floor=64.0, count_kernel_outer=32.0), _row("a")]
    text = bl.render(rows, bl.header_lines("11.1.0"))
    lines = text.split("\n")
    assert "\r" not in text and text.endswith("\n")
    assert lines[:4] == [f"# {x}" for x in bl.header_lines("11.1.0")]
    assert lines[4] == ",".join(bl.FIELDS)
    assert lines[5].startswith("qemu:cpu=max:svl=128,smoke,a,") and lines[5].endswith(",,")
    assert lines[6].endswith(",64,32")
    p = tmp_path / "baseline.csv"
    bl.write_baseline(p, rows, bl.header_lines("11.1.0"))
    assert p.read_text() == text and sorted(x.name for x in tmp_path.iterdir()) == ["baseline.csv"]
    back = {r["case"]: r for r in bl.read_baseline(p)}
    assert back["b"]["count_floor"] == 64.0 and back["b"]["count_kernel_outer"] == 32.0
    assert math.isnan(back["a"]["count_floor"]) and math.isnan(back["a"]["count_kernel_outer"])
    for c in bl.COLUMNS:
        assert back["a"][c] == rows[1][c]


def test_the_header_names_the_qemu_that_counted() -> None:
    assert bl.header_lines("11.1.0")[-1] == "Counted with qemu-aarch64 11.1.0."
    assert bl.header_lines("")[-1] == "Counted with qemu-aarch64 unknown."


def _baseline(tmp_path: Path, rows: list[dict[str, object]], comments: int = 4) -> Path:
    p = tmp_path / "baseline.csv"
    p.write_text(bl.render(rows, [f"c{i}" for i in range(comments)]))
    return p


@pytest.mark.parametrize("field", ["call", "kernel", "floor", "kernel_outer"])
def test_a_cell_that_is_not_a_number_is_named_with_the_files_own_line(tmp_path: Path,
                                                                       field: str) -> None:
    p = _baseline(tmp_path, [_row("a"), _row("b")], comments=3)
    lines = p.read_text().splitlines()
    header = lines[3].split(",")
    cells = lines[5].split(",")
    cells[header.index(field)] = "many"
    lines[5] = ",".join(cells)
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(bl.BaselineError) as err:
        bl.read_baseline(p)
    # three comment lines, the header on line 4: the second row is line 6
    assert str(err.value) == f"{p}: line 6: {field} = 'many' is not a number"
    assert err.value.field == f"count_{field}"


def test_a_baseline_without_its_columns_is_refused_and_a_missing_one_is_empty(
        tmp_path: Path) -> None:
    p = tmp_path / "baseline.csv"
    p.write_text("# made by\ntarget,catalog,case,realization,call\n")
    with pytest.raises(bl.BaselineError) as err:
        bl.read_baseline(p)
    missing = sorted(set(bl.FIELDS) - bl.OPTIONAL_FIELDS - {"target", "catalog", "case",
                                                            "realization", "call"})
    assert str(err.value) == f"{p}: missing column(s) {', '.join(missing)}"
    assert err.value.field == "baseline"
    assert bl.read_baseline(tmp_path / "none.csv") == []
    old = tmp_path / "old.csv"
    old.write_text(",".join(f for f in bl.FIELDS if f != "kernel_outer") + "\n"
                   + ",".join(["qemu:svl=128", "smoke", "a", "r"]
                              + ["1"] * (len(bl.FIELDS) - 5)) + "\n")
    [row] = bl.read_baseline(old)
    assert math.isnan(row["count_kernel_outer"]) and row["count_floor"] == 1.0
    assert row["target"] == "qemu:cpu=max:svl=128"


def test_counted_rows_keep_one_row_per_target_case_and_realization() -> None:
    rows = [
        {"case": "first", "count_call": "n/a"}, {"case": "second", "count_call": 0.0},
        {"target": "qemu:svl=128", "catalog": "smoke", "case": "a", "realization": "r",
         "count_call": 10.0, "count_kernel": 6.0, "count_floor": 2.0,
         "count_mix": '{"kernel": {"outer": 3, "dot": 1}}'},
        {"target": "qemu:svl=128", "catalog": "smoke", "case": "a", "realization": "r",
         "count_call": 99.0},  # another pass of the same case: the first stands
        {"target": "qemu:svl=128", "catalog": "smoke", "case": "b", "realization": "r",
         "count_call": "12", "count_kernel": "x", "count_mix": '{"kernel": {"dot": 5}}'},
        {"target": "host", "case": "c", "count_call": 1.0, "count_mix": '{"pack_b": {}}'},
        {"target": "host", "case": "o", "count_call": 1.0,
         "count_mix": '{"kernel": {"outer": 7}}'},
        {"case": "d", "count_call": 0.0}, {"case": "e", "count_call": "n/a"},
        {"case": "f", "count_call": None}, {"case": "g"}, {"case": "h", "count_call": -1}]
    got = bl.counted_rows(rows)
    assert [(r["target"], r["case"], r["count_call"]) for r in got] == [
        ("qemu:cpu=max:svl=128", "a", 10.0), ("qemu:cpu=max:svl=128", "b", 12.0),
        ("host", "c", 1.0), ("host", "o", 1.0)]
    a, b, c, o = got
    assert o["count_kernel_outer"] == 7.0
    assert (a["count_kernel"], a["count_floor"], a["count_kernel_outer"]) == (6.0, 2.0, 4.0)
    assert math.isnan(b["count_kernel"]) and b["count_kernel_outer"] == 5.0
    assert math.isnan(b["count_floor"]) and math.isnan(c["count_kernel_outer"])
    assert (c["catalog"], c["realization"]) == ("", "")
    assert set(a) == {"target", "catalog", "case", "realization", *bl.COLUMNS, "count_floor",
                      "count_kernel_outer"}
