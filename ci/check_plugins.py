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
    python ci/check_plugins.py paths RUN_FOLDER TARGET=PATH...
        the runtime-like example (exrt) ran with --coverage: on each TARGET the
        functions of its PATH (sme2, sve2p1, neon) executed and none of the other
        paths' functions did
    python ci/check_plugins.py overread RUN_FOLDER TARGET
        its planted defect libexrt_overread33.so was caught on TARGET: failed
        correctness verdicts, each an input-guard-page finding of a read 33 bytes
        past the end of B (32 are declared) in its gemm, by exrt_neon_gemm

Prints a one-line summary per target; exits 1 with the problems otherwise."""

from __future__ import annotations

import csv
import json
import re
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
        # the vector-length probes: B packed at a lower or higher SVL than the call's, and a
        # call at a lower or higher SVL than the packing's (svl_pack_lo ... svl_call_hi)
        if info.get("sme_vector_bits") and not wrong["probe"].str.startswith("svl_").any():
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


# the functions each path of the runtime example runs, and the prefixes of every path's
# functions (its SME2 path is kbench's SME2 kernel and packers compiled in: kb_*)
RUNTIME = "exrt"
PATH_UNITS = {"sme2": {"exrt_sme2_gemm",
                       "kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_run_matmul"},
              "sve2p1": {"exrt_sve2p1_gemm"}, "neon": {"exrt_neon_gemm"}}
PATH_PREFIXES = {"sme2": ("exrt_sme2_", "kb_matmul", "kb_lhs_", "kb_rhs_", "kb_sme"),
                 "sve2p1": ("exrt_sve2p1_",), "neon": ("exrt_neon_",)}
OVERREAD = re.compile(
    r"input guard page: read past the end of B\[0\]: byte \d+ of a \d+-byte buffer \(33 "
    r"byte\(s\) past its end read, 32 declared readable; the guard page starts 32 past its "
    r"end\) in its gemm at exrt_neon_gemm\+0x[0-9a-f]+ in libexrt_overread33\.so")


def paths(run: Path, pairs: list[str]) -> list[str]:
    problems = []
    meta = json.loads((run / "run.json").read_text())
    with open(run / "coverage.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if Path(r["owner"]).name == f"lib{RUNTIME}.so"]
    for pair in pairs:
        target, _, path = pair.rpartition("=")
        name = meta["targets"].get(target, {}).get("name", target)
        ran = {r["unit"] for r in rows if r["target"] == name and int(r["covered"]) > 0}
        missing = PATH_UNITS[path] - ran
        if missing:
            problems.append(f"{target}: the {path} path's {', '.join(sorted(missing))} never ran")
        other = sorted(u for p, prefixes in PATH_PREFIXES.items() if p != path for u in ran
                       if u.startswith(prefixes))
        if other:
            problems.append(f"{target}: other paths' functions ran: {', '.join(other)}")
        print(f"{target}: {RUNTIME} on its {path} path: "
              f"{', '.join(sorted(PATH_UNITS[path] & ran)) or 'none of that path'} executed "
              f"({len(ran)} of its functions ran" + ("" if other else ", none of another path")
              + ")")
    return problems


def overread(run: Path, target: str) -> list[str]:
    rows = _rows(run)
    mine = rows[(rows["target"] == target) & (rows["backend"] == f"plugin:{RUNTIME}_overread33")]
    failed = mine[mine["status"].isin(["fail", "error"])]
    found = [r for r in failed.itertuples() if OVERREAD.search(r.message)]
    problems = [] if found else [f"{target}: the 33-byte overread was not caught"]
    problems += [f"{target}: {r.case} {r.kind}: {r.status} but not the overread finding: "
                 f"{r.message}" for r in failed.itertuples() if not OVERREAD.search(r.message)]
    print(f"{target}: {RUNTIME}_overread33: {len(failed)} of {len(mine)} verdicts failed, "
          f"{len(found)} of them the guard-page finding of 33 bytes read past B in its gemm")
    return problems


def main(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if len(argv) >= 3 and argv[0] == "good":
        problems = good(Path(argv[1]), argv[2:])
    elif len(argv) >= 4 and argv[0] == "faulty":
        problems = faulty(Path(argv[1]), Path(argv[2]), argv[3:])
    elif len(argv) >= 3 and argv[0] == "paths" and all(
            a.rpartition("=")[2] in PATH_UNITS for a in argv[2:]):
        problems = paths(Path(argv[1]), argv[2:])
    elif len(argv) == 3 and argv[0] == "overread":
        problems = overread(Path(argv[1]), argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for p in problems:
        print(f"PROBLEM: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
