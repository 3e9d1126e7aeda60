"""Exact instruction counts on emulated Arm (kbench.targets.counting and
what is built on it): the instruction classifier against clang-19's
assembler, the trace parser on synthetic logs, the calibration against a
loop of known length under QEMU (both counting methods), the two methods
agreeing on real cases, counts repeating across runs and environments, the
test-only knob adding exactly its instructions, floors, the count gate (A/A
never fails; the knob fails it just above 0.5% and not just below, naming
the phase), the committed baseline (its file, the check command) and the
KleidiAI anchor table, and the report's count section.

Tests that run QEMU or clang are skipped where they are not installed,
unless KBENCH_REQUIRE_QEMU is set (as in CI)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from kbench.cli.count import baseline as baseline_cli
from kbench.cli.history import gate_command
from kbench.harness.counting import Counter, count_fields
from kbench.harness.runner import Job
from kbench.judge.verdict import Verdict
from kbench.problems.cases import ConvCase, GemmCase
from kbench.results import anchors as anc
from kbench.results import baseline as bl
from kbench.results import report_counts as rcount
from kbench.results.compare import gate
from kbench.results.count_compare import FEWER, MISSING, MORE, NEW, SAME, compare_counts
from kbench.results.counts import COLUMNS, floor, parse_mix
from kbench.results.history import append_run, run_results
from kbench.results.runfolder import load_run
from kbench.results.store import RunWriter
from kbench.targets import a64, crossbuild
from kbench.targets.elf import Elf
from kbench.targets.qemutrace import PhaseMap, TraceCounter, TraceError, build_phase_map
from kbench.targets.spec import parse_target
from kbench.targets.tools import find_qemu

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "suites" / "data" / "a64_corpus.s"
CLANG = shutil.which(crossbuild.toolchain_compiler("aarch64"))
REQUIRE = bool(os.environ.get("KBENCH_REQUIRE_QEMU"))
try:
    QEMU: str | None = find_qemu()
except Exception:  # noqa: BLE001
    QEMU = None
    if REQUIRE:
        raise
needs_qemu = pytest.mark.skipif(QEMU is None or CLANG is None,
                                reason="qemu-aarch64 or clang-19 not installed "
                                       "(bash ci/install-toolchain.sh)")
needs_clang = pytest.mark.skipif(CLANG is None and not REQUIRE, reason="clang-19 not installed")
MARCH = ("-march=armv9.4-a+sme2p1+sme-f64f64+sme-i16i64+sve2p1+bf16+i8mm+fp16fml+dotprod"
         "+sme-f16f16+b16b16+lse+rcpc")


# ---- the instruction classifier --------------------------------------------------------


def _assemble(tmp: Path, source: Path) -> list[int]:
    obj = tmp / (source.stem + ".o")
    subprocess.run([CLANG or "clang-19", "--target=aarch64-linux-gnu", MARCH, "-c", str(source),
                    "-o", str(obj)], check=True, capture_output=True)
    return Elf(obj).words()


def _corpus() -> list[tuple[str, str]]:
    out = []
    for line in CORPUS.read_text().splitlines():
        if line.strip() and not line.startswith("//"):
            text, expected = line.split("//")
            out.append((text.strip(), expected.strip()))
    return out


@needs_clang
def test_classifier_agrees_with_clang_on_every_corpus_instruction(tmp_path: Path) -> None:
    corpus = _corpus()
    words = _assemble(tmp_path, CORPUS)
    assert len(words) == len(corpus) > 300
    wrong = [f"{w:08x} {text}: expected {exp}, got {a64.CLASSES[a64.classify(w)]}"
             for w, (text, exp) in zip(words, corpus, strict=True)
             if a64.CLASSES[a64.classify(w)] != exp]
    assert not wrong, "\n".join(wrong)
    # every class is exercised
    assert {exp for _, exp in corpus} == set(a64.CLASSES)


@needs_clang
def test_call_and_return_kinds(tmp_path: Path) -> None:
    words = dict(zip([t for t, _ in _corpus()], _assemble(tmp_path, CORPUS), strict=True))
    assert a64.flow(words["bl ."]) == a64.Flow.CALL
    assert a64.flow(words["blr x1"]) == a64.Flow.CALL
    assert a64.flow(words["ret"]) == a64.Flow.RET
    for branch in ("b .", "br x0", "b.ne .", "cbz x0, .", "tbnz x0, #3, ."):
        assert a64.flow(words[branch]) == a64.Flow.BRANCH, branch
    for plain in ("nop", "fmopa za0.s, p0/m, p0/m, z0.h, z4.h", "svc #0", "cmp x0, #1"):
        assert a64.flow(words[plain]) == a64.Flow.NONE, plain


CAPSTONE_CLASSES = {
    "outer": {"fmopa", "fmops", "bfmopa", "smopa", "umopa"},
    "dot": {"fdot", "bfdot", "sdot", "udot"},
    "mla": {"fmla", "fmls", "fmlal", "fmlal2", "fmlalb", "fmlalt", "fmadd", "fmsub", "fnmadd",
            "mla", "mls"},
    "control": {"b", "bl", "br", "blr", "ret", "cbz", "cbnz", "tbz", "tbnz", "cmp", "cmn", "tst",
                "subs", "adds", "ands", "bics", "ccmp", "ccmn", "whilelt", "whilelo", "ptrue"},
}


def _expected_from_mnemonic(text: str) -> str | None:
    """The class QEMU's disassembler text implies (None: it could not decode)."""
    mnemonic, _, operands = text.partition(" ")
    operands = operands.strip()
    if mnemonic == ".byte":
        return None
    for cls, names in CAPSTONE_CLASSES.items():
        if mnemonic in names or cls == "control" and mnemonic.startswith("b."):
            return cls
    if mnemonic.startswith(("fcm", "cm")):
        return "control" if operands.startswith("p") else "other"  # SVE: into predicates
    if mnemonic.startswith(("ld", "swp", "cas", "prfm")):
        return "load"
    if mnemonic.startswith("st"):
        return "store"
    return "other"


@needs_qemu
def test_classifier_agrees_with_qemus_disassembler_on_our_code() -> None:
    """Every instruction QEMU translates while our kernels, packers and drivers
    run (SME2, SME, NEON, scalar), classified from its word and from the text
    QEMU's disassembler prints for it (SME2 words it cannot decode aside)."""
    import numpy as np

    from kbench.native import api
    from kbench.native.calls import pack
    from kbench.targets.tools import worker_binary
    from kbench.targets.worker import WorkerEngine, WorkerSpec
    rfd, wfd = os.pipe()
    seen: dict[str, str] = {}

    def read() -> None:
        with os.fdopen(rfd, "rb") as log:
            for line in log:
                if line.startswith(b"0x"):
                    _, word, *text = line.decode().split(None, 2)
                    seen[word] = " ".join(text).strip()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    cmd = [QEMU or "qemu-aarch64", "-cpu", "max,sme-default-vector-length=64", "-d", "in_asm",
           "-D", f"/dev/fd/{wfd}", worker_binary("aarch64")]
    engine = WorkerEngine(WorkerSpec(cmd, {}, emulated=True, pass_fds=(wfd,)))
    rng = np.random.default_rng(3)
    try:
        try:
            backends = {r.name: r.backend for r in engine.info("disassembly").realizations}
        finally:
            os.close(wfd)
        for name in ("gemm_sme2_mopa_f32acc", "gemm_sme_mopa_f32acc", "gemv_sme2_dot_f32acc",
                     "gemv_sme_f32acc", "gemm_neon_f32acc_fhm", "gemm_neon_f32acc_cvt",
                     "gemm_neon_f16acc", "gemm_scalar_f32acc"):
            m = 1 if name.startswith("gemv") else 19
            a = rng.random((m, 37)).astype(np.float16)
            b = rng.random((37, 41)).astype(np.float16)
            c = np.zeros((m, 41), np.float16)
            sel = api.Selector(force=name)
            packed = pack(engine, b, backends[name], np.zeros(41, np.float16), sel)
            engine.gemm_raw(m, 41, 37, [api.RawProblem(
                a=a, lda=37, b=packed, ldb=0, c=c, ldc=41, b_size=packed.size,
                b_is_packed=True, b_is_backend_native_packed=True, clamp_min=-1.0,
                clamp_max=1.0)], sel)
            engine.gemm_raw(m, 41, 37, [api.RawProblem(a=a, lda=37, b=b, ldb=41, c=c, ldc=41,
                                                       bias=np.zeros(41, np.float16))], sel)
    finally:
        engine.close()
    reader.join(60)
    compared = {w: t for w, t in seen.items() if _expected_from_mnemonic(t) is not None}
    wrong = [f"{w} {t}: {a64.CLASSES[a64.classify(int(w, 16))]}" for w, t in compared.items()
             if a64.CLASSES[a64.classify(int(w, 16))] != _expected_from_mnemonic(t)]
    assert not wrong, "\n".join(wrong[:40])
    assert len(compared) > 3000
    kinds = {_expected_from_mnemonic(t) for t in compared.values()}
    assert {"outer", "mla", "load", "store", "control", "other"} <= kinds


# ---- the trace parser on a synthetic log -------------------------------------------------

NOP, RET = 0xD503201F, 0xD65F03C0


def _bl(src: int, dst: int) -> int:
    return 0x94000000 | (((dst - src) >> 2) & 0x3FFFFFF)


def _b(src: int, dst: int) -> int:
    return 0x14000000 | (((dst - src) >> 2) & 0x3FFFFFF)


def _program() -> PhaseMap:
    """win calls validate (which calls checksum), then a helper that tail-calls the kernel."""
    words = {0x1000: NOP, 0x1004: _bl(0x1004, 0x2000), 0x1008: NOP, 0x100C: _bl(0x100C, 0x3000),
             0x1010: RET,
             0x2000: NOP, 0x2004: _bl(0x2004, 0x2100), 0x2008: RET,
             0x2100: NOP, 0x2104: NOP, 0x2108: RET,
             0x3000: _b(0x3000, 0x4000),
             0x4000: NOP, 0x4004: RET}
    return PhaseMap({0x1000: ("call", "win")},
                    {0x2000: "validate", 0x2100: "checksum", 0x4000: "kernel"}, words)


BLOCKS = [(0x1000, [0x1000, 0x1004]), (0x2000, [0x2000, 0x2004]),
          (0x2100, [0x2100, 0x2104, 0x2108]), (0x2008, [0x2008]), (0x1008, [0x1008, 0x100C]),
          (0x3000, [0x3000]), (0x4000, [0x4000, 0x4004]), (0x1010, [0x1010])]


def _trace(pc: int) -> bytes:
    return f"Trace 0: 0x7f00{pc:08x} [00000000/{pc:016x}/00000001/00000200] f\n".encode()


def _tb_log(blocks: list[tuple[int, list[int]]], pmap: PhaseMap) -> list[bytes]:
    lines = [b"noise before the window\n"]
    for pc, addrs in blocks:
        lines += [b"----------------\n", b"IN: f\n"]
        lines += [f"0x{a:08x}:  {pmap.words[a]:08x}  insn\n".encode() for a in addrs]
        lines += [b"\n", _trace(pc)]
    return lines


def test_tb_counter_attributes_every_instruction_to_its_innermost_phase() -> None:
    pmap = _program()
    counter = TraceCounter(pmap, "tb")
    counter.feed(_tb_log(BLOCKS, pmap))
    (w,) = counter.wait_for(1, 1)
    assert w.kind == "call" and w.function == "win"
    assert w.counts == {"": 6, "validate": 3, "validate>checksum": 3, "kernel": 2}
    assert w.total == 14
    assert w.phase_total("checksum") == 3 and w.top_total("validate") == 6
    # the mix: 9 NOPs (other), 3 BL + 1 B + 4 RET (control)... in the right phases
    assert w.top_mix("kernel")[a64.OTHER] == 1 and w.top_mix("kernel")[a64.CONTROL] == 1
    assert sum(w.top_mix(None)) == 14


def test_insn_counter_gives_the_same_counts() -> None:
    pmap = _program()
    counter = TraceCounter(pmap, "insn")
    counter.feed([_trace(a) for _, addrs in BLOCKS for a in addrs])
    (w,) = counter.wait_for(1, 1)
    assert w.counts == {"": 6, "validate": 3, "validate>checksum": 3, "kernel": 2}


def test_a_call_that_was_not_logged_is_an_error_not_a_short_count() -> None:
    pmap = _program()
    counter = TraceCounter(pmap, "tb")
    # validate's blocks missing: the next logged block after the BL is its return address
    counter.feed(_tb_log([b for b in BLOCKS if b[0] not in (0x2000, 0x2100, 0x2008)], pmap))
    with pytest.raises(TraceError, match="not logged"):
        counter.wait_for(1, 1)


def test_a_log_out_of_sync_is_an_error() -> None:
    pmap = _program()
    lines = _tb_log(BLOCKS[:1], pmap)
    lines[-1] = _trace(0x2000)  # a block executes that is not the one just logged
    counter = TraceCounter(pmap, "tb")
    counter.feed(lines)
    with pytest.raises(TraceError, match="out of sync"):
        counter.wait_for(1, 1)


def test_waiting_for_windows_that_never_close_times_out() -> None:
    counter = TraceCounter(_program(), "tb")
    counter.feed([])
    with pytest.raises(TraceError, match="0 of 1"):
        counter.wait_for(1, 0.1)


# ---- calibration under QEMU: a loop of known length ---------------------------------------

LOOP = """    .text
    .globl _start
_start:
    bl work
    mov x0, #0
    mov x8, #93
    svc #0
    .globl work
    .type work, %function
work:
    mov x9, #ITERS
1:  subs x9, x9, #1
    b.ne 1b
    ret
    .size work, . - work
"""


def _count_program(tmp: Path, iterations: int, mode: str) -> int:
    src = tmp / "loop.S"
    src.write_text(LOOP.replace("ITERS", str(iterations)))
    exe = tmp / "loop"
    subprocess.run([CLANG or "clang-19", "--target=aarch64-linux-gnu", "-nostdlib", "-static",
                    "-fuse-ld=lld", str(src), "-o", str(exe)], check=True, capture_output=True)
    elf = Elf(exe)
    pmap = build_phase_map(elf, {"work": "call"}, [])
    counter = TraceCounter(pmap, mode)
    rfd, wfd = os.pipe()
    flags = ["-d", "in_asm,exec,nochain"] if mode == "tb" else ["-one-insn-per-tb", "-d",
                                                                 "exec,nochain"]
    proc = subprocess.Popen([QEMU or "qemu-aarch64", *flags, "-D", f"/dev/fd/{wfd}", str(exe)],
                            pass_fds=(wfd,))
    os.close(wfd)
    reader = threading.Thread(target=lambda: counter.feed(os.fdopen(rfd, "rb")))
    reader.start()
    assert proc.wait(60) == 0
    reader.join(60)
    (w,) = counter.wait_for(1, 10)
    return w.total


@needs_qemu
@pytest.mark.parametrize("mode", ["tb", "insn"])
def test_calibration_against_a_loop_of_known_length(tmp_path: Path, mode: str) -> None:
    """work() is mov + N x (subs, b.ne) + ret: exactly 2N + 2 instructions."""
    for n in (1, 1000, 4321):
        assert _count_program(tmp_path, n, mode) == 2 * n + 2


# ---- real cases on the worker --------------------------------------------------------------

SVL512 = "qemu:cpu=max:svl=512"


def _jobs(spec: str, cases: list[tuple[Any, str]]) -> list[Job]:
    target = parse_target(spec)
    reals = {r.name: r for r in target.info().realizations}
    target.close()
    return [Job(case, "uniform", reals[name], spec, "test") for case, name in cases]


SMALL = [
    (GemmCase("tail_native", 37, 53, 45, b_form="native"), "gemm_sme2_mopa_f32acc"),
    (GemmCase("tail_plain", 17, 31, 9, clamp=True, lda_pad=3, ldb_pad=5, ldc_pad=1),
     "gemm_neon_f16acc"),
    (GemmCase("gemv", 1, 64, 40, b_form="native"), "gemv_sme2_dot_f32acc"),
    (ConvCase("conv", 1, 6, 6, 8, 16, 3, 3, pad=(1, 1, 1, 1)), "conv2d_igemm_sme_mopa_f32acc"),
    (ConvCase("conv_im2col", 1, 5, 5, 4, 8, 3, 3), "conv2d_im2col_gemm_neon_f32acc_cvt"),
    (GemmCase("batch_packed", 9, 17, 33, batch=2, b_form="packed"), "gemm_neon_f32acc_fhm"),
    (ConvCase("grouped", 1, 5, 5, 8, 8, 3, 3, groups=2), "conv2d_igemm_neon_f16acc"),
]


@pytest.fixture(scope="module")
def small_counts() -> list[tuple[Job, dict[str, Any]]]:
    """The SMALL cases counted once (method tb) for the tests below."""
    if QEMU is None or CLANG is None:
        pytest.skip("qemu-aarch64 or clang-19 not installed")
    counter = Counter("tb")
    return [(job, count_fields(counter, job)) for job in _jobs(SVL512, SMALL)]


@needs_qemu
def test_two_methods_count_the_same_on_real_cases(
        small_counts: list[tuple[Job, dict[str, Any]]]) -> None:
    """Cross-check: blocks x their sizes and one line per instruction agree
    to the instruction, phase by phase, mix included."""
    counter = Counter("insn")
    for job, tb in small_counts:
        insn = count_fields(counter, job)
        assert tb["count_method"] == "qemu-tb" and insn["count_method"] == "qemu-insn"
        for col in (*COLUMNS, "count_mix"):
            assert tb.get(col) == insn.get(col), (job.realization.name, col)
        assert tb["count_call"] > 0 and tb["count_kernel"] > 0


@needs_qemu
def test_phases_add_up_and_land_where_the_code_is(
        small_counts: list[tuple[Job, dict[str, Any]]]) -> None:
    native, plain, gemv, conv, im2col, batch, grouped = (f for _, f in small_counts)
    for f in (native, plain, gemv, conv, im2col, batch, grouped):
        parts = sum(f.get(c, 0) for c in ("count_validate", "count_pack_lhs", "count_pack_rhs",
                                          "count_kernel", "count_other"))
        assert parts == f["count_call"]
    # native B: the call checks the header, never the payload (docs/errors.md, "The
    # packed-B contract"): a validate phase of its own, no checksum in the call
    assert native["count_checksum"] == 0
    assert 0 < native["count_validate"] < 2000  # a fixed cost: 64 header bytes, whatever N, K
    assert native["count_pack_b"] > native["count_pack_b_checksum"] > 0
    assert native["count_pack_lhs"] > 0 and native["count_pack_rhs"] == 0
    mix = parse_mix(native["count_mix"])
    # 37x53x45 at SVL 512: 2 x 2 output blocks of 32 x 32 computed only in the tiles that
    # hold their rows and columns, the bias by ADDHA: the floor, 3 x 4 tiles x 23 k pairs
    assert mix["kernel"]["outer"] == 3 * 4 * 23
    assert native["count_floor"] == 3 * 4 * 23
    # plain B: nothing to validate, B packed in the call (the NEON tail panel)
    assert plain["count_validate"] == 0 and plain["count_pack_rhs"] > 0
    assert "count_pack_b" not in plain
    assert parse_mix(gemv["count_mix"])["kernel"]["dot"] > 0
    assert conv["count_pack_lhs"] > 0 and conv["count_pack_rhs"] > 0  # table + filter packing
    assert im2col["count_pack_lhs"] > 0 and im2col["count_pack_rhs"] > 0  # im2col + tail panel
    # a batch of two with portable B: pack_b is one B's packing (with its checksum, which
    # the packer writes); the call checks both headers and hashes no payload
    assert batch["count_pack_b_checksum"] > 0
    assert batch["count_checksum"] == 0 and batch["count_validate"] > 0
    assert grouped["count_pack_lhs"] > 0 and grouped["count_kernel"] > 0


@needs_qemu
def test_counts_repeat_across_runs_and_environments(
        small_counts: list[tuple[Job, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    job, first = small_counts[0]
    monkeypatch.setenv("KBENCH_SOME_LONG_VARIABLE", "x" * 4000)  # the guest sees none of it
    monkeypatch.chdir(tmp_path)
    second = count_fields(Counter(), job)
    assert first == second


@needs_qemu
def test_the_sve21_only_target_counts_our_neon_kernels_as_max_does(
        small_counts: list[tuple[Job, dict[str, Any]]]) -> None:
    """On qemu:sme=off (SVE2.1, no SME) the NEON realizations' kernels and packers
    run the very code they run on max: the same counts and mix at the same SVE
    vector length (512 bits, max's own; glibc's SVE memcpy depends on it), with
    the -cpu that ran recorded. The whole call differs only by what runtime
    detection and the driver do with or without SME (a few dozen instructions)."""
    neon = [(job, f) for job, f in small_counts if job.realization.backend == "neon"]
    assert len(neon) == 4
    spec = "qemu:cpu=max:sme=off:vl=512"
    jobs = _jobs(spec, [(job.case, job.realization.name) for job, _ in neon])
    for job, (_, on_max) in zip(jobs, neon, strict=True):
        f = count_fields(Counter("tb"), job)
        assert f["count_cpu"] == "max,sme=off,sve-default-vector-length=64"
        for col in ("count_kernel", "count_pack_lhs", "count_pack_rhs", "count_floor"):
            assert f[col] == on_max[col], (job.case.name, col)
        assert parse_mix(f["count_mix"])["kernel"] == parse_mix(on_max["count_mix"])["kernel"]
        assert abs(f["count_call"] - on_max["count_call"]) < 64, job.case.name


def _knob(iterations: int) -> str:
    return str(crossbuild.build_extra_insns(iterations))


@needs_qemu
def test_the_knob_adds_exactly_its_instructions_to_the_mopa_driver(
        small_counts: list[tuple[Job, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch) -> None:
    (mopa, b_mopa), (neon, b_neon) = small_counts[:2]
    base = {mopa.realization.name: b_mopa, neon.realization.name: b_neon}
    monkeypatch.setenv("KBENCH_WORKER", _knob(500))
    knob = {j.realization.name: count_fields(Counter(), j) for j in (mopa, neon)}
    b, k = base["gemm_sme2_mopa_f32acc"], knob["gemm_sme2_mopa_f32acc"]
    assert k["count_call"] - b["count_call"] == crossbuild.extra_insns(500) == 1002
    assert k["count_other"] - b["count_other"] == 1002  # in the driver, not the kernel
    for col in ("count_kernel", "count_validate", "count_pack_lhs", "count_pack_b"):
        assert k[col] == b[col]
    assert knob["gemm_neon_f16acc"] == base["gemm_neon_f16acc"]  # another driver: unchanged


@needs_qemu
def test_count_command() -> None:
    from kbench.cli.count import count as count_cli
    runner = CliRunner()
    res = runner.invoke(count_cli, ["--target", "qemu:svl=512", "--realization",
                                    "gemm_sme2_mopa_f32acc", "--shape", "37x53x45"])
    assert res.exit_code == 0, res.output
    assert "verified: pass" in res.output and "kernel" in res.output
    assert "FMOPA (widening)" in res.output
    assert "SME2 2VLx2VL MOPA (kernel, M=37 x N=53 x K=45): theirs 1,589" in res.output
    js = runner.invoke(count_cli, ["--target", "qemu:svl=128", "--realization",
                                   "conv2d_igemm_neon_f16acc", "--shapes", "counts", "--case",
                                   "k1x1_n1h14w14_c64o64", "--json", "--no-verify"])
    assert js.exit_code == 0, js.output
    import json

    import jsonschema

    from kbench.resources import resource_dir
    doc = json.loads(js.output)
    jsonschema.Draft202012Validator(json.loads(
        (resource_dir("reports") / "schema" / "count.schema.json").read_text())).validate(doc)
    (row,) = doc
    committed = {(r["target"], r["case"], r["realization"]): r for r in bl.read_baseline()}
    want = committed[("qemu:cpu=max:svl=128", "k1x1_n1h14w14_c64o64", "conv2d_igemm_neon_f16acc")]
    assert row["count_call"] == want["count_call"]  # the same count as the baseline's run


def test_count_command_refuses_bad_input() -> None:
    from kbench.cli.count import count as count_cli
    runner = CliRunner()
    host = runner.invoke(count_cli, ["--target", "host", "--realization", "x", "--shape", "1x1x1"])
    assert host.exit_code == 2 and "qemu: worker target" in host.output
    if QEMU is None or CLANG is None:
        return
    shape = runner.invoke(count_cli, ["--realization", "gemm_sme2_mopa_f32acc", "--shape",
                                      "12x3"])
    assert shape.exit_code == 2 and "MxNxK" in shape.output
    real = runner.invoke(count_cli, ["--realization", "no_such", "--shape", "2x2x2"])
    assert real.exit_code == 2 and "not offered" in real.output


def test_qemu_python_perf_rows_say_they_are_not_counted() -> None:
    from kbench.harness.counting import NOT_FEASIBLE, with_counts
    from kbench.native.api import Realization
    real = Realization.from_fields("gemm_scalar_f32acc", "scalar", "k", 0, 0, 0, 1, 1, 0, 1,
                                   0, 0, False, 0, 0, (0, 0, 0))
    job = Job(GemmCase("g", 2, 2, 2), "uniform", real, "qemu-python:svl=512", "c")
    v = with_counts(Counter(), _row("g", "gemm_scalar_f32acc", {}), job)
    assert v.count_note == NOT_FEASIBLE and v.count_call != v.count_call
    host = Job(GemmCase("g", 2, 2, 2), "uniform", real, "host", "c")
    assert with_counts(Counter(), _row("g", "r", {}), host).count_note == ""


# ---- floors ----------------------------------------------------------------------------------


def test_floors() -> None:
    mopa = "matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa"
    c256 = GemmCase("c", 256, 256, 256, b_form="native")
    assert floor(mopa, 512, c256).instructions == 32_768  # the number
    assert floor(mopa, 128, c256).instructions == 64 * 64 * 128
    odd = GemmCase("c", 37, 53, 45)
    assert floor(mopa, 512, odd).instructions == 3 * 4 * 23
    gemv = floor("matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot", 512,
                  GemmCase("v", 1, 4096, 4096))
    assert gemv.instructions == 64 * 2048 and gemv.cls == "dot"
    assert floor("matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme_mla", 128,
                 GemmCase("v", 1, 10, 7)).instructions == 3 * 7
    assert floor("matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla", 0,
                 GemmCase("g", 5, 17, 3)).instructions == 5 * 3 * 3
    assert floor("matmul_clamp_f16_f16_f16p16x1b_4x16_neon_fhm_mlal", 0,
                 GemmCase("g", 5, 17, 3)).instructions == 5 * 5 * 3
    # per group: M = 2 * 6 * 6 = 72, N = 8, K = 3 * 3 * 4 = 36
    conv = ConvCase("c", 2, 6, 6, 8, 16, 3, 3, pad=(1, 1, 1, 1), groups=2)
    assert floor("imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa", 256,
                 conv).instructions == 2 * 9 * 1 * 18
    assert floor("matmul_clamp_f16_f16_f16_scalar_f32acc", 0, c256) is None


# ---- the count gate ------------------------------------------------------------------------

CPU = {"host": "box", "machine": "x86_64", "cpu_model": "Test CPU"}


def _row(case: str, realization: str, counts: dict[str, float], target: str = SVL512,
         status: str = "pass") -> Verdict:
    v = Verdict(case=case, op="gemm", shape="m256n256k256", kind="uniform", target=target,
                backend="sme", realization=realization, kernel="k", accum="fp32", k=256,
                m=256, n=256, b_form="native", vector_bits=512, status=status,
                catalog="counts", suite="perf", emulated=True, rounds=1, reps_per_round=1,
                round_times_ns=[1e6], time_median_ns=1e6, count_method="qemu-tb",
                count_qemu="11.1.3", count_cpu="max,sme-default-vector-length=64")
    for k, val in counts.items():
        setattr(v, f"count_{k}", float(val))
    return v


def _counts(kernel: float, other: float = 3000, validate: float = 600,
            pack_b: float = 900_000) -> dict[str, float]:
    return {"call": kernel + other + validate, "kernel": kernel, "other": other,
            "validate": validate, "checksum": 0, "pack_lhs": 0, "pack_rhs": 0,
            "pack_b": pack_b, "pack_b_checksum": 0}


def _write(folder: Path, rows: list[Verdict]) -> Any:
    w = RunWriter(folder, {**CPU, "git_commit": "0" * 12, "date": "2025-01-01T00:00:00+00:00",
                           "targets": {SVL512: {"emulated": True}}})
    w.add_all(rows)
    w.close(complete=True)
    return load_run(folder)


def test_count_gate_passes_a_over_a_and_fails_exactly_past_the_limit(tmp_path: Path) -> None:
    base = [_row("a", "gemm_sme2_mopa_f32acc", _counts(100_000)),
            _row("a", "gemm_neon_f16acc", _counts(2_000_000))]
    b = _write(tmp_path / "base", base)
    assert gate(b, _write(tmp_path / "aa", base)).passed
    call = 100_000 + 3600
    just_above = int(call * 0.005) + 1
    just_below = int(call * 0.005) - 1
    grown = [_row("a", "gemm_sme2_mopa_f32acc", _counts(100_000, other=3000 + just_above)),
             base[1]]
    result = gate(b, _write(tmp_path / "up", grown))
    assert not result.passed
    (f,) = result.failures
    assert f.reason == "count" and "gemm_sme2_mopa_f32acc" in f.case
    assert "other +" in f.detail and "kernel" not in f.detail.split("grew:")[1]
    below = [_row("a", "gemm_sme2_mopa_f32acc", _counts(100_000, other=3000 + just_below)),
             base[1]]
    ok = gate(b, _write(tmp_path / "below", below))
    assert ok.passed
    assert [d.verdict for d in ok.comparison.instructions.deltas] == [MORE, SAME]
    faster = [_row("a", "gemm_sme2_mopa_f32acc", _counts(90_000)), base[1]]
    better = gate(b, _write(tmp_path / "faster", faster))
    assert better.passed and better.comparison.instructions.deltas[0].verdict == FEWER
    # B packing is gated too, and the limit is configurable
    packing = [_row("a", "gemm_sme2_mopa_f32acc", _counts(100_000, pack_b=910_000)), base[1]]
    assert not gate(b, _write(tmp_path / "pack", packing)).passed
    assert gate(b, _write(tmp_path / "pack2", packing), max_count_growth=0.02).passed


def test_a_count_grown_exactly_by_the_limit_is_no_regression() -> None:
    """A count fails only when it grew by more than the limit: exactly
    1 + limit times the base is MORE, not a regression; one more is."""
    base = [{"target": "qemu:svl=512", "catalog": "c", "case": "x", "realization": "r",
             "count_call": 1000.0}]
    for grown, failing in ((1250.0, False), (1251.0, True)):
        comp = compare_counts(base, [{**base[0], "count_call": grown}], limit=0.25)
        (d,) = comp.deltas
        assert d.verdict == MORE and d.worst() == ("count_call", grown / 1000)
        assert (comp.regressions() == [d]) is failing


def test_count_gate_flags_counts_that_differ_between_passes_and_lost_counts(
        tmp_path: Path) -> None:
    base = _write(tmp_path / "base", [_row("a", "r", _counts(1000))])
    passes = _write(tmp_path / "passes", [_row("a", "r", _counts(1000)),
                                          _row("a", "r", _counts(1001))])
    result = gate(base, passes)
    (delta,) = result.comparison.instructions.deltas
    assert delta.label and "r" in delta.label
    assert [(f.reason, f.case) for f in result.failures if "not deterministic" in f.detail] == [
        ("count", delta.label)]
    uncounted = _row("a", "r", {})
    lost = gate(base, _write(tmp_path / "lost", [uncounted]))
    assert [(f.reason, f.case, f.detail) for f in lost.failures] == [
        ("count", lost.comparison.instructions.deltas[0].label, "counted in the base run, not "
         "in the candidate (run it with --count-method tb)")]


def test_gate_command_on_counts(tmp_path: Path) -> None:
    base = [_row("a", "gemm_sme2_mopa_f32acc", _counts(100_000))]
    _write(tmp_path / "base", base)
    _write(tmp_path / "grown", [_row("a", "gemm_sme2_mopa_f32acc", _counts(101_000))])
    runner = CliRunner()
    same = runner.invoke(gate_command, [str(tmp_path / "base"), str(tmp_path / "base")])
    assert same.exit_code == 0, same.output
    assert "same" in same.output
    res = runner.invoke(gate_command, [str(tmp_path / "base"), str(tmp_path / "grown"),
                                       "--markdown", str(tmp_path / "g.md")])
    assert res.exit_code == 1
    assert "FAIL count" in res.output and "kernel +" in res.output
    assert "REGRESSION" in res.output and "Instruction counts" in (tmp_path / "g.md").read_text()
    loose = runner.invoke(gate_command, [str(tmp_path / "base"), str(tmp_path / "grown"),
                                         "--max-count-growth", "2%"])
    assert loose.exit_code == 0, loose.output
    bad = runner.invoke(gate_command, [str(tmp_path / "base"), str(tmp_path / "grown"),
                                       "--max-count-growth", "lots"])
    assert bad.exit_code == 2


def test_count_comparison_reports_missing_and_new_cases() -> None:
    b = [{"target": "qemu:svl=512", "catalog": "c", "case": "x", "realization": "r",
          "count_call": 10.0}]
    c = [{"target": "qemu:cpu=max:svl=512", "catalog": "c", "case": "y", "realization": "r",
          "count_call": 10.0}]
    comp = compare_counts(b, c)
    assert sorted(d.verdict for d in comp.deltas) == [MISSING, NEW]
    # the same case under two spellings of one target is one case
    same = compare_counts(b, [{**b[0], "target": "qemu:cpu=max:svl=512"}])
    assert [d.verdict for d in same.deltas] == [SAME]


# ---- history and run folders ------------------------------------------------------------


def test_count_columns_reach_the_history(tmp_path: Path) -> None:
    run = _write(tmp_path / "run", [_row("a", "r", _counts(1234))])
    run_id = append_run(tmp_path / "h.sqlite", run)
    df = run_results(tmp_path / "h.sqlite", run_id)
    assert float(df["count_kernel"].iloc[0]) == 1234
    assert df["count_qemu"].iloc[0] == "11.1.3"
    assert float(load_run(tmp_path / "run").results["count_call"].iloc[0]) == 1234 + 3600


# ---- the committed baseline --------------------------------------------------------------


def test_committed_baseline_covers_every_sme_and_neon_realization_at_both_svls() -> None:
    cfg = bl.load_config()
    assert cfg.targets == ("qemu:cpu=max:svl=128", "qemu:cpu=max:svl=512")
    assert set(cfg.backends) == {"sme", "neon"} and cfg.limit == 0.005
    rows = bl.read_baseline()
    assert {r["target"] for r in rows} == set(cfg.targets)
    from kbench.problems.catalog import load_catalog, resolve_catalog
    names = {c.name for c in load_catalog(resolve_catalog(cfg.catalog)).cases}
    for target in cfg.targets:
        mine = [r for r in rows if r["target"] == target]
        assert {r["case"] for r in mine} == names
        reals = {r["realization"] for r in mine}
        assert {"gemv_sme2_dot_f32acc", "gemv_sme_f32acc", "gemm_sme2_mopa_f32acc",
                "gemm_sme_mopa_f32acc", "conv2d_igemm_sme2_mopa_f32acc",
                "gemm_neon_f16acc", "gemm_neon_f32acc_fhm", "gemm_neon_f32acc_cvt",
                "conv2d_igemm_neon_f16acc", "conv2d_im2col_gemm_neon_f32acc_fhm"} <= reals
        assert not any("scalar" in r for r in reals)
        for r in mine:
            parts = sum(r[c] for c in ("count_validate", "count_pack_lhs", "count_pack_rhs",
                                       "count_kernel", "count_other"))
            assert parts == r["count_call"] > 0


def test_baseline_file_round_trip_and_merge(tmp_path: Path) -> None:
    rows = bl.counted_rows([_row("a", "r", _counts(10)).__dict__,
                            _row("a", "r", _counts(10), target="qemu:svl=128").__dict__])
    assert {r["target"] for r in rows} == {SVL512, "qemu:cpu=max:svl=128"}
    path = tmp_path / "b.csv"
    bl.write_baseline(path, rows, ["test"])
    back = bl.read_baseline(path)
    assert [r["count_call"] for r in back] == [3610.0, 3610.0]
    assert path.read_text().startswith("# test\n")
    new = bl.counted_rows([_row("a", "r", _counts(20)).__dict__])
    merged = bl.merged(back, new)
    assert sorted((r["target"], r["count_kernel"]) for r in merged) == [
        ("qemu:cpu=max:svl=128", 10.0), (SVL512, 20.0)]


def test_baseline_check_command(tmp_path: Path) -> None:
    csv = tmp_path / "b.csv"
    cfg = tmp_path / "b.toml"
    cfg.write_text('[baseline]\ncatalog = "counts"\ntargets = ["qemu:svl=512"]\n'
                   'backends = ["sme"]\nlimit = "0.5%"\n')
    _write(tmp_path / "run", [_row("a", "r", _counts(100_000))])
    runner = CliRunner()
    wrote = runner.invoke(baseline_cli, ["write", str(tmp_path / "run"), "--csv", str(csv)])
    assert wrote.exit_code == 0, wrote.output
    args = ["--csv", str(csv), "--config", str(cfg)]
    same = runner.invoke(baseline_cli, ["check", str(tmp_path / "run"), *args])
    assert same.exit_code == 0 and "PASSED" in same.output
    _write(tmp_path / "up", [_row("a", "r", _counts(101_000))])
    up = runner.invoke(baseline_cli, ["check", str(tmp_path / "up"), *args,
                                      "--markdown", str(tmp_path / "m.md")])
    assert up.exit_code == 1 and "kernel +" in up.output
    assert "regression" in (tmp_path / "m.md").read_text()
    _write(tmp_path / "down", [_row("a", "r", _counts(90_000))])
    down = runner.invoke(baseline_cli, ["check", str(tmp_path / "down"), *args])
    assert down.exit_code == 0 and "fewer instructions" in down.output
    _write(tmp_path / "new", [_row("a", "r", _counts(100_000)),
                              _row("b", "r", _counts(5))])
    new = runner.invoke(baseline_cli, ["check", str(tmp_path / "new"), *args])
    assert new.exit_code == 1 and "not in the baseline" in new.output
    _write(tmp_path / "gone", [_row("b", "r", _counts(5))])
    gone = runner.invoke(baseline_cli, ["check", str(tmp_path / "gone"), *args])
    assert gone.exit_code == 1 and "not counted" in gone.output
    # several runs (one per target) are checked together; --partial skips absent targets
    two = tmp_path / "two.toml"
    two.write_text(cfg.read_text().replace('["qemu:svl=512"]', '["qemu:svl=512", "qemu:svl=128"]'))
    _write(tmp_path / "r128", [_row("a", "r", _counts(7), target="qemu:svl=128")])
    runner.invoke(baseline_cli, ["write", str(tmp_path / "r128"), "--csv", str(csv)])
    both = runner.invoke(baseline_cli, ["check", str(tmp_path / "run"), str(tmp_path / "r128"),
                                        "--csv", str(csv), "--config", str(two)])
    assert both.exit_code == 0, both.output
    one = runner.invoke(baseline_cli, ["check", str(tmp_path / "run"), "--csv", str(csv),
                                       "--config", str(two)])
    assert one.exit_code == 1
    partial = runner.invoke(baseline_cli, ["check", str(tmp_path / "run"), "--csv", str(csv),
                                           "--config", str(two), "--partial"])
    assert partial.exit_code == 0, partial.output


# ---- the KleidiAI anchor table -----------------------------------------------------------


def test_anchor_table_holds_the_measured_kleidiai_counts() -> None:
    table = anc.load_anchors()
    assert table.name == "Arm KleidiAI v1.30" and "qemu-aarch64 11.1.3" in table.method
    by = {(a.label, a.shape_str()): a.counts for a in table.anchors}
    assert by[("SME2 2VLx2VL MOPA", "M=256 x N=256 x K=256")] == {128: 910559, 256: 250239,
                                                                 512: 73871}
    assert by[("SME2 2VLx2VL MOPA", "M=37 x N=53 x K=45")] == {128: 9315, 256: 3873, 512: 1589}
    assert by[("SME1 GEMV", "M=1 x N=4096 x K=4096")][512] == 1935462
    assert by[("NEON FP16-accumulating 6x16x8", "M=256 x N=256 x K=256")] == {0: 2993662}
    assert by[("RHS packing for 256x256", "N=256 x K=256")][128] == 38717
    assert by[("NEON RHS packing for 256x256", "N=256 x K=256")] == {0: 21560}


# The load-time cost target: packing a 256 x 256 B, the seal included, within 1.5x of
# KleidiAI's packer at every SVL; verifying its whole payload within 0.1 instructions
# per byte at SVL 512. SVL 128 and 512 are in the committed baseline's runs; SVL 256 and
# the verification are counted here.
PACK_TARGET = 1.5
B256 = GemmCase("b256", 256, 256, 256, b_form="native")


@needs_qemu
@pytest.mark.parametrize(("spec", "realization", "label"), [
    ("qemu:cpu=max:svl=256", "gemm_sme2_mopa_f32acc", "RHS packing for 256x256"),
    ("qemu:cpu=max:svl=512", "gemm_neon_f16acc", "NEON RHS packing for 256x256"),
])
def test_packing_b_costs_at_most_one_and_a_half_kleidiai_packers(
        spec: str, realization: str, label: str) -> None:
    anchor = next(a for a in anc.load_anchors().anchors if a.label == label)
    (job,) = _jobs(spec, [(B256, realization)])
    fields = count_fields(Counter(), job)
    theirs = anchor.count_at(job.realization.vector_bits)
    assert theirs is not None
    assert 0 < fields["count_pack_b_checksum"] < fields["count_pack_b"]
    assert fields["count_pack_b"] <= PACK_TARGET * theirs, (fields["count_pack_b"], theirs)


@needs_qemu
def test_verifying_the_payload_costs_under_a_tenth_of_an_instruction_per_byte() -> None:
    """A call asked to verify B's payload (verify_payload) pays the checksum in
    validate: at SVL 512, under 0.1 instructions per payload byte."""
    (job,) = _jobs(SVL512, [(B256, "gemm_sme2_mopa_f32acc")])
    plain = count_fields(Counter(), job)
    verified = count_fields(Counter(), job, verify_payload=True)
    payload = 2 * 256 * (256 + 1)  # k pairs and the bias row of 8 blocks of 32 columns
    extra = verified["count_validate"] - plain["count_validate"]
    assert plain["count_checksum"] == 0 and verified["count_checksum"] > 0
    assert 0 < extra <= 0.1 * payload, (extra, payload)
    assert verified["count_kernel"] == plain["count_kernel"]


def test_anchor_matching_and_ratio() -> None:
    table = anc.load_anchors()
    rows = [_row("a", "gemm_sme2_mopa_f32acc", _counts(96_488)).__dict__,
            _row("a", "gemm_neon_f16acc", _counts(3_000_000)).__dict__,
            _row("a", "gemm_scalar_f32acc", _counts(9e9)).__dict__]
    rows[1]["vector_bits"] = 0
    found = {(m.anchor.label, m.realization): m for m in anc.match_anchors(table, rows)}
    m = found[("SME2 2VLx2VL MOPA", "gemm_sme2_mopa_f32acc")]
    assert m.theirs == 73871 and m.ratio == pytest.approx(96_488 / 73871)
    assert found[("NEON FP16-accumulating 6x32", "gemm_neon_f16acc")].theirs == 2738260
    assert not any(r == "gemm_scalar_f32acc" for _, r in found)
    rhs = found[("RHS packing for 256x256", "gemm_sme2_mopa_f32acc")]
    assert rhs.ours == 900_000 and math.isclose(rhs.ours_without_checksum, 900_000)


def test_anchors_command(tmp_path: Path) -> None:
    from kbench.cli.count import anchors as anchors_cli
    _write(tmp_path / "run", [_row("anchor", "gemm_sme2_mopa_f32acc", _counts(96_488))])
    off_shape = _row("other", "gemm_sme2_mopa_f32acc", _counts(96_488))
    off_shape.m = off_shape.n = 3
    _write(tmp_path / "none", [off_shape])
    runner = CliRunner()
    res = runner.invoke(anchors_cli, [str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert "Arm KleidiAI v1.30" in res.output and "ours/theirs 1.306" in res.output
    none = runner.invoke(anchors_cli, [str(tmp_path / "none")])
    assert none.exit_code == 1 and "no counted case matches" in none.output


def test_sweep_anchor_table_is_data_with_its_source_commit_and_flags() -> None:
    """The sweep table holds KleidiAI's v1.30 and newer SME2 kernels on every shape of
    the comparison sweep at SVL 128, 256 and 512, counted as one call over the whole
    problem (the anchor) and once per m_step band (a second column, never an anchor),
    with their outer products, the source commit and the compile flags (a release
    build: -DNDEBUG); its GEMVs on the GEMV anchor shape."""
    import re
    import tomllib
    table = anc.load_anchors(anc.SWEEP_TABLE)
    assert re.fullmatch(r"[0-9a-f]{40}", table.commit), table.commit
    assert "-O2" in table.flags and "-fno-fast-math" in table.flags and table.date
    assert "-DNDEBUG" in table.flags and "--one-call" in table.method
    for a in table.anchors:
        assert set(a.banded) == set(a.counts) == {128, 256, 512}, a.label
        # one m_step band is one call: a shape of one band counts the same both ways
        if a.shape["m"] <= 4 or a.shape["m"] == 1:
            assert a.banded == a.counts, (a.label, dict(a.shape))
    with (bl.REFERENCE.parent / "kleidiai_sweep.toml").open("rb") as fh:
        sweep = tomllib.load(fh)["gemm"]
    assert len(sweep) == 14
    for case in sweep:
        shape = {"m": case["m"], "n": case["n"], "k": case["k"]}
        here = [a for a in table.anchors if dict(a.shape) == shape]
        assert {a.kernel.split("_")[-3] for a in here} == {"2vlx2vl", "8vsx8vs"}, shape
        for a in here:
            assert set(a.counts) == {128, 256, 512} and set(a.outer) == {128, 256, 512}
            assert a.ours == ("gemm_sme2_mopa_f32acc",)
            # their FMOPAs never go below the floor of the 1-VL32 granularity
            for svl, n_outer in a.outer.items():
                vl32 = svl // 32
                assert n_outer >= (-(-case["m"] // vl32) * -(-case["n"] // vl32)
                                   * -(-case["k"] // 2))
    gemv = [a for a in table.anchors if a.shape.get("m") == 1]
    assert {a.kernel.split("_")[-3] for a in gemv} == {"1x16vl", "1x32vs"}


def _sweep_row(case: str, m: int, n: int, k: int, kernel: float, outer: float,
               floor_: float, svl: int = 512) -> Verdict:
    v = _row(case, "gemm_sme2_mopa_f32acc", _counts(kernel), target=f"qemu:cpu=max:svl={svl}")
    v.m, v.n, v.k, v.shape, v.vector_bits = m, n, k, f"m{m}n{n}k{k}", svl
    v.count_mix = f'{{"kernel":{{"outer":{int(outer)},"load":10}}}}'
    v.count_floor = floor_
    return v


def test_best_anchor_per_shape_and_the_anchor_gate(tmp_path: Path) -> None:
    from kbench.cli.count import anchors as anchors_cli
    table = anc.load_anchors(anc.SWEEP_TABLE)
    mine = [a for a in table.anchors if dict(a.shape) == {"m": 37, "n": 53, "k": 45}]
    best = min(a.counts[512] for a in mine)
    floor_ = 3 * 4 * 23  # ceil(37/16) * ceil(53/16) * ceil(45/2) FMOPAs at SVL 512
    runner = CliRunner()
    args = ["--table", str(anc.SWEEP_TABLE), "--best", "--limit", "1.0", "--outer-limit", "1.01"]

    def gate_with(kernel: float, outer: float, name: str) -> Any:
        _write(tmp_path / name, [_sweep_row("sweep_m37_n53_k45", 37, 53, 45, kernel, outer,
                                            floor_)])
        return runner.invoke(anchors_cli, [str(tmp_path / name), *args])
    ok = gate_with(best - 1, floor_, "ok")
    assert ok.exit_code == 0, ok.output
    assert f"{(best - 1) / best:6.3f}" in ok.output and "1.000" in ok.output
    assert "anchors: PASSED (1 shapes)" in ok.output
    assert "source " + table.commit[:12] in ok.output
    slow = gate_with(best + 1, floor_, "slow")
    assert slow.exit_code == 1 and "the best anchor" in slow.output, slow.output
    wasted = gate_with(best - 1, floor_ + 6, "wasted")  # 1.022x the floor
    assert wasted.exit_code == 1
    assert f"outer products {(floor_ + 6) / floor_:.3f}x the floor" in wasted.output
    # best_matches keeps, per counted case, the anchor with the fewest instructions
    rows = [_sweep_row("sweep_m37_n53_k45", 37, 53, 45, best, floor_, floor_).__dict__]
    matches = anc.match_tables([table], rows)
    assert len(matches) == len(mine) >= 2
    (chosen,) = anc.best_matches(matches)
    assert chosen.theirs == best and chosen.ratio == pytest.approx(1.0)
    assert anc.geomean([0.5, 2.0]) == pytest.approx(1.0)
    # packing anchors of the same shape (v1.30's table) are not a kernel's best anchor:
    # --best and its limits compare kernels only
    sq = _sweep_row("sweep_m256_n256_k256", 256, 256, 256, 50_000, 32768, 32768)
    _write(tmp_path / "square", [sq])  # pack_b 900,000: far above KleidiAI's RHS packer
    res = runner.invoke(anchors_cli, [str(tmp_path / "square"), "--best", "--limit", "1.0"])
    assert res.exit_code == 0, res.output
    assert "packing" not in res.output and "over 1 shape(s)" in res.output
    usage = runner.invoke(anchors_cli, [str(tmp_path / "ok"), "--limit", "1.0"])
    assert usage.exit_code == 2 and "--best" in usage.output
    # the geometric mean of the ratios per target and realization, gated on its own
    ratio = (best - 1) / best
    for gm_limit, code in ((ratio + 0.001, 0), (ratio - 0.001, 1)):
        res = runner.invoke(anchors_cli, [str(tmp_path / "ok"), "--table", str(anc.SWEEP_TABLE),
                                          "--best", "--geomean-limit", str(gm_limit)])
        assert res.exit_code == code, res.output
        assert ("FAIL" in res.output and "geometric mean" in res.output) == bool(code)
    usage = runner.invoke(anchors_cli, [str(tmp_path / "ok"), "--geomean-limit", "0.8"])
    assert usage.exit_code == 2 and "--best" in usage.output
    assert anc.geomeans(matches[:1]) == [((chosen.target, chosen.realization),
                                          pytest.approx(matches[0].ratio), 1)]


def test_baseline_config_may_name_realizations(tmp_path: Path) -> None:
    cfg = bl.load_config(bl.SWEEP_CONFIG)
    assert cfg.catalog == "kleidiai_sweep" and cfg.realizations == ("gemm_sme2_mopa_f32acc",)
    assert cfg.selection_args() == ["--realization", "gemm_sme2_mopa_f32acc"]
    assert len(cfg.targets) == 3
    assert bl.load_config().selection_args() == ["--backend", "sme", "--backend", "neon"]
    bad = tmp_path / "b.toml"
    bad.write_text('[baseline]\ncatalog = "x"\ntargets = ["qemu:svl=128"]\nrealizations = []\n')
    with pytest.raises(bl.BaselineError, match="realizations"):
        bl.load_config(bad)
    rows = bl.read_baseline(bl.SWEEP_CSV)
    assert {r["catalog"] for r in rows} == {"kleidiai-sweep"} and len(rows) == 42
    assert all(r["count_kernel_outer"] == r["count_floor"] for r in rows)


@needs_qemu
def test_count_anchors_prints_the_best_anchor_per_shape() -> None:
    from kbench.cli.count import count as count_cli
    res = CliRunner().invoke(count_cli, ["--anchors", "--target", "qemu:svl=512",
                                         "--case", "sweep_m7_n9_k13"])
    assert res.exit_code == 0, res.output
    line = next(x for x in res.output.splitlines() if "sweep_m7_n9_k13" in x)
    committed = next(r for r in bl.read_baseline(bl.SWEEP_CSV)
                     if r["case"] == "sweep_m7_n9_k13" and r["target"].endswith("svl=512"))
    assert f"{committed['count_kernel']:,.0f}" in line and "1.000" in line
    assert "geometric mean" in res.output


def test_bad_anchor_table_names_the_field(tmp_path: Path) -> None:
    p = tmp_path / "a.toml"
    p.write_text('[source]\nname = "x"\nwhat = "y"\nmethod = "z"\n[[anchor]]\nphase = "bogus"\n'
                 'ours = ["r"]\nsvl128 = 1\n')
    with pytest.raises(anc.AnchorError, match="phase"):
        anc.load_anchors(p)


# ---- the report ---------------------------------------------------------------------------


def test_report_shows_counts_mix_efficiency_baselines_and_anchors(tmp_path: Path) -> None:
    from kbench.results.report import build_report
    rows = [_row("anchor_m256_n256_k256", "gemm_sme2_mopa_f32acc", _counts(96_488)),
            _row("anchor_m256_n256_k256", "gemm_sme_mopa_f32acc", _counts(150_000))]
    rows[0].count_mix = '{"kernel":{"outer":33024,"load":8512}}'
    rows[0].count_floor, rows[0].count_efficiency = 32768, 32768 / 96_488
    run = _write(tmp_path / "run", rows)
    base = _write(tmp_path / "base", [_row("anchor_m256_n256_k256", "gemm_sme2_mopa_f32acc",
                                           _counts(90_000))])
    files = build_report(run, base, tmp_path / "report")
    html = files.html.read_text()
    assert 'id="counts"' in html and "Instruction counts (emulated targets)" in html
    assert "Arm KleidiAI v1.30" in html and "73,871" in html and "96,488" in html
    assert "34.0%" in html  # efficiency
    anchors = rcount.anchor_table(run)
    mine = anchors[anchors["realization"] == "gemm_sme2_mopa_f32acc"]
    assert mine["ratio"].iloc[0] == pytest.approx(96_488 / 73871)
    vs = rcount.vs_run(run, base)
    assert vs.set_index("realization").loc["gemm_sme2_mopa_f32acc", "verdict"] == "regression"
    counts_csv = (tmp_path / "report" / "counts.csv").read_text()
    assert "kernel_outer" in counts_csv and "33024" in counts_csv


def test_report_diff_against_the_committed_baseline(tmp_path: Path) -> None:
    committed = bl.read_baseline()
    row = next(r for r in committed if r["target"] == SVL512
               and r["realization"] == "gemm_sme2_mopa_f32acc")
    counts = {c.removeprefix("count_"): row[c] for c in COLUMNS}
    extra = round(row["count_call"] * 0.01)  # 1% more, past the 0.5% limit
    counts["kernel"] += extra
    counts["call"] += extra
    v = _row(row["case"], row["realization"], counts)
    v.catalog = row["catalog"]
    diff = rcount.vs_committed(_write(tmp_path / "run", [v]))
    assert list(diff["verdict"]) == ["regression"]
    assert f"kernel +{extra:,}" in diff["grew"].iloc[0]


def test_a_run_without_count_columns_still_loads_and_reports(tmp_path: Path) -> None:
    from kbench.results.report import build_report
    folder = tmp_path / "old"
    run = _write(folder, [_row("a", "r", {})])
    df = run.results.drop(columns=[c for c in run.results.columns if c.startswith("count_")])
    df.drop(columns=["round_times"]).to_csv(folder / "results.csv", index=False)
    old = load_run(folder)
    assert old.results["count_call"].isna().all()
    html = build_report(old, None, tmp_path / "r").html.read_text()
    assert 'id="counts"' not in html


def _counted_frame(rows: list[tuple[str, str, str, int]]) -> pd.DataFrame:
    """Perf rows (target, case, count_cpu, count_call) with the count metadata."""
    return pd.DataFrame([{"suite": "perf", "target": t, "catalog": "c", "case": case,
                          "realization": "r", "count_call": call, "count_cpu": cpu,
                          "count_qemu": "11.1.0" if call else "", "count_method": "exec log"}
                         for t, case, cpu, call in rows])


def test_count_summary_names_every_qemu_method_and_cpu_once() -> None:
    """summary(run): the distinct QEMU versions, methods and CPUs of the
    counted rows, sorted, joined by ", ", empty values left out; a run
    without counts: all empty."""
    df = _counted_frame([("qemu:svl=512", "a", "max", 10), ("qemu:svl=512", "b", "a64fx", 12),
                         ("qemu:svl=512", "c", "", 14), ("host", "d", "x86", 0)])
    df.loc[1, "count_method"] = ""
    assert rcount.summary(SimpleNamespace(results=df)) == {
        "qemu": "11.1.0", "method": "exec log", "cpu": "a64fx, max"}
    bare = pd.DataFrame([{"suite": "perf", "target": "host", "catalog": "c", "case": "a",
                          "realization": "r"}])
    assert rcount.summary(SimpleNamespace(results=bare)) == {"qemu": "", "method": "",
                                                              "cpu": ""}


def test_the_count_section_has_a_block_per_target_in_run_order() -> None:
    """html_context: one block per counted target in the order the run
    counted them, its CPUs, its phase and efficiency tables, and only its own
    rows (by canonical target name) of the two delta tables; the anchors and
    the committed baseline's path relative to the checkout."""
    counts = _counted_frame([("qemu:svl=512", "a", "max", 10), ("qemu:cpu=max:svl=128", "a",
                                                                 "max", 9),
                             ("qemu:svl=512", "b", "neoverse-v2", 12)])
    delta = pd.DataFrame({"target": ["qemu:cpu=max:svl=128", "qemu:cpu=max:svl=512"],
                          "case": ["x128", "x512"]})
    committed = delta.assign(case=["y128", "y512"])
    anchors = pd.DataFrame({"anchor": ["k1"]})
    tables = SimpleNamespace(counts=counts, counts_vs_baseline=delta,
                             counts_vs_committed=committed, count_anchors=anchors)

    def html_table(df: pd.DataFrame, columns: Any = "unset") -> tuple[Any, ...]:
        cases = tuple(df["case"]) if "case" in df else tuple(df["anchor"])
        return (cases, tuple(columns) if isinstance(columns, list) else columns)

    ctx = rcount.html_context(SimpleNamespace(results=counts), tables, html_table)
    blocks = ctx["count_targets"]
    assert [b["target"] for b in blocks] == ["qemu:svl=512", "qemu:cpu=max:svl=128"]
    first, second = blocks
    assert first["cpu"] == "max, neoverse-v2" and second["cpu"] == "max"
    assert first["phases"] == (("a", "b"), tuple(rcount.PHASE_VIEW))
    assert first["efficiency"] == (("a", "b"), tuple(rcount.EFFICIENCY_VIEW))
    assert first["vs_run"] == (("x512",), tuple(rcount.DELTA_TABLE))
    assert first["vs_committed"] == (("y512",), tuple(rcount.DELTA_TABLE))
    assert second["vs_run"] == (("x128",), tuple(rcount.DELTA_TABLE))
    assert second["vs_committed"] == (("y128",), tuple(rcount.DELTA_TABLE))
    assert ctx["count_anchors"] == (("k1",), tuple(rcount.ANCHOR_TABLE))
    assert ctx["n_counted"] == 3 and ctx["n_count_anchors"] == 1
    assert ctx["count_summary"] == {"qemu": "11.1.0", "method": "exec log",
                                    "cpu": "max, neoverse-v2"}
    assert ctx["committed_baseline"] == "reference/counts/baseline.csv"
    assert ctx["anchor_infos"] == anc.load_tables()


# ---- end to end: kbench run twice, the knob, kbench gate ---------------------------------

CATALOG = """[catalog]
name = "count-e2e"
[[gemm]]
name = "m37_n53_k45"
m = 37
n = 53
k = 45
b_form = "native"
"""


def _kbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=1800)


def _kbench_all(*commands: tuple[list[str], dict[str, str]]) -> None:
    """kbench commands run at once (one per core); every one must succeed."""
    procs = [subprocess.Popen([sys.executable, "-m", "kbench.cli", *args], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env={**os.environ, **env}) for args, env in commands]
    for proc in procs:
        out, _ = proc.communicate(timeout=1800)
        assert proc.returncode == 0, out


@needs_qemu
def test_perf_runs_count_identically_and_the_gate_catches_the_knob(tmp_path: Path) -> None:
    cat = tmp_path / "e2e.toml"
    cat.write_text(CATALOG)
    run = ["run", "--suite", "perf", "--shapes", str(cat), "--target", "qemu:svl=512",
           "--realization", "gemm_sme2_mopa_f32acc", "--realization", "gemm_neon_f16acc",
           "--rounds", "1", "--min-round-ms", "0", "--warmup", "0", "--no-history"]
    _kbench_all(([*run, "--out", str(tmp_path / "a")], {}),
                ([*run, "--out", str(tmp_path / "b")], {}))
    a, b = load_run(tmp_path / "a"), load_run(tmp_path / "b")
    cols = [*COLUMNS, "count_mix", "count_floor", "count_efficiency"]
    assert len(a.results) == 2 and (a.results["count_call"] > 0).all()
    assert a.results[cols].equals(b.results[cols])  # the same command twice: identical
    aa = _kbench("gate", str(tmp_path / "a"), str(tmp_path / "b"))
    assert aa.returncode == 0, aa.stdout
    mopa = a.results.set_index("realization").loc["gemm_sme2_mopa_f32acc", "count_call"]
    # the knob just above 0.5% of the MOPA call, then just below
    above = int(mopa * 0.005) // 2  # 2 * above + 2 > 0.5%
    below = above - 2  # 2 * below + 2 < 0.5%
    assert 2 * above + 2 > 0.005 * mopa > 2 * below + 2
    _kbench_all(([*run, "--out", str(tmp_path / "up")], {"KBENCH_WORKER": _knob(above)}),
                ([*run, "--out", str(tmp_path / "under")], {"KBENCH_WORKER": _knob(below)}))
    up = _kbench("gate", str(tmp_path / "a"), str(tmp_path / "up"))
    assert up.returncode == 1, up.stdout
    fails = [line for line in up.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and "gemm_sme2_mopa_f32acc" in fails[0] and "other +" in fails[0]
    under = _kbench("gate", str(tmp_path / "a"), str(tmp_path / "under"))
    assert under.returncode == 0, under.stdout
    assert "more" in under.stdout
