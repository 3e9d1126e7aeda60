"""The everyday workflow: no silent green (typo'd realization, absent
backend, empty selection), every skip says why, the case filter (`-k`),
a reproducer for every failed verdict, pass numbers and ETAs in progress
lines, help on every option, and tune classes that keep apart what decides
applicability (dilation, groups) with readable bounds."""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pytest

from kbench.harness.progress import ProgressCounter
from kbench.harness.selection import CaseFilter, filter_errors, reproducer
from kbench.harness.tune import ShapeResult, build_table, class_matches, conv_class, gemm_class
from kbench.judge.verdict import PASS, Verdict
from kbench.native import api
from kbench.native.calls import TargetInfo
from kbench.problems.cases import ConvCase, GemmCase
from kbench.results.store import RunWriter

REPO = Path(__file__).resolve().parents[1]


def kbench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=600)


def _info(name: str, reals: list[tuple[str, str]]) -> TargetInfo:
    rs = [api.Realization(name=n, backend=b, kernel="k", op="gemm", isa="scalar", accum="fp32",
                          k_per_rounding=1, bforms=("plain",), vector_bits=0, threads=1)
          for n, b in reals]
    return TargetInfo(name=name, kind="in-process", emulated=False, arch="x", cpu_features=[],
                      sme_vector_bits=0, isa="scalar", library_version="0", realizations=rs)


# ---- no silent green ---------------------------------------------------------------------

def test_filter_errors_name_what_exists() -> None:
    infos = {"host": _info("host", [("gemm_scalar_f32acc", "scalar")]),
             "qemu": _info("qemu", [("gemm_neon_f16acc", "neon")])}
    assert filter_errors(infos, ["neon", "scalar"], ["gemm_neon_f16acc"]) == []
    errs = filter_errors(infos, ["sme"], ["gemm_scalr_f32acc"])
    assert len(errs) == 2
    assert "--backend sme" in errs[0]
    assert "host has scalar" in errs[0] and "qemu has neon" in errs[0]
    assert "--realization gemm_scalr_f32acc" in errs[1]
    assert "did you mean gemm_scalar_f32acc" in errs[1]


def test_typo_realization_is_a_usage_error(tmp_path: Path) -> None:
    res = kbench("run", "--realization", "gemm_nosuch_typo", "--no-history", "--out",
                 str(tmp_path / "r"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert "--realization gemm_nosuch_typo" in res.stderr
    assert "gemm_scalar_f32acc" in res.stderr  # names what exists
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("option, typo, hint", [
    ("--backend", "neno", "did you mean 'neon'?"),
    ("--shapes", "smok", "did you mean 'smoke'?"),
    ("--target", "qemy:svl=512", "did you mean 'qemu:svl=512'?"),
    ("--target", "hots", "did you mean 'host'?"),
])
def test_a_typo_gets_a_did_you_mean(tmp_path: Path, option: str, typo: str, hint: str) -> None:
    res = kbench("run", option, typo, "--no-history", "--out", str(tmp_path / "r"))
    assert res.returncode == 2, res.stdout + res.stderr
    (line,) = [x for x in res.stderr.splitlines() if x.startswith("Error:")]
    assert hint in line and typo in line
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("args", [("history", "--bogus"), ("compare", "/nonexistent/a", "b"),
                                  ("gate", "nope", "latest~x"),
                                  ("report", "/nonexistent/run")])
def test_bad_input_to_the_history_commands_loads_no_pandas(args: tuple[str, ...]) -> None:
    """Bad input is answered before pandas, scipy or matplotlib load (so at
    once): measured by what was imported, not by a clock."""
    code = ("import sys\nfrom kbench.cli.main import main\n"
            "try:\n    main(standalone_mode=True)\nexcept SystemExit as e:\n"
            "    heavy = sorted(m for m in ('pandas', 'scipy', 'matplotlib') if m in sys.modules)\n"
            "    sys.stderr.write('loaded:' + ','.join(heavy) + '\\n')\n    raise\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    res = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env, timeout=120)
    assert res.returncode in (1, 2), res.stdout + res.stderr
    assert "Error:" in res.stderr
    assert "loaded:\n" in res.stderr, res.stderr


def test_backend_the_target_lacks_is_a_usage_error(tmp_path: Path) -> None:
    have = {r.backend for r in api.realizations()}
    absent = [b for b in api.BACKENDS if b not in have]
    if not absent:
        pytest.skip("this CPU has every backend; filter_errors is tested on synthetic targets")
    res = kbench("run", "--suite", "correctness", "--backend", absent[0], "--no-history",
                 "--out", str(tmp_path / "r"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"--backend {absent[0]}: no chosen target offers it" in res.stderr
    assert "host has" in res.stderr and "scalar" in res.stderr


def test_empty_selection_exits_non_zero_with_a_message(tmp_path: Path) -> None:
    out = tmp_path / "r"
    res = kbench("run", "--shapes", "smoke", "-k", "no_case_is_called_this", "--no-history",
                 "--out", str(out))
    assert res.returncode == 5, res.stdout + res.stderr
    assert "selected no case" in res.stderr
    assert "no gemm case selected by" in res.stdout and "-k 'no_case_is_called_this'" in res.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] is False and "no case selected" in meta["empty_selection"]


def test_bad_case_regex_is_a_usage_error() -> None:
    res = kbench("run", "--shapes", "smoke", "-k", "(unclosed", "--no-history")
    assert res.returncode == 2 and "not a regular expression" in res.stderr


def test_every_skip_says_why() -> None:
    """The dispatch-table suite without a table, and a catalog without conv cases:
    each skip carries a reason (pytest's own empty parameter set gives none)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                          str(REPO / "suites" / "test_dispatch_table.py"),
                          str(REPO / "suites" / "test_correctness.py"),
                          "--kb-shapes", "smoke", "--kb-case", "m1_n17_k33"],
                         capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    skipped = [line for line in res.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 2, res.stdout
    assert any("no dispatch table given" in line for line in skipped)
    assert any("no conv2d case selected by" in line and "m1_n17_k33" in line
               for line in skipped)
    assert "NOTSET" not in res.stdout


# ---- case filter and reproducers ---------------------------------------------------------

def test_case_filter_is_a_regex_on_catalog_and_case() -> None:
    f = CaseFilter("^smoke/m1_")
    assert f.matches("smoke", "m1_n17_k33") and not f.matches("edge", "m1_n17_k33")
    assert CaseFilter("k33$").matches("smoke", "m1_n17_k33")
    with pytest.raises(ValueError, match="not a regular expression"):
        CaseFilter("[")


def _verdict(**kw: object) -> Verdict:
    base: dict[str, object] = dict(
        case="m7_n8_k15_nobias", op="gemm", shape="m7n8k15", kind="uniform", target="host",
        backend="scalar", realization="gemm_scalar_f32acc", kernel="k", accum="fp32", k=15,
        m=7, n=8, b_form="plain", vector_bits=0, status="fail", catalog="smoke",
        message="3 element(s) outside the bound")
    base.update(kw)
    return Verdict(**base)  # type: ignore[arg-type]


def test_reproducer_names_suite_target_realization_case_and_kind() -> None:
    cmd = shlex.split(reproducer(_verdict()))
    assert cmd[:2] == ["kbench", "run"]
    opts = dict(zip(cmd[2::2], cmd[3::2], strict=True))
    assert opts == {"--suite": "correctness", "--target": "host",
                    "--realization": "gemm_scalar_f32acc", "--shapes": "smoke",
                    "-k": "/m7_n8_k15_nobias$", "--kinds": "uniform"}
    perf = shlex.split(reproducer(_verdict(suite="perf", threads=4)))
    assert perf[3] == "perf" and "--kinds" not in perf and perf[-2:] == ["--threads", "4"]


def test_reproducer_reruns_exactly_that_verdict(tmp_path: Path) -> None:
    v = _verdict(status=PASS)
    cmd = shlex.split(reproducer(v))
    out = tmp_path / "r"
    res = kbench(*cmd[1:], "--no-history", "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    with (out / "results.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["suite"] == "correctness"]
    assert [(r["case"], r["kind"], r["realization"], r["target"]) for r in rows] == [
        (v.case, v.kind, v.realization, v.target)]


def test_failures_csv_and_verdict_lines_carry_the_reproducer(tmp_path: Path) -> None:
    w = RunWriter(tmp_path, {"kind": "test"})
    ok, bad = _verdict(status=PASS), _verdict()
    w.add(ok)
    w.add(bad)
    w.add_failure(bad, reproducer(bad))
    w.close(complete=True)
    lines = (tmp_path / "verdicts.txt").read_text().splitlines()
    assert lines[1].startswith("FAIL") and lines[2].strip() == f"reproduce: {reproducer(bad)}"
    with (tmp_path / "failures.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 1 and rows[0]["case"] == bad.case
    assert rows[0]["reproduce"] == reproducer(bad)


# ---- progress ----------------------------------------------------------------------------

def test_progress_counter_prints_tenths_with_eta() -> None:
    p = ProgressCounter(total=40)
    lines = [p.tick(elapsed_s=float(i + 1), failed=(i == 5)) for i in range(40)]
    shown = [line for line in lines if line]
    assert len(shown) == 10
    assert shown[0] == "[4/40 cases 10%; elapsed 0:00:04 ETA 0:00:36]"
    assert shown[1].startswith("[8/40 cases 20%, 1 failed;")
    # done: no ETA, what still runs instead
    assert shown[-1] == ("[40/40 cases 100%, 1 failed; elapsed 0:00:40; cases done; finishing "
                         "the run folder]")


def test_progress_after_the_last_case_names_the_other_tests_still_running() -> None:
    """Contract tests after the cases: the line at 100% of the cases names
    them instead of an ETA, and says when they are done too."""
    from kbench.harness.progress import features
    work = {f"c{i}": ("host", features(8, 8, 8)) for i in range(20)}
    others = {f"suites/test_contracts.py::t{i}": ("other:suites/test_contracts.py",
                                                   (1.0, 0.0, 0.0, 0.0)) for i in range(3)}
    others["suites/test_determinism.py::d"] = ("other:suites/test_determinism.py",
                                               (1.0, 0.0, 0.0, 0.0))
    p = ProgressCounter(total=20, work={**work, **others})
    lines = [p.tick(0.1 * (i + 1), test_id=t, seconds=0.1) for i, t in enumerate(work)]
    assert lines[-1] == ("[20/20 cases 100%; elapsed 0:00:02; cases done; still running 4 other "
                         "test(s): test_contracts.py, test_determinism.py]")
    assert "ETA" not in lines[-1]
    for t in others:
        p.observe(t, 0.1)
    assert p.still_running() == "cases done; finishing the run folder"


def _default_catalog_work(target: str) -> list[tuple[str, str, tuple, float]]:
    """(test id, target, cost features, flops) in the order a run of the
    default catalogs with every realization's tails runs them, as the
    session derives them (host realizations, named as on `target`)."""
    from kbench.harness.pytest_plugin import KbSession, job_features
    kb = KbSession(["host"], [], [], [], None, None)
    try:
        jobs = kb.jobs("gemm") + kb.jobs("conv2d")
    finally:
        kb.close_targets()
    return [(j.id.replace("host", target, 1), target, job_features(j), float(j.case.flops))
            for j in jobs]


def _simulate(work: list[tuple[str, str, tuple, float]], seconds: list[float],
              workers: int = 1) -> list[tuple[float, float, float]]:
    """Runs the tests on a fake clock: (fraction done, ETA printed, real time
    left) at every progress line."""
    p = ProgressCounter(total=len(work), work={i: (t, x) for i, t, x, _ in work})
    total = sum(seconds) / workers
    elapsed, out = 0.0, []
    for (test_id, *_), d in zip(work, seconds, strict=True):
        elapsed += d / workers
        line = p.tick(elapsed, test_id=test_id, seconds=d)
        if line and p.done < p.total:
            out.append((p.done / p.total, p.left(elapsed), total - elapsed))
    return out


RECORDED = Path(__file__).parent / "data" / "case_seconds_qemu_svl512.csv.gz"


def _recorded_run() -> tuple[list[tuple[str, str, tuple, float]], list[float]]:
    """The case tests of one real run of the default catalogs on
    qemu:svl=512 (2026-12-02, a 2-core x86_64 VM: setup + call + teardown
    seconds of each, in run order), with their shapes."""
    import gzip

    from kbench.harness.progress import features
    work, seconds = [], []
    with gzip.open(RECORDED, "rt") as fh:
        for i, r in enumerate(csv.DictReader(fh)):
            m, n, k, b = (int(r[c]) for c in ("m", "n", "k", "batch"))
            work.append((f"t{i}", "qemu:svl=512", features(m, n, k, b), 2.0 * m * n * k * b))
            seconds.append(float(r["seconds"]))
    return work, seconds


def test_eta_holds_on_a_recorded_run_of_the_default_catalogs() -> None:
    """Replaying the recorded per-test seconds of a real `kbench run --target
    qemu:svl=512` (default catalogs, 13,814 case tests) on a fake clock: the
    ETA at every line from 20% of the run on is within 25% of the time that
    really remained. A fit on flops alone, or the average test so far, is
    not (they were the forecast before)."""
    work, seconds = _recorded_run()
    assert len(work) > 10_000
    checked = [(f, eta, real) for f, eta, real in _simulate(work, seconds) if f >= 0.2]
    assert len(checked) >= 7
    for f, eta, real in checked:
        assert abs(eta - real) <= 0.25 * real, f"at {f:.0%}: ETA {eta:.0f} s, real {real:.0f} s"
    flops_only = [(i, t, (1.0, fl, 0.0, 0.0), fl) for i, t, _, fl in work]
    worst = max(abs(eta - real) / real for f, eta, real in _simulate(flops_only, seconds)
                if f >= 0.2)
    assert worst > 0.5  # flops alone overshoot early (+124% at 20%)
    naive = ProgressCounter(total=len(work))
    elapsed, worst = 0.0, 0.0
    for i, d in enumerate(seconds[:-1]):
        elapsed += d
        if naive.tick(elapsed) and (i + 1) / len(work) >= 0.2:  # at each printed line
            real = sum(seconds) - elapsed
            worst = max(worst, abs(naive.left(elapsed) - real) / real)
    assert worst > 0.25


def _simulate_remembered(work: list[tuple[str, str, tuple, float]], seconds: list[float],
                         memory: dict[str, float]) -> list[tuple[float, float, float]]:
    p = ProgressCounter(total=len(work), work={i: (t, x) for i, t, x, _ in work},
                        memory=memory)
    elapsed, out, total = 0.0, [], sum(seconds)
    for (test_id, *_), d in zip(work, seconds, strict=True):
        elapsed += d
        if p.tick(elapsed, test_id=test_id, seconds=d) and p.done < p.total:
            out.append((p.done / p.total, p.left(elapsed), total - elapsed))
    return out


def test_a_repeated_run_is_forecast_from_each_tests_remembered_seconds(tmp_path: Path) -> None:
    """The recorded run again, on a machine 1.6 times slower, each test's time
    off by up to a factor ~2 (log-normal noise, sigma 0.3) from the seconds the
    last run left: forecast from those seconds, the ETA is within 10% at every
    line (10% on); tests never run before (a fifth here) go through the fit.
    Saved and loaded by test id through the costs file."""
    from kbench.harness.progress import load_memory, save_costs, test_key
    work, seconds = _recorded_run()
    rng = np.random.default_rng(11)
    now = [1.6 * d * e for d, e in zip(seconds, rng.lognormal(0.0, 0.3, len(seconds)),
                                       strict=True)]
    p = ProgressCounter(total=len(work), work={i: (t, x) for i, t, x, _ in work})
    for i, d in zip(work, seconds, strict=True):
        p.tick(1.0, test_id=i[0], seconds=d)
    path = tmp_path / "case_costs.json"
    save_costs(path, p.model, 1.0, seconds=p.seconds)
    memory = load_memory(path)
    assert len(memory) == len(work) and memory[test_key("t5")] == pytest.approx(seconds[5],
                                                                                 abs=1e-5)
    for f, eta, real in _simulate_remembered(work, now, memory):
        assert abs(eta - real) <= 0.10 * real, f"at {f:.0%}: ETA {eta:.0f} s, real {real:.0f} s"
    # a fifth of the tests new (every fifth one forgotten): still within 25% from 20% on
    partial = {k: v for j, (k, v) in enumerate(sorted(memory.items())) if j % 5}
    assert len(partial) < len(memory)
    for f, eta, real in _simulate_remembered(work, now, partial):
        if f >= 0.2:
            assert abs(eta - real) <= 0.25 * real, f"at {f:.0%}: {eta:.0f} vs {real:.0f}"
    # without the memory the same run is forecast worse (the fit alone)
    worst = max(abs(eta - real) / real for f, eta, real in _simulate(work, now) if f >= 0.1)
    assert worst > 0.10


def test_eta_from_the_cost_model_holds_on_the_default_catalogs() -> None:
    """The same on the default catalogs' order as this checkout derives it,
    with synthetic costs (a fixed cost, a cost per product, one per input
    and output element; +-30% noise)."""
    work = _default_catalog_work("qemu:svl=512")
    assert len(work) > 1000
    noise = np.random.default_rng(7).lognormal(0.0, 0.3, size=len(work))
    seconds = [(0.01 + 1e-8 * x[1] + 2e-7 * x[2] + 1e-7 * x[3]) * e
               for (_, _, x, _), e in zip(work, noise, strict=True)]
    for f, eta, real in _simulate(work, seconds):
        if f >= 0.2:
            assert abs(eta - real) <= 0.25 * real, f"at {f:.0%}: ETA {eta:.0f}, real {real:.0f}"


def test_eta_calibrates_each_target_and_parallel_workers() -> None:
    """Two targets, one 20 times slower per test, run side by side by two
    workers (as `kbench run --jobs` runs targets), the slow one's tests
    larger towards the end: each target's own fit and the wall time per
    modelled second keep the forecast within 25% from 20% on."""
    from kbench.harness.progress import features
    fast = [(f"t{i}", "host", features(8, 16 * (1 + i % 7), 64), 0.0) for i in range(600)]
    slow = [(f"s{i}", "qemu:svl=128", features(8, 16 * (1 + i % 5 + i // 100), 64), 0.0)
            for i in range(600)]
    work = [x for pair in zip(fast, slow, strict=True) for x in pair]
    seconds = [(0.01 + 1e-6 * x[1]) * (20 if t.startswith("qemu") else 1) for _, t, x, _ in work]
    for f, eta, real in _simulate(work, seconds, workers=2):
        if f >= 0.2:
            assert abs(eta - real) <= 0.25 * real, f"at {f:.0%}: {eta:.1f} vs {real:.1f}"


def test_remembered_case_costs_give_the_expected_duration(tmp_path: Path) -> None:
    """A complete run remembers each target's fit; the next run's expected
    duration is that fit over its own tests; a damaged file or a target
    never run gives no figure (never a failure)."""
    from kbench.harness.progress import expected_seconds, features, load_costs, save_costs
    work = {f"t{i}": ("qemu:svl=512", features(16 * (1 + i % 4), 16, 64 * (1 + i % 3)))
            for i in range(100)}
    p = ProgressCounter(total=len(work), work=work)
    elapsed = 0.0
    for test_id, (_, x) in work.items():
        d = 0.02 + 1e-8 * x[1] + 1e-6 * x[2]
        elapsed += d / 2  # two workers
        p.tick(elapsed, test_id=test_id, seconds=d)
    path = tmp_path / "kbench" / "case_costs.json"
    save_costs(path, p.model, p.scale(elapsed))
    costs = load_costs(path)
    assert costs["qemu:svl=512"]["coef"] == pytest.approx([0.02, 1e-8, 1e-6, 0.0], abs=1e-9)
    seconds, unknown = expected_seconds(work, costs)
    assert unknown == [] and seconds == pytest.approx(elapsed)
    # a run of the same target starts from the remembered fit, until its own 3 tests
    again = ProgressCounter(total=len(work), work=work, prior=costs)
    assert list(again.model.fit("qemu:svl=512")) == pytest.approx(costs["qemu:svl=512"]["coef"])
    assert again.model.modelled_left() == pytest.approx(sum(
        0.02 + 1e-8 * x[1] + 1e-6 * x[2] for _, x in work.values()), rel=1e-6)
    more = {**work, "x": ("host", features(1, 1, 1))}
    assert expected_seconds(more, costs) == (None, ["host"])
    # tests remembered one by one count with their own seconds (times the run's scale)
    from kbench.harness.progress import test_key
    memory = {test_key(t): 0.5 for t in list(work)[:10]}
    rest = sum(0.02 + 1e-8 * x[1] + 1e-6 * x[2] for _, x in list(work.values())[10:])
    seconds, _ = expected_seconds(work, costs, memory)
    assert seconds == pytest.approx((5.0 + rest) * costs["qemu:svl=512"]["scale"], rel=1e-6)
    # a group of other tests never timed is left out, not a reason for no figure
    other = {**work, "o": ("other:suites/test_contracts.py", (1.0, 0.0, 0.0, 0.0))}
    assert expected_seconds(other, costs)[0] == pytest.approx(elapsed)
    path.write_text("{not json")
    assert load_costs(path) == {}
    assert load_costs(tmp_path / "missing.json") == {}


def test_a_run_says_up_front_how_long_it_is_expected_to_take(tmp_path: Path) -> None:
    common = ["run", "--suite", "correctness", "--shapes", "smoke", "--backend", "scalar",
              "--db", str(tmp_path / "h.sqlite")]
    first = kbench(*common, "--out", str(tmp_path / "r1"))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "no expected duration yet for host" in first.stdout
    assert (tmp_path / "case_costs.json").is_file()
    second = kbench(*common, "--out", str(tmp_path / "r2"))
    assert second.returncode == 0, second.stdout + second.stderr
    (line,) = [x for x in second.stdout.splitlines() if "expected to take about" in x]
    assert re.fullmatch(r"kbench run: [0-9,]+ case tests, expected to take about "
                        r"\d+:\d\d:\d\d \(case costs of the last complete run of these "
                        r"targets here\)", line), line
    lines = second.stdout.splitlines()
    assert lines.index(line) < min(i for i, x in enumerate(lines) if " cases " in x)
    # each complete run remembers how long it took after its last test (the summary,
    # the results, the history), for the next one's ETA; the last test's end is used once
    data = json.loads((tmp_path / "case_costs.json").read_text())
    (key,) = data["tails"]
    assert key == "correctness|host|no-report" and 0 < data["tails"][key] < 60
    assert "last_test_end" not in data
    # and each test's own seconds, by hashed id, for the next forecast
    assert len(data["tests"]) >= 20
    assert all(re.fullmatch(r"[0-9a-f]{16}", k) and v >= 0 for k, v in data["tests"].items())


def test_the_time_after_the_last_test_is_remembered_and_forecast(tmp_path: Path) -> None:
    """The tail of the last complete run of a kind is added to every ETA of the
    next (the last line, all tests done, shows it alone); it is kept only when
    this run's last test wrote its end, and per kind of run."""
    from kbench.harness.progress import features, load_tail, save_costs, save_tail, tail_key
    work = {f"t{i}": ("host", features(8, 8, 8)) for i in range(40)}
    path = tmp_path / "case_costs.json"
    p = ProgressCounter(total=len(work), work=work)
    for i, test_id in enumerate(work):
        p.tick(0.1 * (i + 1), test_id=test_id, seconds=0.1)
    key = tail_key(["qemu:svl=512", "host"], "correctness", False)
    assert key == tail_key(("host", "qemu:svl=512"), "correctness", False)
    assert key != tail_key(["host", "qemu:svl=512"], "correctness", True)
    assert not save_tail(path, key, since=100.0, now=110.0)  # no file: nothing kept
    save_costs(path, p.model, p.scale(4.0), last_test_end=90.0)  # before this run began
    assert not save_tail(path, key, since=100.0, now=110.0) and load_tail(path, key) == 0.0
    save_costs(path, p.model, p.scale(4.0), last_test_end=104.5)
    assert save_tail(path, key, since=100.0, now=110.0)
    assert load_tail(path, key) == pytest.approx(5.5)
    assert not save_tail(path, key, since=100.0, now=120.0)  # used once
    assert load_tail(path, key) == pytest.approx(5.5)
    assert load_tail(path, tail_key(["host"], "correctness", False)) == 0.0
    # the forecast: the model's seconds left plus the tail, at every line
    with_tail = ProgressCounter(total=len(work), work=work, tail=load_tail(path, key))
    without = ProgressCounter(total=len(work), work=work)
    ids = list(work)
    for i, test_id in enumerate(ids):
        a = with_tail.tick(0.1 * (i + 1), test_id=test_id, seconds=0.1)
        b = without.tick(0.1 * (i + 1), test_id=test_id, seconds=0.1)
        if i + 1 < len(ids):
            assert with_tail.left(0.1 * (i + 1)) == pytest.approx(
                without.left(0.1 * (i + 1)) + 5.5)
    # the last line: the cases are done, no ETA (the tail is in the forecast before it)
    assert a is not None and a.endswith("cases done; finishing the run folder]")
    assert b is not None and "ETA" not in a + b


def test_correctness_run_shows_eta_and_perf_run_shows_pass(tmp_path: Path) -> None:
    res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "--backend", "scalar",
                 "--no-history", "--out", str(tmp_path / "c"))
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [line for line in res.stdout.splitlines() if line.startswith("[") and " cases " in line]
    eta = [line for line in lines if "ETA" in line]
    assert len(eta) >= 4 and all("100%" not in line for line in eta)
    # at 100% of the cases, no ETA: what still runs instead
    assert "100%" in lines[-1] and "ETA" not in lines[-1] and "cases done" in lines[-1]
    res = kbench("run", "--suite", "perf", "--shapes", "smoke", "-k", "m7_n8_k15",
                 "--realization", "gemm_scalar_f32acc", "--rounds", "4", "--passes", "2",
                 "--max-time", "0.01", "--no-history", "--out", str(tmp_path / "p"))
    assert res.returncode == 0, res.stdout + res.stderr
    progress = [line for line in res.stdout.splitlines() if "ETA" in line and "gemm_" in line]
    assert [p.split("]")[0].split()[-1] for p in progress] == ["1/2", "2/2"], progress
    assert "pass 1/2" in progress[0] and "pass 2/2" in progress[1]


# ---- help ------------------------------------------------------------------------------

def test_every_option_of_every_command_has_help() -> None:
    from kbench.cli.main import main

    ctx = click.Context(main)
    seen: list[str] = []

    def walk(cmd: click.Command, path: list[str]):
        seen.append(" ".join(path))
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):  # lazy subcommands included
                sub = cmd.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, [*path, name])
        for p in cmd.params:
            if isinstance(p, click.Option) and not p.help:
                yield " ".join(path), "/".join(p.opts)
    missing = list(walk(main, ["kbench"]))
    assert missing == []
    for name in ("run", "tune", "ab", "report", "gate", "compare", "history", "catalogs"):
        assert f"kbench {name}" in seen


# ---- tune classes ----------------------------------------------------------------------

def _conv(name: str, dilation: int = 1, groups: int = 1, c: int = 8) -> ConvCase:
    return ConvCase(name=name, n=1, h=10, w=10, c_in=c, c_out=c, kh=3, kw=3,
                    dilation=(dilation, dilation), groups=groups, pad=(1, 1, 1, 1))


def _timed(case: ConvCase, times: dict[str, float]) -> ShapeResult:
    sr = ShapeResult(case, "cat", default="conv2d_im2col_gemm_scalar_f32acc")
    for name, t in times.items():
        sr.verdicts[name] = _verdict(case=case.name, status=PASS, rounds=3, time_median_ns=t,
                                     realization=name)
    return sr


def test_dilated_3x3_shapes_form_their_own_class() -> None:
    """Winograd (3x3, stride 1, undilated only) wins the undilated class even
    when dilated 3x3 shapes are tuned too."""
    plain = _conv("c3x3")
    dilated = _conv("c3x3_d2", dilation=2)
    assert conv_class(plain) != conv_class(dilated)
    shapes = [_timed(plain, {"conv2d_winograd_f2x2_3x3_scalar_f32acc": 100.0,
                             "conv2d_direct_scalar_f32acc": 900.0}),
              _timed(dilated, {"conv2d_direct_scalar_f32acc": 800.0,
                               "conv2d_im2col_gemm_scalar_f32acc": 850.0})]
    info = _info("host", [])
    table = build_table(info, shapes, emulated=False)
    by_dil = {r["class"]["dilation_h"]: r["realization"] for r in table["rules"]}
    assert by_dil == {1: "conv2d_winograd_f2x2_3x3_scalar_f32acc",
                      2: "conv2d_direct_scalar_f32acc"}
    assert class_matches("conv2d", conv_class(plain), plain)
    assert not class_matches("conv2d", conv_class(plain), dilated)
    grouped = _conv("g2", groups=2)
    depthwise = _conv("dw", groups=8)
    assert conv_class(grouped)["grouped"] and not conv_class(grouped)["depthwise"]
    assert conv_class(depthwise)["depthwise"] and not conv_class(depthwise)["grouped"]
    assert not class_matches("conv2d", conv_class(plain), grouped)


def test_native_dispatcher_separates_dilation_and_groups() -> None:
    cpu = api.cpu_info()
    cls = conv_class(_conv("c"))
    table = {"kbench_dispatch_table": 1, "library_version": api.version(),
             "fingerprint": {"arch": cpu.arch, "cpu_features": list(cpu.features),
                             "sme_vector_bits": cpu.sme_vector_bits},
             "rules": [{"op": "conv2d", "class": cls, "realization": "conv2d_direct_scalar_f32acc",
                        "time_ns": 1.0, "shapes": ["c"]}]}
    sel = api.Selector(table=api.DispatchTable(json.dumps(table)))
    x = np.ones((1, 10, 10, 8), np.float16)
    w = np.ones((3, 3, 8, 8), np.float16)
    default = api.conv2d(x, w, None, api.ConvParams(pad=(1, 1, 1, 1))).realization.name
    assert default != "conv2d_direct_scalar_f32acc"
    ran = api.conv2d(x, w, None, api.ConvParams(pad=(1, 1, 1, 1)), selector=sel)
    assert ran.realization.name == "conv2d_direct_scalar_f32acc"
    dil = api.conv2d(x, w, None, api.ConvParams(pad=(1, 1, 1, 1), dilation=(2, 2)),
                     selector=sel)
    assert dil.realization.name == default
    wg = np.ones((3, 3, 4, 8), np.float16)
    grp = api.conv2d(x, wg, None, api.ConvParams(pad=(1, 1, 1, 1), groups=2), selector=sel)
    assert grp.realization.name == default


def test_rule_bounds_are_readable() -> None:
    large = gemm_class(GemmCase(name="big", m=128, n=4096, k=4096))
    assert "m_max" not in large and large["m_min"] == 33
    assert class_matches("gemm", large, GemmCase(name="huge", m=10**9, n=4096, k=4096))
    assert max(v for v in large.values()) < 2**31
    for m in (1, 16):
        small = gemm_class(GemmCase(name="s", m=m, n=64, k=64))
        assert small["m_max"] in (1, 32)


def test_max_time_bounds_the_rounds_of_a_microsecond_kernel(tmp_path: Path) -> None:
    """--max-time is spent in rounds of --min-round-ms: a 4 us kernel with
    --rounds 3, --max-time 0.01 and 1 ms rounds gets a handful of rounds.
    Before: pytest-benchmark spent --max-time on the per-call clock, i.e.
    max-time / 4 us = ~2,800 rounds of 1 ms (and 0.5 s by default: minutes
    per smoke case)."""
    out = tmp_path / "perf"
    res = kbench("run", "--suite", "perf", "--shapes", "smoke", "-k", "m7_n8",
                 "--realization", "gemm_scalar_f32acc", "--rounds", "3", "--max-time", "0.01",
                 "--min-round-ms", "1", "--no-history", "--out", str(out))
    assert res.returncode == 0, res.stdout[-3000:]
    with (out / "results.csv").open() as fh:
        timed = [r for r in csv.DictReader(fh) if int(r["rounds"] or 0) > 0]
    assert timed
    for row in timed:
        # at least --rounds; at most about max-time / min-round (10) plus calibration
        assert 3 <= int(row["rounds"]) <= 40, row["rounds"]
