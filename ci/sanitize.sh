#!/usr/bin/env bash
# Builds the native library with AddressSanitizer and UBSan as a separate
# extension module and runs the contract, native, API-robustness and plugin
# ABI suites against it (the plugin suite: kbench's plugin loader and drivers,
# in process). Any sanitizer report aborts the run (non-zero exit); an
# allocation too large to make returns NULL (numpy's MemoryError, which the
# API turns into OutOfMemory) instead of aborting.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$REPO/build/sanitize"
PY="${PYTHON:-python3}"
CC="${CC:-gcc}"
mkdir -p "$BUILD"
cd "$REPO"
"$PY" - "$BUILD" <<'PYEOF'
import sys
from kbench.native.build import make_ffibuilder
flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=all", "-O1", "-g"]
ffi = make_ffibuilder("_kbench_native_sanitized", extra_flags=flags, extra_link=flags[:1], absolute=True)
ffi.compile(tmpdir=sys.argv[1], verbose=False)
PYEOF
ASAN_LIB="$($CC -print-file-name=libasan.so)"
UBSAN_LIB="$($CC -print-file-name=libubsan.so)"
echo "sanitize: running the contract and native suites under ASan + UBSan"
LD_PRELOAD="$ASAN_LIB $UBSAN_LIB" \
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1" \
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
KBENCH_NATIVE=_kbench_native_sanitized PYTHONPATH="$BUILD${PYTHONPATH:+:$PYTHONPATH}" \
  "$PY" -m pytest suites/test_contracts.py suites/test_native.py suites/test_determinism.py \
  suites/test_plugin_abi.py \
  suites/test_robust_api.py \
  -q -p no:cacheprovider --kb-shapes smoke "$@"
