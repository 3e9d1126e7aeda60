"""The documentation: every generated block of README.md and docs/ is what its
generator (docs/gen/kbdocs.py, cogapp) makes of the committed data and the dated
records today; a changed count baseline without a regeneration fails that check;
the recorded `kbench count` output is what the command prints; the README is a
front page whose links and set-up commands hold."""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify
from qemu_gate import needs_qemu

REPO = Path(__file__).resolve().parents[1]
GEN = REPO / "docs" / "gen" / "kbdocs.py"
RECORDS = REPO / "docs" / "records"


def _kbdocs():
    spec = importlib.util.spec_from_file_location("kbdocs", GEN)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


kbdocs = _kbdocs()


def _gen(*args: str, root: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GEN), *args], cwd=root, capture_output=True,
                          text=True, env={**os.environ, "KBENCH_DOCS_ROOT": str(root)},
                          timeout=300)


def _copy_tree(dst: Path) -> Path:
    """The files the generator reads and writes, in a throwaway tree."""
    shutil.copy(REPO / "README.md", dst / "README.md")
    shutil.copytree(REPO / "docs", dst / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "reference", dst / "reference")
    shutil.copytree(REPO / "ci" / "mutants", dst / "ci" / "mutants")  # the mutant catalog
    recipe = REPO / "examples" / "plugins" / "kleidiai"  # its Makefile lists the recipe's files
    shutil.copytree(recipe, dst / "examples" / "plugins" / "kleidiai",
                    ignore=shutil.ignore_patterns("build"))
    return dst


def _markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _blocks() -> list[tuple[Path, str]]:
    """(file, generator call) of every cog block."""
    out = []
    for f in _markdown_files():
        for m in re.finditer(r"\[\[\[cog import kbdocs; kbdocs\.out\((.*?)\)\]\]\]", f.read_text()):
            out.append((f, m.group(1)))
    return out


def test_every_generated_block_is_what_its_generator_makes_today() -> None:
    res = _gen("check")
    assert res.returncode == 0, res.stdout + res.stderr


def test_every_count_table_and_record_has_a_block() -> None:
    calls = " ".join(call for _, call in _blocks())
    for name in kbdocs.COUNT_BLOCKS:
        assert f'"{name}"' in calls, f"no block shows {name}"
    read_by = {"anchor_counts": kbdocs.COUNT_BLOCKS, "ci_run": ("ci_total", "ci_steps")}
    for rec in sorted(RECORDS.glob("*.toml")):
        names = read_by.get(rec.stem, (rec.stem,))
        assert any(f'"{n}"' in calls for n in names), f"docs/records/{rec.name} is shown nowhere"


def _baseline_with(path: Path, case: str, realization: str, svl: int, column: str,
                   delta: int) -> tuple[int, int]:
    lines = path.read_text().splitlines(keepends=True)
    header = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    fields = lines[header].strip().split(",")
    for i in range(header + 1, len(lines)):
        cells = lines[i].rstrip("\n").split(",")
        row = dict(zip(fields, cells, strict=True))
        if (row["case"], row["realization"]) == (case, realization) and \
                row["target"].endswith(f"svl={svl}"):
            old = int(row[column])
            cells[fields.index(column)] = str(old + delta)
            lines[i] = ",".join(cells) + "\n"
            path.write_text("".join(lines))
            return old, old + delta
    raise AssertionError(f"no baseline row {case} {realization} {svl}")


def test_a_baseline_value_changed_without_regenerating_fails_the_check(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    assert _gen("check", root=root).returncode == 0  # the copy is current as committed
    old, new = _baseline_with(root / "reference/counts/baseline.csv", "tail_m37_n53_k45",
                              "gemm_sme2_mopa_f32acc", 512, "kernel", 1)
    counts_md = (root / "docs/counts.md").read_text()
    assert f"| {old:,} |" in counts_md and f"| {new:,} |" not in counts_md
    res = _gen("check", root=root)
    assert res.returncode != 0
    assert "counts.md" in res.stdout + res.stderr
    assert _gen("regen", root=root).returncode == 0  # regenerating takes the new value in
    assert f"| {new:,} |" in (root / "docs/counts.md").read_text()
    assert _gen("check", root=root).returncode == 0
    # the committed pages are untouched
    assert (REPO / "docs/counts.md").read_text() == counts_md


def test_an_anchor_count_changed_without_regenerating_fails_the_check(tmp_path: Path) -> None:
    root = _copy_tree(tmp_path)
    path = root / "docs/records/anchor_counts.toml"
    text = path.read_text()
    row = next(r for r in tomllib.loads(text)["row"]
               if (r["case"], r["realization"], r["vector_bits"]) ==
               ("anchor_m256_n256_k256", "gemm_sme2_mopa_f32acc", "256"))
    kernel = row["count_kernel"]
    assert f"{kernel:,} / " in (root / "docs/counts.md").read_text()
    assert text.count(f"count_kernel = {kernel}\n") >= 1  # (and its blocked variant's)
    path.write_text(text.replace(f"count_kernel = {kernel}\n", f"count_kernel = {kernel + 7}\n"))
    res = _gen("check", root=root)
    assert res.returncode != 0 and "counts.md" in res.stdout + res.stderr


def _fake_run(path: Path, rows: list[dict]) -> Path:
    path.mkdir()
    fields = [*kbdocs.KEY, *kbdocs.COLUMNS, "count_floor"]
    with (path / "results.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v != v else int(v)) if isinstance(v, float) else v
                        for k, v in r.items()})
    return path


def test_check_counts_compares_the_tables_with_a_runs_counts(tmp_path: Path) -> None:
    rows = kbdocs.baseline_mod.read_baseline(REPO / "reference/counts/baseline.csv")
    at512 = [r for r in rows if r["target"].endswith("svl=512")]
    same = _fake_run(tmp_path / "same", at512)
    res = _gen("check-counts", str(same))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"{len(at512)} counted rows compared" in res.stdout
    changed = [dict(r) for r in at512]
    hit = next(r for r in changed if r["realization"] == "gemm_neon_f16acc"
               and r["case"] == "prefill_m4_n128_k128")
    hit["count_kernel"] -= 3  # a decrease the baseline check would let pass
    res = _gen("check-counts", str(_fake_run(tmp_path / "changed", changed)))
    assert res.returncode == 1
    assert f"{int(hit['count_kernel']):,}" in res.stderr
    # a run with none of the cases the docs show cannot pass by matching nothing
    other = [{**r, "case": "not_a_docs_case"} for r in at512[:3]]
    assert _gen("check-counts", str(_fake_run(tmp_path / "other", other))).returncode == 1


def _anchor_row(case: str, realization: str, svl: int) -> dict:
    row = kbdocs._find(kbdocs.anchor_count_rows(), case, realization, svl)
    assert row is not None
    return row


def test_the_records_agree_with_the_baseline_and_with_each_other() -> None:
    base = kbdocs.baseline_rows()
    for svl in (128, 512):  # 37x53x45 is in the baseline and in the anchor shapes
        for real in ("gemm_sme2_mopa_f32acc", "gemm_sme_mopa_f32acc"):
            b = kbdocs._find(base, "tail_m37_n53_k45", real, svl)
            a = _anchor_row("anchor_m37_n53_k45", real, svl)
            assert b is not None
            for col in ("count_call", "count_kernel", "count_pack_lhs", "count_pack_b"):
                assert a[col] == b[col], (real, svl, col)
    # the example output of `kbench count` shows the anchor record's 256^3 SVL 512 row
    out = kbdocs.record("count_example")["output"]
    row = _anchor_row("anchor_m256_n256_k256", "gemm_sme2_mopa_f32acc", 512)
    for phase, col in (("call", "count_call"), ("kernel", "count_kernel"),
                       ("pack_lhs", "count_pack_lhs"), ("pack_b", "count_pack_b")):
        m = re.search(rf"^\s*{phase}\s+([\d,]+)", out, re.M)
        assert m is not None and int(m.group(1).replace(",", "")) == row[col], phase


def test_every_record_says_when_where_and_how_it_was_measured() -> None:
    records = sorted(RECORDS.glob("*.toml"))
    assert len(records) >= 10
    for path in records:
        meta = tomllib.loads(path.read_text())["record"]
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", meta["date"]), path.name
        # one commit, or (a matrix recorded cell by cell) the commits of its cells
        assert re.fullmatch(r"[0-9a-f]{7,40}(, [0-9a-f]{7,40})*", meta["commit"]), path.name
        assert meta["machine"].strip() and meta["command"], path.name


@needs_qemu
def test_the_recorded_kbench_count_output_is_what_it_prints_today() -> None:
    rec = kbdocs.record("count_example")
    res = subprocess.run([sys.executable, "-c", "from kbench.cli import main; main()",
                          *shlex.split(rec["record"]["command"])[1:]], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    printed = [line.rstrip() for line in res.stdout.strip("\n").splitlines()]
    assert printed == rec["output"].strip("\n").splitlines()


# ----------------------------------------------------------------------------- README

README = REPO / "README.md"


def test_the_readme_is_a_front_page() -> None:
    assert len(README.read_text().splitlines()) <= 300


def _setup_commands(text: str) -> list[str]:
    return re.findall(r"^sudo apt-get install .*$", text, re.M)


def test_the_setup_commands_are_the_ones_ci_runs() -> None:
    readme = _setup_commands(README.read_text())
    assert len(readme) == 2
    assert readme == _setup_commands((REPO / "docs/install.md").read_text())
    main, tests = readme
    assert main.endswith("pip install -e . && kbench run")
    ci_run = (REPO / ".ci/run").read_text()
    assert "python -m pip install -q -e '.[test,ort,postgres]'" in ci_run
    assert "pip install -e '.[test,ort,postgres]'" in tests
    assert "python -m pip install -q -e examples/plugins/python_peer" in ci_run
    assert "pip install -e examples/plugins/python_peer" in tests
    assert re.search(r"^bash ci/test.sh$", ci_run, re.M) and tests.endswith("bash ci/test.sh")
    # every package .ci/run may install is in the README's apt-get line
    for pkg in re.findall(r"need\+=\(([^)]*)\)", ci_run):
        for name in pkg.split():
            assert f" {name} " in tests or tests.endswith(f" {name}"), name


def _headings(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {slugify(h.strip(), "-") for h in re.findall(r"^#{1,6} (.*)$", text, re.M)}


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_the_readme_links_reach_every_page_and_heading() -> None:
    nav = _nav()
    seen = set()
    for link in _links(README):
        if re.match(r"[a-z]+:", link):
            continue
        target, _, anchor = link.partition("#")
        path = (README.parent / target).resolve()
        assert path.is_file(), link
        if anchor:
            assert anchor in _headings(path), link
        seen.add(path.relative_to(REPO / "docs").as_posix() if "docs/" in target else target)
    missing = [page for page in nav if page not in seen and page != "index.md"]
    assert missing == [], f"pages the README does not link: {missing}"


def _nav() -> list[str]:
    """The pages of mkdocs.yml's nav (one `- Title: page.md` per line)."""
    return re.findall(r"^\s+- [^:]+: (\S+\.md)$", (REPO / "mkdocs.yml").read_text(), re.M)


def test_the_site_navigation_lists_every_page() -> None:
    assert sorted(_nav()) == sorted(p.name for p in (REPO / "docs").glob("*.md"))


@pytest.mark.parametrize("phrase", [r"this branch", r"issue #\d+", r"#\d+'s table",
                                    r"to be regenerated", r"not on\s+this"])
def test_the_docs_speak_of_the_project_alone(phrase: str) -> None:
    for f in _markdown_files():
        assert not re.search(phrase, f.read_text(), re.I), (f.name, phrase)
