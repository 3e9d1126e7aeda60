"""Instruction counts of plugins: a plugin's realization is counted in the
dynamically linked worker, phase for phase like ours (the phases of its code
from the entry points of its table), and its counts go into results.csv and
through the gate like ours.

The micro-kernel example (libexsme.so) is built from our own SME2 MOPA
micro-kernel; counted with --one-call, kbench's generic micro-kernel loop
calls its run_matmul once over the whole problem, as our single-threaded SME
driver calls it when the packed LHS fits its budget. So the plugin's kernel
phase is ours, to the instruction."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from plugin_builds import ARCH_PATTERN

from kbench.resources import resource_dir
from kbench.results.counts import parse_mix
from kbench.targets.tools import find_qemu

EXSME = f"{ARCH_PATTERN}/libexsme.so"
EXWHOLE = f"{ARCH_PATTERN}/libexwhole.so"


def _qemu() -> None:
    try:
        find_qemu()
    except Exception as exc:  # noqa: BLE001 - any reason to skip is reported
        pytest.skip(f"no qemu-aarch64: {exc}")


def _kbench(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def _count_json(svl: int, *options: str, plugin: bool = True) -> list[dict]:
    which = (["--plugin", EXSME, "--realization", "exsme.gemm_sme2_mopa", "--against"]
             if plugin else ["--realization"])
    res = _kbench("count", *which, "gemm_sme2_mopa_f32acc", "--target", f"qemu:svl={svl}",
                  "--shapes", "kleidiai_anchors", "--no-verify", "--json", *options)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    doc = json.loads(res.stdout)
    jsonschema.Draft202012Validator(json.loads(
        (resource_dir("reports") / "schema" / "count.schema.json").read_text())).validate(doc)
    return doc


def test_the_micro_kernel_plugin_counts_our_kernel_to_the_instruction() -> None:
    """The example built from our SME2 MOPA micro-kernel, driven by kbench's plugin
    loop with --one-call, executes exactly the kernel instructions our own
    realization does (one run_matmul call over the whole problem in both), at SVL
    128 and 512; and our realization runs that one call without --one-call too
    (its single-threaded driver packs these LHS whole), while the plugin loop's
    default (one call per m_step band) takes more."""
    _qemu()
    for svl in (128, 512):
        rows = _count_json(svl, "--one-call")
        assert all(r["count_one_call"] is True for r in rows)
        by = {(r["realization"], r["case"]): r for r in rows}
        plain = {r["case"]: r for r in _count_json(svl, plugin=False)}
        banded = {(r["realization"], r["case"]): r for r in _count_json(svl)}
        for case in ("anchor_m256_n256_k256", "anchor_m37_n53_k45"):
            ours, plugin = by["gemm_sme2_mopa_f32acc", case], by["exsme.gemm_sme2_mopa", case]
            assert plain[case]["count_kernel"] == ours["count_kernel"], (svl, case)
            assert "count_one_call" not in plain[case]
            assert banded["exsme.gemm_sme2_mopa", case]["count_kernel"] > ours["count_kernel"]
            assert plugin["count_kernel"] == ours["count_kernel"] > 0, (svl, case)
            mine, theirs = parse_mix(plugin["count_mix"]), parse_mix(ours["count_mix"])
            assert mine["kernel"] == theirs["kernel"], (svl, case)  # the whole mix, class by class
            assert mine["kernel"]["outer"] > 0
            assert plugin["ratios"]["gemm_sme2_mopa_f32acc"]["kernel"] == 1.0
            # the plugin's own packers and kbench's code around them are phases too
            assert plugin["count_pack_lhs"] > 0 and plugin["count_other"] > 0
            assert plugin["count_pack_b"] > plugin["count_pack_b_checksum"] > 0


def test_plugin_counts_go_into_results_and_a_one_percent_growth_fails_the_gate(
        tmp_path: Path) -> None:
    _qemu()
    out = tmp_path / "base"
    res = _kbench("run", "--suite", "perf", "--shapes", "smoke", "-k", "m7_n8|k1x3_p0011",
                  "--backend", "plugin", "--plugin", EXWHOLE, "--target", "qemu:svl=512",
                  "--rounds", "1", "--min-round-ms", "0", "--warmup", "0", "--no-history",
                  "--out", str(out))
    assert res.returncode == 0, res.stdout[-3000:]
    with (out / "results.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    perf = [r for r in rows if r["suite"] == "perf"]
    assert perf and all(r["plugin"] == "exwhole 1.0.0" and r["count_note"] == "" for r in perf)
    assert all(float(r["count_call"]) > 0 and float(r["count_kernel"]) > 0 for r in perf)
    assert all(float(r["count_kernel"]) < float(r["count_call"]) for r in perf)
    # the same run with one plugin case's call grown by 1%: the gate fails on it alone
    cand = tmp_path / "cand"
    subprocess.run(["cp", "-r", str(out), str(cand)], check=True)
    grown = perf[0]
    for r in rows:
        if r is grown:
            for col in ("count_call", "count_kernel"):
                r[col] = str(round(float(r[col]) + 0.01 * float(grown["count_call"])))
    with (cand / "results.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    same = _kbench("gate", str(out), str(out))
    assert same.returncode == 0, same.stdout
    gate = _kbench("gate", str(out), str(cand))
    assert gate.returncode == 1, gate.stdout
    fails = [line for line in gate.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and grown["realization"] in fails[0] and grown["case"] in fails[0]


def test_a_kernel_entry_counts_the_library_function_behind_an_adapter() -> None:
    """--kernel-entry: the kernel phase is the named function of the plugin's
    library (here the GEMV's core behind its run_matmul, which fills the core's
    argument block), the table's entry point's own instructions go to other;
    the call's total does not move. A realization or a function that is not
    there is a one-line error."""
    _qemu()
    entry = ("exsme.gemv_sme2_dot=kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot.c:"
             "kb_sme2_gemv_core")
    base = ["count", "--plugin", EXSME, "--realization", "exsme.gemv_sme2_dot", "--target",
            "qemu:svl=512", "--shape", "1x128x256", "--no-verify", "--json"]
    plain, inner = (json.loads(_kbench(*base, *extra).stdout)[0]
                    for extra in ((), ("--kernel-entry", entry)))
    assert inner["count_call"] == plain["count_call"]
    moved = plain["count_kernel"] - inner["count_kernel"]
    assert 0 < moved < 100 and inner["count_other"] == plain["count_other"] + moved
    assert parse_mix(inner["count_mix"])["kernel"]["dot"] == \
        parse_mix(plain["count_mix"])["kernel"]["dot"] > 0
    for bad, msg in (("exsme.nothing=f", "is not a loaded plugin's realization"),
                     ("exsme.gemv_sme2_dot=no_such_function", "0 functions of that name"),
                     ("exsme.gemv_sme2_dot", "is not REALIZATION=FUNCTION")):
        res = _kbench(*base, "--kernel-entry", bad)
        assert res.returncode != 0 and msg in res.stderr and "Traceback" not in res.stderr, \
            res.stderr
