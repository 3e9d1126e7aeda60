"""How the Python batch API scales with the batch length: `kbench.gemm_batch`
over 1,000 and 2,000 tiny problems (4 x 4 x 4, scalar backend), the time
per problem of each, and their ratio (1.0: linear; 2.0: time per problem
growing with the batch, as the pairwise alias check it replaced did).

Each length runs in its own fresh process (the process is the unit of the
statistic: its median over --repeats calls), --processes times, and the
medians of the processes are reported. A measurement, not a test: nothing
in the suites depends on it.

    python ci/batch_benchmark.py [--processes 5] [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

LENGTHS = (1000, 2000)

CHILD = """
import statistics, sys, time
import numpy as np
import kbench
from kbench.native.api import GemmOperands, gemm_batch, Selector
n, repeats = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
problems = [GemmOperands(rng.standard_normal((4, 4)).astype(np.float16),
                         rng.standard_normal((4, 4)).astype(np.float16),
                         np.zeros((4, 4), np.float16)) for _ in range(n)]
sel = Selector(force="gemm_scalar_f32acc")
gemm_batch(problems[:8], selector=sel)  # loads the library, warms the path
times = []
for _ in range(repeats):
    t0 = time.perf_counter()
    gemm_batch(problems, selector=sel)
    times.append(time.perf_counter() - t0)
print(statistics.median(times))
"""


def one_process(n: int, repeats: int) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(repeats)],
                         capture_output=True, text=True, check=True, timeout=600)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    per_problem = {}
    for n in LENGTHS:
        medians = [one_process(n, args.repeats) for _ in range(args.processes)]
        per_problem[n] = statistics.median(medians) / n
    ratio = per_problem[LENGTHS[1]] / per_problem[LENGTHS[0]]
    result = {"per_problem_us": {str(n): round(t * 1e6, 2) for n, t in per_problem.items()},
              "ratio_2000_to_1000": round(ratio, 3), "processes": args.processes,
              "repeats": args.repeats}
    if args.json:
        print(json.dumps(result))
    else:
        for n, t in per_problem.items():
            print(f"{n:5d} problems: {t * 1e6:8.2f} us per problem")
        print(f"ratio (2,000 / 1,000, per problem): {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
