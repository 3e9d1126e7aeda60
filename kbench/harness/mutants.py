"""The mutant catalog: small plausible bugs, one TOML file each (ci/mutants/).

A mutant names its area, says what it breaks, lists its edits (a file, an
exact fragment that must occur exactly once in it, and the replacement) and
the runs that must kill it: a target spec, the suites and extra pytest
arguments. A mutant whose fragment does not occur exactly once is *stale*
(the code it targets was rewritten): it is reported as such, never as killed
or survived. A mutant may be declared *equivalent* (with the reason): it
cannot change any result the suites can observe, and is expected to survive.

    id = file stem, e.g. contract-header-size-check-removed
    area = "contract"
    description = "..."
    equivalent = "..."        # optional: why no test can tell
    pinned = true             # optional: in every CI sample

    [[edit]]
    file = "native/src/core/kb_layout.c"
    find = '''...'''
    replace = '''...'''

    [[kill]]
    target = "host"           # --kb-target (suites that pick their own targets: host)
    suites = ["suites/test_contracts.py"]
    args = ["-k", "resealed"] # optional
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kbench.errors import InvalidArgument

AREAS = {
    "kernels": "micro-kernels: tails, predicates, K remainders, bias, clamp, stores",
    "packers": "packers: LHS, RHS, indirection tables, zero padding",
    "drivers": "drivers: blocking, thread slots, scratch",
    "contract": "packed-B contract: header fields, checksum coverage, size arithmetic",
    "conv-index": "convolution index math: stride, padding per side, dilation, groups",
    "fp16": "FP16 conversion",
    "judge": "the judge and error models",
    "fingerprint": "the accumulation fingerprint simulator",
    "state": "streaming mode and ZA on return (SVCR)",
    "verdicts": "verdict combination: problems into a batch, a judgement into a case's status",
    "problems": "input generators: specials classes, exact ranges, clamps, padding",
    "stats": "A/B and comparison statistics: intervals, direction, thresholds, pairing",
    "gate": "the regression gate: statuses merged, missing or extra rows, limits",
    "perf": "perf figures: flop counts, the statistic used, units",
    "report": "report tables: speedups, per-model totals, pooled passes",
    "tuning": "tuning: shape classes, rule bounds, winners, the budget",
    "dispatch": "dispatch tables: loading, and the check of what ran",
    "history": "history writes and reads",
}


class MutantError(InvalidArgument):
    """A mutant file that cannot be read (names the file and the field)."""


@dataclass(frozen=True)
class Edit:
    file: str  # path relative to the repository
    find: str
    replace: str


@dataclass(frozen=True)
class KillRun:
    """One pytest run that must fail with the mutant applied."""

    target: str
    suites: tuple[str, ...]
    args: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return " ".join([self.target, *self.suites, *self.args])

    def pytest_args(self) -> list[str]:
        out = [*self.suites, "-q", "-p", "no:cacheprovider"]
        if self.target != "host":
            out += ["--kb-target", self.target]
        return out + list(self.args)


@dataclass(frozen=True)
class Mutant:
    id: str
    area: str
    description: str
    edits: tuple[Edit, ...]
    kills: tuple[KillRun, ...]
    equivalent: str = ""
    pinned: bool = False
    path: Path | None = field(default=None, compare=False)

    @property
    def files(self) -> set[str]:
        return {e.file for e in self.edits}

    @property
    def native(self) -> bool:
        """Does it change the C library or the worker (a rebuild is needed)?"""
        return any(f.startswith("native/") for f in self.files)


def _need(data: dict, key: str, kind: type, where: str) -> object:
    if key not in data:
        raise MutantError(f"{where}: missing {key!r}", key)
    value = data[key]
    if not isinstance(value, kind):
        raise MutantError(f"{where}: {key!r} must be a {kind.__name__}", key)
    return value


def _relative(path: str, where: str) -> str:
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise MutantError(f"{where}: file {path!r} must be a path inside the repository", "file")
    return str(p)


def load_mutant(path: Path) -> Mutant:
    where = str(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MutantError(f"{where}: {exc}", "file") from exc
    area = str(_need(data, "area", str, where))
    if area not in AREAS:
        raise MutantError(f"{where}: area {area!r} is not one of {', '.join(AREAS)}", "area")
    description = str(_need(data, "description", str, where))
    edits = []
    for i, e in enumerate(_need(data, "edit", list, where)):  # type: ignore[union-attr]
        w = f"{where}: edit {i + 1}"
        find = str(_need(e, "find", str, w))
        if not find.strip():
            raise MutantError(f"{w}: 'find' is empty", "find")
        edits.append(Edit(_relative(str(_need(e, "file", str, w)), w), find,
                          str(_need(e, "replace", str, w))))
    if not edits:
        raise MutantError(f"{where}: no [[edit]]", "edit")
    kills = []
    for i, k in enumerate(_need(data, "kill", list, where)):  # type: ignore[union-attr]
        w = f"{where}: kill {i + 1}"
        suites = _need(k, "suites", list, w)
        args = k.get("args", [])
        if not suites or not all(isinstance(s, str) for s in suites):  # type: ignore[union-attr]
            raise MutantError(f"{w}: 'suites' must list test files", "suites")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise MutantError(f"{w}: 'args' must be a list of strings", "args")
        kills.append(KillRun(str(_need(k, "target", str, w)),
                             tuple(_relative(s, w) for s in suites), tuple(args)))  # type: ignore[union-attr]
    if not kills:
        raise MutantError(f"{where}: no [[kill]] run", "kill")
    return Mutant(path.stem, area, description, tuple(edits),
                  tuple(kills), str(data.get("equivalent", "")), bool(data.get("pinned", False)),
                  path)


def load_catalog(folder: Path) -> list[Mutant]:
    """Every mutant in a folder, sorted by id."""
    files = sorted(Path(folder).glob("*.toml"))
    if not files:
        raise MutantError(f"{folder}: no mutant files (*.toml)", "catalog")
    return [load_mutant(p) for p in files]


def stale_reason(mutant: Mutant, root: Path) -> str:
    """'' if every fragment occurs exactly once in its file under root, else why not."""
    for i, e in enumerate(mutant.edits):
        path = root / e.file
        if not path.is_file():
            return f"edit {i + 1}: {e.file} does not exist"
        count = path.read_text().count(e.find)
        if count != 1:
            return f"edit {i + 1}: the fragment occurs {count} times in {e.file}"
    return ""


def apply(mutant: Mutant, root: Path) -> dict[Path, str]:
    """Applies the edits under root (the caller checked stale_reason);
    returns each changed file's original text, for restore()."""
    originals: dict[Path, str] = {}
    texts: dict[Path, str] = {}
    for e in mutant.edits:
        path = root / e.file
        if path not in texts:
            originals[path] = texts[path] = path.read_text()
        if texts[path].count(e.find) != 1:
            raise MutantError(f"{mutant.id}: fragment of {e.file} is not unique after the "
                              "earlier edits", "find")
        texts[path] = texts[path].replace(e.find, e.replace, 1)
    for path, text in texts.items():
        path.write_text(text)
    return originals


def restore(originals: dict[Path, str]) -> None:
    for path, text in originals.items():
        path.write_text(text)
