"""The report answers which realization is fastest per shape (ours and
peers apart), colours realization families distinctly, draws bit-identical
realizations once, shows the gate's verdict with its statistics, and draws
history trends (`kbench report --history`), checked in headless Chromium
like the rest of the report."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from test_report import (
    IMAGES_JS,
    DevTools,
    _baseline_rows,
    _chromium,
    _correctness_rows,
    _error_events,
    _meta,
    _perf_rows,
    write_run,
)

from kbench.cli.report import report as report_command
from kbench.results import report as rep
from kbench.results import report_html as rep_html
from kbench.results import report_verdicts as rep_verdicts
from kbench.results import report_views as views
from kbench.results.compare import gate
from kbench.results.history import append_run
from kbench.results.runfolder import load_run
from kbench.results.store import RunWriter


def test_families_and_their_colours() -> None:
    assert views.family("gemm_neon_f16acc_mb24_nb64_kb64 B:native") == "gemm_neon_f16acc"
    assert views.family("gemm_scalar_f32acc ×4t") == "gemm_scalar_f32acc"
    names = ["gemm_scalar_f32acc", "conv2d_direct_scalar_f32acc", "gemm_neon_f16acc",
             "gemm_neon_f16acc_mb24_nb64_kb64", "gemm_neon_f16acc_mb96_nb256_kb256",
             "ort_matmul_f16", "ort_matmul_f16_nokleidiai", views.BEST]
    c = views.family_colors(names)
    families = {"gemm_scalar_f32acc", "conv2d_direct_scalar_f32acc", "gemm_neon_f16acc",
                "ort_matmul_f16", "ort_matmul_f16_nokleidiai"}
    assert len({c[f] for f in families}) == len(families)  # distinct per family
    # scalar realizations are colours, not greys
    for f in ("gemm_scalar_f32acc", "conv2d_direct_scalar_f32acc"):
        r, g, b = c[f]
        assert max(r, g, b) - min(r, g, b) > 0.1
    # blocked variants: shades (lighter) of their kernel's hue
    base = c["gemm_neon_f16acc"]
    for v in ("gemm_neon_f16acc_mb24_nb64_kb64", "gemm_neon_f16acc_mb96_nb256_kb256"):
        assert c[v] != base and all(x >= y - 1e-9 for x, y in zip(c[v], base, strict=True))
    assert rep.series_colors(names) == c


def _gflops_frame() -> pd.DataFrame:
    rows = []
    for case, times in (("a", {"gemm_scalar_f32acc": 100.0, "gemm_neon_f16acc": 40.0,
                               "ort_matmul_f16": 30.0, "ort_matmul_f16_nokleidiai": 50.0}),
                        ("b", {"gemm_scalar_f32acc": 100.0, "gemm_neon_f16acc": 60.0})):
        for s, t in times.items():
            rows.append({"target": "host", "catalog": "cat", "case": case, "shape": case,
                         "layers": 1, "series": s, "time_median_ns": t, "gflops": 1000 / t})
    return pd.DataFrame(rows)


def test_fastest_per_shape_keeps_ours_and_peers_apart() -> None:
    f = views.fastest_per_shape(_gflops_frame()).set_index("case")
    assert f.loc["a", "fastest_ours"] == "gemm_neon_f16acc"  # not the faster peer
    assert f.loc["a", "winner"] == "ort_matmul_f16"  # the winner over all of them
    assert f.loc["a", "fastest_peer"] == "ort_matmul_f16"
    assert f.loc["a", "peer_vs_ours"] == pytest.approx(0.75)
    assert f.loc["b", "fastest_peer"] == "" and pd.isna(f.loc["b", "peer_vs_ours"])


def test_gflops_table_marks_the_fastest_cells() -> None:
    table = rep.gflops_pivot(_gflops_frame())
    assert table.columns[:3] == ["catalog", "shape", "layers"]
    col = {name: i for i, name in enumerate(table.columns)}
    row_a = table.rows[0]
    assert "best" in row_a[col["gemm_neon_f16acc"]].cls.split()
    assert row_a[col["gemm_neon_f16acc"]].text.startswith("★")
    assert "best-peer" in row_a[col["ort_matmul_f16"]].cls.split()
    assert not row_a[col["gemm_scalar_f32acc"]].text.startswith(("★", "☆"))
    # peers come after ours
    assert col["ort_matmul_f16"] > col["gemm_scalar_f32acc"]


def test_the_gflops_table_word_for_word_over_two_targets() -> None:
    """Two targets: a target column first; the groups in the frame's order
    (not sorted), one row each; our series by name, then the peers; each
    cell's text and class, a series timed without a median n/a, one not run
    on a shape "–"."""
    rows = []
    for target, case, times in (("qemu", "b", {"zz_ours": 50.0, "ort_matmul_f16": 25.0}),
                                ("host", "a", {"gemm_x": 100.0, "zz_ours": np.nan,
                                               "ort_matmul_f16": 200.0})):
        for series, t in times.items():
            rows.append({"target": target, "catalog": f"cat_{case}", "case": case,
                         "shape": f"shape_{case}", "layers": 2, "series": series,
                         "time_median_ns": t, "gflops": 1000 / t})
    table = rep.gflops_pivot(pd.DataFrame(rows))
    assert table.columns == ["target", "catalog", "shape", "layers", "gemm_x", "zz_ours",
                             "ort_matmul_f16"]
    texts = [[(c.text, c.cls) for c in row] for row in table.rows]
    assert [r[:4] for r in texts] == [
        [("qemu", ""), ("cat_b", ""), ("shape_b", ""), ("2", "num")],
        [("host", ""), ("cat_a", ""), ("shape_a", ""), ("2", "num")]]
    # two kernels on each shape: a winner (a peer's on b, ours on a)

    def g(v: float) -> str:
        return rep.format_cell("gflops", v).text

    assert texts[0][4][0] == "–" and texts[0][5][0] == g(20.0)  # not the winner: no star
    assert texts[0][6][0] == f"☆ {g(40.0)}" and "best-peer" in texts[0][6][1].split()
    assert texts[1][4][0] == f"★ {g(10.0)}" and texts[1][5] == (rep_html.NA, "num na")
    assert texts[1][6][0] == f"☆ {g(5.0)}"
    # a shape with one kernel timed names no winner, and marks no cell
    ours_only = rep.gflops_pivot(pd.DataFrame(rows[:1])).rows[0]
    peer_only = rep.gflops_pivot(pd.DataFrame(rows[1:2])).rows[0]
    for row in (ours_only, peer_only):
        assert not row[3].text.startswith(("★", "☆"))
    one = rep.gflops_pivot(pd.DataFrame(rows[:2]))
    assert one.columns[0] == "catalog" and one.rows[0][0].text == "cat_b"
    # a series given twice for a shape shows its first figure
    twice = rep.gflops_pivot(pd.DataFrame([*rows[:2], {**rows[0], "gflops": 1.0}]))
    assert [c.text for c in twice.rows[0][3:]] == [g(20.0), f"☆ {g(40.0)}"]


def test_identical_errors_are_grouped() -> None:
    rows = []
    for real, ulp in (("gemm_scalar_f32acc", 0.0), ("gemm_neon_f32acc_fhm", 0.0),
                      ("gemm_neon_f32acc_cvt", 0.0), ("gemm_neon_f16acc", 3.0)):
        for k in (16, 64):
            rows.append({"target": "host", "op": "gemm", "realization": real,
                         "accum": "fp16" if "f16acc" in real else "fp32", "k": k,
                         "max_err_bound": 0.5, "max_ulp": ulp * k, "max_rms_rel": 1e-4,
                         "min_exact_fraction": 1.0})
    groups = views.identical_error_groups(pd.DataFrame(rows))
    assert sorted(groups.values()) == [["gemm_neon_f16acc"], [
        "gemm_neon_f32acc_cvt", "gemm_neon_f32acc_fhm", "gemm_scalar_f32acc"]]
    assert views.group_label(["a", "b", "c", "d"]) == "a = b = c (+1 identical)"


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A run against a baseline whose NEON rows were faster: the gate fails."""
    base_dir = tmp_path_factory.mktemp("gated")
    fast = [replace(v, time_median_ns=v.time_median_ns / 2,
                    round_times_ns=[t / 2 for t in v.round_times_ns])
            if v.backend == "neon" and not v.emulated else v for v in _baseline_rows()]
    baseline = write_run(base_dir / "baseline", fast, commit="b" * 40)
    run = write_run(base_dir / "run", _perf_rows(), commit="c" * 40)
    result = gate(baseline, run, alpha=0.05, max_slowdown=0.05)
    db = base_dir / "history.sqlite"
    for i, factor in enumerate((1.3, 1.1, 1.0)):  # three runs of this machine, getting faster
        rows = [replace(v, time_median_ns=v.time_median_ns * factor) for v in _perf_rows()]
        append_run(db, write_run(base_dir / f"hist{i}", rows, commit=f"{i}" * 40))
    return base_dir, {"result": result, "db": db}


def test_report_shows_the_gate_verdict_with_statistics(gated, tmp_path: Path) -> None:
    base_dir, g = gated
    result = g["result"]
    assert not result.passed
    run = write_run(tmp_path / "r", _perf_rows(), commit="c" * 40)
    files = rep.build_report(run, None, tmp_path / "out", gate=result)
    html = files.html.read_text(encoding="utf-8")
    assert '<section id="gate">' in html
    assert f"FAILED ({len(result.failures)} failure(s))" in html
    assert "Welch t on log per-pass medians" in html and "slowdown" in html
    for f in result.failures:  # every failure listed, with its reason
        assert f"<td>{f.reason}</td>" in html
    # the per-case statistics: ratio of medians, pass ratio, p, verdict
    for col in ("ratio", "pass_ratio", "p_slower", "verdict"):
        assert re.search(rf"<th(?: [^>]*)?>{re.escape(col)}</th>", html)
    timed = [c for c in result.comparison.cases if c.timed]
    assert html.count('<section id="gate">') == 1 and len(timed) > 0


def test_report_command_gate_and_history_in_chromium(gated, tmp_path: Path) -> None:
    base_dir, g = gated
    out = tmp_path / "report"
    res = CliRunner().invoke(report_command, [str(base_dir / "run"), "--baseline",
                                              str(base_dir / "baseline"), "--history",
                                              "--db", str(g["db"]), "--out", str(out)])
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text(encoding="utf-8")
    for section in ("gate", "history", "performance"):
        assert f'<section id="{section}">' in html
    assert "kbench gate (this run against baseline): FAILED" in html
    assert "3 run(s) of this machine" in html
    trends = pd.read_csv(out / "history_trends.csv")
    assert trends["run_id"].nunique() == 3
    one = trends[(trends["case"] == trends["case"].iloc[0])
                 & (trends["realization"] == trends["realization"].iloc[0])]
    assert list(one["time_median_ns"]) == sorted(one["time_median_ns"], reverse=True)
    assert "Fastest per shape" in html and "★" in html
    chromium = _chromium()
    n_images = html.count("<img ")
    tools = DevTools.launch(chromium, tmp_path / "profile")
    try:
        target = tools.call("Target.createTarget", url="about:blank")["targetId"]
        session = tools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            tools.call(f"{domain}.enable", session)
        tools.call("Page.navigate", session, url=(out / "report.html").as_uri())
        tools.wait_event("Page.loadEventFired")
        images = json.loads(tools.call("Runtime.evaluate", session, expression=IMAGES_JS,
                                       returnByValue=True)["result"]["value"])
        js = ("JSON.stringify([document.querySelector('#gate .banner').textContent, "
              "document.querySelectorAll('#history img').length, "
              "document.querySelectorAll('td.best').length, "
              "document.querySelector('#history img').naturalHeight])")
        gate_text, n_trend, n_best, trend_h = json.loads(tools.call(
            "Runtime.evaluate", session, expression=js, returnByValue=True)["result"]["value"])
    finally:
        tools.close()
    assert len(images) == n_images
    for complete, width, height, shown in images:
        assert complete and width > 100 and height > 100 and shown > 0
    assert _error_events(tools.events) == []
    assert "FAILED" in gate_text
    assert n_trend == 1 and trend_h > 100
    assert n_best > 0
    # compact: no chart taller than 14 inches at 96 dpi
    assert max(h for _, _, h, _ in images) <= 14 * 96 + 1


def test_history_without_a_database_is_a_clear_error(gated, tmp_path: Path) -> None:
    base_dir, _ = gated
    res = CliRunner().invoke(report_command, [str(base_dir / "run"), "--history", "--db",
                                              str(tmp_path / "none.sqlite")])
    assert res.exit_code == 1 and "no history database" in res.output


def _inside(fig) -> list[str]:
    """The figure's legends and tick labels that reach outside its bounds."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig).draw()
    box = fig.bbox
    out = []
    for leg in fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]:
        e = leg.get_window_extent()
        if e.x0 < box.x0 - 1 or e.x1 > box.x1 + 1 or e.y0 < box.y0 - 1 or e.y1 > box.y1 + 1:
            out.append(f"legend {e} outside {box}")
    return out


def test_legends_stay_inside_their_figures_with_long_names() -> None:
    """A figure-wide legend of many long realization names is laid out in
    as many columns as fit: it is never cut off at the figure's edges."""
    from kbench.results import report as rep
    names = [f"conv2d_im2col_gemm_neon_f32acc_fhm_mb{i}_nb256_kb256_variant" for i in range(7)]
    rows = [{"target": "host", "op": "gemm", "realization": n, "accum": "fp32", "k": k,
             "cases": 1, "max_err_bound": 0.1 * (i + 1), "max_ulp": 1.0 + i,
             "median_max_ulp": 1.0, "max_rms_rel": 1e-4 * (i + 1), "min_exact_fraction": 0.5,
             "failed": 0, "mistrusted": 0} for i, n in enumerate(names) for k in (8, 64, 512)]
    table = pd.DataFrame(rows, columns=rep_verdicts.ERROR_COLUMNS)
    fig = rep.plot_error_vs_k(table, "gemm", rep.series_colors(names))
    assert fig.legends and _inside(fig) == []


def test_trend_axes_show_commits_and_dates() -> None:
    trends = pd.DataFrame([
        {"run_id": i, "date": f"2026-11-{10 + i:02d}T08:00:00+00:00",
         "git_commit": f"{i:x}abcdef0123", "target": "host", "catalog": "smoke", "case": "c1",
         "realization": "gemm_scalar_f32acc", "time_median_ns": 1000.0 + i} for i in range(1, 9)])
    fig, left_out = views.plot_trends(trends, {"gemm_scalar_f32acc": "C0"})
    assert left_out == 0
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    FigureCanvasAgg(fig).draw()
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels[0] == "1abcdef\n2026-11-11" and labels[-1] == "8abcdef\n2026-11-18"
    assert 2 <= len(labels) <= 5  # thinned, the newest always shown
    assert _inside(fig) == []


def test_trends_mark_this_run_and_its_baseline() -> None:
    trends = pd.DataFrame([
        {"run_id": i, "date": f"2026-11-{10 + i:02d}T08:00:00+00:00",
         "git_commit": f"{i:x}abcdef0123", "target": "host", "catalog": "smoke", "case": "c1",
         "realization": "gemm_scalar_f32acc", "time_median_ns": 1000.0 + i} for i in range(1, 6)])
    fig, _ = views.plot_trends(trends, {}, marks={"this run": "2026-11-15T08:00:00+00:00",
                                                  "baseline": "2026-11-12T08:00:00+00:00",
                                                  "gone": "2025-01-01"})
    ax = fig.axes[0]
    texts = {t.get_text(): t.get_position()[0] for t in ax.texts}
    assert texts == {"this run": 4, "baseline": 1}  # x of runs 5 and 2; no mark for "gone"
    assert sorted(round(line.get_xdata()[0]) for line in ax.lines
                  if line.get_linestyle() == "--") == [1, 4]


def test_every_bar_sits_in_its_shapes_band() -> None:
    """Grouped bars are centred on their shape's label whatever the number of
    realizations the shape has: checked on the chart's data."""
    from kbench.results import report as rep
    gflops = pd.DataFrame([
        {"target": "host", "catalog": "c", "case": "a", "shape": "m1n1k1", "layers": 1,
         "series": s, "gflops": 1.0 + i} for i, s in enumerate(["s1", "s2", "s3"])] + [
        {"target": "host", "catalog": "c", "case": "b", "shape": "m2n2k2", "layers": 1,
         "series": "s3", "gflops": 7.0}])
    speed = gflops.rename(columns={"gflops": "speedup"})
    fig = rep.plot_performance(gflops, speed, "host", "c", {"s1": "C0", "s2": "C1", "s3": "C2"})
    ax = fig.axes[0]
    labels = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True)}
    centres = [(p.get_y() + p.get_height() / 2, p.get_width()) for p in ax.patches]
    band = {w: c for c, w in centres}
    assert band[7.0] == pytest.approx(labels["m2n2k2"])  # the lone bar: on its label
    for c, _ in centres:
        assert min(abs(c - y) for y in labels.values()) < 0.4
    group = sorted(c for c, w in centres if w != 7.0)
    assert len(group) == 3
    assert sum(group) / len(group) == pytest.approx(labels["m1n1k1"])  # centred


def _trend_rows() -> pd.DataFrame:
    """Four runs; five cases over two targets and two catalogs, case "c2" in
    both catalogs with different times; two realizations on some cases."""
    rows = []
    for run in range(1, 5):
        date = f"2026-11-{10 + run:02d}T08:00:00+00:00"
        for target, catalog, case, reals in [
                ("host", "smoke", "c1", ["r_b", "r_a"]), ("host", "smoke", "c2", ["r_a"]),
                ("host", "llm", "c2", ["r_a"]), ("sme", "smoke", "c1", ["r_c"]),
                ("host", "smoke", "c5", ["r_a", "r_c"])]:
            for j, real in enumerate(reals):
                t = 1000.0 * run + 100.0 * j + {"llm": 7.0}.get(catalog, 0.0) \
                    + {"sme": 50.0}.get(target, 0.0) + 10.0 * int(case[1])
                rows.append({"run_id": 10 + run, "date": date, "git_commit": f"{run}abcdef",
                             "target": target, "catalog": catalog, "case": case,
                             "realization": real, "time_median_ns": t})
    return pd.DataFrame(rows)


def test_trends_plot_each_cases_medians_per_realization() -> None:
    """Each small multiple holds one (target, catalog, case): its title is the
    case, one line per realization in name order, at the runs' positions, in
    µs, coloured from the given palette (grey for a name it lacks); the y axis
    starts at 0; unused panels are hidden; each row's first panel names the
    unit; the legend lists every realization once."""
    from matplotlib.colors import to_rgb
    trends = _trend_rows()
    fig, left_out = views.plot_trends(trends, {"r_a": "#112233", "r_b": "#445566"}, per_row=4,
                                      marks={"this run": "2026-11-14T08:00:00+00:00",
                                             "baseline": "2026-11-12T08:00:00+00:00"})
    assert left_out == 0
    axes = fig.axes
    assert len(axes) == 8 and [ax.get_visible() for ax in axes] == [True] * 5 + [False] * 3
    want = {("host", "smoke", "c1"): {"r_a": 100.0, "r_b": 0.0},
            ("host", "smoke", "c2"): {"r_a": 0.0}, ("host", "llm", "c2"): {"r_a": 7.0},
            ("sme", "smoke", "c1"): {"r_c": 50.0}, ("host", "smoke", "c5"): {"r_a": 0.0,
                                                                              "r_c": 100.0}}
    colour = {"r_a": (0x11 / 255, 0x22 / 255, 0x33 / 255), "r_b": (0x44 / 255, 0x55 / 255,
                                                                    0x66 / 255),
              "r_c": (0.5, 0.5, 0.5)}
    for ax, (key, series) in zip(axes, want.items(), strict=False):
        case = key[2]
        assert ax.get_title() == case
        lines = [ln for ln in ax.lines if ln.get_linestyle() != "--"]
        assert [ln.get_label() for ln in lines] == sorted(series)
        for ln in lines:
            real = ln.get_label()
            assert list(ln.get_xdata()) == [0, 1, 2, 3]
            expect = [(1000.0 * run + series[real] + 10.0 * int(case[1])) / 1e3
                      for run in range(1, 5)]
            assert list(ln.get_ydata()) == pytest.approx(expect)
            assert to_rgb(ln.get_color()) == pytest.approx(colour[real])
            assert ln.get_marker() == "o"
        assert ax.get_ylim()[0] == 0
        assert ax.get_xlim() == (-0.5, 3.5)
        # every panel marks the report's run (dark) and its baseline (light), at their runs
        marks = {round(ln.get_xdata()[0]): to_rgb(ln.get_color()) for ln in ax.lines
                 if ln.get_linestyle() == "--"}
        assert marks == {3: to_rgb("0.25"), 1: to_rgb("0.6")}
        assert {t.get_text(): t.get_position()[0] for t in ax.texts} == {"this run": 3,
                                                                          "baseline": 1}
    assert [ax.get_ylabel() for ax in axes] == ["µs per call", "", "", "", "µs per call", "",
                                                "", ""]
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["r_a", "r_b", "r_c"]
    # each entry drawn with its realization's line, never a run mark's
    assert [to_rgb(h.get_color()) for h in legend.legend_handles] == [
        pytest.approx(colour[r]) for r in ("r_a", "r_b", "r_c")]
    assert all(h.get_linestyle() != "--" for h in legend.legend_handles)
    assert "last 4 runs" in fig._suptitle.get_text()


def test_trends_leave_out_the_cases_past_the_limit_and_say_how_many() -> None:
    fig, left_out = views.plot_trends(_trend_rows(), {}, max_cases=2, per_row=4)
    assert left_out == 3
    shown = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert shown == ["c1", "c2"] and len(fig.axes) == 4
    fig, left_out = views.plot_trends(_trend_rows(), {}, max_cases=5, per_row=2)
    assert left_out == 0 and len(fig.axes) == 6 and sum(ax.get_visible() for ax in fig.axes) == 5


def test_the_gate_view_holds_failures_and_timed_cases(gated) -> None:
    """The report's gate section from a GateResult of two runs: the verdict,
    each failure as reason / case / detail, the timed cases only (indexed
    from 0), largest gated ratio first, with the gate's first-look words
    (never "same") and their tally; a gate without failures or timed cases
    still has its columns."""
    from kbench.results.compare import first_look_word, gated_sort
    result = gated[1]["result"]
    view = views.gate_view(result)
    assert view.passed is False
    assert list(view.failures.columns) == ["reason", "case", "detail"]
    assert view.failures.to_dict("records") == [
        {"reason": f.reason, "case": f.case, "detail": f.detail} for f in result.failures]
    timed = gated_sort([c for c in result.comparison.cases if c.timed])
    assert list(view.cases.columns) == ["case", "base_median_ns", "cand_median_ns",
                                        "gated_ratio", "ratio", "pass_ratio", "p_slower",
                                        "verdict", "note"]
    assert list(view.cases.index) == list(range(len(timed)))
    assert list(view.cases["case"]) == [c.label for c in timed]
    words = [first_look_word(c, result.comparison) for c in timed]
    assert list(view.cases["verdict"]) == words and "same" not in words
    assert view.counts == {w: words.count(w) for w in set(words)}
    assert view.possible == len(result.first_look) and view.undecided == 0
    assert "slowdown limit 5.0%, alpha 0.05" in view.settings
    assert view.settings.startswith("a first look: two runs measured apart never fail")
    empty = replace(result, failures=[], comparison=replace(result.comparison, cases=[]))
    ev = views.gate_view(empty)
    assert ev.failures.empty and list(ev.failures.columns) == ["reason", "case", "detail"]
    assert ev.cases.empty and list(ev.cases.columns) == list(view.cases.columns)
    untimed = replace(result.comparison, cases=[replace(c, timed=False)
                                                 for c in result.comparison.cases])
    uv = views.gate_view(replace(result, comparison=untimed))
    assert uv.cases.empty and list(uv.cases.columns) == list(view.cases.columns)


def test_the_gate_view_of_an_interleaved_gate(tmp_path: Path) -> None:
    """With --ab the report shows the interleaved verdicts (interval and
    reason), their tally, the one undecided count and the settle commands."""
    from test_gate_ab import drifted_runs, write_ab

    from kbench.results.abgate import load_ab
    b, c = drifted_runs(tmp_path, shift=1.0)
    result = gate(b, c, ab=load_ab(write_ab(tmp_path / "ab", {5: 1.10}, noisy={2})))
    view = views.gate_view(result)
    assert list(view.cases.columns) == ["case", "median_ratio", "ci_low", "ci_high", "verdict",
                                        "why", "source"]
    assert dict(zip(view.cases["case"], view.cases["verdict"], strict=True)) == {
        v.label: v.verdict for v in result.interleaved}
    assert view.counts == {"inconclusive": 1, "same": 26, "slower": 1}
    assert view.undecided == 1 and view.settle == tuple(result.settle_commands())
    assert view.settings.startswith(f"speed from the interleaved run(s) {tmp_path / 'ab'}")
    assert not view.passed


def test_run_ticks_thin_to_five_and_name_a_run_without_a_commit() -> None:
    runs = list(range(1, 10))
    trends = pd.DataFrame([{"run_id": r, "date": f"2026-11-{10 + r:02d}T08:00:00+00:00",
                            "git_commit": "" if r == 9 else f"{r}abcdefabc", "case": c}
                           for r in runs for c in ("a", "b")])
    ticks = views.run_ticks(trends, runs)
    assert [x for x, _ in ticks] == [0, 2, 4, 6, 8]
    assert ticks[0][1] == "1abcdef\n2026-11-11" and ticks[-1][1] == "run 9\n2026-11-19"
    assert [x for x, _ in views.run_ticks(trends, runs[:5])] == [0, 1, 2, 3, 4]
    assert [x for x, _ in views.run_ticks(trends, runs[:6])] == [0, 1, 2, 4, 5]
    assert [x for x, _ in views.run_ticks(trends, runs, most=2)] == [0, 8]
    dateless = trends.assign(date=None)
    assert views.run_ticks(dateless, runs[:1]) == [(0, "1abcdef\n")]


def test_a_realization_missing_from_some_runs_sits_at_its_own_runs() -> None:
    """A realization measured in runs 2 and 4 only is drawn at x = 1 and 3
    (its runs), not packed to the left; the legend's handles carry each
    realization's own colour; one panel per row works too."""
    from matplotlib.colors import to_rgb
    rows = [{"run_id": r, "date": f"2026-11-{10 + r:02d}T08:00:00+00:00",
             "git_commit": f"{r}abcdef", "target": "host", "catalog": "smoke", "case": "c1",
             "realization": real, "time_median_ns": 1000.0 * r}
            for r in (1, 2, 3, 4) for real in ("r_all", "r_some") if real == "r_all" or r % 2 == 0]
    colours = {"r_all": "#aa0000", "r_some": "#0000aa"}
    fig, _ = views.plot_trends(pd.DataFrame(rows), colours)
    lines = {ln.get_label(): ln for ln in fig.axes[0].lines}
    assert list(lines["r_all"].get_xdata()) == [0, 1, 2, 3]
    assert list(lines["r_some"].get_xdata()) == [1, 3]
    assert list(lines["r_some"].get_ydata()) == [2.0, 4.0]
    (legend,) = fig.legends
    shown = {t.get_text(): to_rgb(h.get_color())
             for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)}
    assert shown == {k: to_rgb(v) for k, v in colours.items()}
    single, _ = views.plot_trends(pd.DataFrame(rows), colours, per_row=1)
    assert len(single.axes) == 1 and single.axes[0].get_title() == "c1"


def _perf_row(case: str, shape: str, layers: int, series: str, value: float,
              target: str = "host", catalog: str = "c") -> dict:
    return {"target": target, "catalog": catalog, "case": case, "shape": shape,
            "layers": layers, "series": series, "gflops": value, "speedup": value / 10}


def test_the_performance_chart_on_its_data() -> None:
    """One target and catalog's bars: the scalar reference's series first, then
    by name; within a shape's group the first series on top; one bar height
    for all (0.8 over the largest group); a timed case without a time marked
    "no time"; tick labels with ×layers; the speedup panel shares the y axis
    and marks 1×; every series in the legend in its colour."""
    from matplotlib.colors import to_rgb
    rows = [_perf_row("a", "m1n1k1", 2, s, v) for s, v in
            (("z_fast", 30.0), ("b_sme", 20.0), ("gemm_scalar", 2.0))]
    rows += [_perf_row("a", "m1n1k1", 2, "b_sme", 99.0),  # a second row of the case: not drawn
             _perf_row("b", "m2n2k2", 1, "b_sme", 7.0),
             _perf_row("c", "m3n3k3", 3, "z_fast", float("nan")),
             _perf_row("a", "m1n1k1", 2, "other_target", 5.0, target="qemu:svl=512"),
             _perf_row("a", "m1n1k1", 2, "other_catalog", 5.0, catalog="d")]
    frame = pd.DataFrame(rows)
    colors = {"gemm_scalar": "#101010", "b_sme": "#202020", "z_fast": "#303030",
              "other_target": "#404040", "other_catalog": "#505050"}
    # the same series and case on another target or catalog come first: never drawn here
    speed = pd.DataFrame([_perf_row("a", "m1n1k1", 2, "b_sme", 500.0, target="qemu:svl=512"),
                          _perf_row("a", "m1n1k1", 2, "b_sme", 600.0, catalog="d"), *rows])
    fig = rep.plot_performance(frame, speed, "host", "c", colors)
    ax_g, ax_s = fig.axes
    assert fig.get_suptitle() == "c on host"
    assert (ax_g.get_title(), ax_s.get_title()) == ("throughput",
                                                    "speedup over the scalar reference")
    assert ax_g.get_xlabel() == "GFLOP/s (flops per call / median time)"
    assert ax_g.get_ylabel() == "shape (×N: N layers)"
    assert ax_s.get_xlabel() == "speedup over the scalar reference (×)"
    assert {ax.get_subplotspec().get_geometry()[:2] for ax in (ax_g, ax_s)} == {(1, 2)}
    assert ax_g.get_shared_y_axes().joined(ax_g, ax_s)
    assert list(ax_g.get_yticks()) == [0, -1, -2]
    assert [t.get_text() for t in ax_g.get_yticklabels()] == ["m1n1k1 ×2", "m2n2k2", "m3n3k3 ×3"]
    assert ax_g.get_ylim() == (-2.5, 0.5)
    h = 0.8 / 3
    bars = [(to_rgb(p.get_facecolor()), round(p.get_y() + p.get_height() / 2, 9), p.get_width(),
             p.get_height()) for p in ax_g.patches]
    scalar, sme, fast = to_rgb("#101010"), to_rgb("#202020"), to_rgb("#303030")
    assert [b[:3] for b in bars] == [
        (scalar, round(h, 9), 2.0), (sme, 0.0, 20.0), (sme, -1.0, 7.0),
        (fast, round(-h, 9), 30.0), (fast, -2.0, pytest.approx(float("nan"), nan_ok=True))]
    assert all(b[3] == pytest.approx(h) for b in bars)
    assert [(t.get_text(), t.get_position()) for t in ax_g.texts] == [(" no time", (0, -2.0))]
    assert [p.get_width() for p in ax_s.patches][:3] == [0.2, 2.0, 0.7]
    assert [(list(line.get_xdata()), line.get_color()) for line in ax_s.lines] == [
        ([1.0, 1.0], "black")]
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["gemm_scalar", "b_sme", "z_fast"]
    assert [to_rgb(h.get_facecolor()) for h in legend.legend_handles] == [scalar, sme, fast]


def test_one_series_draws_full_height_bars_on_their_labels() -> None:
    frame = pd.DataFrame([_perf_row("a", "m1n1k1", 1, "s", 3.0),
                          _perf_row("b", "m2n2k2", 1, "s", 4.0)])
    ax_g, _ = rep.plot_performance(frame, frame, "host", "c", {"s": "C0"}).axes
    assert [(p.get_y() + p.get_height() / 2, p.get_height()) for p in ax_g.patches] == [
        (pytest.approx(0.0), pytest.approx(0.8)), (pytest.approx(-1.0), pytest.approx(0.8))]


def _err(target: str, real: str, accum: str, k: int, bound: float, ulp: float, rms: float,
         op: str = "gemm") -> dict:
    return {"target": target, "op": op, "realization": real, "accum": accum, "k": k,
            "max_err_bound": bound, "max_ulp": ulp, "max_rms_rel": rms}


def test_the_error_versus_k_chart_on_its_data() -> None:
    """One line per realization and target in each of the three panels, at its
    K sorted, its error figures as y; bit-identical realizations drawn once
    under a joined label; "@ target" only when there are several targets; one
    marker per target; FP16 accumulation solid and thicker, FP32 dashed; the
    bound's 1 marked; the axes' scales; only the asked operator."""
    from matplotlib.colors import to_rgb
    rows = []
    for target in ("host", "qemu:svl=512"):
        for k, (b, u, r) in {64: (0.5, 2.0, 1e-3), 16: (0.25, 1.0, 1e-4)}.items():
            rows.append(_err(target, "r_h", "fp16", k, b, u, r))
            rows.append(_err(target, "r_f", "fp32", k, b / 10, u / 2, r / 10))
            rows.append(_err(target, "r_g", "fp32", k, b / 10, u / 2, r / 10))  # = r_f
            rows.append(_err(target, "conv_x", "fp32", k, 9.0, 9.0, 9.0, op="conv2d"))
    table = pd.DataFrame(rows)
    fig = rep.plot_error_vs_k(table, "gemm", {"r_h": "#aa0000", "r_f": "#00aa00"})
    ax_b, ax_u, ax_r = fig.axes
    lines = {line.get_label(): line for line in ax_b.lines if not line.get_label().startswith("_")}
    assert sorted(lines) == ["r_f = r_g @ host", "r_f = r_g @ qemu:svl=512", "r_h @ host",
                             "r_h @ qemu:svl=512"]
    h = lines["r_h @ host"]
    assert list(h.get_xdata()) == [16, 64] and list(h.get_ydata()) == [0.25, 0.5]
    assert (h.get_linestyle(), h.get_linewidth(), to_rgb(h.get_color())) == (
        "-", 1.6, to_rgb("#aa0000"))
    f = lines["r_f = r_g @ qemu:svl=512"]
    assert (f.get_linestyle(), f.get_linewidth(), to_rgb(f.get_color())) == (
        "--", 1.0, to_rgb("#00aa00"))
    assert h.get_marker() == "o" and f.get_marker() == "s"  # one marker per target
    for ax, column in ((ax_u, [1.0, 2.0]), (ax_r, [1e-4, 1e-3])):
        (same,) = [line for line in ax.lines if line.get_label() == "r_h @ host"]
        assert list(same.get_xdata()) == [16, 64] and list(same.get_ydata()) == column
    assert [list(line.get_ydata()) for line in ax_b.lines if line.get_label().startswith("_")] \
        == [[1.0, 1.0]]
    assert ax_b.get_ylim()[0] == 0
    assert (ax_u.get_yscale(), ax_r.get_yscale()) == ("symlog", "log")
    assert {ax.get_xscale() for ax in fig.axes} == {"log"}
    assert [ax.get_title() for ax in fig.axes] == [
        "error relative to the declared bound", "max ULP error", "RMS relative error"]
    assert fig.get_suptitle().startswith("gemm: observed error versus K")
    (legend,) = fig.legends
    assert sorted(t.get_text() for t in legend.get_texts()) == sorted(lines)


def test_one_target_needs_no_at_and_zero_rms_keeps_a_linear_axis() -> None:
    import math

    from matplotlib.colors import to_rgb
    table = pd.DataFrame([_err("host", "r_h", "fp16", k, 0.5, 1.0, 0.0) for k in (8, 16)])
    fig = rep.plot_error_vs_k(table, "gemm", {})
    ax_b, _, ax_r = fig.axes
    assert [line.get_label() for line in ax_b.lines][0] == "r_h"
    assert to_rgb(ax_b.lines[0].get_color()) == to_rgb("0.5")  # a name without a colour: grey
    assert ax_r.get_yscale() == "linear"
    assert {ax.get_subplotspec().get_geometry()[:2] for ax in fig.axes} == {(1, 3)}
    for ax in fig.axes:  # K ticks at powers of two, printed as numbers
        ticks = list(ax.xaxis.get_major_locator().tick_values(8, 16))
        assert {8.0, 16.0} <= set(ticks) and all(math.log2(t).is_integer() for t in ticks)
        assert ax.xaxis.get_major_formatter()(16.0, 0) == "16"


def test_identical_errors_group_within_one_accumulation_to_twelve_decimals() -> None:
    rows = []
    for real, accum, e in (("a", "fp32", 0.1), ("b", "fp32", 0.1 + 3e-13),  # = a at 12 decimals
                           ("c", "fp16", 0.1),  # the same figures, another accumulation
                           ("d", "fp32", 0.3)):  # apart by less than 0.5
        rows += [_err("host", real, accum, k, e, e, e) for k in (8, 16)]
    groups = views.identical_error_groups(pd.DataFrame(rows))
    assert groups == {("host", "gemm", "a"): ["a", "b"], ("host", "gemm", "c"): ["c"],
                      ("host", "gemm", "d"): ["d"]}
    # rows without an accumulation column group on the figures alone
    plain = pd.DataFrame(rows).drop(columns="accum")
    assert views.identical_error_groups(plain)[("host", "gemm", "a")] == ["a", "b", "c"]
    assert views.group_label(["a", "b", "c"]) == "a = b = c"
    assert views.group_label(["a", "b", "c", "d"]) == "a = b = c (+1 identical)"


def test_legend_columns_fit_the_widest_label() -> None:
    """As many columns as labels of the widest one's width (its text plus 6
    characters for the handle and the gap) fit in the width, at least 1, at
    most one per label."""
    assert views.legend_columns([]) == 1
    assert views.legend_columns(["a" * 14]) == 1  # one label: one column
    # 141 = 3 x 47 and 140 = 4 x 35: one character more or less changes the count
    assert views.legend_columns(["a" * 41] * 5) == 2  # 140 // 47
    assert views.legend_columns(["a" * 41] * 5, 141) == 3
    assert views.legend_columns(["a" * 29, "b"] * 3) == 4  # 140 // 35, the widest decides
    assert views.legend_columns(["a" * 28] * 5) == 4  # 140 // 34
    assert views.legend_columns(["a" * 200] * 3) == 1  # wider than the figure: one column
    assert views.legend_columns(["ab", "c"]) == 2  # never more columns than labels
    assert isinstance(views.legend_columns(["a" * 29] * 9), int)


@pytest.mark.parametrize("inches,widest,ncol", [(12, 41, 2), (12.09, 41, 3), (12, 29, 4),
                                                (6, 29, 2), (11.2, 29, 3)])
def test_a_figure_wide_legend_below_takes_the_figures_width(inches: float, widest: int,
                                                            ncol: int) -> None:
    """legend_below: one legend for the figure, under the axes (outside,
    lower centre), small font, no frame, a handle per series in its colour,
    in as many columns as fit (140 characters per 12 inches)."""
    import matplotlib.font_manager as fm
    from matplotlib.figure import Figure
    fig = Figure(figsize=(inches, 4), layout="constrained")
    ax = fig.subplots()
    labels = ["a" * widest, "s1", "s2", "s3", "s4"]
    for i, label in enumerate(labels):
        ax.bar([i], [1.0], color=f"C{i}", label=label)
    rep_html.legend_below(fig, ax)
    (leg,) = fig.legends
    assert leg._ncols == ncol
    assert leg._loc == 8 and leg._outside_loc == "lower"  # lower center, outside the axes
    assert not leg.get_frame_on()
    small = fm.FontProperties(size="small").get_size_in_points()
    assert [t.get_fontsize() for t in leg.get_texts()] == [small] * len(labels)
    assert [t.get_text() for t in leg.get_texts()] == labels
    assert [h.get_facecolor()[:3] for h in leg.legend_handles] == [
        ax.patches[i].get_facecolor()[:3] for i in range(len(labels))]
    empty = Figure(figsize=(12, 4))
    rep_html.legend_below(empty, empty.subplots())  # nothing labelled: no legend
    assert empty.legends == []


def test_shades_of_a_family_run_from_its_colour_to_lighter() -> None:
    rgb = (0.2, 0.4, 0.6)
    assert views._shade(rgb, 0, 1) == rgb
    assert views._shade((*rgb, 0.5), 0, 1) == rgb  # RGBA: its alpha is not a channel
    assert views._shade(rgb, 0, 2) == rgb
    last = tuple(c + (1 - c) * 0.55 for c in rgb)
    assert views._shade(rgb, 1, 2) == pytest.approx(last)  # the last shade: 55% to white
    assert views._shade(rgb, 3, 4) == pytest.approx(last)
    assert views._shade(rgb, 1, 3) == pytest.approx(tuple(c + (1 - c) * 0.275 for c in rgb))


def test_every_table_csv_holds_its_columns_and_no_index(tmp_path: Path) -> None:
    run = write_run(tmp_path / "r", _correctness_rows() + _perf_rows())
    tables = rep.compute_tables(run, None)
    (tmp_path / "out").mkdir()
    paths = rep.write_tables(tables, tmp_path / "out")
    frames = tables.frames()
    assert set(paths) == {n for n, f in frames.items() if not f.empty} and len(paths) > 3
    for name, path in paths.items():
        assert path == tmp_path / "out" / f"{name}.csv"
        header = path.read_text(encoding="utf-8").splitlines()[0]
        assert header == ",".join(map(str, frames[name].columns)), name
        assert len(pd.read_csv(path)) == len(frames[name])


def _machine_run(folder: Path, factor: float, **meta: Any) -> Any:
    """A perf run of another (or no) CPU model or architecture: meta None drops a key."""
    fields = {k: v for k, v in {**_meta("e" * 40), **meta}.items() if v is not None}
    writer = RunWriter(folder, fields)
    writer.add_all([replace(v, time_median_ns=v.time_median_ns * factor) for v in _perf_rows()])
    writer.close(complete=True)
    return load_run(folder)


def test_a_report_with_history_draws_this_machines_runs_only(tmp_path: Path) -> None:
    """build_report(history_db=...): the runs of this run's CPU model and
    architecture (a run that names neither matches the runs that name
    neither), their trends in history_trends.csv (no index column), a
    History section that says how many; no runs: the section says so and a
    trends CSV an earlier report left is removed. No database: no section."""
    db = tmp_path / "history.sqlite"
    ours = [append_run(db, _machine_run(tmp_path / f"h{i}", f)) for i, f in enumerate((1.2, 1.0))]
    other_cpu = append_run(db, _machine_run(tmp_path / "cpu", 1.1, cpu_model="Other"))
    other_arch = append_run(db, _machine_run(tmp_path / "arch", 1.1, machine="x86_64"))
    bare = append_run(db, _machine_run(tmp_path / "bare", 1.3, cpu_model=None, machine=None))
    run = write_run(tmp_path / "run", _perf_rows())
    out = tmp_path / "out"
    files = rep.build_report(run, None, out, history_db=db)
    assert files.tables["history_trends"] == out / "history_trends.csv"
    trends = pd.read_csv(out / "history_trends.csv")
    assert list(trends.columns) == views.TREND_COLUMNS
    assert sorted(trends["run_id"].unique()) == sorted(ours)
    html = files.html.read_text(encoding="utf-8")
    history = html.split('<section id="history">')[1].split("</section>")[0]
    assert f"2 run(s) of this machine in {db}" in history and "<img " in history
    assert 'href="history_trends.csv"' in history and 'href="#history"' in html
    # a run naming no CPU model or architecture: the runs that name neither
    nameless = _machine_run(tmp_path / "nameless", 1.0, cpu_model=None, machine=None)
    rep.build_report(nameless, None, tmp_path / "out2", history_db=db)
    assert list(pd.read_csv(tmp_path / "out2" / "history_trends.csv")["run_id"].unique()) == [
        bare]
    assert {other_cpu, other_arch}.isdisjoint(trends["run_id"])
    # no runs of this machine: said so; a fresh folder, then one an earlier report left
    alone = _machine_run(tmp_path / "alone", 1.0, cpu_model="Unrecorded")
    for folder in (tmp_path / "fresh", out):
        files = rep.build_report(alone, None, folder, history_db=db)
        assert "history_trends" not in files.tables
        assert not (folder / "history_trends.csv").exists()
        html = files.html.read_text(encoding="utf-8")
        history = html.split('<section id="history">')[1].split("</section>")[0]
        assert f"no timed hardware runs of this machine in {db}" in history
        assert "<img " not in history
    # no database: no History section and no link to one
    html = rep.build_report(run, None, tmp_path / "plain").html.read_text(encoding="utf-8")
    assert '<section id="history">' not in html and 'href="#history"' not in html


@pytest.mark.parametrize("left_out", [0, 3])
def test_the_history_figure_gets_the_runs_dates_colours_and_what_it_left_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, left_out: int) -> None:
    """build_report hands plot_trends one colour per realization, the dates
    of this run and of its baseline to mark (a run without a date marks
    ""), and shows the figure titled "history", its caption naming the
    cases it left out to the CSV; report.html is written as UTF-8 whatever
    the locale."""
    from matplotlib.figure import Figure
    db = tmp_path / "history.sqlite"
    for i, f in enumerate((1.2, 1.0)):
        append_run(db, _machine_run(tmp_path / f"h{i}", f))
    seen: list[tuple[Any, Any, Any]] = []

    def plot_trends(trends: pd.DataFrame, colors: Any, marks: Any = None) -> tuple[Any, int]:
        seen.append((trends, colors, marks))
        return Figure(figsize=(2, 1)), left_out

    monkeypatch.setattr(rep.views, "plot_trends", plot_trends)
    encodings: list[Any] = []
    write_text = Path.write_text

    def spy(self: Path, data: str, encoding: Any = None, **kw: Any) -> int:
        if self.name == "report.html":
            encodings.append(encoding)
        return write_text(self, data, encoding=encoding, **kw)

    monkeypatch.setattr(Path, "write_text", spy)
    run = _machine_run(tmp_path / "run", 1.0, date="2026-12-01T09:00:00+00:00")
    base = _machine_run(tmp_path / "base", 1.0, date="2026-11-30T09:00:00+00:00")
    files = rep.build_report(run, base, tmp_path / "out", history_db=db)
    assert encodings == ["utf-8"]
    (trends, colors, marks), = seen
    names = set(trends["realization"])
    assert names and set(colors) - {"best per shape"} == names
    assert colors == rep.series_colors(list(trends["realization"]))
    assert marks == {"this run": "2026-12-01T09:00:00+00:00",
                     "baseline": "2026-11-30T09:00:00+00:00"}
    history = files.html.read_text(encoding="utf-8").split(
        '<section id="history">')[1].split("</section>")[0]
    caption = f"history — {left_out} more case(s) in the CSV" if left_out else "history<"
    assert 'alt="history"' in history and caption in history
    text = re.sub(r'src="data:image/png;base64,[A-Za-z0-9+/=]+"', "", history)
    assert text.count("<img ") == 1 and "data:" not in text  # the one image, a PNG URI
    assert "None" not in text and "XX" not in text
    # no baseline: only this run is marked; a run without a date marks ""
    dateless = _machine_run(tmp_path / "dateless", 1.0, date=None)
    rep.build_report(dateless, None, tmp_path / "out2", history_db=db)
    assert seen[-1][2] == {"this run": ""}
    undated_base = _machine_run(tmp_path / "undated", 1.0, date=None)
    rep.build_report(run, undated_base, tmp_path / "out3", history_db=db)
    assert seen[-1][2] == {"this run": "2026-12-01T09:00:00+00:00", "baseline": ""}


def test_the_fastest_per_shape_word_for_word() -> None:
    """Groups in the frame's order; per shape the number of different
    kernels timed (a NaN or zero median is never timed); the winner over all
    of them, named only where two or more kernels were timed; the fastest of
    ours, named only where two or more kernels of ours were (but its time and
    GFLOP/s always given); the fastest peer, named only where there is a
    contest; peer time / our best time; NOISY; why there is no winner; an
    empty frame gives the columns."""
    nan = np.nan
    rows = []
    for case, series, t, gf in (
            ("b", "gemm_s1", 30.0, 5.0),
            ("a", "gemm_s1", 100.0, 10.0), ("a", "gemm_s2", 50.0, 20.0),
            ("a", "gemm_s3", nan, nan), ("a", "gemm_s4", 0.0, nan),
            ("a", "ort_x", 40.0, 25.0), ("a", "ort_y", 60.0, 15.0), ("a", "ort_z", nan, nan),
            ("c", "ort_x", 10.0, 99.0),
            ("d", "gemm_s1", nan, nan),
            ("e", "gemm_s1", 1.0, 2.0), ("e", "ort_x", 0.5, 4.0)):  # 1 ns and below still count
        rows.append({"target": "host", "catalog": "cat", "case": case, "shape": f"shape_{case}",
                     "series": series, "time_median_ns": t, "gflops": gf})
    f = views.fastest_per_shape(pd.DataFrame(rows))
    assert list(f.columns) == views.FASTEST_COLUMNS
    got = [tuple(r) for r in f.fillna(-1.0).itertuples(index=False)]
    one = "one kernel timed (its B forms, blockings or threads are no contest): no winner"
    assert got == [
        ("host", "cat", "b", "shape_b", 1, "", "", 30.0, 5.0, "", -1.0, -1.0, False, one),
        ("host", "cat", "a", "shape_a", 4, "ort_x", "gemm_s2", 50.0, 20.0, "ort_x", 40.0, 0.8,
         False, ""),
        ("host", "cat", "c", "shape_c", 1, "", "", -1.0, -1.0, "", 10.0, -1.0, False, one),
        ("host", "cat", "d", "shape_d", 0, "", "", -1.0, -1.0, "", -1.0, -1.0, False,
         "no time came back"),
        ("host", "cat", "e", "shape_e", 2, "ort_x", "", 1.0, 2.0, "ort_x", 0.5, 0.5, False, "")]
    empty = views.fastest_per_shape(pd.DataFrame(columns=["target", "catalog", "case"]))
    assert empty.empty and list(empty.columns) == views.FASTEST_COLUMNS


def test_b_forms_and_blockings_of_one_kernel_name_no_winner() -> None:
    """Three B forms of one kernel and a blocked variant of it: one kernel,
    so no winner, however their times differ; a second kernel makes it a
    contest (the winner named over every series, the fastest of ours over
    ours); by backend a plugin or peer is never ours, whatever its name; a
    NOISY winner is said so."""
    def frame(extra: list[tuple[str, str, str, float, bool]]) -> pd.DataFrame:
        base = [("gemm_scalar_f32acc B:plain", "gemm_scalar_f32acc", "scalar", 30.0, False),
                ("gemm_scalar_f32acc B:packed", "gemm_scalar_f32acc", "scalar", 20.0, False),
                ("gemm_scalar_f32acc B:native", "gemm_scalar_f32acc", "scalar", 25.0, False),
                ("gemm_scalar_f32acc_mb8 B:plain", "gemm_scalar_f32acc", "scalar", 10.0, False)]
        return pd.DataFrame([{"target": "host", "catalog": "c", "case": "k", "shape": "s",
                              "series": s, "realization": s.split(" ")[0], "kernel": k,
                              "backend": b, "time_median_ns": t, "gflops": 1 / t, "noisy": n}
                             for s, k, b, t, n in [*base, *extra]])
    (alone,) = views.fastest_per_shape(frame([])).to_dict("records")
    assert (alone["kernels"], alone["winner"], alone["fastest_ours"]) == (1, "", "")
    assert alone["ours_time_ns"] == 10.0 and alone["why"].startswith("one kernel timed")
    (two,) = views.fastest_per_shape(frame([("npf32_matmul", "npf32_matmul", "npf32", 15.0,
                                             True)])).to_dict("records")
    # the plugin's npf32 is not ours (its backend says so): ours are still one kernel
    assert (two["kernels"], two["winner"], two["fastest_ours"]) == (2, "gemm_scalar_f32acc_mb8 "
                                                                     "B:plain", "")
    assert two["fastest_peer"] == "npf32_matmul" and two["peer_vs_ours"] == 1.5
    assert two["noisy"] is True  # the fastest peer named is NOISY
    (ours,) = views.fastest_per_shape(frame([("gemm_neon_x", "neon_k", "neon", 5.0, False)])
                                      ).to_dict("records")
    assert (ours["kernels"], ours["winner"], ours["fastest_ours"]) == (2, "gemm_neon_x",
                                                                       "gemm_neon_x")
    assert ours["noisy"] is False and ours["why"] == ""


def test_series_colours_are_fixed_word_for_word() -> None:
    """The colour of a series is fixed: the i-th family of ours (sorted) takes
    tab10's i-th colour, the i-th peer family the i-th of four earth tones
    (wrapping), the n members of a family the base colour and then up to 55%
    lighter, "best per shape" is grey 0.1; names given twice count once."""
    from matplotlib import colormaps
    tab10 = list(colormaps["tab10"].colors)
    peers = ["ort_e", "ort_a", "ort_b", "ort_c", "ort_d"]  # five families: the fifth wraps
    assert all(views.is_peer(p) for p in peers)
    names = ["gemm_b", "gemm_a", "gemm_a_mb24_nb64_kb64", "gemm_a_mb96_nb256_kb256", "gemm_b",
             views.BEST, *peers, "sme_z", "ort_a_mb24_nb64_kb64"]
    c = views.family_colors(names)
    assert c[views.BEST] == "0.1"
    assert c["gemm_a"] == tuple(float(x) for x in tab10[0])
    assert c["gemm_b"] == tuple(float(x) for x in tab10[1])
    assert c["sme_z"] == tuple(float(x) for x in tab10[2])  # after the peers' names: still 3rd

    def lighter(rgb, t):
        return tuple(float(x) + (1 - float(x)) * t for x in rgb)
    # gemm_a's family: gemm_a, then its two blocked variants in name order
    assert c["gemm_a_mb24_nb64_kb64"] == lighter(tab10[0], 0.275)
    assert c["gemm_a_mb96_nb256_kb256"] == lighter(tab10[0], 0.55)
    earth = [(0.35, 0.2, 0.1), (0.55, 0.0, 0.35), (0.0, 0.3, 0.3), (0.3, 0.3, 0.0)]
    fams = sorted({views.family(p) for p in peers})
    for i, f in enumerate(fams):
        assert c[f] == earth[i % 4], f
    assert c["ort_a_mb24_nb64_kb64"] == lighter(earth[0], 0.55)  # the 2nd of 2 members
    assert set(c) == {*names}
    assert views.family_colors([]) == {views.BEST: "0.1"}
    many = views.family_colors([f"f{i:02d}" for i in range(20)])
    palette = tab10 + list(colormaps["Dark2"].colors)
    assert many["f18"] == tuple(float(x) for x in palette[0])  # 18 colours, then again
    assert many["f17"] == tuple(float(x) for x in palette[17])
