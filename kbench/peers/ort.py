"""onnxruntime as a peer backend: FP16 MatMul and Conv through small ONNX
graphs built in memory, one InferenceSession per shape (cached in the
OrtPeer instance).

GEMM: `C = Clip(MatMul(A, B) + bias, lo, hi)` in FP16 (opset 17). The Add
is left out without a bias, the Clip when both bounds are infinite, and an
infinite bound is not passed (Clip's min and max are optional inputs). The
bounds are FP16 initializers of the graph, as in a deployed model; A, B and
bias are graph inputs, so nothing is pre-packed for a given B (the peer
takes plain B only, like a call of ours with plain B).

Convolution: ONNX Conv is NCHW with OIHW weights, so the NHWC input is
transposed to NCHW and the HWIO filter [kh, kw, c_in/groups, c_out] to OIHW
[c_out, c_in/groups, kh, kw] in numpy before the call, and the NCHW output
back into the caller's NHWC buffer after it. Pads are passed in ONNX order
[top, left, bottom, right].

What runs: ORT's CPU execution provider with full graph optimization. On
Arm64 with FP16 arithmetic this reaches MLAS's FP16 kernels (KleidiAI where
ORT uses it); where ORT has no FP16 kernel for an op (x86) it inserts Casts
and computes in FP32. The peer probes ORT's optimized graph once and says
which in the realization's kernel string (`OrtPeer.graph_ops`). Since the
accumulation is not ours to know, both realizations declare the looser
model (FP16 accumulation, one rounding per product): the verdicts' max ULP
and exact fraction show what the library really does.

KleidiAI: on Arm64, onnxruntime (1.29 and newer) hands some FP16 MatMul
and Conv work to KleidiAI's micro-kernels. There the peer offers each
realization twice: as shipped (`ort_matmul_f16`, `ort_conv_f16`) and with
the session option `mlas.disable_kleidiai=1` (`..._nokleidiai`), so a run
shows both paths side by side. Which path a case really took is not
reported by ORT; kbench.fingerprint infers it from the output bits.

Timing: `time.perf_counter_ns` around `InferenceSession.run` (see
kbench.peers); the transposes and copies above are outside the timed region.
"""

from __future__ import annotations

import functools
import math
import re
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from kbench.errors import InternalError, InvalidArgument, KbenchError, Unsupported
from kbench.native.api import RawProblem, Realization, Selector
from kbench.native.calls import CallResult, ConvDesc, Timing
from kbench.peers.timing import time_calls

MIN_VERSION = (1, 29)
OPSET = 17
IR_VERSION = 8  # the IR of opset 17
PROVIDERS = ("CPUExecutionProvider",)
GEMM_NAME = "ort_matmul_f16"
CONV_NAME = "ort_conv_f16"
NO_KLEIDIAI = "_nokleidiai"  # name suffix: session option mlas.disable_kleidiai=1
BACKEND = "ort"


def kleidiai_switch() -> bool:
    """Whether this machine's onnxruntime can have KleidiAI to switch off (Arm64)."""
    import platform
    return platform.machine().lower() in ("aarch64", "arm64")


@dataclass(frozen=True)
class _Modules:
    ort: ModuleType | None
    onnx: ModuleType | None
    version: str
    reason: str  # why the peer is unavailable, "" when it is available


@functools.cache
def _modules() -> _Modules:
    """onnxruntime and onnx, imported once."""
    try:
        import onnxruntime
    except ImportError:
        return _Modules(None, None, "", "onnxruntime is not installed "
                        "(pip install 'kbench[ort]')")
    version = str(getattr(onnxruntime, "__version__", "0"))
    found = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if found < MIN_VERSION:
        need = ".".join(map(str, MIN_VERSION))
        return _Modules(None, None, version, f"onnxruntime {version} is older than {need}")
    try:
        import onnx
    except ImportError:
        return _Modules(None, None, version, "onnx is not installed (pip install 'kbench[ort]')")
    return _Modules(onnxruntime, onnx, version, "")


def _bound(value: float, infinite: float) -> np.float16 | None:
    """A clamp bound as FP16, None when it bounds nothing."""
    v = float(value)
    return None if v == infinite else np.float16(v)


def _clamp_key(lo: np.float16 | None, hi: np.float16 | None) -> tuple[int | None, int | None]:
    def bits(x: np.float16 | None) -> int | None:
        return None if x is None else int(np.array(x, np.float16).view(np.uint16))
    return bits(lo), bits(hi)


def _matrix(buf: np.ndarray | None, rows: int, cols: int, ld: int, name: str,
            writable: bool = False) -> np.ndarray:
    """The [rows, cols] FP16 matrix with row stride `ld` in `buf`: a 2-D view
    with that row stride (as kbench's targets pass) or a flat buffer."""
    if rows == 0 or cols == 0:
        return np.zeros((rows, cols), np.float16)
    if buf is None:
        raise InvalidArgument(f"{name}: is NULL", name)
    if not isinstance(buf, np.ndarray) or buf.dtype != np.float16:
        raise InvalidArgument(f"{name}: must be a float16 array", name)
    if ld < cols:
        raise InvalidArgument(f"{name}: leading dimension {ld} is less than the row length "
                              f"{cols}", name)
    if writable and not buf.flags.writeable:
        raise InvalidArgument(f"{name}: must be writable", name)
    if (buf.ndim == 2 and buf.strides == (ld * 2, 2) and buf.shape[0] >= rows
            and buf.shape[1] >= cols):
        return buf[:rows, :cols]
    if (buf.ndim == 1 and buf.strides == (2,)) or buf.flags.c_contiguous:
        flat = buf.reshape(-1)
        need = (rows - 1) * ld + cols
        if flat.size < need:
            raise InvalidArgument(f"{name}: {flat.size} elements, {rows} rows of stride {ld} "
                                  f"need {need}", name)
        return np.lib.stride_tricks.as_strided(flat, (rows, cols), (ld * 2, 2),
                                               writeable=writable)
    raise InvalidArgument(f"{name}: not a [{rows}, {cols}] matrix with row stride {ld}", name)


def _vector(buf: np.ndarray | None, n: int, name: str) -> np.ndarray | None:
    if buf is None:
        return None
    if not isinstance(buf, np.ndarray) or buf.dtype != np.float16 or buf.size < n:
        raise InvalidArgument(f"{name}: must be a float16 array of at least {n} elements", name)
    return np.ascontiguousarray(buf.reshape(-1)[:n])


@dataclass
class _Call:
    """One prepared session.run: the session, its feed, and where the output goes."""

    session: Any
    feed: dict[str, np.ndarray]
    write: Any  # callable(np.ndarray) -> None, copies the result into the caller's buffer

    def run(self) -> np.ndarray:
        return self.session.run(None, self.feed)[0]


@dataclass
class OrtPeer:
    """onnxruntime's CPU FP16 MatMul and Conv as a peer backend."""

    max_sessions: int = 64  # sessions kept, least recently used dropped first
    _sessions: OrderedDict[tuple[Any, ...], Any] = field(default_factory=OrderedDict,
                                                         repr=False)
    _graph_ops: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)

    # ---- what the peer is ------------------------------------------------------------

    def available(self) -> bool:
        return not _modules().reason

    def unavailable_reason(self) -> str:
        return _modules().reason

    @property
    def version(self) -> str:
        return _modules().version

    def realizations(self) -> list[Realization]:
        if not self.available():
            return []
        what = f"onnxruntime {self.version}"
        providers = ",".join(PROVIDERS)
        common = dict(backend=BACKEND, isa="scalar", accum="fp16", k_per_rounding=1,
                      vector_bits=0, threads=1, peer=True)
        gemm, conv = self._how("MatMul"), self._how("Conv")
        out = [
            Realization(name=GEMM_NAME, kernel=f"{what} MatMul FP16 ({providers}; {gemm})",
                        op="gemm", bforms=("plain",), **common),  # type: ignore[arg-type]
            Realization(name=CONV_NAME, kernel=f"{what} Conv FP16 NCHW ({providers}; {conv})",
                        op="conv2d", bforms=(), **common),  # type: ignore[arg-type]
        ]
        if kleidiai_switch():
            out += [replace(r, name=r.name + NO_KLEIDIAI,
                            kernel=r.kernel[:-1] + "; mlas.disable_kleidiai=1)") for r in out]
        return out

    def graph_ops(self, op: str) -> tuple[str, ...]:
        """The nodes of ORT's optimized graph for a bare FP16 MatMul or Conv
        ("MatMul" or "Conv") on this machine, probed once per peer: shows
        whether ORT runs an FP16 kernel or casts around an FP32 one."""
        if op not in self._graph_ops:
            mods = _modules()
            assert mods.ort is not None and mods.onnx is not None
            if op == "MatMul":
                model = self._gemm_model(8, 8, 8, False, None, None)
            else:
                model = self._conv_model(ConvDesc(1, 8, 8, 8, 8, 3, 3), 6, 6, (0, 0, 0, 0),
                                         True, None, None)
            with tempfile.TemporaryDirectory() as tmp:
                options = mods.ort.SessionOptions()
                options.log_severity_level = 3
                options.optimized_model_filepath = str(Path(tmp) / "optimized.onnx")
                mods.ort.InferenceSession(model, options, providers=list(PROVIDERS))
                graph = mods.onnx.load(options.optimized_model_filepath).graph
            self._graph_ops[op] = tuple(n.op_type for n in graph.node)
        return self._graph_ops[op]

    def _how(self, op: str) -> str:
        try:
            ops = self.graph_ops(op)
        except Exception:  # a probe that fails must not hide the peer
            return "compute path unknown"
        return f"FP32 {op} between Casts" if "Cast" in ops else f"FP16 {op}"

    def _realization(self, name: str, selector: Selector | None) -> Realization:
        for r in self.realizations():
            if r.name == name:
                return replace(r, threads=selector.threads if selector is not None else 1)
        raise Unsupported(f"selector.force: {name!r} is not a realization of the ort peer",
                          "selector.force")

    def _chosen(self, default: str, selector: Selector | None) -> str:
        """The realization a call runs: the forced one if it is a variant of
        `default` (with or without KleidiAI), else `default`."""
        force = selector.force if selector is not None else None
        name = force if force in (default, default + NO_KLEIDIAI) else default
        self._realization(name, selector)
        return str(name)

    # ---- sessions ---------------------------------------------------------------------

    def _session(self, key: tuple[Any, ...], build: Any, threads: int,
                 kleidiai: bool = True) -> Any:
        """The cached session for a graph key; `build()` makes the model bytes."""
        full = (*key, threads, kleidiai)
        if full in self._sessions:
            self._sessions.move_to_end(full)
            return self._sessions[full]
        mods = _modules()
        if mods.ort is None:
            raise Unsupported(f"peer: {mods.reason}", "peer")
        ort = mods.ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(int(threads), 0)  # 0: ORT's default
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        if not kleidiai:
            options.add_session_config_entry("mlas.disable_kleidiai", "1")
        try:
            session = ort.InferenceSession(build(), options, providers=list(PROVIDERS))
        except Exception as exc:  # onnxruntime raises its own exception types
            raise InternalError(f"peer: onnxruntime refused the graph: {exc}", "peer") from exc
        self._sessions[full] = session
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return session

    def _model(self, name: str, nodes: list[Any], inputs: list[tuple[str, list[int]]],
               output: tuple[str, list[int]], inits: dict[str, np.ndarray]) -> bytes:
        onnx = _modules().onnx
        assert onnx is not None
        h, f16 = onnx.helper, onnx.TensorProto.FLOAT16
        graph = h.make_graph(
            nodes, name, [h.make_tensor_value_info(n, f16, s) for n, s in inputs],
            [h.make_tensor_value_info(output[0], f16, output[1])],
            initializer=[onnx.numpy_helper.from_array(v, k) for k, v in inits.items()])
        model = h.make_model(graph, opset_imports=[h.make_opsetid("", OPSET)],
                             producer_name="kbench")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        return bytes(model.SerializeToString())

    def _tail(self, y: str, bias: bool, lo: np.float16 | None, hi: np.float16 | None
              ) -> tuple[list[Any], dict[str, np.ndarray], str]:
        """Add(bias) and Clip nodes after `y`; returns nodes, initializers, output name."""
        onnx = _modules().onnx
        assert onnx is not None
        nodes, inits = [], {}
        if bias:
            nodes.append(onnx.helper.make_node("Add", [y, "bias"], ["biased"]))
            y = "biased"
        if lo is not None or hi is not None:
            args = [y, "", ""]
            if lo is not None:
                inits["lo"] = np.array(lo, np.float16)
                args[1] = "lo"
            if hi is not None:
                inits["hi"] = np.array(hi, np.float16)
                args[2] = "hi"
            while args[-1] == "":
                args.pop()
            nodes.append(onnx.helper.make_node("Clip", args, ["clipped"]))
            y = "clipped"
        return nodes, inits, y

    def _run(self, name: str, calls: list[_Call], selector: Selector | None,
             timing: Timing | None) -> CallResult:
        r = self._realization(name, selector)

        def once() -> list[np.ndarray]:
            return [c.run() for c in calls]

        try:
            if timing is None:
                outs, times, reps = once(), [], 0
            else:
                last: list[list[np.ndarray]] = []

                def timed() -> None:
                    last[:] = [once()]
                times, reps = time_calls(timed, timing)
                outs = last[0]
        except KbenchError:
            raise
        except Exception as exc:  # onnxruntime raises its own exception types
            raise InternalError(f"peer: onnxruntime failed: {exc}", "peer") from exc
        for c, y in zip(calls, outs, strict=True):
            c.write(y)
        return CallResult(r, times, reps)

    # ---- operators ----------------------------------------------------------------------

    def gemm(self, m: int, n: int, k: int, problems: list[RawProblem],
             selector: Selector | None = None, timing: Timing | None = None) -> CallResult:
        """C = clamp(A @ B + bias) for each problem; one session.run per problem
        (a timed call runs the whole batch)."""
        real = self._chosen(GEMM_NAME, selector)
        kleidiai = not real.endswith(NO_KLEIDIAI)
        for name, v in (("M", m), ("N", n), ("K", k)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise InvalidArgument(f"{name}: must be a non-negative integer, got {v!r}", name)
        if not problems:
            raise InvalidArgument("problems: the batch is empty", "problems")
        threads = selector.threads if selector is not None else 1
        calls: list[_Call] = []
        for i, p in enumerate(problems):
            if p.b_is_packed or p.b_is_backend_native_packed:
                raise Unsupported(f"problems[{i}].b: {real} takes plain B only",
                                  f"problems[{i}].b")
            a = _matrix(p.a, m, k, p.lda, f"problems[{i}].a")
            b = _matrix(p.b, k, n, p.ldb, f"problems[{i}].b")
            c = _matrix(p.c, m, n, p.ldc, f"problems[{i}].c", writable=True)
            bias = _vector(p.bias, n, f"problems[{i}].bias")
            lo, hi = _bound(p.clamp_min, -math.inf), _bound(p.clamp_max, math.inf)
            key = ("gemm", m, n, k, bias is not None, *_clamp_key(lo, hi))
            session = self._session(
                key, lambda m=m, n=n, k=k, b=bias is not None, lo=lo, hi=hi:
                self._gemm_model(m, n, k, b, lo, hi), threads, kleidiai)
            feed = {"A": np.ascontiguousarray(a), "B": np.ascontiguousarray(b)}
            if bias is not None:
                feed["bias"] = bias

            def write(y: np.ndarray, c: np.ndarray = c) -> None:
                c[...] = y
            calls.append(_Call(session, feed, write))
        return self._run(real, calls, selector, timing)

    def _gemm_model(self, m: int, n: int, k: int, bias: bool, lo: np.float16 | None,
                    hi: np.float16 | None) -> bytes:
        onnx = _modules().onnx
        assert onnx is not None
        nodes = [onnx.helper.make_node("MatMul", ["A", "B"], ["Y"])]
        tail, inits, out = self._tail("Y", bias, lo, hi)
        inputs = [("A", [m, k]), ("B", [k, n])] + ([("bias", [n])] if bias else [])
        return self._model("kbench_gemm", nodes + tail, inputs, (out, [m, n]), inits)

    def conv(self, desc: ConvDesc, x: np.ndarray | None, w: np.ndarray | None,
             bias: np.ndarray | None, out: np.ndarray | None,
             selector: Selector | None = None, timing: Timing | None = None) -> CallResult:
        """NHWC x, HWIO w, NHWC out (see the module doc for the layout changes)."""
        real = self._chosen(CONV_NAME, selector)
        d = desc.checked()
        g = d.groups
        if g < 1 or d.c_in % g or d.c_out % g:
            raise InvalidArgument(f"desc.groups: {g} does not divide c_in = {d.c_in} and "
                                  f"c_out = {d.c_out}", "desc.groups")
        for name, v in (("stride_h", d.stride_h), ("stride_w", d.stride_w),
                        ("dil_h", d.dil_h), ("dil_w", d.dil_w), ("kh", d.kh), ("kw", d.kw)):
            if v < 1:
                raise InvalidArgument(f"desc.{name}: must be positive", f"desc.{name}")
        oh = (d.h + d.pad_top + d.pad_bottom - d.dil_h * (d.kh - 1) - 1) // d.stride_h + 1
        ow = (d.w + d.pad_left + d.pad_right - d.dil_w * (d.kw - 1) - 1) // d.stride_w + 1
        if oh < 1 or ow < 1:
            raise InvalidArgument("desc: the dilated filter does not fit the padded input",
                                  "desc")
        xs, ws, ys = (d.n, d.h, d.w, d.c_in), (d.kh, d.kw, d.c_in // g, d.c_out), \
            (d.n, oh, ow, d.c_out)
        x4 = self._tensor(x, xs, "input")
        w4 = self._tensor(w, ws, "filter")
        y4 = self._tensor(out, ys, "output", writable=True)
        b = _vector(bias, d.c_out, "bias")
        lo, hi = _bound(d.clamp_min, -math.inf), _bound(d.clamp_max, math.inf)
        pads = (d.pad_top, d.pad_left, d.pad_bottom, d.pad_right)
        key = ("conv", xs, ws, (d.stride_h, d.stride_w), pads, (d.dil_h, d.dil_w), g,
               b is not None, *_clamp_key(lo, hi))
        threads = selector.threads if selector is not None else 1
        session = self._session(key, lambda: self._conv_model(d, oh, ow, pads, b is not None,
                                                              lo, hi), threads,
                                not real.endswith(NO_KLEIDIAI))
        # layout changes, outside the timed region
        feed = {"X": np.ascontiguousarray(x4.transpose(0, 3, 1, 2)),
                "W": np.ascontiguousarray(w4.transpose(3, 2, 0, 1))}
        if b is not None:
            feed["bias"] = b

        def write(y: np.ndarray) -> None:
            y4[...] = y.transpose(0, 2, 3, 1)
        return self._run(real, [_Call(session, feed, write)], selector, timing)

    @staticmethod
    def _tensor(buf: np.ndarray | None, shape: tuple[int, ...], name: str,
                writable: bool = False) -> np.ndarray:
        count = int(np.prod(shape))
        if buf is None:
            raise InvalidArgument(f"{name}: is NULL", name)
        if not isinstance(buf, np.ndarray) or buf.dtype != np.float16:
            raise InvalidArgument(f"{name}: must be a float16 array", name)
        if writable and not buf.flags.writeable:
            raise InvalidArgument(f"{name}: must be writable", name)
        if buf.shape == shape:
            return buf
        if buf.flags.c_contiguous and buf.size >= count:
            return buf.reshape(-1)[:count].reshape(shape)
        raise InvalidArgument(f"{name}: expected shape {shape}, got {buf.shape}", name)

    def _conv_model(self, d: ConvDesc, oh: int, ow: int, pads: tuple[int, int, int, int],
                    bias: bool, lo: np.float16 | None, hi: np.float16 | None) -> bytes:
        onnx = _modules().onnx
        assert onnx is not None
        args = ["X", "W"] + (["bias"] if bias else [])
        nodes = [onnx.helper.make_node(
            "Conv", args, ["Y"], kernel_shape=[d.kh, d.kw], strides=[d.stride_h, d.stride_w],
            pads=list(pads), dilations=[d.dil_h, d.dil_w], group=d.groups)]
        # the bias is Conv's own input here, so the tail only clamps
        tail, inits, out = self._tail("Y", False, lo, hi)
        inputs = [("X", [d.n, d.c_in, d.h, d.w]),
                  ("W", [d.c_out, d.c_in // d.groups, d.kh, d.kw])]
        if bias:
            inputs.append(("bias", [d.c_out]))
        return self._model("kbench_conv", nodes + tail, inputs, (out, [d.n, d.c_out, oh, ow]),
                           inits)


__all__ = ["CONV_NAME", "GEMM_NAME", "MIN_VERSION", "NO_KLEIDIAI", "OrtPeer", "kleidiai_switch"]
