#!/usr/bin/env python3
"""CI check of an onnxruntime run on an emulated SME2 CPU (qemu-python):
every real-valued ORT case carries an accumulation fingerprint, with
KleidiAI on and off; the report shows them; and the fingerprints tell the
two paths apart (with KleidiAI off nothing accumulates in FP32; with it on,
some MatMul case does). Prints the per-case table.

    python ci/check_fingerprints.py RUN_FOLDER REPORT_FOLDER
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from kbench.judge.fingerprint import category
from kbench.peers.ort import CONV_NAME, GEMM_NAME, NO_KLEIDIAI

REALIZATIONS = (GEMM_NAME, GEMM_NAME + NO_KLEIDIAI, CONV_NAME, CONV_NAME + NO_KLEIDIAI)


def main(run: Path, report: Path) -> list[str]:
    problems: list[str] = []
    rows = pd.read_csv(run / "results.csv", low_memory=False)
    rows = rows[rows["realization"].isin(REALIZATIONS)].copy()
    rows["accum_model"] = rows["accum_model"].fillna("").astype(str)
    rows["accum_match"] = pd.to_numeric(rows["accum_match"], errors="coerce")
    missing = set(REALIZATIONS) - set(rows["realization"])
    if missing:
        problems.append(f"no rows for {', '.join(sorted(missing))}")
    # correctness verdicts on real-valued inputs carry a fingerprint; determinism
    # verdicts (the same call repeated) are rows of the run too, and have none
    real = rows[(rows["kind"] != "exact") & (rows["suite"] != "determinism")].copy()
    unprinted = real[real["accum_model"] == ""]
    for r in unprinted.itertuples():
        problems.append(f"{r.realization} {r.case} [{r.kind}]: no fingerprint")
    real["category"] = [category(str(m), float(x)) for m, x in
                        zip(real["accum_model"], real["accum_match"], strict=True)]
    off = real[real["realization"].str.endswith(NO_KLEIDIAI)]
    for r in off[off["category"] == "fp32"].itertuples():
        problems.append(f"{r.realization} {r.case}: FP32 accumulation with KleidiAI off")
    on_gemm = real[real["realization"] == GEMM_NAME]
    if not (on_gemm["category"] == "fp32").any():
        problems.append(f"{GEMM_NAME}: no case reached an FP32-accumulating path")

    html = (report / "report.html").read_text()
    if "Accumulation fingerprints" not in html:
        problems.append("report: no Accumulation fingerprints section")
    prints = pd.read_csv(report / "fingerprints.csv")
    for name in REALIZATIONS:
        if name not in set(prints["realization"]):
            problems.append(f"report: fingerprints.csv has no {name}")

    table = real.assign(path=lambda d: d["realization"].str.endswith(NO_KLEIDIAI).map(
        {False: "KleidiAI on", True: "KleidiAI off"}))
    table["fingerprint"] = [f"{m} {x:.0%}" for m, x in
                            zip(table["accum_model"], table["accum_match"], strict=True)]
    wide = table.pivot_table(index=["op", "case", "kind"], columns="path",
                             values="fingerprint", aggfunc="first")
    with pd.option_context("display.width", 200, "display.max_colwidth", 40):
        print(wide.to_string())
    return problems


if __name__ == "__main__":
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__)
        sys.exit(0)
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    found = main(Path(sys.argv[1]), Path(sys.argv[2]))
    for p in found:
        print(f"check_fingerprints: {p}", file=sys.stderr)
    sys.exit(1 if found else 0)
