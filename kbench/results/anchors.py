"""Peer anchor tables: instruction counts another library's kernels were
measured at (reference/counts/kleidiai_v1.30.toml: Arm KleidiAI v1.30;
reference/counts/kleidiai_sweep.toml: KleidiAI's v1.30 and newer SME2
kernels on the comparison sweep; reference/counts/kleidiai_sve_sweep.toml:
its SVE2.1 kernel there, one call over the whole problem, at SVE vector
lengths; each with the source commit and build flags),
and the ratio of our counts to them on the shapes both cover; per shape the
best anchor (the fewest instructions) and our outer products against their
floor. The numbers are the peer's, never credited as ours."""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.errors import KbenchError
from kbench.resources import resource_dir
from kbench.results.counts import parse_mix

# in the checkout reference/counts/, in an installed package kbench/reference/counts/
DEFAULT_TABLE = resource_dir("reference") / "counts" / "kleidiai_v1.30.toml"
SWEEP_TABLE = resource_dir("reference") / "counts" / "kleidiai_sweep.toml"
SVE_SWEEP_TABLE = resource_dir("reference") / "counts" / "kleidiai_sve_sweep.toml"
DEFAULT_TABLES = (DEFAULT_TABLE, SWEEP_TABLE, SVE_SWEEP_TABLE)
PHASES = {"kernel": "count_kernel", "pack_lhs": "count_pack_lhs", "pack_b": "count_pack_b"}
ANY_SVL = 0


class AnchorError(KbenchError):
    """An anchor table is malformed (the message names the file and field)."""


@dataclass(frozen=True)
class Anchor:
    label: str
    kernel: str
    phase: str
    shape: Mapping[str, int]  # some of m, n, k
    ours: tuple[str, ...]
    counts: Mapping[int, int]  # SVL bits (ANY_SVL for any) -> instructions
    outer: Mapping[int, int] = field(default_factory=dict)  # SVL -> their outer/dot products
    # SVL -> the kernel called once per m_step band (a second column, never the anchor)
    banded: Mapping[int, int] = field(default_factory=dict)

    def count_at(self, svl_bits: int) -> int | None:
        return self.counts.get(ANY_SVL, self.counts.get(svl_bits))

    def shape_str(self) -> str:
        return " x ".join(f"{d.upper()}={self.shape[d]}" for d in ("m", "n", "k")
                          if d in self.shape)


@dataclass(frozen=True)
class AnchorTable:
    name: str
    what: str
    method: str
    note: str
    anchors: tuple[Anchor, ...]
    path: str
    commit: str = ""  # the peer's source commit, when the table records it
    flags: str = ""  # the peer's compile flags, when the table records them
    date: str = ""


@dataclass(frozen=True)
class AnchorMatch:
    """One of our results rows set against an anchor."""

    anchor: Anchor
    target: str
    realization: str
    case: str
    svl: int
    ours: float
    theirs: int
    ours_without_checksum: float = math.nan  # pack_b only: the packer without sealing
    source: str = ""  # the table's name
    ours_outer: float = math.nan  # our outer (FMOPA) and dot (FDOT) products in the phase
    floor: float = math.nan  # their floor for the shape (the count engine's)

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs if self.theirs else math.nan

    @property
    def outer_per_floor(self) -> float:
        return self.ours_outer / self.floor if self.floor > 0 else math.nan


def load_anchors(path: str | Path = DEFAULT_TABLE) -> AnchorTable:
    p = Path(path)
    try:
        with p.open("rb") as fh:
            doc = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise AnchorError(f"{p}: {exc}", "anchors") from exc
    src = doc.get("source")
    if not isinstance(src, dict) or not all(isinstance(src.get(k), str)
                                            for k in ("name", "what", "method")):
        raise AnchorError(f"{p}: [source] needs name, what and method strings", "source")
    anchors = []
    for i, a in enumerate(doc.get("anchor", [])):
        where = f"{p}: anchor[{i}]"
        phase = a.get("phase")
        if phase not in PHASES:
            raise AnchorError(f"{where}: phase {phase!r} is not one of {', '.join(PHASES)}",
                              "phase")
        ours = a.get("ours")
        if not isinstance(ours, list) or not ours or not all(isinstance(o, str) for o in ours):
            raise AnchorError(f"{where}: ours must be a non-empty list of realization names",
                              "ours")
        counts: dict[int, int] = {}
        extra: dict[str, dict[int, int]] = {"outer_": {}, "banded_": {}}
        for key, value in a.items():
            m = re.fullmatch(r"(outer_|banded_)?svl(\d+)", key)
            if m or key == "any_svl":
                if type(value) is not int or value <= 0:
                    raise AnchorError(f"{where}: {key} must be a positive integer", key)
                if m and m.group(1):
                    extra[m.group(1)][int(m.group(2))] = value
                else:
                    counts[int(m.group(2)) if m else ANY_SVL] = value
        if not counts:
            raise AnchorError(f"{where}: no counts (svlNNN = ... or any_svl = ...)", "counts")
        shape = {d: a[d] for d in ("m", "n", "k") if d in a}
        if any(type(v) is not int or v < 1 for v in shape.values()):
            raise AnchorError(f"{where}: m, n, k must be positive integers", "shape")
        anchors.append(Anchor(str(a.get("label", a.get("kernel", ""))), str(a.get("kernel", "")),
                              phase, shape, tuple(ours), counts, extra["outer_"],
                              extra["banded_"]))
    return AnchorTable(src["name"], src["what"], src["method"], str(src.get("note", "")),
                       tuple(anchors), str(p), str(src.get("commit", "")),
                       str(src.get("flags", "")), str(src.get("date", "")))


def load_tables(paths: Iterable[str | Path] = DEFAULT_TABLES) -> list[AnchorTable]:
    """The anchor tables at `paths` (the default ones that exist)."""
    return [load_anchors(p) for p in paths if Path(p).exists()]


def _get(row: Mapping[str, Any] | Any, name: str) -> Any:
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _int(value: Any) -> int:
    """A row's dimension or SVL as an integer; 0 when missing or not finite."""
    x = _num(value)
    return int(x) if math.isfinite(x) else 0


def match_anchors(table: AnchorTable, rows: Iterable[Mapping[str, Any] | Any]
                  ) -> list[AnchorMatch]:
    """Every counted GEMM row (batch 1) of an anchor's realizations and shape,
    at an SVL the anchor has a count for."""
    out: list[AnchorMatch] = []
    seen: set[tuple[str, str, str, str, int]] = set()
    rows = list(rows)
    for a in table.anchors:
        column = PHASES[a.phase]
        for row in rows:
            if _get(row, "op") != "gemm" or str(_get(row, "realization")) not in a.ours:
                continue
            if any(_int(_get(row, d)) != v for d, v in a.shape.items()):
                continue
            if re.search(r"k\d+x\d+$", str(_get(row, "shape"))):  # a batch
                continue
            ours = _num(_get(row, column))
            if not ours > 0:
                continue
            svl = _int(_get(row, "vector_bits"))
            theirs = a.count_at(svl)
            if theirs is None:
                continue
            key = (a.label + a.shape_str(), str(_get(row, "target")),
                   str(_get(row, "realization")), str(_get(row, "case")), svl)
            if key in seen:  # another pass of the same case
                continue
            seen.add(key)
            extra = math.nan
            if a.phase == "pack_b":
                extra = ours - _num(_get(row, "count_pack_b_checksum"))
            out.append(AnchorMatch(a, str(_get(row, "target")), str(_get(row, "realization")),
                                   str(_get(row, "case")), svl, ours, theirs, extra,
                                   table.name, _outer(row, a.phase),
                                   _num(_get(row, "count_floor"))))
    return out


def _outer(row: Mapping[str, Any] | Any, phase: str) -> float:
    """Outer (FMOPA) plus dot (FDOT) products of `phase` in the row's mix."""
    mix = parse_mix(_get(row, "count_mix")).get(phase, {})
    if "outer" not in mix and "dot" not in mix:
        return math.nan  # a phase without outer or dot products (packing, NEON)
    return float(mix.get("outer", 0) + mix.get("dot", 0))


def match_tables(tables: Iterable[AnchorTable], rows: Iterable[Mapping[str, Any] | Any]
                 ) -> list[AnchorMatch]:
    rows = list(rows)
    return [m for t in tables for m in match_anchors(t, rows)]


def best_matches(matches: Iterable[AnchorMatch], phase: str | None = "kernel"
                 ) -> list[AnchorMatch]:
    """Per counted case (target, realization, case, phase, SVL) the match with
    the best anchor: the peer kernel with the fewest instructions; only the
    matches of `phase` (the kernel's by default; None: every phase)."""
    best: dict[tuple[str, str, str, str, int], AnchorMatch] = {}
    for m in matches:
        if phase is not None and m.anchor.phase != phase:
            continue
        key = (m.target, m.realization, m.case, m.anchor.phase, m.svl)
        if key not in best or m.theirs < best[key].theirs:
            best[key] = m
    return list(best.values())


def geomean(values: Iterable[float]) -> float:
    vals = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else math.nan


def geomeans(best: Iterable[AnchorMatch]) -> list[tuple[tuple[str, str], float, int]]:
    """Per (target, realization), in first-seen order: the geometric mean of
    the ratios to the best anchors and the number of shapes."""
    groups: dict[tuple[str, str], list[float]] = {}
    for m in best:
        groups.setdefault((m.target, m.realization), []).append(m.ratio)
    return [(key, geomean(ratios), len(ratios)) for key, ratios in groups.items()]
