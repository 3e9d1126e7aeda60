"""The KBENCH_* environment variables (kbench.native.envvars): a value a
variable does not take is an error naming the variable and what it takes,
on the command line (exit 2, before anything runs) and in the Python API
(InvalidArgument on the first call); never silently ignored, as
KBENCH_ISA_CAP=garbage once was. Every variable kbench's code reads is in
the table."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbench.cli.main import main
from kbench.native import api, envvars

ROOT = Path(__file__).resolve().parents[1]

BAD = [("KBENCH_ISA_CAP", "garbage", f"one of {', '.join(api.ISA_LEVELS)}"),
       ("KBENCH_ISA_CAP", "NEON", "one of scalar"),
       ("KBENCH_RUN_REPORT", "maybe", "one of 1, true"),
       ("KBENCH_NO_INSTALL", "sure", "one of 1, true"),
       ("KBENCH_HISTORY_WAIT", "-1", "a number of seconds >= 0"),
       ("KBENCH_HISTORY_WAIT", "soon", "a number of seconds >= 0"),
       ("KBENCH_MAX_CASE_BYTES", "0", "a number of bytes > 0"),
       ("KBENCH_MAX_CALL_FLOPS", "lots", "a number of flops > 0"),
       ("KBENCH_MAX_CALL_BYTES", "inf", "a number of bytes > 0"),
       ("KBENCH_TEST_SLOWDOWN", "gemm_scalar_f32acc", "REALIZATION=FRACTION"),
       ("KBENCH_TEST_SLOWDOWN", "gemm_scalar_f32acc=2000", "REALIZATION=FRACTION"),
       ("KBENCH_SSH", "ssh -o 'unclosed", "a command line"),
       ("KBENCH_NATIVE", "not a module", "a Python module name")]


@pytest.mark.parametrize("name, value, takes", BAD)
def test_a_value_a_variable_does_not_take_is_a_usage_error(name: str, value: str,
                                                           takes: str) -> None:
    res = CliRunner().invoke(main, ["catalogs"], env={name: value})
    assert res.exit_code == 2, res.output
    (line,) = res.output.strip().splitlines()
    assert line.startswith(f"Error: {name}={value!r} is not a value it takes: {takes}")


@pytest.mark.parametrize("name, value", [
    ("KBENCH_ISA_CAP", "neon"), ("KBENCH_ISA_CAP", ""), ("KBENCH_RUN_REPORT", "Yes"),
    ("KBENCH_HISTORY_WAIT", "0.5"), ("KBENCH_MAX_CASE_BYTES", "8e9"),
    ("KBENCH_TEST_SLOWDOWN", "gemm_scalar_f32acc=0.1"), ("KBENCH_SSH", "ssh -F ci/ssh_config"),
    ("KBENCH_MAX_CALL_FLOPS", "1e13")])
def test_a_value_a_variable_takes_runs(name: str, value: str) -> None:
    res = CliRunner().invoke(main, ["catalogs"], env={name: value})
    assert res.exit_code == 0, res.output


def test_every_bad_variable_is_named_at_once() -> None:
    res = CliRunner().invoke(main, ["catalogs"], env={"KBENCH_ISA_CAP": "x",
                                                      "KBENCH_HISTORY_WAIT": "y"})
    assert res.exit_code == 2
    assert [line.split("=")[0] for line in res.output.strip().splitlines()] == [
        "Error: KBENCH_ISA_CAP", "KBENCH_HISTORY_WAIT"]


def test_the_isa_names_are_the_apis_one_list() -> None:
    (isa,) = [v for v in envvars.variables(api.ISA_LEVELS) if v.name == "KBENCH_ISA_CAP"]
    assert all(isa.check(level) for level in api.ISA_LEVELS) and not isa.check("sve9")
    assert isa.takes == f"one of {', '.join(api.ISA_LEVELS)}"


def test_the_api_refuses_a_bad_isa_cap_on_its_first_call() -> None:
    code = ("import numpy as np, kbench\n"
            "try:\n"
            "    kbench.gemm(np.ones((2, 2), np.float16), np.ones((2, 2), np.float16))\n"
            "except kbench.InvalidArgument as e:\n"
            "    print(e.field, '|', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "KBENCH_ISA_CAP": "garbage"})
    assert out.stdout.strip() == ("KBENCH_ISA_CAP | KBENCH_ISA_CAP='garbage' is not a value it "
                                  f"takes: one of {', '.join(api.ISA_LEVELS)}"), out.stderr


def _read_variables() -> set[str]:
    """Every KBENCH_* name kbench's code spells as a string (Python) or reads
    with getenv (C)."""
    found: set[str] = set()
    for path in (ROOT / "kbench").rglob("*.py"):
        text = re.sub(r"__all__ = \[.*?\]", "", path.read_text(), flags=re.S)  # names, not
        found |= set(re.findall(r"[\"'](KBENCH_[A-Z0-9_]+)[\"']", text))    # variables
    for path in (ROOT / "native").rglob("*.c"):
        found |= set(re.findall(r"getenv\(\"(KBENCH_[A-Z0-9_]+)\"\)", path.read_text()))
    return found


def test_every_variable_kbench_reads_is_in_the_table() -> None:
    known = {v.name for v in envvars.variables(api.ISA_LEVELS)}
    read = _read_variables()
    assert {"KBENCH_ISA_CAP", "KBENCH_TEST_SLOWDOWN", "KBENCH_DB"} <= read
    assert read - known == set()


def test_no_install_is_a_flag() -> None:
    assert envvars.flag({"KBENCH_NO_INSTALL": "1"}, "KBENCH_NO_INSTALL")
    assert not envvars.flag({"KBENCH_NO_INSTALL": "0"}, "KBENCH_NO_INSTALL")
    assert not envvars.flag({}, "KBENCH_NO_INSTALL")


def test_every_variable_is_documented() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    table = text[text.index("## Environment variables"):]
    missing = [v.name for v in envvars.variables(api.ISA_LEVELS) if f"`{v.name}`" not in table]
    assert missing == []
