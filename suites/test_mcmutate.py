"""The machine-code mutation campaign (`kbench mutate --plugin`,
kbench.harness.mcmutate) end to end on the SME example plugin's GEMV, and
its parts on their own: a mutant kbench kills and the example's own small
test program (examples/plugins/extest) does not, one both kill, one no test
can tell apart (likely equivalent, with the probe's evidence); Ctrl-C leaves
an INCOMPLETE folder that the same command resumes without running a
finished mutant again; the report's section; the folder checks, the
not-reached rule and the CLI's usage errors."""

from __future__ import annotations

import csv
import fnmatch
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli_run import kbench
from qemu_gate import needs_qemu

from kbench.harness import mcmutate as mc
from kbench.results import mcmutation as mcm
from kbench.targets.a64asm import find_llvm_mc
from suites import plugin_builds

REPO = Path(__file__).resolve().parents[1]
needs_llvm = pytest.mark.skipif(find_llvm_mc() is None and not os.environ.get(
    "KBENCH_REQUIRE_QEMU"), reason="no llvm-mc of LLVM 16 or later (ci/install-toolchain.sh)")
TARGET = "qemu:svl=512"


def _args(folder: Path, *extra: str) -> list[str]:
    build = plugin_builds.build("aarch64")
    return ["mutate", "--plugin", str(build / "libexsme.so"), "--target", TARGET,
            "--realization", "exsme.gemv_sme2_dot", "--external-test",
            "{target} " + str(build / "extest") + " {lib}", "--out", str(folder), *extra]


def _journal(folder: Path) -> list[dict[str, Any]]:
    path = folder / mc.JOURNAL
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """--list (baseline and plan), then three chosen mutants: interrupted
    after the first finished, resumed to the end."""
    folder = tmp_path_factory.mktemp("mc") / "camp"
    listed = kbench(*_args(folder, "--list"))
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    lines = [x for x in listed.stdout.splitlines() if "  ->  " in x]
    ids = [x.split()[0] for x in lines]

    def first(pattern: str, text: str = "") -> str:
        return next(i for i, x in zip(ids, lines, strict=True)
                    if fnmatch.fnmatchcase(i, pattern) and text in x)

    chosen = {"gemv": first("kb_sme2_gemv_core+*/fma-drop"),  # GEMV only: extest runs none
              "packer": first("rhs_pack+*/nop", "mov x1, x2  ->  nop"),  # both run it
              "sr": first("*sme2_dot_get_sr+*/imm+1")}  # a query nothing uses
    cmd = [sys.executable, "-m", "kbench.cli",
           *_args(folder, *[a for i in chosen.values() for a in ("--mutant", i)])]
    # SIGINT as a terminal delivers it: a CI job may start its commands with SIGINT
    # ignored (a background job), which a child inherits and kbench then leaves alone
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 600
    while not _journal(folder) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    first_done = _journal(folder)
    meta1 = json.loads((folder / "run.json").read_text())
    log = folder / first_done[0]["log"]
    mtime = log.stat().st_mtime_ns
    resumed = kbench(*cmd[3:])
    return {"folder": folder, "ids": chosen, "listed": listed, "interrupted": (proc.returncode,
            out, err), "first": first_done, "meta1": meta1, "resumed": resumed,
            "log_unchanged": log.stat().st_mtime_ns == mtime}


@needs_qemu
@needs_llvm
def test_list_plans_only_executed_code_of_the_realization(campaign: dict[str, Any]) -> None:
    folder = campaign["folder"]
    plan = json.loads((folder / mc.PLAN).read_text())
    base = plan["baseline"]
    assert base["executed"] > 0 and base["seconds"] > 0 and base["cases"] > 0
    ran = {f for f, (done, _all) in base["functions"].items() if done}
    assert "kb_sme2_gemv_core" in ran and "kb_sme2_mopa_core" not in ran  # the MOPA GEMM's
    assert {m["function"] for m in plan["planned"]} <= ran
    assert "baseline passed" in campaign["listed"].stdout


@needs_qemu
@needs_llvm
def test_ctrl_c_leaves_an_incomplete_folder_and_the_resume_skips_finished(
        campaign: dict[str, Any]) -> None:
    code, _out, err = campaign["interrupted"]
    assert code == 130
    assert "INCOMPLETE" in err and "resume with: kbench mutate" in err
    assert campaign["meta1"]["complete"] is False
    assert len(campaign["first"]) >= 1
    res = campaign["resumed"]
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "finished before" in res.stdout
    journal = _journal(campaign["folder"])
    assert sorted(r["id"] for r in journal) == sorted(campaign["ids"].values())  # none twice
    assert campaign["log_unchanged"]  # the finished mutant did not run again
    assert json.loads((campaign["folder"] / "run.json").read_text())["complete"] is True


@needs_qemu
@needs_llvm
def test_kbench_and_the_external_test_judge_each_mutant(campaign: dict[str, Any]) -> None:
    data = mcm.load(campaign["folder"])
    assert data is not None and data["complete"]
    by = {m["id"]: m for m in data["mutants"]}
    ids = campaign["ids"]
    gemv, packer, sr = by[ids["gemv"]], by[ids["packer"]], by[ids["sr"]]
    assert (gemv["status"], gemv["external"]) == (mcm.KILLED, mcm.SURVIVED)
    assert "exsme.gemv_sme2_dot" in gemv["detail"]  # the verdict that killed it
    assert (packer["status"], packer["external"]) == (mcm.KILLED, mcm.KILLED)
    assert sr["status"] == mcm.EQUIVALENT and sr["external"] == mcm.SURVIVED
    assert "bit-identical" in sr["detail"] and "same instruction trace" in sr["detail"]
    assert any(x.startswith(">") and "=>" in x for x in sr["listing"])
    s = data["summary"]
    assert (s["live"], s[mcm.KILLED], s["external_killed"]) == (2, 2, 1)
    assert s["kbench_kill_rate"] == 1.0 and s["external_kill_rate"] == 0.5
    assert s["only_kbench"] == [ids["gemv"]] and s["only_external"] == [] and not s["survivors"]
    assert s["equivalent"] == [ids["sr"]]
    with open(campaign["folder"] / mc.CSV, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["id"] for r in rows} == set(ids.values())
    assert set(mc.CSV_COLUMNS) <= set(rows[0])
    out = campaign["resumed"].stdout
    assert "kbench's suites kill 2 of 2" in out and "the external test kills 1 of 2" in out


@needs_qemu
@needs_llvm
def test_the_report_shows_both_kill_rates_and_the_listings(campaign: dict[str, Any]) -> None:
    res = kbench("report", str(campaign["folder"]))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    html = (campaign["folder"] / "report" / "report.html").read_text()
    assert 'id="mcmutation"' in html and 'href="#mcmutation"' in html
    assert "kbench&#39;s suites kill 2 of 2" in html and "external test kills 1 of 2" in html
    assert "Killed only by kbench (1)" in html and "Likely equivalent (1)" in html
    for name in ("mc_functions", "mc_operators", "mc_mutants"):
        assert (campaign["folder"] / "report" / f"{name}.csv").exists()


# ---- the parts on their own ---------------------------------------------------------------

def _opts(tmp: Path, **kw: Any) -> mc.Options:
    lib = tmp / "lib.so"
    lib.write_bytes(b"\x7fELF not really")
    return mc.Options(lib, TARGET, tmp / "out", **kw)


def test_a_folder_of_another_campaign_or_kind_is_refused(tmp_path: Path) -> None:
    opts = _opts(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"kind": "mutation-campaign"}))
    with pytest.raises(mc.CampaignError, match="another kind of run"):
        mc.Campaign(opts, print).run()
    settings = opts.settings(mc.sha256(opts.library))
    (out / "run.json").write_text(json.dumps({"kind": mcm.KIND, "settings": {
        **settings, "target": "qemu:svl=128"}}))
    with pytest.raises(mc.CampaignError, match="other settings.*target"):
        mc.Campaign(opts, print).run()
    (out / "run.json").unlink()
    (out / "something").write_text("x")
    with pytest.raises(mc.CampaignError, match="not a campaign's folder"):
        mc.Campaign(opts, print).run()


def test_a_survivor_whose_instruction_never_ran_is_not_reached(tmp_path: Path) -> None:
    camp = mc.Campaign(_opts(tmp_path), print)
    lib = tmp_path / "work" / "lib.so"
    lib.parent.mkdir()
    lib.write_bytes(b"x")
    run_dir = tmp_path / "run"
    logs = mc.coverage_run.log_dir(run_dir, TARGET)
    logs.mkdir(parents=True)
    (logs / "7.log").write_text("----------------\nIN: f\n0x00011000:  d503201f  nop\n"
                                "0x00011004:  d503201f  nop\n\n")
    (logs / "7.map.json").write_text(json.dumps({"binary": "/w", "objects": [
        {"path": str(lib), "bias": 0x10000, "segments": [[0x11000, 0x12000]]}]}))
    log = tmp_path / "m.log"
    ran = mc.mcsites.Planned("f+0x4/nop", "f", 4, 0x1004, 0x1004, "nop", "nop", 0, 0, "x", "nop")
    never = mc.mcsites.Planned("f+0x8/nop", "f", 8, 0x1008, 0x1008, "nop", "nop", 0, 0, "x",
                               "nop")
    assert camp._judge(0, 1.0, run_dir, lib, ran, log, reach=True)[0] == mcm.SURVIVED
    assert camp._judge(0, 1.0, run_dir, lib, never, log, reach=True)[0] == mcm.NOT_REACHED
    # a run without coverage says nothing about reach: passing is surviving it
    assert camp._judge(0, 1.0, run_dir, lib, never, log)[0] == mcm.SURVIVED
    assert camp._judge(1, 1.0, run_dir, lib, never, log)[0] == mcm.KILLED
    status, detail = camp._judge(None, 99.0, run_dir, lib, never, log)
    assert status == mcm.KILLED and "did not finish within 99 s" in detail


def test_external_command_substitutes_the_library_and_the_qemu_command(tmp_path: Path) -> None:
    lib = tmp_path / "a dir" / "lib x.so"
    cmd = mc.external_command("{target} ./t {lib} && echo {lib}", lib, "qemu:svl=256:isa=neon")
    assert cmd.count("'" + str(lib) + "'") == 2
    assert "-cpu max,sme-default-vector-length=32" in cmd and "-L /usr/aarch64-linux-gnu" in cmd
    assert "KBENCH_ISA_CAP=neon" in cmd


def _row(i: str, status: str, ext: str, fn: str = "f", op: str = "nop") -> dict[str, Any]:
    return {"id": i, "status": status, "external": ext, "function": fn, "operator": op}


def test_summary_counts_kill_rates_over_reached_non_equivalent_mutants() -> None:
    rows = [_row("a", mcm.KILLED, mcm.KILLED), _row("b", mcm.KILLED, mcm.SURVIVED, "g"),
            _row("c", mcm.SURVIVED, mcm.KILLED, op="reg"), _row("d", mcm.SURVIVED, mcm.SURVIVED),
            _row("e", mcm.EQUIVALENT, mcm.SURVIVED), _row("f", mcm.NOT_REACHED, mcm.KILLED),
            _row("g", mcm.ERROR, "")]
    s = mcm.summarize(rows, True)
    assert s["live"] == 4 and s["kbench_kill_rate"] == 0.5 and s["external_kill_rate"] == 0.5
    assert (s["only_kbench"], s["only_external"], s["survivors"]) == (["b"], ["c"], ["d"])
    assert s["functions"]["g"]["kbench_kill_rate"] == 1.0
    assert s["operators"]["reg"]["external_killed"] == 1
    assert s["equivalent"] == ["e"] and s["errors"] == ["g"]
    alone = mcm.summarize(rows, False)
    assert alone["only_kbench"] == [] and alone["survivors"] == ["d"]


def test_survivors_are_told_apart_by_what_the_probe_saw() -> None:
    import numpy as np

    from kbench.harness import mcprobe
    one, two = [np.array([0x3C00], np.uint16)], [np.array([0x3C01], np.uint16)]
    base = mcprobe.Probe(["c"], ["x"], [10], "", one)
    _, trace = mcprobe.compare(base, mcprobe.Probe(["c"], ["x"], [11], "", one))
    _, outputs = mcprobe.compare(base, mcprobe.Probe(["c"], ["y"], [10], "", two))
    rows = [{**_row(i, mcm.SURVIVED, ""), "detail": f"every suite passed; {d}"}
            for i, d in (("t", trace), ("o", outputs), ("n", "the probe ran other cases"))]
    assert [mcm.survivor_kind(r["detail"]) for r in rows] == ["trace", "outputs", ""]
    s = mcm.summarize(rows, False)
    assert (s["survived_trace"], s["survived_outputs"]) == (1, 1)


@pytest.mark.parametrize("args, message", [
    (["--plugin", "x.so", "--area", "kernels", "--target", TARGET], "--area applies to the "
     "catalog mode"),
    (["--external-test", "t {lib}"], "--external-test applies to the machine-code mode"),
    (["--plugin", "x.so", "--target", "host"], "needs a qemu: target"),
    (["--plugin", "/nonexistent/lib.so", "--target", TARGET], "no such file"),
])
def test_usage_errors_name_the_option(args: list[str], message: str) -> None:
    res = kbench("mutate", *args)
    assert res.returncode == 2 and message in res.stderr, res.stderr


def test_the_external_test_must_name_the_library(tmp_path: Path) -> None:
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"x")
    res = kbench("mutate", "--plugin", str(lib), "--target", TARGET, "--external-test", "t")
    assert res.returncode == 2 and "must name the mutated library as {lib}" in res.stderr


def test_the_cli_offers_every_operator() -> None:
    from kbench.cli.mcmutate import OPERATOR_NAMES
    from kbench.targets.a64patch import OPERATORS
    assert tuple(OPERATORS) == OPERATOR_NAMES


# ---- gaps in kbench's checks that machine-code mutants of the SME example showed ----------

def _patched(tmp: Path, function: str, old: int, new: int) -> Path:
    """libexsme.so with one word of `function` replaced (old must be there)."""
    from kbench.targets.a64patch import patch
    from kbench.targets.elf import Elf
    src = plugin_builds.build("aarch64") / "libexsme.so"
    elf = Elf(src)
    f = next(f for f in elf.functions() if f.name == function)
    text = elf.section(".text")
    data = src.read_bytes()
    for addr in range(f.addr, f.end, 4):
        off = text.offset + addr - text.addr
        if int.from_bytes(data[off:off + 4], "little") == old:
            out = tmp / "libexsme.so"
            out.write_bytes(patch(data, off, old, new))
            return out
    raise AssertionError(f"{function} has no word {old:#010x}")


def _failed(folder: Path) -> list[dict[str, str]]:
    with open(folder / "results.csv", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["status"] not in ("pass", "skip")]


@needs_qemu
def test_a_kernel_query_that_contradicts_its_declared_layout_fails(tmp_path: Path) -> None:
    # get_kr: `mov w0, #2` -> `mov w0, #3`; the packers still pack KR = 2, results stay right
    lib = _patched(tmp_path, "kb_matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa_get_kr",
                   0x52800040, 0x52800060)
    out = tmp_path / "run"
    res = kbench("run", "--suite", "contracts", "--plugin", str(lib), "--realization",
                 "exsme.gemm_sme2_mopa", "--target", TARGET, "--no-history", "--no-report",
                 "--out", str(out), "-n", "1")
    assert res.returncode == 1, res.stdout[-3000:]
    msgs = [r["message"] for r in _failed(out)]
    assert any("get_kr() is 3" in m and "KR = 2" in m for m in msgs), msgs


@needs_qemu
def test_threads_over_n_catch_a_gemv_whose_dst_offset_is_wrong_past_column_0(
        tmp_path: Path) -> None:
    # get_dst_offset: `add x0, x8, x1, lsl #1` -> `lsl #2`: right for n_idx = 0 only
    lib = _patched(tmp_path, "kb_matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot_get_dst_offset",
                   0x8B010500, 0x8B010900)
    out = tmp_path / "run"
    res = kbench("run", "--suite", "correctness", "--plugin", str(lib), "--realization",
                 "exsme.gemv_sme2_dot", "--target", TARGET, "--shapes", "smoke", "--tails",
                 "none", "--no-history", "--no-report", "--out", str(out), "-n", "1")
    assert res.returncode == 1, res.stdout[-3000:]
    failed = _failed(out)
    assert failed and {r["case"] for r in failed} == {"threads_gemv"}, failed


def test_the_eta_follows_the_campaigns_own_pace() -> None:
    assert mc.pace_eta(60.0, 3, 6) == 120.0  # 20 s a mutant (two lanes included), 6 left
    assert mc.pace_eta(60.0, 3, 0) == 0.0
    assert mc.pace_eta(0.0, 0, 10) == 0.0  # nothing finished yet: the baseline's estimate


def test_the_probe_says_how_outputs_differ() -> None:
    import numpy as np

    from kbench.harness import mcprobe
    base = np.array([0x0000, 0x3C00, 0x7E00, 0x3C00], np.uint16)  # +0, 1.0, NaN, 1.0
    mut = np.array([0x8000, 0x3C01, 0x7E01, 0x3C00], np.uint16)  # -0, 1.0 + 1 ulp, NaN
    text = mcprobe.how_outputs_differ([base], [mut])
    assert "1 value(s) by at most 1 ulp" in text and "1 zero(s) in their sign only" in text
    assert "1 NaN(s) in their payload only" in text
    near_zero = mcprobe.how_outputs_differ([np.array([0x0001], np.uint16)],
                                           [np.array([0x8001], np.uint16)])
    assert "by at most 2 ulp" in near_zero  # the smallest subnormals of both signs
    a = mcprobe.Probe(["c1", "c2"], ["x", "y"], [10, 20], "", [base, base])
    b = mcprobe.Probe(["c1", "c2"], ["x", "z"], [10, 20], "", [base, mut])
    same, why = mcprobe.compare(a, a)
    assert same and "same instruction trace (30 instructions)" in why
    same, why = mcprobe.compare(a, b)
    assert not same and why.startswith("outputs differ on 1 of 2 probe cases, 1 value(s)")
    c = mcprobe.Probe(["c1", "c2"], ["x", "y"], [10, 21], "", [base, base])
    same, why = mcprobe.compare(a, c)
    assert not same and "instruction trace 31 instead of 30" in why
    assert not mcprobe.compare(a, mcprobe.Probe(error="boom"))[0]


@needs_llvm
def test_a_stripped_library_is_planned_as_one_text_function(tmp_path: Path) -> None:
    from kbench.harness import mcsites
    from kbench.targets.a64asm import Disassembler
    from kbench.targets.elf import Elf
    src = plugin_builds.build("aarch64") / "libexukref.so"
    lib = tmp_path / "libstripped.so"
    import shutil
    tool = shutil.which("llvm-objcopy-19") or shutil.which("llvm-objcopy")
    if tool is None:
        pytest.skip("no llvm-objcopy")
    subprocess.run([tool, "--strip-all", str(src), str(lib)], check=True)
    text = Elf(lib).section(".text")
    ran = {text.addr + 4 * i for i in range(16)}
    plan = mcsites.plan(lib, ran, Disassembler())
    assert plan.functions == {".text": (16, text.size // 4)}
    assert plan.mutants and all(m.id.startswith(".text+0x") for m in plan.mutants)
    assert {m.addr for m in plan.mutants} <= ran


def test_static_functions_of_the_same_name_are_told_apart_by_their_file(tmp_path: Path) -> None:
    import shutil

    from kbench.targets import coverage
    if not shutil.which("clang-19"):
        pytest.skip("clang-19 is not installed (bash ci/install-toolchain.sh)")
    for stem in ("one", "two"):
        (tmp_path / f"{stem}.c").write_text(
            f"__attribute__((noinline)) static int run(int x) {{ return x + {len(stem)}; }}\n"
            f"int {stem}(int x) {{ return run(x) * 3; }}\n")
    lib = tmp_path / "libtwo.so"
    subprocess.run(["clang-19", "--target=aarch64-linux-gnu", "-O1", "-fPIC", "-shared",
                    "-nostdlib", "-fuse-ld=lld", str(tmp_path / "one.c"), str(tmp_path / "two.c"),
                    "-o", str(lib)], check=True)
    names = sorted(u.name for u in coverage.plugin_units(lib))
    assert names == ["one", "one.c:run", "two", "two.c:run"]


def test_without_llvm_mc_the_campaign_stops_before_its_baseline(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kbench.targets import a64asm
    monkeypatch.setattr(a64asm, "find_llvm_mc", lambda: None)
    opts = _opts(tmp_path)
    with pytest.raises(a64asm.DisassemblerError, match="install llvm-19"):
        mc.Campaign(opts, print).run()
    assert not (opts.out / "baseline").exists()


def test_what_ran_decides_only_where_a_realization_declares_its_functions(
        tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()

    def declares(realizations: list[dict[str, Any]], chosen: tuple[str, ...] = ()) -> bool:
        (run / "run.json").write_text(json.dumps({"targets": {TARGET: {
            "realizations": realizations}, "bad": "x"}}))
        return mc.Campaign(_opts(tmp_path, realizations=chosen), print)._declares_symbols(run)

    ours = {"name": "gemm_x", "plugin": "", "expect_symbols": ["kb_*"]}
    plain = {"name": "p.gemm", "plugin": "p 1.0", "expect_symbols": []}
    declared = {"name": "p.fast", "plugin": "p 1.0", "expect_symbols": ["p_fast_*"]}
    assert not declares([ours, plain])  # kbench's own realizations are not mutated
    assert declares([ours, plain, declared])
    assert not declares([plain, declared], ("p.gemm",))  # not a chosen realization
    (run / "run.json").write_text("{")
    assert mc.Campaign(_opts(tmp_path), print)._declares_symbols(run)  # unknown: be sure


def test_a_traced_campaign_runs_mutants_as_a_user_run_and_coverage_only_for_reach(
        tmp_path: Path) -> None:
    camp = mc.Campaign(_opts(tmp_path), print)
    camp.baseline = mc.Baseline(10.0, traced=True)
    lib, out = tmp_path / "l.so", tmp_path / "r"
    user = camp.kbench_cmd(lib, out, True, False)
    reach = camp.kbench_cmd(lib, out, True, True)
    assert "--coverage" not in user and "--coverage" in reach
    assert "-x" in user and "--strict-plugins" in user
    assert user[user.index("--call-timeout") + 1] == "20"  # twice the baseline, at least 20 s
    assert user[user.index("--backend") + 1] == "plugin"
