"""The generator of every figure in README.md and docs/: count tables from the
committed count baseline (reference/counts/baseline.csv), the KleidiAI anchor
table (reference/counts/kleidiai_v1.30.toml) and our counts on the anchor
shapes (docs/records/anchor_counts.toml); command output and measurements
from the dated records in docs/records/ (each with its date, commit, machine
and command).

The Markdown files hold cog blocks (cogapp)::

    <!-- [[[cog import kbdocs; kbdocs.out("baseline_gemm_kernels")]]] -->
    ...generated, never edited by hand...
    <!-- [[[end]]] -->

Commands (run from the repository root)::

    python docs/gen/kbdocs.py regen                # rewrite every generated block
    python docs/gen/kbdocs.py check                # exit 1 if a block differs (suites/test_docs.py)
    python docs/gen/kbdocs.py record count_example # re-measure a record (anchor_counts: minutes)
    python docs/gen/kbdocs.py check-counts RUN...  # the count tables against a run's counts
    python docs/gen/kbdocs.py record-mc FOLDER NAME # a machine-code campaign's folder as a record

KBENCH_DOCS_ROOT points the generator at another tree (a copy with a changed
baseline, in the tests)."""

from __future__ import annotations

import argparse
import csv
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # kbench from this checkout, also when cog runs the blocks

from kbench.results import anchors as anchors_mod  # noqa: E402
from kbench.results import baseline as baseline_mod  # noqa: E402
from kbench.results.counts import COLUMNS  # noqa: E402


def root() -> Path:
    return Path(os.environ.get("KBENCH_DOCS_ROOT") or REPO)


def files() -> list[Path]:
    """Every Markdown file that may hold generated blocks."""
    r = root()
    return [r / "README.md", *sorted((r / "docs").glob("*.md"))]


# ----------------------------------------------------------------------------- formatting

def num(v: float | int) -> str:
    return f"{int(v):,}"


def duration(seconds: float) -> str:
    s = round(seconds)
    if s < 1:
        return "under a second"
    m, s = divmod(s, 60)
    return f"{m} min {s} s" if m else f"{s} s"


def table(columns: list[str], rows: Iterable[Iterable[Any]], align: str = "") -> str:
    """A Markdown table; align: one letter per column (l or r), default l."""
    align = align.ljust(len(columns), "l")
    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- records

def record(name: str) -> dict[str, Any]:
    path = root() / "docs" / "records" / f"{name}.toml"
    with path.open("rb") as fh:
        rec = tomllib.load(fh)
    meta = rec.get("record", {})
    missing = [k for k in ("date", "commit", "machine", "command") if not meta.get(k)]
    if missing:
        raise ValueError(f"{path}: [record] needs {', '.join(missing)}")
    return rec


def provenance(rec: Mapping[str, Any]) -> str:
    meta = rec["record"]
    cmds = meta["command"] if isinstance(meta["command"], list) else [meta["command"]]
    how = "; ".join(f"`{c}`" for c in cmds)
    text = (f"*Recorded {meta['date']} at commit `{meta['commit']}` on {meta['machine']}:"
            f" {how}.")
    if meta.get("note"):
        text += " " + " ".join(meta["note"].split())
    return text + "*\n"


def recorded(name: str) -> str:
    """A dated record as it is written: summary, table, notes, provenance."""
    rec = record(name)
    parts = []
    if rec.get("summary"):
        parts.append(" ".join(rec["summary"].split()) + "\n")
    t = rec.get("table")
    if t:
        parts.append(table(t["columns"], t["rows"], t.get("align", "")))
    if rec.get("notes"):
        parts.append("".join(f"- {' '.join(n.split())}\n" for n in rec["notes"]))
    parts.append(provenance(rec))
    return "\n".join(parts)


# ----------------------------------------------------------------------------- CI record

def ci_total() -> str:
    rec = record("ci_run")
    meta = rec["record"]
    return (f"One whole `bash .ci/run` took **{duration(rec['total_seconds'])}** on "
            f"{meta['machine']} ({meta['date']}, commit `{meta['commit']}`; step by step in "
            "[CI](docs/ci.md)).\n")


def ci_steps() -> str:
    rec = record("ci_run")
    rows = [(s["step"], duration(s["seconds"]), s.get("detail", "")) for s in rec["step"]]
    rows.append(("**all**", f"**{duration(rec['total_seconds'])}**", ""))
    body = " ".join(rec.get("summary", "").split())
    return (body + "\n\n" if body else "") + table(["step", "time", "what it ran"], rows,
                                                    "lrl") + "\n" + provenance(rec)


def ci_step(step: str) -> str:
    rec = record("ci_run")
    for s in rec["step"]:
        if s["step"] == step:
            meta = rec["record"]
            return (f"In the CI run recorded on {meta['date']} (commit `{meta['commit']}`, "
                    f"{meta['machine']}) this step took {duration(s['seconds'])}"
                    + (f": {s['detail']}" if s.get("detail") else "") + ".\n")
    raise KeyError(step)


# ----------------------------------------------------------------------------- count data

BASELINE = Path("reference/counts/baseline.csv")
ANCHORS = Path("reference/counts/kleidiai_v1.30.toml")
SWEEP = Path("reference/counts/sweep.csv")
SWEEP_ANCHORS = Path("reference/counts/kleidiai_sweep.toml")
SWEEP_CATALOG = Path("reference/kleidiai_sweep.toml")
KEY = ("target", "catalog", "case", "realization")

# check-counts sets this: rows of a run that replace the committed ones with the same key
_OVERRIDE: dict[tuple[str, ...], dict[str, Any]] = {}


def _key(row: Mapping[str, Any]) -> tuple[str, ...]:
    return (baseline_mod.canonical_target(str(row["target"])), *(str(row[k]) for k in KEY[1:]))


def _with_override(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, **_OVERRIDE.get(_key(r), {})} for r in rows]


def baseline_rows() -> list[dict[str, Any]]:
    return _with_override(baseline_mod.read_baseline(root() / BASELINE))


def anchor_table() -> anchors_mod.AnchorTable:
    return anchors_mod.load_anchors(root() / ANCHORS)


def sweep_rows() -> list[dict[str, Any]]:
    return _with_override(baseline_mod.read_baseline(root() / SWEEP))


def anchor_count_rows() -> list[dict[str, Any]]:
    rows = []
    for r in record("anchor_counts")["row"]:
        row = dict(r)
        row["target"] = baseline_mod.canonical_target(row["target"])
        for col in (*COLUMNS, "count_floor", "count_kernel_outer"):
            row[col] = float(row[col]) if col in row else math.nan
        rows.append(row)
    return _with_override(rows)


def _svl(target: str) -> int:
    return int(target.rsplit("svl=", 1)[1]) if "svl=" in target else 0


def _find(rows: list[dict[str, Any]], case: str, realization: str, svl: int
          ) -> dict[str, Any] | None:
    for r in rows:
        if r["case"] == case and r["realization"] == realization and _svl(r["target"]) == svl:
            return r
    return None


def _cell(row: dict[str, Any] | None, col: str, minus: str = "") -> str:
    if row is None or row.get(col, math.nan) != row.get(col, math.nan):
        return ""
    v = row[col] - (row[minus] if minus else 0)
    return num(v) if v == v else ""


BASELINE_GEMM_COLUMNS = (  # (header, realization, phase[, minus]): kernel phases, then packing
    ("SME2 MOPA", "gemm_sme2_mopa_f32acc", "count_kernel"),
    ("SME1 MOPA", "gemm_sme_mopa_f32acc", "count_kernel"),
    ("SME2 GEMV", "gemv_sme2_dot_f32acc", "count_kernel"),
    ("SME GEMV", "gemv_sme_f32acc", "count_kernel"),
    ("NEON FP16", "gemm_neon_f16acc", "count_kernel"),
    ("NEON FP32 (FHM)", "gemm_neon_f32acc_fhm", "count_kernel"),
    ("LHS packing (SME2 MOPA call)", "gemm_sme2_mopa_f32acc", "count_pack_lhs"),
    ("packing B (SME, sealed)", "gemm_sme2_mopa_f32acc", "count_pack_b"),
    ("packing B (NEON, sealed)", "gemm_neon_f16acc", "count_pack_b"),
)
B_FORMS = {"plain": " (plain B)", "packed": " (packed B)"}


def _label(case: str) -> str:
    """A case's shape, with its B form where B is not native."""
    return _shape(case) + "".join(v for k, v in B_FORMS.items() if k in case.split("_"))


def _shape(case: str) -> str:
    """decode_m1_n128_k256 -> 1×128×256."""
    dims = {p[0]: p[1:] for p in case.split("_") if p[:1] in "mnk" and p[1:].isdigit()}
    return "×".join(dims[d] for d in "mnk") if set(dims) >= {"m", "n", "k"} else case


def _ordered_cases(rows: list[dict[str, Any]], prefix: str = "") -> list[str]:
    """The cases of the rows whose realization starts with prefix, in the order of
    their catalog (reference/<catalog>.toml), then any others as they come."""
    order: list[str] = []
    for catalog in dict.fromkeys(r["catalog"] for r in rows):
        path = root() / "reference" / f"{catalog}.toml"
        if path.exists():
            with path.open("rb") as fh:
                doc = tomllib.load(fh)
            order += [c["name"] for kind in ("gemm", "conv") for c in doc.get(kind, [])]
    present = [r["case"] for r in rows if r["realization"].startswith(prefix)]
    return [c for c in dict.fromkeys([*order, *present]) if c in present]


def _per_svl(rows: list[dict[str, Any]], case: str, real: str, svls: list[int],
             cols: tuple[str, ...]) -> list[tuple[str | int, list[str]]]:
    """(SVL, cells) per SVL, or one ("any", cells) when every SVL gives the same."""
    cells = [(svl, [_cell(_find(rows, case, real, svl), c) for c in cols]) for svl in svls
             if _find(rows, case, real, svl) is not None]
    if len(cells) > 1 and all(c == cells[0][1] for _, c in cells):
        return [("any", cells[0][1])]
    return cells


def baseline_gemm_kernels() -> str:
    rows = baseline_rows()
    svls = sorted({_svl(r["target"]) for r in rows})
    out = []
    for case in _ordered_cases(rows, "gemm"):
        for i, svl in enumerate(svls):
            cells = []
            for spec in BASELINE_GEMM_COLUMNS:
                _, real, col, *minus = spec
                row = _find(rows, case, real, svl)
                if i and real.startswith("gemm_neon"):  # NEON does not depend on the SVL
                    prev = _find(rows, case, real, svls[0])
                    same = prev is not None and row is not None and prev[col] == row[col]
                    cells.append("″" if same else _cell(row, col, *minus))
                else:
                    cells.append(_cell(row, col, *minus))
            out.append((_label(case) if i == 0 else "", svl, *cells))
    return table(["shape", "SVL", *(c[0] for c in BASELINE_GEMM_COLUMNS)], out,
                 "lr" + "r" * len(BASELINE_GEMM_COLUMNS))


def baseline_calls(realizations: tuple[str, ...] = ("gemm_sme2_mopa_f32acc",
                                                    "gemv_sme2_dot_f32acc",
                                                    "gemm_neon_f16acc")) -> str:
    """The whole call per phase for some realizations."""
    rows = baseline_rows()
    svls = sorted({_svl(r["target"]) for r in rows})
    out = []
    phases = ("count_call", "count_validate", "count_pack_lhs", "count_pack_rhs",
              "count_kernel", "count_other")
    for real in realizations:
        for case in _ordered_cases(rows, "gemm"):
            for svl, cells in _per_svl(rows, case, real, svls, phases):
                out.append((f"`{real}`", _label(case), svl, *cells))
    return table(["realization", "shape", "SVL", "call", "validate", "pack_lhs", "pack_rhs",
                  "kernel", "other"], out, "llrrrrrrr")


def baseline_convs() -> str:
    rows = baseline_rows()
    svls = sorted({_svl(r["target"]) for r in rows})
    out = []
    for case in _ordered_cases(rows, "conv2d"):
        reals = list(dict.fromkeys(r["realization"] for r in rows if r["case"] == case))
        for real in reals:
            for svl, cells in _per_svl(rows, case, real, svls, ("count_call", "count_pack_lhs",
                                                                "count_pack_rhs",
                                                                "count_kernel")):
                out.append((f"`{case}`", f"`{real}`", svl, *cells))
    return table(["case", "realization", "SVL", "call", "pack_lhs", "pack_rhs", "kernel"], out,
                 "llrrrrr")


def baseline_summary() -> str:
    rows = baseline_rows()
    cfg = baseline_mod.load_config(root() / "reference/counts/baseline.toml")
    cases = {(r["target"], r["case"]) for r in rows}
    return (f"`reference/counts/baseline.csv` holds {num(len(rows))} counted rows: every "
            f"{' and '.join(b.upper() for b in cfg.backends)} realization on the "
            f"`{cfg.catalog}` catalog "
            f"({len({c for _, c in cases})} shapes) at "
            f"{' and '.join(f'SVL {_svl(t)}' for t in cfg.targets)}, held to a growth limit of "
            f"{cfg.limit:.1%}.\n")


def _ratio_cell(a: anchors_mod.Anchor, m: anchors_mod.AnchorMatch | None) -> str:
    if m is None:
        return "–"
    return f"{num(m.ours)} / {num(m.theirs)} = **{m.ratio:.3f}**"


def anchor_ratios() -> str:
    """Our counts on the anchor shapes against KleidiAI v1.30's: ours / theirs per SVL,
    realizations with the same counts at every SVL on one row."""
    tab = anchor_table()
    matches = anchors_mod.match_anchors(tab, anchor_count_rows())
    svls = sorted({_svl(m.target) for m in matches})
    out = []
    for a in tab.anchors:
        by_real: dict[str, dict[int, anchors_mod.AnchorMatch]] = {}
        for m in matches:
            if m.anchor is a:
                by_real.setdefault(m.realization, {})[_svl(m.target)] = m
        groups: list[tuple[list[str], dict[int, anchors_mod.AnchorMatch]]] = []
        for real, per_svl in by_real.items():
            sig = {svl: (m.ours, m.ours_without_checksum) for svl, m in per_svl.items()}
            for names, other in groups:
                if {svl: (m.ours, m.ours_without_checksum) for svl, m in other.items()} == sig:
                    names.append(real)
                    break
            else:
                groups.append(([real], per_svl))
        for names, per_svl in groups:
            any_svl = a.count_at(0) is not None and len({m.ours for m in per_svl.values()}) == 1

            cells = ([_ratio_cell(a, next(iter(per_svl.values()))) + " (any SVL)"]
                     + [""] * (len(svls) - 1)
                     if any_svl else [_ratio_cell(a, per_svl.get(svl)) for svl in svls])
            out.append((f"{a.label}, `{a.phase}`", ", ".join(f"`{n}`" for n in names),
                        a.shape_str().replace(" x ", ", "), *cells))
    return table(["KleidiAI v1.30", "ours", "shape", *(f"SVL {svl}" for svl in svls)], out,
                 "lll" + "r" * len(svls)) + "\n" + (
        f"*{tab.name}'s counts: {' '.join(tab.method.split())} "
        f"{' '.join(tab.note.split())}*\n")


def _as_match_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A baseline row as the results row the anchor matching reads."""
    dims = {p[0]: int(p[1:]) for p in str(row["case"]).split("_")
            if p[:1] in "mnk" and p[1:].isdigit()}
    return {**row, "op": "gemm", **dims, "shape": "m{m}n{n}k{k}".format(**dims),
            "vector_bits": _svl(str(row["target"]))}


def _short(a: anchors_mod.Anchor) -> str:
    return "8vsx8vs" if "8vsx8vs" in a.kernel else "1x32vs" if "1x32vs" in a.kernel else (
        "1x16vl" if "1x16vl" in a.kernel else "2vlx2vl")


def sweep_ratios() -> str:
    """The comparison sweep (reference/counts/sweep.csv) and the GEMV anchor shape
    against the best KleidiAI anchor per shape and SVL: ours / best = ratio, the best
    anchor's kernel, and our outer (or dot) products / the floor."""
    tables = [anchors_mod.load_anchors(root() / ANCHORS),
              anchors_mod.load_anchors(root() / SWEEP_ANCHORS)]
    rows = [_as_match_row(r) for r in sweep_rows()]
    gemv = [r for r in anchor_count_rows() if r["realization"] == "gemv_sme2_dot_f32acc"]
    best = anchors_mod.best_matches(anchors_mod.match_tables(tables, [*rows, *gemv]))
    svls = sorted({m.svl for m in best})
    with (root() / SWEEP_CATALOG).open("rb") as fh:
        order = [c["name"] for c in tomllib.load(fh)["gemm"]]
    cases = [c for c in dict.fromkeys([*order, *(m.case for m in best)])
             if any(m.case == c for m in best)]
    out, per_svl = [], {svl: [] for svl in svls}
    outer = {(r["case"], _svl(str(r["target"]))): r.get("count_kernel_outer", math.nan)
             / r["count_floor"] for r in [*rows, *gemv] if r.get("count_floor", 0) > 0}
    for case in cases:
        cells = []
        for svl in svls:
            m = next((m for m in best if m.case == case and m.svl == svl), None)
            if m is None:
                cells.append("")
                continue
            if case in order:  # the geometric mean: over the GEMM sweep
                per_svl[svl].append(m.ratio)
            cells.append(f"{num(m.ours)} / {num(m.theirs)} `{_short(m.anchor)}` = "
                         f"**{m.ratio:.3f}**")
        opf = [v for (c, _), v in outer.items() if c == case and v == v]
        out.append((_shape(case), *cells, f"{max(opf):.3f}" if opf else ""))
    out.append((f"geometric mean over the {len(order)} GEMM shapes (worst)", *(
        f"**{anchors_mod.geomean(per_svl[svl]):.3f}** ({max(per_svl[svl]):.3f})"
        for svl in svls), ""))
    src = tables[1]
    return table(["M×N×K", *(f"SVL {svl}: ours / best anchor" for svl in svls),
                  "outer / floor"], out, "l" + "r" * (len(svls) + 1)) + "\n" + (
        f"*Ours: `gemm_sme2_mopa_f32acc` (GEMV: `gemv_sme2_dot_f32acc`), kernel phase of a "
        f"single-threaded call (one call of its micro-kernel). Anchors: {src.name} (commit "
        f"{src.commit[:12]}, built with `{src.flags}`, measured {src.date}), each kernel "
        f"counted as one call of its public entry point over the whole problem: `2vlx2vl` "
        f"v1.30's kernel, `8vsx8vs` the newer one with its edge variants, `1x16vl`/`1x32vs` "
        f"the GEMVs; the best of them and of {tables[0].name}'s table per shape. outer / "
        "floor: our FMOPAs (FDOTs) over the floor, the worst SVL.*\n")


def output(name: str) -> str:
    """A command and its recorded output."""
    rec = record(name)
    out = "\n".join(line.rstrip() for line in rec["output"].strip("\n").splitlines())
    return f"```\n$ {rec['record']['command']}\n{out}\n```\n\n" + provenance(rec)


def report_caption(path: str = "docs/img/report.png") -> str:
    """The README's picture of the report and its caption, from what the page
    shows at its top (kbench.results.report_views.QUESTIONS, report.FIRST_SECTIONS;
    suites/test_report_evidence.py renders a page and checks it shows them)."""
    from kbench.results.report import FIRST_SECTIONS
    from kbench.results.report_views import QUESTIONS
    first = " and ".join(f"{s.lower()}" for s in FIRST_SECTIONS)
    return (f"![The HTML report of a default install's run (the perf suite on the smoke "
            f"catalog, the scalar backend of an x86 machine): the {len(QUESTIONS)} answers on "
            f"top ({' '.join(QUESTIONS)}), then {first}]({path})\n")


def terminal_columns() -> str:
    """The columns of `kbench run`'s summary, as kbench.results.columns says
    them (the report shows the same words on hover)."""
    from kbench.results.columns import TERMINAL
    return table(["column", "what it says"], [[f"`{k}`", v] for k, v in TERMINAL.items()])


def contract_costs() -> str:
    """What checking a packed B costs, from the baseline and the anchor counts."""
    validate = [r["count_validate"] for r in baseline_rows() if r["count_validate"] > 0]
    row = _find(anchor_count_rows(), "anchor_m256_n256_k256", "gemm_sme2_mopa_f32acc", 512)
    if row is None:
        raise KeyError("anchor_counts: no gemm_sme2_mopa_f32acc 256x256x256 row at SVL 512")
    lo, hi = num(min(validate)), num(max(validate))
    n, k = 256, 256
    payload = 2 * n * (k + 1)  # 256 x 256 with its bias row, N a multiple of the block width
    pack, header = row["count_pack_b"], row["count_pack_b_checksum"]
    return (f"- every call checks the header against the call and the CPU: O(1), "
            f"{lo if lo == hi else f'{lo} to {hi}'} instructions in `validate` on every "
            "native-B case of the count baseline (the header's own FNV-1a checksum over 64 "
            "bytes, field comparisons), whatever the size of B;\n"
            f"- the payload checksum is computed while B is packed: packing and sealing the "
            f"{num(payload)}-byte payload of a 256×256 B at SVL 512 takes {num(pack)} "
            f"instructions, {pack / payload:.3f} per byte, the header's FNV-1a {num(header)} of "
            "them (the `checksum` inside `pack_b` in [Instruction counts](counts.md)); "
            "checking the payload again is O(size), so it is *not* in a call: it is verified "
            "where a buffer is loaded or received (`kbench.verify_packed(buf)`, C "
            "`kb_verify_packed_b`), or in a call that asks for it "
            "(`Selector(verify_payload=True)`, the selector's `verify_payload` field);\n")


def run(command: str) -> str:
    """A command's output, run now (only for commands whose output depends on the
    committed tree alone, not on the machine)."""
    argv = shlex.split(command)
    if argv[0] == "kbench":  # this Python's kbench, whatever PATH says
        argv = [sys.executable, "-c", "from kbench.cli import main; main()", *argv[1:]]
    res = subprocess.run(argv, cwd=root(), capture_output=True, text=True, check=True)
    out = "\n".join(line.rstrip() for line in res.stdout.strip("\n").splitlines())
    return f"```\n$ {command}\n{out}\n```\n"


MODEL_CATALOGS = ("llm_llama7b", "resnet50", "mobilenet_v2")


def _macs(count: float) -> str:
    for scale, unit in ((1e9, "GMAC"), (1e6, "MMAC"), (1e3, "kMAC")):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:.0f} MAC"


def model_catalogs() -> str:
    """The model catalogs and their small versions, counted from the catalog files:
    layers (a shape times its `layers`), distinct shapes, multiply-accumulates of one
    inference (each shape's MACs times its layers)."""
    from kbench.problems import catalog as catalogs

    def facts(name: str) -> list[str]:
        cat = catalogs.load_catalog(catalogs.resolve_catalog(name))
        cases = [*cat.gemm, *cat.conv]
        macs = sum(c.layers * c.flops for c in cases) / 2
        return [f"`{name}`", num(sum(c.layers for c in cat.gemm)),
                num(sum(c.layers for c in cat.conv)), num(len(cases)), _macs(macs)]

    rows = [facts(n) for base in MODEL_CATALOGS for n in (base, f"{base}_small")]
    return table(["catalog", "GEMM layers", "convolution layers", "distinct shapes",
                  "MACs per model"], rows, "lrrrr")


PYTHON_AREAS = ("judge", "verdicts", "problems", "stats", "gate", "perf", "report", "tuning",
                "dispatch", "history")


def mutant_areas(*areas: str) -> str:
    """Areas of the mutant catalog, what each covers (kbench.harness.mutants.AREAS)
    and how many mutants it holds, counted from ci/mutants/ (equivalent ones apart)."""
    from kbench.harness import mutants as mut

    cat = mut.load_catalog(root() / "ci" / "mutants")
    rows = []
    for area in areas or tuple(mut.AREAS):
        ms = [m for m in cat if m.area == area]
        rows.append([f"`{area}`", mut.AREAS[area], num(len(ms)),
                     num(sum(1 for m in ms if m.equivalent))])
    return table(["area", "what its mutants break", "mutants", "declared equivalent"], rows,
                 "llrr")


def mutmut_scores(*names: str) -> str:
    """The generated-mutant campaigns' scores, one row per package, from the
    [score] table of each docs/records/mutmut_*.toml (or the records named):
    mutants generated, killed, survived, not reached by the suites run, not
    run because the campaign was time-boxed, the survivors explained (as
    equivalent, or as changing only how something is shown) and the kill
    rate over the mutants that ran."""
    if not names:
        names = tuple(sorted(p.stem for p in (root() / "docs" / "records").glob("mutmut_*.toml")))
    rows = []
    for name in names:
        rec = record(name)
        sc, meta = rec["score"], rec["record"]
        mutants, killed, survived = int(sc["mutants"]), int(sc["killed"]), int(sc["survived"])
        reached, not_run = killed + survived, int(sc.get("not_run", 0))
        if reached + int(sc["not_reached"]) + not_run != mutants:
            raise ValueError(f"{name}: killed + survived + not_reached + not_run != mutants")
        equivalent = sum(len(g["mutants"]) for g in rec.get("equivalent", []))
        shown = sum(len(g["mutants"]) for g in rec.get("presentation", []))
        triaged = "equivalent" in rec or "presentation" in rec or "unexplained" in rec
        if triaged and equivalent + shown + len(rec.get("unexplained", [])) != survived:
            raise ValueError(f"{name}: equivalent + presentation + unexplained != survived")
        rows.append([f"`{sc['package']}`", num(mutants), num(killed), num(survived),
                     (f"{equivalent + shown:,} of {survived:,}: {equivalent:,} equivalent"
                      + (f", {shown:,} presentation only" if shown else "")) if triaged else "–",
                     num(int(sc["not_reached"])), num(not_run),
                     f"{killed / reached:.1%}" if reached else "–",
                     f"{meta['date']}, `{meta['commit']}`"])
    return table(["package", "generated mutants", "killed", "survived",
                  "survivors explained", "not reached", "not run (time-boxed)",
                  "kill rate (run)", "recorded"], rows, "lrrrrrrrl")


def _mutant_function(name: str) -> str:
    """mutmut's mutant name -> the function it mutates: m.x_f__mutmut_3 -> m.f,
    m.x\u01c1C\u01c1f__mutmut_3 -> m.C.f."""
    mod, _, fn = re.sub(r"__mutmut_\d+$", "", name).rpartition(".x")
    return mod + (fn.replace("\u01c1", ".") if fn.startswith("\u01c1") else "." + fn[1:])


def mutmut_triage(name: str) -> str:
    """A campaign record written by ci/mutmut_record.py: its summary, each
    reason a survivor cannot be told from the code with how many it covers,
    the survivors left to triage, and the provenance."""
    rec = record(name)
    left = rec.get("unexplained", [])
    text = " ".join(rec["summary"].split()) + "\n\n"
    heads = {"equivalent": "why the survivors are equivalent",
             "presentation": "presentation only: what the survivors change"}
    for kind, head in heads.items():
        rows = [[" ".join(g["reason"].split()), str(len(g["mutants"]))]
                for g in rec.get(kind, [])]
        if rows:
            text += table([head, "survivors"], rows, "lr") + "\n"
    if len(left) > 40:  # too many to name: how many each function leaves
        per: dict[str, int] = {}
        for n in left:
            fn = _mutant_function(n)
            per[fn] = per.get(fn, 0) + 1
        text += (f"Left to triage: {len(left):,} survivors (`mutmut results` in the campaign's "
                 "folder names them), per function:\n\n"
                 + table(["function", "survivors"],
                         [[f"`{f}`", str(c)] for f, c in sorted(per.items())], "lr") + "\n")
    elif left:
        text += "Left to triage: " + ", ".join(f"`{n}`" for n in left) + ".\n\n"
    else:
        text += "Every survivor is in the tables above.\n\n"
    return text + provenance(rec)


def kleidiai_files() -> str:
    """The KleidiAI files each realization of the recipe compiles, from the recipe's
    own Makefile (`make list`), and the flags per file family."""
    res = subprocess.run(["make", "-s", "-C", str(root() / KLEIDIAI_DIR), "list"],
                         capture_output=True, text=True, check=True)
    rows, flags = [], {}
    for line in res.stdout.splitlines():
        name, *files = line.split()
        if name.startswith("flags-"):
            flags[name.removeprefix("flags-")] = " ".join(files)
            continue
        rows.append([f"`{name}`", "<br>".join(f"`{f}`" for f in files)])
    text = table(["realization", "files under `kai/` in your checkout"], rows)
    return text + (f"\nFlags: every SME file (C and assembly) `{flags['sme']}`; the SVE files"
                   f" `{flags['sve']}`; the NEON FP16 files `{flags['neon']}`; the adapter plain"
                   " `-O2`.\n")


def kleidiai_checked() -> str:
    """When and against which KleidiAI commit the recipe last passed, from its record."""
    rec = record("kleidiai_recipe")
    meta = rec["record"]
    return (f"Last checked on {meta['date']} (commit `{meta['commit']}`): "
            f"{' '.join(rec['summary'].split())} {' '.join(meta['note'].split())}\n")


# ----------------------------------------------------------------------------- gate matrix

def _ratio(text: str) -> tuple[int, int]:
    k, n = (int(x) for x in str(text).split("/"))
    return k, n


def _one_process(c: Mapping[str, Any]) -> bool:
    """Two runs timed in-process (host): every pass of a run in one process."""
    return c["protocol"] == "runs" and not str(c.get("target", "host")).startswith("worker:")


def _passes(c: Mapping[str, Any]) -> str:
    return f" --passes {c['passes']}" if c.get("passes") else ""


def _protocol(c: Mapping[str, Any]) -> str:
    """A cell's protocol in short: ab, or runs with the target they timed on."""
    if c["protocol"] != "runs":
        return str(c["protocol"])
    passes = f", {c['passes']} passes" if c.get("passes") else ""
    return f"runs on {c.get('target', 'host')}{passes}"


BUSY = 3.0  # a 1-minute load median above this on the VM: not "quiet", whatever the hog


def _load(c: Mapping[str, Any]) -> str:
    if c["hog"]:
        return "hog"
    return "quiet" if float(c.get("load_median", 0.0)) <= BUSY else "shared, busy"


def _cell_targets(c: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """Each target the issue states, for one cell: (what, met)."""
    out = []
    k, n = _ratio(c["aa_gate_failed"])
    out.append(("A/A gate failures at most 1 of 20", n >= 20 and k <= n // 20))
    if "s10_gate_clean" in c:
        k, n = _ratio(c["s10_gate_clean"])
        out.append(("10% failing the gate on the slowed realization only, at least 19 of 20",
                    n >= 20 and k >= n - n // 20))
    if "s5_detect_clean" in c:
        k, n = _ratio(c["s5_detect_clean"])
        out.append(("5% called slower, at least 16 of 20", n >= 20 and k >= (4 * n) // 5))
    if c["catalogs"] == "smoke" and c["protocol"] == "ab" and not c["hog"]:
        k, n = _ratio(c["aa_inconclusive"])
        out.append(("at most 10% of smoke's cases inconclusive, quiet", n > 0 and k <= n / 10))
    return out


def gate_matrix(detail: str = "") -> str:
    """The regression gate's false-alarm and detection rates per catalog,
    protocol and load, from docs/records/gate_matrix.toml (one cell per
    `ci/gate_benchmark.py --record` invocation); with detail, every figure
    of a cell and its command."""
    rec = record("gate_matrix")
    cells = rec.get("cell", [])
    proto = {"ab": "interleaved: `kbench ab` + `gate --ab`",
             "runs": "two runs: `gate A B`"}

    def label(c: Mapping[str, Any]) -> str:
        if c["protocol"] != "runs":
            return proto[c["protocol"]]
        if _one_process(c):
            return (f"two runs, the passes in one process (`--target {c.get('target', 'host')}"
                    f"{_passes(c)}`): `gate A B`")
        return f"two runs, a process per pass (`--target {c['target']}{_passes(c)}`): `gate A B`"

    def pct(text: str) -> str:
        k, n = _ratio(text)
        return f"{k}/{n} ({k / n:.0%})" if n else "–"

    rows = []
    for c in cells:
        if not detail and c["protocol"] != "ab":
            continue  # the front page: the gate's own protocol; two runs in the detail
        rows.append([
            f"`{c['catalogs']}`", label(c),
            {"quiet": "quiet", "hog": f"{c['hog']} CPU hog",
             "shared, busy": f"shared, load {c['load_median']:.0f}"}[_load(c)], str(c["trials"]),
            c["aa_gate_failed"],
            # gate --ab fails on what it reports; a two-run cell says its exit status itself
            *([c.get("aa_exit_nonzero", c["aa_gate_failed"] if c["protocol"] == "ab"
                     else "not recorded")] if detail else []),
            c["aa_detect_flagged"], pct(c["aa_inconclusive"]),
            c.get("s10_gate_clean", "–"), c.get("s10_big_caught", "–"),
            c.get("s5_detect_clean", "not run"),
            f"{c['minutes_per_trial']:.1f}"])
    # a slowdown reported: `gate --ab` fails on it; two runs measured apart report a
    # possible slowdown, a first look that never fails the build (since it became one;
    # earlier two-run cells counted failures): their exit status is its own column
    said = "a slowdown reported" if detail else "gate failed"  # the front page: --ab only
    text = table(["catalog", "protocol", "machine", "trials", f"A/A: {said}",
                  *(["A/A: gate exited 1"] if detail else []),
                  "A/A: a case slower at 2.5%", "A/A: cases inconclusive",
                  f"10%: {said}, on the slowed realization only",
                  f"10%: slowed cases ≥ 20 µs {'reported' if detail else 'failed'}",
                  "5%: slower at 2.5%, only the slowed",
                  "min per trial"], rows, "lllrr" + ("r" if detail else "") + "rrrrrr")
    gated = [c for c in cells if not _one_process(c)]
    checks = [(c, what, ok) for c in gated for what, ok in _cell_targets(c)]
    missed = [(c, what) for c, what, ok in checks if not ok]
    per = {p: [ok for c, _, ok in checks if c["protocol"] == p] for p in proto}
    text += (f"\nTargets met in {len(checks) - len(missed)} of {len(checks)} checks ("
             + ", ".join(f"{'interleaved' if p == 'ab' else 'two runs'}: {sum(oks)} of "
                         f"{len(oks)}" for p, oks in per.items() if oks) + ")"
             + (": every one.\n" if not missed else "; missed: "
                + "; ".join(f"{what} (`{c['catalogs']}`, {_protocol(c)}, "
                            f"{_load(c)})" for c, what in missed)
                + ".\n"))
    aside = [(c, what) for c in cells if _one_process(c)
             for what, ok in _cell_targets(c) if not ok]
    if aside:
        text += ("Two runs timed in-process (every pass of a run in kbench's one process, as "
                 "the CI workflow's own two runs) are shown for comparison, not checked "
                 "(the two-run protocol gives each pass a process of its own); they miss: "
                 + "; ".join(f"{what} (`{c['catalogs']}`, "
                             f"{_load(c)})" for c, what in aside)
                 + ".\n")
    if not detail and any(c["protocol"] != "ab" for c in cells):
        text += ("The rows of two runs measured apart (`gate A B` without `--ab`) are in [How "
                 "often the gate is right](docs/performance.md#how-often-the-gate-is-right).\n")
    have = {(c["catalogs"], c["protocol"], bool(c["hog"])) for c in gated}
    absent = [(cat, p, hog) for p in proto for hog in (False, True)
              for cat in ("smoke", "llm_llama7b_small", "resnet50_small")
              if (cat, p, hog) not in have]
    if absent:
        text += ("Not yet measured: "
                 + "; ".join(f"`{cat}`, {p if p == 'ab' else 'runs on worker:host'}, "
                             f"{'hog' if hog else 'quiet'}"
                             for cat, p, hog in absent) + ".\n")
    meta = rec["record"]
    if detail:
        lines = ["", "| catalog | protocol | hog | slowed realization | limit | minutes "
                 "| load median / max | 10% median ratio | 5% median ratio | 5%: gate failed "
                 "| recorded | command |",
                 "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|"]
        for c in cells:
            lines.append(
                f"| `{c['catalogs']}` | {_protocol(c)} | {c['hog']} | `{c['slowed']}` "
                f"| {c['limit']} | {c['minutes']:.0f} | {c['load_median']:.2f} / "
                f"{c['load_max']:.2f} | {c.get('s10_median_ratio', '–')} "
                f"| {c.get('s5_median_ratio', '–')} | {c.get('s5_gate_clean', '–')} "
                f"| {c['date']}, `{c['commit']}`{', ' + c['machine'] if c.get('machine') else ''} "
                f"| `{c['command']}` |")
        text += "\n".join(lines) + "\n"
        missed = [(c, c["s10_big_missed"]) for c in cells if c.get("s10_big_missed")]
        if missed:
            text += ("\nThe slowed realization's cases of at least 20 µs that the gate most "
                     "often did not fail at 10%, with their median paired ratio in those "
                     "trials (the slowdown the knob really made there):\n\n")
            text += "".join(f"- `{c['catalogs']}`, {_protocol(c)}, "
                            f"{_load(c)}: "
                            + "; ".join(f"`{m.split(': ')[0]}`: {m.split(': ', 1)[1]}"
                                        for m in ms) + "\n"
                            for c, ms in missed)
    cmds = meta["command"] if isinstance(meta["command"], list) else [meta["command"]]
    text += (f"\n*Recorded up to {meta['date']} at commit(s) `{meta['commit']}` on "
             f"{meta['machine']}: {len(cmds)} invocation(s) of `python ci/gate_benchmark.py "
             "... --record docs/records/gate_matrix.toml`, one per row"
             + (" (each row's command above)" if detail else
                " ([the commands](docs/performance.md#how-often-the-gate-is-right))")
             + ".*\n")
    return text


GENERATORS: dict[str, Callable[..., str]] = {
    "model_catalogs": model_catalogs, "mutant_areas": mutant_areas,
    "run": run,
    "contract_costs": contract_costs, "terminal_columns": terminal_columns,
    "report_caption": report_caption,
    "ci_total": ci_total, "ci_steps": ci_steps, "ci_step": ci_step,
    "baseline_gemm_kernels": baseline_gemm_kernels, "baseline_calls": baseline_calls,
    "baseline_convs": baseline_convs, "baseline_summary": baseline_summary,
    "anchor_ratios": anchor_ratios, "sweep_ratios": sweep_ratios,
    "output": output, "recorded": recorded,
    "mutmut_scores": mutmut_scores, "mutmut_triage": mutmut_triage,
    "kleidiai_files": kleidiai_files,
    "kleidiai_checked": kleidiai_checked, "gate_matrix": gate_matrix,
}
COUNT_BLOCKS = ("baseline_gemm_kernels", "baseline_calls", "baseline_convs", "anchor_ratios",
                "sweep_ratios")


def out(name: str, *args: Any) -> None:
    """Write a generated block (called from the cog blocks)."""
    import cog  # only inside cog

    cog.out(GENERATORS[name](*args))


# ----------------------------------------------------------------------------- commands

def cog_command(*flags: str) -> list[str]:
    return [sys.executable, "-m", "cogapp", *flags, "-I", str(Path(__file__).parent),
            *map(str, files())]


def run_cog(*flags: str) -> int:
    env = {**os.environ, "KBENCH_DOCS_ROOT": str(root())}
    return subprocess.run(cog_command(*flags), env=env).returncode


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from kbench.targets.tools import find_qemu

    try:
        qemu = subprocess.run([find_qemu(), "--version"], capture_output=True, text=True
                              ).stdout.split("\n")[0].removeprefix("qemu-aarch64 version ")
    except Exception:  # noqa: BLE001
        qemu = "no QEMU"
    return (f"{platform.machine()}, {model}, {os.cpu_count()} CPUs, Linux "
            f"{platform.release().split('-')[0]}, qemu-aarch64 {qemu.split()[0]}")


def commit() -> str:
    head = _git("rev-parse", "--short", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", "native", "kbench",
                 "reference", "suites")
    return head + ("-dirty" if dirty else "")


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _meta_lines(command: str | list[str], note: str) -> list[str]:
    cmd = ("[" + ", ".join(_toml_str(c) for c in command) + "]" if isinstance(command, list)
           else _toml_str(command))
    return ["[record]", f'date = "{date.today().isoformat()}"', f'commit = "{commit()}"',
            f"machine = {_toml_str(machine())}", f"command = {cmd}",
            f"note = {_toml_str(note)}", ""]


HEADER = ("# A dated record read by docs/gen/kbdocs.py (the docs show it as it is).\n"
          "# Re-measure with `python docs/gen/kbdocs.py record {name}`, then\n"
          "# `python docs/gen/kbdocs.py regen`; do not edit by hand.\n")


OUTPUT_RECORDS = ("count_example", "reproduce_example", "plugin_count_example",
                  "coverage_example", "runtime_probe", "runtime_stale_vl", "runtime_overread")


def record_output(name: str) -> None:
    """Run a record's command again (bash, from the repository root, $RUN a fresh
    folder) and write its output, date, commit and machine."""
    rec = record(name)
    command = rec["record"]["command"]
    with tempfile.TemporaryDirectory() as tmp:
        res = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True, text=True,
                             env={**os.environ, "RUN": str(Path(tmp) / "run")})
    if res.returncode != 0 and not rec["record"].get("fails"):
        sys.exit(f"{command}: exit status {res.returncode}\n{res.stderr}")
    meta = _meta_lines(command, rec["record"].get("note", ""))
    if rec["record"].get("fails"):
        meta.insert(-1, "fails = true")
    lines = [HEADER.format(name=name),
             "output = '''", *(line.rstrip() for line in res.stdout.strip("\n").splitlines()),
             "'''", "", *meta]
    (REPO / f"docs/records/{name}.toml").write_text("\n".join(lines))


# the README's commands, as `record command_times` times them (from the repository root,
# $RUN a fresh folder; the runs write there and not into the history)
TIMED_COMMANDS = (
    "kbench info",
    'kbench run --shapes smoke --no-history --out "$RUN/smoke"',
    'kbench run --suite perf --shapes smoke --no-history --out "$RUN/perf"',
    'kbench report "$RUN/perf"',
    'kbench gate "$RUN/perf" "$RUN/perf" --markdown "$RUN/gate.md"',
    'kbench run --target qemu:svl=512 --shapes smoke --no-history --out "$RUN/qemu"',
    "kbench count --target qemu:svl=512 --realization gemm_sme2_mopa_f32acc "
    "--shape 256x256x256",
    "kbench run --shapes smoke --plugin 'examples/plugins/build/{arch}/libexwhole.so' "
    '--backend plugin --no-history --out "$RUN/plugin"',
)


def record_command_times() -> None:
    """Time each of TIMED_COMMANDS once, in order, and write the record."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "RUN": str(Path(tmp) / "run")}
        Path(env["RUN"]).mkdir()
        for command in TIMED_COMMANDS:
            start = time.monotonic()
            res = subprocess.run(["bash", "-c", command], cwd=REPO, capture_output=True,
                                 text=True, env=env)
            seconds = time.monotonic() - start
            if res.returncode not in (0, 1):  # 1: a failed verdict is still a timing
                sys.exit(f"{command}: exit status {res.returncode}\n{res.stderr[-2000:]}")
            rows.append(f"[[command]]\ncommand = {_toml_str(command)}\n"
                        f"seconds = {seconds:.1f}\nexit = {res.returncode}\n")
    meta = _meta_lines("python docs/gen/kbdocs.py record command_times",
                       "Each command once, in this order, from the repository root with the "
                       "example plugins and the aarch64 worker already built; nothing else "
                       "running.")
    (REPO / "docs/records/command_times.toml").write_text(
        "\n".join([HEADER.format(name="command_times"), *rows, *meta]))


# run twice with a history of its own: the first run leaves its case costs (as any run
# appended to the history does), the second is the one recorded
ETA_COMMAND = ('kbench run --target qemu:svl=512 --db "$RUN/history.sqlite" --no-report '
               '--out "$RUN/first" > /dev/null && kbench run --target qemu:svl=512 '
               '--db "$RUN/history.sqlite" --no-report --out "$RUN/eta"')


def record_eta_accuracy() -> None:
    """Run ETA_COMMAND once, timestamp every progress line, and write each
    line's ETA beside the time that really remained (the README's figure
    for the forecast)."""
    import re
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        # unbuffered: each line arrives when it is printed, so its timestamp is true
        env = {**os.environ, "RUN": str(Path(tmp) / "run"), "PYTHONUNBUFFERED": "1"}
        Path(env["RUN"]).mkdir()
        first, _, second = ETA_COMMAND.partition(" > /dev/null && ")
        subprocess.run(["bash", "-c", first], cwd=REPO, env=env, capture_output=True,
                       check=True)
        start = time.monotonic()
        proc = subprocess.Popen(["bash", "-c", second], cwd=REPO, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert proc.stdout is not None
        for line in proc.stdout:
            m = re.match(r"\[(\d+)/(\d+) cases (\d+)%.*ETA (\d+):(\d\d):(\d\d)\]", line)
            if m:
                eta = int(m[4]) * 3600 + int(m[5]) * 60 + int(m[6])
                lines.append((int(m[1]), int(m[2]), time.monotonic() - start, eta))
        status = proc.wait()
        end = time.monotonic() - start
    if status not in (0, 1) or not lines:
        sys.exit(f"{ETA_COMMAND}: exit status {status}, {len(lines)} progress lines")
    rows = []
    for done, total, at, eta in lines:
        if done < total:
            real = end - at
            rows.append(f"[[line]]\ndone = {done}\ntotal = {total}\nat_seconds = {at:.1f}\n"
                        f"eta_seconds = {eta}\nreal_seconds = {real:.1f}\n")
    meta = _meta_lines(ETA_COMMAND, "On a quiet machine; the second run (the first left its "
                       "case costs beside its history), each progress line's ETA against the "
                       "time the run really took from that line to its end.")
    (REPO / "docs/records/eta_accuracy.toml").write_text(
        "\n".join([HEADER.format(name="eta_accuracy"), f"total_seconds = {end:.1f}\n",
                    *rows, *meta]))


def eta_accuracy() -> str:
    """The forecast of one real run: ETA printed and time really left, per line."""
    rec = record("eta_accuracy")
    rows = []
    for x in rec["line"]:
        share = x["done"] / x["total"]
        err = (x["eta_seconds"] - x["real_seconds"]) / x["real_seconds"]
        rows.append((f"{share:.0%}", duration(x["at_seconds"]), duration(x["eta_seconds"]),
                     duration(x["real_seconds"]), f"{err:+.0%}"))
    return (f"`{rec['record']['command']}` took {duration(rec['total_seconds'])}; the "
            "forecast at each progress line:\n\n"
            + table(["done", "elapsed", "ETA printed", "really left", "error"], rows, "rrrrr")
            + "\n" + provenance(rec))


def command_times() -> str:
    """The README's commands and how long each took here (a dated record)."""
    rec = record("command_times")
    rows = [(f"`{c['command']}`", duration(float(c["seconds"]))) for c in rec["command"]]
    return table(["command", "took"], rows, "lr") + "\n" + provenance(rec)


ANCHOR_SVLS = (128, 256, 512)
ANCHOR_CATALOGS = ("kleidiai_anchors", "kleidiai_anchors_gemv")
ANCHOR_RUN = ("kbench run --suite perf --shapes {catalog} --target qemu:cpu=max:svl={svl} "
              "{reals} --rounds 1 --min-round-ms 0 --warmup 0 --no-history --out {out}")
RECORD_FIELDS = ("target", "catalog", "case", "realization", "op", "shape", "m", "n", "k",
                 "vector_bits")


def _anchor_realizations(catalog: str) -> list[str]:
    with (root() / "reference" / f"{catalog}.toml").open("rb") as fh:
        shapes = {(g["m"], g["n"], g["k"]) for g in tomllib.load(fh)["gemm"]}
    reals: list[str] = []
    for a in anchor_table().anchors:
        if any(all(a.shape.get(d, v) == v for d, v in zip("mnk", s, strict=True))
               for s in shapes):
            reals += [r for r in a.ours if r not in reals]
    return reals


def record_anchor_counts() -> None:
    commands, rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for catalog in ANCHOR_CATALOGS:
            reals = " ".join(f"--realization {r}" for r in _anchor_realizations(catalog))
            for svl in ANCHOR_SVLS:
                out = Path(tmp) / f"{catalog}-{svl}"
                cmd = ANCHOR_RUN.format(catalog=catalog, svl=svl, reals=reals, out=out)
                commands.append(cmd.replace(str(out), "RUN"))
                print(f"+ {cmd}", file=sys.stderr, flush=True)
                subprocess.run(shlex.split(cmd), cwd=REPO, check=True,
                               stdout=subprocess.DEVNULL)
                rows += run_rows(out)
    lines = [HEADER.format(name="anchor_counts"),
             *_meta_lines(commands, "Our counts on the shapes of the KleidiAI anchor table "
                          "(B native with its bias; one single-threaded call)."), ""]
    for r in rows:
        lines.append("[[row]]")
        lines += [f"{f} = {_toml_str(str(r[f]))}" for f in RECORD_FIELDS]
        lines += [f"{c} = {int(r[c])}" for c in (*COLUMNS, "count_floor", "count_kernel_outer")
                  if r.get(c, math.nan) == r.get(c, math.nan)]
        lines.append("")
    (REPO / "docs/records/anchor_counts.toml").write_text("\n".join(lines))


# ------------------------------------------------------------------ the KleidiAI recipe

KLEIDIAI_DIR = "examples/plugins/kleidiai"
KLEIDIAI_BUILD = ("make -s -C examples/plugins/kleidiai KLEIDIAI_SRC=$KLEIDIAI_SRC "
                  "OUT={out}/build -j2")
# SME2 targets at two SVLs, and the SVE2.1-only target (no SME: the SME realizations are not
# offered there) at three SVE vector lengths; a column per target
KLEIDIAI_TARGETS = {"qemu:svl=128": "passed at SVL 128", "qemu:svl=512": "passed at SVL 512",
                    "qemu:sme=off:vl=128": "passed on SVE2.1 at VL 128",
                    "qemu:sme=off:vl=256": "passed on SVE2.1 at VL 256",
                    "qemu:sme=off:vl=512": "passed on SVE2.1 at VL 512"}
KLEIDIAI_RUN = ("kbench run --suite all --backend plugin --plugin {out}/build/libkbkleidiai.so "
                + " ".join(f"--target {t}" for t in KLEIDIAI_TARGETS)
                + " --jobs 2 --no-history --no-report --out {out}/run")


def record_kleidiai_recipe() -> None:
    """Build the recipe against $KLEIDIAI_SRC (a KleidiAI checkout), run every suite on
    SVL 128 and 512 and on the SVE2.1-only target at SVE vector lengths 128, 256 and 512,
    and record the verdicts per realization and target ("–" where a realization is not
    offered: SME code without SME) and the checkout's commit."""
    src = os.environ.get("KLEIDIAI_SRC")
    if not src or not (Path(src) / "kai" / "kai_common.h").is_file():
        sys.exit("record kleidiai_recipe: set KLEIDIAI_SRC to a KleidiAI checkout")
    described = _git_in(src, "describe", "--tags", "--always")
    sha = _git_in(src, "rev-parse", "HEAD")
    with tempfile.TemporaryDirectory() as tmp:
        build = KLEIDIAI_BUILD.format(out=tmp)
        subprocess.run(["bash", "-c", build], cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "KLEIDIAI_SRC": src})
        run = KLEIDIAI_RUN.format(out=tmp)
        print(f"+ {run}", file=sys.stderr, flush=True)
        status = subprocess.run(shlex.split(run), cwd=REPO, stdout=subprocess.DEVNULL).returncode
        with (Path(tmp) / "run" / "results.csv").open(newline="") as fh:
            results = list(csv.DictReader(fh))
        commands = [build.replace(tmp, "RUN"), run.replace(tmp, "RUN")]
    kernels: dict[str, str] = {}
    tally: dict[tuple[str, str], list[int]] = {}
    from kbench.targets.spec import parse_qemu
    # a row names its target as given on the command line or by its canonical name
    names = {parse_qemu(tg).name: tg for tg in KLEIDIAI_TARGETS}
    for r in results:
        kernels.setdefault(r["realization"], r["kernel"])
        t = tally.setdefault((r["realization"], names.get(r["target"], r["target"])), [0, 0])
        t[0] += r["status"] == "pass"
        t[1] += 1

    def cell(real: str, tg: str) -> str:
        got = tally.get((real, tg))
        return f"{got[0]:,} of {got[1]:,}" if got else "–"

    rows = [[f"`{real}`", f"`{kern}`", *(cell(real, tg) for tg in KLEIDIAI_TARGETS)]
            for real, kern in kernels.items()]
    total = sum(t[1] for t in tally.values())
    passed = sum(t[0] for t in tally.values())
    summary = (f"`kbench run --suite all` of the recipe's plugin, built against KleidiAI "
               f"{described}, on `qemu:svl=128` and `qemu:svl=512` and on the SVE2.1-only "
               f"`qemu:sme=off` at SVE vector lengths 128, 256 and 512 (the default catalogs): "
               f"exit status {status}; {passed:,} of {total:,} verdicts passed.")
    columns = ["realization", "KleidiAI micro-kernel", *KLEIDIAI_TARGETS.values()]
    lines = [HEADER.format(name="kleidiai_recipe"),
             f"summary = {_toml_str(summary)}", "",
             *_meta_lines(commands, f"KleidiAI checkout {described} ({sha})."),
             "[table]",
             f"columns = [{', '.join(_toml_str(c) for c in columns)}]",
             f"align = \"ll{'r' * len(KLEIDIAI_TARGETS)}\"",
             "rows = [", *(f"  [{', '.join(_toml_str(c) for c in row)}]," for row in rows), "]", ""]
    (REPO / "docs/records/kleidiai_recipe.toml").write_text("\n".join(lines))


def _git_in(path: str, *args: str) -> str:
    res = subprocess.run(["git", "-C", path, *args], capture_output=True, text=True)
    return res.stdout.strip() or "unknown"


def run_rows(run: Path) -> list[dict[str, Any]]:
    """The counted rows of a run folder (one per target x case x realization)."""
    with (run / "results.csv").open(newline="") as fh:
        raw = list(csv.DictReader(fh))
    counted = baseline_mod.counted_rows(raw)
    extra = {_key(r): r for r in raw}
    return [{**{f: extra[_key(r)].get(f, "") for f in RECORD_FIELDS}, **r} for r in counted]


def check_counts(runs: list[Path]) -> int:
    """Render the count tables with the runs' counts in place of the committed ones
    and compare: every figure the docs show for a case the runs counted must be
    what was counted today."""
    committed = {name: GENERATORS[name]() for name in COUNT_BLOCKS}
    known = {_key(r) for r in (*baseline_rows(), *anchor_count_rows(), *sweep_rows(),
                               *sve_rows())}
    new = [r for run in runs for r in run_rows(run)]
    matched = [r for r in new if _key(r) in known]
    if not matched:
        print("check-counts: no counted row of these runs is one the docs show", file=sys.stderr)
        return 1
    _OVERRIDE.update({_key(r): r for r in matched})
    bad = 0
    for name, text in committed.items():
        now = GENERATORS[name]()
        if now != text:
            bad += 1
            old_lines, new_lines = text.splitlines(), now.splitlines()
            for a, b in zip(old_lines, new_lines, strict=False):
                if a != b:
                    print(f"{name}: docs  {a}\n{name}: today {b}", file=sys.stderr)
    _OVERRIDE.clear()
    print(f"check-counts: {len(matched)} counted rows compared with the figures the docs show; "
          + ("all agree" if not bad else f"{bad} table(s) differ (`kbench baseline update` or "
             "`python docs/gen/kbdocs.py record anchor_counts`, then "
             "`python docs/gen/kbdocs.py regen`)"))
    return 1 if bad else 0


# ----------------------------------------------------------------------------- SVE2.1 counts

SVE_BASELINE = Path("reference/counts/sve.csv")
SVE_SWEEP = Path("reference/counts/sve_sweep.csv")
SVE_GEMV = Path("reference/counts/sve_gemv.csv")
SVE_ANCHORS = Path("reference/counts/kleidiai_sve_sweep.toml")


def _vl(target: str) -> int:
    """The SVE vector length of a target (its vl=, 512 on max without one)."""
    return int(target.rsplit("vl=", 1)[1]) if ":vl=" in target else 512


def sve_rows() -> list[dict[str, Any]]:
    """The SVE2.1 backend's committed counts: the sweep, the GEMV shape, the catalog."""
    return _with_override([*baseline_mod.read_baseline(root() / SVE_SWEEP),
                           *baseline_mod.read_baseline(root() / SVE_GEMV),
                           *baseline_mod.read_baseline(root() / SVE_BASELINE)])


def sve_sweep_ratios() -> str:
    """Our SVE2.1 GEMM (GEMV on 1x4096x4096) on the comparison sweep against KleidiAI's
    SVE2.1 kernel called once over the whole problem, per SVE vector length: ours /
    theirs = ratio, and our FDOTs over the floor."""
    tab = anchors_mod.load_anchors(root() / SVE_ANCHORS)
    rows = [{**_as_match_row(r), "vector_bits": _vl(str(r["target"]))} for r in sve_rows()
            if r["catalog"] != "counts"]
    best = anchors_mod.best_matches(anchors_mod.match_anchors(tab, rows))
    vls = sorted({m.svl for m in best})
    with (root() / SWEEP_CATALOG).open("rb") as fh:
        order = [c["name"] for c in tomllib.load(fh)["gemm"]]
    cases = [c for c in dict.fromkeys([*order, *(m.case for m in best)])
             if any(m.case == c for m in best)]
    dots = {r["case"]: [] for r in rows}
    for r in rows:
        if r.get("count_floor", 0) > 0:
            dots[r["case"]].append(r["count_kernel_outer"] / r["count_floor"])
    out, per_vl = [], {vl: [] for vl in vls}
    for case in cases:
        cells = []
        for vl in vls:
            m = next((m for m in best if m.case == case and m.svl == vl), None)
            if m is None:
                cells.append("")
                continue
            if case in order:
                per_vl[vl].append(m.ratio)
            cells.append(f"{num(m.ours)} / {num(m.theirs)} = **{m.ratio:.3f}**")
        out.append((_shape(case), *cells, f"{max(dots[case]):.3f}" if dots[case] else ""))
    out.append((f"geometric mean over the {len(order)} GEMM shapes (worst)", *(
        f"**{anchors_mod.geomean(per_vl[vl]):.3f}** ({max(per_vl[vl]):.3f})" for vl in vls), ""))
    return table(["M×N×K", *(f"SVE VL {vl}: ours / KleidiAI" for vl in vls), "FDOT / floor"],
                 out, "l" + "r" * (len(vls) + 1)) + "\n" + (
        "*Ours: `gemm_sve2p1_dot_f32acc` (1×4096×4096: `gemv_sve2p1_dot_f32acc`), kernel "
        "phase: one call of its core over the whole problem, on `qemu:sme=off:vl=N` "
        "(`reference/counts/sve_sweep.csv`, `sve_gemv.csv`). KleidiAI: "
        f"`{tab.anchors[0].kernel}`, {tab.name} (commit {tab.commit[:12]}, built with "
        f"`{tab.flags}`, measured {tab.date}): {' '.join(tab.method.split())} FDOT / floor: "
        "our FDOTs over `M·⌈N/VL32⌉·⌈K/2⌉`, the worst vector length.*\n")


def sve_counts() -> str:
    """The SVE2.1 realizations' whole calls by phase on the count catalog."""
    rows = [r for r in sve_rows() if r["catalog"] == "counts"]
    out = []
    for real in dict.fromkeys(r["realization"] for r in rows):
        for case in _ordered_cases(rows, "gemm"):
            for r in sorted((r for r in rows if r["case"] == case and r["realization"] == real),
                            key=lambda r: _vl(str(r["target"]))):
                out.append((f"`{real}`", _label(case), _vl(str(r["target"])), *(
                    _cell(r, c) for c in ("count_call", "count_validate", "count_pack_rhs",
                                          "count_kernel", "count_other", "count_pack_b"))))
    return table(["realization", "shape", "SVE VL", "call", "validate", "pack_rhs", "kernel",
                  "other", "pack_b"], out, "llrrrrrrr")


GENERATORS.update(sve_sweep_ratios=sve_sweep_ratios, sve_counts=sve_counts)
COUNT_BLOCKS = (*COUNT_BLOCKS, "sve_sweep_ratios", "sve_counts")

GENERATORS.update(command_times=command_times, eta_accuracy=eta_accuracy)


# ----------------------------------------------------------------------------- machine-code mutants

def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.1f}%" if n else "-"


def _mc_rows(groups: list[dict[str, Any]], key: str, external: bool) -> list[list[str]]:
    rows = []
    for g in groups:
        live = g["killed"] + g["survived"]
        row = [f"`{g[key]}`" if key == "function" else g[key], str(g["mutants"]),
               str(g["killed"]), str(g["survived"]), str(g["equivalent"]),
               str(g["not_reached"]), _pct(g["killed"], live)]
        if external:
            row.append(_pct(g["external_killed"], live))
        rows.append(row)
    return rows


def mc_campaign(name: str) -> str:
    """A machine-code campaign (kbench mutate --plugin) as recorded: figures,
    kill rates per function and per operator, and every survivor with its
    disassembly."""
    rec = record(name)
    c = rec["campaign"]
    ext = bool(c.get("external"))
    live = c["killed"] + c["survived"]
    text = (f"**{c['mutants']} mutants** (a sample stratified by function of the "
            f"{num(c['planned'])} planned in the {num(c['executed'])} instructions of "
            f"`{c['library']}` the suites executed on `{c['target']}`): **{c['killed']} killed, "
            f"{c['survived']} survived**, {c['equivalent']} likely equivalent, "
            f"{c['not_reached']} not reached, {c['errors']} not judged, in "
            f"{duration(c['seconds'])}. kbench's suites kill **{c['killed']} of {live} "
            f"({_pct(c['killed'], live)})** of the reached, non-equivalent mutants")
    if ext:
        text += (f"; the external test (`{c['external']}`) kills **{c['external_killed']} of "
                 f"{live} ({_pct(c['external_killed'], live)})**: {c['only_kbench']} only "
                 f"kbench kills, {c['only_external']} only the external test, "
                 f"{len(rec.get('survivor', []))} neither")
    if c["survived"]:
        text += (f". Of the {c['survived']} survivors, {c['survived_trace']} give bit-identical "
                 "outputs on every probe case (only their instruction count differs) and "
                 f"{c['survived_outputs']} outputs that differ within the error bound")
    parts = [text + ".\n"]
    cols = ["mutants", "killed", "survived", "likely equivalent", "not reached", "kbench"]
    cols += ["external test"] if ext else []
    big = [g for g in rec["function"] if g["mutants"] >= 3]
    small = [g for g in rec["function"] if g["mutants"] < 3]
    rows = _mc_rows(big, "function", ext)
    if small:  # queries, adapters and other short functions, one row together
        keys = ("mutants", "killed", "survived", "equivalent", "not_reached", "external_killed")
        folded = {"function": "", **{k: sum(g[k] for g in small) for k in keys}}
        row = _mc_rows([folded], "function", ext)[0]
        row[0] = f"{len(small)} other functions (2 mutants or fewer each)"
        rows.append(row)
    parts.append(table(["function", *cols], rows, "l" + "r" * len(cols)))
    parts.append(table(["operator", *cols], _mc_rows(rec["operator"], "operator", ext),
                       "l" + "r" * len(cols)))
    for title, key in (("Survivors" + (" of both" if ext else ""), "survivor"),
                       ("Killed only by the external test", "only_external_mutant")):
        items = rec.get(key, [])
        if not items:
            continue
        lines = [f"{title}:\n"]
        for m in items:
            lines.append(f"- `{m['id']}`: `{m['old']}` becomes `{m['new']}`"
                         + (f" (`{m['source']}`)" if m.get("source") else "") + ": "
                         + " ".join(m["detail"].split()) + "\n")
            if m.get("listing"):
                lines.append("\n  ```\n" + "".join(f"  {x}\n" for x in m["listing"])
                             + "  ```\n")
        parts.append("".join(lines))
    eq = rec.get("equivalent_mutant", [])
    if eq:
        parts.append("Likely equivalent (bit-identical outputs, the same instruction trace):\n"
                     + "".join(f"- `{m['id']}`: `{m['old']}` becomes `{m['new']}`\n"
                               for m in eq))
    if rec.get("notes"):
        parts.append("".join(f"- {' '.join(n.split())}\n" for n in rec["notes"]))
    parts.append(provenance(rec))
    return "\n".join(parts)


GENERATORS.update(mc_campaign=mc_campaign)


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(_toml_str(x) for x in items) + "]"


def record_mc_campaign(folder: Path, name: str, note: str, command: str = "") -> None:
    """docs/records/NAME.toml from a finished machine-code campaign's folder."""
    import json

    data = json.loads((folder / "mcmutation.json").read_text())
    meta = json.loads((folder / "run.json").read_text())
    if not data.get("complete"):
        sys.exit(f"{folder}: the campaign is not complete")
    from kbench.results import mcmutation as mcm

    st = data["settings"]
    s = mcm.summarize(data["mutants"], bool(st.get("external")))
    by = {m["id"]: m for m in data["mutants"]}
    seconds = data.get("seconds")
    if seconds is None:  # the wall time from the campaign's start to its last result
        from datetime import datetime
        start = datetime.fromisoformat(meta["started"]).timestamp()
        seconds = (folder / "mcmutation.json").stat().st_mtime - start
    lines = [HEADER.format(name=name).replace(f"record {name}", f"record-mc FOLDER {name}"),
             "[campaign]", f"library = {_toml_str(Path(st['library']).name)}",
             f"target = {_toml_str(st['target'])}",
             f"external = {_toml_str(data['settings']['external'])}",
             f"planned = {data['planned']}", f"executed = {data['baseline']['executed']}",
             f"mutants = {s['mutants']}", f"killed = {s['killed']}",
             f"survived = {s['survived']}", f"equivalent = {s['likely-equivalent']}",
             f"not_reached = {s['not-reached']}", f"errors = {s['error']}",
             f"external_killed = {s['external_killed']}",
             f"only_kbench = {len(s['only_kbench'])}",
             f"only_external = {len(s['only_external'])}", f"seconds = {round(seconds)}",
             f"survived_trace = {s['survived_trace']}",
             f"survived_outputs = {s['survived_outputs']}", ""]
    for key, label in (("functions", "function"), ("operators", "operator")):
        for k, g in s[key].items():
            lines += [f"[[{label}]]", f"{label} = {_toml_str(k)}", f"mutants = {g['mutants']}",
                      f"killed = {g['killed']}", f"survived = {g['survived']}",
                      f"equivalent = {g['likely-equivalent']}",
                      f"not_reached = {g['not-reached']}",
                      f"external_killed = {g['external_killed']}", ""]
    for key, label in (("survivors", "survivor"), ("only_external", "only_external_mutant"),
                       ("equivalent", "equivalent_mutant")):
        for i in s[key]:
            m = by[i]
            lines += [f"[[{label}]]", f"id = {_toml_str(i)}", f"old = {_toml_str(m['old_text'])}",
                      f"new = {_toml_str(m['new_text'])}", f"source = {_toml_str(m['source'])}",
                      f"detail = {_toml_str(m['detail'])}",
                      # "+-0x4": an offset before the function, as folders written before
                      # mcsites.annotate signed its offsets spelled it
                      f"listing = {_toml_list([x.replace('+-0x', '-0x') for x in m['listing']])}",
                      ""]
    rec_meta = _meta_lines(command or meta.get("command_line", "kbench mutate --plugin"), note)
    rec_meta[2] = f'commit = "{meta.get("git_commit", "")[:7]}"'
    rec_meta[1] = f'date = "{str(meta.get("date", ""))[:10]}"'
    (REPO / f"docs/records/{name}.toml").write_text("\n".join(lines + rec_meta))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kbdocs", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("regen", help="rewrite every generated block")
    sub.add_parser("check", help="exit 1 if a generated block differs from its generator")
    r = sub.add_parser("record", help="re-measure a record")
    r.add_argument("name", choices=(*OUTPUT_RECORDS, "anchor_counts", "command_times",
                                    "eta_accuracy", "kleidiai_recipe"))
    m = sub.add_parser("record-mc", help="a machine-code campaign's folder as a record")
    m.add_argument("folder", type=Path)
    m.add_argument("name")
    m.add_argument("--note", default="")
    m.add_argument("--command", default="", help="the campaign's command as typed "
                   "(default: run.json's, whose quoting is lost)")
    c = sub.add_parser("check-counts", help="the count tables against runs' counts")
    c.add_argument("runs", nargs="+", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "regen":
        return run_cog("-r", "--verbosity", "1")
    if args.cmd == "check":
        return run_cog("--check", "--diff", "--verbosity", "1", "--check-fail-msg",
                       "run `python docs/gen/kbdocs.py regen`")
    if args.cmd == "record":
        if args.name == "anchor_counts":
            record_anchor_counts()
        elif args.name == "command_times":
            record_command_times()
        elif args.name == "eta_accuracy":
            record_eta_accuracy()
        elif args.name == "kleidiai_recipe":
            record_kleidiai_recipe()
        else:
            record_output(args.name)
        return 0
    if args.cmd == "record-mc":
        record_mc_campaign(args.folder, args.name, args.note, args.command)
        return 0
    return check_counts(args.runs)


if __name__ == "__main__":
    sys.exit(main())
