"""Auto-tuning: for every shape of a catalog, verify every candidate
realization (only those that pass are eligible), time the eligible ones,
and write a dispatch table that maps shape classes to the winners.

Shape classes generalize beyond the tuned shapes: GEMM by M (GEMV: 1,
small: 2..32, large: 33+, no upper bound written) and power-of-two ranges
of N and K; convolution by every feature that decides which realizations
apply: kernel size, stride, dilation, depthwise, grouped (a Winograd
kernel takes only undilated 3x3 stride-1 shapes, so dilated 3x3 shapes
form their own class and cannot cost it the undilated one). Within a class the winner is
the realization with the least total time over the class's shapes among
those eligible for all of them; the runner-up is kept beside it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kbench.harness.perf import PERF_KIND, PerfSettings, measure
from kbench.harness.runner import InputCache, Job, applicable
from kbench.judge.verdict import MISTRUSTED, PASS, Verdict
from kbench.native import api
from kbench.problems.cases import Case, ConvCase, GemmCase
from kbench.targets.spec import Target

FORMAT = 1


def gemm_class(case: GemmCase) -> dict[str, int]:
    if case.m == 1:
        m_lo, m_hi = 1, 1
    elif case.m <= 32:
        m_lo, m_hi = 2, 32
    else:
        m_lo, m_hi = 33, None  # no upper bound: the key is left out
    out = {"m_min": m_lo} if m_hi is None else {"m_min": m_lo, "m_max": m_hi}
    for name, v in (("n", case.n), ("k", case.k)):
        lo = 1 << (v.bit_length() - 1)
        out[f"{name}_min"], out[f"{name}_max"] = lo, 2 * lo - 1
    return out


def conv_class(case: ConvCase) -> dict[str, Any]:
    depthwise = case.groups > 1 and case.groups == case.c_in == case.c_out
    return {"kh": case.kh, "kw": case.kw, "stride_h": case.stride[0], "stride_w": case.stride[1],
            "dilation_h": case.dilation[0], "dilation_w": case.dilation[1],
            "depthwise": depthwise, "grouped": case.groups > 1 and not depthwise}


def shape_class(case: Case) -> tuple[str, dict[str, Any]]:
    if isinstance(case, GemmCase):
        return "gemm", gemm_class(case)
    return "conv2d", conv_class(case)


def class_matches(op: str, cls: dict[str, Any], case: Case) -> bool:
    """The native matcher's rule, in Python (for tests and reports)."""
    if op != case.op:
        return False
    if isinstance(case, GemmCase):
        return all(cls.get(f"{d}_min", 0) <= v <= cls.get(f"{d}_max", float("inf"))
                   for d, v in (("m", case.m), ("n", case.n), ("k", case.k)))
    assert isinstance(case, ConvCase)
    want = {"kh": case.kh, "kw": case.kw, "stride_h": case.stride[0],
            "stride_w": case.stride[1], "dilation_h": case.dilation[0],
            "dilation_w": case.dilation[1]}
    if any(k in cls and cls[k] != v for k, v in want.items()):
        return False
    dw = case.groups > 1 and case.groups == case.c_in == case.c_out
    grouped = case.groups > 1 and not dw
    return (("depthwise" not in cls or cls["depthwise"] == dw)
            and ("grouped" not in cls or cls["grouped"] == grouped))


def table_choice(table: dict[str, Any], case: Case) -> str | None:
    """The realization a dispatch table names for a case (first matching rule)."""
    for rule in table["rules"]:
        if class_matches(rule["op"], rule["class"], case):
            return str(rule["realization"])
    return None


@dataclass
class ShapeResult:
    case: Case
    catalog: str
    verdicts: dict[str, Verdict] = field(default_factory=dict)  # realization -> verdict
    default: str = ""  # what the default order picks for this shape

    def times(self) -> dict[str, float]:
        """Median time per eligible (verified, timed) realization."""
        return {r: v.time_median_ns for r, v in self.verdicts.items()
                if v.status in (PASS, MISTRUSTED) and v.rounds > 0}


@dataclass
class TuneResult:
    target: str
    shapes: list[ShapeResult]
    skipped: list[str]  # shapes left out when the budget ran out
    table: dict[str, Any]


def default_realization(realizations: list[api.Realization], case: Case) -> str:
    """The default dispatch order's choice: the first (best-first) realization
    of ours that takes the case, as the native dispatcher does (a peer or a
    plugin realization is never a default)."""
    for r in realizations:
        if not r.peer and not r.is_plugin and applicable(case, r):
            return r.name
    return ""


def tune(target: Target, cases: list[tuple[str, Case]], settings: PerfSettings,
         budget_s: float | None = None, cache: InputCache | None = None,
         progress: Callable[[str], None] | None = None) -> TuneResult:
    info = target.info()
    # candidates: ours and the target's plugin realizations (a table may choose a
    # plugin's; peers run outside the library's dispatch and never are)
    ours = [r for r in info.realizations if not r.peer]
    cache = cache or InputCache()
    start = time.monotonic()
    shapes: list[ShapeResult] = []
    skipped: list[str] = []
    for i, (catalog, case) in enumerate(cases):
        if budget_s is not None and time.monotonic() - start > budget_s:
            skipped += [c.name for _, c in cases[i:]]
            break
        sr = ShapeResult(case, catalog, default=default_realization(ours, case))
        for r in ours:
            if not applicable(case, r):
                continue
            v = measure(target, Job(case, PERF_KIND, r, target.name, catalog), settings, cache)
            v.suite = "tune"
            sr.verdicts[r.name] = v
            if progress:
                progress(f"[{i + 1}/{len(cases)}] {case.name} {r.name}: "
                         + (f"{v.time_median_ns / 1e3:.1f} us" if v.rounds else v.status))
        shapes.append(sr)
    return TuneResult(target.name, shapes, skipped, build_table(info, shapes, target.emulated))


def build_table(info: Any, shapes: list[ShapeResult], emulated: bool) -> dict[str, Any]:
    classes: dict[str, dict[str, Any]] = {}
    for sr in shapes:
        op, cls = shape_class(sr.case)
        key = json.dumps([op, cls], sort_keys=True)
        classes.setdefault(key, {"op": op, "class": cls, "shapes": []})["shapes"].append(sr)
    rules = []
    for entry in classes.values():
        members: list[ShapeResult] = entry["shapes"]
        common = set.intersection(*(set(sr.times()) for sr in members)) if members else set()
        if not common:
            continue
        totals = {r: sum(sr.times()[r] for sr in members) for r in common}
        ranked = sorted(totals, key=totals.__getitem__)
        default_total = sum(sr.times().get(sr.default, float("nan")) for sr in members)
        rule: dict[str, Any] = {
            "op": entry["op"], "class": entry["class"], "realization": ranked[0],
            "time_ns": totals[ranked[0]],
            "shapes": [sr.case.name for sr in members],
            "default_time_ns": default_total,
        }
        if len(ranked) > 1:
            rule["runner_up"] = {"realization": ranked[1], "time_ns": totals[ranked[1]]}
        rules.append(rule)
    # narrower classes first: a GEMV rule before a wider one, and so on
    rules.sort(key=lambda r: (r["op"], json.dumps(r["class"], sort_keys=True)))
    return {
        "kbench_dispatch_table": FORMAT,
        "library_version": info.library_version,
        "fingerprint": {"arch": info.arch, "cpu_features": list(info.cpu_features),
                        "sme_vector_bits": info.sme_vector_bits, "target": info.name},
        "emulated": emulated,
        "rules": rules,
    }
