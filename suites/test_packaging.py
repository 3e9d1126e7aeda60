"""Installing like a Python tool: the suites, catalogs, report template and
gate configuration ship inside the package (a wheel finds them with no
checkout), and `kbench --version` / `--help` start without numpy, pandas,
scipy, matplotlib or the native library. (CI builds a wheel, installs it in
a clean venv and runs `kbench run --shapes smoke` and `kbench catalogs`
from it: ci/test.sh.)"""

from __future__ import annotations

import fnmatch
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from kbench.resources import SHIPPED, resource_dir

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "cffi", "kbench.native.api", "kbench._native")


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_subpackage_is_packaged() -> None:
    listed = set(_setuptools()["packages"])
    found = {"kbench"} | {f"kbench.{p.name}" for p in (REPO / "kbench").iterdir()
                          if (p / "__init__.py").is_file()}
    assert found <= listed, f"not in [tool.setuptools] packages: {sorted(found - listed)}"


@pytest.mark.parametrize("folder", SHIPPED)
def test_shipped_folders_are_mapped_and_their_files_covered(folder: str) -> None:
    st = _setuptools()
    pkg = f"kbench.{folder}"
    assert st["package-dir"][pkg] == folder
    patterns = st["package-data"][pkg]
    tracked = subprocess.run(["git", "ls-files", folder], cwd=REPO, capture_output=True,
                             text=True).stdout.split()
    if not tracked:  # not a git checkout (e.g. an sdist): the folder's files
        tracked = [str(p.relative_to(REPO)) for p in (REPO / folder).iterdir() if p.is_file()]
    needed = {"suites": (".py", ".ini"), "reference": (".toml",), "reports": (".j2",),
              "ci": ("gate.toml",)}[folder]
    for f in tracked:
        name = Path(f).name
        if name.endswith(needed):
            assert any(fnmatch.fnmatch(name, p) for p in patterns), f"{f} is not shipped"


def test_resources_resolve_to_the_checkout_here() -> None:
    for name in SHIPPED:
        assert resource_dir(name) == REPO / name
    with pytest.raises(ValueError):
        resource_dir("native")


def test_resources_prefer_the_package_copy(tmp_path: Path) -> None:
    """A wheel's layout: kbench/<folder> inside the package wins."""
    pkg = tmp_path / "kbench"
    (pkg / "reference").mkdir(parents=True)
    (pkg / "resources.py").write_text((REPO / "kbench" / "resources.py").read_text())
    (pkg / "__init__.py").write_text("")
    code = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from kbench.resources import resource_dir, is_checkout
        print(resource_dir("reference"), is_checkout())
    """)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == [str(pkg / "reference"), "False"]


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["run", "--help"],
                                  ["tune", "--help"], ["gate", "--help"]])
def test_cli_start_up_imports_nothing_heavy(args: list[str]) -> None:
    code = textwrap.dedent(f"""
        import sys
        from kbench.cli.main import main
        try:
            main({args!r})
        except SystemExit as exc:
            assert exc.code in (0, None), exc.code
        heavy = [m for m in {HEAVY!r} if m in sys.modules]
        if {args!r}[0] == "gate":
            heavy = []  # gate's module is imported to show its options (its help names them)
        print("HEAVY", heavy)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "HEAVY []" in out, out


def test_version_imports_no_heavy_module_even_via_kbench() -> None:
    out = subprocess.run([sys.executable, "-c", "import sys, kbench, kbench.cli; "
                          f"print([m for m in {HEAVY!r} if m in sys.modules])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    # and the facade still works on first use
    out = subprocess.run([sys.executable, "-c", "import kbench; print(kbench.version(), "
                          "kbench.api.__name__, kbench.KbenchError.__name__)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[1:] == ["kbench.native.api", "KbenchError"]


def test_lazy_command_help_matches_the_commands() -> None:
    """`kbench --help` shows stored short help for commands it has not imported:
    it must be each command's own."""
    import importlib

    import click

    from kbench.cli.main import main
    for name, (where, short) in main.lazy_commands.items():
        module, attr = where.split(":")
        cmd = getattr(importlib.import_module(module), attr)
        assert isinstance(cmd, click.Command) and cmd.name == name
        assert cmd.get_short_help_str(10_000) == short, name
