#!/usr/bin/env python3
"""Prints the `kbench run` options of a gate configuration's [ci] table
(`--shapes X ... --passes N`), for the sample workflow's perf step, or
with --ab the `kbench ab` options (`--shapes X ... --rounds N --budget S
--max-looks L --processes P`, those the table sets; `--min-effect` the
[gate] table's max_slowdown, and with a budget `--gate-limit` too) of its interleaved timing
step:

    args=$(python ci/gate_args.py "$cfg")
    ab_args=$(python ci/gate_args.py --ab "$cfg")

(A Python one-liner inside a single-quoted shell string cannot quote its
own strings; this script is what the workflow runs instead.)"""

from __future__ import annotations

import shlex
import sys
import tomllib


def run_args(config: dict, ab: bool = False) -> list[str]:
    ci = config.get("ci", {})
    args: list[str] = []
    for s in ci.get("shapes", []):
        args += ["--shapes", str(s)]
    if ab:
        for key, option in (("ab_rounds", "--rounds"), ("ab_budget", "--budget"),
                            ("ab_max_looks", "--max-looks"), ("ab_processes", "--processes")):
            if key in ci:
                args += [option, f"{float(ci[key]):g}" if key == "ab_budget"
                         else str(int(ci[key]))]
        limit = config.get("gate", {}).get("max_slowdown")
        if limit is not None:  # verdicts at the gate's own limit: one set of words
            args += ["--min-effect", str(limit)]
        if "ab_budget" in ci and limit is not None:
            # sample until each case is decided at the gate's own limit as well
            args += ["--gate-limit", str(limit)]
        return args
    args += ["--passes", str(int(ci.get("passes", 1)))]
    return args


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    ab = len(argv) == 3 and argv[1] == "--ab"
    if ab:
        argv = [argv[0], argv[2]]
    if len(argv) != 2:
        print("usage: gate_args.py [--ab] GATE_TOML", file=sys.stderr)
        return 2
    try:
        with open(argv[1], "rb") as f:
            config = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"gate_args.py: {argv[1]}: {exc}", file=sys.stderr)
        return 2
    print(shlex.join(run_args(config, ab)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
