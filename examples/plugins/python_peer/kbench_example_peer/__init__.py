"""An example kbench peer (example (d) of examples/plugins): FP16 GEMM as numpy
computes it in FP32, registered in the entry-point group `kbench.peers` under
the name `npf32` (see pyproject.toml). Installed, it shows up in `kbench info`
and `kbench run` beside onnxruntime with no change to kbench.

It implements the peer protocol of kbench.peers: available /
unavailable_reason, realizations, gemm, conv. It declares FP32 accumulation
(numpy's float32 matmul: FP32 sums in an order BLAS chooses); kbench judges it
under that model and fingerprints what it really does."""

from __future__ import annotations

from typing import Any

import numpy as np

from kbench.errors import InvalidArgument, Unsupported
from kbench.native.api import Realization
from kbench.native.calls import CallResult
from kbench.peers.timing import time_calls

NAME = "npf32_matmul"
BACKEND = "npf32"  # the entry point's name


def _matrix(buf: Any, rows: int, cols: int, ld: int, name: str) -> np.ndarray:
    """The [rows, cols] FP16 matrix with row stride ld (elements) inside buf."""
    if not isinstance(buf, np.ndarray) or buf.dtype != np.float16:
        raise InvalidArgument(f"{name}: must be a float16 array", name)
    if ld < cols:
        raise InvalidArgument(f"{name}: leading dimension {ld} < {cols}", name)
    if buf.ndim == 2 and buf.strides == (ld * 2, 2):
        return buf[:rows, :cols]
    flat = buf.reshape(-1)
    return np.lib.stride_tricks.as_strided(flat, (rows, cols), (ld * 2, 2))


class NumpyF32Peer:
    """numpy's FP32 matmul on FP16 operands, as a kbench peer."""

    def available(self) -> bool:
        return True

    def unavailable_reason(self) -> str:
        return ""

    def realizations(self) -> list[Realization]:
        return [Realization(name=NAME, backend=BACKEND, kernel=f"numpy {np.__version__} "
                            "float32 matmul (example peer)", op="gemm", isa="scalar",
                            accum="fp32", k_per_rounding=1, bforms=("plain",), vector_bits=0,
                            threads=1, peer=True)]

    def gemm(self, m: int, n: int, k: int, problems: list[Any], selector: Any = None,
             timing: Any = None) -> CallResult:
        calls = []
        for i, p in enumerate(problems):
            if p.b_is_packed:
                raise Unsupported(f"problems[{i}].b: {NAME} takes plain B only",
                                  f"problems[{i}].b")
            a = _matrix(p.a, m, k, p.lda, f"problems[{i}].a").astype(np.float32)
            b = _matrix(p.b, k, n, p.ldb, f"problems[{i}].b").astype(np.float32)
            c = _matrix(p.c, m, n, p.ldc, f"problems[{i}].c")
            bias = None if p.bias is None else p.bias[:n].astype(np.float32)
            calls.append((a, b, c, bias, float(p.clamp_min), float(p.clamp_max)))

        def once() -> list[np.ndarray]:
            out = []
            for a, b, _, bias, lo, hi in calls:
                with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN, as asked
                    y = a @ b
                if bias is not None:
                    y = y + bias
                out.append(np.clip(y, lo, hi).astype(np.float16))
            return out

        times: list[float] = []
        reps = 0
        if timing is None:
            results = once()
        else:
            last: list[list[np.ndarray]] = []
            times, reps = time_calls(lambda: last.__setitem__(slice(None), [once()]), timing)
            results = last[0]
        for (_, _, c, *_), y in zip(calls, results, strict=True):
            c[...] = y
        return CallResult(self.realizations()[0], times, reps)

    def conv(self, *args: Any, **kwargs: Any) -> CallResult:
        raise Unsupported(f"peer: {BACKEND} computes GEMM only", "peer")
