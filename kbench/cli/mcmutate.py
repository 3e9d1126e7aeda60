"""`kbench mutate --plugin LIB --target T`: the machine-code campaign
(kbench.harness.mcmutate) — its options, its progress and summary in the
terminal, its exit status (0 done; 1 a mutant that could not be judged, or
kbench's kill rate below --min-kill-rate; 130/143 interrupted)."""

from __future__ import annotations

import shlex
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from kbench.errors import KbenchError

# options of the catalog mode that mean nothing with --plugin, and the reverse
CATALOG_ONLY = ("catalog", "areas", "quick", "no_baseline", "jobs")
PLUGIN_ONLY = ("target", "realizations", "suite", "shapes", "external_test", "functions",
               "operators", "no_probe", "min_kill_rate")
SPELLED = {"areas": "--area", "realizations": "--realization", "functions": "--function",
           "operators": "--operator"}
OPERATOR_NAMES = ("nop", "cond", "imm", "reg", "fma-drop", "fma-twice", "fma-negate", "minmax",
                  "pred", "tile")  # kbench.targets.a64patch.OPERATORS (checked by a test)


def mc_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options of the machine-code mode."""
    opts = [
        click.option("--plugin", default=None, metavar="LIB",
                     help="Machine-code mode: mutate this aarch64 shared library (a kbench "
                     "plugin; {arch} becomes aarch64) instead of the catalog."),
        click.option("--target", default="", metavar="qemu:...",
                     help="With --plugin: the qemu: target the suites run on (its coverage "
                     "picks the instructions to mutate)."),
        click.option("--realization", "realizations", multiple=True,
                     help="With --plugin: only this realization of the library (repeatable; "
                     "default: all of them)."),
        click.option("--suite", type=click.Choice(["correctness", "contracts", "all"]),
                     default="all", show_default=True,
                     help="With --plugin: the suites each mutant runs (all: correctness, "
                     "determinism, contracts and the plugin probes)."),
        click.option("--shapes", multiple=True,
                     help="With --plugin: the catalogs each mutant runs  [default: smoke and "
                     "tails, every realization's derived tail shapes]"),
        click.option("--external-test", default="", metavar="CMD",
                     help="With --plugin: another test suite run on every mutant beside "
                     "kbench's, a shell command; {lib} is the mutated library, {target} the "
                     "QEMU command line of the target (e.g. '{target} ./mytest {lib}'). Exit "
                     "0: it passed; anything else or a hang: it killed the mutant."),
        click.option("--function", "functions", multiple=True, metavar="PATTERN",
                     help="With --plugin: only functions whose name matches (fnmatch; "
                     "repeatable)."),
        click.option("--operator", "operators", multiple=True, type=click.Choice(OPERATOR_NAMES),
                     help="With --plugin: only this operator (repeatable)."),
        click.option("--no-probe", is_flag=True,
                     help="With --plugin: no equivalence probe for survivors (none is then "
                     "reported likely equivalent)."),
        click.option("--min-kill-rate", type=click.FloatRange(0, 100), default=None,
                     metavar="PERCENT",
                     help="With --plugin: exit 1 when kbench's suites kill fewer than PERCENT "
                     "of the reached, non-equivalent mutants."),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE


def check_mode(ctx: click.Context, plugin: str | None) -> None:
    """A usage error for an option of the other mode."""
    wrong = [n for n in (CATALOG_ONLY if plugin else PLUGIN_ONLY) if given(ctx, n)]
    if wrong:
        opt = SPELLED.get(wrong[0], "--" + wrong[0].replace("_", "-"))
        raise click.UsageError(f"{opt} applies to the {'catalog' if plugin else 'machine-code'}"
                               f" mode, not {'with' if plugin else 'without'} --plugin")


def run(ctx: click.Context, plugin: str, target: str, realizations: tuple[str, ...],
        suite: str, shapes: tuple[str, ...], external_test: str, functions: tuple[str, ...],
        operators: tuple[str, ...], no_probe: bool, min_kill_rate: float | None,
        patterns: tuple[str, ...], sample: int | None, rotate: str, budget: float | None,
        timeout: float, lanes: int, out: Path | None, list_only: bool) -> None:
    from kbench.cli.main import sigterm_as_interrupt
    from kbench.harness import mcmutate as mc
    from kbench.results import mcmutation as mcm
    from kbench.results.store import default_run_dir
    from kbench.targets.plugins import expand

    if not target or not (target == "qemu" or target.startswith("qemu:")):
        raise click.BadParameter("the machine-code mode needs a qemu: target (QEMU's log says "
                                 "which instructions ran)", param_hint="--target")
    lib = Path(expand(plugin, "aarch64"))
    if not lib.is_file():
        raise click.BadParameter(f"{lib}: no such file", param_hint="--plugin")
    if external_test and "{lib}" not in external_test:
        raise click.BadParameter("the command must name the mutated library as {lib}",
                                 param_hint="--external-test")
    folder = out or Path(f"{default_run_dir()}-mcmutation")
    opts = mc.Options(lib.resolve(), target, folder, realizations, suite,
                      shapes or mc.DEFAULT_SHAPES, sample, rotate, None if budget is None
                      else budget * 60, timeout if given(ctx, "timeout") else None, lanes,
                      external_test, patterns, functions, operators, not no_probe)
    click.echo(f"kbench mutate: machine-code mutants of {lib} on {target} -> {folder}")
    camp = mc.Campaign(opts, lambda msg: click.echo(msg))
    with sigterm_as_interrupt() as term:
        try:
            if list_only:
                for m in camp.plan_only():
                    click.echo(f"{m.id:64s} {m.old_text}  ->  {m.new_text}")
                return
            data = camp.run()
        except mc.Interrupted as exc:
            name = signal.Signals(term.signum or signal.SIGINT).name
            click.echo(f"kbench mutate: {exc} ({name}); the run folder {folder} keeps every "
                       "finished mutant and says INCOMPLETE; resume with: "
                       + _resume_command(folder), err=True)
            sys.exit(128 + (term.signum or signal.SIGINT))
        except KbenchError as exc:
            raise click.ClickException(str(exc)) from exc
    click.echo("")
    for line in mcm.summary_lines(data):
        click.echo(line)
    s = data["summary"]
    click.echo("per operator (killed/live): " + ", ".join(
        f"{k} {g['killed']}/{g['killed'] + g['survived']}" for k, g in s["operators"].items()))
    for key, label in (("survivors", "SURVIVED" + (" (both)" if s["external"] else "")),
                       ("only_external", "killed only by the external test"),
                       ("errors", "NOT JUDGED")):
        if s[key]:
            click.echo(f"{label}: {', '.join(s[key][:20])}"
                       + (f" ... ({len(s[key]) - 20} more)" if len(s[key]) > 20 else ""))
    click.echo(f"run folder: {folder} (kbench report {folder})")
    if s["errors"]:
        raise SystemExit(1)
    rate = s["kbench_kill_rate"]
    if min_kill_rate is not None and s["live"] and rate * 100 < min_kill_rate:
        click.echo(f"kbench mutate: kbench's kill rate {rate:.1%} is below --min-kill-rate "
                   f"{min_kill_rate:g}%", err=True)
        raise SystemExit(1)


def _resume_command(folder: Path) -> str:
    args = list(sys.argv[1:])
    if "--out" not in args and not any(a.startswith("--out=") for a in args):
        args += ["--out", str(folder)]
    return shlex.join(["kbench", *args])
