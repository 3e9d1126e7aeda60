"""Contract probes for plugin realizations that pack B: the packed-B contract
checked from the outside.

kbench cannot look inside a plugin's packed B, but it can misuse one the way
a runtime might by mistake and watch what the plugin does. Each probe packs
B with the realization's own packer, misuses the buffer in one way, calls
the realization with it and records one finding:

    refused                   the call returned an error (the plugin's status, or
                              for the micro-kernel form kbench's header check)
                              and left C and its guards untouched
    accepted, correct         the call ran and the result is still right (the
                              misuse does not matter to this plugin, e.g. a packed
                              B that does not depend on the vector length)
    silently wrong            the call ran and the result is wrong, or it wrote
                              outside C, or it refused after writing C
    crashed                   the process running the plugin died (a worker, so
                              kbench survives and reports it)
    not applicable            the probe cannot be made on this target (another
                              vector length needs an SME worker that can change it)

The probes: B packed at another streaming vector length (the worker switches
its SVL with prctl around the packing), packed for N + 8 or K + 3 (the
leading K x N block is the call's B), packed without bias and called with a
separate bias (the caller clearly wants the bias added), and the packed B cut
to half its size (the bytes after the cut are 0xA5, inside the allocation,
so a plugin that reads on finds garbage instead of faulting).

Inputs are small integers, so every correct result is exact and the
expected output is computed exactly; a finding never depends on rounding.
Every probe first makes a valid call with a correctly packed B: a plugin
that fails that call has nothing to probe (its correctness verdicts say
why), and the probe says so instead of blaming the misuse.

Findings are verdicts of the suite "plugin-contracts" (case "probe_<name>"):
refused and accepted-correct pass, silently wrong fails, crashed is an
error, not applicable is skipped. They are findings about the plugin: the
suite records them without failing the run unless asked (--strict-plugins)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kbench.errors import KbenchError, Unsupported, WorkerCrashed
from kbench.judge.verdict import ERROR, FAIL, PASS, SKIP, Verdict
from kbench.native import api
from kbench.native.calls import Engine
from kbench.targets.spec import GUARD, GuardedBuffer

REFUSED = "refused"
ACCEPTED = "accepted, correct"
SILENTLY_WRONG = "silently wrong"
CRASHED = "crashed"
NOT_APPLICABLE = "not applicable"
STATUS = {REFUSED: PASS, ACCEPTED: PASS, SILENTLY_WRONG: FAIL, CRASHED: ERROR,
          NOT_APPLICABLE: SKIP}
SUITE = "plugin-contracts"
FILL = 0xA5  # bytes after a truncated buffer, and its guards


@dataclass(frozen=True)
class Probe:
    name: str
    what: str


PROBES = (
    Probe("other_svl", "B packed at another streaming vector length"),
    Probe("other_n", "B packed for N + 8"),
    Probe("other_k", "B packed for K + 3"),
    Probe("bias_flag", "B packed without bias, called with a separate bias"),
    Probe("truncated", "the packed B cut to half its size"),
)
PROBE_NAMES = tuple(p.name for p in PROBES)


@dataclass
class ProbeResult:
    probe: str
    realization: api.Realization
    target: str
    finding: str
    detail: str

    @property
    def ok(self) -> bool:
        return STATUS[self.finding] in (PASS, SKIP)

    def verdict(self) -> Verdict:
        r = self.realization
        what = next(p.what for p in PROBES if p.name == self.probe)
        return Verdict(
            case=f"probe_{self.probe}", op="gemm", shape="", kind="misuse", target=self.target,
            backend=r.backend, realization=r.name, kernel=r.kernel, accum="-", k=0, m=0,
            n=0, b_form="native", vector_bits=r.vector_bits, status=STATUS[self.finding],
            message=f"{self.finding}: {what}" + (f": {self.detail}" if self.detail else ""),
            suite=SUITE, plugin=r.plugin)


@dataclass
class Operands:
    """The exact-by-design operands of the probes for one realization."""

    m: int
    n: int
    k: int
    a: np.ndarray
    b: np.ndarray
    bias: np.ndarray
    expected: np.ndarray  # bits of the exact result (FP16 view as uint16)

    @classmethod
    def make(cls, r: api.Realization, seed: int = 7) -> Operands:
        rng = np.random.default_rng(seed)
        m = min(5, r.max_m) if r.max_m else 5
        n, k = 40, 21  # N a multiple of 4 and 8, with a tail for 32- and 64-column blocks
        a = rng.integers(-3, 4, size=(m, k))
        b = rng.integers(-3, 4, size=(k, n))
        bias = rng.integers(-3, 4, size=n)
        exact = (a @ b + bias).astype(np.float16)  # |value| <= 192: exact in FP16
        return cls(m, n, k, a.astype(np.float16), b.astype(np.float16),
                   bias.astype(np.float16), exact.view(np.uint16).copy())

    def wider(self, extra_n: int = 0, extra_k: int = 0, seed: int = 11
              ) -> tuple[np.ndarray, np.ndarray]:
        """B and bias of a problem with more columns or rows whose leading
        K x N block (and first N bias values) are the probe's own."""
        rng = np.random.default_rng(seed)
        b = rng.integers(-3, 4, size=(self.k + extra_k, self.n + extra_n)).astype(np.float16)
        b[:self.k, :self.n] = self.b
        bias = rng.integers(-3, 4, size=self.n + extra_n).astype(np.float16)
        bias[:self.n] = self.bias
        return b, bias


def _guarded_copy(data: np.ndarray, keep: int, room: int) -> np.ndarray:
    """The first `keep` bytes of a packed buffer inside an allocation of `room`
    bytes (and guards) filled with FILL; returns the view at the buffer's start."""
    raw = np.full(room + 2 * GUARD, FILL, dtype=np.uint8)
    raw[GUARD:GUARD + keep] = data[:keep]
    return raw[GUARD:GUARD + room]


def _call(engine: Engine, ops: Operands, r: api.Realization, packed: np.ndarray, keep: int,
          room: int, bias: np.ndarray | None) -> tuple[str, str]:
    """One call with a (possibly misused) packed B; the finding and its detail."""
    buf = _guarded_copy(packed, keep, room)
    c = GuardedBuffer(ops.m, ops.n, ops.n)
    problem = api.RawProblem(a=ops.a, lda=ops.k, b=buf, ldb=0, c=c.view, ldc=ops.n, bias=bias,
                             b_size=keep, b_is_packed=True, b_is_backend_native_packed=True)
    sel = api.Selector(force=r.name, plugins=True)
    try:
        res = engine.gemm_raw(ops.m, ops.n, ops.k, [problem], sel)
    except WorkerCrashed as exc:
        return CRASHED, str(exc)
    except KbenchError as exc:
        if not c.untouched():
            return SILENTLY_WRONG, f"refused ({exc}) after writing C"
        return REFUSED, f"{type(exc).__name__}: {exc}"
    if res.realization is not None and res.realization.name != r.name:
        return SILENTLY_WRONG, f"{res.realization.name} ran instead"
    if (damage := c.damage()):
        return SILENTLY_WRONG, damage
    got = c.view.view(np.uint16)
    wrong = got != ops.expected
    if not wrong.any():
        return ACCEPTED, ""
    i, j = (int(x) for x in np.argwhere(wrong)[0])
    return SILENTLY_WRONG, (f"{int(wrong.sum())} of {wrong.size} elements wrong; first at "
                            f"({i}, {j}): got {float(c.view[i, j])!r}, expected "
                            f"{float(ops.expected.view(np.float16)[i, j])!r}")


def _other_svl(engine: Engine, svl: int, make: Callable[[], np.ndarray]) -> np.ndarray | None:
    """B packed at another SVL (twice the current one, or half at 2048 bits),
    or None when this engine cannot change its vector length."""
    set_svl = getattr(engine, "set_svl", None)
    if not svl or set_svl is None:
        return None
    other = svl * 2 if svl < 2048 else svl // 2
    try:
        if set_svl(other) != other:
            set_svl(svl)
            return None
    except Unsupported:
        return None
    try:
        return make()
    finally:
        set_svl(svl)


def run_probe(engine: Engine, r: api.Realization, probe: str, target: str = "",
              svl: int = 0) -> ProbeResult:
    """Runs one probe on a plugin realization that packs B (see the module doc).
    `svl` is the target's streaming vector length (0: none)."""
    if probe not in PROBE_NAMES:
        raise ValueError(f"probe: {probe!r} is not one of {', '.join(PROBE_NAMES)}")
    ops = Operands.make(r)

    def pack(b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        k, n = b.shape
        return engine.pack_plugin(r.name, n, k, b, n, bias)

    def result(finding: str, detail: str) -> ProbeResult:
        return ProbeResult(probe, r, target, finding, detail)

    try:
        valid = pack(ops.b, ops.bias)
    except WorkerCrashed as exc:
        return result(CRASHED, f"packing a valid B: {exc}")
    except KbenchError as exc:
        return result(NOT_APPLICABLE, f"its packer refused a valid B ({exc})")
    room = 2 * valid.size + 4096
    finding, detail = _call(engine, ops, r, valid, valid.size, room, None)
    if finding != ACCEPTED:
        return result(NOT_APPLICABLE if finding != CRASHED else CRASHED,
                      f"a valid call with a correctly packed B did not give the exact result "
                      f"({finding}: {detail}); see its correctness verdicts")
    bias: np.ndarray | None = None
    try:
        if probe == "other_svl":
            misused = _other_svl(engine, svl, lambda: pack(ops.b, ops.bias))
            if misused is None:
                return result(NOT_APPLICABLE, "this target cannot change its streaming vector "
                                              "length (an SME worker target can)")
        elif probe == "other_n":
            misused = pack(*ops.wider(extra_n=8))
        elif probe == "other_k":
            misused = pack(*ops.wider(extra_k=3))
        elif probe == "bias_flag":
            misused, bias = pack(ops.b, None), ops.bias
        else:  # truncated
            misused = valid
    except WorkerCrashed as exc:
        return result(CRASHED, f"packing the probe's B: {exc}")
    except KbenchError as exc:
        return result(NOT_APPLICABLE, f"its packer refused the probe's B ({exc})")
    keep = valid.size // 2 if probe == "truncated" else misused.size
    room = max(room, 2 * misused.size + 4096)
    return result(*_call(engine, ops, r, misused, keep, room, bias))


def probed(r: api.Realization) -> bool:
    """Does the realization get contract probes (a plugin's GEMM that packs B)?"""
    return r.is_plugin and r.op == "gemm" and "native" in r.bforms


__all__ = ["ACCEPTED", "CRASHED", "NOT_APPLICABLE", "PROBES", "PROBE_NAMES", "REFUSED",
           "SILENTLY_WRONG", "SUITE", "Operands", "ProbeResult", "probed", "run_probe"]
