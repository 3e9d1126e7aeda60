"""The kbench command line."""

from __future__ import annotations

import json
import math
import os
import shlex
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbench.cli import plugins as cli_plugins
from kbench.cli.lazy import LazyGroup
from kbench.errors import KbenchError
from kbench.resources import is_checkout, resource_dir

if TYPE_CHECKING:
    from kbench.results.runlock import RunLock

# Start-up stays fast (`kbench --version`, `--help`): numpy, pandas, scipy,
# matplotlib and the native library are imported inside the commands that use them.
REPO = Path(__file__).resolve().parents[2]


class FiniteFloat(click.ParamType):
    """A finite float >= minimum (click.FloatRange lets nan and inf through)."""

    name = "float"

    def __init__(self, minimum: float = 0.0) -> None:
        self.minimum = minimum

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        try:
            x = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(x) or x < self.minimum:
            self.fail(f"{value!r} is not a finite number >= {self.minimum:g}", param, ctx)
        return x


def isolation_options(f: Any) -> Any:
    """--plugin-in-process and --call-timeout (passed as plugin_in_process and
    call_timeout): where the host's plugins run, and a fixed time bound for
    every request to a worker process."""
    f = click.option("--call-timeout", "call_timeout", type=FiniteFloat(0.1), default=None,
                     metavar="SECONDS",
                     help="Kill a worker process (host plugins, qemu, ssh, adb, qemu-python) "
                          "that takes longer than this for one request; the call becomes a "
                          "timeout verdict and the run goes on. [default: a bound from the "
                          "call's flops and the target, with a larger factor for emulated "
                          "targets]")(f)
    return click.option("--plugin-in-process", "plugin_in_process", is_flag=True,
                        help="Load the host's plugins into kbench's own process instead of "
                             "the host worker: for a debugger only. Unsafe: a crash, exit() "
                             "or hang inside a plugin then ends or freezes the whole run and "
                             "loses its verdicts.")(f)


SUITES = {
    "correctness": ["test_targets.py", "test_correctness.py", "test_determinism.py"],
    "contracts": ["test_targets.py", "test_contracts.py", "test_plugin_probes.py",
                  "test_plugin_packers.py"],
}
SUITES["all"] = list(dict.fromkeys(SUITES["correctness"] + SUITES["contracts"]))
SUITES["perf"] = ["test_perf.py"]
PERF_DEFAULT_SHAPES = ("llm_llama7b_small", "resnet50_small")
TAILS_CATALOG = "tails"  # kbench.problems.tails.CATALOG (not imported: the CLI starts lazily)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]},
             lazy_commands={
                 "report": ("kbench.cli.report:report",
                            "Write a self-contained HTML report and CSV tables for the run "
                            "folder RUN: verdicts per backend and catalog, GFLOP/s and "
                            "speedups, per-model totals, error versus K and the run's "
                            "metadata."),
                 "history": ("kbench.cli.history:history",
                             "List recorded runs (newest first); --add records run folders."),
                 "compare": ("kbench.cli.history:compare",
                             "Compare two runs case by case: ratio of median times, one-sided "
                             "moderated t-tests on the logs of the per-pass medians (the pass is "
                             "the unit; a case with one pass a side gets no p-value; each case's "
                             "variance is shrunk towards that of the run's cases of its size; "
                             "the null is a move of half the slowdown limit, what two processes "
                             "of one build can differ by; a realization of 5 or more cases is "
                             "also tested with its cases together), and a verdict (faster, "
                             "slower, same; not-comparable for emulated times or too few "
                             "passes); instruction counts of emulated targets exactly (more, "
                             "fewer, same)."),
                 "ab": ("kbench.cli.ab:ab",
                        "Time a base and a candidate build interleaved (rounds alternate in "
                        "one run) and report, per case, the paired ratio with its confidence "
                        "interval, the ratio of minima, each side's CV and a verdict at the "
                        "gate's limit (slower, inconclusive, not slower, same, faster: the "
                        "words and limit of `kbench gate --ab`)."),
                 "count": ("kbench.cli.count:count",
                           "Count the exact dynamic instructions of one single-threaded call "
                           "of a realization, per phase (validate, checksum, pack_lhs, "
                           "pack_rhs, kernel, other; and pack_b), with the instruction mix, the "
                           "floor and efficiency, and the ratio to the KleidiAI anchor table "
                           "when the shape is one of its."),
                 "baseline": ("kbench.cli.count:baseline",
                              "The committed instruction-count baseline "
                              "(reference/counts/baseline.csv): regenerate it, write it from a "
                              "run, or check a run against it."),
                 "anchors": ("kbench.cli.count:anchors",
                             "Our counts against the peer anchor tables (KleidiAI's measured "
                             "counts) on the shapes both cover; exit 1 if no counted case "
                             "matches (or, with --best, a limit is passed)."),
                 "mutate": ("kbench.cli.mutate:mutate",
                            "Apply each mutant of the catalog in a scratch copy of the "
                            "repository, rebuild exactly what it touches (host module, host and "
                            "aarch64 workers, the aarch64 module of the emulated Python), run "
                            "the suites and targets it declares, and record whether they killed "
                            "it."),
                 "gate": ("kbench.cli.history:gate_command",
                          "The regression gate: exit 1 on any correctness failure or error in "
                          "CAND, any case of BASE missing from CAND, an incomplete run, "
                          "(on emulated targets, exactly) an instruction count of a call or a B "
                          "packing grown by more than --max-count-growth, or (with --ab) a "
                          "slowdown whose interval lies wholly above 1 + --max-slowdown; 0 if "
                          "none; 2 on bad input."),
             })
@click.version_option(package_name="kbench")
def main() -> None:
    """kbench: verify and benchmark FP16 GEMM and convolution kernels.

    Every backend is checked against a float64 oracle under its declared
    error model; every verdict names the realization that actually ran."""
    _check_environment()


class EnvironmentRefused(click.ClickException):
    """A KBENCH_* variable set to a value it does not take: exit 2, no usage."""

    exit_code = 2


def _check_environment() -> None:
    """Every KBENCH_* variable kbench reads takes the values it says
    (kbench.native.envvars); one line each for those that do not."""
    from kbench.native import envvars
    from kbench.native.isa import ISA_LEVELS
    bad = envvars.problems(os.environ, ISA_LEVELS)
    if bad:
        raise EnvironmentRefused("\n".join(bad))


@main.command()
@click.option("--target", "targets", multiple=True, default=("host",), show_default=True,
              help="Target to describe (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
@click.option("--fleet", "fleet", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Check every target of this fleet file at once (reachable, architecture, "
                   "features, SVL); exit 1 if any is unreachable.")
@cli_plugins.plugin_option
@isolation_options
def info(targets: tuple[str, ...], as_json: bool, plugins: tuple[str, ...],
         fleet: str | None = None, plugin_in_process: bool = False,
         call_timeout: float | None = None) -> None:
    """Show the host, CPU features, backends, realizations and library version.

    With --plugin, the plugins are loaded (on the host in the host worker, a
    child process): a file that cannot be loaded, or whose entry point
    crashes or hangs, is one line naming it and the reason, and the command
    exits 1."""
    from kbench.native.isa import classes_of as isa_classes_of
    from kbench.targets.spec import parse_target
    if fleet:
        _fleet_info(Path(fleet), as_json, plugins)
        return
    out = []
    for spec in targets:
        try:
            t = parse_target(spec, plugins, plugin_in_process=plugin_in_process,
                             call_timeout=call_timeout)
            out.append(t.info())
            t.close()
        except KbenchError as exc:
            raise click.ClickException(str(exc)) from exc
    if plugins and cli_plugins.report_plugin_errors(out, going_on=False):
        raise SystemExit(1)
    if as_json:
        click.echo(json.dumps([i.to_dict() for i in out], indent=2))
        return
    for i in out:
        click.echo(f"target:           {i.name} ({i.kind}{', emulated' if i.emulated else ''})")
        click.echo(f"architecture:     {i.arch}")
        click.echo(f"cpu features:     {', '.join(i.cpu_features) or '(none of fp16/fhm/sve/sme)'}")
        if i.sve_vector_bits:
            click.echo(f"SVE vector:       {i.sve_vector_bits} bits")
        if i.sme_vector_bits:
            click.echo(f"SME vector:       {i.sme_vector_bits} bits")
        click.echo(f"ISA classes:      {', '.join(isa_classes_of(i.cpu_features))}")
        click.echo(f"highest ISA:      {i.isa}")
        click.echo(f"library version:  {i.library_version}")
        click.echo(f"backends:         {', '.join(i.backends)}")
        if i.peers:
            click.echo(f"peers:            {', '.join(i.peers)} (other libraries, for comparison)")
        for line in cli_plugins.plugin_lines(i):
            click.echo(line)
        click.echo("realizations:")
        for r in i.realizations:
            forms = f" B:{'/'.join(r.bforms)}" if r.op == "gemm" else ""
            extra = " (peer)" if r.peer else ""
            if r.plugin:
                extra += f" (plugin {r.plugin})"
            if r.error_model != "gemm":
                extra += f" error model {r.error_model}"
            if r.conv_class != "any":
                extra += f" shapes {r.conv_class}"
            if r.blocked:
                extra += f" blocking {r.blocking_str()}"
            if r.nan_clamp != "propagate":
                extra += f" NaN->clamp_{r.nan_clamp[3:]}"
            click.echo(f"  {r.name:40s} {r.op:7s} {r.backend:7s} accum={r.accum}"
                       f" isa={r.isa}{forms}{extra}")
            click.echo(f"  {'':40s} kernel {r.kernel}")


@main.command()
@click.option("--suite", type=click.Choice(sorted(SUITES)), default="all", show_default=True,
              help="correctness: every catalog case on every realization, judged against the "
                   "oracle, plus determinism; contracts: misuse must raise typed errors with "
                   "buffers intact; all: both; perf: verify, then time every case natively "
                   f"(default shapes: {', '.join(PERF_DEFAULT_SHAPES)}).")
@click.option("--target", "targets", multiple=True,
              help="Where kernels run (repeatable): host = this machine's library, "
                   "qemu:..., ssh:[user@]host[:port], adb:[SERIAL], ... [default: host, "
                   "unless --fleet is given]")
@click.option("--backend", "backends", multiple=True,
              help="Only realizations of this backend (scalar, neon, sme, a peer such as "
                   "ort, plugin, or plugin:NAME); repeatable.")
@click.option("--realization", "realizations", multiple=True,
              help="Only this realization (see `kbench info`); repeatable.")
@click.option("--shapes", "shapes", multiple=True,
              help="Catalog file, or a name from reference/ (repeatable); `tails`: only "
                   "the tail shapes derived from each realization's blocking. Default: "
                   "correctness_gemm and correctness_conv (each with every realization's "
                   "tails; smoke with a sample of them).")
@click.option("--tails", type=click.Choice(["auto", "full", "sample", "none"]), default="auto",
              show_default=True,
              help="Tail shapes derived from each realization's blocking (every residue of "
                   "N and M mod its steps, K around its unroll): auto = full with the default, "
                   "correctness and edge catalogs, a sample with smoke and emulated, none "
                   "with the others; or full, sample, none whatever the catalogs.")
@click.option("--kinds", default="",
              help="Comma-separated input kinds: exact, uniform, normal, specials. "
                   "Default: exact plus one real-valued kind per case.")
@click.option("-k", "case_expr", default="", metavar="REGEX",
              help="Only cases whose CATALOG/CASE matches this regular expression "
                   "(re.search, as Google Benchmark's --benchmark_filter), e.g. -k conv3x3, "
                   "-k '^resnet50_small/', -k '/m1_n4096'.")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Run folder for results.csv, run.json and verdicts.txt "
                   "[default: a new runs/<date>-<time>-<host>[-N]]. A folder that already "
                   "holds a run is refused unless --force.")
@click.option("--force", is_flag=True,
              help="Replace the run in --out (its files are removed first, so nothing of "
                   "the old run is mixed into the new one).")
@click.option("--rounds", type=click.IntRange(1), default=10, show_default=True,
              help="perf: timed rounds per case (in-process: at least this many; "
                   "pytest-benchmark calibrates more within --max-time).")
@click.option("--max-time", type=FiniteFloat(0.0), default=0.5, show_default=True,
              help="perf, in-process: seconds of kernel time per case for pytest-benchmark.")
@click.option("--min-round-ms", type=FiniteFloat(0.0), default=2.0, show_default=True,
              help="perf, workers: calls per round calibrated to last at least this long.")
@click.option("--cold", is_flag=True, help="perf: flush caches before every round.")
@click.option("--warmup", type=click.IntRange(0), default=2, show_default=True,
              help="perf: untimed calls before the timed rounds (0 on emulated targets "
                   "whose times are not speeds anyway, to spend the time on counting).")
@click.option("--passes", type=click.IntRange(1), default=1, show_default=True,
              help="perf: sweep the catalogs this many times, splitting each case's rounds "
                   "(and --max-time) over the passes: background load during one stretch of "
                   "time then touches one pass of a case, and the gate can require a slowdown "
                   "in most passes. Use 3 or more for runs that `kbench gate` compares; on a "
                   "worker target each pass runs in a fresh process, so the process is the "
                   "comparison's unit (--target worker:host --passes 5).")
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True,
              help="perf: threads per call.")
@click.option("--count-method", type=click.Choice(["tb", "insn", "none"]), default="tb",
              show_default=True,
              help="perf on qemu: targets: count the exact dynamic instructions of one "
                   "single-threaded call per phase, from QEMU's log of translation blocks (tb) "
                   "or of single instructions (insn: slower, an independent cross-check); "
                   "none: do not count.")
@click.option("--dispatch", "dispatch", type=click.Path(dir_okay=False, exists=True),
              default=None, help="A dispatch table from `kbench tune`: the library follows it, "
                                 "and every case also runs unforced, checked to be computed by "
                                 "the realization the table names.")
@click.option("--db", "db", default=None,
              help="History database the run is appended to: an SQLite file or a "
                   "postgresql://USER@HOST/DB URL shared by many runners "
                   "[default: $KBENCH_DB, else $XDG_DATA_HOME/kbench/history.sqlite].")
@click.option("--no-history", is_flag=True, help="Do not append the run to the history.")
@click.option("--strict-history", is_flag=True, hidden=True,
              help="The default now: a run that passed exits 1 when it cannot be appended to "
                   "the history (or its report cannot be written).")
@click.option("-v", "--verbose", is_flag=True, help="One line per test instead of dots.")
@click.option("-x", "--exitfirst", is_flag=True, help="Stop at the first failure.")
@click.option("-n", "--jobs", type=click.IntRange(1, 64), default=None,
              help="Worker processes for several targets (pytest-xdist, one group per "
                   "target: a slow target never holds up the others; one run folder, one "
                   "history entry); with a single target, its tests spread over N "
                   "processes, each opening the target. 1 runs everything in this process. "
                   "[default: one per target, at most 8; perf runs use 1]")
@click.option("--fleet", "fleet", type=click.Path(dir_okay=False, exists=True), default=None,
              help="A fleet file (TOML) naming the targets with labels; adds them to "
                   "--target (see `kbench info --fleet`).")
@cli_plugins.plugin_option
@isolation_options
@click.option("--strict-plugins", is_flag=True,
              help="Plugin contract-probe findings (silently wrong results, crashes) fail the "
                   "run; by default they are recorded as findings about the plugin.")
@click.option("--coverage", is_flag=True,
              help="On qemu: targets, record which instructions of every kernel and packer ran "
                   "(ours per micro-kernel or packer file, a plugin's per function): "
                   "RUN_FOLDER/coverage.csv, a table at the end and in the report. Not a "
                   "verdict: a gap is a finding unless --min-coverage is given.")
@click.option("--min-coverage", type=click.FloatRange(0, 100), default=None, metavar="PERCENT",
              help="Fail the run when a kernel, packer or plugin function is covered below "
                   "PERCENT (implies --coverage).")
@click.option("--report/--no-report", "with_report", default=True, show_default=True,
              envvar="KBENCH_RUN_REPORT", show_envvar=True,
              help="Write the HTML report and its CSV tables into RUN_FOLDER/report when the "
                   "run ends (as `kbench report RUN_FOLDER`) and print its path.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the run's summary as one JSON document on stdout (schema: "
                   "reports/schema/run.schema.json); progress and the text summary go to "
                   "stderr.")
def run(suite: str, targets: tuple[str, ...], backends: tuple[str, ...],
        realizations: tuple[str, ...], shapes: tuple[str, ...], kinds: str, case_expr: str,
        out: str | None, force: bool,
        rounds: int, max_time: float, min_round_ms: float, cold: bool, warmup: int,
        passes: int, threads: int, count_method: str,
        dispatch: str | None, db: str | None, no_history: bool, verbose: bool,
        exitfirst: bool, jobs: int | None = None, fleet: str | None = None,
        plugins: tuple[str, ...] = (), strict_plugins: bool = False,
        strict_history: bool = False, plugin_in_process: bool = False,
        call_timeout: float | None = None, as_json: bool = False, tails: str = "auto",
        with_report: bool = True, coverage: bool = False,
        min_coverage: float | None = None) -> None:
    """Run the suites and write a run folder; exit non-zero if anything failed.

    Plugins run out of process on every target (on the host in the host
    worker): a crash, exit() or hang inside one becomes a crashed, exited or
    timeout verdict naming it, and the run goes on."""
    import pytest

    from kbench.harness.progress import load_tail, save_tail, tail_key
    from kbench.problems.catalog import CatalogError, load_catalog, resolve_catalog

    fleet_meta: dict[str, str] = {}
    if fleet:
        targets, fleet_meta, jobs = _fleet_targets(fleet, targets, jobs)
    targets = targets or ("host",)
    if len(set(targets)) != len(targets):
        raise click.BadParameter("a target is named twice", param_hint="--target")
    suites_dir = resource_dir("suites")
    for name in backends:
        cli_plugins.check_backend(name)
    for kind in filter(None, kinds.split(",")):
        if kind not in ("exact", "uniform", "normal", "specials"):
            raise click.BadParameter(f"{kind!r} is not an input kind", param_hint="--kinds")
    catalogs = []
    if suite == "perf" and not shapes:
        shapes = PERF_DEFAULT_SHAPES
    for s in shapes:
        if s == TAILS_CATALOG:  # derived per realization, not a file
            catalogs.append(s)
            continue
        try:
            path = resolve_catalog(s)
            load_catalog(path)
        except (CatalogError, FileNotFoundError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--shapes") from exc
        catalogs.append(str(path))
    with sigterm_as_interrupt() as early:
        try:  # loads the targets (and their plugins: an entry point may hang)
            _check_selection(targets, backends, realizations, case_expr, plugins,
                             plugin_in_process, call_timeout)
        except KeyboardInterrupt:
            _stopped_before_start(out, force, early.signum or signal.SIGINT, db, no_history,
                                  targets)
    if dispatch:
        from kbench.native import api
        try:  # each target checks the table against its machine when it loads it
            api.DispatchTable.from_file(dispatch).parse()
        except KbenchError as exc:
            raise click.BadParameter(f"{dispatch}: not a usable dispatch table ({exc})",
                                     param_hint="--dispatch") from None
    run_dir, lock = _run_dir(out, force)  # locked until this process ends
    run_id = uuid.uuid4().hex  # run.json says it: the folder is still this run's at the end
    args = [str(suites_dir / f) for f in SUITES[suite]]
    # pytest's configuration: the checkout's pyproject.toml, or (installed wheel) none, the
    # suites' conftest.py registering what they need
    ini = REPO / "pyproject.toml" if is_checkout() else suites_dir / "kbench-pytest.ini"
    args += ["--rootdir", str(ini.parent), "-c", str(ini), "-p", "no:cacheprovider",
             # the suites kbench runs use no Hypothesis; its plugin would import it at exit
             "-p", "no:hypothesispytest",
             # pytest's short test summary only when asked (-v): kbench's own summary
             # names every failing result and its closing line counts the results
             "--kb-out", str(run_dir), "--kb-run-id", run_id, "--kb-cli",
             "-rfEs" if verbose else "-rN",
             "--tb=short",
             # no percentages at line ends: kbench's progress line is the one display
             "-o", "console_output_style=classic"]
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
    costs = _costs_path(db)
    tail = tail_key(targets, suite, with_report)
    if costs is not None:  # the expected duration up front; learned where the history is kept
        args += ["--kb-costs", str(costs), "--kb-tail-seconds", repr(load_tail(costs, tail))]
        args += [] if no_history else ["--kb-save-costs"]
    if tails != "auto":
        args += ["--kb-tails", tails]
    if case_expr:
        args += ["--kb-case", case_expr]
    for path in plugins:
        args += ["--kb-plugin", path]
    if strict_plugins:
        args.append("--kb-strict-plugins")
    if plugin_in_process:
        args.append("--kb-plugin-in-process")
    if call_timeout is not None:
        args += ["--kb-call-timeout", repr(call_timeout)]
    if coverage or min_coverage is not None:
        if not any(t == "qemu" or t.startswith("qemu:") for t in targets):
            raise click.BadParameter("machine-code coverage needs a qemu: target (QEMU logs "
                                     "the code its workers run)", param_hint="--coverage")
        args.append("--kb-coverage")
        if min_coverage is not None:
            args += ["--kb-min-coverage", repr(min_coverage)]
    if dispatch:
        args += ["--kb-dispatch", str(Path(dispatch).resolve()),
                 str(suites_dir / "test_dispatch_table.py")]
    if suite == "perf":
        per_pass = max(2, -(-rounds // passes))
        args += ["--kb-perf", "--kb-rounds", str(rounds), "--kb-min-round-ms", str(min_round_ms),
                 "--kb-threads", str(threads), "--kb-passes", str(passes),
                 "--kb-count-method", count_method, "--kb-warmup", str(warmup),
                 "--benchmark-min-rounds", str(per_pass),
                 "--benchmark-max-time", str(max_time / passes), "--benchmark-warmup", "off",
                 "--benchmark-json", str(run_dir / "benchmark.json"), "-p", "no:randomly",
                 "--benchmark-quiet"]  # kbench prints per-call lines; no per-round table
        if cold:
            args.append("--kb-cold")
    else:
        args += ["-p", "no:benchmark"]
    args += _parallel_args(suite, targets, jobs)
    if fleet_meta:
        args += ["--kb-fleet", json.dumps(fleet_meta)]
    click.echo(f"kbench run: suite={suite} targets={','.join(targets)} -> {run_dir}",
               err=as_json)
    not_appended: str | None = None
    started = time.time()
    with sigterm_as_interrupt() as term, _stdout_to_stderr(as_json):
        try:
            code = int(pytest.main(args))
        except KeyboardInterrupt:
            # a signal where pytest does not catch it (its start, or its finish hooks):
            # the same interrupted run as one inside a test
            code = int(pytest.ExitCode.INTERRUPTED)
        finally:
            signum = term.signum
        gone = _vanished(run_dir, run_id, lock)
        if gone is not None:  # never a history row (complete or not) for a lost folder
            with_report = False
        elif not no_history:
            not_appended = _append_history(run_dir, db)
        # no report after Ctrl-C or SIGTERM (stopping is what was asked), a usage error
        # or an empty selection (nothing to show)
        report, report_error = (_write_report(run_dir) if with_report and not signum
                                and code not in (int(pytest.ExitCode.INTERRUPTED),
                                                 int(pytest.ExitCode.USAGE_ERROR),
                                                 int(pytest.ExitCode.NO_TESTS_COLLECTED))
                                else (None, None))
        if costs is not None and not no_history and not signum:
            # the time after the last test, for the next run's ETA (a complete run
            # left its last test's end in the costs file; otherwise nothing is kept)
            save_tail(costs, tail, started, time.time())
    if code == int(pytest.ExitCode.NO_TESTS_COLLECTED):
        click.echo("kbench run: the filters selected no case (see above); nothing was "
                   "verified or timed", err=True)
    if gone is not None:
        click.echo(f"kbench run: {gone}" + ("; exit status 1" if code == 0 else ""), err=True)
        code = code or 1
    if not_appended is not None or report_error is not None:
        # what was asked for and not written fails a run that passed (--no-history and
        # --no-report ask for neither)
        for what, why in (("history", not_appended), ("report", report_error)):
            if why is not None:
                click.echo(f"kbench run: {what} not written ({why})"
                           + ("; exit status 1" if code == 0 else ""), err=True)
        if code == 0:
            code = 1
    if signum or code == int(pytest.ExitCode.INTERRUPTED):
        name = signal.Signals(signum or signal.SIGINT).name
        click.echo(f"kbench run: interrupted by {name}: the run folder {run_dir} keeps every "
                   "verdict so far and says INCOMPLETE", err=True)
        code = 128 + (signum or signal.SIGINT)
    if as_json:
        _print_run_json(run_dir, code, report)
    sys.exit(code)


def _stopped_before_start(out: str | None, force: bool, signum: int, db: str | None,
                          no_history: bool, targets: tuple[str, ...]) -> None:
    """Ctrl-C or SIGTERM while the targets were being opened (a plugin's entry
    point that hangs): the run folder is written all the same, INCOMPLETE
    with no results, appended to the history, and the exit status is 128 +
    the signal's number."""
    from kbench.results.store import RunDirError, RunWriter, machine_metadata
    name = signal.Signals(signum).name
    run_dir, _lock = _run_dir(out, force)
    try:
        RunWriter(run_dir, {"kind": "suite-run", **machine_metadata(),
                            "targets": {t: {"name": t, "unavailable": f"{t}: not reached (the "
                                            f"run was interrupted by {name} while opening "
                                            "its targets)", "emulated": False}
                                        for t in targets},
                            "interrupted": f"{name} while opening the targets (and loading "
                                           "their plugins), before any test ran"}
                  ).close(complete=False)
    except RunDirError as exc:
        click.echo(f"kbench run: {exc}", err=True)
    if not no_history:
        _append_history(run_dir, db)
    click.echo(f"kbench run: interrupted by {name} while opening the targets: the run folder "
               f"{run_dir} says INCOMPLETE (no test ran)", err=True)
    sys.exit(128 + signum)


def _costs_path(db: str | None) -> Path | None:
    """case_costs.json beside the history database (an SQLite file's folder;
    with a PostgreSQL history, the default data folder); None without a home."""
    from kbench.results.history import HistoryError, default_db_path
    from kbench.results.historydb import is_postgres, resolve_db
    try:
        where = resolve_db(db, default_db_path())
        folder = (default_db_path().parent if is_postgres(where) else Path(where).parent)
    except (HistoryError, OSError):
        return None
    return folder / "case_costs.json"


def _write_report(run_dir: Path) -> tuple[str | None, str | None]:
    """The run's HTML report in RUN_FOLDER/report: its path, or (None, why)
    with a line saying so when it cannot be written (the caller fails a run
    that passed). (None, None): nothing to report (a usage error)."""
    from kbench.results.runfolder import RunFolderError, load_run
    if not (run_dir / "run.json").is_file():
        return None, None  # the run stopped before it wrote anything (a usage error)
    try:
        from kbench.results.report import build_report
        files = build_report(load_run(run_dir), None, run_dir / "report")
    except (RunFolderError, OSError, ValueError, KbenchError) as exc:
        click.echo(f"kbench run: report not written ({exc}); kbench report {run_dir} "
                   "writes it later", err=True)
        return None, str(exc).strip().splitlines()[0] if str(exc).strip() else "error"
    except KeyboardInterrupt:
        click.echo(f"kbench run: report interrupted; kbench report {run_dir} writes it",
                   err=True)
        return None, "interrupted"
    click.echo(f"report: {files.html}")
    return str(files.html), None


@contextmanager
def _stdout_to_stderr(on: bool) -> Iterator[bool]:
    """With on: everything written to stdout meanwhile (pytest's lines,
    the workers', the native library's) goes to stderr, file descriptor 1
    included; stdout is itself again afterwards, for the JSON document."""
    if not on:
        yield False
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield True
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _print_run_json(run_dir: Path, code: int, report: str | None = None) -> None:
    """`kbench run --json`: the summary document, read back from the run folder."""
    from kbench.results.json_out import run_doc
    from kbench.results.runfolder import RunFolderError, load_run
    try:
        doc = run_doc(load_run(run_dir), code, report)
    except RunFolderError as exc:  # nothing written (e.g. a usage error inside pytest)
        doc = {"schema": "kbench/run/1", "run_folder": str(run_dir), "complete": False,
               "exit_code": code, "results": 0, "status": {}, "targets": [],
               "by_realization": [], "failures": [], "defects": [str(exc)], "report": None}
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    sys.stdout.flush()


def _run_dir(out: str | None, force: bool, suffix: str = "") -> tuple[Path, RunLock]:
    """The run folder and the lock this process holds on it while it runs:
    --out (refused if it holds a run, unless force; refused while another
    run is writing it, force or not), or a new uniquely named folder under
    ./runs."""
    from kbench.results.runlock import claim_locked
    from kbench.results.store import RunDirError
    try:
        return claim_locked(out or None, force, Path.cwd() / "runs", suffix)
    except RunDirError as exc:
        raise click.ClickException(f"--out: {exc}" if out else str(exc)) from None


def _vanished(run_dir: Path, run_id: str, lock: RunLock) -> str | None:
    """Why the run folder no longer holds this run (removed, or replaced by
    another process while the run wrote it: its run.json is another run's),
    or None (also when the run stopped before writing run.json)."""
    try:
        said = json.loads((run_dir / "run.json").read_text()).get("run_id")
    except FileNotFoundError:
        said = None if lock.lost() or not run_dir.is_dir() else run_id
    except (OSError, ValueError, AttributeError):
        said = run_id  # unreadable: the history append says what is wrong with it
    if said == run_id:
        return None
    return (f"the run folder {run_dir} was removed or replaced while the run wrote it: "
            "its verdicts are lost, and nothing about it is recorded")


class _Term:
    signum = 0  # the first SIGINT or SIGTERM received (0: none)

    @property
    def received(self) -> bool:
        return bool(self.signum)


@contextmanager
def sigterm_as_interrupt() -> Iterator[_Term]:
    """SIGTERM does what Ctrl-C (SIGINT) does: the suites stop (a worker in the
    middle of a call is killed), the run folder is finalised (run.json says
    incomplete) and the run is still appended to the history. The signal is
    remembered (the exit status is 128 + its number); a second one while
    finishing is ignored."""
    state = _Term()

    def handler(signum: int, frame: object) -> None:
        if state.signum:
            return
        state.signum = signum
        raise KeyboardInterrupt

    previous = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            if signal.getsignal(sig) is signal.SIG_IGN:
                continue  # started with it ignored (nohup, a background job): keep it so
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield state
        return
    try:
        yield state
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _check_selection(targets: tuple[str, ...], backends: tuple[str, ...],
                     realizations: tuple[str, ...], case_expr: str,
                     plugins: tuple[str, ...] = (), plugin_in_process: bool = False,
                     call_timeout: float | None = None) -> None:
    """Every target parses; backend and realization filters name something a
    chosen target offers; -k is a regular expression. Usage errors otherwise."""
    from kbench.harness.selection import CaseFilter, filter_errors
    if case_expr:
        try:
            CaseFilter(case_expr)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="-k") from exc
    from kbench.targets.spec import parse_target
    infos = {}
    for spec in targets:
        try:
            t = parse_target(spec, plugins, plugin_in_process=plugin_in_process,
                             call_timeout=call_timeout)
        except KbenchError as exc:
            raise click.BadParameter(str(exc), param_hint="--target") from exc
        try:
            if backends or realizations:
                infos[spec] = t.info()
        except KbenchError:
            pass  # unreachable: the run records it as an error verdict and goes on
        finally:
            t.close()
    errors = filter_errors(infos, backends, realizations) if infos else []
    if errors:
        raise click.UsageError("\n".join(errors))


def _fleet_info(path: Path, as_json: bool, plugins: tuple[str, ...] = ()) -> None:
    """`kbench info --fleet`: every target probed in parallel, one line each."""
    from kbench.harness.parallel import probe_targets
    from kbench.targets.fleet import FleetError, load_fleet
    from kbench.targets.spec import parse_target
    try:
        fl = load_fleet(path)
    except FleetError as exc:
        raise click.BadParameter(str(exc), param_hint="--fleet") from exc
    probes = probe_targets(list(fl.specs), lambda spec: parse_target(spec, plugins))
    rows = []
    for t in fl.targets:
        p = probes[t.spec]
        i = p.info
        rows.append({"label": t.label, "spec": t.spec, "reachable": p.ok, "error": p.error,
                     "arch": i.arch if i else "", "kind": i.kind if i else "",
                     "emulated": bool(i and i.emulated),
                     "cpu_features": i.cpu_features if i else [],
                     "sme_vector_bits": i.sme_vector_bits if i else 0,
                     "sve_vector_bits": i.sve_vector_bits if i else 0,
                     "isa": i.isa if i else "", "library_version": i.library_version if i else "",
                     "realizations": len(i.realizations) if i else 0,
                     "seconds": round(p.seconds, 2)})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    else:
        lw = max(len("label"), *(len(r["label"]) for r in rows))
        sw = max(len("target"), *(len(r["spec"]) for r in rows))
        click.echo(f"{'label':{lw}s}  {'target':{sw}s}  {'state':11s} {'arch':8s} {'SVL':>5s} "
                   f"{'VL':>5s}  {'isa':6s} {'reals':>5s}  features")
        for r in rows:
            if not r["reachable"]:
                click.echo(f"{r['label']:{lw}s}  {r['spec']:{sw}s}  UNREACHABLE {r['error']}")
                continue
            state = "ok" + (" (emu)" if r["emulated"] else "")
            svl = str(r["sme_vector_bits"]) if r["sme_vector_bits"] else "-"
            vl = str(r["sve_vector_bits"]) if r["sve_vector_bits"] else "-"
            click.echo(f"{r['label']:{lw}s}  {r['spec']:{sw}s}  {state:11s} {r['arch']:8s} "
                       f"{svl:>5s} {vl:>5s}  {r['isa']:6s} {r['realizations']:>5d}  "
                       f"{', '.join(r['cpu_features']) or '-'}")
    bad = [r for r in rows if not r["reachable"]]
    if bad:
        raise SystemExit(1)


def _parallel_args(suite: str, targets: tuple[str, ...], jobs: int | None) -> list[str]:
    """pytest-xdist options spreading the targets over worker processes (one
    group per target); a single target's tests over N processes when -n N is
    given (each process opens the target itself); none for -n 1, a single
    target without -n, or a perf run."""
    if suite == "perf":
        if jobs and jobs > 1:
            click.echo("note: perf runs one target at a time (--jobs 1): timing targets in "
                       "parallel would measure the load they put on each other", err=True)
        return []
    if len(targets) == 1:
        return ["-n", str(jobs), "--dist", "load"] if jobs and jobs > 1 else []
    n = min(len(targets), 8) if jobs is None else jobs
    if n <= 1:
        return []
    return ["-n", str(min(n, len(targets))), "--dist", "loadgroup"]


def _fleet_targets(path: str, targets: tuple[str, ...], jobs: int | None
                   ) -> tuple[tuple[str, ...], dict[str, str], int | None]:
    """The fleet file's targets (after any --target other than the default
    host), their labels, and its jobs setting unless -n was given."""
    from kbench.targets.fleet import FleetError, load_fleet
    try:
        fl = load_fleet(Path(path))
    except FleetError as exc:
        raise click.BadParameter(str(exc), param_hint="--fleet") from exc
    chosen = tuple(dict.fromkeys([*fl.specs, *targets]))
    return chosen, fl.labels, jobs if jobs is not None else fl.jobs


def _append_history(run_dir: Path, db: str | None) -> str | None:
    """Adds the run folder (complete or not) to the history database; if it
    cannot, says why and how to add it later, and returns why (None: added)."""
    from kbench.results.history import HistoryError, append_run, default_db_path
    from kbench.results.historydb import describe, driver_errors, resolve_db
    from kbench.results.runfolder import RunFolderError, load_run
    later = f"kbench history --add {run_dir}" + (f" --db {db}" if db else "")
    try:
        path = resolve_db(db, default_db_path())
        run_id = append_run(path, load_run(run_dir),
                            on_wait=lambda msg: click.echo(msg, err=True))
    except (RunFolderError, HistoryError, OSError, *driver_errors()) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        click.echo(f"history: run not appended ({text}); add it later with: {later}", err=True)
        return text
    except KeyboardInterrupt:
        click.echo(f"history: interrupted, run not appended; add it later with: {later}",
                   err=True)
        return "interrupted"
    click.echo(f"history: run #{run_id} in {describe(path)}")
    return None


@main.command("realizations")
@click.option("--target", "targets", multiple=True, default=("host",), show_default=True,
              help="Target to list (repeatable).")
@click.option("--json", "as_json", is_flag=True,
              help="Print JSON (per target: every realization's fields) instead of text.")
@cli_plugins.plugin_option
@isolation_options
def list_realizations(targets: tuple[str, ...], as_json: bool, plugins: tuple[str, ...],
                      plugin_in_process: bool = False,
                      call_timeout: float | None = None) -> None:
    """List every realization (backend, kernel, parameters such as cache
    blocking) and what it supports."""
    from kbench.targets.spec import parse_target
    infos = []
    for spec in targets:
        try:
            t = parse_target(spec, plugins, plugin_in_process=plugin_in_process,
                             call_timeout=call_timeout)
            infos.append(t.info())
            t.close()
        except KbenchError as exc:
            raise click.ClickException(str(exc)) from exc
    cli_plugins.report_plugin_errors(infos)
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
                      f"its clamp turns NaN into clamp_{r.nan_clamp[3:]}"
                      if r.nan_clamp != "propagate" else "",
                      "peer" if r.peer else "", f"plugin {r.plugin}" if r.plugin else ""]
            click.echo(f"  {r.name}")
            click.echo(f"      {r.op} on {r.backend}: kernel {r.kernel}")
            click.echo(f"      {', '.join(p for p in params if p)}; {', '.join(supports)}")


@main.command()
@click.option("--shapes", "shapes", multiple=True, required=True,
              help="Catalog(s) to tune over (file or name in reference/).")
@click.option("--target", "target_spec", default="host", show_default=True,
              help="The machine to tune for.")
@click.option("--budget", type=FiniteFloat(0.0), default=None,
              help="Stop timing new shapes after this many seconds (the rest stay untuned).")
@click.option("--rounds", type=click.IntRange(1), default=5, show_default=True,
              help="Timed rounds per candidate realization and shape.")
@click.option("--min-round-ms", type=FiniteFloat(0.0), default=1.0, show_default=True,
              help="Calls per round calibrated so that a round lasts at least this long.")
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Threads per call (the table is tuned for this thread count).")
@click.option("--out", "out", type=click.Path(file_okay=False), default=None,
              help="Run folder for dispatch.json, results.csv and run.json "
                   "[default: a new runs/<date>-<time>-<host>-tune[-N]]. A folder that "
                   "already holds a run is refused unless --force.")
@click.option("--force", is_flag=True, help="Replace the run in --out.")
@cli_plugins.plugin_option
@isolation_options
def tune(shapes: tuple[str, ...], target_spec: str, budget: float | None, rounds: int,
         min_round_ms: float, threads: int, out: str | None, force: bool,
         plugins: tuple[str, ...] = (), plugin_in_process: bool = False,
         call_timeout: float | None = None) -> None:
    """Verify and time every candidate realization per shape; write a dispatch table."""
    from kbench.harness.perf import PerfSettings
    from kbench.harness.tune import tune as run_tune
    from kbench.problems.catalog import CatalogError, load_catalog, resolve_catalog
    from kbench.results.store import RunDirError, RunWriter, machine_metadata
    from kbench.targets.spec import parse_target

    cases = []
    catalog_args: dict[str, str] = {}  # catalog name -> as given (for reproducers)
    for s in shapes:
        try:
            cat = load_catalog(resolve_catalog(s))
        except (CatalogError, FileNotFoundError, ValueError) as exc:
            raise click.BadParameter(str(exc), param_hint="--shapes") from exc
        cases += [(cat.name, c) for c in cat.cases]
        catalog_args.setdefault(cat.name, s)
    try:
        target = parse_target(target_spec, plugins, plugin_in_process=plugin_in_process,
                              call_timeout=call_timeout)
        info = target.info()
    except KbenchError as exc:
        raise click.BadParameter(str(exc), param_hint="--target") from exc
    cli_plugins.report_plugin_errors([info])
    run_dir, _lock = _run_dir(out, force, "-tune")  # held until the command ends
    try:
        writer = RunWriter(run_dir, {"kind": "tune", **machine_metadata(),
                                     "targets": {target_spec: info.to_dict()}})
    except RunDirError as exc:
        target.close()
        raise click.ClickException(str(exc)) from None
    settings = PerfSettings(warmup=1, rounds=rounds, min_round_ns=int(min_round_ms * 1e6),
                            threads=threads)
    if target.emulated:
        click.echo("note: the target is emulated; its times are not speeds, so the table "
                   "only exercises the mechanism")
    try:
        with sigterm_as_interrupt():
            result = run_tune(target, cases, settings, budget, progress=click.echo)
    except KeyboardInterrupt:
        writer.close(complete=False)
        raise
    finally:
        target.close()
    wrong = _record_tuning(writer, result.shapes, catalog_args, plugins)
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
    if wrong:
        click.echo(f"kbench tune: {wrong} candidate verdict(s) failed or errored (above, with "
                   "the command that reruns each): left out of the table; exit status 1",
                   err=True)
        raise SystemExit(1)


def _record_tuning(writer: Any, shapes: list[Any], catalog_args: dict[str, str],
                   plugins: tuple[str, ...] = ()) -> int:
    """Writes every candidate's verdict; one that failed its check while tuning
    (a wrong result on a valid call, a crash, an error) is a failed verdict
    with the command that reruns it (verdicts.txt, failures.csv, stderr).
    Returns how many failed."""
    from kbench.harness.selection import reproducer
    from kbench.judge.verdict import FAILING
    count = 0
    for sr in shapes:
        for v in sr.verdicts.values():
            writer.add(v)
            if v.status not in FAILING:
                continue
            again = reproducer(v, catalog_args.get(v.catalog, v.catalog))
            if v.plugin:  # its plugin is loaded again
                again += "".join(f" --plugin {shlex.quote(path)}" for path in plugins)
            writer.add_failure(v, again)
            click.echo(f"{v.line()}\n    reproduce: {again}", err=True)
            count += 1
    return count


@main.command("catalogs")
@click.option("--coverage", "realization", default="", metavar="REALIZATION",
              help="Audit instead of listing: which residues (N mod n_step, M mod m_step), K "
                   "classes and boundary classes the catalogs hit for this realization, and "
                   "which they miss.")
@click.option("--target", "target_spec", default="host", show_default=True,
              help="With --coverage: the target whose realization (and vector length) counts.")
@click.option("--shapes", "shapes", multiple=True,
              help="With --coverage: the catalogs to audit (repeatable; `tails`: the derived "
                   "tails). Default: correctness_gemm and correctness_conv.")
@click.option("--plugin", "plugins", multiple=True, metavar="PATH",
              help="With --coverage: a plugin library the target loads (its realizations "
                   "can be audited).")
def list_catalogs(realization: str, target_spec: str, shapes: tuple[str, ...],
                  plugins: tuple[str, ...]) -> None:
    """List the shape catalogs shipped in reference/ (or, with --coverage, audit them)."""
    from kbench.problems.catalog import CatalogError, available_catalogs, load_catalog
    if realization:
        from kbench.cli.coverage import print_coverage
        print_coverage(realization, target_spec, shapes, plugins)
        return
    found = available_catalogs()
    if not found:
        raise click.ClickException(f"no shape catalogs in {resource_dir('reference')}: "
                                   "the installation is incomplete")
    for name, path in found.items():
        try:
            cat = load_catalog(path)
            click.echo(f"{name:24s} {len(cat.gemm):4d} gemm {len(cat.conv):4d} conv  "
                       f"{cat.description}")
        except CatalogError as exc:
            click.echo(f"{name:24s} invalid: {exc}")
    click.echo(f"{TAILS_CATALOG:24s}  derived per realization: its tail shapes "
               "(kbench catalogs --coverage REALIZATION)")


if __name__ == "__main__":  # pragma: no cover
    main()
