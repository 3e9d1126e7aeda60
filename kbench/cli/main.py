"""The kbench command line."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import click

from kbench.cli.history import compare as compare_command
from kbench.cli.history import gate_command
from kbench.cli.history import history as history_command
from kbench.cli.mutate import mutate as mutate_command
from kbench.cli.report import report as report_command
from kbench.errors import KbenchError
from kbench.native import api
from kbench.problems.catalog import CatalogError, available_catalogs, load_catalog, resolve_catalog
from kbench.results.store import default_run_dir
from kbench.targets.spec import parse_target

REPO = Path(__file__).resolve().parents[2]
PEER_BACKENDS = ("ort",)
SUITES = {
    "correctness": ["test_correctness.py", "test_determinism.py"],
    "contracts": ["test_contracts.py"],
}
SUITES["all"] = SUITES["correctness"] + SUITES["contracts"]
SUITES["perf"] = ["test_perf.py"]
PERF_DEFAULT_SHAPES = ("llm_llama7b_small", "resnet50_small")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kbench")
def main() -> None:
    """kbench: verify and benchmark FP16 GEMM and convolution kernels.

    Every backend is checked against a float64 oracle under its declared
    error model; every verdict names the realization that actually ran."""


@main.command()
@click.option("--target", "targets", multiple=True, default=("host",), show_default=True,
              help="Target to describe (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def info(targets: tuple[str, ...], as_json: bool) -> None:
    """Show the host, CPU features, backends, realizations and library version."""
    out = []
    for spec in targets:
        try:
            t = parse_target(spec)
            out.append(t.info())
            t.close()
        except KbenchError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in out], indent=2))
        return
    for i in out:
        click.echo(f"target:           {i.name} ({i.kind}{', emulated' if i.emulated else ''})")
        click.echo(f"architecture:     {i.arch}")
        click.echo(f"cpu features:     {', '.join(i.cpu_features) or '(none of fp16/fhm/sve/sme)'}")
        if i.sme_vector_bits:
            click.echo(f"SME vector:       {i.sme_vector_bits} bits")
        click.echo(f"highest ISA:      {i.isa}")
        click.echo(f"library version:  {i.library_version}")
        click.echo(f"backends:         {', '.join(i.backends)}")
        if i.peers:
            click.echo(f"peers:            {', '.join(i.peers)} (other libraries, for comparison)")
        click.echo("realizations:")
        for r in i.realizations:
            forms = f" B:{'/'.join(r.bforms)}" if r.op == "gemm" else ""
            extra = " (peer)" if r.peer else ""
            if r.error_model != "gemm":
                extra += f" error model {r.error_model}"
            if r.conv_class != "any":
                extra += f" shapes {r.conv_class}"
            if r.blocked:
                extra += f" blocking {r.blocking_str()}"
            click.echo(f"  {r.name:40s} {r.op:7s} {r.backend:7s} accum={r.accum}"
                       f" isa={r.isa}{forms}{extra}")
            click.echo(f"  {'':40s} kernel {r.kernel}")


@main.command()
@click.option("--suite", type=click.Choice(sorted(SUITES)), default="all", show_default=True,
              help="correctness: every catalog case on every realization, judged against the "
                   "oracle, plus determinism; contracts: misuse must raise typed errors with "
                   "buffers intact; all: both; perf: verify, then time every case natively "
                   f"(default shapes: {', '.join(PERF_DEFAULT_SHAPES)}).")
@click.option("--target", "targets", multiple=True, default=("host",), show_default=True,
              help="Where kernels run (repeatable): host = this machine's library.")
@click.option("--backend", "backends", multiple=True,
              help="Only realizations of this backend (scalar, neon, sme, or a peer: ort); "
                   "repeatable.")
@click.option("--realization", "realizations", multiple=True,
              help="Only this realization (see `kbench info`); repeatable.")
@click.option("--shapes", "shapes", multiple=True,
              help="Catalog file, or a name from reference/ (repeatable). "
                   "Default: correctness_gemm and correctness_conv.")
@click.option("--kinds", default="",
              help="Comma-separated input kinds: exact, uniform, normal, specials. "
                   "Default: exact plus one real-valued kind per case.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Run folder for results.csv, run.json and verdicts.txt "
                   "[default: runs/<date>-<time>-<host>].")
@click.option("--rounds", type=click.IntRange(1), default=10, show_default=True,
              help="perf: timed rounds per case (in-process: at least this many; "
                   "pytest-benchmark calibrates more within --max-time).")
@click.option("--max-time", type=click.FloatRange(0.0), default=0.5, show_default=True,
              help="perf, in-process: seconds of kernel time per case for pytest-benchmark.")
@click.option("--min-round-ms", type=click.FloatRange(0.0), default=2.0, show_default=True,
              help="perf, workers: calls per round calibrated to last at least this long.")
@click.option("--cold", is_flag=True, help="perf: flush caches before every round.")
@click.option("--passes", type=click.IntRange(1), default=1, show_default=True,
              help="perf: sweep the catalogs this many times, splitting each case's rounds "
                   "(and --max-time) over the passes: background load during one stretch of "
                   "time then touches one pass of a case, and the gate can require a slowdown "
                   "in most passes. Use 3 or more for runs that `kbench gate` compares.")
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True,
              help="perf: threads per call.")
@click.option("--dispatch", "dispatch", type=click.Path(dir_okay=False, exists=True),
              default=None, help="A dispatch table from `kbench tune`: the library follows it, "
                                 "and every case also runs unforced, checked to be computed by "
                                 "the realization the table names.")
@click.option("--db", "db", type=click.Path(dir_okay=False), default=None,
              help="History database the run is appended to "
                   "[default: $XDG_DATA_HOME/kbench/history.sqlite].")
@click.option("--no-history", is_flag=True, help="Do not append the run to the history.")
@click.option("-v", "--verbose", is_flag=True, help="One line per test instead of dots.")
@click.option("-x", "--exitfirst", is_flag=True, help="Stop at the first failure.")
def run(suite: str, targets: tuple[str, ...], backends: tuple[str, ...],
        realizations: tuple[str, ...], shapes: tuple[str, ...], kinds: str, out: str | None,
        rounds: int, max_time: float, min_round_ms: float, cold: bool, passes: int,
        threads: int,
        dispatch: str | None, db: str | None, no_history: bool, verbose: bool,
        exitfirst: bool) -> None:
    """Run the suites and write a run folder; exit non-zero if anything failed."""
    import pytest

    suites_dir = REPO / "suites"
    if not suites_dir.is_dir():
        raise click.ClickException(f"the suites folder {suites_dir} is missing; run kbench "
                                   "from a checkout installed with `pip install -e .`")
    known = (*api.BACKENDS, *PEER_BACKENDS)
    for name in backends:
        if name not in known:
            raise click.BadParameter(f"{name!r} is not one of {', '.join(known)}",
                                     param_hint="--backend")
    for kind in filter(None, kinds.split(",")):
        if kind not in ("exact", "uniform", "normal", "specials"):
            raise click.BadParameter(f"{kind!r} is not an input kind", param_hint="--kinds")
    catalogs = []
    if suite == "perf" and not shapes:
        shapes = PERF_DEFAULT_SHAPES
    for s in shapes:
        try:
            path = resolve_catalog(s)
            load_catalog(path)
        except (CatalogError, FileNotFoundError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--shapes") from exc
        catalogs.append(str(path))
    for spec in targets:
        try:
            parse_target(spec).close()
        except KbenchError as exc:
            raise click.BadParameter(str(exc), param_hint="--target") from exc
    run_dir = Path(out) if out else default_run_dir(Path.cwd() / "runs")
    args = [str(suites_dir / f) for f in SUITES[suite]]
    args += ["--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), "-p", "no:cacheprovider",
             "--kb-out", str(run_dir), "-rfE", "--tb=short"]
    args += ["-v"] if verbose else ["-q"]
    if exitfirst:
        args.append("-x")
    for spec in targets:
        args += ["--kb-target", spec]
    for b in backends:
        args += ["--kb-backend", b]
    for r in realizations:
        args += ["--kb-realization", r]
    for c in catalogs:
        args += ["--kb-shapes", c]
    if kinds:
        args += ["--kb-kinds", kinds]
    if dispatch:
        try:  # each target checks the table against its machine when it loads it
            json.loads(Path(dispatch).read_text())
        except (OSError, ValueError) as exc:
            raise click.BadParameter(f"{dispatch}: not a JSON dispatch table ({exc})",
                                     param_hint="--dispatch") from exc
        args += ["--kb-dispatch", str(Path(dispatch).resolve())]
    if suite == "perf":
        run_dir.mkdir(parents=True, exist_ok=True)
        per_pass = max(2, -(-rounds // passes))
        args += ["--kb-perf", "--kb-rounds", str(rounds), "--kb-min-round-ms", str(min_round_ms),
                 "--kb-threads", str(threads), "--kb-passes", str(passes),
                 "--benchmark-min-rounds", str(per_pass),
                 "--benchmark-max-time", str(max_time / passes), "--benchmark-warmup", "off",
                 "--benchmark-json", str(run_dir / "benchmark.json"), "-p", "no:randomly"]
        if cold:
            args.append("--kb-cold")
    else:
        args += ["-p", "no:benchmark"]
    click.echo(f"kbench run: suite={suite} targets={','.join(targets)} -> {run_dir}")
    code = pytest.main(args)
    if not no_history:
        _append_history(run_dir, db)
    sys.exit(int(code))


def _append_history(run_dir: Path, db: str | None) -> None:
    """Adds the run folder (complete or not) to the history database."""
    from kbench.results.history import append_run, default_db_path
    from kbench.results.runfolder import RunFolderError, load_run
    path = Path(db) if db else default_db_path()
    try:
        run_id = append_run(path, load_run(run_dir))
    except (RunFolderError, OSError, ValueError, sqlite3.Error) as exc:
        click.echo(f"history: not appended ({exc})", err=True)
        return
    click.echo(f"history: run #{run_id} in {path}")


@main.command("realizations")
@click.option("--target", "targets", multiple=True, default=("host",), show_default=True,
              help="Target to list (repeatable).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (per target: every realization's fields) instead of text.")
def list_realizations(targets: tuple[str, ...], as_json: bool) -> None:
    """List every realization (backend, kernel, parameters such as cache
    blocking) and what it supports."""
    infos = []
    for spec in targets:
        try:
            t = parse_target(spec)
            infos.append(t.info())
            t.close()
        except KbenchError as exc:
            raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps({i.name: [r.to_dict() for r in i.realizations] for i in infos},
                              indent=2))
        return
    for info in infos:
        click.echo(f"{info.name}:")
        for r in info.realizations:
            supports = []
            if r.op == "gemm":
                supports.append("B " + "/".join(r.bforms))
                supports.append("M = 1 only" if r.max_m == 1 else "any M")
            else:
                supports.append("3x3 stride 1 only" if r.conv_class == "3x3s1" else "any shape")
                supports.append("groups 1 only" if r.max_groups == 1 else "any groups")
            params = [f"accum {r.accum}", f"isa {r.isa}", "threads up to selector"
                      if r.threads else "", f"SVL {r.vector_bits}" if r.vector_bits else "",
                      f"error model {r.error_model}", f"blocking {r.blocking_str()}",
                      "peer" if r.peer else ""]
            click.echo(f"  {r.name}")
            click.echo(f"      {r.op} on {r.backend}: kernel {r.kernel}")
            click.echo(f"      {', '.join(p for p in params if p)}; {', '.join(supports)}")


@main.command()
@click.option("--shapes", "shapes", multiple=True, required=True,
              help="Catalog(s) to tune over (file or name in reference/).")
@click.option("--target", "target_spec", default="host", show_default=True,
              help="The machine to tune for.")
@click.option("--budget", type=click.FloatRange(0.0), default=None,
              help="Stop timing new shapes after this many seconds (the rest stay untuned).")
@click.option("--rounds", type=click.IntRange(1), default=5, show_default=True)
@click.option("--min-round-ms", type=click.FloatRange(0.0), default=1.0, show_default=True)
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Run folder for dispatch.json, results.csv and run.json "
                   "[default: runs/<date>-<time>-<host>-tune].")
def tune(shapes: tuple[str, ...], target_spec: str, budget: float | None, rounds: int,
         min_round_ms: float, threads: int, out: str | None) -> None:
    """Verify and time every candidate realization per shape; write a dispatch table."""
    from kbench.harness.perf import PerfSettings
    from kbench.harness.tune import tune as run_tune
    from kbench.results.store import RunWriter, machine_metadata

    cases = []
    for s in shapes:
        try:
            cat = load_catalog(resolve_catalog(s))
        except (CatalogError, FileNotFoundError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--shapes") from exc
        cases += [(cat.name, c) for c in cat.cases]
    try:
        target = parse_target(target_spec)
        info = target.info()
    except KbenchError as exc:
        raise click.BadParameter(str(exc), param_hint="--target") from exc
    run_dir = Path(out) if out else Path(str(default_run_dir(Path.cwd() / "runs")) + "-tune")
    writer = RunWriter(run_dir, {"kind": "tune", **machine_metadata(),
                                 "targets": {target_spec: info.to_dict()}})
    settings = PerfSettings(warmup=1, rounds=rounds, min_round_ns=int(min_round_ms * 1e6),
                            threads=threads)
    if target.emulated:
        click.echo("note: the target is emulated; its times are not speeds, so the table "
                   "only exercises the mechanism")
    try:
        result = run_tune(target, cases, settings, budget, progress=click.echo)
    except KeyboardInterrupt:
        writer.close(complete=False)
        raise
    finally:
        target.close()
    for sr in result.shapes:
        writer.add_all(sr.verdicts.values())
    table_path = run_dir / "dispatch.json"
    table_path.write_text(json.dumps(result.table, indent=2))
    writer.metadata["dispatch_table"] = str(table_path)
    writer.metadata["tuning_defaults"] = {sr.case.name: sr.default for sr in result.shapes}
    writer.metadata["skipped_shapes"] = result.skipped
    writer.close(complete=not result.skipped)
    click.echo(f"\n{len(result.table['rules'])} rules:")
    for rule in result.table["rules"]:
        gain = rule["default_time_ns"] / rule["time_ns"] if rule["time_ns"] else float("nan")
        runner = rule.get("runner_up", {}).get("realization", "-")
        click.echo(f"  {rule['op']:6s} {json.dumps(rule['class'])}: {rule['realization']} "
                   f"({rule['time_ns'] / 1e3:.1f} us over {len(rule['shapes'])} shape(s); "
                   f"runner-up {runner}; {gain:.2f}x the default dispatch)")
    if result.skipped:
        click.echo(f"budget ran out: {len(result.skipped)} shape(s) not tuned")
    click.echo(f"dispatch table: {table_path}")


@main.command("catalogs")
def list_catalogs() -> None:
    """List the shape catalogs shipped in reference/."""
    for name, path in available_catalogs().items():
        try:
            cat = load_catalog(path)
            click.echo(f"{name:24s} {len(cat.gemm):4d} gemm {len(cat.conv):4d} conv  "
                       f"{cat.description}")
        except CatalogError as exc:
            click.echo(f"{name:24s} invalid: {exc}")


main.add_command(report_command)
main.add_command(history_command)
main.add_command(compare_command)
main.add_command(gate_command)
main.add_command(mutate_command)

if __name__ == "__main__":  # pragma: no cover
    main()
