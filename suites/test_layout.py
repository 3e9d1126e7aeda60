"""The package's layering: every import inside kbench/ points down (or
sideways within a layer), and no module imports itself back through others.

Layers, lowest first (kbench/__init__.py says what each owns):
errors < native < judge < problems < peers < targets < results < harness < cli.
Imports are read with `ast` from every module, including imports inside
functions and under TYPE_CHECKING: a lazy import is still a dependency.

The C library is checked the same way on its object files (the worker's
build, host and aarch64): no two files may call each other, directly or
round a loop, so the timer drives the entry points, the entry points use
dispatch and packing, packing uses dispatch and the backends, and the
backends use only layouts and the helpers below them."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kbench.targets import crossbuild

PKG = Path(__file__).resolve().parents[1] / "kbench"
LAYERS = ("errors", "native", "judge", "problems", "peers", "targets", "results", "harness",
          "cli")
# top-level modules besides the layers' packages: the public facade and the build
TOP_LEVEL_ALLOWED = {"__init__", "errors", "resources"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in PKG.rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The kbench modules `name` imports (a `from pkg import mod` counts as mod)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = []
            for a in node.names:
                sub = f"{mod}.{a.name}"
                targets.append(sub if sub in known else mod)
        else:
            continue
        found.update(t for t in targets if t == "kbench" or t.startswith("kbench."))
    found.discard(name)
    return found


def layer_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return len(LAYERS)  # kbench itself: the public facade, above everything
    if parts[1] == "resources":
        return 0  # where shipped files are: beside errors, imports nothing of kbench
    return LAYERS.index(parts[1])


def graph() -> dict[str, set[str]]:
    mods = all_modules()
    known = set(mods)
    return {m: imports_of(m, p, known) for m, p in mods.items()}


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among the modules, or None (iterative DFS, three colours)."""
    colour = dict.fromkeys(g, 0)
    for root in sorted(g):
        if colour[root]:
            continue
        stack = [(root, iter(sorted(g[root])))]
        path = [root]
        colour[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
                continue
            if nxt not in g:
                continue
            if colour[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            if colour[nxt] == 0:
                colour[nxt] = 1
                stack.append((nxt, iter(sorted(g[nxt]))))
                path.append(nxt)
    return None


def test_top_level_is_a_handful_of_modules() -> None:
    top = {p.stem for p in PKG.glob("*.py")}
    assert top <= TOP_LEVEL_ALLOWED, f"modules outside a layer: {sorted(top - TOP_LEVEL_ALLOWED)}"
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    assert packages == set(LAYERS) - {"errors"}


@pytest.mark.parametrize("package", [layer for layer in LAYERS if layer != "errors"])
def test_every_subpackage_says_what_it_owns(package: str) -> None:
    doc = ast.get_docstring(ast.parse((PKG / package / "__init__.py").read_text()))
    assert doc and len(doc.split()) >= 20, f"kbench.{package} needs a docstring"
    assert "May import" in doc, f"kbench.{package}'s docstring must say what it may import"


def test_imports_point_down() -> None:
    upward = []
    for mod, deps in graph().items():
        if mod == "kbench":
            continue
        for dep in deps:
            if dep == "kbench":
                upward.append(f"{mod} imports the kbench facade (import from its layer)")
            elif layer_of(dep) > layer_of(mod):
                upward.append(f"{mod} -> {dep}")
    assert not upward, "upward imports:\n" + "\n".join(sorted(upward))


def test_no_import_cycles() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_checks_would_fail_on_a_bad_graph() -> None:
    """The checkers themselves: a planted cycle and an upward edge are found."""
    g = {"kbench.judge.a": {"kbench.judge.b"}, "kbench.judge.b": {"kbench.judge.a"}}
    assert find_cycle(g) == ["kbench.judge.a", "kbench.judge.b", "kbench.judge.a"]
    assert find_cycle({"kbench.judge.a": {"kbench.judge.b"}, "kbench.judge.b": set()}) is None
    assert layer_of("kbench.results.store") > layer_of("kbench.judge.verdict")
    assert layer_of("kbench.cli.main") > layer_of("kbench.harness.runner")


# ---- the C library -------------------------------------------------------------------


def c_symbol_graph(objects: list[Path]) -> dict[str, set[str]]:
    """File -> files whose functions or data it uses, from `nm` on each object."""
    defined: dict[str, str] = {}
    used: dict[str, set[str]] = {}
    for obj in objects:
        name = obj.stem
        out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
        used[name] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRV":
                defined[parts[2]] = name
            elif len(parts) == 2 and parts[0] == "U":
                used[name].add(parts[1])
    return {f: {defined[s] for s in syms if s in defined and defined[s] != f}
            for f, syms in used.items()}


def worker_objects(arch: str) -> list[Path]:
    if arch == "aarch64" and not shutil.which(crossbuild.toolchain_compiler("aarch64")):
        if os.environ.get("KBENCH_REQUIRE_QEMU"):
            pytest.fail("clang-19 is required (KBENCH_REQUIRE_QEMU=1)")
        pytest.skip("clang-19 is not installed: bash ci/install-toolchain.sh")
    out = crossbuild.build(arch)
    objs = [crossbuild.object_path(src, out) for src in crossbuild.sources(arch)
            if src.parent.name != "worker"]
    assert objs and all(o.exists() for o in objs), f"objects missing beside {out}"
    return objs


@pytest.mark.parametrize("arch", ["host", "aarch64"])
def test_c_files_call_down_only(arch: str) -> None:
    g = c_symbol_graph(worker_objects(arch))
    assert any(g.values()), "nm found no calls between files: the check would be empty"
    cycle = find_cycle(g)
    assert cycle is None, "C files calling each other: " + " -> ".join(cycle or [])
    # the timer drives calls; calls do not call back into it
    timer = "src_core_kb_timer"
    assert timer in g and "src_core_kb_gemm" in g[timer]
    callers = sorted(f for f, deps in g.items() if timer in deps)
    assert callers == [], f"{callers} call into the timer"
