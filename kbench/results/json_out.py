"""The documents `--json` prints (`run`, `compare`, `gate`, `history`;
`count` writes its own list): plain JSON, NaN as null, each with a
"schema" member naming its JSON Schema under reports/schema/ (shipped in
the package as kbench/reports/schema/)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from kbench.results.compare import (
    KEY,
    CaseComparison,
    Comparison,
    GateResult,
    RealizationComparison,
    RunInfo,
    first_look_word,
)
from kbench.results.count_compare import CountDelta
from kbench.results.counts import COLUMNS as COUNT_COLUMNS
from kbench.results.runfolder import Run

SCHEMAS = ("run", "compare", "gate", "history", "count")


def schema_id(name: str) -> str:
    """The "schema" member of a document: the schema file's name and version."""
    return f"kbench/{name}/1"


def number(x: Any) -> float | int | None:
    """A JSON number: NaN, infinities and None are null."""
    if x is None:
        return None
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def run_info(info: RunInfo, run_id: int | None = None) -> dict[str, Any]:
    return {"path": info.path, "history_id": run_id, "git_commit": info.git_commit,
            "git_dirty": info.git_dirty, "host": info.host, "cpu_model": info.cpu_model,
            "arch": info.arch, "date": info.date, "complete": info.complete}


def _case(c: CaseComparison) -> dict[str, Any]:
    key = dict(zip(KEY, c.key, strict=True))
    key["threads"] = int(key["threads"])
    return {**key, "label": c.label, "base_status": c.base_status,
            "cand_status": c.cand_status, "timed": c.timed,
            "base_median_ns": number(c.base_median_ns),
            "cand_median_ns": number(c.cand_median_ns),
            "base_rounds": int(c.base_rounds), "cand_rounds": int(c.cand_rounds),
            "ratio": number(c.ratio), "pass_ratio": number(c.pass_ratio),
            "passes": int(c.passes), "p_slower": number(c.p_slower),
            "p_faster": number(c.p_faster), "verdict": c.verdict, "note": c.note,
            "limit": number(c.limit)}


def _counts(d: CountDelta, regressions: list[CountDelta]) -> dict[str, Any]:
    target, catalog, case, realization = d.key
    phases = [c.removeprefix("count_") for c in COUNT_COLUMNS]
    return {"target": target, "catalog": catalog, "case": case, "realization": realization,
            "label": d.label, "verdict": d.verdict, "regression": d in regressions,
            "ratio": number(d.ratio()), "nondeterministic": d.nondeterministic,
            "base": {p: number(d.base.get(f"count_{p}")) for p in phases},
            "candidate": {p: number(d.cand.get(f"count_{p}")) for p in phases}}


def _realization(r: RealizationComparison) -> dict[str, Any]:
    """A realization's cases tested together (kbench.results.compare)."""
    suite, target, op, realization, threads = r.key
    return {"suite": suite, "target": target, "op": op, "realization": realization,
            "threads": int(threads), "label": r.label, "cases": int(r.cases),
            "median_ratio": number(r.median_ratio), "p_slower": number(r.p_slower),
            "p_faster": number(r.p_faster), "verdict": r.verdict, "note": r.note}


def comparison_doc(comp: Comparison, ids: tuple[int | None, int | None] = (None, None)
                   ) -> dict[str, Any]:
    """`kbench compare --json`: both runs, every case, the tallies."""
    regressions = comp.instructions.regressions()
    return {"schema": schema_id("compare"),
            "base": run_info(comp.base, ids[0]), "candidate": run_info(comp.cand, ids[1]),
            "alpha": comp.alpha, "max_slowdown": comp.max_slowdown,
            "count_limit": comp.instructions.limit,
            "test": comp.test,
            "cases": [_case(c) for c in comp.cases],
            "realizations": [_realization(r) for r in comp.realizations],
            "timed_tally": comp.counts(),
            "instructions": [_counts(d, regressions) for d in comp.instructions.deltas],
            "instructions_tally": comp.instructions.tally(),
            "warnings": list(comp.warnings)}


def gate_doc(result: GateResult, ids: tuple[int | None, int | None] = (None, None)
             ) -> dict[str, Any]:
    """`kbench gate --json`: the comparison, the failures and the verdict."""
    doc = comparison_doc(result.comparison, ids)
    doc["schema"] = schema_id("gate")
    comp = result.comparison
    # the interleaved verdicts by their label, "realization catalog/case" (kbench.results.abgate)
    judged = {v.label: v.verdict for v in result.interleaved}
    for case, c in zip(doc["cases"], comp.cases, strict=True):  # the gate's own word per case
        ab_label = f"{case['realization']} {case['catalog']}/{case['case']}"
        case["gate_verdict"] = (judged.get(ab_label) if result.ab_paths
                                else first_look_word(c, comp))
    doc["failures"] = [{"reason": f.reason, "case": f.case, "detail": f.detail}
                       for f in result.failures]
    doc["interleaved"] = None if not result.ab_paths else {
        "path": result.ab_path, "paths": list(result.ab_paths),
        "undecided": len(result.undecided), "unjudged": list(result.unjudged),
        "settle": result.settle_commands(),
        "cases": [{"case": v.label, "verdict": v.verdict, "detail": v.detail,
                   "median_ratio": number(v.stats.median_ratio) if v.stats else None,
                   "ci_low": number(v.stats.ci_low) if v.stats else None,
                   "ci_high": number(v.stats.ci_high) if v.stats else None,
                   "source": v.source, "settled": v.settled}
                  for v in result.interleaved]}
    doc["first_look"] = [{"case": f.case, "ratio": number(f.ratio), "detail": f.detail,
                          "settle": f.settle} for f in result.first_look]
    doc["passed"] = result.passed
    return doc


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, int | float):
        return number(value)
    if hasattr(value, "item"):  # numpy scalars
        return _plain(value.item())
    if pd.isna(value):
        return None
    return str(value)


def history_doc(database: str, runs: pd.DataFrame) -> dict[str, Any]:
    """`kbench history --json`: the database and its runs, newest first."""
    rows = [{k: _plain(v) for k, v in r.items()} for r in runs.to_dict(orient="records")]
    for r in rows:
        r["git_dirty"] = None if r.get("git_dirty") is None else bool(r["git_dirty"])
        for k in ("complete", "emulated"):
            r[k] = bool(r.get(k))
    return {"schema": schema_id("history"), "database": database, "runs": rows}


def run_doc(run: Run, exit_code: int, report: str | None = None) -> dict[str, Any]:
    """`kbench run --json`: the run folder, whether it completed, the exit
    status, the status tally, the summary per realization and every
    verdict that failed (with the line that reproduces it)."""
    df = run.results
    tally: Mapping[str, int] = (df["status"].astype(str).value_counts().to_dict()
                                if not df.empty else {})
    failures = []
    failures_csv = run.path / "failures.csv"
    if failures_csv.is_file():
        rows = pd.read_csv(failures_csv, dtype=str, keep_default_na=False)
        failures = [dict(r) for r in rows.to_dict(orient="records")]
    summary = run.meta.get("summary") or {}
    by_real = [{k: _plain(v) for k, v in row.items()}
               for row in summary.get("by_realization", [])] if isinstance(summary, dict) else []
    doc = {"schema": schema_id("run"), "run_folder": str(run.path),
           "complete": run.complete, "exit_code": exit_code,
           "results": len(df), "status": {str(k): int(v) for k, v in tally.items()},
           "targets": sorted(set(df["target"].astype(str))) if not df.empty else [],
           "by_realization": by_real, "failures": failures,
           "defects": list(run.defects), "report": report}
    coverage_csv = run.path / "coverage.csv"  # kbench run --coverage
    if coverage_csv.is_file():
        rows = pd.read_csv(coverage_csv, dtype=str, keep_default_na=False)
        doc["coverage"] = [
            {**r, "realizations": r["realizations"].split(), "instructions": int(r["instructions"]),
             "covered": int(r["covered"]), "percent": float(r["percent"])}
            for r in rows.to_dict(orient="records")]
    return doc


__all__ = ["SCHEMAS", "comparison_doc", "gate_doc", "history_doc", "number", "run_doc",
           "schema_id"]
