"""The report's view of plugins: per target, each plugin file it was given —
loaded (name, version, file, its realizations, their verdicts, the contract
probes' findings, accumulation fingerprints that contradict a declared model)
or refused (and why) — and the table of every contract-probe finding.

Plugin realizations are named "<plugin>.<realization>" and have the backend
"plugin:<plugin>"; a plugin is never counted as ours (kbench.results.report
keeps them out of "best per shape")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kbench.judge.verdict import FAULTS
from kbench.results.runfolder import Run

PROBE_SUITE = "plugin-contracts"
FINDINGS = ("refused", "accepted, correct", "silently wrong", "crashed", "refused a valid call",
            "not applicable")
PLUGIN_COLUMNS = ["target", "plugin", "version", "status", "realizations", "passed", "failed",
                  "errors", "faults", "mistrusted", "probes", "contradictions", "file"]
PROBE_COLUMNS = ["target", "plugin", "realization", "probe", "finding", "detail"]
RAN_COLUMNS = ["target", "realization", "traced", "elsewhere", "led by", "functions seen"]
ELSEWHERE = "ran elsewhere than it declares"
CONTRADICTION = "fingerprint contradicts the declared model"


def is_plugin_backend(backend: Any) -> bool:
    return str(backend).startswith("plugin:")


def probe_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per contract probe of a plugin realization: the finding and its detail."""
    if results.empty or "suite" not in results:
        return pd.DataFrame(columns=PROBE_COLUMNS)
    rows = []
    for _, r in results[results["suite"] == PROBE_SUITE].iterrows():
        finding, _, detail = str(r["message"]).partition(": ")
        rows.append({"target": r["target"], "plugin": r.get("plugin", ""),
                     "realization": r["realization"],
                     "probe": str(r["case"]).removeprefix("probe_"),
                     "finding": finding if finding in FINDINGS else r["status"],
                     "detail": detail})
    return pd.DataFrame(rows, columns=PROBE_COLUMNS)


def _ran_functions(text: str) -> list[str]:
    """The function names of a verdict's `ran` cell ("f 80%, g 12%, ... of N instructions")."""
    head = text.rsplit(" of ", 1)[0]
    return [part.rsplit(" ", 1)[0] for part in head.split(", ") if part and part != "..."]


def ran_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per target and plugin realization, the code its traced calls ran (kbench.
    targets.whatran): how many calls were traced, how many ran elsewhere than it
    declares, the functions that led (ran the most) and by how many calls, and
    every function any call named."""
    if results.empty or "ran" not in results:
        return pd.DataFrame(columns=RAN_COLUMNS)
    traced = results[results["ran"].fillna("").astype(str) != ""]
    rows = []
    for (target, real), g in traced.groupby(["target", "realization"], sort=True):
        lead: dict[str, int] = {}
        seen: dict[str, None] = {}
        for text in g["ran"].astype(str):
            names = _ran_functions(text)
            if names:
                lead[names[0]] = lead.get(names[0], 0) + 1
            seen.update(dict.fromkeys(names))
        rows.append({"target": target, "realization": real, "traced": len(g),
                     "elsewhere": int(g["message"].astype(str).str.startswith(ELSEWHERE).sum()),
                     "led by": ", ".join(f"{n} ({k})" for n, k in
                                         sorted(lead.items(), key=lambda x: (-x[1], x[0]))),
                     "functions seen": ", ".join(seen)})
    return pd.DataFrame(rows, columns=RAN_COLUMNS)


def _findings(probes: pd.DataFrame) -> str:
    counts = probes["finding"].value_counts()
    return ", ".join(f"{int(counts[f])} {f}" for f in FINDINGS if f in counts) or "–"


def plugin_table(run: Run) -> pd.DataFrame:
    """Per target and plugin file: what became of it, and what its realizations did."""
    results = run.results
    probes = probe_table(results)
    rows: list[dict[str, Any]] = []
    targets = run.meta.get("targets") or {}
    for spec, info in targets.items():
        if not isinstance(info, dict):
            continue
        for p in info.get("plugins") or []:
            name = p.get("name", "")
            mine = results[(results["target"] == spec)
                           & (results["backend"] == f"plugin:{name}")]
            verdicts = mine[mine["suite"] != PROBE_SUITE]
            found = probes[(probes["target"] == spec)
                           & probes["realization"].str.startswith(f"{name}.")]
            usable = [r["name"] for r in p.get("realizations", []) if r.get("usable")]
            rows.append({
                "target": spec, "plugin": name, "version": p.get("version", ""),
                "status": "loaded", "realizations": ", ".join(usable) or "–",
                "passed": int((verdicts["status"] == "pass").sum()),
                "failed": int((verdicts["status"] == "fail").sum()),
                "errors": int((verdicts["status"] == "error").sum()),
                "faults": int(verdicts["status"].isin(FAULTS).sum()),
                "mistrusted": int((verdicts["status"] == "mistrusted").sum()),
                "probes": _findings(found),
                "contradictions": int(verdicts["message"].str.contains(CONTRADICTION).sum()),
                "file": p.get("path", "")})
        for e in info.get("plugin_errors") or []:
            rows.append({"target": spec, "plugin": Path(str(e.get("path", ""))).name,
                         "version": "", "status": f"refused: {e.get('message', '')}",
                         "realizations": "–", "passed": 0, "failed": 0, "errors": 0,
                         "faults": 0,
                         "mistrusted": 0, "probes": "–", "contradictions": 0,
                         "file": e.get("path", "")})
    return pd.DataFrame(rows, columns=PLUGIN_COLUMNS)


__all__ = ["PLUGIN_COLUMNS", "PROBE_COLUMNS", "RAN_COLUMNS", "is_plugin_backend", "plugin_table",
           "probe_table", "ran_table"]
