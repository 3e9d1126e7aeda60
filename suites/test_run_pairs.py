"""What report, compare and gate say about the runs they are given: a
results.csv that disagrees with its run.json (cut off, rows missing or
extra) is a red banner in the report, never a green "all pass", and compare
and gate name the rows one run lacks; history references (latest, latest~N,
commit prefixes) mean runs of this checkout; two runs of different
checkouts, catalogs or targets are compared with a loud warning and gated
only with --force. Run folders are synthetic (RunWriter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_compare import HERE, row, write_run

from kbench.cli.history import compare, gate_command
from kbench.cli.report import report
from kbench.results.history import append_run
from kbench.results.identity import differences
from kbench.results.runfolder import load_run
from kbench.results.runref import RunRefError, resolve_run

ROWS = 300


def _full(folder: Path, **meta: object) -> Path:
    write_run(folder, [row(f"c{i:03d}", suite="correctness") for i in range(ROWS)], **meta)
    return folder


def _cut(full: Path, folder: Path, nbytes: int) -> Path:
    """A copy of a run folder whose results.csv is cut to its first nbytes
    (`head -c`), run.json untouched."""
    folder.mkdir()
    (folder / "run.json").write_bytes((full / "run.json").read_bytes())
    (folder / "results.csv").write_bytes((full / "results.csv").read_bytes()[:nbytes])
    return folder


def _page(folder: Path, tmp_path: Path) -> str:
    res = CliRunner().invoke(report, [str(folder), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    return (tmp_path / "rep" / "report.html").read_text()


def test_a_cut_results_csv_gets_a_red_banner_not_all_pass(tmp_path: Path) -> None:
    full = _full(tmp_path / "full")
    cut = _cut(full, tmp_path / "cut", 20_000)
    held = len(load_run(cut).results)
    assert 0 < held < ROWS
    page = _page(cut, tmp_path)
    assert '<div class="banner damaged" id="damaged">' in page
    assert (f"results.csv holds {held:,} of the {ROWS:,} results run.json counts: "
            f"{ROWS - held:,} are missing") in page
    assert "is cut off (the run was stopped while writing it)" in page
    assert '<p class="worst">damaged</p>' in page
    assert "yes: all" not in page and "cannot tell:" in page


def test_extra_rows_get_the_banner_and_a_whole_run_none(tmp_path: Path) -> None:
    full = _full(tmp_path / "full")
    assert 'class="banner damaged"' not in _page(full, tmp_path / "a")
    meta = json.loads((full / "run.json").read_text())
    meta["results"] = ROWS - 7
    (full / "run.json").write_text(json.dumps(meta))
    page = _page(full, tmp_path / "b")
    assert f"results.csv holds {ROWS:,} rows, run.json counts {ROWS - 7:,} results: 7 rows " \
           "are extra" in page and '<p class="worst">damaged</p>' in page


def test_a_failed_run_keeps_failed_as_its_worst_status_under_the_banner(tmp_path: Path) -> None:
    full = tmp_path / "f"
    write_run(full, [row("bad", suite="correctness", status="fail"),
                     *(row(f"c{i:03d}", suite="correctness") for i in range(ROWS))])
    page = _page(_cut(full, tmp_path / "cut", 20_000), tmp_path)
    assert 'class="banner damaged"' in page and '<p class="worst">failed</p>' in page


def test_compare_and_gate_name_the_rows_a_cut_folder_lacks(tmp_path: Path) -> None:
    full = _full(tmp_path / "full")
    cut = _cut(full, tmp_path / "cut", 20_000)
    lost = ROWS - len(load_run(cut).results)
    res = CliRunner().invoke(compare, [str(full), str(cut), "--json"])
    assert res.exit_code == 0, res.output
    warnings = json.loads(res.stdout)["warnings"]
    said = [w for w in warnings if "verdict row(s) of BASE are not in CAND" in w]
    assert said and said[0].startswith(f"{lost:,} verdict row(s) of BASE are not in CAND: "
                                       "correctness host gemm_scalar_f32acc synthetic/c")
    assert said[0].endswith(f"and {lost - 3:,} more")
    assert any(f"run.json says {ROWS} result(s)" in w for w in warnings)
    text = CliRunner().invoke(compare, [str(full), str(cut)])
    assert f"warning: {lost:,} verdict row(s) of BASE are not in CAND" in text.stdout
    gated = CliRunner().invoke(gate_command, [str(full), str(cut)])
    assert gated.exit_code == 2
    last = gated.output.strip().splitlines()[-1]
    assert last.startswith(f"Error: CAND: {cut}: not gated: ")
    assert f"{lost:,} verdict row(s) of BASE are not in CAND: correctness host" in last


def test_compare_names_rows_either_whole_run_lacks(tmp_path: Path) -> None:
    a = tmp_path / "a"
    write_run(a, [row("both", suite="correctness"), row("only_a", suite="correctness")])
    b = tmp_path / "b"
    write_run(b, [row("both", suite="correctness"), row("only_b", suite="correctness")])
    warnings = json.loads(CliRunner().invoke(compare, [str(a), str(b), "--json"]).stdout)[
        "warnings"]
    assert "1 verdict row(s) of BASE are not in CAND: correctness host gemm_scalar_f32acc " \
           "synthetic/only_a [exact]" in warnings
    assert "1 verdict row(s) of CAND are not in BASE: correctness host gemm_scalar_f32acc " \
           "synthetic/only_b [exact]" in warnings


OTHER = {"root": "/elsewhere/another-checkout", "remote": ""}


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """One history shared by two checkouts: mine (smoke runs), another's full
    run landed between them, and a run from before checkouts were recorded."""
    db = tmp_path / "h.sqlite"
    runs = {}
    for i, (name, co) in enumerate([("old", None), ("mine1", HERE), ("theirs", OTHER),
                                    ("mine2", HERE)]):
        folder = tmp_path / name
        write_run(folder, [row("c", suite="correctness")], date=f"2026-03-0{i + 1}T00:00:00",
                  git_commit=("feed" if name == "theirs" else "abcd") + "0" * 36,
                  catalogs={"smoke": "1" * 16} if co == HERE else {"correctness_gemm": "2"})
        meta = json.loads((folder / "run.json").read_text())
        if co is None:
            meta.pop("checkout")
        else:
            meta["checkout"] = co
        (folder / "run.json").write_text(json.dumps(meta))
        append_run(db, load_run(folder))
        runs[name] = folder
    return db, runs


def test_history_refs_resolve_within_this_checkout(shared: tuple[Path, dict[str, Path]]
                                                  ) -> None:
    db, runs = shared
    here = HERE["root"]
    assert resolve_run("latest", db, here).run.path == runs["mine2"]
    assert resolve_run("latest~1", db, here).run.path == runs["mine1"]
    with pytest.raises(RunRefError, match=r"holds 2 run\(s\) of this checkout \(.*\), so the "
                                          r"oldest is latest~1; 2 more of other checkouts"):
        resolve_run("latest~2", db, here)
    with pytest.raises(RunRefError, match="no run of a commit starting with feed"):
        resolve_run("feed", db, here)
    # every checkout: as before; an id names any run
    assert resolve_run("latest~1", db).run.path == runs["theirs"]
    assert resolve_run("feed", db).run.path == runs["theirs"]
    assert resolve_run("3", db, here).run.path == runs["theirs"]
    res = CliRunner().invoke(compare, ["latest~1", "latest", "--db", str(db), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["base"]["path"], doc["candidate"]["path"]) == (str(runs["mine1"]),
                                                            str(runs["mine2"]))
    assert not [w for w in doc["warnings"] if "not like runs" in w]


def test_compare_warns_and_gate_refuses_runs_of_other_checkouts(
        shared: tuple[Path, dict[str, Path]]) -> None:
    db, runs = shared
    args = ["latest~1", "latest", "--db", str(db), "--all-checkouts"]
    res = CliRunner().invoke(compare, [*args, "--json"])
    assert res.exit_code == 0
    assert f"WARNING: BASE and CAND are not like runs: checkout: BASE ran in {OTHER['root']}, " \
           f"CAND in {HERE['root']}" in res.stderr
    assert "WARNING: BASE and CAND are not like runs: catalogs: only BASE ran " \
           "correctness_gemm; only CAND ran smoke" in res.stderr
    warnings = json.loads(res.stdout)["warnings"]
    assert any(w.startswith("BASE and CAND are not like runs: checkout:") for w in warnings)
    refused = CliRunner().invoke(gate_command, args)
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines()[-1] == (
        f"Error: BASE and CAND are not like runs, so their differences are not regressions: "
        f"checkout: BASE ran in {OTHER['root']}, CAND in {HERE['root']}; catalogs: only BASE "
        "ran correctness_gemm; only CAND ran smoke (--force gates them anyway)")
    forced = CliRunner().invoke(gate_command, [*args, "--force", "--json"])
    assert forced.exit_code == 0, forced.output
    assert "gated with --force although BASE and CAND differ: checkout: BASE ran in " \
           f"{OTHER['root']}" in json.loads(forced.stdout)["warnings"][0]


def test_differences_compare_only_what_both_runs_record() -> None:
    a = {"checkout": {"root": "/a"}, "catalogs": {"smoke": "1"}, "targets": {"host": {}}}
    assert differences(a, a) == []
    assert differences(a, {}) == []  # a run from before: nothing to compare
    b = {"checkout": {"root": "/a"}, "catalogs": {"smoke": "2"}, "targets": {"qemu": {}}}
    assert differences(a, b) == ["catalogs: smoke changed between them (file digest)",
                                 "targets: BASE ran on host; CAND on qemu"]
