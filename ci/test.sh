#!/usr/bin/env bash
# The test command: lint; the suites on this machine (with the worker and
# runtime-detection suites under QEMU); the contract suite under ASan+UBSan;
# and correctness, contract and determinism suites on every emulated Arm
# target: qemu -cpu max at SVL 128/256/512/2048, max with the ISA capped
# to SME1, max without SME (SVE2.1 only, SVE vector length 256: `kbench info`
# must show SVE2.1 and no SME there; and our SVE2.1 backend over the smoke catalog
# at SVE vector length 128 and 2048), neoverse-v1, neoverse-n1 and cortex-a53 (SVL 128 and 512 over the
# default correctness catalogs with machine-code coverage, the others over the
# emulation catalog; and the SME suites on max at SVL 1024 without
# FEAT_SME_FA64, sme_fa64=off); and the in-process path
# on emulated Arm64: kbench's aarch64 cffi module inside an aarch64 CPython
# under QEMU (our backends on the emulation catalog, the onnxruntime peer on
# its case classes with KleidiAI on and off, with accumulation fingerprints);
# the example plugins (examples/plugins) on the host, qemu:svl=128 and
# qemu:svl=512 (the faulty one must be caught) and on qemu-python; the runtime-like
# example on qemu:svl=512, qemu:sme=off:vl=256 and a CPU without SME or SVE (its overread
# defect must be caught).
# The host suites include the remote targets (real ssh on loopback into an
# emulated aarch64 box, a stand-in adb) and the history on a throwaway
# PostgreSQL server; the emulated targets run through `kbench run --jobs`.
# The libFuzzer targets (ci/fuzz.sh) run 7 s each under ASan + UBSan; and a
# the whole mutation catalog (ci/mutants/) runs, two at a time, and a sample of
# machine-code mutants of the SME and portable example plugins. The
# documentation site (mkdocs.yml, docs/) is built with `mkdocs build --strict`;
# suites/test_docs.py (a host suite) regenerates every generated figure of README.md
# and docs/ and compares, and the count step checks the count tables against the
# day's counts.
# Assumes `pip install -e '.[test,ort,postgres]'` (and examples/plugins/python_peer)
# in the active Python; installs the
# cross toolchain, QEMU and the emulated Python (idempotent) and builds the
# aarch64 worker.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PY="${PYTHON:-python3}"
export KBENCH_REQUIRE_QEMU=1 KBENCH_REQUIRE_CHROMIUM=1 KBENCH_REQUIRE_ORT=1
export KBENCH_REQUIRE_QEMU_PYTHON=1
export KBENCH_REQUIRE_SSHD=1 KBENCH_REQUIRE_POSTGRES=1  # remote targets, shared history
export KBENCH_REQUIRE_EXAMPLE_PEER=1  # pip install -e examples/plugins/python_peer (.ci/run)
# the runs below write no HTML report of their own (most are followed by an explicit
# `kbench report`, which is what is tested); the wheel's smoke run and the dispatch run
# write theirs (--report), as `kbench run` does by default
export KBENCH_RUN_REPORT=0

t0=$(date +%s)
step() { printf '\n== %s (at %ss) ==\n' "$*" "$(( $(date +%s) - t0 ))"; }

step "toolchain and QEMU"
bash ci/install-toolchain.sh
"$PY" -m kbench.targets.crossbuild --arch aarch64
"$PY" -m kbench.targets.crossbuild --arch host
"$PY" -m kbench.targets.crossbuild --arch aarch64-dyn   # the worker that loads plugins
make -s -C examples/plugins all broken faults            # example plugins for this machine
make -s -C examples/plugins ARCH=aarch64 all broken faults  # ... and for Arm64

step "emulated aarch64 Python (CPython root, aarch64 wheels, cross-built cffi module)"
PYTHON="$PY" bash ci/install-pyroot.sh

step "ruff"
"$PY" -m ruff check .

step "suites on the host (pytest-xdist: one worker per core)"
# worksteal: a worker that runs out of tests takes the other's queued ones, so a
# few long end-to-end tests at the end do not leave a core idle
"$PY" -m pytest suites -q -p no:cacheprovider -n auto --dist worksteal --durations=15

step "documentation site: mkdocs build --strict (a broken link or anchor fails)"
site="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 "$PY" -m mkdocs build --strict --quiet -f mkdocs.yml -d "$site/site"
test -s "$site/site/index.html"

step "contracts under AddressSanitizer + UBSan"
bash ci/sanitize.sh

step "fuzz targets: the C API and the worker's frame decoder, 7 s each (ASan + UBSan)"
bash ci/fuzz.sh run 7

step "perf suite, report and gate, end to end (smoke catalog; no timing is judged)"
perf="$(mktemp -d)"
kbench run --suite perf --shapes smoke --rounds 4 --passes 2 --max-time 0.02 --no-history \
  --out "$perf/host"
kbench run --suite perf --shapes smoke --rounds 2 --min-round-ms 0.1 --no-history \
  --target qemu:cpu=max:svl=256 --backend sme --backend neon --count-method none \
  --out "$perf/qemu"  # instruction counts have their own step below
kbench report "$perf/host" --baseline "$perf/host" --out "$perf/report"
kbench gate "$perf/qemu" "$perf/qemu" --markdown "$perf/gate.md" > "$perf/gate.txt"  # emulated:
tail -n 2 "$perf/gate.txt"                                         # correctness only
kbench tune --shapes smoke --rounds 2 --min-round-ms 0.1 --out "$perf/tune" | tail -n 3
kbench run --suite correctness --shapes smoke --dispatch "$perf/tune/dispatch.json" \
  --no-history --report --out "$perf/dispatch"
test -s "$perf/dispatch/report/report.html"
# tuning and the dispatch table's what-ran check on emulated Arm64 as well (SVL 512: the rules
# pick SME, SME2 and NEON realizations there; emulated times only exercise the mechanism)
kbench tune --shapes smoke --target qemu:svl=512 --rounds 2 --min-round-ms 0.1 \
  --out "$perf/tune-qemu" | tail -n 2
kbench run --suite correctness --shapes smoke --target qemu:svl=512 --no-history --no-report \
  --dispatch "$perf/tune-qemu/dispatch.json" --out "$perf/dispatch-qemu" | tail -n 1
"$PY" ci/check_dispatch.py "$perf/tune-qemu/dispatch.json" "$perf/dispatch-qemu" qemu:svl=512

step "wheel: build, install in a clean venv, run from it (no checkout on the path)"
whl="$(mktemp -d)"
"$PY" -m pip wheel -q --no-deps . -w "$whl/dist"
"$PY" -m venv "$whl/venv"
"$whl/venv/bin/pip" install -q "$whl"/dist/kbench-*.whl
(cd "$whl" && "$whl/venv/bin/kbench" --version \
  && "$whl/venv/bin/kbench" catalogs > "$whl/catalogs.txt" && grep '^smoke ' "$whl/catalogs.txt" \
  && "$whl/venv/bin/kbench" run --shapes smoke --no-history --report --out "$whl/run" \
  > "$whl/run.log" && tail -n 2 "$whl/run.log" && test -s "$whl/run/results.csv" \
  && test -s "$whl/run/report/report.html")

step "instruction counts on emulated Arm: the committed baselines (SVL 128 and 512; the KleidiAI comparison sweep at 128, 256 and 512; the SVE2.1 backend at SVE vector length 128, 256 and 512), KleidiAI anchors"
cnt="$(mktemp -d)"
count_run() {  # one SVL: every SME and NEON realization on the count catalog
  kbench run --suite perf --shapes counts --target "qemu:cpu=max:svl=$1" --backend sme \
    --backend neon --rounds 1 --min-round-ms 0 --warmup 0 --no-history --out "$cnt/svl$1" \
    > "$cnt/svl$1.log" 2>&1
}
sweep_run() {  # one SVL: the SME2 MOPA GEMM on the comparison sweep
  kbench run --suite perf --shapes kleidiai_sweep --target "qemu:cpu=max:svl=$1" \
    --realization gemm_sme2_mopa_f32acc --rounds 1 --min-round-ms 0 --warmup 0 --no-history \
    --no-report --out "$cnt/sweep$1" > "$cnt/sweep$1.log" 2>&1
}
sve_run() {  # one SVE vector length: the SVE2.1 GEMM on the comparison sweep
  kbench run --suite perf --shapes kleidiai_sweep --target "qemu:cpu=max:sme=off:vl=$1" \
    --realization gemm_sve2p1_dot_f32acc --rounds 1 --min-round-ms 0 --warmup 0 --no-history \
    --no-report --out "$cnt/sve$1" > "$cnt/sve$1.log" 2>&1
}
sve_counts_run() {  # one SVE vector length: the SVE2.1 backend on the count catalog (and
  # at 512 bits its GEMV on the GEMV anchor shape, whose 32 MiB B takes most of the time)
  kbench run --suite perf --shapes counts --target "qemu:cpu=max:sme=off:vl=$1" --backend sve \
    --rounds 1 --min-round-ms 0 --warmup 0 --no-history --no-report --out "$cnt/svecounts$1" \
    > "$cnt/svecounts$1.log" 2>&1 || return 1
  [ "$1" != 512 ] || kbench run --suite perf --shapes kleidiai_anchors_gemv \
    --target qemu:cpu=max:sme=off:vl=512 --realization gemv_sve2p1_dot_f32acc --rounds 1 \
    --min-round-ms 0 --warmup 0 --no-history --no-report --out "$cnt/svegemv" \
    > "$cnt/svegemv.log" 2>&1
}
pids=()
count_run 128 & pids+=($!)
count_run 512 & pids+=($!)
for s in 128 256 512; do sweep_run "$s" & pids+=($!); done
for s in 128 256 512; do sve_run "$s" & pids+=($!); done
for s in 128 512; do sve_counts_run "$s" & pids+=($!); done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
counts_summary() { sed -n '/kbench instruction counts/,/^-\{20\}/p' "$1" | grep -v '^-\{20\}'; }
for s in 128 512; do counts_summary "$cnt/svl$s.log"; done
if [ "$status" -ne 0 ]; then
  tail -n 40 "$cnt"/svl*.log "$cnt"/sweep*.log "$cnt"/sve*.log
  echo "instruction counts: a perf run FAILED (logs in $cnt)"
  exit 1
fi
kbench baseline check "$cnt/svl128" "$cnt/svl512" --markdown "$cnt/baseline.md" \
  > "$cnt/check.txt" || { cat "$cnt/check.txt"; exit 1; }
tail -n 2 "$cnt/check.txt"
# the sweep: its own baseline, and against the best KleidiAI anchor per shape, KleidiAI
# counted as one call of its kernel over the whole problem (ours at most 0.95x on every
# shape and 0.80x in the geometric mean at each SVL, FMOPAs at most 1.01x the floor)
kbench baseline check "$cnt/sweep128" "$cnt/sweep256" "$cnt/sweep512" \
  --config reference/counts/sweep.toml --csv reference/counts/sweep.csv \
  > "$cnt/sweep-check.txt" || { cat "$cnt/sweep-check.txt"; exit 1; }
tail -n 1 "$cnt/sweep-check.txt"
kbench anchors "$cnt/sweep128" "$cnt/sweep256" "$cnt/sweep512" --best --limit 0.95 \
  --geomean-limit 0.80 --outer-limit 1.01 | tail -n 6
# the SVE2.1 backend: its baselines (the sweep at 128, 256 and 512 bits, the count catalog at
# 128 and 512, the GEMV shape at 512), and each sweep shape at most 0.85x KleidiAI's SVE2.1
# kernel called once over the whole problem, its FDOTs at the floor
kbench baseline check "$cnt/sve128" "$cnt/sve256" "$cnt/sve512" \
  --config reference/counts/sve_sweep.toml --csv reference/counts/sve_sweep.csv \
  > "$cnt/sve-check.txt" || { cat "$cnt/sve-check.txt"; exit 1; }
tail -n 1 "$cnt/sve-check.txt"
kbench baseline check "$cnt/svecounts128" "$cnt/svecounts512" --config reference/counts/sve.toml \
  --csv reference/counts/sve.csv > "$cnt/svecounts-check.txt" \
  || { cat "$cnt/svecounts-check.txt"; exit 1; }
tail -n 1 "$cnt/svecounts-check.txt"
kbench baseline check "$cnt/svegemv" --config reference/counts/sve_gemv.toml \
  --csv reference/counts/sve_gemv.csv --partial > "$cnt/svegemv-check.txt" \
  || { cat "$cnt/svegemv-check.txt"; exit 1; }
tail -n 1 "$cnt/svegemv-check.txt"
kbench anchors "$cnt/sve128" "$cnt/sve256" "$cnt/sve512" "$cnt/svegemv" \
  --table reference/counts/kleidiai_sve_sweep.toml --best --limit 0.85 --outer-limit 1.0 \
  | tail -n 5
kbench report "$cnt/svl512" --out "$cnt/svl512-report" | sed -n 1p  # shows the baseline diff
kbench run --suite perf --shapes kleidiai_anchors --target qemu:cpu=max:svl=512 \
  --realization gemm_sme2_mopa_f32acc --realization gemm_sme_mopa_f32acc \
  --realization gemm_neon_f16acc --rounds 1 --min-round-ms 0 --warmup 0 --no-history \
  --out "$cnt/anchors" > "$cnt/anchors.log" 2>&1 || { tail -n 40 "$cnt/anchors.log"; exit 1; }
counts_summary "$cnt/anchors.log"
kbench report "$cnt/anchors" --out "$cnt/anchors-report" | sed -n 1p
kbench anchors "$cnt/anchors"  # our counts / KleidiAI v1.30's, on the shapes both cover
kbench run --suite perf --shapes kleidiai_anchors_gemv --target qemu:cpu=max:svl=512 \
  --realization gemv_sme2_dot_f32acc --realization gemv_sme_f32acc --rounds 1 \
  --min-round-ms 0 --warmup 0 --no-history --out "$cnt/anchors-gemv" \
  > "$cnt/anchors-gemv.log" 2>&1 || { tail -n 40 "$cnt/anchors-gemv.log"; exit 1; }
kbench anchors "$cnt/anchors-gemv"
# the count tables of README.md and docs/, rendered from today's counts, must be the
# committed ones (a count that moved, even down, needs `kbench baseline update` or
# `python docs/gen/kbdocs.py record anchor_counts`, then `python docs/gen/kbdocs.py regen`)
"$PY" docs/gen/kbdocs.py check-counts "$cnt/svl128" "$cnt/svl512" "$cnt/anchors" "$cnt/anchors-gemv" \
  "$cnt/sweep128" "$cnt/sweep256" "$cnt/sweep512" "$cnt/sve128" "$cnt/sve256" "$cnt/sve512" \
  "$cnt/svecounts128" "$cnt/svecounts512" "$cnt/svegemv"

step "in-process path on emulated Arm64 (qemu-python): ours, and onnxruntime with KleidiAI on/off"
pyt="$(mktemp -d)"
# the peer's runs in the background (one emulated Python), ours in the foreground over
# two xdist workers (the second core is free once the peer's shorter runs are done);
# their logs are printed when both are done
ort_runs() {
  # the peer over the emulation catalog (every case with plain B, as the peer takes it);
  # the full correctness catalogs are `kbench run --target qemu-python:svl=512 --backend ort`
  kbench run --target qemu-python:svl=512 --backend ort --shapes emulated --no-history \
    --out "$pyt/ort" > "$pyt/ort.log" 2>&1 \
  && kbench report "$pyt/ort" --out "$pyt/ort-report" >> "$pyt/ort.log" 2>&1 \
  && "$PY" ci/check_fingerprints.py "$pyt/ort" "$pyt/ort-report" > "$pyt/ort-fingerprints.txt" \
  && kbench run --target qemu-python:svl=512 --backend ort --shapes ort_classes \
    --kinds exact,normal,specials --no-history --out "$pyt/ort-classes" \
    > "$pyt/ort-classes.log" 2>&1 \
  && kbench report "$pyt/ort-classes" --out "$pyt/ort-classes-report" \
    >> "$pyt/ort-classes.log" 2>&1 \
  && "$PY" ci/check_fingerprints.py "$pyt/ort-classes" "$pyt/ort-classes-report" \
    > "$pyt/ort-classes-fingerprints.txt" 2>&1
}
ort_runs & pid_ort=$!
status=0
# the in-process path itself: the smoke catalog and its derived tails (every N residue up to
# a realization's step); the same library runs the emulation and default catalogs on the
# qemu: targets below, at every SVL
kbench run --target qemu-python:svl=512 --backend scalar --backend neon --backend sme \
  --shapes smoke --jobs 2 --no-history --out "$pyt/ours" > "$pyt/ours.log" 2>&1 \
  || status=1
wait "$pid_ort" || status=1
for f in ort.log ort-fingerprints.txt ort-classes.log ort-classes-fingerprints.txt; do
  [ -e "$pyt/$f" ] && tail -n 8 "$pyt/$f"
done
tail -n 20 "$pyt/ours.log"
if [ "$status" -ne 0 ]; then
  echo "in-process path: FAILED (logs in $pyt)"
  exit 1
fi

step "plugins: the examples on the host, qemu:svl=128 and qemu:svl=512; (a) on qemu-python"
plg="$(mktemp -d)"
P='examples/plugins/build/{arch}'
plugin_targets=(--target host --target qemu:svl=128 --target qemu:svl=512)
kbench run --suite all --shapes smoke --backend plugin --plugin "$P/libexwhole.so" \
  --plugin "$P/libexsme.so" --plugin "$P/libexukref.so" "${plugin_targets[@]}" --no-history \
  --out "$plg/good" | tail -n 3
"$PY" ci/check_plugins.py good "$plg/good" host qemu:svl=128 qemu:svl=512
kbench run --suite perf --shapes smoke --backend plugin --plugin "$P/libexwhole.so" \
  --plugin "$P/libexsme.so" --target qemu:svl=512 --rounds 2 --min-round-ms 0.1 --no-history \
  --out "$plg/perf" | tail -n 3
if kbench run --suite all --shapes smoke --backend plugin --plugin "$P/libexfaulty.so" \
    "${plugin_targets[@]}" --no-history --out "$plg/faulty" > "$plg/faulty.log" 2>&1; then
  echo "the faulty plugin passed: it must be caught (log: $plg/faulty.log)"; exit 1
fi
kbench report "$plg/faulty" --out "$plg/faulty-report" | tail -n 1
"$PY" ci/check_plugins.py faulty "$plg/faulty" "$plg/faulty-report" host qemu:svl=128 qemu:svl=512
kbench run --suite correctness --shapes smoke --backend plugin --plugin "$P/libexwhole.so" \
  --target qemu-python:svl=512 --no-history --out "$plg/python" | tail -n 3
"$PY" ci/check_plugins.py good "$plg/python" qemu-python:svl=512
# the runtime-like example (docs/runtime.md): every suite on its SME2 path (SVL 512), its
# SVE2.1 path (the SVE2.1-only target at 256 bits) and its NEON path (a CPU without SME or
# SVE), with coverage to show which path's code ran; its
# planted 33-byte overread (32 declared) must be a guard-page finding naming B and its gemm
# (exact inputs only: theirs end against the guard page)
rt_targets=(--target qemu:svl=512 --target qemu:sme=off:vl=256 --target qemu:cpu=neoverse-n1)
kbench run --suite all --shapes smoke --backend plugin --plugin "$P/libexrt.so" "${rt_targets[@]}" \
  --coverage --no-history --out "$plg/runtime" | tail -n 3
"$PY" ci/check_plugins.py good "$plg/runtime" qemu:svl=512 qemu:sme=off:vl=256 \
  qemu:cpu=neoverse-n1
"$PY" ci/check_plugins.py paths "$plg/runtime" qemu:svl=512=sme2 qemu:sme=off:vl=256=sve2p1 \
  qemu:cpu=neoverse-n1=neon
if kbench run --suite correctness --shapes smoke --kinds exact --backend plugin \
    --plugin "$P/libexrt_overread33.so" --target qemu:cpu=neoverse-n1 --no-history \
    --out "$plg/overread" > "$plg/overread.log" 2>&1; then
  echo "the 33-byte overread passed: it must be caught (log: $plg/overread.log)"; exit 1
fi
"$PY" ci/check_plugins.py overread "$plg/overread" qemu:cpu=neoverse-n1

step "suites on emulated Arm targets (kbench run: one xdist worker process per free core, a target at a time each)"
# SVL 1024 runs in the next step (SME suites, without FA64): NEON and scalar kernels
# do not depend on the SVL, and 512 and 2048 bracket it here
# SVL 128 and 512 run the default correctness catalogs (and their derived tails) with
# --coverage: which instructions of our kernels and packers ran (RUN/coverage.csv); the
# gate below holds them to the committed floor (ci/coverage_floor.toml) and every unit
# to 100% over both but the listed exceptions (ci/coverage_exceptions.toml). The other
# seven targets run the emulation catalog.
# the SVE2.1-only target (a runtime's path between SME2 and NEON): the CPU it must be
kbench info --json --target qemu:sme=off:vl=256 | "$PY" -c '
import json, sys
(i,) = json.load(sys.stdin)
f = set(i["cpu_features"])
got = (i["name"], sorted(f), i["sme_vector_bits"], i["sve_vector_bits"], i["isa"])
assert {"sve2", "sve2p1"} <= f and not f & {"sme", "sme2"} and i["sme_vector_bits"] == 0, got
assert i["sve_vector_bits"] == 256 and i["isa"] == "sve2p1", got
print(i["name"] + ": SVE2.1 without SME, SVE vector length", i["sve_vector_bits"], "bits")'
emulated=(qemu:cpu=max:svl=2048 qemu:cpu=max:svl=256 qemu:cpu=max:isa=sme
          qemu:cpu=max:sme=off:vl=256 qemu:cpu=neoverse-v1 qemu:cpu=neoverse-n1
          qemu:cpu=cortex-a53)
logs="$(mktemp -d)"
targets=()
for t in "${emulated[@]}"; do targets+=(--target "$t"); done
status=0
kbench run --suite all --target qemu:cpu=max:svl=128 --target qemu:cpu=max:svl=512 --jobs 2 \
  --no-history --coverage --out "$logs/default" > "$logs/default.log" 2>&1 || status=1
kbench run --suite all --shapes emulated "${targets[@]}" --jobs 2 --no-history \
  --out "$logs/emulated" > "$logs/emulated.log" 2>&1 || status=1
# our SVE2.1 backend at the other SVE vector lengths (256 runs above; 512 on max)
kbench run --suite all --shapes smoke --backend sve --target qemu:cpu=max:sme=off:vl=128 \
  --target qemu:cpu=max:sme=off:vl=2048 --jobs 2 \
  --no-history --out "$logs/sve" > "$logs/sve.log" 2>&1 || status=1
for f in default emulated sve; do
  grep -v '^\.*\s*\[ *[0-9]*%\]$' "$logs/$f.log" \
    | sed '/kbench machine-code coverage/,/^run folder:/{/^run folder:/!d}' | tail -n 60
done
if [ "$status" -ne 0 ]; then
  echo "emulated targets: FAILED (full logs in $logs)"
  exit 1
fi
"$PY" ci/check_coverage.py "$logs/default" | tail -n 40

step "SME suites on an emulated CPU without FEAT_SME_FA64 at SVL 1024 (streaming-mode leaks trap there)"
"$PY" -m pytest suites/test_correctness.py suites/test_contracts.py suites/test_determinism.py \
  -q -p no:cacheprovider --kb-shapes emulated --kb-backend sme \
  --kb-target qemu:cpu=max:svl=1024:fa64=off | tail -n 12

step "mutation campaign: every mutant of the catalog, two at a time (8-minute cap, pinned ones always)"
# kbench mutate fails if a mutant survives (docs/mutation.md); the cap is a safety net: the
# whole catalog takes about 6 minutes here, and what a spent cap leaves is listed as not run
mut="$(mktemp -d)"
# --timeout: a kill run took at most 24 s in CI's own runs; a mutant that corrupts memory can
# hang its test process instead of crashing it, and a hang (a kill) should not hold CI 20 minutes
kbench mutate --budget 8 --lanes 2 --quick --no-baseline --timeout 180 --out "$mut/run" | tail -n 18

step "machine-code mutants: a sample of the SME and portable examples, kbench's suites beside the examples' test program"
# kbench mutate --plugin (docs/mutation.md): mutants of the example libraries' machine code in
# the instructions the suites ran, each judged by kbench's suites and by the small test program
# examples/plugins/extest (four outputs of one GEMM); a mutant that cannot be judged fails
mcm="$(mktemp -d)"
X=examples/plugins/build/aarch64
for lib in exsme exukref; do
  kbench mutate --plugin "$X/lib$lib.so" --target qemu:svl=512 --sample 6 --lanes 2 \
    --external-test "{target} $X/extest {lib}" --out "$mcm/$lib" | tail -n 7
done

step "done"
