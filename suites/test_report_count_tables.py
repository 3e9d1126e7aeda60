"""The report's instruction-count tables word for word from runs in memory:
which rows are counted, the count and mix tables, the comparison with the
committed baseline (a malformed one is left out, never a crash) and the
peer anchor table with the best anchor marked."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from kbench.results import baseline as bl
from kbench.results import report_counts as rc
from kbench.results.counts import CLASSES, COLUMNS
from kbench.results.runfolder import Run

TARGET = "qemu:cpu=max:svl=512"


def _row(case: str, call: float, realization: str = "r", **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {c: 0.0 for c in COLUMNS}
    row.update({"suite": "perf", "target": TARGET, "catalog": "cat", "case": case,
                "shape": "m4n8k16", "realization": realization, "b_form": "packed",
                "count_call": call, "count_kernel": call / 2, "count_floor": 4.0,
                "count_floor_kind": "outer", "count_efficiency": 0.5,
                "count_mix": json.dumps({"kernel": {"outer": 3, "load": 2},
                                         "pack_b": {"store": 1}}),
                "count_method": "qemu-exec", "count_qemu": "11.1", "count_cpu": "max",
                "op": "gemm", "m": 4, "n": 8, "k": 16, "vector_bits": 512})
    row.update(kw)
    return row


def _run(rows: list[dict[str, Any]]) -> Run:
    return Run(Path("run"), {}, pd.DataFrame(rows))


def test_counted_rows_are_perf_rows_with_a_count_once_per_case() -> None:
    run = _run([_row("a", 100.0), _row("a", 120.0), _row("b", 0.0), _row("c", 50.0),
                _row("d", 10.0, suite="correctness"), _row("a", 7.0, realization="q"),
                _row("a", 8.0, catalog="other")])
    got = rc.counted(run)
    assert list(zip(got["case"], got["count_call"], strict=True)) == [
        ("a", 100.0), ("c", 50.0), ("a", 7.0), ("a", 8.0)]
    assert rc.counted(Run(Path("r"), {}, pd.DataFrame({"suite": ["perf"]}))).empty


def test_the_count_table_adds_the_kernel_mix() -> None:
    run = _run([_row("a", 100.0), _row("b", 10.0, count_mix="")])
    table = rc.count_table(run)
    assert list(table.columns) == rc.COUNT_TABLE and table.index.tolist() == [0, 1]
    a, b = table.to_dict("records")
    assert [a[f"kernel_{c}"] for c in CLASSES] == [
        {"outer": 3.0, "load": 2.0}.get(c, 0.0) for c in CLASSES]
    assert all(math.isnan(b[f"kernel_{c}"]) for c in CLASSES)
    assert (a["count_cpu"], a["count_qemu"], a["b_form"]) == ("max", "11.1", "packed")
    empty = rc.count_table(_run([_row("a", 0.0)]))
    assert empty.empty and list(empty.columns) == rc.COUNT_TABLE


def test_the_mix_table_has_a_row_per_phase_with_its_total() -> None:
    table = rc.mix_table(_run([_row("a", 100.0), _row("b", 5.0, count_mix="")]))
    assert list(table.columns) == rc.MIX_TABLE
    rows = table.to_dict("records")
    assert [(r["case"], r["phase"], r["total"]) for r in rows] == [("a", "kernel", 5),
                                                                   ("a", "pack_b", 1)]
    assert [(r["target"], r["catalog"], r["realization"]) for r in rows] == [
        (TARGET, "cat", "r")] * 2
    assert rows[0]["outer"] == 3 and rows[0]["load"] == 2 and rows[1]["store"] == 1
    assert all(rows[0][c] == 0 for c in CLASSES if c not in ("outer", "load"))
    empty = rc.mix_table(_run([_row("a", 0.0)]))
    assert empty.empty and list(empty.columns) == rc.MIX_TABLE


def _committed(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    p = tmp_path / "baseline.csv"
    p.write_text(bl.render(bl.counted_rows(rows), ["made here"]))
    return p


def test_counts_against_the_committed_baseline_case_by_case(tmp_path: Path) -> None:
    path = _committed(tmp_path, [_row("a", 100.0), _row("b", 50.0), _row("gone", 9.0)])
    run = _run([_row("a", 120.0), _row("b", 50.0), _row("new", 3.0)])
    table = rc.vs_committed(run, path)
    assert list(table.columns) == rc.DELTA_TABLE
    got = {r["case"]: r for r in table.to_dict("records")}
    assert set(got) == {"a", "b", "new"}
    assert (got["a"]["base_call"], got["a"]["call"], got["a"]["call_ratio"]) == (100.0, 120.0,
                                                                                  1.2)
    assert got["b"]["call_ratio"] == 1.0
    assert math.isnan(got["new"]["base_call"]) and got["new"]["verdict"] == "new"


def test_a_baseline_that_holds_none_of_the_runs_cases_or_is_malformed_gives_nothing(
        tmp_path: Path) -> None:
    path = _committed(tmp_path, [_row("x", 100.0)])
    run = _run([_row("a", 120.0)])
    assert rc.vs_committed(run, path).empty
    other = _committed(tmp_path, [_row("a", 100.0, catalog="elsewhere")])
    assert rc.vs_committed(run, other).empty
    path.write_text("target,case\nx,y\n")  # malformed: missing columns
    table = rc.vs_committed(run, path)
    assert table.empty and list(table.columns) == rc.DELTA_TABLE
    assert rc.vs_committed(run, tmp_path / "none.csv").empty
    assert rc.vs_committed(_run([_row("a", 0.0)]), other).empty


def test_counts_against_a_baseline_run() -> None:
    base, run = _run([_row("a", 100.0)]), _run([_row("a", 150.0)])
    table = rc.vs_run(run, base)
    [r] = table.to_dict("records")
    assert (r["case"], r["base_call"], r["call"], r["call_ratio"]) == ("a", 100.0, 150.0, 1.5)
    assert r["verdict"] == "regression" and r["grew"].startswith("call +50")
    none = rc.vs_run(run, None)
    assert none.empty and list(none.columns) == rc.DELTA_TABLE


ANCHORS = '''[source]
name = "peer"
what = "w"
method = "m"
[[anchor]]
label = "slow"
kernel = "k_slow"
phase = "kernel"
ours = ["r"]
m = 4
svl512 = 200
[[anchor]]
label = "fast"
kernel = "k_fast"
phase = "kernel"
ours = ["r"]
m = 4
svl512 = 40
[[anchor]]
label = "packer"
kernel = "k_pack"
phase = "pack_b"
ours = ["r"]
any_svl = 25
'''


def test_the_anchor_table_marks_the_best_anchor(tmp_path: Path) -> None:
    p = tmp_path / "anchors.toml"
    p.write_text(ANCHORS)
    run = _run([_row("a", 100.0, count_pack_b=30.0, count_pack_b_checksum=10.0,
                     count_mix=json.dumps({"kernel": {"outer": 8}}))])
    table = rc.anchor_table(run, (p, tmp_path / "missing.toml"))
    assert list(table.columns) == rc.ANCHOR_TABLE
    rows = table.to_dict("records")
    assert [(r["anchor"], r["peer_kernel"], r["phase"], r["best"], r["ours"], r["peer"])
            for r in rows] == [("slow", "k_slow", "kernel", "", 50.0, 200.0),
                               ("fast", "k_fast", "kernel", "best", 50.0, 40.0),
                               ("packer", "k_pack", "pack_b", "best", 30.0, 25.0)]
    slow, fast, packer = rows
    assert (slow["ratio"], fast["ratio"], slow["svl"], slow["anchor_shape"]) == (0.25, 1.25,
                                                                               512, "M=4")
    assert slow["ours_outer_per_floor"] == 2.0 and slow["source"] == "peer"
    assert (slow["target"], slow["realization"], slow["case"]) == (TARGET, "r", "a")
    assert math.isnan(slow["ours_without_checksum"]) and math.isnan(
        slow["ratio_without_checksum"])
    assert (packer["ours_without_checksum"], packer["ratio_without_checksum"]) == (20.0, 0.8)
    assert packer["svl"] == 512 and packer["anchor_shape"] == ""
    none = rc.anchor_table(_run([_row("a", 0.0)]), (p,))
    assert none.empty and list(none.columns) == rc.ANCHOR_TABLE


def test_an_anchor_counted_at_any_svl_on_a_row_without_one_says_any(tmp_path: Path) -> None:
    p = tmp_path / "anchors.toml"
    p.write_text(ANCHORS)
    run = _run([_row("a", 100.0, vector_bits=0, count_pack_b=30.0)])
    [packer] = rc.anchor_table(run, (p,)).to_dict("records")
    assert packer["svl"] == "any" and packer["anchor"] == "packer"


def test_the_summary_names_qemu_method_and_cpu() -> None:
    run = _run([_row("a", 1.0), _row("b", 1.0, count_qemu="10.0", count_cpu=""),
                _row("c", 0.0, count_method="other")])
    assert rc.summary(run) == {"qemu": "10.0, 11.1", "method": "qemu-exec", "cpu": "max"}
    assert rc.summary(_run([_row("a", 0.0)])) == {"qemu": "", "method": "", "cpu": ""}
