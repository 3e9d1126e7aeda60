"""`kbench mutate`: the mutation campaign over the mutant catalog (ci/mutants/)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click

from kbench.cli import mcmutate
from kbench.cli.mcmutate import mc_options
from kbench.errors import KbenchError
from kbench.harness import mutants as mut
from kbench.harness.mutation import (
    EQUIVALENT,
    ERROR,
    INVALID,
    KILLED,
    STALE,
    SURVIVED,
    Campaign,
    Options,
)
from kbench.results.store import default_run_dir

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CATALOG = REPO / "ci" / "mutants"


def _head(repo: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _table(summary: dict) -> str:
    cols = (KILLED, SURVIVED, EQUIVALENT, STALE, INVALID, ERROR)
    lines = [f"{'area':12s} " + " ".join(f"{c:>10s}" for c in cols) + "   kill rate"]
    for area, counts in sorted(summary["areas"].items()):
        live = sum(counts.values()) - counts[STALE]
        rate = f"{counts[KILLED] / live:.0%}" if live else "-"
        lines.append(f"{area:12s} " + " ".join(f"{counts[c]:10d}" for c in cols)
                     + f"   {rate:>9s}")
    c = summary["counts"]
    lines.append(f"{'all':12s} " + " ".join(f"{c[x]:10d}" for x in cols)
                 + f"   {summary['kill_rate']:>9.1%}")
    return "\n".join(lines)


@click.command("mutate")
@click.option("--catalog", type=click.Path(path_type=Path, file_okay=False, exists=True),
              default=DEFAULT_CATALOG, show_default=True, help="Folder of mutant files (*.toml).")
@click.option("--mutant", "patterns", multiple=True,
              help="Only mutants whose id matches this pattern (fnmatch); repeatable.")
@click.option("--area", "areas", multiple=True, type=click.Choice(sorted(mut.AREAS)),
              help="Only mutants of this area; repeatable.")
@click.option("--sample", type=click.IntRange(0), default=None,
              help="Run the pinned mutants and this many others, chosen by --rotate.")
@click.option("--rotate", default="", help="Rotation key of --sample (default: the git commit, "
              "so every commit samples other mutants).")
@click.option("--budget", type=click.FloatRange(0.0), default=None,
              help="Minutes from the start: run no new mutant after this, except pinned ones "
              "(the rest are listed as not run).")
@click.option("--quick", is_flag=True,
              help="Stop each kill run at its first failure (faster; fewer failures counted).")
@click.option("--no-baseline", is_flag=True, help="Do not check that each kill run passes "
              "without the mutant first (CI: its own test steps are the baseline).")
@click.option("--timeout", type=click.FloatRange(1.0), default=1200.0, show_default=True,
              help="Seconds one kill run may take (a hang counts as a kill).")
@click.option("--jobs", type=click.IntRange(1), default=2, show_default=True,
              help="Parallel compile jobs.")
@click.option("--lanes", type=click.IntRange(1, 16), default=1, show_default=True,
              help="Mutants run at a time, each in a scratch tree and build cache of its "
              "own (2 on a 2-core machine halves a campaign's time).")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Run folder  [default: runs/<date>-<time>-<host>-mutation]")
@click.option("--list", "list_only", is_flag=True,
              help="List the catalog (and which mutants are stale) and exit; with --plugin, "
              "run the baseline and list the planned sample.")
@mc_options
@click.pass_context
def mutate(ctx: click.Context, catalog: Path, patterns: tuple[str, ...], areas: tuple[str, ...],
           sample: int | None, rotate: str, budget: float | None, quick: bool,
           no_baseline: bool, timeout: float, jobs: int, lanes: int, out: Path | None,
           list_only: bool, **mc: object) -> None:
    """Apply each mutant of the catalog in a scratch copy of the repository,
    rebuild exactly what it touches (host module, host and aarch64 workers,
    the aarch64 module of the emulated Python), run the suites and targets it
    declares, and record whether they killed it. Writes a run folder
    (mutation.json, mutants.csv, logs/; `kbench report` shows it) and exits
    non-zero if a mutant survived unexplained or could not be run.

    With --plugin LIB --target T (machine-code mode): mutants of a shared
    library's machine code, one instruction word each, in the code the suites
    executed on T; each judged by kbench's suites and by --external-test
    beside them (docs/mutation.md, "Machine-code mutants")."""
    mcmutate.check_mode(ctx, mc["plugin"])  # type: ignore[arg-type]
    if mc["plugin"]:
        mcmutate.run(ctx, patterns=patterns, sample=sample, rotate=rotate, budget=budget,
                     timeout=timeout, lanes=lanes, out=out, list_only=list_only,
                     **mc)  # type: ignore[arg-type]
        return
    try:
        cat = mut.load_catalog(catalog)
    except mut.MutantError as exc:
        raise click.ClickException(str(exc)) from exc
    if list_only:
        for m in cat:
            stale = mut.stale_reason(m, REPO)
            flags = (" [pinned]" if m.pinned else "") + (" [equivalent]" if m.equivalent else "")
            runs = "; ".join(f"{k.target}: {' '.join(k.suites)}" for k in m.kills)
            click.echo(f"{m.id:52s} {m.area:12s}{flags} {runs}"
                       + (f"  STALE ({stale})" if stale else ""))
        click.echo(f"{len(cat)} mutants")
        return
    opts = Options(repo=REPO, catalog=catalog,
                   out=out or Path(f"{default_run_dir()}-mutation"),
                   select=list(patterns), areas=list(areas), sample=sample,
                   rotate=rotate or _head(REPO), budget_s=None if budget is None else budget * 60,
                   quick=quick, baseline=not no_baseline, timeout_s=timeout, jobs=jobs,
                   lanes=lanes)
    click.echo(f"kbench mutate: {len(cat)} mutants in {catalog} -> {opts.out}")
    try:
        summary = Campaign(opts, lambda msg: click.echo(msg)).run(cat)
    except KbenchError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo("")
    click.echo(_table(summary))
    click.echo(f"{summary['mutants']} mutants, kill rate {summary['kill_rate']:.1%}, "
               f"{summary['seconds'] / 60:.1f} min; run folder: {opts.out}")
    for key, label in (("survivors", "SURVIVED"), ("problems", "NOT RUN OR INVALID"),
                       ("not_run", "not run (budget)")):
        if summary[key]:
            click.echo(f"{label}: {', '.join(summary[key])}")
    stale = summary["counts"][STALE]
    if stale:
        click.echo(f"note: {stale} stale mutants (their code was rewritten): refresh them")
    if summary["survivors"] or summary["problems"]:
        raise SystemExit(1)
