"""Tail shapes derived from each realization's blocking (kbench.problems.tails):
the residues they cover for given steps, the sample smoke runs, the audit
(`kbench catalogs --coverage`), the B-form fallback and the rule that no
catalog case is dropped without a line saying which and why, reproducers of
derived cases, and the portable example plugin built with a bug in its N
tail (examples/plugins: extail1, extail2), which smoke must fail."""

from __future__ import annotations

import csv
import json
import math
import shlex
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from cli_run import kbench
from click.testing import CliRunner
from plugin_builds import lib
from qemu_gate import needs_qemu

from kbench.cli.main import main
from kbench.harness.pytest_plugin import KbSession, tails_mode
from kbench.harness.runner import B_FORM_TAG, adapted, applicable, why_not
from kbench.harness.selection import derived_tails, realization_steps, reproducer
from kbench.judge.verdict import Verdict
from kbench.native.api import Realization
from kbench.problems import inputs, tails
from kbench.problems.cases import GemmCase
from kbench.targets.spec import parse_target

NEON_6X16 = "matmul_clamp_f16_f16_f16p16x1b_6x16_neon_mla"
NEON_4X16 = "matmul_clamp_f16_f16_f16p16x1b_4x16_neon_cvt_mla"
SME_MOPA = "matmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme2_mopa"
SME_GEMV = "matmul_clamp_f16_f16_f16p2vlx2b_1x2vl_sme2_dot"
FORMS = ("plain", "packed", "native")


def _real(name: str = "r", bforms: tuple[str, ...] = FORMS, max_m: int = 0,
          op: str = "gemm") -> Realization:
    return Realization(name=name, backend="neon", kernel=NEON_6X16, op=op, isa="neon",
                       accum="fp16", k_per_rounding=1, bforms=bforms, vector_bits=0, threads=1,
                       max_m=max_m)


# --------------------------------------------------------------------------- steps


@pytest.mark.parametrize(("kernel", "bits", "m_step", "n_step", "kr"), [
    (NEON_6X16, 0, 6, 16, 1),
    (NEON_4X16, 0, 4, 16, 1),
    (SME_MOPA, 128, 8, 8, 2),
    (SME_MOPA, 512, 32, 32, 2),
    (SME_MOPA, 2048, 128, 128, 2),
    (SME_GEMV, 256, 1, 16, 2),
    ("imatmul_clamp_f16_f16p2vlx2_f16p2vlx2b_2vlx2vl_sme_mopa", 128, 8, 8, 2),
    ("im2col_f16+" + NEON_4X16, 0, 4, 16, 1),
])
def test_steps_from_kernel_names(kernel, bits, m_step, n_step, kr):
    s = tails.steps_of(kernel, bits)
    assert (s.m_step, s.n_step, s.kr) == (m_step, n_step, kr)


@needs_qemu
@pytest.mark.parametrize("spec", ["qemu:cpu=max:svl=128", "qemu:cpu=max:svl=512"])
def test_our_steps_come_from_the_kernels_queries_and_match_their_names(spec):
    """Each of our realizations reports its micro-kernel's m_step, n_step and
    kr from the kernel's own queries at the running SVL; the tails use them,
    and they agree with the tile the kernel's name states."""
    target = parse_target(spec)
    try:
        info = target.info()
    finally:
        target.close()
    ours = [r for r in info.realizations if r.backend in ("neon", "sme")]
    assert len(ours) >= 20
    for r in ours:
        named = tails.steps_from_kernel(r.kernel, r.vector_bits)
        assert named is not None and r.n_step, r.name
        assert (r.m_step, r.n_step, r.kr) == (named.m_step, named.n_step, named.kr), r.name
        steps = realization_steps(info, r)
        assert steps.source == "the kernel's queries" and steps.n_step == r.n_step
    assert {r.n_step for r in ours if r.backend == "sme"} == {info.sme_vector_bits // 16}


def test_declared_and_default_steps():
    assert tails.steps_of("anything", 0, declared=(4, 8, 2)).n_step == 8
    plain_lhs = tails.steps_of("anything", 0, declared=(0, 8, 2))  # no mr: rows default
    assert (plain_lhs.m_step, plain_lhs.n_step) == (tails.DEFAULT_STEPS[0], 8)
    none = tails.steps_of("matmul_clamp_f16_f16_f16_scalar_f32acc", 0)
    assert (none.m_step, none.n_step) == tails.DEFAULT_STEPS and "default" in none.source


# --------------------------------------------------------------------------- residues


STEPS = [tails.steps_of(NEON_6X16, 0), tails.steps_of(NEON_4X16, 0, (16, 64, 64)),
         tails.steps_of(SME_MOPA, 128, (0, 8192, 4096)),
         tails.steps_of(SME_MOPA, 512, (0, 2048, 1024)),
         tails.steps_of(SME_MOPA, 512, (128, 256, 256)), tails.steps_of("x", 0, declared=(4, 8, 2))]


@pytest.mark.parametrize("steps", STEPS, ids=lambda s: s.describe().split(" (")[0])
def test_full_tails_cover_every_residue_and_class(steps):
    cases = tails.gemm_tails(steps, FORMS)
    cov = tails.coverage(steps, [(c.m, c.n, c.k) for c in cases])
    assert cov.missing_n() == [] and cov.missing_m() == [] and cov.missing_k() == []
    missing = cov.missing_boundaries()
    # an N block is crossed only below MAX_BLOCK_CROSSING columns (run time)
    assert all(b.startswith("N>") and steps.block_n >= tails.MAX_BLOCK_CROSSING for b in missing)
    assert {(c.bias, c.clamp) for c in cases} == set(tails.FLAGS)
    assert {c.b_form for c in cases} == set(FORMS)
    for n in (1, steps.n_step - 1, steps.n_step, steps.n_step + 1):
        at = [c for c in cases if c.n == n]
        assert {c.b_form for c in at} == set(FORMS), n  # each boundary in each form
    assert len({c.name for c in cases}) == len(cases)


@pytest.mark.parametrize("steps", STEPS, ids=lambda s: s.describe().split(" (")[0])
def test_sample_is_a_subset_with_the_residues_smoke_needs(steps):
    full = {c.name: c for c in tails.gemm_tails(steps, FORMS)}
    sample = tails.gemm_tails(steps, FORMS, sample=True)
    assert {c.name for c in sample} <= set(full)  # a reproducer of "tails" reruns it
    assert all(full[c.name] == c for c in sample)
    assert len(sample) < len(full)
    residues = {c.n % steps.n_step for c in sample}
    if steps.n_step <= 16:  # NEON class: every N residue
        assert residues == set(range(steps.n_step))
    else:  # boundary residues only
        assert {0, 1, steps.n_step - 1} <= residues
    assert {1, steps.n_step - 1, steps.n_step, steps.n_step + 1} <= {c.n for c in sample}
    assert {(c.bias, c.clamp) for c in sample} == set(tails.FLAGS)
    assert {c.b_form for c in sample} == set(FORMS)
    if steps.block_k:
        assert {steps.block_k, steps.block_k + 1} <= {c.k for c in sample}


@pytest.mark.parametrize("steps", STEPS, ids=lambda s: s.describe().split(" (")[0])
def test_a_clamp_max_of_minus_zero_in_each_form_and_in_the_sample(steps):
    """The clamp bound whose sign a kernel must keep (FMAX/FMIN would turn
    -0 into +0; the SME, GEMV and NEON kernels switch to compare/select for
    it): in every B form, and in smoke's sample."""
    full = [c for c in tails.gemm_tails(steps, FORMS) if c.clamp_max is not None]
    assert {c.b_form for c in full} == set(FORMS)
    assert all(c.clamp and c.bias and math.copysign(1.0, c.clamp_max) == -1.0
               and c.clamp_max == 0 and "_max-0_" in c.name for c in full)
    sample = [c for c in tails.gemm_tails(steps, FORMS, sample=True) if c.clamp_max is not None]
    assert len(sample) == 1


@pytest.mark.parametrize("kind", ["exact", "uniform", "normal", "specials"])
@pytest.mark.parametrize("steps", STEPS, ids=lambda s: s.describe().split(" (")[0])
def test_a_minus_zero_clamp_keeps_most_results_below_it(steps, kind):
    """The bias moves each column below the bound, so the clamped reference is
    not mostly -0 (a case the judge would mistrust); exact inputs stay exact:
    every partial sum of a bias-first chain an integer within +-2048."""
    for case in (c for c in tails.gemm_tails(steps, FORMS) if c.clamp_max is not None):
        got = inputs.gemm_inputs(case, kind)
        lo, hi = got.clamp
        assert hi == 0 and math.copysign(1.0, hi) == -1.0 and lo < 0
        ref = got.refs[0]
        assert float((ref.rounded == 0).mean()) < 0.4, case.name
        assert (np.signbit(ref.exact) & (ref.exact == 0)).any()  # values the clamp made -0
        if kind == "exact":
            a, b, bias = (x.astype(np.float64) for x in (got.a[0], got.b[0], got.bias[0]))
            chain = bias + np.cumsum(a[:, :, None] * b[None, :, :], axis=1)
            assert np.all(np.abs(chain) <= inputs.EXACT_LIMIT) and np.all(chain == np.round(chain))
            assert np.all(np.abs(bias) <= inputs.EXACT_LIMIT)


def test_gemv_and_forms_follow_the_realization():
    steps = tails.steps_of(SME_GEMV, 128)
    cases = tails.gemm_tails(steps, ("plain", "native"), max_m=1)
    assert {c.m for c in cases} == {1}
    assert {c.b_form for c in cases} == {"plain", "native"}
    assert {c.n % 8 for c in cases} == set(range(8))


def test_conv_tails_hit_the_n_residues_and_the_padded_table():
    steps = tails.steps_of(NEON_4X16, 0)
    full, sample = tails.conv_tails(steps), tails.conv_tails(steps, sample=True)
    assert {c.c_out % 16 for c in full} == set(range(16))
    assert {c.name for c in sample} <= {c.name for c in full}
    padded = [c for c in sample if c.kh == 3]
    assert padded and all(any(c.pad) for c in padded)
    assert {c.reduction for c in padded} >= {9, 27}


def test_which_catalogs_derive_tails():
    assert tails_mode([]) == "full"  # the default correctness catalogs
    assert tails_mode(["tails"]) == tails_mode(["/x/reference/correctness_gemm.toml"]) == "full"
    assert tails_mode(["/x/reference/smoke.toml"]) == tails_mode(["emulated"]) == "sample"
    assert tails_mode(["llm_llama7b_small", "resnet50_small"]) == ""


def test_a_session_derives_tails_for_ours_and_plugins_not_for_peers():
    kb = KbSession(["host"], [], [], ["smoke"], None, None)
    try:
        ours = kb.tail_cases("host", _real())
        assert ours and all(c.name.startswith("tail_") for c in ours)
        assert {c.n % 16 for c in ours} == set(range(16))  # smoke: every N residue
        assert kb.tail_cases("host", replace(_real(), peer=True)) == []
    finally:
        kb.close_targets()


@pytest.mark.parametrize("catalogs, choice, mode", [
    (["smoke"], "none", ""), (["smoke"], "full", "full"), ([], "sample", "sample"),
    (["llm_llama7b_small"], "sample", "sample"), (["llm_llama7b_small"], "auto", "")])
def test_tails_option_overrides_the_catalogs_choice(catalogs, choice, mode):
    """--tails none|sample|full wins over what the catalogs would derive
    (kbench run --tails; auto: as the catalogs say)."""
    kb = KbSession(["host"], [], [], catalogs, None, None, tails_choice=choice)
    try:
        cases = kb.tail_cases("host", _real())
        assert kb.tails_mode == mode
        full = derived_tails(kb.steps("host", _real()), _real(), False)
        assert len(cases) == {"": 0, "full": len(full)}.get(mode, len(cases))
        if mode == "sample":
            assert 0 < len(cases) < len(full)
        assert kb.tails_metadata()["mode"] == (mode or "none")
    finally:
        kb.close_targets()


# --------------------------------------------------------------------------- B forms


def test_a_case_runs_with_a_b_form_the_realization_takes():
    plain_native = _real(bforms=("plain", "native"))
    packed = GemmCase("m17_n31_k9_packed", 17, 31, 9, b_form="packed", ldb_pad=2)
    run = adapted(packed, plain_native)
    assert run.b_form == "native" and run.ldb_pad == 0 and run.name == packed.name
    assert f"{B_FORM_TAG}packed" in run.tags and applicable(run, plain_native)
    assert adapted(packed, _real(bforms=("plain",))).b_form == "plain"
    assert adapted(packed, _real()) is packed  # it takes packed B: unchanged
    gemv = _real(max_m=1)
    assert why_not(adapted(packed, gemv), gemv).startswith("M > 1")


# --------------------------------------------------------------------------- audit


def test_coverage_audit_names_hit_and_missing_residues():
    res = CliRunner().invoke(main, ["catalogs", "--coverage", "gemm_scalar_f32acc",
                                    "--target", "host", "--shapes", "smoke"])
    assert res.exit_code == 0, res.output
    lines = {ln.split(":", 1)[0]: ln for ln in res.output.splitlines()}
    assert "n_step=16" in lines["blocking"]
    # smoke's N values: residues mod 16 of 17 8 16 31 65 33 16 64 2 7 17 128
    assert lines["N mod 16"].endswith("hit 0 1 2 7 8 15; missing 3 4 5 6 9 10 11 12 13 14")
    res = CliRunner().invoke(main, ["catalogs", "--coverage", "gemm_scalar_f32acc",
                                    "--target", "host", "--shapes", "smoke", "--shapes", "tails"])
    assert res.exit_code == 0, res.output
    for label in ("N mod 16", "M mod 8", "K classes", "boundaries"):
        assert next(ln for ln in res.output.splitlines()
                    if ln.startswith(label)).endswith("missing -"), res.output


def test_coverage_audit_of_an_unknown_realization_is_a_usage_error():
    res = CliRunner().invoke(main, ["catalogs", "--coverage", "nope", "--target", "host"])
    assert res.exit_code == 2 and "not a realization" in res.output


# --------------------------------------------------------------------------- runs


def _rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_plugin_smoke_drops_no_case_silently_and_reproduces_a_tail(tmp_path):
    """Every smoke case of a plugin's operator runs on it (a packed case with
    a B form it takes) or is named with the reason; a derived tail's
    reproducer reruns that case."""
    out = tmp_path / "run"
    res = kbench("run", "--suite", "correctness", "--target", "host", "--plugin",
                  lib("exukref"), "--backend", "plugin", "--shapes", "smoke", "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = _rows(out)
    meta = json.loads((out / "run.json").read_text())
    lost = {(d["realization"], c["case"]) for d in meta["not_applicable"] for c in d["cases"]}
    from kbench.problems.catalog import load_catalog, resolve_catalog
    smoke = load_catalog(resolve_catalog("smoke"))
    ran = {(r["realization"], r["case"]) for r in rows if r["catalog"] == "smoke"}
    for real, cases in (("exukref.gemm_4x8", smoke.gemm), ("exukref.gemm_4x8_plain_lhs",
                                                           smoke.gemm),
                        ("exukref.conv2d_igemm_4x8", smoke.conv)):
        for c in cases:
            assert (real, c.name) in ran or (real, c.name) in lost, (real, c.name)
    packed = [r for r in rows if r["case"] == "m17_n31_k9_packed"]
    assert packed and {r["b_form"] for r in packed} == {"native"}
    assert f"{B_FORM_TAG}packed" in packed[0]["tags"]
    # the groups > 1 convolutions the indirect GEMM does not take: said, with the reason
    assert ("exukref.conv2d_igemm_4x8", "smoke_k3x3_p1_g2_n1h7w7_c8o16") in lost
    assert "not run, groups > 1" in res.stdout
    tail_rows = [r for r in rows if r["catalog"] == tails.CATALOG]
    assert {r["realization"] for r in tail_rows} >= {"exukref.gemm_4x8",
                                                     "exukref.conv2d_igemm_4x8"}
    assert meta["tails"]["mode"] == "sample"
    # a derived case's reproducer reruns exactly that case
    row = next(r for r in tail_rows if r["realization"] == "exukref.gemm_4x8"
               and "_n13_" in r["case"])
    v = Verdict(case=row["case"], op="gemm", shape=row["shape"], kind=row["kind"],
                target="host", backend=row["backend"], realization=row["realization"],
                kernel="", accum="fp32", k=0, m=0, n=0, b_form=row["b_form"], vector_bits=0,
                status="fail", catalog=tails.CATALOG)
    cmd = shlex.split(reproducer(v, tails.CATALOG))
    assert cmd[:2] == ["kbench", "run"] and "tails" in cmd
    again = tmp_path / "again"
    res = kbench(*cmd[1:], "--plugin", lib("exukref"), "--out", str(again))
    assert res.returncode == 0, res.stdout + res.stderr
    rerun = [r for r in _rows(again) if r["catalog"] == tails.CATALOG]
    assert [(r["case"], r["realization"], r["kind"], r["b_form"]) for r in rerun] == [
        (row["case"], row["realization"], row["kind"], row["b_form"])]


@pytest.mark.parametrize(("variant", "only_tails"), [(1, False), (2, True)],
                         ids=["n%8=7-stores-one-more", "n%8=5-wrong-lane"])
def test_plugin_with_a_tail_bug_fails_smoke(tmp_path, variant, only_tails):
    """The portable micro-kernel built with a bug in its N tail: smoke fails
    on it; the wrong lane at N % 8 = 5 (a residue no smoke catalog case has)
    only in the derived tails."""
    out = tmp_path / "run"
    res = kbench("run", "--suite", "correctness", "--target", "host", "--plugin",
                  lib(f"extail{variant}"), "--backend", "plugin", "--shapes", "smoke",
                  "--out", str(out))
    assert res.returncode == 1, res.stdout + res.stderr
    failed = [r for r in _rows(out) if r["status"] == "fail"]
    assert failed and all(r["realization"].startswith("extail.") for r in failed)
    assert any(r["catalog"] == tails.CATALOG and r["realization"] == "extail.gemm_4x8"
               for r in failed)
    if only_tails:
        # of the catalogs (the determinism suite's own shapes may hit the residue too)
        assert {r["catalog"] for r in failed if r["suite"] != "determinism"} == {tails.CATALOG}
        # the reproducer the run printed for a derived case fails on that case again
        line = next(ln for ln in (out / "verdicts.txt").read_text().splitlines()
                    if ln.strip().startswith("reproduce:") and "--shapes tails" in ln)
        cmd = shlex.split(line.split("reproduce:", 1)[1])
        again = tmp_path / "again"
        res = kbench(*cmd[1:], "--no-history", "--out", str(again))
        assert res.returncode == 1, res.stdout + res.stderr
        rerun = _rows(again)
        first = failed[0]
        assert [(r["catalog"], r["case"], r["realization"], r["status"]) for r in rerun
                if r["suite"] != "determinism"] == [
            (tails.CATALOG, first["case"], first["realization"], "fail")]
