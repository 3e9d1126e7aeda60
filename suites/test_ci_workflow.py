"""The sample CI workflow (ci/github-actions.yml) works: it validates against
GitHub's workflow schema (check-jsonschema's built-in copy, offline), and the
shell of every step of the perf-gate job runs here — with stubs only for
what needs GitHub or the network (git worktree, venv creation, pip install)
and kbench's perf runs shortened to two smoke cases — producing the run
folders, the HTML report and the gate summary the upload steps collect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "ci" / "github-actions.yml"


def _steps(job: str) -> list[dict]:
    from ruamel.yaml import YAML  # check-jsonschema's YAML reader
    doc = YAML(typ="safe").load(WORKFLOW.read_text())
    return list(doc["jobs"][job]["steps"])


def test_workflow_validates_against_the_github_schema() -> None:
    tool = shutil.which("check-jsonschema")
    if tool is None:
        pytest.fail("check-jsonschema is missing: pip install -e '.[test]'")
    res = subprocess.run([tool, "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_gate_args_reads_the_ci_table(tmp_path: Path) -> None:
    cfg = tmp_path / "gate.toml"
    cfg.write_text('[ci]\nshapes = ["a", "b c"]\npasses = 3\n')
    out = subprocess.run([sys.executable, str(REPO / "ci" / "gate_args.py"), str(cfg)],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "--shapes a --shapes 'b c' --passes 3"
    cfg.write_text('[ci]\nshapes = ["a"]\npasses = 3\nab_rounds = 40\n')
    ab = subprocess.run([sys.executable, str(REPO / "ci" / "gate_args.py"), "--ab", str(cfg)],
                        capture_output=True, text=True, check=True).stdout.strip()
    assert ab == "--shapes a --rounds 40"
    # a budget: sequential sampling, decided at the [gate] table's limit as well
    cfg.write_text('[gate]\nmax_slowdown = "5%"\n[ci]\nshapes = ["a"]\nab_rounds = 60\n'
                   'ab_budget = 600\nab_max_looks = 6\nab_processes = 3\n')
    ab = subprocess.run([sys.executable, str(REPO / "ci" / "gate_args.py"), "--ab", str(cfg)],
                        capture_output=True, text=True, check=True).stdout.strip()
    # judged at the [gate] table's limit too: kbench ab and gate --ab use one set of words
    assert ab == ("--shapes a --rounds 60 --budget 600 --max-looks 6 --processes 3 "
                  "--min-effect 5% --gate-limit 5%")
    bad = subprocess.run([sys.executable, str(REPO / "ci" / "gate_args.py"),
                          str(tmp_path / "missing.toml")], capture_output=True, text=True)
    assert bad.returncode == 2 and "missing.toml" in bad.stderr


STUB_GIT = """#!/usr/bin/env bash
# git worktree add DIR SHA: a base checkout with its gate configuration
if [ "$1" = worktree ] && [ "$2" = add ]; then
  mkdir -p "$3/ci" && cp "$KB_REPO/ci/gate.toml" "$3/ci/gate.toml" && exit 0
fi
exec "$KB_REAL_GIT" "$@"
"""
STUB_PYTHON = """#!/usr/bin/env bash
# python -m venv DIR: the environment with kbench already exists
if [ "$1" = -m ] && [ "$2" = venv ]; then mkdir -p "$3/bin"; exit 0; fi
exec "$KB_PYTHON" "$@"
"""
STUB_BASE_PYTHON = """#!/usr/bin/env bash
# the base environment's python: crossbuild builds this checkout's worker, placed in
# the base checkout as the base's own build would be
if [ "$1" = -m ] && [ "$2" = kbench.targets.crossbuild ]; then
  "$KB_PYTHON" "$@" >/dev/null || exit 1
  mkdir -p build/worker/host && ln -sf "$KB_REPO/build/worker/host/kb_worker" build/worker/host/
  exit 0
fi
exec "$KB_PYTHON" "$@"
"""
STUB_PIP = """#!/usr/bin/env bash
echo "pip $* (stub: kbench is installed)"
"""
STUB_KBENCH = """#!/usr/bin/env bash
# the installed kbench; perf runs shortened to two smoke cases of one realization
if [ "$1" = run ]; then
  shift
  args=()
  while [ $# -gt 0 ]; do
    case "$1" in --shapes) shift 2;; *) args+=("$1"); shift;; esac
  done
  exec "$KB_PYTHON" -m kbench.cli run "${args[@]}" --shapes smoke -k 'm7_n8|m3_n2' \\
    --realization gemm_scalar_f32acc --rounds 4 --max-time 0.02
fi
if [ "$1" = ab ]; then  # the interleaved step shortened the same way
  shift
  args=()
  while [ $# -gt 0 ]; do
    case "$1" in --shapes|--rounds) shift 2;; *) args+=("$1"); shift;; esac
  done
  exec "$KB_PYTHON" -m kbench.cli ab "${args[@]}" --shapes smoke -k 'm7_n8|m3_n2' \
    --realization gemm_scalar_f32acc --rounds 14 --min-round-ms 0.2
fi
exec "$KB_PYTHON" -m kbench.cli "$@"
"""


def _stub(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def test_perf_gate_job_steps_run(tmp_path: Path) -> None:
    work = tmp_path / "checkout"
    work.mkdir()
    (work / "ci").symlink_to(REPO / "ci")
    runner = tmp_path / "runner"
    stubs = tmp_path / "stubs"
    _stub(stubs / "git", STUB_GIT)
    _stub(stubs / "python", STUB_PYTHON)
    for side in ("base", "cand"):
        _stub(runner / f"venv-{side}" / "bin" / "pip", STUB_PIP)
        _stub(runner / f"venv-{side}" / "bin" / "kbench", STUB_KBENCH)
    _stub(runner / "venv-base" / "bin" / "python", STUB_BASE_PYTHON)
    summary = tmp_path / "summary.md"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(RUNNER_TEMP=str(runner), GITHUB_STEP_SUMMARY=str(summary), BASE_SHA="0" * 40,
               PATH=f"{stubs}:{env.get('PATH', '')}", KB_REPO=str(REPO),
               KB_REAL_GIT=shutil.which("git") or "git", KB_PYTHON=sys.executable,
               PYTHONPATH=str(REPO))
    ran = []
    for step in _steps("perf-gate"):
        if "run" not in step:
            continue  # actions (checkout, setup-python, upload-artifact) run on GitHub only
        res = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=env,
                             capture_output=True, text=True, timeout=900)
        ran.append(step["name"])
        # the gate may fail on this shared machine's noise; every other step must pass
        if step["name"] != "Gate":
            assert res.returncode == 0, f"{step['name']}:\n{res.stdout[-3000:]}{res.stderr[-3000:]}"
        else:
            assert res.returncode in (0, 1), res.stdout[-3000:] + res.stderr[-3000:]
    assert ran == ["Check out the base commit", "Install base and candidate",
                   "Perf suite on base and candidate",
                   "Interleaved timing of base and candidate", "Report", "Gate"]
    runs = work / "runs"
    for side in ("base", "cand"):
        assert (runs / side / "results.csv").is_file() and (runs / side / "gbench.json").is_file()
    assert (runs / "report" / "index.html").is_file() or any((runs / "report").glob("*.html"))
    # speed from the interleaved run: the base build's worker against the candidate's
    ab_meta = json.loads((runs / "ab" / "run.json").read_text())
    assert ab_meta["kind"] == "ab" and ab_meta["complete"]
    assert ab_meta["base"] == f"worker:{runner}/base/build/worker/host/kb_worker"
    # sequential within the [ci] table's budget, with its looks (the settings measured by
    # ci/gate_benchmark.py), read from the base checkout's ci/gate.toml
    import tomllib
    ci = tomllib.loads((REPO / "ci" / "gate.toml").read_text())["ci"]
    assert ab_meta["settings"]["budget_s"] == ci["ab_budget"] > 0
    assert ab_meta["settings"]["looks"] == ci["ab_max_looks"] > 1
    gate_md = (runs / "gate.md").read_text()
    assert gate_md.startswith("## kbench gate: ")
    assert "### Speed, interleaved (" in gate_md
    assert "## kbench gate: " in summary.read_text()  # after kbench ab's own summary
    # what the upload step collects exists
    uploads = [s for s in _steps("perf-gate") if s.get("uses", "").startswith(
        "actions/upload-artifact")]
    paths = " ".join(s["with"]["path"] for s in uploads)
    assert "runs/report/" in paths and "runs/gate.md" in paths


def test_only_the_perf_gate_job_times_and_its_gate_takes_speed_from_the_interleaved_run(
) -> None:
    """Speed is gated once, in the perf-gate job: its gate step reads the
    interleaved run (--ab) that its timing step wrote; the emulated job
    (whose times are not speed) times nothing and gates correctness only."""
    perf = {s["name"]: s.get("run", "") for s in _steps("perf-gate") if "name" in s}
    assert "kbench\" ab" in perf["Interleaved timing of base and candidate"]
    assert "--out runs/ab" in perf["Interleaved timing of base and candidate"]
    assert "gate_args.py --ab" in perf["Interleaved timing of base and candidate"]
    assert "--ab runs/ab" in perf["Gate"]
    emulated = [s.get("run", "") for s in _steps("emulated-correctness")]
    assert not any("kbench\" ab" in r or "--ab" in r for r in emulated)
    assert any("kbench\" gate" in r for r in emulated)
