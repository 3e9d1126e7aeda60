#!/usr/bin/env python3
"""Carries a generated-mutant campaign (ci/mutmut.sh) across work folders:
the mutants it killed and those that survived, per function, keyed by the
hash mutmut gives the function's source. A campaign of thousands of mutants
takes longer than one sitting, and its work folder (build/, untracked) does
not outlive the checkout; this file does, so the next campaign runs only
what is left.

    python ci/mutmut_progress.py save WORK [--progress FILE] [--commit C]
        merge WORK's results into FILE: every killed mutant (killed, or timed
        out) and every survivor of every function, with the function's hash;
        a mutant's latest result wins
    python ci/mutmut_progress.py restore WORK [--progress FILE]
        before `mutmut run` in WORK: write the meta file of every mutated
        module that has none yet, holding FILE's results; in a meta file
        WORK has, fill in FILE's results of mutants WORK has not run yet

A mutant no test reaches and a mutant not yet run are run again. A carried
survivor is not: it survived the suites of its day, and a campaign's last
step reruns its survivors against the suites of the record
(`ci/mutmut.sh PATH -- NAME...`). mutmut itself drops a carried result when
the function's hash differs (the function changed since), so a result is
kept only for the very function it was observed on. FILE names the mutmut
version; a campaign under another version starts afresh (its mutant
numbering may differ).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "ci" / "mutmut_progress.json"
SURVIVED = 0  # mutmut's exit code of a mutant every test passed with
# mutmut's exit codes that count as a kill (its stats.status_by_exit_code):
# a failing test, pytest's internal error, and the timeouts (SIGXCPU, kill)
KILLED = {1: "killed", 3: "killed", 36: "timeout", 24: "timeout", -24: "timeout",
          152: "timeout", 255: "timeout"}
META_KEYS = ("exit_code_by_key", "hash_by_function_name", "type_check_error_by_key",
             "durations_by_key", "estimated_durations_by_key")


def mutmut_version() -> str:
    try:
        from importlib.metadata import version
        return version("mutmut")
    except Exception:  # noqa: BLE001 - mutmut not installed: no version to match
        return ""


def split_key(key: str) -> tuple[str, int]:
    """'kbench.results.x_f__mutmut_12' -> ('kbench.results.x_f', 12)."""
    func, sep, num = key.partition("__mutmut_")
    if not sep or not num.isdigit():
        raise ValueError(f"not a mutmut mutant name: {key!r}")
    return func, int(num)


def function_of(func_key: str) -> str:
    """The mangled function name mutmut hashes: the part after the module."""
    return func_key.rpartition(".")[2]


def read_meta(path: Path) -> dict | None:
    try:
        meta = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):  # being written by mutmut right now
        return None
    if not isinstance(meta, dict) or not isinstance(meta.get("exit_code_by_key"), dict):
        return None
    return meta


def results_of(meta: dict) -> dict[str, dict]:
    """function -> {"hash": h, "killed": {number: exit code}, "survived": {number}}
    of one meta file."""
    hashes = meta.get("hash_by_function_name", {})
    out: dict[str, dict] = {}
    for key, code in meta["exit_code_by_key"].items():
        if code not in KILLED and code != SURVIVED:
            continue
        func_key, num = split_key(key)
        func = function_of(func_key)
        if func not in hashes:
            continue  # no hash to tie the result to: not carried
        entry = out.setdefault(func, {"hash": hashes[func], "killed": {}, "survived": set()})
        if code == SURVIVED:
            entry["survived"].add(num)
        else:
            entry["killed"][num] = code
    return out


def load(progress: Path) -> dict:
    if not progress.exists():
        return {"mutmut": mutmut_version(), "commits": [], "files": {}}
    data = json.loads(progress.read_text())
    for k in ("mutmut", "commits", "files"):
        if k not in data:
            sys.exit(f"mutmut_progress: {progress} has no {k!r}: not a progress file")
    return data


def save(work: Path, progress: Path, commit: str) -> dict:
    root = work / "mutants"
    if not root.is_dir():
        sys.exit(f"mutmut_progress: {work} holds no mutants/ folder: not a campaign's work folder")
    data = load(progress)
    version = mutmut_version()
    if data["files"] and data["mutmut"] != version:
        print(f"mutmut_progress: {progress} was written by mutmut {data['mutmut']}, this is "
              f"{version}: its results are dropped (mutant numbering may differ)")
        data = {"mutmut": version, "commits": [], "files": {}}
    data["mutmut"] = version
    for meta_path in sorted(root.rglob("*.py.meta")):
        source = str(meta_path.relative_to(root))[: -len(".meta")]
        meta = read_meta(meta_path)
        if meta is None:
            continue  # unreadable now: the previous save's entry stands
        now = results_of(meta)
        old = data["files"].get(source, {})
        merged = {}
        for func, h in meta.get("hash_by_function_name", {}).items():
            entry = now.get(func, {"hash": h, "killed": {}, "survived": set()})
            killed, survived = dict(entry["killed"]), set(entry["survived"])
            before = old.get(func)
            if before and before["hash"] == h:  # the latest result of a mutant wins
                killed = {**{int(k): v for k, v in before["killed"].items()
                             if int(k) not in survived}, **killed}
                survived |= {int(n) for n in before.get("survived", [])} - set(killed)
            if killed or survived:
                merged[func] = {"hash": h,
                                "killed": {str(k): killed[k] for k in sorted(killed)}}
                if survived:
                    merged[func]["survived"] = sorted(survived)
        # a module's functions: those mutmut hashed now; the rest are gone from the source
        data["files"][source] = merged
    if commit and commit not in data["commits"]:
        data["commits"].append(commit)
    progress.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


def module_of(source: str) -> str:
    """The module part of mutmut's mutant names (its get_mutant_name)."""
    return source[: -len(".py")].replace("/", ".").removesuffix(".__init__")


def restore(work: Path, progress: Path) -> int:
    """Carried results into WORK: a meta file for each module WORK has none
    of; in a meta file WORK has, only mutants it has not run yet, of
    functions whose hash there is the carried one. Returns the results
    written."""
    data = load(progress)
    version = mutmut_version()
    if data["mutmut"] != version:
        print(f"mutmut_progress: {progress} is of mutmut {data['mutmut']}, this is {version}: "
              "nothing carried over")
        return 0
    written = 0
    for source, funcs in sorted(data["files"].items()):
        meta_path = work / "mutants" / (source + ".meta")
        if not funcs:
            continue
        mod = module_of(source)
        codes = {f"{mod}.{func}__mutmut_{num}": code
                 for func, e in funcs.items() for num, code in _carried(e).items()}
        if meta_path.exists():
            written += _fill(meta_path, mod, funcs)
            continue
        meta = {"exit_code_by_key": codes,
                "hash_by_function_name": {func: e["hash"] for func, e in funcs.items()},
                "type_check_error_by_key": {}, "durations_by_key": {},
                "estimated_durations_by_key": {}}
        meta_path.parent.mkdir(parents=True, exist_ok=True)
        meta_path.write_text(json.dumps(meta, indent=4))
        written += len(codes)
    return written


def _carried(entry: dict) -> dict[str, int]:
    """A function's carried results: mutant number -> exit code."""
    return {**{str(n): SURVIVED for n in entry.get("survived", [])}, **entry["killed"]}


def _fill(meta_path: Path, mod: str, funcs: dict) -> int:
    """Carried results into a work folder's own meta file: its own results
    win; a mutant it has not run (None) takes the carried result when the
    function's hash there is the one the result was observed on."""
    meta = read_meta(meta_path)
    if meta is None:
        return 0
    codes, hashes = meta["exit_code_by_key"], meta.get("hash_by_function_name", {})
    n = 0
    for func, e in funcs.items():
        if hashes.get(func) != e["hash"]:
            continue
        for num, code in _carried(e).items():
            key = f"{mod}.{func}__mutmut_{num}"
            if key in codes and codes[key] is None:
                codes[key] = code
                n += 1
    if n:
        meta_path.write_text(json.dumps(meta, indent=4))
    return n


def head() -> str:
    res = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                         capture_output=True, text=True)
    return res.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("save", "restore"))
    p.add_argument("work", type=Path, help="the campaign's work folder (MUTMUT_WORK)")
    p.add_argument("--progress", type=Path, default=DEFAULT,
                   help="the carried results [ci/mutmut_progress.json]")
    p.add_argument("--commit", default="", help="the commit the campaign runs at [HEAD]")
    a = p.parse_args(argv)
    if a.action == "save":
        data = save(a.work, a.progress, a.commit or head())
        entries = [e for f in data["files"].values() for e in f.values()]
        n = sum(len(e["killed"]) for e in entries)
        m = sum(len(e.get("survived", [])) for e in entries)
        print(f"mutmut_progress: {n} kills and {m} survivors of {len(data['files'])} modules "
              f"in {a.progress}")
    else:
        n = restore(a.work, a.progress)
        print(f"mutmut_progress: {n} results carried into {a.work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
