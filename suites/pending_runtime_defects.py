"""The planted defects of the runtime-like example (examples/plugins/runtime)
that checks still being built must find, and the example on the SVE2.1-only
target. pytest does not collect this file (its name does not start with
test_); each test turns on when its check lands, by moving it into
suites/test_runtime_example.py (or renaming this file). What each one needs:

  test_a_stale_vl_b_is_a_failure_naming_both_svls
      packed B across vector lengths for every realization that packs B
      (issue 64, item 3): pack at one SVL, call at another in the same worker,
      both directions; a silently wrong result fails the run with "accepts a B
      packed at SVL <x> while running at SVL <y>: <n> of <m> outputs wrong".
  test_a_stale_sve_vl_b_is_a_failure_on_the_sve2p1_target
      the same with prctl(PR_SVE_SET_VL) ("SVE VL") and the SVE2.1-only
      emulated target (items 3 and 6; the spelling qemu:sme=off:vl=BITS).
  test_a_silent_fallback_fails_naming_what_ran
      what actually ran, by symbol, with expect_symbols by ISA class (item 4):
      on an SME2 CPU the patterns "sme2:..." apply, and a call whose
      most-executed function is exrt_neon_* fails naming it and the patterns.
  test_scratch_kept_over_the_cap_is_a_finding / test_a_leak_is_a_finding
      retained scratch and leaks (item 5): "keeps <N> bytes after a call, its
      declared cap is <C> per thread" and "leaks <N> bytes per call".
  test_the_clean_example_passes_on_the_sve2p1_only_target
      the SVE2.1-only target (item 6).
Until then, suites/test_runtime_example.py tests the same defects directly
(the example's probe program) and with the checks kbench has today."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from cli_run import kbench
from plugin_builds import ARCH_PATTERN, build
from qemu_gate import needs_qemu

pytestmark = needs_qemu
SVE_TARGETS = ["qemu:sme=off:vl=128", "qemu:sme=off:vl=256", "qemu:sme=off:vl=512"]


def _run(tmp_path: Path, lib: str, targets: list[str], *extra: str):
    build("aarch64")
    out = tmp_path / lib
    res = kbench("run", "--suite", "all", "--shapes", "smoke", "--backend", "plugin",
                 "--plugin", f"{ARCH_PATTERN}/lib{lib}.so",
                 *[a for t in targets for a in ("--target", t)], *extra, "--no-history",
                 "--no-report", "--out", str(out))
    with open(out / "results.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["backend"] == f"plugin:{lib}"]
    return res, rows, out


def _failed(rows: list[dict[str, str]]) -> list[str]:
    return [r["message"] for r in rows if r["status"] == "fail"]


@pytest.mark.parametrize("svl", [128, 512])
def test_a_stale_vl_b_is_a_failure_naming_both_svls(tmp_path, svl):
    res, rows, _ = _run(tmp_path, "exrt_stalevl", [f"qemu:svl={svl}"])
    assert res.returncode == 1, res.stdout[-3000:]
    found = [m for m in _failed(rows)
             if re.search(r"accepts a B packed at SVL (\d+) while running at SVL (\d+): "
                          r"(\d+) of (\d+) outputs wrong", m)]
    assert found, _failed(rows)
    got = re.search(r"at SVL (\d+) while running at SVL (\d+): (\d+) of", found[0])
    assert int(got[2]) == svl and int(got[1]) != svl and int(got[3]) > 0
    clean, clean_rows, _ = _run(tmp_path, "exrt", [f"qemu:svl={svl}"])
    assert clean.returncode == 0 and not _failed(clean_rows)


@pytest.mark.parametrize("target", SVE_TARGETS)
def test_a_stale_sve_vl_b_is_a_failure_on_the_sve2p1_target(tmp_path, target):
    res, rows, _ = _run(tmp_path, "exrt_stalevl", [target])
    assert res.returncode == 1, res.stdout[-3000:]
    assert any(re.search(r"accepts a B packed at SVE VL \d+ while running at SVE VL "
                         rf"{target.rsplit('=', 1)[1]}: \d+ of \d+ outputs wrong", m)
               for m in _failed(rows)), _failed(rows)


def test_a_silent_fallback_fails_naming_what_ran(tmp_path):
    res, rows, _ = _run(tmp_path, "exrt_fallback", ["qemu:svl=512"])
    assert res.returncode == 1, res.stdout[-3000:]
    failed = _failed(rows)
    assert failed and all("exrt_neon_" in m for m in failed), failed
    assert all("sme2:" in m or "kb_*sme*" in m for m in failed), failed
    # on a CPU without SME its NEON path is the expected one
    ok, ok_rows, _ = _run(tmp_path, "exrt_fallback", ["qemu:cpu=neoverse-n1"])
    assert ok.returncode == 0 and not _failed(ok_rows)


def _big_catalog(tmp_path: Path) -> Path:
    """One GEMM whose scratch is over the cap on every path with scratch: M = 1,
    N = K = 2048 (its packed B alone is 8 MiB or more)."""
    path = tmp_path / "big.toml"
    path.write_text('[catalog]\nname = "big"\ndescription = "scratch over 8 MiB"\n\n'
                    '[[gemm]]\nname = "m1_n2048_k2048"\nm = 1\nn = 2048\nk = 2048\n'
                    'bias = true\nclamp = false\nb_form = "plain"\n')
    return path


def test_scratch_kept_over_the_cap_is_a_finding(tmp_path):
    build("aarch64")
    out = tmp_path / "kept"
    res = kbench("run", "--suite", "correctness", "--shapes", str(_big_catalog(tmp_path)),
                 "--kinds", "exact", "--backend", "plugin", "--plugin",
                 f"{ARCH_PATTERN}/libexrt_keepscratch.so", "--target", "qemu:svl=512",
                 "--no-history", "--no-report", "--out", str(out))
    assert res.returncode == 1, res.stdout[-3000:]
    assert re.search(r"keeps [\d,]+ bytes after a call, its declared cap is (8,?388,?608|8 MiB)"
                     r" per thread", res.stdout + (out / "results.csv").read_text())
    clean = kbench("run", "--suite", "correctness", "--shapes", str(_big_catalog(tmp_path)),
                   "--kinds", "exact", "--backend", "plugin", "--plugin",
                   f"{ARCH_PATTERN}/libexrt.so", "--target", "qemu:svl=512", "--no-history",
                   "--no-report", "--out", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stdout[-3000:]


@pytest.mark.parametrize("target", ["qemu:svl=512", "qemu:cpu=neoverse-n1"])
def test_a_leak_is_a_finding(tmp_path, target):
    res, rows, out = _run(tmp_path, "exrt_leak", [target])
    assert res.returncode == 1, res.stdout[-3000:]
    got = re.search(r"leaks ([\d,]+) bytes per call", res.stdout +
                    (out / "results.csv").read_text())
    assert got and int(got[1].replace(",", "")) >= 4096


def test_the_clean_example_passes_on_the_sve2p1_only_target(tmp_path):
    res, rows, out = _run(tmp_path, "exrt", SVE_TARGETS, "--coverage")
    assert res.returncode == 0, res.stdout[-3000:]
    assert rows and not _failed(rows)
    with open(out / "coverage.csv", newline="") as fh:
        ran = {r["unit"] for r in csv.DictReader(fh)
               if r["owner"].endswith("libexrt.so") and int(r["covered"]) > 0}
    assert "exrt_sve2p1_gemm" in ran
    assert not {u for u in ran if u.startswith(("exrt_neon_", "exrt_sme2_")) or "sme" in u}
