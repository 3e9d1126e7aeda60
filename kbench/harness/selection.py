"""What a run selects, said out loud: filters that name nothing the targets
offer are usage errors (naming what exists), a case filter (`-k`), and the
one command that reruns a single verdict (its reproducer)."""

from __future__ import annotations

import difflib
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kbench.judge.verdict import Verdict
from kbench.native.api import Realization
from kbench.native.calls import TargetInfo
from kbench.problems import tails
from kbench.problems.cases import Case


def filter_errors(infos: Mapping[str, TargetInfo], backends: Iterable[str],
                  realizations: Iterable[str]) -> list[str]:
    """One message per backend or realization filter that no chosen target
    offers, naming what the targets do offer (a typo must not run nothing
    and pass). A name one target lacks while another has it is allowed:
    each target runs what it has."""
    errors: list[str] = []
    offered_b = {spec: sorted({r.backend for r in i.realizations}) for spec, i in infos.items()}
    offered_r = {spec: [r.name for r in i.realizations] for spec, i in infos.items()}
    def offers(have: list[str], b: str) -> bool:  # "plugin" names every plugin's backend
        return b in have or (b == "plugin" and any(x.startswith("plugin:") for x in have))

    for b in backends:
        if not any(offers(have, b) for have in offered_b.values()):
            where = "; ".join(f"{spec} has {', '.join(have) or 'none'}"
                              for spec, have in offered_b.items())
            errors.append(f"--backend {b}: no chosen target offers it ({where})")
    for name in realizations:
        if not any(name in have for have in offered_r.values()):
            every = sorted({n for have in offered_r.values() for n in have})
            close = difflib.get_close_matches(name, every, n=3, cutoff=0.75)
            hint = f"; did you mean {', '.join(close[:3])}?" if close else ""
            errors.append(f"--realization {name}: no chosen target offers it{hint} "
                          f"(offered: {', '.join(every)}; see `kbench realizations`)")
    if errors:  # what a plugin file would have offered had it loaded, and why it did not
        errors += [f"  plugin not loaded on {spec}: {e['message']}" for spec, i in infos.items()
                   for e in i.extra.get("plugin_errors", []) if isinstance(e, dict)]
    return errors


@dataclass(frozen=True)
class CaseFilter:
    """`kbench run -k EXPR`: a regular expression searched in "CATALOG/CASE"
    (Python `re.search`, as Google Benchmark's --benchmark_filter; e.g.
    `-k conv3x3`, `-k '^resnet50_small/'`, `-k 'gemv|m1_'`)."""

    expr: str

    def __post_init__(self) -> None:
        try:
            re.compile(self.expr)
        except re.error as exc:
            raise ValueError(f"-k {self.expr!r}: not a regular expression ({exc})") from exc

    def matches(self, catalog: str, case: str) -> bool:
        return re.search(self.expr, f"{catalog}/{case}") is not None


INPUT_KINDS = ("exact", "uniform", "normal", "specials")


def reproducer(v: Verdict, catalog_arg: str = "", suite: str = "") -> str:
    """The `kbench run` command that reruns just this verdict: its suite,
    target, realization, catalog, case and input kind. A verdict of the
    contracts suite (contract cases, plugin probes and packer checks, which
    take no catalog case) reruns that suite for its realization."""
    if not suite:
        suite = {"perf": "perf", "contracts": "contracts", "plugin-contracts": "contracts"
                 }.get(v.suite, "correctness")
    args = ["kbench", "run", "--suite", suite, "--target", v.target]
    if v.realization not in ("contracts", "target", "-", ""):
        args += ["--realization", v.realization]
    if suite == "contracts":
        return shlex.join(args)
    if v.suite == "determinism":  # its tests run for the realization beside any catalog's cases
        return shlex.join([*args, "--shapes", "smoke"])
    catalog = catalog_arg or v.catalog
    if catalog:
        args += ["--shapes", catalog]
    args += ["-k", f"/{re.escape(v.case)}$"]
    if v.kind in INPUT_KINDS and suite != "perf":
        args += ["--kinds", v.kind]
    if v.threads > 1:
        args += ["--threads", str(v.threads)]
    return shlex.join(args)


def realization_steps(info: TargetInfo, r: Realization) -> tails.Steps:
    """A realization's blocking on the target that lists it
    (kbench.problems.tails): a plugin micro-kernel's declared mr/nr/kr; our
    kernel's m_step/n_step/kr from its queries (as the library reports them);
    else its kernel's tile at the vector length it reports."""
    blocks = (r.block_m, r.block_n, r.block_k)
    if not r.is_plugin and r.n_step:
        return tails.steps_of(r.kernel, r.vector_bits, blocks, (r.m_step, r.n_step, r.kr),
                              how="queries")
    declared = (0, 0, 0)
    if r.is_plugin:
        for p in info.extra.get("plugins", []):
            for d in p.get("realizations", []):
                if d.get("name") == r.name:
                    declared = (int(d.get("mr", 0)), int(d.get("nr", 0)), int(d.get("kr", 0)))
    return tails.steps_of(r.kernel, r.vector_bits, blocks, declared)


def derived_tails(steps: tails.Steps, r: Realization, sample: bool = False) -> list[Case]:
    """The tails derived for a realization (those it takes)."""
    from kbench.harness.runner import applicable
    found: list[Case] = []
    if r.op == "gemm":
        found += tails.gemm_tails(steps, r.bforms, r.max_m, sample)
    else:
        found += tails.conv_tails(steps, sample)
    return [c for c in found if applicable(c, r)]
