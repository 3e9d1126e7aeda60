"""Case catalogs: TOML data files in reference/ that list GEMM and convolution cases.

A catalog file has a ``[catalog]`` table (``name``, optional ``description``) and any
number of ``[[gemm]]`` and ``[[conv]]`` entries whose keys are the fields of
:class:`~kbench.problems.GemmCase` and :class:`~kbench.problems.ConvCase`. Omitted
optional keys take the dataclass defaults. Every problem is reported as a
:class:`CatalogError` naming the file, the entry (index and name) and the field.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kbench.problems.cases import B_FORMS, Catalog, ConvCase, GemmCase
from kbench.resources import resource_dir

__all__ = [
    "CatalogError",
    "available_catalogs",
    "default_catalog_paths",
    "load_catalog",
    "reference_dir",
    "resolve_catalog",
]

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_MAX_REPORTED = 20  # problems listed in one error message


class CatalogError(ValueError):
    """A catalog file is malformed or describes an invalid case."""


class _FieldError(Exception):
    """Internal: one field value is invalid; the caller adds file/entry/field."""


# --------------------------------------------------------------------------- locations


def reference_dir() -> Path:
    """The repository's reference/ folder holding the shipped catalogs."""
    return resource_dir("reference")


def available_catalogs() -> dict[str, Path]:
    """Shipped catalogs by bare name (file stem), sorted by name."""
    folder = reference_dir()
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in sorted(folder.glob("*.toml"))}


def default_catalog_paths() -> dict[str, Path]:
    """The correctness catalogs used when no catalog is given, keyed by "gemm"/"conv"."""
    folder = reference_dir()
    return {
        "gemm": folder / "correctness_gemm.toml",
        "conv": folder / "correctness_conv.toml",
    }


def resolve_catalog(name_or_path: str) -> Path:
    """Path of a catalog given a file path or a bare name from reference/.

    ``correctness_gemm``, ``correctness_gemm.toml`` and ``correctness-gemm`` all name
    ``reference/correctness_gemm.toml``; an existing file path is returned resolved.
    """
    candidate = Path(name_or_path).expanduser()
    if candidate.is_file():
        return candidate.resolve()
    available = available_catalogs()
    stem = candidate.name.removesuffix(".toml")
    if candidate.parent == Path("."):
        for key in (stem, stem.replace("-", "_")):
            if key in available:
                return available[key]
    listing = ", ".join(available) if available else "(none)"
    close = difflib.get_close_matches(stem.replace("-", "_"), list(available), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close and candidate.parent == Path(".") else ""
    raise CatalogError(
        f"catalog {name_or_path!r} not found{hint}: not a file and not a catalog in "
        f"{reference_dir()}; available catalogs: {listing}"
    )


# --------------------------------------------------------------------------- field checks


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    kind = {int: "integer", float: "float", str: "string", list: "array", dict: "table"}
    return f"{kind.get(type(value), type(value).__name__)} {value!r}"


def _int(value: Any, minimum: int) -> int:
    # bool is a subclass of int in Python; in a catalog `m = true` is a mistake.
    if type(value) is not int:
        raise _FieldError(f"must be an integer, got {_describe(value)}")
    if value < minimum:
        what = "positive (>= 1)" if minimum == 1 else f">= {minimum}"
        raise _FieldError(f"must be {what}, got {value}")
    return value


def _positive(value: Any) -> int:
    return _int(value, 1)


def _non_negative(value: Any) -> int:
    return _int(value, 0)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise _FieldError(f"must be a boolean (true/false), got {_describe(value)}")
    return value


def _fp16_bound(value: Any) -> float:
    # an FP16 value (a clamp bound); -0.0 is kept as -0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _FieldError(f"must be a number, got {_describe(value)}")
    v = float(value)
    with np.errstate(over="ignore"):
        exact = bool(np.isfinite(v)) and float(np.float16(v)) == v
    if not exact:
        raise _FieldError(f"must be a finite FP16 value, got {value!r}")
    return v


def _name(value: Any) -> str:
    if not isinstance(value, str):
        raise _FieldError(f"must be a string, got {_describe(value)}")
    if not _NAME_RE.fullmatch(value):
        raise _FieldError(
            f"must start with a letter or digit and use only letters, digits and "
            f"'_.+-', got {value!r}"
        )
    return value


def _b_form(value: Any) -> str:
    if not isinstance(value, str) or value not in B_FORMS:
        raise _FieldError(f"must be one of {', '.join(map(repr, B_FORMS))}, got {_describe(value)}")
    return value


def _tags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _FieldError(f"must be an array of strings, got {_describe(value)}")
    for i, tag in enumerate(value):
        if not isinstance(tag, str) or not tag:
            raise _FieldError(f"element {i} must be a non-empty string, got {_describe(tag)}")
    return tuple(value)


def _int_tuple(length: int, minimum: int) -> Callable[[Any], tuple[int, ...]]:
    def check(value: Any) -> tuple[int, ...]:
        if not isinstance(value, list) or len(value) != length:
            raise _FieldError(f"must be an array of {length} integers, got {_describe(value)}")
        for i, v in enumerate(value):
            try:
                _int(v, minimum)
            except _FieldError as exc:
                raise _FieldError(f"element {i} {exc}") from None
        return tuple(value)

    return check


# name -> (checker, required). Keys mirror the dataclass fields in kbench.problems.
_Spec = Mapping[str, tuple[Callable[[Any], Any], bool]]


def _gemm_spec() -> _Spec:
    return {
        "name": (_name, True),
        "m": (_positive, True),
        "n": (_positive, True),
        "k": (_positive, True),
        "batch": (_positive, False),
        "bias": (_bool, False),
        "clamp": (_bool, False),
        "clamp_max": (_fp16_bound, False),
        "lda_pad": (_non_negative, False),
        "ldb_pad": (_non_negative, False),
        "ldc_pad": (_non_negative, False),
        "b_form": (_b_form, False),
        "layers": (_positive, False),
        "tags": (_tags, False),
    }


def _conv_spec() -> _Spec:
    return {
        "name": (_name, True),
        "n": (_positive, True),
        "h": (_positive, True),
        "w": (_positive, True),
        "c_in": (_positive, True),
        "c_out": (_positive, True),
        "kh": (_positive, True),
        "kw": (_positive, True),
        "stride": (_int_tuple(2, 1), False),
        "pad": (_int_tuple(4, 0), False),
        "dilation": (_int_tuple(2, 1), False),
        "groups": (_positive, False),
        "bias": (_bool, False),
        "clamp": (_bool, False),
        "layers": (_positive, False),
        "tags": (_tags, False),
    }


def _gemm_checks(case: GemmCase) -> list[tuple[str, str]]:
    problems = []
    if case.ldb_pad and case.b_form != "plain":
        problems.append(("ldb_pad", f"only applies to b_form = 'plain', not {case.b_form!r}"))
    if case.clamp_max is not None and not case.clamp:
        problems.append(("clamp_max", "needs clamp = true"))
    return problems


def _conv_checks(case: ConvCase) -> list[tuple[str, str]]:
    problems = []
    for dim in ("c_in", "c_out"):
        if getattr(case, dim) % case.groups:
            problems.append(
                ("groups", f"{case.groups} does not divide {dim} = {getattr(case, dim)}")
            )
    pt, pb, pl, pr = case.pad
    for key, size, lo, hi, axis, out in (
        ("kh", case.h, pt, pb, 0, case.out_h),
        ("kw", case.w, pl, pr, 1, case.out_w),
    ):
        if out < 1:
            extent = case.dilation[axis] * (getattr(case, key) - 1) + 1
            problems.append(
                (
                    key,
                    f"dilated kernel extent {extent} does not fit the padded input "
                    f"{size} + {lo} + {hi} = {size + lo + hi}",
                )
            )
    return problems


# --------------------------------------------------------------------------- loading


def _parse_entries(
    doc: Mapping[str, Any],
    section: str,
    spec: _Spec,
    build: Callable[..., Any],
    checks: Callable[[Any], list[tuple[str, str]]],
    problems: list[str],
) -> list[tuple[int, Any]]:
    """Valid cases of one section with their index in the file; problems appended."""
    raw = doc.get(section, [])
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        problems.append(f"'{section}' must be an array of tables (write [[{section}]] blocks)")
        return []
    cases = []
    for index, entry in enumerate(raw):
        name = entry.get("name")
        label = f"{section}[{index}]" + (f" {name!r}" if isinstance(name, str) else "")
        before = len(problems)
        for key in sorted(set(entry) - set(spec)):
            hint = difflib.get_close_matches(key, spec, n=1)
            extra = f" (did you mean {hint[0]!r}?)" if hint else ""
            problems.append(f"{label}: unknown key {key!r}{extra}")
        for key, (_, required) in spec.items():
            if required and key not in entry:
                problems.append(f"{label}: missing required key {key!r}")
        values = {}
        for key, value in entry.items():
            if key in spec:
                try:
                    values[key] = spec[key][0](value)
                except _FieldError as exc:
                    problems.append(f"{label}: field {key!r} {exc}")
        if len(problems) > before:
            continue
        case = build(**values)
        bad = checks(case)
        problems.extend(f"{label}: field {key!r} {msg}" for key, msg in bad)
        if not bad:
            cases.append((index, case))
    return cases


def _parse_header(doc: Mapping[str, Any], problems: list[str]) -> tuple[str, str]:
    header = doc.get("catalog")
    if header is None:
        problems.append('missing [catalog] table (with at least name = "...")')
        return "", ""
    if not isinstance(header, dict):
        problems.append(f"'catalog' must be a table, got {_describe(header)}")
        return "", ""
    for key in sorted(set(header) - {"name", "description"}):
        problems.append(f"[catalog]: unknown key {key!r} (allowed: 'name', 'description')")
    name, description = header.get("name"), header.get("description", "")
    if name is None:
        problems.append("[catalog]: missing required key 'name'")
    elif not isinstance(name, str) or not name:
        problems.append(
            f"[catalog]: field 'name' must be a non-empty string, got {_describe(name)}"
        )
    if not isinstance(description, str):
        problems.append(
            f"[catalog]: field 'description' must be a string, got {_describe(description)}"
        )
    return str(name or ""), str(description)


def load_catalog(path: str | Path) -> Catalog:
    """Read and validate a catalog file; raise CatalogError listing every problem."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{path}: invalid TOML: {exc}") from exc

    problems: list[str] = []
    for key in sorted(set(doc) - {"catalog", "gemm", "conv"}):
        problems.append(f"unknown top-level key {key!r} (allowed: [catalog], [[gemm]], [[conv]])")
    name, description = _parse_header(doc, problems)
    gemm = _parse_entries(doc, "gemm", _gemm_spec(), GemmCase, _gemm_checks, problems)
    conv = _parse_entries(doc, "conv", _conv_spec(), ConvCase, _conv_checks, problems)

    seen: dict[str, str] = {}
    for section, cases in (("gemm", gemm), ("conv", conv)):
        for index, case in cases:
            where = f"{section}[{index}]"
            if case.name in seen:
                problems.append(
                    f"{where} {case.name!r}: field 'name' duplicates {seen[case.name]} "
                    "(names must be unique within a catalog)"
                )
            else:
                seen[case.name] = where
    if not problems and not gemm and not conv:
        problems.append("no cases: add [[gemm]] or [[conv]] entries")

    if problems:
        shown = problems[:_MAX_REPORTED]
        if len(problems) > len(shown):
            shown.append(f"... and {len(problems) - len(shown)} more")
        raise CatalogError(f"{path}: invalid catalog:\n  " + "\n  ".join(shown))
    return Catalog(
        name=name,
        description=description,
        path=str(path),
        gemm=tuple(case for _, case in gemm),
        conv=tuple(case for _, case in conv),
    )
