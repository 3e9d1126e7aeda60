"""Timing results in other tools' formats.

Google Benchmark JSON (`gbench.json` in a perf run folder): the shape that
Google Benchmark's `--benchmark_format=json` writes, so that its
tools/compare.py, github-action-benchmark and dashboards built for it read
kbench runs. One entry per case x realization x target (a run's passes
pooled), `run_type` "iteration", `iterations` = the calls timed in all
rounds, `real_time` = the median per-call time in `time_unit` ns, and
`cpu_time` = the same (kbench times wall clock only: a kernel call is
single-threaded unless --threads, and CPU time is not measured). kbench's
own fields ride along as extra keys prefixed `kbench_`. Emulated rows are
left out: their times are not speed."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import Any

from kbench.judge.verdict import Verdict


def benchmark_name(v: Verdict) -> str:
    """realization/catalog/case, plus /threads:N and @target where not the defaults."""
    name = f"{v.realization}/{v.catalog}/{v.case}" if v.catalog else f"{v.realization}/{v.case}"
    if v.threads > 1:
        name += f"/threads:{v.threads}"
    if v.target != "host":
        name += f"@{v.target}"
    return name


def google_benchmark_json(verdicts: Iterable[Verdict], meta: dict[str, Any]) -> dict[str, Any]:
    groups: dict[str, list[Verdict]] = {}
    for v in verdicts:
        if v.rounds > 0 and v.round_times_ns and not v.emulated:
            groups.setdefault(benchmark_name(v), []).append(v)
    benchmarks = []
    for index, (name, rows) in enumerate(groups.items()):
        times = [t for v in rows for t in v.round_times_ns]
        calls = sum(v.rounds * max(1, v.reps_per_round) for v in rows)
        med = statistics.median(times)
        first = rows[0]
        benchmarks.append({
            "name": name, "run_name": name, "family_index": index,
            "per_family_instance_index": 0, "run_type": "iteration", "repetitions": 1,
            "repetition_index": 0, "threads": first.threads, "iterations": calls,
            "real_time": med, "cpu_time": med, "time_unit": "ns",
            "kbench_realization": first.realization, "kbench_backend": first.backend,
            "kbench_case": first.case, "kbench_catalog": first.catalog,
            "kbench_target": first.target, "kbench_op": first.op, "kbench_shape": first.shape,
            "kbench_rounds": len(times), "kbench_passes": len(rows),
            "kbench_reps_per_round": [v.reps_per_round for v in rows],
            "kbench_min_ns": min(times), "kbench_mean_ns": statistics.fmean(times),
            "kbench_stdev_ns": statistics.stdev(times) if len(times) > 1 else 0.0,
            "kbench_gflops": first.flops / med if med > 0 else math.nan,
            "kbench_flops": first.flops, "kbench_status": first.status,
        })
    load = (meta.get("machine_state") or {}).get("start", {}).get("load_avg") or []
    context = {
        "date": meta.get("date", ""), "host_name": meta.get("host", ""),
        "executable": "kbench run --suite perf", "num_cpus": meta.get("cpus") or 0,
        "mhz_per_cpu": 0, "cpu_scaling_enabled": False, "caches": [], "load_avg": load,
        "library_build_type": "release",
        "kbench_cpu_model": meta.get("cpu_model", ""), "kbench_commit": meta.get("git_commit", ""),
    }
    return {"context": context, "benchmarks": benchmarks}


def serializable_params(job: Any) -> dict[str, Any]:
    """pytest-benchmark's `params` for a perf job: plain values, not the object."""
    r = job.realization
    return {"target": job.target, "realization": r.name, "backend": r.backend,
            "catalog": job.catalog, "case": job.case.name, "kind": job.kind}
