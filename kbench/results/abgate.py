"""The regression gate's speed verdicts from interleaved runs (`kbench
gate BASE CAND --ab AB [--ab SETTLED ...]`).

Two runs measured apart differ by whatever changed on the machine between
them, and within a run rounds share the machine's state, so rounds are not
independent samples of a build's speed. `kbench ab` times base and
candidate builds interleaved, round against round in a randomized order,
in the same moments; drift and background load are shared by both sides
of each pair and cancel in the paired ratio. With `--ab`, the gate takes
its speed verdicts from such runs only: each case's paired rounds are
judged again at the gate's own limit and alpha (abstats.paired: the
sign-test interval of the median paired ratio, Bonferroni over the cases
of the folder and the looks each could take, and the ratio of minima),
named by what the interval shows at the limit (slower, inconclusive, not
slower, same, faster: the words of `kbench ab`, which judges at the same
limit by default). Only "slower" fails; an "inconclusive" case (its
interval straddles 1 + the limit, or its minima or blocks disagree) is
listed with the one command that settles it (`kbench ab --settle`, a
bounded budget, its own folder), a failure only under --strict. Several
folders may be given: the later one's verdict wins per case, so "settle,
then gate again with both folders" decides the case; timed cases that no
folder judged are listed as unjudged. A case that failed to verify in an
interleaved run is a correctness failure; an interleaved run that did not
complete fails the gate. The two separate runs still decide correctness,
presence, instruction counts and completeness; their times are not
compared."""

from __future__ import annotations

import csv
import json
import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbench.results.abstats import (
    FASTER,
    INCONCLUSIVE,
    NOT_SLOWER,
    SAME,
    SLOWER,
    PairedStats,
    paired,
)
from kbench.results.csvcells import any_length

__all__ = ["FASTER", "INCONCLUSIVE", "NOT_SLOWER", "SAME", "SLOWER"]
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

    @property
    def settling(self) -> bool:
        """A run of `kbench ab --settle`: its undecided cases stay undecided
        (inconclusive at the limit), no further command is offered."""
        return bool((self.meta.get("settings") or {}).get("settle"))

    @property
    def limit(self) -> float:
        """The limit `kbench ab` judged this run at (NaN: not recorded)."""
        value = (self.meta.get("settings") or {}).get("min_effect")
        try:
            return float(value)
        except (TypeError, ValueError):
            return math.nan


@dataclass(frozen=True)
class AbVerdict:
    """One case of the interleaved run, judged at the gate's limit."""

    label: str  # realization catalog/case
    verdict: str  # slower | inconclusive | not slower | same | faster | failed | untimed
    stats: PairedStats | None
    detail: str
    source: str = ""  # the interleaved run folder it comes from
    settled: bool = False  # from a `kbench ab --settle` run: no further command

    @property
    def at_the_limit(self) -> bool:
        """Inconclusive after settling: the case sits on the limit."""
        return self.settled and self.verdict == INCONCLUSIVE


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
        detail = s.describe(max_slowdown)
        if ab.settling and s.verdict == INCONCLUSIVE:
            detail = (f"inconclusive at the limit after settling ({s.rounds} rounds): "
                      f"{s.reason}")
        out[i] = AbVerdict(label, s.verdict, s, detail)
    return [replace(v, source=str(ab.path), settled=ab.settling)
            for v in out if v is not None]


def judge_all(runs: Sequence[AbRun], max_slowdown: float, alpha: float) -> list[AbVerdict]:
    """Every case of the interleaved runs, each run judged on its own (its
    own Bonferroni family); where several judged a case, the later run's
    verdict wins. In the order the cases were first met."""
    merged: dict[str, AbVerdict] = {}
    for ab in runs:
        for v in judge_ab(ab, max_slowdown, alpha):
            merged[v.label] = v
    return list(merged.values())


SETTLE_BUDGET_S = 240.0  # seconds per case pair: the settle run's bound
SETTLE_LOOKS = 8  # stages of --rounds pairs it may take within that budget
SETTLE_DIR = "runs/settle"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-") or "case"


def settle_command(base: str, cand: str, label: str, limit: float, rounds: int = 60) -> str:
    """The one command that settles one case pair (`realization
    catalog/case`): `kbench ab --settle` on that realization and case only,
    at the gate's limit, sequential within a bounded budget
    (SETTLE_BUDGET_S, at most SETTLE_LOOKS stages), into its own folder.
    It converges: a case still undecided at the end is reported as
    inconclusive at the limit, with its interval, and no new command."""
    realization, where = label.split(" ", 1)
    catalog = where.rsplit("/", 1)[0]  # a case name holds no "/", a catalog's name may
    cmd = ["kbench", "ab", "--base", base, "--cand", cand, "--shapes", catalog,
           "-k", "^" + re.escape(where) + "$", "--realization", realization,
           "--min-effect", f"{limit * 100:g}%", "--rounds", str(rounds),
           "--budget", f"{SETTLE_BUDGET_S:g}", "--max-looks", str(SETTLE_LOOKS), "--settle",
           "--out", f"{SETTLE_DIR}/{_slug(realization)}-{_slug(where)}"]
    return shlex.join(cmd)


def settle_commands(verdicts: Sequence[AbVerdict], runs: Sequence[AbRun], limit: float
                    ) -> list[str]:
    """One settle command per inconclusive case that was not already
    settled (a settled one sits on the limit: more commands would not end)."""
    by_path = {str(r.path): r for r in runs}
    out = []
    for v in verdicts:
        if v.verdict != INCONCLUSIVE or v.settled:
            continue
        ab = by_path.get(v.source)
        meta = ab.meta if ab is not None else {}
        rounds = int((meta.get("settings") or {}).get("rounds") or 60)
        out.append(settle_command(str(meta.get("base") or "BASE"),
                                  str(meta.get("cand") or "CAND"), v.label, limit, rounds))
    return out


def ratio_text(v: AbVerdict) -> str:
    s = v.stats
    if s is None or math.isnan(s.median_ratio):
        return "–"
    ci = "" if math.isnan(s.ci_low) else f" [{s.ci_low:.3f}, {s.ci_high:.3f}]"
    return f"{s.median_ratio:.3f}{ci}"
