"""CI's coverage gate: the machine-code coverage of our kernels and packers
(`kbench run --coverage`, RUN/coverage.csv) on the named targets must not
drop below the committed floor (ci/coverage_floor.toml): per target and
unit, the percent of instructions executed, functions marked KB_NOT_DRIVEN
apart; and over both targets together (the same worker binary: an
instruction is covered when either SVL ran it, as code that only one vector
length takes, e.g. the SME RHS packer's segment loop at SVL 512 and up).
Every kernel and packer must be at 100% over both, whatever the floor says,
but for the instructions ci/coverage_exceptions.toml lists with the reason no
valid call can execute them (per unit: how many, exactly, and why; a count
that no longer matches fails, so an exception cannot hide a new gap). A unit
the floor lists that the run does not report, or one it reports that the
floor does not list, fails too (the floor is rewritten
with --update after a kernel change, like the count baseline).

    python ci/check_coverage.py RUN [--floor ci/coverage_floor.toml]
        [--exceptions ci/coverage_exceptions.toml] [--update]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import tomllib
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGETS = ("qemu:cpu=max:svl=128", "qemu:cpu=max:svl=512")
BOTH = " + ".join(TARGETS)  # the floor table of the union
_RANGE = re.compile(r"^(\S+)\+0x([0-9a-f]+)\.\.\+0x([0-9a-f]+) \(\d+ insn\)$")


def uncovered(row: dict[str, str]) -> set[tuple[str, int]]:
    """(function, offset) of every instruction the row lists as never run."""
    out: set[tuple[str, int]] = set()
    for part in filter(None, (p.strip() for p in row["uncovered"].split(";"))):
        m = _RANGE.match(part)
        if m is None:
            raise SystemExit(f"coverage: cannot read the uncovered range {part!r}")
        out |= {(m.group(1), o) for o in range(int(m.group(2), 16), int(m.group(3), 16), 4)}
    return out


def union(rows: dict[tuple[str, str], dict[str, str]]) -> dict[tuple[str, str], dict[str, str]]:
    """Per unit, the coverage over every target that reports it: an
    instruction is uncovered only where no target ran it."""
    units = sorted({u for _, u in rows})
    out = {}
    for unit in units:
        have = [rows[(t, unit)] for t in TARGETS if (t, unit) in rows]
        if len(have) != len(TARGETS):
            continue
        missing = set.intersection(*(uncovered(r) for r in have))
        total = int(have[0]["instructions"])
        covered = total - len(missing)
        out[(BOTH, unit)] = {
            "target": BOTH, "unit": unit, "backend": have[0]["backend"],
            "instructions": str(total), "covered": str(covered),
            "percent": f"{100.0 * covered / total if total else 100.0:.2f}",
            "uncovered": "; ".join(f"{f}+{o:#x} (1 insn)" for f, o in sorted(missing))}
    return out


def load(run: Path) -> dict[tuple[str, str], dict[str, str]]:
    with open(run / "coverage.csv", newline="") as fh:
        rows = {(r["target"], r["unit"]): r for r in csv.DictReader(fh)
                if r["owner"] == "kbench" and r["target"] in TARGETS}
    return rows | union(rows)


def write_floor(path: Path, rows: dict[tuple[str, str], dict[str, str]]) -> None:
    lines = ["# Written by `python ci/check_coverage.py RUN --update` from CI's coverage run",
             "# (kbench run --coverage over the default correctness catalogs and their derived",
             "# tails at SVL 128 and 512); the percent of each kernel's and packer's",
             "# instructions executed, per target and over both (an instruction either SVL",
             "# ran).",
             f'# {date.today().isoformat()}', ""]
    for target in (*TARGETS, BOTH):
        lines.append(f'["{target}"]')
        for (t, unit), r in sorted(rows.items()):
            if t == target:
                lines.append(f'{unit} = {float(r["percent"]):.2f}')
        lines.append("")
    path.write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--floor", type=Path, default=HERE / "coverage_floor.toml")
    ap.add_argument("--exceptions", type=Path, default=HERE / "coverage_exceptions.toml")
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    rows = load(args.run)
    if not rows:
        print(f"coverage: {args.run}/coverage.csv has no unit of ours on {', '.join(TARGETS)}")
        return 1
    if args.update:
        write_floor(args.floor, rows)
        print(f"coverage: floor written to {args.floor} ({len(rows)} units)")
        return 0
    floor = tomllib.loads(args.floor.read_text())
    exceptions = tomllib.loads(args.exceptions.read_text()) if args.exceptions.exists() else {}
    bad, excepted = [], []
    for target in (*TARGETS, BOTH):
        want = floor.get(target, {})
        have = {u: r for (t, u), r in rows.items() if t == target}
        for unit in sorted(set(want) | set(have)):
            if unit not in have:
                bad.append(f"{target} {unit}: in the floor, not in the run")
                continue
            r = have[unit]
            pct = float(r["percent"])
            line = f"{target} {unit:<62} {r['covered']:>5}/{r['instructions']:<5} {pct:6.2f}%"
            if unit not in want:
                bad.append(f"{line}: not in the floor (python ci/check_coverage.py RUN --update)")
            elif pct < float(want[unit]) - 1e-9:
                bad.append(f"{line}: below the floor {float(want[unit]):.2f}% "
                           f"(uncovered: {r['uncovered']})")
            elif target == BOTH and (pct < 100.0 or unit in exceptions):
                missing = int(r["instructions"]) - int(r["covered"])
                exc = exceptions.get(unit)
                if exc is None:
                    bad.append(f"{line}: a {r['backend'] or 'kbench'} unit below 100% over both "
                               f"targets (uncovered: {r['uncovered']}; run folder "
                               "coverage_uncovered.txt)")
                elif int(exc["uncovered"]) != missing:
                    bad.append(f"{line}: {missing} instruction(s) uncovered, the exception in "
                               f"{args.exceptions.name} lists {exc['uncovered']} "
                               f"(uncovered: {r['uncovered']})")
                else:
                    print(f"{line}  (excepted: {missing} insn)")
                    excepted.append(f"{unit}: {missing} instruction(s), "
                                    f"{' '.join(exc['reason'].split())}")
            else:
                print(line)
    for e in excepted:
        print(f"excepted {e}")
    for b in bad:
        print(f"FAILED {b}")
    print(f"coverage: {len(rows)} units on {', '.join(TARGETS)} and over both; "
          + ("PASSED" if not bad else f"{len(bad)} below the floor or unlisted"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
