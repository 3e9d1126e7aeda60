"""The regression gate's and the comparison's Markdown (the CI job summary)
and the instruction-count table, whole, on fixed synthetic runs: every
verdict and failure reason, the ordering of the rows, the truncation at
max_rows, units from ns to s, threads, emulated targets, the interleaved
section, machine drift with and without --strict. The expected texts
(suites/data/gate_markdown/) were read line by line against the runs they
come from (see each scenario); a change of wording or figures shows here as
a diff to review. After such a change, `python suites/test_gate_markdown.py`
writes the texts the code renders now over them: read `git diff` before
committing it."""

from __future__ import annotations

from pathlib import Path

from test_compare import passes, row, write_run
from test_gate_ab import drifted_runs, write_ab

from kbench.results.abgate import load_ab
from kbench.results.compare import CaseComparison, compare_runs, gate, markdown
from kbench.results.count_compare import compare_counts, failure_detail, markdown_table


def every_verdict(tmp: Path) -> tuple[str, str]:
    base_rows = [*passes("slow", [1e6] * 3, 1), *passes("fast", [2e6] * 3, 2),
                 *passes("steady", [5e5] * 3, 3), *passes("gone", [3e3] * 3, 4),
                 *passes("one", [1e6], 5), *passes("tiny", [800.0] * 3, 6),
                 row("checked", suite="correctness"), row("broken", suite="correctness")]
    cand_rows = [*passes("slow", [1.3e6] * 3, 11), *passes("fast", [1.4e6] * 3, 12),
                 *passes("steady", [5e5] * 3, 13), *passes("fresh", [7e9] * 3, 14),
                 *passes("one", [1e6], 15), *passes("tiny", [800.0] * 3, 16),
                 row("checked", suite="correctness"),
                 row("broken", suite="correctness", status="fail",
                     message="max err|bound 3.5\nat (0, 1)")]
    base = write_run(tmp / "base", base_rows)
    cand = write_run(tmp / "cand", cand_rows)
    return markdown(gate(base, cand, alpha=0.01, max_slowdown=0.05), max_rows=5), \
        markdown(compare_runs(base, cand))


def threads_and_emulated(tmp: Path) -> str:
    wide_b, wide_c = passes("wide", [4e6] * 3, 7), passes("wide", [4e6] * 3, 17)
    for v in (*wide_b, *wide_c):
        v.threads = 2
    emu_b = passes("emu", [9e6] * 3, 8, target="qemu:svl=512", emulated=True)
    emu_c = passes("emu", [9e6] * 3, 18, target="qemu:svl=512", emulated=True)
    targets = {"host": {"emulated": False}, "qemu:svl=512": {"emulated": True}}
    base = write_run(tmp / "base", [*wide_b, *emu_b], targets=targets)
    cand = write_run(tmp / "cand", [*wide_c, *emu_c], targets=targets)
    return markdown(gate(base, cand))


def interleaved(tmp: Path) -> str:
    ab = load_ab(write_ab(tmp / "ab", {0: 1.3, 1: 0.8}, noisy={2}, failed={3}))
    base, cand = drifted_runs(tmp / "runs")
    return markdown(gate(base, cand, ab=ab), max_rows=6)


def drift(tmp: Path) -> tuple[str, str]:
    b = write_run(tmp / "db", [r for i in range(10) for r in passes(f"d{i}", [1e5] * 3, 30 + i)])
    c = write_run(tmp / "dc", [r for i in range(10) for r in passes(f"d{i}", [1.2e5] * 3, 50 + i)])
    return markdown(gate(b, c, strict=True), max_rows=3), markdown(gate(b, c), max_rows=2)


def counts() -> tuple[str, list[str]]:
    def cr(case: str, call: float, kernel: float, pack_b: float | None = None) -> dict:
        d = {"target": "qemu:svl=512", "catalog": "cat", "case": case,
             "realization": "gemm_sme2", "count_call": call, "count_kernel": kernel}
        if pack_b is not None:
            d["count_pack_b"] = pack_b
        return d
    b = [cr("grew", 1000, 800, 50), cr("shrank", 2000, 1500), cr("same", 300, 200),
         cr("gone", 40, 30), cr("up_tiny", 100000, 90000), cr("from_zero", 100, 80, 0),
         cr("one", 1, 1)]
    c = [cr("grew", 1012, 812, 50), cr("shrank", 1900, 1400), cr("same", 300, 200),
         cr("new", 70, 60), cr("up_tiny", 100400, 90400), cr("from_zero", 150, 80, 50),
         cr("one", 2, 2)]
    comp = compare_counts(b, c)
    return "\n".join(markdown_table(comp, max_rows=4)), [
        f"{d.label} | {d.verdict} | {failure_detail(d, comp.limit)}" for d in comp.deltas]


GOLD = Path(__file__).resolve().parent / "data" / "gate_markdown"


def _gold(name: str) -> str:
    return (GOLD / f"{name}.md").read_text()


def rendered(tmp: Path) -> dict[str, str]:
    """Every expected text's name and what the code renders now, as the tests compare it
    (each scenario in a folder of its own, shown as TMP)."""
    def at(name: str, make):
        folder = tmp / name
        folder.mkdir()
        got = make(folder)
        return tuple(t.replace(str(folder), "TMP") for t in got) if isinstance(got, tuple) \
            else got.replace(str(folder), "TMP")
    gate_md, compare_md = at("every", every_verdict)
    strict, lax = at("drift", drift)
    table, details = counts()
    out = {"every_gate": gate_md, "every_compare": compare_md,
           "threads": at("threads", threads_and_emulated),
           "interleaved": at("interleaved", interleaved), "drift_strict": strict, "drift": lax}
    return {**out, "counts_table": table, "counts_detail": "\n".join(details)}


def test_a_gate_and_a_comparison_with_every_verdict(tmp_path: Path) -> None:
    gate_md, compare_md = every_verdict(tmp_path)
    assert gate_md.replace(str(tmp_path), "TMP") == _gold("every_gate")
    assert compare_md.replace(str(tmp_path), "TMP") == _gold("every_compare")


def test_threads_and_an_emulated_target(tmp_path: Path) -> None:
    assert threads_and_emulated(tmp_path).replace(str(tmp_path), "TMP") == _gold("threads")


def test_speed_from_an_interleaved_run(tmp_path: Path) -> None:
    assert interleaved(tmp_path).replace(str(tmp_path), "TMP") == _gold("interleaved")


def test_machine_drift_inconclusive_and_strict(tmp_path: Path) -> None:
    strict, lax = drift(tmp_path)
    assert strict.replace(str(tmp_path), "TMP") == _gold("drift_strict")
    assert lax.replace(str(tmp_path), "TMP") == _gold("drift")


def test_the_instruction_count_table_and_failure_details() -> None:
    table, details = counts()
    assert table == _gold("counts_table")
    assert "\n".join(details) == _gold("counts_detail")


def test_the_count_table_orders_regressions_then_verdicts_then_growth() -> None:
    """Every row shown when they fit (the "more" line only past max_rows):
    regressions first, then more, missing, fewer, same, new; within one
    verdict the larger ratio first; a case counted on one side only shows
    "–" for the other."""
    from kbench.results.count_compare import _md, fmt_count

    def cr(case: str, call: float) -> dict:
        return {"target": "qemu:svl=512", "catalog": "cat", "case": case,
                "realization": "gemm_sme2", "count_call": call, "count_kernel": call / 2}
    b = [cr("same", 300), cr("fewer_a", 1000), cr("fewer_b", 1000), cr("more_small", 100000),
         cr("gone", 40), cr("reg_a", 1000), cr("reg_b", 1000)]
    c = [cr("same", 300), cr("fewer_a", 900), cr("fewer_b", 500), cr("more_small", 100001),
         cr("new", 70), cr("reg_a", 1100), cr("reg_b", 1500)]
    comp = compare_counts(b, c)
    table = markdown_table(comp, max_rows=len(comp.deltas))
    cases = [line.split(" | ")[2] for line in table[2:]]
    assert cases == ["reg_b", "reg_a", "more_small", "gone", "fewer_a", "fewer_b", "same", "new"]
    assert not any(line.startswith("\n…") for line in table)
    new = next(line for line in table if " | new | " in line)
    assert new.split(" | ")[3:5] == ["–", "70"]
    gone = next(line for line in table if " | gone | " in line)
    assert gone.split(" | ")[3:5] == ["40", "–"]
    cut = markdown_table(comp, max_rows=len(comp.deltas) - 1)
    assert cut[-1] == "\n… and 1 more counted case(s)." and len(cut) == 2 + len(comp.deltas)
    assert fmt_count(float("nan")) == "–" and fmt_count(1234567.4) == "1,234,567"
    assert _md("a|b\nc") == "a\\|b c"


def _case(verdict: str, ratio: float, case: str):
    from kbench.results.compare import CaseComparison
    key = ("perf", "host", "gemm", "cat", case, "uniform", "gemm_x", 1)
    return CaseComparison(key, "pass", "pass", 1000.0, 1000.0 * ratio, 3, 3, ratio, 0.5, 0.5,
                          verdict, timed=True)


def test_the_timing_table_orders_by_the_gated_ratio() -> None:
    """The two-run table is sorted by the statistic the gate judged (the
    ratio of per-pass geometric means; a case not tested: its robust ratio),
    largest first, cases without one last, whatever their verdict."""
    import math

    from kbench.results.compare import _perf_table
    nan = float("nan")
    cases = [_case("weird", 1.0, "w"), _case("new", nan, "n"), _case("not-comparable", nan, "nc"),
             _case("same", 1.0, "s"), _case("faster", 0.5, "f1"), _case("faster", 0.8, "f2"),
             _case("inconclusive", 0.7, "i"), _case("missing", nan, "m"),
             _case("slower", 1.2, "s1"), _case("slower", 1.5, "s2")]
    tested = CaseComparison(("perf", "host", "gemm", "cat", "g", "uniform", "gemm_x", 1),
                            "pass", "pass", 1000.0, 1000.0, 3, 3, 1.0, 0.5, 0.5, "same",
                            timed=True, log_ratio=math.log(1.3))  # gated 1.3, medians 1.0
    table = _perf_table([*cases, tested], max_rows=len(cases) + 1)
    assert [line.split(" | ")[2] for line in table[2:]] == [
        "s2", "g", "s1", "w", "s", "f2", "i", "f1", "n", "nc", "m"]
    assert "| 1.300 (+30.0%) | 1.000 (+0.0%) |" in table[3]
    assert not any("more timed case" in line for line in table)
    assert table[-1] != "" and _perf_table(cases, max_rows=9)[-1] == \
        "\n… and 1 more timed case(s)."


def test_times_take_the_largest_unit_they_reach() -> None:
    from kbench.results.compare import _fmt_ns
    assert [_fmt_ns(x) for x in (999.0, 999.6, 1e3, 999_999.0, 1e6, 999_999_999.0, 1e9,
                                 2.5e9, float("nan"))] == [
        "999 ns", "1 µs", "1 µs", "1 ms", "1 ms", "1 s", "1 s", "2.5 s", "–"]


def test_a_history_reference_is_an_id_latest_or_a_commit() -> None:
    from kbench.results.runref import is_history_ref
    for ref in ("12", "0", "latest", "latest~3", "abcd", "ABCDEF0123", "a" * 40):
        assert is_history_ref(ref), ref
    for ref in ("latest~x", "abc", "run-1", "", "a" * 41, "latest3", "./runs/a"):
        assert not is_history_ref(ref), ref


def test_the_gate_json_carries_p_values_and_a_failed_interleaved_case(tmp_path: Path) -> None:
    import json

    from kbench.results.json_out import gate_doc, number
    base = write_run(tmp_path / "base", [*passes("slow", [1e6] * 3, 1),
                                         *passes("fast", [2e6] * 3, 2)])
    cand = write_run(tmp_path / "cand", [*passes("slow", [1.3e6] * 3, 11),
                                         *passes("fast", [1.4e6] * 3, 12)])
    result = gate(base, cand, alpha=0.01, max_slowdown=0.05)
    doc = json.loads(json.dumps(gate_doc(result)))
    for got, case in zip(doc["cases"], result.comparison.cases, strict=True):
        for f in ("pass_ratio", "p_slower", "p_faster"):
            assert got[f] == number(getattr(case, f)) and got[f] is not None, f
    b, c = drifted_runs(tmp_path / "runs")
    failed = gate(b, c, ab=load_ab(write_ab(tmp_path / "ab", {}, failed={3})))
    cases = json.loads(json.dumps(gate_doc(failed)))["interleaved"]["cases"]
    (broken,) = [v for v in cases if v["verdict"] == "failed"]
    assert broken["median_ratio"] is None and broken["ci_low"] is None
    assert broken["ci_high"] is None


def test_the_expected_texts_are_exactly_the_rendered_ones(tmp_path: Path) -> None:
    # no stale file in the folder, none missing (the regeneration below writes these)
    assert sorted(p.stem for p in GOLD.glob("*.md")) == sorted(rendered(tmp_path))


if __name__ == "__main__":  # regenerate the expected texts (see the module's docstring)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for name, text in rendered(Path(d)).items():
            (GOLD / f"{name}.md").write_text(text)
            print(f"wrote {GOLD / name}.md")
