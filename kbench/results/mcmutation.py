"""What a machine-code mutation campaign (`kbench mutate --plugin`,
kbench.harness.mcmutate) found, as figures and tables: per status, the kill
rates of kbench's suites and of the external test on the same mutants, per
function and per operator, the mutants only one of them kills and the
survivors of both with their disassembly; and the report's section on it
(reports/mcmutation.html.j2, with its CSV tables).

A mutant's status is kbench's: killed, survived, likely-equivalent (every
suite passed and the probe saw bit-identical outputs and the same
instruction trace), not-reached (the mutated instruction never ran) or
error (the run could not judge it). Kill rates count the *live* mutants:
killed or survived, i.e. reached and not equivalent; the external test's
rate is over the same mutants."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup

from kbench.resources import resource_dir

KIND = "mc-mutation-campaign"
DATA = "mcmutation.json"
TEMPLATE = "mcmutation.html.j2"
KILLED, SURVIVED, EQUIVALENT, NOT_REACHED, ERROR = (
    "killed", "survived", "likely-equivalent", "not-reached", "error")
STATUSES = (KILLED, SURVIVED, EQUIVALENT, NOT_REACHED, ERROR)
LIVE = (KILLED, SURVIVED)
# the equivalence probe's words for what it saw (kbench.harness.mcprobe.compare)
SAME_OUTPUTS = "outputs bit-identical on all"
OUTPUTS_DIFFER = "outputs differ on"
GROUP_COLUMNS = ["mutants", *STATUSES, "kbench_kill_rate", "external_killed",
                 "external_kill_rate"]
MUTANT_COLUMNS = ["id", "function", "operator", "status", "external", "detail",
                  "external_detail", "source", "old_text", "new_text", "seconds"]


def _rate(k: int, n: int) -> float:
    return k / n if n else math.nan


def _group(rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {s: sum(r.get("status") == s for r in rows) for s in STATUSES}
    live = [r for r in rows if r.get("status") in LIVE]
    ext = sum(r.get("external") == KILLED for r in live)
    return {"mutants": len(rows), **counts,
            "kbench_kill_rate": _rate(counts[KILLED], len(live)),
            "external_killed": ext, "external_kill_rate": _rate(ext, len(live))}


def survivor_kind(detail: str) -> str:
    """What the equivalence probe saw of a survivor: "trace" (bit-identical
    outputs on every probe case, another instruction count: no result the
    suites judge can differ), "outputs" (outputs that differ, within the
    error bound), "" (not probed, the probe failed or ran other cases)."""
    if f"; {SAME_OUTPUTS} " in detail:
        return "trace"
    return "outputs" if f"; {OUTPUTS_DIFFER} " in detail else ""


def summarize(results: list[dict[str, Any]], external: bool) -> dict[str, Any]:
    """Counts, both kill rates, per function and per operator, and the ids of
    the mutants only kbench kills, only the external test kills, and that
    both let through (kbench's survivors when there is no external test)."""
    live = [r for r in results if r.get("status") in LIVE]
    by_fn: dict[str, list[dict[str, Any]]] = {}
    by_op: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_fn.setdefault(str(r.get("function", "")), []).append(r)
        by_op.setdefault(str(r.get("operator", "")), []).append(r)
    ext_killed = [r for r in live if r.get("external") == KILLED]
    return {
        "mutants": len(results), **_group(results), "live": len(live),
        "external": external,
        "survived_trace": sum(r.get("status") == SURVIVED
                              and survivor_kind(str(r.get("detail", ""))) == "trace"
                              for r in results),
        "survived_outputs": sum(r.get("status") == SURVIVED
                                and survivor_kind(str(r.get("detail", ""))) == "outputs"
                                for r in results),
        "functions": {k: _group(v) for k, v in sorted(by_fn.items())},
        "operators": {k: _group(v) for k, v in sorted(by_op.items())},
        "only_kbench": [r["id"] for r in live if r["status"] == KILLED
                        and external and r.get("external") != KILLED],
        "only_external": [r["id"] for r in ext_killed if r["status"] == SURVIVED],
        "survivors": [r["id"] for r in live if r["status"] == SURVIVED
                      and r.get("external") != KILLED],
        "equivalent": [r["id"] for r in results if r.get("status") == EQUIVALENT],
        "errors": [r["id"] for r in results if r.get("status") == ERROR],
    }


def load(folder: Path) -> dict[str, Any] | None:
    """mcmutation.json of a run folder (None: there is none, or unreadable)."""
    try:
        data = json.loads((Path(folder) / DATA).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("mutants"), list) else None


def group_table(summary: dict[str, Any], key: str) -> pd.DataFrame:
    """One row per function (key "functions") or operator ("operators"), and "all"."""
    label = key[:-1]
    rows = [{label: name, **g} for name, g in summary.get(key, {}).items()]
    rows.append({label: "all", **{c: summary.get(c) for c in GROUP_COLUMNS}})
    return pd.DataFrame(rows, columns=[label, *GROUP_COLUMNS])


def mutant_table(data: dict[str, Any]) -> pd.DataFrame:
    """Every mutant, survivors first."""
    order = {SURVIVED: 0, ERROR: 1, EQUIVALENT: 2, NOT_REACHED: 3, KILLED: 4}
    df = pd.DataFrame([{c: m.get(c, "") for c in MUTANT_COLUMNS} for m in data["mutants"]],
                      columns=MUTANT_COLUMNS)
    return df.sort_values(by="status", key=lambda s: s.map(order), kind="stable"
                          ).reset_index(drop=True)


def summary_lines(data: dict[str, Any]) -> list[str]:
    """The campaign in a few lines (the terminal's and the docs' summary)."""
    s = data["summary"]
    ext = s.get("external")
    lines = [f"{s['mutants']} mutants: {s[KILLED]} killed, {s[SURVIVED]} survived, "
             f"{s[EQUIVALENT]} likely equivalent, {s[NOT_REACHED]} not reached, "
             f"{s[ERROR]} errors; {len(data.get('not_run', []))} not run"]
    rate = s["kbench_kill_rate"]
    lines.append(f"kbench's suites kill {s[KILLED]} of {s['live']} reached, non-equivalent "
                 f"mutants ({_pct(rate)})")
    if ext:
        lines.append(f"the external test kills {s['external_killed']} of {s['live']} "
                     f"({_pct(s['external_kill_rate'])}); only kbench: "
                     f"{len(s['only_kbench'])}, only the external test: "
                     f"{len(s['only_external'])}, neither: {len(s['survivors'])}")
    if s[SURVIVED]:
        lines.append(f"of the {s[SURVIVED]} survivors, {s.get('survived_trace', 0)} give "
                     "bit-identical outputs on every probe case (only their instruction count "
                     f"differs) and {s.get('survived_outputs', 0)} outputs that differ within "
                     "the error bound")
    return lines


def _pct(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.1%}"


def _cell(column: str, v: Any) -> str:
    if column.endswith("_rate"):
        return _pct(v)
    if isinstance(v, float):
        return "-" if math.isnan(v) else f"{v:g}"
    return "" if v is None else str(v)


def _rows(df: pd.DataFrame) -> dict[str, Any]:
    cols = list(df.columns)
    return {"columns": cols, "rows": [[_cell(c, v) for c, v in zip(cols, row, strict=True)]
                                      for row in df.itertuples(index=False)]}


def report_section(folder: Path, out_dir: Path | None = None) -> Markup:
    """The report's "Machine-code mutants" section ('' when the folder holds
    no such campaign); with out_dir, its tables as CSV files there."""
    data = load(folder)
    if data is None or data.get("kind") != KIND:
        return Markup("")
    # the figures from the mutants themselves (a folder written by an older kbench has fewer)
    data = {**data, "summary": summarize(data["mutants"], bool(
        data.get("settings", {}).get("external")))}
    s = data["summary"]
    fn, op, mt = group_table(s, "functions"), group_table(s, "operators"), mutant_table(data)
    csvs = {}
    if out_dir is not None:
        for name, df in (("mc_functions", fn), ("mc_operators", op), ("mc_mutants", mt)):
            df.to_csv(Path(out_dir) / f"{name}.csv", index=False)
            csvs[name] = f"{name}.csv"
    by_id = {m["id"]: m for m in data["mutants"]}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(resource_dir("reports")),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    html = env.get_template(TEMPLATE).render(
        data=data, s=s, lines=summary_lines(data), csvs=csvs,
        functions=_rows(fn), operators=_rows(op), mutants=_rows(mt),
        listed={k: [by_id[i] for i in s.get(k, []) if i in by_id]
                for k in ("survivors", "only_kbench", "only_external", "equivalent")})
    return Markup(html)
