"""Other tools read kbench's perf runs: Google Benchmark JSON (gbench.json,
read here with the field names Google Benchmark's tools/compare.py uses:
benchmarks[].name, run_type, real_time, cpu_time, time_unit, iterations)
and an honest pytest-benchmark benchmark.json (per-call statistics, plain
params), checked with `pytest-benchmark compare` itself. No speed is
asserted: only that every tool sees kbench's own per-call numbers."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from kbench.judge.verdict import Verdict
from kbench.results.interop import benchmark_name, google_benchmark_json, serializable_params

# what Google Benchmark's compare.py reads from each entry of "benchmarks"
GBENCH_FIELDS = ("name", "run_type", "real_time", "cpu_time", "time_unit", "iterations")


def _perf_run(out: Path, passes: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    res = subprocess.run([sys.executable, "-m", "kbench.cli", "run", "--suite", "perf",
                          "--shapes", "smoke", "-k", "m7_n8_k15|m3_n2_k1",
                          "--realization", "gemm_scalar_f32acc", "--rounds", "4", "--passes",
                          str(passes), "--max-time", "0.02", "--no-history", "--out", str(out)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Name (time in" not in res.stdout  # pytest-benchmark's per-round table is gone


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("interop")
    _perf_run(base / "a", passes=2)
    _perf_run(base / "b", passes=1)
    return base / "a", base / "b"


def _rows(run: Path) -> list[dict[str, str]]:
    with (run / "results.csv").open() as f:
        return [r for r in csv.DictReader(f) if r["suite"] == "perf" and int(r["rounds"]) > 0]


def test_google_benchmark_json_reads_with_compare_py_field_names(runs) -> None:
    run = runs[0]
    data = json.loads((run / "gbench.json").read_text())
    assert isinstance(data["context"], dict) and "date" in data["context"]
    rows = _rows(run)
    by_name: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        by_name.setdefault(f"{r['realization']}/{r['catalog']}/{r['case']}", []).append(r)
    entries = data["benchmarks"]
    assert len(entries) == len(by_name) == 2  # one per case x realization, passes pooled
    for e in entries:
        assert all(f in e for f in GBENCH_FIELDS), e
        assert e["run_type"] == "iteration" and e["time_unit"] == "ns"
        mine = by_name[e["name"]]
        assert len(mine) == 2  # two passes
        times = [float(t) for r in mine for t in r["round_times_ns"].split()]
        assert e["real_time"] == pytest.approx(statistics.median(times), abs=1.0)  # csv: 1 ns
        assert e["iterations"] == sum(int(r["rounds"]) * int(r["reps_per_round"]) for r in mine)
        assert e["kbench_min_ns"] == pytest.approx(min(times), abs=1.0)
    # the machine's state and each case's noise are in run.json
    meta = json.loads((run / "run.json").read_text())
    assert set(meta["machine_state"]) == {"start", "end"}
    assert meta["machine_state"]["start"]["cpus"] >= 1
    assert "governor" in meta["machine_state"]["start"]
    cv = meta["noise"]["cv"]
    assert len(cv) == 2 and all(v >= 0 for v in cv.values())
    assert set(meta["noise"]["noisy"]) <= set(cv)


def test_pytest_benchmark_compare_shows_kbench_per_call_times(runs, tmp_path: Path) -> None:
    tool = shutil.which("pytest-benchmark") or shutil.which("py.test-benchmark")
    if tool is None:
        pytest.fail("pytest-benchmark's command line is missing (it is a dependency)")
    a, b = runs
    for run in runs:
        bj = json.loads((run / "benchmark.json").read_text())
        for entry in bj["benchmarks"]:
            assert "UNSERIALIZABLE" not in json.dumps(entry["params"])
            assert entry["params"]["realization"] == "gemm_scalar_f32acc"
    res = subprocess.run([tool, "compare", str(a / "benchmark.json"), str(b / "benchmark.json"),
                          f"--csv={tmp_path / 'cmp'}"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    with (tmp_path / "cmp.csv").open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == 6  # a: two cases x two passes; b: two cases
    ours = {}
    for run in runs:
        seen: dict[tuple[str, str], int] = {}
        for r in _rows(run):
            k = (r["realization"], r["case"])
            seen[k] = seen.get(k, 0) + 1
            ours.setdefault((r["case"], float(r["time_median_ns"])), r)
    medians_ns = sorted(float(row["median"]) * 1e9 for row in table)
    expected = sorted(m for _, m in ours)
    assert len(expected) == 6
    for got, want in zip(medians_ns, expected, strict=True):
        assert got == pytest.approx(want, rel=1e-9)
    for row in table:
        assert row["param:case"] in ("m7_n8_k15_nobias", "m3_n2_k1_clamp")
        assert float(row["min"]) <= float(row["median"]) <= float(row["max"])


def _v(case: str, times: list[float], reps: int, emulated: bool = False,
       target: str = "host") -> Verdict:
    return Verdict(case=case, op="gemm", shape="s", kind="uniform", target=target,
                   backend="scalar", realization="r", kernel="k", accum="fp32", k=1, m=1, n=1,
                   b_form="plain", vector_bits=0, status="pass", catalog="cat", suite="perf",
                   rounds=len(times), reps_per_round=reps, round_times_ns=times,
                   emulated=emulated, flops=2000)


def test_google_benchmark_json_pools_passes_and_leaves_out_emulated_rows() -> None:
    vs = [_v("a", [10.0, 12.0], 5), _v("a", [11.0, 30.0], 7), _v("b", [5.0, 5.0], 3,
                                                                 emulated=True),
          _v("c", [100.0, 200.0, 300.0], 2, target="worker:ssh board")]
    data = google_benchmark_json(vs, {"date": "d", "host": "h"})
    names = [e["name"] for e in data["benchmarks"]]
    assert names == ["r/cat/a", "r/cat/c@worker:ssh board"]
    a = data["benchmarks"][0]
    assert a["real_time"] == 11.5 and a["iterations"] == 2 * 5 + 2 * 7
    assert a["kbench_passes"] == 2 and a["kbench_min_ns"] == 10.0
    assert a["kbench_gflops"] == pytest.approx(2000 / 11.5)
    assert benchmark_name(_v("x", [1.0], 1)) == "r/cat/x"


def test_google_benchmark_json_entry_and_context_field_by_field() -> None:
    """Every field Google Benchmark's tools read, and kbench's own, of one entry
    and of the context (a compare.py or dashboard reader keys on these names)."""
    one = replace(_v("a", [10.0, 14.0, 12.0], 4), threads=1, backend="neon", op="gemm",
                  shape="m1n2k3", flops=2400)
    meta = {"date": "2026-12-06T10:00:00", "host": "board", "cpus": 8, "cpu_model": "X1",
            "git_commit": "abc123", "machine_state": {"start": {"load_avg": [0.5, 0.4, 0.3]}}}
    data = google_benchmark_json([one], meta)
    (entry,) = data["benchmarks"]
    assert entry == {
        "name": "r/cat/a", "run_name": "r/cat/a", "family_index": 0,
        "per_family_instance_index": 0, "run_type": "iteration", "repetitions": 1,
        "repetition_index": 0, "threads": 1, "iterations": 12, "real_time": 12.0,
        "cpu_time": 12.0, "time_unit": "ns", "kbench_realization": "r", "kbench_backend": "neon",
        "kbench_case": "a", "kbench_catalog": "cat", "kbench_target": "host",
        "kbench_op": "gemm", "kbench_shape": "m1n2k3", "kbench_rounds": 3, "kbench_passes": 1,
        "kbench_reps_per_round": [4], "kbench_min_ns": 10.0, "kbench_mean_ns": 12.0,
        "kbench_stdev_ns": 2.0, "kbench_gflops": 200.0, "kbench_flops": 2400,
        "kbench_status": "pass"}
    assert data["context"] == {
        "date": "2026-12-06T10:00:00", "host_name": "board",
        "executable": "kbench run --suite perf", "num_cpus": 8, "mhz_per_cpu": 0,
        "cpu_scaling_enabled": False, "caches": [], "load_avg": [0.5, 0.4, 0.3],
        "library_build_type": "release", "kbench_cpu_model": "X1", "kbench_commit": "abc123"}
    # a run.json without those fields: empty strings and zeros, not None
    assert google_benchmark_json([], {})["context"] == {
        "date": "", "host_name": "", "executable": "kbench run --suite perf", "num_cpus": 0,
        "mhz_per_cpu": 0, "cpu_scaling_enabled": False, "caches": [], "load_avg": [],
        "library_build_type": "release", "kbench_cpu_model": "", "kbench_commit": ""}


def test_google_benchmark_json_edges() -> None:
    """One round is an entry (stdev 0); a row with no rounds is not; a median of
    0 has no GFLOP/s; a fraction of a nanosecond still has one; the second
    family is index 1."""
    data = google_benchmark_json([_v("one", [3.0], 2), _v("none", [], 2),
                                  _v("zero", [0.0, 0.0], 1), _v("tiny", [0.5, 0.5], 1)], {})
    by_name = {e["name"]: e for e in data["benchmarks"]}
    assert list(by_name) == ["r/cat/one", "r/cat/zero", "r/cat/tiny"]
    assert by_name["r/cat/one"]["kbench_stdev_ns"] == 0.0
    assert by_name["r/cat/one"]["kbench_rounds"] == 1
    two = google_benchmark_json([_v("two", [1.0, 3.0], 1)], {})["benchmarks"][0]
    assert two["kbench_stdev_ns"] == pytest.approx(math.sqrt(2))
    assert math.isnan(by_name["r/cat/zero"]["kbench_gflops"])
    assert by_name["r/cat/tiny"]["kbench_gflops"] == 4000.0
    assert [e["family_index"] for e in data["benchmarks"]] == [0, 1, 2]
    # threads above one are in the name (a second thread count is another benchmark)
    assert benchmark_name(replace(_v("x", [1.0], 1), threads=2)) == "r/cat/x/threads:2"
    assert benchmark_name(replace(_v("x", [1.0], 1), threads=1)) == "r/cat/x"
    assert benchmark_name(replace(_v("x", [1.0], 1), catalog="")) == "r/x"


def test_pytest_benchmark_params_are_the_jobs_plain_fields() -> None:
    job = SimpleNamespace(target="qemu:svl=128", catalog="smoke", kind="uniform",
                          case=SimpleNamespace(name="m1_n2_k3"),
                          realization=SimpleNamespace(name="gemm_neon_f16acc", backend="neon"))
    assert serializable_params(job) == {
        "target": "qemu:svl=128", "realization": "gemm_neon_f16acc", "backend": "neon",
        "catalog": "smoke", "case": "m1_n2_k3", "kind": "uniform"}
