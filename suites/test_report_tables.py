"""Tables of the report checked on their data: the instruction-count delta
table holds each counted case's figures under its own column, and rows of
the baseline comparison present on one side only are marked with the
class the page's stylesheet greys out; the determinism table counts each
realization's checks per target, and the coverage table and listing are the
run folder's files, ordered and cut as the page shows them."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from kbench.results import report as rep
from kbench.results import report_perf as rep_perf
from kbench.results import report_verdicts as rep_verdicts
from kbench.results.count_compare import compare_counts
from kbench.results.report_counts import DELTA_TABLE, delta_table
from kbench.results.runfolder import Run, RunFolderError

REPO = Path(__file__).resolve().parents[1]


def _cr(case: str, call: float, kernel: float) -> dict:
    return {"target": "qemu:svl=512", "catalog": "cat", "case": case, "realization": "gemm_sme2",
            "count_call": call, "count_kernel": kernel}


def test_the_count_delta_table_holds_each_figure() -> None:
    comp = compare_counts([_cr("grew", 1000, 800), _cr("gone", 40, 30)],
                          [_cr("grew", 1100, 850), _cr("new", 70, 60)])
    table = delta_table(comp)
    assert list(table.columns) == DELTA_TABLE
    rows = {r["case"]: r for r in table.to_dict("records")}
    grew = rows["grew"]
    assert (grew["target"], grew["catalog"], grew["realization"]) == ("qemu:cpu=max:svl=512", "cat",
                                                                      "gemm_sme2")
    assert grew["base_call"] == 1000 and grew["call"] == 1100
    assert grew["call_ratio"] == 1.1 and grew["kernel_ratio"] == 850 / 800
    assert math.isnan(grew["pack_b_ratio"]) and grew["verdict"] == "regression"
    assert grew["grew"] == "call +100, kernel +50"
    assert rows["gone"]["base_call"] == 40 and math.isnan(rows["gone"]["call"])
    assert math.isnan(rows["new"]["base_call"]) and rows["new"]["call"] == 70
    assert rows["gone"]["verdict"] == "missing" and rows["new"]["verdict"] == "new"


def test_rows_on_one_side_only_are_marked_missing() -> None:
    df = pd.DataFrame([{"case": "a", "presence": "both"}, {"case": "b", "presence": "run only"},
                       {"case": "c", "presence": "baseline only"}])
    table = rep.html_table(df, ["case", "presence"], row_class=rep.presence_class)
    classes = [{c.cls for c in row} for row in table.rows]
    assert classes[0] == {""} and classes[1] == {"missing"} and classes[2] == {"missing"}
    assert "td.missing {" in (REPO / "reports" / "report.html.j2").read_text()


def test_an_html_table_keeps_its_caption_its_texts_and_cuts_only_past_its_limit() -> None:
    """html_table: the target column goes only when every row shares one
    target; a row class keeps each cell's text; the caption is kept, and a
    table longer than its limit shows its first rows and says so after it."""
    df = pd.DataFrame({"target": ["host", "qemu", "host"], "case": ["a", "b", "c"]})
    assert rep.html_table(df).columns == ["target", "case"]  # two targets: kept
    assert rep.html_table(df[df["target"] == "host"]).columns == ["case"]
    marked = rep.html_table(df, ["case"], row_class=lambda row: "hot")
    assert [[(c.text, c.cls) for c in row] for row in marked.rows] == [
        [("a", "hot")], [("b", "hot")], [("c", "hot")]]
    assert rep.html_table(df, caption="three rows").caption == "three rows"
    whole = rep.html_table(df, ["case"], limit=3)
    assert whole.caption == "" and len(whole.rows) == 3
    cut = rep.html_table(df, ["case"], caption="cases", limit=2)
    assert [[c.text for c in row] for row in cut.rows] == [["a"], ["b"]]
    assert cut.caption == "cases; first 2 of 3 rows; all of them in the CSV"
    assert rep.html_table(df, ["case"], limit=1).caption == (
        "first 1 of 3 rows; all of them in the CSV")
    assert len(rep.html_table(df, ["case"]).rows) == 3  # no limit: every row


def test_the_baseline_chart_draws_each_shape_and_the_geometric_mean() -> None:
    """One row per realization in name order: a bar at the geometric mean of
    its speedups, a dot per shape, in its colour (grey without one); rows
    without a speedup left out; a log axis only past a 4x spread; the line
    at 1."""
    from matplotlib.colors import to_rgb
    table = pd.DataFrame([
        {"series": "r_b", "speedup": 2.0}, {"series": "r_b", "speedup": 8.0},
        {"series": "r_a", "speedup": 1.0}, {"series": "r_c", "speedup": 0.5},
        {"series": "r_c", "speedup": math.nan}, {"series": "r_d", "speedup": 0.0}])
    fig = rep.plot_baseline(table, {"r_a": "#102030", "r_b": "#405060"})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["r_a", "r_b", "r_c"]
    assert list(ax.get_yticks()) == [0, -1, -2]
    bars = {round(p.get_y() + p.get_height() / 2): p for p in ax.patches}
    assert bars[0].get_width() == 1.0 and bars[-1].get_width() == 4.0
    assert bars[-2].get_width() == 0.5
    assert to_rgb(bars[0].get_facecolor()) == to_rgb("#102030")
    assert to_rgb(bars[-2].get_facecolor()) == to_rgb("0.5")
    dots = sorted((float(y), float(x)) for coll in ax.collections for x, y in coll.get_offsets())
    assert dots == [(-2.0, 0.5), (-1.0, 2.0), (-1.0, 8.0), (0.0, 1.0)]
    assert ax.get_xscale() == "log"  # 8 / 0.5 = 16 > 4
    assert any(line.get_xdata()[0] == 1.0 for line in ax.lines)
    assert ax.xaxis.get_major_formatter()(2.0, 0) == "2×"
    narrow = rep.plot_baseline(table[table["series"] != "r_b"], {})
    assert narrow.axes[0].get_xscale() == "linear"  # 1 / 0.5 = 2
    assert narrow.axes[0].xaxis.get_major_formatter()(1.5, 0) == "1.50×"
    assert narrow.axes[0].get_xlabel().startswith("speedup over the baseline")


def test_the_count_delta_table_of_packing_and_of_nothing() -> None:
    b = [{**_cr("packed", 1000, 800), "count_pack_b": 400}]
    c = [{**_cr("packed", 1000, 800), "count_pack_b": 500}]
    row = delta_table(compare_counts(b, c)).to_dict("records")[0]
    assert row["pack_b_ratio"] == 1.25 and row["grew"] == "pack_b +100"
    empty = delta_table(compare_counts([], []))
    assert empty.empty and list(empty.columns) == DELTA_TABLE


def test_plugin_probes_are_tallied_by_finding_in_a_fixed_order() -> None:
    """Each contract probe's finding from its message (the status when the
    message names none), and the tally in the order refused, accepted,
    silently wrong, crashed, not applicable."""
    from kbench.results.plugin_report import _findings, is_plugin_backend, probe_table

    def probe(case: str, message: str, status: str = "pass") -> dict:
        return {"suite": "plugin-contracts", "target": "host", "plugin": "p.so",
                "realization": "gemm_p", "case": f"probe_{case}", "message": message,
                "status": status}
    results = pd.DataFrame([
        probe("k0", "refused: k = 0"), probe("nan", "silently wrong: NaN dropped"),
        probe("bias", "refused: no bias"), probe("big", "odd text", status="error"),
        {"suite": "correctness", "target": "host", "plugin": "p.so", "realization": "gemm_p",
         "case": "c1", "message": "", "status": "pass"}])
    probes = probe_table(results)
    assert list(probes["probe"]) == ["k0", "nan", "bias", "big"]
    assert list(probes["finding"]) == ["refused", "silently wrong", "refused", "error"]
    assert list(probes["detail"])[:2] == ["k = 0", "NaN dropped"]
    assert _findings(probes) == "2 refused, 1 silently wrong"
    assert _findings(probes.iloc[3:]) == "–"
    assert probe_table(pd.DataFrame()).empty
    assert is_plugin_backend("plugin:p.so") and not is_plugin_backend("neon")


def _total(target: str, model: str, series: str, ns: float, complete: bool = True) -> dict:
    return {"target": target, "model": model, "series": series, "total_time_ns": ns,
            "complete": complete}


def _panels(fig) -> list:
    return [ax for ax in fig.axes if ax.get_visible()]


def test_model_total_charts_draw_complete_totals_one_panel_per_model_in_table_order() -> None:
    table = pd.DataFrame([
        _total("host", "resnet", "slow", 4e6), _total("host", "resnet", "fast", 1e6),
        _total("host", "resnet", "partial", 5e5, complete=False),
        _total("host", "resnet", "no total", math.nan),
        _total("host", "llama", "fast", 3e6),
        _total("qemu:svl=512", "alexnet", "fast", 2e6)])
    fig = rep.plot_model_totals(table, {"fast": "#0000ff"})
    panels = _panels(fig)
    from matplotlib.colors import to_rgb
    assert [to_rgb(p.get_facecolor()) for p in panels[0].patches] == [(0, 0, 1), to_rgb("0.5")]
    assert [ax.get_title() for ax in panels] == [
        "resnet on host (1 more lack some of its shapes: no total)", "llama on host",
        "alexnet on qemu:svl=512"]
    # bars: complete totals only, fastest on top
    assert [t.get_text() for t in panels[0].get_yticklabels()] == ["fast", "slow"]
    assert [p.get_width() for p in panels[0].patches] == [1.0, 4.0]
    assert list(panels[0].get_yticks()) == [0, -1]  # the fastest at the top
    assert [t.get_text() for t in panels[0].texts] == [" 1 ms", " 4 ms"]  # each bar's figure
    assert panels[0].get_xlim()[0] == 0 and panels[0].get_xlim()[1] > 4.0
    # three panels: two columns, two rows, the fourth cell hidden
    assert all(ax.get_subplotspec().get_geometry()[:2] == (2, 2) for ax in fig.axes)
    assert len(fig.axes) == 4 and not fig.axes[3].get_visible()


def test_model_total_charts_use_two_columns_only_for_two_models_or_more() -> None:
    one = pd.DataFrame([_total("host", "resnet", "fast", 1e6)])
    two = pd.DataFrame([_total("host", "resnet", "fast", 1e6), _total("host", "llama", "a", 2e6)])
    for table, geometry in ((one, (1, 1)), (two, (1, 2))):
        fig = rep.plot_model_totals(table, {})
        assert len(fig.axes) == geometry[0] * geometry[1]
        assert {ax.get_subplotspec().get_geometry()[:2] for ax in fig.axes} == {geometry}
        assert len(_panels(fig)) == len(table)


def test_model_total_charts_of_partial_models_only_draw_no_panel() -> None:
    fig = rep.plot_model_totals(pd.DataFrame([_total("host", "resnet", "a", 1e6, False)]), {})
    assert len(fig.axes) == 1 and _panels(fig) == []


def _timed(case: str, realization: str, backend: str, ns: float, threads: int = 1,
           kind: str = "exact", layers: int = 1, catalog: str = "m") -> dict:
    return {"target": "host", "op": "gemm", "catalog": catalog, "case": case, "shape": case,
            "kind": kind, "realization": realization, "backend": backend, "threads": threads,
            "time_median_ns": ns, "layers": layers}


def test_the_scalar_reference_is_the_operators_own_then_any_scalar_never_another_backend() -> None:
    timed = pd.DataFrame([
        # the operator's reference wins over a faster scalar one and over more threads
        _timed("a", "gemm_scalar_f16acc", "scalar", 50.0), _timed("a", "gemm_neon", "neon", 5.0),
        _timed("a", "gemm_scalar_f32acc", "scalar", 90.0, threads=2),
        _timed("a", "gemm_scalar_f32acc", "scalar", 100.0),
        # without it: the scalar backend's fastest at the fewest threads
        _timed("b", "gemm_scalar_f16acc", "scalar", 70.0), _timed("b", "gemm_scalar_x", "scalar",
                                                                 60.0, threads=4),
        _timed("b", "gemm_neon", "neon", 5.0),
        # no scalar realization: no reference
        _timed("c", "gemm_neon", "neon", 5.0)])
    ref = rep_perf._reference_times(timed).set_index("case")
    assert sorted(ref.index) == ["a", "b"]
    assert (ref.loc["a", "ref_realization"], ref.loc["a", "ref_threads"],
            ref.loc["a", "ref_time_median_ns"]) == ("gemm_scalar_f32acc", 1, 100.0)
    assert (ref.loc["b", "ref_realization"], ref.loc["b", "ref_time_median_ns"]) == (
        "gemm_scalar_f16acc", 70.0)


def test_a_models_scalar_total_needs_every_shape_weighted_by_its_layers() -> None:
    timed = pd.DataFrame([
        _timed("a", "gemm_scalar_f32acc", "scalar", 100.0, layers=3),
        _timed("a", "gemm_scalar_f32acc", "scalar", 300.0, layers=3, kind="normal"),
        _timed("b", "gemm_scalar_f32acc", "scalar", 10.0, layers=2),
        _timed("a", "gemm_scalar_f32acc", "scalar", 100.0, catalog="partial"),
        _timed("b", "gemm_neon", "neon", 5.0, catalog="partial")])
    tot = rep_perf._reference_model_times(timed).set_index("catalog")["scalar_time_ns"]
    # a shape's time: the mean over its input kinds, as the realizations' totals take it
    assert tot["m"] == 3 * (100.0 + 300.0) / 2 + 2 * 10.0
    assert math.isnan(tot["partial"])  # shape b has no scalar time: no total


def test_our_realizations_are_those_of_kbenchs_own_backends() -> None:
    rows = pd.DataFrame([{"realization": r, "backend": b} for r, b in (
        ("gemm_scalar_f32acc", "scalar"), ("gemm_neon_f16acc", "neon"), ("gemm_sme2", "sme"),
        ("ort_mlas", "ort"), ("plug_k", "plugin"))])
    assert rep_perf._our_realizations(rows) == {"gemm_scalar_f32acc", "gemm_neon_f16acc",
                                                "gemm_sme2"}
    # rows without a backend column (older runs): every realization
    assert rep_perf._our_realizations(rows.drop(columns="backend")) == set(rows["realization"])
    assert rep_perf._is_ours("gemm_neon_f16acc") and not rep_perf._is_ours("ort_mlas")


def test_a_ratio_is_missing_for_a_zero_negative_or_unreadable_denominator() -> None:
    got = rep_perf._ratio(pd.Series([1.0, 1.0, 1.0, "n/a", 3.0]),
                          pd.Series([0.5, 0.0, -2.0, 1.0, "x"]))
    assert got.iloc[0] == 2.0 and got.iloc[1:].isna().all()


def test_series_labels_add_the_b_form_and_threads_only_where_they_vary() -> None:
    df = pd.DataFrame([
        {"realization": "a", "b_form": "plain", "threads": 1},
        {"realization": "a", "b_form": "packed", "threads": 1},
        {"realization": "b", "b_form": "plain", "threads": 1},
        {"realization": "b", "b_form": "plain", "threads": 4},
        {"realization": "c", "b_form": "plain", "threads": 2},
        {"realization": "d", "b_form": "plain", "threads": 1}])
    assert rep_perf._series_labels(df) == ["a B:plain", "a B:packed", "b ×1t", "b ×4t", "c ×2t",
                                           "d"]


def _vm(target: str, backend: str, catalog: str, verdict: str, **counts: int) -> dict:
    row = {"target": target, "backend": backend, "catalog": catalog, "verdict": verdict}
    row.update({s: counts.get(s, 0) for s in rep.STATUSES})
    row["cases"] = sum(row[s] for s in rep.STATUSES)
    return row


def _texts(table) -> list[list[tuple[str, str]]]:
    return [[(c.text, c.cls) for c in row] for row in table.rows]


def test_the_verdict_grid_cells_hold_the_worst_verdict_and_its_counts() -> None:
    frame = pd.DataFrame([
        _vm("host", "scalar", "smoke", "pass", **{"pass": 10}),
        _vm("host", "scalar", "contracts", "pass", **{"pass": 4, "skip": 2}),
        _vm("host", "scalar", "edge", "skip", skip=3),
        _vm("host", "neon", "smoke", "fail", **{"pass": 6, "fail": 2, "error": 1, "crashed": 1,
                                                "mistrusted": 1, "skip": 1}),
        _vm("qemu:svl=512", "sme", "edge", "timeout", **{"pass": 1, "timeout": 2})])
    grid = rep.verdict_grid(frame)
    assert grid.columns == ["target", "backend", "edge", "smoke", "contracts"]
    assert _texts(grid) == [
        [("host", ""), ("scalar", ""), ("skip · 3 skipped", "verdict skip"),
         ("pass · 10", "verdict pass"), ("pass · 4, 2 skipped", "verdict pass")],
        [("host", ""), ("neon", ""), ("", "empty"),
         ("fail · 6/11 pass, 2 fail, 1 error, 1 crashed, 1 mistrusted, 1 skipped",
          "verdict fail"), ("", "empty")],
        [("qemu:svl=512", ""), ("sme", ""), ("timeout · 1/3 pass, 2 timeout", "verdict timeout"),
         ("", "empty"), ("", "empty")]]


def test_the_targets_table_lists_each_runs_targets() -> None:
    run = Run(path=Path("r"), meta={"targets": {
        "bad": "not a table",  # skipped, the rest still listed
        "qemu:svl=512": {"kind": "qemu", "emulated": True, "arch": "aarch64",
                         "cpu_features": ["sme", "sme2"], "sme_vector_bits": 512,
                         "sve_vector_bits": 256, "isa": "sme2", "library_version": "0.3.0",
                         "realizations": [{"name": "gemm_sme2"}, "gemm_neon"]},
        "host": {"kind": "host", "emulated": False, "arch": "x86_64"},
        "bare": {}}}, results=pd.DataFrame())
    table = rep._targets_table({"main": run, "base": run})
    assert table.columns[:3] == ["run", "target", "kind"] and len(table.columns) == 11
    assert table.columns[6:8] == ["SME bits", "SVE bits"]
    assert [[c.text for c in row] for row in table.rows][:2] == [
        ["main", "qemu:svl=512", "qemu", "yes", "aarch64", "sme, sme2", "512", "256", "sme2",
         "0.3.0", "2: gemm_sme2, gemm_neon"],
        ["main", "host", "host", "no", "x86_64", "–", "0", "0", "", "", "0: "]]
    assert [c.text for c in table.rows[2]] == ["main", "bare", "", "no", "", "–", "0", "0", "",
                                               "", "0: "]
    assert [row[0].text for row in table.rows] == ["main"] * 3 + ["base"] * 3
    assert table.rows[0][-1].cls == "wrap"


def _det(target: str, realization: str, status: str, case: str = "c",
         message: str = "") -> dict:
    return {"target": target, "realization": realization, "plugin": "kai" if "." in realization
            else "", "suite": "determinism", "case": case, "status": status, "message": message}


def test_the_determinism_table_counts_each_realizations_checks_on_each_target() -> None:
    rows = [_det("host", "gemm_neon", "pass"), _det("host", "gemm_neon", "pass", "threads"),
            _det("host", "kai.x", "fail", "repeat", "bits differ at 3"),
            _det("host", "kai.x", "crashed", "threads", "SIGSEGV"),
            _det("host", "kai.x", "error", "blocked", "no buffer"),
            _det("host", "kai.x", "timeout", "t2", "60 s"), _det("host", "kai.x", "pass"),
            _det("qemu", "gemm_neon", "fail", "repeat", "bits differ"),
            {**_det("host", "gemm_neon", "fail"), "suite": "gemm"}]  # not a determinism check
    table = rep.determinism_table(pd.DataFrame(rows))
    assert list(table.columns) == rep.DETERMINISM_COLUMNS
    assert [list(r) for r in table.itertuples(index=False)] == [
        ["host", "gemm_neon", "", 2, 2, 0, 0, ""],
        ["host", "kai.x", "kai", 5, 1, 1, 3,
         "repeat: bits differ at 3; threads: SIGSEGV; blocked: no buffer; t2: 60 s"],
        ["qemu", "gemm_neon", "", 1, 0, 1, 0, "repeat: bits differ"]]
    for results in (pd.DataFrame(), pd.DataFrame(rows[-1:])):
        empty = rep.determinism_table(results)
        assert empty.empty and list(empty.columns) == rep.DETERMINISM_COLUMNS


def _folder(path: Path, **files: str) -> Run:
    path.mkdir()
    for name, text in files.items():
        (path / name.replace("_txt", ".txt").replace("_csv", ".csv")).write_text(text)
    return Run(path=path, meta={}, results=pd.DataFrame())


def test_the_coverage_table_is_the_runs_csv_least_covered_first(tmp_path: Path) -> None:
    head = ",".join([*rep.COVERAGE_COLUMNS, "extra"])
    lines = ["host,ours,b,kernel,r1,10,5,50.0,0x4 0x8,e", "host,ours,a,kernel,r1,10,10,100.0,,e",
             "qemu,kai,z,packer,,4,2,50.0,NA,e", "host,ours,a2,kernel,r1,10,5,50.0,0x1,e",
             "host,ours,007,kernel,r1,10,0,0,,e"]
    table = rep.coverage_table(_folder(tmp_path / "r", coverage_csv="\n".join([head, *lines])))
    assert list(table.columns) == rep.COVERAGE_COLUMNS and list(table.index) == [0, 1, 2, 3, 4]
    assert [(r.target, r.unit, r.percent) for r in table.itertuples()] == [
        ("host", "007", 0.0), ("host", "a2", 50.0), ("host", "b", 50.0), ("qemu", "z", 50.0),
        ("host", "a", 100.0)]  # a unit that looks like a number stays its name
    assert table["uncovered"].tolist() == ["", "0x1", "0x4 0x8", "NA", ""]  # text stays text
    assert table["realizations"].tolist() == ["r1", "r1", "r1", "", "r1"]
    # a column of names that all look like numbers stays names too
    alone = rep.coverage_table(_folder(tmp_path / "n", coverage_csv="\n".join(
        [head, "1,2,007,4,5,10,5,50.0,6,7"])))
    assert alone.iloc[0].tolist() == ["1", "2", "007", "4", "5", 10, 5, 50.0, "6"]
    for run in (_folder(tmp_path / "none"), _folder(tmp_path / "blank", coverage_csv=head)):
        empty = rep.coverage_table(run)
        assert empty.empty and list(empty.columns) == rep.COVERAGE_COLUMNS


def test_the_coverage_listing_is_the_uncovered_disassembly_cut_at_its_limit(
        tmp_path: Path) -> None:
    assert rep.coverage_listing(_folder(tmp_path / "none")) == ""
    only_comments = "# uncovered instructions\n\n# none\n"
    assert rep.coverage_listing(_folder(tmp_path / "c", coverage_uncovered_txt=only_comments)) == ""
    short = "# unit f\nf+0x10: fmla z0.h\n"
    assert rep.coverage_listing(_folder(tmp_path / "s", coverage_uncovered_txt=short)) == \
        "# unit f\nf+0x10: fmla z0.h"
    n = rep_verdicts.COVERAGE_LISTING_LINES
    exact = [f"f+{i:#x}: nop" for i in range(n)]
    assert rep.coverage_listing(_folder(tmp_path / "e", coverage_uncovered_txt="\n".join(exact))) \
        == "\n".join(exact)
    long = rep.coverage_listing(_folder(tmp_path / "l",
                                        coverage_uncovered_txt="\n".join([*exact, "x", "y"])))
    assert long.splitlines() == [*exact, "... 2 more lines in coverage_uncovered.txt"]
    bad = _folder(tmp_path / "b")
    (bad.path / "coverage_uncovered.txt").write_bytes(b"f+0x4: \xff\xfe\n")
    assert rep.coverage_listing(bad) == "f+0x4: \ufffd\ufffd"  # bytes not UTF-8: shown replaced


def test_every_kind_of_cell_word_for_word_with_its_class() -> None:
    """format_cell, branch by branch: yes/no; a missing time n/a and any other
    missing number –, both "num na"; integers; times in their unit; speedups
    and time changes highlighted only beyond 5% (exactly 5% is not); shares
    as percentages; count ratios to 3 decimals, highlighted beyond ±0.5%;
    counts with thousands separators; other numbers to 4 significant
    digits; a status or verdict as its own class, an accumulation category
    as accum-*, long text wrapped."""
    import numpy as np

    from kbench.results.report import Cell, format_cell
    from kbench.results.report_html import NA, WORSE, WRAP_AT
    cases = [
        ("correct", True, Cell("yes")), ("correct", np.bool_(False), Cell("no")),
        ("time_median_ns", math.nan, Cell(NA, "num na")),
        ("time_median_ns", None, Cell(NA, "num na")),
        ("gflops", math.nan, Cell("–", "num na")), ("gflops", math.inf, Cell("–", "num na")),
        ("gflops", None, Cell("–", "num na")),
        ("layers", 3, Cell("3", "num")), ("rounds", np.int64(7), Cell("7", "num")),
        ("time_median_ns", 1500.0, Cell("1.5 µs", "num")),
        ("time_min_ns", np.float64(2.5e6), Cell("2.5 ms", "num")),
        ("speedup_vs_scalar", 1.06, Cell("1.06×", "num better")),
        ("speedup_vs_scalar", 1.05, Cell("1.05×", "num")),
        ("speedup_vs_baseline", 1 / 1.05, Cell("0.95×", "num")),
        ("speedup_vs_baseline", 0.95, Cell("0.95×", "num worse")),
        ("time_change", 0.06, Cell("+6.0%", "num worse")),
        ("time_change", 0.05, Cell("+5.0%", "num")),
        ("time_change", -0.04, Cell("-4.0%", "num")),
        ("time_change", -0.05, Cell("-5.0%", "num better")),
        ("time_change", 1 / WORSE - 1, Cell("+5.0%", "num")),   # exactly at the edges
        ("time_change", WORSE - 1, Cell("-4.8%", "num")),
        ("cv", 0.1234, Cell("12.3%", "num")), ("kill_rate", 0.5, Cell("50.0%", "num")),
        ("min_exact_fraction", 1.0, Cell("100.0%", "num")),
        ("accum_match", 0.5, Cell("50.0%", "num")),
        ("accum_match", 0.99999, Cell("99.9%", "num")),
        ("count_efficiency", 0.25, Cell("25.0%", "num")),
        ("count_ratio", 1.01, Cell("1.010", "num worse")),
        ("count_ratio", 1.005, Cell("1.005", "num")),
        ("ratio_kernel", 0.995, Cell("0.995", "num")),
        ("ratio_kernel", 1.01, Cell("1.010", "num worse")),
        ("kernel_ratio", 0.99, Cell("0.990", "num better")),
        ("count_call", 1234567.0, Cell("1,234,567", "num")),
        ("kernel_fmopa", 2048.0, Cell("2,048", "num")),
        ("base_call", 1e6, Cell("1,000,000", "num")),
        ("max_ulp", 3.14159, Cell("3.142", "num")),
        ("status", "fail", Cell("fail", "fail")), ("verdict", "slower", Cell("slower", "slower")),
        ("category", "fp16", Cell("fp16", "accum-fp16")),
        ("message", "short", Cell("short", "")),
        ("message", "x" * WRAP_AT, Cell("x" * WRAP_AT, "")),
        ("message", "x" * (WRAP_AT + 1), Cell("x" * (WRAP_AT + 1), "wrap")),
    ]
    assert [(col, format_cell(col, value)) for col, value, _ in cases] == [
        (col, cell) for col, _, cell in cases]


def test_model_totals_word_for_word_crediting_only_our_own_backends(tmp_path: Path) -> None:
    """model_totals over a run read back through the loader: a row per
    realization in series order, then the fastest per shape, which takes
    only kbench's own backends (a plugin's or a peer's faster time is never
    credited to us) and is labelled as such; a timed row outside any model
    (no catalog) is left out; a run without model rows has the columns."""
    from test_compare import row, write_run

    def timed(case: str, real: str, backend: str, ns: float, layers: int, flops: int,
              catalog: str = "llm") -> object:
        v = row(case, times=[ns] * 3, realization=real)
        v.backend, v.layers, v.flops, v.catalog = backend, layers, flops, catalog
        return v

    rows = [timed("a", r, b, ns, 2, 1000) for r, b, ns in (
        ("gemm_scalar_f32acc", "scalar", 100.0), ("gemm_neon_f16acc", "neon", 40.0),
        ("plug_k", "plugin", 10.0), ("ort_mlas", "ort", 5.0))]
    rows += [timed("b", r, b, ns, 3, 2000) for r, b, ns in (
        ("gemm_scalar_f32acc", "scalar", 200.0), ("gemm_neon_f16acc", "neon", 50.0),
        ("plug_k", "plugin", 20.0))]
    rows.append(timed("c", "gemm_neon_f16acc", "neon", 1.0, 1, 10, catalog=""))
    m = rep.model_totals(write_run(tmp_path / "run", rows))
    assert list(m.columns) == rep_perf.MODEL_COLUMNS
    got = [tuple(r) for r in m[["model", "series", "realization", "b_form", "threads", "shapes",
                                "shapes_in_model", "complete", "layers", "total_time_ns",
                                "scalar_time_ns"]].itertuples(index=False)]
    assert got == [
        ("llm", "gemm_neon_f16acc", "gemm_neon_f16acc", "plain", 1, 2, 2, True, 5, 230.0, 800.0),
        ("llm", "gemm_scalar_f32acc", "gemm_scalar_f32acc", "plain", 1, 2, 2, True, 5, 800.0,
         800.0),
        ("llm", "ort_mlas", "ort_mlas", "plain", 1, 1, 2, False, 2, 10.0, 800.0),
        ("llm", "plug_k", "plug_k", "plain", 1, 2, 2, True, 5, 80.0, 800.0),
        ("llm", "best per shape", "(fastest per shape)", "-", 0, 2, 2, True, 5, 230.0, 800.0)]
    assert list(m["speedup_vs_scalar"].fillna(-1)) == pytest.approx(
        [800 / 230, 1.0, -1, 10.0, 800 / 230])
    empty = rep.model_totals(write_run(tmp_path / "none", [timed("c", "gemm_x", "neon", 1.0, 1,
                                                                 10, catalog="")]))
    assert empty.empty and list(empty.columns) == rep_perf.MODEL_COLUMNS


def test_a_coverage_table_that_cannot_be_read_is_named_in_one_line(tmp_path: Path) -> None:
    head = ",".join(rep.COVERAGE_COLUMNS)
    cases = {
        "cols": ("x,y\n1,2\n", "not a coverage table (no target, owner, unit, kind, "
                 "realizations, instructions, covered, percent, uncovered column)"),
        "some": ("target,owner,unit,kind,realizations,instructions,covered\n",
                 "not a coverage table (no percent, uncovered column)"),
        "quote": ('a,"b\n', "not a coverage table (Error tokenizing data. C error: EOF "
                  "inside string starting at row 0)"),
        "number": (head + "\nhost,ours,a,kernel,r,10,5,50.0,\nhost,ours,b,kernel,r,10,x,1,\n",
                   "line 3, column covered: 'x' is not a number"),
        "percent": (head + "\nhost,ours,a,kernel,r,10,5,,\n",
                    "line 2, column percent: '' is not a number")}
    for name, (text, said) in cases.items():
        run = _folder(tmp_path / name, coverage_csv=text)
        with pytest.raises(RunFolderError) as err:
            rep.coverage_table(run)
        assert str(err.value) == f"{run.path / 'coverage.csv'}: {said}", name
    empty = rep.coverage_table(_folder(tmp_path / "empty", coverage_csv=""))
    assert empty.empty and list(empty.columns) == rep.COVERAGE_COLUMNS
    bad = _folder(tmp_path / "bytes")
    (bad.path / "coverage.csv").write_bytes(b"\xff\xfe" + head.encode() + b"\n")
    with pytest.raises(RunFolderError) as err:
        rep.coverage_table(bad)
    assert str(err.value).startswith(f"{bad.path / 'coverage.csv'}: not a coverage table (")


def test_kbench_report_names_a_bad_coverage_table_in_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kbench.cli.report import report
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text('{"complete": true}')
    (run / "results.csv").write_text("case,status\n")
    (run / "coverage.csv").write_text("x,y\n1,2\n")
    res = CliRunner().invoke(report, [str(run), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert res.output.strip().splitlines()[-1] == (
        f"Error: RUN: {run / 'coverage.csv'}: not a coverage table (no target, owner, unit, "
        "kind, realizations, instructions, covered, percent, uncovered column)")
