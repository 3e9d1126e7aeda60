#!/usr/bin/env python3
"""CI check of the plugin runs (ci/test.sh, step "plugins").

    python ci/check_plugins.py good RUN_FOLDER TARGET...
        the well-behaved example plugins ran on every TARGET: each loaded plugin
        has verdicts, none failed, every verdict names the plugin and its version,
        and their probes found nothing silently wrong or crashed
    python ci/check_plugins.py faulty RUN_FOLDER REPORT_FOLDER TARGET...
        the faulty example (exfaulty) was caught on every TARGET: failed correctness
        verdicts naming it and its version, "silently wrong" probe findings (on SME
        targets also with B packed at another vector length), and the report's
        plugins table and probe table say so

Prints a one-line summary per target; exits 1 with the problems otherwise."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

FAULTY = "exfaulty"
FAULTY_VERSION = "exfaulty 0.0.1-broken"


def _rows(run: Path) -> pd.DataFrame:
    df = pd.read_csv(run / "results.csv", low_memory=False, keep_default_na=False)
    return df[df["backend"].astype(str).str.startswith("plugin:")]


def _plugins(run: Path, target: str) -> list[dict]:
    meta = json.loads((run / "run.json").read_text())
    return [t for spec, t in meta["targets"].items() if spec == target or t["name"] == target][0]


def good(run: Path, targets: list[str]) -> list[str]:
    problems = []
    rows = _rows(run)
    for target in targets:
        info = _plugins(run, target)
        mine = rows[rows["target"] == target]
        names = [p["name"] for p in info.get("plugins", [])]
        if not names:
            problems.append(f"{target}: no plugin loaded")
        for name in names:
            have = mine[mine["backend"] == f"plugin:{name}"]
            if have.empty:
                problems.append(f"{target}: plugin {name} has no verdicts")
        bad = mine[mine["status"].isin(["fail", "error"])]
        problems += [f"{target}: {r.realization} {r.case} {r.kind}: {r.status} {r.message}"
                     for r in bad.itertuples()]
        unnamed = mine[mine["plugin"] == ""]
        if len(unnamed):
            problems.append(f"{target}: {len(unnamed)} plugin verdicts do not name the plugin")
        refused = "; ".join(e["message"] for e in info.get("plugin_errors", []))
        print(f"{target}: plugins {', '.join(names)}: {len(mine)} verdicts, "
              f"{int((mine['status'] == 'pass').sum())} pass"
              + (f"; refused here: {refused}" if refused else ""))
    return problems


def faulty(run: Path, report: Path, targets: list[str]) -> list[str]:
    problems = []
    rows = _rows(run)
    plugins = pd.read_csv(report / "plugins.csv", keep_default_na=False)
    probes = pd.read_csv(report / "plugin_probes.csv", keep_default_na=False)
    for target in targets:
        info = _plugins(run, target)
        mine = rows[(rows["target"] == target) & (rows["backend"] == f"plugin:{FAULTY}")]
        failed = mine[(mine["status"] == "fail") & (mine["suite"] == "correctness")]
        if failed.empty:
            problems.append(f"{target}: no failed correctness verdict for {FAULTY}")
        if set(failed["plugin"]) - {FAULTY_VERSION}:
            problems.append(f"{target}: failed verdicts do not name {FAULTY_VERSION}")
        wrong = probes[(probes["target"] == target) & (probes["finding"] == "silently wrong")]
        if wrong.empty:
            problems.append(f"{target}: no silently wrong probe finding")
        if info.get("sme_vector_bits") and not (wrong["probe"] == "other_svl").any():
            problems.append(f"{target}: B packed at another SVL was not found silently wrong")
        row = plugins[(plugins["target"] == target) & (plugins["plugin"] == FAULTY)]
        if row.empty or int(row["failed"].iloc[0]) != len(failed) \
                or "silently wrong" not in row["probes"].iloc[0]:
            problems.append(f"{target}: the report's plugins table does not show the findings")
        probes_found = ", ".join(f"{r.realization.split('.', 1)[1]}/{r.probe}"
                                 for r in wrong.itertuples())
        print(f"{target}: {FAULTY} caught: {len(failed)} failed verdicts "
              f"({', '.join(sorted(set(failed['realization'])))}); silently wrong probes: "
              f"{probes_found}")
    return problems


def main(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(argv) >= 3 and argv[0] == "good":
        problems = good(Path(argv[1]), argv[2:])
    elif len(argv) >= 4 and argv[0] == "faulty":
        problems = faulty(Path(argv[1]), Path(argv[2]), argv[3:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
