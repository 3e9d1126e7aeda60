#!/usr/bin/env python3
"""Prints the `kbench run` options of a gate configuration's [ci] table
(`--shapes X ... --passes N`), for the sample workflow's perf step:

    args=$(python ci/gate_args.py "$cfg")

(A Python one-liner inside a single-quoted shell string cannot quote its
own strings; this script is what the workflow runs instead.)"""

from __future__ import annotations

import shlex
import sys
import tomllib


def run_args(config: dict) -> list[str]:
    ci = config.get("ci", {})
    args: list[str] = []
    for s in ci.get("shapes", []):
        args += ["--shapes", str(s)]
    args += ["--passes", str(int(ci.get("passes", 1)))]
    return args


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: gate_args.py GATE_TOML", file=sys.stderr)
        return 2
    try:
        with open(argv[1], "rb") as f:
            config = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        print(f"gate_args.py: {argv[1]}: {exc}", file=sys.stderr)
        return 2
    print(shlex.join(run_args(config)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
