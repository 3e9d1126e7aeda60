"""`kbench count` (exact instruction counts of one realization on one shape
on an emulated target) and `kbench baseline` (the committed count baseline:
update, write, check)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

from kbench.errors import KbenchError
from kbench.harness.counting import Counter, count_fields, countable
from kbench.harness.runner import InputCache, Job, applicable, run_job
from kbench.native import api
from kbench.problems.cases import Case, GemmCase
from kbench.problems.catalog import CatalogError, load_catalog, resolve_catalog
from kbench.results import anchors as anc
from kbench.results import baseline as bl
from kbench.results.count_compare import (
    FEWER,
    MISSING,
    NEW,
    CountComparison,
    compare_counts,
    failure_detail,
    fmt_count,
    markdown_table,
)
from kbench.results.counts import CLASSES, parse_mix
from kbench.results.runfolder import RunFolderError, load_run
from kbench.targets.spec import parse_target

SHAPE = re.compile(r"(\d+)x(\d+)x(\d+)")


def _cases(shape: str | None, shapes: str | None, names: tuple[str, ...], b_form: str,
           bias: bool) -> list[tuple[str, Case]]:
    if shape:
        m = SHAPE.fullmatch(shape.strip())
        if not m or not all(int(x) > 0 for x in m.groups()):
            raise click.BadParameter(f"{shape!r} is not MxNxK (e.g. 256x256x256)",
                                     param_hint="--shape")
        mm, n, k = (int(x) for x in m.groups())
        return [("", GemmCase(f"m{mm}_n{n}_k{k}_{b_form}", mm, n, k, bias=bias, b_form=b_form))]
    if not shapes:
        raise click.UsageError("give --shape MxNxK or --shapes CATALOG [--case NAME]")
    try:
        cat = load_catalog(resolve_catalog(shapes))
    except (CatalogError, FileNotFoundError, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint="--shapes") from exc
    cases = [c for c in cat.cases if not names or c.name in names]
    unknown = set(names) - {c.name for c in cat.cases}
    if unknown:
        raise click.BadParameter(f"no case {', '.join(sorted(unknown))} in {cat.name} "
                                 f"(cases: {', '.join(c.name for c in cat.cases)})",
                                 param_hint="--case")
    return [(cat.name, c) for c in cases]


def _pct(n: float, total: float) -> str:
    return f"{n / total:6.1%}" if total else ""


def count_text(job: Job, fields: dict[str, Any], verdict: str) -> str:
    """The human-readable account of one count."""
    case = job.case
    mix = parse_mix(fields.get("count_mix"))
    call = float(fields["count_call"])
    b_form = getattr(case, "b_form", "-")
    lines = [f"{job.realization.name}  {case.name} ({case.shape_str()}, B {b_form})"
             f"  on {job.target}",
             f"counted: {fields['count_method']}, QEMU {fields['count_qemu']}, "
             f"-cpu {fields['count_cpu']}; one single-threaded call after a warm-up",
             f"verified: {verdict}", "",
             f"{'phase':14s} {'instructions':>13s} {'share':>7s}  "
             + " ".join(f"{c:>9s}" for c in CLASSES)]

    def line(name: str, col: str, phase: str | None, indent: int = 0) -> None:
        v = fields.get(col, math.nan)
        if not isinstance(v, int | float) or v != v:
            return
        m = mix.get(phase or "", {})
        cells = " ".join(f"{m.get(c, 0):>9,d}" for c in CLASSES) if m else ""
        share = "" if "pack_b" in col else _pct(float(v), call)
        lines.append(f"{' ' * indent + name:14s} {v:>13,.0f} {share:>7s}  {cells}")
    line("call", "count_call", "call")
    line("validate", "count_validate", "validate", 2)
    line("checksum", "count_checksum", None, 4)
    line("pack_lhs", "count_pack_lhs", "pack_lhs", 2)
    line("pack_rhs", "count_pack_rhs", "pack_rhs", 2)
    line("kernel", "count_kernel", "kernel", 2)
    line("other", "count_other", "other", 2)
    line("pack_b", "count_pack_b", "pack_b")
    line("checksum", "count_pack_b_checksum", None, 2)
    if "count_floor" in fields:
        lines += ["", f"floor: {fields['count_floor']:,} {fields['count_floor_kind']}; "
                  f"kernel efficiency {fields.get('count_efficiency', math.nan):.1%} "
                  "(floor / kernel instructions)"]
    return "\n".join(lines)


def heap_lines(job: Job, fields: dict[str, Any]) -> list[str]:
    """The counted call's heap: the most the realization held during it and
    what it still held after it (kbench.harness.scratch says what is counted)."""
    if "heap_peak" not in fields:
        return ["heap: not measured for this call"]
    whose = ("its own blocks" if job.realization.is_plugin
             else "kbench's scratch, which our realizations hold")
    return [f"heap peak:     {fields['heap_peak']:>13,} bytes during the call ({whose})",
            f"heap retained: {fields['heap_retained']:>13,} bytes still held after it"]


def _anchor_row(job: Job, fields: dict[str, Any]) -> dict[str, Any]:
    """One count as a results row, for matching it against the anchor tables."""
    case = job.case
    return {"op": case.op, "realization": job.realization.name, "target": job.target,
            "case": case.name, "shape": case.shape_str(),
            "m": getattr(case, "m", 0), "n": getattr(case, "n", 0), "k": getattr(case, "k", 0),
            "vector_bits": job.realization.vector_bits, **fields}


def best_lines(tables: list[anc.AnchorTable], best: list[anc.AnchorMatch]) -> list[str]:
    """The per-shape comparison with the best anchor, and the geometric mean
    of the ratios per target and realization."""
    lines = [f"anchors: {t.name} ({t.path.split('/')[-1]}"
             + (f"; source {t.commit[:12]}, built with {t.flags}" if t.commit else "") + ")"
             for t in tables]
    lines.append(f"{'target':22s} {'realization':28s} {'case':26s} {'ours':>11s} "
                 f"{'best anchor':>11s}  {'ratio':>6s}  {'outer/floor':>11s}  anchor")
    for m in best:
        opf = m.outer_per_floor
        lines.append(f"{m.target:22s} {m.realization:28s} {m.case:26s} {m.ours:>11,.0f} "
                     f"{m.theirs:>11,d}  {m.ratio:6.3f}  "
                     f"{'' if opf != opf else f'{opf:.3f}':>11s}  {m.anchor.label}")
    for (target, real), gm, n in anc.geomeans(best):
        worst = max((m for m in best if (m.target, m.realization) == (target, real)),
                    key=lambda m: m.ratio)
        lines.append(f"{target} {real}: geometric mean {gm:.3f} over {n} shape(s); "
                     f"worst {worst.ratio:.3f} ({worst.case})")
    return lines


def anchor_lines(job: Job, fields: dict[str, Any]) -> list[str]:
    try:
        tables = anc.load_tables()
    except anc.AnchorError as exc:
        return [f"anchors: {exc}"]
    row = _anchor_row(job, fields)
    out = []
    for m in anc.match_tables(tables, [row]):
        extra = ""
        if m.ours_without_checksum == m.ours_without_checksum:
            extra = (f"; without the header's FNV-1a {m.ours_without_checksum:,.0f} "
                     f"({m.ours_without_checksum / m.theirs:.3f}x)")
        out.append(f"{m.source} {m.anchor.label} ({m.anchor.phase}, "
                   f"{m.anchor.shape_str()}): theirs {m.theirs:,}, ours {m.ours:,.0f} "
                   f"-> {m.ratio:.3f}x{extra}")
    return out


@click.command("count")
@click.option("--target", "target_spec", default="qemu:svl=512", show_default=True,
              help="An emulated worker target: qemu[:cpu=MODEL][:sme=off][:svl=BITS][:vl=BITS]"
                   "[:isa=CAP] (qemu:sme=off:vl=256: SVE2.1 without SME, SVE vector length "
                   "256 bits).")
@click.option("--realization", "realizations", multiple=True,
              help="The realization to count (forced); repeatable. With --plugin and no "
                   "--realization: every realization of the plugins that takes the shape.")
@click.option("--plugin", "plugins", multiple=True, metavar="PATH",
              help="A plugin library ({arch} is replaced by aarch64); repeatable. Its "
                   "realizations are counted in the dynamically linked worker, phase for "
                   "phase like ours.")
@click.option("--against", "against", multiple=True, metavar="REALIZATION",
              help="Count this realization too on the same cases and print each phase's "
                   "ratio to it (e.g. a plugin's kernel against ours); repeatable.")
@click.option("--shape", default=None,
              help="A GEMM shape MxNxK, e.g. 256x256x256 (the default without --shapes).")
@click.option("--b-form", type=click.Choice(["native", "plain", "packed"]), default="native",
              show_default=True, help="With --shape: how B is passed.")
@click.option("--bias/--no-bias", default=True, show_default=True,
              help="With --shape: a bias (inside native B).")
@click.option("--shapes", default=None, help="Or a catalog (file or name in reference/).")
@click.option("--case", "case_names", multiple=True,
              help="With --shapes: only this case (repeatable).")
@click.option("--method", type=click.Choice(["tb", "insn"]), default="tb", show_default=True,
              help="tb: QEMU's translation blocks x their sizes; insn: one logged line per "
                   "instruction (slower; an independent cross-check).")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="Check the realization's result against the oracle first.")
@click.option("--verify-payload", is_flag=True,
              help="The counted calls verify the packed B's payload checksum (the selector's "
                   "verify_payload): validate then holds the full-payload check.")
@click.option("--kernel-entry", "kernel_entries", multiple=True, metavar="REALIZATION=FUNCTION",
              help="Count a plugin realization's kernel phase from this function of its "
                   "library (file.c:name for a static one), e.g. the library's own entry "
                   "point behind an adapter; the adapter's instructions go to other. "
                   "Repeatable.")
@click.option("--one-call", "one_call", is_flag=True,
              help="Run the GEMM's micro-kernel once over the whole problem (single "
                   "thread, the whole LHS packed first), as a single-threaded caller and "
                   "KleidiAI's own benchmark call it: a plugin's run_matmul and our SME "
                   "MOPA micro-kernel alike (default: a plugin's once per m_step band).")
@click.option("--json", "as_json", is_flag=True, help="Print the count fields as JSON.")
@click.option("--anchors", "vs_anchors", is_flag=True,
              help="Per shape: ours, the best KleidiAI anchor, the ratio and our outer "
                   "products against the floor, then the geometric mean (by default the "
                   "comparison sweep, reference/kleidiai_sweep.toml, with "
                   "gemm_sme2_mopa_f32acc).")
def count(target_spec: str, realizations: tuple[str, ...], plugins: tuple[str, ...],
          against: tuple[str, ...], shape: str | None, b_form: str, bias: bool,
          shapes: str | None, case_names: tuple[str, ...], method: str, verify: bool,
          verify_payload: bool, kernel_entries: tuple[str, ...], one_call: bool, as_json: bool,
          vs_anchors: bool) -> None:
    """Count the exact dynamic instructions of one single-threaded call of a
    realization, per phase (validate, checksum, pack_lhs, pack_rhs, kernel,
    other; and pack_b), with the instruction mix, the floor and efficiency,
    and the ratio to the KleidiAI anchor table when the shape is one of its.
    A plugin's realizations (--plugin) are counted the same way; --against
    prints the ratio of each phase to another realization's."""
    if not countable(target_spec):
        raise click.BadParameter(f"{target_spec!r}: counts need a qemu: worker target",
                                 param_hint="--target")
    if vs_anchors and not shape and not shapes:
        shapes = "kleidiai_sweep"
    if vs_anchors and not realizations and not plugins:
        realizations = ("gemm_sme2_mopa_f32acc",)
    if not realizations and not plugins:
        raise click.UsageError("give --realization NAME (or --plugin PATH)")
    cases = _cases(shape or (None if shapes else "256x256x256"), shapes, case_names, b_form,
                   bias)
    try:
        target = parse_target(target_spec, plugins)
        info = target.info()
    except KbenchError as exc:
        raise click.BadParameter(str(exc), param_hint="--target") from exc
    reals = {r.name: r for r in info.realizations}
    refused = info.extra.get("plugin_errors", [])
    if plugins and refused:
        target.close()
        raise click.ClickException("plugin not loaded: " + "; ".join(
            f"{e['path']}: {e['message']}" for e in refused))
    chosen = list(realizations) or [
        r.name for r in info.realizations if r.is_plugin and r.op == "gemm"
        and any(applicable(c, r) for _, c in cases)]
    if not chosen:
        target.close()
        raise click.ClickException("the plugins have no GEMM realization that takes "
                                   + ", ".join(c.name for _, c in cases))
    for name in (*chosen, *against):
        if name not in reals:
            target.close()
            raise click.BadParameter(f"{name!r} is not offered on {target_spec} "
                                     f"(kbench realizations --target {target_spec}"
                                     + "".join(f" --plugin {p}" for p in plugins) + ")",
                                     param_hint="--realization")
    try:
        entries = _kernel_entries(kernel_entries, reals)
    except click.BadParameter:
        target.close()
        raise
    counter = Counter(method, plugins=plugins, kernel_entries=entries)
    cache, out = InputCache(), []
    try:
        for catalog, case in cases:
            base: dict[str, dict[str, Any]] = {}
            for name in (*against, *chosen):
                real = reals[name]
                if not applicable(case, real):
                    if name in against or realizations:
                        raise click.ClickException(f"{name} does not take {case.name}")
                    continue
                job = Job(case, "uniform", real, target_spec, catalog)
                verdict = "skipped (--no-verify)"
                if verify:
                    v = run_job(target, job, api.Selector(one_call=one_call), cache)
                    verdict = f"{v.status} (max error/bound {v.max_err_bound:.3g})"
                    if v.status not in ("pass", "mistrusted"):
                        raise click.ClickException(f"{case.name}: {v.line()}")
                try:
                    fields = count_fields(counter, job, cache, verify_payload=verify_payload,
                                          one_call=one_call)
                except KbenchError as exc:
                    raise click.ClickException(str(exc)) from exc
                if verify_payload:
                    fields["count_verify_payload"] = True
                if one_call:
                    fields["count_one_call"] = True
                if name in against:
                    base[name] = fields
                ratios = {a: ratio_fields(fields, base[a]) for a in against if a != name}
                if as_json:
                    out.append({"case": case.name, "shape": case.shape_str(),
                                "realization": name, "target": target_spec,
                                "verified": verdict, **fields,
                                **({"ratios": ratios} if ratios else {})})
                elif vs_anchors:
                    out.append(_anchor_row(job, fields))
                else:
                    click.echo(count_text(job, fields, verdict))
                    for line in anchor_lines(job, fields):
                        click.echo(line)
                    for a, r in ratios.items():
                        click.echo(ratio_line(a, r))
                    click.echo("\n" + "\n".join(heap_lines(job, fields)))
                    click.echo("")
    finally:
        target.close()
    if as_json:
        click.echo(json.dumps(out, indent=2))
    elif vs_anchors:
        try:
            tables = anc.load_tables()
        except anc.AnchorError as exc:
            raise click.ClickException(str(exc)) from exc
        best = anc.best_matches(anc.match_tables(tables, out))
        if not best:
            raise click.ClickException("no counted case matches an anchor of "
                                       + ", ".join(t.path for t in tables))
        click.echo("\n".join(best_lines(tables, best)))


def _kernel_entries(given: tuple[str, ...], reals: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in given:
        real, sep, func = item.partition("=")
        if not sep or not real or not func:
            raise click.BadParameter(f"{item!r} is not REALIZATION=FUNCTION",
                                     param_hint="--kernel-entry")
        if real not in reals or not reals[real].is_plugin:
            raise click.BadParameter(f"{real!r} is not a loaded plugin's realization",
                                     param_hint="--kernel-entry")
        out[real] = func
    return out


RATIO_PHASES = ("call", "validate", "pack_lhs", "pack_rhs", "kernel", "other", "pack_b")


def ratio_fields(fields: dict[str, Any], base: dict[str, Any]) -> dict[str, float]:
    """Each phase's count over the same phase of another realization's count
    (phases that either side lacks or has at zero are left out)."""
    out = {}
    for phase in RATIO_PHASES:
        a, b = fields.get(f"count_{phase}"), base.get(f"count_{phase}")
        if isinstance(a, int | float) and isinstance(b, int | float) and b and a == a:
            out[phase] = a / b
    return out


def ratio_line(against: str, ratios: dict[str, float]) -> str:
    return f"against {against}: " + ", ".join(f"{p} {r:.3f}x" for p, r in ratios.items())


# ---- the committed baseline ------------------------------------------------------------


@click.group("baseline")
def baseline() -> None:
    """The committed instruction-count baseline (reference/counts/baseline.csv):
    regenerate it, write it from a run, or check a run against it."""


_CSV = click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
                    default=bl.DEFAULT_CSV, show_default=True, help="The baseline CSV.")
_CONFIG = click.option("--config", "config_path", type=click.Path(dir_okay=False,
                       exists=True, path_type=Path), default=bl.DEFAULT_CONFIG,
                       show_default=True, help="Catalog, targets, backends and limit.")


def _config(path: Path) -> bl.BaselineConfig:
    try:
        return bl.load_config(path)
    except bl.BaselineError as exc:
        raise click.BadParameter(str(exc), param_hint="--config") from exc


def _run_rows(run_dir: Path) -> tuple[list[dict[str, Any]], str]:
    try:
        run = load_run(run_dir)
    except RunFolderError as exc:
        raise click.BadParameter(str(exc), param_hint="RUN") from exc
    if not run.complete:
        raise click.ClickException(f"{run_dir} did not complete: its counts are not a baseline")
    rows = bl.counted_rows(run.results.to_dict("records"))
    qemu = ", ".join(sorted({str(q) for q in run.results.get("count_qemu", []) if str(q)}))
    return rows, qemu


def _write(csv_path: Path, rows: list[dict[str, Any]], qemu: str) -> CountComparison:
    if not rows:
        raise click.ClickException("the run has no counted cases (a perf run on qemu: targets)")
    try:
        old = bl.read_baseline(csv_path)
    except bl.BaselineError as exc:
        raise click.ClickException(str(exc)) from exc
    new = bl.merged(old, rows)
    bl.write_baseline(csv_path, new, bl.header_lines(qemu))
    return compare_counts(old, new)


def _summary(comp: CountComparison) -> str:
    tally = comp.tally()
    return ", ".join(f"{n} {v}" for v, n in sorted(tally.items())) or "nothing counted"


@baseline.command("write")
@click.argument("run_dir", metavar="RUN", type=click.Path(exists=True, file_okay=False,
                                                          path_type=Path))
@_CSV
def baseline_write(run_dir: Path, csv_path: Path) -> None:
    """Write RUN's counts into the baseline (the rows of the targets RUN
    counted are replaced; other targets' rows are kept)."""
    rows, qemu = _run_rows(run_dir)
    comp = _write(csv_path, rows, qemu)
    click.echo(f"baseline: {csv_path} ({len(rows)} counted cases from {run_dir}; against "
               f"the previous baseline: {_summary(comp)})")


@baseline.command("update")
@_CSV
@_CONFIG
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Keep the perf run in this folder (default: a temporary folder).")
def baseline_update(csv_path: Path, config_path: Path, keep: Path | None) -> None:
    """Regenerate the baseline: count the configured catalog on the configured
    targets for the configured backends (a perf run), then write it."""
    cfg = _config(config_path)
    with tempfile.TemporaryDirectory(prefix="kbench-baseline-") as tmp:
        out = keep or Path(tmp) / "run"
        cmd = [sys.executable, "-m", "kbench.cli", "run", "--suite", "perf", "--shapes",
               cfg.catalog, "--rounds", "1", "--min-round-ms", "0", "--no-history",
               "--out", str(out)]
        for t in cfg.targets:
            cmd += ["--target", t]
        cmd += cfg.selection_args()
        click.echo("baseline: " + " ".join(cmd[2:]))
        if subprocess.run(cmd).returncode != 0:
            raise click.ClickException(f"the perf run failed (see above; run folder {out})")
        rows, qemu = _run_rows(out)
        comp = _write(csv_path, rows, qemu)
    click.echo(f"baseline: {csv_path} rewritten ({len(rows)} counted cases; against the "
               f"previous baseline: {_summary(comp)}); review `git diff {csv_path.name}` and "
               "commit it with the change that moved the counts")


def check_text(comp: CountComparison, failures: list[str]) -> str:
    lines = []
    for d in comp.deltas:
        base, cand = d.base.get("count_call", math.nan), d.cand.get("count_call", math.nan)
        lines.append(f"{d.verdict:8s} {d.label}: call {fmt_count(base)} -> {fmt_count(cand)}"
                     + (f" ({d.ratio() - 1:+.3%})" if d.ratio() == d.ratio() else ""))
    lines += [f"FAIL {f}" for f in failures]
    lines.append(f"baseline check: {'FAILED' if failures else 'PASSED'} ({_summary(comp)}; "
                 f"limit {comp.limit:.2%})")
    return "\n".join(lines)


@baseline.command("check")
@click.argument("run_dirs", metavar="RUN...", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@_CSV
@_CONFIG
@click.option("--limit", default=None, help="Largest tolerated growth of a call or B "
                                            "packing, 0.5% or 0.005 [default: the config's].")
@click.option("--partial", is_flag=True,
              help="Check only the targets the runs counted (default: every target of the "
                   "baseline must be counted).")
@click.option("--markdown", "markdown_file", type=click.Path(dir_okay=False), default=None,
              help="Also write the result as Markdown.")
def baseline_check(run_dirs: tuple[Path, ...], csv_path: Path, config_path: Path,
                   limit: str | None, partial: bool, markdown_file: str | None) -> None:
    """Compare the counts of one or more runs (e.g. one per target) with the
    committed baseline: exit 1 when a call or a B packing grew past the
    limit, a baseline case is missing, a counted case is not in the
    baseline, or counts are not deterministic; else 0."""
    cfg = _config(config_path)
    try:
        lim = bl.parse_limit(limit) if limit is not None else cfg.limit
        base = bl.read_baseline(csv_path)
    except bl.BaselineError as exc:
        raise click.BadParameter(str(exc)) from exc
    if not base:
        raise click.ClickException(f"{csv_path}: no baseline yet (kbench baseline update)")
    rows = [r for run_dir in run_dirs for r in _run_rows(run_dir)[0]]
    run_dir = ", ".join(map(str, run_dirs))
    counted_targets = {r["target"] for r in rows}
    if partial:
        base = [r for r in base if r["target"] in counted_targets]
    comp = compare_counts(base, rows, lim)
    failures = [f"{d.label}: {failure_detail(d, lim)}" for d in comp.regressions()]
    failures += [f"{d.label}: in the baseline, not counted in {run_dir}"
                 for d in comp.deltas if d.verdict == MISSING]
    failures += [f"{d.label}: counted, but not in the baseline (run `kbench baseline update` "
                 "and commit the CSV)" for d in comp.deltas if d.verdict == NEW]
    failures += [f"{d.label}: counts differ between rows of the {d.nondeterministic} run"
                 for d in comp.deltas if d.nondeterministic]
    text = check_text(comp, failures)
    better = [d for d in comp.deltas if d.verdict == FEWER]
    if better and not failures:
        text += (f"\nnote: {len(better)} case(s) take fewer instructions than the baseline; "
                 "`kbench baseline update` locks the gain in")
    click.echo(text)
    if markdown_file:
        md = ["## kbench baseline check: " + ("FAILED" if failures else "PASSED"), "",
              f"- baseline `{csv_path}`, run `{run_dir}`, limit {lim:.2%}", "",
              *[f"- FAIL {f}" for f in failures], "", *markdown_table(comp, 500), ""]
        Path(markdown_file).write_text("\n".join(md))
    raise SystemExit(1 if failures else 0)


@click.command("anchors")
@click.argument("run_dirs", metavar="RUN...", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--table", "table_paths", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A peer anchor table; repeatable [default: "
                   "reference/counts/kleidiai_v1.30.toml, kleidiai_sweep.toml and "
                   "kleidiai_sve_sweep.toml].")
@click.option("--best", is_flag=True,
              help="Per counted shape only the best anchor (the fewest instructions), with "
                   "our outer products against the floor and the geometric mean.")
@click.option("--limit", type=float, default=None,
              help="With --best: exit 1 when a shape's ratio to its best anchor exceeds this.")
@click.option("--outer-limit", type=float, default=None,
              help="With --best: exit 1 when our outer (or dot) products exceed this "
                   "multiple of the floor on a shape.")
@click.option("--geomean-limit", type=float, default=None,
              help="With --best: exit 1 when the geometric mean of the ratios (per target "
                   "and realization, over its GEMM shapes) exceeds this.")
def anchors(run_dirs: tuple[Path, ...], table_paths: tuple[Path, ...], best: bool,
            limit: float | None, outer_limit: float | None, geomean_limit: float | None) -> None:
    """Our counts against the peer anchor tables (KleidiAI's measured counts)
    on the shapes both cover; exit 1 if no counted case matches (or, with
    --best, a limit is passed)."""
    limits = (limit, outer_limit, geomean_limit)
    if any(x is not None for x in limits) and not best:
        raise click.UsageError("--limit, --outer-limit and --geomean-limit go with --best")
    try:
        tables = [anc.load_anchors(p) for p in table_paths] or anc.load_tables()
    except anc.AnchorError as exc:
        raise click.BadParameter(str(exc), param_hint="--table") from exc
    rows: list[dict[str, Any]] = []
    for run_dir in run_dirs:
        try:
            rows += load_run(run_dir).results.to_dict("records")
        except RunFolderError as exc:
            raise click.BadParameter(str(exc), param_hint="RUN") from exc
    matches = anc.match_tables(tables, rows)
    if not matches:
        raise click.ClickException("no counted case matches an anchor (count the shapes of "
                                   "reference/kleidiai_anchors*.toml or kleidiai_sweep.toml "
                                   "with native B)")
    if best:
        chosen = anc.best_matches(matches)
        click.echo("\n".join(best_lines(tables, chosen)))
        failures = []
        for m in chosen:
            if limit is not None and m.ratio > limit:
                failures.append(f"{m.target} {m.realization} {m.case}: {m.ratio:.3f}x the "
                                f"best anchor ({m.anchor.label}), limit {limit:g}")
            opf = m.outer_per_floor
            if outer_limit is not None and not opf <= outer_limit:
                failures.append(f"{m.target} {m.realization} {m.case}: outer products "
                                f"{opf:.3f}x the floor, limit {outer_limit:g}")
        if geomean_limit is not None:
            for (target, real), gm, n in anc.geomeans(chosen):
                if not gm <= geomean_limit:
                    failures.append(f"{target} {real}: geometric mean {gm:.3f} over {n} "
                                    f"shape(s), limit {geomean_limit:g}")
        for f in failures:
            click.echo(f"FAIL {f}")
        if any(x is not None for x in limits):
            click.echo(f"anchors: {'FAILED' if failures else 'PASSED'} ({len(chosen)} shapes)")
        if failures:
            raise SystemExit(1)
        return
    for table in tables:
        click.echo(f"{table.name}: {table.what}\nmethod: {' '.join(table.method.split())}")
        for m in (m for m in matches if m.source == table.name):
            extra = ""
            if m.ours_without_checksum == m.ours_without_checksum:
                extra = f" (without the header's FNV-1a {m.ours_without_checksum / m.theirs:.3f})"
            click.echo(f"{m.anchor.label:30s} {m.anchor.phase:8s} {m.anchor.shape_str():22s} "
                       f"SVL {m.svl or 'any':>4} {m.realization:40s} ours {m.ours:>11,.0f} "
                       f"theirs {m.theirs:>11,d}  ours/theirs {m.ratio:.3f}{extra}")
