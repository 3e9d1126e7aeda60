"""Two runs named for compare and gate: which history runs the names mean
(this checkout's, unless --all-checkouts), whether the two are alike
(checkout, catalogs, targets: kbench.results.identity) and whether their
folders hold what they say (kbench.results.integrity).

compare says loudly when the two differ; the gate refuses an unlike pair
(exit 2) unless --force, and refuses a damaged folder naming the verdict
rows it lacks."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from kbench.results.runfolder import Run

F = Callable[..., Any]


def all_checkouts_option(f: F) -> F:
    return click.option(
        "--all-checkouts", "all_checkouts", is_flag=True,
        help="latest, latest~N and commit prefixes count the history's runs of every "
             "checkout (the history is shared by every checkout of this user); by default "
             "only those of this checkout.")(f)


def force_option(f: F) -> F:
    return click.option(
        "--force", "force", is_flag=True,
        help="Gate two runs that differ in checkout, catalogs or targets (refused by "
             "default: their differences are not regressions).")(f)


def scope(all_checkouts: bool) -> str | None:
    """The checkout root history references resolve within (None: every one)."""
    if all_checkouts:
        return None
    from kbench.results.identity import checkout
    return checkout()["root"]


def unlike_lines(base: Run, cand: Run) -> list[str]:
    """How the two runs differ in checkout, catalogs or targets ([] if alike)."""
    from kbench.results.identity import differences
    return differences(base.meta, cand.meta)


def warn_unlike(base: Run, cand: Run) -> list[str]:
    """compare: each difference as a WARNING line on stderr, at once; returned
    for the comparison's own warnings (its text and JSON)."""
    lines = [f"BASE and CAND are not like runs: {d}" for d in unlike_lines(base, cand)]
    for line in lines:
        click.secho(f"WARNING: {line}", err=True, fg="red", bold=True)
    return lines


def check_gate_pair(base: Run, cand: Run, force: bool, refuse: Callable[[str], Exception]
                    ) -> list[str]:
    """The gate's checks before it judges: a damaged folder is refused naming
    the rows it lacks against the other run; an unlike pair is refused unless
    force (then its differences are returned, as warnings)."""
    from kbench.results.integrity import missing_line, missing_rows
    for hint, run, other, other_hint in (("BASE", base, cand, "CAND"),
                                         ("CAND", cand, base, "BASE")):
        if run.defects:
            gone = missing_rows(other, run)
            rows = f"; {missing_line(gone, other_hint, hint)}" if gone else ""
            raise refuse(f"{hint}: {run.path}: not gated: {'; '.join(run.defects)}{rows}")
    diffs = unlike_lines(base, cand)
    if diffs and not force:
        raise refuse("BASE and CAND are not like runs, so their differences are not "
                     f"regressions: {'; '.join(diffs)} (--force gates them anyway)")
    return [f"gated with --force although BASE and CAND differ: {d}" for d in diffs]


__all__ = ["all_checkouts_option", "check_gate_pair", "force_option", "scope",
           "unlike_lines", "warn_unlike"]
