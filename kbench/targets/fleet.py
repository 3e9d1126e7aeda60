"""Fleet files: the targets a team runs on, with labels.

    # fleet.toml
    jobs = 4                       # optional: worker processes for `kbench run`
    [[target]]
    label = "graviton3"            # a name for people; results keep the spec
    spec = "ssh:ci@graviton3.lab:22"
    [[target]]
    label = "sme2-512"
    spec = "qemu:cpu=max:svl=512"

`${VAR}` and `${VAR:-default}` in a spec are taken from the environment
(host names and ports that CI keeps in variables). Labels and specs must be
unique. `kbench run --fleet FILE` runs every target (in parallel, one
worker process per target); `kbench info --fleet FILE` checks them all."""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class FleetError(ValueError):
    """A fleet file that cannot be used (one line naming the file and the field)."""


@dataclass(frozen=True)
class FleetTarget:
    label: str
    spec: str


@dataclass(frozen=True)
class Fleet:
    path: Path
    targets: tuple[FleetTarget, ...]
    jobs: int | None = None

    @property
    def specs(self) -> tuple[str, ...]:
        return tuple(t.spec for t in self.targets)

    @property
    def labels(self) -> dict[str, str]:
        """spec -> label."""
        return {t.spec: t.label for t in self.targets}


def expand(text: str, env: Mapping[str, str], where: str) -> str:
    def one(m: re.Match[str]) -> str:
        value = env.get(m.group(1))
        if value:
            return value
        if m.group(2) is not None:
            return m.group(2)
        raise FleetError(f"{where}: ${{{m.group(1)}}} is not set (write "
                         f"${{{m.group(1)}:-DEFAULT}} for a default)")
    return _VAR.sub(one, text)


def load_fleet(path: Path, env: Mapping[str, str] | None = None) -> Fleet:
    environ = os.environ if env is None else env
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise FleetError(f"{path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FleetError(f"{path}: not UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                         f"{exc.start}); a fleet file is UTF-8 TOML") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise FleetError(f"{path}: not TOML ({exc})") from None
    unknown = set(data) - {"jobs", "target"}
    if unknown:
        raise FleetError(f"{path}: unknown key(s) {', '.join(sorted(unknown))} "
                         "(a fleet file has jobs and [[target]] tables)")
    jobs = data.get("jobs")
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool)
                             or not 1 <= jobs <= 64):
        raise FleetError(f"{path}: jobs must be a whole number from 1 to 64")
    entries = data.get("target")
    if not isinstance(entries, list) or not entries:
        raise FleetError(f"{path}: no [[target]] tables")
    targets: list[FleetTarget] = []
    for i, entry in enumerate(entries, 1):
        where = f"{path}: target {i}"
        if not isinstance(entry, dict):
            raise FleetError(f"{where}: must be a table")
        extra = set(entry) - {"label", "spec", "notes"}
        if extra:
            raise FleetError(f"{where}: unknown key(s) {', '.join(sorted(extra))}")
        spec, label = entry.get("spec"), entry.get("label")
        if not isinstance(spec, str) or not spec.strip():
            raise FleetError(f"{where}: spec must be a target spec such as "
                             "\"qemu:svl=512\" or \"ssh:user@host\"")
        spec = expand(spec.strip(), environ, f"{where} spec")
        if label is None:
            label = spec
        if not isinstance(label, str) or not label.strip():
            raise FleetError(f"{where}: label must be a non-empty string")
        targets.append(FleetTarget(label.strip(), spec))
    for what, values in (("spec", [t.spec for t in targets]),
                         ("label", [t.label for t in targets])):
        dup = sorted({v for v in values if values.count(v) > 1})
        if dup:
            raise FleetError(f"{path}: {what} {dup[0]!r} appears twice")
    return Fleet(path, tuple(targets), jobs)
