"""Contract probes of realizations that pack B: the packed-B contract checked
from the outside.

kbench cannot look inside a plugin's packed B, but it can misuse one the way
a runtime might by mistake and watch what the realization does. Each probe
packs B with the realization's own packer, misuses the buffer in one way,
calls the realization with it and records one finding:

    refused                   the call returned an error (the plugin's status, or
                              for the micro-kernel form kbench's header check)
                              and left C and its guards untouched
    accepted, correct         the call ran and the result is still right (the
                              misuse does not matter to this realization, e.g. a
                              packed B that does not depend on the vector length)
    silently wrong            the call ran and the result is wrong, or it wrote
                              outside C, or it refused after writing C
    crashed                   the process running the plugin died (a worker, so
                              kbench survives and reports it)
    refused a valid call      its packer refused the valid B, or the realization
                              the valid call every probe makes first: nothing can
                              be probed (an error; its correctness verdicts say more)
    not applicable            the probe cannot be made here (the vector length
                              cannot be changed, its packer refuses the probe's
                              misused B)

Vector-length probes (every realization that packs its own B, ours and
plugins', on a target whose worker can change a vector length: the SME
streaming vector length with prctl(PR_SME_SET_VL), the SVE vector length
with prctl(PR_SVE_SET_VL)): B packed at one length and the call made at
another, in the same worker, both ways, for two other lengths (the
neighbours of the target's own: half and twice, or the next two where one
of them is out of range): "svl_pack_lo" packs at the lower other length and
calls at the target's, "svl_call_lo" packs at the target's and calls at the
lower one, and "_hi" likewise ("sve_..." for the SVE vector length). A
silently wrong result there is a failure of the realization whatever else is
asked ("accepts a B packed at SVL 256 while running at SVL 512: 37 of 200
outputs wrong"): a runtime whose thread changed its vector length, or that
packed B once for many processes, computes garbage without a word.

Misuse probes (plugin realizations): packed for N + 8 or K + 3 (the leading
K x N block is the call's B), packed without bias and called with a separate
bias (the caller clearly wants the bias added), and the packed B cut to half
its size (the bytes after the cut are 0xA5, inside the allocation, so a
plugin that reads on finds garbage instead of faulting). Their findings are
about the plugin's checks: recorded without failing the run unless asked
(--strict-plugins).

A realization whose packer takes no bias (plugin ABI 3, KB_PLUGIN_PACK_NO_BIAS)
has every B of its probes packed without one; its valid call passes the bias
separately where it declares so (KB_PLUGIN_PACK_BIAS_AT_CALL) and none
otherwise, and the expected result follows.

Inputs are small integers, so every correct result is exact and the
expected output is computed exactly; a finding never depends on rounding.
Every probe first makes a valid call with a correctly packed B: a wrong
result there is a failure of the realization (a valid call, whatever the
probe), never a skip.

Findings are verdicts of the suite "plugin-contracts" (a plugin's) or
"contracts" (ours), case "probe_<name>": refused and accepted-correct pass,
silently wrong fails, crashed is an error, not applicable is skipped with
its reason."""

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
REFUSED_VALID = "refused a valid call"
NOT_APPLICABLE = "not applicable"
STATUS = {REFUSED: PASS, ACCEPTED: PASS, SILENTLY_WRONG: FAIL, CRASHED: ERROR,
          REFUSED_VALID: ERROR, NOT_APPLICABLE: SKIP}
SUITE = "plugin-contracts"  # a plugin's probes
OURS_SUITE = "contracts"  # ours
FILL = 0xA5  # bytes after a truncated buffer, and its guards
VL_RANGE = (128, 2048)  # vector lengths an SME or SVE worker can be switched to (bits)


@dataclass(frozen=True)
class Probe:
    name: str
    what: str


MISUSE = (
    Probe("other_n", "B packed for N + 8"),
    Probe("other_k", "B packed for K + 3"),
    Probe("bias_flag", "B packed without bias, called with a separate bias"),
    Probe("truncated", "the packed B cut to half its size"),
)
# vector-length probes: (kind, what the vector length is called)
VL_KINDS = {"svl": "SVL", "sve": "SVE VL"}
VL_PROBES = tuple(Probe(f"{kind}_{way}_{side}",
                        f"B packed at a {'lower' if side == 'lo' else 'higher'} {label}, called at "
                        "the target's" if way == "pack" else
                        f"B packed at the target's {label}, called at a "
                        f"{'lower' if side == 'lo' else 'higher'} one")
                  for kind, label in VL_KINDS.items() for side in ("lo", "hi")
                  for way in ("pack", "call"))
PROBES = MISUSE + VL_PROBES
PROBE_NAMES = tuple(p.name for p in PROBES)
MISUSE_NAMES = tuple(p.name for p in MISUSE)


def is_vl_probe(name: str) -> bool:
    """A vector-length probe (its silently wrong finding always fails the run)."""
    return name.split("_", 1)[0] in VL_KINDS


def other_lengths(bits: int) -> tuple[int, int]:
    """The two other vector lengths a probe packs or calls at: half and twice
    the target's, or the next two inside VL_RANGE where one is outside it
    (lower first)."""
    lo, hi = VL_RANGE
    ladder = [v for v in (bits // 4, bits // 2, bits * 2, bits * 4) if lo <= v <= hi]
    near = sorted(ladder, key=lambda v: (abs(v.bit_length() - bits.bit_length()), v))[:2]
    if len(near) < 2:
        raise ValueError(f"no two other vector lengths beside {bits} in {lo}..{hi}")
    return min(near), max(near)


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
            suite=SUITE if r.is_plugin else OURS_SUITE, plugin=r.plugin)


@dataclass
class Operands:
    """The exact-by-design operands of the probes for one realization."""

    m: int
    n: int
    k: int
    a: np.ndarray
    b: np.ndarray
    bias: np.ndarray
    expected: np.ndarray  # bits of the exact result with the bias (FP16 view as uint16)
    unbiased: np.ndarray  # ... and without it

    @classmethod
    def make(cls, r: api.Realization, seed: int = 7) -> Operands:
        rng = np.random.default_rng(seed)
        m = min(5, r.max_m) if r.max_m else 5
        n, k = 40, 21  # N a multiple of 4 and 8, with a tail for 32- and 64-column blocks
        a = rng.integers(-3, 4, size=(m, k))
        b = rng.integers(-3, 4, size=(k, n))
        bias = rng.integers(-3, 4, size=n)
        exact = (a @ b + bias).astype(np.float16)  # |value| <= 192: exact in FP16
        plain = (a @ b).astype(np.float16)
        return cls(m, n, k, a.astype(np.float16), b.astype(np.float16),
                   bias.astype(np.float16), exact.view(np.uint16).copy(),
                   plain.view(np.uint16).copy())

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
    """One call with a (possibly misused) packed B; the finding and its detail.
    The expected result has the bias when the call passes one or B carries it."""
    buf = _guarded_copy(packed, keep, room)
    c = GuardedBuffer(ops.m, ops.n, ops.n)
    problem = api.RawProblem(a=ops.a, lda=ops.k, b=buf, ldb=0, c=c.view, ldc=ops.n, bias=bias,
                             b_size=keep, b_is_packed=True, b_is_backend_native_packed=True)
    sel = api.Selector(force=r.name, plugins=r.is_plugin)
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
    expected = ops.expected if bias is not None or r.native_bias == "inside" else ops.unbiased
    wrong = got != expected
    if not wrong.any():
        return ACCEPTED, ""
    i, j = (int(x) for x in np.argwhere(wrong)[0])
    return SILENTLY_WRONG, (f"{int(wrong.sum())} of {wrong.size} outputs wrong; first at "
                            f"({i}, {j}): got {float(c.view[i, j])!r}, expected "
                            f"{float(expected.view(np.float16)[i, j])!r}")


def _set_length(engine: Engine, kind: str) -> Callable[[int], int] | None:
    """The engine's switch of one kind of vector length, or None."""
    return getattr(engine, "set_svl" if kind == "svl" else "set_sve_vl", None)


def _at_length(engine: Engine, kind: str, here: int, there: int,
               make: Callable[[], object]) -> tuple[bool, object]:
    """Runs make() with the vector length switched from `here` to `there` and
    back; (False, why) when this engine cannot switch to it."""
    switch = _set_length(engine, kind)
    if switch is None:
        return False, "this target cannot change its vector length"
    try:
        if switch(there) != there:
            switch(here)
            return False, f"this target cannot run at {there} bits"
    except Unsupported as exc:
        return False, str(exc)
    try:
        return True, make()
    finally:
        switch(here)


def bias_for_call(r: api.Realization, bias: np.ndarray) -> np.ndarray | None:
    """The bias a valid call with the realization's packed B passes: none when
    B carries it or when its calls take none (plugin ABI 3 declarations)."""
    return bias if r.native_bias == "at_call" else None


def run_probe(engine: Engine, r: api.Realization, probe: str, target: str = "",
              svl: int = 0, sve_vl: int = 0) -> ProbeResult:
    """Runs one probe on a realization that packs its own B (see the module
    doc). `svl` and `sve_vl` are the target's SME streaming and SVE vector
    lengths in bits (0: none)."""
    if probe not in PROBE_NAMES:
        raise ValueError(f"probe: {probe!r} is not one of {', '.join(PROBE_NAMES)}")
    ops = Operands.make(r)
    packs_bias = r.native_bias == "inside"

    def pack(b: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        k, n = b.shape
        if r.is_plugin:
            return engine.pack_plugin(r.name, n, k, b, n, bias if packs_bias else None)
        return engine.pack_raw(r.backend, n, k, b, n, bias)

    def result(finding: str, detail: str) -> ProbeResult:
        return ProbeResult(probe, r, target, finding, detail)

    call_bias = bias_for_call(r, ops.bias)
    try:
        valid = pack(ops.b, ops.bias)
    except WorkerCrashed as exc:
        return result(CRASHED, f"packing a valid B: {exc}")
    except KbenchError as exc:
        return result(REFUSED_VALID, f"its packer refused a valid B ({exc})")
    room = 2 * valid.size + 4096
    finding, detail = _call(engine, ops, r, valid, valid.size, room, call_bias)
    if finding == REFUSED:
        return result(REFUSED_VALID, f"a valid call with a correctly packed B was refused "
                                     f"({detail}); see its correctness verdicts")
    if finding != ACCEPTED:  # a wrong result (or a crash) on a valid call fails, whatever the probe
        return result(finding, f"a valid call with a correctly packed B: {detail}")
    if is_vl_probe(probe):
        return result(*_vl_probe(engine, ops, r, probe, pack, call_bias, room, svl, sve_vl))
    bias = call_bias
    try:
        if probe == "other_n":
            misused = pack(*ops.wider(extra_n=8))
        elif probe == "other_k":
            misused = pack(*ops.wider(extra_k=3))
        elif probe == "bias_flag":
            if r.native_bias == "at_call":
                return result(NOT_APPLICABLE, "its packed B takes the bias at call time "
                                              "(declared: KB_PLUGIN_PACK_BIAS_AT_CALL)")
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


def _vl_probe(engine: Engine, ops: Operands, r: api.Realization, probe: str,
              pack: Callable[[np.ndarray, np.ndarray | None], np.ndarray],
              call_bias: np.ndarray | None, room: int, svl: int, sve_vl: int
              ) -> tuple[str, str]:
    """Packs at one vector length and calls at another (see the module doc)."""
    kind, way, side = probe.split("_")
    here = svl if kind == "svl" else sve_vl
    label = VL_KINDS[kind]
    if not here:
        return NOT_APPLICABLE, f"this target has no {label}"
    lo, hi = other_lengths(here)
    there = lo if side == "lo" else hi
    packed_at, called_at = (there, here) if way == "pack" else (here, there)
    try:
        if way == "pack":
            ok, out = _at_length(engine, kind, here, there, lambda: pack(ops.b, ops.bias))
            if not ok:
                return NOT_APPLICABLE, str(out)
            assert isinstance(out, np.ndarray)
            found = _call(engine, ops, r, out, out.size, max(room, 2 * out.size + 4096),
                          call_bias)
        else:
            packed = pack(ops.b, ops.bias)
            ok, res = _at_length(engine, kind, here, there, lambda: _call(
                engine, ops, r, packed, packed.size, max(room, 2 * packed.size + 4096),
                call_bias))
            if not ok:
                return NOT_APPLICABLE, str(res)
            assert isinstance(res, tuple)
            found = res
    except WorkerCrashed as exc:
        return CRASHED, f"packing at {label} {packed_at} bits: {exc}"
    except KbenchError as exc:
        return NOT_APPLICABLE, f"its packer refused B at {label} {packed_at} ({exc})"
    finding, detail = found
    where = f"B packed at {label} {packed_at} while running at {label} {called_at}"
    if finding == SILENTLY_WRONG:
        return finding, f"accepts a {where}: {detail}"
    return finding, f"{where}" + (f": {detail}" if detail else "")


def probed(r: api.Realization) -> bool:
    """Does the realization get contract probes (a GEMM that packs its own B)?"""
    return r.op == "gemm" and "native" in r.bforms


def probe_names(r: api.Realization, svl: int = 0, sve_vl: int = 0) -> tuple[str, ...]:
    """The probes of a realization on a target with these vector lengths: the
    misuse probes for a plugin's, and the vector-length probes of every
    length the target has that the realization's packed B may depend on (an
    SME realization of ours: the SVL; an SVE one: the SVE VL; a plugin's,
    whose paths kbench cannot see: every length the target has)."""
    if not probed(r):
        return ()
    names = list(MISUSE_NAMES) if r.is_plugin else []
    kinds = []
    if svl and (r.is_plugin or r.isa in ("sme", "sme2")):
        kinds.append("svl")
    if sve_vl and (r.is_plugin or r.isa in ("sve2", "sve2p1")):
        kinds.append("sve")
    names += [p.name for p in VL_PROBES if p.name.split("_", 1)[0] in kinds]
    return tuple(names)


__all__ = ["ACCEPTED", "CRASHED", "MISUSE_NAMES", "NOT_APPLICABLE", "PROBES", "PROBE_NAMES",
           "REFUSED", "REFUSED_VALID", "SILENTLY_WRONG", "SUITE", "Operands", "ProbeResult",
           "is_vl_probe", "other_lengths", "probe_names", "probed", "run_probe"]
