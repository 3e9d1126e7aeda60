"""Which project a run belongs to: the checkout that ran it (its repository
root and remote; an installed kbench: the package folder), and the catalogs
it ran (each catalog's name and a digest of its file).

The history is per user, shared by every checkout of that user: `latest`,
`latest~N` and commit prefixes resolve among the runs of the current
checkout (kbench.results.runref), and compare and gate say when two runs
differ in checkout, catalogs or targets (the gate refuses such a pair
unless --force): a smoke run of one checkout against a full run of
another is not a regression."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbench.resources import CHECKOUT, PACKAGE, is_checkout

TAILS = "tails"  # the derived catalog (kbench.problems.tails.CATALOG): no file


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def checkout() -> dict[str, str]:
    """This kbench's checkout: {"root": the repository's top folder (an
    installed package: its folder), "remote": origin's URL or ""}."""
    if not is_checkout():
        return {"root": str(PACKAGE), "remote": ""}
    root = _git("rev-parse", "--show-toplevel") or str(CHECKOUT)
    return {"root": str(Path(root).resolve()), "remote": _git("remote", "get-url", "origin")}


def checkout_root(meta: Mapping[str, Any]) -> str:
    """The checkout root a run's run.json records ("" for a run from before
    kbench recorded it)."""
    co = meta.get("checkout")
    return str(co.get("root") or "") if isinstance(co, Mapping) else ""


def catalog_set(names: Sequence[str]) -> dict[str, str]:
    """The catalogs of a run (the --shapes arguments; none: the defaults), each
    by its name and the first 16 hex digits of its file's SHA-256."""
    from kbench.problems.catalog import default_catalog_paths, load_catalog, resolve_catalog
    out: dict[str, str] = {}
    paths = ([(n, None) for n in names] if names
             else [(str(p), p) for p in default_catalog_paths().values()])
    for name, path in paths:
        if name == TAILS:
            out[TAILS] = "derived"
            continue
        try:
            path = path or resolve_catalog(name)
            data = Path(path).read_bytes()
            out[load_catalog(path).name] = hashlib.sha256(data).hexdigest()[:16]
        except (OSError, ValueError):  # refused before the run starts; never here
            out[name] = "unreadable"
    return dict(sorted(out.items()))


def _targets(meta: Mapping[str, Any]) -> list[str]:
    targets = meta.get("targets")
    return sorted(targets) if isinstance(targets, Mapping) else []


def differences(base: Mapping[str, Any], cand: Mapping[str, Any]) -> list[str]:
    """How two runs' run.json differ in checkout, catalogs or targets: one line
    each ([] when alike). What one of them does not record is not compared."""
    out = []
    b_root, c_root = checkout_root(base), checkout_root(cand)
    if b_root and c_root and b_root != c_root:
        out.append(f"checkout: BASE ran in {b_root}, CAND in {c_root}")
    b_cat, c_cat = base.get("catalogs"), cand.get("catalogs")
    if isinstance(b_cat, Mapping) and isinstance(c_cat, Mapping) and b_cat != c_cat:
        only_b = sorted(set(b_cat) - set(c_cat))
        only_c = sorted(set(c_cat) - set(b_cat))
        changed = sorted(n for n in set(b_cat) & set(c_cat) if b_cat[n] != c_cat[n])
        parts = ([f"only BASE ran {', '.join(only_b)}"] if only_b else []) + (
            [f"only CAND ran {', '.join(only_c)}"] if only_c else []) + (
            [f"{', '.join(changed)} changed between them (file digest)"] if changed else [])
        out.append("catalogs: " + "; ".join(parts))
    b_t, c_t = _targets(base), _targets(cand)
    if b_t and c_t and b_t != c_t:
        out.append(f"targets: BASE ran on {', '.join(b_t)}; CAND on {', '.join(c_t)}")
    return out


__all__ = ["catalog_set", "checkout", "checkout_root", "differences"]
