"""Targets in parallel: one `kbench run` over several targets spreads them
over pytest-xdist worker processes, one group per target (--dist
loadgroup), so a slow emulated or remote target never holds up the others,
and everything lands in one run folder and one history entry.

How the pieces fit:
- the controlling process probes every target once, in parallel threads
  (`probe_targets`): its description (TargetInfo) and its packers, or why
  it cannot be reached. xdist hands the probes to each worker process
  (`workerinput`), so collection is identical everywhere and no worker
  connects to a target it will not run;
- every test that belongs to a target joins that target's group
  (`group_by_target`); tests tied to no target go with the first target;
- a worker writes no run folder: each verdict it records rides back on the
  test's report (`report.kb_verdicts`), and the controlling process writes
  it to the one run folder as the report arrives. A verdict is sent with
  exactly one report and written once (tested against a serial run).

`probe_targets` also serves `kbench info --fleet`."""

from __future__ import annotations

import base64
import pickle
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pytest

from kbench.errors import KbenchError
from kbench.harness import contracts
from kbench.judge.verdict import Verdict
from kbench.native.calls import TargetInfo
from kbench.targets.spec import Target, parse_target

PROBES_KEY = "kb_probes"  # in xdist's workerinput
VERDICTS_ATTR = "kb_verdicts"  # on a test report sent by a worker
# fixtures whose parameter names the target a test runs on
_TARGET_PARAMS = ("kb_job", "kb_perf_job", "kb_dispatch_job", "kb_contract", "kb_spec")


@dataclass
class Probe:
    """One target as the controlling process found it."""

    spec: str
    info: TargetInfo | None = None
    natives: list[str] = field(default_factory=list)  # backends with a native packed layout
    error: str = ""  # why it cannot be used ("" if it can)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.info is not None and not self.error


def unavailable(spec: str, exc: Exception) -> str:
    """Why a target cannot be used, starting with its name (once)."""
    msg = str(exc)
    return msg if msg.startswith(spec) else f"{spec}: {msg}"


def probe(spec: str, make: Callable[[str], Target] = parse_target) -> Probe:
    """Connects to a target, describes it and closes it; an unreachable target
    is a Probe with its error, never an exception."""
    import time
    start = time.monotonic()
    target: Target | None = None
    try:
        target = make(spec)
        info = target.info()
        natives = contracts.native_backends(target.engine)
        return Probe(spec, info, natives, "", time.monotonic() - start)
    except KbenchError as exc:
        return Probe(spec, None, [], unavailable(spec, exc), time.monotonic() - start)
    finally:
        if target is not None:
            target.close()


def probe_targets(specs: list[str], make: Callable[[str], Target] = parse_target,
                  threads: int = 8) -> dict[str, Probe]:
    """Probes every target at once (threads: each probe mostly waits on a
    process or a connection). Targets are parsed first, one after another,
    so that a stale worker is built once, not by several threads at a time."""
    made: dict[str, Target | Probe] = {}
    for spec in specs:
        try:
            made[spec] = make(spec)
        except KbenchError as exc:
            made[spec] = Probe(spec, None, [], unavailable(spec, exc))

    def one(spec: str) -> Probe:
        item = made[spec]
        return item if isinstance(item, Probe) else probe(spec, lambda _s: item)

    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(specs)))) as pool:
        return dict(zip(specs, pool.map(one, specs), strict=True))


def encode_probes(probes: dict[str, Probe]) -> str:
    return base64.b64encode(pickle.dumps(probes)).decode()


def decode_probes(text: str) -> dict[str, Probe]:
    return pickle.loads(base64.b64decode(text))  # noqa: S301 - written by our own controller


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def target_of(item: pytest.Item) -> str | None:
    """The target spec a collected test runs on, if it names one."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    for name in _TARGET_PARAMS:
        value = params.get(name)
        if isinstance(value, str):
            return value
        if isinstance(value, tuple) and value and isinstance(value[0], str):
            return value[0]  # kb_contract: (spec, case)
        if isinstance(getattr(value, "target", None), str):
            return str(value.target)
    return None  # no target, or an empty parametrization


def group_name(spec: str) -> str:
    """A target's xdist group: xdist takes the group from after the last `@`
    of a test id, so the `@` of user@host is spelled `+`."""
    return spec.replace("@", "+")


def group_by_target(items: list[pytest.Item], default: str) -> None:
    """Puts every test in the group of its target, the way --dist loadgroup
    reads groups: a test id suffix `@group` (what xdist_group marks become).
    Written here because pytest 9.2 keeps a test's id in `_id`, where
    pytest-xdist 3.8 does not look (it sets `_nodeid`)."""
    for item in items:
        new = f"{item.nodeid}@{group_name(target_of(item) or default)}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import coerce_node_id  # pytest >= 9.2
            item._id = coerce_node_id(new)
        else:
            item._nodeid = new
        assert item.nodeid == new, "pytest changed where a test's id lives"


def _plain(value: Any) -> Any:
    """A value execnet can carry (numpy scalars become Python numbers)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def verdict_to_wire(v: Verdict) -> dict[str, Any]:
    return {f.name: _plain(getattr(v, f.name)) for f in fields(Verdict)}


def verdict_from_wire(d: dict[str, Any]) -> Verdict:
    names = {f.name for f in fields(Verdict)}
    return Verdict(**{k: v for k, v in d.items() if k in names})
