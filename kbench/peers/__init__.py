"""Peer backends: other libraries' FP16 GEMM and convolution, run in this
process beside ours for comparison, registered through the entry-point
group `kbench.peers`.

A peer computes the same operators from the same inputs, is judged by the
same float64 oracle and error model, and is timed with the same warm-up,
calibration and round structure as the native timer. It is never one of
our backends: its realizations carry `peer=True`, `TargetInfo.backends`
leaves them out (so the packed-B contract suite never sees them), and they
take plain B only. The in-process engine routes a call to a peer when the
selector forces one of the peer's realizations.

Peers time with Python's `time.perf_counter_ns` around the library's own
call, so their times include that library's call overhead (and a Python
loop iteration per call, tens of nanoseconds); the native timer has no
such overhead. Work done to adapt kbench's operands to the peer (copying a
strided A into a dense array, NHWC <-> NCHW transposes, writing the result
into the caller's strided C) happens outside the timed region.

Peers are registrations in the package entry-point group `kbench.peers`:
any installed package can add one without touching kbench (onnxruntime's
peer is kbench's own registration, `ort = "kbench.peers.ort:OrtPeer"`). The
protocol a registration implements:

- the entry point names a callable (usually a class) taking no arguments
  and returning a peer object (or a list of them);
- `available() -> bool` and `unavailable_reason() -> str` say whether the
  library it wraps can run here (a missing package is a reason, not an
  error);
- `realizations() -> list[Realization]` lists what it offers, each with
  `peer=True`, a `backend` equal to the entry point's name, `bforms=("plain",)`
  for a GEMM (peers take plain B) and its declared accumulation model (or the
  looser FP16 one when the library declares none);
- `gemm(m, n, k, problems, selector, timing)` and `conv(desc, x, w, bias,
  out, selector, timing)` compute into the caller's buffers (leading
  dimensions as in kbench.native.api.RawProblem, NHWC/HWIO for
  convolution), return a `CallResult` naming the realization that ran, time
  with `kbench.peers.timing.time_calls` when `timing` is given, and raise
  KbenchError subclasses (Unsupported for a call they do not take).

A registration that fails to import or does not implement the protocol is
reported (its name and the reason) and left out; the rest still run.

May import: kbench.errors, kbench.native, kbench.judge, kbench.problems.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from kbench.native.api import RawProblem, Realization, Selector
    from kbench.native.calls import CallResult, ConvDesc, Timing


class Peer(Protocol):
    """What the in-process engine needs from a peer backend."""

    def available(self) -> bool: ...

    def unavailable_reason(self) -> str: ...

    def realizations(self) -> list[Realization]: ...

    def gemm(self, m: int, n: int, k: int, problems: list[RawProblem],
             selector: Selector | None = None, timing: Timing | None = None) -> CallResult: ...

    def conv(self, desc: ConvDesc, x: np.ndarray | None, w: np.ndarray | None,
             bias: np.ndarray | None, out: np.ndarray | None,
             selector: Selector | None = None, timing: Timing | None = None) -> CallResult: ...


ENTRY_POINT_GROUP = "kbench.peers"
# kbench's own registrations, as pyproject.toml declares them; used when kbench runs
# from a source tree without installed metadata (the emulated Python of qemu-python)
BUILTIN = {"ort": "kbench.peers.ort:OrtPeer"}
PROTOCOL = ("available", "unavailable_reason", "realizations", "gemm", "conv")


@dataclass(frozen=True)
class Registration:
    """One entry point of the group: its name (the peer's backend) and target."""

    name: str
    value: str  # "module:attribute"
    source: str  # the distribution that declares it, or "built-in"


@dataclass
class PeerLoad:
    """What the registrations gave: peers that can run here, peers that cannot
    (with their reasons) and registrations that failed (with the error)."""

    peers: list[Peer] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def registrations() -> list[Registration]:
    """Every registration of the `kbench.peers` group (kbench's own first)."""
    from importlib.metadata import entry_points

    found: dict[str, Registration] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(getattr(ep, "dist", None), "name", "") or "?"
        found.setdefault(ep.name, Registration(ep.name, ep.value, dist))
    for name, value in BUILTIN.items():
        found.setdefault(name, Registration(name, value, "built-in"))
    return sorted(found.values(), key=lambda r: (r.name not in BUILTIN, r.name))


def _instantiate(reg: Registration) -> list[Any]:
    module, _, attr = reg.value.partition(":")
    obj: Any = importlib.import_module(module.strip())
    for part in attr.strip().split(".") if attr else []:
        obj = getattr(obj, part)
    made = obj()
    return list(made) if isinstance(made, (list, tuple)) else [made]


def load_peers() -> PeerLoad:
    """Instantiates every registration; never raises for a broken one."""
    out = PeerLoad()
    for reg in registrations():
        try:
            made = _instantiate(reg)
        except Exception as exc:  # noqa: BLE001 - a third party's import may fail any way
            out.errors[reg.name] = (f"entry point {reg.name} = {reg.value!r} ({reg.source}) "
                                    f"failed to load: {type(exc).__name__}: {exc}")
            continue
        for peer in made:
            missing = [m for m in PROTOCOL if not callable(getattr(peer, m, None))]
            if missing:
                out.errors[reg.name] = (f"entry point {reg.name} = {reg.value!r} ({reg.source}) "
                                        f"does not implement the peer protocol (missing: "
                                        f"{', '.join(missing)})")
                continue
            if peer.available():
                out.peers.append(peer)
            else:
                out.unavailable[reg.name] = str(peer.unavailable_reason())
    return out


def default_peers() -> list[Peer]:
    """The registered peers this installation can run (onnxruntime when the
    `ort` extra is in, and whatever other packages register)."""
    return load_peers().peers


__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "Peer", "PeerLoad", "Registration", "default_peers",
           "load_peers", "registrations"]
