"""What a kernel engineer does around a plugin's verdicts, end to end on
this machine: a plugin-only run runs no contract case of kbench's own
backends; --strict-plugins fails a run whose plugin cannot be loaded; every
printed reproduce command, run verbatim, fails its case again (a judged
case, a contract probe, a packer check, a determinism fault); determinism
results are rows of results.csv and a section of the report; an output
that is the same infinity as its exact value shows err/bound "inf-exact"."""

from __future__ import annotations

import csv
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
from plugin_builds import lib

from kbench.judge import oracle
from kbench.judge.tolerance import AccumModel
from kbench.judge.verdict import Verdict, judge

FAULTY_CATALOG = """\
[catalog]
name = "plugwork"
description = "plugin workflow"

[[gemm]]
name = "tail_k7"
m = 3
n = 5
k = 7
bias = true

[[gemm]]
name = "native_k9"
m = 4
n = 6
k = 9
b_form = "native"
bias = true
"""


def _kbench(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, **(env or {})})


def _rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "results.csv") as f:
        return list(csv.DictReader(f))


def test_a_plugin_only_run_runs_no_contract_case_of_ours(tmp_path):
    """Before: ~1,400 contract cases of kbench's own backends ran in a run
    that selected plugins only."""
    out = tmp_path / "run"
    res = _kbench("run", "--suite", "all", "--shapes", "smoke", "--backend", "plugin",
                  "--plugin", lib("exwhole"), "--no-history", "--out", str(out))
    assert res.returncode == 0, res.stdout[-3000:]
    rows = _rows(out)
    assert rows and not [r for r in rows if r["realization"] == "contracts"]
    assert {r["plugin"] for r in rows} == {"exwhole 1.0.0"}
    assert "plugin-contracts" in {r["suite"] for r in rows}  # its own probes still run


def test_strict_plugins_fails_a_run_whose_plugin_cannot_be_loaded(tmp_path):
    """Before: `kbench run --plugin /nonexistent.so --strict-plugins` exited 0."""
    res = _kbench("run", "--suite", "correctness", "--shapes", "smoke", "--realization",
                  "gemm_scalar_f32acc", "--plugin", str(tmp_path / "nonexistent.so"),
                  "--strict-plugins", "--no-history", "--out", str(tmp_path / "run"))
    assert res.returncode == 1, res.stdout[-2000:]
    assert "--strict-plugins: a plugin could not be loaded" in res.stdout
    plain = _kbench("run", "--suite", "correctness", "--shapes", "smoke", "--realization",
                    "gemm_scalar_f32acc", "--plugin", str(tmp_path / "nonexistent.so"),
                    "--no-history", "--out", str(tmp_path / "run2"))
    assert plain.returncode == 0, plain.stdout[-2000:]  # without it: a note, the run goes on
    assert "plugin not loaded on host" in plain.stdout


def test_every_printed_reproduce_command_fails_its_case_again(tmp_path):
    """Before: printed reproduce commands left out --plugin (pasted, they
    ran nothing of the plugin), and a probe's named an input kind that does
    not exist. Each kind of failing verdict is rerun here verbatim, from a
    folder of its own, and must fail its case again."""
    cat = tmp_path / "plugwork.toml"
    cat.write_text(FAULTY_CATALOG)
    out = tmp_path / "run"
    res = _kbench("run", "--suite", "all", "--shapes", str(cat), "--backend", "plugin",
                  "--plugin", lib("exfaulty"), "--plugin", lib("expackers"), "--plugin",
                  lib("exfaults"), "--call-timeout", "5", "--no-history", "--out", str(out))
    assert res.returncode == 1, res.stdout[-3000:]
    with open(out / "failures.csv") as f:
        failures = list(csv.DictReader(f))
    wanted = {  # one failing verdict of every kind the run printed a reproducer for
        "judged": next(r for r in failures if r["suite"] == "correctness"
                       and r["realization"] == "exfaulty.gemm_tailbug"),
        "probe": next(r for r in failures if r["suite"] == "plugin-contracts"),
        "packer": next(r for r in failures if r["suite"] == "contracts"
                       and r["realization"] == "expackers.gemm_rhs_unwritten"),
        "determinism": next(r for r in failures if r["suite"] == "determinism"
                            and r["realization"] == "exfaults.gemm_segv"),
    }
    for what, bad in wanted.items():
        cmd = shlex.split(bad["reproduce"])
        assert cmd[:2] == ["kbench", "run"], bad["reproduce"]
        assert "--plugin" in cmd, bad["reproduce"]
        here = tmp_path / what
        here.mkdir()
        again = _kbench(*cmd[1:], cwd=here, env={"XDG_DATA_HOME": str(here / "data")})
        assert again.returncode != 0, (what, bad["reproduce"], again.stdout[-2000:])
        assert (here / "runs").is_dir(), (what, again.stdout[-2000:], again.stderr[-2000:])
        (folder,) = list((here / "runs").iterdir())
        rerun = [r for r in _rows(folder) if r["realization"] == bad["realization"]
                 and r["case"] == bad["case"] and r["kind"] == bad["kind"]]
        assert rerun and all(r["status"] == bad["status"] for r in rerun), (what, rerun)


def test_determinism_results_are_rows_and_a_report_section(tmp_path):
    from click.testing import CliRunner

    from kbench.cli.report import report
    out = tmp_path / "run"
    res = _kbench("run", "--suite", "correctness", "--shapes", "smoke", "--realization",
                  "gemm_scalar_f32acc", "--realization", "exwhole.gemm_f32acc", "--plugin",
                  lib("exwhole"), "--no-history", "--out", str(out))
    assert res.returncode == 0, res.stdout[-3000:]
    rows = [r for r in _rows(out) if r["suite"] == "determinism"]
    det = [r for r in rows if r["catalog"] != "scratch"]
    reals = {r["realization"] for r in det}
    assert reals == {"gemm_scalar_f32acc", "exwhole.gemm_f32acc"}
    assert all(r["status"] == "pass" for r in det)
    # the scratch check: the plugin's heap is counted in the host worker, ours (in this
    # process) is not, which its skip verdict says
    heap = {r["realization"]: r for r in rows if r["catalog"] == "scratch"}
    assert heap["exwhole.gemm_f32acc"]["status"] == "pass"
    assert heap["gemm_scalar_f32acc"]["status"] == "skip"
    assert "heap not measured on host" in heap["gemm_scalar_f32acc"]["message"]
    assert {r["message"] for r in det} >= {"bit-identical over two calls",
                                           "the bits of 1 thread on 3 threads"}
    rep = CliRunner().invoke(report, [str(out), "--out", str(tmp_path / "report")])
    assert rep.exit_code == 0, rep.output
    html = (tmp_path / "report" / "report.html").read_text()
    assert 'id="determinism"' in html and "exwhole.gemm_f32acc" in html
    with open(tmp_path / "report" / "determinism.csv") as f:
        table = {r["realization"]: r for r in csv.DictReader(f)}
    assert table["gemm_scalar_f32acc"]["failed"] == "0"
    assert int(table["exwhole.gemm_f32acc"]["passed"]) >= 2


def test_an_output_that_is_the_exact_infinity_shows_inf_exact():
    """Before: outputs that were all the same infinity as the exact value
    showed err/bound = 0, as if measured."""
    a = np.array([[np.inf, 1.0]], np.float16)
    b = np.array([[1.0], [0.0]], np.float16)
    ref = oracle.gemm_reference(a, b, None, None)
    j = judge(np.array([[np.inf]], np.float16), ref, AccumModel("fp32", 1), 2, False, False)
    assert j.ok and j.inf_exact == 1 and j.total == 1
    v = Verdict(case="c", op="gemm", shape="m1n1k2", kind="specials", target="host",
                backend="scalar", realization="r", kernel="k", accum="fp32", k=2, m=1, n=1,
                b_form="plain", vector_bits=0, status="pass", total=1, inf_exact=1)
    assert "err/bound=inf-exact" in v.line()
    v.total, v.max_err_bound = 4, 0.25
    assert "err/bound=0.25 (+1 inf-exact)" in v.line()
