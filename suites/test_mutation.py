"""The mutation campaign (`kbench mutate`): the catalog, and the runner on a
small repository of its own (a Python function, its test, three mutants: one
the test kills, one it cannot tell apart, one whose code was rewritten).
CI runs the real catalog: a sample of it every time (ci/test.sh)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbench.cli.main import main
from kbench.harness import mutants as mut
from kbench.harness.mutation import Campaign, Options, select, summarize
from kbench.results import mutation as report_tables
from kbench.results.report import build_report
from kbench.results.runfolder import load_run

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO / "ci" / "mutants"
# code other branches are rewriting (SME and NEON micro-kernels and packers): a
# mutant there may be stale until it is refreshed; everywhere else it must apply
# ---- the catalog ---------------------------------------------------------------------


def test_the_catalog_has_60_mutants_over_every_area() -> None:
    cat = mut.load_catalog(CATALOG)
    assert len(cat) >= 60
    assert {m.area for m in cat} == set(mut.AREAS)
    assert len({m.id for m in cat}) == len(cat)
    for m in cat:
        assert m.description.strip(), m.id
        for k in m.kills:
            for s in k.suites:
                assert (REPO / s).is_file(), f"{m.id}: {s} does not exist"


def test_every_mutant_applies_cleanly() -> None:
    """No stale mutant: a rewrite of the code a mutant edits refreshes the mutant
    in the same change (its fragment must occur exactly once)."""
    stale = {m.id: r for m in mut.load_catalog(CATALOG) if (r := mut.stale_reason(m, REPO))}
    assert not stale, stale


def test_the_cli_lists_the_catalog() -> None:
    res = CliRunner().invoke(main, ["mutate", "--list"])
    assert res.exit_code == 0, res.output
    assert "contract-header-size-check-removed" in res.output
    assert res.output.strip().endswith("mutants")


@pytest.mark.parametrize("text, field", [
    ('area = "nowhere"\ndescription = "x"\n', "area"),
    ('area = "judge"\ndescription = "x"\n', "edit"),
    ('area = "judge"\ndescription = "x"\n[[edit]]\nfile = "../x"\nfind = "a"\nreplace = ""\n',
     "file"),
    ('area = "judge"\ndescription = "x"\n[[edit]]\nfile = "a.py"\nfind = "a"\nreplace = ""\n',
     "kill"),
    ('area = "judge"\n[[edit]]\nfile = "a.py"\nfind = "a"\nreplace = ""\n', "description"),
])
def test_a_bad_mutant_file_is_refused_naming_the_field(tmp_path: Path, text: str,
                                                       field: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(mut.MutantError) as exc:
        mut.load_mutant(p)
    assert exc.value.field == field and str(p) in str(exc.value)


# ---- the runner, on a repository of its own ----------------------------------------------


def _mutant(folder: Path, name: str, find: str, replace: str, equivalent: str = "",
            pinned: bool = False) -> None:
    (folder / f"{name}.toml").write_text(
        f'area = "judge"\ndescription = "{name}"\n'
        + (f'equivalent = "{equivalent}"\n' if equivalent else "")
        + ("pinned = true\n" if pinned else "")
        + f'[[edit]]\nfile = "pkg/calc.py"\nfind = """{find}"""\nreplace = """{replace}"""\n'
        '[[kill]]\ntarget = "host"\nsuites = ["suites/test_calc.py"]\n')


@pytest.fixture
def small_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "suites").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "suites" / "test_calc.py").write_text(
        "from pkg.calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(0, 7) == 7\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cat = repo / "mutants"
    cat.mkdir()
    _mutant(cat, "minus", "return a + b", "return a - b", pinned=True)
    _mutant(cat, "swapped", "return a + b", "return b + a",
            equivalent="integer addition commutes")
    _mutant(cat, "rewritten", "return a * b", "return a")
    return repo


def test_the_campaign_kills_records_and_restores(small_repo: Path, tmp_path: Path) -> None:
    before = (small_repo / "pkg" / "calc.py").read_text()
    out = tmp_path / "run"
    opts = Options(repo=small_repo, catalog=small_repo / "mutants", out=out, artifacts=[])
    lines: list[str] = []
    summary = Campaign(opts, lines.append).run(mut.load_catalog(small_repo / "mutants"))
    assert (small_repo / "pkg" / "calc.py").read_text() == before  # the checkout is untouched
    scratch = small_repo / "build" / "mutation" / "tree" / "pkg" / "calc.py"
    assert scratch.read_text() == before  # every mutant undone in the scratch tree too
    assert summary["counts"]["killed"] == 1 and summary["counts"]["equivalent"] == 1
    assert summary["counts"]["stale"] == 1 and summary["survivors"] == []
    assert summary["kill_rate"] == 0.5  # killed over the mutants that are not stale
    data = json.loads((out / "mutation.json").read_text())
    by_id = {m["id"]: m for m in data["mutants"]}
    minus = by_id["minus"]
    assert minus["status"] == "killed" and minus["runs"][0]["failed"] == 2
    assert minus["runs"][0]["tests"] == 2 and minus["runs"][0]["exit_code"] == 1
    assert any("test_add" in t for t in minus["runs"][0]["failed_tests"])
    assert by_id["swapped"]["status"] == "equivalent"
    assert "occurs 0 times" in by_id["rewritten"]["detail"]
    baseline, = data["baselines"].values()
    assert baseline["exit_code"] == 0 and baseline["tests"] == 2
    assert (out / logs_of(minus)).read_text().count("FAILED") >= 1
    meta = load_run(out).meta
    assert meta["kind"] == "mutation-campaign" and meta["complete"]
    # the report's mutation section
    files = build_report(load_run(out), None, out / "report")
    html = files.html.read_text()
    assert "Mutation campaign" in html and "minus" in html
    areas = report_tables.area_table(data)
    assert areas.iloc[-1]["area"] == "all" and areas.iloc[-1]["killed"] == 1


def logs_of(m: dict) -> str:
    return m["runs"][0]["log"]


def test_two_lanes_give_the_verdicts_of_one(small_repo: Path, tmp_path: Path) -> None:
    """--lanes 2: two scratch trees, the same statuses in the campaign's order
    as one lane, each run inside one of the trees, both trees restored."""
    cat = small_repo / "mutants"
    for name, find in (("times", "a * b"), ("plus_one", "a + b + 1"), ("neg", "-(a + b)")):
        _mutant(cat, name, "return a + b", f"return {find}")
    seen = tmp_path / "cwds.txt"
    (small_repo / "suites" / "test_calc.py").write_text(
        "import os\nfrom pkg.calc import add\n\n\ndef test_add():\n"
        f"    with open({str(seen)!r}, 'a') as fh:\n        fh.write(os.getcwd() + '\\n')\n"
        "    assert add(2, 3) == 5\n\n\ndef test_zero():\n    assert add(0, 7) == 7\n")
    catalog = mut.load_catalog(cat)
    one = Campaign(Options(repo=small_repo, catalog=cat, out=tmp_path / "one", artifacts=[],
                           baseline=False), lambda _m: None).run(catalog)
    seen.unlink()
    lines: list[str] = []
    two = Campaign(Options(repo=small_repo, catalog=cat, out=tmp_path / "two", artifacts=[],
                           baseline=False, lanes=2), lines.append).run(catalog)
    assert two["counts"] == one["counts"] and two["counts"]["killed"] == 4
    ids = [m["id"] for m in json.loads((tmp_path / "two" / "mutation.json").read_text())
           ["mutants"]]
    assert ids == [m.id for m in catalog]  # the campaign's order, whichever lane ran what
    trees = {small_repo / "build" / "mutation" / "tree",
             small_repo / "build" / "mutation" / "lane1" / "tree"}
    assert {Path(c) for c in seen.read_text().split()} <= trees
    before = (small_repo / "pkg" / "calc.py").read_text()
    for t in trees:
        assert (t / "pkg" / "calc.py").read_text() == before
    assert any("scratch tree of lane 1" in x for x in lines)
    assert load_run(tmp_path / "two").meta["lanes"] == 2


def test_a_relative_run_folder_gets_the_counts(small_repo: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The suites run inside the scratch tree: a run folder given relative to
    the caller's directory still receives their JUnit counts."""
    monkeypatch.chdir(tmp_path)
    cat = small_repo / "mutants"
    opts = Options(repo=small_repo, catalog=cat, out=Path("rel"), artifacts=[],
                   select=["minus"], baseline=False)
    Campaign(opts, lambda _m: None).run(mut.load_catalog(cat))
    data = json.loads((tmp_path / "rel" / "mutation.json").read_text())
    assert data["mutants"][0]["runs"][0]["failed"] == 2


def test_a_survivor_fails_the_command(small_repo: Path, tmp_path: Path) -> None:
    cat = small_repo / "mutants"
    for p in cat.glob("*.toml"):
        p.unlink()
    _mutant(cat, "nothing_checks_negatives", "return a + b",
            "return a + b if a >= 0 else 0")
    opts = Options(repo=small_repo, catalog=cat, out=tmp_path / "run", artifacts=[])
    summary = Campaign(opts, lambda _m: None).run(mut.load_catalog(cat))
    assert summary["survivors"] == ["nothing_checks_negatives"]


def test_a_failing_baseline_makes_the_mutant_invalid(small_repo: Path, tmp_path: Path) -> None:
    (small_repo / "suites" / "test_calc.py").write_text(
        "def test_broken():\n    assert False\n")
    cat = small_repo / "mutants"
    opts = Options(repo=small_repo, catalog=cat, out=tmp_path / "run", artifacts=[],
                   select=["minus"])
    summary = Campaign(opts, lambda _m: None).run(mut.load_catalog(cat))
    assert summary["counts"]["invalid"] == 1 and summary["problems"] == ["minus"]


def test_a_spent_budget_still_runs_the_pinned(small_repo: Path, tmp_path: Path) -> None:
    cat = small_repo / "mutants"
    opts = Options(repo=small_repo, catalog=cat, out=tmp_path / "run", artifacts=[],
                   budget_s=0.0)
    summary = Campaign(opts, lambda _m: None).run(mut.load_catalog(cat))
    assert summary["mutants"] == 1 and summary["counts"]["killed"] == 1  # "minus" is pinned
    assert sorted(summary["not_run"]) == ["rewritten", "swapped"]


def test_a_sample_takes_the_pinned_and_rotates_the_rest(small_repo: Path) -> None:
    cat = mut.load_catalog(small_repo / "mutants")
    base = Options(repo=small_repo, catalog=small_repo / "mutants", out=small_repo / "x")
    picks = set()
    for key in ("a", "b", "c", "d", "e", "f"):
        chosen = select(cat, Options(**{**base.__dict__, "sample": 1, "rotate": key}))
        assert [m.id for m in chosen][0] == "minus" and len(chosen) == 2
        picks.add(chosen[1].id)
    assert picks == {"swapped", "rewritten"}
    assert [m.id for m in select(cat, Options(**{**base.__dict__, "select": ["sw*"]}))] == \
        ["swapped"]


def test_summary_counts_per_area() -> None:
    from kbench.harness.mutation import MutantResult
    rs = [MutantResult("a", "judge", "", "killed"), MutantResult("b", "judge", "", "survived"),
          MutantResult("c", "fp16", "", "stale"), MutantResult("d", "fp16", "", "killed")]
    s = summarize(rs)
    assert s["areas"]["judge"]["killed"] == 1 and s["areas"]["fp16"]["stale"] == 1
    assert s["kill_rate"] == 2 / 3 and s["survivors"] == ["b"]
