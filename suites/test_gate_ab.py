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
    # without --ab the same two runs are drift: a first look, and c5 cannot be told apart
    plain = gate(b, c, max_slowdown=0.05)
    assert plain.passed and not plain.first_look


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
    assert result.undecided == unsure
    settle = [f"kbench ab --base worker:../base/kb_worker --cand worker:host --shapes synthetic "
              f"-k '^synthetic/c{i}$' --realization gemm_scalar_f32acc --min-effect 5% "
              f"--rounds 60 --budget 240 --max-looks 8 --settle "
              f"--out runs/settle/gemm_scalar_f32acc-synthetic-c{i}" for i in (2, 7)]
    assert result.settle_commands() == settle
    strict = gate(b, c, ab=ab, strict=True)
    assert [f.reason for f in strict.failures] == ["inconclusive", "inconclusive"]
    assert strict.failures[0].detail.endswith(f"; settle it: {settle[0]} (--strict)")
    # the text and the Markdown give one command for every inconclusive case
    from kbench.cli.history import gate_text
    lines = gate_text(result).splitlines()
    assert lines[0] == "gate: PASSED"
    assert lines[1] == (f"speed, interleaved ({ab.path}) at ±5.0%: 2 inconclusive, 26 same; "
                        "2 undecided")
    assert [ln.strip() for ln in lines if ln.strip().startswith("kbench ab")] == settle
    assert ("Settle the 2 inconclusive case(s), one command each, then gate again with each "
            "folder as one more `--ab` (the later folder wins):\n\n```sh\n" + "\n".join(settle)
            + "\n```") in markdown(result)


def test_the_settle_command_is_one_bounded_command_per_case_pair(tmp_path: Path) -> None:
    """One case pair per command: its catalog, a -k matching exactly its
    CATALOG/CASE (regex characters escaped), its realization, the gate's
    limit, a bounded budget and looks, --settle and its own --out folder;
    it selects that case only when run. A case already settled (from a
    --settle folder) gets no further command."""
    import shlex

    from kbench.harness.selection import CaseFilter
    from kbench.results.abgate import (
        SETTLE_BUDGET_S,
        SETTLE_LOOKS,
        AbRun,
        AbVerdict,
        settle_command,
        settle_commands,
    )
    cmd = settle_command("worker:b w", "worker:host", "r1 cat-b/m1+n2", 0.05, 30)
    assert cmd == ("kbench ab --base 'worker:b w' --cand worker:host --shapes cat-b "
                   "-k '^cat\\-b/m1\\+n2$' --realization r1 --min-effect 5% --rounds 30 "
                   f"--budget {SETTLE_BUDGET_S:g} --max-looks {SETTLE_LOOKS} --settle "
                   "--out runs/settle/r1-cat-b-m1+n2")
    k = shlex.split(cmd)[shlex.split(cmd).index("-k") + 1]
    f = CaseFilter(k)
    assert f.matches("cat-b", "m1+n2")
    assert not f.matches("cat-b", "m1+n22") and not f.matches("cat-a", "m1+n2")
    # a catalog whose name holds a "/" or spaces (a case name never does)
    assert " --shapes team/gemm -k '^team/gemm/m1$' " in settle_command("b", "c",
                                                                         "r1 team/gemm/m1", 0.1)
    assert " --shapes 'my big cat' -k '^my\\ big\\ cat/m1$' " in settle_command(
        "b", "c", "r1 my big cat/m1", 0.1)
    first = AbRun(tmp_path / "first", {"base": "B", "cand": "C", "settings": {"rounds": 20}}, [])
    settled = AbRun(tmp_path / "s", {"base": "B", "cand": "C", "settings": {"settle": True}}, [])
    verdicts = [AbVerdict("r1 cat/a", "inconclusive", None, "", str(first.path)),
                AbVerdict("r1 cat/b", "inconclusive", None, "", str(settled.path), True),
                AbVerdict("r1 cat/c", "same", None, "", str(first.path))]
    (only,) = settle_commands(verdicts, [first, settled], 0.05)
    assert only == settle_command("B", "C", "r1 cat/a", 0.05, 20)
    assert verdicts[1].at_the_limit and not verdicts[0].at_the_limit


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
    assert (f"speed, interleaved ({ab}) at ±5.0%: 1 inconclusive, 26 same, 1 slower; "
            "1 undecided") in out.output
    assert "FAIL slowdown: gemm_scalar_f32acc synthetic/c5: interleaved" in out.output
    md = (tmp_path / "gate.md").read_text()
    assert "### Speed, interleaved (1 inconclusive, 26 same, 1 slower)" in md
    assert "| gemm_scalar_f32acc synthetic/c5 | 1.1" in md and "**slower**" in md
    assert "speed from the interleaved run(s) only" in md
    # what decides the gate leads; the two runs' times are not shown as a table
    assert md.index("### Failures") < md.index("### Speed, interleaved") < md.index("### Settings")
    assert "| gated ratio |" not in md and "Not compared: their speed comes from" in md
    assert "two-run times of 28 case(s): not compared" in out.output
    res = runner.invoke(gate_command, [str(b.path), str(c.path), "--ab", str(ab), "--json"])
    doc = json.loads(res.output)
    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))
    assert doc["interleaved"]["path"] == str(ab) and len(doc["interleaved"]["cases"]) == 28
    assert {x["verdict"] for x in doc["interleaved"]["cases"]} == {"same", "slower",
                                                                  "inconclusive"}
    # each case's gate_verdict is the gate's word: the interleaved verdict with --ab ...
    judged = {x["case"]: x["verdict"] for x in doc["interleaved"]["cases"]}
    assert {f"{x['realization']} {x['catalog']}/{x['case']}": x["gate_verdict"]
            for x in doc["cases"]} == judged
    plain = gate_doc(gate(b, c))
    assert plain["interleaved"] is None
    jsonschema.validate(plain, json.loads(SCHEMA.read_text()))
    # ... and without it a first look, never "same" and never a failure, whatever the
    # comparison's own statistical word (kept as "verdict", as compare --json has it)
    words = {x["gate_verdict"] for x in plain["cases"]}
    assert words and words <= {"speed not gated (first look)", "possible slowdown",
                                "possible speedup", "not-comparable", "missing", "new",
                                "untimed"}, words
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
    assert got["noisy"].detail.startswith(
        "inconclusive: the interval [0.500, 2.000] straddles the limit 1.050 (+5.0%); ")
    assert got["short"].detail.startswith(
        "inconclusive: too few rounds (2) for an interval at 90.00% confidence; ")


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
    assert got["layout"].detail.startswith(
        "inconclusive: the interval [1.130, 1.130] lies above the limit 1.050 (+5.0%) but its "
        "blocks of fresh processes disagree (a layout effect, not the build); ")
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
    """A case run in blocks says "its blocks ... disagree" only when its
    pooled interval lies wholly above the limit: an interval whose low end
    is exactly at 1 + limit straddles it. On the fast side there is no
    slowdown to doubt: an interval below 1 - limit whose blocks disagree is
    "not slower", and so is one whose high end is exactly at 1 - limit.
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
    disagree = "but its blocks of fresh processes disagree (a layout effect, not the build)"
    assert got["at_up"].stats.ci_low == 1.25 and got["at_down"].stats.ci_high == 0.75
    assert got["at_up"].verdict == "inconclusive"
    assert got["at_up"].stats.reason == ("the interval [1.250, 2.000] straddles the limit "
                                         "1.250 (+25.0%)")
    assert got["at_down"].verdict == "not slower"
    v = got["split_up"]
    assert v.verdict == "inconclusive" and v.stats.reason.endswith(disagree)
    assert v.stats.block_ratios[-1] == 1.0
    v = got["split_down"]
    assert v.verdict == "not slower" and "disagree" not in v.detail
    assert v.stats.block_ratios[-1] == 1.0
    assert got["slow"].verdict == "slower" and "disagree" not in got["slow"].detail
    assert got["slow"].detail == got["slow"].stats.describe(0.25)


def _interval_rows(lo: float, hi: float, n: int = 60, alpha: float = 0.01) -> list[float]:
    """Paired ratios (base 1000 ns a round) whose sign-test interval of the
    median at 1 - alpha is exactly [lo, hi]; the middle at the mean of the
    two, the tails just beyond them."""
    from kbench.results.abstats import median_ci_ranks
    a, b = median_ci_ranks(n, 1 - alpha)
    mid = (lo + hi) / 2
    ratios = ([lo * 0.99] * (a - 1) + [lo] + [mid] * (b - a - 1) + [hi]
              + [hi * 1.01] * (n - b))
    return [1000.0 * r for r in ratios]


@pytest.mark.parametrize(("lo", "hi", "verdict", "passed", "reason"), [
    (0.834, 1.018, "not slower", True,
     "the interval [0.834, 1.018] lies below the limit 1.050 (+5.0%): no slowdown past it"),
    (1.046, 1.071, "inconclusive", True,
     "the interval [1.046, 1.071] straddles the limit 1.050 (+5.0%)"),
    (0.96, 1.04, "same", True, "the interval [0.960, 1.040] lies within ±5.0%"),
    (1.06, 1.09, "slower", False, "the interval [1.060, 1.090] lies above the limit 1.050 "
     "(+5.0%)"),
    (0.85, 0.93, "faster", True, "the interval [0.850, 0.930] lies below 0.950 (-5.0%)"),
])
def test_the_verdict_is_named_by_what_the_interval_shows_at_the_limit(
        tmp_path: Path, lo: float, hi: float, verdict: str, passed: bool, reason: str) -> None:
    """The gate's own data at its 5% limit: an interval that excludes a
    slowdown past the limit passes as "not slower"; one that lies wholly
    above 1 but straddles 1.05 is "inconclusive", its reason naming the
    interval and the straddled limit; `kbench ab`'s statistics on the same
    rounds give the same words."""
    from kbench.results import abstats
    from kbench.results.abgate import AbRun
    cand = _interval_rows(lo, hi)
    rows = _rows({"k": ([1000.0] * 60, cand, None)})
    (v,) = judge_ab(AbRun(tmp_path, {}, rows), 0.05, 0.01)
    assert (v.stats.ci_low, v.stats.ci_high) == pytest.approx((lo, hi))
    assert v.verdict == verdict and v.stats.reason == reason
    assert v.detail.startswith(f"{verdict}: {reason}; paired ratio ")
    assert abstats.paired([1000.0] * 60, cand, 0.05, 0.01, 1).verdict == verdict
    b, c = drifted_runs(tmp_path / "runs", shift=1.0)
    folder = tmp_path / "ab"
    folder.mkdir()
    with (folder / "ab.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (folder / "run.json").write_text(json.dumps({"kind": "ab", "complete": True, "base": "B",
                                                 "cand": "C", "settings": {"rounds": 60}}))
    result = gate(b, c, max_slowdown=0.05, ab=load_ab(folder))
    assert result.passed == passed
    assert [f.reason for f in result.failures] == ([] if passed else ["slowdown"])
    assert len(result.settle_commands()) == (verdict == "inconclusive")


def test_a_settle_folder_given_as_a_second_ab_decides_the_case(tmp_path: Path) -> None:
    """The first interleaved run leaves c3 inconclusive (its interval straddles
    the limit); the settle run of that case pair alone, given as a second
    --ab, decides it: "slower" fails the gate, "not slower" passes; the later
    folder wins per case, and timed cases that no folder judged are listed
    as unjudged. A settle run that stays undecided is "inconclusive at the
    limit", with no further command."""
    from kbench.cli.history import gate_text
    b, c = drifted_runs(tmp_path, shift=1.0)
    first = tmp_path / "ab"
    rows = _rows({f"c{i}": ([1000.0] * 60, [1000.0] * 60, None) for i in range(N_CASES)})
    rows[3]["cand_round_times_ns"] = " ".join(f"{t:g}" for t in _interval_rows(1.046, 1.071))
    for r in rows:
        r["catalog"], r["realization"] = "synthetic", "gemm_scalar_f32acc"

    def folder(path: Path, rows: list[dict[str, str]], settle: bool = False) -> Path:
        path.mkdir()
        with (path / "ab.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        (path / "run.json").write_text(json.dumps({
            "kind": "ab", "complete": True, "base": "worker:B", "cand": "worker:host",
            "settings": {"rounds": 60, "settle": settle, "min_effect": 0.05}}))
        return path
    folder(first, rows)
    once = gate(b, c, ab=[load_ab(first)])
    verdict = {v.label: v.verdict for v in once.interleaved}
    assert verdict["gemm_scalar_f32acc synthetic/c3"] == "inconclusive" and once.passed
    (cmd,) = once.settle_commands()
    assert "-k '^synthetic/c3$'" in cmd and "--out runs/settle/" in cmd and "--settle" in cmd
    for name, (lo, hi), word, passed in (("slow", (1.06, 1.09), "slower", False),
                                         ("fine", (0.99, 1.03), "same", True),
                                         ("edge", (1.046, 1.071), "inconclusive", True)):
        settled = folder(tmp_path / name, [{**rows[3], "cand_round_times_ns": " ".join(
            f"{t:g}" for t in _interval_rows(lo, hi))}], settle=True)
        both = gate(b, c, ab=[load_ab(first), load_ab(settled)])
        got = {v.label: v for v in both.interleaved}
        assert len(got) == N_CASES and got["gemm_scalar_f32acc synthetic/c3"].verdict == word
        assert got["gemm_scalar_f32acc synthetic/c3"].source == str(settled)
        assert both.passed == passed and both.unjudged == []
        assert both.settle_commands() == []  # settled, or nothing left to settle
        if word == "inconclusive":
            assert got["gemm_scalar_f32acc synthetic/c3"].detail.startswith(
                "inconclusive at the limit after settling (60 rounds): the interval "
                "[1.046, 1.071] straddles the limit 1.050 (+5.0%)")
            assert "at the limit after settling" in markdown(both)
        # the earlier folder alone would not do: the order decides
        reverse = gate(b, c, ab=[load_ab(settled), load_ab(first)])
        assert {v.label: v.verdict for v in reverse.interleaved}[
            "gemm_scalar_f32acc synthetic/c3"] == "inconclusive"
    # the settle folder alone: the other 27 timed cases are unjudged, and said so
    alone = gate(b, c, ab=[load_ab(tmp_path / "fine")])
    assert len(alone.unjudged) == N_CASES - 1
    assert "gemm_scalar_f32acc synthetic/c0" in alone.unjudged
    text = gate_text(alone)
    assert f"  unjudged: {N_CASES - 1} timed case(s) no interleaved folder judged: " in text
    assert f"Unjudged: {N_CASES - 1} timed case(s)" in markdown(alone)


def test_kbench_ab_and_the_gate_count_one_undecided_set(tmp_path: Path) -> None:
    """`kbench ab`'s summary and `kbench gate --ab` on the folder it wrote
    judge at the same limit with the same words: one undecided count."""
    import re
    from types import SimpleNamespace

    from kbench.cli.ab import _write_csv, summary_markdown
    from kbench.harness import ab as proto

    settings = proto.AbSettings(rounds=60, min_effect=0.05, cases=4)
    intervals = [(0.834, 1.018), (1.046, 1.071), (0.99, 1.01), (1.02, 1.08)]
    real = SimpleNamespace(name="gemm_scalar_f32acc")
    ok = SimpleNamespace(realization="gemm_scalar_f32acc", status="pass", message="")
    results = []
    for i, (lo, hi) in enumerate(intervals):
        case = SimpleNamespace(name=f"c{i}", op="gemm", flops=1)
        r = proto.AbCase(SimpleNamespace(catalog="synthetic", case=case, realization=real),
                         ok, ok)  # type: ignore[arg-type]
        r.base_rounds, r.cand_rounds = [1000.0] * 60, _interval_rows(lo, hi)
        r.blocks, r.looks, r.order, r.reps = [60], 1, "b" * 60, 1
        results.append(r)
    proto.judge(results, settings)
    assert [r.stats.verdict for r in results] == ["not slower", "inconclusive", "same",
                                                  "inconclusive"]
    meta = {"kind": "ab", "complete": True, "base": "worker:B", "cand": "worker:host",
            "settings": settings.__dict__, "machine_state": {}}
    folder = tmp_path / "ab"
    folder.mkdir()
    _write_csv(folder / "ab.csv", results)
    (folder / "run.json").write_text(json.dumps(meta, default=str))
    text = summary_markdown(meta, results, settings)
    (ab_count,) = re.findall(r"; (\d+) undecided", text)
    b, c = drifted_runs(tmp_path / "runs", shift=1.0)
    out = CliRunner().invoke(gate_command, [str(b.path), str(c.path), "--ab", str(folder)])
    (gate_count,) = re.findall(r"; (\d+) undecided", out.output)
    assert ab_count == gate_count == "2", (text, out.output)
    # the same words per case, and one settle command per undecided case in both
    words = {f"gemm_scalar_f32acc synthetic/{r.job.case.name}": r.stats.verdict for r in results}
    result = gate(b, c, ab=load_ab(folder))
    assert {v.label: v.verdict for v in result.interleaved} == words
    assert "they are not regressions" not in text and "neither a pass nor a regression" in text
    commands = [ln for ln in text.splitlines() if ln.startswith("kbench ab ")]
    assert commands == result.settle_commands() and len(commands) == 2
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
