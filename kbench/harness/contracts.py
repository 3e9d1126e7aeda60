"""Contract cases: every misuse of the API that must be refused with a typed
error naming the field, with no byte of C (or of its guards) written.

Each ContractCase builds its buffers, makes one raw call and returns the
exception; `check` verifies the type, the field, the message and that
every buffer is intact. The suite and `kbench run --suite contracts` use
the same list."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kbench.errors import ContractViolation, InvalidArgument, KbenchError, SizeOverflow, Unsupported
from kbench.native import api
from kbench.native.calls import ConvDesc, Engine, pack
from kbench.targets.spec import GUARD, SENTINEL, GuardedBuffer

HEADER_SIZE = 64
FNV_OFFSET, FNV_PRIME = 0xCBF29CE484222325, 0x100000001B3
HEADER_FIELDS = [  # name, offset, numpy dtype of kb_packed_header
    ("magic", 0, "<u4"), ("version", 4, "<u2"), ("header_size", 6, "<u2"),
    ("layout", 8, "<u2"), ("backend", 10, "<u2"), ("vector_bits", 12, "<u4"),
    ("n", 16, "<u8"), ("k", 24, "<u8"), ("flags", 32, "<u4"), ("block_n", 36, "<u4"),
    ("payload_size", 40, "<u8"), ("payload_checksum", 48, "<u8"), ("header_checksum", 56, "<u8"),
]


def fnv1a64(data: bytes) -> int:
    h = FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def payload_checksum(data: bytes | np.ndarray) -> int:
    """The payload checksum of packed buffers (version 2; kbench.h): the
    payload as little-endian 64-bit words w_i, the last zero-padded, in
    chunks of 32 words, sum of (2 * (i // 32) + 1) * w_i modulo 2**64. Here
    by numpy, independently of the library's vector code."""
    raw = np.frombuffer(bytes(data) if not isinstance(data, np.ndarray) else data.tobytes(),
                        np.uint8)
    words = np.zeros((raw.size + 7) // 8 * 8, np.uint8)
    words[:raw.size] = raw
    w = words.view("<u8").astype(np.uint64)
    weights = (2 * (np.arange(w.size, dtype=np.uint64) // np.uint64(32)) + np.uint64(1))
    with np.errstate(over="ignore"):
        return int(np.sum(w * weights, dtype=np.uint64))


def reseal(buf: np.ndarray, **fields: int) -> np.ndarray:
    """A copy of a packed buffer with header fields changed and the header
    checksum recomputed, so only the changed fields can be caught."""
    out = buf.copy()
    offsets = {name: (off, dt) for name, off, dt in HEADER_FIELDS}
    for name, value in fields.items():
        off, dt = offsets[name]
        out[off:off + np.dtype(dt).itemsize] = np.frombuffer(np.array(value, dtype=dt).tobytes(),
                                                             dtype=np.uint8)
    out[56:64] = 0
    out[56:64] = np.frombuffer(np.array(fnv1a64(out[:64].tobytes()), dtype="<u8").tobytes(),
                               dtype=np.uint8)
    return out


def header_field_at(offset: int) -> str:
    for name, off, dt in HEADER_FIELDS:
        if off <= offset < off + np.dtype(dt).itemsize:
            return name
    raise ValueError(offset)


class Scenario:
    """Operands of one GEMM (M, N, K) with guards around every buffer."""

    def __init__(self, engine: Engine, m: int = 5, n: int = 19, k: int = 7, seed: int = 0
                 ) -> None:
        rng = np.random.default_rng(seed)
        self.engine, self.m, self.n, self.k = engine, m, n, k
        # room for one extra row/column so that lying dimensions stay in bounds
        self.lda, self.ldb, self.ldc = k + 1, n + 1, n + 1
        self.a = GuardedBuffer(m + 1, k + 1, self.lda)
        self.a.view[...] = rng.integers(-3, 4, size=self.a.view.shape)
        self.b = GuardedBuffer(k + 1, n + 1, self.ldb)
        self.b.view[...] = rng.integers(-3, 4, size=self.b.view.shape)
        self.bias = rng.integers(-3, 4, size=n + 1).astype(np.float16)
        self.c = GuardedBuffer(m + 1, n + 1, self.ldc)
        self._inputs = [self.a.raw.copy(), self.b.raw.copy(), self.bias.copy()]
        self.packed_buffers: list[tuple[np.ndarray, np.ndarray]] = []

    def flat(self, g: GuardedBuffer) -> np.ndarray:
        return g.raw[GUARD:].view(np.float16)

    def plain_b(self) -> np.ndarray:
        return self.b.view[:self.k, :self.n]

    def pack(self, backend: str | None = None, with_bias: bool = True) -> np.ndarray:
        bias = self.bias[:self.n] if (backend is not None and with_bias) else None
        return pack(self.engine, self.plain_b(), backend, bias)

    def guarded_packed(self, buf: np.ndarray) -> np.ndarray:
        """Copies a packed buffer between guard bytes; returns the inner view."""
        raw = np.full(buf.size + 2 * GUARD, 0xA5, dtype=np.uint8)
        raw[GUARD:GUARD + buf.size] = buf
        self.packed_buffers.append((raw, raw.copy()))
        return raw[GUARD:GUARD + buf.size]

    def problem(self, **kw: object) -> api.RawProblem:
        base: dict[str, object] = dict(
            a=self.flat(self.a), lda=self.lda, b=self.flat(self.b), ldb=self.ldb,
            c=self.flat(self.c), ldc=self.ldc, bias=self.bias,
        )
        base.update(kw)
        return api.RawProblem(**base)  # type: ignore[arg-type]

    def packed_problem(self, buf: np.ndarray, native: bool, **kw: object) -> api.RawProblem:
        inner = self.guarded_packed(buf)
        base: dict[str, object] = dict(b=inner, b_size=inner.size, b_is_packed=True,
                                       b_is_backend_native_packed=native,
                                       bias=None if native else self.bias)
        base.update(kw)
        return self.problem(**base)

    def damage(self) -> str:
        found = []
        if not self.c.untouched():
            found.append("C or its guards were written")
        for name, now, before in (("A", self.a.raw, self._inputs[0]),
                                  ("B", self.b.raw, self._inputs[1]),
                                  ("bias", self.bias, self._inputs[2])):
            if not np.array_equal(now.view(np.uint8), before.view(np.uint8)):
                found.append(f"{name} changed")
        for raw, before in self.packed_buffers:
            if not np.array_equal(raw, before):
                found.append("a packed buffer changed")
        return "; ".join(found)


@dataclass(frozen=True)
class ContractCase:
    name: str
    expect: type[KbenchError]
    field: str  # regular expression the error's field must match
    call: Callable[[Engine], tuple[Scenario | None, Callable[[], object]]]


@dataclass
class ContractResult:
    case: str
    ok: bool
    message: str


def check(case: ContractCase, engine: Engine) -> ContractResult:
    scenario, thunk = case.call(engine)
    try:
        thunk()
    except KbenchError as exc:
        problems = []
        if not isinstance(exc, case.expect):
            problems.append(f"raised {type(exc).__name__}, expected {case.expect.__name__}")
        if not re.fullmatch(case.field, exc.field):
            problems.append(f"field {exc.field!r} does not match {case.field!r}")
        if not exc.field or exc.field not in str(exc):
            problems.append(f"message {str(exc)!r} does not name the field")
        if scenario is not None and (d := scenario.damage()):
            problems.append(d)
        return ContractResult(case.name, not problems,
                              "; ".join(problems) or f"{type(exc).__name__}: {exc}")
    return ContractResult(case.name, False, "the call succeeded; it must be refused")


# ---- the cases ---------------------------------------------------------------------------


# A call that verifies the payload checksum as well as the header: what
# kb_verify_packed_b does where a buffer is loaded. Production calls check
# the header only (O(1)).
VERIFY = api.Selector(verify_payload=True)


def _gemm(sc: Scenario, m: int | None = None, n: int | None = None, k: int | None = None,
          problems: list[api.RawProblem] | None = None, selector: api.Selector | None = None
          ) -> Callable[[], object]:
    return lambda: sc.engine.gemm_raw(sc.m if m is None else m, sc.n if n is None else n,
                                      sc.k if k is None else k,
                                      [sc.problem()] if problems is None else problems,
                                      selector)


def _case(name: str, expect: type[KbenchError], field: str,
          build: Callable[[Scenario], Callable[[], object]]) -> ContractCase:
    def call(engine: Engine) -> tuple[Scenario, Callable[[], object]]:
        sc = Scenario(engine)
        return sc, build(sc)
    return ContractCase(name, expect, field, call)


def argument_cases() -> list[ContractCase]:
    big = 2**62
    cases = [
        _case("gemm_m_zero", InvalidArgument, "M", lambda s: _gemm(s, m=0)),
        _case("gemm_n_zero", InvalidArgument, "N", lambda s: _gemm(s, n=0)),
        _case("gemm_k_zero", InvalidArgument, "K", lambda s: _gemm(s, k=0)),
        _case("gemm_m_negative", InvalidArgument, "M", lambda s: _gemm(s, m=-1)),
        _case("gemm_k_negative", InvalidArgument, "K", lambda s: _gemm(s, k=-5)),
        _case("gemm_n_beyond_size_t", SizeOverflow, "N", lambda s: _gemm(s, n=2**64)),
        _case("gemm_lda_small", InvalidArgument, r"problems\[0\]\.lda",
              lambda s: _gemm(s, problems=[s.problem(lda=s.k - 1)])),
        _case("gemm_ldb_small", InvalidArgument, r"problems\[0\]\.ldb",
              lambda s: _gemm(s, problems=[s.problem(ldb=s.n - 1)])),
        _case("gemm_ldc_small", InvalidArgument, r"problems\[0\]\.ldc",
              lambda s: _gemm(s, problems=[s.problem(ldc=s.n - 1)])),
        _case("gemm_ldc_negative", InvalidArgument, r"problems\[0\]\.ldc",
              lambda s: _gemm(s, problems=[s.problem(ldc=-1)])),
        _case("gemm_a_null", InvalidArgument, r"problems\[0\]\.A",
              lambda s: _gemm(s, problems=[s.problem(a=None)])),
        _case("gemm_b_null", InvalidArgument, r"problems\[0\]\.B",
              lambda s: _gemm(s, problems=[s.problem(b=None)])),
        _case("gemm_c_null", InvalidArgument, r"problems\[0\]\.C",
              lambda s: _gemm(s, problems=[s.problem(c=None)])),
        _case("gemm_problems_null", InvalidArgument, "problems",
              lambda s: _gemm(s, problems=[])),
        _case("gemm_second_problem_c_null", InvalidArgument, r"problems\[1\]\.C",
              lambda s: _gemm(s, problems=[s.problem(), s.problem(c=None)])),
        _case("gemm_m_times_lda_overflows", SizeOverflow, r"problems\[0\]\.lda",
              lambda s: _gemm(s, m=big)),
        _case("gemm_lda_overflows", SizeOverflow, r"problems\[0\]\.lda",
              lambda s: _gemm(s, problems=[s.problem(lda=big)])),
        _case("gemm_ldc_overflows", SizeOverflow, r"problems\[0\]\.ldc",
              lambda s: _gemm(s, problems=[s.problem(ldc=big)])),
        _case("gemm_ldb_overflows", SizeOverflow, r"problems\[0\]\.ldb",
              lambda s: _gemm(s, problems=[s.problem(ldb=big)])),
        # (M - 1) * lda + K elements fit in size_t, their bytes do not
        _case("gemm_lda_bytes_overflow", SizeOverflow, r"problems\[0\]\.lda",
              lambda s: _gemm(s, problems=[s.problem(lda=2**61)])),
        _case("gemm_k_times_ldb_overflows", SizeOverflow, r"problems\[0\]\.(lda|ldb)",
              lambda s: _gemm(s, k=2**61, problems=[s.problem(lda=2**61)])),
        _case("gemm_clamp_nan", InvalidArgument, r"problems\[0\]\.clamp_min",
              lambda s: _gemm(s, problems=[s.problem(clamp_min=float("nan"))])),
        _case("gemm_clamp_max_nan", InvalidArgument, r"problems\[0\]\.clamp_max",
              lambda s: _gemm(s, problems=[s.problem(clamp_max=float("nan"))])),
        _case("gemm_clamp_inverted", InvalidArgument, r"problems\[0\]\.clamp_min",
              lambda s: _gemm(s, problems=[s.problem(clamp_min=2.0, clamp_max=1.0)])),
        _case("gemm_native_flag_without_packed", InvalidArgument,
              r"problems\[0\]\.b_is_backend_native_packed",
              lambda s: _gemm(s, problems=[s.problem(b_is_backend_native_packed=True)])),
        _case("gemm_force_unknown", InvalidArgument, r"selector\.force",
              lambda s: _gemm(s, selector=api.Selector(force="no_such_kernel"))),
        _case("gemm_force_conv_realization", Unsupported, r"selector\.force",
              lambda s: _gemm(s, selector=api.Selector(force="conv2d_direct_scalar_f32acc"))),
        _case("gemm_isa_cap_unknown", InvalidArgument, r"selector\.isa_cap",
              lambda s: _gemm(s, selector=api.Selector(isa_cap="avx512"))),
        _case("gemm_threads_negative", InvalidArgument, r"selector\.threads",
              lambda s: _gemm(s, selector=api.Selector(threads=-1))),
        _case("gemm_mixed_b_forms", InvalidArgument, r"problems\[1\]\.b_is_packed",
              lambda s: _gemm(s, problems=[s.problem(),
                                           s.packed_problem(s.pack(), native=False)])),
    ]
    cases += _pack_cases() + _conv_cases()
    return cases


def _pack_cases() -> list[ContractCase]:
    def raw_pack(s: Scenario, n: int, k: int, ldb: int, dst_size: int,
                 backend: int | None = None) -> Callable[[], object]:
        return lambda: s.engine.pack_raw(backend, n, k, s.flat(s.b), ldb, None, dst_size)

    return [
        _case("pack_dst_too_small", InvalidArgument, "dst_size",
              lambda s: raw_pack(s, s.n, s.k, s.ldb, 100)),
        _case("pack_ldb_small", InvalidArgument, "ldb", lambda s: raw_pack(s, s.n, s.k, 3, 4096)),
        _case("pack_n_zero", InvalidArgument, "N", lambda s: raw_pack(s, 0, s.k, s.ldb, 4096)),
        _case("pack_native_bad_backend", InvalidArgument, "backend",
              lambda s: raw_pack(s, s.n, s.k, s.ldb, 4096, backend=7)),
        _case("pack_native_dst_too_small", InvalidArgument, "dst_size",
              lambda s: raw_pack(s, s.n, s.k, s.ldb, 64, backend=0)),
        _case("pack_ldb_overflows", SizeOverflow, "ldb",
              lambda s: raw_pack(s, s.n, s.k, 2**62, 4096)),
    ]


def _conv_cases() -> list[ContractCase]:
    base = dict(n=1, h=6, w=6, c_in=4, c_out=4, kh=3, kw=3, stride_h=1, stride_w=1,
                pad_top=0, pad_bottom=0, pad_left=0, pad_right=0, dil_h=1, dil_w=1, groups=1)

    no_clamp = (float("-inf"), float("inf"))

    def conv(overrides: dict[str, int], *, null: str = "",
             clamp: tuple[float, float] = no_clamp) -> Callable[[Engine], tuple[object, Callable]]:
        def call(engine: Engine) -> tuple[object, Callable[[], object]]:
            x = np.ones(6 * 6 * 4, dtype=np.float16)
            w = np.ones(3 * 3 * 4 * 4, dtype=np.float16)
            out = GuardedBuffer(1, 4 * 4 * 4, 4 * 4 * 4)
            desc = ConvDesc(**{**base, **overrides}, clamp_min=clamp[0], clamp_max=clamp[1])
            args = {"input": x, "filter": w, "output": out.raw[GUARD:].view(np.float16)}
            for name in args:
                if name == null:
                    args[name] = None

            def go() -> None:
                engine.conv_raw(desc, args["input"], args["filter"], None, args["output"])
            return _ConvGuard(out), go
        return call

    cases = []
    for key in ("n", "h", "w", "c_in", "c_out", "kh", "kw", "stride_h", "stride_w", "dil_h",
                "dil_w", "groups"):
        cases.append(ContractCase(f"conv_{key}_zero", InvalidArgument, f"desc\\.{key}",
                                  conv({key: 0})))
    cases += [
        ContractCase("conv_stride_negative", InvalidArgument, r"desc\.stride_h",
                     _conv_api(api.ConvParams(stride=(-1, 1)))),
        ContractCase("conv_pad_negative", InvalidArgument, r"desc\.pad_left",
                     _conv_api(api.ConvParams(pad=(0, 0, -2, 0)))),
        ContractCase("conv_groups_not_dividing", InvalidArgument, r"desc\.groups",
                     conv({"groups": 3})),
        ContractCase("conv_groups_not_dividing_c_out", InvalidArgument, r"desc\.groups",
                     conv({"groups": 4, "c_out": 6})),
        ContractCase("conv_kernel_too_tall", InvalidArgument, r"desc\.kh", conv({"kh": 7})),
        ContractCase("conv_dilated_kernel_too_wide", InvalidArgument, r"desc\.kw",
                     conv({"dil_w": 3})),
        ContractCase("conv_input_null", InvalidArgument, "input", conv({}, null="input")),
        ContractCase("conv_filter_null", InvalidArgument, "filter", conv({}, null="filter")),
        ContractCase("conv_output_null", InvalidArgument, "output", conv({}, null="output")),
        ContractCase("conv_clamp_nan", InvalidArgument, r"desc\.clamp_min",
                     conv({}, clamp=(float("nan"), 1.0))),
        ContractCase("conv_clamp_inverted", InvalidArgument, r"desc\.clamp_min",
                     conv({}, clamp=(1.0, -1.0))),
        ContractCase("conv_input_bytes_overflow", SizeOverflow, r"desc\.\w+",
                     conv({"n": 2**40, "h": 2**20})),
        ContractCase("conv_padding_overflow", SizeOverflow, r"desc\.pad_top",
                     conv({"pad_top": 2**64 - 2})),
    ]
    return cases


def _conv_api(params: api.ConvParams) -> Callable[[Engine], tuple[object, Callable[[], object]]]:
    """A convolution described from shapes and parameters that are invalid."""
    def call(engine: Engine) -> tuple[object, Callable[[], object]]:
        x = np.ones((1, 6, 6, 4), dtype=np.float16)
        w = np.ones((3, 3, 4, 4), dtype=np.float16)
        out = np.full((1, 4, 4, 4), 7.0, dtype=np.float16)

        def go() -> None:
            desc = ConvDesc.from_shapes(x.shape, w.shape, params)
            engine.conv_raw(desc, x, w, None, out)
        return _ConvGuard(None, out), go
    return call


class _ConvGuard:
    """Scenario stand-in for convolution cases: only the output is guarded."""

    def __init__(self, out: GuardedBuffer | None, plain: np.ndarray | None = None) -> None:
        self.out, self.plain = out, plain

    def damage(self) -> str:
        if self.out is not None and not self.out.untouched():
            return "the output or its guards were written"
        if self.plain is not None and not (self.plain == 7.0).all():
            return "the output was written"
        return ""


def packed_cases(native_backends: list[str], all_backends: tuple[str, ...] = api.BACKENDS,
                 usable_backends: list[str] | None = None) -> list[ContractCase]:
    """Misuse of packed buffers, for the portable layout and each native one."""
    usable = usable_backends or native_backends
    cases: list[ContractCase] = []

    def c(name: str, expect: type[KbenchError], field: str,
          build: Callable[[Scenario], Callable[[], object]]) -> None:
        cases.append(_case(name, expect, field, build))

    c("portable_wrong_n", ContractViolation, r"B\.n",
      lambda s: _gemm(s, n=s.n + 1, problems=[s.packed_problem(s.pack(), False)]))
    c("portable_wrong_k", ContractViolation, r"B\.k",
      lambda s: _gemm(s, k=s.k + 1, problems=[s.packed_problem(s.pack(), False)]))
    c("portable_flagged_native", ContractViolation, r"problems\[0\]\.b_is_backend_native_packed",
      lambda s: _gemm(s, problems=[s.packed_problem(s.pack(), True, bias=None)]))
    c("portable_with_vector_bits", ContractViolation, r"B\.vector_bits",
      lambda s: _gemm(s, problems=[s.packed_problem(reseal(s.pack(), vector_bits=512), False)]))
    c("portable_with_bias_flag", ContractViolation, r"B\.flags",
      lambda s: _gemm(s, problems=[s.packed_problem(reseal(s.pack(), flags=1), False)]))
    c("portable_unknown_flag", ContractViolation, r"B\.flags",
      lambda s: _gemm(s, problems=[s.packed_problem(reseal(s.pack(), flags=8), False)]))
    c("portable_bad_magic", ContractViolation, r"B\.magic",
      lambda s: _gemm(s, problems=[s.packed_problem(reseal(s.pack(), magic=0x12345678), False)]))
    c("portable_bad_version", ContractViolation, r"B\.version",
      lambda s: _gemm(s, problems=[s.packed_problem(reseal(s.pack(), version=9), False)]))
    c("portable_bad_layout", ContractViolation, r"B\.layout",
      lambda s: _gemm(s, problems=[s.packed_problem(reseal(s.pack(), layout=77), False)]))
    c("portable_bad_block_n", ContractViolation, r"B\.block_n",
      lambda s: _gemm(s, problems=[s.packed_problem(reseal(s.pack(), block_n=8), False)]))
    c("portable_bad_payload_size", ContractViolation, r"B\.payload_size",
      lambda s: _gemm(s, problems=[s.packed_problem(reseal(s.pack(), payload_size=2), False)]))
    c("portable_header_truncated", ContractViolation, r"B\.size",
      lambda s: _gemm(s, problems=[s.packed_problem(s.pack(), False, b_size=HEADER_SIZE - 1)]))
    c("portable_payload_truncated", ContractViolation, r"B\.size",
      lambda s: _gemm(s, problems=[s.packed_problem(s.pack()[:-1], False)]))
    c("portable_empty_buffer", ContractViolation, r"B\.size",
      lambda s: _gemm(s, problems=[s.packed_problem(s.pack(), False, b_size=0)]))
    c("plain_flag_on_packed_buffer", ContractViolation, r"B\.\w+",
      lambda s: _gemm(s, problems=[s.packed_problem(s.problem().b.view(np.uint8)[:400], False)]))
    for be in native_backends:
        c(f"{be}_native_wrong_n", ContractViolation, r"B\.n",
          lambda s, be=be: _gemm(s, n=s.n - 1, problems=[s.packed_problem(s.pack(be), True)]))
        c(f"{be}_native_wrong_k", ContractViolation, r"B\.k",
          lambda s, be=be: _gemm(s, k=s.k - 1, problems=[s.packed_problem(s.pack(be), True)]))
        c(f"{be}_native_with_separate_bias", ContractViolation, r"problems\[0\]\.bias",
          lambda s, be=be: _gemm(s, problems=[s.packed_problem(s.pack(be), True, bias=s.bias)]))
        c(f"{be}_native_flagged_portable", ContractViolation,
          r"problems\[0\]\.b_is_backend_native_packed",
          lambda s, be=be: _gemm(s, problems=[s.packed_problem(s.pack(be), False, bias=None)]))
        c(f"{be}_native_backend_disabled_after_packing", ContractViolation, r"B\.backend",
          lambda s, be=be: _gemm(s, problems=[s.packed_problem(s.pack(be), True)],
                                 selector=api.Selector(disabled=frozenset({be}))))
        c(f"{be}_native_wrong_vector_length", ContractViolation, r"B\.(vector_bits|block_n)",
          lambda s, be=be: _gemm(s, problems=[s.packed_problem(
              reseal(s.pack(be), vector_bits=_other_vl(s.pack(be))), True)]))
        c(f"{be}_native_truncated", ContractViolation, r"B\.size",
          lambda s, be=be: _gemm(s, problems=[s.packed_problem(s.pack(be)[:-2], True)]))
        c(f"{be}_native_payload_flipped", ContractViolation, r"B\.payload_checksum",
          lambda s, be=be: _gemm(s, problems=[s.packed_problem(_flip(s.pack(be), 70), True)],
                                 selector=VERIFY))
        for other in all_backends:
            if other == be:
                continue
            # a buffer that claims to belong to another backend
            exp = r"B\.(backend|layout)"
            c(f"{be}_native_claims_{other}", ContractViolation, exp,
              lambda s, be=be, other=other: _gemm(s, problems=[s.packed_problem(
                  reseal(s.pack(be), backend=all_backends.index(other)), True)]))
            if other in usable:
                # forcing another backend's realization on this buffer
                c(f"{be}_native_forced_onto_{other}", Unsupported, r"selector\.force",
                  lambda s, be=be, other=other: _gemm(
                      s, problems=[s.packed_problem(s.pack(be), True)],
                      selector=api.Selector(force=_first_gemm(s.engine, other))))
    return cases


# Each header field refused on its own: a value the call or the layout cannot
# accept, with the header checksum recomputed (reseal), so that only the field
# itself can be what is caught. "bias_flag" flips the known flag bit, "flags"
# sets an unknown one. The header checksum is the one field changed without
# resealing; the payload checksum field is caught where the payload is verified.
RESEALED_FIELDS = ("magic", "version", "header_size", "layout", "backend", "vector_bits", "n",
                   "k", "flags", "bias_flag", "block_n", "payload_size")
FLIPS = ("first", "middle", "last")


def header_values(buf: np.ndarray) -> dict[str, int]:
    return {name: int(buf[off:off + np.dtype(dt).itemsize].view(dt)[0])
            for name, off, dt in HEADER_FIELDS}


def resealed_value(buf: np.ndarray, fld: str) -> tuple[str, int]:
    """(header field, new value) for one of RESEALED_FIELDS."""
    h = header_values(buf)
    return {
        "magic": ("magic", h["magic"] ^ 0x00010000),
        "version": ("version", h["version"] + 1),
        "header_size": ("header_size", HEADER_SIZE - 8),
        "layout": ("layout", 77),
        "backend": ("backend", len(api.BACKENDS)),  # the first that is not a backend
        "vector_bits": ("vector_bits", (h["vector_bits"] or 128) * 2),
        "n": ("n", h["n"] + 1),
        "k": ("k", h["k"] + 1),
        "flags": ("flags", h["flags"] | 4),
        "bias_flag": ("flags", h["flags"] ^ 1),
        "block_n": ("block_n", h["block_n"] * 2),
        "payload_size": ("payload_size", h["payload_size"] + 2),
    }[fld]


def resealed_expect(fld: str, native: bool) -> str:
    """The field the error must name. The portable layout has no vector length;
    the panel layouts' block width does not depend on it (B.vector_bits), the
    SME layout's does (B.block_n may come first)."""
    if fld == "vector_bits":
        return r"B\.(vector_bits|block_n)" if native else r"B\.vector_bits"
    return r"B\.flags" if fld == "bias_flag" else rf"B\.{fld}"


def header_field_cases(layouts: list[str | None]) -> list[ContractCase]:
    """For every layout (None: portable): every header field changed on a
    resealed buffer, the header checksum changed on its own, and the payload
    checksum field changed (refused where the payload is verified)."""
    cases: list[ContractCase] = []
    for be in layouts:
        lay = be or "portable"
        for fld in RESEALED_FIELDS:
            def build(s: Scenario, be: str | None = be, fld: str = fld) -> Callable[[], object]:
                buf = s.pack(be)
                name, value = resealed_value(buf, fld)
                return _gemm(s, problems=[s.packed_problem(reseal(buf, **{name: value}),
                                                           be is not None)])
            cases.append(_case(f"{lay}_resealed_{fld}", ContractViolation,
                               resealed_expect(fld, be is not None), build))

        def bad_checksum(s: Scenario, be: str | None = be) -> Callable[[], object]:
            buf = s.pack(be)
            buf[56] ^= 0x01  # the header checksum itself, not resealed
            return _gemm(s, problems=[s.packed_problem(buf, be is not None)])
        cases.append(_case(f"{lay}_header_checksum_changed", ContractViolation,
                           r"B\.header_checksum", bad_checksum))

        def bad_payload_sum(s: Scenario, be: str | None = be) -> Callable[[], object]:
            buf = s.pack(be)
            value = header_values(buf)["payload_checksum"] ^ 1
            return _gemm(s, problems=[s.packed_problem(reseal(buf, payload_checksum=value),
                                                       be is not None)], selector=VERIFY)
        cases.append(_case(f"{lay}_resealed_payload_checksum", ContractViolation,
                           r"B\.payload_checksum", bad_payload_sum))
    return cases


def payload_offset(buf: np.ndarray, where: str) -> int:
    """Byte offset of the first, a middle or the last payload byte."""
    size = buf.size - HEADER_SIZE
    return HEADER_SIZE + {"first": 0, "middle": size // 2, "last": size - 1}[where]


def payload_flip_cases(layouts: list[str | None]) -> list[ContractCase]:
    """For every layout, one payload byte flipped at the first, a middle and
    the last byte, refused where the payload is verified (VERIFY)."""
    cases = []
    for be in layouts:
        for where in FLIPS:
            def build(s: Scenario, be: str | None = be, where: str = where
                      ) -> Callable[[], object]:
                buf = s.pack(be)
                buf[payload_offset(buf, where)] ^= 0x01
                return _gemm(s, problems=[s.packed_problem(buf, be is not None)],
                             selector=VERIFY)
            cases.append(_case(f"{be or 'portable'}_payload_flip_{where}", ContractViolation,
                               r"B\.payload_checksum", build))
    return cases


def _first_gemm(engine: Engine, backend: str) -> str:
    for r in engine.info("").realizations:
        if r.backend == backend and r.op == "gemm":
            return r.name
    return "none"


def _other_vl(buf: np.ndarray) -> int:
    vb = int(buf[12:16].view("<u4")[0])
    return 512 if vb != 512 else 256


def _flip(buf: np.ndarray, offset: int, xor: int = 0x10) -> np.ndarray:
    out = buf.copy()
    out[min(offset, out.size - 1)] ^= xor
    return out


def corruption_cases(native_backends: list[str], count: int = 1200, seed: int = 1
                     ) -> list[ContractCase]:
    """Random corruption of header and payload bytes (one to four bytes)."""
    rng = np.random.default_rng(seed)
    layouts: list[str | None] = [None, *native_backends]
    cases = []
    for i in range(count):
        be = layouts[i % len(layouts)]
        in_header = rng.random() < 0.5
        flips = int(rng.integers(1, 5))
        sub_seed = int(rng.integers(2**31))
        where = "header" if in_header else "payload"
        field = (r"B\.(magic|version|header_size|header_checksum)" if in_header
                 else r"B\.payload_checksum")

        def build(s: Scenario, be: str | None = be, in_header: bool = in_header,
                  flips: int = flips, sub_seed: int = sub_seed) -> Callable[[], object]:
            buf = s.pack(be)
            r = np.random.default_rng(sub_seed)
            lo, hi = (0, HEADER_SIZE) if in_header else (HEADER_SIZE, buf.size)
            for _ in range(flips):
                buf[int(r.integers(lo, hi))] ^= np.uint8(r.integers(1, 256))
            # payload corruption is found where the payload is verified (a call
            # with verify_payload, or kb_verify_packed_b); header corruption in
            # every call
            return _gemm(s, problems=[s.packed_problem(buf, be is not None)],
                         selector=None if in_header else VERIFY)

        cases.append(_case(f"corrupt_{where}_{be or 'portable'}_{i:04d}", ContractViolation,
                           field, build))
    return cases


def native_backends(engine: Engine) -> list[str]:
    """Backends on this target that have a native packed layout."""
    out = []
    for be in engine.info("").backends:
        try:
            pack(engine, np.ones((2, 2), np.float16), be)
        except Unsupported:
            continue
        out.append(be)
    return out


def all_cases(engine: Engine, corruptions: int = 1200) -> list[ContractCase]:
    return cases_for(engine.info("").backends, native_backends(engine), corruptions)


def cases_for(backends: list[str], natives: list[str],
              corruptions: int = 1200) -> list[ContractCase]:
    """The contract cases of a target whose backends and native packers are
    known (e.g. probed once by another process)."""
    layouts: list[str | None] = [None, *natives]
    return (argument_cases() + packed_cases(natives, usable_backends=backends)
            + header_field_cases(layouts) + payload_flip_cases(layouts)
            + corruption_cases(natives, corruptions))


__all__ = ["ContractCase", "ContractResult", "Scenario", "all_cases", "check", "reseal",
           "SENTINEL"]
