"""The runtime-like example plugin (examples/plugins/runtime, exrt): one
whole-call FP16 GEMM that picks SME2, SVE2.1 or NEON from the CPU, a native
pack that takes no bias, a declared 32-byte overread on its NEON path, and
thread-local scratch capped at 8 MiB; and its planted defects.

What ran is shown three ways, none of them its results: its direct probe
(exrt_probe: the path the plugin says its gemm ran, and the path and vector
length its pack_b wrote into the packed B's header), kbench's machine-code
coverage of the plugin's functions on the emulated targets (the functions
of the other paths never execute), and the refusals of a B packed at another
vector length, which name the path's vector length ("SVL" or "SVE VL").

The SVE2.1 path runs on kbench's SVE2.1-only target (qemu:sme=off:vl=BITS)
and in the probe under `qemu-aarch64 -cpu max,sme=off` at SVE vector lengths
of 128, 256 and 512 bits. Skipped without QEMU unless KBENCH_REQUIRE_QEMU is
set (as in CI)."""

from __future__ import annotations

import csv
import os
import re
import subprocess
from pathlib import Path

import pytest
from cli_run import kbench
from plugin_builds import ARCH_PATTERN, build
from qemu_gate import needs_qemu

from kbench.harness import packers, probes
from kbench.harness.runner import Job, run_job
from kbench.judge.verdict import FAIL, PASS
from kbench.problems.cases import GemmCase
from kbench.targets.crossbuild import SYSROOT_AARCH64
from kbench.targets.plugins import PluginLoads, host_arch
from kbench.targets.spec import parse_target
from kbench.targets.tools import find_qemu

CAP = 8 << 20  # its declared scratch cap (per thread)
SME2_512 = "max,sme-default-vector-length=64"


def probe(lib: str, cpu: str | None, scratch: bool = False) -> dict[str, str]:
    """exrt_probe's "key: value" lines for one of the example's libraries, on an
    emulated CPU (cpu: a qemu -cpu value) or on this machine (cpu None)."""
    arch = "aarch64" if cpu else host_arch()
    folder = build(arch)
    cmd = [str(folder / "exrt_probe"), str(folder / f"lib{lib}.so")] + (["--scratch"] if scratch
                                                                       else [])
    if cpu:
        cmd = [find_qemu(), "-L", str(SYSROOT_AARCH64), "-cpu", cpu, *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return dict(line.split(": ", 1) for line in res.stdout.splitlines())


# ---- the clean example, probed directly ---------------------------------------------------

PATHS = [(SME2_512, "sme2", 512, "SVL"), ("max,sme-default-vector-length=16", "sme2", 128, "SVL"),
         ("max,sme=off,sve-default-vector-length=16", "sve2p1", 128, "SVE VL"),
         ("max,sme=off,sve-default-vector-length=32", "sve2p1", 256, "SVE VL"),
         ("max,sme=off,sve-default-vector-length=64", "sve2p1", 512, "SVE VL")]


@needs_qemu
@pytest.mark.parametrize(("cpu", "path", "bits", "vl"), PATHS, ids=[p[0] for p in PATHS])
def test_each_cpu_runs_its_path_and_refuses_a_b_packed_at_another_vector_length(cpu, path, bits,
                                                                                 vl):
    got = probe("exrt", cpu)
    assert got["plugin"] == "exrt 1.0.0"
    assert got["exact"] == "24 of 24 calls"  # plain B with bias, clamped, its packed B
    assert got["path"] == path
    assert got["packed_path"] == f"{path} vl_bits {bits}"
    assert got["vl_bits"] == str(bits)
    up = f"B.vl: packed at {vl} {2 * bits} bits, this call runs at {vl} {bits} bits"
    assert got["other_vl_up"] == f"refused (status 2): {up} (pack B again)"
    down = (f"packed at {vl} {bits // 2} bits, this call runs at {vl} {bits} bits" if bits > 128
            else f"packed at {vl} 128 bits, this call runs at {vl} 256 bits")
    assert got["other_vl_down"] == f"refused (status 2): B.vl: {down} (pack B again)"
    assert got["bias_with_packed"].startswith("status 2: bias: exrt's packed B takes no bias")


@needs_qemu
def test_a_cpu_without_sme_or_sve_runs_the_neon_path():
    got = probe("exrt", "neoverse-n1")
    assert (got["path"], got["packed_path"], got["exact"]) == ("neon", "neon vl_bits 0",
                                                               "24 of 24 calls")
    assert got["other_vl_up"].startswith("n/a (the neon path's layout does not depend")


def test_built_for_this_machine_it_runs_its_portable_path():
    if host_arch() == "aarch64":
        pytest.skip("this machine is aarch64: the example has its Arm paths here")
    got = probe("exrt", None)
    assert (got["path"], got["packed_path"], got["exact"]) == ("portable", "portable vl_bits 0",
                                                               "24 of 24 calls")


@pytest.mark.parametrize("cpu", [None, pytest.param("max,sme=off,sve-default-vector-length=16",
                                                    marks=needs_qemu)],
                         ids=["this-machine", "sve2p1-128"])
def test_scratch_is_kept_up_to_the_cap_and_released_above_it(cpu):
    """N = K = 1024 keeps its scratch (a few MiB: the packed B, or B widened to
    FP32 on the portable path); N = K = 2048 needs more than 8 MiB, released
    after the call. 32 identical calls leave the heap as it was."""
    got = probe("exrt", cpu, scratch=True)
    assert 0 < int(got["retained_small"]) < int(got["retained_1024"]) <= CAP
    assert got["retained_2048"] == "0"
    assert got["heap_growth_per_call"] == "0"


# ---- planted defects the probe shows ------------------------------------------------------

@needs_qemu
@pytest.mark.parametrize(("cpu", "vl"), [(SME2_512, "SVL 1024 bits"),
                                         ("max,sme=off,sve-default-vector-length=32",
                                          "SVE VL 512 bits")], ids=["sme2", "sve2p1"])
def test_stale_vl_accepts_a_b_packed_at_another_vector_length_and_is_wrong(cpu, vl):
    got = probe("exrt_stalevl", cpu)
    up = re.fullmatch(r"accepted: (\d+) of 200 outputs wrong \(packed at (\d+) bits, called at "
                      r"(\d+)\)", got["other_vl_up"])
    assert up and int(up[1]) > 0, got["other_vl_up"]
    assert vl.endswith(f"{up[2]} bits")
    # the other direction needs more bytes than the buffer has: its size check still refuses
    assert got["other_vl_down"].startswith("refused (status 2): B.size:")


@needs_qemu
def test_fallback_runs_the_neon_path_on_an_sme2_cpu_with_right_results():
    got = probe("exrt_fallback", SME2_512)
    assert (got["path"], got["packed_path"], got["exact"]) == ("neon", "neon vl_bits 0",
                                                               "24 of 24 calls")
    # only SME2 is declined: on a CPU with SVE2.1 and no SME its SVE2.1 path runs
    assert probe("exrt_fallback", "max,sme=off,sve-default-vector-length=32")["path"] == "sve2p1"


def test_kept_scratch_and_a_leak_are_what_the_probe_measures():
    """On this machine's build: the same scratch code as the aarch64 paths'."""
    kept = probe("exrt_keepscratch", None, scratch=True)
    assert int(kept["retained_2048"]) > CAP and kept["heap_growth_per_call"] == "0"
    leak = probe("exrt_leak", None, scratch=True)
    assert leak["retained_2048"] == "0"
    assert 4096 <= int(leak["heap_growth_per_call"]) < 4096 + 64  # the block and its header


# ---- through kbench ---------------------------------------------------------------------------

def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@needs_qemu
def test_the_clean_example_passes_every_suite_and_runs_the_path_of_each_target(tmp_path):
    """`kbench run --suite all --shapes smoke` on an SME2 target at SVL 128 and
    512, on the SVE2.1-only target and on a CPU without SME and SVE (and on this
    machine's worker): exit 0, no verdict failed, a B packed at another vector
    length refused; the coverage of its functions shows the path each target
    ran and that the other paths' code never executed. The plugin is
    given by a relative path, as a user types it (its coverage was 0 that way
    before: the worker's path of the file was not matched)."""
    build("aarch64")
    out = tmp_path / "run"
    targets = ["qemu:svl=128", "qemu:svl=512", "qemu:sme=off:vl=256", "qemu:cpu=neoverse-n1"]
    relative = os.path.relpath(f"{ARCH_PATTERN}/libexrt.so")
    res = kbench("run", "--suite", "all", "--shapes", "smoke", "--backend", "plugin",
                 "--plugin", relative, "--target", "host",
                 *[a for t in targets for a in ("--target", t)], "--coverage", "--no-history",
                 "--no-report", "--out", str(out))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-3000:]
    rows = [r for r in _rows(out / "results.csv") if r["backend"] == "plugin:exrt"]
    for target in ["host", *targets]:
        mine = [r for r in rows if r["target"] == target]
        assert {r["status"] for r in mine} <= {PASS, "skip"}, target
        assert sum(r["suite"] == "correctness" and r["status"] == PASS for r in mine) >= 40
        assert all(r["plugin"] == "exrt 1.0.0" for r in mine)
        probes_found = {r["case"]: r["message"] for r in mine if r["suite"] == probes.SUITE}
        assert probes_found["probe_bias_flag"].startswith("refused:"), probes_found
        if "=" in target and target != "qemu:cpu=neoverse-n1":
            bits = int(target.rsplit("=", 1)[1])
            kind, label = ("svl", "SVL") if "svl" in target else ("sve", "SVE VL")
            found = probes_found[f"probe_{kind}_pack_hi"]
            assert found.startswith("refused:"), found
            got = re.search(rf"B.vl: packed at {label} (\d+) bits, this call runs at {label} "
                            rf"{bits} bits", found)
            assert got and int(got[1]) > bits, found
    ran: dict[str, set[str]] = {}
    for r in _rows(out / "coverage.csv"):
        if r["owner"].endswith("libexrt.so") and int(r["covered"]) > 0:
            ran.setdefault(r["target"], set()).add(r["unit"])
    units = ran["qemu:cpu=max:sme=off:vl=256"]
    assert "exrt_sve2p1_gemm" in units
    other = {u for u in units if u.startswith(("exrt_neon_", "exrt_sme2_")) or "sme" in u}
    assert not other, other
    for svl in (128, 512):
        units = ran[f"qemu:cpu=max:svl={svl}"]
        assert {"exrt_sme2_gemm",
                "kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_run_matmul",
                "kb_lhs_pack_x16p2vlx2_x16_sme_run"} <= units
        assert not {u for u in units if u.startswith(("exrt_neon_", "exrt_sve2p1_"))}, units
    units = ran["qemu:cpu=neoverse-n1"]
    assert "exrt_neon_gemm" in units
    other = {u for u in units if u.startswith(("exrt_sme2_", "exrt_sve2p1_")) or "sme" in u}
    assert not other, other


OVERREAD_CASES = [GemmCase("rt_tail", 7, 17, 13, bias=True), GemmCase("rt_one", 3, 1, 5),
                  GemmCase("rt_wide", 5, 40, 21, bias=True, clamp=True)]


@needs_qemu
@pytest.mark.parametrize("case", OVERREAD_CASES, ids=lambda c: c.name)
def test_an_overread_one_byte_past_the_declared_32_is_a_finding_naming_b_and_its_gemm(case):
    """The NEON path reads up to 30 bytes past plain B and the bias on purpose,
    declared as 32: the clean build passes with its inputs against guard pages
    placed at the allowance. The defect reads the 16 bytes that end 33 bytes
    past B, so its read reaches the guard page: named with the operand, the
    distance, the call it happened in and the function that read."""
    build("aarch64")
    spec = "qemu:cpu=neoverse-n1"
    t = parse_target(spec, [f"{ARCH_PATTERN}/libexrt.so", f"{ARCH_PATTERN}/libexrt_overread33.so"])
    try:
        reals = {r.name: r for r in t.info().realizations}
        declared = {d.name: d for p in PluginLoads.from_extra(t.info().extra).loaded
                    for d in p.realizations}
        for name in ("exrt.gemm", "exrt_overread33.gemm"):
            assert declared[name].allowance("B") == declared[name].allowance("bias") == 32
        clean = run_job(t, Job(case, "exact", reals["exrt.gemm"], spec))
        assert clean.status == PASS, clean.line()
        bad = run_job(t, Job(case, "exact", reals["exrt_overread33.gemm"], spec))
        assert bad.status == FAIL
        size = case.k * case.n * 2
        assert (f"input guard page: read past the end of B[0]: byte {size + 32} of a {size}-byte "
                "buffer (33 byte(s) past its end read, 32 declared readable; the guard page starts "
                "32 past its end) in its gemm at exrt_neon_gemm+0x") in bad.message, bad.message
        assert " in libexrt_overread33.so (during GEMM)" in bad.message
        # the worker started afresh: the clean one passes again
        assert run_job(t, Job(case, "normal", reals["exrt.gemm"], spec)).status == PASS
    finally:
        t.close()


@needs_qemu
@pytest.mark.parametrize(("spec", "kind", "label"), [("qemu:svl=512", "svl", "SVL"),
                                                     ("qemu:sme=off:vl=256", "sve", "SVE VL")],
                         ids=["sme2", "sve2p1"])
def test_a_b_packed_at_another_vector_length_is_refused_and_the_stale_vl_one_fails(spec, kind,
                                                                                  label):
    """kbench's probe of a B packed at a higher vector length (prctl around the
    packing): the clean build refuses it naming both lengths; the stale-VL
    build accepts it and is wrong, a failure naming both lengths."""
    build("aarch64")
    t = parse_target(spec, [f"{ARCH_PATTERN}/libexrt.so", f"{ARCH_PATTERN}/libexrt_stalevl.so"])
    bits = int(spec.rsplit("=", 1)[1])
    lengths = {"svl": bits} if kind == "svl" else {"sve_vl": bits}
    try:
        reals = {r.name: r for r in t.info().realizations}
        ok = probes.run_probe(t.engine, reals["exrt.gemm"], f"{kind}_pack_hi", spec, **lengths)
        assert ok.finding == probes.REFUSED, ok.detail
        got = re.search(rf"B.vl: packed at {label} (\d+) bits, this call runs at {label} {bits} "
                        "bits", ok.detail)
        assert got and int(got[1]) > bits, ok.detail
        stale = probes.run_probe(t.engine, reals["exrt_stalevl.gemm"], f"{kind}_pack_hi", spec,
                                 **lengths)
        assert stale.finding == probes.SILENTLY_WRONG
        assert stale.verdict().status == FAIL
        assert re.match(rf"accepts a B packed at {label} {got[1]} while running at {label} "
                        rf"{bits}: \d+ of 200 outputs wrong", stale.detail), stale.detail
    finally:
        t.close()


def test_a_packer_without_bias_is_checked_and_probed_without_one():
    """exrt's pack_b refuses a bias (KB_PLUGIN_PACK_NO_BIAS). kbench's packer
    check and its contract probes pack its B without one: every misuse probe
    reaches the misuse it is about (refused here), and its packed B is written
    whole whatever the destination held."""
    t = parse_target("host", [f"{ARCH_PATTERN}/libexrt.so"])
    try:
        r = next(r for r in t.info().realizations if r.name == "exrt.gemm")
        d = next(d for p in PluginLoads.from_extra(t.info().extra).loaded for d in p.realizations)
        assert not d.packs_bias and r.native_bias == "none"
        checks = packers.checks_for(t, d, True, 0)
        assert [(c.packer, c.check, c.ok) for c in checks] == [("rhs", "determinism", True)]
        found = {p: probes.run_probe(t.engine, r, p, "host") for p in probes.MISUSE_NAMES}
        for name in ("other_n", "other_k", "bias_flag", "truncated"):
            assert found[name].finding == probes.REFUSED, (name, found[name].detail)
        assert "B.n: packed for N = 48, the call has N = 40" in found["other_n"].detail
        assert "bias: exrt's packed B takes no bias" in found["bias_flag"].detail
    finally:
        t.close()


# ---- what ran: a silent fallback --------------------------------------------------------


def _plugin_rows(out: Path, lib: str) -> list[dict[str, str]]:
    return [r for r in _rows(out / "results.csv") if r["backend"] == f"plugin:{lib}"
            and r["suite"] == "correctness"]


@needs_qemu
def test_a_silent_fallback_fails_naming_what_ran(tmp_path):
    """On an SME2 CPU its SME2 path must run (expect_symbols "sme2:..."): the
    planted fallback runs the NEON kernel with right results, and every call
    fails naming exrt_neon_gemm and the patterns it should have entered; on a
    CPU without SME or SVE the NEON path is the declared one and passes."""
    build("aarch64")
    lib = "exrt_fallback"
    for target, fails in (("qemu:svl=512", True), ("qemu:cpu=neoverse-n1", False)):
        out = tmp_path / target.replace(":", "_").replace("=", "")
        res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "--kinds", "exact",
                     "--backend", "plugin", "--plugin", f"{ARCH_PATTERN}/lib{lib}.so",
                     "--target", target, "--no-history", "--no-report", "--out", str(out))
        rows = _plugin_rows(out, lib)
        failed = [r for r in rows if r["status"] == "fail"]
        assert rows and all(r["ran"] for r in rows), rows[:2]
        if not fails:
            assert res.returncode == 0 and not failed, res.stdout[-3000:]
            assert all("exrt_neon_gemm" in r["ran"] for r in rows)
            continue
        assert res.returncode == 1 and len(failed) == len(rows), res.stdout[-3000:]
        for r in failed:
            assert r["message"].startswith("ran elsewhere than it declares: none of "
                                           "exrt_sme2_* or kb_*sme* ran in this call"), r
            assert "what ran: " in r["message"] and "exrt_neon_gemm" in r["message"], r
            assert float(r["max_err_bound"]) <= 1.0  # its results are right


# ---- scratch memory: kept past the cap, leaked --------------------------------------------


def _scratch_rows(out: Path, lib: str) -> dict[str, dict[str, str]]:
    """The scratch check's verdicts of a library's realization, by case."""
    return {r["case"]: r for r in _rows(out / "results.csv")
            if r["backend"] == f"plugin:{lib}" and r["catalog"] == "scratch"}


@needs_qemu
def test_scratch_kept_over_the_cap_is_a_finding(tmp_path):
    """EXRT_KEEP_SCRATCH keeps a buffer over its declared 8 MiB: the scratch
    check's call on a GEMM whose B alone is over the cap (4 x 2049 x 2049)
    fails naming the cap; the clean build releases it and passes. (One small
    catalog case: the check runs beside whatever the catalogs hold; SVL 128,
    where packing a B of 8 MiB costs the least.)"""
    build("aarch64")
    runs = {}
    for lib in ("exrt_keepscratch", "exrt"):
        out = tmp_path / lib
        res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "-k", "m1_n17_k33",
                     "--kinds", "exact", "--backend", "plugin", "--plugin",
                     f"{ARCH_PATTERN}/lib{lib}.so", "--target", "qemu:svl=128",
                     "--no-history", "--no-report", "--out", str(out))
        runs[lib] = (res, out)
    res, out = runs["exrt_keepscratch"]
    assert res.returncode == 1, res.stdout[-3000:]
    over = _scratch_rows(out, "exrt_keepscratch")["scratch_over_cap"]
    assert over["status"] == "fail" and over["suite"] == "determinism"
    kept = re.match(r"scratch: keeps ([\d,]+) bytes after a call, its declared cap is "
                    r"8,388,608 per thread: ", over["message"])
    assert kept and int(kept[1].replace(",", "")) > CAP, over["message"]
    assert float(over["heap_retained"]) == int(kept[1].replace(",", ""))
    with open(out / "failures.csv", newline="") as fh:
        (fail,) = [f for f in csv.DictReader(fh) if f["case"] == "scratch_over_cap"]
    assert fail["reproduce"].startswith("kbench run --suite correctness --target "
                                        "qemu:svl=128 --realization exrt_keepscratch.gemm")
    assert float(over["heap_peak"]) >= float(over["heap_retained"])
    clean, out = runs["exrt"]
    assert clean.returncode == 0, clean.stdout[-3000:]
    checks = _scratch_rows(out, "exrt")
    assert {c: r["status"] for c, r in checks.items()} == {"scratch_gemm": "pass",
                                                          "scratch_over_cap": "pass"}
    assert float(checks["scratch_over_cap"]["heap_peak"]) > CAP  # used, then given back
    assert float(checks["scratch_over_cap"]["heap_retained"]) < CAP


@needs_qemu
@pytest.mark.parametrize("target", ["qemu:svl=128", "qemu:cpu=neoverse-n1"])
def test_a_leak_is_a_finding(tmp_path, target):
    """EXRT_LEAK loses a 4,096-byte record per call, on every path (NEON's has no
    scratch at all)."""
    build("aarch64")
    out = tmp_path / "leak"
    res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "-k", "m1_n17_k33",
                 "--backend", "plugin", "--plugin", f"{ARCH_PATTERN}/libexrt_leak.so",
                 "--target", target, "--no-history", "--no-report", "--out", str(out))
    assert res.returncode == 1, res.stdout[-3000:]
    base = _scratch_rows(out, "exrt_leak")["scratch_gemm"]
    assert base["status"] == "fail"
    assert base["message"].startswith("scratch: leaks 4,096 bytes per call: it holds "), base
