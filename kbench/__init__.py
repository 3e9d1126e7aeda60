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

__all__ = [
    "ContractViolation", "ConvParams", "GemmOperands", "InvalidArgument", "KbenchError",
    "Limits", "OutOfMemory", "PackedB", "Realization", "Selector", "SizeOverflow",
    "Unsupported", "WorkLimit", "api",
    "backends", "conv2d", "cpu_info", "gemm", "gemm_batch", "pack_b", "realizations",
    "payload_checksum", "verify_packed", "version",
]

_FROM_ERRORS = {"ContractViolation", "InvalidArgument", "KbenchError", "OutOfMemory",
                "SizeOverflow", "Unsupported", "WorkLimit"}


def __getattr__(name: str) -> object:
    """The public names, imported on first use (numpy and the native library
    load only when the API is used, not for `kbench --version`)."""
    import importlib
    if name in _FROM_ERRORS:
        return getattr(importlib.import_module("kbench.errors"), name)
    if name == "api":
        return importlib.import_module("kbench.native.api")
    if name in __all__:
        return getattr(importlib.import_module("kbench.native.api"), name)
    raise AttributeError(f"module 'kbench' has no attribute {name!r}")
