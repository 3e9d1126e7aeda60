#!/usr/bin/env bash
# The test command: lint, the suites on this machine, and the sanitizer run.
# Assumes `pip install -e '.[test]'` has been done in the active Python.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PY="${PYTHON:-python3}"

step() { printf '\n== %s ==\n' "$*"; }

step "ruff"
"$PY" -m ruff check .

step "suites on the host"
"$PY" -m pytest suites -q -p no:cacheprovider

step "contracts under AddressSanitizer + UBSan"
bash ci/sanitize.sh
