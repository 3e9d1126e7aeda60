"""ci/gate_benchmark.py's bookkeeping, on synthetic outcomes (no timing):
what a benchmark cell records (A/A gate failures, 10% caught on the slowed
realization only, slowed cases of at least 20 µs caught, 5% called slower,
inconclusive cases), the dated matrix record it writes and keeps, and the
targets docs/gen/kbdocs.py checks the README's table against."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from script_load import load_script

REPO = Path(__file__).resolve().parents[1]




gb = load_script("gate_benchmark", REPO / "ci" / "gate_benchmark.py")
kbdocs = load_script("kbdocs", REPO / "docs" / "gen" / "kbdocs.py")


def _settings(tmp_path: Path, protocol: str = "ab", hog: int = 0) -> object:
    conds = [gb.Condition(gb.AA, 0.0), gb.Condition("slowed 5%", 0.05),
             gb.Condition("slowed 10%", 0.10)]
    return gb.Settings(trials=20, shapes=["smoke"], target="host", realization="r",
                       conditions=conds, max_slowdown=0.05, alpha=0.01, speed_targets=("*",),
                       work=tmp_path, command=["kbench"], all_realizations=True, seed=0,
                       keep_runs=False, protocol=protocol, hog=hog)


def _outcome(trial: int, cond: str, gate: object, detect: object) -> object:
    return gb.Outcome(trial=trial, condition=cond, flagged=gate.failed,
                      cases_flagged=gate.slow_cases, cases_compared=gate.compared,
                      target_ratios=[1.10 if "10" in cond else 1.05 if "5" in cond else 1.0],
                      load=0.5 + trial / 100, seconds=30.0, gate=gate, detect=detect)


def _outcomes() -> list:
    """20 trials: A/A fails the gate once (trial 3) and has one case called
    slower at 2.5% (trial 5); 10% fails on the slowed realization in every
    trial but blames an untouched case too in trial 7 and misses trial 9;
    5% is called slower at 2.5% in 17 trials."""
    J = gb.Judged
    out = []
    for t in range(1, 21):
        out.append(_outcome(t, gb.AA,
                            J(0.05, failed=t == 3, slow_cases=int(t == 3),
                              untouched_slow=["x c"] if t == 3 else [], inconclusive=1,
                              compared=10),
                            J(0.025, failed=t in (3, 5), slow_cases=int(t in (3, 5)),
                              compared=10)))
        caught = t != 9
        out.append(_outcome(t, "slowed 10%",
                            J(0.05, failed=caught, slow_cases=4 + (t == 7),
                              untouched_slow=["u c"] if t == 7 else [], big=3,
                              big_caught=3 if caught else 0, compared=10,
                              big_missed=[] if caught else [
                                  "r smoke/b3 1.040", "r smoke/m64 1.070",
                                  "r smoke/k9 1.050"]),
                            J(0.025, failed=True, slow_cases=4, big=3, big_caught=3,
                              compared=10)))
        out.append(_outcome(t, "slowed 5%", J(0.05, compared=10, big=3),
                            J(0.025, failed=t > 3, slow_cases=2 * (t > 3), big=3,
                              big_caught=2, compared=10)))
    return out


def test_a_cell_counts_what_the_targets_are_stated_in(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    res = gb.Result("", _outcomes(), "r", 1200.0)
    c = gb.cell(s, res, {"git_commit": "abcdef0123"})
    assert c["aa_gate_failed"] == "1/20" and c["aa_detect_flagged"] == "2/20"
    assert c["aa_inconclusive"] == "20/200"
    assert c["s10_gate_failed"] == "19/20" and c["s10_gate_clean"] == "18/20"
    assert c["s10_untouched_flagged"] == 1 and c["s10_big_caught"] == "57/60"
    assert c["s5_detect_flagged"] == "17/20" and c["s5_gate_failed"] == "0/20"
    assert c["s10_median_ratio"] == 1.1 and c["s5_median_ratio"] == 1.05
    assert c["s10_big_missed"] == ["r smoke/b3: missed in 1 trial(s), ratio 1.040",
                                   "r smoke/k9: missed in 1 trial(s), ratio 1.050",
                                   "r smoke/m64: missed in 1 trial(s), ratio 1.070"]
    twice = [gb.Judged(0.05, big_missed=["r a 1.050", "r b 1.020"]),
             gb.Judged(0.05, big_missed=["r a 1.070"])]
    assert gb.missed_cases(twice) == ["r a: missed in 2 trial(s), ratio 1.060",
                                      "r b: missed in 1 trial(s), ratio 1.020"]
    assert gb.missed_cases(twice, most=1) == ["r a: missed in 2 trial(s), ratio 1.060"]
    assert c["minutes"] == 20.0 and c["minutes_per_trial"] == 1.0
    assert c["load_median"] == pytest.approx(0.605, abs=0.006) and c["load_max"] == 0.7
    assert c["commit"] == "abcdef0" and c["protocol"] == "ab" and c["hog"] == 0
    assert "target" not in c and "passes" not in c  # kbench ab times on its own workers
    runs = gb.cell(replace(s, protocol="runs", target="worker:host", passes=5), res, {})
    assert (runs["protocol"], runs["target"], runs["passes"]) == ("runs", "worker:host", 5)


def test_the_record_keeps_one_cell_per_catalog_protocol_andload_script(tmp_path: Path) -> None:
    path = tmp_path / "gate_matrix.toml"
    path.write_text('summary = """kept\\nacross writes"""\nnotes = ["a note"]\n')
    base = gb.cell(_settings(tmp_path), gb.Result("", _outcomes(), "r", 60.0), {})
    base["date"] = "2026-12-05"  # measured before the runs cell below, whatever today is
    gb.write_record(path, base, "a test machine")
    gb.write_record(path, {**base, "hog": 1, "commit": "1111111"}, "a test machine")
    gb.write_record(path, {**base, "protocol": "runs", "date": "2026-12-06"}, "a test machine")
    again = {**base, "aa_gate_failed": "0/20"}  # the same cell measured again: replaced
    gb.write_record(path, again, "a test machine")
    rec = tomllib.loads(path.read_text())
    assert rec["record"]["machine"] == "a test machine"
    # a cell measured on another machine says so; the record names both
    gb.write_record(path, {**base, "hog": 1, "commit": "1111111"}, "another machine")
    rec = tomllib.loads(path.read_text())
    assert [c["machine"] for c in rec["cell"]] == ["a test machine", "another machine",
                                                   "a test machine"]
    assert rec["record"]["machine"] == "a test machine and another machine"
    # a record written before cells named their machine: its cells take the record's
    old = path.read_text().replace('machine = "a test machine"\n', "")
    path.write_text(old.replace('machine = "a test machine and another machine"',
                                'machine = "the old one"'))
    gb.write_record(path, {**base, "hog": 1, "commit": "1111111"}, "a test machine")
    rec = tomllib.loads(path.read_text())
    assert [c["machine"] for c in rec["cell"]] == ["the old one", "a test machine",
                                                   "the old one"]
    assert rec["summary"] == "kept\nacross writes" and rec["notes"] == ["a note"]
    cells = rec["cell"]
    assert [(c["protocol"], c["hog"]) for c in cells] == [("ab", 0), ("ab", 1), ("runs", 0)]
    assert cells[0]["aa_gate_failed"] == "0/20"
    assert rec["record"]["date"] == "2026-12-06" and "1111111" in rec["record"]["commit"]
    # what kbdocs reads: the record's provenance holds
    assert all(rec["record"][k] for k in ("date", "commit", "machine", "command"))
    # two runs on another target are a cell of their own, listed before the host's
    worker = {**base, "protocol": "runs", "target": "worker:host", "passes": 5}
    gb.write_record(path, worker, "a test machine")
    gb.write_record(path, {**worker, "aa_gate_failed": "0/20"}, "a test machine")
    cells = tomllib.loads(path.read_text())["cell"]
    assert [(c["protocol"], c["hog"], c.get("target")) for c in cells] == [
        ("ab", 0, None), ("ab", 1, None), ("runs", 0, "worker:host"), ("runs", 0, None)]
    assert cells[2]["passes"] == 5 and cells[2]["aa_gate_failed"] == "0/20"


def _cell(**over: object) -> dict:
    c = {"catalogs": "smoke", "protocol": "ab", "hog": 0, "aa_gate_failed": "1/20",
         "aa_inconclusive": "5/100", "s10_gate_clean": "19/20", "s5_detect_clean": "16/20"}
    return {**c, **over}


@pytest.mark.parametrize("over, missed", [
    ({}, []),
    ({"aa_gate_failed": "2/20"}, ["A/A"]),
    ({"aa_gate_failed": "0/10"}, ["A/A"]),  # too few trials to claim the rate
    ({"s10_gate_clean": "18/20"}, ["10%"]),
    ({"s5_detect_clean": "15/20"}, ["5%"]),
    ({"aa_inconclusive": "11/100"}, ["inconclusive"]),
    ({"aa_inconclusive": "11/100", "hog": 1}, []),  # the inconclusive target: quiet only
    ({"aa_inconclusive": "11/100", "catalogs": "resnet50_small"}, []),
])
def test_the_targets_under_the_table_are_checked_not_asserted(over: dict, missed: list) -> None:
    got = [what for what, ok in kbdocs._cell_targets(_cell(**over)) if not ok]
    assert len(got) == len(missed)
    for want, what in zip(missed, got, strict=True):
        assert want in what
    runs = {k: v for k, v in _cell(protocol="runs").items() if k != "s5_detect_clean"}
    assert [w for w, _ in kbdocs._cell_targets(runs)] == [
        "A/A gate failures at most 1 of 20",
        "10% failing the gate on the slowed realization only, at least 19 of 20"]


class _Measured(Exception):
    """Raised by a stand-in for the first measurement, to stop the benchmark there."""


@pytest.mark.parametrize("protocol", ["runs", "ab"])
@pytest.mark.parametrize("hog", [0, 1])
def test_both_protocols_measure_under_the_hog_they_record(tmp_path: Path, monkeypatch,
                                                          protocol: str, hog: int) -> None:
    """--hog N runs N busy loops for the whole benchmark in either protocol (the
    cell records `hog`), stopped when it ends; the table says so."""
    started: list[int] = []
    stopped: list[int] = []
    seen: list[tuple[int, int]] = []

    def start(n: int) -> list:
        started.append(n)
        return [object()] * n

    def measure(*_args: object, **_kw: object) -> None:
        seen.append((sum(started), len(stopped)))
        raise _Measured

    monkeypatch.setattr(gb, "start_hog", start)
    monkeypatch.setattr(gb, "stop_hog", lambda procs: stopped.append(len(procs)))
    monkeypatch.setattr(gb, "wait_for_quiet", lambda s: 0.5)
    monkeypatch.setattr(gb, "perf_run", measure)
    monkeypatch.setattr(gb, "ab_run", measure)
    s = _settings(tmp_path, protocol=protocol, hog=hog)
    with pytest.raises(_Measured):
        (gb.run_ab if protocol == "ab" else gb.run)(s)
    assert seen == [(hog, 0)] and started == [hog] and stopped == [hog]
    res = gb.Result("", _outcomes(), "r", 1200.0)
    text = (gb.table_ab if protocol == "ab" else gb.table)(s, "r", res.outcomes, {}, 60.0)
    assert ("- 1 CPU hog process(es) pinned to CPU 0..0 throughout" in text) == (hog == 1)
    assert ("- no CPU hog" in text) == (hog == 0)


def test_the_table_checks_each_protocol_and_sets_in_process_runs_aside(monkeypatch) -> None:
    """The README's table: a row per cell, labelled with how its two runs were
    timed; the targets tallied per protocol over the interleaved and the
    process-per-pass rows; in-process two runs shown, their misses named
    apart and not counted; the cells not yet measured listed."""
    full = {"trials": 20, "aa_detect_flagged": "0/20", "slowed": "r", "limit": "5.0%",
            "minutes": 10.0, "minutes_per_trial": 0.5, "load_median": 1.0, "load_max": 1.1,
            "date": "2026-12-06", "commit": "abc1234", "command": "python ci/gate_benchmark.py",
            "machine": "a test machine"}
    cells = [{**full, **_cell()},
             {**full, **_cell(protocol="runs", target="worker:host", passes=5,
                              s10_gate_clean="18/20")},
             {**full, **_cell(protocol="runs", target="host", passes=3, aa_gate_failed="2/20")}]
    for c in cells[1:]:
        del c["s5_detect_clean"]
    rec = {"record": {"date": "2026-12-06", "commit": "abc1234", "machine": "a test machine",
                      "command": ["python ci/gate_benchmark.py"]}, "cell": cells}
    monkeypatch.setattr(kbdocs, "record", lambda name: rec)
    front = kbdocs.gate_matrix()  # the README: the gate's own protocol, two runs elsewhere
    assert "| interleaved: `kbench ab` + `gate --ab` |" in front and "| two runs" not in front
    assert "The rows of two runs measured apart (`gate A B` without `--ab`) are in" in front
    text = kbdocs.gate_matrix("detail")
    assert "The rows of two runs measured apart" not in text
    assert "| two runs, a process per pass (`--target worker:host --passes 5`): `gate A B` |" \
        in text
    assert "| two runs, the passes in one process (`--target host --passes 3`): `gate A B` |" \
        in text
    assert ("Targets met in 5 of 6 checks (interleaved: 4 of 4, two runs: 1 of 2); missed: "
            "10% failing the gate on the slowed realization only, at least 19 of 20 (`smoke`, "
            "runs on worker:host, 5 passes, quiet).") in text
    assert front.split("\n\nTargets met")[1].split("The rows of")[0] \
        == text.split("\n\nTargets met")[1].split("Not yet measured")[0]
    aside = text.split("they miss: ")[1].splitlines()[0]
    assert aside == "A/A gate failures at most 1 of 20 (`smoke`, quiet)."
    absent = text.split("Not yet measured: ")[1].splitlines()[0]
    assert "`smoke`, runs on worker:host, quiet" not in absent
    assert "`smoke`, runs on worker:host, hog" in absent and "`smoke`, ab, hog" in absent
    assert absent.count("`") == 2 * 10  # 12 cells of 3 catalogs x 2 protocols x 2 loads, 2 done
