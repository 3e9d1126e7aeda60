"""Judging one output against the oracle under a realization's declared
error model, and the verdict that results."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from kbench.judge.numbers import sig
from kbench.judge.oracle import Reference
from kbench.judge.tolerance import FP16_OVERFLOW, AccumModel, gamma, ulp16

PASS, FAIL, MISTRUSTED, ERROR, SKIP = "pass", "fail", "mistrusted", "error", "skip"
# A call whose process died (a signal), ended by itself (exit() in a kernel) or
# gave no answer within its time bound (killed): faults of the code that ran,
# each a failing verdict of its own (kbench.targets.worker).
CRASHED, EXITED, TIMEOUT = "crashed", "exited", "timeout"
FAULTS = (CRASHED, EXITED, TIMEOUT)
FAILING = (FAIL, ERROR, *FAULTS)  # statuses that fail a run and the gate
STATUSES = (PASS, FAIL, MISTRUSTED, ERROR, *FAULTS, SKIP)
FAULT_STATUS = {"crashed": CRASHED, "exited": EXITED, "timed out": TIMEOUT}


@dataclass
class Judgement:
    """Error statistics of one output array."""

    ok: bool
    total: int
    exact: int  # elements equal to the correctly rounded result
    violations: int
    max_ratio: float  # max |C - c| / bound over finite elements
    max_ulp: float  # max |C - fl16(c)| in ulps of fl16(c)
    rms_rel: float
    mistrusted: bool
    detail: str
    inf_exact: int = 0  # elements whose exact value is an infinity the output holds too


def _nan_bound(ref: Reference, nan_clamp: str) -> float | None:
    """The value a clamp that turns NaN into a bound gives (the bound rounded
    to FP16; a call without a clamp passes -inf and +inf), None when NaN
    propagates."""
    if nan_clamp == "propagate":
        return None
    lo, hi = ref.clamp if ref.clamp is not None else (-np.inf, np.inf)
    with np.errstate(over="ignore"):
        return float(np.float16(lo if nan_clamp == "to_min" else hi))


NAN_RULES = {"propagate": ("that NaN propagates", "KB_PLUGIN_NAN_PROPAGATE"),
             "to_min": ("that its clamp turns NaN into clamp_min", "KB_PLUGIN_NAN_TO_MIN"),
             "to_max": ("that its clamp turns NaN into clamp_max", "KB_PLUGIN_NAN_TO_MAX")}


def judge(out: np.ndarray, ref: Reference, model: AccumModel, k: int, has_bias: bool,
          exact_by_design: bool, nan_clamp: str = "propagate") -> Judgement:
    """`nan_clamp` is the realization's declared NaN rule (api.NAN_CLAMPS):
    with "to_min" / "to_max" an element whose exact value is NaN must hold
    that clamp bound instead of NaN (and one where an overflowing accumulator
    may make a NaN may hold it too); every other check is unchanged. Any
    other rule is an error: it would be judged as some rule it is not."""
    if nan_clamp not in NAN_RULES:
        raise ValueError(f"unknown NaN rule {nan_clamp!r}: expected one of "
                         f"{', '.join(NAN_RULES)}")
    impl = out.astype(np.float64)
    c = ref.exact
    total = c.size
    ref_nan = np.isnan(c)
    impl_nan = np.isnan(impl)
    err_acc = model.accumulation_error(ref.s, k, has_bias)
    bound = model.bound(c, ref.s, k, has_bias)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(impl - c)
        ratio = np.where(np.isfinite(c) & np.isfinite(impl), diff / bound, 0.0)
        within = diff <= bound
    # Finite exact value: within the bound. An inf of the right sign is allowed
    # where rounding may overflow; any non-finite value where the accumulator
    # itself may overflow (the sum of the finite |a*b| reaches its largest
    # value: a partial sum can become inf, and inf - inf NaN).
    may_overflow = np.abs(c) + err_acc >= FP16_OVERFLOW
    acc_overflow = ref.finite_sum * (1.0 + model.unit_roundoff) >= model.overflow_threshold
    inf_allowed = may_overflow & (np.sign(impl) == np.sign(c))
    fin_ok = np.where(impl_nan, acc_overflow,
                      np.where(np.isinf(impl), inf_allowed | acc_overflow, within))
    # NaN exactly where the oracle has NaN (or where an overflowing accumulator
    # may meet an inf input); an infinite exact value (inf input) needs the
    # same inf, or any non-finite value if the accumulator may overflow.
    nonfinite = impl_nan | np.isinf(impl)
    # A finite exact value with an infinite sum |a*b| is an inf input that the
    # clamp turned into a bound: the clamp bound itself is required.
    clamped_inf = np.isfinite(c) & np.isinf(ref.s)
    fin_ok = np.where(clamped_inf, (impl == ref.rounded.astype(np.float64))
                      | (acc_overflow & nonfinite), fin_ok)
    nan_to = _nan_bound(ref, nan_clamp)
    nan_ok = impl_nan if nan_to is None else (impl == nan_to)
    ok = np.where(ref_nan, nan_ok | (acc_overflow & nonfinite & ~impl_nan),
                  np.where(np.isinf(c), (impl == c) | (acc_overflow & nonfinite), fin_ok))
    if nan_to is not None:  # an overflowing accumulator's NaN becomes the bound too
        ok |= acc_overflow & (impl == nan_to)
    if model.finite_inputs_only:
        # where an input is not finite the model promises only a non-finite
        # output (or the clamp bound it was clamped to)
        touched = ~np.isfinite(ref.s)
        ok = np.where(touched, nonfinite | (impl == ref.rounded.astype(np.float64)), ok)
    # A clamp bound that is finite in FP16 caps that side: min(x, hi) rounds to
    # at most fl16(hi), whatever the accumulator did (an overflowed sum is
    # clamped to the bound too), so an infinity on a capped side is never
    # right, however large the error bound there.
    ok &= ~_clamp_forbids(impl, ref.clamp)

    rounded = ref.rounded.astype(np.float64)
    both_nan = ref_nan & impl_nan
    same = (impl == rounded) | both_nan
    exact_count = int(same.sum())
    detail = ""
    if exact_by_design:
        mism = ~same
        if mism.any():
            ok &= ~mism
            detail = f"exact-by-design mismatch in {int(mism.sum())} element(s)"

    fin = np.isfinite(rounded) & np.isfinite(impl)
    with np.errstate(invalid="ignore", divide="ignore"):
        ulps = np.where(fin, np.abs(impl - rounded) / ulp16(rounded), 0.0)
        rel = np.where(fin & np.isfinite(c), (impl - c) / np.maximum(np.abs(c), 2.0**-14), 0.0)
    violations = int((~ok).sum())
    max_ratio = float(ratio.max()) if total else 0.0
    if violations and not detail:
        detail = _nan_rule_detail(ref_nan & ~ok, impl, ref, nan_clamp)
    if violations and not detail:
        idx = np.unravel_index(int(np.argmax(~ok)), c.shape)
        detail = (f"{violations} element(s) outside the bound; first at {tuple(map(int, idx))}: "
                  f"got {float(impl[idx])!r}, exact {float(c[idx])!r}, bound {bound[idx]:.3g}")

    # A case that cannot tell a right kernel from a wrong one is mistrusted.
    r16 = ref.rounded
    zero_frac = float((r16 == 0).mean()) if total else 0.0
    all_equal = total >= 4 and (bool(np.all(r16 == r16.flat[0])) or bool(np.isnan(r16).all()))
    # ... and so is one where the declared model bounds nothing (gamma(K', u)
    # is infinite once K' u >= 1, e.g. FP16 accumulation over 2048 terms);
    # exact-by-design inputs still demand bit equality there.
    vacuous = (not exact_by_design
               and gamma(model.roundings(k, has_bias), model.unit_roundoff) == float("inf"))
    mistrusted = (total >= 2 and zero_frac > 0.5) or all_equal or vacuous
    if mistrusted and not detail:
        detail = ("reference is all equal" if all_equal
                  else f"{zero_frac:.0%} of the reference is 0" if zero_frac > 0.5
                  else f"the declared {model.accum} model gives no bound at K' = "
                       f"{model.roundings(k, has_bias)}")
    return Judgement(
        ok=violations == 0, total=total, exact=exact_count, violations=violations,
        max_ratio=max_ratio, max_ulp=float(ulps.max()) if total else 0.0,
        rms_rel=float(np.sqrt(np.mean(rel**2))) if total else 0.0,
        mistrusted=mistrusted, detail=detail,
        inf_exact=int((np.isinf(c) & (impl == c)).sum()),
    )


def _nan_rule_detail(bad_nan: np.ndarray, impl: np.ndarray, ref: Reference,
                     nan_clamp: str) -> str:
    """Why elements whose exact value is NaN failed, when they follow another
    NaN rule than the declared one ('' otherwise)."""
    if not bad_nan.any():
        return ""
    got = impl[bad_nan]
    declared = NAN_RULES[nan_clamp][0]
    found = None
    if nan_clamp != "propagate" and np.isnan(got).all():
        found = ("are NaN", "propagate")
    for rule in ("to_min", "to_max"):
        bound = _nan_bound(ref, rule)
        if found is None and rule != nan_clamp and bound is not None and (got == bound).all():
            found = (f"hold {bound:g} (clamp_{rule[3:]})", rule)
    if found is None:
        return ""
    what, rule = found
    fclamp = ", as FCLAMP does" if rule == "to_min" else ""
    return (f"{int(bad_nan.sum())} element(s) whose exact value is NaN {what}: the realization "
            f"declares {declared}, but it follows the rule {NAN_RULES[rule][0]}{fclamp} "
            f"(declare nan_clamp = {NAN_RULES[rule][1]})")


def _clamp_forbids(impl: np.ndarray, clamp: tuple[float, float] | None) -> np.ndarray:
    """Elements that are an infinity on a side the clamp caps in FP16."""
    if clamp is None:
        return np.zeros(impl.shape, dtype=bool)
    with np.errstate(over="ignore"):
        lo_capped = bool(np.isfinite(np.float16(clamp[0])))
        hi_capped = bool(np.isfinite(np.float16(clamp[1])))
    return ((impl == np.inf) & hi_capped) | ((impl == -np.inf) & lo_capped)


@dataclass
class Verdict:
    """One line of a run: a case, an input kind, a realization, on a target."""

    case: str
    op: str
    shape: str
    kind: str
    target: str
    backend: str
    realization: str
    kernel: str
    accum: str
    k: int
    m: int
    n: int
    b_form: str
    vector_bits: int
    status: str
    max_err_bound: float = 0.0
    max_err_gemm_bound: float = 0.0  # the same error against the GEMM-class bound
    max_ulp: float = 0.0
    rms_rel: float = 0.0
    exact: int = 0
    total: int = 0
    inf_exact: int = 0  # elements where the exact value and the output are the same infinity
    message: str = ""
    catalog: str = ""
    tags: list[str] = field(default_factory=list)
    suite: str = "correctness"  # correctness | contracts | perf
    layers: int = 1  # occurrences of the shape in its model (weighted totals)
    flops: int = 0  # 2*M*N*K*batch, or the convolution's equivalent
    threads: int = 1
    emulated: bool = False  # timed under emulation: never a speed
    rounds: int = 0  # timed rounds (0: not timed)
    reps_per_round: int = 0
    time_min_ns: float = float("nan")  # per call
    time_median_ns: float = float("nan")
    time_mean_ns: float = float("nan")
    time_stdev_ns: float = float("nan")
    round_times_ns: list[float] = field(default_factory=list)  # per call, one per round
    gflops: float = float("nan")  # flops / median time
    pack_time_ns: float = float("nan")  # median time of packing B, when timed
    # a perf row is one pass (kbench run --passes N, 1-based; 0: not a pass) timed in one
    # process (its pid on the machine that ran it; "" if unknown): the unit the comparison
    # of two runs counts (kbench.results.compare), never the round
    perf_pass: int = 0
    process: str = ""
    # the accumulation model that reproduces the output best (kbench.fingerprint),
    # "indistinguishable", or "" when not fingerprinted; and its bit-match fraction
    accum_model: str = ""
    accum_match: float = float("nan")
    # the plugin whose realization this is, "<plugin> <version>" (never ours); "" for ours
    plugin: str = ""
    # the code the call executed, where the target traces it (a plugin's call on an
    # emulated target, kbench.targets.whatran): its functions that ran the most, e.g.
    # "exrt_sme2_kernel 81%, exrt_pack_a 12%, ... of 12,340 instructions"; "" otherwise
    ran: str = ""
    # exact dynamic instruction counts of one single-threaded call on an emulated
    # target (kbench.targets.counting; kbench.results.counts): how they were counted,
    # QEMU and its -cpu (model, SVL), per phase, the mix (JSON), the floor and efficiency
    count_method: str = ""  # "qemu-tb" | "qemu-insn"; "" when not counted
    count_note: str = ""  # why a perf row has no counts, or what to know about them
    count_qemu: str = ""
    count_cpu: str = ""
    count_call: float = float("nan")
    count_validate: float = float("nan")
    count_checksum: float = float("nan")
    count_pack_lhs: float = float("nan")
    count_pack_rhs: float = float("nan")
    count_kernel: float = float("nan")
    count_other: float = float("nan")
    count_pack_b: float = float("nan")
    count_pack_b_checksum: float = float("nan")
    count_mix: str = ""
    count_floor: float = float("nan")
    count_floor_kind: str = ""
    count_efficiency: float = float("nan")
    # heap bytes the realization held (a worker's interposed allocator, for a call it
    # measures; kbench.native.calls.HeapUse): the most at once during the call, and what
    # it still held when the call returned; NaN where the call was not measured
    heap_peak: float = float("nan")
    heap_retained: float = float("nan")

    @property
    def exact_fraction(self) -> float:
        return self.exact / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["exact_fraction"] = self.exact_fraction
        d["tags"] = " ".join(self.tags)
        d["round_times_ns"] = " ".join(f"{t:.0f}" for t in self.round_times_ns)
        return d

    def err_bound_text(self) -> str:
        """err/bound as a verdict line shows it: "inf-exact" when every element
        compared is an infinity the output holds exactly (no finite error to
        show), the ratio otherwise (with the exact infinities counted)."""
        if self.inf_exact and self.inf_exact == self.total:
            return "inf-exact"
        text = sig(self.max_err_bound, 3)  # 0.99995 is not shown as the limit 1
        return text + (f" (+{self.inf_exact} inf-exact)" if self.inf_exact else "")

    def line(self) -> str:
        return (f"{self.status.upper():10s} {self.target:14s} {self.realization:34s} "
                f"{self.case:28s} {self.kind:8s} err/bound={self.err_bound_text()} "
                f"ulp={self.max_ulp:.3g} exact={self.exact_fraction:.1%}"
                + (f" accum={self.accum_model}:{self.accum_match:.1%}" if self.accum_model
                   else "")
                + (f" [plugin {self.plugin}]" if self.plugin else "")
                + (f"  {self.message}" if self.message else ""))


def combine(judgements: list[Judgement]) -> Judgement:
    """Worst-of over the problems of a batch."""
    total = sum(j.total for j in judgements)
    detail = "; ".join(f"problem {i}: {j.detail}" for i, j in enumerate(judgements) if j.detail)
    rms = float(np.sqrt(sum(j.rms_rel**2 * j.total for j in judgements) / total)) if total else 0.0
    return Judgement(
        ok=all(j.ok for j in judgements), total=total,
        exact=sum(j.exact for j in judgements),
        violations=sum(j.violations for j in judgements),
        max_ratio=max(j.max_ratio for j in judgements),
        max_ulp=max(j.max_ulp for j in judgements), rms_rel=rms,
        mistrusted=any(j.mistrusted for j in judgements), detail=detail,
        inf_exact=sum(j.inf_exact for j in judgements),
    )
