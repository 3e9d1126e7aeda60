"""`kbench report`: the tables computed from a run folder, the plots, the
HTML page and CSV files, the command, and the page as headless Chromium
renders it.

The runs are synthetic but realistic, written with the real RunWriter and
read back with the real loader: a hardware target with correctness,
contract and timed rows (LLM decode GEMMs, ResNet-50 and MobileNet-v2
convolutions, several realizations, thread counts, a row whose timing
failed), an emulated target with timed rows, and a baseline run."""

from __future__ import annotations

import base64
import collections
import io
import json
import os
import re
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field, replace
from html import unescape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from matplotlib.image import imread

from kbench.cli.report import report as report_command
from kbench.judge.verdict import Verdict
from kbench.results import report as rep
from kbench.results import report_perf as rep_perf
from kbench.results import report_verdicts as rep_verdicts
from kbench.results.runfolder import Run, load_run
from kbench.results.store import RunWriter

HOST, QEMU = "host", "qemu:cpu=max"
LLAMA, RESNET, MOBILENET = "llm-llama7b-decode", "resnet50", "mobilenet-v2"
ACCUM = {"gemm_scalar_f32acc": "fp32", "gemm_neon_f32acc_fhm": "fp32",
         "gemm_neon_f32acc_cvt": "fp32", "gemm_neon_f16acc": "fp16",
         "conv2d_direct_scalar_f32acc": "fp32", "conv2d_igemm_neon_f32acc_fhm": "fp32",
         "conv2d_im2col_gemm_neon_f32acc_fhm": "fp32"}

# (catalog, case, shape, layers, m, n, k, scalar median ns)
LLAMA_CASES = [(LLAMA, "llama7b_qkvo", "m1n4096k4096", 128, 1, 4096, 4096, 40e6),
               (LLAMA, "llama7b_gate_up", "m1n11008k4096", 64, 1, 11008, 4096, 100e6),
               (LLAMA, "llama7b_down", "m1n4096k11008", 32, 1, 4096, 11008, 100e6)]
RESNET_CASES = [(RESNET, "rn50_conv1", "n1h224w224c3o64k7x7s2x2p3_3_3_3", 1, 12544, 64, 147,
                 200e6),
                (RESNET, "rn50_l1_3x3", "n1h56w56c64o64k3x3p1_1_1_1", 3, 3136, 64, 576, 120e6),
                (RESNET, "rn50_l4_1x1", "n1h7w7c512o2048k1x1", 3, 49, 2048, 512, 60e6)]
MOBILENET_CASES = [(MOBILENET, "mnv2_pw_block3", "n1h56w56c24o144k1x1", 2, 3136, 144, 24, 9e6)]

# realization -> (divisor of the scalar time, threads); None: the row is not timed
LLAMA_REALS = [("gemm_scalar_f32acc", 1.0, 1), ("gemm_neon_f32acc_fhm", 4.0, 1),
               ("gemm_neon_f16acc", 8.0, 1), ("gemm_neon_f16acc", 24.0, 4)]
CONV_REALS = [("conv2d_direct_scalar_f32acc", 1.0, 1), ("conv2d_igemm_neon_f32acc_fhm", 5.0, 1),
              ("conv2d_im2col_gemm_neon_f32acc_fhm", 4.0, 1)]
GEMM_KS = (16, 64, 256, 1024, 4096)
BASELINE_NEON_FACTOR = 1.25  # the baseline's NEON rows are this much slower


def _backend(realization: str) -> str:
    return next((b for b in ("scalar", "neon", "sme") if f"_{b}" in realization), "-")


def _verdict(**kw: Any) -> Verdict:
    real = kw["realization"]
    base: dict[str, Any] = dict(
        case="c", op="gemm", shape="m1n1k1", kind="uniform", target=HOST, backend=_backend(real),
        kernel=f"kernel_of_{real}", accum=ACCUM.get(real, "-"), k=1, m=1, n=1, b_form="plain",
        vector_bits=0, status="pass")
    base.update(kw)
    return Verdict(**base)


def _perf(case: tuple, real: str, divisor: float, threads: int, target: str = HOST,
          emulated: bool = False, scale: float = 1.0, nan_time: bool = False) -> Verdict:
    catalog, name, shape, layers, m, n, k, scalar_ns = case
    op = "gemm" if catalog == LLAMA else "conv2d"
    median = float("nan") if nan_time else scalar_ns / divisor * scale
    rounds = [median * f for f in (1.02, 1.0, 0.99, 1.01, 1.03)]
    flops = 2 * m * n * k
    return _verdict(
        case=name, op=op, shape=shape, kind="uniform", target=target, realization=real,
        k=k, m=m, n=n,
        b_form="native" if op == "gemm" else "-", status="pass", catalog=catalog, suite="perf",
        layers=layers, flops=flops, threads=threads, emulated=emulated, rounds=5,
        reps_per_round=3, time_min_ns=min(rounds), time_median_ns=median,
        time_mean_ns=float(np.mean(rounds)), time_stdev_ns=float(np.std(rounds)),
        round_times_ns=[] if nan_time else rounds,
        gflops=float("nan") if nan_time else flops / median, pack_time_ns=1e5,
        max_err_bound=0.5, max_ulp=1.0, total=n, exact=n)


def _correctness_rows() -> list[Verdict]:
    rows = []
    for real in ("gemm_scalar_f32acc", "gemm_neon_f32acc_fhm", "gemm_neon_f16acc"):
        fp16 = ACCUM[real] == "fp16"
        for k in GEMM_KS:
            for kind in ("exact", "uniform", "normal", "specials"):
                real_valued = kind in ("uniform", "normal")
                ulp = (4.0 * np.sqrt(k) + (kind == "normal")) if fp16 else 1.0
                status, message, ratio = "pass", "", (0.3 / np.sqrt(k) if fp16 else 0.95)
                if fp16 and k == 4096 and kind == "uniform":
                    status, ratio = "mistrusted", 0.0
                    message = "the declared fp16 model gives no bound at K' = 4097"
                if fp16 and k == 64 and kind == "normal":
                    status, message = "fail", "3 element(s) outside the bound"
                rows.append(_verdict(
                    case=f"m7_n33_k{k}", shape=f"m7n33k{k}", kind=kind, realization=real, k=k,
                    m=7, n=33, status=status, message=message, catalog="correctness_gemm",
                    max_err_bound=ratio if real_valued else (0.0 if kind == "exact" else 50.0),
                    max_ulp=ulp if real_valued else (0.0 if kind == "exact" else 9999.0),
                    rms_rel=1e-4 * (np.sqrt(k) if fp16 else 0.1), exact=200, total=231))
    for k in (27, 576):
        for kind in ("exact", "uniform"):
            rows.append(_verdict(case=f"conv_k{k}", op="conv2d", shape=f"conv{k}", kind=kind,
                                 realization="conv2d_direct_scalar_f32acc", k=k,
                                 catalog="correctness_conv", max_err_bound=0.9, max_ulp=1.0,
                                 exact=10, total=10))
    rows.append(_verdict(case="m7_n33_k16", shape="m7n33k16", realization="gemm_sme_mopa_f32acc",
                         k=16, status="skip", catalog="correctness_gemm",
                         message="SME not available"))
    rows.append(_verdict(case="m7_n33_k16", shape="m7n33k16", target=QEMU, k=16,
                         realization="gemm_scalar_f32acc", catalog="correctness_gemm",
                         max_err_bound=0.9, max_ulp=1.0, exact=231, total=231))
    for name in ("gemm_k_zero", "packed_wrong_backend", "header_corrupted"):
        rows.append(_verdict(case=name, op="contract", shape="", kind="misuse", backend="-",
                             realization="-", accum="-", k=0, suite="contracts"))
    return rows


# (realization, op, case, kind, k, accum_model, accum_match): an onnxruntime peer
# whose GEMMs reached an FP32-accumulating path, except two that fell back to
# an FP16 chain, one too short to tell, and a convolution no model explains
PEER_PRINTS = [
    ("ort_matmul_f16", "gemm", "m64_n64_k256", "normal", 256, "fp32_once", 1.0),
    ("ort_matmul_f16", "gemm", "m16_n64_k1024", "uniform", 1024, "fp32_once", 0.999),
    ("ort_matmul_f16", "gemm", "m7_n33_k2048", "normal", 2048, "fp32_chain_bias16", 1.0),
    ("ort_matmul_f16", "gemm", "m33_n7_k300", "specials", 300, "fp16_fma_chain", 1.0),
    ("ort_matmul_f16", "gemm", "m1_n512_k512", "normal", 512, "fp16_fma_chain_bias_first",
     0.9995),
    ("ort_matmul_f16", "gemm", "m4_n4_k1", "uniform", 1, "indistinguishable", 1.0),
    ("ort_conv_f16", "conv2d", "conv_3x3_c64", "normal", 576, "fp32_chain@chw", 1.0),
    ("ort_conv_f16", "conv2d", "conv_1x1_c256", "uniform", 256, "fp16_blocked[16]@hwc", 0.41),
]


def _fingerprinted_rows() -> list[Verdict]:
    rows = [_verdict(case=case, op=op, shape=case, kind=kind, realization=real, backend="ort",
                     accum="fp16", k=k, catalog=f"correctness_{op}", accum_model=model,
                     accum_match=match, exact=90, total=100)
            for real, op, case, kind, k, model, match in PEER_PRINTS]
    rows.append(_verdict(case="m64_n64_k256", shape="m64n64k256", realization="gemm_scalar_f32acc",
                         k=256, catalog="correctness_gemm", exact=100, total=100))
    rows.append(_verdict(case="m64_n64_k256", shape="m64n64k256", kind="exact",
                         realization="ort_matmul_f16", backend="ort", accum="fp16", k=256,
                         catalog="correctness_gemm", exact=100, total=100))
    return rows


def _perf_rows(emulated_target: bool = True) -> list[Verdict]:
    rows = [_perf(c, r, d, t) for c in LLAMA_CASES for r, d, t in LLAMA_REALS]
    for case in RESNET_CASES:
        for real, div, thr in CONV_REALS:
            if real.startswith("conv2d_im2col") and case[1] == "rn50_conv1":
                continue  # this realization lacks a shape: its model total is incomplete
            rows.append(_perf(case, real, div, thr))
    rows.append(_perf(MOBILENET_CASES[0], "conv2d_direct_scalar_f32acc", 1.0, 1))
    rows.append(_perf(MOBILENET_CASES[0], "conv2d_igemm_neon_f32acc_fhm", 1.0, 1,
                      nan_time=True))
    if emulated_target:
        rows += [_perf(c, r, 0.01, 1, target=QEMU, emulated=True)
                 for c in LLAMA_CASES for r in ("gemm_scalar_f32acc", "gemm_neon_f16acc")]
    return rows


def _target_meta(spec: str, emulated: bool, reals: list[str]) -> dict[str, Any]:
    return {"name": spec, "kind": "worker" if emulated else "in-process", "emulated": emulated,
            "arch": "aarch64", "cpu_features": ["fp16", "fhm"], "sme_vector_bits": 0,
            "isa": "fhm", "library_version": "0.1.0",
            "realizations": [{"name": r, "backend": "neon" if "neon" in r else "scalar"}
                             for r in reals]}


def _meta(commit: str) -> dict[str, Any]:
    return {"host": "board", "platform": "Linux-6.1-aarch64", "machine": "aarch64",
            "cpu_model": "Neoverse-N1", "python": "3.11.7", "compiler": "gcc",
            "c_flags": ["-O2", "-std=c11"], "git_commit": commit, "git_dirty": False,
            "date": "2026-11-29T10:00:00+00:00", "command_line": "kbench run --suite all",
            "targets": {HOST: _target_meta(HOST, False, sorted(ACCUM)),
                        QEMU: _target_meta(QEMU, True, sorted(ACCUM))}}


def write_run(folder: Path, rows: list[Verdict], complete: bool = True,
              commit: str = "a" * 40) -> Run:
    writer = RunWriter(folder, _meta(commit))
    writer.add_all(rows)
    writer.close(complete=complete)
    return load_run(folder)


def _baseline_rows() -> list[Verdict]:
    rows = []
    for v in _perf_rows():
        if v.realization == "gemm_neon_f16acc" and v.threads == 1 and v.case == "llama7b_down":
            continue  # a row the baseline does not have
        if v.backend == "neon" and not v.emulated:
            v = replace(v, time_median_ns=v.time_median_ns * BASELINE_NEON_FACTOR)
        rows.append(v)
    rows.append(_perf(LLAMA_CASES[0], "gemm_neon_f32acc_cvt", 3.0, 1))  # only in the baseline
    return rows


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    base = tmp_path_factory.mktemp("runs")
    return {
        "main": write_run(base / "main", _correctness_rows() + _perf_rows(), complete=False),
        "baseline": write_run(base / "baseline", _baseline_rows(), commit="b" * 40),
        "correctness": write_run(base / "correctness", _correctness_rows()),
        "emulated_only": write_run(base / "emulated_only",
                                   [v for v in _perf_rows() if v.emulated], complete=False),
        "empty": write_run(base / "empty", [], complete=False),
        "peer": write_run(base / "peer", _fingerprinted_rows()),
    }


@pytest.fixture(scope="module")
def built(runs: dict[str, Run], tmp_path_factory: pytest.TempPathFactory) -> rep.ReportFiles:
    return rep.build_report(runs["main"], runs["baseline"], tmp_path_factory.mktemp("report"))


def _one(df: pd.DataFrame, **where: Any) -> pd.Series:
    sel = df
    for col, val in where.items():
        sel = sel[sel[col] == val]
    assert len(sel) == 1, f"{len(sel)} rows match {where}"
    return sel.iloc[0]


# ----------------------------------------------------------------------------- tables

def test_the_loader_sees_the_synthetic_timings(runs: dict[str, Run]) -> None:
    perf = runs["main"].perf()
    assert len(perf) == 12 + 8 + 2 + 6
    assert perf["round_times"].map(len).max() == 5
    assert perf["emulated"].sum() == 6


def test_verdict_matrix_counts_and_worst_verdict(runs: dict[str, Run]) -> None:
    vm = rep.verdict_matrix(runs["main"].results)
    neon = _one(vm, target=HOST, backend="neon", catalog="correctness_gemm")
    # 2 realizations x 5 K x 4 kinds; one fail, one mistrusted
    assert (neon["cases"], neon["pass"], neon["fail"], neon["mistrusted"]) == (40, 38, 1, 1)
    assert neon["verdict"] == "fail"
    assert _one(vm, target=HOST, backend="scalar", catalog="correctness_gemm")["verdict"] == "pass"
    contracts = _one(vm, backend="-", catalog="contracts")
    assert (contracts["cases"], contracts["verdict"]) == (3, "pass")
    sme = _one(vm, backend="sme")
    assert (sme["skip"], sme["verdict"]) == (1, "skip")
    perf = _one(vm, target=HOST, backend="neon", catalog=LLAMA)
    assert perf["cases"] == 9
    assert list(vm["backend"].drop_duplicates())[:3] == ["scalar", "neon", "sme"]
    assert len(rep.failures(runs["main"].results)) == 1


def test_gflops_table_uses_hardware_timings_only(runs: dict[str, Run]) -> None:
    g = rep.gflops_table(runs["main"])
    assert set(g["target"]) == {HOST}
    assert len(g) == 12 + 8 + 2
    row = _one(g, case="llama7b_qkvo", realization="gemm_neon_f32acc_fhm")
    assert row["gflops"] == pytest.approx(2 * 4096 * 4096 / 10e6)
    assert row["cv"] > 0
    # the thread count shows in the series label where the realization varies it
    assert set(g.loc[g["realization"] == "gemm_neon_f16acc", "series"]) == {
        "gemm_neon_f16acc ×1t", "gemm_neon_f16acc ×4t"}
    failed = _one(g, case="mnv2_pw_block3", realization="conv2d_igemm_neon_f32acc_fhm")
    assert np.isnan(failed["gflops"]) and np.isnan(failed["time_median_ns"])


def test_emulated_times_are_kept_apart_and_labelled(runs: dict[str, Run]) -> None:
    emu = rep.emulated_times(runs["main"])
    assert len(emu) == 6
    assert set(emu["target"]) == {QEMU}
    assert set(emu["label"]) == {"emulated — not a speed"}
    assert "gflops" not in emu.columns and "speedup" not in emu.columns


def test_speedup_over_the_scalar_reference(runs: dict[str, Run]) -> None:
    s = rep.speedup_vs_scalar(runs["main"])
    assert set(s["target"]) == {HOST}
    for case in LLAMA_CASES:
        expect = {"gemm_scalar_f32acc": 1.0, "gemm_neon_f32acc_fhm": 4.0,
                  "gemm_neon_f16acc ×1t": 8.0, "gemm_neon_f16acc ×4t": 24.0}
        for series, speedup in expect.items():
            row = _one(s, case=case[1], series=series)
            assert row["speedup"] == pytest.approx(speedup)
            assert row["ref_realization"] == "gemm_scalar_f32acc"
            assert row["ref_threads"] == 1
    conv = _one(s, case="rn50_l1_3x3", realization="conv2d_igemm_neon_f32acc_fhm")
    assert conv["ref_realization"] == "conv2d_direct_scalar_f32acc"
    assert conv["speedup"] == pytest.approx(5.0)
    assert np.isnan(_one(s, case="mnv2_pw_block3",
                         realization="conv2d_igemm_neon_f32acc_fhm")["speedup"])


def test_speedup_over_the_baseline(runs: dict[str, Run]) -> None:
    b = rep.speedup_vs_baseline(runs["main"], runs["baseline"])
    assert set(b["target"]) == {HOST}  # emulated rows of either run never compared
    both = b[b["presence"] == "both"]
    neon = both[(both["realization"].str.contains("neon")) & both["speedup"].notna()]
    assert len(neon) == 3 * 3 - 1 + 3 + 2  # LLaMA, ResNet-50; MobileNet's NEON row has no time
    assert np.allclose(neon["speedup"], BASELINE_NEON_FACTOR)
    assert np.allclose(neon["time_change"], 1 / BASELINE_NEON_FACTOR - 1)
    scalar = both[both["realization"].str.contains("scalar")]
    assert np.allclose(scalar["speedup"], 1.0)
    missing = _one(b, presence="no baseline row")
    assert (missing["case"], missing["realization"], missing["threads"]) == (
        "llama7b_down", "gemm_neon_f16acc", 1)
    assert np.isnan(missing["speedup"])
    extra = _one(b, presence="only in baseline")
    assert extra["realization"] == "gemm_neon_f32acc_cvt"
    assert np.isnan(extra["speedup"])
    assert rep.speedup_vs_baseline(runs["main"], None).empty


def test_model_totals_weight_shapes_by_layers(runs: dict[str, Run]) -> None:
    m = rep.model_totals(runs["main"])
    assert set(m["target"]) == {HOST}
    scalar_total = sum(c[3] * c[7] for c in LLAMA_CASES)  # layers x scalar time
    scalar = _one(m, model=LLAMA, realization="gemm_scalar_f32acc")
    assert scalar["total_time_ns"] == pytest.approx(scalar_total)
    assert scalar["layers"] == 128 + 64 + 32
    assert scalar["total_gflop"] == pytest.approx(
        sum(c[3] * 2 * c[4] * c[5] * c[6] for c in LLAMA_CASES) / 1e9)
    fhm = _one(m, model=LLAMA, realization="gemm_neon_f32acc_fhm")
    assert fhm["total_time_ns"] == pytest.approx(scalar_total / 4)
    assert fhm["speedup_vs_scalar"] == pytest.approx(4.0)
    best = _one(m, model=LLAMA, series="best per shape")
    assert best["speedup_vs_scalar"] == pytest.approx(24.0)
    im2col = _one(m, model=RESNET, realization="conv2d_im2col_gemm_neon_f32acc_fhm")
    assert (im2col["shapes"], im2col["shapes_in_model"], im2col["complete"]) == (2, 3, False)
    assert np.isnan(im2col["speedup_vs_scalar"])
    assert _one(m, model=RESNET, realization="conv2d_igemm_neon_f32acc_fhm")[
        "speedup_vs_scalar"] == pytest.approx(5.0)
    # MobileNet: the NEON row has no time, so the fastest per shape is the scalar one
    assert _one(m, model=MOBILENET, series="best per shape")["speedup_vs_scalar"] == 1.0


def test_error_versus_k(runs: dict[str, Run]) -> None:
    e = rep.error_vs_k(runs["main"].results)
    f16 = e[(e["target"] == HOST) & (e["realization"] == "gemm_neon_f16acc")].sort_values("k")
    assert list(f16["k"]) == list(GEMM_KS)
    assert list(f16["cases"]) == [2] * len(GEMM_KS)  # uniform + normal, not exact/specials
    assert f16["max_ulp"].is_monotonic_increasing
    assert f16["max_ulp"].iloc[-1] == pytest.approx(4.0 * 64 + 1)
    # at K = 4096 the uniform case is mistrusted for lack of a bound: only normal's ratio counts
    assert f16["max_err_bound"].iloc[-1] == pytest.approx(0.3 / 64)
    assert f16["failed"].sum() == 1 and f16["mistrusted"].sum() == 1
    f32 = e[(e["target"] == HOST) & (e["realization"] == "gemm_scalar_f32acc")]
    assert set(f32["max_ulp"]) == {1.0}
    assert not (e["realization"] == "-").any()  # contract rows carry no error
    assert set(e["op"]) == {"gemm", "conv2d"}


def test_error_plot_has_one_series_per_realization(runs: dict[str, Run]) -> None:
    table = rep.error_vs_k(runs["main"].results)
    fig = rep.plot_error_vs_k(table, "gemm", rep.series_colors(list(table["realization"])))
    expect = {f"{r} @ {t}" for t, r in zip(*(table.loc[table["op"] == "gemm", c]
                                            for c in ("target", "realization")), strict=True)}
    assert len(expect) == 4
    # the FP32 NEON kernel and the scalar reference have identical errors at every K
    # (bit-identical): one line labelled with both
    expect -= {"gemm_neon_f32acc_fhm @ host", "gemm_scalar_f32acc @ host"}
    expect.add("gemm_neon_f32acc_fhm = gemm_scalar_f32acc @ host")
    assert len(fig.axes) == 3
    for ax in fig.axes:
        labels = {ln.get_label() for ln in ax.get_lines() if not ln.get_label().startswith("_")}
        assert labels == expect
        assert ax.get_xlabel() == "K (reduction length)" and ax.get_ylabel() and ax.get_title()
    f16 = next(ln for ln in fig.axes[1].get_lines() if ln.get_label().startswith("gemm_neon_f16"))
    assert list(f16.get_xdata()) == list(GEMM_KS)


def test_metadata_sets_run_and_baseline_side_by_side(runs: dict[str, Run]) -> None:
    md = rep.metadata(runs["main"], runs["baseline"]).set_index("field")
    assert md.loc["git_commit", "run"] == "a" * 40
    assert md.loc["git_commit", "baseline"] == "b" * 40
    assert md.loc["complete", "run"] == "False" and md.loc["complete", "baseline"] == "True"
    assert md.loc[f"target {QEMU}: emulated", "run"] == "True"
    assert md.loc["c_flags", "run"] == "-O2, -std=c11"
    assert list(rep.metadata(runs["main"], None).columns) == ["field", "run"]


def test_fingerprints_table_lists_fingerprinted_rows_fp16_first(runs: dict[str, Run]) -> None:
    fp = rep.fingerprints(runs["peer"].results)
    assert len(fp) == len(PEER_PRINTS)  # rows without a fingerprint are left out
    assert list(fp.columns) == rep.FINGERPRINT_COLUMNS
    gemm = fp[fp["realization"] == "ort_matmul_f16"]
    assert list(gemm["category"]) == ["fp16", "fp16", "fp32", "fp32", "fp32",
                                      "indistinguishable"]
    row = _one(fp, case="m1_n512_k512")
    assert row["label"] == "FP16 chain (fp16_fma_chain_bias_first, 99.9%)"
    assert row["declared"] == "fp16" and row["status"] == "pass"
    assert _one(fp, case="conv_1x1_c256")["category"] == "unexplained"
    assert _one(fp, case="conv_3x3_c64")["label"] == "FP32 accumulation (fp32_chain@chw, 100%)"
    assert rep.fingerprints(runs["main"].results).empty


def test_fingerprint_summary_counts_per_realization(runs: dict[str, Run]) -> None:
    summary = rep.fingerprint_summary(rep.fingerprints(runs["peer"].results))
    assert list(summary.columns) == rep_verdicts.FINGERPRINT_SUMMARY_COLUMNS
    gemm = _one(summary, realization="ort_matmul_f16")
    assert (gemm["results"], gemm["fp32"], gemm["fp16"], gemm["indistinguishable"],
            gemm["unexplained"]) == (6, 3, 2, 1, 0)
    assert gemm["fp16_cases"] == "m1_n512_k512, m33_n7_k300"
    assert gemm["models"].startswith("fp32_once ×2, ")
    assert "indistinguishable" not in gemm["models"]
    conv = _one(summary, realization="ort_conv_f16")
    assert (conv["fp32"], conv["unexplained"], conv["fp16_cases"]) == (1, 1, "")


def test_report_shows_the_fingerprint_section(runs: dict[str, Run], tmp_path: Path) -> None:
    files = rep.build_report(runs["peer"], None, tmp_path)
    html = files.html.read_text(encoding="utf-8")
    section = re.search(r'<section id="fingerprints">.*?</section>', html, re.S)
    assert section is not None
    text = section.group(0)
    assert "<h2>Accumulation fingerprints</h2>" in text and 'href="#fingerprints"' in html
    assert text.count('class="accum-fp16"') == 2 and text.count('class="accum-fp32"') == 4
    assert 'class="accum-unexplained"' in text and 'class="accum-indistinguishable"' in text
    assert "m1_n512_k512, m33_n7_k300" in text and "99.9%" in text
    assert len(pd.read_csv(files.tables["fingerprints"])) == len(PEER_PRINTS)
    assert len(pd.read_csv(files.tables["fingerprint_summary"])) == 2
    main = rep.build_report(runs["correctness"], None, tmp_path / "plain")
    assert "No fingerprints in this run" in main.html.read_text(encoding="utf-8")


def test_a_run_written_before_the_fingerprint_columns_loads_and_reports(
        runs: dict[str, Run], tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(runs["peer"].path, old)
    csv_path = old / "results.csv"
    frame = pd.read_csv(csv_path, keep_default_na=False)
    frame.drop(columns=["accum_model", "accum_match"]).to_csv(csv_path, index=False)
    run = load_run(old)
    assert set(run.results["accum_model"]) == {""}
    assert run.results["accum_match"].isna().all()
    files = rep.build_report(run, runs["peer"], tmp_path / "report")
    assert "No fingerprints in this run" in files.html.read_text(encoding="utf-8")
    assert "fingerprints" not in files.tables  # no rows: no file
    assert not (tmp_path / "report" / "fingerprints.csv").exists()
    fresh = load_run(runs["peer"].path)
    assert (fresh.results["accum_model"] != "").sum() == len(PEER_PRINTS)
    assert _one(fresh.results, case="m16_n64_k1024")["accum_match"] == pytest.approx(0.999)


# ----------------------------------------------------------------------------- files

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DATA_URI = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def _embedded_pngs(html: str) -> list[np.ndarray]:
    images = []
    for payload in DATA_URI.findall(html):
        raw = base64.b64decode(payload, validate=True)
        assert raw.startswith(PNG_SIGNATURE)
        images.append(imread(io.BytesIO(raw), format="png"))
    return images


def test_report_files(built: rep.ReportFiles, runs: dict[str, Run]) -> None:
    assert built.html.name == "report.html" and built.html.parent == built.tables["gflops"].parent
    every = set(rep.ReportTables.__dataclass_fields__)
    # a CSV for each table with rows, none for the others (no empty files)
    assert {"verdict_matrix", "failures", "gflops", "speedup_vs_scalar", "speedup_vs_baseline",
            "emulated_times", "error_vs_k", "model_totals", "metadata"} <= set(built.tables)
    assert {"mutation_areas", "mutation_mutants", "plugins", "count_anchors"}.isdisjoint(
        built.tables)
    for name in every:
        path = built.html.parent / f"{name}.csv"
        assert path.exists() == (name in built.tables), name
        if path.exists():
            assert not pd.read_csv(path).empty, name
    html = built.html.read_text(encoding="utf-8")
    for name in every - set(built.tables):
        assert f'href="{name}.csv"' not in html  # no link to a file not written
    gflops = pd.read_csv(built.tables["gflops"])
    assert len(gflops) == len(rep.gflops_table(runs["main"]))
    speedups = pd.read_csv(built.tables["speedup_vs_scalar"])
    assert speedups["speedup"].max() == pytest.approx(24.0)
    html = built.html.read_text(encoding="utf-8")
    for section in ("verdicts", "performance", "emulated", "baseline", "models", "error",
                    "fingerprints", "metadata"):
        assert f'<section id="{section}">' in html
    assert "incomplete run" in html
    assert "emulated — not a speed" in html
    assert "llama7b_down" in html or "m1n4096k11008" in html
    # self-contained: every image embedded, nothing fetched, no script
    assert html.count("<img ") == len(DATA_URI.findall(html))
    assert not re.search(r'(src|href)="(https?:|//)', html)
    # one inline script (sorting and filtering tables), nothing loaded from anywhere
    assert html.count("<script") == 1 and not re.search(r"<script[^>]*\ssrc=", html)
    images = _embedded_pngs(html)
    # a perf figure per (target, catalog), baseline, model totals, error per op
    assert len(images) == 3 + 1 + 1 + 2
    for img in images:
        assert img.shape[0] > 100 and img.shape[1] > 100
        assert _colours(img) > 8  # not one colour



def test_report_names_its_emulated_targets_and_lists_target_fields_once(
        built: rep.ReportFiles) -> None:
    html = built.html.read_text(encoding="utf-8")
    # the banner names the emulated target alone, never the host beside it
    assert f"Emulated target: {QEMU}. Times measured there are" in html
    section = html.split('<section id="metadata">', 1)[1].split("</section>", 1)[0]
    targets, run_part = section.split("<h3>Run and baseline</h3>", 1)
    # each target's fields sit in the targets table, the run table keeps the rest
    assert f"target {QEMU}: emulated" not in run_part and f"target {HOST}:" not in run_part
    assert "git_commit" in run_part and "c_flags" in run_part
    assert QEMU in targets and HOST in targets


TABLE = re.compile(r"<table[^>]*>(.*?)</table>", re.S)


def _html_table_after(html: str, marker: str) -> tuple[list[str], list[list[str]], str]:
    """The first table after `marker`: its columns, its rows' cell texts and its caption."""
    body = TABLE.search(html, html.index(marker)).group(1)
    caption = re.search(r"<caption>(.*?)</caption>", body, re.S)
    cols = [unescape(c) for c in re.findall(r"<th(?: [^>]*)?>(.*?)</th>", body, re.S)]
    rows = [[unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", body.split("<tbody>", 1)[1], re.S)]
    return cols, rows, unescape(caption.group(1)) if caption else ""


def test_report_tables_show_their_columns_and_rows(built: rep.ReportFiles,
                                                   runs: dict[str, Run]) -> None:
    html = built.html.read_text(encoding="utf-8")
    # one hardware target: the target column is left out of the timing tables
    cols, rows, _ = _html_table_after(html, "<h3>Timings</h3>")
    assert cols == ["catalog", "shape", "series", "threads", "gflops", "time_median_ns",
                    "time_min_ns", "time_stdev_ns", "cv", "noisy", "rounds", "reps_per_round",
                    "pack_time_ns"]
    assert len(rows) == len(rep.gflops_table(runs["main"]))
    # speedups of every realization but the scalar reference itself
    cols, rows, _ = _html_table_after(html, "<h3>Speedup over the scalar reference</h3>")
    assert cols == ["catalog", "shape", "series", "speedup", "time_median_ns",
                    "ref_time_median_ns", "ref_realization"]
    s = rep.speedup_vs_scalar(runs["main"])
    # (a row without a speedup, no reference on its case, is drawn nowhere: not listed)
    own = (s["realization"] != s["ref_realization"]) & (s["speedup"] > 0)
    assert 0 < own.sum() < len(s) and len(rows) == own.sum()
    assert all(not r[2].startswith(r[6]) for r in rows)
    cols, rows, _ = _html_table_after(html, '<section id="emulated">')
    assert cols == ["catalog", "shape", "series", "threads", "label", "time_median_ns",
                    "time_min_ns", "time_stdev_ns", "rounds"]
    assert len(rows) == 6
    # the tally above the page: each status's own count, 0 for those absent
    counts = runs["main"].results["status"].value_counts()
    tally = dict((s, int(n)) for n, s in re.findall(
        r'<span class="[a-z_]+">(\d+) ([a-z_]+)</span>', html.split('<p class="counts">')[1]
        .split("</p>")[0]))
    assert tally == {s: int(counts.get(s, 0)) for s in rep.STATUSES}
    assert 0 in tally.values() and max(tally.values()) > 1
    # the targets of the run and of its baseline, each row naming its run
    section = html.split('<section id="metadata">', 1)[1]
    cols, rows, _ = _html_table_after(section, "<h3>Targets</h3>")
    assert cols[:2] == ["run", "target"]
    expect = [(label, spec) for label in ("run", "baseline")
              for spec in runs["main" if label == "run" else "baseline"].meta["targets"]]
    assert [(r[0], r[1]) for r in rows] == expect
    assert f"· baseline {runs['baseline'].path.resolve().name}</p>" in html


def _shown(df: pd.DataFrame, columns: list[str]) -> list[str]:
    """The columns html_table shows: the target column only where targets differ."""
    return [c for c in columns if c != "target" or df["target"].nunique() > 1]


def test_report_comparison_model_and_error_tables(built: rep.ReportFiles,
                                                 runs: dict[str, Run]) -> None:
    html = built.html.read_text(encoding="utf-8")
    t = rep.compute_tables(runs["main"], runs["baseline"])
    cols, rows, _ = _html_table_after(html, "rows are on one side only.")
    assert cols == _shown(t.speedup_vs_baseline, [
        "target", "catalog", "shape", "series", "threads", "speedup", "time_change",
        "time_median_ns", "baseline_time_median_ns", "presence"])
    one_side = (t.speedup_vs_baseline["presence"] != "both").sum()
    assert 0 < one_side < len(rows)
    assert f"{one_side} of {len(t.speedup_vs_baseline)} rows are on one side only" in html
    # rows present on one side only are marked, every cell of them
    marked = re.findall(r'<tr>(<td class="[^"]*missing[^"]*">.*?)</tr>',
                        html.split("rows are on one side only.")[1].split("</table>")[0])
    assert len(marked) == one_side
    tables = [c for c, _, _ in (_html_table_after(html[m.start():], "<table")
                                for m in TABLE.finditer(html))]
    assert _shown(t.model_totals, ["target", "model", "series", "speedup_vs_scalar",
                                   "total_time_ns", "gflops", "shapes", "shapes_in_model",
                                   "complete", "layers"]) in tables
    assert _shown(t.error_vs_k, ["target", "op", "realization", "accum", "k", "cases",
                                 "max_err_bound", "max_ulp", "max_rms_rel",
                                 "min_exact_fraction", "failed", "mistrusted"]) in tables


def _render_without_plots(run: Run, tables: rep.ReportTables) -> str:
    """report.html of `tables` as render_html writes it, without charts."""
    csv_names = {name: f"{name}.csv" for name in rep.ReportTables.__dataclass_fields__}
    return rep.render_html(run, None, tables, collections.defaultdict(list), csv_names)


def _cases(frame: pd.DataFrame, n: int) -> pd.DataFrame:
    """n copies of frame's first row, named case000, case001, ..."""
    one = frame.iloc[[0]]
    return pd.concat([one.assign(case=f"case{i:03d}") for i in range(n)], ignore_index=True)


def test_report_sections_of_plugins_tuning_determinism_and_coverage(
        runs: dict[str, Run]) -> None:
    run = runs["main"]
    tables = rep.compute_tables(run, None)
    n = 501
    frames = {
        "tuning": pd.DataFrame({"target": [HOST], "rule": ["m<=16"]}),
        "plugins": pd.DataFrame({"target": [HOST], "plugin": ["libx.so"]}),
        "plugin_probes": pd.DataFrame({"probe": [f"probe{i:03d}" for i in range(n)]}),
        "determinism": pd.DataFrame({"target": [HOST], "realization": ["gemm_x"]}),
        "coverage": pd.DataFrame({"unit": [f"unit{i:03d}" for i in range(n)],
                                  "percent": [100.0] * 2 + [50.0] * (n - 2)}),
    }
    html = _render_without_plots(run, replace(tables, coverage_listing="uncovered: f+0x10",
                                              **frames))
    for anchor in ("tuning", "plugins", "determinism", "coverage"):
        assert f'<section id="{anchor}">' in html and f'<a href="#{anchor}">' in html
    for marker, cell in (('<section id="tuning">', "m<=16"), ('<section id="plugins">', "libx.so"),
                         ('<section id="determinism">', "gemm_x")):
        cols, rows, _ = _html_table_after(html, marker)
        assert [cell] in [[r[-1]] for r in rows]
    assert "2 of 501 units fully covered" in html
    assert "<pre class=\"listing\">uncovered: f+0x10</pre>" in html
    for marker, first in (("units fully covered", "unit"), ("<h3>Contract probes (501)</h3>",
                                                            "probe")):
        cols, rows, caption = _html_table_after(html, marker)
        assert len(rows) == 500 and caption == "first 500 of 501 rows; all of them in the CSV"
        assert rows[0][0] == f"{first}000" and rows[-1][0] == f"{first}499"


def test_report_section_of_a_mutation_campaign(runs: dict[str, Run]) -> None:
    """A mutation campaign's run folder: per-area and per-mutant tables (the
    first 500 mutants) and the campaign's summary, read only from a run whose
    kind says it is one."""
    from kbench.results import mutation

    base = runs["main"]
    data = {"mutants": [{"id": f"m{i:03d}", "area": "judge" if i % 2 else "oracle",
                         "status": "survived" if i < 3 else "killed",
                         "runs": [{"target": HOST, "killed": i >= 3, "failed": int(i >= 3)}]}
                        for i in range(501)]}
    tables = replace(rep.compute_tables(base, None), mutation_areas=mutation.area_table(data),
                     mutation_mutants=mutation.mutant_table(data))
    summary = {"mutants": 501, "seconds": 150.0, "not_run": ["m900", "m901"]}
    campaign = replace(base, meta={**base.meta, "kind": "mutation-campaign",
                                   "summary": summary})
    html = _render_without_plots(campaign, tables)
    assert '<section id="mutation">' in html and '<a href="#mutation">' in html
    assert "501 mutants in 2.5 min; 2 not run (time budget). CSV:" in html
    cols, rows, _ = _html_table_after(html, '<section id="mutation">')
    assert cols == mutation.AREA_COLUMNS
    assert [r[:4] for r in rows] == [["judge", "250", "249", "1"], ["oracle", "251", "249", "2"],
                                     ["all", "501", "498", "3"]]
    cols, rows, caption = _html_table_after(html, "<h3>Per mutant (501, survivors first)</h3>")
    assert cols == mutation.MUTANT_COLUMNS
    assert len(rows) == 500 and caption == "first 500 of 501 rows; all of them in the CSV"
    assert [r[0] for r in rows[:4]] == ["m000", "m001", "m002", "m003"]
    assert rows[-1][0] == "m499"
    # the summary is the campaign's: a run of another kind, or none, shows none
    for meta in ({**base.meta, "kind": "perf", "summary": summary},
                 {**base.meta, "kind": "mutation-campaign"}):
        html = _render_without_plots(replace(base, meta=meta), tables)
        assert "<h3>Per mutant (501, survivors first)</h3>" in html
        assert "mutants in" not in html and "not run (time budget)" not in html
    # a run that is no campaign has no mutation section
    html = _render_without_plots(base, rep.compute_tables(base, None))
    assert '<section id="mutation">' not in html and 'href="#mutation"' not in html


def test_report_fastest_per_shape_table(runs: dict[str, Run]) -> None:
    run = runs["main"]
    tables = rep.compute_tables(run, None)
    assert len(tables.fastest) > 1
    html = _render_without_plots(run, tables)
    cols, rows, _ = _html_table_after(html, "<h3>Fastest per shape</h3>")
    assert cols == _shown(tables.fastest, ["target", "catalog", "shape", "kernels", "winner",
                                           "fastest_ours", "ours_time_ns", "ours_gflops",
                                           "fastest_peer", "peer_time_ns", "peer_vs_ours",
                                           "noisy", "why"])
    assert len(rows) == len(tables.fastest)
    assert [r[cols.index("fastest_ours")] for r in rows] == list(tables.fastest["fastest_ours"])
    assert [r[cols.index("winner")] for r in rows] == list(tables.fastest["winner"])
    # a winner only where two or more kernels were timed; the others say why
    for r, (_, f) in zip(rows, tables.fastest.iterrows(), strict=True):
        assert (r[cols.index("winner")] != "") == (f["kernels"] >= 2)
        assert (r[cols.index("why")] == "") == (f["kernels"] >= 2)


def test_report_lists_the_first_500_fingerprints_without_their_label(
        runs: dict[str, Run]) -> None:
    run = runs["peer"]
    tables = rep.compute_tables(run, None)
    many = _cases(tables.fingerprints, 501)
    html = _render_without_plots(run, replace(tables, fingerprints=many))
    cols, rows, caption = _html_table_after(html, "<h3>Per case (501)</h3>")
    assert cols == _shown(many, [c for c in rep.FINGERPRINT_COLUMNS if c != "label"])
    assert len(rows) == 500 and caption == "first 500 of 501 rows; all of them in the CSV"
    assert [r[cols.index("case")] for r in rows] == [f"case{i:03d}" for i in range(500)]


def test_report_lists_the_first_100_failures_and_says_so(runs: dict[str, Run]) -> None:
    run = runs["main"]
    tables = rep.compute_tables(run, None)
    many = _cases(tables.failures, 150)
    html = _render_without_plots(run, replace(tables, failures=many))
    cols, rows, caption = _html_table_after(html, "<h3>Failures and errors (150)</h3>")
    assert len(rows) == 100 and caption == "first 100 of 150 rows; all of them in the CSV"
    assert [r[cols.index("case")] for r in rows] == [f"case{i:03d}" for i in range(100)]
    # without a baseline the targets table holds the run's own targets alone
    cols, rows, _ = _html_table_after(html.split('<section id="metadata">', 1)[1],
                                      "<h3>Targets</h3>")
    assert [(r[0], r[1]) for r in rows] == [("run", spec) for spec in run.meta["targets"]]

def test_report_of_a_run_without_timings(runs: dict[str, Run], tmp_path: Path) -> None:
    files = rep.build_report(runs["correctness"], None, tmp_path)
    html = files.html.read_text(encoding="utf-8")
    assert "has no timed rows" in html
    assert "No baseline given" in html
    assert "incomplete run" not in html
    assert len(_embedded_pngs(html)) == 2  # the error plots, one per operator
    assert "gflops" not in files.tables and not (tmp_path / "gflops.csv").exists()
    assert list(rep.gflops_table(runs["correctness"]).columns) == rep_perf.GFLOPS_COLUMNS


def test_report_of_emulated_timings_only(runs: dict[str, Run], tmp_path: Path) -> None:
    files = rep.build_report(runs["emulated_only"], runs["emulated_only"], tmp_path)
    html = files.html.read_text(encoding="utf-8")
    assert "measured under emulation: there is no speed to report" in html
    assert "Nothing to compare" in html
    assert "speedup_vs_baseline" not in files.tables and "model_totals" not in files.tables
    assert len(pd.read_csv(files.tables["emulated_times"])) == 6
    assert _embedded_pngs(html) == []


def test_report_of_an_empty_run(runs: dict[str, Run], tmp_path: Path) -> None:
    files = rep.build_report(runs["empty"], runs["correctness"], tmp_path)
    html = files.html.read_text(encoding="utf-8")
    assert "incomplete run" in html and "This run recorded no results" in html
    assert "No judged real-valued results" in html
    assert html.count("<img ") == 0
    assert set(files.tables) == {"metadata"}  # every other table has no rows: no file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metadata.csv", "report.html"]


def test_a_report_rewritten_into_its_folder_leaves_no_stale_table(runs: dict[str, Run],
                                                                 tmp_path: Path) -> None:
    first = rep.build_report(runs["main"], None, tmp_path)
    assert "gflops" in first.tables
    second = rep.build_report(runs["correctness"], None, tmp_path)
    assert "gflops" not in second.tables and not (tmp_path / "gflops.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["report.html", *(p.name for p in second.tables.values())])


# ----------------------------------------------------------------------------- command

def test_command_writes_into_the_run_folder_by_default(runs: dict[str, Run],
                                                       tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(runs["emulated_only"].path, run_dir)
    result = CliRunner().invoke(report_command, [str(run_dir), "--baseline",
                                                 str(runs["baseline"].path)])
    assert result.exit_code == 0, result.output
    out = run_dir / "report"
    written = rep.compute_tables(load_run(run_dir), runs["baseline"]).frames()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["report.html", *(f"{name}.csv" for name, f in written.items() if not f.empty)])
    assert f"report: {out / 'report.html'}" in result.output
    assert "incomplete run" in result.output
    assert "incomplete run" in (out / "report.html").read_text(encoding="utf-8")


def test_command_out_option(runs: dict[str, Run], tmp_path: Path) -> None:
    out = tmp_path / "elsewhere" / "report"
    result = CliRunner().invoke(report_command, [str(runs["empty"].path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "report.html").is_file() and (out / "metadata.csv").is_file()
    assert not (runs["empty"].path / "report").exists()


@pytest.mark.parametrize("which", ["run", "baseline"])
def test_command_rejects_a_folder_that_is_not_a_run(runs: dict[str, Run], tmp_path: Path,
                                                    which: str) -> None:
    (tmp_path / "notes.txt").write_text("not a run")
    args = ([str(tmp_path)] if which == "run"
            else [str(runs["correctness"].path), "--baseline", str(tmp_path),
                  "--out", str(tmp_path / "out")])
    result = CliRunner().invoke(report_command, args)
    assert result.exit_code == 1
    assert "not a run folder (needs run.json and results.csv)" in result.output
    assert ("--baseline" in result.output) == (which == "baseline")
    assert not (tmp_path / "report").exists() and not (tmp_path / "out").exists()


def test_command_rejects_a_missing_folder(tmp_path: Path) -> None:
    result = CliRunner().invoke(report_command, [str(tmp_path / "nowhere")])
    assert result.exit_code == 1
    assert "not a folder" in result.output


def _blank_medians(run_dir: Path, case: str) -> None:
    """Empties time_median_ns of every row of `case` in results.csv, as a run
    whose timing gave no median records it."""
    path = run_dir / "results.csv"
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    df.loc[df["case"] == case, "time_median_ns"] = ""
    df.to_csv(path, index=False)


def _html_cells(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", html,
                                                                  flags=re.S)]


def test_command_reports_a_run_whose_medians_are_nan(tmp_path: Path) -> None:
    # one case timed with NaN medians by every realization (rounds > 0), another with
    # its time_median_ns cells empty in results.csv, one case timed normally
    rows = [_perf(LLAMA_CASES[0], r, d, t, nan_time=True) for r, d, t in LLAMA_REALS]
    rows += [_perf(c, r, d, t) for c in LLAMA_CASES[1:] for r, d, t in LLAMA_REALS]
    write_run(tmp_path / "run", rows)
    _blank_medians(tmp_path / "run", LLAMA_CASES[1][1])
    result = CliRunner().invoke(report_command, [str(tmp_path / "run"), "--baseline",
                                                 str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    out = tmp_path / "run" / "report"
    fastest = pd.read_csv(out / "fastest.csv", keep_default_na=False)
    by_case = fastest.set_index("case")
    for _, name, shape, *_ in LLAMA_CASES[:2]:
        assert by_case.loc[name, "shape"] == shape and by_case.loc[name, "fastest_ours"] == ""
    assert by_case.loc[LLAMA_CASES[2][1], "fastest_ours"] == "gemm_neon_f16acc ×4t"
    cells = _html_cells((out / "report.html").read_text(encoding="utf-8"))
    assert cells.count("n/a") >= 2 * len(LLAMA_REALS)  # the timings table and the pivot
    assert "nan" not in {c.lower() for c in cells}


def test_tuning_view_lists_a_nan_median_as_n_a(tmp_path: Path) -> None:
    w = RunWriter(tmp_path / "tune", {"kind": "tune", "tuning_defaults": {"c1": "slow"}})
    for name, t in (("broken", float("nan")), ("slow", 200.0), ("fast", 100.0)):
        w.add(Verdict(case="c1", op="gemm", shape="m4n4k4", kind="uniform", target="host",
                      backend="scalar", realization=name, kernel=name, accum="fp32", k=4, m=4,
                      n=4, b_form="plain", vector_bits=0, status="pass", catalog="cat",
                      suite="tune", rounds=3, time_median_ns=t))
    w.close(complete=True)
    row = rep.tuning_table(load_run(tmp_path / "tune")).iloc[0]
    assert row["winner"] == "fast"
    assert row["candidates"] == "fast 0.1 us; slow 0.2 us; broken n/a"


# ----------------------------------------------------------------------------- Chromium

def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.environ.get("KBENCH_REQUIRE_CHROMIUM"):
        pytest.fail("KBENCH_REQUIRE_CHROMIUM is set but chromium is not installed")
    if found is None:
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    return found


HEADLESS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--hide-scrollbars"]


@dataclass
class DevTools:
    """A minimal Chrome DevTools Protocol client over --remote-debugging-pipe
    (the browser reads commands on fd 3, writes replies and events on fd 4,
    each message JSON terminated by a NUL byte)."""

    proc: subprocess.Popen
    send_fd: int
    recv_fd: int
    events: list[dict[str, Any]] = field(default_factory=list)
    buffer: bytes = b""
    next_id: int = 0

    @classmethod
    def launch(cls, chromium: str, profile: Path) -> DevTools:
        def high(fd: int) -> int:  # out of the way of 3 and 4 before the remapping
            import fcntl
            dup = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
            os.close(fd)
            return dup

        cmd_r, cmd_w = map(high, os.pipe())
        out_r, out_w = map(high, os.pipe())

        def remap() -> None:
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        proc = subprocess.Popen([chromium, *HEADLESS, f"--user-data-dir={profile}",
                                 "--remote-debugging-pipe", "about:blank"],
                                pass_fds=(3, 4), preexec_fn=remap,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        return cls(proc, cmd_w, out_r)

    def _read(self, until: Any, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                msg = json.loads(raw)
                if "method" in msg:
                    self.events.append(msg)
                if until(msg):
                    return msg
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            if select.select([self.recv_fd], [], [], left)[0]:
                chunk = os.read(self.recv_fd, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the pipe")
                self.buffer += chunk

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.send_fd, json.dumps(msg).encode() + b"\0")
        ident = self.next_id
        reply = self._read(lambda m: m.get("id") == ident)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def open_page(self, url: str) -> str:
        """A new page showing url, loaded; returns its session id (Page,
        Runtime and Log enabled)."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session)
        self.call("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired")
        return session

    def wait_event(self, method: str) -> dict[str, Any]:
        done = [e for e in self.events if e["method"] == method]
        return done[0] if done else self._read(lambda m: m.get("method") == method)

    def close(self) -> None:
        try:
            self.call("Browser.close")
            self.proc.wait(timeout=10)
        except (OSError, RuntimeError, TimeoutError, EOFError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self.send_fd)
            os.close(self.recv_fd)


IMAGES_JS = ("JSON.stringify(Array.from(document.images).map(i => "
             "[i.complete, i.naturalWidth, i.naturalHeight, i.getBoundingClientRect().width]))")


def _colours(png: np.ndarray) -> int:
    """Number of distinct colours of a decoded PNG (floats in [0, 1])."""
    rgb = np.round(png[..., :3] * 255).astype(np.uint32)
    return len(np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]))


def _error_events(events: list[dict[str, Any]]) -> list[str]:
    bad = []
    for e in events:
        p = e.get("params", {})
        if e["method"] == "Runtime.exceptionThrown":
            bad.append(json.dumps(p.get("exceptionDetails", {}))[:300])
        elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            bad.append(json.dumps(p.get("args", []))[:300])
        elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            bad.append(p["entry"].get("text", ""))
    return bad


def test_chromium_loads_every_image_without_console_errors(built: rep.ReportFiles,
                                                           tmp_path: Path) -> None:
    chromium = _chromium()
    html = built.html.read_text(encoding="utf-8")
    n_images = html.count("<img ")
    assert n_images > 0
    tools = DevTools.launch(chromium, tmp_path / "profile")
    try:
        target = tools.call("Target.createTarget", url="about:blank")["targetId"]
        session = tools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            tools.call(f"{domain}.enable", session)
        tools.call("Emulation.setDeviceMetricsOverride", session, width=1280, height=900,
                   deviceScaleFactor=1, mobile=False)
        tools.call("Page.navigate", session, url=built.html.as_uri())
        tools.wait_event("Page.loadEventFired")
        images = json.loads(tools.call("Runtime.evaluate", session, expression=IMAGES_JS,
                                       returnByValue=True)["result"]["value"])
        title = tools.call("Runtime.evaluate", session, expression="document.title",
                           returnByValue=True)["result"]["value"]
        shot = tools.call("Page.captureScreenshot", session, format="png")
    finally:
        tools.close()
    assert title == "kbench report — main"
    assert len(images) == n_images
    for complete, width, height, shown in images:
        assert complete and width > 100 and height > 100 and shown > 0
    assert _error_events(tools.events) == []
    screen = imread(io.BytesIO(base64.b64decode(shot["data"])), format="png")
    assert screen.shape[:2] == (900, 1280)
    assert _colours(screen) > 16  # not blank: text, tables and plots


def test_chromium_command_line_dump_and_screenshot(built: rep.ReportFiles,
                                                   tmp_path: Path) -> None:
    chromium = _chromium()
    common = [chromium, *HEADLESS, f"--user-data-dir={tmp_path / 'profile'}",
              "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]
    url = built.html.as_uri()
    dump = subprocess.run([*common, "--dump-dom", url], capture_output=True, text=True,
                          timeout=60, check=True)
    # the report's one script logs nothing, so any console message comes from an error
    assert [line for line in dump.stderr.splitlines() if ":CONSOLE" in line] == []
    # the rendered page's header: the worst status and the four answers
    assert re.search(r'<p class="worst">failed</p>', dump.stdout)
    assert all(f"<dt>{q}</dt>" in dump.stdout
               for q in ("Correct?", "Fastest per shape?", "Regressed?", "Trend?"))
    srcs = re.findall(r'<img [^>]*src="([^"]*)"', dump.stdout)
    assert len(srcs) == built.html.read_text(encoding="utf-8").count("<img ") > 0
    prefix = "data:image/png;base64,"
    assert all(s.startswith(prefix) for s in srcs)
    for src in srcs:  # each embedded image decodes as a PNG of some size
        png = imread(io.BytesIO(base64.b64decode(src[len(prefix):], validate=True)), format="png")
        assert png.shape[0] > 100 and png.shape[1] > 100
    shot = tmp_path / "shot.png"
    subprocess.run([*common, f"--screenshot={shot}", "--window-size=1280,2400", url],
                   capture_output=True, timeout=60, check=True)
    screen = imread(shot, format="png")
    assert screen.shape[:2] == (2400, 1280)
    assert _colours(screen) > 16


FINGERPRINT_JS = (
    "JSON.stringify(['fp32', 'fp16', 'unexplained', 'indistinguishable'].map(c => "
    "Array.from(document.querySelectorAll('#fingerprints td.accum-' + c)).map(td => "
    "[td.textContent, getComputedStyle(td).backgroundColor, td.getBoundingClientRect().width])))")


def test_chromium_renders_the_fingerprint_section(runs: dict[str, Run], tmp_path: Path) -> None:
    chromium = _chromium()
    files = rep.build_report(runs["peer"], None, tmp_path / "report")
    tools = DevTools.launch(chromium, tmp_path / "profile")
    try:
        target = tools.call("Target.createTarget", url="about:blank")["targetId"]
        session = tools.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            tools.call(f"{domain}.enable", session)
        tools.call("Page.navigate", session, url=files.html.as_uri() + "#fingerprints")
        tools.wait_event("Page.loadEventFired")
        cells = json.loads(tools.call("Runtime.evaluate", session, expression=FINGERPRINT_JS,
                                      returnByValue=True)["result"]["value"])
        heading = tools.call("Runtime.evaluate", session, returnByValue=True, expression=(
            "document.querySelector('#fingerprints h2').textContent"))["result"]["value"]
    finally:
        tools.close()
    assert heading == "Accumulation fingerprints"
    assert [len(c) for c in cells] == [4, 2, 1, 1]
    colours = [{bg for _, bg, _ in c} for c in cells]
    assert all(len(c) == 1 for c in colours)  # one colour per category ...
    assert len(set().union(*colours)) == 4  # ... and a different one for each
    assert all(text == cat and width > 0 for c, cat in zip(
        cells, ("fp32", "fp16", "unexplained", "indistinguishable"), strict=True)
        for text, _, width in c)
    assert _error_events(tools.events) == []


def test_tuning_view_lists_candidates_winner_and_gain(tmp_path):
    w = RunWriter(tmp_path / "tune", {"kind": "tune", "tuning_defaults": {"c1": "slow"}})
    for name, t, status in (("slow", 200.0, "pass"), ("fast", 100.0, "pass"),
                            ("wrong", 50.0, "fail")):
        w.add(Verdict(case="c1", op="gemm", shape="m4n4k4", kind="uniform", target="host",
                      backend="scalar", realization=name, kernel=name, accum="fp32", k=4, m=4,
                      n=4, b_form="plain", vector_bits=0, status=status, catalog="cat",
                      suite="tune", rounds=3 if status == "pass" else 0,
                      time_median_ns=t))
    w.close(complete=True)
    table = rep.tuning_table(load_run(tmp_path / "tune"))
    row = table.iloc[0]
    assert row["winner"] == "fast" and row["default"] == "slow"
    assert row["gain_over_default"] == pytest.approx(2.0)
    assert "not eligible: wrong" in row["candidates"]


def test_load_cost_sets_packing_beside_the_call(runs: dict[str, Run]) -> None:
    """Per realization: packing B (once, at load) beside the call, summed over
    the cases that packed B on their own; hardware times from the timings,
    emulated instructions from the counts; never an emulated time."""
    g = rep.gflops_table(runs["main"])
    counts = pd.DataFrame([
        {"target": QEMU, "realization": "gemm_sme2_mopa_f32acc", "count_call": 76_000,
         "count_pack_b": 13_000},
        {"target": QEMU, "realization": "gemm_sme2_mopa_f32acc", "count_call": 24_000,
         "count_pack_b": 7_000},
        {"target": QEMU, "realization": "gemm_neon_f16acc", "count_call": 5_000,
         "count_pack_b": float("nan")},  # B not packed on its own: no load cost
    ])
    lc = rep.load_cost(g, counts)
    emu = lc[lc["target"] == QEMU]
    assert len(emu) == 1
    row = emu.iloc[0]
    assert (row["cases"], row["call"], row["pack_b"]) == (2, 100_000, 20_000)
    assert row["pack_b_per_call"] == pytest.approx(0.2)
    assert row["measure"].startswith("instructions")
    hw = lc[lc["target"] == HOST]
    timed = g[(g["pack_time_ns"] > 0) & (g["time_median_ns"] > 0)]
    assert set(hw["realization"]) == set(timed["realization"]) and len(hw)
    one = _one(hw, realization="gemm_neon_f32acc_fhm")
    mine = timed[timed["realization"] == "gemm_neon_f32acc_fhm"]
    assert one["pack_b"] == pytest.approx(mine["pack_time_ns"].sum())
    assert one["call"] == pytest.approx(mine["time_median_ns"].sum())
    assert one["measure"].startswith("median time")


def test_report_page_has_the_load_cost_section(built: rep.ReportFiles) -> None:
    html = built.html.read_text()
    assert 'id="load-cost"' in html and "pack_b_per_call" in html
    assert (built.html.parent / "load_cost.csv").exists()


@pytest.mark.parametrize("x, digits, shown", [
    (0.99995, 3, "0.99995"), (0.5, 3, "0.5"), (1.0, 3, "1"), (1.00004, 4, "1.00004"),
    (0.999999999, 4, "0.999999999"), (2.0004, 3, "2"), (float("nan"), 3, "nan")])
def test_a_number_near_1_never_prints_as_1(x: float, digits: int, shown: str) -> None:
    from kbench.judge.numbers import fixed, sig
    assert sig(x, digits) == shown
    assert fixed(0.9996, 3) == "0.9996" and fixed(1.0004, 3) == "1.0004"
    assert fixed(1.0, 3) == "1.000" and fixed(0.5, 3) == "0.500"
    assert rep.format_cell("worst_err_bound", 0.99995).text == "0.99995"
    assert rep.format_cell("count_ratio", 1.0004).text == "1.0004"


def test_the_error_text_is_computed_from_the_table() -> None:
    """No fixed prose about accuracy: the sentence names each accumulator's
    worst ULP error and where it was, as the table holds them."""
    table = pd.DataFrame([
        {"target": "host", "op": "gemm", "realization": "gemm_scalar_f32acc", "accum": "fp32",
         "k": 8, "max_err_bound": 0.01, "max_ulp": 0.5},
        {"target": "host", "op": "gemm", "realization": "gemm_scalar_f32acc", "accum": "fp32",
         "k": 4096, "max_err_bound": 0.2, "max_ulp": 842.0},
        {"target": "host", "op": "gemm", "realization": "gemm_neon_f16acc", "accum": "fp16",
         "k": 64, "max_err_bound": 0.99995, "max_ulp": 3.0}])
    text = rep.error_sentence(table)
    assert "FP32 accumulation: worst 842 ULP (gemm_scalar_f32acc, K = 4096)" in text
    assert "worst error/bound 0.01 at K = 8 and 0.2 at K = 4096" in text
    assert "FP16 accumulation: worst 3 ULP (gemm_neon_f16acc, K = 64)" in text
    assert "half an ULP" not in text
    assert rep.error_sentence(table.iloc[0:0]) == ""


def test_the_error_sentence_word_for_word() -> None:
    """Accumulators in name order; one without any ULP figure left out (the
    others still said); the worst ULP over the rows that have one, even where
    the row lacks an error/bound; the error/bound trend from the shortest to
    the longest K that has one (a K between them not said), and none for a
    single K; figures to 3 significant digits."""
    gemm = {"target": "host", "op": "gemm"}
    table = pd.DataFrame([
        {**gemm, "realization": "gemm_scalar_f32acc", "accum": "fp32", "k": 8,
         "max_err_bound": 0.012345, "max_ulp": 0.5},
        {**gemm, "realization": "gemm_scalar_f32acc", "accum": "fp32", "k": 64,
         "max_err_bound": 0.05, "max_ulp": 1.0},
        {**gemm, "realization": "gemm_scalar_f32acc", "accum": "fp32", "k": 4096,
         "max_err_bound": 0.23456, "max_ulp": 842.0},
        {**gemm, "realization": "gemm_blocked_f32acc", "accum": "fp32", "k": 512,
         "max_err_bound": np.nan, "max_ulp": 900.0},
        {**gemm, "realization": "gemm_bf16", "accum": "bf16", "k": 64,
         "max_err_bound": 0.5, "max_ulp": np.nan},
        {**gemm, "realization": "gemm_neon_f16acc", "accum": "fp16", "k": 64,
         "max_err_bound": 0.99995, "max_ulp": 2.71828}])
    assert rep.error_sentence(table) == (
        "FP16 accumulation: worst 2.72 ULP (gemm_neon_f16acc, K = 64); "
        "FP32 accumulation: worst 900 ULP (gemm_blocked_f32acc, K = 512); "
        "worst error/bound 0.0123 at K = 8 and 0.235 at K = 4096.")  # 3 digits each
    assert rep.error_sentence(table[table["accum"] == "bf16"]) == ""


def _header(html: str) -> str:
    return html[html.index('id="answers"'):html.index("</dl>", html.index('id="answers"'))]


def test_the_header_answers_the_four_questions(built: rep.ReportFiles, runs: dict[str, Run],
                                              tmp_path: Path) -> None:
    """The worst status first, then correct? fastest? regressed? trend?,
    each linking to its section; computed from the run, not fixed."""
    head = _header(built.html.read_text(encoding="utf-8"))
    assert '<p class="worst">failed</p>' in head  # the main run holds a failed case
    for q in ("Correct?", "Fastest per shape?", "Regressed?", "Trend?"):
        assert f"<dt>{q}</dt>" in head
    failed = int(runs["main"].results["status"].isin(["fail", "error"]).sum())
    assert f'href="#verdicts">no: {failed} of {len(runs["main"].results)} results' in head
    assert 'href="#performance">' in head and "kernels timed" in head
    assert 'href="#baseline">' in head and "slower than the baseline" in head
    clean = _header(rep.build_report(runs["correctness"], None, tmp_path / "c").html.read_text(
        encoding="utf-8"))
    bad = int(runs["correctness"].results["status"].isin(["fail", "error"]).sum())
    want = "failed" if bad else "all pass"
    assert f'<p class="worst">{want}</p>' in clean
    assert "no timed results" in clean and "no baseline given" in clean
    empty = _header(rep.build_report(runs["empty"], None, tmp_path / "e").html.read_text(
        encoding="utf-8"))
    assert '<p class="worst">no results</p>' in empty and "no results recorded" in empty


def test_worst_status_order() -> None:
    """failed over regressed over incomplete over inconclusive over all pass."""
    from kbench.results.report_views import GateView, answers
    ok = pd.DataFrame({"status": ["pass", "pass"]})
    bad = pd.DataFrame({"status": ["pass", "crashed"]})
    none = pd.DataFrame()
    gate_fail = GateView(False, "", pd.DataFrame([{"reason": "slowdown", "case": "c",
                                                   "detail": "d"}]), pd.DataFrame(), {}, [])
    def worst(results, complete=True, gate=None):
        return answers(results, complete, none, none, none, gate, False, 0, False)[0]
    assert worst(bad, gate=gate_fail) == "failed"
    assert worst(ok, gate=gate_fail) == "regressed"
    assert worst(ok, complete=False) == "incomplete"
    assert worst(ok) == "all pass"
    drift = GateView(True, "", pd.DataFrame(columns=["reason", "case", "detail"]),
                     pd.DataFrame(), {"inconclusive": 4, "same": 2}, [], undecided=4)
    assert worst(ok, gate=drift) == "inconclusive"
    assert worst(ok, complete=False, gate=drift) == "incomplete"
    (said,) = [a for a in answers(ok, True, none, none, none, drift, True, 0, False)[1]
               if a.question == "Regressed?"]
    assert said.text == ("gate: PASSED; 4 speed verdict(s) inconclusive at the limit (settle "
                         "with kbench ab --settle)")
    assert said.cls == "note"
    # a first look's possible slowdowns: said, not a regression and not undecided
    first = GateView(True, "", pd.DataFrame(columns=["reason", "case", "detail"]),
                     pd.DataFrame(), {}, [], possible=2)
    assert worst(ok, gate=first) == "all pass"
    (said,) = [a for a in answers(ok, True, none, none, none, first, True, 0, False)[1]
               if a.question == "Regressed?"]
    assert said.text == ("gate: PASSED; 2 possible slowdown(s) (a first look, not gated: "
                         "settle with kbench ab)") and said.cls == "note"
    text = {a.question: a for a in answers(ok, True, none, none, none, gate_fail, True, 3,
                                           False)[1]}
    assert text["Regressed?"].text == "gate: FAILED (1 failure(s))"
    assert text["Regressed?"].cls == "fail" and text["Regressed?"].anchor == "gate"
    assert text["Trend?"].anchor == "history" and text["Trend?"].text.startswith("3 run(s)")


def test_every_answer_of_the_header_word_for_word() -> None:
    """answers(): each question's text, the section it links to and its
    class, branch by branch (failed, all pass, incomplete; the fastest
    realization with how many others won; no timed results; slower than a
    baseline past 5%, counts grown past the committed baseline, no baseline,
    a passing gate; a trend or none)."""
    from kbench.results.report_views import Answer, GateView, answers
    none = pd.DataFrame()
    ok = pd.DataFrame({"status": ["pass", "pass"]})
    bad = pd.DataFrame({"status": ["pass", "crashed"]})

    def said(results: pd.DataFrame, complete: bool = True, fastest: pd.DataFrame = none,
             vs_base: pd.DataFrame = none, grown: pd.DataFrame = none, gate: Any = None,
             has_baseline: bool = False, trend: int = 0) -> tuple[str, dict[str, Answer]]:
        worst, out = answers(results, complete, fastest, vs_base, grown, gate, has_baseline,
                             trend, False)
        assert [a.question for a in out] == ["Correct?", "Fastest per shape?", "Regressed?",
                                             "Trend?"]
        return worst, {a.question: a for a in out}

    worst, a = said(bad)
    assert worst == "failed"
    assert a["Correct?"] == Answer("Correct?", "no: 1 of 2 results failed or errored",
                                   "verdicts", "fail")
    assert a["Fastest per shape?"] == Answer("Fastest per shape?", "no timed results",
                                             "performance", "note")
    assert a["Regressed?"] == Answer("Regressed?", "no baseline given (kbench report RUN "
                                     "--baseline REF)", "baseline", "note")
    assert a["Trend?"] == Answer("Trend?", "no history shown (kbench report RUN --history)",
                                 "", "note")
    worst, a = said(ok, trend=3)
    assert worst == "all pass"
    assert a["Correct?"] == Answer("Correct?", "yes: all 2 results pass", "verdicts", "pass")
    assert a["Trend?"] == Answer("Trend?", "3 run(s) of this machine in the history",
                                 "history", "note")
    worst, a = said(ok, complete=False)
    assert worst == "incomplete"
    assert a["Correct?"] == Answer("Correct?", "yes: all 2 results pass (of an incomplete "
                                   "run)", "verdicts", "pass")
    for winners, rest in ((["r1", "r1"], ""), (["r1", "r2", "r1"], "; 1 other realization(s) "
                                                "on the rest"),
                          (["r2", "r1", "r2", "r3", "r2"], "; 2 other realization(s) on the "
                           "rest"),
                          (["r1", "", "r1", ""], "; 2 shape(s) with one kernel timed: no "
                           "winner")):
        fastest = pd.DataFrame({"winner": winners})
        named = [w for w in winners if w]
        top = max(set(named), key=named.count)
        n = named.count(top)
        assert said(ok, fastest=fastest)[1]["Fastest per shape?"] == Answer(
            "Fastest per shape?", f"{top} on {n} of {len(named)} shape(s) with two or more "
            f"kernels timed{rest}", "performance", "note")
    assert said(ok, fastest=pd.DataFrame({"winner": ["", ""]}))[1][
        "Fastest per shape?"] == Answer("Fastest per shape?", "no winner: one kernel timed on "
                                        "each of the 2 shape(s) (B forms of one kernel are no "
                                        "contest)", "performance", "note")
    vs_base = pd.DataFrame({"time_change": [0.10, 0.05, -0.2]})
    worst, a = said(ok, vs_base=vs_base, has_baseline=True)
    assert worst == "all pass"
    assert a["Regressed?"] == Answer("Regressed?", "1 of 3 case(s) more than 5% slower than "
                                     "the baseline (not gated: kbench gate judges "
                                     "significance)", "baseline", "note")
    grown = pd.DataFrame({"verdict": ["regression", "same", "regression"]})
    worst, a = said(ok, grown=grown)
    assert worst == "regressed"
    assert a["Regressed?"] == Answer("Regressed?", "2 counted case(s) grew past the committed "
                                     "baseline", "counts", "fail")
    assert said(ok, grown=grown.assign(verdict="same"))[0] == "all pass"
    nothing = Answer("Regressed?", "no baseline given (kbench report RUN --baseline REF)",
                     "baseline", "note")
    # counts without verdicts, a baseline without speedups, speedups without a baseline
    for kw in ({"grown": pd.DataFrame({"call": [1, 2]})}, {"has_baseline": True},
               {"vs_base": vs_base}):
        worst, a = said(ok, **kw)
        assert worst == "all pass" and a["Regressed?"] == nothing, kw
    passed = GateView(True, "", pd.DataFrame(columns=["reason", "case", "detail"]),
                      pd.DataFrame(), {"same": 2}, [])
    worst, a = said(ok, gate=passed)
    assert worst == "all pass"
    assert a["Regressed?"] == Answer("Regressed?", "gate: PASSED", "gate", "pass")


def test_the_answers_of_an_empty_or_emulated_run() -> None:
    """No results: "no results recorded", linked to the verdicts. An
    emulated-only run says its timings are not speed: pointing to the
    counts when it has them, to the emulated section when it has none (the
    default)."""
    from kbench.results.report_views import Answer, answers
    none = pd.DataFrame()
    worst, said = answers(none, True, none, none, none, None, False, 0, False)
    assert worst == "no results"
    assert said[0] == Answer("Correct?", "no results recorded", "verdicts", "note")
    ok = pd.DataFrame({"status": ["pass"]})
    fastest = {a.question: a for a in answers(ok, True, none, none, none, None, False, 0,
                                              True)[1]}["Fastest per shape?"]
    assert fastest == Answer("Fastest per shape?", "emulated timings are not speed and no "
                             "instruction counts were taken (kbench run --count-method tb)",
                             "emulated", "note")
    counted = {a.question: a for a in answers(ok, True, none, none, none, None, False, 0, True,
                                              has_counts=True)[1]}["Fastest per shape?"]
    assert counted == Answer("Fastest per shape?", "emulated timings are not speed: see the "
                             "instruction counts", "counts", "note")
    # the counts answer it: the fewest instructions per call, winners only with two kernels
    by_counts = pd.DataFrame({"winner": ["sme2", "sme2", "neon", ""]})
    out = answers(ok, True, none, none, none, None, False, 0, True, True, by_counts)[1]
    assert [a.question for a in out] == ["Correct?", "Fastest per shape?", "Regressed?",
                                         "Trend?"]
    assert out[1] == Answer("Fastest per shape?", "by exact instruction counts per call "
                            "(emulated: counts, not time): sme2 on 2 of 3 shape(s) with two or "
                            "more kernels counted; 1 other realization(s) on the rest; 1 "
                            "shape(s) with one kernel counted: no winner", "counts", "note")
    # timings on hardware and counts in one run: both answered
    both = answers(ok, True, pd.DataFrame({"winner": ["a"]}), none, none, None, False, 0,
                   False, True, by_counts)[1]
    assert [a.question for a in both][1:3] == ["Fastest per shape?",
                                               "Fewest instructions per shape?"]
    assert both[1].anchor == "performance" and both[2].anchor == "counts"


SORT_JS = """(() => {
  const table = document.querySelector('#error table.data');
  const col = [...table.tHead.rows[0].cells].findIndex(c => c.textContent === 'k');
  const values = () => [...table.tBodies[0].rows].map(r => r.cells[col].textContent);
  const before = values();
  table.tHead.rows[0].cells[col].click();
  const up = values();
  table.tHead.rows[0].cells[col].click();
  const down = values();
  const box = table.parentNode.previousElementSibling;
  box.value = up[0] === up[up.length - 1] ? 'zzz-no-such-row' : up[up.length - 1];
  box.dispatchEvent(new Event('input'));
  const shown = [...table.tBodies[0].rows].filter(r => r.style.display !== 'none').length;
  box.value = '';
  box.dispatchEvent(new Event('input'));
  const all = [...table.tBodies[0].rows].filter(r => r.style.display !== 'none').length;
  return JSON.stringify({before, up, down, shown, all, filter: box.className,
                         sorted: table.tHead.rows[0].cells[col].getAttribute('aria-sort')});
})()"""


def test_chromium_sorts_and_filters_a_table(built: rep.ReportFiles, tmp_path: Path) -> None:
    """Offline, in the browser: a click on a header sorts the rows by that
    column as numbers (a second click the other way); the box above the
    table keeps only the rows holding its text."""
    chromium = _chromium()
    tools = DevTools.launch(chromium, tmp_path / "profile")
    try:
        session = tools.open_page(built.html.as_uri())
        got = json.loads(tools.call("Runtime.evaluate", session, expression=SORT_JS,
                                    returnByValue=True)["result"]["value"])
    finally:
        tools.close()
    ks = [int(k) for k in got["up"]]
    assert len(ks) > 8 and ks == sorted(ks)
    assert sorted(int(k) for k in got["before"]) == ks  # the same rows, reordered
    assert [int(k) for k in got["down"]] == sorted(ks, reverse=True)
    assert got["sorted"] == "descending" and got["filter"] == "filter"
    assert 0 < got["shown"] < got["all"] == len(ks)
    assert _error_events(tools.events) == []


def test_every_chart_has_data_and_keeps_its_legend_inside(runs: dict[str, Run],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Each figure the report draws (perf, baseline, models, error) holds
    data, and its legends and texts lie inside the figure's bounds."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    seen = []
    real = rep.figure_uri

    def capture(fig):
        seen.append(fig)
        return real(fig)
    monkeypatch.setattr(rep, "figure_uri", capture)
    rep.make_plots(rep.compute_tables(runs["main"], runs["baseline"]))
    assert len(seen) >= 5
    for fig in seen:
        FigureCanvasAgg(fig).draw()
        box = fig.bbox
        visible = [a for a in fig.axes if a.get_visible()]
        assert any(a.lines or a.patches or a.collections for a in visible), fig
        for leg in fig.legends:
            e = leg.get_window_extent()
            assert box.x0 - 1 <= e.x0 and e.x1 <= box.x1 + 1, (fig, e, box)
            assert box.y0 - 1 <= e.y0 and e.y1 <= box.y1 + 1, (fig, e, box)


def test_the_trend_count_is_the_notes_first_number() -> None:
    assert rep._trend_runs("12 run(s) of this machine, newest last") == 12
    assert rep._trend_runs("") == 0 and rep._trend_runs("no runs of this machine") == 0


def test_the_tuning_view_word_for_word(tmp_path: Path) -> None:
    """Shapes in the run's order; candidates by time (pass or mistrusted with
    rounds), then those timed without a median (n/a), then the ones not
    eligible (failed, or never timed), alone when nothing ran; the winner and the default with their
    times and the gain; no default, or a default that did not run, has no
    gain, nor has a winner timed at 0; rows of other suites are not
    candidates; a run without a tune suite gives the columns."""
    def add(w: RunWriter, case: str, name: str, t: float, status: str = "pass",
            rounds: int = 3, suite: str = "tune") -> None:
        w.add(Verdict(case=case, op="gemm", shape=f"s_{case}", kind="uniform", target="host",
                      backend="scalar", realization=name, kernel=name, accum="fp32", k=4, m=4,
                      n=4, b_form="plain", vector_bits=0, status=status, catalog="cat",
                      suite=suite, rounds=rounds, time_median_ns=t))

    w = RunWriter(tmp_path / "tune", {"kind": "tune",
                                      "tuning_defaults": {"c1": "slow", "c3": "wrong3",
                                                          "c5": "d5"}})
    add(w, "c2", "solo", 500.0, rounds=1)  # one round is timed
    for name, t, status, rounds in (("slow", 3000.0, "pass", 3), ("zippy", 1500.0, "pass", 3),
                                    ("mist", 2000.0, "mistrusted", 3),
                                    ("broken", float("nan"), "pass", 3),
                                    ("wrong", 10.0, "fail", 3), ("norounds", 20.0, "pass", 0)):
        add(w, "c1", name, t, status, rounds)
    add(w, "c1", "perf_only", 1.0, suite="perf")
    add(w, "c3", "a", 1e6)
    add(w, "c3", "wrong3", 10.0, "error", 0)
    add(w, "c4", "bad4", 10.0, "fail", 0)
    add(w, "c5", "z0", 0.0)  # a winner timed at 0: no gain over it
    add(w, "c5", "d5", 100.0)
    w.close(complete=True)
    table = rep.tuning_table(load_run(tmp_path / "tune"))
    got = [tuple(r) for r in table.fillna(-1.0).itertuples(index=False)]
    assert got == [
        ("cat", "c2", "s_c2", "solo 0.5 us", "solo", 500.0, "", -1.0, -1.0),
        ("cat", "c1", "s_c1", "zippy 1.5 us; mist 2.0 us; slow 3.0 us; broken n/a; "
         "not eligible: norounds, wrong", "zippy", 1500.0, "slow", 3000.0, 2.0),
        ("cat", "c3", "s_c3", "a 1000.0 us; not eligible: wrong3", "a", 1e6, "wrong3", -1.0,
         -1.0),
        ("cat", "c4", "s_c4", "not eligible: bad4", "", -1.0, "", -1.0, -1.0),
        ("cat", "c5", "s_c5", "z0 0.0 us; d5 0.1 us", "z0", 0.0, "d5", 100.0, -1.0)]
    w = RunWriter(tmp_path / "none", {"kind": "tune"})
    add(w, "c4", "bad4", 10.0, "fail", 0)
    w.close(complete=True)
    (none,) = rep.tuning_table(load_run(tmp_path / "none")).to_dict("records")
    assert none["winner"] == "" and np.isnan(none["winner_time_ns"])
    w = RunWriter(tmp_path / "perf", {"kind": "run"})
    add(w, "c1", "x", 1.0, suite="perf")
    w.close(complete=True)
    empty = rep.tuning_table(load_run(tmp_path / "perf"))
    assert empty.empty and list(empty.columns) == [
        "catalog", "case", "shape", "candidates", "winner", "winner_time_ns", "default",
        "default_time_ns", "gain_over_default"]
