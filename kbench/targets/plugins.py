"""Plugins on a target: which plugin files a target loads, what became of
each (loaded, or refused with a reason), and naming plugin realizations
after their plugin and version.

`kbench ... --plugin PATH` hands the same paths to every target. A path may
contain `{arch}`, replaced by the target's architecture (x86_64, aarch64), so
that one option names the host build and the Arm64 build of a plugin
(`examples/plugins/build/{arch}/libexwhole.so`). A file that cannot be loaded
on a target (wrong architecture, missing symbol, newer ABI, an ISA the CPU
lacks, no such file) is reported with its reason and the target goes on
without it."""

from __future__ import annotations

import platform
from dataclasses import dataclass, field, replace
from typing import Any

from kbench.native.api import Realization
from kbench.native.plugins import PluginInfo, PluginRealizationInfo

ARCH_ALIASES = {"arm64": "aarch64", "amd64": "x86_64"}


def host_arch() -> str:
    m = platform.machine().lower()
    return ARCH_ALIASES.get(m, m)


def expand(path: str, arch: str) -> str:
    """The path for a target of architecture `arch` ({arch} replaced)."""
    return str(path).replace("{arch}", arch)


@dataclass(frozen=True)
class PluginError:
    """A plugin file a target could not load, and why (one line)."""

    path: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


@dataclass
class PluginLoads:
    """What a target made of the plugin paths it was given."""

    requested: list[str] = field(default_factory=list)  # as given (before {arch})
    loaded: list[PluginInfo] = field(default_factory=list)
    errors: list[PluginError] = field(default_factory=list)

    def add(self, info: PluginInfo) -> None:
        if all(p.path != info.path for p in self.loaded):
            self.loaded.append(info)

    def names(self) -> set[str]:
        return {p.name for p in self.loaded}

    def owner(self, realization: str) -> PluginInfo | None:
        """The loaded plugin a realization name ("<plugin>.<name>") belongs to."""
        prefix = realization.split(".", 1)[0] if "." in realization else None
        return next((p for p in self.loaded if p.name == prefix), None)

    def declaration(self, realization: str | None) -> PluginRealizationInfo | None:
        """What a loaded plugin realization declares (None: not a plugin's)."""
        p = self.owner(realization) if realization else None
        return next((r for r in p.realizations if r.name == realization), None) if p else None

    def owns(self, r: Realization) -> bool:
        return r.is_plugin and self.owner(r.name) is not None

    def annotate(self, r: Realization | None) -> Realization | None:
        """The realization with its plugin's name and version filled in."""
        if r is None or not r.is_plugin:
            return r
        p = self.owner(r.name)
        if p is None:
            return r
        d = next((x for x in p.realizations if x.name == r.name), None)
        if d is None:
            return replace(r, plugin=p.label)
        return replace(r, plugin=p.label, native_bias=d.native_bias,
                       expect_symbols=d.expect_symbols)

    def to_extra(self) -> dict[str, Any]:
        """TargetInfo.extra entries: plugins (loaded) and plugin_errors."""
        return {"plugins": [p.to_dict() for p in self.loaded],
                "plugin_errors": [e.to_dict() for e in self.errors]}

    @classmethod
    def from_extra(cls, extra: dict[str, Any]) -> PluginLoads:
        return cls([], [PluginInfo.from_dict(p) for p in extra.get("plugins", [])],
                   [PluginError(**e) for e in extra.get("plugin_errors", [])])


def annotate_all(reals: list[Realization], loads: PluginLoads) -> list[Realization]:
    """Our realizations as they are, plugin realizations of this target's
    plugins with their plugin named; realizations of plugins this target did
    not load (loaded in the same process by another target) are left out."""
    out: list[Realization] = []
    for r in reals:
        if r.is_plugin:
            if not loads.owns(r):
                continue
            r = loads.annotate(r) or r
        out.append(r)
    return out


__all__ = ["PluginError", "PluginLoads", "annotate_all", "expand", "host_arch"]
