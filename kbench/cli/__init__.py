"""The command line (click): one module per command group. `kbench.cli:main`
is the entry point; `python -m kbench.cli` runs it too.

May import: every other layer."""

from kbench.cli.main import main

__all__ = ["main"]
