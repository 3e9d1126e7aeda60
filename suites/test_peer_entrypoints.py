"""Peers as entry-point registrations (group `kbench.peers`): onnxruntime is
kbench's own registration (and a built-in fallback where kbench runs without
installed metadata, as in the emulated Python); a registration that fails is
reported by name and reason while the others still run; and the example peer
package (examples/plugins/python_peer, example (d)), once installed in the
environment, is picked up by `kbench run` with no change to kbench. The
last test needs the package installed: skipped otherwise, unless
KBENCH_REQUIRE_EXAMPLE_PEER=1 (as in CI)."""

from __future__ import annotations

import csv
import importlib.metadata
import os
import subprocess
import sys

import pandas as pd
import pytest

from kbench import peers
from kbench.harness.runner import Job, run_job
from kbench.problems.cases import GemmCase
from kbench.results.report_perf import _our_realizations
from kbench.targets.inprocess import InProcessEngine
from kbench.targets.spec import Target

EXAMPLE_DIST = "kbench-example-peer"


def test_onnxruntime_is_a_registration():
    regs = {r.name: r for r in peers.registrations()}
    assert regs["ort"].value == "kbench.peers.ort:OrtPeer"
    assert regs["ort"].source in ("kbench", "built-in")


def test_the_builtin_registration_stands_in_without_metadata(monkeypatch):
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: [])
    regs = peers.registrations()
    assert [(r.name, r.source) for r in regs] == [("ort", "built-in")]


class _Incomplete:
    def available(self):
        return True


def test_a_broken_registration_is_reported_and_the_rest_run(monkeypatch):
    bad = [peers.Registration("nosuch", "kbench_no_such_module:Peer", "broken-dist"),
           peers.Registration("half", f"{__name__}:_Incomplete", "half-dist")]
    real = peers.registrations()
    monkeypatch.setattr(peers, "registrations", lambda: [*real, *bad])
    loaded = peers.load_peers()
    assert "entry point nosuch = 'kbench_no_such_module:Peer' (broken-dist) failed to load: " \
           "ModuleNotFoundError" in loaded.errors["nosuch"]
    assert "does not implement the peer protocol (missing: unavailable_reason, realizations, " \
           "gemm, conv)" in loaded.errors["half"]
    good = {type(p).__name__ for p in loaded.peers} | set(loaded.unavailable)
    assert {"OrtPeer"} <= good or "ort" in loaded.unavailable
    engine = InProcessEngine()
    assert engine.peer_errors["nosuch"] == loaded.errors["nosuch"]
    assert engine.info("host").extra["peer_errors"]["half"] == loaded.errors["half"]


def test_a_peer_is_never_counted_as_ours_whatever_its_name():
    rows = pd.DataFrame({"realization": ["gemm_scalar_f32acc", "npf32_matmul", "x.gemm"],
                         "backend": ["scalar", "npf32", "plugin:x"]})
    assert _our_realizations(rows) == {"gemm_scalar_f32acc"}


def _example_installed() -> None:
    try:
        importlib.metadata.distribution(EXAMPLE_DIST)
    except importlib.metadata.PackageNotFoundError:
        if os.environ.get("KBENCH_REQUIRE_EXAMPLE_PEER") == "1":
            pytest.fail(f"{EXAMPLE_DIST} is required: pip install -e examples/plugins/python_peer")
        pytest.skip(f"{EXAMPLE_DIST} is not installed (pip install -e "
                    "examples/plugins/python_peer)")


def test_an_installed_peer_package_is_picked_up_without_kbench_changes(tmp_path):
    _example_installed()
    regs = {r.name: r for r in peers.registrations()}
    assert regs["npf32"].source == EXAMPLE_DIST
    target = Target("host", InProcessEngine())
    real = next(r for r in target.info().realizations if r.name == "npf32_matmul")
    assert real.peer and real.backend == "npf32" and "npf32" in target.info().peers
    v = run_job(target, Job(GemmCase("peer_ep", 9, 33, 40, bias=True), "normal", real, "host"))
    assert v.status == "pass" and v.backend == "npf32", v.line()
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "kbench.cli", "run", "--suite", "correctness",
                          "--shapes", "smoke", "--backend", "npf32", "--no-history", "--out",
                          str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    with open(out / "results.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["backend"] == "npf32"]
    assert rows and {r["realization"] for r in rows} == {"npf32_matmul"}
    assert all(r["status"] in ("pass", "mistrusted") for r in rows)
