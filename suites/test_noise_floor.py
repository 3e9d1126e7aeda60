"""The gate's history-aware noise floor (`kbench gate --history N`,
kbench.results.noise): a case whose median time spreads from run to run on
this machine by more than --max-slowdown is held to that spread instead,
and the output says so. Synthetic runs written through the real store and
history; nothing depends on this machine's timing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from test_compare import passes, write_run

from kbench.cli.history import gate_command
from kbench.results import noise
from kbench.results.compare import SAME, SLOWER, case_key, gate
from kbench.results.history import append_run, run_results

REPO = Path(__file__).resolve().parents[1]


def test_the_spread_is_a_two_sigma_band_of_log_time() -> None:
    assert noise.spread([1e6, 1e6, 1e6]) == 0.0
    s = noise.spread([1e6 * math.exp(-0.1), 1e6, 1e6 * math.exp(0.1)])
    assert s == pytest.approx(math.exp(2 * 0.1) - 1)
    assert math.isnan(noise.spread([1e6, 2e6]))  # fewer than MIN_RUNS runs
    assert math.isnan(noise.spread([1e6, 0.0, math.nan]))  # only positive, finite medians


def _history(tmp_path: Path, factors: list[float], host: str = "box") -> tuple[Path, list[int]]:
    """A history with one earlier run per factor: case k at 1 ms times it,
    case steady at 2 ms in every run; one emulated run and one of another
    host that must not count."""
    db = tmp_path / "history.sqlite"
    ids = []
    for i, f in enumerate(factors):
        run = write_run(tmp_path / f"old{i}", [*passes("k", [1e6 * f] * 3, 10 + i),
                                               *passes("steady", [2e6] * 3, 20 + i)],
                        host=host, date=f"2025-01-0{i + 2}T00:00:00+00:00")
        ids.append(append_run(db, run))
    append_run(db, write_run(tmp_path / "emu", passes("k", [9e6] * 3, 40, emulated=True),
                             date="2025-01-08T00:00:00+00:00"))
    append_run(db, write_run(tmp_path / "other", [*passes("k", [9e6] * 3, 41)],
                             host="elsewhere", date="2025-01-09T00:00:00+00:00"))
    return db, ids


def test_spreads_come_from_the_same_machine_s_runs(tmp_path: Path) -> None:
    db, ids = _history(tmp_path, [0.9, 1.0, 1.12, 1.0])
    floor = noise.from_history(db, "box", "Test CPU", 3)
    assert len(floor.run_ids) == 3 and set(floor.run_ids) <= set(ids)  # newest three
    spreads = {key[4]: s for key, s in floor.spreads.items()}
    medians = [1e6 * f for f in (1.0, 1.12, 1.0)]
    assert spreads["k"][0] == pytest.approx(noise.spread(medians), rel=0.05)
    assert spreads["k"][1] == 3 and spreads["steady"][0] < 0.05
    # the emulated run and the other host's are not among them
    assert not set(floor.run_ids) & {max(ids) + 1, max(ids) + 2}
    # a failing row does not count
    frames = [run_results(db, i) for i in floor.run_ids]
    frames[0].loc[frames[0]["case"] == "k", "status"] = "fail"
    assert "k" not in {key[4] for key in noise.from_results(frames)}
    with pytest.raises(ValueError, match="at least 3"):
        noise.from_history(db, "box", "Test CPU", 2)


def _slowdown(tmp_path: Path) -> tuple:
    base = write_run(tmp_path / "base", passes("k", [1e6] * 3, 1, noise=0.002))
    cand = write_run(tmp_path / "cand", passes("k", [1.1e6] * 3, 2, noise=0.002),
                     date="2025-02-01T00:00:00+00:00")
    key = case_key(next(base.results.itertuples(index=False)))
    return base, cand, key


def test_a_case_within_its_own_spread_is_same_and_says_why(tmp_path: Path) -> None:
    base, cand, key = _slowdown(tmp_path)
    plain = gate(base, cand, max_slowdown=0.05)
    assert plain.passed and len(plain.first_look) == 1  # +10% against 5%: a first look
    wide = gate(base, cand, max_slowdown=0.05, noise={key: 0.15})
    assert wide.passed
    (case,) = wide.comparison.cases
    assert case.verdict == SAME and case.limit == pytest.approx(0.15)
    assert "within its run-to-run spread 15.0% on this machine (--history)" in case.note
    # a spread wider than the limit but narrower than the move: still a slowdown
    narrow = gate(base, cand, max_slowdown=0.05, noise={key: 0.08})
    assert narrow.passed and len(narrow.first_look) == 1
    assert narrow.comparison.cases[0].verdict == SLOWER
    assert "limit 8.0%: its run-to-run spread (--history), wider than 5.0%" in \
        narrow.first_look[0].detail
    assert wide.first_look == []
    # a spread below the limit changes nothing
    assert gate(base, cand, max_slowdown=0.05, noise={key: 0.01}).comparison.cases[0].limit \
        == pytest.approx(0.05)


def test_the_gate_cli_widens_limits_from_the_history_and_says_so(tmp_path: Path) -> None:
    base, cand, _ = _slowdown(tmp_path)
    db, _ = _history(tmp_path, [0.88, 1.0, 1.13, 0.95])
    runner = CliRunner()
    args = [str(base.path), str(cand.path), "--db", str(db)]
    res = runner.invoke(gate_command, args)
    assert res.exit_code == 0 and "1 possible slowdown(s)" in res.output
    res = runner.invoke(gate_command, [*args, "--history", "4"])
    assert res.exit_code == 0 and "0 possible slowdown(s)" in res.output, res.output
    assert "noise floor (--history): 4 earlier run(s) of box (Test CPU) in the history" in \
        res.output
    assert "held to their own spread instead" in res.output
    res = runner.invoke(gate_command, [*args, "--history", "4", "--json"])
    assert res.exit_code == 0
    doc = json.loads(res.output)
    jsonschema.validate(doc, json.loads((REPO / "reports/schema/gate.schema.json").read_text()))
    (case,) = [c for c in doc["cases"] if c["case"] == "k"]
    assert case["limit"] > 0.1 and case["verdict"] == "same"
    res = runner.invoke(gate_command, [*args, "--history", "2"])
    assert res.exit_code == 2 and "--history" in res.output


def test_limits_widen_only_past_the_limit_and_the_floor_says_when_none_does() -> None:
    key = ("perf", "host", "gemm", "c", "k", "uniform", "r", 1)
    floor = noise.NoiseFloor("box (Test CPU)", (3, 2, 1), {key: (0.05, 3)})
    assert floor.limits(0.05) == {} and floor.limits(0.049) == {key: 0.05}
    assert floor.describe(0.05) == ("noise floor (--history): 3 earlier run(s) of box (Test CPU)"
                                    " in the history, 1 case(s) timed in at least 3 of them; "
                                    "none spreads beyond the limit 5.0%")
    assert floor.describe(0.02).endswith("; 1 case(s) spread beyond the limit 2.0% and are held "
                                         "to their own spread instead (largest 5.0%)")


def test_the_spread_takes_every_positive_median_even_below_one() -> None:
    assert noise.spread([0.5, 0.5, 0.5]) == 0.0
    assert noise.spread([0.25, 0.5, 1.0]) == pytest.approx(math.exp(2 * math.log(2)) - 1)


def test_from_results_skips_frames_without_times_and_reads_the_rest(tmp_path: Path) -> None:
    """A frame with no rows, or none of time_median_ns (an untimed run),
    is skipped, not the end of the list; an `emulated` left empty counts as
    not emulated."""
    runs = [write_run(tmp_path / f"r{i}", passes("k", [1e6 * f] * 3, 30 + i))
            for i, f in enumerate((1.0, 1.1, 0.9))]
    frames = [r.results.copy() for r in runs]
    frames[1]["emulated"] = None  # not recorded: not emulated
    import pandas as pd
    untimed = frames[0].drop(columns=["time_median_ns"])
    got = noise.from_results([pd.DataFrame(), untimed, *frames])
    ((key, (s, n)),) = got.items()
    assert key[4] == "k" and n == 3
    assert s == pytest.approx(noise.spread([1e6, 1.1e6, 0.9e6]), rel=0.05)


def test_from_history_looks_past_runs_it_cannot_use(tmp_path: Path) -> None:
    """The newest 55 runs of this machine are emulated: the floor still finds
    the three complete ones before them (the history is read whole, not its
    newest 50 rows)."""
    db = tmp_path / "history.sqlite"
    for i, f in enumerate((1.0, 1.2, 0.8)):
        append_run(db, write_run(tmp_path / f"ok{i}", passes("k", [1e6 * f] * 3, 50 + i),
                                 date=f"2025-01-0{i + 1}T00:00:00+00:00"))
    for i in range(55):
        append_run(db, write_run(tmp_path / f"emu{i}", passes("k", [9e6] * 3, 60 + i,
                                                              emulated=True),
                                 date=f"2025-02-{1 + i % 28:02d}T{i // 28:02d}:00:00+00:00"))
    floor = noise.from_history(db, "box", "Test CPU", 5)
    assert len(floor.run_ids) == 3
    ((_, (s, n)),) = floor.spreads.items()
    assert n == 3 and s > 0.3


def test_runs_of_an_unnamed_host_and_cpu_match_an_unnamed_machine(monkeypatch) -> None:
    """A history row whose host or CPU model is NULL (not recorded) belongs to
    a machine whose name and CPU model are unknown ("")."""
    import pandas as pd

    listing = pd.DataFrame({"id": [3, 2, 1], "host": [None, None, "other"],
                            "cpu_model": [None, None, None], "complete": [True, True, True],
                            "emulated": [False, False, False],
                            "date": ["2026-01-03", "2026-01-02", "2026-01-01"]})
    monkeypatch.setattr(noise, "query_runs", lambda db, machine=None, limit=None: listing)
    monkeypatch.setattr(noise, "run_results", lambda db, i: pd.DataFrame())
    floor = noise.from_history("h.sqlite", "", "", runs=noise.MIN_RUNS)
    assert floor.run_ids == (3, 2)
