"""Does a run folder hold what it says it holds? results.csv against run.json
(rows missing, a row cut off, duplicated or extra rows: the reader's
`Run.defects`), and the verdict rows one run has and another lacks.

A report of a damaged folder must not look like a green run: it carries a
red banner saying what is wrong, and its "Correct?" answer says the rows
cannot be trusted. compare and gate name the rows one run lacks."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pandas as pd

from kbench.results.runfolder import IDENTITY

if TYPE_CHECKING:
    from kbench.results.report_views import Answer
    from kbench.results.runfolder import Run

ROW_KEY = [*IDENTITY, "perf_pass"]  # one verdict row (a perf case has one per pass)
SHOWN = 3  # rows named in a line; the rest are counted
DAMAGED = "damaged"  # the report's worst status for a folder whose rows disagree


def said_results(run: Run) -> int | None:
    """The result count run.json states (None when it states none)."""
    said = run.meta.get("results")
    return said if isinstance(said, int) and not isinstance(said, bool) else None


def banner(run: Run) -> list[str]:
    """The red banner's lines for a run whose results.csv disagrees with its
    run.json ([] when they agree): the headline, then each defect."""
    if not run.defects:
        return []
    said = said_results(run)
    held = len(run.results)
    if said is not None and said > held:
        head = (f"results.csv holds {held:,} of the {said:,} results run.json counts: "
                f"{said - held:,} are missing, and this report cannot show them")
    elif said is not None and said < held:
        head = (f"results.csv holds {held:,} rows, run.json counts {said:,} results: "
                f"{held - said:,} rows are extra")
    else:
        head = "results.csv is not what run.json describes"
    return [f"{head}. This page is not the run's answer: its verdicts cover only the rows "
            "that could be read.", *run.defects]


def amend_answers(worst: str, answers: list[Answer], run: Run) -> tuple[str, list[Answer]]:
    """The report header of a damaged folder: worst status "damaged" (unless
    something failed), and a "Correct?" answer that says the rows cannot
    answer it instead of a green "yes"."""
    if not run.defects:
        return worst, answers
    out = []
    for a in answers:
        if a.question == "Correct?" and a.cls == "pass":
            a = replace(a, text=f"cannot tell: {a.text[len('yes: '):]} that could be read "
                                "(results.csv disagrees with run.json)", cls="fail")
        out.append(a)
    return (worst if worst == "failed" else DAMAGED), out


def _keys(df: pd.DataFrame) -> pd.DataFrame:
    cols = {c: (df[c] if c in df.columns else pd.Series([""] * len(df), index=df.index))
            for c in ROW_KEY}
    return pd.DataFrame(cols).astype(str).drop_duplicates()


def label(row: pd.Series) -> str:
    what = f"{row['suite']} {row['target']} {row['realization']} {row['catalog']}/{row['case']}"
    kind = f" [{row['kind']}]" if row["kind"] else ""
    return what + kind + (f" pass {row['perf_pass']}" if str(row["perf_pass"]) not in
                          ("", "0") else "")


def missing_rows(have: Run, lack: Run) -> list[str]:
    """Labels of the verdict rows `have` holds and `lack` does not."""
    a, b = _keys(have.results), _keys(lack.results)
    if a.empty:
        return []
    gone = a.merge(b, on=ROW_KEY, how="left", indicator=True)
    gone = gone[gone["_merge"] == "left_only"]
    return [label(r) for _, r in gone.iterrows()]


def missing_line(labels: list[str], have: str, lack: str) -> str:
    """One line naming the first rows `lack` is missing and counting the rest."""
    shown = "; ".join(labels[:SHOWN])
    more = f"; and {len(labels) - SHOWN:,} more" if len(labels) > SHOWN else ""
    return f"{len(labels):,} verdict row(s) of {have} are not in {lack}: {shown}{more}"


def presence_notes(base: Run, cand: Run) -> list[str]:
    """compare's lines about rows one run has and the other lacks, and about
    either folder's damage (none when both hold the same rows, whole)."""
    out = []
    for name, run in (("BASE", base), ("CAND", cand)):
        for defect in run.defects:
            out.append(f"{name} {run.path}: {defect}")
    gone = missing_rows(base, cand)
    if gone:
        out.append(missing_line(gone, "BASE", "CAND"))
    new = missing_rows(cand, base)
    if new:
        out.append(missing_line(new, "CAND", "BASE"))
    return out


__all__ = ["DAMAGED", "ROW_KEY", "amend_answers", "banner", "missing_line", "missing_rows",
           "presence_notes", "said_results"]
