"""Several targets in one `kbench run`, spread over pytest-xdist workers (one
group per target): the one run folder holds exactly the rows of the same run
made in one process (nothing lost, nothing doubled), there is one history
entry, and an unreachable target fails alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from kbench.harness.parallel import verdict_from_wire, verdict_to_wire
from kbench.judge.verdict import Verdict
from kbench.results.history import query_runs, run_results

KEY = ["suite", "target", "op", "catalog", "case", "kind", "realization", "kernel", "status",
       "max_err_bound", "max_ulp", "exact", "total", "message"]


def kbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, timeout=1200)


def rows(folder: Path) -> pd.Series:
    df = pd.read_csv(folder / "results.csv", keep_default_na=False)
    return df[KEY].astype(str).apply(tuple, axis=1)


def test_verdicts_survive_the_trip_between_processes() -> None:
    v = Verdict(case="c", op="gemm", shape="m1n2k3", kind="exact", target="qemu:cpu=max",
                backend="neon", realization="r", kernel="k", accum="fp32", k=3, m=1, n=2,
                b_form="plain", vector_bits=0, status="pass", tags=["a", "b"])
    v.max_err_bound, v.round_times_ns = np.float64(0.25), [np.float64(1.0), 2.0]
    wire = verdict_to_wire(v)
    assert type(wire["max_err_bound"]) is float and wire["round_times_ns"] == [1.0, 2.0]
    assert verdict_from_wire(wire) == v


def test_parallel_run_equals_serial_run_one_history_entry(tmp_path: Path) -> None:
    common = ["run", "--suite", "all", "--shapes", "smoke", "--backend", "scalar",
              "--target", "host", "--target", "worker:host", "--db", str(tmp_path / "h.db")]
    serial = kbench(*common, "-n", "1", "--out", str(tmp_path / "serial"))
    assert serial.returncode == 0, serial.stdout[-2000:] + serial.stderr[-2000:]
    par = kbench(*common, "-n", "2", "--out", str(tmp_path / "parallel"))
    assert par.returncode == 0, par.stdout[-2000:] + par.stderr[-2000:]
    a, b = rows(tmp_path / "serial"), rows(tmp_path / "parallel")
    assert len(a) > 2000 and not a.duplicated().any() and not b.duplicated().any()
    assert sorted(a) == sorted(b)  # the same rows, each once
    meta = json.loads((tmp_path / "parallel" / "run.json").read_text())
    assert meta["complete"] and meta["results"] == len(b)
    assert set(meta["targets"]) == {"host", "worker:host"}
    workers = meta["parallel"]  # which xdist worker ran each target
    assert set(workers) == {"host", "worker:host"} and set(workers["host"]).isdisjoint(
        workers["worker:host"])
    verdict_lines = (tmp_path / "parallel" / "verdicts.txt").read_text().splitlines()
    assert len(verdict_lines) == len(b)
    runs = query_runs(tmp_path / "h.db")
    assert len(runs) == 2  # one entry per run, the parallel one holding every row
    entry = runs[runs["path"] == str((tmp_path / "parallel").resolve())]
    assert len(entry) == 1 and int(entry["n_results"].iloc[0]) == len(b)
    assert len(run_results(tmp_path / "h.db", int(entry["id"].iloc[0]))) == len(b)


def test_unreachable_target_fails_alone(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "--backend", "scalar",
                 "--kinds", "exact", "--target", "host", "--target", "ssh:nobody@127.0.0.1:1",
                 "--no-history", "--out", str(out))
    assert res.returncode == 1, res.stdout[-2000:]
    df = pd.read_csv(out / "results.csv", keep_default_na=False)
    ssh = df[df["target"] == "ssh:nobody@127.0.0.1:1"]
    assert len(ssh) == 1 and ssh["status"].iloc[0] == "error"
    assert ssh["message"].iloc[0].startswith("ssh:nobody@127.0.0.1:1: cannot connect")
    host = df[df["target"] == "host"]
    assert len(host) > 10 and set(host["status"]) == {"pass"}
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] and "cannot connect" in meta["targets"][
        "ssh:nobody@127.0.0.1:1"]["unavailable"]


def test_one_target_over_two_processes_equals_one_process(tmp_path: Path) -> None:
    # -n 2 with a single target spreads its tests over two worker processes, each
    # opening the target itself: the same rows as one process, each once
    common = ["run", "--suite", "all", "--shapes", "smoke", "--backend", "scalar",
              "--target", "worker:host", "--no-history"]
    serial = kbench(*common, "--out", str(tmp_path / "serial"))
    assert serial.returncode == 0, serial.stdout[-2000:] + serial.stderr[-2000:]
    par = kbench(*common, "-n", "2", "--out", str(tmp_path / "parallel"))
    assert par.returncode == 0, par.stdout[-2000:] + par.stderr[-2000:]
    a, b = rows(tmp_path / "serial"), rows(tmp_path / "parallel")
    assert len(a) > 1000 and not b.duplicated().any()
    assert sorted(a) == sorted(b)
    meta = json.loads((tmp_path / "parallel" / "run.json").read_text())
    assert meta["complete"] and meta["results"] == len(b)
    assert len(set(meta["parallel"]["worker:host"])) == 2  # both processes ran its tests
    serial_meta = json.loads((tmp_path / "serial" / "run.json").read_text())
    assert not serial_meta.get("parallel")  # without -n: one process
