#!/usr/bin/env python3
"""How often does the gate flag a slowdown, and how often a change that is
no change? A benchmark of the gate on this machine (not a unit test: it
takes minutes and its figures depend on the machine's noise).

Each trial runs the perf suite (`kbench run --suite perf`) once as the base
and once per condition as the candidate, in a shuffled order:

- A/A: the same build again;
- a slowdown of 5%, 10%, 20% (--fractions) of one realization, made with
  the test-only knob KBENCH_TEST_SLOWDOWN="<realization>=<fraction>", which
  makes that realization busy-wait after each call for the fraction of its
  own duration.

Each candidate is gated against the trial's base (kbench.results.compare.gate,
with the slowdown limit and alpha of ci/gate.toml unless given). A trial
counts as flagged if the gate reports a slowdown: for a slowed condition,
on a case of the slowed realization; for A/A, on any case. The table gives
the flag rate per condition with a 95% Wilson interval, the fraction of
timed cases flagged, and the median observed ratio of the slowed cases (to
show the knob did what it says). Runs go to --work (kept with --keep);
the benchmark's runs are recorded in a history database under --work, not
in the user's.

    python ci/gate_benchmark.py --trials 20 --shapes llm_llama7b_small

With --protocol ab each trial is instead one `kbench ab` run per condition:
the base is this checkout's host worker, the candidate the same worker
(A/A) or the same worker with the slowdown knob in its environment; rounds
alternate between the two in one run, and a trial is flagged when `kbench
ab` calls a case slower (A/A: any case; slowed: a case of the slowed
realization). --hog N keeps N busy-looping processes pinned to CPUs
0..N-1 for the whole benchmark (a CPU hog on one core: --hog 1).

    python ci/gate_benchmark.py --protocol ab --hog 1 --trials 20 \
        --fractions 0.05,0.10 --shapes llm_llama7b_small
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbench.cli.history import load_gate_config, parse_fraction
from kbench.results.compare import INCONCLUSIVE, SLOWER, TWO_RUN_TEST, gate
from kbench.results.runfolder import Run, load_run

AA = "A/A"
DETECT = 0.025  # `kbench ab --min-effect`'s default: the smallest change it reports
BIG_NS = 20_000.0  # the detection targets hold for cases of at least 20 µs (base median)


@dataclass(frozen=True)
class Condition:
    name: str
    fraction: float  # 0: no slowdown (A/A)


@dataclass
class Judged:
    """One candidate judged at one slowdown limit."""

    limit: float
    failed: bool = False  # A/A: any case judged slower; slowed: a case of the slowed realization
    slow_cases: int = 0  # timed cases judged slower
    untouched_slow: list[str] = field(default_factory=list)  # of them, not of the slowdown
    big: int = 0  # slowed realization's cases of at least BIG_NS (base median)
    big_caught: int = 0  # of those, judged slower
    big_missed: list[str] = field(default_factory=list)  # the others: "label ratio"
    inconclusive: int = 0  # timed cases the data could not decide (inconclusive, noisy)
    compared: int = 0  # timed cases judged
    exit_failed: bool = False  # the gate's exit status would be 1 (any failure, of any kind)


@dataclass
class Outcome:
    """One candidate gated against its trial's base."""

    trial: int
    condition: str
    flagged: bool  # the gate (ci/gate.toml's limit) reported the slowdown this condition is about
    cases_flagged: int  # timed cases that failed the gate for a slowdown
    cases_compared: int  # timed cases compared as speed
    target_ratios: list[float] = field(default_factory=list)  # slowed realization's cases
    other_failures: list[str] = field(default_factory=list)  # correctness, missing, ...
    load: float = math.nan  # highest 1-minute load average at the start of its two runs
    cases_noisy: int = 0  # ab: cases left undecided (inconclusive; "noisy" in older runs)
    gate_flagged: bool = False  # ab: `kbench gate --ab` at ci/gate.toml's limit fails it
    gate_cases: int = 0  # ab: cases that gate judges slower
    seconds: float = math.nan  # the candidate's measurement (ab: the whole interleaved run)
    gate: Judged | None = None  # at ci/gate.toml's limit
    detect: Judged | None = None  # at DETECT, the smallest change `kbench ab` reports


@dataclass
class Settings:
    trials: int
    shapes: list[str]
    target: str
    realization: str | None
    conditions: list[Condition]
    max_slowdown: float
    alpha: float
    speed_targets: tuple[str, ...]
    work: Path
    command: list[str]
    all_realizations: bool
    seed: int
    keep_runs: bool
    run_args: list[str] = field(default_factory=list)
    max_load: float | None = None  # wait for the 1-minute load average to drop below this
    max_wait: float = 600.0  # seconds, then run anyway
    reuse: bool = False  # gate the complete run folders already in work instead of re-running
    passes: int = 1  # kbench run --passes
    protocol: str = "runs"  # runs: two kbench runs gated; ab: one interleaved kbench ab run
    hog: int = 0  # busy-looping processes pinned to CPUs 0..hog-1 during the benchmark
    ab_args: list[str] = field(default_factory=list)  # more options for kbench ab
    base_checkout: Path | None = None  # ab: the base worker built in this checkout


@dataclass
class Result:
    text: str  # the Markdown table of this benchmark
    outcomes: list[Outcome]
    realization: str  # the slowed one
    seconds: float


def ci_table() -> dict[str, Any]:
    """The [ci] table of ci/gate.toml (what CI runs before gating)."""
    import tomllib
    path = Path(__file__).resolve().parent / "gate.toml"
    with path.open("rb") as f:
        return dict(tomllib.load(f).get("ci", {}))


def ci_ab_args() -> list[str]:
    """The `kbench ab` options ci/gate.toml gives the CI workflow's
    interleaved step (rounds, budget, looks, processes, the gate's limit),
    without its catalogs (--shapes is the benchmark's)."""
    import tomllib
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from gate_args import run_args
    with (here / "gate.toml").open("rb") as fh:
        args = run_args(tomllib.load(fh), ab=True)
    out: list[str] = []
    for opt, val in zip(args[::2], args[1::2], strict=True):
        if opt != "--shapes":
            out += [opt, val]
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k/n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def wait_for_quiet(s: Settings) -> float:
    """Wait (up to s.max_wait) for the 1-minute load average to fall below
    s.max_load; return the load average when the run starts."""
    deadline = time.monotonic() + s.max_wait
    while (s.max_load is not None and os.getloadavg()[0] > s.max_load
           and time.monotonic() < deadline):
        time.sleep(5)
    return os.getloadavg()[0]


def perf_run(s: Settings, out: Path, realization: str | None, slowdown: float) -> Run:
    """One `kbench run --suite perf` into out; the slowdown knob set if > 0."""
    if s.reuse and (out / "run.json").exists():
        kept = load_run(out)
        if kept.complete:
            return kept
    # --force: an incomplete run left in `out` by an earlier attempt is replaced
    cmd = [*s.command, "run", "--suite", "perf", "--target", s.target, "--out", str(out),
           "--force"]
    for shapes in s.shapes:
        cmd += ["--shapes", shapes]
    if realization and not s.all_realizations:
        cmd += ["--realization", realization]
    cmd += ["--passes", str(s.passes), *s.run_args]
    env = {k: v for k, v in os.environ.items() if k != "KBENCH_TEST_SLOWDOWN"}
    env["XDG_DATA_HOME"] = str(s.work / "xdg")  # keep the benchmark out of the user's history
    if slowdown > 0:
        if realization is None:
            raise ValueError("a slowdown needs a realization")
        env["KBENCH_TEST_SLOWDOWN"] = f"{realization}={slowdown:g}"
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if not (out / "run.json").exists():
        sys.exit(f"gate_benchmark: {shlex.join(cmd)} wrote no run folder (exit {proc.returncode})"
                 f"\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    if proc.returncode not in (0, 1):
        print(f"  warning: {out.name}: kbench run exited {proc.returncode}", file=sys.stderr)
    return load_run(out)


def pick_realization(run: Run) -> str:
    """The realization with the most speed-comparable timed cases."""
    perf = run.perf()
    perf = perf[~perf["emulated"]]
    if perf.empty:
        sys.exit("gate_benchmark: the probe run has no timed, non-emulated rows")
    counts = perf.groupby("realization").size()
    return str(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0])


def _judged_runs(s: Settings, realization: str, fraction: float, base: Run, cand: Run,
                 limit: float) -> tuple[Judged, Any]:
    """The two runs as `kbench gate BASE CAND` judges them at `limit`: a
    slowdown is reported as a possible slowdown (a first look, never a
    failure: exit_failed says whether the gate exits 1 for anything else)."""
    result = gate(base, cand, s.alpha, limit, s.speed_targets)
    failed = {f.case for f in result.first_look}
    timed = [c for c in result.comparison.timed() if not math.isnan(c.ratio)]
    slow = [c for c in timed if c.verdict == SLOWER and c.label in failed]
    # realizations failed with their cases together (kbench.results.compare.realization_tests)
    slow_reals = [r for r in result.comparison.realizations
                  if r.verdict == SLOWER and r.label in failed]
    mine = [c for c in timed if c.key[6] == realization]
    big = [c for c in mine if c.base_median_ns >= BIG_NS]
    untouched = ([c.label for c in slow if fraction == 0 or c.key[6] != realization]
                 + [r.label for r in slow_reals if fraction == 0 or r.key[3] != realization])
    j = Judged(limit=limit,
               failed=(bool(slow or slow_reals) if fraction == 0 else
                       any(c.key[6] == realization for c in slow)
                       or any(r.key[3] == realization for r in slow_reals)),
               slow_cases=len(slow), untouched_slow=untouched, big=len(big),
               big_caught=sum(c.label in failed and c.verdict == SLOWER for c in big),
               big_missed=[f"{c.label} {c.robust_ratio:.3f}" for c in big
                           if not (c.label in failed and c.verdict == SLOWER)],
               inconclusive=sum(c.verdict == INCONCLUSIVE for c in timed),
               compared=len(timed), exit_failed=not result.passed)
    return j, result


def judge(s: Settings, trial: int, cond: Condition, realization: str, base: Run,
          cand: Run) -> Outcome:
    at_gate, result = _judged_runs(s, realization, cond.fraction, base, cand, s.max_slowdown)
    at_detect, _ = _judged_runs(s, realization, cond.fraction, base, cand, DETECT)
    mine = [c for c in result.comparison.timed()
            if not math.isnan(c.p_slower) and c.key[6] == realization]
    return Outcome(
        trial=trial, condition=cond.name, flagged=at_gate.failed,
        cases_flagged=at_gate.slow_cases, cases_compared=at_gate.compared,
        target_ratios=[c.ratio for c in mine],
        other_failures=[f"{f.reason}: {f.case} {f.detail}".strip()
                        for f in result.failures],
        gate=at_gate, detect=at_detect)


def table(s: Settings, realization: str, outcomes: list[Outcome], meta: dict[str, object],
          seconds: float) -> str:
    loads = [o.load for o in outcomes if not math.isnan(o.load)]
    lines = [
        "## Gate detection rates",
        "",
        f"- machine: {meta.get('cpu_model')} ({meta.get('machine')}), host {meta.get('host')}, "
        f"commit {str(meta.get('git_commit') or '')[:12]}",
        f"- {s.hog} CPU hog process(es) pinned to CPU 0..{max(0, s.hog - 1)} throughout"
        if s.hog else "- no CPU hog",
        f"- perf suite on `{s.target}`, catalogs {', '.join(s.shapes)}; slowed realization "
        f"`{realization}`" + ("" if s.all_realizations else " (only realization run)")
        + f"; {s.passes} pass(es) per run"
        + (f"; `kbench run {shlex.join(s.run_args)}`" if s.run_args else ""),
        f"- gate: slowdown limit {s.max_slowdown:.0%}, alpha {s.alpha:g} ("
        f"{TWO_RUN_TEST}, Holm-adjusted; a slowdown must show in more than half of the "
        f"passes); {s.trials} trials per condition, "
        f"{seconds / 60:.1f} min",
        f"- 1-minute load average at the start of the runs: median {statistics.median(loads):.2f}"
        f", max {max(loads):.2f} ({os.cpu_count()} CPUs)" if loads else "- load: –",
        "",
        "| condition | trials | flagged | flag rate (95% CI) | timed cases flagged "
        "| median observed ratio | other gate failures |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for cond in s.conditions:
        rows = [o for o in outcomes if o.condition == cond.name]
        k, n = sum(o.flagged for o in rows), len(rows)
        lo, hi = wilson(k, n)
        cases = sum(o.cases_flagged for o in rows)
        compared = sum(o.cases_compared for o in rows)
        ratios = [r for o in rows for r in o.target_ratios if not math.isnan(r)]
        ratio = f"{statistics.median(ratios):.3f}" if ratios else "–"
        other = sum(bool(o.other_failures) for o in rows)
        lines.append(f"| {cond.name} | {n} | {k} | {k / n if n else 0:.0%} "
                     f"({lo:.0%}–{hi:.0%}) | {cases}/{compared} | {ratio} | {other} |")
    lines += ["", "A/A counts a trial as flagged if any case fails the gate for a slowdown; a "
              "slowed condition, if a case of the slowed realization does. \"Other gate "
              "failures\" (correctness, missing, incomplete) should be 0: a trial with one "
              "is suspect.", ""]
    return "\n".join(lines)


def start_hog(n: int) -> list[subprocess.Popen[bytes]]:
    """n busy-looping processes, the i-th pinned to CPU i (where affinity exists)."""
    procs = []
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    for i in range(n):
        p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        if cpus and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(p.pid, {cpus[i % len(cpus)]})
        procs.append(p)
    return procs


def stop_hog(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait(timeout=10)


def ab_run(s: Settings, out: Path, realization: str, slowdown: float, seed: int
           ) -> list[dict[str, str]]:
    """One `kbench ab` (base: this checkout's host worker; candidate: the same
    worker, slowed by the knob if slowdown > 0); returns ab.csv's rows."""
    import csv

    from kbench.targets.crossbuild import build
    worker = str(build("host"))
    base = base_worker(s) or worker
    cand = (f"worker:env KBENCH_TEST_SLOWDOWN={realization}={slowdown:g} {shlex.quote(worker)}"
            if slowdown > 0 else f"worker:{worker}")
    if not (s.reuse and (out / "ab.csv").exists()):
        cmd = [*s.command, "ab", "--base", f"worker:{base}", "--cand", cand, "--out", str(out),
               "--seed", str(seed)]
        for shapes in s.shapes:
            cmd += ["--shapes", shapes]
        if not s.all_realizations:
            cmd += ["--realization", realization]
        cmd += s.ab_args
        env = {k: v for k, v in os.environ.items() if k != "KBENCH_TEST_SLOWDOWN"}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if not (out / "ab.csv").exists():
            sys.exit(f"gate_benchmark: {shlex.join(cmd)} wrote no ab.csv (exit {proc.returncode})"
                     f"\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    with (out / "ab.csv").open() as f:
        return list(csv.DictReader(f))


def base_worker(s: Settings) -> str | None:
    """The base build's worker when --base-checkout names one: built there as
    the CI workflow builds the base commit's (a second build, not a copy)."""
    if s.base_checkout is None:
        return None
    exe = s.base_checkout / "build" / "worker" / "host" / "kb_worker"
    proc = subprocess.run([sys.executable, "-m", "kbench.targets.crossbuild", "--arch", "host"],
                          cwd=s.base_checkout, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(s.base_checkout)})
    if proc.returncode != 0 or not exe.exists():
        sys.exit(f"gate_benchmark: cannot build the base worker in {s.base_checkout}:\n"
                 f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return str(exe)


def judged_ab(folder: Path, s: Settings, realization: str, fraction: float,
              limit: float) -> Judged:
    """The interleaved run as `kbench gate BASE CAND --ab FOLDER` judges its
    speed at `limit` (ci/gate.toml's alpha)."""
    from kbench.results.abgate import INCONCLUSIVE as AB_INCONCLUSIVE
    from kbench.results.abgate import judge_ab as gate_ab
    from kbench.results.abgate import load_ab
    verdicts = [v for v in gate_ab(load_ab(folder), limit, s.alpha) if v.stats is not None]
    mine = [v for v in verdicts if v.label.split(" ")[0] == realization]
    slow = [v for v in verdicts if v.verdict == SLOWER]
    big = [v for v in mine if v.stats is not None and v.stats.base_median_ns >= BIG_NS]
    return Judged(
        limit=limit,
        failed=bool(slow) if fraction == 0 else any(v in mine for v in slow),
        slow_cases=len(slow),
        untouched_slow=[v.label for v in slow if fraction == 0 or v not in mine],
        big=len(big), big_caught=sum(v.verdict == SLOWER for v in big),
        big_missed=[f"{v.label} {v.stats.median_ratio:.3f}" for v in big
                    if v.verdict != SLOWER and v.stats is not None],
        inconclusive=sum(v.verdict == AB_INCONCLUSIVE for v in verdicts),
        compared=len(verdicts))


def judge_ab(trial: int, cond: Condition, realization: str,
             rows: list[dict[str, str]]) -> Outcome:
    """`kbench ab`'s own verdicts (at its --min-effect) of one run."""
    timed = [r for r in rows if r.get("median_ratio")]
    slow = [r for r in timed if r["verdict"] == "slower"]
    mine = [r for r in timed if r["realization"] == realization]
    flagged = bool(slow) if cond.fraction == 0 else any(
        r["realization"] == realization for r in slow)
    return Outcome(trial=trial, condition=cond.name, flagged=flagged, cases_flagged=len(slow),
                   cases_compared=len(timed),
                   target_ratios=[float(r["median_ratio"]) for r in mine],
                   other_failures=[f"{r['case']}: {r['failure']}" for r in rows
                                   if r.get("failure")],
                   cases_noisy=sum(r["verdict"] in ("noisy", "inconclusive") for r in timed))


def run_ab(s: Settings) -> Result:
    """The benchmark of the interleaved protocol (--protocol ab)."""
    s.work.mkdir(parents=True, exist_ok=True)
    realization = s.realization or "gemm_scalar_f32acc"
    started = time.monotonic()
    hog = start_hog(s.hog)
    outcomes: list[Outcome] = []
    try:
        rng = random.Random(s.seed)
        for trial in range(1, s.trials + 1):
            folder = s.work / f"trial-{trial:03d}"
            conds = list(s.conditions)
            rng.shuffle(conds)
            for cond in conds:
                load = wait_for_quiet(s)
                where = folder / cond.name.replace("/", "").replace(" ", "-")
                t0 = time.monotonic()
                rows = ab_run(s, where, realization, cond.fraction, seed=trial)
                o = judge_ab(trial, cond, realization, rows)
                o.seconds = time.monotonic() - t0
                o.gate = judged_ab(where, s, realization, cond.fraction, s.max_slowdown)
                o.detect = judged_ab(where, s, realization, cond.fraction, DETECT)
                o.gate_flagged, o.gate_cases = o.gate.failed, o.gate.slow_cases
                o.load = load
                outcomes.append(o)
            flags = " ".join(f"{o.condition}:{'F' if o.flagged else '.'}"
                             f"{'G' if o.gate_flagged else '.'}"
                             for o in outcomes[-len(conds):])
            print(f"trial {trial}/{s.trials} ({time.monotonic() - started:.0f} s): {flags}",
                  file=sys.stderr)
            if not s.keep_runs:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        stop_hog(hog)
    from kbench.results.store import machine_metadata
    text = table_ab(s, realization, outcomes, machine_metadata(), time.monotonic() - started)
    return Result(text, outcomes, realization, time.monotonic() - started)


def table_ab(s: Settings, realization: str, outcomes: list[Outcome], meta: dict[str, object],
             seconds: float) -> str:
    loads = [o.load for o in outcomes if not math.isnan(o.load)]
    lines = [
        "## Interleaved A/B (`kbench ab`) detection rates",
        "",
        f"- machine: {meta.get('cpu_model')} ({meta.get('machine')}), {os.cpu_count()} CPUs, "
        f"commit {str(meta.get('git_commit') or '')[:12]}",
        f"- {s.hog} CPU hog process(es) pinned to CPU 0..{max(0, s.hog - 1)} throughout"
        if s.hog else "- no CPU hog",
        "- `kbench ab`: base the host worker "
        + (f"built in a second checkout ({s.base_checkout})" if s.base_checkout else "itself")
        + f", candidate this checkout's host worker; catalogs {', '.join(s.shapes)}, "
        + (f"every realization, `{realization}` slowed" if s.all_realizations
           else f"realization `{realization}`")
        + (f", `{shlex.join(s.ab_args)}`" if s.ab_args else "")
        + f"; {s.trials} trials per condition, {seconds / 60:.1f} min",
        f"- 1-minute load average at the start of the runs: median {statistics.median(loads):.2f}"
        f", max {max(loads):.2f}" if loads else "- load: –",
        "",
        "| condition | trials | flagged | flag rate (95% CI) | cases slower | cases noisy "
        f"| median paired ratio | gate failed ({s.max_slowdown:.0%} limit) | gate cases slower |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for cond in s.conditions:
        rows = [o for o in outcomes if o.condition == cond.name]
        k, n = sum(o.flagged for o in rows), len(rows)
        lo, hi = wilson(k, n)
        compared = sum(o.cases_compared for o in rows)
        ratios = [r for o in rows for r in o.target_ratios if not math.isnan(r)]
        ratio = f"{statistics.median(ratios):.3f}" if ratios else "–"
        lines.append(f"| {cond.name} | {n} | {k} | {k / n if n else 0:.0%} ({lo:.0%}–{hi:.0%}) "
                     f"| {sum(o.cases_flagged for o in rows)}/{compared} "
                     f"| {sum(o.cases_noisy for o in rows)}/{compared} | {ratio} "
                     f"| {sum(o.gate_flagged for o in rows)}/{n} "
                     f"| {sum(o.gate_cases for o in rows)}/{compared} |")
    lines += ["", "A/A counts a trial as flagged if `kbench ab` calls any case slower; a slowed "
              "condition, if it calls a case of the slowed realization slower. Noisy cases are "
              "undecided, never flagged. \"Gate failed\": the same run judged as `kbench gate "
              "--ab` judges it (ci/gate.toml's limit and alpha) fails for a slowdown — for A/A "
              "on any case, for a slowed condition on a case of the slowed realization.", ""]
    return "\n".join(lines)


def run(s: Settings) -> Result:
    """The benchmark of the two-run protocol (--protocol runs), under --hog's
    busy loops from the probe run to the last trial."""
    s.work.mkdir(parents=True, exist_ok=True)
    hog = start_hog(s.hog)
    try:
        return _run_trials(s)
    finally:
        stop_hog(hog)


def _run_trials(s: Settings) -> Result:
    started = time.monotonic()
    if not (s.reuse and (s.work / "probe" / "run.json").exists()):
        print(f"probe run ({shlex.join(s.command)} run --suite perf) ...", file=sys.stderr)
    probe = perf_run(s, s.work / "probe", s.realization if not s.all_realizations else None, 0)
    if probe.perf()["emulated"].any():
        sys.exit(f"gate_benchmark: {s.target} is emulated: its times are not speed")
    realization = s.realization or pick_realization(probe)
    if realization not in set(probe.perf()["realization"]):
        sys.exit(f"gate_benchmark: {realization} has no timed rows in the probe run")
    print(f"slowing {realization}; {s.trials} trials x {len(s.conditions) + 1} runs",
          file=sys.stderr)
    rng = random.Random(s.seed)
    outcomes: list[Outcome] = []
    for trial in range(1, s.trials + 1):
        folder = s.work / f"trial-{trial:03d}"
        jobs: list[tuple[str, float]] = [("base", 0.0)]
        jobs += [(f"cand-{i}", c.fraction) for i, c in enumerate(s.conditions)]
        rng.shuffle(jobs)  # no condition always runs first: drift hits all alike
        runs: dict[str, Run] = {}
        loads: dict[str, float] = {}
        took: dict[str, float] = {}
        for name, frac in jobs:
            kept = s.reuse and (folder / name / "run.json").exists()
            loads[name] = math.nan if kept else wait_for_quiet(s)
            t0 = time.monotonic()
            runs[name] = perf_run(s, folder / name, realization, frac)
            took[name] = time.monotonic() - t0
        for i, cond in enumerate(s.conditions):
            o = judge(s, trial, cond, realization, runs["base"], runs[f"cand-{i}"])
            o.load = max(loads["base"], loads[f"cand-{i}"])  # NaN if a run was reused
            o.seconds = took[f"cand-{i}"] + took["base"] / len(s.conditions)
            outcomes.append(o)
        done = time.monotonic() - started
        flags = " ".join(f"{o.condition}:{'F' if o.flagged else '.'}"
                         for o in outcomes[-len(s.conditions):])
        print(f"trial {trial}/{s.trials} ({done:.0f} s): {flags}", file=sys.stderr)
        if not s.keep_runs:
            shutil.rmtree(folder, ignore_errors=True)
    text = table(s, realization, outcomes, probe.meta, time.monotonic() - started)
    return Result(text, outcomes, realization, time.monotonic() - started)


def parse_args(argv: list[str] | None = None) -> tuple[Settings, argparse.Namespace]:
    cfg = load_gate_config()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trials", type=int, default=20, help="trials per condition [20]")
    p.add_argument("--shapes", action="append", default=None,
                   help="catalog for the perf suite (repeatable) [llm_llama7b_small]")
    p.add_argument("--target", default="host", help="target to time on [host]")
    p.add_argument("--realization", default=None,
                   help="realization to slow [the one with most timed cases]")
    p.add_argument("--all-realizations", action="store_true",
                   help="run every realization, not only the slowed one")
    p.add_argument("--fractions", default="0.05,0.10,0.20",
                   help="slowdowns to inject, comma-separated [0.05,0.10,0.20]")
    p.add_argument("--max-slowdown", default=None,
                   help=f"gate limit, 5%% or 0.05 [{cfg.max_slowdown * 100:g}%% from ci/gate.toml]")
    p.add_argument("--alpha", type=float, default=cfg.alpha,
                   help=f"gate significance level [{cfg.alpha:g}]")
    p.add_argument("--work", type=Path, default=None, help="folder for the runs [a temp dir]")
    p.add_argument("--keep", action="store_true", help="keep every run folder")
    p.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    p.add_argument("--json", type=Path, default=None, help="write per-trial outcomes here")
    p.add_argument("--record", type=Path, default=None,
                   help="put this benchmark's figures as one cell (catalogs x protocol x load) "
                        "into this dated record, e.g. docs/records/gate_matrix.toml")
    p.add_argument("--command", default=None,
                   help=f"the kbench command [{sys.executable} -m kbench.cli]")
    p.add_argument("--run-args", default="",
                   help='more options for kbench run, e.g. "--max-time 1 --rounds 20"')
    p.add_argument("--max-load", type=float, default=None,
                   help="before each run, wait until the 1-minute load average is at most this "
                        "(a shared machine's other work is noise the gate would see)")
    p.add_argument("--max-wait", type=float, default=600.0,
                   help="seconds to wait for --max-load before running anyway [600]")
    p.add_argument("--reuse", action="store_true",
                   help="gate the complete runs already in --work (kept with --keep) instead of "
                        "running them again: re-evaluates other gate settings on the same runs")
    p.add_argument("--seed", type=int, default=0, help="seed of the run order shuffle [0]")
    p.add_argument("--protocol", choices=("runs", "ab"), default="runs",
                   help="runs: two perf runs gated by `kbench gate`; ab: one interleaved "
                        "`kbench ab` run per condition [runs]")
    p.add_argument("--hog", type=int, default=0,
                   help="busy-looping processes pinned to CPUs 0..N-1 during the benchmark [0]")
    p.add_argument("--base-checkout", type=Path, default=None,
                   help="--protocol ab: build the base worker in this checkout (e.g. a clone of "
                        "the same commit: two builds, as the CI workflow has) [this checkout's]")
    p.add_argument("--ab-args", default="",
                   help="more options for kbench ab, after those of ci/gate.toml's [ci] table "
                        "(the CI workflow's: " + shlex.join(ci_ab_args()).replace("%", "%%")
                        + '), e.g. "--rounds '
                        '40"; a later option wins')
    ci_passes = ci_table().get("passes", 1)
    p.add_argument("--passes", type=int, default=ci_passes,
                   help=f"kbench run --passes: sweeps per run [{ci_passes}, from ci/gate.toml]")
    a = p.parse_args(argv)
    if a.trials < 1:
        p.error("--trials must be >= 1")
    try:
        fractions = [parse_fraction(f) for f in a.fractions.split(",") if f.strip()]
        max_slowdown = (parse_fraction(a.max_slowdown) if a.max_slowdown is not None
                        else cfg.max_slowdown)
    except ValueError as exc:
        p.error(str(exc))
    conditions = [Condition(AA, 0.0)] + [Condition(f"slowed {f:.0%}", f)
                                         for f in fractions if f > 0]
    work = a.work or Path(tempfile.mkdtemp(prefix="kbench-gate-benchmark-"))
    command = shlex.split(a.command) if a.command else [sys.executable, "-m", "kbench.cli"]
    s = Settings(trials=a.trials, shapes=a.shapes or ["llm_llama7b_small"], target=a.target,
                 realization=a.realization, conditions=conditions, max_slowdown=max_slowdown,
                 alpha=a.alpha, speed_targets=("*",), work=work, command=command,
                 all_realizations=a.all_realizations, seed=a.seed,
                 run_args=shlex.split(a.run_args), max_load=a.max_load, max_wait=a.max_wait,
                 reuse=a.reuse, keep_runs=a.keep or a.reuse, passes=a.passes,
                 protocol=a.protocol, hog=a.hog,
                 ab_args=ci_ab_args() + shlex.split(a.ab_args),
                 base_checkout=a.base_checkout.resolve() if a.base_checkout else None)
    return s, a


def _frac(k: int, n: int) -> str:
    return f"{k}/{n}"


def cell(s: Settings, res: Result, meta: dict[str, Any]) -> dict[str, Any]:
    """One cell of the benchmark matrix (catalogs x protocol x load): the
    figures the issue's targets are stated in, for the dated record."""
    by = {c.name: [o for o in res.outcomes if o.condition == c.name] for c in s.conditions}
    aa = by.get(AA, [])
    loads = [o.load for o in res.outcomes if not math.isnan(o.load)]
    out: dict[str, Any] = {
        "catalogs": ", ".join(s.shapes), "protocol": s.protocol, "hog": s.hog,
        # two runs: where they time (worker:*: every pass a fresh process; host: all the
        # passes of a run in its one process) and how many passes each has
        **({"target": s.target, "passes": s.passes} if s.protocol == "runs" else {}),
        "trials": s.trials, "slowed": res.realization,
        "limit": f"{s.max_slowdown:.1%}", "detect_limit": f"{DETECT:.1%}",
        "aa_gate_failed": _frac(sum(o.gate.failed for o in aa if o.gate), len(aa)),
        # two runs: the trials whose `kbench gate` exited 1 (a first look never fails on
        # speed; anything else that failed counts)
        **({"aa_exit_nonzero": _frac(sum(o.gate.exit_failed for o in aa if o.gate), len(aa))}
           if s.protocol == "runs" else {}),
        "aa_detect_flagged": _frac(sum(o.detect.failed for o in aa if o.detect), len(aa)),
        "aa_inconclusive": _frac(sum(o.gate.inconclusive for o in aa if o.gate),
                                 sum(o.gate.compared for o in aa if o.gate)),
        "minutes": round(res.seconds / 60, 1),
        "minutes_per_trial": round(res.seconds / 60 / max(1, s.trials), 2),
        "load_median": round(statistics.median(loads), 2) if loads else -1.0,
        "load_max": round(max(loads), 2) if loads else -1.0,
        "date": time.strftime("%Y-%m-%d"),
        "commit": str(meta.get("git_commit") or "")[:7],
        "command": shlex.join(["python", "ci/gate_benchmark.py", *sys.argv[1:]]),
    }
    for cond in s.conditions:
        if cond.fraction == 0:
            continue
        rows = by[cond.name]
        tag = f"s{round(cond.fraction * 100):g}"
        g = [o.gate for o in rows if o.gate]
        d = [o.detect for o in rows if o.detect]
        out[f"{tag}_gate_failed"] = _frac(sum(j.failed for j in g), len(rows))
        out[f"{tag}_gate_clean"] = _frac(sum(j.failed and not j.untouched_slow for j in g),
                                         len(rows))
        out[f"{tag}_untouched_flagged"] = sum(len(j.untouched_slow) for j in g)
        out[f"{tag}_big_caught"] = _frac(sum(j.big_caught for j in g), sum(j.big for j in g))
        out[f"{tag}_detect_flagged"] = _frac(sum(j.failed for j in d), len(rows))
        out[f"{tag}_detect_clean"] = _frac(sum(j.failed and not j.untouched_slow for j in d),
                                           len(rows))
        ratios = [r for o in rows for r in o.target_ratios if not math.isnan(r)]
        out[f"{tag}_median_ratio"] = round(statistics.median(ratios), 3) if ratios else -1.0
        out[f"{tag}_big_missed"] = missed_cases(g)
    return out


def missed_cases(judged: list[Judged], most: int = 5) -> list[str]:
    """The slowed realization's cases of at least BIG_NS the gate most
    often did not fail: "label: missed in n trials, paired ratio r" (r the
    median over those trials), most often missed first."""
    by: dict[str, list[float]] = {}
    for j in judged:
        for entry in j.big_missed:
            label, _, ratio = entry.rpartition(" ")
            by.setdefault(label, []).append(float(ratio))
    order = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:most]
    return [f"{label}: missed in {len(r)} trial(s), ratio {statistics.median(r):.3f}"
            for label, r in order]


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    text = str(v)
    if "\n" in text:
        return '"""' + text.replace("\\", "\\\\").replace('"""', '\\"""') + '"""'
    return json.dumps(text, ensure_ascii=False)


def cell_key(c: dict[str, Any]) -> tuple[str, str, int, str]:
    """What a cell of the matrix is of: catalogs, protocol, hog and, for two
    runs, the target they time on (a cell that names none: host)."""
    return (c["catalogs"], c["protocol"], c["hog"],
            c.get("target", "host") if c["protocol"] == "runs" else "")


def write_record(path: Path, new: dict[str, Any], machine: str) -> None:
    """Puts a cell into the matrix record at path (replacing the cell of the
    same catalogs, protocol, hog and two-run target), keeping its summary and notes, and
    rewrites its [record] table from the cells (the newest date; every
    commit, machine and command). Each cell names the machine it was
    measured on (a cell written before cells did takes the record's)."""
    import tomllib
    rec: dict[str, Any] = {}
    if path.exists():
        with path.open("rb") as fh:
            rec = tomllib.load(fh)
    before = rec.get("record", {}).get("machine", "")
    cells = [{**c, "machine": c.get("machine") or before} for c in rec.get("cell", [])
             if cell_key(c) != cell_key(new)]
    cells.append({**new, "machine": machine})
    order = {"smoke": 0, "llm_llama7b_small": 1, "resnet50_small": 2}
    cells.sort(key=lambda c: (c["protocol"] != "ab", c.get("target", "host") == "host",
                              c["hog"], order.get(c["catalogs"], 9), c["catalogs"]))
    lines = ["# A dated record read by docs/gen/kbdocs.py (gate_matrix): the regression gate's",
             "# false-alarm and detection rates per catalog, protocol and machine load, one",
             "# [[cell]] per `python ci/gate_benchmark.py ... --record` (written by it).", ""]
    for k in ("summary", "notes"):
        if k in rec:
            lines.append(f"{k} = {_toml_value(rec[k])}")
    commits = sorted({c["commit"] for c in cells})
    lines += ["", "[record]", f"date = {_toml_value(max(c['date'] for c in cells))}",
              f"commit = {_toml_value(', '.join(commits))}",
              f"machine = {_toml_value(' and '.join(sorted({c['machine'] for c in cells})))}",
              f"command = {_toml_value(sorted({c['command'] for c in cells}))}", ""]
    for c in cells:
        lines.append("[[cell]]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in c.items()]
        lines.append("")
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    s, a = parse_args(argv)
    res = run_ab(s) if s.protocol == "ab" else run(s)
    print(res.text)
    if a.markdown:
        a.markdown.write_text(res.text)
    if a.json:
        a.json.write_text(json.dumps([asdict(o) for o in res.outcomes], indent=1))
    if a.record:
        from kbench.results.store import machine_metadata
        meta = machine_metadata()
        machine = (f"a {os.cpu_count()}-core {meta.get('machine')} VM "
                   f"({meta.get('cpu_model')})")
        write_record(a.record, cell(s, res, meta), machine)
        print(f"recorded in {a.record}", file=sys.stderr)
    if not (a.keep or a.reuse) and a.work is None:
        shutil.rmtree(s.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
