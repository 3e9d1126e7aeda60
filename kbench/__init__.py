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

from kbench.errors import (
    ContractViolation,
    InvalidArgument,
    KbenchError,
    OutOfMemory,
    SizeOverflow,
    Unsupported,
)
from kbench.native import api
from kbench.native.api import (
    ConvParams,
    GemmOperands,
    PackedB,
    Realization,
    Selector,
    backends,
    conv2d,
    cpu_info,
    gemm,
    gemm_batch,
    pack_b,
    realizations,
    verify_packed,
    version,
)

__all__ = [
    "ContractViolation", "ConvParams", "GemmOperands", "InvalidArgument", "KbenchError",
    "OutOfMemory", "PackedB", "Realization", "Selector", "SizeOverflow", "Unsupported", "api",
    "backends", "conv2d", "cpu_info", "gemm", "gemm_batch", "pack_b", "realizations",
    "verify_packed", "version",
]
