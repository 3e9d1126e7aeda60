"""Plugins from the command line, end to end on this machine: `kbench info`,
`realizations`, `run` (correctness, contract probes, perf), `report` and
`tune` with --plugin; a broken plugin file costs one clear line and the run
goes on; the faulty example is caught (failed verdicts naming it and its
version, silently wrong probe findings, the report's Plugins section);
--strict-plugins turns probe findings into a failed run; a dispatch table
that names a plugin realization is followed."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from plugin_builds import lib

from kbench.cli.main import main


def _kbench(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def _rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "results.csv") as f:
        return list(csv.DictReader(f))


def test_info_and_realizations_name_plugins_and_refusals():
    res = CliRunner().invoke(main, ["info", "--plugin", lib("exwhole")])
    assert res.exit_code == 0, res.output
    assert "plugin:           exwhole 1.0.0 (ABI 3) from " in res.output
    assert "exwhole.gemm_f32acc" in res.output and "(plugin exwhole 1.0.0)" in res.output
    # a plugin that cannot be loaded: `kbench info` is about it, so it says why in one
    # line and fails (a description without it would look like a success)
    res = CliRunner().invoke(main, ["info", "--plugin", lib("exwhole"), "--plugin",
                                    lib("newabi")])
    assert res.exit_code == 1, res.output
    assert res.output.strip().splitlines() == [
        "kbench: host: plugin: libnewabi.so: built for plugin ABI 4, this kbench reads ABI 3 "
        "(the plugin is newer: update kbench or rebuild the plugin against this "
        "kbench_plugin.h)"]
    res = CliRunner().invoke(main, ["realizations", "--json", "--plugin", lib("exwhole")])
    assert res.exit_code == 0, res.output
    reals = {r["name"]: r for r in json.loads(res.output)["host"]}
    assert reals["exwhole.gemm_f32acc"]["plugin"] == "exwhole 1.0.0"
    assert reals["exwhole.gemm_f32acc"]["backend"] == "plugin:exwhole"
    assert reals["gemm_scalar_f32acc"]["plugin"] == ""


def test_a_run_goes_on_past_a_broken_plugin(tmp_path):
    out = tmp_path / "run"
    res = _kbench("run", "--suite", "correctness", "--shapes", "smoke", "--backend", "plugin",
                  "--plugin", lib("exwhole"), "--plugin", lib("noentry"), "--no-history",
                  "--out", str(out))
    assert res.returncode == 0, res.stdout[-3000:]
    assert "plugin not loaded on host: plugin: libnoentry.so: missing symbol kb_plugin_entry" \
        in res.stdout
    rows = _rows(out)
    assert rows and {r["plugin"] for r in rows} == {"exwhole 1.0.0"}
    assert {r["realization"] for r in rows} == {"exwhole.gemm_f32acc",
                                                "exwhole.conv2d_direct_f32acc"}
    meta = json.loads((out / "run.json").read_text())
    (err,) = meta["targets"]["host"]["plugin_errors"]
    assert "libnoentry.so" in err["message"]


def test_the_faulty_plugin_is_caught_and_reported(tmp_path):
    out = tmp_path / "run"
    res = _kbench("run", "--suite", "all", "--shapes", "smoke", "--backend", "plugin",
                  "--plugin", lib("exfaulty"), "--plugin", lib("exwhole"), "--no-history",
                  "--out", str(out))
    assert res.returncode == 1, res.stdout[-3000:]
    rows = _rows(out)
    failed = [r for r in rows if r["status"] == "fail" and r["suite"] == "correctness"]
    assert failed and {r["realization"] for r in failed} == {"exfaulty.gemm_tailbug"}
    assert {r["plugin"] for r in failed} == {"exfaulty 0.0.1-broken"}
    wrong = [r for r in rows if r["suite"] == "plugin-contracts"
             and r["message"].startswith("silently wrong")]
    assert {r["realization"] for r in wrong} == {"exfaulty.gemm_tailbug"}
    assert {r["case"] for r in wrong} == {"probe_other_n", "probe_bias_flag", "probe_truncated"}
    lines = (out / "verdicts.txt").read_text().splitlines()
    assert any(ln.startswith("FAIL") and "exfaulty.gemm_tailbug" in ln
               and "[plugin exfaulty 0.0.1-broken]" in ln for ln in lines)
    rep = _kbench("report", str(out))
    assert rep.returncode == 0, rep.stderr
    with open(out / "report" / "plugins.csv") as f:
        plugins = {r["plugin"]: r for r in csv.DictReader(f)}
    assert int(plugins["exfaulty"]["failed"]) == len(failed)
    assert "3 silently wrong" in plugins["exfaulty"]["probes"]
    assert plugins["exwhole"]["failed"] == "0" and "4 refused" in plugins["exwhole"]["probes"]
    html = (out / "report" / "report.html").read_text()
    assert 'id="plugins"' in html and "exfaulty" in html


def test_strict_plugins_turn_findings_into_a_failed_run(tmp_path):
    # the probe suite alone: its findings are recorded (xfail), the run passes ...
    probe_suite = Path(__file__).with_name("test_plugin_probes.py")
    res = subprocess.run([sys.executable, "-m", "pytest", str(probe_suite), "-q", "-p",
                          "no:cacheprovider", "--kb-plugin", lib("exfaulty"), "-rx"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and "3 xfailed" in res.stdout, res.stdout[-2000:]
    # ... unless kbench run is asked to be strict
    res = _kbench("run", "--suite", "contracts", "--plugin", lib("exfaulty"), "--strict-plugins",
                  "--no-history", "--out", str(tmp_path / "b"))
    assert res.returncode == 1 and "silently wrong" in res.stdout


def test_perf_tune_and_a_table_naming_a_plugin(tmp_path):
    perf = tmp_path / "perf"
    res = _kbench("run", "--suite", "perf", "--shapes", "smoke", "--backend", "plugin",
                  "--plugin", lib("exwhole"), "--rounds", "2", "--max-time", "0.01",
                  "--no-history", "--out", str(perf))
    assert res.returncode == 0, res.stdout[-3000:]
    timed = [r for r in _rows(perf) if r["suite"] == "perf" and int(r["rounds"] or 0) > 0]
    assert timed and all(r["plugin"] == "exwhole 1.0.0" for r in timed)
    native = [r for r in timed if r["b_form"] == "native"]
    assert native and all(float(r["pack_time_ns"]) > 0 for r in native)
    tuned = tmp_path / "tune"
    res = _kbench("tune", "--shapes", "smoke", "--plugin", lib("exwhole"), "--rounds", "2",
                  "--min-round-ms", "0.1", "--out", str(tuned))
    assert res.returncode == 0, res.stdout[-3000:]
    assert any(r["realization"] == "exwhole.gemm_f32acc" for r in _rows(tuned))
    table = json.loads((tuned / "dispatch.json").read_text())
    for rule in table["rules"]:
        if rule["op"] == "gemm":
            rule["realization"] = "exwhole.gemm_f32acc"
    (tuned / "plugin_table.json").write_text(json.dumps(table))
    run = tmp_path / "dispatch"
    # forced jobs only for the scalar GEMM: every exwhole row comes from a case run
    # unforced under the table, which fails unless the realization it names ran
    res = _kbench("run", "--suite", "correctness", "--shapes", "smoke", "--plugin",
                  lib("exwhole"), "--dispatch", str(tuned / "plugin_table.json"),
                  "--realization", "gemm_scalar_f32acc", "--no-history", "--out", str(run))
    assert res.returncode == 0, res.stdout[-3000:]
    unforced = [r for r in _rows(run) if r["realization"] == "exwhole.gemm_f32acc"]
    assert unforced and all(r["status"] == "pass" for r in unforced)
    assert {r["plugin"] for r in unforced} == {"exwhole 1.0.0"}


def test_a_wrong_result_seen_while_tuning_is_a_failed_verdict_with_its_reproducer(tmp_path):
    """Before: a candidate whose check failed while tuning was left out of the
    table in silence (its row in results.csv only) and `kbench tune` exited 0.
    Now it is a failed verdict with the command that reruns it (stderr,
    verdicts.txt, failures.csv) and the command exits 1."""
    catalog = tmp_path / "tail.toml"
    catalog.write_text('[catalog]\nname = "tail"\n\n[[gemm]]\nname = "m1_n17_k33"\n'
                       "m = 1\nn = 17\nk = 33\n")
    out = tmp_path / "tune"
    res = _kbench("tune", "--shapes", str(catalog), "--plugin", lib("exfaulty"), "--rounds",
                  "2", "--min-round-ms", "0.1", "--out", str(out))
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    failed = [r for r in _rows(out) if r["status"] == "fail"]
    assert [r["realization"] for r in failed] == ["exfaulty.gemm_tailbug"]
    with open(out / "failures.csv") as f:
        (row,) = list(csv.DictReader(f))
    assert row["realization"] == "exfaulty.gemm_tailbug" and row["suite"] == "tune"
    assert row["reproduce"] == (
        f"kbench run --suite correctness --target host --realization exfaulty.gemm_tailbug "
        f"--shapes {catalog} -k '/m1_n17_k33$' --kinds uniform --plugin {lib('exfaulty')}")
    assert f"    reproduce: {row['reproduce']}" in res.stderr
    assert "left out of the table; exit status 1" in res.stderr
    table = json.loads((out / "dispatch.json").read_text())
    assert all(rule["realization"] != "exfaulty.gemm_tailbug" for rule in table["rules"])
    lines = (out / "verdicts.txt").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "exfaulty.gemm_tailbug" in line)
    assert lines[at + 1] == f"    reproduce: {row['reproduce']}"
