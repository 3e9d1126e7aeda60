"""`kbench report`: the HTML report and CSV tables of a run folder."""

from __future__ import annotations

from pathlib import Path

import click

from kbench.results.report import build_report
from kbench.results.runfolder import Run, RunFolderError, load_run


def _load(path: Path, what: str) -> Run:
    try:
        return load_run(path)
    except RunFolderError as exc:
        raise click.ClickException(f"{what}: {exc}") from None


@click.command("report")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--baseline", type=click.Path(path_type=Path), default=None,
              help="Another run folder to compare timings against.")
@click.option("--out", "out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Folder for report.html and the CSV tables  [default: RUN/report]")
def report(run: Path, baseline: Path | None, out: Path | None) -> None:
    """Write a self-contained HTML report and CSV tables for the run folder RUN:
    verdicts per backend and catalog, GFLOP/s and speedups, per-model totals,
    error versus K and the run's metadata. Emulated times are shown but never
    compared as speed."""
    current = _load(run, "RUN")
    base = _load(baseline, "--baseline") if baseline is not None else None
    out_dir = out if out is not None else run / "report"
    try:
        files = build_report(current, base, out_dir)
    except OSError as exc:
        raise click.ClickException(f"cannot write the report to {out_dir}: {exc}") from exc
    if not current.complete:
        click.echo(f"note: {run} is an incomplete run"
                   + ("" if current.has_results else ", with no results"), err=True)
    elif not current.has_results:
        click.echo(f"note: {run} recorded no results", err=True)
    click.echo(f"report: {files.html}")
    click.echo(f"tables: {', '.join(p.name for p in files.tables.values())} in {out_dir}")
