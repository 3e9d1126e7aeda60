"""kbench: verification and benchmarking of FP16 GEMM and convolution kernels.

The public API: gemm, gemm_batch, pack_b, conv2d, backends, realizations,
cpu_info; errors derive from KbenchError (contract errors: ContractViolation).
The module behind it is kbench.native.api (`from kbench import api` also
works).

The package follows the data, in layers; a module imports only from its own
layer or those before it (suites/test_layout.py checks it):

    errors    typed errors (KbenchError and the status codes behind them)
    native    the cffi build and loader, the Python API, call-level types, layouts
    judge     oracle, error models, verdicts, accumulation fingerprints
    problems  catalogs, problem descriptions, input generators
    peers     other libraries' kernels (onnxruntime)
    targets   target specs and engines: in-process, worker, emulated Python, cross builds
    results   run folders, history, comparison and gate, summary, report
    harness   job runner, contract cases, perf timing, tuning, the pytest plugin
    cli       the click commands
"""

from __future__ import annotations

from typing import Any

from kbench.errors import (
    ContractViolation,
    InvalidArgument,
    KbenchError,
    OutOfMemory,
    SizeOverflow,
    Unsupported,
)

# The API (numpy, the native module) loads on first use, so that `import
# kbench` (and the command line, which imports much more) starts light and
# Ctrl-C during start-up ends the command without a traceback.
_API_NAMES = ("ConvParams", "GemmOperands", "PackedB", "Realization", "Selector", "backends",
              "conv2d", "cpu_info", "gemm", "gemm_batch", "pack_b", "realizations", "version")


def __getattr__(name: str) -> Any:
    if name == "api" or name in _API_NAMES:
        from kbench.native import api
        return api if name == "api" else getattr(api, name)
    raise AttributeError(f"module 'kbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ContractViolation", "ConvParams", "GemmOperands", "InvalidArgument", "KbenchError",
    "OutOfMemory", "PackedB", "Realization", "Selector", "SizeOverflow", "Unsupported", "api",
    "backends", "conv2d", "cpu_info", "gemm", "gemm_batch", "pack_b", "realizations", "version",
]
