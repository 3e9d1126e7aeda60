"""The report's mutation tables word for word, from a mutation.json in
memory: one row per mutant, survivors and problems first, with its failed
tests summed over runs and each run described; per area the count of every
status and the kill rate over the mutants that are not stale."""

from __future__ import annotations

import json
import math
from pathlib import Path

from kbench.results import mutation as mt


def test_each_mutant_is_one_row_survivors_and_problems_first() -> None:
    data = {"mutants": [
        {"id": "x1", "status": "odd", "runs": None},
        {"id": "k1", "area": "judge", "status": "killed", "description": "d1",
         "runs": [{"target": "host", "killed": True, "failed": 3},
                  {"target": "qemu", "killed": False, "failed": 0}]},
        {"id": "s1", "area": "gate", "status": "survived", "detail": "why",
         "runs": [{"target": "host", "killed": False}]},
        {"id": "t1", "area": "judge", "status": "stale", "runs": []},
        {"id": "e1", "area": "gate", "status": "equivalent", "equivalent": "same output"},
        {"id": "r1", "area": "judge", "status": "error"},
        {"id": "i1", "area": "judge", "status": "invalid",
         "runs": [{"failed": "2", "killed": 1}]},
        {"id": "s2", "area": "judge", "status": "survived"},
        {}]}
    table = mt.mutant_table(data)
    assert list(table.columns) == mt.MUTANT_COLUMNS
    assert [list(r) for r in table.itertuples(index=False)] == [
        ["s1", "gate", "survived", 0, "host: survived (0 failed)", "why", "", ""],
        ["s2", "judge", "survived", 0, "", "", "", ""],
        ["i1", "judge", "invalid", 2, "None: killed (2 failed)", "", "", ""],
        ["r1", "judge", "error", 0, "", "", "", ""],
        ["e1", "gate", "equivalent", 0, "", "", "same output", ""],
        ["t1", "judge", "stale", 0, "", "", "", ""],
        ["k1", "judge", "killed", 3, "host: killed (3 failed); qemu: survived (0 failed)",
         "", "", "d1"],
        ["x1", "", "odd", 0, "", "", "", ""],
        ["", "", "", 0, "", "", "", ""]]
    assert mt.mutant_table({"mutants": [{"id": "a", "status": "weird"},
                                         {"id": "b", "status": "killed"}]})[
        "mutant"].tolist() == ["b", "a"]  # an unknown status after every known one
    assert table.index.tolist() == list(range(9))


def test_no_campaign_is_an_empty_table_of_the_same_columns() -> None:
    for data in (None, {}):
        assert list(mt.mutant_table(data).columns) == mt.MUTANT_COLUMNS
        assert mt.mutant_table(data).empty
        assert list(mt.area_table(data).columns) == mt.AREA_COLUMNS
        assert mt.area_table(data).empty
    assert mt.area_table({"mutants": []}).empty and mt.mutant_table({"mutants": []}).empty


def test_the_area_table_counts_every_status() -> None:
    statuses = ["killed", "killed", "survived", "equivalent", "stale", "invalid", "error"]
    data = {"mutants": [{"area": "b", "status": s} for s in statuses]
            + [{"area": "a", "status": "stale"}, {"status": "killed"}]}
    table = mt.area_table(data)
    assert [list(r)[:-1] for r in table.itertuples(index=False)] == [
        ["", 1, 1, 0, 0, 0, 0, 0], ["a", 1, 0, 0, 0, 1, 0, 0], ["b", 7, 2, 1, 1, 1, 1, 1],
        ["all", 9, 3, 1, 1, 2, 1, 1]]
    rates = table["kill_rate"].tolist()
    assert rates[0] == 1.0 and math.isnan(rates[1]) and rates[2] == 2 / 6
    assert rates[3] == 3 / 7


def test_mutation_json_is_read_when_it_is_a_campaign(tmp_path: Path) -> None:
    assert mt.load(tmp_path) is None
    f = tmp_path / "mutation.json"
    for text in ("{", "[]", '{"mutants": {}}', '{"other": []}', "\xff"):
        f.write_text(text, encoding="latin-1")
        assert mt.load(tmp_path) is None, text
    f.write_text(json.dumps({"mutants": [{"id": "a"}], "x": 1}))
    assert mt.load(tmp_path) == {"mutants": [{"id": "a"}], "x": 1}
    assert mt.load(str(tmp_path)) == {"mutants": [{"id": "a"}], "x": 1}


def test_mutants_of_one_status_keep_the_campaigns_order() -> None:
    """Forty mutants in one status keep their order (a stable sort)."""
    ids = [f"m{i:02d}" for i in range(40)]
    data = {"mutants": [{"id": i, "status": "killed" if n % 3 else "survived"}
                        for n, i in enumerate(ids)]}
    table = mt.mutant_table(data)
    assert table["mutant"].tolist() == ([i for n, i in enumerate(ids) if n % 3 == 0]
                                        + [i for n, i in enumerate(ids) if n % 3])


def test_an_area_table_of_no_mutants_keeps_its_columns() -> None:
    table = mt.area_table({"mutants": []})
    assert table.empty and list(table.columns) == mt.AREA_COLUMNS
    rate = mt.area_table({"mutants": [{"area": "a", "status": "stale"}]})["kill_rate"]
    assert math.isnan(rate.iloc[0]) and rate.dtype == float
