"""What each column means, in one place: the terminal summary of `kbench
run` (its verdict and performance tables), the report's tables (the
explanation shows on hover over a header) and docs/cli.md (generated from
TERMINAL) all read it, so the three cannot drift apart."""

from __future__ import annotations

# the columns of the summary `kbench run` prints (kbench.results.summary), in order
TERMINAL = {
    "target": "where it ran (host, worker:..., qemu:svl=N)",
    "backend": "scalar, neon, sme, a peer library or a plugin",
    "realization": "the kernel variant that ran, by name (never a fallback)",
    "accum": "the accumulator it declares (fp32 or fp16): the error model it is judged by",
    "cases": "results judged: each case of the catalogs, once per input kind (skips not "
             "counted)",
    "passed": "results within the declared error bound",
    "failed": "results outside the bound (a wrong result)",
    "mistrusted": "results that pass but cannot tell a right kernel from a wrong one (most of "
                  "the reference is 0, all equal, or the declared model bounds nothing)",
    "errors": "results the harness could not judge (a call that returned an error)",
    "faults": "crashed, exited or timed out (the worker process died)",
    "worst_err_bound": "the worst |error| / declared bound over the results (at most 1 "
                       "passes); the figure the verdict is judged on",
    "worst_ulp": "the worst error in ULPs of the correctly rounded FP16 result; where the "
                 "exact result cancels to near 0 an ULP is tiny (2^-24), so an error well "
                 "within the bound (which scales with the sum of |a·b|) reads as millions of "
                 "ULPs: large on a passing FP16-accumulating row, and not the verdict",
    "min_exact": "the lowest fraction of outputs bit-identical to the correctly rounded "
                 "oracle, over the results (1 = every output exact)",
    "mean_exact": "the mean of that fraction over the results",
    "timed": "perf results with a time",
    "weighted_ms": "one pass over the timed shapes: each median time per call times the "
                   "shape's layer count, summed (ms)",
    "geomean_gflops": "the geometric mean of GFLOP/s over the timed shapes ('emulated': times "
                      "under emulation are not speed)",
}

# more columns of the report's tables (hover on a header)
REPORT = {
    "cv": "coefficient of variation of the rounds: stdev / mean",
    "noisy": "NOISY: the rounds vary by more than the threshold (10%), as the progress line "
             "said; the median is less certain",
    "gflops": "flops per call / median time",
    "time_median_ns": "median time per call over the timed rounds",
    "time_min_ns": "the fastest round's time per call",
    "time_stdev_ns": "standard deviation of the rounds' times per call",
    "rounds": "timed rounds (each of reps_per_round calls)",
    "reps_per_round": "calls per round",
    "pack_time_ns": "median time to pack B on its own (once per weight, at load)",
    "kernels": "different kernels measured on the shape (B forms and blockings of one kernel "
               "are one): a winner needs two or more",
    "winner": "the fastest over every kernel measured on the shape",
    "fastest_ours": "the fastest of kbench's own realizations, where two or more kernels of "
                    "ours were timed",
    "fastest_peer": "the fastest peer library",
    "peer_vs_ours": "peer time / our best time (above 1: ours is faster)",
    "why": "why no winner is named",
    "speedup": "reference median time / this median time (above 1: faster)",
    "time_change": "this median time / the baseline's - 1",
    "gated_ratio": "the figure the two-run test judged: the ratio of the per-pass geometric "
                   "means (candidate / base)",
    "ratio": "candidate median / base median over all rounds",
    "pass_ratio": "the ratio more than half of the candidate's passes reach",
    "p_slower": "one-sided p-value of a slowdown (Holm-adjusted)",
    "median_ratio": "the median paired ratio (candidate / base round) of the interleaved run",
    "ci_low": "the low end of its confidence interval",
    "ci_high": "the high end of its confidence interval",
    "max_err_bound": "the worst |error| / declared bound (at most 1 passes)",
    "max_ulp": "the worst error in ULPs of the correctly rounded FP16 result (large where the "
               "result cancels to near 0; the verdict is err/bound)",
    "median_max_ulp": "the median over the cases of their worst ULP error",
    "max_rms_rel": "the worst RMS relative error",
    "min_exact_fraction": "the lowest fraction of outputs bit-identical to the correctly "
                          "rounded oracle",
    "counted": "realizations counted on the shape",
    "call": "instructions of one call (every phase)",
    "count_call": "instructions of one call (every phase)",
    "count_kernel": "instructions of the micro-kernels",
    "kernel_instructions": "the fewest kernel instructions on the shape",
    "count_pack_b": "instructions to pack B on its own (once per weight)",
    "pack_b": "the fewest instructions to pack B on its own",
    "count_floor": "the fewest principal instructions the shape needs at this vector length",
    "count_efficiency": "floor / kernel instructions",
    "runner_up": "the next fewest whole call of another kernel",
    "runner_up_vs_winner": "its instructions / the winner's",
    "principal": "the winner's principal instruction class (outer, dot or mla)",
    "principal_per_floor": "the winner's principal instructions / their floor (1 = none "
                           "wasted)",
}

COLUMN_HELP = {**TERMINAL, **REPORT}
