"""The report's HTML building blocks: a formatted cell per value by its
column's meaning, tables of such cells (kbench.results.report places them
on the page), figures as PNG data URIs, and the colours of the series."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from kbench.judge import fingerprint as fprint
from kbench.judge.numbers import fixed, sig, time_unit
from kbench.results import report_counts as rcount
from kbench.results import report_views as views

NA = "n/a"  # a time that was not measured (a NaN median)



@dataclass
class Plot:
    title: str
    uri: str  # data:image/png;base64,...
    caption: str = ""


def figure_uri(fig: Figure) -> str:
    """The figure as a PNG data URI."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def series_colors(names: Sequence[str]) -> dict[str, Any]:
    """A fixed colour per series name (the same in every plot): one hue per
    realization family, its blocked variants in shades of it, peers in their
    own hues, "best per shape" near black (kbench.results.report_views)."""
    return views.family_colors(names)


def legend_below(fig: Figure, ax: Any) -> None:
    """A figure-wide legend under the axes, in as many columns as fit inside
    the figure (long realization names get fewer)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        width = int(fig.get_figwidth() / 12 * 140)
        fig.legend(handles, labels, loc="outside lower center",
                   ncol=views.legend_columns(labels, width), fontsize="small", frameon=False)


@dataclass
class Cell:
    text: str
    cls: str = ""


@dataclass
class HtmlTable:
    columns: list[str]
    rows: list[list[Cell]] = field(default_factory=list)
    caption: str = ""


WRAP_AT = 60  # characters: longer texts wrap instead of widening the table


def _fmt_time(ns: float) -> str:
    return time_unit(ns)


BETTER, WORSE = 1.05, 1 / 1.05  # speedups outside these are highlighted


def format_cell(col: str, value: Any) -> Cell:
    """Format one value by its column's meaning. A missing time (a NaN median:
    the timing gave none) reads n/a, any other missing number –."""
    if col == "noisy" and isinstance(value, bool | np.bool_):
        return Cell("NOISY", "worse") if value else Cell("")
    if isinstance(value, bool | np.bool_):
        return Cell("yes" if value else "no")
    if value is None or (isinstance(value, float | np.floating) and not np.isfinite(value)):
        return Cell(NA if col.endswith("_ns") else "–", "num na")
    if isinstance(value, int | np.integer):
        return Cell(str(value), "num")
    if isinstance(value, float | np.floating):
        v = float(value)
        if col.endswith("_ns"):
            return Cell(_fmt_time(v), "num")
        if col.startswith("speedup"):
            cls = "num better" if v > BETTER else "num worse" if v < WORSE else "num"
            return Cell(f"{v:.2f}×", cls)
        if col == "time_change":
            cls = "num worse" if v > 1 / WORSE - 1 else "num better" if v < WORSE - 1 else "num"
            return Cell(f"{v:+.1%}", cls)
        if col in ("cv", "min_exact_fraction", "kill_rate"):
            return Cell(f"{v:.1%}", "num")
        if col == "accum_match":
            return Cell(fprint.percent(v), "num")
        if col == "count_efficiency":
            return Cell(f"{v:.1%}", "num")
        if col.endswith("_ratio") or col.startswith("ratio"):  # counts: above 1 is more
            return Cell(fixed(v, 3), "num worse" if v > 1.005 else "num better" if v < 0.995
                        else "num")
        if col.startswith(("count_", "kernel_")) or col in rcount.COUNT_NUMBERS:
            return Cell(f"{v:,.0f}", "num")
        return Cell(sig(v, 4), "num")
    text = str(value)
    if col in ("status", "verdict"):
        return Cell(text, text)
    if col == "category":
        return Cell(text, f"accum-{text}")
    return Cell(text, "wrap" if len(text) > WRAP_AT else "")


def html_table(df: pd.DataFrame, columns: Sequence[str] | None = None, caption: str = "",
               limit: int | None = None,
               row_class: Callable[[pd.Series], str] | None = None) -> HtmlTable:
    """A frame as rows of formatted cells. A "target" column is left out when
    every row has the same target."""
    cols = list(columns if columns is not None else df.columns)
    if "target" in cols and df["target"].nunique() <= 1:
        cols.remove("target")
    shown = df if limit is None else df.head(limit)
    table = HtmlTable(cols, caption=caption)
    for _, row in shown.iterrows():
        cells = [format_cell(c, row[c]) for c in cols]
        if row_class is not None and (extra := row_class(row)):
            cells = [Cell(c.text, f"{c.cls} {extra}".strip()) for c in cells]
        table.rows.append(cells)
    if limit is not None and len(df) > limit:
        cut = f"first {limit} of {len(df)} rows; all of them in the CSV"
        table.caption = f"{caption}; {cut}" if caption else cut
    return table

