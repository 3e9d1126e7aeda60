"""Dispatch tables read the same way by the native loader and the Python side,
or refused by both with the field named: out-of-range numbers, duplicate
keys, missing fields, deep nesting, strings that are not UTF-8; a refused
table is refused once per target, not re-sent with every case; every
refusal is a typed error (a verdict), never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbench.cli.main import main as cli
from kbench.errors import InvalidArgument
from kbench.harness import runner
from kbench.judge.verdict import ERROR
from kbench.native import api
from kbench.native.api import DispatchTable, Selector
from kbench.native.loader import Native
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets import worker
from kbench.targets.spec import parse_target

REPO = Path(__file__).resolve().parents[1]


def table_for_host(rules: list | None = None, **top: object) -> dict:
    """A table this machine and library accept (rules: every GEMM to scalar)."""
    cpu = api.cpu_info()
    return {"kbench_dispatch_table": 1, "library_version": api.version(),
            "fingerprint": {"arch": cpu.arch, "cpu_features": list(cpu.features),
                            "sme_vector_bits": cpu.sme_vector_bits},
            "rules": rules if rules is not None else
            [{"op": "gemm", "class": {}, "realization": "gemm_scalar_f32acc"}], **top}


def native_refusal(text: str) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as exc:
        DispatchTable(text).rules(api.load())
    return exc.value


def python_refusal(text: str) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as exc:
        DispatchTable(text).parse()
    return exc.value


def test_the_reference_table_is_accepted_by_both():
    text = json.dumps(table_for_host())
    assert DispatchTable(text).rules(api.load()) == 1
    assert DispatchTable(text).parse()["rules"][0]["realization"] == "gemm_scalar_f32acc"


# ---- out-of-range numbers ------------------------------------------------------------


@pytest.mark.parametrize("key,value", [("kh", 1e300), ("stride_w", -1e300), ("kw", 0),
                                       ("stride_h", 2.5), ("kh", "3"), ("m_min", -1),
                                       ("k_max", "big"), ("n_min", 1e300)])
def test_out_of_range_numbers_are_refused_naming_the_field(key, value):
    """Before: kh = 1e300 was cast to long (undefined behaviour, UBSan
    float-cast-overflow) and, on x86, made the rule match every convolution;
    a string was silently ignored."""
    op = "gemm" if key[1:] in ("_min", "_max") else "conv2d"
    text = json.dumps(table_for_host([{"op": op, "class": {key: value},
                                       "realization": "conv2d_direct_scalar_f32acc"}]))
    field = f"table.rules[0].class.{key}"
    assert native_refusal(text).field == field
    assert python_refusal(text).field == field


def test_a_huge_kernel_size_no_longer_matches_every_convolution():
    """The rule kh = 1e300 used to route every convolution to its realization."""
    text = json.dumps(table_for_host([{"op": "conv2d", "class": {"kh": 1e300},
                                       "realization": "conv2d_direct_scalar_f32acc"}]))
    target = parse_target("host")
    case = ConvCase("range_k3", 1, 6, 6, 4, 4, 3, 3)
    want = [r for r in target.info().realizations if r.name == "conv2d_direct_scalar_f32acc"][0]
    v = runner.run_job(target, runner.Job(case, "exact", want, "host"),
                       Selector(table=DispatchTable(text)), force=False)
    assert v.status == ERROR and "table.rules[0].class.kh" in v.message


# ---- duplicate keys -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["rule", "class", "top"])
def test_duplicate_keys_are_refused_by_both_readers(where):
    """Before: the native loader took the first of two keys, Python's json
    the last: the table was followed by one and checked by the other."""
    base = json.dumps(table_for_host())
    if where == "rule":
        text = base.replace('"realization": "gemm_scalar_f32acc"',
                            '"realization": "gemm_scalar_f32acc", "realization": "other"')
    elif where == "class":
        text = base.replace('"class": {}', '"class": {"m_min": 1, "m_min": 100}')
    else:
        text = base.replace('"kbench_dispatch_table": 1,',
                            '"kbench_dispatch_table": 1, "kbench_dispatch_table": 2,')
    assert text != base
    assert "more than once" in str(native_refusal(text))
    assert "more than once" in str(python_refusal(text))


# ---- missing fields: one line, not a collection traceback ---------------------------


@pytest.mark.parametrize("rule", [{"op": "gemm"}, {"class": {}, "realization": "x"},
                                  {"op": "gemm", "class": [], "realization": "x"}, "gemm"])
def test_a_rule_with_missing_fields_is_refused_naming_it(rule):
    text = json.dumps(table_for_host([rule]))
    assert python_refusal(text).field == "table.rules[0]"
    assert native_refusal(text).field == "table.rules[0]"


def test_missing_fields_stop_pytest_with_one_line(tmp_path):
    """Before: KeyError during collection (a traceback, no verdicts)."""
    bad = tmp_path / "table.json"
    bad.write_text(json.dumps(table_for_host([{"op": "gemm", "realization": "x"}])))
    res = subprocess.run([sys.executable, "-m", "pytest", str(REPO / "suites" /
                                                              "test_correctness.py"),
                          "-q", "-p", "no:cacheprovider", "--kb-shapes", "smoke",
                          "--kb-dispatch", str(bad), "-k", "dispatch_table"],
                         capture_output=True, text=True, cwd=REPO, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 4, out  # pytest's usage error
    assert "table.rules[0]" in out and "Traceback" not in out and "KeyError" not in out


def test_kbench_run_refuses_a_table_with_missing_fields(tmp_path):
    bad = tmp_path / "table.json"
    bad.write_text(json.dumps(table_for_host([{"op": "conv2d", "class": {}}])))
    res = CliRunner().invoke(cli, ["run", "--dispatch", str(bad), "--no-history",
                                   "--out", str(tmp_path / "run")])
    assert res.exit_code == 2, res.output
    assert "table.rules[0]" in res.output and res.exception is not None
    assert isinstance(res.exception, SystemExit)
    assert not (tmp_path / "run").exists()


# ---- nesting ------------------------------------------------------------------------


def test_deep_nesting_is_refused_with_a_message(tmp_path):
    """Before: `kbench run --dispatch` died with a RecursionError traceback."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"kbench_dispatch_table": 1, "x": ' + "[" * 5000 + "]" * 5000 + "}")
    assert "nested" in str(python_refusal(deep.read_text()))
    assert "nesting too deep" in str(native_refusal(deep.read_text()))
    res = CliRunner().invoke(cli, ["run", "--dispatch", str(deep), "--no-history",
                                   "--out", str(tmp_path / "run")])
    assert res.exit_code == 2 and "nested more than 64 levels" in res.output
    assert isinstance(res.exception, SystemExit)
    # 65 levels: the native parser's limit, and Python's
    mid = '{"kbench_dispatch_table": 1, "x": ' + "[" * 64 + "]" * 64 + "}"
    assert "nested" in str(python_refusal(mid))
    assert "nesting too deep" in str(native_refusal(mid))


# ---- strings that are not UTF-8, and messages that must be ---------------------------


@pytest.mark.parametrize("escape", ["\\udcff", "\\ud800x", "\\u0000"])
def test_a_bad_escape_is_refused_by_the_parser(escape):
    """Before: an unpaired surrogate became invalid UTF-8 inside the native
    error message (tuned with library <bytes>), and decoding it raised
    UnicodeDecodeError in the middle of a case: the verdict was lost. A
    \\u0000 ended the C string early: C and Python read different names."""
    text = json.dumps(table_for_host()).replace(f'"{api.version()}"', f'"1{escape}"')
    err = native_refusal(text)
    assert err.field == "table" and "not valid JSON" in err.message


def test_raw_bytes_that_are_not_utf8_are_refused(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(json.dumps(table_for_host()).replace(api.version(), "v\u00e9").encode(
        "latin-1"))
    with pytest.raises(InvalidArgument, match="not UTF-8"):
        DispatchTable.from_file(str(path))
    raw = path.read_bytes()
    nat = api.load()
    out = nat.ffi.new("kb_dispatch_table **")
    err = nat.new_error()
    assert nat.lib.kb_load_dispatch_table(raw, len(raw), out, err) == 1
    assert b"invalid UTF-8" in nat.ffi.string(err.message)


@pytest.mark.parametrize("force", [b"\xff\xfe-no-such", b"x" + "\u00e9".encode() * 200])
def test_native_error_messages_are_always_utf8(force):
    """A message quoting bytes from the caller (here a forced realization
    name), or cut off by the message buffer in the middle of a character,
    is still valid UTF-8."""
    nat = api.load()
    sel = nat.ffi.new("kb_selector *")
    nat.lib.kb_selector_default(sel)
    name = nat.ffi.new("char[]", force)
    sel.force = name
    a = nat.ffi.new("kb_f16[]", 4)
    probs = nat.ffi.new("kb_gemm_problem[]", 1)
    probs[0].A, probs[0].lda, probs[0].B, probs[0].ldb, probs[0].C, probs[0].ldc = (
        a, 2, a, 2, a, 2)
    err = nat.new_error()
    assert nat.lib.kb_gemm_batch(1, 2, 2, probs, 1, sel, nat.ffi.NULL, err) == 1
    message = nat.ffi.string(err.message)
    message.decode("utf-8")  # strict: raises on any invalid sequence
    assert message.startswith(b"selector.force: no realization is named")


def test_a_table_error_is_a_verdict_on_every_target():
    """The surrogate table on the in-process and worker targets: each case
    gets an error verdict (before: UnicodeDecodeError, no verdict)."""
    text = json.dumps(table_for_host()).replace(f'"{api.version()}"', '"\\udcff"')
    case = GemmCase("utf8_table", 4, 4, 4)
    for spec in ("host", "worker:host"):
        target = parse_target(spec)
        want = [r for r in target.info().realizations if r.name == "gemm_scalar_f32acc"][0]
        v = runner.run_job(target, runner.Job(case, "exact", want, spec),
                           Selector(table=DispatchTable(text)), force=False)
        target.close()
        assert v.status == ERROR and "InvalidArgument" in v.message, (spec, v.line())


# ---- a refused table is refused once per target -------------------------------------


class _CountingLib:
    def __init__(self, lib: object) -> None:
        self._lib, self.loads = lib, 0

    def __getattr__(self, name: str) -> object:
        if name == "kb_load_dispatch_table":
            self.loads += 1
        return getattr(self._lib, name)


def test_a_refused_table_is_not_parsed_again_in_process():
    real = api.load()
    counting = _CountingLib(real.lib)
    nat = Native(real.ffi, counting)
    table = DispatchTable(json.dumps(table_for_host(library_version="0.0.0-other")))
    for _ in range(5):
        with pytest.raises(InvalidArgument, match="library_version"):
            table.rules(nat)
    assert counting.loads == 1


def test_a_refused_table_is_sent_to_a_worker_once():
    """Before: a 10 MB table the worker refused went over the pipe again for
    every case."""
    target = parse_target("worker:host")
    eng = target.engine
    sent: list[int] = []
    real_call = eng.call

    def call(mtype: int, payload: bytes, during: str):
        if mtype == worker.LOAD_TABLE:
            sent.append(len(payload))
        return real_call(mtype, payload, during)

    eng.call = call
    big = table_for_host(library_version="0.0.0-other", padding="x" * 2_000_000)
    table = DispatchTable(json.dumps(big))
    want = [r for r in target.info().realizations if r.name == "gemm_scalar_f32acc"][0]
    for i in range(4):
        v = runner.run_job(target, runner.Job(GemmCase(f"refused{i}", 4, 4, 4), "exact", want,
                                              "worker:host"), Selector(table=table), force=False)
        assert v.status == ERROR and "table.library_version" in v.message
    target.close()
    assert len(sent) == 1 and sent[0] > 2_000_000


def test_a_table_travels_to_the_emulated_python_once(monkeypatch):
    """The emulated-Python target pickled the table's whole text into every
    call; now it goes once per guest (by digest afterwards), refused or not.
    The guest here is this machine's Python (the protocol without QEMU)."""
    import os

    from kbench.targets import pyworker
    from kbench.targets.spec import Target
    engine = pyworker.PyWorkerEngine(pyworker.PySpec([sys.executable], dict(os.environ),
                                                     cpu="host"))
    target = Target("qemu-python:local", engine)
    sizes: list[int] = []
    real_write = pyworker._write_frame

    def write(out, kind, parts):
        sizes.append(sum(len(p) for p in parts))
        return real_write(out, kind, parts)

    monkeypatch.setattr(pyworker, "_write_frame", write)
    table = DispatchTable(json.dumps(table_for_host(library_version="0.0.0-other",
                                                    padding="x" * 1_000_000)))
    want = [r for r in target.info().realizations if r.name == "gemm_scalar_f32acc"][0]
    sizes.clear()
    for i in range(3):
        v = runner.run_job(target, runner.Job(GemmCase(f"py{i}", 4, 4, 4), "exact", want,
                                              target.name), Selector(table=table), force=False)
        assert v.status == ERROR and "table.library_version" in v.message
    target.close()
    big = [s for s in sizes if s > 1_000_000]
    assert len(big) == 1, sizes
