"""Counting one perf case on an emulated target: a fresh counting worker
(kbench.targets.counting), B packed there as the case asks (the pack_b
window), one uncounted warm-up call (it leaves the scratch buffers the
counted call finds ready, as in a steady stream of calls), then the same
call counted, single threaded, with the production selector: whatever
checks of the packed buffer a production call makes are counted, in the
validate phase. The verdict gets the counts per phase, the
mix, the floor and the efficiency, and which QEMU, CPU and SVL counted
them.

A plugin's realization is counted in the dynamically linked worker with
the run's plugins loaded (kbench.targets.counting: phases from the plugin
table's entry points).

qemu-python targets are not counted: their kernels run inside an emulated
CPython that loads kbench's cffi module at an address known only after
start-up, and logging the interpreter around each call would cost more
than the calls; such rows say so in count_note."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from kbench.errors import KbenchError
from kbench.harness.perf import PERF_KIND
from kbench.harness.runner import InputCache, Job
from kbench.judge.verdict import Verdict
from kbench.native import api
from kbench.native.calls import ConvDesc
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.results import counts as rc
from kbench.targets.counting import METHOD, CountError, CountTool
from kbench.targets.qemutrace import ROOT, Window
from kbench.targets.spec import GuardedBuffer, Target, parse_qemu
from kbench.targets.tools import find_qemu, worker_binary

NOT_FEASIBLE = ("not counted: qemu-python runs the kernels inside an emulated CPython (its cffi "
                "module's addresses are known only after start-up, and logging the interpreter "
                "around each call would cost more than the calls); count on the qemu: target")


@dataclass
class Counter:
    """Counting tools per worker binary, kept for a session (no global state).
    plugins: the plugin libraries a plugin realization's count loads (every
    --plugin of the run, as given; {arch} is expanded by the worker);
    kernel_entries: per plugin realization, the function of its library
    whose instructions are its kernel phase (kbench.targets.counting)."""

    method: str = "tb"
    tools: dict[str, CountTool] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()
    kernel_entries: dict[str, str] = field(default_factory=dict)  # realization -> function

    def tool(self, dynamic: bool = False) -> CountTool:
        worker = worker_binary("aarch64-dyn" if dynamic else "aarch64")
        if worker not in self.tools:
            self.tools[worker] = CountTool.load(find_qemu(), worker, dynamic)
        return self.tools[worker]


def countable(target_spec: str) -> bool:
    return target_spec == "qemu" or target_spec.startswith("qemu:")


def _phase_fields(call: Window, pack: Window | None) -> dict[str, float]:
    out: dict[str, float] = {
        "count_call": call.total,
        "count_validate": call.top_total("validate"),
        "count_checksum": call.phase_total("checksum"),
        "count_pack_lhs": call.top_total("pack_lhs"),
        "count_pack_rhs": call.top_total("pack_rhs"),
        "count_kernel": call.top_total("kernel"),
        "count_other": call.top_total(ROOT),
    }
    if pack is not None:
        out["count_pack_b"] = pack.total
        out["count_pack_b_checksum"] = pack.phase_total("checksum")
    return out


def _mix(call: Window, pack: Window | None) -> str:
    mix = {"call": call.top_mix(None)}
    for phase in ("validate", "pack_lhs", "pack_rhs", "kernel"):
        if call.top_total(phase):
            mix[phase] = call.top_mix(phase)
    if call.top_total(ROOT):
        mix["other"] = call.top_mix(ROOT)
    if pack is not None:
        mix["pack_b"] = pack.top_mix(None)
    return rc.mix_json(mix)


def count_fields(counter: Counter, job: Job, cache: InputCache | None = None,
                 method: str | None = None, verify_payload: bool = False,
                 one_call: bool = False) -> dict[str, object]:
    """The count columns of one job (raises CountError/KbenchError when it
    cannot be counted exactly). verify_payload: the counted calls verify
    the packed B's payload checksum (validate then holds it); one_call: the
    GEMM's micro-kernel runs once over the whole problem (selector.one_call)."""
    q = parse_qemu(job.target)
    mode = method or counter.method
    case, real = job.case, job.realization
    plugins = counter.plugins if real.is_plugin else ()
    if real.is_plugin and not plugins:
        raise CountError(f"count: {real.name} is a plugin's, and no plugin library was given",
                         "plugin")
    tool = counter.tool(dynamic=bool(plugins))
    entries = {r: f for r, f in counter.kernel_entries.items() if r == real.name}
    with tool.session(q.qemu_cpu, q.isa, mode, plugins, entries) as session:
        target = Target(job.target, session.engine)
        sel = api.Selector(force=real.name, threads=1,  # the production defaults
                           verify_payload=verify_payload, one_call=one_call)
        if isinstance(case, GemmCase):
            inp = (cache or InputCache(1)).get(case, PERF_KIND)
            assert isinstance(inp, inputs.GemmInputs)
            bufs = [GuardedBuffer(case.m, case.n, case.ldc) for _ in range(case.batch)]
            problems = target.gemm_problems(case, inp, real, sel, bufs)
            packs = case.batch if case.b_form in ("packed", "native") else 0
            runs = [session.engine.gemm_raw(case.m, case.n, case.k, problems, sel)
                    for _ in range(2)]
        else:
            assert isinstance(case, ConvCase)
            cinp = (cache or InputCache(1)).get(case, PERF_KIND)
            assert isinstance(cinp, inputs.ConvInputs)
            out = np.empty((case.n, case.out_h, case.out_w, case.c_out), np.float16)
            params = api.ConvParams(case.stride, case.pad, case.dilation, case.groups,
                                    cinp.clamp)
            desc = ConvDesc.from_shapes(cinp.x.shape, cinp.w.shape, params)
            x, w = np.ascontiguousarray(cinp.x), np.ascontiguousarray(cinp.w)
            packs = 0
            runs = [session.engine.conv_raw(desc, x, w, cinp.bias, out, sel) for _ in range(2)]
        ran = runs[-1].realization
        if ran is None or ran.name != real.name:
            raise CountError(f"count: {real.name} was forced but "
                             f"{ran.name if ran else 'nothing'} ran", "realization")
        windows = session.windows(packs + 2)
    kinds = [w.kind for w in windows]
    if kinds != ["pack_b"] * packs + ["call", "call"]:
        raise CountError(f"count: expected {packs} packing and 2 call windows, got {kinds}",
                         "trace")
    pack = windows[0] if packs else None
    call = windows[-1]
    fields: dict[str, object] = {
        "count_method": METHOD[mode], "count_qemu": tool.version, "count_cpu": q.qemu_cpu,
        "count_mix": _mix(call, pack), **_phase_fields(call, pack)}
    heap = runs[-1].heap  # the counted call's heap (the worker's interposed allocator)
    if heap.measured:
        fields["heap_peak"], fields["heap_retained"] = heap.peak, heap.after
    fl = rc.floor(real.kernel, real.vector_bits, case)
    if fl is not None:
        fields["count_floor"] = fl.instructions
        fields["count_floor_kind"] = fl.kind
        kernel = fields["count_kernel"]
        if isinstance(kernel, int | float) and kernel > 0:
            fields["count_efficiency"] = fl.instructions / kernel
    return fields

def with_counts(counter: Counter, v: Verdict, job: Job, cache: InputCache | None = None
                ) -> Verdict:
    """The perf verdict with its counts (or a note saying why it has none)."""
    if job.target.startswith("qemu-python"):
        return replace(v, count_note=NOT_FEASIBLE)
    if not countable(job.target):
        return v
    try:
        return replace(v, **count_fields(counter, job, cache))  # type: ignore[arg-type]
    except KbenchError as exc:
        return replace(v, status="error", message=f"instruction count: {exc}",
                       count_note=f"not counted: {exc}")
