"""ci/mutmut_progress.py, a generated-mutant campaign carried across work
folders: kills and survivors are carried (a mutant no test reaches or not
yet run is not), each tied to the hash of the function it was observed on; a
later save keeps earlier results of unchanged functions, the latest result
of a mutant winning, and drops those of changed ones; restore never overwrites a work folder's own
results, fills in mutants it has not run, and carries nothing across mutmut
versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_load import load_script

REPO = Path(__file__).resolve().parents[1]
prog = load_script("mutmut_progress", REPO / "ci" / "mutmut_progress.py")


def meta(codes: dict[str, int | None], hashes: dict[str, str]) -> str:
    return json.dumps({"exit_code_by_key": codes, "hash_by_function_name": hashes,
                       "type_check_error_by_key": {}, "durations_by_key": {},
                       "estimated_durations_by_key": {}})


def work_with(tmp: Path, name: str, files: dict[str, str]) -> Path:
    w = tmp / name
    for source, text in files.items():
        p = w / "mutants" / (source + ".meta")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return w


@pytest.fixture(autouse=True)
def version(monkeypatch) -> None:
    monkeypatch.setattr(prog, "mutmut_version", lambda: "3.8.1")


CODES = {"kbench.results.a.x_f__mutmut_1": 1, "kbench.results.a.x_f__mutmut_2": 0,
         "kbench.results.a.x_f__mutmut_3": 36, "kbench.results.a.x_f__mutmut_4": None,
         "kbench.results.a.xǁCǁm__mutmut_1": 3, "kbench.results.a.xǁCǁm__mutmut_2": 33,
         "kbench.results.a.x_g__mutmut_1": 0}
HASHES = {"x_f": "h1", "xǁCǁm": "h2", "x_g": "h3"}


def test_kills_and_survivors_are_saved_each_with_its_functions_hash(tmp_path: Path) -> None:
    w = work_with(tmp_path, "w", {"kbench/results/a.py": meta(CODES, HASHES)})
    data = prog.save(w, tmp_path / "p.json", "abc1234")
    assert data["mutmut"] == "3.8.1" and data["commits"] == ["abc1234"]
    assert data["files"] == {"kbench/results/a.py": {
        "x_f": {"hash": "h1", "killed": {"1": 1, "3": 36}, "survived": [2]},
        "xǁCǁm": {"hash": "h2", "killed": {"1": 3}},
        "x_g": {"hash": "h3", "killed": {}, "survived": [1]}}}
    assert json.loads((tmp_path / "p.json").read_text()) == data


def test_restore_writes_a_meta_file_mutmut_reads_with_the_kills_only(tmp_path: Path) -> None:
    w = work_with(tmp_path, "w", {"kbench/results/a.py": meta(CODES, HASHES),
                                  "kbench/results/__init__.py": meta(
                                      {"kbench.results.x_i__mutmut_7": 1}, {"x_i": "h9"})})
    prog.save(w, tmp_path / "p.json", "abc1234")
    fresh = tmp_path / "fresh"
    assert prog.restore(fresh, tmp_path / "p.json") == 6
    got = json.loads((fresh / "mutants" / "kbench/results/a.py.meta").read_text())
    assert tuple(got) == prog.META_KEYS  # the keys mutmut 3.8's loader pops, no other
    assert got["exit_code_by_key"] == {"kbench.results.a.x_f__mutmut_1": 1,
                                       "kbench.results.a.x_f__mutmut_2": 0,
                                       "kbench.results.a.x_f__mutmut_3": 36,
                                       "kbench.results.a.xǁCǁm__mutmut_1": 3,
                                       "kbench.results.a.x_g__mutmut_1": 0}
    assert got["hash_by_function_name"] == {"x_f": "h1", "xǁCǁm": "h2", "x_g": "h3"}
    init = json.loads((fresh / "mutants" / "kbench/results/__init__.py.meta").read_text())
    assert init["exit_code_by_key"] == {"kbench.results.x_i__mutmut_7": 1}  # mutmut's naming


def test_a_later_save_keeps_results_of_unchanged_functions_and_drops_changed_ones(
        tmp_path: Path) -> None:
    p = tmp_path / "p.json"
    prog.save(work_with(tmp_path, "w1", {"kbench/results/a.py": meta(CODES, HASHES)}), p, "c1")
    # the next campaign: x_f unchanged (its mutant 5 newly killed, its survivor 2 killed
    # by a new test, its kill 3 surviving a changed test), xǁCǁm changed, x_g gone
    later = {"kbench.results.a.x_f__mutmut_1": None, "kbench.results.a.x_f__mutmut_5": 1,
             "kbench.results.a.x_f__mutmut_2": 1, "kbench.results.a.x_f__mutmut_3": 0,
             "kbench.results.a.xǁCǁm__mutmut_2": 1}
    data = prog.save(work_with(tmp_path, "w2", {"kbench/results/a.py": meta(
        later, {"x_f": "h1", "xǁCǁm": "h2-new"})}), p, "c2")
    assert data["files"]["kbench/results/a.py"] == {
        "x_f": {"hash": "h1", "killed": {"1": 1, "2": 1, "5": 1}, "survived": [3]},
        "xǁCǁm": {"hash": "h2-new", "killed": {"2": 1}}}
    assert data["commits"] == ["c1", "c2"]
    # a third save of the same folder changes nothing
    again = prog.save(work_with(tmp_path, "w3", {"kbench/results/a.py": meta(
        {"kbench.results.a.x_f__mutmut_3": None}, {"x_f": "h1", "xǁCǁm": "h2-new"})}), p, "c2")
    assert again["files"] == data["files"] and again["commits"] == ["c1", "c2"]


def test_a_module_not_in_this_campaign_keeps_its_kills(tmp_path: Path) -> None:
    p = tmp_path / "p.json"
    prog.save(work_with(tmp_path, "w1", {"kbench/results/a.py": meta(CODES, HASHES)}), p, "c1")
    data = prog.save(work_with(tmp_path, "w2", {"kbench/judge/b.py": meta(
        {"kbench.judge.b.x_h__mutmut_1": 1}, {"x_h": "h4"})}), p, "c2")
    assert set(data["files"]) == {"kbench/results/a.py", "kbench/judge/b.py"}


def test_a_meta_file_being_written_leaves_the_previous_entry(tmp_path: Path) -> None:
    p = tmp_path / "p.json"
    prog.save(work_with(tmp_path, "w1", {"kbench/results/a.py": meta(CODES, HASHES)}), p, "c1")
    data = prog.save(work_with(tmp_path, "w2", {"kbench/results/a.py": '{"exit_code_by'}),
                     p, "c2")
    assert data["files"]["kbench/results/a.py"]["x_f"]["killed"] == {"1": 1, "3": 36}


def test_restore_never_overwrites_a_work_folders_own_results(tmp_path: Path) -> None:
    p = tmp_path / "p.json"
    prog.save(work_with(tmp_path, "w1", {"kbench/results/a.py": meta(CODES, HASHES)}), p, "c1")
    own = meta({"kbench.results.a.x_f__mutmut_1": 0}, {"x_f": "h1"})
    w2 = work_with(tmp_path, "w2", {"kbench/results/a.py": own})
    assert prog.restore(w2, p) == 0
    assert (w2 / "mutants" / "kbench/results/a.py.meta").read_text() == own


def test_restore_fills_mutants_a_work_folder_has_not_run_yet(tmp_path: Path) -> None:
    """A work folder whose meta files were written afresh (a campaign started
    without carried kills, or one that regenerated its mutants) still takes
    the kills of functions whose hash is unchanged, for mutants it has not
    run; its own results and changed functions keep theirs."""
    p = tmp_path / "p.json"
    prog.save(work_with(tmp_path, "w1", {"kbench/results/a.py": meta(CODES, HASHES)}), p, "c1")
    own = {"kbench.results.a.x_f__mutmut_1": None, "kbench.results.a.x_f__mutmut_2": None,
           "kbench.results.a.x_f__mutmut_3": 0, "kbench.results.a.x_f__mutmut_4": None,
           "kbench.results.a.xǁCǁm__mutmut_1": None}
    w2 = work_with(tmp_path, "w2", {"kbench/results/a.py": meta(
        own, {"x_f": "h1", "xǁCǁm": "h2-new"})})
    assert prog.restore(w2, p) == 2
    got = json.loads((w2 / "mutants" / "kbench/results/a.py.meta").read_text())
    assert got["exit_code_by_key"] == {**own, "kbench.results.a.x_f__mutmut_1": 1,
                                       "kbench.results.a.x_f__mutmut_2": 0}
    assert got["hash_by_function_name"] == {"x_f": "h1", "xǁCǁm": "h2-new"}
    assert prog.restore(w2, p) == 0  # nothing left to fill
    broken = work_with(tmp_path, "w3", {"kbench/results/a.py": '{"exit_code_by'})
    assert prog.restore(broken, p) == 0
    assert (broken / "mutants" / "kbench/results/a.py.meta").read_text() == '{"exit_code_by'


def test_nothing_is_carried_across_mutmut_versions(tmp_path: Path, monkeypatch) -> None:
    p = tmp_path / "p.json"
    prog.save(work_with(tmp_path, "w1", {"kbench/results/a.py": meta(CODES, HASHES)}), p, "c1")
    monkeypatch.setattr(prog, "mutmut_version", lambda: "3.9.0")
    assert prog.restore(tmp_path / "fresh", p) == 0
    assert not (tmp_path / "fresh").exists()
    data = prog.save(work_with(tmp_path, "w2", {"kbench/judge/b.py": meta(
        {"kbench.judge.b.x_h__mutmut_1": 1}, {"x_h": "h4"})}), p, "c2")
    assert data["mutmut"] == "3.9.0" and set(data["files"]) == {"kbench/judge/b.py"}
    assert data["commits"] == ["c2"]


def test_bad_inputs_are_refused_with_a_message(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no mutants/ folder"):
        prog.save(tmp_path, tmp_path / "p.json", "c1")
    (tmp_path / "bad.json").write_text('{"files": {}}')
    with pytest.raises(SystemExit, match="not a progress file"):
        prog.restore(tmp_path / "w", tmp_path / "bad.json")
    with pytest.raises(ValueError, match="not a mutmut mutant name"):
        prog.split_key("kbench.results.a.x_f")
