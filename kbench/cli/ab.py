"""`kbench ab`: base and candidate builds timed interleaved in one run
(kbench.harness.ab), judged on paired ratios and per-round minima
(kbench.results.abstats); writes a run folder with ab.csv, ab.md and
run.json (machine load, CPU governor, settings)."""

from __future__ import annotations

import csv
import json
import math
import os
import random
import time
from pathlib import Path
from typing import Any

import click

from kbench.cli.history import parse_fraction

PERF_DEFAULT_SHAPES = ("llm_llama7b_small", "resnet50_small")


def _fraction(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        return parse_fraction(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


def _limit(ctx: click.Context, param: click.Parameter, value: str | None) -> float:
    """--min-effect, or the gate's own limit (the [gate] table's max_slowdown)
    so that `kbench ab` and `kbench gate --ab` judge one run alike."""
    if value is not None:
        return _fraction(ctx, param, value)
    from kbench.cli.history import load_gate_config
    try:
        return load_gate_config().max_slowdown
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"the gate's configuration: {exc}") from exc


def _fractions(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
               ) -> tuple[float, ...]:
    return tuple(_fraction(ctx, param, v) for v in values)


@click.command("ab")
@click.option("--base", "base_spec", required=True, metavar="SPEC",
              help="Target running the base build, e.g. worker:../base/build/worker/host/kb_worker "
                   "(build it with `python -m kbench.targets.crossbuild --arch host` in the base "
                   "checkout) or worker:'ssh board ./kb_worker.base'.")
@click.option("--cand", "cand_spec", default="worker:host", show_default=True, metavar="SPEC",
              help="Target running the candidate build (worker:host = this checkout's worker).")
@click.option("--shapes", multiple=True,
              help="Catalog (file or name in reference/), repeatable "
                   f"[default: {', '.join(PERF_DEFAULT_SHAPES)}].")
@click.option("--backend", "backends", multiple=True,
              help="Only realizations of this backend; repeatable.")
@click.option("--realization", "realizations", multiple=True,
              help="Only this realization; repeatable.")
@click.option("-k", "case_expr", default="", metavar="REGEX",
              help="Only cases whose CATALOG/CASE matches this regular expression.")
@click.option("--rounds", type=click.IntRange(2), default=60, show_default=True,
              help="Interleaved round pairs per case (the median's confidence interval needs "
                   "about 12 or more at the default alpha over a few dozen cases; the default "
                   "is the one whose recorded trials are in docs/performance.md).")
@click.option("--min-round-ms", type=click.FloatRange(0.0), default=2.0, show_default=True,
              help="Calls per round calibrated (once, on the candidate) to last at least this "
                   "long; both sides then run that many calls per round.")
@click.option("--min-effect", default=None, callback=_limit, metavar="LIMIT",
              help="The limit the verdicts are judged at, the regression gate's: slower "
                   "(the paired ratio's confidence interval above 1 + LIMIT), inconclusive "
                   "(it straddles 1 + LIMIT), not slower (below it), same (within ± LIMIT), "
                   "faster. [default: the gate's max_slowdown, ci/gate.toml: 5%]")
@click.option("--alpha", type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
              default=0.01, show_default=True,
              help="Chance of any false verdict in the run (Bonferroni over the cases).")
@click.option("--budget", "budget_s", type=click.FloatRange(0.0, min_open=True), default=None,
              metavar="SECONDS",
              help="Sample sequentially within this time: a case runs stages of --rounds "
                   "pairs, judged after each, until its verdict is decided (slower, faster, "
                   "same), --max-looks stages are done or its share of the budget (what is "
                   "left over the cases left) is spent. Every look is judged at alpha over "
                   "all the looks the run may take (Bonferroni). [default: one stage]")
@click.option("--gate-limit", "gate_limits", multiple=True, callback=_fractions,
              metavar="LIMIT",
              help="With --budget: keep sampling a case until it is decided at this limit "
                   "too (the regression gate's max_slowdown, at which `kbench gate --ab` "
                   "judges this run again), e.g. 5%; repeatable. Verdicts stay at "
                   "--min-effect.")
@click.option("--max-looks", type=click.IntRange(2, 50), default=6, show_default=True,
              help="With --budget: most stages of --rounds pairs a case takes.")
@click.option("--processes", type=click.IntRange(1, 64), default=3, show_default=True,
              help="Blocks of each case's rounds, each in a fresh pair of worker processes "
                   "(a process keeps one memory layout for its life: layout is then "
                   "variance the statistics see, not a bias); a slower or faster verdict "
                   "needs every block to agree. In-process targets cannot be restarted.")
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Threads per call.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the per-round side order.")
@click.option("--cpu", type=int, default=None,
              help="Pin both sides' processes to this CPU [default: the quietest CPU over a "
                   "0.3 s sample]; -1: do not pin.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Run folder [default: runs/<date>-<time>-<host>-ab].")
@click.option("--settle", is_flag=True,
              help="This run settles cases a gate left inconclusive (the command the gate "
                   "prints, one per case pair): a case still undecided when its budget or "
                   "looks are spent is reported as inconclusive at the limit, with its "
                   "interval, and no further command is offered. Give its folder to the gate "
                   "as one more --ab.")
@click.option("--markdown", type=click.Path(dir_okay=False), default=None,
              help="Also write the Markdown summary here.")
def ab(base_spec: str, cand_spec: str, shapes: tuple[str, ...], backends: tuple[str, ...],
       realizations: tuple[str, ...], case_expr: str, rounds: int, min_round_ms: float,
       min_effect: float, alpha: float, threads: int, seed: int, cpu: int | None,
       out: str | None, markdown: str | None, budget_s: float | None = None,
       max_looks: int = 6, processes: int = 3, gate_limits: tuple[float, ...] = (),
       settle: bool = False) -> None:
    """Time a base and a candidate build interleaved (rounds alternate in
    one run) and report, per case, the paired ratio with its confidence
    interval, the ratio of minima, each side's CV and a verdict at the
    gate's limit (slower, inconclusive, not slower, same, faster: the words
    and limit of `kbench gate --ab`). Exit 1 if any case is slower or fails
    to verify; inconclusive cases are listed with the command that settles
    each."""
    from kbench.errors import KbenchError
    from kbench.harness import ab as proto
    from kbench.harness.perf import PERF_KIND
    from kbench.harness.runner import InputCache, Job, applicable
    from kbench.harness.selection import CaseFilter, filter_errors
    from kbench.problems.catalog import CatalogError, load_catalog, resolve_catalog
    from kbench.results.machine import busy, describe, machine_state
    from kbench.results.store import default_run_dir, machine_metadata
    from kbench.targets.spec import parse_target
    from kbench.targets.worker import WorkerEngine

    if gate_limits and not budget_s:
        raise click.UsageError("--gate-limit needs --budget: it says when sequential "
                               "sampling may stop")
    keep = None
    if case_expr:
        try:
            keep = CaseFilter(case_expr)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="-k") from exc
    cases = []
    for s in shapes or PERF_DEFAULT_SHAPES:
        try:
            cat = load_catalog(resolve_catalog(s))
        except (CatalogError, FileNotFoundError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--shapes") from exc
        cases += [(cat.name, c) for c in cat.cases
                  if keep is None or keep.matches(cat.name, c.name)]
    try:
        base, cand = parse_target(base_spec), parse_target(cand_spec)
        infos = {base_spec: base.info(), cand_spec: cand.info()}
    except KbenchError as exc:
        raise click.BadParameter(str(exc), param_hint="--base/--cand") from exc
    try:
        for spec, t in ((base_spec, base), (cand_spec, cand)):
            if t.emulated:
                raise click.UsageError(f"{spec} is emulated: its times are not speed (compare "
                                       "emulated runs by instruction counts or correctness)")
        errors = filter_errors(infos, backends, realizations)
        if errors:
            raise click.UsageError("\n".join(errors))
        base_reals = {r.name: r for r in infos[base_spec].realizations}
        chosen = [r for r in infos[cand_spec].realizations if r.name in base_reals
                  and (not backends or r.backend in backends)
                  and (not realizations or r.name in realizations)]
        jobs = [(Job(c, PERF_KIND, base_reals[r.name], base_spec, cat),
                 Job(c, PERF_KIND, r, cand_spec, cat))
                for cat, c in cases for r in chosen if applicable(c, r)]
        if not jobs:
            raise click.UsageError("the filters select no case that both targets can run")
        settings = proto.AbSettings(rounds=rounds, min_round_ns=int(min_round_ms * 1e6),
                                    threads=threads, min_effect=min_effect, alpha=alpha,
                                    seed=seed, looks=max_looks if budget_s else 1,
                                    budget_s=budget_s or 0.0, cases=len(jobs),
                                    processes=processes,
                                    gate_limits=gate_limits if budget_s else (),
                                    settle=settle)
        run_dir = Path(out) if out else Path(str(default_run_dir(Path.cwd() / "runs")) + "-ab")
        from kbench.results.runlock import lock_folder
        from kbench.results.store import RunDirError
        try:  # held until this process exits: a second `kbench ab --out` here is refused
            lock = lock_folder(run_dir)  # noqa: F841
        except RunDirError as exc:
            raise click.ClickException(f"--out: {exc}") from None
        state = machine_state()
        pinned = None if cpu == -1 else proto.pin_together([base, cand], cpu)
        meta: dict[str, Any] = {"kind": "ab", **machine_metadata(), "complete": False,
                                "base": base_spec, "cand": cand_spec,
                                "settings": settings.__dict__, "pinned_cpu": pinned,
                                "machine_state": {"start": state},
                                "targets": {k: v.to_dict() for k, v in infos.items()}}
        (run_dir / "run.json").write_text(json.dumps(meta, indent=2, default=str))
        at = "".join(f" and at ±{g:.1%}" for g in gate_limits)
        how = (f"stages of {rounds} interleaved rounds until decided at ±{min_effect:.1%}{at} "
               f"(at most {max_looks}, {budget_s:g} s in all)" if budget_s
               else f"{rounds} interleaved rounds")
        if processes > 1:
            how += f" in {len(proto.block_sizes(rounds, processes))} blocks of fresh processes"
        click.echo(f"kbench ab: base {base_spec} vs candidate {cand_spec}, {len(jobs)} case(s) "
                   f"x {how} -> {run_dir}")
        click.echo(f"machine: {describe(state)}; both sides pinned to "
                   + (f"CPU {pinned}" if pinned is not None else "no CPU")
                   + ("  (busy: other work competes; interleaving shares it out)"
                      if busy(state) else ""))
        fixed = [spec for spec, t in ((base_spec, base), (cand_spec, cand))
                 if not isinstance(t.engine, WorkerEngine)]
        if processes > 1 and fixed:
            click.echo(f"note: {', '.join(fixed)} runs in this process: its blocks of rounds "
                       "share one process (use worker: targets for fresh processes)")

        def fresh() -> None:  # both sides in new processes, pinned as before
            proto.restart([base, cand])
            if pinned is not None:
                proto.pin_together([base, cand], pinned)
        rng = random.Random(seed)
        cache = InputCache()
        results: list[proto.AbCase] = []
        start = time.monotonic()
        for i, (jb, jc) in enumerate(jobs, 1):
            if pinned is not None:  # again: a worker restarted after a crash is a new process
                proto.pin_together([base, cand], pinned)
            deadline = None
            if budget_s:  # this case's share of what is left
                left = budget_s - (time.monotonic() - start)
                deadline = time.monotonic() + max(left, 0.0) / (len(jobs) - i + 1)
            results.append(proto.run_case(base, cand, jb, jc, settings, rng, cache, deadline,
                                          fresh if processes > 1 else None))
            r = results[-1]
            head = f"[{i}/{len(jobs)}] {jc.realization.name} {jc.catalog}/{jc.case.name}"
            if r.failure:
                click.echo(f"{head}: not timed ({r.failure})")
            else:
                ratios = [c / b for b, c in zip(r.base_rounds, r.cand_rounds, strict=True)]
                mid = sorted(ratios)[len(ratios) // 2]
                click.echo(f"{head}: base {min(r.base_rounds) / 1e3:.1f} us, cand "
                           f"{min(r.cand_rounds) / 1e3:.1f} us (min), paired ratio ~{mid:.3f}"
                           + (f", {r.looks} stage(s)" if budget_s else ""))
        proto.judge(results, settings)
        meta["machine_state"]["end"] = machine_state()
        meta["seconds"] = round(time.monotonic() - start, 1)
        meta["complete"] = True
        meta["verdicts"] = _counts(results)
        meta["cases"] = [{"case": f"{r.job.catalog}/{r.job.case.name}",
                          "realization": r.job.realization.name,
                          "verdict": r.stats.verdict if r.stats else "failed",
                          "base_cv": r.stats.base_cv if r.stats else None,
                          "cand_cv": r.stats.cand_cv if r.stats else None,
                          "median_ratio": r.stats.median_ratio if r.stats else None}
                         for r in results]
        (run_dir / "run.json").write_text(json.dumps(meta, indent=2, default=str))
        _write_csv(run_dir / "ab.csv", results)
        text = summary_markdown(meta, results, settings)
        (run_dir / "ab.md").write_text(text)
        if markdown:
            Path(markdown).write_text(text)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:  # a CI job's summary page, as kbench gate does
            with open(summary, "a") as f:
                f.write(text + "\n")
        click.echo("")
        click.echo(text)
    finally:
        base.close()
        cand.close()
    bad = [r for r in results if r.failure or (r.stats and r.stats.verdict == "slower")]
    raise SystemExit(1 if bad else 0)


def _counts(results: list[Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in results:
        v = r.stats.verdict if r.stats else ("failed" if r.failure else "untimed")
        out[v] = out.get(v, 0) + 1
    return out


def _write_csv(path: Path, results: list[Any]) -> None:
    rows = [r.row() for r in results]
    cols: list[str] = []
    for row in rows:
        cols += [k for k in row if k not in cols]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)


def summary_markdown(meta: dict[str, Any], results: list[Any], settings: Any) -> str:
    """The run's verdict and per-case statistics as Markdown, the undecided
    (inconclusive) cases counted once, with the command that settles each."""
    from kbench.results.abgate import settle_command
    from kbench.results.abstats import FASTER, INCONCLUSIVE, NOT_SLOWER, SAME, SLOWER
    from kbench.results.machine import describe
    settle = bool(getattr(settings, "settle", False))
    counts = _counts(results)
    failed = counts.get("failed", 0)
    slower = counts.get("slower", 0)
    mark = "FAILED" if failed or slower else "PASSED"
    st = meta.get("machine_state", {})
    lines = [f"## kbench ab: {mark}", "",
             f"- base `{meta['base']}`, candidate `{meta['cand']}`",
             f"- {settings.rounds} interleaved round pairs per case"
             + (f" in {getattr(settings, 'processes', 1)} blocks of fresh processes, each "
                "round's buffers at a random place"
                if getattr(settings, "processes", 1) > 1 else "")
             + "; verdict on the median "
             f"paired ratio (candidate/base) with its sign-test confidence interval at "
             f"1 - {settings.alpha:g}/cases (Bonferroni), at the limit "
             f"±{settings.min_effect:.1%} (the gate's words: slower above it, inconclusive "
             "straddling it, not slower below it, same within it, faster), "
             "and the ratio of per-round minima"
             + (" (a slower or faster verdict needs every block to agree)"
                if getattr(settings, "processes", 1) > 1 else ""),
             f"- machine at start: {describe(st.get('start', {}))}; both sides pinned to "
             + (f"CPU {meta['pinned_cpu']}" if meta.get("pinned_cpu") is not None else "no CPU"),
             *([f"- machine at end: {describe(st['end'])}"] if st.get("end") else []),
             "- cases: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
             + f"; {counts.get(INCONCLUSIVE, 0)} undecided", "",
             "| realization | case | base min | cand min | paired ratio (CI) | min ratio "
             "| CV base / cand | verdict | why |",
             "|---|---|---:|---:|---:|---:|---:|---|---|"]
    order = {"failed": 0, SLOWER: 1, INCONCLUSIVE: 2, NOT_SLOWER: 3, FASTER: 4, SAME: 5}

    def key(r: Any) -> tuple[int, str]:
        v = r.stats.verdict if r.stats else "failed"
        return order.get(v, 6), r.job.case.name
    for r in sorted(results, key=key):
        name = f"`{r.job.realization.name}`"
        case = f"{r.job.catalog}/{r.job.case.name}"
        s = r.stats
        if s is None:
            lines.append(f"| {name} | {case} | – | – | – | – | – | **failed**: "
                         f"{r.failure.replace('|', '/')} | |")
            continue
        ci = "–" if math.isnan(s.ci_low) else f"[{s.ci_low:.3f}, {s.ci_high:.3f}]"
        verdict = f"**{s.verdict}**" if s.verdict in (SLOWER, INCONCLUSIVE) else s.verdict
        why = s.reason
        if settle and s.verdict == INCONCLUSIVE:
            why = f"at the limit after settling: {why}"
        lines.append(f"| {name} | {case} | {s.base_min_ns / 1e3:.2f} µs | "
                     f"{s.cand_min_ns / 1e3:.2f} µs | {s.median_ratio:.3f} {ci} | "
                     f"{s.min_ratio:.3f} | {s.base_cv:.1%} / {s.cand_cv:.1%} | {verdict} "
                     f"| {why.replace('|', '/')} |")
    undecided = [r for r in results if r.stats and r.stats.verdict == INCONCLUSIVE]
    if undecided and settle:
        lines += ["", f"{len(undecided)} case(s) inconclusive at the limit after settling: "
                  "their intervals straddle it (or their minima or blocks disagree) after the "
                  "settle budget. Neither a pass nor a regression at this limit; not a failure "
                  "of `kbench gate --ab` unless --strict."]
    elif undecided:
        limit = settings.min_effect
        lines += ["", f"{len(undecided)} inconclusive case(s): undecided at ±{limit:.1%}, "
                  "neither a pass nor a regression. Settle each (one command per case pair, "
                  "its own folder), then give that folder to `kbench gate` as one more --ab:",
                  "", "```sh",
                  *(settle_command(meta["base"], meta["cand"],
                                   f"{r.job.realization.name} {r.job.catalog}/{r.job.case.name}",
                                   limit, settings.rounds) for r in undecided),
                  "```"]
    lines.append("")
    return "\n".join(lines)
