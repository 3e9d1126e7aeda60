"""The command line (click): one module per command group. `kbench.cli:main`
is the entry point; `python -m kbench.cli` runs it too.

May import: every other layer."""

import sys


def main() -> None:
    """The `kbench` entry point. The commands load numpy, pandas and the
    native module first: Ctrl-C during that start-up ends kbench with status
    130 and one line, not a traceback."""
    try:
        from kbench.cli.main import main as command
    except KeyboardInterrupt:
        sys.stderr.write("kbench: interrupted\n")
        raise SystemExit(130) from None
    command()


__all__ = ["main"]
