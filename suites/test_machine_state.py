"""The machine state recorded around a timing run (run.json's
machine_state) and what it decides: the one-line description shown with
timings, when the machine counts as busy (strictly above the share), the
idle ticks per CPU read from /proc/stat (idle + iowait) and the quietest CPU
the A/B workers are pinned to (ties to the lowest number)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbench.results.machine import busy, cpu_idle_ticks, describe, machine_state, quietest_cpu


def test_the_state_holds_the_load_and_cpu_count(tmp_path: Path) -> None:
    st = machine_state(tmp_path)
    assert st["cpus"] == os.cpu_count()
    assert len(st["load_avg"]) == 3 and all(x >= 0 for x in st["load_avg"])
    assert st["governor"] == "unreadable" and st["governors"] == {} and st["cur_freq_khz"] == {}


def test_the_description_is_one_line_of_load_cpus_and_governor() -> None:
    st = {"load_avg": [1.0, 0.456, 2.5], "cpus": 8, "governor": ["ondemand", "performance"]}
    assert describe(st) == ("load 1.00/0.46/2.50 (1/5/15 min) on 8 CPUs, "
                            "governor ondemand, performance")
    assert describe({"load_avg": [], "cpus": 2, "governor": "unreadable"}) == \
        "load unknown (1/5/15 min) on 2 CPUs, governor unreadable"
    assert describe({"cpus": 2, "governor": "unreadable"}).startswith("load unknown ")


@pytest.mark.parametrize(("state", "share", "is_busy"), [
    ({"load_avg": [1.0], "cpus": 2}, 0.5, False),  # exactly the share: not above it
    ({"load_avg": [1.01], "cpus": 2}, 0.5, True),
    ({"load_avg": [1.5], "cpus": 2}, 0.75, False),
    ({"load_avg": [1.6], "cpus": 2}, 0.75, True),
    ({"load_avg": [0.6, 9.0], "cpus": 1}, 0.5, True),  # the 1-minute load decides
    ({"load_avg": [0.4, 9.0], "cpus": 1}, 0.5, False),
    ({"load_avg": [], "cpus": 2}, 0.5, False),
    ({"load_avg": [0.9], "cpus": 0}, 0.5, False),  # CPUs unknown: never called busy
    ({"load_avg": [0.9]}, 0.5, False),
])
def test_busy_means_strictly_above_the_share_of_the_cpus(state: dict, share: float,
                                                          is_busy: bool) -> None:
    assert busy(state, share) is is_busy


def test_idle_ticks_are_idle_plus_iowait_per_cpu(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3 400 50 6 7 8 9 10\n"
                    "cpu0 10 20 30 100 7 1 2 3 0 0\n"
                    "cpu1 10 20 30 300 11 1 2 3 0 0\n"
                    "intr 12345 1 2\nctxt 999\ncpufreq 1 2 3 4 5 6\n")
    assert cpu_idle_ticks(stat) == {0: 107, 1: 311}
    assert cpu_idle_ticks(tmp_path / "missing") == {}


def test_the_quietest_cpu_gained_the_most_idle_ticks() -> None:
    assert quietest_cpu({0: 100, 1: 100, 2: 100}, {0: 150, 1: 120, 2: 130}) == 0
    assert quietest_cpu({0: 100, 1: 100}, {0: 150, 1: 150}) == 0  # a tie: the lowest
    assert quietest_cpu({2: 100, 1: 100}, {2: 150, 1: 150}) == 1
    # a CPU missing from the first sample gained nothing
    assert quietest_cpu({0: 100}, {0: 101, 1: 10_000}) == 0
    assert quietest_cpu({0: 100, 1: 100}, {0: 150, 1: 120}, allowed={1}) == 1
    assert quietest_cpu({}, {}) is None and quietest_cpu({0: 1}, {0: 2}, allowed=set()) is None


def test_an_unreadable_load_or_cpu_count_is_recorded_as_unknown(tmp_path: Path,
                                                                 monkeypatch) -> None:
    def no_load() -> tuple[float, float, float]:
        raise OSError("no load average here")
    monkeypatch.setattr(os, "getloadavg", no_load)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    st = machine_state(tmp_path)
    assert st["load_avg"] == [] and st["cpus"] == 0
    assert describe(st) == "load unknown (1/5/15 min) on 0 CPUs, governor unreadable"
    assert busy(st) is False
