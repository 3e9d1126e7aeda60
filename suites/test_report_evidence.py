"""The report answers from the evidence that is valid on each target, on
the report's data (tables, template context, figure objects; never
pixels): on an emulated target "fastest per shape" is the fewest exact
instructions per call, a winner only where two or more kernels were
counted, a counts chart first and the emulated timings folded at the end;
on hardware a NOISY case is flagged where the terminal flagged it, the
speedup chart draws only the rows its table lists, an error panel flat on
0 says so in words, and every table fits a 1,400 px page."""

from __future__ import annotations

import json
import math
import re
from html import unescape
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from test_report import DevTools, _chromium

from kbench.judge.verdict import Verdict
from kbench.results import report as rep
from kbench.results import report_counts as rc
from kbench.results import report_perf as rep_perf
from kbench.results import report_verdicts as rep_verdicts
from kbench.results.columns import COLUMN_HELP, TERMINAL
from kbench.results.counts import COLUMNS
from kbench.results.runfolder import Run, load_run
from kbench.results.store import RunWriter

TARGET = "qemu:svl=512"


def write_run_rows(folder: Path, rows: list[dict[str, Any]], targets: dict[str, Any],
                   meta: dict[str, Any] | None = None) -> Run:
    """A run folder as kbench run writes it, from result rows given as dicts."""
    from dataclasses import fields
    names = {f.name for f in fields(Verdict)}
    writer = RunWriter(folder, {"host": "box", "machine": "x86_64", "cpu_model": "Test CPU",
                                "date": "2026-12-01T00:00:00+00:00", "targets": targets,
                                **(meta or {})})
    writer.add_all([Verdict(**{"vector_bits": 0, **{k: v for k, v in r.items()
                                                     if k in names}}) for r in rows])
    writer.close(complete=True)
    return load_run(folder)


def _counted(case: str, realization: str, kernel: str, call: float, kernel_n: float,
             pack_b: float = 0.0, outer: int = 0, dot: int = 0, floor: float = 0.0,
             shape: str = "m8n8k8") -> dict[str, Any]:
    row: dict[str, Any] = {c: 0.0 for c in COLUMNS}
    mix = {"outer": outer, "dot": dot, "load": 5}
    row.update({"suite": "perf", "target": TARGET, "catalog": "smoke", "case": case,
                "shape": shape, "realization": realization, "kernel": kernel,
                "backend": "sme", "b_form": "plain", "status": "pass", "count_call": call,
                "count_kernel": kernel_n, "count_pack_b": pack_b, "count_floor": floor,
                "count_mix": json.dumps({"kernel": {k: v for k, v in mix.items() if v}}),
                "emulated": True, "rounds": 3, "time_median_ns": 1e6, "time_min_ns": 9e5,
                "time_mean_ns": 1e6, "time_stdev_ns": 1e4, "round_times_ns": [1e6] * 3,
                "op": "gemm", "kind": "uniform", "threads": 1, "layers": 1, "flops": 1024,
                "m": 8, "n": 8, "k": 8, "message": "", "accum": "fp32", "count_cpu": "max",
                "count_floor_kind": "FMOPA", "count_efficiency": 0.5,
                "count_method": "tb", "count_qemu": "11.1.3"})
    return row


def _emulated_rows() -> list[dict[str, Any]]:
    return [
        # two kernels: the SME2 MOPA wins on the whole call, its blocking is the same kernel
        _counted("a", "mopa2", "k_mopa2", 1000, 100, pack_b=400, outer=8, floor=8),
        _counted("a", "mopa2_mb128", "k_mopa2", 1010, 100, pack_b=390, outer=8, floor=8),
        _counted("a", "neon", "k_neon", 2500, 1800, outer=0, floor=8),
        # one kernel only (B forms of it): no winner
        _counted("b", "mopa2", "k_mopa2", 900, 90, shape="m4n4k4"),
        _counted("b", "mopa2_mb128", "k_mopa2", 905, 90, shape="m4n4k4"),
        # a GEMV: dot products over their floor
        _counted("c", "gemv_dot", "k_dot", 300, 40, dot=12, floor=8, shape="m1n64k64"),
        _counted("c", "neon", "k_neon", 700, 400, shape="m1n64k64"),
    ]


def test_fastest_per_shape_from_counts_word_for_word() -> None:
    table = rc.fastest_by_counts(Run(Path("run"), {}, pd.DataFrame(_emulated_rows())))
    assert list(table.columns) == rc.FASTEST_COUNT_COLUMNS
    got = {r["case"]: r for r in table.to_dict("records")}
    a, b, c = got["a"], got["b"], got["c"]
    assert (a["counted"], a["kernels"], a["winner"], a["call"]) == (3, 2, "mopa2", 1000.0)
    # the runner-up is of another kernel: not the blocking of the winner's
    assert (a["runner_up"], a["runner_up_vs_winner"]) == ("neon", 2.5)
    assert (a["fewest_kernel"], a["kernel_instructions"]) == ("mopa2", 100.0)
    assert (a["fewest_pack_b"], a["pack_b"]) == ("mopa2_mb128", 390.0)
    assert (a["principal"], a["principal_per_floor"], a["why"]) == ("outer", 1.0, "")
    assert (b["kernels"], b["winner"], b["runner_up"]) == (1, "", "")
    assert b["why"].startswith("one kernel counted") and math.isnan(b["call"])
    assert (c["winner"], c["principal"], c["principal_per_floor"]) == ("gemv_dot", "dot", 1.5)
    assert math.isnan(c["pack_b"]) and c["fewest_pack_b"] == ""
    empty = rc.fastest_by_counts(Run(Path("r"), {}, pd.DataFrame({"suite": ["perf"]})))
    assert empty.empty and list(empty.columns) == rc.FASTEST_COUNT_COLUMNS


def test_the_counts_chart_puts_every_realization_and_anchor_of_a_shape_on_its_row() -> None:
    counts = rc.count_table(Run(Path("run"), {}, pd.DataFrame(_emulated_rows())))
    anchors = pd.DataFrame([{"target": TARGET, "case": "a", "phase": "kernel", "peer": 80.0},
                            {"target": TARGET, "case": "a", "phase": "pack_b", "peer": 500.0}])
    fig = rc.plot_counts(counts, anchors, TARGET, rep.series_colors(list(counts["realization"])))
    call, kernel, pack = fig.axes[:3]
    labels = [t.get_text() for t in call.get_yticklabels()]
    assert labels == ["m8n8k8 — mopa2", "m4n4k4 — mopa2", "m1n64k64 — gemv_dot"]
    # row 0: three realizations in the call panel, relative to the fewest (1000); no
    # anchor of another phase is drawn against a whole call
    xs = sorted(float(x) for coll in call.collections for (x, y) in coll.get_offsets()
                if y == 0)
    assert xs == pytest.approx([1.0, 1.01, 2.5])
    # the kernel anchor (80) is the fewest kernel count on row 0: drawn at 1, ours above it
    ks = sorted(float(x) for coll in kernel.collections for (x, y) in coll.get_offsets()
                if y == 0)
    assert ks == pytest.approx([1.0, 100 / 80, 100 / 80, 1800 / 80])
    # packing B: ours (390, 400) and the pack_b anchor (500) against the fewest, 390
    ps = sorted(float(x) for coll in pack.collections for (x, y) in coll.get_offsets()
                if y == 0)
    assert ps == pytest.approx([1.0, 400 / 390, 500 / 390])


def _emulated_run(tmp_path: Path) -> Run:
    return write_run_rows(tmp_path / "emu", _emulated_rows(),
                          targets={TARGET: {"emulated": True}})


def test_an_emulated_run_answers_from_counts_with_the_chart_first(tmp_path: Path) -> None:
    run = _emulated_run(tmp_path)
    tables = rep.compute_tables(run, None)
    assert tables.gflops.empty and len(tables.emulated_times) == len(_emulated_rows())
    html = rep.build_report(run, None, tmp_path / "out").html.read_text(encoding="utf-8")
    head = html[html.index('id="answers"'):html.index("</dl>")]
    assert ('<dt>Fastest per shape?</dt><dd class="ans-note"><a href="#counts">by exact '
            "instruction counts per call (emulated: counts, not time): mopa2 on 1 of 2 "
            "shape(s) with two or more kernels counted; 1 other realization(s) on the rest; "
            "1 shape(s) with one kernel counted: no winner</a>") in head
    counts = html.index('<section id="counts">')
    chart = html.index('alt="instructions per shape on qemu:svl=512"')
    emulated = html.index('<section id="emulated">')
    # the counts section (its chart first) comes before the performance section and long
    # before any emulated timing table, which sits folded at the end
    assert counts < chart < html.index("<h3>Fewest instructions per shape</h3>")
    assert counts < html.index('<section id="performance">') < emulated
    assert html.index("<table", emulated) > html.index('<details class="emulated">', emulated)
    assert "<table" not in html[:counts].split('<section id="verdicts">')[1].split(
        "</section>")[1]
    assert emulated > html.index('<section id="fingerprints">')


def test_noisy_cases_are_flagged_as_the_run_flagged_them(tmp_path: Path) -> None:
    rows = []
    for case, stdev in (("calm", 1e3), ("wild", 5e5), ("said", 2e4)):
        r = _counted(case, "gemm_scalar_f32acc", "k_s", 0, 0)
        r.update(target="host", backend="scalar", emulated=False, time_stdev_ns=stdev,
                 count_call=math.nan)
        rows.append(r)
    noise = {"threshold": 0.10, "noisy": ["host gemm_scalar_f32acc smoke/said"]}
    run = write_run_rows(tmp_path / "host", rows, targets={"host": {"emulated": False}},
                         meta={"noise": noise})
    g = rep_perf.gflops_table(run).set_index("case")
    # wild: its pooled CV is 50%; said: the run named it (its noisiest pass); calm: neither
    assert g["noisy"].to_dict() == {"calm": False, "wild": True, "said": True}
    pivot = rep.gflops_pivot(rep_perf.gflops_table(run))
    cells = {r[1].text: r[-1] for r in pivot.rows}
    assert cells["m8n8k8"].text.endswith("NOISY") if len(pivot.rows) == 1 else True
    html = rep.build_report(run, None, tmp_path / "out").html.read_text(encoding="utf-8")
    timings = html[html.index("<h3>Timings</h3>"):]
    assert timings.count('class="worse">NOISY</td>') == 2


def test_the_speedup_chart_draws_only_the_rows_its_table_lists() -> None:
    g = pd.DataFrame([{"target": "host", "catalog": "c", "case": k, "shape": k, "layers": 1,
                       "series": s, "realization": s, "gflops": 1.0}
                      for k in ("x", "y") for s in ("gemm_scalar_f32acc", "gemm_other")])
    sp = pd.DataFrame([{"target": "host", "catalog": "c", "case": k, "series": s,
                        "realization": s, "ref_realization": "gemm_scalar_f32acc",
                        "speedup": v} for k in ("x", "y")
                       for s, v in (("gemm_scalar_f32acc", 1.0), ("gemm_other", 2.0))])
    colors = rep.series_colors(["gemm_scalar_f32acc", "gemm_other"])
    both = rep_perf.plot_performance(g, sp, "host", "c", colors)
    assert len(both.axes) == 2
    bars = [p.get_width() for p in both.axes[1].patches]
    assert bars == [2.0, 2.0]  # the reference's own 1.0 is not drawn
    only_ref = rep_perf.plot_performance(g, sp[sp["realization"] == "gemm_scalar_f32acc"],
                                         "host", "c", colors)
    assert len(only_ref.axes) == 1  # no speedup panel without rows to draw


def test_an_error_panel_flat_on_zero_says_so_in_words() -> None:
    rows = pd.DataFrame([{"target": "host", "op": "conv2d", "realization": "r", "accum": "fp32",
                          "k": k, "max_err_bound": 0.2, "max_ulp": 0.0, "max_rms_rel": 0.0,
                          "min_exact_fraction": 1.0} for k in (9, 27, 72)])
    fig = rep_verdicts.plot_error_vs_k(rows, "conv2d", {"r": "C0"})
    bound, ulp, rms = fig.axes[:3]
    assert len(bound.get_lines()) >= 1 and [t.get_text() for t in bound.texts] == []
    for ax, text in ((ulp, rep_verdicts.FLAT["max_ulp"]), (rms, rep_verdicts.FLAT["max_rms_rel"])):
        assert ax.get_lines() == [] and [t.get_text() for t in ax.texts] == [text]
        assert list(ax.get_yticks()) == []
    assert rep_verdicts.flat_panels(rows) == {"max_ulp": rep_verdicts.FLAT["max_ulp"],
                                              "max_rms_rel": rep_verdicts.FLAT["max_rms_rel"]}
    moved = rows.assign(max_ulp=[0.0, 1.0, 2.0])
    assert "max_ulp" not in rep_verdicts.flat_panels(moved)


def test_every_header_with_a_meaning_explains_it_on_hover(tmp_path: Path) -> None:
    run = _emulated_run(tmp_path)
    html = rep.build_report(run, None, tmp_path / "out").html.read_text(encoding="utf-8")
    heads = re.findall(r"<th( title=\"[^\"]*\")?>([^<]*)</th>", html)
    assert heads
    for title, name in heads:
        if name in COLUMN_HELP:
            assert unescape(title) == f' title="{COLUMN_HELP[name]}"', name
    # every column of the terminal's summary is explained
    from kbench.results.summary import summary_frame
    assert set(summary_frame([]).columns) <= set(TERMINAL)


FIT_JS = """JSON.stringify([...document.querySelectorAll('div.scroll')].filter(d =>
  d.offsetParent !== null).map(d => [d.scrollWidth, d.clientWidth,
  [...d.querySelector('table').tHead.rows[0].cells].map(c => c.textContent.slice(0, 16) + ':'
   + Math.round(c.getBoundingClientRect().width)).join(' ')]))"""


def test_every_table_fits_a_1400_px_page(tmp_path: Path) -> None:
    chromium = _chromium()
    wide = []
    for i in range(14):  # fourteen long realization names: the widest pivot there is
        r = _counted("a", f"gemm_sme2_mopa_f32acc_mb128_nb256_kb256_variant{i}", f"k{i}", 0, 0)
        r.update(target="host", backend="sme", emulated=False, count_call=math.nan,
                 time_median_ns=1e6 * (1 + i))
        wide.append(r)
    run = write_run_rows(tmp_path / "wide", wide + _emulated_rows(),
                         targets={"host": {"emulated": False}, TARGET: {"emulated": True}})
    files = rep.build_report(run, None, tmp_path / "out")
    tools = DevTools.launch(chromium, tmp_path / "profile")
    try:
        session = tools.open_page(files.html.as_uri())  # loaded: its load event awaited
        tools.call("Emulation.setDeviceMetricsOverride", session, width=1400, height=900,
                   deviceScaleFactor=1, mobile=False)
        tools.call("Runtime.evaluate", session,
                   expression="document.querySelectorAll('details').forEach(d => d.open = true)")
        sizes = json.loads(tools.call("Runtime.evaluate", session, expression=FIT_JS,
                                      returnByValue=True)["result"]["value"])
    finally:
        tools.close()
    assert len(sizes) > 5, sizes
    assert [s for s in sizes if s[0] > s[1] + 1] == []


def test_the_readme_picture_caption_names_what_the_page_shows(tmp_path: Path) -> None:
    """The README's caption of docs/img/report.png is generated from
    views.QUESTIONS and report.FIRST_SECTIONS (docs/gen/kbdocs.py, checked
    by suites/test_docs.py); a default install's host run (the scalar
    backend, no peers, as ci/docs_screenshot.sh runs it) renders exactly
    those questions in the header and those sections first under it."""
    from kbench.results.report_views import QUESTIONS
    rows = []
    for case in ("a", "b"):
        r = _counted(case, "gemm_scalar_f32acc", "k_s", 0, 0)
        r.update(target="host", backend="scalar", emulated=False, count_call=math.nan)
        rows.append(r)
    run = write_run_rows(tmp_path / "host", rows, targets={"host": {"emulated": False}})
    html = rep.build_report(run, None, tmp_path / "out").html.read_text(encoding="utf-8")
    header = html[:html.index("</header>")]
    assert tuple(re.findall(r"<dt>([^<]*)</dt>", header)) == QUESTIONS
    sections = re.findall(r'<section id="[^"]+">\s*<h2>([^<]*)</h2>', html)
    assert tuple(sections[:len(rep.FIRST_SECTIONS)]) == rep.FIRST_SECTIONS
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    caption = re.search(r"!\[([^\]]*)\]\(docs/img/report\.png\)", readme)
    assert caption is not None
    assert f"the {len(QUESTIONS)} answers on top ({' '.join(QUESTIONS)})" in caption.group(1)
    assert caption.group(1).endswith("then " + " and ".join(
        s.lower() for s in rep.FIRST_SECTIONS))
    script = (Path(__file__).resolve().parents[1] / "ci" / "docs_screenshot.sh").read_text()
    assert "--backend scalar" in script  # the picture is a default install's run
