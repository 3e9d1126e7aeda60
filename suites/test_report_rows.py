"""Which timed rows the report reads and how it names them, word for word:
hardware rows apart from emulated ones (flagged in the row or by the
target), the last of repeated rows, series labels that add the B form and
thread count only where they vary, GFLOP/s derived where a row lacks it;
and the metadata table, flattened, with a baseline side by side."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

from kbench.results import report as rep
from kbench.results import report_perf as rep_perf
from kbench.results import report_verdicts as rep_verdicts
from kbench.results.runfolder import Run, load_run

COLS = ["case", "status", "suite", "target", "op", "catalog", "shape", "kind", "realization",
        "backend", "b_form", "threads", "rounds", "flops", "time_median_ns", "time_mean_ns",
        "time_stdev_ns", "gflops", "emulated", "layers"]


def _perf(case: str, real: str = "r", **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"case": case, "status": "pass", "suite": "perf", "target": "host",
                           "op": "gemm", "catalog": "cat", "shape": f"s_{case}",
                           "kind": "uniform", "realization": real, "backend": "neon",
                           "b_form": "plain", "threads": 1, "rounds": 3, "flops": 100,
                           "time_median_ns": 50.0, "time_mean_ns": 50.0, "time_stdev_ns": 5.0,
                           "gflops": "", "emulated": "false", "layers": 1}
    row.update(kw)
    return row


def _run(tmp_path: Path, rows: list[dict[str, Any]], meta: dict[str, Any] | None = None,
         name: str = "run") -> Run:
    d = tmp_path / name
    d.mkdir()
    (d / "run.json").write_text(json.dumps(meta or {}))
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    (d / "results.csv").write_text(out.getvalue())
    return load_run(d)


def test_hardware_and_emulated_rows_are_told_apart(tmp_path: Path) -> None:
    run = _run(tmp_path, [_perf("a"), _perf("b", emulated="true"), _perf("c", target="qemu:x"),
                          _perf("d", target="qemu:y"), _perf("e", target="bad")],
               {"targets": {"qemu:x": {"emulated": True}, "qemu:y": {"emulated": False},
                            "bad": "not a record"}})
    assert rep_perf.emulated_mask(run).tolist() == [False, True, True, False, False]
    assert rep.timed_rows(run)["case"].tolist() == ["e", "a", "d"]  # sorted by target
    emulated = rep.emulated_times(run)
    assert emulated["case"].tolist() == ["b", "c"]
    assert set(emulated["label"]) == {"emulated — not a speed"}
    assert list(emulated.columns) == rep_perf.EMULATED_COLUMNS
    none = _run(tmp_path, [_perf("a", target="qemu:x")], {"targets": None}, name="none")
    assert rep_perf.emulated_mask(none).tolist() == [False]


def test_timed_rows_are_sorted_and_fill_gflops_from_the_median(tmp_path: Path) -> None:
    run = _run(tmp_path, [_perf("b", time_median_ns=0.0), _perf("a", gflops=7.0),
                          _perf("c", time_median_ns=25.0), _perf("d", rounds=0),
                          _perf("e", time_median_ns=1.0)])
    rows = rep.timed_rows(run)
    assert rows["case"].tolist() == ["a", "b", "c", "e"] and rows.index.tolist() == [0, 1, 2, 3]
    assert "index" not in rows.columns
    g = rows["gflops"].tolist()
    assert g[0] == 7.0 and math.isnan(g[1]) and g[2:] == [4.0, 100.0]  # a zero median: none


def test_a_repeated_row_keeps_the_last(tmp_path: Path) -> None:
    run = Run(tmp_path, {}, rep_verdicts.clean_text(_run(tmp_path, [_perf("a", time_median_ns=10.0),
                                                       _perf("b")]).results))
    twice = run.results.iloc[[0, 0, 1]].copy()
    twice.iloc[1, twice.columns.get_loc("time_median_ns")] = 20.0
    twice["round_times"] = [[], [], []]
    rows = rep_perf._perf_rows(Run(tmp_path, {}, twice.reset_index(drop=True)), emulated=False)
    assert rows["time_median_ns"].tolist() == [20.0, 50.0]


def test_series_labels_add_what_varies(tmp_path: Path) -> None:
    run = _run(tmp_path, [_perf("a", "r"), _perf("a", "r", b_form="packed"),
                          _perf("a", "q", threads=2), _perf("b", "q", threads=2),
                          _perf("a", "p", threads=4), _perf("a", "p", threads=1),
                          _perf("a", "s")])
    rows = rep.timed_rows(run)
    labels = dict(zip(zip(rows["realization"], rows["b_form"], rows["threads"], strict=True),
                      rows["series"], strict=True))
    assert labels == {("r", "plain", 1): "r B:plain", ("r", "packed", 1): "r B:packed",
                      ("q", "plain", 2): "q ×2t", ("p", "plain", 4): "p ×4t",
                      ("p", "plain", 1): "p ×1t", ("s", "plain", 1): "s"}
    empty = rep.timed_rows(_run(tmp_path, [_perf("a", rounds=0)], name="empty"))
    assert empty.empty and "series" in empty.columns


def test_speedup_over_the_scalar_reference_of_the_same_case(tmp_path: Path) -> None:
    ref = rep_perf.REFERENCE["gemm"]
    run = _run(tmp_path, [
        _perf("a", ref, backend="scalar", time_median_ns=100.0),
        _perf("a", ref, backend="scalar", time_median_ns=60.0, threads=2),
        _perf("a", "other_scalar", backend="scalar", time_median_ns=10.0),
        _perf("a", "fast", time_median_ns=25.0),
        _perf("b", "fast", time_median_ns=5.0),
        _perf("c", "alt_scalar", backend="scalar", time_median_ns=30.0),
        _perf("c", "alt_scalar2", backend="scalar", time_median_ns=20.0),
        _perf("c", "fast", time_median_ns=10.0)])
    table = rep.speedup_vs_scalar(run)
    assert list(table.columns) == rep_perf.SPEEDUP_SCALAR_COLUMNS
    got = {(r["case"], r["realization"], r["threads"]): (r["ref_realization"], r["speedup"])
           for r in table.to_dict("records")}
    # the preferred reference at its fewest threads, else the fastest other scalar row
    assert got[("a", "fast", 1)] == (ref, 4.0)
    assert got[("a", ref, 2)] == (ref, 100.0 / 60.0)
    assert got[("c", "fast", 1)] == ("alt_scalar2", 2.0)
    ref_b, speed_b = got[("b", "fast", 1)]
    assert ref_b != ref_b and math.isnan(speed_b)  # no scalar row on that case
    none = rep.speedup_vs_scalar(_run(tmp_path, [_perf("a", rounds=0)], name="none"))
    assert none.empty and list(none.columns) == rep_perf.SPEEDUP_SCALAR_COLUMNS


def test_the_gflops_table_adds_the_coefficient_of_variation(tmp_path: Path) -> None:
    run = _run(tmp_path, [_perf("a", time_mean_ns=40.0, time_stdev_ns=4.0),
                          _perf("b", time_mean_ns=0.0)])
    table = rep.gflops_table(run)
    assert list(table.columns) == rep_perf.GFLOPS_COLUMNS
    cv = table["cv"].tolist()
    assert cv[0] == 0.1 and not math.isfinite(cv[1])


def test_metadata_is_flattened_in_a_fixed_order(tmp_path: Path) -> None:
    meta = {"zeta": 1, "host": "h", "date": "d", "complete": True, "results": 3,
            "git_dirty": None, "summary": {"x": 1}, "alpha": ["a", {"name": "n"}, {"k": 2}],
            "targets": {"bad": "not a record",
                        "host": {"name": "host", "realizations": [{"name": "r1"}, "r2"],
                                 "emulated": False, "other": "x"}}}
    run = Run(tmp_path / "run", meta, None)  # type: ignore[arg-type]
    table = rep.metadata(run, None)
    assert table.to_dict("list") == {
        "field": ["run folder", "host", "git_dirty", "date", "complete", "results", "alpha",
                  "zeta", "target host: name", "target host: emulated",
                  "target host: realizations"],
        "run": [str(tmp_path / "run"), "h", "", "d", "True", "3", "a, n, {'k': 2}", "1",
                "host", "False", "r1, r2"]}


def test_metadata_beside_a_baselines(tmp_path: Path) -> None:
    run = Run(tmp_path / "run", {"host": "h1", "date": "d1"}, None)  # type: ignore[arg-type]
    base = Run(tmp_path / "base", {"host": "h0", "python": "3.11"},
               None)  # type: ignore[arg-type]
    table = rep.metadata(run, base)
    assert table.to_dict("list") == {
        "field": ["run folder", "host", "date", "python"],
        "run": [str(tmp_path / "run"), "h1", "d1", ""],
        "baseline": [str(tmp_path / "base"), "h0", "", "3.11"]}


def test_pooled_passes_are_told_apart_by_their_own_rows(tmp_path: Path) -> None:
    """The emulation mask is taken over the pooled rows, not the run's."""
    run = _run(tmp_path, [_perf("x", suite="correctness"), _perf("a", time_median_ns=10.0),
                          _perf("a", time_median_ns=30.0), _perf("b", target="qemu:x")],
               {"targets": {"qemu:x": {"emulated": True}}})
    assert rep.timed_rows(run)["case"].tolist() == ["a"]
    assert rep.emulated_times(run)["case"].tolist() == ["b"]
