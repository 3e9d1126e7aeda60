#!/usr/bin/env bash
# The test command: lint; the suites on this machine (with the worker and
# runtime-detection suites under QEMU); the contract suite under ASan+UBSan;
# and correctness, contract and determinism suites on every emulated Arm
# target: qemu -cpu max at SVL 128/256/512/1024/2048, max with the ISA capped
# to SME1, neoverse-v1, neoverse-n1 and cortex-a53 (and the SME suites on max
# without FEAT_SME_FA64, sme_fa64=off); and the in-process path
# on emulated Arm64: kbench's aarch64 cffi module inside an aarch64 CPython
# under QEMU (our backends on the emulation catalog, the onnxruntime peer on
# its case classes with KleidiAI on and off, with accumulation fingerprints);
# and a sample of the mutation catalog (ci/mutants/) within a time budget.
# Assumes `pip install -e '.[test,ort]'` in the active Python; installs the
# cross toolchain, QEMU and the emulated Python (idempotent) and builds the
# aarch64 worker.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PY="${PYTHON:-python3}"
export KBENCH_REQUIRE_QEMU=1 KBENCH_REQUIRE_CHROMIUM=1 KBENCH_REQUIRE_ORT=1
export KBENCH_REQUIRE_QEMU_PYTHON=1

t0=$(date +%s)
step() { printf '\n== %s (at %ss) ==\n' "$*" "$(( $(date +%s) - t0 ))"; }

step "toolchain and QEMU"
bash ci/install-toolchain.sh
"$PY" -m kbench.targets.crossbuild --arch aarch64
"$PY" -m kbench.targets.crossbuild --arch host

step "emulated aarch64 Python (CPython root, aarch64 wheels, cross-built cffi module)"
PYTHON="$PY" bash ci/install-pyroot.sh

step "ruff"
"$PY" -m ruff check .

step "suites on the host"
"$PY" -m pytest suites -q -p no:cacheprovider

step "contracts under AddressSanitizer + UBSan"
bash ci/sanitize.sh

step "perf suite, report and gate, end to end (smoke catalog; no timing is judged)"
perf="$(mktemp -d)"
kbench run --suite perf --shapes smoke --rounds 4 --passes 2 --max-time 0.02 --no-history \
  --out "$perf/host"
kbench run --suite perf --shapes smoke --rounds 2 --min-round-ms 0.1 --no-history \
  --target qemu:cpu=max:svl=256 --backend sme --backend neon --out "$perf/qemu"
kbench report "$perf/host" --baseline "$perf/host" --out "$perf/report"
kbench gate "$perf/qemu" "$perf/qemu" --markdown "$perf/gate.md" > "$perf/gate.txt"  # emulated:
tail -n 2 "$perf/gate.txt"                                         # correctness only
kbench tune --shapes smoke --rounds 2 --min-round-ms 0.1 --out "$perf/tune" | tail -n 3
kbench run --suite correctness --shapes smoke --dispatch "$perf/tune/dispatch.json" \
  --no-history --out "$perf/dispatch"

step "in-process path on emulated Arm64 (qemu-python): ours, and onnxruntime with KleidiAI on/off"
pyt="$(mktemp -d)"
kbench run --target qemu-python:svl=512 --backend ort --no-history --out "$pyt/ort" | tail -n 8
kbench report "$pyt/ort" --out "$pyt/ort-report" | tail -n 1
"$PY" ci/check_fingerprints.py "$pyt/ort" "$pyt/ort-report" > "$pyt/ort-fingerprints.txt"
kbench run --target qemu-python:svl=512 --backend ort --shapes ort_classes \
  --kinds exact,normal,specials --no-history --out "$pyt/ort-classes" | tail -n 6
kbench report "$pyt/ort-classes" --out "$pyt/ort-classes-report" | tail -n 1
"$PY" ci/check_fingerprints.py "$pyt/ort-classes" "$pyt/ort-classes-report"
kbench run --target qemu-python:svl=512 --backend scalar --backend neon --backend sme \
  --shapes emulated --no-history --out "$pyt/ours" | tail -n 20

step "suites on emulated Arm targets (two groups in parallel)"
group_a=(qemu:cpu=max:svl=128 qemu:cpu=max:svl=512 qemu:cpu=max:isa=sme qemu:cpu=neoverse-n1
         qemu:cpu=max:svl=1024)
group_b=(qemu:cpu=max:svl=256 qemu:cpu=max:svl=2048 qemu:cpu=neoverse-v1 qemu:cpu=cortex-a53)
logs="$(mktemp -d)"
run_group() {
  local name="$1"; shift
  local args=()
  for t in "$@"; do args+=(--kb-target "$t"); done
  "$PY" -m pytest suites/test_correctness.py suites/test_contracts.py suites/test_determinism.py \
    -q -p no:cacheprovider --kb-shapes emulated "${args[@]}" > "$logs/$name.log" 2>&1
}
run_group a "${group_a[@]}" & pid_a=$!
run_group b "${group_b[@]}" & pid_b=$!
status=0
wait "$pid_a" || status=1
wait "$pid_b" || status=1
for g in a b; do
  echo "-- group $g --"
  grep -v '^\.*\s*\[ *[0-9]*%\]$' "$logs/$g.log" | tail -n 60
done
if [ "$status" -ne 0 ]; then
  echo "emulated targets: FAILED (full logs in $logs)"
  exit 1
fi

step "SME suites on an emulated CPU without FEAT_SME_FA64 (streaming-mode leaks trap there)"
"$PY" -m pytest suites/test_correctness.py suites/test_contracts.py suites/test_determinism.py \
  -q -p no:cacheprovider --kb-shapes emulated --kb-backend sme \
  --kb-target qemu:cpu=max:svl=512:fa64=off | tail -n 12

step "mutation sample: the pinned mutants and others rotated by commit, 6-minute budget"
# kbench mutate fails if a mutant survives; the full campaign is `kbench mutate` (README)
mut="$(mktemp -d)"
kbench mutate --sample 60 --budget 6 --quick --no-baseline --out "$mut/run" | tail -n 16

step "done"
