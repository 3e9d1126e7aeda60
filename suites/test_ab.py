"""The interleaved A/B protocol (`kbench ab`): its statistics on synthetic
samples (no timing), and its mechanics — rounds alternate with a recorded
order, both sides pinned to one CPU, machine state and per-case CV in the
run folder — without asserting any speed."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.harness import ab
from kbench.results import abstats
from kbench.results.machine import busy, cpu_idle_ticks, describe, machine_state, quietest_cpu
from kbench.targets import crossbuild
from kbench.targets.spec import parse_target


def _noisy(n: int, scale: float, seed: int, spread: float = 0.01,
           bursts: float = 0.0) -> list[float]:
    """Per-round times around `scale`, log-normal noise, occasional bursts."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        t = scale * math.exp(rng.gauss(0, spread))
        if bursts and rng.random() < bursts:
            t *= 1 + rng.uniform(0.2, 2.0)  # a round hit by background load
        out.append(t)
    return out


def test_median_ci_ranks_are_the_sign_test_interval() -> None:
    # n = 20 at 95%: the classic ranks 6 and 15
    assert abstats.median_ci_ranks(20, 0.95) == (6, 15)
    assert abstats.median_ci_ranks(5, 0.99) is None
    n = abstats.min_rounds(0.99)
    assert abstats.median_ci_ranks(n, 0.99) is not None
    assert abstats.median_ci_ranks(n - 1, 0.99) is None
    lo, hi = abstats.median_ci_ranks(30, 0.999)
    assert 2 * abstats.binom_cdf_half(lo - 1, 30) <= 0.001 < 2 * abstats.binom_cdf_half(lo, 30)
    assert hi == 31 - lo


def test_identical_builds_are_same() -> None:
    base = _noisy(30, 1000.0, 1)
    cand = _noisy(30, 1000.0, 2)
    s = abstats.paired(base, cand, min_effect=0.025, alpha=0.01, comparisons=16)
    assert s.verdict == abstats.SAME, s
    assert s.ci_low < 1 < s.ci_high


def test_slowdowns_of_5_and_10_percent_are_slower() -> None:
    for f in (0.05, 0.10):
        base = _noisy(30, 1000.0, 3)
        cand = [t * (1 + f) for t in _noisy(30, 1000.0, 4)]
        s = abstats.paired(base, cand, 0.025, 0.01, 16)
        assert s.verdict == abstats.SLOWER, (f, s)
        assert s.ci_low > 1.025 and abs(s.median_ratio - (1 + f)) < 0.02


def test_load_that_hits_both_sides_of_a_pair_cancels() -> None:
    """Bursts of load shared by the two rounds of a pair (interleaving) leave
    the paired ratio at 1, though each side's CV is large."""
    rng = random.Random(5)
    base, cand = [], []
    for _ in range(30):
        load = 1 + (rng.uniform(0.5, 3.0) if rng.random() < 0.3 else 0)
        base.append(1000 * load * math.exp(rng.gauss(0, 0.005)))
        cand.append(1000 * load * math.exp(rng.gauss(0, 0.005)))
    s = abstats.paired(base, cand, 0.025, 0.01, 16)
    assert s.base_cv > 0.2 and s.cand_cv > 0.2
    assert s.verdict == abstats.SAME


def test_noise_on_one_side_is_noisy_not_a_regression() -> None:
    """Load that hits single rounds (not pairs) widens the interval: the
    case is reported noisy, never slower."""
    base = _noisy(30, 1000.0, 6, spread=0.01)
    cand = _noisy(30, 1000.0, 7, spread=0.01, bursts=0.45)
    s = abstats.paired(base, cand, 0.025, 0.01, 16)
    assert s.verdict == abstats.INCONCLUSIVE, s
    assert s.cand_cv > 0.2


def test_minima_must_agree_with_the_medians() -> None:
    base = [1000.0] * 15 + [1100.0] * 15
    cand = [1100.0] * 15 + [1300.0] * 15  # medians +18%, one fast candidate round
    cand[0] = 990.0
    s = abstats.paired(base, cand, 0.025, 0.01, 1)
    assert s.ci_low > 1.025 and s.min_ratio < 1.0125
    assert s.verdict == abstats.INCONCLUSIVE


def test_too_few_rounds_and_bad_input() -> None:
    s = abstats.paired([1.0] * 4, [1.2] * 4, 0.025, 0.01, 16)
    assert s.verdict == abstats.INCONCLUSIVE
    with pytest.raises(ValueError):
        abstats.paired([1.0], [1.0, 2.0])
    assert math.isnan(abstats.cv([1.0]))
    assert abstats.cv([1.0, 3.0]) == pytest.approx(math.sqrt(2) / 2)


def test_interleave_alternates_sides_and_records_the_order() -> None:
    calls: list[str] = []

    def side(name: str):
        def run() -> float:
            calls.append(name)
            return float(len(calls))
        return run
    b, c, order = ab.interleave(side("b"), side("c"), 40, random.Random(0))
    assert len(b) == len(c) == 40 and len(order) == 40
    pairs = [calls[2 * i:2 * i + 2] for i in range(40)]
    assert all(sorted(p) == ["b", "c"] for p in pairs)  # one round of each per pair
    assert "".join(p[0] for p in pairs) == order  # the order string says who went first
    assert 10 < order.count("b") < 30  # both orders occur
    # base[i] and cand[i] come from the same pair
    for i, p in enumerate(pairs):
        first = float(2 * i + 1)
        assert (b[i], c[i]) == ((first, first + 1) if p[0] == "b" else (first + 1, first))


def _stages(rounds: int, ratios: list[float]) -> tuple:
    """Stage callables for ab.sequential: stage i pairs 1 us with ratios[i]
    (the last ratio repeats), noise drawn per round; and the decide rule at
    the run's alpha over 28 cases x 6 looks."""
    state = {"i": 0}

    def stage() -> tuple[list[float], list[float], str]:
        i = min(state["i"], len(ratios) - 1)
        state["i"] += 1
        base = _noisy(rounds, 1000.0, seed=10 + state["i"], spread=0.002)
        cand = _noisy(rounds, 1000.0 * ratios[i], seed=50 + state["i"], spread=0.002)
        return base, cand, "b" * rounds

    settings = ab.AbSettings(rounds=rounds, looks=6, cases=28, budget_s=60, min_effect=0.025)
    def decide(b: list[float], c: list[float]) -> str:
        return abstats.paired(b, c, settings.min_effect, settings.alpha,
                              settings.comparisons).verdict
    return stage, decide, state


def test_sequential_sampling_stops_a_case_once_it_is_decided() -> None:
    # a clear 10% slowdown: decided at the first look
    stage, decide, state = _stages(20, [1.10])
    b, c, order, looks = ab.sequential(stage, decide, 6)
    assert looks == 1 and len(b) == len(c) == len(order) == 20 and decide(b, c) == "slower"
    # too few rounds at alpha / (28 x 6) for the first look: it goes on to a second
    stage, decide, state = _stages(10, [1.10])
    assert decide(*stage()[:2]) == abstats.INCONCLUSIVE
    stage, decide, state = _stages(10, [1.10])
    b, c, _, looks = ab.sequential(stage, decide, 6)
    assert looks == 2 and len(b) == 20 and decide(b, c) == "slower"


def test_sequential_sampling_stops_at_the_looks_or_the_deadline() -> None:
    # a 2.5% move sits on the limit: never decided, so every look is taken
    stage, decide, state = _stages(20, [1.025])
    b, _, _, looks = ab.sequential(stage, decide, 4)
    assert looks == 4 and len(b) == 80 and decide(b, b) == "same"
    # the deadline passes after the second stage: no third one
    ticks = iter([1.0, 10.0, 20.0])
    stage, decide, state = _stages(20, [1.025])
    b, _, _, looks = ab.sequential(stage, decide, 6, deadline=5.0, clock=lambda: next(ticks))
    assert looks == 2 and state["i"] == 2
    # the judged confidence covers every look of every case
    s = ab.AbSettings(looks=6, cases=28)
    assert s.comparisons == 168 and ab.AbSettings().comparisons == 1


def test_a_gate_limit_keeps_a_case_sampling_until_it_is_decided_there_too() -> None:
    """An 8% slowdown is decided at --min-effect 2.5% after one stage of 60
    rounds, while its interval still reaches below the gate's 5%: with
    --gate-limit 5% the look says "inconclusive" (sampling goes on) until the
    interval clears 5% too; the verdict itself stays at --min-effect. Same
    cases and a clear slowdown stop as before."""
    plain = ab.AbSettings(rounds=60, looks=6, cases=28, budget_s=60, min_effect=0.025)
    gated = ab.AbSettings(rounds=60, looks=6, cases=28, budget_s=60, gate_limits=(0.05,),
                          min_effect=0.025)
    base, cand = _noisy(60, 1000.0, seed=0, spread=0.03), _noisy(60, 1080.0, seed=100,
                                                                   spread=0.03)
    at_gate = abstats.paired(base, cand, 0.05, 0.01, gated.comparisons)
    assert at_gate.ci_low < 1.05 < at_gate.ci_high  # undecided at the gate's limit
    assert ab.decision(base, cand, plain, []) == "slower"
    assert ab.decision(base, cand, gated, []) == "inconclusive"
    more_b, more_c = _noisy(120, 1000.0, seed=0, spread=0.03), _noisy(120, 1080.0, seed=100,
                                                                       spread=0.03)
    assert abstats.paired(more_b, more_c, 0.05, 0.01, gated.comparisons).ci_low > 1.05
    assert ab.decision(more_b, more_c, gated, []) == "slower"
    same_b, same_c = _noisy(60, 1000.0, seed=3, spread=0.01), _noisy(60, 1000.0, seed=4,
                                                                      spread=0.01)
    assert ab.decision(same_b, same_c, plain, []) == ab.decision(same_b, same_c, gated,
                                                                 []) == "same"
    # through the sequential loop: one stage without the gate limit, two with it
    def stages(seed: int):
        k = {"i": 0}
        def stage() -> tuple[list[float], list[float], str]:
            k["i"] += 1
            return (_noisy(60, 1000.0, seed=seed + k["i"], spread=0.03),
                    _noisy(60, 1080.0, seed=seed + 100 + k["i"], spread=0.03), "b" * 60)
        return stage
    _, _, _, looks_plain = ab.sequential(stages(-1), lambda b, c: ab.decision(b, c, plain, []),
                                         6)
    b, c, _, looks_gated = ab.sequential(stages(-1), lambda b, c: ab.decision(b, c, gated, []),
                                         6)
    assert looks_plain == 1 and looks_gated == 2
    assert abstats.paired(b, c, 0.05, 0.01, gated.comparisons).verdict == "slower"


def test_machine_state_and_quietest_cpu(tmp_path: Path) -> None:
    cpu0 = tmp_path / "cpu0" / "cpufreq"
    cpu0.mkdir(parents=True)
    (cpu0 / "scaling_governor").write_text("performance\n")
    (cpu0 / "scaling_cur_freq").write_text("2400000\n")
    (tmp_path / "cpu1").mkdir()
    st = machine_state(tmp_path)
    assert st["governor"] == ["performance"] and st["governors"] == {"cpu0": "performance"}
    assert st["cur_freq_khz"] == {"cpu0": 2400000}
    assert "governor performance" in describe(st)
    assert machine_state(tmp_path / "none")["governor"] == "unreadable"
    assert busy({"load_avg": [3.0], "cpus": 2}) and not busy({"load_avg": [0.5], "cpus": 2})
    assert quietest_cpu({0: 100, 1: 100}, {0: 110, 1: 150}) == 1
    assert quietest_cpu({0: 100, 1: 100}, {0: 110, 1: 150}, allowed={0}) == 0
    ticks = cpu_idle_ticks()
    assert not ticks or all(v >= 0 for v in ticks.values())


@pytest.fixture(scope="module")
def worker_path() -> str:
    if not os.path.exists("/proc/stat"):
        pytest.skip("needs Linux")
    return str(crossbuild.build("host"))


def test_pin_together_puts_both_workers_on_one_cpu(worker_path: str) -> None:
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this OS")
    a, b = parse_target(f"worker:{worker_path}"), parse_target("worker:host")
    try:
        a.info()
        b.info()
        cpu = ab.pin_together([a, b])
        assert cpu in os.sched_getaffinity(0)
        for t in (a, b):
            assert os.sched_getaffinity(ab.process_id(t)) == {cpu}
    finally:
        a.close()
        b.close()


def test_restart_gives_each_worker_target_a_new_process(worker_path: str) -> None:
    a, b = parse_target(f"worker:{worker_path}"), parse_target("worker:host")
    try:
        a.info()
        b.info()
        before = {ab.process_id(a), ab.process_id(b)}
        assert ab.restart([a, b]) is True
        after = {ab.process_id(a), ab.process_id(b)}
        assert None not in after and not before & after
        a.info()  # the new processes answer
    finally:
        a.close()
        b.close()
    host = parse_target("host")
    assert ab.restart([host]) is False  # in-process: cannot be restarted


def test_kbench_ab_run_folder(tmp_path: Path, worker_path: str) -> None:
    """Mechanics end to end on two smoke cases: verdicts, paired rounds and
    their order, machine state and CV recorded (no speed asserted)."""
    out = tmp_path / "ab"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    res = subprocess.run([sys.executable, "-m", "kbench.cli", "ab", "--base",
                          f"worker:{worker_path}", "--cand", "worker:host", "--shapes", "smoke",
                          "-k", "m7_n8_k15|smoke_k3x3_p1_n1h9w9",
                          "--realization", "gemm_scalar_f32acc",
                          "--realization", "conv2d_direct_scalar_f32acc", "--rounds", "14",
                          "--min-round-ms", "0.2", "--out", str(out)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    meta = json.loads((out / "run.json").read_text())
    assert meta["kind"] == "ab" and meta["complete"] is True
    state = meta["machine_state"]
    assert state["start"]["load_avg"] and "governor" in state["end"]
    assert "pinned_cpu" in meta
    assert meta["cases"] and all({"base_cv", "cand_cv", "verdict"} <= set(c)
                                 for c in meta["cases"])
    import csv
    with (out / "ab.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows, res.stdout
    for r in rows:
        assert r["base_ran"] == r["cand_ran"] == r["realization"]
        base = [float(x) for x in r["base_round_times_ns"].split()]
        cand = [float(x) for x in r["cand_round_times_ns"].split()]
        assert len(base) == len(cand) == 14 == len(r["order"]) == int(r["rounds"])
        assert r["looks"] == "1"  # no --budget: one stage
        assert r["blocks"] == "5 5 4"  # --processes 3 (default): 14 rounds in three blocks
        assert set(r["order"]) <= {"b", "c"}
        assert float(r["base_cv"]) == pytest.approx(abstats.cv(base), rel=1e-4)
        assert r["verdict"] in ("same", "slower", "faster", "not slower", "inconclusive")
    md = (out / "ab.md").read_text()
    assert md.startswith("## kbench ab: ") and "load" in md and "CV base / cand" in md


def test_kbench_ab_with_a_budget_samples_in_stages(tmp_path: Path, worker_path: str) -> None:
    """--budget: each case takes whole stages of --rounds pairs, at most
    --max-looks of them, and the run records how many (no speed asserted)."""
    out = tmp_path / "ab"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    res = subprocess.run([sys.executable, "-m", "kbench.cli", "ab", "--base",
                          f"worker:{worker_path}", "--cand", "worker:host", "--shapes", "smoke",
                          "-k", "m7_n8_k15", "--realization", "gemm_scalar_f32acc",
                          "--rounds", "12", "--min-round-ms", "0.2", "--budget", "30",
                          "--min-effect", "2.5%",
                          "--max-looks", "3", "--gate-limit", "5%", "--out", str(out)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode in (0, 1), res.stdout + res.stderr
    assert ("stages of 12 interleaved rounds until decided at ±2.5% and at ±5.0% (at most 3, "
            "30 s in all)") in res.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["settings"]["looks"] == 3 and meta["settings"]["budget_s"] == 30
    assert meta["settings"]["gate_limits"] == [0.05]
    import csv
    with (out / "ab.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows
    for r in rows:
        looks = int(r["looks"])
        assert 1 <= looks <= 3 and int(r["rounds"]) == 12 * looks == len(r["order"])
        # judged at alpha over every look of every case
        assert float(r["confidence"]) == pytest.approx(1 - 0.01 / (len(rows) * 3))


def test_ab_refuses_emulated_targets_and_empty_selections(worker_path: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    res = subprocess.run([sys.executable, "-m", "kbench.cli", "ab", "--base",
                          f"worker:{worker_path}", "--shapes", "smoke", "--gate-limit", "5%"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 2 and "--gate-limit needs --budget" in res.stderr
    res = subprocess.run([sys.executable, "-m", "kbench.cli", "ab", "--base",
                          f"worker:{worker_path}", "--shapes", "smoke", "-k", "nothing_matches"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 2 and "select no case" in res.stderr
