"""One tester for every kernel: runs a case with an input kind on a target
with a forced realization, judges the result, returns a Verdict.

A new realization needs no new test code: the suites parametrize over
whatever realizations a target lists."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np

from kbench.errors import GuardPageHit, WorkerCrashed
from kbench.judge import fingerprint as fingerprints
from kbench.judge import winograd
from kbench.judge.oracle import Reference
from kbench.judge.tolerance import AccumModel
from kbench.judge.verdict import (
    ERROR,
    FAIL,
    FAULT_STATUS,
    MISTRUSTED,
    PASS,
    SKIP,
    Verdict,
    combine,
    judge,
)
from kbench.native import api, isa
from kbench.native.calls import ConvDesc
from kbench.problems import inputs
from kbench.problems.cases import Case, ConvCase, GemmCase
from kbench.targets import whatran
from kbench.targets.spec import Target

# A fingerprinted job compares FINGERPRINT_WORK / K output elements, at most
# FINGERPRINT_ELEMENTS and at least 256 (or all), sampled (kbench.fingerprint).
FINGERPRINT_WORK = 1 << 19
FINGERPRINT_ELEMENTS = 2048


class InputCache:
    """Inputs and oracle of the last few (case, kind) pairs: every realization
    on every target sees the same inputs, generated and judged once."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._items: OrderedDict[tuple[Case, str], object] = OrderedDict()

    def get(self, case: Case, kind: str) -> inputs.GemmInputs | inputs.ConvInputs:
        key = (case, kind)
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]  # type: ignore[return-value]
        value = (inputs.gemm_inputs(case, kind) if isinstance(case, GemmCase)
                 else inputs.conv_inputs(case, kind))  # type: ignore[arg-type]
        self._items[key] = value
        if len(self._items) > self.size:
            self._items.popitem(last=False)
        return value


@dataclass(frozen=True)
class Job:
    case: Case
    kind: str
    realization: api.Realization
    target: str
    catalog: str = ""
    fingerprint: bool | None = None  # the accumulation fingerprint; None: for peers only

    @property
    def id(self) -> str:
        return f"{self.target}-{self.realization.name}-{self.case.name}-{self.kind}"


def applicable(case: Case, r: api.Realization) -> bool:
    """Does the realization take this case (operator, form of B, shape class)?"""
    if r.op != case.op:
        return False
    if isinstance(case, GemmCase):
        return (case.b_form in r.bforms and (not r.max_m or case.m <= r.max_m)
                and not _bias_with_native(case, r))
    if r.conv_class == "3x3s1" and not (case.kh == case.kw == 3 and case.stride == (1, 1)
                                         and case.dilation == (1, 1)):
        return False
    return not r.max_groups or case.groups <= r.max_groups


def _bias_with_native(case: GemmCase, r: api.Realization) -> bool:
    """A native-B case with a bias, on a realization whose packed B carries none
    and whose calls take none with it (plugin ABI 3: KB_PLUGIN_PACK_NO_BIAS)."""
    return case.b_form == "native" and case.bias and r.native_bias == "none"


def why_not(case: Case, r: api.Realization) -> str:
    """Why a realization of the case's operator does not take it ('' if it does)."""
    if r.op != case.op:
        return f"{r.name} computes {r.op}, not {case.op}"
    if isinstance(case, GemmCase):
        if case.b_form not in r.bforms:
            return f"B form {case.b_form} (it takes {'/'.join(r.bforms) or 'none'})"
        if r.max_m and case.m > r.max_m:
            return f"M > {r.max_m} (its shape class: M <= {r.max_m})"
        if _bias_with_native(case, r):
            return ("a bias with its own packed B (its packer takes no bias and a call with "
                    "its packed B takes none: KB_PLUGIN_PACK_NO_BIAS)")
        return ""
    if r.conv_class == "3x3s1" and not applicable(case, r):
        return "not a 3x3 stride-1 undilated convolution (its shape class is 3x3s1)"
    if r.max_groups and case.groups > r.max_groups:
        return f"groups > {r.max_groups} (it takes groups <= {r.max_groups})"
    return ""


# the B form a case runs with on a realization that does not take its own,
# in order of preference: the shape is what matters
B_FORM_FALLBACK = {"packed": ("native", "plain"), "native": ("packed", "plain"),
                   "plain": ("native", "packed")}
B_FORM_TAG = "b_form_from_"  # tag of a case run with another B form: b_form_from_<its own>


def adapted(case: Case, r: api.Realization) -> Case:
    """The case as the realization can run it: a GEMM case whose B form it
    does not take, with the first form of B_FORM_FALLBACK it does take
    (tagged b_form_from_<form>; ldb_pad only applies to plain B); any other
    case unchanged."""
    if (not isinstance(case, GemmCase) or r.op != case.op or case.b_form in r.bforms
            or not r.bforms):
        return case
    runs = [replace(case, b_form=f, ldb_pad=case.ldb_pad if f == "plain" else 0,
                    tags=(*case.tags, f"{B_FORM_TAG}{case.b_form}"))
            for f in B_FORM_FALLBACK[case.b_form] if f in r.bforms]
    return next((c for c in runs if applicable(c, r)), runs[0] if runs else case)


def _verdict(job: Job, status: str, message: str = "", ran: api.Realization | None = None
             ) -> Verdict:
    case, r = job.case, ran or job.realization
    m, n = (case.m, case.n) if isinstance(case, GemmCase) else (
        case.n * case.out_h * case.out_w, case.c_out)
    return Verdict(
        case=case.name, op=case.op, shape=case.shape_str(), kind=job.kind, target=job.target,
        backend=r.backend, realization=r.name, kernel=r.kernel, accum=r.accum,
        k=case.reduction, m=m, n=n,
        b_form=case.b_form if isinstance(case, GemmCase) else "",
        vector_bits=r.vector_bits, status=status, message=message, catalog=job.catalog,
        tags=list(case.tags), layers=case.layers, flops=case.flops, threads=r.threads,
        plugin=r.plugin or job.realization.plugin,
    )


def run_job(target: Target, job: Job, selector: api.Selector | None = None,
            cache: InputCache | None = None, force: bool = True) -> Verdict:
    """Runs and judges one job. With force=False the selector (e.g. its
    dispatch table) chooses, and the job's realization is what it must pick."""
    case, want = job.case, job.realization
    if not applicable(case, want):
        return _verdict(job, SKIP, f"{want.name} does not take this case")
    try:  # a case whose inputs cannot be made (too large, ...) is an error, not a lost row
        made = cache.get(case, job.kind) if cache else (
            inputs.gemm_inputs(case, job.kind) if isinstance(case, GemmCase)
            else inputs.conv_inputs(case, job.kind))  # type: ignore[arg-type]
    except Exception as exc:  # noqa: BLE001 - recorded as the verdict
        return _verdict(job, ERROR, f"inputs: cannot generate the {job.kind} inputs of "
                                    f"{case.shape_str()}: {type(exc).__name__}: {exc}")
    if isinstance(case, GemmCase):
        inp = made
        assert isinstance(inp, inputs.GemmInputs)
        outcome = target.run_gemm(case, inp, want.name, selector, force, guard_for(job))
        refs = inp.refs
        has_bias = case.bias
    else:
        assert isinstance(case, ConvCase)
        cinp = made
        assert isinstance(cinp, inputs.ConvInputs)
        outcome = target.run_conv(case, cinp, want.name, selector, force, guard_for(job))
        refs = [cinp.ref]
        has_bias = case.bias
    if outcome.error is not None:
        if isinstance(outcome.error, GuardPageHit):
            return guard_verdict(job, outcome.error)
        if outcome.error.field == "ABI":  # a checking run's calling-convention finding
            return _verdict(job, FAIL, f"{outcome.error} (on {job.case.shape_str()}, "
                                       f"{job.case.name}, {job.kind})")
        if isinstance(outcome.error, WorkerCrashed) and outcome.error.fault in FAULT_STATUS:
            return fault_verdict(job, outcome.error, outcome.guard_detail)
        msg = f"{type(outcome.error).__name__}: {outcome.error}"
        if outcome.guard_detail:
            msg += f"; {outcome.guard_detail}"
        return _verdict(job, ERROR, msg)
    ran = outcome.ran
    assert ran is not None
    if ran.name != want.name:
        how = "asked for" if force else "dispatch should have chosen"
        return _verdict(job, FAIL, f"{how} {want.name} but {ran.name} ran", ran)
    # a realization whose chain starts from the bias spends no rounding on it
    model = AccumModel(ran.accum, ran.k_per_rounding,
                       bias_rounding=ran.error_model != "gemm_bias_first")
    k = case.reduction
    gemm_class = None
    if ran.error_model == "winograd_f2x2_3x3" and isinstance(case, ConvCase):
        # its own model: the transforms' magnitude sum and extra roundings,
        # over a channel sum of c_in / groups; the GEMM-class ratio is kept
        # alongside to show how far from that bound Winograd lands
        gemm_class = combine([judge(out, ref, model, k, has_bias, False, ran.nan_clamp)
                              for out, ref in zip(outcome.outputs, refs, strict=True)])
        s_w = winograd.magnitude_sum(cinp.x, cinp.w, cinp.bias, case.pad, case.groups)
        refs = [Reference(r.exact, s_w, r.rounded, np.where(np.isfinite(s_w), s_w, 0.0),
                          r.clamp) for r in refs]
        model = AccumModel(ran.accum, ran.k_per_rounding, winograd.EXTRA_ROUNDINGS, True)
        k = case.c_in // case.groups
    j = combine([judge(out, ref, model, k, has_bias, job.kind == "exact", ran.nan_clamp)
                 for out, ref in zip(outcome.outputs, refs, strict=True)])
    status = PASS
    message = j.detail
    if outcome.guard_detail:
        status, message = FAIL, outcome.guard_detail
    elif not j.ok:
        status = FAIL
    elif j.mistrusted:
        status = MISTRUSTED
    v = _verdict(job, status, message, ran)
    if outcome.code is not None:  # which code ran, and whether it is where the plugin declares
        v.ran = outcome.code.text()
        if (elsewhere := whatran.check(outcome.code, want.expect_symbols,
                                       tuple(isa.classes_of(target.info().cpu_features)))):
            v.status = FAIL
            v.message = f"{elsewhere}; {v.message}" if v.message else elsewhere
    v.max_err_bound, v.max_ulp, v.rms_rel = j.max_ratio, j.max_ulp, j.rms_rel
    if outcome.heap.measured:  # what the realization held on the heap (a worker's call)
        v.heap_peak, v.heap_retained = outcome.heap.peak, outcome.heap.after
    v.max_err_gemm_bound = gemm_class.max_ratio if gemm_class else j.max_ratio
    v.exact, v.total, v.inf_exact = j.exact, j.total, j.inf_exact
    if wants_fingerprint(job, ran) and all(o.size for o in outcome.outputs):
        if isinstance(case, GemmCase):
            fp = fingerprints.gemm(inp.a, inp.b, inp.bias, inp.clamp, outcome.outputs,
                                   FINGERPRINT_WORK, FINGERPRINT_ELEMENTS)
        else:
            params = api.ConvParams(case.stride, case.pad, case.dilation, case.groups,
                                    cinp.clamp)
            desc = ConvDesc.from_shapes(cinp.x.shape, cinp.w.shape, params)
            fp = fingerprints.conv(cinp.x, cinp.w, cinp.bias, desc, outcome.outputs[0],
                                   FINGERPRINT_WORK, FINGERPRINT_ELEMENTS)
        v.accum_model, v.accum_match = fp.model, fp.match
        if (note := contradiction(ran, fp.model, fp.match)):
            v.message = f"{note}; {v.message}" if v.message else note
    return v


def job_verdict(job: Job, status: str, message: str = "", suite: str = "correctness") -> Verdict:
    """A verdict about a job that is not a judged output (a determinism check,
    a fault): its case, realization and target, the given status and message."""
    v = _verdict(job, status, message)
    v.suite = suite
    return v


def guard_for(job: Job) -> str:
    """Where a job's inputs lie against a guard page (in a worker): the end
    for exact inputs, the start for the real-valued kind, so every case is
    checked both ways."""
    return "end" if job.kind == "exact" else "start"


def guard_verdict(job: Job, exc: GuardPageHit) -> Verdict:
    """A read past an input into a guard page: a failed verdict naming the
    realization, the buffer and the shape (the worker is started afresh)."""
    r = job.realization
    who = f"{r.name}" + (f" (plugin {r.plugin})" if r.plugin else "")
    return _verdict(job, FAIL, f"{who} on {job.case.shape_str()} ({job.case.name}, {job.kind}): "
                               f"{exc}; the next call starts a fresh worker")


def fault_verdict(job: Job, exc: WorkerCrashed, guard_detail: str = "") -> Verdict:
    """The verdict of a call whose process crashed, exited or timed out: its
    status says which, its message names the realization (and its plugin
    and version), the shape, how the process ended and that it was
    restarted for the next call."""
    r = job.realization
    who = f"{r.name}" + (f" (plugin {r.plugin})" if r.plugin else "")
    how = exc.fault or f"{type(exc).__name__}"  # "": the target's fault, an error
    msg = (f"{how}: {who} on {job.case.shape_str()} ({job.case.name}, {job.kind}): "
           f"{exc}; the next call starts a fresh worker")
    if guard_detail:
        msg += f"; {guard_detail}"
    return _verdict(job, FAULT_STATUS.get(exc.fault, ERROR), msg)


def contradiction(ran: api.Realization, model: str, match: float) -> str:
    """For a plugin realization whose output fingerprint clearly belongs to the
    other accumulation family than the one it declares: a note saying so
    ('' otherwise). Reported, not failed: the error bound judges the result."""
    if not ran.is_plugin:
        return ""
    found = fingerprints.category(model, match)
    if found not in (fingerprints.FP32, fingerprints.FP16) or found == ran.accum:
        return ""
    return (f"fingerprint contradicts the declared model: declared {ran.accum} accumulation, "
            f"the output matches {model} ({match:.1%})")


def wants_fingerprint(job: Job, ran: api.Realization) -> bool:
    """Is the accumulation model of this job's output fingerprinted? Peers and
    plugins by default (kernels from outside: their declared model is checked
    against what they do), every realization when the job asks for it; never
    exact-by-design inputs, on which every model agrees by construction
    (indistinguishable)."""
    if job.kind == "exact":
        return False
    return (ran.peer or ran.is_plugin) if job.fingerprint is None else job.fingerprint


def random_kind(case: Case) -> str:
    """The real-valued kind a case runs besides `exact` (stable per case)."""
    return ("uniform", "normal", "specials")[inputs.seed_for(case.name, "kind") % 3]


def jobs_for(cases: list[Case], realizations: list[api.Realization], target: str,
             catalog: str = "", kinds: tuple[str, ...] | None = None,
             fingerprint: bool | None = None, adapt: bool = False) -> list[Job]:
    """Every case x input kind x applicable realization (`fingerprint` as in
    Job). With adapt=True a GEMM case whose B form a realization does not
    take runs with one it does take (`adapted`)."""
    out = []
    for case in cases:
        ks = kinds or ("exact", random_kind(case))
        for r in realizations:
            run = adapted(case, r) if adapt else case
            if not applicable(run, r):
                continue
            for k in ks:
                out.append(Job(run, k, r, target, catalog, fingerprint))
    return out
