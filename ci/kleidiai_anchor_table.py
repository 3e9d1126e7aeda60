"""Measure Arm KleidiAI's FP16 SME2 kernels on the comparison sweep and write
the peer anchor table reference/counts/kleidiai_sweep.toml.

KleidiAI's code is not in this repository: build the recipe plugin from a
checkout first (make -C examples/plugins/kleidiai KLEIDIAI_SRC=...), then

    python ci/kleidiai_anchor_table.py --kleidiai-src PATH

counts, in the dynamically linked emulated worker, the kernel phase of each
plugin realization on every shape of reference/kleidiai_sweep.toml (GEMM)
and reference/kleidiai_anchors_gemv.toml (GEMV) at each SVL, with the
instruction mix, twice: as one call of KleidiAI's public entry point over
the whole problem (kbench count --one-call: its C wrapper and its dispatch to
edge variants included, single thread, no packing: what KleidiAI's own
benchmark times and what a single-threaded caller runs; for the generic
micro-kernel API its `run`, --kernel-entry, the recipe's marshalling of the
arguments counted apart), the anchor's figure; and once per m_step band (the
recipe plugin's default loop), a second column. It writes them as data: the
source commit, the compile flags of the recipe, the date and kbench's
commit go with them. The counts depend on the flags (the recipe's -O2
-DNDEBUG -fno-fast-math; CMake builds add -fno-tree-vectorize, which changes
the LHS packer's count)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "examples" / "plugins" / "kleidiai"
PLUGIN = RECIPE / "build" / "aarch64" / "libkbkleidiai.so"
OUT = REPO / "reference" / "counts" / "kleidiai_sweep.toml"

# plugin realization -> (label, KleidiAI's kernel, the kbench realizations compared with
# it, catalog)
KERNELS = {
    "kleidiai.gemm_sme2_mopa": (
        "SME2 2VLx2VL MOPA (v1.30)", "kai_matmul_clamp_f16_f16p2vlx2_f16p2vlx2_2vlx2vl_sme2_mopa",
        ["gemm_sme2_mopa_f32acc"], "kleidiai_sweep"),
    "kleidiai.gemm_sme2_mopa_8vsx8vs": (
        "SME2 8VSx8VS MOPA with edge variants",
        "kai_matmul_clamp_f16_f16p4vsx2_f16p4vsx2bf16_8vsx8vs_sme2_mopa",
        ["gemm_sme2_mopa_f32acc"], "kleidiai_sweep"),
    "kleidiai.gemv_sme2_dot": (
        "SME2 GEMV 1x16VL (v1.30)", "kai_matmul_clamp_f16_f16_f16p2vlx2b_1x16vl_sme2_dot",
        ["gemv_sme2_dot_f32acc"], "kleidiai_anchors_gemv"),
    "kleidiai.gemv_sme2_dot_1x32vs": (
        "SME2 GEMV 1x32VS", "kai_matmul_clamp_f16_f16_f16p4vsx2bf16_1x32vs_sme2_dot",
        ["gemv_sme2_dot_f32acc"], "kleidiai_anchors_gemv"),
}
# The generic micro-kernel API's public entry point is the `run` of its table; the recipe's
# adapter fills its argument structures from the plugin ABI's scalars (queries of strides,
# the table by value) before calling it: those instructions are the adapter's, not
# KleidiAI's, and are counted apart (--kernel-entry).
ENTRIES = {
    "kleidiai.gemm_sme2_mopa_8vsx8vs":
        "kai_matmul_clamp_f16_f16p4vsx2_f16p4vsx2bf16_8vsx8vs_sme2_mopa.c:run",
    "kleidiai.gemv_sme2_dot_1x32vs": "kai_matmul_clamp_f16_f16_f16p4vsx2bf16_1x32vs_sme2_dot.c:run",
}


def _run(cmd: list[str], **kw: object) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return str(res.stdout)


def _flags() -> str:
    text = (RECIPE / "Makefile").read_text()
    base = re.search(r"^BASE_CFLAGS := (.*)$", text, re.M)
    sme = re.search(r"^SME_ARCH := (.*)$", text, re.M)
    cc = re.search(r"^CC := (clang.*)$", text, re.M)
    if not (base and sme and cc):
        sys.exit("examples/plugins/kleidiai/Makefile: BASE_CFLAGS, SME_ARCH or CC not found")
    return f"{cc.group(1)} {base.group(1)} {sme.group(1)}"


def _count(plugin: Path, svl: int, catalog: str, reals: list[str], one_call: bool
           ) -> list[dict[str, object]]:
    cmd = [sys.executable, "-m", "kbench.cli", "count", "--plugin", str(plugin),
           "--target", f"qemu:svl={svl}", "--shapes", catalog, "--json"]
    if one_call:
        cmd.append("--one-call")
    for r in reals:
        cmd += ["--realization", r]
        if r in ENTRIES:
            cmd += ["--kernel-entry", f"{r}={ENTRIES[r]}"]
    return list(json.loads(_run(cmd, cwd=REPO)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kleidiai-src", type=Path, required=True,
                    help="the KleidiAI checkout the plugin was built from (a git work tree)")
    ap.add_argument("--plugin", type=Path, default=PLUGIN)
    ap.add_argument("--svl", type=int, nargs="+", default=[128, 256, 512])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    if not args.plugin.exists():
        sys.exit(f"{args.plugin}: not built (make -C examples/plugins/kleidiai "
                 "KLEIDIAI_SRC=...)")
    commit = _run(["git", "-C", str(args.kleidiai_src), "rev-parse", "HEAD"]).strip()
    describe = _run(["git", "-C", str(args.kleidiai_src), "describe", "--tags",
                     "--always"]).strip()
    ours_commit = _run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]).strip()
    counts: dict[tuple[str, str], dict[str, object]] = {}
    for svl in args.svl:
        for catalog in sorted({c for *_, c in KERNELS.values()}):
            reals = [r for r, (*_, c) in KERNELS.items() if c == catalog]
            for one_call in (True, False):
                print(f"counting {', '.join(reals)} on {catalog} at SVL {svl}"
                      f"{' (one call)' if one_call else ' (per m_step band)'}", flush=True)
                for row in _count(args.plugin, svl, catalog, reals, one_call):
                    key = (str(row["realization"]), str(row["case"]))
                    entry = counts.setdefault(key, {"shape": row["shape"]})
                    if not one_call:
                        entry[f"banded_svl{svl}"] = int(str(row["count_kernel"]))
                        continue
                    mix = json.loads(str(row["count_mix"])).get("kernel", {})
                    entry[f"svl{svl}"] = int(str(row["count_kernel"]))
                    entry[f"outer_svl{svl}"] = int(mix.get("outer", 0)) + int(mix.get("dot", 0))
    lines = [
        "# A PEER ANCHOR TABLE: measured dynamic instruction counts of Arm KleidiAI's FP16 SME2",
        "# kernels (not kbench's code) on the comparison sweep (reference/kleidiai_sweep.toml)",
        "# and the GEMV shape (reference/kleidiai_anchors_gemv.toml). Written by",
        "# ci/kleidiai_anchor_table.py; do not edit by hand. `kbench count --anchors` and the",
        "# report set our counts against the best anchor of each shape.",
        "",
        "[source]",
        f'name = "Arm KleidiAI {describe}"',
        f'what = "measured dynamic instruction counts of KleidiAI {describe}\'s FP16 SME2 '
        'kernels, v1.30\'s and the newer ones"',
        'method = """Counted by kbench\'s count engine (qemu-aarch64 11.1.3 user mode, -cpu max',
        "with the SVL given, one single-threaded call after a warm-up) through the recipe",
        "plugin (examples/plugins/kleidiai) with kbench count --one-call: one call of",
        "KleidiAI's public entry point over the whole problem, as its own benchmark and a",
        "single-threaded caller make it (its run_matmul; the generic API's run, the recipe's",
        "marshalling of the arguments apart: --kernel-entry), its C wrapper and its dispatch",
        "to the edge variants included; the kernel phase only (no packing), the phase ours",
        "is compared on (gemm_sme2_mopa_f32acc's single-threaded call runs its micro-kernel",
        "once over the whole problem too). banded_svlNNN: the same kernel called once per",
        'm_step band over all of N (the recipe plugin\'s default loop), a second column."""',
        f'commit = "{commit}"',
        f'flags = "{_flags()}"',
        f'date = "{dt.date.today().isoformat()}"',
        f'kbench_commit = "{ours_commit}"',
        'note = """outer_svlNNN: the outer products (FMOPA) or dot products (FDOT) of the kernel',
        'phase at that SVL, from the instruction mix."""',
    ]
    for real, (label, kernel, ours, _) in KERNELS.items():
        for (r, case), entry in sorted(counts.items(), key=lambda kv: kv[0]):
            if r != real:
                continue
            m = re.fullmatch(r"m(\d+)n(\d+)k(\d+)", str(entry["shape"]))
            if m is None:
                sys.exit(f"{case}: shape {entry['shape']!r} is not mMnNkK")
            lines += ["", "[[anchor]]", f'label = "{label}"', f'kernel = "{kernel}"',
                      f'realization = "{real}"', 'phase = "kernel"', f'case = "{case}"',
                      f"m = {m.group(1)}", f"n = {m.group(2)}", f"k = {m.group(3)}",
                      "ours = [" + ", ".join(f'"{o}"' for o in ours) + "]"]
            lines += [f"{key} = {entry[key]}" for key in sorted(entry, key=_order)
                      if key != "shape"]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out} ({sum(1 for x in lines if x == '[[anchor]]')} anchors)")


def _order(key: str) -> tuple[int, int]:
    m = re.fullmatch(r"(outer_|banded_)?svl(\d+)", key)
    kind = {"outer_": 2, "banded_": 1}.get(m.group(1) or "", 0) if m else 3
    return (kind, int(m.group(2)) if m else 0)


if __name__ == "__main__":
    main()
