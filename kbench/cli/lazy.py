"""A click group whose subcommands are imported when they are used, so
that `kbench --version` and `kbench --help` do not load numpy, pandas,
scipy or matplotlib."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click


class LazyGroup(click.Group):
    """`lazy_commands` maps a command name to ("module:attribute", short help):
    `kbench --help` lists the short help without importing the command
    (suites/test_packaging.py checks that it matches the command's own)."""

    def __init__(self, *args: Any, lazy_commands: dict[str, tuple[str, str]] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy_commands and name not in self.commands:
                rows.append((name, self.lazy_commands[name][1]))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            limit = formatter.width - 6 - max(len(n) for n, _ in rows)
            rows = [(n, h if len(h) <= limit else h[:max(0, limit - 3)].rsplit(" ", 1)[0]
                     + "...") for n, h in rows]
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands and cmd_name not in self.commands:
            module, attr = self.lazy_commands[cmd_name][0].split(":")
            try:
                cmd = getattr(importlib.import_module(module), attr)
            except KeyboardInterrupt:  # Ctrl-C while numpy/pandas load: 130, one line
                sys.stderr.write("kbench: interrupted\n")
                raise SystemExit(130) from None
            if not isinstance(cmd, click.Command):
                raise TypeError(f"{module}:{attr} is not a click command")
            self.add_command(cmd, cmd_name)
        return super().get_command(ctx, cmd_name)
