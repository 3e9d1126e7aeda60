"""The report's error-versus-K table word for word from a small frame (which
rows it takes, what it aggregates, a vacuous bound left out), and which
charts make_plots asks for, with their titles, captions and colours."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from kbench.results import report as rep
from kbench.results import report_verdicts as rep_verdicts


def _row(**kw: Any) -> dict[str, Any]:
    row = {"target": "host", "op": "gemm", "realization": "r", "accum": "f32", "k": 64,
           "case": "c", "kind": "uniform", "suite": "correctness", "status": "pass",
           "message": "", "max_err_bound": 0.1, "max_ulp": 1.0, "rms_rel": 0.01,
           "exact_fraction": 0.5}
    row.update(kw)
    return row


def test_error_vs_k_word_for_word() -> None:
    rows = [
        _row(case="a", max_err_bound=0.1, max_ulp=1.0, rms_rel=0.01, exact_fraction=0.5),
        _row(case="b", kind="normal", status="fail", max_err_bound=1.5, max_ulp=5.0,
             rms_rel=0.02, exact_fraction=0.25),
        _row(case="c", status="mistrusted", message="x: no bound at this K", max_err_bound=9.0,
             max_ulp=2.0, rms_rel=0.03, exact_fraction=0.75),
        _row(case="d", status="mistrusted", message="fingerprint", max_err_bound=0.7,
             max_ulp=0.0, rms_rel=0.0, exact_fraction=1.0),
        # not taken: other statuses, kinds, suites, K 0
        _row(case="e", status="error", max_ulp=99.0), _row(case="f", status="skip", max_ulp=99.0),
        _row(case="g", kind="specials", max_ulp=99.0), _row(case="h", kind="exact", max_ulp=99.0),
        _row(case="i", suite="perf", max_ulp=99.0), _row(case="j", k=0, max_ulp=99.0),
        # other groups: K, accumulator, realization, op, target
        _row(case="a", k=8, max_ulp=0.5), _row(case="a", accum="f16", max_ulp=3.0),
        _row(case="a", realization="q", max_ulp=4.0), _row(case="a", op="conv2d", max_ulp=6.0),
        _row(case="a", target="arm", max_ulp=7.0),
        # K 1 is a reduction length too; "no bound" in a verdict that is not mistrusted
        _row(case="a", k=1, max_ulp=0.25),
        _row(case="b", k=1, status="fail", message="no bound", max_err_bound=2.0),
    ]
    table = rep.error_vs_k(pd.DataFrame(rows))
    assert list(table.columns) == rep_verdicts.ERROR_COLUMNS
    got = [list(r) for r in table.itertuples(index=False)]
    assert got == [
        ["arm", "gemm", "r", "f32", 64, 1, 0.1, 7.0, 7.0, 0.01, 0.5, 0, 0],
        ["host", "conv2d", "r", "f32", 64, 1, 0.1, 6.0, 6.0, 0.01, 0.5, 0, 0],
        ["host", "gemm", "q", "f32", 64, 1, 0.1, 4.0, 4.0, 0.01, 0.5, 0, 0],
        ["host", "gemm", "r", "f16", 64, 1, 0.1, 3.0, 3.0, 0.01, 0.5, 0, 0],
        ["host", "gemm", "r", "f32", 1, 2, 2.0, 1.0, 0.625, 0.01, 0.5, 1, 0],
        ["host", "gemm", "r", "f32", 8, 1, 0.1, 0.5, 0.5, 0.01, 0.5, 0, 0],
        ["host", "gemm", "r", "f32", 64, 4, 1.5, 5.0, 1.5, 0.03, 0.25, 1, 2],
    ]


def test_error_vs_k_of_a_vacuous_bound_only_is_nan() -> None:
    rows = [_row(status="mistrusted", message="no bound", max_err_bound=3.0)]
    table = rep.error_vs_k(pd.DataFrame(rows))
    assert math.isnan(table["max_err_bound"].iloc[0]) and table["mistrusted"].tolist() == [1]


def test_error_vs_k_reads_missing_text_as_empty() -> None:
    rows = [_row(message=None, accum=None), _row(case="z", status=None)]
    table = rep.error_vs_k(pd.DataFrame(rows))
    assert table[["accum", "cases"]].values.tolist() == [["", 1]]


def test_error_vs_k_of_nothing_taken_is_empty_with_its_columns() -> None:
    for rows in ([_row(status="error")], [_row(k=0)], [_row(kind="exact")]):
        table = rep.error_vs_k(pd.DataFrame(rows))
        assert table.empty and list(table.columns) == rep_verdicts.ERROR_COLUMNS


# ---- the charts make_plots asks for ------------------------------------------------

class _Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[Any, ...]] = []
        for name in ("plot_performance", "plot_baseline", "plot_model_totals",
                     "plot_error_vs_k"):
            monkeypatch.setattr(rep, name, self._recorder(name))
        monkeypatch.setattr(rep, "figure_uri", lambda fig: f"uri:{fig}")
        monkeypatch.setattr(rep, "series_colors", lambda names: {"names": tuple(names)})

    def _recorder(self, name: str):
        def record(*args: Any) -> str:
            self.calls.append((name, *args))
            return f"{name}#{len(self.calls)}"
        return record


def _tables(gflops: list[tuple[str, str, str]], speedups: list[float],
            complete: list[bool], error_ops: list[str]) -> rep.ReportTables:
    g = pd.DataFrame(gflops, columns=["target", "catalog", "series"])
    base = pd.DataFrame({"series": [f"b{i}" for i in range(len(speedups))],
                         "speedup": speedups})
    models = pd.DataFrame({"series": [f"m{i}" for i in range(len(complete))],
                           "complete": complete})
    err = pd.DataFrame({"op": error_ops, "realization": [f"e{i}" for i in
                                                          range(len(error_ops))]})
    empty = pd.DataFrame()
    return rep.ReportTables(empty, empty, g, pd.DataFrame({"x": [1]}), base, empty, err,
                            models, empty, empty, empty, empty)


def test_make_plots_draws_one_chart_per_target_catalog_and_error_op(monkeypatch) -> None:
    calls = _Calls(monkeypatch)
    tables = _tables([("t1", "c1", "s1"), ("t1", "c1", "s2"), ("t2", "c1", "s1"),
                      ("t1", "c2", "s3")], [0.0, 1.2], [False, True],
                     ["gemm", "conv2d", "gemm"])
    plots = rep.make_plots(tables)
    colors = {"names": ("s1", "s2", "s1", "s3", "b0", "b1", "m0", "m1", "e0", "e1", "e2")}
    assert [c[0] for c in calls.calls] == ["plot_performance"] * 3 + [
        "plot_baseline", "plot_model_totals", "plot_error_vs_k", "plot_error_vs_k"]
    for _name, *args in calls.calls[:3]:
        assert args[0] is tables.gflops and args[1] is tables.speedup_vs_scalar
    assert [tuple(c[3:]) for c in calls.calls[:3]] == [("t1", "c1", colors), ("t2", "c1", colors),
                                                       ("t1", "c2", colors)]
    assert calls.calls[3][1] is tables.speedup_vs_baseline and calls.calls[3][2:] == (colors,)
    assert calls.calls[4][1] is tables.model_totals and calls.calls[4][2:] == (colors,)
    for c, op in zip(calls.calls[5:], ["gemm", "conv2d"], strict=True):
        assert c[1] is tables.error_vs_k and c[2:] == (op, colors)
    assert set(plots) == {"perf", "baseline", "models", "error", "trends", "counts"}
    assert plots["trends"] == [] and plots["counts"] == []
    # no speedup over the scalar reference on these shapes: the caption says so
    caption = ("a realization without a bar lacks the shape; \"no time\": its timing failed; "
               "no speedup panel: no realization but the scalar reference was timed on these "
               "shapes")
    assert [(p.title, p.uri, p.caption) for p in plots["perf"]] == [
        ("c1 on t1", "uri:plot_performance#1", caption),
        ("c1 on t2", "uri:plot_performance#2", caption),
        ("c2 on t1", "uri:plot_performance#3", caption)]
    assert [(p.title, p.uri, p.caption) for p in plots["baseline"]] == [
        ("speedup over the baseline", "uri:plot_baseline#4", "")]
    assert [(p.title, p.uri, p.caption) for p in plots["models"]] == [
        ("per-model totals", "uri:plot_model_totals#5",
         "realizations with every shape of the model only")]
    caption = "lines that coincide are realizations with the same errors (bit-identical kernels)"
    assert [(p.title, p.uri, p.caption) for p in plots["error"]] == [
        ("error versus K: gemm", "uri:plot_error_vs_k#6", caption),
        ("error versus K: conv2d", "uri:plot_error_vs_k#7", caption)]


def test_make_plots_leaves_out_charts_with_nothing_to_show(monkeypatch) -> None:
    calls = _Calls(monkeypatch)
    plots = rep.make_plots(_tables([], [0.0, -1.0, math.nan], [False, False], []))
    assert calls.calls == []
    slower = rep.make_plots(_tables([], [0.5], [], []))  # a slowdown is plotted too
    assert [p.title for p in slower["baseline"]] == ["speedup over the baseline"]
    calls.calls.clear()
    assert plots == {"perf": [], "baseline": [], "models": [], "error": [], "trends": [],
                     "counts": []}
    plots = rep.make_plots(_tables([], [], [], []))
    assert calls.calls == [] and all(v == [] for v in plots.values())
