"""The equivalence probe of a machine-code campaign: for a mutant every
suite let through, are its outputs and its instruction trace those of the
unmutated library?

The probe runs every case of the campaign's shapes (a realization's derived
tails, the smoke catalog, ...) with both input kinds the suites use on every
chosen plugin realization, single-threaded, in one instruction-counting
worker (kbench.targets.counting: QEMU's log of every executed block), and
keeps a digest of each case's output bytes and the instruction count of
every counted window (each library call and each packing of B). A mutant
whose digests and counts all equal the unmutated library's is *likely
equivalent*: nothing the probe can observe tells them apart."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kbench.errors import KbenchError
from kbench.harness.counting import Counter
from kbench.harness.runner import InputCache, Job, jobs_for
from kbench.harness.selection import derived_tails, realization_steps
from kbench.native import api
from kbench.problems import catalog as catalogs
from kbench.problems import tails
from kbench.problems.cases import Case, GemmCase
from kbench.results import mcmutation as mcm
from kbench.targets.spec import Target, parse_qemu


@dataclass
class Probe:
    cases: list[str] = field(default_factory=list)  # job ids, in order
    digests: list[str] = field(default_factory=list)  # per job: output digest or the error
    windows: list[int] = field(default_factory=list)  # instructions of every counted window
    error: str = ""
    bits: list[np.ndarray] = field(default_factory=list)  # per job: every output, as uint16

    @property
    def instructions(self) -> int:
        return sum(self.windows)


def _cases(target: Target, r: api.Realization, shapes: Sequence[str]) -> list[Case]:
    out: list[Case] = []
    for name in shapes:
        if name == tails.CATALOG:
            out += derived_tails(realization_steps(target.info(), r), r)
        else:
            out += list(catalogs.load_catalog(catalogs.resolve_catalog(name)).cases)
    return out


def _digest(outputs: Sequence[object], error: object) -> str:
    if error is not None:
        return f"error: {type(error).__name__}: {error}"
    h = hashlib.sha256()
    for a in outputs:
        h.update(a.tobytes())  # type: ignore[attr-defined]
    return h.hexdigest()[:24]


def probe(library: str, spec: str, shapes: Sequence[str], realizations: Sequence[str] = ()
          ) -> Probe:
    """Outputs and window counts of every probe case of the plugin's
    realizations (those named, or all) on a qemu: target."""
    q = parse_qemu(spec)
    out = Probe()
    counter = Counter(plugins=(library,))
    try:
        with counter.tool(dynamic=True).session(q.qemu_cpu, q.isa, "tb", (library,)) as s:
            target = Target(spec, s.engine)
            reals = [r for r in target.info().realizations if r.is_plugin
                     and (not realizations or r.name in realizations)]
            jobs: list[Job] = []
            for r in reals:
                jobs += jobs_for(_cases(target, r, shapes), [r], spec, adapt=True)
            cache = InputCache()
            sel = api.Selector(threads=1)
            for j in jobs:
                inp = cache.get(j.case, j.kind)
                o = (target.run_gemm(j.case, inp, j.realization.name, sel)  # type: ignore[arg-type]
                     if isinstance(j.case, GemmCase)
                     else target.run_conv(j.case, inp, j.realization.name, sel))  # type: ignore[arg-type]
                out.cases.append(j.id)
                out.digests.append(_digest(o.outputs, o.error))
                out.bits.append(np.concatenate([np.asarray(a).view(np.uint16).ravel()
                                                for a in o.outputs]) if o.outputs
                                else np.zeros(0, np.uint16))
            s.close()  # the log ends with the process: every window is counted
            if s.counter.error:
                out.error = str(s.counter.error)
            out.windows = [w.total for w in s.counter.windows]
    except (KbenchError, OSError) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    return out


def _ordered(bits: np.ndarray) -> np.ndarray:
    """FP16 bit patterns as integers in the order of their values (both zeros
    0), so that a difference is a count of ulps."""
    b = bits.astype(np.int64)
    return np.where(b & 0x8000, -(b & 0x7FFF), b)


def how_outputs_differ(base: Sequence[np.ndarray], mutant: Sequence[np.ndarray]) -> str:
    """What the differing outputs differ in: the sign of zeros only, NaN
    payloads, or values by at most N ulp (every suite passed, so within the
    error bound and the NaN rules)."""
    zeros = nans = values = 0
    ulps = 0
    for a, b in zip(base, mutant, strict=True):
        if a.size != b.size:
            return "in their number (every suite passed)"
        d = a != b
        za, zb = (a & 0x7FFF) == 0, (b & 0x7FFF) == 0
        na, nb = (a & 0x7FFF) > 0x7C00, (b & 0x7FFF) > 0x7C00
        zeros += int((d & za & zb).sum())
        nans += int((d & na & nb).sum())
        v = d & ~(za & zb) & ~(na & nb)
        values += int(v.sum())
        if v.any():
            ulps = max(ulps, int(np.abs(_ordered(a[v]) - _ordered(b[v])).max()))
    parts = []
    if values:
        parts.append(f"{values} value(s) by at most {ulps} ulp")
    if zeros:
        parts.append(f"{zeros} zero(s) in their sign only")
    if nans:
        parts.append(f"{nans} NaN(s) in their payload only")
    return "; ".join(parts) + " (every suite passed: within the error bound)"


def compare(base: Probe, mutant: Probe) -> tuple[bool, str]:
    """(likely equivalent, what differs)."""
    if base.error or mutant.error:
        return False, f"probe failed: {mutant.error or base.error}"
    if base.cases != mutant.cases:
        return False, "the probe ran other cases (the plugin's table changed)"
    differ = [i for i, (a, b) in enumerate(zip(base.digests, mutant.digests, strict=True))
              if a != b]
    if differ:
        return False, (f"{mcm.OUTPUTS_DIFFER} {len(differ)} of {len(base.digests)} probe cases, "
                       + how_outputs_differ([base.bits[i] for i in differ],
                                            [mutant.bits[i] for i in differ]))
    if base.windows != mutant.windows:
        return False, (f"{mcm.SAME_OUTPUTS} {len(base.digests)} probe cases, "
                       f"instruction trace {mutant.instructions:,} instead of "
                       f"{base.instructions:,} ({len(mutant.windows)} windows)")
    return True, (f"{mcm.SAME_OUTPUTS} {len(base.digests)} probe cases, same "
                  f"instruction trace ({base.instructions:,} instructions)")
