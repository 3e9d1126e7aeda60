"""The planted defects of the runtime-like example (examples/plugins/runtime)
that checks still being built must find. pytest does not collect this file
(its name does not start with test_); each test turns on when its check
lands, by moving it into suites/test_runtime_example.py. What each needs:

  test_scratch_kept_over_the_cap_is_a_finding / test_a_leak_is_a_finding
      retained scratch and leaks (item 5): "keeps <N> bytes after a call, its
      declared cap is <C> per thread" and "leaks <N> bytes per call".
The stale-VL defect (item 3), what ran (item 4) and the SVE2.1-only target (item 6)
have landed:
their tests are in suites/test_runtime_example.py. Until the others land,
that file tests these defects through the example's probe program and
kbench's coverage."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from cli_run import kbench
from plugin_builds import ARCH_PATTERN, build
from qemu_gate import needs_qemu

pytestmark = needs_qemu


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
