"""`kbench gate BASE CAND --ab AB`: speed from an interleaved run only.

The two separate runs carry a run-wide shift (machine drift) that would be
28 regressions if their times were compared; the interleaved run's paired
rounds share the drift, so only the case that really slowed fails."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner
from test_compare import rounds, row, write_run

from kbench.cli.history import gate_command
from kbench.results.abgate import AbRunError, judge_ab, load_ab
from kbench.results.compare import NOT_COMPARABLE, gate, markdown
from kbench.results.json_out import gate_doc

SCHEMA = Path(__file__).resolve().parents[1] / "reports" / "schema" / "gate.schema.json"
N_CASES = 28


def write_ab(folder: Path, factors: dict[int, float], noisy: set[int] = frozenset(),
             failed: set[int] = frozenset(), n: int = 60, complete: bool = True,
             drift: float = 1.0) -> Path:
    """An interleaved run folder as `kbench ab` writes it: per case, paired
    rounds (the candidate's = the base's round times the factor, so drift
    over the run moves both), noisy cases with wildly spread pairs."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(3)
    rows = []
    for i in range(N_CASES):
        load = drift * (1 + 0.3 * rng.random(n))  # shared by both sides of each pair
        base = 1e5 * load * (1 + 0.005 * rng.standard_normal(n))
        spread = 0.5 if i in noisy else 0.005
        cand = 1e5 * load * factors.get(i, 1.0) * (1 + spread * rng.standard_normal(n))
        cand = np.abs(cand) + 1.0
        r = {"catalog": "synthetic", "case": f"c{i}", "op": "gemm",
             "realization": "gemm_scalar_f32acc", "failure": "", "verdict": "same",
             "base_round_times_ns": " ".join(f"{t:.10g}" for t in base),
             "cand_round_times_ns": " ".join(f"{t:.10g}" for t in cand)}
        if i in failed:
            r.update(failure="candidate: fail (max err/bound 3.2)", verdict="failed",
                     base_round_times_ns="", cand_round_times_ns="")
        rows.append(r)
    with (folder / "ab.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    meta = {"kind": "ab", "complete": complete, "base": "worker:../base/kb_worker",
            "cand": "worker:host", "settings": {"rounds": n}}
    (folder / "run.json").write_text(json.dumps(meta))
    return folder


def drifted_runs(tmp_path: Path, shift: float = 1.2):
    """Two separate runs of 28 cases, every candidate time +20%: drift."""
    base = [row(f"c{i}", times=rounds(1e5, i)) for i in range(N_CASES)]
    cand = [row(f"c{i}", times=rounds(shift * 1e5, 100 + i)) for i in range(N_CASES)]
    return write_run(tmp_path / "base", base), write_run(tmp_path / "cand", cand)


def test_only_the_slowed_case_fails_under_drift(tmp_path: Path) -> None:
    b, c = drifted_runs(tmp_path)
    ab = load_ab(write_ab(tmp_path / "ab", {5: 1.10}, drift=1.2))
    result = gate(b, c, max_slowdown=0.05, ab=ab)
    slow = [f for f in result.failures if f.reason == "slowdown"]
    assert [f.case for f in slow] == ["gemm_scalar_f32acc synthetic/c5"], result.failures
    assert "interleaved" in slow[0].detail and "paired ratio 1.1" in slow[0].detail
    assert len(result.failures) == 1
    # the two runs' times are not compared: every timed case says where speed came from
    assert all(x.verdict == NOT_COMPARABLE and "interleaved" in x.note
               for x in result.comparison.cases)
    verdicts = {v.label.split("/")[-1]: v.verdict for v in result.interleaved}
    assert verdicts["c5"] == "slower" and sum(v == "same" for v in verdicts.values()) == 27
    # without --ab the same two runs are drift: inconclusive, and c5 cannot be told apart
    plain = gate(b, c, max_slowdown=0.05)
    assert plain.passed and not any(f.reason == "slowdown" for f in plain.failures)


def test_an_identical_build_passes_and_a_faster_one_too(tmp_path: Path) -> None:
    b, c = drifted_runs(tmp_path, shift=1.0)
    aa = gate(b, c, ab=load_ab(write_ab(tmp_path / "aa", {})))
    assert aa.passed
    # every case decided: nothing to settle, in the text or the Markdown
    from kbench.cli.history import gate_text
    assert "Settle the" not in markdown(aa) and "settle the" not in gate_text(aa)
    assert "### Speed, interleaved (28 same)" in markdown(aa)
    fast = gate(b, c, ab=load_ab(write_ab(tmp_path / "fast", {3: 0.8})))
    assert fast.passed and {v.verdict for v in fast.interleaved} == {"same", "faster"}


def test_a_slowdown_within_the_limit_passes(tmp_path: Path) -> None:
    b, c = drifted_runs(tmp_path, shift=1.0)
    ab = load_ab(write_ab(tmp_path / "ab", {5: 1.03}))
    assert gate(b, c, max_slowdown=0.05, ab=ab).passed
    assert not gate(b, c, max_slowdown=0.02, ab=ab).passed  # the gate's own limit counts


def test_noisy_cases_are_inconclusive_and_strict_fails_them(tmp_path: Path) -> None:
    b, c = drifted_runs(tmp_path, shift=1.0)
    ab = load_ab(write_ab(tmp_path / "ab", {}, noisy={2, 7}))
    result = gate(b, c, ab=ab)
    assert result.passed
    unsure = [v for v in result.interleaved if v.verdict == "inconclusive"]
    assert sorted(v.label for v in unsure) == ["gemm_scalar_f32acc synthetic/c2",
                                               "gemm_scalar_f32acc synthetic/c7"]
    strict = gate(b, c, ab=ab, strict=True)
    assert [f.reason for f in strict.failures] == ["inconclusive", "inconclusive"]
    assert strict.failures[0].detail.endswith(
        "; settle it: kbench ab --base worker:../base/kb_worker --cand worker:host --shapes "
        "synthetic -k '^(synthetic/c2)$' --realization gemm_scalar_f32acc --rounds 120 "
        "(--strict)")
    # the text and the Markdown give one command for every inconclusive case
    from kbench.cli.history import gate_text
    settle = ("kbench ab --base worker:../base/kb_worker --cand worker:host --shapes synthetic "
              "-k '^(synthetic/c2|synthetic/c7)$' --realization gemm_scalar_f32acc --rounds 120")
    assert f"  settle the inconclusive case(s): {settle}" in gate_text(result).splitlines()
    assert ("Settle the 2 inconclusive case(s) with more rounds:\n\n```sh\n" + settle
            + "\n```") in markdown(result)


def test_the_settle_command_reruns_the_undecided_cases_as_the_run_was_made(tmp_path: Path
                                                                           ) -> None:
    """Twice the rounds; for a sequential run twice the budget, its looks and
    its gate limit; only the named cases, each catalog and realization once,
    a -k matching exactly their CATALOG/CASE (regex characters escaped); it
    selects those cases when run."""
    from kbench.harness.selection import CaseFilter
    from kbench.results.abgate import AbRun, AbVerdict, settle_command
    plain = AbRun(tmp_path, {"base": "worker:b w", "cand": "worker:host"}, [])
    assert settle_command(plain) == "kbench ab --base 'worker:b w' --cand worker:host --rounds 120"
    seq = AbRun(tmp_path, {"base": "worker:b", "cand": "worker:c", "settings": {
        "rounds": 30, "budget_s": 300.0, "looks": 4, "gate_limits": [0.05]}}, [])
    picked = [AbVerdict("r2 cat-b/m1+n2", "inconclusive", None, ""),
              AbVerdict("r1 cat-a/x", "inconclusive", None, ""),
              AbVerdict("r1 cat-b/m1+n2", "inconclusive", None, "")]
    cmd = settle_command(seq, picked)
    assert cmd == ("kbench ab --base worker:b --cand worker:c --shapes cat-a --shapes cat-b "
                   "-k '^(cat\\-a/x|cat\\-b/m1\\+n2)$' --realization r1 --realization r2 "
                   "--rounds 60 --budget 600 --max-looks 4 --gate-limit 0.05")
    import shlex
    k = shlex.split(cmd)[shlex.split(cmd).index("-k") + 1]
    f = CaseFilter(k)
    assert f.matches("cat-b", "m1+n2") and f.matches("cat-a", "x")
    assert not f.matches("cat-b", "m1+n22") and not f.matches("cat-a", "xx")
    none = AbRun(tmp_path, {}, [])
    assert settle_command(none) == "kbench ab --base BASE --cand CAND --rounds 120"
    # a catalog whose name holds a "/" (a case name never does); a budget without its looks
    odd = AbRun(tmp_path, {"base": "b", "cand": "c", "settings": {"budget_s": 60}}, [])
    cmd = settle_command(odd, [AbVerdict("r1 team/gemm/m1", "inconclusive", None, "")])
    assert cmd == ("kbench ab --base b --cand c --shapes team/gemm -k '^(team/gemm/m1)$' "
                   "--realization r1 --rounds 120 --budget 120 --max-looks 6")
    # a catalog whose name holds spaces (a realization's never does)
    cmd = settle_command(odd, [AbVerdict("r1 my big cat/m1", "inconclusive", None, ""),
                               AbVerdict("r2 my big cat/m2", "inconclusive", None, "")])
    assert cmd == ("kbench ab --base b --cand c --shapes 'my big cat' "
                   "-k '^(my\\ big\\ cat/m1|my\\ big\\ cat/m2)$' --realization r1 "
                   "--realization r2 --rounds 120 --budget 120 --max-looks 6")


def test_a_failed_or_incomplete_interleaved_run_fails(tmp_path: Path) -> None:
    b, c = drifted_runs(tmp_path, shift=1.0)
    failed = gate(b, c, ab=load_ab(write_ab(tmp_path / "f", {}, failed={4})))
    assert [(f.reason, f.case) for f in failed.failures] == [
        ("correctness", "gemm_scalar_f32acc synthetic/c4")]
    cut = gate(b, c, ab=load_ab(write_ab(tmp_path / "cut", {}, complete=False)))
    assert [f.reason for f in cut.failures] == ["incomplete"]


def test_text_markdown_and_json(tmp_path: Path) -> None:
    b, c = drifted_runs(tmp_path)
    ab = write_ab(tmp_path / "ab", {5: 1.10}, noisy={9}, drift=1.2)
    runner = CliRunner()
    out = runner.invoke(gate_command, [str(b.path), str(c.path), "--ab", str(ab),
                                       "--markdown", str(tmp_path / "gate.md")])
    assert out.exit_code == 1, out.output
    assert f"speed, interleaved ({ab}): 1 inconclusive, 26 same, 1 slower" in out.output
    assert "FAIL slowdown: gemm_scalar_f32acc synthetic/c5: interleaved" in out.output
    md = (tmp_path / "gate.md").read_text()
    assert "### Speed, interleaved (1 inconclusive, 26 same, 1 slower)" in md
    assert "| gemm_scalar_f32acc synthetic/c5 | 1.1" in md and "**slower**" in md
    assert "speed from the interleaved run below only" in md
    res = runner.invoke(gate_command, [str(b.path), str(c.path), "--ab", str(ab), "--json"])
    doc = json.loads(res.output)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    assert doc["interleaved"]["path"] == str(ab) and len(doc["interleaved"]["cases"]) == 28
    assert {x["verdict"] for x in doc["interleaved"]["cases"]} == {"same", "slower",
                                                                  "inconclusive"}
    plain = gate_doc(gate(b, c))
    assert plain["interleaved"] is None
    jsonschema.validate(plain, json.loads(SCHEMA.read_text()))
    assert "Speed, interleaved" not in markdown(gate(b, c))


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "no run.json"),
    (lambda p: (p / "run.json").write_text(json.dumps({"kind": "run"})), "not an interleaved"),
    (lambda p: (p / "run.json").write_text("{"), "unreadable"),
    (lambda p: (p / "run.json").write_text(json.dumps({"kind": "ab", "complete": True})),
     "without ab.csv"),
])
def test_a_folder_that_is_no_interleaved_run_is_a_usage_error(tmp_path: Path, make,
                                                              message: str) -> None:
    b, c = drifted_runs(tmp_path, shift=1.0)
    folder = tmp_path / "x"
    folder.mkdir()
    make(folder)
    with pytest.raises(AbRunError, match=message):
        load_ab(folder)
    out = CliRunner().invoke(gate_command, [str(b.path), str(c.path), "--ab", str(folder)])
    assert out.exit_code == 2 and message in out.output


def test_verdicts_use_the_gate_alpha_over_the_timed_cases(tmp_path: Path) -> None:
    ab = load_ab(write_ab(tmp_path / "ab", {}, failed={0}))
    verdicts = judge_ab(ab, max_slowdown=0.05, alpha=0.01)
    timed = [v for v in verdicts if v.stats is not None]
    assert len(timed) == 27
    assert all(v.stats.confidence == pytest.approx(1 - 0.01 / 27) for v in timed)


def test_each_kind_of_interleaved_row_gets_its_own_verdict_and_reason() -> None:
    """A row with a failure text, or marked failed, fails (with its text, or
    "failed to verify"), even with rounds; a row without paired rounds is
    untimed; a timed row is judged at the gate's alpha, and an inconclusive
    one says why."""
    from kbench.results.abgate import AbRun

    def r(case: str, base: str = "", cand: str = "", failure: str = "",
          verdict: str = "same") -> dict[str, str]:
        return {"catalog": "cat", "case": case, "realization": "real", "failure": failure,
                "verdict": verdict, "base_round_times_ns": base, "cand_round_times_ns": cand}

    same = " ".join(["100"] * 40)
    wide = " ".join(str(v) for v in [50, 200] * 20)
    rows = [r("text", same, same, failure="candidate: fail (err/bound 3)"),
            r("marked", same, same, verdict="failed"), r("none"), r("uneven", same, "100"),
            r("timed", same, same), r("noisy", same, wide), r("short", "100 100", "100 100")]
    got = {v.label.split("/")[1]: v for v in judge_ab(AbRun(Path("."), {}, rows), 0.05, 0.3)}
    assert [(k, v.verdict) for k, v in got.items()] == [
        ("text", "failed"), ("marked", "failed"), ("none", "untimed"), ("uneven", "untimed"),
        ("timed", "same"), ("noisy", "inconclusive"), ("short", "inconclusive")]
    assert got["text"].label == "real cat/text"
    assert got["text"].detail == "candidate: fail (err/bound 3)"
    assert got["marked"].detail == "failed to verify" and got["marked"].stats is None
    assert got["none"].detail == got["uneven"].detail == "no paired rounds"
    assert got["timed"].stats.confidence == pytest.approx(1 - 0.3 / 3)  # three timed rows
    assert got["timed"].detail == got["timed"].stats.describe(0.05)
    assert got["noisy"].detail.endswith(
        " (the interval is too wide to tell, or the minima disagree)")
    assert got["short"].detail.endswith(" (too few rounds for the interval)")


def test_an_interleaved_run_in_blocks_of_processes_is_judged_by_its_blocks() -> None:
    """ab.csv's `blocks` (rounds per pair of fresh processes): a shift that one
    block does not show is inconclusive, with the reason; blocks that do not
    add up to the rounds leave the case untimed; rows without blocks (an
    older run) are judged pooled."""
    from kbench.results.abgate import AbRun
    base = [100.0] * 45 + [200.0] * 15
    cand = [113.0] * 45 + [200.0] * 15
    b, c = " ".join(map(str, base)), " ".join(map(str, cand))

    def r(case: str, blocks: str | None) -> dict[str, str]:
        out = {"catalog": "cat", "case": case, "realization": "real", "failure": "",
               "verdict": "same", "base_round_times_ns": b, "cand_round_times_ns": c}
        if blocks is not None:
            out["blocks"] = blocks
        return out
    rows = [r("layout", "15 15 15 15"), r("agree", "15 15 15 15 "), r("pooled", None),
            r("short", "15 15"), r("garbled", "15 x 30"), r("zero", "0 60")]
    rows[1]["cand_round_times_ns"] = " ".join(map(str, [113.0] * 45 + [226.0] * 15))
    got = {v.label.split("/")[1]: v for v in judge_ab(AbRun(Path("."), {}, rows), 0.05, 0.01)}
    assert got["layout"].verdict == "inconclusive"
    assert got["layout"].detail.endswith(
        "(its blocks of fresh processes disagree: a layout effect, not the build)")
    assert "in 4 blocks (ratios 1.130 1.130 1.130 1.000)" in got["layout"].detail
    assert got["agree"].verdict == "slower"
    assert got["pooled"].verdict == "slower"  # no blocks recorded: one pair of processes
    for name, text in (("short", "15 15"), ("garbled", "15 x 30"), ("zero", "0 60")):
        assert got[name].verdict == "untimed" and got[name].stats is None
        assert got[name].detail == f"its blocks ({text}) do not add up to its 60 rounds"


def _rows(cases: dict[str, tuple[list[float], list[float], str | None]]) -> list[dict[str, str]]:
    out = []
    for case, (base, cand, blocks) in cases.items():
        r = {"catalog": "cat", "case": case, "realization": "real", "failure": "",
             "verdict": "same", "base_round_times_ns": " ".join(f"{t:g}" for t in base),
             "cand_round_times_ns": " ".join(f"{t:g}" for t in cand)}
        if blocks is not None:
            r["blocks"] = blocks
        out.append(r)
    return out


def test_a_sequential_run_is_judged_over_every_look_it_could_take() -> None:
    """m, the Bonferroni count: the timed cases, or with looks > 1 (a `kbench
    ab --budget` run, its settings in run.json) the larger of them and the
    run's cases, times the looks."""
    from kbench.results.abgate import AbRun
    same = [100.0] * 40
    rows = _rows({f"c{i}": (same, same, None) for i in range(4)})

    def confidence(settings: dict | None) -> float:
        meta = {} if settings is None else {"settings": settings}
        (v, *_) = judge_ab(AbRun(Path("."), meta, rows), 0.05, 0.01)
        return v.stats.confidence
    assert confidence(None) == pytest.approx(1 - 0.01 / 4)
    assert confidence({"looks": 1, "cases": 10}) == pytest.approx(1 - 0.01 / 4)
    assert confidence({"looks": 2, "cases": 3}) == pytest.approx(1 - 0.01 / 8)
    assert confidence({"looks": 3, "cases": 10}) == pytest.approx(1 - 0.01 / 30)
    assert confidence({"looks": 3}) == pytest.approx(1 - 0.01 / 12)


def test_the_blocks_reason_is_given_only_when_the_interval_is_past_the_limit() -> None:
    """A noisy case run in blocks says "its blocks ... disagree" only when
    its pooled interval lies wholly past the limit (up or down): an interval
    that merely reaches the limit, or straddles it, is too wide to tell.
    Every such verdict keeps its statistics."""
    from kbench.results.abgate import AbRun
    ones = [1000.0] * 60
    at_up = [1250.0] * 20 + [2000.0] * 40  # the interval's low end exactly 1 + 0.25
    at_down = [750.0] * 20 + [500.0] * 40  # the high end exactly 1 - 0.25
    loaded = [1000.0] * 50 + [2000.0] * 10  # the last, short block ran under load
    split_up = [1400.0] * 50 + [2000.0] * 10  # past 1.25, but that block at 1.0
    split_down = [600.0] * 50 + [2000.0] * 10
    slow = [2000.0] * 60
    rows = _rows({"at_up": (ones, at_up, "20 20 20"), "at_down": (ones, at_down, "20 20 20"),
                  "split_up": (loaded, split_up, "25 25 10"),
                  "split_down": (loaded, split_down, "25 25 10"),
                  "slow": (ones, slow, "20 20 20")})
    got = {v.label.split("/")[1]: v for v in judge_ab(AbRun(Path("."), {}, rows), 0.25, 0.01)}
    disagree = "(its blocks of fresh processes disagree: a layout effect, not the build)"
    wide = "(the interval is too wide to tell, or the minima disagree)"
    assert got["at_up"].stats.ci_low == 1.25 and got["at_down"].stats.ci_high == 0.75
    for name in ("at_up", "at_down"):
        assert got[name].verdict == "inconclusive" and got[name].detail.endswith(wide), name
    for name in ("split_up", "split_down"):
        v = got[name]
        assert v.verdict == "inconclusive" and v.detail.endswith(disagree), name
        assert v.stats is not None and v.stats.block_ratios[-1] == 1.0
    assert got["slow"].verdict == "slower" and "disagree" not in got["slow"].detail
    assert got["slow"].detail == got["slow"].stats.describe(0.25)


def test_the_comparison_frame_holds_every_case_field(tmp_path: Path) -> None:
    """Comparison.frame(): one row per case, the key's columns, then each
    compared field under its own name (the report's gate table reads it)."""
    from kbench.results.compare import KEY
    b, c = drifted_runs(tmp_path, shift=1.0)
    comp = gate(b, c).comparison
    frame = comp.frame()
    fields = ["base_status", "cand_status", "base_median_ns", "cand_median_ns", "base_rounds",
              "cand_rounds", "ratio", "p_slower", "p_faster", "pass_ratio", "passes", "verdict",
              "note", "limit"]
    assert list(frame.columns) == [*KEY, *fields] and len(frame) == len(comp.cases) == N_CASES
    for (_, got), case in zip(frame.iterrows(), comp.cases, strict=True):
        assert tuple(got[k] for k in KEY) == tuple(case.key)
        for f in fields:
            want = getattr(case, f)
            assert got[f] == want or (want != want and got[f] != got[f]), f


def test_the_gate_json_carries_every_figure_of_the_comparison(tmp_path: Path) -> None:
    """`kbench gate --json`: each case's figures as the comparison holds them
    (non-finite ones null), both runs with their history ids, the count
    deltas with their regressions, and each interleaved case's interval."""
    import json

    from kbench.results.json_out import gate_doc, number
    b, c = drifted_runs(tmp_path, shift=1.0)
    result = gate(b, c, ab=load_ab(write_ab(tmp_path / "ab", {5: 1.10})))
    doc = json.loads(json.dumps(gate_doc(result, (7, 9))))
    assert doc["schema"] == "kbench/gate/1" and doc["passed"] is False
    assert doc["base"]["history_id"] == 7 and doc["candidate"]["history_id"] == 9
    assert doc["base"]["path"] == result.comparison.base.path
    assert doc["candidate"]["path"] == result.comparison.cand.path
    for got, case in zip(doc["cases"], result.comparison.cases, strict=True):
        for f in ("base_median_ns", "cand_median_ns", "ratio", "pass_ratio", "p_slower",
                  "p_faster", "limit"):
            assert got[f] == number(getattr(case, f)), f
        assert got["base_median_ns"] is not None and got["cand_median_ns"] is not None
    (slow,) = [v for v in doc["interleaved"]["cases"] if v["verdict"] == "slower"]
    stats = next(v.stats for v in result.interleaved if v.verdict == "slower")
    assert (slow["median_ratio"], slow["ci_low"], slow["ci_high"]) == (
        stats.median_ratio, stats.ci_low, stats.ci_high)
    assert 1.05 < slow["ci_low"] <= slow["median_ratio"] <= slow["ci_high"]
    assert number(float("nan")) is None and number(float("inf")) is None
    assert number(True) == 1 and number(3) == 3 and number("2.5") == 2.5 and number("x") is None


def test_the_compare_json_and_markdown_list_each_count_delta(tmp_path: Path) -> None:
    import json

    from kbench.results.compare import compare_runs
    from kbench.results.json_out import comparison_doc
    rows_b = [row("c1", times=rounds(1e5, 1)), row("c2", times=rounds(1e5, 2))]
    rows_c = [row("c1", times=rounds(1e5, 3)), row("c2", times=rounds(1e5, 4))]
    for r, n in ((rows_b[0], 1000.0), (rows_c[0], 1200.0), (rows_b[1], 500.0),
                 (rows_c[1], 500.0)):
        r.count_call, r.count_kernel = n, n / 2
    comp = compare_runs(write_run(tmp_path / "b", rows_b), write_run(tmp_path / "c", rows_c))
    doc = json.loads(json.dumps(comparison_doc(comp)))
    assert doc["schema"] == "kbench/compare/1"
    got = {d["case"]: d for d in doc["instructions"]}
    assert got["c1"]["regression"] is True and got["c1"]["ratio"] == 1.2
    assert got["c1"]["base"]["call"] == 1000.0 and got["c1"]["candidate"]["call"] == 1200.0
    assert got["c2"]["regression"] is False and got["c2"]["verdict"] == "same"
    assert doc["instructions_tally"] == {"more": 1, "same": 1}
    text = markdown(comp)
    assert text.startswith("## kbench compare\n")
    assert "\n\n### Instruction counts (1 more, 1 same)\n\n| target | realization |" in text
    assert "… and 1 more counted case(s)." in markdown(comp, max_rows=1)
    assert "more counted case" not in text
    c1 = got["c1"]
    assert set(c1) == {"target", "catalog", "case", "realization", "label", "verdict",
                       "regression", "ratio", "nondeterministic", "base", "candidate"}
    assert (c1["target"], c1["catalog"], c1["realization"], c1["nondeterministic"]) == (
        "host", "synthetic", "gemm_scalar_f32acc", "")
    assert c1["label"] == "host gemm_scalar_f32acc synthetic/c1"
