"""The KBENCH_* environment variables kbench reads, and what each takes.

A value a variable does not take is an error naming the variable and the
values it takes (never silently ignored): `kbench` checks every variable
before any command runs (a usage error, exit 2), and the Python API checks
the ones that shape its calls when the native library is first loaded
(InvalidArgument, its field the variable). The test suites' own switches
(KBENCH_REQUIRE_*, read by suites/conftest.py) are not kbench's."""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kbench.errors import InvalidArgument

TRUE = ("1", "true", "t", "yes", "y", "on")  # what click's boolean options take
FALSE = ("0", "false", "f", "no", "n", "off")


@dataclass(frozen=True)
class Variable:
    name: str
    takes: str  # what it takes, for the message and the docs
    check: Callable[[str], bool]  # is the (stripped, non-empty) value taken?
    api: bool = False  # shapes a Python API call (checked when the library loads)


def _choice(values: tuple[str, ...]) -> Callable[[str], bool]:
    return lambda v: v in values


def _bool(v: str) -> bool:
    return v.lower() in TRUE + FALSE


def _number(low: float, low_open: bool = False) -> Callable[[str], bool]:
    def ok(v: str) -> bool:
        try:
            x = float(v)
        except ValueError:
            return False
        return math.isfinite(x) and (x > low if low_open else x >= low)
    return ok


def _slowdown(v: str) -> bool:
    name, eq, frac = v.partition("=")
    return bool(name and eq) and _number(0.0, True)(frac) and float(frac) < 1e3


def _command(v: str) -> bool:
    try:
        return bool(shlex.split(v))
    except ValueError:
        return False


_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def variables(isa_levels: tuple[str, ...]) -> tuple[Variable, ...]:
    """Every variable; KBENCH_ISA_CAP takes `isa_levels` (kbench.native.isa's
    ISA_LEVELS: the one list of ISA names)."""
    bools = f"one of {', '.join(TRUE + FALSE)}"
    return (
        Variable("KBENCH_ISA_CAP", f"one of {', '.join(isa_levels)}", _choice(isa_levels),
                 api=True),
        Variable("KBENCH_MAX_CALL_FLOPS", "a number of flops > 0 (e.g. 1e13)",
                 _number(0.0, True), api=True),
        Variable("KBENCH_MAX_CALL_BYTES", "a number of bytes > 0 (e.g. 8e9)",
                 _number(0.0, True), api=True),
        Variable("KBENCH_NATIVE", "a Python module name (e.g. kbench._native)",
                 lambda v: bool(_MODULE.fullmatch(v)), api=True),
        Variable("KBENCH_RUN_REPORT", bools, _bool),
        Variable("KBENCH_NO_INSTALL", bools, _bool),
        Variable("KBENCH_WHAT_RAN", "0 or 1", _choice(("0", "1"))),
        Variable("KBENCH_HISTORY_WAIT", "a number of seconds >= 0", _number(0.0)),
        Variable("KBENCH_MAX_CASE_BYTES", "a number of bytes > 0", _number(0.0, True)),
        Variable("KBENCH_TEST_SLOWDOWN", "REALIZATION=FRACTION with 0 < FRACTION < 1000",
                 _slowdown),
        Variable("KBENCH_SSH", "a command line (e.g. ssh -F ci/ssh_config)", _command),
        Variable("KBENCH_ADB", "a command line (e.g. adb -H host)", _command),
        # paths and URLs: taken as given, refused where they are used
        *(Variable(n, "a path", lambda v: True) for n in
          ("KBENCH_TOOLS", "KBENCH_QEMU", "KBENCH_WORKER", "KBENCH_WORKER_DYN", "KBENCH_CLANG",
           "KBENCH_PYROOT")),
        Variable("KBENCH_DB", "an SQLite file or a postgresql:// URL", lambda v: True),
    )


def problems(env: Mapping[str, str], isa_levels: tuple[str, ...],
             api_only: bool = False) -> list[str]:
    """One line per KBENCH_* variable of `env` set to a value it does not
    take (an empty value is unset)."""
    out = []
    for var in variables(isa_levels):
        if api_only and not var.api:
            continue
        value = env.get(var.name, "").strip()
        if value and not var.check(value):
            out.append(f"{var.name}={value!r} is not a value it takes: {var.takes}")
    return out


def check_api(env: Mapping[str, str], isa_levels: tuple[str, ...]) -> None:
    """InvalidArgument (field: the variable) for the first variable that shapes
    an API call and holds a value it does not take."""
    for line in problems(env, isa_levels, api_only=True):
        raise InvalidArgument(line, line.split("=", 1)[0])


def flag(env: Mapping[str, str], name: str) -> bool:
    """A boolean variable's value (unset or empty: False)."""
    return env.get(name, "").strip().lower() in TRUE


__all__ = ["FALSE", "TRUE", "Variable", "check_api", "flag", "problems", "variables"]
