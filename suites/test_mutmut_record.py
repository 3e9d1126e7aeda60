"""ci/mutmut_record.py, the record of a generated-mutant campaign: every
survivor goes to the first reason whose names match it or stays
unexplained, rules that match nothing are reported, and docs/gen/kbdocs.py
refuses a record whose groups do not add up to its survivors."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_load import load_script

REPO = Path(__file__).resolve().parents[1]




rec = load_script("mutmut_record", REPO / "ci" / "mutmut_record.py")
kbdocs = load_script("kbdocs_for_mutmut", REPO / "docs" / "gen" / "kbdocs.py")


def test_survivors_go_to_the_first_matching_reason_or_stay_unexplained() -> None:
    rules = [{"reason": "a", "names": [r"\.x_f__mutmut_(1|2)$"]},
             {"reason": "b", "names": [r"\.x_f__mutmut_\d+$"]},
             {"reason": "never", "names": [r"\.x_g__"]}]
    groups, left, idle = rec.classify(["m.x_f__mutmut_1", "m.x_f__mutmut_12", "m.x_h__mutmut_3",
                                       "m.x_f__mutmut_2"], rules)
    assert groups == [{"reason": "a", "kind": "equivalent",
                       "mutants": ["m.x_f__mutmut_1", "m.x_f__mutmut_2"]},
                      {"reason": "b", "kind": "equivalent", "mutants": ["m.x_f__mutmut_12"]}]
    assert left == ["m.x_h__mutmut_3"] and idle == ["never"]


def test_the_committed_rules_are_well_formed() -> None:
    import json
    import re
    rules = json.loads((REPO / "ci" / "mutmut_equivalent.json").read_text())
    assert rules and len({r["reason"] for r in rules}) == len(rules)
    for r in rules:
        assert len(r["reason"]) > 20 and r["names"]
        assert r.get("kind", "equivalent") in ("equivalent", "presentation")
        for p in r["names"]:
            re.compile(p)
            assert p.endswith("$") and p.startswith("kbench\\.")  # one mutant, never a family


def test_a_record_whose_groups_do_not_add_up_is_refused(tmp_path: Path, monkeypatch) -> None:
    body = ('summary = "s"\nunexplained = ["m.x_h__mutmut_3"]\n\n[score]\npackage = "p"\n'
            'mutants = 10\nkilled = {k}\nsurvived = {s}\nnot_reached = 1\nnot_run = 0\n\n'
            '[record]\ndate = "2026-01-01"\ncommit = "abc1234"\nmachine = "m"\n'
            'command = "c"\nnote = ""\n\n[[equivalent]]\nreason = "because"\n'
            'mutants = ["m.x_f__mutmut_1", "m.x_f__mutmut_2"]\n')
    (tmp_path / "docs" / "records").mkdir(parents=True)
    monkeypatch.setattr(kbdocs, "root", lambda: tmp_path)
    (tmp_path / "docs" / "records" / "mutmut_t.toml").write_text(body.format(s=3, k=6))
    table = kbdocs.mutmut_scores("mutmut_t")
    assert ("| `p` | 10 | 6 | 3 | 2 of 3: 2 equivalent | 1 | 0 | 66.7% | 2026-01-01, `abc1234` |"
            in table)
    triage = kbdocs.mutmut_triage("mutmut_t")
    assert "| because | 2 |" in triage and "Left to triage: `m.x_h__mutmut_3`." in triage
    assert "presentation only" not in triage
    (tmp_path / "docs" / "records" / "mutmut_t.toml").write_text(body.format(s=4, k=5))
    with pytest.raises(ValueError, match="equivalent \\+ presentation \\+ unexplained != survived"):
        kbdocs.mutmut_scores("mutmut_t")
    # a presentation group counts apart from the equivalent ones, in the scores and the triage
    shown = '\n[[presentation]]\nreason = "a colour"\nmutants = ["m.x_p__mutmut_7"]\n'
    (tmp_path / "docs" / "records" / "mutmut_t.toml").write_text(body.format(s=4, k=5) + shown)
    assert "| 3 of 4: 2 equivalent, 1 presentation only |" in kbdocs.mutmut_scores("mutmut_t")
    triage = kbdocs.mutmut_triage("mutmut_t")
    assert "| presentation only: what the survivors change | survivors |" in triage
    assert "| a colour | 1 |" in triage


def test_a_rule_kind_names_the_group_it_writes(tmp_path: Path, monkeypatch) -> None:
    rules = [{"reason": "same values", "names": [r"\.x_f__mutmut_1$"]},
             {"reason": "a colour", "kind": "presentation", "names": [r"\.x_p__mutmut_2$"]}]
    groups, left, _ = rec.classify(["m.x_f__mutmut_1", "m.x_p__mutmut_2"], rules)
    assert [(g["kind"], g["mutants"]) for g in groups] == [
        ("equivalent", ["m.x_f__mutmut_1"]), ("presentation", ["m.x_p__mutmut_2"])]
    assert left == []


def test_a_long_triage_list_is_summed_per_function(tmp_path: Path, monkeypatch) -> None:
    left = [f"kbench.results.abstats.x_paired__mutmut_{i}" for i in range(30)] + \
        [f"kbench.results.count_compare.x\u01c1CountComparison\u01c1tally__mutmut_{i}"
         for i in range(11)] + ["kbench.results.abstats.x__pairs__mutmut_4"]
    body = ('summary = "s"\nunexplained = ' + str(left).replace("'", '"') + '\n\n[score]\n'
            'package = "p"\nmutants = 50\nkilled = 8\nsurvived = 42\nnot_reached = 0\n'
            'not_run = 0\n\n[record]\ndate = "2026-01-01"\ncommit = "abc1234"\nmachine = "m"\n'
            'command = "c"\nnote = ""\n')
    (tmp_path / "docs" / "records").mkdir(parents=True)
    monkeypatch.setattr(kbdocs, "root", lambda: tmp_path)
    (tmp_path / "docs" / "records" / "mutmut_t.toml").write_text(body)
    triage = kbdocs.mutmut_triage("mutmut_t")
    assert "Left to triage: 42 survivors" in triage
    assert "| `kbench.results.abstats.paired` | 30 |" in triage
    assert "| `kbench.results.abstats._pairs` | 1 |" in triage
    assert "| `kbench.results.count_compare.CountComparison.tally` | 11 |" in triage
    assert "| 0 of 42: 0 equivalent |" in kbdocs.mutmut_scores("mutmut_t")
