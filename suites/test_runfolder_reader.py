"""The run-folder reader word for word: every refusal names the file, the
line and the column; every cell type is what the writer meant; defects are
counted exactly; passes of a perf case pool into one row. Direct calls on
small hand-written folders, no CLI, so each check takes milliseconds."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from kbench.results import runfolder as rf

LINE = ["case", "status", "suite", "target", "realization", "kind", "k", "emulated",
        "round_times_ns"]


def _csv(header: list[str], rows: list[list[Any]], end: str = "\n") -> str:
    out = io.StringIO(newline="")
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow(r)
    text = out.getvalue()
    return text if end == "\n" else text[:-1]


def _folder(tmp_path: Path, csv_text: str | bytes | None, meta: Any = None,
            name: str = "run") -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"complete": True} if meta is None else meta))
    if isinstance(csv_text, str):
        (d / "results.csv").write_text(csv_text, newline="")
    elif isinstance(csv_text, bytes):
        (d / "results.csv").write_bytes(csv_text)
    return d


def _error(folder: Path) -> str:
    with pytest.raises(rf.RunFolderError) as err:
        rf.load_run(folder)
    return str(err.value)


# ---- the types of the columns ----------------------------------------------

def test_column_types_come_from_the_verdict_fields() -> None:
    t = rf._verdict_types()
    assert (t["time_median_ns"], t["gflops"], t["max_err_bound"]) == ("float",) * 3
    assert (t["k"], t["rounds"], t["flops"], t["perf_pass"]) == ("int",) * 4
    assert t["emulated"] == "bool"
    assert (t["status"], t["case"], t["message"]) == ("text",) * 3
    assert t["exact_fraction"] == "float" and t["round_times_ns"] == "text"
    assert set(t.values()) == {"float", "int", "bool", "text"}
    assert set(t) == set(rf.COLUMNS)


def test_cells_read_back_with_their_types(tmp_path: Path) -> None:
    header = [*LINE, "time_median_ns", "gflops", "extra"]
    rows = [["c1", "pass", "perf", "host", "neon", "gemm", "64", " TRUE ", "1 2.5",
             "1.5", " nan", "x"],
            ["c2", "fail", "", "host", "neon", "gemm", "", "1", "", "-NaN", "+nan", ""],
            ["c3", "pass", "perf", "host", "neon", "gemm", "3.0", "yes", " ", "", "-1e3", "y"],
            ["c4", "pass", "perf", "host", "neon", "gemm", "7", "0", "4", "2", "0", "z"]]
    run = rf.load_run(_folder(tmp_path, _csv(header, rows), {"complete": True, "results": 4}))
    df = run.results
    assert run.defects == [] and run.whole and run.name == "run"
    assert df["k"].tolist() == [64, 0, 3, 7] and str(df["k"].dtype) == "int64"
    assert df["emulated"].tolist() == [True, True, False, False]
    assert str(df["emulated"].dtype) == "bool"
    assert df["round_times"].tolist() == [[1.0, 2.5], [], [], [4.0]]
    med = df["time_median_ns"].tolist()
    assert med[0] == 1.5 and np.isnan(med[1]) and np.isnan(med[2]) and med[3] == 2.0
    g = df["gflops"].tolist()
    assert np.isnan(g[0]) and np.isnan(g[1]) and g[2:] == [-1000.0, 0.0]
    assert df["suite"].tolist() == ["perf", "correctness", "perf", "perf"]
    assert df["extra"].tolist() == ["x", "", "y", "z"]
    # columns the file does not have: NaN, 0, False and "" by type
    assert np.isnan(df["time_min_ns"]).all() and df["rounds"].tolist() == [0] * 4
    assert df["threads"].tolist() == [0] * 4 and str(df["rounds"].dtype) == "int64"
    assert df["message"].tolist() == [""] * 4 and df["accum_model"].tolist() == [""] * 4
    assert list(df.columns) == [*rf.COLUMNS, "extra", "round_times"]


def test_a_header_only_table_has_the_column_types_of_the_writer(tmp_path: Path) -> None:
    run = rf.load_run(_folder(tmp_path, "case,status\n", {"results": 0}))
    df = run.results
    assert df.empty and run.defects == [] and not run.has_results
    for c in ("k", "m", "n", "rounds", "reps_per_round", "layers", "flops", "threads"):
        assert str(df[c].dtype) == "int64", c
    assert str(df["emulated"].dtype) == "bool"
    assert str(df["time_median_ns"].dtype) == "float64"


def test_an_integer_beyond_int64_keeps_its_value_as_a_float(tmp_path: Path) -> None:
    header = ["case", "status", "flops", "rounds"]
    rows = [["a", "pass", "1e19", "2"], ["b", "pass", "5", "9223372036854775807"]]
    df = rf.load_run(_folder(tmp_path, _csv(header, rows))).results
    assert str(df["flops"].dtype) == "float64" and df["flops"].tolist() == [1e19, 5.0]
    assert str(df["rounds"].dtype) == "int64" and df["rounds"].tolist()[0] == 2


@pytest.mark.parametrize("column,value,what", [
    ("time_median_ns", "fast", "a number"), ("time_median_ns", "1,5", "a number"),
    ("rounds", "three", "an integer"), ("rounds", "2.5", "an integer"),
    ("rounds", "inf", "an integer"), ("rounds", "-inf", "an integer"),
    ("k", "1e400", "an integer"), ("gflops", "nan nan", "a number")])
def test_a_cell_that_is_not_its_type_is_named(tmp_path: Path, column: str, value: str,
                                              what: str) -> None:
    header = ["case", "status", column]
    rows = [["a", "pass", "1"], ["b", "pass", "2"], ["c", "pass", value], ["d", "pass", "x"]]
    folder = _folder(tmp_path, _csv(header, rows))
    assert _error(folder) == (f"{folder / 'results.csv'}: line 4, column {column}: "
                              f"{value!r} is not {what}")


def test_infinite_floats_are_numbers(tmp_path: Path) -> None:
    header = ["case", "status", "max_ulp", "rounds"]
    rows = [["a", "pass", "inf", "0"], ["b", "pass", "-inf", "1"]]
    df = rf.load_run(_folder(tmp_path, _csv(header, rows))).results
    assert df["max_ulp"].tolist() == [np.inf, -np.inf] and df["rounds"].tolist() == [0, 1]


def test_a_round_times_cell_that_is_not_numbers_is_named(tmp_path: Path) -> None:
    header = ["case", "status", "round_times_ns"]
    folder = _folder(tmp_path, _csv(header, [["a", "pass", "1 2"], ["b", "pass", "1 2 x"]]))
    assert _error(folder) == (f"{folder / 'results.csv'}: line 3, column round_times_ns: "
                              "'1 2 x' is not a list of numbers")


# ---- the table itself ------------------------------------------------------

def test_a_header_without_case_or_status_is_refused(tmp_path: Path) -> None:
    for name, header in [("a", "case,x\n"), ("b", "status,x\n"), ("c", "x,y\n1,2\n")]:
        folder = _folder(tmp_path, header, name=name)
        assert _error(folder) == (f"{folder / 'results.csv'}: line 1 is not a results header "
                                  "(no case and status columns)")


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "case,status,k,k\na,pass,1,2\n")
    assert _error(folder) == f"{folder / 'results.csv'}: line 1 names a column twice"


def test_a_row_of_another_width_is_refused_with_its_line(tmp_path: Path) -> None:
    # a quoted cell holding a newline makes row 2 span lines 2 and 3
    text = 'case,status,message\na,pass,"two\nlines"\nb,pass\nc,pass,x\n'
    folder = _folder(tmp_path, text)
    assert _error(folder) == f"{folder / 'results.csv'}: line 4 has 2 fields, the header 3"
    wide = _folder(tmp_path, "case,status\na,pass,1\n", name="wide")
    assert _error(wide) == f"{wide / 'results.csv'}: line 2 has 3 fields, the header 2"


def test_a_last_row_cut_off_is_left_out_and_said(tmp_path: Path) -> None:
    text = 'case,status,message\na,pass,"x\ny"\nb,pa'
    run = rf.load_run(_folder(tmp_path, text, {"complete": True, "results": 2}))
    assert run.results["case"].tolist() == ["a"]
    assert run.results["message"].tolist() == ["x\ny"]
    assert run.defects == ["results.csv: line 4 is cut off (the run was stopped while "
                           "writing it); that row is left out",
                           "run.json says 2 result(s), results.csv holds 1 row(s)"]
    assert run.complete and not run.whole


def test_a_whole_last_row_without_its_newline_is_kept(tmp_path: Path) -> None:
    run = rf.load_run(_folder(tmp_path, "case,status\na,pass\nb,fail", {"results": 2}))
    assert run.results["case"].tolist() == ["a", "b"] and run.defects == []


def test_a_short_last_row_with_its_newline_is_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "case,status,k\na,pass,1\nb,pass\n")
    assert _error(folder) == f"{folder / 'results.csv'}: line 3 has 2 fields, the header 3"


def test_bytes_that_are_not_a_table_are_named_with_their_line(tmp_path: Path) -> None:
    nul = _folder(tmp_path, b"case,status\na,pass\nb,\0pass\n", name="nul")
    assert _error(nul) == (f"{nul / 'results.csv'}: line 3 holds a NUL byte: not a "
                           "results table")
    bad = _folder(tmp_path, b"case,status\na,pass\n\xffb,pass\n", name="bad")
    assert _error(bad) == f"{bad / 'results.csv'}: line 3 is not UTF-8 text"
    first = _folder(tmp_path, b"\xff", name="first")
    assert _error(first) == f"{first / 'results.csv'}: line 1 is not UTF-8 text"


def test_a_cell_beyond_the_csv_modules_field_limit_is_read(tmp_path: Path) -> None:
    """A cell longer than the csv module's limit (a perf row's round times) is
    read, and the module's limit is left as it was."""
    limit = csv.field_size_limit()
    folder = _folder(tmp_path, "case,status\na,pass\nb," + "x" * (limit + 1) + "\n")
    run = rf.load_run(folder)
    assert list(run.results["case"]) == ["a", "b"]
    assert run.results["status"].iloc[1] == "x" * (limit + 1)
    assert csv.field_size_limit() == limit


def test_an_empty_or_missing_table_is_a_run_without_results(tmp_path: Path) -> None:
    empty = rf.load_run(_folder(tmp_path, "", {"complete": True, "results": 0}, name="e"))
    assert empty.defects == ["results.csv is empty (not even its header)"]
    assert empty.results.empty and list(empty.results.columns) == [*rf.COLUMNS, "round_times"]
    missing = rf.load_run(_folder(tmp_path, None, {"complete": True}, name="m"))
    assert missing.defects == ["results.csv is missing"] and not missing.whole
    assert missing.state() == "complete, no results"


# ---- run.json and the folder -------------------------------------------------

def test_a_path_that_is_not_a_run_folder_is_named(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert _error(f) == f"{f}: not a folder"
    d = tmp_path / "bare"
    d.mkdir()
    assert _error(d) == f"{d}: not a run folder (needs run.json and results.csv)"
    (d / "results.csv").write_text("case,status\n")
    assert _error(d) == f"{d / 'run.json'}: missing (results.csv without its run.json)"


@pytest.mark.parametrize("content,said", [
    (b"\xff{}", "not UTF-8 text (byte 0)"),
    (b'{"a": \xff}', "not UTF-8 text (byte 6)"),
    (b"[" * 100000 + b"]" * 100000, "JSON nested too deeply"),
    (b"[1, 2]", "must be a JSON object, got list"),
    (b'"x"', "must be a JSON object, got str"),
    (b'{"targets": [1]}', "\"targets\" must be an object, got list"),
    (b'{"targets": "x"}', "\"targets\" must be an object, got str")])
def test_a_run_json_that_is_not_an_object_is_named(tmp_path: Path, content: bytes,
                                                   said: str) -> None:
    d = _folder(tmp_path, "case,status\n")
    (d / "run.json").write_bytes(content)
    assert _error(d) == f"{d / 'run.json'}: {said}"


def test_a_run_json_that_is_not_json_is_named(tmp_path: Path) -> None:
    d = _folder(tmp_path, "case,status\n")
    (d / "run.json").write_text("{nope")
    assert _error(d).startswith(f"{d / 'run.json'}: not valid JSON (Expecting property name")


def test_targets_may_be_an_object_or_null(tmp_path: Path) -> None:
    for name, targets in [("a", {}), ("b", None), ("c", {"host": {}})]:
        run = rf.load_run(_folder(tmp_path, "case,status\n", {"targets": targets}, name=name))
        assert run.meta["targets"] == targets


def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    d = tmp_path / "run"
    (d / "run.json").mkdir(parents=True)
    assert _error(d) == f"{d / 'run.json'}: cannot read (Is a directory)"
    e = tmp_path / "run2"
    (e / "results.csv").mkdir(parents=True)
    (e / "run.json").write_text("{}")
    assert _error(e) == f"{e / 'results.csv'}: cannot read (Is a directory)"


# ---- defects -----------------------------------------------------------------

def _rows(*cases: tuple[str, str, str]) -> str:
    return _csv(["case", "status", "suite", "target", "realization", "kind"],
                [[c, s, suite, "host", "neon", "gemm"] for c, s, suite in cases])


@pytest.mark.parametrize("said,defect", [
    (3, None), (2, "run.json says 2 result(s), results.csv holds 3 row(s)"),
    (0, "run.json says 0 result(s), results.csv holds 3 row(s)"),
    (True, None), ("2", None), (2.0, None), (None, None)])
def test_the_row_count_is_checked_only_when_run_json_gives_an_integer(
        tmp_path: Path, said: Any, defect: str | None) -> None:
    text = _rows(("a", "pass", "correctness"), ("b", "pass", "correctness"),
                 ("c", "pass", "perf"))
    run = rf.load_run(_folder(tmp_path, text, {"complete": True, "results": said}))
    assert run.defects == ([] if defect is None else [defect])


def test_duplicated_rows_are_counted_and_the_first_named(tmp_path: Path) -> None:
    text = _rows(("a", "pass", "correctness"), ("b", "fail", "perf"), ("b", "fail", "perf"),
                 ("a", "pass", "correctness"), ("a", "pass", "correctness"))
    run = rf.load_run(_folder(tmp_path, text, {"results": 5}))
    assert run.defects == ["results.csv holds 3 duplicated row(s) (first: host neon b gemm)"]


def test_a_verdict_given_twice_with_different_results_is_named(tmp_path: Path) -> None:
    text = _rows(("a", "pass", "correctness"), ("b", "pass", "perf"), ("b", "fail", "perf"),
                 ("c", "pass", "robustness"), ("a", "fail", "correctness"),
                 ("c", "error", "robustness"), ("a", "pass", "correctness"))
    run = rf.load_run(_folder(tmp_path, text, {"results": 7}))
    assert run.defects == [
        "results.csv holds 1 duplicated row(s) (first: host neon a gemm)",
        "results.csv holds 2 verdict(s) twice with different results (first: correctness "
        "host neon a gemm)"]


def test_a_verdict_of_another_suite_or_threads_is_not_a_duplicate(tmp_path: Path) -> None:
    header = ["case", "status", "suite", "target", "realization", "kind", "threads"]
    rows = [["a", "pass", "correctness", "host", "neon", "gemm", "1"],
            ["a", "fail", "robustness", "host", "neon", "gemm", "1"],
            ["a", "fail", "correctness", "host", "neon", "gemm", "2"],
            ["a", "fail", "correctness", "host", "sme", "gemm", "1"]]
    assert rf.load_run(_folder(tmp_path, _csv(header, rows))).defects == []


# ---- perf rows and their passes ----------------------------------------------

PERF = ["case", "status", "suite", "target", "realization", "kind", "rounds", "flops",
        "time_min_ns", "time_median_ns", "time_mean_ns", "time_stdev_ns", "gflops",
        "round_times_ns", "perf_pass", "message"]


def _perf(tmp_path: Path, rows: list[list[Any]]) -> rf.Run:
    return rf.load_run(_folder(tmp_path, _csv(PERF, rows)))


def test_perf_rows_are_timed_rows_of_the_perf_suite(tmp_path: Path) -> None:
    run = _perf(tmp_path, [
        ["a", "pass", "perf", "host", "neon", "gemm", "3", "0", "", "", "", "", "", "", "1", ""],
        ["b", "pass", "perf", "host", "neon", "gemm", "0", "0", "", "", "", "", "", "", "1", ""],
        ["c", "pass", "correctness", "host", "neon", "gemm", "3", "0", "", "", "", "", "", "",
         "1", ""],
        ["d", "pass", "perf", "host", "neon", "gemm", "1", "0", "", "", "", "", "", "", "1", ""]])
    assert run.perf()["case"].tolist() == ["a", "d"]
    assert run.perf_pooled()["case"].tolist() == ["a", "d"]


def test_passes_of_a_case_pool_into_one_row(tmp_path: Path) -> None:
    run = _perf(tmp_path, [
        ["a", "pass", "perf", "host", "neon", "gemm", "2", "1000", "1", "1.5", "1.5", "0.7",
         "666", "1 2", "1", "first"],
        ["b", "pass", "perf", "host", "neon", "gemm", "1", "50", "5", "5", "5", "0", "10",
         "5", "1", "only"],
        ["a", "pass", "perf", "host", "neon", "gemm", "3", "1000", "3", "4", "4", "1", "250",
         "3 4 5", "2", "second"]])
    pooled = run.perf_pooled()
    assert pooled["case"].tolist() == ["a", "b"]
    a, b = pooled.iloc[0], pooled.iloc[1]
    assert a["round_times"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert a["round_times_ns"] == "1 2 3 4 5"
    assert (a["time_min_ns"], a["time_median_ns"], a["time_mean_ns"]) == (1.0, 3.0, 3.0)
    assert a["time_stdev_ns"] == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1), rel=1e-15)
    assert a["gflops"] == pytest.approx(1000 / 3, rel=1e-15) and a["rounds"] == 5
    assert a["message"] == "second" and a["perf_pass"] == 2  # the last pass's fields
    assert b["round_times"] == [5.0] and b["gflops"] == 10 and b["rounds"] == 1
    assert b["message"] == "only"


def _pass(rounds: str, flops: str, stats: tuple[str, str, str, str], gflops: str,
          round_times: str, perf_pass: str) -> list[str]:
    """One pass of case "a" on the host as a PERF row (stats: min, median, mean, stdev)."""
    return ["a", "pass", "perf", "host", "neon", "gemm", rounds, flops, *stats, gflops,
            round_times, perf_pass, ""]


def test_pooled_round_times_keep_six_significant_digits(tmp_path: Path) -> None:
    run = _perf(tmp_path, [_pass("1", "0", ("", "", "", ""), "7", "1234567.8", "1"),
                           _pass("1", "0", ("", "", "", ""), "7", "0.5", "2")])
    a = run.perf_pooled().iloc[0]
    assert a["round_times_ns"] == "1.23457e+06 0.5"
    assert a["time_stdev_ns"] == pytest.approx(np.std([1234567.8, 0.5], ddof=1))
    assert a["gflops"] == 7  # no flops: the figure is left as written


def test_passes_without_round_times_only_sum_their_rounds(tmp_path: Path) -> None:
    run = _perf(tmp_path, [_pass("2", "10", ("1", "2", "3", "4"), "5", "", "1"),
                           _pass("3", "10", ("6", "7", "8", "9"), "10", "", "2")])
    a = run.perf_pooled().iloc[0]
    assert a["rounds"] == 5 and a["round_times"] == []
    assert [a[c] for c in ("time_min_ns", "time_median_ns", "time_mean_ns", "time_stdev_ns",
                           "gflops")] == [6, 7, 8, 9, 10]


def test_one_round_in_all_passes_has_a_stdev_of_zero(tmp_path: Path) -> None:
    run = _perf(tmp_path, [
        ["a", "pass", "perf", "host", "neon", "gemm", "1", "10", "", "", "", "", "", "", "1", ""],
        ["a", "pass", "perf", "host", "neon", "gemm", "1", "10", "", "", "", "", "", "4", "2",
         ""]])
    a = run.perf_pooled().iloc[0]
    assert a["round_times"] == [4.0] and a["time_stdev_ns"] == 0.0 and a["gflops"] == 2.5


def test_passes_differ_by_realization_and_threads_not_by_status(tmp_path: Path) -> None:
    header = [*PERF, "threads"]
    base = ["perf", "host", "neon", "gemm", "1", "0", "", "", "", "", "", "1", "1", ""]
    rows = [["a", "pass", *base, "1"], ["a", "fail", *base, "1"], ["a", "pass", *base, "2"]]
    sme = list(base)
    sme[2] = "sme"
    rows.append(["a", "pass", *sme, "1"])
    df = rf.load_run(_folder(tmp_path, _csv(header, rows))).perf_pooled()
    assert df["rounds"].tolist() == [2, 1, 1] and df["status"].tolist() == ["fail", "pass", "pass"]
    assert isinstance(df, pd.DataFrame) and df.index.tolist() == [0, 1, 2]


def test_a_run_without_repeated_passes_is_returned_as_it_is(tmp_path: Path) -> None:
    run = _perf(tmp_path, [
        ["a", "pass", "correctness", "host", "neon", "gemm", "3", "0", "", "", "", "", "", "",
         "1", ""],
        ["b", "pass", "perf", "host", "neon", "gemm", "3", "0", "", "", "", "", "", "", "1", ""]])
    pooled = run.perf_pooled()
    assert pooled.index.tolist() == [1] and pooled.equals(run.perf())


def test_pooled_cases_keep_their_first_order_and_single_passes_their_own_figures(
        tmp_path: Path) -> None:
    run = _perf(tmp_path, [
        ["z", "pass", "perf", "host", "neon", "gemm", "1", "1", "", "9", "", "", "5", "2",
         "1", ""],
        ["a", "pass", "perf", "host", "neon", "gemm", "1", "1", "", "", "", "", "", "2", "1", ""],
        ["a", "pass", "perf", "host", "neon", "gemm", "1", "1", "", "", "", "", "", "4", "2", ""]])
    pooled = run.perf_pooled()
    assert pooled["case"].tolist() == ["z", "a"] and "index" not in pooled.columns
    z, a = pooled.iloc[0], pooled.iloc[1]
    # a single pass keeps what it recorded, even where its round times would say otherwise
    assert (z["time_median_ns"], z["gflops"], z["rounds"]) == (9.0, 5.0, 1)
    assert a["time_median_ns"] == 3.0 and a["gflops"] == 1 / 3  # one flop counts


def test_passes_with_a_missing_key_field_pool_together() -> None:
    perf = pd.DataFrame({c: ["x", "x"] for c in rf.PASS_KEY})
    perf["b_form"] = [None, None]
    perf = perf.assign(suite="perf", rounds=[1, 1], round_times=[[1.0], [3.0]],
                       round_times_ns=["1", "3"], flops=[0, 0], time_min_ns=[1.0, 3.0],
                       time_median_ns=[1.0, 3.0], time_mean_ns=[1.0, 3.0],
                       time_stdev_ns=[0.0, 0.0], gflops=[0.0, 0.0])
    pooled = rf.Run(Path("r"), {}, perf).perf_pooled()
    assert len(pooled) == 1 and pooled.iloc[0]["round_times"] == [1.0, 3.0]


def test_columns_a_table_lacks_read_as_the_writers_defaults_on_every_row(
        tmp_path: Path) -> None:
    df = rf.load_run(_folder(tmp_path, "case,status\na,pass\nb,fail\n")).results
    assert df["emulated"].tolist() == [False, False] and str(df["emulated"].dtype) == "bool"
    assert df["perf_pass"].tolist() == [0, 0] and df["message"].tolist() == ["", ""]
    assert df["suite"].tolist() == ["correctness"] * 2 and df.index.tolist() == [0, 1]
    assert np.isnan(df["time_median_ns"]).all() and df["round_times"].tolist() == [[], []]


def test_the_first_nul_byte_is_named(tmp_path: Path) -> None:
    folder = _folder(tmp_path, b"case,status\na,\0pass\nb,pass\nc,\0pass\n")
    assert _error(folder) == (f"{folder / 'results.csv'}: line 2 holds a NUL byte: not a "
                              "results table")


def test_a_quoted_cell_keeps_its_own_line_ends(tmp_path: Path) -> None:
    text = 'case,status,message\r\na,pass,"one\r\ntwo"\r\nb,pass,x\r\n'
    df = rf.load_run(_folder(tmp_path, text.encode())).results
    assert df["message"].tolist() == ["one\r\ntwo", "x"]


def test_only_the_last_of_many_rows_is_cut_off(tmp_path: Path) -> None:
    text = "case,status,k\na,pass,1\nb,pass,2\nc,pass,3\nd,pa"
    run = rf.load_run(_folder(tmp_path, text, {"complete": True, "results": 3}))
    assert run.results["case"].tolist() == ["a", "b", "c"]
    assert run.defects == ["results.csv: line 5 is cut off (the run was stopped while writing "
                           "it); that row is left out"]
