#!/usr/bin/env bash
# A periodic mutmut campaign over the Python half that decides verdicts and
# figures (kbench/judge, kbench/results): mutmut generates its own mutants
# (operators, constants, conditions), unlike the hand-written catalog in
# ci/mutants/, and so finds the gaps nobody thought of. Slow (thousands of
# mutants): run it now and then, never in every CI run; triage what survives
# into catalog mutants with the test that kills them, or into the list of
# known survivors in docs/mutation.md.
#
#   bash ci/mutmut.sh [PATH...]      mutate PATH, a package folder or a module
#                                    (default: kbench/judge kbench/results)
#   bash ci/mutmut.sh PATH... -- NAME...
#                                    rerun only the mutants NAME (globs allowed), e.g. a
#                                    campaign's survivors after the tests that should kill them
#   MUTMUT_CHILDREN=N                mutants run in parallel (default: 2)
#   MUTMUT_TESTS="suites/a.py ..."   the suites it runs (default: the host suites below)
#   MUTMUT_K="EXPR"                  a pytest -k expression applied to every run (default:
#                                    not the chromium tests, not the catalog check that reads the
#                                    source mutmut rewrites, not the pytest-benchmark command that
#                                    imports kbench from outside the copy; empty: none): tests that
#                                    drive a browser or a subprocess are invisible to mutmut's
#                                    per-function test map and only slow each mutant
#   MUTMUT_WORK=DIR                  its work folder (default: build/mutmut), so campaigns over
#                                    different paths can be kept side by side
#   MUTMUT_PROGRESS=FILE             the kills and survivors carried across work folders and
#                                    checkouts (default: ci/mutmut_progress.json; empty:
#                                    none): read into the mutants a work folder has not run
#                                    yet (a work folder whose test selection changed starts
#                                    afresh: mutmut would reset its results after the read),
#                                    written back every 5 minutes and at the end, so a
#                                    campaign longer than one sitting resumes in a fresh
#                                    checkout; a result is carried only for the function it
#                                    was observed on (ci/mutmut_progress.py); carried
#                                    survivors are rerun by naming them after "--"
#
# Each mutant's tests run fastest first (suites/kb_mutmut_order.py, by the durations
# mutmut recorded), so a mutant a quick test kills stops there (pytest -x).
#
# Needs the mutmut extra (pip install -e '.[mutmut]'). Works in a copy of the
# tracked files under build/mutmut/ (the checkout is never touched); results
# stay there: `cd build/mutmut && mutmut results` lists the survivors and
# `mutmut show NAME` prints one.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
ARGS=("$@") PATHS=() NAMES=()
for i in "${!ARGS[@]}"; do  # PATH... [-- MUTANT_NAME...]
  if [ "${ARGS[$i]}" = "--" ]; then NAMES=("${ARGS[@]:$((i + 1))}"); break; fi
  PATHS+=("${ARGS[$i]}")
done
[ ${#PATHS[@]} -gt 0 ] || PATHS=(kbench/judge kbench/results)
DEFAULT_TESTS="suites/test_judge_edges.py suites/test_judge_tightness.py suites/test_oracle.py
  suites/test_verdict_combination.py suites/test_input_generators.py suites/test_ab_stats.py
  suites/test_ab.py suites/test_gate_rows.py suites/test_compare.py suites/test_history_rows.py
  suites/test_report_figures.py suites/test_fingerprint.py suites/test_fingerprint_contract.py
  suites/test_oracle_terms.py suites/test_verdict_mutants.py suites/test_numbers.py
  suites/test_robust_verdicts.py suites/test_gate_ab.py suites/test_gate_details.py
  suites/test_gate_markdown.py suites/test_noise_floor.py suites/test_counts.py
  suites/test_winograd_magnitude.py suites/test_history.py suites/test_report.py
  suites/test_report_views.py suites/test_run_integrity.py suites/test_baseline_config.py
  suites/test_count_floor.py suites/test_machine_state.py suites/test_runfolder_frames.py
  suites/test_store_metadata.py suites/test_anchor_math.py suites/test_history_integrity.py
  suites/test_report_tables.py suites/test_history_shared.py suites/test_interop.py
  suites/test_json_refs.py suites/test_mutation.py suites/test_properties.py
  suites/test_plugin_counts.py suites/test_robust_runs.py suites/test_plugin_report.py
  suites/test_modt.py suites/test_compare_edges.py suites/test_compare_verdicts.py
  suites/test_runfolder_reader.py suites/test_anchor_tables.py suites/test_mutation_tables.py
  suites/test_report_errors.py suites/test_report_context.py suites/test_run_writer.py
  suites/test_history_db.py suites/test_report_small_tables.py suites/test_report_count_tables.py
  suites/test_report_rows.py suites/test_count_compare.py"
read -r -a TESTS <<< "$(echo ${MUTMUT_TESTS:-$DEFAULT_TESTS})"
WORK="${MUTMUT_WORK:-$REPO/build/mutmut}"
MUTMUT_K="${MUTMUT_K-not chromium and not test_every_mutant_applies_cleanly and not test_pytest_benchmark_compare_shows_kbench_per_call_times}"
mkdir -p "$WORK/build"
# the tracked files and the built native module (the suites load it), refreshed each time
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$WORK"
cp -a kbench/*.so "$WORK/kbench/" 2>/dev/null || true
tar --exclude='./mutmut*' --exclude=./mutation -C build -cf - . | tar -xf - -C "$WORK/build"
list() { printf '"%s", ' "$@" | sed 's/, $//'; }
# PATH is a package folder (every module of it mutated) or one module (.py)
GLOBS=()
for p in "${PATHS[@]}"; do
  case "$p" in *.py) GLOBS+=("$p") ;; *) GLOBS+=("${p%/}/*") ;; esac
done
# the whole kbench package is the source tree (mutants/kbench is a complete package,
# so `import kbench` is the package, not a namespace of the mutated folders); only the
# given paths are mutated
cat >> "$WORK/pyproject.toml" <<EOF

[tool.mutmut]
source_paths = ["kbench/"]
only_mutate = [$(list "${GLOBS[@]}")]
pytest_add_cli_args_test_selection = [$(list "${TESTS[@]}")]
also_copy = ["suites", "reference", "reports", "native", "build", "examples", "docs", "ci", "setup.py", "mkdocs.yml"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:randomly", "-q"${MUTMUT_K:+, \"-k\", \"$MUTMUT_K\"}]
EOF
# mutmut resets every result of a work folder whose test selection or pytest arguments
# changed, after the carried results were read in; start such a folder's mutants
# afresh instead, so the carried results of unchanged functions still apply
CONFIG="$(sed -n '/^\[tool.mutmut\]/,$p' "$WORK/pyproject.toml")"
if [ -f "$WORK/.mutmut-config" ] && [ -d "$WORK/mutants" ] \
   && [ "$CONFIG" != "$(cat "$WORK/.mutmut-config")" ]; then
  echo "mutmut.sh: the test selection changed since this work folder's last campaign:" \
       "its results start afresh (carried results apply)"
  rm -rf "$WORK/mutants"
fi
printf '%s\n' "$CONFIG" > "$WORK/.mutmut-config"
PROGRESS="${MUTMUT_PROGRESS-$REPO/ci/mutmut_progress.json}"
# the commit the copy was taken at (the checkout may move on while the campaign runs)
COMMIT="$(git describe --always --dirty --abbrev=7)"
cd "$WORK"
if [ -n "$PROGRESS" ]; then
  python "$REPO/ci/mutmut_progress.py" restore "$WORK" --progress "$PROGRESS"
  save() { python "$REPO/ci/mutmut_progress.py" save "$WORK" --progress "$PROGRESS" \
             --commit "$COMMIT" || true; }
  ( while sleep 300; do save; done ) &
  SAVER=$!
  trap 'kill $SAVER 2>/dev/null; save' EXIT
  trap 'exit 143' TERM INT
fi
# mutant names (or globs) as arguments after the paths, separated by "--", rerun those only
nice mutmut run --max-children "${MUTMUT_CHILDREN:-2}" "${NAMES[@]}"
mutmut results
