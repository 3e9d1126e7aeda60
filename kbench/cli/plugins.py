"""What the commands say about plugins and peers: the --plugin option, the
backend names a run may select, and the lines `kbench info` prints about
loaded plugins, refused plugin files and peer registrations."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # imported inside the functions: `kbench --version` loads none of them
    from kbench.native.calls import TargetInfo

PLUGIN_HELP = ("A plugin library (native/include/kbench_plugin.h) that every target loads; "
               "{arch} in the path becomes the target's architecture (x86_64, aarch64). A "
               "file a target cannot load is reported with the reason and the run goes on. "
               "Repeatable.")


def plugin_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """The --plugin option (repeatable), passed as `plugins`."""
    return click.option("--plugin", "plugins", multiple=True, metavar="PATH",
                        help=PLUGIN_HELP)(f)


def known_backends() -> tuple[str, ...]:
    """Backend names --backend takes: ours, every registered peer, "plugin" (every
    plugin realization) and "plugin:<name>" (one plugin's)."""
    from kbench.native import api
    from kbench.peers import registrations
    return (*api.BACKENDS, *(r.name for r in registrations()), api.PLUGIN_BACKEND)


def check_backend(name: str) -> None:
    from kbench.native import api
    known = known_backends()
    if name in known or name.startswith(api.PLUGIN_BACKEND + ":"):
        return
    import difflib
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise click.BadParameter(f"{name!r} is not one of {', '.join(known)} or plugin:NAME{hint}",
                             param_hint="--backend")


def plugin_lines(info: TargetInfo) -> list[str]:
    """Lines about the target's plugins (loaded, refused) and peer problems."""
    from kbench.targets.plugins import PluginLoads
    loads = PluginLoads.from_extra(info.extra)
    out = []
    for p in loads.loaded:
        out.append(f"plugin:           {p.label} (ABI {p.abi_version}) from {p.path}")
        for r in p.realizations:
            if not r.usable:
                out.append(f"                  {r.name}: not usable here ({r.note})")
    for e in loads.errors:
        out.append(f"plugin refused:   {e.message}")
    for name, message in info.extra.get("peer_errors", {}).items():
        out.append(f"peer {name} failed: {message}")
    return out


def report_plugin_errors(infos: list[TargetInfo], going_on: bool = True) -> int:
    """Prints every refused plugin file to stderr (one line each); returns
    how many there were."""
    from kbench.targets.plugins import PluginLoads
    count = 0
    for i in infos:
        for e in PluginLoads.from_extra(i.extra).errors:
            count += 1
            click.echo(f"kbench: {i.name}: {e.message}"
                       + (" (going on without it)" if going_on else ""), err=True)
    return count


__all__ = ["PLUGIN_HELP", "check_backend", "known_backends", "plugin_lines",
           "plugin_option", "report_plugin_errors"]
