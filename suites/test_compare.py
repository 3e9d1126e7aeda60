"""The comparison and the regression gate, on synthetic run folders written
through RunWriter and read back by the real loader. Per-round times are
synthetic (seeded), so nothing here depends on this machine's timing."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

from kbench.cli.history import compare, gate_command, load_gate_config, parse_fraction
from kbench.judge.verdict import Verdict
from kbench.results import modt
from kbench.results.compare import (
    FASTER,
    FIRST_LOOK,
    INCONCLUSIVE,
    MISSING,
    NEW,
    NOT_COMPARABLE,
    NOT_SIGNIFICANT,
    POSSIBLE_SLOWDOWN,
    SAME,
    SLOWER,
    UNIT_TEST,
    UNTIMED,
    FirstLook,
    GateFailure,
    _index,
    compare_runs,
    first_look_word,
    gate,
    holm,
    markdown,
    two_run_tests,
    unit_medians,
    unit_test,
)
from kbench.results.identity import checkout
from kbench.results.json_out import gate_doc
from kbench.results.runfolder import Run, load_run
from kbench.results.store import RunWriter

CPU = {"host": "box", "machine": "aarch64", "cpu_model": "Test CPU"}
HERE = checkout()  # synthetic runs are runs of this checkout, as kbench run records them


def rounds(median_ns: float, seed: int, n: int = 15, noise: float = 0.01) -> list[float]:
    rng = np.random.default_rng(seed)
    return list(median_ns * (1 + noise * rng.standard_normal(n)))


def row(case: str, status: str = "pass", suite: str = "perf", times: list[float] | None = None,
        target: str = "host", realization: str = "gemm_scalar_f32acc", emulated: bool = False,
        message: str = "") -> Verdict:
    v = Verdict(case=case, op="gemm", shape="m8n8k8", kind="uniform" if suite == "perf"
                else "exact", target=target, backend="scalar", realization=realization,
                kernel="matmul_scalar", accum="fp32", k=8, m=8, n=8, b_form="plain",
                vector_bits=0, status=status, catalog="synthetic", suite=suite,
                emulated=emulated, message=message, flops=1024)
    if times:
        v.rounds, v.reps_per_round, v.round_times_ns = len(times), 1, times
        v.time_median_ns = float(np.median(times))
        v.time_min_ns = float(min(times))
    return v


def write_run(folder: Path, rows: list[Verdict], complete: bool = True,
              **meta: Any) -> Run:
    emulated = any(r.emulated for r in rows)
    metadata = {**CPU, "checkout": HERE, "git_commit": "0123456789abcdef", "git_dirty": False,
                "date": "2025-01-01T00:00:00+00:00", "command_line": "kbench run",
                "targets": {t: {"emulated": emulated, "arch": "aarch64"}
                            for t in sorted({r.target for r in rows})}, **meta}
    w = RunWriter(folder, metadata)
    w.add_all(rows)
    w.close(complete=complete)
    return load_run(folder)


def pair(tmp_path: Path, base_rows: list[Verdict], cand_rows: list[Verdict],
         **cand_meta: Any) -> tuple[Run, Run]:
    return (write_run(tmp_path / "base", base_rows),
            write_run(tmp_path / "cand", cand_rows, **cand_meta))


def by_case(comp: Any) -> dict[str, Any]:
    return {c.key[4]: c for c in comp.cases}


def test_verdicts_slower_same_faster(tmp_path: Path) -> None:
    same = passes("same", [1e6] * 3, 1)
    base, cand = pair(
        tmp_path,
        [*passes("slow", [1e6] * 3, 2), *same,
         *passes("fast", [1e6] * 3, 3), row("check", suite="correctness")],
        [*passes("slow", [1.2e6] * 3, 4), *same[::-1],
         *passes("fast", [0.8e6] * 3, 5), row("check", suite="correctness")])
    cases = by_case(compare_runs(base, cand, alpha=0.01, max_slowdown=0.05))
    assert cases["slow"].verdict == SLOWER
    assert cases["slow"].ratio == pytest.approx(1.2, rel=0.02)
    assert cases["slow"].p_slower < 1e-4
    assert cases["same"].verdict == SAME
    assert cases["same"].ratio == pytest.approx(1.0)
    assert cases["same"].p_slower > 0.4 and cases["same"].p_faster > 0.4
    assert cases["fast"].verdict == FASTER
    assert cases["fast"].p_faster < 1e-4
    assert cases["check"].verdict == UNTIMED and not cases["check"].timed


def test_one_sided_tests_are_complementary() -> None:
    base, cand = [10.0, 11, 12, 13, 14], [15.0, 16, 17, 18, 19]
    p_slower, p_faster = unit_test(base, cand)
    assert p_slower < 1e-3 and p_slower + p_faster == pytest.approx(1.0)
    assert unit_test(cand, base) == pytest.approx((p_faster, p_slower))
    # a ratio is what is tested: the same passes at another scale give the same p
    assert unit_test([b * 1e6 for b in base], [c * 1e6 for c in cand]) == pytest.approx(
        (p_slower, p_faster))
    # passes without spread: exact figures, certain in the direction they moved
    assert unit_test([2.0, 2.0], [3.0, 3.0]) == (0.0, 1.0)
    assert unit_test([2.0, 2.0], [2.0, 2.0]) == (1.0, 1.0)
    # ... beyond the margin only: a move inside it is no evidence either way
    assert unit_test([2.0, 2.0], [2.02, 2.02], margin=0.05) == (1.0, 1.0)
    assert unit_test([2.0, 2.0], [1.98, 1.98], margin=0.05) == (1.0, 1.0)
    assert unit_test([2.0, 2.0], [1.9, 1.9], margin=0.01) == (1.0, 0.0)
    # one side without spread, the other spread by a log of exactly 1: Welch's t, t = 1 on
    # one degree of freedom (mean log ratio 0.5, its standard error 0.5)
    assert unit_test([1.0, 1.0], [1.0, math.e]) == pytest.approx((0.25, 0.75))
    assert unit_test([1.0, math.e], [1.0, 1.0]) == pytest.approx((0.75, 0.25))


def test_a_log_ratio_of_a_zero_negative_or_infinite_time_is_missing_without_a_warning() -> None:
    from kbench.results.compare import _log_ratio
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning reaches a user's terminal
        assert _log_ratio([1.0, 4.0], [2.0, 8.0]) == pytest.approx(math.log(2))
        assert math.isnan(_log_ratio([0.0, 1.0], [1.0, 1.0]))
        assert math.isnan(_log_ratio([1.0, 1.0], [math.inf, 1.0]))
        assert math.isnan(_log_ratio([-1.0, 1.0], [1.0, 1.0]))


def test_one_pass_gives_no_p_value() -> None:
    """Rounds alone never give a p-value: with one pass on either side the
    test has no evidence, however many rounds and however large the effect."""
    assert unit_test([1.0], [5.0, 5.1, 5.2]) == (1.0, 1.0)
    assert unit_test([1.0, 1.1], [5.0]) == (1.0, 1.0)


def test_identical_builds_rarely_flagged() -> None:
    """A/A calibration over units: the slower-test false-alarm rate stays near
    alpha, with per-pass medians drawn with a spread between passes."""
    alpha = 0.05
    flagged = sum(unit_test(rounds(1e6, 2 * i, n=4, noise=0.05),
                            rounds(1e6, 2 * i + 1, n=4, noise=0.05))[0] < alpha
                  for i in range(400))
    assert flagged / 400 <= 2 * alpha


def test_gate_passes_a_over_a(tmp_path: Path) -> None:
    rows = [r for i in range(5) for r in passes(f"c{i}", [1e6 * (i + 1)] * 3, i)]
    rows.append(row("contract", suite="contracts"))
    again = [r for i in range(5) for r in passes(f"c{i}", [1e6 * (i + 1)] * 3, 100 + i)]
    again.append(row("contract", suite="contracts"))
    result = gate(*pair(tmp_path, rows, again))
    assert result.passed, result.failures
    assert set(result.comparison.counts()) <= {SAME, FASTER, SLOWER}


def test_a_two_run_slowdown_is_a_first_look_never_a_failure(tmp_path: Path) -> None:
    """A significant +20% between two runs measured apart: the gate passes,
    lists a possible slowdown with the statistic its test judged and the one
    command that settles the case pair."""
    base, cand = pair(tmp_path, [*passes("k", [1e6] * 3, 1)],
                      [*passes("k", [1.2e6] * 3, 2)])
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    assert result.passed and result.failures == []
    (found,) = result.first_look
    assert found.case == "host gemm_scalar_f32acc synthetic/k [uniform]"
    case = by_case(result.comparison)["k"]
    assert case.verdict == SLOWER and found.ratio == case.gated_ratio
    assert found.ratio == pytest.approx(1.2, rel=0.01)
    assert found.detail.startswith(f"{case.gated_ratio - 1:+.1%} (ratio of per-pass geometric "
                                   "means; limit 5.0%)")
    assert "over 3 and 3 passes" in found.detail
    assert found.settle.startswith("kbench ab --base worker:BASE_CHECKOUT/build/worker/host/"
                                   "kb_worker --cand worker:host --shapes synthetic -k "
                                   "'^synthetic/k$' --realization gemm_scalar_f32acc "
                                   "--min-effect 5%")
    assert "--settle --out runs/settle/gemm_scalar_f32acc-synthetic-k" in found.settle
    assert first_look_word(case, result.comparison) == POSSIBLE_SLOWDOWN
    # gate --json: the comparison's statistical word and the gate's own, side by side
    from kbench.results.json_out import gate_doc
    (doc_case,) = gate_doc(result)["cases"]
    assert (doc_case["verdict"], doc_case["gate_verdict"]) == (SLOWER, POSSIBLE_SLOWDOWN)
    within = gate(base, cand, alpha=0.01, max_slowdown=0.25)
    assert within.first_look == []
    (doc_case,) = gate_doc(within)["cases"]  # slower, but within the limit: not "same"
    assert doc_case["gate_verdict"] == "speed not gated (first look)"


def test_gate_passes_a_significant_slowdown_below_the_limit(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, passes("k", [1e6] * 3, 1, noise=0.002),
                      passes("k", [1.03e6] * 3, 2, noise=0.002))
    result = gate(base, cand, max_slowdown=0.05)
    assert by_case(result.comparison)["k"].verdict == SLOWER
    assert result.passed and result.first_look == []  # +3%: within the limit, no finding


def shifted_runs(tmp_path: Path, n: int, factor: dict[int, float]) -> tuple[Run, Run]:
    """n timed cases; the candidate's case i is factor[i] times the base's."""
    base = [r for i in range(n) for r in passes(f"c{i}", [1e6 * (1 + i)] * 3, i, noise=0.002)]
    cand = [r for i in range(n)
            for r in passes(f"c{i}", [1e6 * (1 + i) * factor.get(i, 1.0)] * 3, 100 + i,
                            noise=0.002)]
    return pair(tmp_path, base, cand)


def test_a_run_wide_shift_is_machine_drift_not_28_regressions(tmp_path: Path) -> None:
    """Every case +20% (load or clock between two runs): no case is called
    slower; they are inconclusive, the gate passes and says why and how to
    settle it; --strict fails on them. A shift the other way is drift too."""
    base, cand = shifted_runs(tmp_path, 28, {i: 1.2 for i in range(28)})
    result = gate(base, cand, max_slowdown=0.05)
    cases = by_case(result.comparison)
    assert {c.verdict for c in cases.values()} == {INCONCLUSIVE}
    assert all("machine drift" in c.note and "+20" in c.note for c in cases.values())
    assert result.passed, result.failures
    (warning,) = [w for w in result.warnings if "machine drift" in w]
    assert "28 of 28" in warning and "kbench ab" in warning
    md = markdown(result)
    assert "### Machine drift (28 case(s), not failures)" in md and "**slower**" not in md
    assert result.first_look == []
    # --strict is for interleaved verdicts: two runs measured apart never fail on speed
    strict = gate(base, cand, max_slowdown=0.05, strict=True)
    assert strict.passed and strict.first_look == []
    base, cand = shifted_runs(tmp_path / "down", 28, {i: 0.8 for i in range(28)})
    comp = compare_runs(base, cand, max_slowdown=0.05)
    assert {c.verdict for c in comp.cases} == {INCONCLUSIVE}
    assert any("moved faster" in w for w in comp.warnings)


def test_a_slowdown_of_a_few_cases_is_no_drift(tmp_path: Path) -> None:
    """3 of 28 cases +20%, or 5 cases all +20% (too few to infer a shift):
    slower, and the gate names exactly those."""
    base, cand = shifted_runs(tmp_path, 28, {3: 1.2, 9: 1.2, 20: 1.2})
    result = gate(base, cand, max_slowdown=0.05)
    slow = sorted(k for k, c in by_case(result.comparison).items() if c.verdict == SLOWER)
    assert slow == ["c20", "c3", "c9"]
    assert sorted(f.case.split()[-2] for f in result.first_look) == ["synthetic/c20",
                                                                      "synthetic/c3",
                                                                      "synthetic/c9"]
    assert result.passed and not any("drift" in w for w in result.warnings)
    base, cand = shifted_runs(tmp_path / "few", 5, {i: 1.2 for i in range(5)})
    result = gate(base, cand, max_slowdown=0.05)
    # each case, and their realization with its 5 cases together
    assert len(result.first_look) == 6 and result.passed
    assert result.first_look[-1].case == "host gemm_scalar_f32acc [5 cases together]"
    assert result.first_look[-1].detail.startswith("+20.0%: the median of its 5 cases' ratios "
                                                   "of per-pass geometric means")
    # 20 of 28 move (under the 3/4 share): each of them is judged on its own, and so is
    # their realization (its median case moved)
    base, cand = shifted_runs(tmp_path / "most", 28, {i: 1.2 for i in range(20)})
    found = gate(base, cand, max_slowdown=0.05).first_look
    assert len(found) == 21 and found[-1].case.endswith("[28 cases together]")


def test_the_gate_cli_lists_drift_and_strict_fails_it(tmp_path: Path) -> None:
    base, cand = shifted_runs(tmp_path, 12, {i: 1.3 for i in range(12)})
    runner = CliRunner()
    res = runner.invoke(gate_command, [str(base.path), str(cand.path)])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[0] == "gate: PASSED"
    assert f"{FIRST_LOOK} (moved with the whole run" in res.output
    assert "warning: machine drift: 12 of 12" in res.output
    assert "  12 case(s) moved with the whole run (machine drift): see the warning" in res.output
    assert " same" not in res.output
    res = runner.invoke(gate_command, [str(base.path), str(cand.path), "--strict"])
    assert res.exit_code == 0 and "FAIL" not in res.output


def test_gate_ignores_a_large_but_insignificant_slowdown(tmp_path: Path) -> None:
    # +10% on every pass's median, but the passes spread by tens of percent
    base, cand = pair(tmp_path, passes("k", [1e6, 1.5e6, 0.7e6], 1),
                      passes("k", [1.1e6, 1.65e6, 0.77e6], 2))
    case = by_case(compare_runs(base, cand))["k"]
    assert case.p_slower >= 0.01 and case.verdict == NOT_SIGNIFICANT  # +10% is not "same"
    result = gate(base, cand)
    assert result.passed and result.first_look == []
    assert first_look_word(by_case(result.comparison)["k"], result.comparison) == FIRST_LOOK


def test_gate_fails_a_correctness_failure_in_any_suite(tmp_path: Path) -> None:
    base_rows = [*passes("k", [1e6] * 3, 1), row("misuse", suite="contracts")]
    for bad in (row("k", status="fail", message="3 element(s) outside the bound"),
                row("misuse", suite="contracts", status="error", message="crashed")):
        cand_rows = [bad] + [r for r in base_rows if r.case != bad.case]
        result = gate(*pair(tmp_path / bad.case, base_rows, cand_rows))
        assert [f.reason for f in result.failures] == ["correctness"]
        assert bad.message in result.failures[0].detail


def test_gate_fails_a_missing_or_newly_skipped_case(tmp_path: Path) -> None:
    base_rows = [*passes("a", [1e6] * 3, 1), row("b", suite="correctness")]
    result = gate(*pair(tmp_path / "gone", base_rows, [*passes("a", [1e6] * 3, 2)]))
    assert [(f.reason, "b" in f.case) for f in result.failures] == [("missing", True)]
    assert by_case(result.comparison)["b"].verdict == MISSING
    skipped = [*passes("a", [1e6] * 3, 2), row("b", suite="correctness", status="skip")]
    result = gate(*pair(tmp_path / "skip", base_rows, skipped))
    assert [f.reason for f in result.failures] == ["missing"]


def test_new_cases_do_not_fail(tmp_path: Path) -> None:
    result = gate(*pair(tmp_path, [row("a", suite="correctness")],
                        [row("a", suite="correctness"), row("b", suite="correctness")]))
    assert result.passed
    assert by_case(result.comparison)["b"].verdict == NEW


def test_gate_fails_an_incomplete_run(tmp_path: Path) -> None:
    rows = [row("a", suite="correctness")]
    base = write_run(tmp_path / "base", rows)
    cand = write_run(tmp_path / "cand", rows, complete=False)
    assert [f.reason for f in gate(base, cand).failures] == ["incomplete"]


def test_gate_fails_a_failed_suite_without_failing_rows(tmp_path: Path) -> None:
    rows = [row("a", suite="correctness")]
    base, cand = pair(tmp_path, rows, rows, pytest_exit_status=1)
    assert [f.reason for f in gate(base, cand).failures] == ["suite"]


def test_emulated_times_are_never_speed(tmp_path: Path) -> None:
    spec = "qemu:svl=512"
    base, cand = pair(tmp_path,
                      [row("k", target=spec, emulated=True, times=rounds(1e6, 1))],
                      [row("k", target=spec, emulated=True, times=rounds(3e6, 2))])
    result = gate(base, cand)
    case = by_case(result.comparison)["k"]
    assert case.verdict == NOT_COMPARABLE and "emulated" in case.note
    assert np.isnan(case.ratio) and np.isnan(case.p_slower)
    assert result.passed
    broken = [row("k", target=spec, emulated=True, status="fail", message="wrong")]
    result = gate(*pair(tmp_path / "broken",
                        [row("k", target=spec, emulated=True, times=rounds(1e6, 1))], broken))
    assert [f.reason for f in result.failures] == ["correctness"]


def test_emulated_target_in_run_metadata_is_not_speed(tmp_path: Path) -> None:
    """A row without the emulated flag still counts as emulated when the run
    says its target was emulated."""
    base, cand = pair(tmp_path, [*passes("k", [1e6] * 3, 1)],
                      [*passes("k", [2e6] * 3, 2)],
                      targets={"host": {"emulated": True}})
    assert by_case(gate(base, cand).comparison)["k"].verdict == NOT_COMPARABLE


def test_speed_targets_and_cpus_limit_speed_comparison(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, passes("k", [1e6] * 3, 1, target="worker:x"),
                      passes("k", [2e6] * 3, 2, target="worker:x"))
    assert len(gate(base, cand, speed_targets=("*",)).first_look) == 1
    result = gate(base, cand, speed_targets=("host",))
    assert result.first_look == []
    assert result.passed
    assert by_case(result.comparison)["k"].note == "target not speed-comparable"
    other = write_run(tmp_path / "other", passes("k", [2e6] * 3, 2, target="worker:x"),
                      cpu_model="Another CPU")
    result = gate(base, other)
    assert result.passed and by_case(result.comparison)["k"].note == "different CPUs"
    assert any("different CPUs" in w for w in result.warnings)


def test_one_pass_per_run_is_not_comparable_and_warned(tmp_path: Path) -> None:
    """Two single-pass runs, 200 rounds each, the candidate 2x slower in every
    round: the rounds of a pass are not independent samples, so no p-value
    is computed, the case is not gated for speed, and the gate says why and
    what to do; one pass on one side only is the same."""
    base, cand = pair(tmp_path, [row("k", times=rounds(1e6, 1, n=200))],
                      [row("k", times=rounds(2e6, 2, n=200))])
    result = gate(base, cand, alpha=0.01)
    case = by_case(result.comparison)["k"]
    assert case.verdict == NOT_COMPARABLE and np.isnan(case.p_slower)
    assert case.note == "passes 1 and 1: rounds alone give no p-value"
    assert case.ratio == pytest.approx(2.0, rel=0.01)
    assert result.passed
    (warning,) = [w for w in result.warnings if "no p-value" in w]
    assert "--passes 3" in warning and "--ab" in warning
    base, cand = pair(tmp_path / "one-side", passes("k", [1e6] * 3, 1),
                      [row("k", times=rounds(2e6, 2, n=200))])
    assert by_case(gate(base, cand).comparison)["k"].verdict == NOT_COMPARABLE


def test_a_shift_the_rounds_would_call_significant_is_judged_by_passes(tmp_path: Path) -> None:
    """+8% on every round of every pass, but the passes' medians spread by
    +-20% on both sides: a test over the 45 rounds per side would call it
    significant; over 3 passes per side it is not."""
    from scipy.stats import mannwhitneyu
    b = passes("k", [1e6, 1.2e6, 0.8e6], 1)
    c = passes("k", [1.08e6, 1.296e6, 0.864e6], 2)
    pooled_b = [t for r in b for t in r.round_times_ns]
    pooled_c = [t for r in c for t in r.round_times_ns]
    assert mannwhitneyu(pooled_c, pooled_b, alternative="greater").pvalue < 0.05
    case = by_case(compare_runs(*pair(tmp_path, b, c)))["k"]
    assert case.verdict == NOT_SIGNIFICANT and case.p_slower > 0.05  # +8%: not "same"
    assert (case.passes, case.base_passes, case.cand_rounds) == (3, 3, 45)


def test_markdown_summary(tmp_path: Path) -> None:
    base, cand = pair(tmp_path,
                      [*passes("slowcase", [1e6] * 3, 1), row("gone", suite="correctness")],
                      [*passes("slowcase", [1.5e6] * 3, 2)])
    text = markdown(gate(base, cand))
    assert text.startswith("## kbench gate: FAILED\n\n### Failures (1)")
    assert ("| target | realization | case | kind | base median | candidate median "
            "| gated ratio | median ratio |") in text
    line = next(ln for ln in text.splitlines() if "slowcase" in ln and "`gemm_scalar" in ln)
    assert "`gemm_scalar_f32acc`" in line and "**possible slowdown**" in line and "1 ms" in line
    assert "| missing |" in text and "| slowdown |" not in text
    # what decides the gate comes first: the failures, then speed, then the settings
    assert (text.index("### Failures") < text.index("### Speed: first look, not gated (1 "
                                                    "possible slowdown(s))")
            < text.index("### Settings") < text.index("### Timed cases"))
    assert "### Candidate results by suite" in text
    assert markdown(compare_runs(base, cand)).startswith("## kbench compare")


@pytest.mark.parametrize("text,value", [("5%", 0.05), ("0.05", 0.05), (" 12.5% ", 0.125),
                                        ("0", 0.0), (0.1, 0.1), ("150%", 1.5)])
def test_parse_fraction(text: str | float, value: float) -> None:
    assert parse_fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["5", "abc", "-1%", "nan", "%"])
def test_parse_fraction_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_fraction(text)


def test_gate_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[gate]\nmax_slowdown = "10%"\nalpha = 0.05\nspeed_targets = ["host"]\n')
    loaded = load_gate_config(cfg)
    assert (loaded.max_slowdown, loaded.alpha, loaded.speed_targets) == (0.1, 0.05, ("host",))
    cfg.write_text("[gate]\nmax_slowdwn = 0.1\n")
    with pytest.raises(ValueError, match="max_slowdwn"):
        load_gate_config(cfg)
    shipped = load_gate_config()  # ci/gate.toml of this checkout
    assert shipped.max_slowdown == pytest.approx(0.05) and shipped.alpha == pytest.approx(0.01)
    assert "host" in shipped.speed_targets


def test_gate_cli_exit_codes(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [*passes("k", [1e6] * 3, 1)],
                      [*passes("k", [1.2e6] * 3, 2)])
    runner = CliRunner()
    same = runner.invoke(gate_command, [str(base.path), str(base.path)])
    assert same.exit_code == 0, same.output
    assert "gate: PASSED" in same.output
    slow = runner.invoke(gate_command, [str(base.path), str(cand.path), "--max-slowdown", "5%"])
    # a first look never fails a build on speed: it says so, and how to settle it
    assert slow.exit_code == 0 and "FAIL" not in slow.output
    assert "speed: first look, not gated: 1 possible slowdown(s)" in slow.output
    assert "  possible slowdown host gemm_scalar_f32acc synthetic/k [uniform]: +" in slow.output
    assert "    settle: kbench ab --base " in slow.output
    for loose in ("0.3", "30%"):
        out = runner.invoke(gate_command, [str(base.path), str(cand.path),
                                           "--max-slowdown", loose])
        assert out.exit_code == 0 and "0 possible slowdown(s)" in out.output
    for bad in (["--max-slowdown", "5"], ["--alpha", "0.9"]):
        out = runner.invoke(gate_command, [str(base.path), str(cand.path), *bad])
        assert out.exit_code == 2, out.output
    assert runner.invoke(gate_command, [str(base.path), str(tmp_path / "nope")]).exit_code == 2
    (tmp_path / "empty").mkdir()
    assert runner.invoke(gate_command, [str(base.path), str(tmp_path / "empty")]).exit_code == 2


def test_gate_cli_markdown_and_job_summary(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [*passes("k", [1e6] * 3, 1)],
                      [*passes("k", [1.2e6] * 3, 2)])
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    report = tmp_path / "gate.md"
    out = CliRunner().invoke(gate_command, [str(base.path), str(cand.path), "--markdown",
                                            str(report)],
                             env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert out.exit_code == 0
    assert report.read_text().startswith("## kbench gate: PASSED")
    assert "1 possible slowdown(s)" in report.read_text()
    assert summary.read_text().startswith("earlier step\n## kbench gate: PASSED")


def test_gate_cli_reads_config(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [*passes("k", [1e6] * 3, 1)],
                      [*passes("k", [1.2e6] * 3, 2)])
    cfg = tmp_path / "loose.toml"
    cfg.write_text('[gate]\nmax_slowdown = "30%"\n')
    args = [str(base.path), str(cand.path), "--config", str(cfg)]
    loose = CliRunner().invoke(gate_command, args)
    assert loose.exit_code == 0 and "0 possible slowdown(s)" in loose.output
    tight = CliRunner().invoke(gate_command, [*args, "--max-slowdown", "5%"])
    assert tight.exit_code == 0 and "1 possible slowdown(s)" in tight.output


def test_compare_cli(tmp_path: Path) -> None:
    base, cand = pair(tmp_path, [*passes("k", [1e6] * 3, 1), row("c", suite="correctness")],
                      [*passes("k", [0.5e6] * 3, 2), row("c", suite="correctness")])
    md = tmp_path / "cmp.md"
    out = CliRunner().invoke(compare, [str(base.path), str(cand.path), "--markdown", str(md)])
    assert out.exit_code == 0, out.output
    line = next(ln for ln in out.output.splitlines() if "synthetic/k" in ln)
    assert line.split()[-1] == FASTER and float(line.split()[-3]) == pytest.approx(0.5, abs=0.01)
    assert "timed: 1 faster" in out.output
    assert md.read_text().startswith("## kbench compare")


def test_holm_adjustment() -> None:
    from kbench.results.compare import holm
    assert holm([]) == []
    assert holm([0.01]) == [0.01]
    # m = 4: sorted p 0.001, 0.01, 0.02, 0.5 -> 0.004, 0.03, 0.04, 0.5 (monotone)
    assert holm([0.02, 0.5, 0.001, 0.01]) == pytest.approx([0.04, 0.5, 0.004, 0.03])
    assert holm([0.3, 0.3, 0.3]) == pytest.approx([0.9, 0.9, 0.9])
    assert holm([0.6, 0.6]) == [1.0, 1.0]


def test_many_cases_are_corrected_for_multiple_comparisons(tmp_path: Path) -> None:
    """A p just below alpha on one case of many is what chance gives: after
    Holm's adjustment over 20 cases it no longer makes a verdict."""
    base_rows, cand_rows = [], []
    for i in range(1, 20):
        base_rows += passes(f"c{i}", [1e6] * 3, 2 * i)
        cand_rows += passes(f"c{i}", [1e6] * 3, 2 * i + 1)
    # c0: +10%, with passes spread so that its raw one-sided p is just below 0.01;
    # Holm-adjusted over the 20 cases and their realization it is 21 times that, above 0.01
    b0_medians = [1.00e6, 1.025e6, 0.975e6]
    c0_medians = [1.1 * m for m in b0_medians]
    b0 = passes("c0", b0_medians, 1, noise=0.0)
    c0_rows = passes("c0", c0_medians, 2, noise=0.0)
    base, cand = pair(tmp_path, b0 + base_rows, c0_rows + cand_rows)
    b_idx, c_idx = _index(base), _index(cand)
    units = [(unit_medians(b_idx[k]), unit_medians(c_idx[k])) for k in b_idx]
    raws, test = two_run_tests(units, [0.05] * len(units))
    raw = raws[[k[4] for k in b_idx].index("c0")][0]
    assert test.startswith(modt.NAME) and 0.0005 < raw < 0.01
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    c0 = by_case(result.comparison)["c0"]
    # one family: the 20 cases and their realization (its 20 cases together)
    assert [r.cases for r in result.comparison.realizations] == [20]
    assert c0.ratio > 1.05 and c0.p_slower == pytest.approx(21 * raw)
    assert result.comparison.test.startswith(test) and "per realization" in result.comparison.test
    assert c0.verdict == (SAME if c0.gated_ratio <= 1.05 else NOT_SIGNIFICANT) and result.passed
    # the same pair alone: too few cases for the moderated test's prior, Welch's t per
    # case against half the limit (2.5%), unadjusted (one case)
    alone = gate(*pair(tmp_path / "alone", b0, c0_rows), alpha=0.05)
    welch = unit_test(b0_medians, c0_medians, math.log1p(0.025))
    assert alone.comparison.test.startswith(UNIT_TEST) and 0.01 < welch[0] < 0.05
    assert by_case(alone.comparison)["c0"].p_slower == pytest.approx(welch[0])
    assert by_case(alone.comparison)["c0"].verdict == SLOWER
    assert alone.passed and [f.case.split()[-2] for f in alone.first_look] == ["synthetic/c0"]


def passes(case: str, medians: list[float], seed: int, n: int = 15, noise: float = 0.01,
           **kw: Any) -> list[Verdict]:
    """One row per pass, as `kbench run --passes N` writes them."""
    return [row(case, times=rounds(m, seed * 100 + i, n=n, noise=noise), **kw)
            for i, m in enumerate(medians)]


def test_a_burst_in_one_pass_is_not_a_slowdown(tmp_path: Path) -> None:
    """Background load during one pass shifts every round of that pass; the
    pooled test sees a significant shift, the pass ratio does not."""
    base, cand = pair(tmp_path, passes("k", [1e6, 1e6, 1e6], 1),
                      passes("k", [1e6, 1.6e6, 1e6], 2))
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    c = by_case(result.comparison)["k"]
    assert c.passes == 3 and c.pass_ratio == pytest.approx(1.0, abs=0.01)
    assert c.base_rounds == c.cand_rounds == 45
    assert result.passed, result.failures
    # one pass only: the same burst is no evidence either way (rounds give no p-value)
    single = gate(*pair(tmp_path / "one", passes("k", [1e6], 1), passes("k", [1.6e6], 2)))
    assert single.passed
    assert by_case(single.comparison)["k"].verdict == NOT_COMPARABLE


@pytest.mark.parametrize("n_passes", [3, 4, 5])
def test_a_slowdown_in_most_passes_fails_the_gate(tmp_path: Path, n_passes: int) -> None:
    slowed = [1.1e6] * n_passes
    slowed[0] = 1.12e6  # a pass a little slower than the others changes nothing
    base, cand = pair(tmp_path, passes("k", [1e6] * n_passes, 1), passes("k", slowed, 2))
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    c = by_case(result.comparison)["k"]
    assert c.verdict == SLOWER and c.pass_ratio == pytest.approx(1.1, rel=0.01)
    assert result.passed and len(result.first_look) == 1
    assert f"in more than half of {n_passes} passes" in result.first_look[0].detail
    # more than half the passes must be slow: with half of them slowed, no finding
    half = [1.1e6 if i < n_passes // 2 else 1e6 for i in range(n_passes)]
    assert gate(*pair(tmp_path / "half", passes("k", [1e6] * n_passes, 3),
                      passes("k", half, 4)), alpha=0.01, max_slowdown=0.05).first_look == []


def test_a_slowdown_in_exactly_half_the_passes_is_not_enough(tmp_path: Path) -> None:
    """Eight passes a side, every candidate pass slower: four by 30%, four by
    4% (within the 5% limit). The test over the passes is significant and
    the ratio of medians is beyond the limit, but the pass ratio (the lower
    median of the per-pass ratios) is 1.04: a slowdown that shows in only
    half of the passes does not fail the gate."""
    base, cand = pair(tmp_path, passes("k", [1e6] * 8, 1, noise=0.002),
                      passes("k", [1.3e6] * 4 + [1.04e6] * 4, 2, noise=0.002))
    result = gate(base, cand, alpha=0.05, max_slowdown=0.05)
    c = by_case(result.comparison)["k"]
    assert c.p_slower < 0.05 and c.ratio > 1.05
    assert c.pass_ratio == pytest.approx(1.04, rel=0.01)
    assert c.verdict == SLOWER  # slower it is, but by less than the limit in half the passes
    assert result.passed and not result.failures and not result.first_look
    # one more slow pass (five of eight): more than half, a possible slowdown
    base, cand = pair(tmp_path / "five", passes("k", [1e6] * 8, 1, noise=0.002),
                      passes("k", [1.3e6] * 5 + [1.04e6] * 3, 2, noise=0.002))
    result = gate(base, cand, alpha=0.05, max_slowdown=0.05)
    assert result.passed and len(result.first_look) == 1


def test_pooled_passes(tmp_path: Path) -> None:
    """Run.perf_pooled joins a case's passes into one row (the report's view)."""
    rows = passes("k", [1e6, 2e6, 3e6], 7, n=5) + [row("other", times=rounds(5e5, 9, n=4))]
    run = write_run(tmp_path / "run", rows)
    assert len(run.perf()) == 4
    pooled = run.perf_pooled().set_index("case")
    assert len(pooled) == 2
    k = pooled.loc["k"]
    assert k["rounds"] == 15 and len(k["round_times"]) == 15
    assert k["time_median_ns"] == pytest.approx(np.median(k["round_times"]))
    assert k["time_min_ns"] == pytest.approx(min(k["round_times"]))
    assert pooled.loc["other", "rounds"] == 4


def test_perf_run_with_passes_end_to_end(tmp_path: Path) -> None:
    """`kbench run --suite perf --passes 3`: one row per case per pass, the
    passes interleaved over the sweep, and the gate reads them as passes."""
    import subprocess
    import sys
    out = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "run", "--suite", "perf", "--shapes", "smoke",
         "--realization", "gemm_scalar_f32acc", "--rounds", "6", "--max-time", "0.01",
         "--passes", "3", "--no-history", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    run = load_run(out)
    perf = run.perf()
    per_case = perf.groupby(["case", "b_form"]).size()
    assert len(per_case) > 3 and set(per_case) == {3}
    # pass-major: every case once before any case twice
    first = perf["case"].tolist()[:len(per_case)]
    assert len(set(first)) == len(set(perf["case"]))
    assert (perf["rounds"] >= 2).all()
    comp = compare_runs(run, run)
    timed = [c for c in comp.cases if c.timed]
    assert timed and all(c.passes == 3 and c.verdict == SAME for c in timed)


def test_each_pass_of_a_worker_target_runs_in_a_fresh_process(tmp_path: Path) -> None:
    """`--passes 2` on worker:host: every row names its pass and the worker
    process that timed it; the two passes ran in two different processes
    (each with a memory layout of its own), every case of a pass in one."""
    import subprocess
    import sys
    out = tmp_path / "run"
    res = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "run", "--suite", "perf", "--shapes", "smoke",
         "--target", "worker:host", "--realization", "gemm_scalar_f32acc", "--rounds", "3",
         "--max-time", "0.01", "--passes", "2", "--no-history", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    perf = load_run(out).perf()
    assert sorted(set(perf["perf_pass"].astype(int))) == [1, 2]
    procs = perf.groupby("perf_pass")["process"].agg(lambda s: set(s.astype(str)))
    assert all(len(p) == 1 and "" not in p and "nan" not in p for p in procs)
    assert procs[1] != procs[2]
    assert perf.groupby("case")["perf_pass"].nunique().eq(2).all()


def _two_runs(tmp_path: Path, factor: dict[int, float], n: int = 30,
              sd: float = 0.015) -> tuple[Run, Run]:
    """n cases of 3 passes a side, pass medians spread by sd (log); the
    candidate's case i scaled by factor[i] in every pass."""
    rng = np.random.default_rng(17)
    base_rows, cand_rows = [], []
    for i in range(n):
        size = 1e4 * 2 ** (i % 8)
        b = list(size * np.exp(rng.normal(0, sd, 3)))
        c = list(size * factor.get(i, 1.0) * np.exp(rng.normal(0, sd, 3)))
        base_rows += passes(f"c{i:02d}", b, 2 * i + 1, noise=0.0)
        cand_rows += passes(f"c{i:02d}", c, 2 * i + 2, noise=0.0)
    return pair(tmp_path, base_rows, cand_rows)


def test_a_case_that_one_process_runs_a_little_slower_does_not_fail_the_gate(
        tmp_path: Path) -> None:
    """Two processes of one build: one case 4.5% slower in every pass of the
    candidate (a process-level state no pass shows), inside the limit of 5% but
    beyond a test against no move at all. The two-run test's null is a move of
    half the limit, so the case is "same" and the gate passes; against no move
    (margin 0) its p would be below alpha."""
    base, cand = _two_runs(tmp_path, {3: 1.045}, sd=0.008)
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    assert result.passed and result.comparison.test.startswith(modt.NAME)
    assert {c.verdict for c in result.comparison.cases} == {SAME}
    b_idx, c_idx = _index(base), _index(cand)
    units = [(unit_medians(b_idx[k]), unit_medians(c_idx[k])) for k in b_idx]
    without_margin, _ = modt.moderated_tests(units)
    assert holm([p for p, _ in without_margin])[3] < 0.01


def test_a_ten_percent_slowdown_of_a_third_of_the_cases_fails_on_those_cases_only(
        tmp_path: Path) -> None:
    slowed = set(range(0, 30, 3))
    base, cand = _two_runs(tmp_path, {i: 1.10 for i in slowed})
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    cases = [f for f in result.first_look if "cases together" not in f.case]
    flagged = {int(f.case.split("/c")[1].split()[0]) for f in cases}
    assert result.passed and not result.failures
    assert flagged <= slowed and len(flagged) >= 7
    assert all("over 3 and 3 passes (moderated t on log pass medians" in f.detail
               for f in cases)


def _process_runs(tmp_path: Path, slow: float, n: int = 24, bias: float = 0.03,
                  sd: float = 0.02, neon_threads: int = 1) -> tuple[Run, Run]:
    """n cases of each of two realizations, 3 passes a side: every case of
    the candidate moved by its own process-level bias (normal, sd `bias`, the
    same in all its passes), and gemm_scalar_f32acc's by `slow` too; pass
    medians spread by sd. gemm_neon's cases run on neon_threads threads."""
    rng = np.random.default_rng(29)
    base_rows, cand_rows = [], []
    for j, (real, factor) in enumerate((("gemm_scalar_f32acc", slow), ("gemm_neon", 1.0))):
        for i in range(n):
            size = 1e4 * 2 ** (i % 6)
            b = list(size * np.exp(rng.normal(0, sd, 3)))
            shift = factor * math.exp(rng.normal(0, bias))
            c = list(size * shift * np.exp(rng.normal(0, sd, 3)))
            seed = 2 * (i + n * j)
            base_rows += passes(f"c{i:02d}", b, seed + 1, noise=0.0, realization=real)
            cand_rows += passes(f"c{i:02d}", c, seed + 2, noise=0.0, realization=real)
    for v in (*base_rows, *cand_rows):
        if v.realization == "gemm_neon":
            v.threads = neon_threads
    return pair(tmp_path, base_rows, cand_rows)


def test_a_realization_slowed_as_a_whole_fails_even_where_no_case_alone_does(
        tmp_path: Path) -> None:
    """Every case 7% slower, each also moved by its own process-level bias
    (sd 3%) and spread between passes (sd 3%): no case alone reaches Holm's
    alpha against the margin, the realization's cases together do, and the
    gate names the realization."""
    base, cand = _process_runs(tmp_path, 1.07, sd=0.03)
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    comp = result.comparison
    assert not any(c.verdict == SLOWER for c in comp.cases)
    real, other = sorted(comp.realizations, key=lambda r: r.key[3] != "gemm_scalar_f32acc")
    assert real.verdict == SLOWER and real.cases == 24 and 1.05 < real.median_ratio < 1.12
    assert other.verdict == SAME and not any("drift" in w for w in comp.warnings)
    assert result.failures == []
    assert [f.case for f in result.first_look] == ["host gemm_scalar_f32acc [24 cases together]"]
    doc = json.loads(json.dumps(gate_doc(result)))
    schema = json.loads((Path(__file__).resolve().parents[1] / "reports" / "schema"
                         / "gate.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    got = {r["realization"]: r for r in doc["realizations"]}
    assert got["gemm_scalar_f32acc"]["verdict"] == "slower"
    assert got["gemm_neon"]["verdict"] == "same"
    assert got["gemm_scalar_f32acc"]["cases"] == 24 and got["gemm_scalar_f32acc"]["label"] == (
        "host gemm_scalar_f32acc [24 cases together]")
    assert got["gemm_scalar_f32acc"]["median_ratio"] == pytest.approx(real.median_ratio)
    for r, name in ((real, "gemm_scalar_f32acc"), (other, "gemm_neon")):
        assert (got[name]["p_slower"], got[name]["p_faster"]) == pytest.approx(
            (r.p_slower, r.p_faster))
    assert got["gemm_scalar_f32acc"]["p_slower"] < 0.01 < got["gemm_neon"]["p_slower"]
    assert doc["test"] == comp.test and "per realization" in doc["test"]
    md = markdown(result)
    assert "### Realizations, their cases together (2)" in md
    assert "| host | `gemm_scalar_f32acc` | 24 |" in md and "| **possible slowdown** |" in md


def test_the_realizations_table_lists_the_slowest_first_and_names_threads(
        tmp_path: Path) -> None:
    base, cand = _process_runs(tmp_path, 0.9, neon_threads=2)  # the scalar one 10% faster
    comp = gate(base, cand, alpha=0.01, max_slowdown=0.05).comparison
    assert {r.key[4] for r in comp.realizations} == {1, 2}
    section = markdown(comp).split("### Realizations, their cases together (2)")[1]
    section = section.split("###")[0]
    rows = [line for line in section.splitlines() if line.startswith("| host |")]
    assert [line.split(" | ")[1] for line in rows] == ["`gemm_neon ×2`", "`gemm_scalar_f32acc`"]
    with_one = markdown(gate(*_process_runs(tmp_path / "one", 0.9)).comparison)
    assert "`gemm_neon`" in with_one
    assert "×" not in with_one.split("### Realizations")[1].split("###")[0]


def test_process_level_biases_of_single_cases_do_not_make_a_realization_slower(
        tmp_path: Path) -> None:
    """Identical builds, each case moved by its own process-level bias (sd
    3%): over the cases the biases are spread, not a shift, and nothing fails."""
    base, cand = _process_runs(tmp_path, 1.0)
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    reals = result.comparison.realizations
    assert result.passed and len(reals) == 2
    assert all(r.verdict == SAME and r.p_slower > 0.5 for r in reals)


def test_a_realization_needs_five_tested_cases_for_its_own_test(tmp_path: Path) -> None:
    base, cand = shifted_runs(tmp_path, 4, {i: 1.2 for i in range(4)})
    comp = gate(base, cand, max_slowdown=0.05).comparison
    assert comp.realizations == [] and "Realizations" not in markdown(comp)
    assert sum(c.verdict == SLOWER for c in comp.cases) == 4


def exact_passes(case: str, pass_rounds: list[list[float]], **kw: Any) -> list[Verdict]:
    """One row per pass with exactly these round times."""
    return [row(case, times=list(times), **kw) for times in pass_rounds]


def test_a_slowdown_exactly_at_the_limit_is_no_finding(tmp_path: Path) -> None:
    """A possible slowdown needs the gated ratio (the per-pass geometric
    means the test judged) and the pass ratio both beyond 1 + limit; either
    exactly at it is not beyond, however significant the move."""
    base = exact_passes("k", [[1e6] * 5] * 8)
    # the pass ratio exactly 1.05, the gated ratio sqrt(1.05 * 1.2)
    b, c = pair(tmp_path / "pass", base, exact_passes("k", [[1.05e6] * 3] * 4
                                                     + [[1.2e6] * 3] * 4))
    result = gate(b, c, alpha=0.05, max_slowdown=0.05)
    k = by_case(result.comparison)["k"]
    assert k.verdict == SLOWER and k.robust_ratio == 1.05
    assert k.gated_ratio == pytest.approx(math.sqrt(1.05 * 1.2))
    assert result.first_look == [] and first_look_word(k, result.comparison) == FIRST_LOOK
    assert len(gate(b, c, alpha=0.05, max_slowdown=0.049).first_look) == 1  # just inside
    # the gated ratio exactly at the limit (the limit set to it), the pass ratio beyond
    b, c = pair(tmp_path / "gated", base, exact_passes("k", [[1e6] * 5] * 2 + [[1.1e6] * 5] * 6))
    g = by_case(gate(b, c, alpha=0.05).comparison)["k"].gated_ratio
    assert g == pytest.approx(1.1 ** 0.75)
    at = gate(b, c, alpha=0.05, max_slowdown=g - 1)
    k = by_case(at.comparison)["k"]
    assert k.verdict == SLOWER and k.robust_ratio == pytest.approx(1.1) and at.first_look == []
    assert len(gate(b, c, alpha=0.05, max_slowdown=g - 1 - 1e-3).first_look) == 1


def test_a_realization_fails_only_beyond_the_limit(tmp_path: Path) -> None:
    """A realization whose cases together are slower fails the gate only
    when their median ratio exceeds 1 + limit: 4% slower (beyond the
    margin, inside the limit) passes, exactly at the limit passes, beyond
    it fails, with the realization's statistics in the failure."""
    base_rows = [r for i in range(5) for r in exact_passes(f"c{i}", [[1e6 * (i + 1)] * 3] * 3)]

    def run_of(factor: float, folder: str) -> tuple[Run, Run]:
        cand = [r for i in range(5)
                for r in exact_passes(f"c{i}", [[1e6 * (i + 1) * factor] * 3] * 3)]
        return pair(tmp_path / folder, base_rows, cand)

    inside = gate(*run_of(1.04, "inside"), alpha=0.01, max_slowdown=0.05)
    (real,) = inside.comparison.realizations
    assert real.verdict == SLOWER and real.median_ratio == pytest.approx(1.04)
    assert inside.passed, inside.failures
    b, c = run_of(1.05, "at")
    (real,) = gate(b, c, alpha=0.01, max_slowdown=0.05).comparison.realizations
    at = gate(b, c, alpha=0.01, max_slowdown=real.median_ratio - 1)
    assert (at.comparison.realizations[0].verdict, at.comparison.realizations[0].median_ratio) \
        == (SLOWER, 1 + (real.median_ratio - 1))
    assert not any("cases together" in f.case for f in at.first_look), at.first_look
    beyond = gate(b, c, alpha=0.01, max_slowdown=real.median_ratio - 1.001)
    (f,) = [f for f in beyond.first_look if "cases together" in f.case]
    assert beyond.passed and f == FirstLook("host gemm_scalar_f32acc [5 cases together]",
                                            real.median_ratio, (
        f"{real.median_ratio - 1:+.1%}: the median of its 5 cases' ratios of per-pass "
        f"geometric means (limit {real.median_ratio - 1.001:.1%}), p = 0 < 0.01 (one-sided t "
        "over the cases' log ratios against a move of 50% of the limit, Holm-adjusted with the "
        "cases)"), "")


def test_a_failed_suite_is_its_own_failure_only_without_a_failing_row(tmp_path: Path) -> None:
    """pytest's exit status != 0: a "suite" failure (run-level, its text
    saying why) unless a correctness failure already explains it; any other
    failure (a slowdown) does not."""
    rows = [row("a", suite="correctness"), *exact_passes("k", [[1e6] * 3] * 3)]
    base, cand = pair(tmp_path / "alone", rows, rows, pytest_exit_status=2)
    assert gate(base, cand).failures == [GateFailure(
        "suite", "", "the candidate's suites exited with status 2 without a failing result "
        "row (a test outside the case verdicts failed, e.g. determinism)")]
    failing = [row("a", suite="correctness", status="fail", message="wrong"),
               *exact_passes("k", [[1e6] * 3] * 3)]
    base, cand = pair(tmp_path / "row", rows, failing, pytest_exit_status=1)
    assert [f.reason for f in gate(base, cand).failures] == ["correctness"]
    slow = [row("a", suite="correctness"), *exact_passes("k", [[1.5e6] * 3] * 3)]
    base, cand = pair(tmp_path / "slow", rows, slow, pytest_exit_status=1)
    slowed = gate(base, cand)
    assert [f.reason for f in slowed.failures] == ["suite"] and len(slowed.first_look) == 1


def test_a_failing_rows_detail_is_its_status_and_message(tmp_path: Path) -> None:
    base_rows = [row("a", suite="correctness")]
    for message, detail in (("overflow past FLT_MAX", "fail: overflow past FLT_MAX"),
                            ("", "fail")):
        result = gate(*pair(tmp_path / str(len(message)), base_rows,
                            [row("a", suite="correctness", status="fail", message=message)]))
        assert [(f.reason, f.detail) for f in result.failures] == [("correctness", detail)]
