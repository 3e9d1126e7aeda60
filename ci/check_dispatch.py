#!/usr/bin/env python3
"""CI check of a run under a tuned dispatch table (ci/test.sh, step "perf suite").

    python ci/check_dispatch.py TABLE RUN_FOLDER TARGET

The table was tuned for TARGET (its fingerprint names TARGET's vector length), the run
holds dispatch verdicts on TARGET, every one passed (the suite's what-ran check: each
case ran the realization the table chose for it), and every realization that ran is one
of the table's rules. Prints a one-line summary; exits 1 with the problems otherwise."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd


def check(table_path: Path, run: Path, target: str) -> list[str]:
    table = json.loads(table_path.read_text())
    problems: list[str] = []
    rules = table.get("rules") or []
    if not rules:
        problems.append(f"{table_path}: no rules")
    chosen = {str(r.get("realization")) for r in rules}
    df = pd.read_csv(run / "results.csv", low_memory=False, keep_default_na=False)
    rows = df[(df["suite"] == "dispatch") & (df["target"] == target)]
    if rows.empty:
        problems.append(f"{run}: no dispatch verdicts on {target}")
    bad = rows[rows["status"] != "pass"]
    for row in bad.itertuples(index=False):
        problems.append(f"{row.case} [{row.kind}]: {row.status} {row.message}")
    stray = sorted(set(rows["realization"].astype(str)) - chosen)
    if stray:
        problems.append(f"realizations ran that no rule chose: {', '.join(stray)}")
    if not problems:
        print(f"{target}: {len(rows)} dispatch verdicts passed under {len(rules)} rules, "
              f"{rows['realization'].nunique()} realizations "
              f"(vector bits {table.get('fingerprint', {}).get('sme_vector_bits')})")
    return problems


def main(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    problems = check(Path(argv[0]), Path(argv[1]), argv[2])
    for p in problems:
        print(f"dispatch check: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
