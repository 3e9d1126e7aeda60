"""Comparing instruction counts exactly: two runs (the gate) or a run and
the committed baseline (reference/counts/baseline.csv).

Counts are deterministic, so no statistics: a case whose call (or B
packing) takes more than (1 + limit) times the base's instructions is a
regression, one that takes fewer is an improvement, equal counts are the
same. The delta names every phase that grew. Rows of one case that
disagree (several passes of a run with different counts) make the counts
of that case non-deterministic, which fails the gate too."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kbench.errors import KbenchError
from kbench.results.counts import COLUMNS, GATED
from kbench.targets.spec import parse_qemu

CountKey = tuple[str, str, str, str]  # target, catalog, case, realization
MORE, FEWER, SAME, MISSING, NEW = "more", "fewer", "same", "missing", "new"
DEFAULT_LIMIT = 0.005  # 0.5 %


@dataclass(frozen=True)
class CountDelta:
    key: CountKey
    base: Mapping[str, float]  # count column -> instructions (NaN: not counted)
    cand: Mapping[str, float]
    verdict: str
    nondeterministic: str = ""  # which run had rows of this case with different counts

    @property
    def label(self) -> str:
        target, catalog, case, realization = self.key
        return f"{target} {realization} {catalog + '/' if catalog else ''}{case}"

    def ratio(self, column: str = "count_call") -> float:
        b, c = self.base.get(column, math.nan), self.cand.get(column, math.nan)
        return c / b if b == b and c == c and b > 0 else math.nan

    def grown(self) -> list[tuple[str, float, float]]:
        """(phase, base, candidate) for every phase with more instructions."""
        out = []
        for col in COLUMNS:
            b, c = self.base.get(col, math.nan), self.cand.get(col, math.nan)
            if b == b and c == c and c > b:
                out.append((col.removeprefix("count_"), b, c))
        return out

    def worst(self) -> tuple[str, float]:
        """The gated column that grew most, and its ratio."""
        ratios = [(col, self.ratio(col)) for col in GATED]
        ratios = [(col, r) for col, r in ratios if r == r]
        return max(ratios, key=lambda x: x[1]) if ratios else ("count_call", math.nan)


@dataclass
class CountComparison:
    deltas: list[CountDelta] = field(default_factory=list)
    limit: float = DEFAULT_LIMIT

    def counted(self) -> list[CountDelta]:
        return [d for d in self.deltas if d.verdict in (MORE, FEWER, SAME)]

    def tally(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.deltas:
            out[d.verdict] = out.get(d.verdict, 0) + 1
        return out

    def regressions(self) -> list[CountDelta]:
        return [d for d in self.deltas if d.verdict == MORE and d.worst()[1] > 1 + self.limit]


def canonical_target(target: str) -> str:
    """"qemu:svl=512" -> "qemu:cpu=max:svl=512"; other targets unchanged."""
    if target == "qemu" or target.startswith("qemu:"):
        try:
            return parse_qemu(target).name
        except KbenchError:
            return target
    return target


def _field(row: Mapping[str, Any] | Any, name: str, default: Any = "") -> Any:
    return row.get(name, default) if isinstance(row, Mapping) else getattr(row, name, default)


def _value(row: Mapping[str, Any] | Any, col: str) -> float:
    v = _field(row, col, math.nan)
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def index_counts(rows: Iterable[Mapping[str, Any] | Any]
                 ) -> tuple[dict[CountKey, dict[str, float]], set[CountKey]]:
    """Counts per case (rows without a call count are skipped) and the cases
    whose rows disagree."""
    out: dict[CountKey, dict[str, float]] = {}
    unstable: set[CountKey] = set()
    for row in rows:
        if not _value(row, "count_call") > 0:
            continue
        key = (canonical_target(str(_field(row, "target"))), str(_field(row, "catalog")),
               str(_field(row, "case")), str(_field(row, "realization")))
        counts = {col: _value(row, col) for col in COLUMNS}
        if key in out:
            seen = out[key]
            if any(not (a == b or a != a and b != b) for a, b in
                   ((seen[c], counts[c]) for c in COLUMNS)):
                unstable.add(key)
            continue
        out[key] = counts
    return out, unstable


def compare_counts(base_rows: Iterable[Mapping[str, Any] | Any],
                   cand_rows: Iterable[Mapping[str, Any] | Any],
                   limit: float = DEFAULT_LIMIT) -> CountComparison:
    """Every counted case of either side: more, fewer, same, missing (in the
    base only) or new (in the candidate only)."""
    if limit < 0:
        raise ValueError(f"the count limit must be >= 0, got {limit}")
    base, b_unstable = index_counts(base_rows)
    cand, c_unstable = index_counts(cand_rows)
    deltas = []
    for key in [*base, *(k for k in cand if k not in base)]:
        b, c = base.get(key), cand.get(key)
        unstable = " and ".join(n for n, s in (("base", b_unstable), ("candidate", c_unstable))
                                if key in s)
        if b is None or c is None:
            deltas.append(CountDelta(key, b or {}, c or {}, NEW if b is None else MISSING,
                                     unstable))
            continue
        ratios = [c[col] / b[col] for col in GATED if b[col] == b[col] and c[col] == c[col]
                  and b[col] > 0]
        verdict = (MORE if any(r > 1 for r in ratios)
                   else FEWER if any(r < 1 for r in ratios) else SAME)
        deltas.append(CountDelta(key, b, c, verdict, unstable))
    return CountComparison(deltas, limit)


def failure_detail(d: CountDelta, limit: float) -> str:
    """"call +0.81% (limit 0.50%): kernel +1.2% (96,488 -> 97,646), ..."."""
    col, r = d.worst()
    grown = ", ".join(f"{phase} {c / b - 1:+.2%} ({b:,.0f} -> {c:,.0f})" if b else
                      f"{phase} +{c - b:,.0f}" for phase, b, c in d.grown())
    return (f"{col.removeprefix('count_')} {r - 1:+.2%} (limit {limit:.2%}) "
            f"instructions; grew: {grown or 'none'}")


def fmt_count(v: float) -> str:
    return "–" if v != v else f"{v:,.0f}"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _ratio(r: float) -> str:
    return "–" if r != r else f"{r:.4f} ({r - 1:+.2%})"


def markdown_table(comp: CountComparison, max_rows: int = 200) -> list[str]:
    """The counted cases as Markdown table lines, regressions first."""
    order = {MORE: 0, MISSING: 1, FEWER: 2, SAME: 3, NEW: 4}
    regressions = comp.regressions()
    rows = sorted(comp.deltas, key=lambda d: (d not in regressions, order.get(d.verdict, 5),
                                              -(d.ratio() if d.ratio() == d.ratio() else 0)))
    out = ["| target | realization | case | base call | candidate call | ratio | kernel ratio "
           "| pack_b ratio | phases that grew | verdict |",
           "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for d in rows[:max_rows]:
        target, _catalog, case, realization = d.key
        grown = ", ".join(f"{p} {c - b:+,.0f}" for p, b, c in d.grown()) or "–"
        verdict = "**regression**" if d in regressions else d.verdict
        out.append(f"| {_md(target)} | `{_md(realization)}` | {_md(case)} "
                   f"| {fmt_count(d.base.get('count_call', math.nan))} "
                   f"| {fmt_count(d.cand.get('count_call', math.nan))} "
                   f"| {_ratio(d.ratio())} | {_ratio(d.ratio('count_kernel'))} "
                   f"| {_ratio(d.ratio('count_pack_b'))} | {_md(grown)} | {verdict} |")
    if len(rows) > max_rows:
        out.append(f"\n… and {len(rows) - max_rows} more counted case(s).")
    return out
