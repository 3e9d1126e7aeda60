"""The regression gate's speed verdicts from an interleaved run (`kbench
gate BASE CAND --ab AB`).

Two runs measured apart differ by whatever changed on the machine between
them, and within a run rounds share the machine's state, so rounds are not
independent samples of a build's speed. `kbench ab` times base and
candidate builds interleaved, round against round in a randomized order,
in the same moments; drift and background load are shared by both sides
of each pair and cancel in the paired ratio. With `--ab`, the gate takes
its speed verdicts from such a run only: each case's paired rounds are
judged again at the gate's own limit and alpha (abstats.paired: the
sign-test interval of the median paired ratio, Bonferroni over the cases
timed, and the ratio of minima), so a slowdown fails only when the whole
interval lies beyond 1 + the limit. A case whose interval is too wide to
tell is inconclusive: listed with the command that settles it, a failure
only under --strict. A case that failed to verify in the interleaved run
is a correctness failure; an interleaved run that did not complete fails
the gate. The two separate runs still decide correctness, presence,
instruction counts and completeness; their times are not compared."""

from __future__ import annotations

import csv
import json
import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.results.abstats import FASTER, NOISY, SAME, SLOWER, TOO_FEW, PairedStats, paired
from kbench.results.csvcells import any_length

INCONCLUSIVE = "inconclusive"
FAILED = "failed"
UNTIMED = "untimed"


class AbRunError(ValueError):
    """The folder is not a usable `kbench ab` run."""


@dataclass(frozen=True)
class AbRun:
    path: Path
    meta: dict[str, Any]
    rows: list[dict[str, str]]

    @property
    def complete(self) -> bool:
        return bool(self.meta.get("complete"))


@dataclass(frozen=True)
class AbVerdict:
    """One case of the interleaved run, judged at the gate's limit."""

    label: str  # realization catalog/case
    verdict: str  # slower | faster | same | inconclusive | failed | untimed
    stats: PairedStats | None
    detail: str


def load_ab(path: str | Path) -> AbRun:
    """An interleaved run folder (run.json of kind "ab" and ab.csv)."""
    folder = Path(path)
    try:
        meta = json.loads((folder / "run.json").read_text())
    except FileNotFoundError:
        raise AbRunError(f"{folder}: no run.json (not a `kbench ab` run folder)") from None
    except (OSError, ValueError) as exc:
        raise AbRunError(f"{folder}/run.json: unreadable ({exc})") from None
    if not isinstance(meta, dict) or meta.get("kind") != "ab":
        kind = meta.get("kind") if isinstance(meta, dict) else None
        raise AbRunError(f"{folder}: a run of kind {kind or 'run'!r}, not an interleaved "
                         "`kbench ab` run")
    rows: list[dict[str, str]] = []
    if (folder / "ab.csv").is_file():
        with (folder / "ab.csv").open(newline="") as fh, any_length():
            rows = list(csv.DictReader(fh))
    elif meta.get("complete"):
        raise AbRunError(f"{folder}: complete but without ab.csv")
    for i, r in enumerate(rows, 2):
        missing = [c for c in ("catalog", "case", "realization", "verdict") if r.get(c) is None]
        if missing:
            raise AbRunError(f"{folder}/ab.csv line {i}: no {', '.join(missing)} column")
    return AbRun(folder, meta, rows)


def _times(text: str | None) -> list[float]:
    """A row's round times; none for an empty or malformed field."""
    if not text:
        return []
    try:
        return [float(t) for t in text.split()]
    except ValueError:
        return []


def _blocks(text: str | None) -> list[int] | None:
    """A row's rounds per block of fresh processes (None: one block, or a
    run that did not record them); a malformed entry is none at all: []."""
    if not text or not text.strip():
        return None
    try:
        out = [int(x) for x in text.split()]
    except ValueError:
        return []
    return out if all(b > 0 for b in out) else []


def judge_ab(ab: AbRun, max_slowdown: float, alpha: float) -> list[AbVerdict]:
    """Every case of the interleaved run, judged at the gate's limit (the
    paired ratio's interval must lie beyond 1 +- max_slowdown) and alpha
    (Bonferroni over the cases with paired rounds, and over the looks each
    could take where the run was sequential)."""
    timed = []
    out: list[AbVerdict | None] = []
    for r in ab.rows:
        label = f"{r['realization']} {r['catalog']}/{r['case']}"
        base, cand = _times(r.get("base_round_times_ns")), _times(r.get("cand_round_times_ns"))
        if r.get("failure") or r.get("verdict") == FAILED:
            out.append(AbVerdict(label, FAILED, None, r.get("failure") or "failed to verify"))
        elif not base or len(base) != len(cand):
            out.append(AbVerdict(label, UNTIMED, None, "no paired rounds"))
        elif (blocks := _blocks(r.get("blocks"))) is not None and sum(blocks) != len(base):
            out.append(AbVerdict(label, UNTIMED, None,
                                 f"its blocks ({r.get('blocks')}) do not add up to its "
                                 f"{len(base)} rounds"))
        else:
            timed.append((len(out), label, base, cand, blocks))
            out.append(None)
    settings = ab.meta.get("settings") or {}
    looks = int(settings.get("looks") or 1)  # a sequential run (kbench ab --budget)
    m = max(len(timed), int(settings.get("cases") or 0)) * looks if looks > 1 else len(timed)
    for i, label, base, cand, blocks in timed:
        s = paired(base, cand, min_effect=max_slowdown, alpha=alpha, comparisons=m,
                   blocks=blocks)
        verdict = s.verdict if s.verdict in (SLOWER, FASTER, SAME) else INCONCLUSIVE
        if s.verdict == NOISY and s.block_ratios and (s.ci_low > 1 + max_slowdown
                                                     or s.ci_high < 1 - max_slowdown):
            why = "its blocks of fresh processes disagree: a layout effect, not the build"
            out[i] = AbVerdict(label, verdict, s, f"{s.describe(max_slowdown)} ({why})")
            continue
        why = {NOISY: "the interval is too wide to tell, or the minima disagree",
               TOO_FEW: "too few rounds for the interval"}.get(s.verdict)
        out[i] = AbVerdict(label, verdict, s, s.describe(max_slowdown)
                           + (f" ({why})" if why else ""))
    return [v for v in out if v is not None]


def settle_command(ab: AbRun, verdicts: Sequence[AbVerdict] = ()) -> str:
    """The command that re-measures the interleaved run with twice the rounds
    (and, for a sequential run, twice the budget, its looks and gate limits)
    — only the cases of `verdicts` when given: their catalogs, their
    realizations and a -k that matches exactly their CATALOG/CASE."""
    s = ab.meta.get("settings") or {}
    rounds = int(s.get("rounds") or 60)
    cmd = ["kbench", "ab", "--base", str(ab.meta.get("base") or "BASE"),
           "--cand", str(ab.meta.get("cand") or "CAND")]
    if verdicts:
        named = [v.label.split(" ", 1) for v in verdicts]
        # CATALOG/CASE: a case name holds no "/", a catalog's name may
        for catalog in sorted({where.rsplit("/", 1)[0] for _, where in named}):
            cmd += ["--shapes", catalog]
        cmd += ["-k", "^(" + "|".join(re.escape(w) for w in sorted({w for _, w in named}))
                + ")$"]
        for realization in sorted({r for r, _ in named}):
            cmd += ["--realization", realization]
    cmd += ["--rounds", str(2 * rounds)]
    if s.get("budget_s"):
        cmd += ["--budget", f"{2 * float(s['budget_s']):g}",
                "--max-looks", str(int(s.get("looks") or 6))]
        cmd += [a for g in s.get("gate_limits") or () for a in ("--gate-limit", f"{g:g}")]
    return shlex.join(cmd)


def ratio_text(v: AbVerdict) -> str:
    s = v.stats
    if s is None or math.isnan(s.median_ratio):
        return "–"
    ci = "" if math.isnan(s.ci_low) else f" [{s.ci_low:.3f}, {s.ci_high:.3f}]"
    return f"{s.median_ratio:.3f}{ci}"
