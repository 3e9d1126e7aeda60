#!/usr/bin/env bash
# The test command: lint; the suites on this machine (with the worker and
# runtime-detection suites under QEMU); the contract suite under ASan+UBSan;
# and correctness, contract and determinism suites on every emulated Arm
# target: qemu -cpu max at SVL 128/256/512/2048, max with the ISA capped to
# SME1, neoverse-v1, neoverse-n1 and cortex-a53.
# Assumes `pip install -e '.[test]'` in the active Python; installs the
# cross toolchain and QEMU (idempotent) and builds the aarch64 worker.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PY="${PYTHON:-python3}"
export KBENCH_REQUIRE_QEMU=1

t0=$(date +%s)
step() { printf '\n== %s (at %ss) ==\n' "$*" "$(( $(date +%s) - t0 ))"; }

step "toolchain and QEMU"
bash ci/install-toolchain.sh
"$PY" -m kbench.crossbuild --arch aarch64
"$PY" -m kbench.crossbuild --arch host

step "ruff"
"$PY" -m ruff check .

step "suites on the host"
"$PY" -m pytest suites -q -p no:cacheprovider

step "contracts under AddressSanitizer + UBSan"
bash ci/sanitize.sh

step "suites on emulated Arm targets"
targets=(
  qemu:cpu=max:svl=128 qemu:cpu=max:svl=256 qemu:cpu=max:svl=512 qemu:cpu=max:svl=2048
  qemu:cpu=max:isa=sme qemu:cpu=neoverse-v1 qemu:cpu=neoverse-n1 qemu:cpu=cortex-a53
)
args=()
for t in "${targets[@]}"; do args+=(--kb-target "$t"); done
"$PY" -m pytest suites/test_correctness.py suites/test_contracts.py suites/test_determinism.py \
  -q -p no:cacheprovider --kb-shapes emulated "${args[@]}"

step "done"
