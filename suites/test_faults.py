"""Fault injection: purpose-built misbehaving plugins (examples/plugins/faults)
run through `kbench run` and `kbench info` exactly as a user runs them, on
the host and on an emulated Arm target.

A plugin's kernel that dereferences NULL, aborts, calls exit(0), loops
forever or writes past C, and a plugin file that is cut short or whose
entry point crashes or hangs, must each become what docs/robustness.md's
"What a misbehaving kernel becomes" says: a crashed / exited / timeout verdict naming the
plugin, its version, the realization and the shape (or a failed guard
check), a restarted worker, and every verdict of kbench's own
realizations in the same run; a refusal line for a file that cannot be
loaded. SIGINT and SIGTERM stop a run whose plugin hangs within seconds,
kill the workers the run started and leave a run folder that says
INCOMPLETE."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from plugin_builds import ARCH_PATTERN, build
from qemu_gate import needs_qemu

from kbench.targets.plugins import host_arch

FAULTS_CATALOG = """\
[catalog]
name = "faults"
description = "fault injection: an odd K (every fault plugin misbehaves) and an even K"

[[gemm]]
name = "odd_k"
m = 3
n = 5
k = 7
bias = true

[[gemm]]
name = "even_k"
m = 4
n = 6
k = 8

[[conv]]
name = "conv_small"
n = 1
h = 5
w = 5
c_in = 3
c_out = 4
kh = 3
kw = 3
"""

# realization -> (status, text its message must hold) on the odd-K case
EXPECTED = {
    "exfaults.gemm_segv": ("crashed", "signal SIGSEGV"),
    "exfaults.gemm_abort": ("crashed", "signal SIGABRT"),
    "exfaults.gemm_exit": ("exited", "ended with exit status 0"),
    "exfaults.gemm_hang": ("timeout", "no reply within"),
    "exfaults.gemm_overrun": ("fail", "guard bytes after the output changed"),
}
TARGETS = [pytest.param("host", id="host"),
           pytest.param("qemu:svl=512", id="qemu-svl512", marks=needs_qemu)]
# the bound a call gets in these tests: long enough for an emulated GEMM of 3x5x7 (the
# worker's restart is bounded apart), short enough that the hanging kernel costs seconds
CALL_TIMEOUT = {"host": "3", "qemu:svl=512": "6"}
# some of kbench's own realizations, which run beside the plugin's
OURS = {"host": ["gemm_scalar_f32acc", "conv2d_direct_scalar_f32acc"],
        "qemu:svl=512": ["gemm_sme2_mopa_f32acc", "gemm_neon_f16acc",
                         "conv2d_igemm_sme2_mopa_f32acc"]}


def _kbench(*args: str, timeout: float, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True,
                          text=True, timeout=timeout, **kw)


def _rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "results.csv") as f:
        return list(csv.DictReader(f))


def _libs(spec: str) -> Path:
    arch = host_arch() if spec == "host" else "aarch64"
    return build(arch)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("faults") / "faults.toml"
    path.write_text(FAULTS_CATALOG)
    return path


def _ours(rows: list[dict[str, str]]) -> set[tuple[str, str, str, str]]:
    return {(r["realization"], r["case"], r["kind"], r["status"]) for r in rows
            if not r["plugin"] and r["suite"] == "correctness"}


@pytest.mark.parametrize("spec", TARGETS)
def test_every_fault_is_a_verdict_and_our_verdicts_are_all_there(spec, catalog, tmp_path):
    """Before: on the host a segfault ended the run with 139 and lost every
    verdict, exit(0) ended it with 0 (green, nothing checked after), a hang
    could not be stopped; on every target a hang waited 900 s per call."""
    _libs(spec)
    common = ["run", "--suite", "correctness", "--shapes", str(catalog), "--target", spec,
              "--no-history", *(a for r in OURS[spec] for a in ("--realization", r))]
    alone = _kbench(*common, "--out", str(tmp_path / "alone"), timeout=900)
    assert alone.returncode == 0, alone.stdout[-3000:] + alone.stderr[-2000:]
    theirs = [a for r in [*EXPECTED, "exfaults.gemm_smash"] for a in ("--realization", r)]
    res = _kbench(*common, *theirs, "--plugin", f"{ARCH_PATTERN}/libexfaults.so",
                  "--call-timeout", CALL_TIMEOUT[spec], "--out", str(tmp_path / "faults"),
                  timeout=900)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-2000:]
    rows = _rows(tmp_path / "faults")
    # kbench's own realizations: every verdict of the run without the plugin, unchanged
    assert _ours(rows) == _ours(_rows(tmp_path / "alone"))
    assert {r for r, *_ in _ours(rows)} == set(OURS[spec])
    odd = {r["realization"]: r for r in rows if r["case"] == "odd_k" and r["kind"] == "exact"}
    target_name = next(iter({r["target"] for r in rows}))
    for name, (status, text) in EXPECTED.items():
        row = odd[name]
        assert row["status"] == status, row
        assert text in row["message"], row["message"]
        assert row["plugin"] == "exfaults 0.1.0"
        if status != "fail":
            assert row["message"].startswith(
                f"{'timed out' if status == 'timeout' else status}: {name} (plugin exfaults "
                f"0.1.0) on m3n5k7 (odd_k, exact): "), row["message"]
        assert row["target"] == target_name
    # the far overrun smashes the worker's heap: a crash, or (if the heap survives it)
    # the guard check; never a pass
    assert odd["exfaults.gemm_smash"]["status"] in ("crashed", "fail")
    even = [r for r in rows if r["case"] == "even_k" and r["plugin"]]
    assert len(even) == 2 * 6 and all(r["status"] == "pass" for r in even), even
    meta = json.loads((tmp_path / "faults" / "run.json").read_text())
    assert meta["complete"] is True, meta.get("tests")  # every scheduled test finished
    assert meta["results"] == len(rows)
    assert meta["tests"]["finished"] == meta["tests"]["scheduled"]
    verdicts = (tmp_path / "faults" / "verdicts.txt").read_text()
    assert "--plugin" in verdicts and "--call-timeout" in verdicts  # reproducers carry them


@pytest.mark.parametrize("name, reason", [
    ("truncated", "truncated: a segment reaches byte"),
    ("entrysegv", "loading it crashed the worker (signal SIGSEGV)"),
    ("entryhang", "its entry point did not return within 3 s (the worker was killed)"),
])
def test_info_names_a_file_that_cannot_be_loaded_in_one_line(name, reason):
    """Before: a truncated .so ended `kbench info` with SIGBUS and no output, a
    crashing entry point with 139, a hanging one hung it forever."""
    lib = _libs("host") / f"lib{name}.so"
    res = _kbench("info", "--plugin", str(lib), "--call-timeout", "3", timeout=60)
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout == ""
    (line,) = res.stderr.strip().splitlines()
    assert f"lib{name}.so" in line and reason in line, line


@needs_qemu
def test_a_crashing_entry_point_in_a_qemu_worker_is_named(catalog, tmp_path):
    """Before: it took the qemu target down without naming the plugin; now the
    plugin is refused with the reason and the target runs everything else."""
    _libs("qemu:svl=512")
    res = _kbench("run", "--suite", "correctness", "--shapes", str(catalog), "--target",
                  "qemu:svl=512", "--plugin", f"{ARCH_PATTERN}/libentrysegv.so",
                  "--plugin", f"{ARCH_PATTERN}/libexwhole.so", "--no-history", "--out",
                  str(tmp_path / "run"), timeout=900)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "libentrysegv.so: loading it crashed the worker (signal SIGSEGV)" in res.stdout
    rows = _rows(tmp_path / "run")
    assert {r["plugin"] for r in rows if r["plugin"]} == {"exwhole 1.0.0"}
    assert _ours(rows)


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out |= {int(c) for c in text}
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_hanging_plugin_run_and_its_workers(sig, code, catalog, tmp_path):
    """Before: a plugin hanging in a call on the host could be stopped by
    neither SIGINT nor SIGTERM. Now the run stops within seconds (the default
    call bound here is 30 s or more), exits 128 + the signal with one line,
    kills the worker it started, and its run folder says INCOMPLETE."""
    lib = _libs("host") / "libexfaults.so"
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbench.cli", "run", "--suite", "correctness", "--shapes",
         str(catalog), "--plugin", str(lib), "--realization", "exfaults.gemm_hang",
         "--realization", "gemm_scalar_f32acc", "--no-history", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: set[int] = set()
    deadline = time.monotonic() + 120
    while not workers and time.monotonic() < deadline:  # the hanging call has started
        time.sleep(0.2)
        workers = {c for c in _children(proc.pid)
                   if "kb_worker" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")}
    assert workers, "the host worker never started"
    time.sleep(2)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == code, stdout[-2000:] + stderr[-2000:]
    assert f"interrupted by {signal.Signals(sig).name}" in stderr
    assert "KeyboardInterrupt" not in stdout + stderr
    assert "INCOMPLETE" in stdout
    assert not [w for w in workers if _alive(w)], "a worker outlived the run"
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] is False
    assert meta["tests"]["finished"] < meta["tests"]["scheduled"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("selected", [True, False], ids=["backend-plugin", "no-filter"])
def test_ctrl_c_while_a_plugin_entry_point_hangs_gives_130_and_an_incomplete_folder(
        selected, catalog, tmp_path):
    """Before: with --backend plugin the targets are opened (and the plugin
    loaded) before the run folder exists, and Ctrl-C there printed click's
    "Aborted!", exit 1, no folder; without a filter the load happens while
    pytest collects, and Ctrl-C waited the entry point's 30 s bound out (the
    end of the run loaded the plugin again). Now both stop at once: 130, one
    line, and a run folder that says INCOMPLETE."""
    lib = _libs("host") / "libentryhang.so"
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbench.cli", "run", "--suite", "correctness", "--shapes",
         str(catalog), "--plugin", str(lib), *(["--backend", "plugin"] if selected else []),
         "--no-history", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: set[int] = set()
    deadline = time.monotonic() + 120
    while not workers and time.monotonic() < deadline:  # the load has started
        time.sleep(0.2)
        workers = {c for c in _children(proc.pid)
                   if "kb_worker" in Path(f"/proc/{c}/cmdline").read_text(errors="replace")}
    assert workers, "the host worker never started"
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=20)  # well inside the entry point's 30 s bound
    assert proc.returncode == 130, stdout[-2000:] + stderr[-2000:]
    assert "interrupted by SIGINT" in stderr and "Aborted!" not in stderr + stdout
    assert "KeyboardInterrupt" not in stdout + stderr
    assert not [w for w in workers if _alive(w)], "a worker outlived the run"
    meta = json.loads((out / "run.json").read_text())
    assert meta["complete"] is False and meta["results"] == 0


def test_backend_plugin_names_why_the_plugin_did_not_load(catalog, tmp_path):
    """Before: `--backend plugin` with a file that cannot be loaded said only
    "no chosen target offers it (host has scalar)"; the reason showed only
    without --backend. Now the usage error carries it."""
    lib = _libs("host") / "libtruncated.so"
    res = _kbench("run", "--suite", "correctness", "--shapes", str(catalog), "--backend",
                  "plugin", "--plugin", str(lib), "--no-history", "--out",
                  str(tmp_path / "run"), timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines[-2].startswith("Error: --backend plugin: no chosen target offers it (host has")
    assert lines[-1].startswith("  plugin not loaded on host: ")
    assert "libtruncated.so: truncated: a segment reaches byte" in lines[-1]


def test_a_write_past_c_is_a_guard_verdict_and_the_worker_is_discarded():
    """Before: the guard verdict was recorded, then the damaged process crashed
    at exit (139). The worker that ran the call is now killed, not shut down,
    and the next call runs in a fresh one."""
    from kbench.harness.runner import Job, run_job
    from kbench.problems.cases import GemmCase
    from kbench.targets.spec import parse_target
    t = parse_target("host", [str(_libs("host") / "libexfaults.so")])
    try:
        reals = {r.name: r for r in t.info().realizations}
        worker = t.engine.worker
        bad = run_job(t, Job(GemmCase("odd_k", 3, 5, 7), "exact",
                             reals["exfaults.gemm_overrun"], "host"))
        assert bad.status == "fail" and "guard bytes after the output changed" in bad.message
        assert worker.proc is None and worker.restarts == 1  # discarded
        good = run_job(t, Job(GemmCase("even_k", 4, 6, 8), "exact",
                              reals["exfaults.gemm_overrun"], "host"))
        assert good.status == "pass"
    finally:
        t.close()


def test_without_isolation_a_crash_still_ends_the_run(catalog, tmp_path):
    """--plugin-in-process is the documented unsafe opt-in: the plugin is in
    kbench's own process, so its segfault ends the run (this is why the
    default isolates it)."""
    lib = _libs("host") / "libexfaults.so"
    res = _kbench("run", "--suite", "correctness", "--shapes", str(catalog), "--plugin",
                  str(lib), "--realization", "exfaults.gemm_segv", "--plugin-in-process",
                  "--no-history", "--out", str(tmp_path / "run"), timeout=300)
    assert res.returncode == -signal.SIGSEGV


def test_a_lost_xdist_worker_makes_the_run_incomplete(catalog, tmp_path):
    """Before: with targets in parallel (pytest-xdist), a plugin that killed
    the process running it lost that process's verdicts while run.json said
    complete: true. A test whose process died, or that never reported, now
    makes the run incomplete, and run.json lists it."""
    lib = _libs("host") / "libexfaults.so"
    res = _kbench("run", "--suite", "correctness", "--shapes", str(catalog), "--plugin",
                  str(lib), "--realization", "exfaults.gemm_segv", "--plugin-in-process",
                  "--target", "host", "--target", "worker:host", "--jobs", "2",
                  "--no-history", "--out", str(tmp_path / "run"), timeout=300,
                  env={**os.environ, "PYTHONFAULTHANDLER": ""})
    assert res.returncode != 0, res.stdout[-2000:]
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["complete"] is False
    lost = meta["tests"]["not_finished"]
    assert any("host-exfaults.gemm_segv-odd_k" in t for t in lost), lost
    assert "INCOMPLETE" in res.stdout


def test_a_case_too_large_is_refused_before_anything_is_allocated(tmp_path):
    """Before: a catalog case of 100000 x 100000 x 5000 grew the process past
    5 GB before anything failed. It is now an error verdict with the bytes it
    would need, and the run goes on."""
    cat = tmp_path / "huge.toml"
    cat.write_text('[catalog]\nname = "huge"\ndescription = "too large"\n\n'
                   '[[gemm]]\nname = "huge"\nm = 100000\nn = 100000\nk = 5000\n\n'
                   '[[gemm]]\nname = "small"\nm = 4\nn = 4\nk = 4\n')
    res = _kbench("run", "--suite", "correctness", "--shapes", str(cat), "--realization",
                  "gemm_scalar_f32acc", "--no-history", "--out", str(tmp_path / "run"),
                  timeout=300, env={**os.environ, "KBENCH_MAX_CASE_BYTES": str(1 << 30)})
    assert res.returncode == 1
    rows = {(r["case"], r["kind"]): r for r in _rows(tmp_path / "run")}
    huge = rows[("huge", "exact")]
    assert huge["status"] == "error"
    assert "would need about 523.4 GiB" in huge["message"]
    assert "(562,000,600,000 bytes); the limit is 1.0 GiB" in huge["message"]
    assert rows[("small", "exact")]["status"] == "pass"


def test_a_call_bound_grows_with_the_call_and_is_larger_when_emulated():
    from kbench.native.calls import Timing
    from kbench.targets.timeouts import MAX_BOUND_S, CallBounds, gemm_flops
    host, emu = CallBounds(False), CallBounds(True)
    small, big = gemm_flops(8, 8, 8, 1), gemm_flops(4096, 4096, 4096, 1)
    assert host.call(small) < host.call(big) < emu.call(big)
    assert emu.call(small) > host.call(small) and emu.control() > host.control()
    # timed: the rounds (and their minimum length) come on top of one call
    timing = Timing(warmup=2, rounds=10, min_round_ns=int(50e6))
    assert host.call(small, timing) >= host.call(small) + 2 * 10 * 0.05
    assert host.call(10**30) == MAX_BOUND_S  # a size the worker refuses anyway
    fixed = CallBounds(True, 7.5)
    assert fixed.call(big, timing) == fixed.call(small) == fixed.control() == 7.5
    with pytest.raises(ValueError, match="positive"):
        CallBounds(False, 0.0)


def test_a_run_refuses_a_call_timeout_that_is_not_positive(catalog):
    res = _kbench("run", "--shapes", str(catalog), "--call-timeout", "0", "--no-history",
                  timeout=60)
    assert res.returncode == 2 and "--call-timeout" in res.stderr


def test_messages_name_the_options_of_kbench_run(tmp_path):
    """Before: a run folder refused at pytest's start named --kb-out, an
    option `kbench run` does not have."""
    from kbench.harness.pytest_plugin import option_name
    assert option_name("--kb-out") == "--out (--kb-out)"
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "results.csv").write_text("x\n")
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          "-c", str(Path(__file__).parents[1] / "pyproject.toml"),
                          str(Path(__file__).parent / "test_targets.py"), "--kb-out",
                          str(taken), "-q"], capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    assert "--out (--kb-out): " in res.stdout + res.stderr, res.stdout + res.stderr
