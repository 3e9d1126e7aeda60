"""The report's plugin tables, read from a run in memory: one row per plugin file
a target was given (loaded or refused), with only that plugin's verdicts and
probe findings on that target counted in its row; one row per probe verdict."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kbench.results.plugin_report import (
    CONTRADICTION,
    PLUGIN_COLUMNS,
    PROBE_COLUMNS,
    PROBE_SUITE,
    plugin_table,
    probe_table,
)
from kbench.results.runfolder import Run

HOST, ARM = "host", "qemu:sme2:512"


def _row(target: str, plugin: str, realization: str, status: str, *, suite: str = "gemm",
         case: str = "c", message: str = "") -> dict[str, str]:
    return {"target": target, "backend": f"plugin:{plugin}", "plugin": plugin,
            "realization": f"{plugin}.{realization}", "suite": suite, "case": case,
            "status": status, "message": message}


def _probe(target: str, plugin: str, probe: str, finding: str) -> dict[str, str]:
    return _row(target, plugin, "r", "pass", suite=PROBE_SUITE, case=f"probe_{probe}",
                message=f"{finding}: detail of {probe}")


def _run() -> Run:
    rows = [
        # kai on the host: 2 pass, 1 fail (a contradiction), 1 error, 2 faults, 1 mistrusted
        _row(HOST, "kai", "a", "pass"), _row(HOST, "kai", "b", "pass"),
        _row(HOST, "kai", "a", "fail", message=f"{CONTRADICTION}: fma vs f32"),
        _row(HOST, "kai", "a", "error"), _row(HOST, "kai", "a", "crashed"),
        _row(HOST, "kai", "b", "timeout"), _row(HOST, "kai", "b", "mistrusted"),
        _probe(HOST, "kai", "nan", "refused"), _probe(HOST, "kai", "ld", "silently wrong"),
        _probe(HOST, "kai", "ldc", "silently wrong"),
        # the same plugin on another target, and a plugin whose name extends kai's
        _row(ARM, "kai", "a", "fail"), _row(ARM, "kai", "a", "fail"),
        _probe(ARM, "kai", "nan", "crashed"),
        _row(HOST, "kai2", "a", "fail"), _probe(HOST, "kai2", "nan", "accepted, correct"),
        # the plugin's name as a realization outside the plugin backend is not its verdict
        {**_row(HOST, "kai", "a", "fail"), "backend": "neon"},
        # an anonymous plugin's verdicts (backend "plugin:")
        _row(HOST, "", "z", "error"),
    ]
    kai = {"name": "kai", "version": "1.2", "path": "/p/libkai.so",
           "realizations": [{"name": "kai.a", "usable": True}, {"name": "kai.b", "usable": True},
                            {"name": "kai.c", "usable": False}]}
    targets = {
        "broken": "not a target's record",   # skipped, and the targets after it still read
        HOST: {"plugins": [kai, {"name": "kai2", "path": "/p/libkai2.so",
                                 "realizations": [{"name": "kai2.a"}]},
                           {"path": "/p/libanon.so"}],
               "plugin_errors": [{"path": "/p/libbad.so", "message": "no kb_plugin_init"}]},
        ARM: {"plugins": [{**kai, "realizations": [{"name": "kai.a", "usable": True}]}]},
    }
    return Run(path=Path("run"), meta={"targets": targets}, results=pd.DataFrame(rows))


def test_each_plugin_row_counts_only_its_own_verdicts_and_probes_on_its_target() -> None:
    table = plugin_table(_run())
    assert list(table.columns) == PLUGIN_COLUMNS
    got = [list(r) for r in table.itertuples(index=False)]
    assert got == [
        [HOST, "kai", "1.2", "loaded", "kai.a, kai.b", 2, 1, 1, 2, 1,
         "1 refused, 2 silently wrong", 1, "/p/libkai.so"],
        [HOST, "kai2", "", "loaded", "–", 0, 1, 0, 0, 0, "1 accepted, correct", 0,
         "/p/libkai2.so"],
        [HOST, "", "", "loaded", "–", 0, 0, 1, 0, 0, "–", 0, "/p/libanon.so"],
        [HOST, "libbad.so", "", "refused: no kb_plugin_init", "–", 0, 0, 0, 0, 0, "–", 0,
         "/p/libbad.so"],
        [ARM, "kai", "1.2", "loaded", "kai.a", 0, 2, 0, 0, 0, "1 crashed", 0, "/p/libkai.so"],
    ]


def test_a_run_without_targets_or_plugins_has_an_empty_table() -> None:
    results = pd.DataFrame([_row(HOST, "kai", "a", "pass")])
    for meta in ({}, {"targets": {}}, {"targets": {HOST: {}}},
                 {"targets": {HOST: {"plugins": [], "plugin_errors": []}}}):
        table = plugin_table(Run(path=Path("run"), meta=meta, results=results))
        assert table.empty and list(table.columns) == PLUGIN_COLUMNS


def test_the_probe_table_has_one_row_per_probe_verdict_with_its_finding_and_detail() -> None:
    results = _run().results
    odd = {**_probe(HOST, "kai", "odd", "refused"), "status": "error",
           "message": "no finding named: the probe itself failed"}
    table = probe_table(pd.concat([results, pd.DataFrame([odd])], ignore_index=True))
    assert list(table.columns) == PROBE_COLUMNS
    assert [list(r) for r in table.itertuples(index=False)] == [
        [HOST, "kai", "kai.r", "nan", "refused", "detail of nan"],
        [HOST, "kai", "kai.r", "ld", "silently wrong", "detail of ld"],
        [HOST, "kai", "kai.r", "ldc", "silently wrong", "detail of ldc"],
        [ARM, "kai", "kai.r", "nan", "crashed", "detail of nan"],
        [HOST, "kai2", "kai2.r", "nan", "accepted, correct", "detail of nan"],
        # a message that names no finding: the verdict's status stands in for it
        [HOST, "kai", "kai.r", "odd", "error", "the probe itself failed"],
    ]


def test_a_run_without_probe_verdicts_has_an_empty_probe_table() -> None:
    plain = pd.DataFrame([_row(HOST, "kai", "a", "pass")])
    for results in (pd.DataFrame(), plain.drop(columns=["suite"]), plain):
        table = probe_table(results)
        assert table.empty and list(table.columns) == PROBE_COLUMNS


def test_records_missing_their_optional_fields_read_as_empty() -> None:
    """A plugin record without version, path or realizations and a refusal
    without path or message: empty fields, never a placeholder."""
    targets = {HOST: {"plugins": [{"name": "kai"}], "plugin_errors": [{}]},
               ARM: {"plugins": None, "plugin_errors": None}, "none": None}
    results = pd.DataFrame([_row(HOST, "kai", "a", "pass")])
    table = plugin_table(Run(path=Path("run"), meta={"targets": targets}, results=results))
    assert [list(r) for r in table.itertuples(index=False)] == [
        [HOST, "kai", "", "loaded", "–", 1, 0, 0, 0, 0, "–", 0, ""],
        [HOST, "", "", "refused: ", "–", 0, 0, 0, 0, 0, "–", 0, ""]]
    assert plugin_table(Run(path=Path("run"), meta={"targets": None}, results=results)).empty


def test_a_probe_detail_keeps_its_own_separators_and_a_missing_plugin_is_empty() -> None:
    probe = {"target": HOST, "backend": "plugin:kai", "realization": "kai.r",
             "suite": PROBE_SUITE, "case": "probe_ld", "status": "fail",
             "message": "silently wrong: got 3: expected 4"}
    table = probe_table(pd.DataFrame([probe]))
    assert [list(r) for r in table.itertuples(index=False)] == [
        [HOST, "", "kai.r", "ld", "silently wrong", "got 3: expected 4"]]
