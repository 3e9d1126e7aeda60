"""Measure Arm KleidiAI's SVE2.1 FP16 GEMM, one call over the whole problem,
on the comparison sweep and write the peer anchor table
reference/counts/kleidiai_sve_sweep.toml.

KleidiAI's code is not in this repository: give its checkout,

    python ci/kleidiai_sve_anchor_table.py --kleidiai-src PATH [--vl 128 256 512]

This builds ci/kleidiai_sve_one_call.c with the kernel's own files (its C
file, its assembly, kai_common_sve_asm.S) and the KleidiAI recipe's flags
for SVE files (examples/plugins/kleidiai/Makefile) as a static aarch64
program, runs it under qemu-aarch64 (-cpu max,sme=off at each SVE vector
length) with execution logging, and counts the instructions of the second of
two identical calls of the kernel's public run over the whole M x N x K
problem (KleidiAI's C wrapper, its row and column loops and their edge paths
included: what KleidiAI's own benchmark and a single-threaded caller run), with
their FDOTs from the instruction mix, on every shape of
reference/kleidiai_sweep.toml and reference/kleidiai_anchors_gemv.toml. The
source commit, the flags, the date and kbench's commit go with them."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kbench.targets.a64 import CLASSES  # noqa: E402
from kbench.targets.elf import Elf  # noqa: E402
from kbench.targets.qemutrace import TraceCounter, build_phase_map  # noqa: E402
from kbench.targets.tools import find_qemu  # noqa: E402

HARNESS = REPO / "ci" / "kleidiai_sve_one_call.c"
RECIPE = REPO / "examples" / "plugins" / "kleidiai" / "Makefile"
OUT = REPO / "reference" / "counts" / "kleidiai_sve_sweep.toml"
BUILD = REPO / "build" / "kleidiai-sve"
CATALOGS = (REPO / "reference" / "kleidiai_sweep.toml",
            REPO / "reference" / "kleidiai_anchors_gemv.toml")
KERNEL = "kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot"
LABEL = "SVE2.1 6x16VS FDOT (one call)"
OURS = {True: ["gemv_sve2p1_dot_f32acc"], False: ["gemm_sve2p1_dot_f32acc"]}  # by M == 1
WINDOW = f"{KERNEL}.c:run"  # the api's run: the entry point a caller calls


def _run(cmd: list[str], **kw: object) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if res.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return str(res.stdout)


def _flags() -> list[str]:
    """The recipe's compiler and flags for KleidiAI's SVE files."""
    text = RECIPE.read_text()
    base = re.search(r"^BASE_CFLAGS := (.*)$", text, re.M)
    sve = re.search(r"^SVE_ARCH := (.*)$", text, re.M)
    if not (base and sve):
        sys.exit(f"{RECIPE}: BASE_CFLAGS or SVE_ARCH not found")
    return [*base.group(1).split(), *sve.group(1).split()]


def _build(src: Path, flags: list[str]) -> Path:
    mm = src / "kai" / "ukernels" / "matmul" / "matmul_clamp_f16_f16_f16p"
    files = [HARNESS, mm / f"{KERNEL}.c", mm / f"{KERNEL}_asm.S",
             src / "kai" / "kai_common_sve_asm.S"]
    for f in files:
        if not f.exists():
            sys.exit(f"{f}: not found ({src} is not a KleidiAI checkout with the SVE2.1 kernel)")
    BUILD.mkdir(parents=True, exist_ok=True)
    exe = BUILD / "kleidiai_sve_one_call"
    _run(["clang-19", "--target=aarch64-linux-gnu", "-static", "-fuse-ld=lld", *flags,
          f"-I{src}", *map(str, files), "-o", str(exe)])
    return exe


def _count(exe: Path, qemu: str, vl: int, m: int, n: int, k: int) -> tuple[int, int]:
    """(instructions, FDOTs) of the counted call at SVE vector length vl bits."""
    counter = TraceCounter(build_phase_map(Elf(exe), {WINDOW: "call"}, []), "tb")
    rfd, wfd = os.pipe()
    proc = subprocess.Popen([qemu, "-cpu", f"max,sme=off,sve-default-vector-length={vl // 8}",
                             "-d", "in_asm,exec,nochain", "-D", f"/dev/fd/{wfd}", str(exe),
                             str(m), str(n), str(k)], pass_fds=(wfd,), stdout=subprocess.PIPE,
                            env={})
    os.close(wfd)
    reader = threading.Thread(target=lambda: counter.feed(os.fdopen(rfd, "rb")))
    reader.start()
    out, _ = proc.communicate(timeout=3600)
    reader.join(3600)
    if proc.returncode != 0 or f"vl={vl // 8} " not in out.decode():
        sys.exit(f"{exe} {m} {n} {k} at VL {vl}: exit {proc.returncode}: {out.decode()!r}")
    first, second = counter.wait_for(2, 60)
    if first.total != second.total:
        sys.exit(f"{m}x{n}x{k} at VL {vl}: the two calls counted {first.total} and {second.total}")
    return second.total, second.top_mix(None)[CLASSES.index("dot")]


def _shapes() -> list[tuple[str, int, int, int]]:
    out = []
    for cat in CATALOGS:
        for g in tomllib.loads(cat.read_text()).get("gemm", []):
            out.append((str(g["name"]), int(g["m"]), int(g["n"]), int(g["k"])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kleidiai-src", type=Path, required=True,
                    help="a KleidiAI checkout (a git work tree) with the SVE2.1 kernel")
    ap.add_argument("--vl", type=int, nargs="+", default=[128, 256, 512],
                    help="SVE vector lengths in bits (default: 128 256 512)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    flags = _flags()
    exe = _build(args.kleidiai_src, flags)
    qemu = find_qemu()
    commit = _run(["git", "-C", str(args.kleidiai_src), "rev-parse", "HEAD"]).strip()
    describe = _run(["git", "-C", str(args.kleidiai_src), "describe", "--tags",
                     "--always"]).strip()
    ours_commit = _run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"]).strip()
    lines = [
        "# A PEER ANCHOR TABLE: measured dynamic instruction counts of Arm KleidiAI's SVE2.1 FP16",
        f"# GEMM {KERNEL}",
        "# (not kbench's code), one call over the whole problem, on the comparison sweep",
        "# (reference/kleidiai_sweep.toml) and the GEMV shape",
        "# (reference/kleidiai_anchors_gemv.toml).",
        "# Written by ci/kleidiai_sve_anchor_table.py; do not edit by hand. svlNNN is the SVE",
        "# vector length here (the length SVE code runs at, which kbench's rows record).",
        "",
        "[source]",
        f'name = "Arm KleidiAI {describe} SVE2.1"',
        f'what = "measured dynamic instruction counts of KleidiAI {describe}\'s SVE2.1 FP16 GEMM, '
        'one call over the whole problem"',
        'method = """One call of the kernel\'s public run (kai_matmul_uker_api.run) over the whole',
        "M x N x K problem, as KleidiAI's own benchmark and a single-threaded caller make it:",
        "its C wrapper and its row and column loops with their edge paths included, from the",
        "wrapper's entry to its return. Counted with kbench's trace counter",
        "(kbench.targets.qemutrace, qemu-aarch64 11.1.3 user mode, -cpu max,sme=off with the",
        "SVE vector length given) in a static harness (ci/kleidiai_sve_one_call.c) built with",
        "the kernel's own files; the second of two identical calls; B packed in its layout",
        'with its bias, no clamp (+-inf bounds, as kbench passes a call without one)."""',
        f'commit = "{commit}"',
        f'flags = "clang-19 --target=aarch64-linux-gnu -static {" ".join(flags)}"',
        f'date = "{dt.date.today().isoformat()}"',
        f'kbench_commit = "{ours_commit}"',
        'note = """outer_svlNNN: the dot products (FDOT) of the call at that SVE vector',
        'length, from the instruction mix."""',
    ]
    for case, m, n, k in _shapes():
        row = ["", "[[anchor]]", f'label = "{LABEL}"', f'kernel = "{KERNEL}"',
               'realization = "kleidiai_sve_one_call"', 'phase = "kernel"', f'case = "{case}"',
               f"m = {m}", f"n = {n}", f"k = {k}",
               "ours = [" + ", ".join(f'"{o}"' for o in OURS[m == 1]) + "]"]
        counts, dots = [], []
        for vl in args.vl:
            print(f"counting {m}x{n}x{k} at SVE VL {vl}", flush=True)
            total, dot = _count(exe, qemu, vl, m, n, k)
            counts.append(f"svl{vl} = {total}")
            dots.append(f"outer_svl{vl} = {dot}")
        lines += row + counts + dots
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out} ({sum(1 for x in lines if x == '[[anchor]]')} anchors)")


if __name__ == "__main__":
    main()
