"""Machine-code coverage (`kbench run --coverage`, kbench.targets.coverage):
the blocks QEMU translated, turned back into the instructions of our kernel
and packer objects and of a plugin's functions. A plugin with a path no smoke
shape takes has that path listed as never executed; our kernels that a run
calls are covered, those it does not call are not listed; the log parser and
the range arithmetic are checked on a log written by hand."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from cli_run import kbench
from qemu_gate import needs_qemu

from kbench.targets import coverage
from suites import plugin_builds

REPO = Path(__file__).resolve().parents[1]


def rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "coverage.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_hand_written_log_gives_exact_ranges(tmp_path: Path) -> None:
    log = tmp_path / "7.log"
    log.write_text("----------------\nIN: f\n0x00001000:  d503201f  nop\n"
                   "0x00001004:  d503201f  nop\n\n----------------\nIN: g\n"
                   "0x0000100c:  d65f03c0  ret\n\n")
    assert coverage.executed(log) == {0x1000, 0x1004, 0x100C}
    unit = coverage.Unit("kbench", "kb_x", "kernel", "neon",
                         [("f", 0x1000, 0x1010), ("g", 0x1010, 0x1018)])
    got = coverage._cover("t", unit, {0x1000, 0x1004, 0x100C, 0x1014})
    assert unit.instructions == 6 and got.covered == 4
    # 0x1008 is missing in f, 0x1010 in g: two ranges, never one across functions
    assert got.uncovered == [(0x1008, 0x100C), (0x1010, 0x1014)]
    assert got.uncovered_text() == "f+0x8..+0xc (1 insn); g+0x0..+0x4 (1 insn)"
    assert round(got.percent, 2) == 66.67


@needs_qemu
def test_a_plugin_path_no_smoke_shape_takes_is_listed_uncovered(tmp_path: Path) -> None:
    plugin_builds.build("aarch64")
    # a relative path, as a user types it (the worker loads it by its absolute path,
    # which the coverage must map back to: it once found 0% of every plugin function)
    plug = os.path.relpath(plugin_builds.pattern("excovplant"))
    assert not os.path.isabs(plug)
    out = tmp_path / "run"
    res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "--kinds", "exact",
                 "--backend", "plugin", "--backend", "neon", "--plugin", plug,
                 "--target", "qemu:svl=512", "--tails", "none", "--coverage", "--no-history",
                 "--no-report", "--out", str(out))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "machine-code coverage" in res.stdout
    got = rows(out)
    mine = [r for r in got if r["owner"].endswith("libexcovplant.so")]
    rare = [r for r in mine if r["unit"] == "ex_rare_path"]
    assert len(rare) == 1 and rare[0]["covered"] == "0" and int(rare[0]["instructions"]) > 0
    assert rare[0]["uncovered"].startswith("ex_rare_path+0x0..")
    # the kernel that calls it ran, and is where the realizations enter
    run = [r for r in mine if r["unit"] == "run_matmul"]
    assert run and int(run[0]["covered"]) > 0 and "exukref.gemm_4x8" in run[0]["realizations"]
    # ours: the NEON kernels the run chose ran; no SME or scalar unit is listed
    ours = [r for r in got if r["owner"] == "kbench"]
    assert ours and {r["backend"] for r in ours} == {"neon"}
    neon = {r["unit"]: r for r in ours}
    k = neon["kb_matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla"]
    assert float(k["percent"]) > 80 and "gemm_neon_f16acc" in k["realizations"].split()
    # its queries, which the NEON driver never calls, are apart with the source's reason
    assert "nr (" in k["not_driven"] and "NEON driver" in k["not_driven"]
    assert "nr+" not in k["uncovered"]
    assert all(r["target"] == "qemu:cpu=max:svl=512" for r in got)
    # the listing of what never ran: the planted function's range, instruction by
    # instruction (disassembled where an llvm-objdump is on PATH)
    listing = (out / "coverage_uncovered.txt").read_text()
    assert "ex_rare_path+0x0.." in listing
    if coverage.disassembler():
        block = listing.split("ex_rare_path+0x0..", 1)[1].split("\n\n", 1)[0]
        insns = [ln.split(None, 1) for ln in block.splitlines()[1:]
                 if not ln.strip().startswith(";")]
        assert len(insns) == int(rare[0]["instructions"]) and all(len(i) == 2 for i in insns)
        assert any(i[1].startswith("ret") for i in insns)
    rep = kbench("report", str(out), "--out", str(tmp_path / "report"))
    assert rep.returncode == 0, rep.stdout[-2000:] + rep.stderr[-2000:]
    html = (tmp_path / "report" / "report.html").read_text()
    assert 'id="coverage"' in html and "ex_rare_path+0x0.." in html
    pre = html.split('<pre class="listing">', 1)[1].split("</pre>", 1)[0]
    assert "ex_rare_path+0x0.." in pre


@needs_qemu
def test_min_coverage_fails_the_run_and_host_has_none(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "--kinds", "exact",
                 "--realization", "gemm_neon_f16acc", "--target", "qemu:svl=128",
                 "--target", "host", "--tails", "none", "--min-coverage", "100",
                 "-n", "1", "--no-history", "--no-report", "--json", "--out", str(out))
    # every verdict passes, but smoke does not run every instruction of the kernel
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert "--min-coverage 100: " in res.stderr and "the run fails" in res.stderr
    assert "coverage: host: no machine-code coverage" in res.stderr
    got = rows(out)
    assert {r["target"] for r in got} == {"qemu:cpu=max:svl=128"}
    doc = json.loads(res.stdout)  # --json carries the same rows, by the run schema
    jsonschema.validate(doc, json.loads((REPO / "reports/schema/run.schema.json").read_text()))
    assert [(r["unit"], r["covered"]) for r in doc["coverage"]] == [
        (r["unit"], int(r["covered"])) for r in got]
    assert doc["coverage"][0]["realizations"] == ["gemm_neon_f16acc"]
    assert any(float(r["percent"]) < 100 for r in got)
    res = kbench("run", "--suite", "correctness", "--shapes", "smoke", "--target", "host",
                 "--coverage", "--no-history", "--out", str(tmp_path / "host"))
    assert res.returncode == 2 and "needs a qemu: target" in res.stderr


def _worker() -> Path:
    from kbench.targets.tools import worker_binary
    path = Path(worker_binary("aarch64"))
    if not path.exists():
        if os.environ.get("KBENCH_REQUIRE_QEMU"):
            raise AssertionError(f"{path} is not built")
        pytest.skip("the aarch64 worker is not built")
    return path


def test_every_not_driven_record_names_a_function_of_its_file(monkeypatch) -> None:
    binary = _worker()
    units = {u.name: u for u in coverage.our_units(binary)}
    records = coverage.not_driven(coverage.Elf(binary))
    assert len(records) > 40
    for (stem, fn), why in records.items():
        u = units[stem]
        assert fn in [n for n, _, _ in u.not_driven] and why
        assert fn not in [n for n, _, _ in u.functions]  # counted apart, not as uncovered
    # every SME kernel's public run entry point is one of them, but the MOPA GEMMs':
    # our driver runs their blocks through run_matmul (when K fits one chunk)
    sme = [u for u in units.values() if u.backend == "sme" and u.kind == "kernel"]
    mopa = [u for u in sme if u.name.startswith("kb_matmul_clamp_") and "_mopa" in u.name]
    assert len(mopa) == 2
    for u in sme:
        entry = [n for n, _, _ in (u.functions if u in mopa else u.not_driven)]
        assert any(n.endswith(("_run_matmul", "_run_imatmul")) for n in entry), u.name
    # a record naming no function of its file is an error, not a silent exemption
    stem = next(iter(units))
    monkeypatch.setattr(coverage, "not_driven", lambda elf: {(stem, "no_such_function"): "x"})
    with pytest.raises(coverage.CoverageError, match="no_such_function"):
        coverage.our_units(binary)


def test_uncovered_instructions_are_disassembled_from_the_worker() -> None:
    binary = _worker()
    tool = coverage.disassembler()
    if tool is None:
        pytest.skip("no llvm-objdump on PATH")
    unit = next(u for u in coverage.our_units(binary)
                if u.name == "kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa")
    name, start, end = next(f for f in unit.functions if f[0].endswith("_mopa_core"))
    row = coverage.UnitCoverage("t", unit, unit.instructions - 3, [(start, start + 12)])
    assert coverage.disassemble([row], tool)
    assert sorted(row.listing) == [start, start + 4, start + 8]
    assert all(insn for insn, _ in row.listing.values())
    text = "\n".join(coverage.listing_lines([row]))
    assert f"{name}+0x0..+0xc (3 insn)" in text
    assert all(f"{a:8x}  {row.listing[a][0]}" in text for a in row.listing)
    # the core enters streaming mode first: the disassembler knows SME
    assert any("smstart" in i for i, _ in row.listing.values()) or "<unknown>" not in text


def test_the_ci_gate_takes_either_svl_and_holds_all_at_100_but_exceptions(tmp_path: Path) -> None:
    gate = [sys.executable, str(REPO / "ci" / "check_coverage.py")]
    t128, t512 = "qemu:cpu=max:svl=128", "qemu:cpu=max:svl=512"
    floor = tmp_path / "floor.toml"
    # each SVL misses two instructions, one of them the same: 199 of 200 over both
    _csv(tmp_path / "a", [(t128, "kb_s", 198, "run+0x0..+0x8 (2 insn)"),
                          (t512, "kb_s", 198, "run+0x4..+0xc (2 insn)")], backend="scalar")
    up = subprocess.run([*gate, str(tmp_path / "a"), "--floor", str(floor), "--update"],
                        capture_output=True, text=True)
    assert up.returncode == 0
    assert '["qemu:cpu=max:svl=128 + qemu:cpu=max:svl=512"]' in floor.read_text()
    assert floor.read_text().count("kb_s = 99.00") == 2 and "kb_s = 99.50" in floor.read_text()
    # below 100% over both fails, whatever the floor says, unless the exceptions list
    # exactly the instructions left, with a reason
    plain = subprocess.run([*gate, str(tmp_path / "a"), "--floor", str(floor)],
                           capture_output=True, text=True)
    assert plain.returncode == 1 and "below 100% over both" in plain.stdout
    exc = tmp_path / "exceptions.toml"
    exc.write_text('[kb_s]\nuncovered = 1\nreason = "an error return no valid call takes"\n')
    ok = subprocess.run([*gate, str(tmp_path / "a"), "--floor", str(floor), "--exceptions",
                         str(exc)], capture_output=True, text=True)
    assert ok.returncode == 0 and "PASSED" in ok.stdout, ok.stdout
    assert "excepted kb_s: 1 instruction(s), an error return no valid call takes" in ok.stdout
    exc.write_text('[kb_s]\nuncovered = 2\nreason = "stale"\n')  # the count must match
    stale = subprocess.run([*gate, str(tmp_path / "a"), "--floor", str(floor), "--exceptions",
                            str(exc)], capture_output=True, text=True)
    assert stale.returncode == 1 and "the exception in exceptions.toml lists 2" in stale.stdout
    # the same for an SME unit
    _csv(tmp_path / "b", [(t128, "kb_s", 198, "run+0x0..+0x8 (2 insn)"),
                          (t512, "kb_s", 198, "run+0x4..+0xc (2 insn)")], backend="sme")
    bad = subprocess.run([*gate, str(tmp_path / "b"), "--floor", str(floor)],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "below 100% over both" in bad.stdout
    assert "run+0x4 (1 insn)" in bad.stdout
    # what one SVL misses the other ran: 100% over both
    _csv(tmp_path / "c", [(t128, "kb_s", 198, "run+0x0..+0x8 (2 insn)"),
                          (t512, "kb_s", 198, "run+0x8..+0x10 (2 insn)")], backend="sme")
    both = subprocess.run([*gate, str(tmp_path / "c"), "--floor", str(floor)],
                          capture_output=True, text=True)
    assert both.returncode == 0, both.stdout
    assert "100.00%" in both.stdout


def _csv(folder: Path, rows: list[tuple], backend: str = "") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "coverage.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=coverage.COLUMNS)
        w.writeheader()
        for target, unit, covered, *text in rows:
            w.writerow({"target": target, "owner": "kbench", "unit": unit, "kind": "kernel",
                        "backend": backend, "instructions": 200, "covered": covered,
                        "percent": covered / 2,
                        "uncovered": text[0] if text else
                        "" if covered == 200 else "run+0x0..+0x4 (1 insn)"})


def test_the_ci_coverage_gate_fails_on_a_drop_and_on_an_unlisted_unit(tmp_path: Path) -> None:
    gate = [sys.executable, str(REPO / "ci" / "check_coverage.py")]
    t128, t512 = "qemu:cpu=max:svl=128", "qemu:cpu=max:svl=512"
    floor = tmp_path / "floor.toml"
    _csv(tmp_path / "a", [(t128, "kb_x", 190), (t512, "kb_x", 200)])
    up = subprocess.run([*gate, str(tmp_path / "a"), "--floor", str(floor), "--update"],
                        capture_output=True, text=True)
    assert up.returncode == 0 and "kb_x = 95.00" in floor.read_text()
    same = subprocess.run([*gate, str(tmp_path / "a"), "--floor", str(floor)],
                          capture_output=True, text=True)
    assert same.returncode == 0 and "PASSED" in same.stdout
    _csv(tmp_path / "b", [(t128, "kb_x", 189), (t512, "kb_x", 200)])  # one instruction less
    drop = subprocess.run([*gate, str(tmp_path / "b"), "--floor", str(floor)],
                          capture_output=True, text=True)
    assert drop.returncode == 1 and "below the floor 95.00%" in drop.stdout
    _csv(tmp_path / "c", [(t128, "kb_x", 190), (t512, "kb_x", 200), (t512, "kb_y", 200)])
    new = subprocess.run([*gate, str(tmp_path / "c"), "--floor", str(floor)],
                         capture_output=True, text=True)
    assert new.returncode == 1 and "kb_y" in new.stdout and "not in the floor" in new.stdout
    _csv(tmp_path / "d", [(t512, "kb_x", 200)])  # a unit of the floor that did not run
    gone = subprocess.run([*gate, str(tmp_path / "d"), "--floor", str(floor)],
                          capture_output=True, text=True)
    assert gone.returncode == 1 and "in the floor, not in the run" in gone.stdout
