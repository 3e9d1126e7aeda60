"""`kbench report`: the HTML report and CSV tables of a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbench.cli.pairing import all_checkouts_option

if TYPE_CHECKING:  # imported when used: bad input is answered before pandas loads
    from kbench.results.runfolder import Run


def _load(path: Path, what: str) -> Run:
    """The run folder; what is wrong with its results is one note line each
    (the report is still built from the rows that can be read)."""
    if not path.is_dir():
        raise click.ClickException(f"{what}: {path}: not a folder")
    from kbench.results.runfolder import RunFolderError, load_run
    try:
        run = load_run(path)
    except RunFolderError as exc:
        raise click.ClickException(f"{what}: {exc}") from None
    for defect in run.defects:
        click.echo(f"note: {path}: {defect}", err=True)
    return run


@click.command("report")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--baseline", default=None,
              help="Another run to compare timings against: a run folder, or a run of the "
                   "history database (--db): an id, latest, latest~N or a commit prefix.")
@click.option("--out", "out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Folder for report.html and the CSV tables  [default: RUN/report]")
@click.option("--history", "with_history", is_flag=True,
              help="Add trend charts of every case's median time per realization over the "
                   "runs of this machine in the history database.")
@click.option("--db", "db", default=None,
              help="History database for --history and --baseline: an SQLite file or a "
                   "postgresql://USER@HOST/DB URL "
                   "[default: $KBENCH_DB, else $XDG_DATA_HOME/kbench/history.sqlite].")
@click.option("--config", "config", type=click.Path(path_type=Path, dir_okay=False,
                                                    exists=True), default=None,
              help="Gate configuration for the verdict shown with --baseline "
                   "[default: ci/gate.toml].")
@all_checkouts_option
def report(run: Path, baseline: str | None, out: Path | None, with_history: bool,
           db: str | None, config: Path | None, all_checkouts: bool = False) -> None:
    """Write a self-contained HTML report and CSV tables for the run folder RUN:
    verdicts per backend and catalog, GFLOP/s and speedups, per-model totals,
    error versus K and the run's metadata. Emulated times are shown but never
    compared as speed."""
    current = _load(run, "RUN")
    base = None
    if baseline is not None:
        from kbench.cli.history import BadRunFolder, load_ref
        try:
            base = load_ref(baseline, "--baseline", db=db, all_checkouts=all_checkouts)[0]
        except BadRunFolder as exc:  # as RUN's: exit 1, one line
            raise click.ClickException(exc.message) from None
    out_dir = out if out is not None else run / "report"
    gate_result = None
    if base is not None:  # the gate's verdict on this run against the baseline
        from kbench.cli.history import load_gate_config
        from kbench.results.compare import gate
        cfg = load_gate_config(config)
        gate_result = gate(base, current, cfg.alpha, cfg.max_slowdown, cfg.speed_targets)
    history_db = None
    if with_history:
        from kbench.results.history import default_db_path
        from kbench.results.historydb import resolve_db
        history_db = resolve_db(db, default_db_path())
        if isinstance(history_db, Path) and not history_db.is_file():
            raise click.ClickException(f"--history: no history database at {history_db} "
                                       "(kbench run appends to it; --db FILE to choose)")
    from kbench.results.report import build_report
    from kbench.results.runfolder import RunFolderError
    try:
        files = build_report(current, base, out_dir, gate_result, history_db)
    except RunFolderError as exc:  # a file of the run folder besides results.csv
        raise click.ClickException(f"RUN: {exc}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot write the report to {out_dir}: {exc}") from exc
    if not current.complete:
        click.echo(f"note: {run} is an incomplete run"
                   + ("" if current.has_results else ", with no results"), err=True)
    elif not current.has_results:
        click.echo(f"note: {run} recorded no results", err=True)
    click.echo(f"report: {files.html}")
    click.echo(f"tables: {', '.join(p.name for p in files.tables.values())} in {out_dir}")
