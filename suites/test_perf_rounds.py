"""Run folders with millions of timed rounds are folders kbench reads back.

A busy machine once gave pytest-benchmark's calibration a slow round, so a
14 us case got 35,125 rounds of one call: its round_times_ns cell (211,094
characters) was over the csv module's field limit, and report, history
--add, compare and gate all refused the folder. The rounds a case keeps are
now bounded (kbench.harness.perf.bounded_rounds: consecutive rounds merged
into longer ones), and the reader takes cells of any length (folders written
before the bound, A/B tables). The millions of rounds are constructed, not
timed: nothing here depends on this machine's speed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from kbench.cli.main import main
from kbench.harness.perf import MAX_ROUNDS, bounded_rounds, with_times
from kbench.judge.verdict import Verdict
from kbench.results.identity import checkout
from kbench.results.runfolder import load_run
from kbench.results.store import RunWriter

MILLIONS = 3_000_001  # rounds of one call each, as an unbounded calibration would give
RAW = 60_000  # rounds per cell of a folder written before the bound


def _case(name: str) -> Verdict:
    return Verdict(case=name, op="gemm", shape="m8n8k8", kind="uniform", target="host",
                   backend="scalar", realization="gemm_scalar_f32acc", kernel="matmul_scalar",
                   accum="fp32", k=8, m=8, n=8, b_form="plain", vector_bits=0, status="pass",
                   catalog="synthetic", suite="perf", flops=1024, perf_pass=1)


def _rounds(seed: int, n: int = MILLIONS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 14_000.0 * (1 + 0.05 * rng.standard_normal(n))


def _folder(path: Path, verdicts: list[Verdict]) -> Path:
    w = RunWriter(path, {"host": "box", "machine": "x86_64", "git_commit": "0123456789ab",
                         "checkout": checkout(),  # a run of this checkout, as kbench run's
                         "date": "2025-01-01T00:00:00+00:00", "command_line": "kbench run",
                         "targets": {"host": {"emulated": False, "arch": "x86_64"}}})
    w.add_all(verdicts)
    w.close(complete=True)
    return path


def test_bounded_rounds_merges_consecutive_rounds_as_longer_rounds() -> None:
    times = _rounds(1)
    kept, reps = bounded_rounds(times.tolist(), 1)
    merge = -(-MILLIONS // MAX_ROUNDS)
    assert len(kept) == -(-MILLIONS // merge) <= MAX_ROUNDS and reps == merge
    # each kept round is the mean of its rounds: the total time is the same
    assert sum(kept[:-1]) * merge + kept[-1] * (MILLIONS - merge * (len(kept) - 1)) \
        == pytest.approx(float(times.sum()), rel=1e-9)
    assert kept[0] == pytest.approx(float(times[:merge].mean()))
    assert kept[-1] == pytest.approx(float(times[merge * (len(kept) - 1):].mean()))
    few = [3.0, 1.0, 2.0]
    assert bounded_rounds(few, 4) == (few, 4)  # at most MAX_ROUNDS: unchanged
    assert bounded_rounds([1.0, 3.0, 5.0, 7.0, 9.0], 2, cap=2) == ([3.0, 8.0], 6)


def test_with_times_keeps_at_most_max_rounds_and_says_so() -> None:
    v = with_times(_case("c"), _rounds(2).tolist(), 1, None)
    assert v.rounds == len(v.round_times_ns) <= MAX_ROUNDS
    assert v.reps_per_round == -(-MILLIONS // MAX_ROUNDS)
    assert f"{MILLIONS:,} rounds timed, kept as {v.rounds:,} rounds" in v.message
    assert v.time_median_ns == pytest.approx(14_000.0, rel=0.01)
    assert len(v.to_dict()["round_times_ns"]) < 131_072 // 8  # far under the csv limit


@pytest.fixture(scope="module")
def millions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two perf folders: `bounded` as kbench run writes them now, one case timed
    in millions of rounds; `raw` with every round in its cell, as a run before
    the bound wrote it (cells of hundreds of thousands of characters)."""
    root = tmp_path_factory.mktemp("rounds")
    bounded = _folder(root / "bounded", [  # one case of millions of rounds, two of fewer
        with_times(_case(f"c{i}"), _rounds(10 + i, MILLIONS if i == 0 else 4000).tolist(), 1,
                   None) for i in range(3)])
    raw = []
    for i in range(3):  # cells of 360,000 characters, over the csv module's default limit
        v = _case(f"c{i}")
        times = _rounds(20 + i, RAW)
        v.rounds, v.reps_per_round, v.round_times_ns = len(times), 1, times.tolist()
        v.time_median_ns, v.time_min_ns = float(np.median(times)), float(times.min())
        v.time_mean_ns, v.time_stdev_ns = float(times.mean()), float(times.std(ddof=1))
        raw.append(v)
    return bounded, _folder(root / "raw", raw)


@pytest.mark.parametrize("which", ["bounded", "raw"])
def test_a_folder_of_millions_of_rounds_is_read_by_every_command(
        millions: tuple[Path, Path], which: str, tmp_path: Path) -> None:
    folder = dict(zip(("bounded", "raw"), millions, strict=True))[which]
    run = load_run(folder)
    assert len(run.perf()) == 3 and not run.defects
    assert len(run.results["round_times"].iloc[0]) == (
        RAW if which == "raw" else run.results["rounds"].iloc[0])
    db = str(tmp_path / "h.sqlite")
    runner = CliRunner()
    report = runner.invoke(main, ["report", str(folder), "--out", str(tmp_path / "rep")])
    assert report.exit_code == 0, report.output
    assert (tmp_path / "rep" / "report.html").is_file()
    again = tmp_path / "again"  # the same run twice in the history: latest~1 and latest
    shutil.copytree(folder, again)
    for f in (folder, again):
        added = runner.invoke(main, ["history", "--add", str(f), "--db", db])
        assert added.exit_code == 0, added.output
    compared = runner.invoke(main, ["compare", "latest~1", "latest", "--db", db, "--json"])
    assert compared.exit_code == 0, compared.output
    doc = json.loads(compared.stdout)
    assert len(doc["cases"]) == 3 and all(c["ratio"] == 1.0 for c in doc["cases"]), doc
    gated = runner.invoke(main, ["gate", str(folder), str(folder)])
    assert gated.exit_code == 0, gated.output


def test_an_ab_table_with_long_round_cells_is_read(tmp_path: Path) -> None:
    from kbench.results.abgate import load_ab
    folder = tmp_path / "ab"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"kind": "ab", "complete": True}))
    cell = " ".join(["14000"] * 60_000)  # 360,000 characters
    (folder / "ab.csv").write_text("catalog,case,realization,verdict,base_round_times_ns\n"
                                   f"smoke,c,r,same,{cell}\n")
    rows = load_ab(folder).rows
    assert len(rows) == 1 and len(rows[0]["base_round_times_ns"]) == len(cell)


def test_a_real_perf_run_keeps_at_most_max_rounds(tmp_path: Path, monkeypatch) -> None:
    """`kbench run --suite perf` on a case that pytest-benchmark times in
    one-call rounds (--min-round-ms 0: no calibration to longer rounds), at
    least --rounds of them and as many as --max-time allows, keeps at most
    MAX_ROUNDS of them, merged, and says how many it took."""
    import kbench.harness.perf as perf
    cap = 4  # a smaller bound, which --rounds 10 (at least 10 rounds) always crosses
    monkeypatch.setattr(perf, "MAX_ROUNDS", cap)
    res = CliRunner().invoke(main, [
        "run", "--suite", "perf", "--shapes", "smoke", "-k", "/m1_n17_k33$",
        "--realization", "gemm_scalar_f32acc", "--min-round-ms", "0", "--rounds", "10",
        "--max-time", "0.02", "--no-history", "--no-report", "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    row = load_run(tmp_path / "run").perf().iloc[0]
    assert 0 < row["rounds"] <= cap and len(row["round_times"]) == row["rounds"]
    taken = int(row["message"].split(" rounds timed")[0].replace(",", "").split()[-1])
    assert taken >= 10 and row["reps_per_round"] == -(-taken // cap)


def test_a_run_whose_report_is_not_written_exits_1(tmp_path: Path, monkeypatch) -> None:
    import kbench.results.report as report

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(report, "build_report", broken)
    res = CliRunner().invoke(main, ["run", "--suite", "correctness", "--shapes", "smoke",
                                    "--backend", "scalar", "--kinds", "exact", "-k", "m1_n17",
                                    "--no-history", "--report", "--out", str(tmp_path / "r")])
    assert res.exit_code == 1, res.output
    assert res.stderr.strip().splitlines()[-1] == (
        "kbench run: report not written ([Errno 28] No space left on device); exit status 1")
    ok = CliRunner().invoke(main, ["run", "--suite", "correctness", "--shapes", "smoke",
                                   "--backend", "scalar", "--kinds", "exact", "-k", "m1_n17",
                                   "--no-history", "--no-report", "--out", str(tmp_path / "n")])
    assert ok.exit_code == 0, ok.output  # --no-report: not asked for, not a failure
