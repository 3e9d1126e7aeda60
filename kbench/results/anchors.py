"""Peer anchor tables: instruction counts another library's kernels were
measured at (reference/counts/kleidiai_v1.30.toml: Arm KleidiAI v1.30, with
how they were measured), and the ratio of our counts to them on the shapes
both cover. The numbers are the peer's, never credited as ours."""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.errors import KbenchError
from kbench.resources import resource_dir

# in the checkout reference/counts/, in an installed package kbench/reference/counts/
DEFAULT_TABLE = resource_dir("reference") / "counts" / "kleidiai_v1.30.toml"
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

    @property
    def ratio(self) -> float:
        return self.ours / self.theirs if self.theirs else math.nan


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
        for key, value in a.items():
            m = re.fullmatch(r"svl(\d+)", key)
            if m or key == "any_svl":
                if type(value) is not int or value <= 0:
                    raise AnchorError(f"{where}: {key} must be a positive integer", key)
                counts[int(m.group(1)) if m else ANY_SVL] = value
        if not counts:
            raise AnchorError(f"{where}: no counts (svlNNN = ... or any_svl = ...)", "counts")
        shape = {d: a[d] for d in ("m", "n", "k") if d in a}
        if any(type(v) is not int or v < 1 for v in shape.values()):
            raise AnchorError(f"{where}: m, n, k must be positive integers", "shape")
        anchors.append(Anchor(str(a.get("label", a.get("kernel", ""))), str(a.get("kernel", "")),
                              phase, shape, tuple(ours), counts))
    return AnchorTable(src["name"], src["what"], src["method"], str(src.get("note", "")),
                       tuple(anchors), str(p))


def _get(row: Mapping[str, Any] | Any, name: str) -> Any:
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def _num(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


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
            if any(int(_num(_get(row, d)) or 0) != v for d, v in a.shape.items()):
                continue
            if re.search(r"k\d+x\d+$", str(_get(row, "shape") or "")):  # a batch
                continue
            ours = _num(_get(row, column))
            if not ours > 0:
                continue
            svl = int(_num(_get(row, "vector_bits")) or 0)
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
                                   str(_get(row, "case")), svl, ours, theirs, extra))
    return out
