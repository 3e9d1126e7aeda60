"""Command-line commands over recorded runs: history, compare and gate.

The gate's defaults (slowdown limit, alpha, which targets are compared as
speed) come from ci/gate.toml in the checkout, or from --config; options
given on the command line win."""

from __future__ import annotations

import json
import math
import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbench.cli.pairing import all_checkouts_option, check_gate_pair, force_option
from kbench.resources import resource_dir
from kbench.results.historydb import (
    HistoryError,
    check_postgres,
    check_sqlite,
    describe,
    driver_errors,
    is_postgres,
    resolve_db,
)

if TYPE_CHECKING:
    import pandas as pd

    from kbench.results.compare import Comparison, GateResult
    from kbench.results.noise import NoiseFloor
    from kbench.results.runfolder import Run

# the commands import pandas, scipy and the results modules when they run, not at
# import: a usage error or a run that does not exist is answered at once

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = resource_dir("ci") / "gate.toml"


@dataclass(frozen=True)
class GateConfig:
    max_slowdown: float = 0.05
    alpha: float = 0.01
    speed_targets: tuple[str, ...] = ("*",)  # fnmatch patterns; emulated targets never count
    max_count_growth: float = 0.005  # instruction counts: growth that fails
    # (count_compare.DEFAULT_LIMIT; suites/test_compare.py checks they agree)


def parse_fraction(value: str | float) -> float:
    """"5%" or "0.05" -> 0.05. A bare number above 1 is refused (write "5%")."""
    text = str(value).strip()
    try:
        frac = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise ValueError(f"{value!r} is not a fraction (write 5% or 0.05)") from None
    if not math.isfinite(frac) or frac < 0:
        raise ValueError(f"{value!r}: the slowdown limit must be a fraction >= 0")
    if frac > 1 and not text.endswith("%"):
        raise ValueError(f"{value!r} is ambiguous: write {text}% or {float(text) / 100:g}")
    return frac


def load_gate_config(path: Path | None = None) -> GateConfig:
    """The [gate] table of a TOML file; DEFAULT_CONFIG if there is one, else built-ins."""
    if path is None:
        if not DEFAULT_CONFIG.is_file():
            return GateConfig()
        path = DEFAULT_CONFIG
    with open(path, "rb") as fh:
        table: dict[str, Any] = tomllib.load(fh).get("gate", {})
    unknown = set(table) - {"max_slowdown", "alpha", "speed_targets", "max_count_growth"}
    if unknown:
        raise ValueError(f"{path}: unknown [gate] key(s): {', '.join(sorted(unknown))}")
    cfg = GateConfig()
    if "max_slowdown" in table:
        cfg = replace(cfg, max_slowdown=parse_fraction(table["max_slowdown"]))
    if "alpha" in table:
        cfg = replace(cfg, alpha=float(table["alpha"]))
    if "max_count_growth" in table:
        cfg = replace(cfg, max_count_growth=parse_fraction(table["max_count_growth"]))
    if "speed_targets" in table:
        targets = table["speed_targets"]
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise ValueError(f"{path}: speed_targets must be a list of strings")
        cfg = replace(cfg, speed_targets=tuple(targets))
    return cfg


def _config(config: str | None, max_slowdown: str | None, alpha: float | None,
            max_count_growth: str | None = None) -> GateConfig:
    try:
        cfg = load_gate_config(Path(config) if config else None)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise click.BadParameter(str(exc), param_hint="--config") from exc
    if max_count_growth is not None:
        try:
            cfg = replace(cfg, max_count_growth=parse_fraction(max_count_growth))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--max-count-growth") from exc
    if max_slowdown is not None:
        try:
            cfg = replace(cfg, max_slowdown=parse_fraction(max_slowdown))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--max-slowdown") from exc
    if alpha is not None:
        cfg = replace(cfg, alpha=alpha)
    if not 0 < cfg.alpha < 0.5:
        raise click.BadParameter(f"alpha must be in (0, 0.5), got {cfg.alpha}",
                                 param_hint="--alpha")
    return cfg


class BadRunFolder(click.ClickException):
    """A run folder that cannot be read: one line naming the file and what is
    wrong, exit status 2 (bad input), no usage text."""

    exit_code = 2


def _load(path: str, hint: str, strict: bool = False, db: str | None = None) -> Run:
    """A run read back: a run folder, or a run of the history database named
    by its id, latest, latest~N or a commit prefix (kbench.results.runref).
    What is wrong with its results (missing, empty, a row cut off,
    duplicated rows, a count run.json disagrees with) is one line each on
    stderr; with strict (the gate) it is a refusal: a verdict over such
    results would be wrong."""
    return load_ref(path, hint, strict, db)[0]


def load_ref(path: str, hint: str, strict: bool = False, db: str | None = None,
             all_checkouts: bool = False, defect_notes: bool = True
             ) -> tuple[Run, int | None]:
    """_load, and the run's history id when it was named through the history
    (latest, latest~N and commit prefixes among this checkout's runs, unless
    all_checkouts). defect_notes=False: what is wrong with its results is
    left to the caller (the gate's one-line refusal)."""
    from kbench.cli.pairing import scope
    from kbench.results.runref import RunRefError, resolve_run
    try:
        found = resolve_run(path, db, scope(all_checkouts))
    except RunRefError as exc:
        raise BadRunFolder(f"{hint}: {exc}") from None
    except ValueError as exc:
        from kbench.results.runfolder import RunFolderError
        if isinstance(exc, RunFolderError):
            raise BadRunFolder(f"{hint}: {exc}") from None
        raise
    except (HistoryError, *driver_errors()) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BadRunFolder(f"{hint}: {path!r}: history: {text}") from None
    run = found.run
    if found.note:
        click.echo(f"note: {hint}: {found.note}", err=True)
    if strict and run.defects:
        raise BadRunFolder(f"{hint}: {path}: not gated: {'; '.join(run.defects)}")
    for defect in run.defects if defect_notes else ():
        click.echo(f"note: {path}: {defect}", err=True)
    if not run.has_results and not run.defects:
        click.echo(f"note: {path}: {run.state()}", err=True)
    return run, found.run_id


def _fmt_ns(ns: float) -> str:
    return "-" if ns != ns else f"{ns / 1e3:.2f}"


def comparison_text(comp: Comparison, word: Any = None, times: bool = True) -> str:
    """Plain-text table of the timed cases, largest gated ratio first (the
    ratio of per-pass geometric means the test judged, beside the ratio of
    medians), and the verdict counts. word(case): the verdict to show
    (default: the comparison's); times=False: the two runs' times are not
    compared (gate --ab), one line says so."""
    from kbench.results.compare import gated_sort
    timed = comp.timed()
    lines = [f"base:      {comp.base.path}: {comp.base.describe()}",
             f"candidate: {comp.cand.path}: {comp.cand.describe()}"]
    shown = (lambda c: c.verdict) if word is None else word
    if timed and not times:
        lines.append(f"two-run times of {len(timed)} case(s): not compared (speed from the "
                     "interleaved run)")
    elif timed:
        width = max(len(c.label) for c in timed)
        lines.append(f"{'case':{width}s} {'base us':>10s} {'cand us':>10s} {'gated':>7s} "
                     f"{'median':>7s} {'p':>8s}  verdict")
        for c in gated_sort(timed):
            gated = "-" if not math.isfinite(c.log_ratio) else f"{c.gated_ratio:.3f}"
            ratio = "-" if c.ratio != c.ratio else f"{c.ratio:.3f}"
            p = "-" if c.p_value != c.p_value else f"{c.p_value:.2g}"
            note = f" ({c.note})" if c.note else ""
            lines.append(f"{c.label:{width}s} {_fmt_ns(c.base_median_ns):>10s} "
                         f"{_fmt_ns(c.cand_median_ns):>10s} {gated:>7s} {ratio:>7s} {p:>8s}  "
                         f"{shown(c)}{note}")
    else:
        lines.append("no timed cases")
    if timed and times:
        tally: dict[str, int] = {}
        for c in timed:
            tally[shown(c)] = tally.get(shown(c), 0) + 1
        lines.append("timed: " + ", ".join(f"{n} {v}" for v, n in sorted(tally.items()))
                     + " (gated: ratio of the per-pass geometric means the test judged; "
                     "median: ratio of the medians of all rounds)")
    lines += count_lines(comp)
    lines += [f"warning: {w}" for w in comp.warnings]
    return "\n".join(lines)


def count_lines(comp: Comparison) -> list[str]:
    """The instruction counts of the two runs, case by case (exact)."""
    from kbench.results.count_compare import fmt_count
    deltas = comp.instructions.deltas
    if not deltas:
        return []
    width = max(len(d.label) for d in deltas)
    lines = [f"{'counted case':{width}s} {'base call':>12s} {'cand call':>12s} {'ratio':>8s}"
             "  verdict (phases that grew)"]
    regressions = comp.instructions.regressions()
    for d in deltas:
        ratio = "-" if d.ratio() != d.ratio() else f"{d.ratio():.4f}"
        grown = ", ".join(f"{p} {c - b:+,.0f}" for p, b, c in d.grown())
        verdict = "REGRESSION" if d in regressions else d.verdict
        lines.append(f"{d.label:{width}s} {fmt_count(d.base.get('count_call', math.nan)):>12s} "
                     f"{fmt_count(d.cand.get('count_call', math.nan)):>12s} {ratio:>8s}  "
                     f"{verdict}{f' ({grown})' if grown else ''}")
    tally = comp.instructions.tally()
    lines.append("counted: " + ", ".join(f"{n} {v}" for v, n in sorted(tally.items()))
                 + f" (limit {comp.instructions.limit:.2%})")
    return lines


def _write_markdown(text: str, path: str | None, step_summary: bool) -> None:
    if path:
        Path(path).write_text(text)
    summary = os.environ.get("GITHUB_STEP_SUMMARY", "") if step_summary else ""
    if summary:
        with open(summary, "a") as fh:  # GitHub collects the job summary from this file
            fh.write(text + "\n")


_DB = click.option("--db", default=None,
                   help="History database: an SQLite file or a postgresql://USER@HOST/DB URL "
                        "[default: $KBENCH_DB, else $XDG_DATA_HOME/kbench/history.sqlite].")
_CONFIG = click.option("--config", type=click.Path(exists=True, dir_okay=False), default=None,
                       help=f"Gate configuration (TOML, [gate] table) [default: "
                            f"{DEFAULT_CONFIG.relative_to(REPO)} in the checkout].")
_ALPHA = click.option("--alpha", type=float, default=None,
                      help="Significance level of the test over per-pass medians [default: "
                           "from the configuration, else 0.01].")
_SLOWDOWN = click.option("--max-slowdown", default=None,
                         help="Largest tolerated slowdown, 5% or 0.05 [default: from the "
                              "configuration, else 5%].")
_COUNT_GROWTH = click.option("--max-count-growth", default=None,
                             help="Largest tolerated growth of a case's instruction count "
                                  "(call or B packing; emulated targets), 0.5% or 0.005 "
                                  "[default: from the configuration, else 0.5%].")
_BASE = click.argument("base")
_CAND = click.argument("cand")
_JSON = click.option("--json", "as_json", is_flag=True,
                     help="Print one JSON document instead of text (its schema: "
                          "reports/schema/ in the checkout, kbench/reports/schema/ installed).")


def _listing(df: pd.DataFrame) -> str:
    if df.empty:
        return "no runs"
    lines = [f"{'id':>4s}  {'date':25s} {'commit':13s} {'host':16s} {'arch':8s} "
             f"{'state':10s} {'backends':18s} {'results':>7s} {'failed':>6s} {'timed':>5s}  "
             "cpu / path"]
    for r in df.itertuples(index=False):
        commit = str(r.git_commit or "")[:12] + ("+" if r.git_dirty else "")
        state = ("complete" if r.complete else "INCOMPLETE") + ("*" if r.emulated else "")
        lines.append(f"{r.id:>4d}  {str(r.date):25s} {commit:13s} {str(r.host or '')[:16]:16s} "
                     f"{str(r.arch or ''):8s} {state:10s} {str(r.backends or '')[:18]:18s} "
                     f"{r.n_results:>7d} {r.n_failed:>6d} {r.n_timed:>5d}  "
                     f"{r.cpu_model or ''} / {r.path}")
    if df["emulated"].any():
        lines.append("* has emulated targets: their times are not speed")
    return "\n".join(lines)


@click.command("history")
@_DB
@click.option("--add", "add", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="Append this run folder to the history first (repeatable).")
@click.option("--machine", default=None,
              help="Only runs whose host, CPU model or architecture contains this.")
@click.option("--backend", default=None, help="Only runs with results of this backend.")
@click.option("--commit", default=None, help="Only runs of commits starting with this.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True,
              help="At most this many runs, newest first.")
@click.option("--check", "check", is_flag=True,
              help="Check the database instead of listing runs (SQLite: PRAGMA "
                   "integrity_check and foreign_key_check): one line, ok or what is "
                   "damaged; exit 1 when damaged.")
@_JSON
def history(db: str | None, add: tuple[str, ...], machine: str | None, backend: str | None,
            commit: str | None, limit: int, check: bool = False, as_json: bool = False) -> None:
    """List recorded runs (newest first); --add records run folders."""
    import pandas as pd

    from kbench.results.history import LISTING, append_run, default_db_path, query_runs
    from kbench.results.json_out import history_doc
    try:
        db_path = resolve_db(db, default_db_path())
        for folder in add:
            run_id = append_run(db_path, _load(folder, "--add"),
                                on_wait=lambda msg: click.echo(msg, err=True))
            click.echo(f"recorded {folder} as run {run_id} in {describe(db_path)}",
                       err=as_json)
        if check:
            _check(db_path)
            return
        if not is_postgres(db_path) and not Path(db_path).exists():
            if as_json:
                empty = pd.DataFrame(columns=LISTING)
                click.echo(json.dumps(history_doc(describe(db_path), empty), indent=2))
                return
            click.echo(f"no history yet at {db_path}")
            return
        listing = query_runs(db_path, machine=machine, backend=backend, commit=commit,
                             limit=limit)
    except (HistoryError, *driver_errors()) as exc:
        where = describe(db_path) if "db_path" in locals() else "(no database)"
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        # one line, naming the database once
        raise click.ClickException(
            f"history: {text}" if where in text else f"history: {where}: {text}") from None
    if as_json:
        click.echo(json.dumps(history_doc(describe(db_path), listing), indent=2))
        return
    click.echo(_listing(listing))


def _check(db_path: str | Path) -> None:
    """`kbench history --check`: one line; exit 1 when the database is damaged."""
    if is_postgres(db_path):
        found = check_postgres(str(db_path))
    elif not Path(db_path).is_file():
        raise click.ClickException(f"history: {db_path}: no history database there")
    else:
        found = check_sqlite(Path(db_path))
    click.echo(f"history: {describe(db_path)}: {found.text}")
    if not found.ok:
        raise SystemExit(1)


@click.command("compare")
@_BASE
@_CAND
@_ALPHA
@_SLOWDOWN
@_COUNT_GROWTH
@_CONFIG
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False), default=None,
              help="Also write the comparison as Markdown to this file.")
@_JSON
@_DB
@all_checkouts_option
def compare(base: str, cand: str, alpha: float | None, max_slowdown: str | None,
            max_count_growth: str | None, config: str | None,
            markdown_file: str | None, as_json: bool = False, db: str | None = None,
            all_checkouts: bool = False) -> None:
    """Compare two runs case by case: ratio of median times, one-sided
    moderated t-tests on the logs of the per-pass medians (the pass is the
    unit; a case with one pass a side gets no p-value; each case's variance
    is shrunk towards that of the run's cases of its size; the null is a
    move of half the slowdown limit, what two processes of one build can
    differ by; a realization of 5 or more cases is also tested with its cases
    together), and a verdict (faster, slower, same; not-comparable for
    emulated times or too few passes);
    instruction counts of emulated targets exactly (more, fewer, same). BASE
    and CAND are run folders, or runs of the history database: an id,
    latest, latest~N (N runs before the newest) or a commit prefix.
    With --history N, a case whose run-to-run spread over the last N runs
    of this machine exceeds --max-slowdown is held to that spread instead."""
    cfg = _config(config, max_slowdown, alpha, max_count_growth)
    (b, b_id), (c, c_id) = (load_ref(base, "BASE", db=db, all_checkouts=all_checkouts),
                            load_ref(cand, "CAND", db=db, all_checkouts=all_checkouts))
    from kbench.cli.pairing import warn_unlike
    from kbench.results.compare import compare_runs, markdown
    from kbench.results.json_out import comparison_doc
    comp = compare_runs(b, c, cfg.alpha, cfg.max_slowdown, cfg.speed_targets,
                        cfg.max_count_growth)
    from kbench.results.integrity import presence_notes
    comp.warnings[:0] = warn_unlike(b, c) + presence_notes(b, c)  # unlike, lacking rows
    if as_json:
        click.echo(json.dumps(comparison_doc(comp, (b_id, c_id)), indent=2))
    else:
        click.echo(comparison_text(comp))
    _write_markdown(markdown(comp), markdown_file, step_summary=False)


def gate_text(result: GateResult) -> str:
    """The gate's printout: its verdict and what decides it first (failures,
    the speed verdicts with the commands that settle the undecided ones),
    then the two runs' table, the counts and the warnings."""
    from kbench.results.compare import ab_tally, first_look_word
    comp = result.comparison
    limit = comp.max_slowdown
    lines = ["gate: PASSED" if result.passed else
             f"gate: FAILED ({len(result.failures)} failure(s))"]
    for f in result.failures:
        lines.append(f"FAIL {f.reason}: {f.case + ': ' if f.case else ''}{f.detail}")
    if result.ab_paths:
        tally = ", ".join(f"{n} {v}" for v, n in sorted(ab_tally(result.interleaved).items()))
        undecided = result.undecided
        lines.append(f"speed, interleaved ({result.ab_path}) at ±{limit:.1%}: "
                     f"{tally or 'no case'}; {len(undecided)} undecided")
        for v in result.interleaved:
            if v.verdict not in ("same", "faster", "not slower"):
                lines.append(f"  {v.verdict:12s} {v.label}: {v.detail}")
        commands = result.settle_commands()
        if commands:
            lines.append("  settle each inconclusive case (then gate again adding its folder "
                         "as one more --ab):")
            lines += [f"    {c}" for c in commands]
        if undecided and result.passed:
            lines.append(f"  {len(undecided)} inconclusive: not failures without --strict")
        if result.unjudged:
            lines.append(f"  unjudged: {len(result.unjudged)} timed case(s) no interleaved "
                         f"folder judged: {', '.join(result.unjudged)}")
        lines.append(comparison_text(comp, times=False))
        return "\n".join(lines)
    found = result.first_look
    lines.append(f"speed: first look, not gated: {len(found)} possible slowdown(s) (two runs "
                 "measured apart; settle with `kbench ab`, then gate with --ab)")
    for f in found:
        lines.append(f"  possible slowdown {f.case}: {f.detail}")
        if f.settle:
            lines.append(f"    settle: {f.settle}")
    drift = sum(c.verdict == "inconclusive" for c in comp.cases)
    if drift:
        lines.append(f"  {drift} case(s) moved with the whole run (machine drift): see the "
                     "warning")
    lines.append(comparison_text(comp, word=lambda c: first_look_word(c, comp)))
    return "\n".join(lines)


def _noise_floor(db: str | None, base: Run, cand: Run, runs: int) -> NoiseFloor:
    """The --history noise floor for the candidate's machine (usage error when
    the history cannot be read)."""
    from kbench.results.history import default_db_path
    from kbench.results.noise import from_history
    try:
        return from_history(resolve_db(db, default_db_path()), str(cand.meta.get("host") or ""),
                            str(cand.meta.get("cpu_model") or ""), runs,
                            exclude_dates=(str(base.meta.get("date") or ""),
                                           str(cand.meta.get("date") or "")))
    except (HistoryError, *driver_errors()) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise click.BadParameter(f"history: {text}", param_hint="--history") from None


@click.command("gate")
@_BASE
@_CAND
@_SLOWDOWN
@_ALPHA
@_COUNT_GROWTH
@_CONFIG
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False), default=None,
              help="Write the Markdown summary here (it is also appended to "
                   "$GITHUB_STEP_SUMMARY when that is set).")
@click.option("--strict", is_flag=True,
              help="With --ab: fail on inconclusive speed verdicts too (cases whose interval "
                   "straddles the limit). Without --ab speed never fails the gate: two runs "
                   "measured apart are a first look.")
@click.option("--ab", "ab_dirs", type=click.Path(file_okay=False), multiple=True,
              help="Judge speed from this interleaved run folder (`kbench ab --base ... "
                   "--cand ...`: base and candidate rounds alternating, so machine drift is "
                   "shared by both) instead of comparing the two runs' times; BASE and CAND "
                   "still decide correctness, presence and instruction counts. Repeatable: "
                   "the later folder's verdict wins per case (add a `kbench ab --settle` "
                   "folder after the first); timed cases no folder judged are listed as "
                   "unjudged.")
@click.option("--history", "history_runs", type=click.IntRange(min=3), default=None,
              metavar="N",
              help="Widen each case's --max-slowdown to its run-to-run spread over the last N "
                   "runs of the same host and CPU in the history (--db), where that spread is "
                   "wider; the output says which cases and by how much.")
@_JSON
@_DB
@all_checkouts_option
@force_option
def gate_command(base: str, cand: str, max_slowdown: str | None, alpha: float | None,
                 max_count_growth: str | None, config: str | None,
                 markdown_file: str | None, strict: bool = False, as_json: bool = False,
                 db: str | None = None, ab_dirs: tuple[str, ...] = (),
                 history_runs: int | None = None, all_checkouts: bool = False,
                 force: bool = False) -> None:
    """The regression gate: exit 1 on any correctness failure or error in
    CAND, any case of BASE missing from CAND, an incomplete run, (on
    emulated targets, exactly) an instruction count of a call or a B packing
    grown by more than --max-count-growth, or (with --ab) a slowdown whose
    interval lies wholly above 1 + --max-slowdown; 0 if none; 2 on bad input.
    Without --ab, speed is a first look: a slowdown both above
    --max-slowdown and significant at --alpha is listed as a possible
    slowdown with the `kbench ab --settle` command that decides it, never a
    failure.
    With --ab, speed comes from interleaved runs: per case slower (fails),
    inconclusive (the interval straddles the limit: listed with the command
    that settles it, a failure only with --strict), not slower, same or
    faster (pass); the later --ab folder wins per case.
    BASE and CAND are run folders, or runs of the history database: an id,
    latest, latest~N (N runs before the newest) or a commit prefix.
    With --history N, a case whose run-to-run spread over the last N runs
    of this machine exceeds --max-slowdown is held to that spread instead."""
    cfg = _config(config, max_slowdown, alpha, max_count_growth)
    (b, b_id) = load_ref(base, "BASE", db=db, all_checkouts=all_checkouts, defect_notes=False)
    (c, c_id) = load_ref(cand, "CAND", db=db, all_checkouts=all_checkouts, defect_notes=False)
    forced = check_gate_pair(b, c, force, BadRunFolder)  # damaged or unlike: refused
    from kbench.results.abgate import AbRunError, load_ab
    from kbench.results.compare import gate, markdown
    from kbench.results.json_out import gate_doc
    try:
        ab = [load_ab(d) for d in ab_dirs] or None
    except AbRunError as exc:
        raise click.BadParameter(str(exc), param_hint="--ab") from None
    floor = None
    if history_runs is not None:
        if ab is not None:
            raise click.UsageError("--history widens the limits of two runs compared apart; "
                                   "with --ab speed comes from the interleaved run")
        floor = _noise_floor(db, b, c, history_runs)
    result = gate(b, c, cfg.alpha, cfg.max_slowdown, cfg.speed_targets, cfg.max_count_growth,
                  strict=strict, ab=ab,
                  noise=floor.limits(cfg.max_slowdown) if floor is not None else None)
    if floor is not None:
        result.comparison.warnings.append(floor.describe(cfg.max_slowdown))
    result.comparison.warnings[:0] = forced
    if as_json:
        click.echo(json.dumps(gate_doc(result, (b_id, c_id)), indent=2))
    else:
        click.echo(gate_text(result))
    _write_markdown(markdown(result), markdown_file, step_summary=True)
    raise SystemExit(0 if result.passed else 1)
