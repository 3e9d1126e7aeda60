#!/usr/bin/env bash
# Installs the emulated aarch64 CPython that runs kbench in process under
# qemu-aarch64 (kbench/targets/pyroot.py), idempotently: Debian bookworm's arm64
# CPython 3.11 unpacked into .tools/aarch64-python/root (private apt state,
# the machine's apt untouched), aarch64 wheels of numpy, cffi, onnx and
# onnxruntime pinned to the active Python's versions, and kbench's cffi module
# cross-compiled into build/pyext/aarch64 (rebuilt when native/ changes).
# A second run reads the manifest and does nothing.
# Needs ci/install-toolchain.sh first (clang-19, lld-19, aarch64 sysroot, QEMU).
# Install folder: $KBENCH_PYROOT, default $KBENCH_TOOLS/aarch64-python (<repo>/.tools/...).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
PY="${PYTHON:-python3}"
"$PY" -m kbench.targets.pyroot "$@"
