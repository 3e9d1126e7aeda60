"""Where the files that ship with kbench are: the pytest suites (suites/),
the shape catalogs (reference/), the report template (reports/) and the
gate configuration (ci/gate.toml).

In a checkout (and an editable install) they are the top-level folders of
the repository. A wheel (`pip install .`, `pipx install`) carries the same
folders inside the package (kbench/suites, kbench/reference, ...; see
[tool.setuptools] in pyproject.toml), so the package's own copy wins when
it exists. Imports nothing from kbench (the lowest layer, with errors)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
CHECKOUT = PACKAGE.parent

SHIPPED = ("suites", "reference", "reports", "ci")


def resource_dir(name: str) -> Path:
    """The folder `name` (one of SHIPPED): inside the installed package if
    it is there, else the checkout's top-level folder."""
    if name not in SHIPPED:
        raise ValueError(f"{name!r} is not one of {', '.join(SHIPPED)}")
    inside = PACKAGE / name
    return inside if inside.is_dir() else CHECKOUT / name


def is_checkout() -> bool:
    """Runs from a source checkout (editable install), not an installed wheel."""
    return not (PACKAGE / "suites").is_dir() and (CHECKOUT / "pyproject.toml").is_file()
