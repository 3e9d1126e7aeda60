#!/usr/bin/env python3
"""Writes the dated record of a generated-mutant campaign (ci/mutmut.sh):
its score from mutmut's own statistics, and every survivor either grouped
under the reason it survives (the rules in ci/mutmut_equivalent.json: per
reason, the mutant names it covers) or listed as unexplained — the list a
campaign leaves to triage. A rule's kind says what the reason is:
"equivalent" (the default: no input tells the mutant from the code) or
"presentation" (it changes only how a page, chart or message looks — a
colour, a width, a word — never a verdict, a figure, or which rows appear;
the suites do not pin such choices, and the record says so apart).

    python ci/mutmut_record.py build/mutmut --package kbench/judge \\
        --command "bash ci/mutmut.sh kbench/judge" --out docs/records/mutmut_judge.toml

docs/gen/kbdocs.py reads the record (README and docs/mutation.md); a rule
that matches no survivor is reported (a mutant it named was killed since,
or renumbered: check it).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def mutmut(work: Path, *args: str) -> str:
    res = subprocess.run(["mutmut", *args], cwd=work, capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"mutmut_record: mutmut {' '.join(args)} failed in {work}:\n{res.stderr[-2000:]}")
    return res.stdout


def statuses(work: Path) -> dict[str, str]:
    """mutant name -> status, for every mutant mutmut did not kill."""
    out = {}
    for line in mutmut(work, "results").splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            out[name] = status
    return out


def classify(survivors: list[str], rules: list[dict]) -> tuple[list[dict], list[str], list[str]]:
    """(groups of explained survivors, unexplained survivors, rules that matched none)."""
    groups = [{"reason": r["reason"], "kind": r.get("kind", "equivalent"), "mutants": []}
              for r in rules]
    left = []
    for name in survivors:
        for rule, group in zip(rules, groups, strict=True):
            if any(re.search(p, name) for p in rule["names"]):
                group["mutants"].append(name)
                break
        else:
            left.append(name)
    idle = [g["reason"] for g in groups if not g["mutants"]]
    return [g for g in groups if g["mutants"]], left, idle


def toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("work", type=Path, help="the campaign's work folder (MUTMUT_WORK)")
    p.add_argument("--package", required=True, help="what was mutated, as the table shows it")
    p.add_argument("--command", required=True, help="the command that ran the campaign")
    p.add_argument("--rules", type=Path, default=REPO / "ci" / "mutmut_equivalent.json")
    p.add_argument("--note", default="", help="how it ran (suites, time box, ...)")
    p.add_argument("--summary", default="", help="a paragraph above the groups")
    p.add_argument("--commit", default="",
                   help="the commit the campaign ran at (default: this checkout's HEAD)")
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    mutmut(a.work, "export-cicd-stats")
    stats = json.loads((a.work / "mutants" / "mutmut-cicd-stats.json").read_text())
    st = statuses(a.work)
    survivors = sorted(n for n, s in st.items() if s == "survived")
    not_run = sum(s == "not checked" for s in st.values())
    rules = json.loads(a.rules.read_text())
    groups, left, idle = classify(survivors, rules)
    for reason in idle:
        print(f"mutmut_record: no survivor matches the rule {reason!r}", file=sys.stderr)
    killed = int(stats["killed"]) + int(stats.get("timeout", 0))
    if killed + len(survivors) + int(stats["no_tests"]) + not_run != int(stats["total"]):
        sys.exit(f"mutmut_record: the counts do not add up: {stats}, {not_run} not run")
    commit = a.commit or subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=REPO,
                                        capture_output=True, text=True).stdout.strip()
    lines = ["# A dated record read by docs/gen/kbdocs.py, written by ci/mutmut_record.py: a",
             "# generated-mutant campaign (ci/mutmut.sh), its score and every survivor's triage.",
             ""]
    summary = a.summary or (
        f"{a.package}: {int(stats['total']):,} generated mutants; {killed:,} killed "
        f"({int(stats.get('timeout', 0))} of them by timeout), {len(survivors)} survived, "
        f"{int(stats['no_tests'])} in code that none of the suites run"
        + (f", {not_run:,} not run" if not_run else "") + ".")
    lines += [f"summary = {toml_str(summary)}", f"unexplained = {json.dumps(left)}", "",
              "[score]", f"package = {toml_str(a.package)}", f"mutants = {int(stats['total'])}",
              f"killed = {killed}", f"survived = {len(survivors)}",
              f"not_reached = {int(stats['no_tests'])}", f"not_run = {not_run}", "",
              "[record]", f"date = {toml_str(time.strftime('%Y-%m-%d'))}",
              f"commit = {toml_str(commit)}", 'machine = "a 2-core x86_64 VM"',
              f"command = {toml_str(a.command)}", f"note = {toml_str(a.note)}", ""]
    for g in groups:
        lines += [f"[[{g['kind']}]]", f"reason = {toml_str(g['reason'])}",
                  f"mutants = {json.dumps(g['mutants'])}", ""]
    a.out.write_text("\n".join(lines))
    print(f"{a.out}: {len(survivors)} survivors, {len(survivors) - len(left)} explained, "
          f"{len(left)} unexplained")
    return 0


if __name__ == "__main__":
    sys.exit(main())
