#!/usr/bin/env bash
# A periodic mutmut campaign over the Python half that decides verdicts and
# figures (kbench/judge, kbench/results): mutmut generates its own mutants
# (operators, constants, conditions), unlike the hand-written catalog in
# ci/mutants/, and so finds the gaps nobody thought of. Slow (thousands of
# mutants): run it now and then, never in every CI run; triage what survives
# into catalog mutants with the test that kills them, or into the list of
# known survivors in docs/mutation.md.
#
#   bash ci/mutmut.sh [PATH...]      mutate PATH (default: kbench/judge kbench/results)
#   MUTMUT_TESTS="suites/a.py ..."   the suites it runs (default: the host suites below)
#
# Needs the mutmut extra (pip install -e '.[mutmut]'). Works in a copy of the
# tracked files under build/mutmut/ (the checkout is never touched); results
# stay there: `cd build/mutmut && mutmut results` lists the survivors and
# `mutmut show NAME` prints one.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
read -r -a PATHS <<< "${*:-kbench/judge kbench/results}"
DEFAULT_TESTS="suites/test_judge_edges.py suites/test_judge_tightness.py suites/test_oracle.py
  suites/test_verdict_combination.py suites/test_input_generators.py suites/test_ab_stats.py
  suites/test_ab.py suites/test_gate_rows.py suites/test_compare.py suites/test_history_rows.py
  suites/test_report_figures.py suites/test_fingerprint.py"
read -r -a TESTS <<< "$(echo ${MUTMUT_TESTS:-$DEFAULT_TESTS})"
WORK="$REPO/build/mutmut"
mkdir -p "$WORK/build"
# the tracked files and the built native module (the suites load it), refreshed each time
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$WORK"
cp -a kbench/*.so "$WORK/kbench/" 2>/dev/null || true
tar --exclude=./mutmut --exclude=./mutation -C build -cf - . | tar -xf - -C "$WORK/build"
list() { printf '"%s", ' "$@" | sed 's/, $//'; }
cat >> "$WORK/pyproject.toml" <<EOF

[tool.mutmut]
paths_to_mutate = [$(list "${PATHS[@]/%//}")]
tests_dir = [$(list "${TESTS[@]}")]
also_copy = ["suites", "reference", "native", "build", "examples", "docs", "ci"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly", "-q"]
EOF
cd "$WORK"
nice mutmut run
mutmut results
