"""Every place kbench records a skip, and why each one means "does not apply
here": a skip cannot fail a run (not even under --strict-plugins), so a wrong
result seen anywhere must be a failed verdict, never a skip. This test finds
every statement that makes a skip (a skip verdict, pytest.skip, a skip mark)
in the package and in the suites `kbench run` runs, and fails on one that is
not listed here with its reason: a new skip is reviewed before it lands.

The plugin contract probes (kbench/harness/probes.py) map their "not
applicable" finding to a skip; that module's findings are reviewed with
it, not here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("test_targets.py", "test_correctness.py", "test_determinism.py",
          "test_contracts.py", "test_plugin_probes.py", "test_plugin_packers.py",
          "test_perf.py", "test_dispatch_table.py", "conftest.py")
MAKES_A_SKIP = re.compile(r"pytest\.skip\(|mark\.skip\(|\(\s*\w+\s*,\s*SKIP\s*,"
                          r"|status\s*=\s*SKIP\b|:\s*SKIP\b")

# (file, the statement) -> why it is "not applicable here"
REVIEWED = {
    ("kbench/harness/runner.py",
     'return _verdict(job, SKIP, f"{want.name} does not take this case")'):
        "the case is outside the realization's declared shape class (operator, form of B, "
        "M limit, 3x3s1 class, groups): nothing is called; run.json lists these cases",
    ("kbench/harness/pytest_plugin.py",
     "metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(reason=why_empty))],"):
        "an empty parametrization (no plugin that packs B, no dispatch table, perf not "
        "asked for, filters that select no case) is one test skipped saying why; an empty "
        "case selection also makes the run exit 5",
    ("suites/test_correctness.py", "pytest.skip(verdict.message)"):
        "only the runner's skip verdict above (a case its realization does not take)",
    ("suites/test_plugin_probes.py", "pytest.skip(verdict.message)"):
        "only a probe's 'not applicable' finding (kbench/harness/probes.py)",
    ("suites/test_determinism.py", 'pytest.skip(f"no cache-blocked realization on {spec}")'):
        "the check is for cache-blocked realizations; the target has none",
    ("suites/test_contracts.py", 'pytest.skip(f"{spec} is unavailable (test_targets fails it)")'):
        "an unreachable target: test_targets records its error verdict, which fails the run",
    ("suites/test_determinism.py",
     'pytest.skip(f"{spec} counts no heap blocks (only a worker interposes the allocator)")'):
        "the scratch check measures heap blocks, and this target counts none (the in-process "
        "host, qemu-python): nothing is called",
    ("kbench/harness/scratch.py",
     'return [runner.job_verdict(job, SKIP, f"scratch: heap not measured on {spec}: its calls "'):
        "the realization runs where no allocator is interposed (ours and the peers in the "
        "host target's own process, beside plugins in its worker): nothing is called",
    ("kbench/harness/scratch.py", 'return HeapJudgement(status=SKIP, message=f"heap {why}")'):
        "a call of the check that the worker did not count (its note says why, e.g. a worker "
        "built without the accounting): there is nothing to judge",
    ("suites/test_contracts.py",
     "pytest.skip(\"the filters select no realization of kbench's own backends: their \""):
        "a run of plugins or peers only: the contract cases are of kbench's own backends",
}


def _statements() -> dict[tuple[str, str], int]:
    files = [p for p in (ROOT / "kbench").rglob("*.py") if p.name != "probes.py"
             and p.parent.name != "judge"]  # judge/verdict.py defines the statuses
    files += [ROOT / "suites" / name for name in SUITES]
    found: dict[tuple[str, str], int] = {}
    for path in files:
        for line in path.read_text().splitlines():
            if MAKES_A_SKIP.search(line):
                key = (str(path.relative_to(ROOT)), line.strip())
                found[key] = found.get(key, 0) + 1
    return found


def test_every_skip_is_reviewed_as_not_applicable() -> None:
    found = _statements()
    unreviewed = sorted(set(found) - set(REVIEWED))
    assert not unreviewed, ("a statement that records a skip, not reviewed: say why it means "
                            "'does not apply here' in REVIEWED, or make it a failure: "
                            f"{unreviewed}")
    assert found[("suites/test_contracts.py",
                  'pytest.skip(f"{spec} is unavailable (test_targets fails it)")')] == 2


def test_the_audit_finds_a_new_skip() -> None:
    """The pattern sees each way a skip is made (so the audit can fail)."""
    for line in ["    pytest.skip('x')", "return _verdict(job, SKIP, 'wrong result')",
                 "v = Verdict(status=SKIP)", "STATUS = {WRONG: SKIP}",
                 "@pytest.mark.skip(reason='later')"]:
        assert MAKES_A_SKIP.search(line), line
    for line in ["if v.status == SKIP:", "from kbench.judge.verdict import PASS, SKIP",
                 "rows = [v for v in verdicts if v.status != SKIP]"]:
        assert not MAKES_A_SKIP.search(line), line
