"""kbench: verification and benchmarking of FP16 GEMM and convolution kernels.

The public API: gemm, gemm_batch, pack_b, conv2d, backends, realizations,
cpu_info; errors derive from KbenchError (contract errors: ContractViolation)."""

from .api import (
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
    version,
)
from .errors import (
    ContractViolation,
    InvalidArgument,
    KbenchError,
    OutOfMemory,
    SizeOverflow,
    Unsupported,
)

__all__ = [
    "ContractViolation", "ConvParams", "GemmOperands", "InvalidArgument", "KbenchError",
    "OutOfMemory", "PackedB", "Realization", "Selector", "SizeOverflow", "Unsupported",
    "backends", "conv2d", "cpu_info", "gemm", "gemm_batch", "pack_b", "realizations", "version",
]
