"""`kbench run --coverage`: which instructions of the kernels and packers the
run executed, per target (kbench.targets.coverage), tied to the
realizations that run them; coverage.csv in the run folder (and
coverage_uncovered.txt: the instructions never executed), a table in the
terminal summary, and with --min-coverage a run that fails below it."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbench.native.api import Realization
from kbench.targets import coverage
from kbench.targets.plugins import expand
from kbench.targets.spec import parse_qemu

LOGS = "coverage"  # the folder of the QEMU logs, in the run folder
CSV = "coverage.csv"
LISTING = "coverage_uncovered.txt"  # the uncovered instructions, disassembled


def supported(spec: str) -> bool:
    """Targets whose workers QEMU can log: the qemu: worker targets."""
    return spec == "qemu" or spec.startswith("qemu:")


def log_dir(run_dir: Path, spec: str) -> Path:
    """One folder of logs per target, named from its spec."""
    safe = "".join(c if c.isalnum() or c in "-." else "_" for c in spec)
    return run_dir / LOGS / safe


def _unit_names(kernel: str) -> list[str]:
    """The units a realization's kernel field names ('+' joins the steps of a
    composed realization, e.g. im2col_f16+matmul_...)."""
    out = []
    for part in kernel.split("+"):
        out += ["kb_" + part, "kb_" + part.replace("imatmul_", "matmul_", 1),
                "kb_" + part.replace("_nhwc_hwio", "")]
    return out


def attach(rows: list[coverage.UnitCoverage], realizations: Sequence[Realization]
           ) -> list[coverage.UnitCoverage]:
    """Ties each unit of ours to the chosen realizations that run it (a kernel
    by the realization's kernel name, a packer by its family folder) and each
    plugin function to its plugin's realizations; units no chosen realization
    runs are dropped (another backend's, not selected)."""
    ours = {r.unit.name: r for r in rows if r.unit.owner == "kbench"}
    for real in realizations:
        if real.plugin:
            continue
        for name in _unit_names(real.kernel):
            row = ours.get(name)
            if row is not None:
                row.realizations.append(real.name)
                families = {row.unit.family}
                for other in ours.values():
                    if other.unit.kind == "packer" and other.unit.family in families:
                        other.realizations.append(real.name)
                break
    kept = []
    for r in rows:
        if r.unit.owner == "kbench":
            r.realizations = sorted(set(r.realizations))
            if r.realizations:
                kept.append(r)
        else:  # a plugin's function: the realizations entering it (kbench.targets.coverage)
            kept.append(r)
    return kept


@dataclass
class CoverageResult:
    rows: list[coverage.UnitCoverage] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # targets without coverage, and why

    def below(self, percent: float) -> list[coverage.UnitCoverage]:
        return [r for r in self.rows if r.percent < percent]


def collect(run_dir: Path, specs: Iterable[str], plugins: Sequence[str],
            realizations: dict[str, list[Realization]]) -> CoverageResult:
    """Coverage of every target of the run from the logs its workers left;
    coverage.csv is written beside results.csv."""
    res = CoverageResult()
    for spec in specs:
        if not supported(spec):
            res.notes.append(f"{spec}: no machine-code coverage (only qemu: worker targets "
                             "run under a QEMU that logs the code it runs)")
            continue
        folder = log_dir(run_dir, spec)
        if not folder.is_dir() or not any(folder.glob(f"*{coverage.MAP_SUFFIX}")):
            res.notes.append(f"{spec}: no worker process ran, no coverage")
            continue
        # as the worker loaded them (kbench.targets.spec: absolute paths), which is how
        # its logs name them: a relative --plugin path would match nothing (0% covered)
        libs = [expand(os.path.abspath(p), "aarch64") for p in plugins]
        try:
            rows = coverage.measure(parse_qemu(spec).name, folder, libs)
        except coverage.CoverageError as exc:
            res.notes.append(f"{spec}: {exc}")
            continue
        res.rows += attach(rows, realizations.get(spec, []))
    coverage.write_csv(run_dir / CSV, res.rows)
    coverage.write_listing(run_dir / LISTING, res.rows)
    return res
