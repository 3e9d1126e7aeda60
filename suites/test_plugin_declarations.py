"""What a library does on purpose, declared (plugin ABI 3) and checked exactly:
reads past an operand within a declared allowance (the guard page sits at
the allowance; one byte beyond is a finding naming the operand, the function
and the distance), packers that take no bias (every packed-B check runs
without one; native-B cases with a bias are not applicable unless the call
takes the bias), packers that leave their padding unspecified (every other
byte compared, the result must not depend on the padding), and packed B
across vector lengths. examples/plugins/declared/exdecl.c is the clean
plugin, libexdecl_bad.so the same code with each declaration broken."""

from __future__ import annotations

import os
import re

import pytest
from plugin_builds import lib, pattern
from qemu_gate import needs_qemu

from kbench.errors import InvalidArgument
from kbench.harness import packers, probes
from kbench.harness.runner import Job, adapted, applicable, run_job, why_not
from kbench.judge.verdict import FAIL, PASS
from kbench.native import plugins as native_plugins
from kbench.problems.cases import GemmCase
from kbench.targets.plugins import PluginLoads
from kbench.targets.spec import parse_target

CASES = [GemmCase("d_plain", 7, 19, 33, bias=True), GemmCase("d_nobias", 5, 40, 21, bias=False),
         GemmCase("d_native", 9, 38, 23, bias=True, b_form="native"),
         GemmCase("d_native_nobias", 9, 38, 23, bias=False, b_form="native")]


def _target(spec: str, *names: str):
    return parse_target(spec, [pattern(n) for n in names])


@pytest.fixture(scope="module")
def host():
    t = _target("host", "exdecl", "exdecl_bad", "expackers")
    yield t
    t.close()


def _reals(t):
    return {r.name: r for r in t.info().realizations}


def _declared(t):
    return {d.name: d for p in PluginLoads.from_extra(t.info().extra).loaded
            for d in p.realizations}


def test_the_declarations_reach_kbench(host):
    d = _declared(host)
    assert d["exdecl.gemm_overread"].allowance("B") == 32
    assert d["exdecl.gemm_overread"].allowance("bias") == 32
    assert d["exdecl.gemm_overread"].allowance("A") == 0
    assert d["exdecl.gemm_pack_overread"].overread == (0, 16, 0, 0, 0, 0)
    assert (d["exdecl.gemm_nobias"].packs_bias, d["exdecl.gemm_nobias"].native_bias) == (
        False, "none")
    assert d["exdecl.gemm_bias_at_call"].native_bias == "at_call"
    assert d["exdecl.gemm_overread"].native_bias == "inside"
    assert d["expackers.gemm_rhs_unwritten_declared"].padding_unspecified
    reals = _reals(host)
    assert reals["exdecl.gemm_nobias"].native_bias == "none"
    assert reals["exdecl.gemm_bias_at_call"].native_bias == "at_call"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("name", ["exdecl.gemm_nobias", "exdecl.gemm_bias_at_call",
                                  "exdecl.gemm_overread", "exdecl.gemm_pack_overread"])
def test_the_clean_plugin_passes_with_its_inputs_against_guard_pages(host, name, case):
    r = _reals(host)[name]
    run = adapted(case, r)
    if not applicable(run, r):
        assert name == "exdecl.gemm_nobias" and run.b_form == "native" and run.bias
        assert "KB_PLUGIN_PACK_NO_BIAS" in why_not(run, r)
        return
    for kind in ("exact", "normal"):  # the end of every input against a page, then its start
        v = run_job(host, Job(run, kind, r, "host"))
        assert v.status == PASS, v.line()


def test_a_bias_with_its_own_packed_b_is_not_applicable_only_without_bias_at_call(host):
    reals = _reals(host)
    native = GemmCase("d_native", 9, 38, 23, bias=True, b_form="native")
    assert not applicable(native, reals["exdecl.gemm_nobias"])
    assert why_not(native, reals["exdecl.gemm_nobias"]).startswith(
        "a bias with its own packed B (its packer takes no bias")
    assert applicable(native, reals["exdecl.gemm_bias_at_call"])
    assert applicable(GemmCase("n", 9, 38, 23, bias=False, b_form="native"),
                      reals["exdecl.gemm_nobias"])
    # a portable packed B runs as a form the realization takes, without a bias problem
    packed = GemmCase("p", 9, 38, 23, bias=True, b_form="packed")
    assert adapted(packed, reals["exdecl.gemm_nobias"]).b_form == "plain"
    assert adapted(packed, reals["exdecl.gemm_bias_at_call"]).b_form == "native"


def test_a_read_one_byte_past_the_kernels_allowance_names_operand_function_and_distance(host):
    r = _reals(host)["exdecl_bad.gemm_overread"]
    v = run_job(host, Job(CASES[0], "exact", r, "host"))
    assert v.status == FAIL, v.line()
    assert re.search(r"input guard page: read past the end of B\[0\]: byte \d+ of a 1254-byte "
                     r"buffer \(33 byte\(s\) past its end read, 32 declared readable; the guard "
                     r"page starts 32 past its end\) in its gemm at gemm_overread\+0x[0-9a-f]+ "
                     r"in libexdecl_bad\.so", v.message), v.message


def test_a_read_one_byte_past_the_packers_allowance_is_the_packers(host):
    r = _reals(host)["exdecl_bad.gemm_pack_overread"]
    v = run_job(host, Job(CASES[2], "exact", r, "host"))
    assert v.status == FAIL, v.line()
    assert re.search(r"read past the end of B: byte \d+ of a \d+-byte buffer \(17 byte\(s\) past "
                     r"its end read, 16 declared readable; .*\) in its pack_b at pack_overread\+",
                     v.message), v.message
    assert "(during packing)" in v.message


def test_probes_of_a_packer_without_bias(host):
    reals = _reals(host)
    for name, bias_flag in (("exdecl.gemm_nobias", probes.REFUSED),
                            ("exdecl.gemm_bias_at_call", probes.NOT_APPLICABLE)):
        r = reals[name]
        found = {p: probes.run_probe(host.engine, r, p, "host") for p in probes.MISUSE_NAMES}
        for p in ("other_n", "other_k", "truncated"):
            assert found[p].finding == probes.REFUSED, (name, p, found[p].detail)
        assert found["bias_flag"].finding == bias_flag, found["bias_flag"].detail


def test_a_wrong_result_on_the_valid_call_of_a_probe_fails(host):
    """The valid call every probe makes first: wrong there is a failure of the
    realization, never a skip."""
    class Wrong:
        def __getattr__(self, name):
            return getattr(host.engine, name)

        def gemm_raw(self, m, n, k, problems, selector=None, timing=None):
            res = host.engine.gemm_raw(m, n, k, problems, selector, timing)
            problems[0].c[0, 0] = 99.0
            return res

    r = _reals(host)["exdecl.gemm_nobias"]
    res = probes.run_probe(Wrong(), r, "other_n", "host")
    assert res.finding == probes.SILENTLY_WRONG
    assert res.detail.startswith("a valid call with a correctly packed B: 1 of 200 outputs wrong")
    assert res.verdict().status == FAIL


def test_padding_declared_unspecified(host):
    d = _declared(host)
    checks = {c.check: c for c in packers.checks_for(
        host, d["expackers.gemm_rhs_unwritten_declared"], True, 0) if c.packer == "rhs"}
    assert set(checks) == {"determinism", "layout", "padding"}
    assert all(c.ok for c in checks.values()), checks
    assert checks["determinism"].note == ("every byte but its padding written (declared "
                                          "unspecified)")
    assert checks["layout"].note == ("conforms to x16p8x2b, its padding aside (declared "
                                     "unspecified)")
    assert checks["padding"].note == ("C does not depend on its padding (B packed into 0x00, "
                                      "0xa5, 0x7e gives the same bits)")
    # undeclared, the same packer fails its determinism check
    plain = packers.checks_for(host, d["expackers.gemm_rhs_unwritten"], True, 0)
    assert not plain[0].ok and "left unwritten" in plain[0].problem
    used = {c.check: c for c in packers.checks_for(host, d["expackers.gemm_rhs_padding_used"],
                                                   True, 0) if c.packer == "rhs"}
    assert used["determinism"].ok and used["layout"].ok
    assert not used["padding"].ok
    assert used["padding"].problem.startswith(
        "the result depends on its unspecified padding: with B of N = 37, K = 21 packed into a "
        "destination filled with 0x7e"), used["padding"].problem


@pytest.mark.parametrize("n, why", [
    (1, "flags 0x100: unknown bits 0x100"),
    (2, "KB_PLUGIN_PACK_PADDING_UNSPECIFIED needs rhs_layout"),
    (3, "KB_PLUGIN_PACK_BIAS_AT_CALL without KB_PLUGIN_PACK_NO_BIAS"),
    (4, "this realization packs no B"),
    (5, "overread[1] = 32769 bytes: at most 32768 are taken"),
    (6, "overread[7]: no operand has that index"),
    (7, "scratch_cap 1048576 is set without KB_PLUGIN_SCRATCH_CAPPED"),
    (8, "expect_symbols: an empty list"),
    (9, "expect_symbols[0] must be a non-empty printable glob pattern without spaces"),
    (10, "expect_symbols[0] (sme3:kai_*): 'sme3' is not an ISA class"),
])
def test_a_declaration_kbench_cannot_take_is_refused_naming_it(n, why):
    with pytest.raises(InvalidArgument) as err:
        native_plugins.load_plugin(lib(f"baddecl{n}"))
    assert f"libbaddecl{n}.so: realizations[0] (gemm_bad): " in str(err.value), str(err.value)
    assert why in str(err.value), str(err.value)


@needs_qemu
def test_a_packer_without_bias_across_streaming_vector_lengths():
    """B packed at one SVL and used at another, both ways: refused by the clean
    plugin (its header records the SVL), accepted with wrong results by the
    broken one, which fails naming both lengths."""
    t = _target("qemu:svl=512", "exdecl", "exdecl_bad")
    try:
        reals = _reals(t)
        good, bad = reals["exdecl.gemm_nobias_svl"], reals["exdecl_bad.gemm_nobias_svl"]
        names = probes.probe_names(good, 512)
        assert {"svl_pack_lo", "svl_call_lo", "svl_pack_hi", "svl_call_hi"} <= set(names)
        for p in ("svl_pack_lo", "svl_call_hi"):
            res = probes.run_probe(t.engine, good, p, t.name, 512)
            assert res.finding == probes.REFUSED, res.detail
            res = probes.run_probe(t.engine, bad, p, t.name, 512)
            packed, called = (256, 512) if p == "svl_pack_lo" else (512, 1024)
            assert res.finding == probes.SILENTLY_WRONG and res.verdict().status == FAIL
            assert res.detail.startswith(f"accepts a B packed at SVL {packed} while running at "
                                         f"SVL {called}: "), res.detail
            assert re.search(r": \d+ of 200 outputs wrong", res.detail), res.detail
        assert t.engine.set_svl(512) == 512  # switched back
    finally:
        t.close()


DECL_CATALOG = """\
[catalog]
name = "declwork"
description = "declarations, end to end"

[[gemm]]
name = "plain_k33"
m = 7
n = 19
k = 33
bias = true

[[gemm]]
name = "native_k23"
m = 9
n = 38
k = 23
b_form = "native"
bias = false
"""


@needs_qemu
def test_a_run_fails_each_broken_declaration_by_name_and_passes_the_clean_plugin(tmp_path):
    """`kbench run` end to end on an SME target: the clean plugin exits 0; the
    broken one exits 1 with each finding named in failures.csv, and the
    reproduce line of the vector-length finding, run again, fails again."""
    import csv
    import shlex
    import subprocess
    import sys

    cat = tmp_path / "declwork.toml"
    cat.write_text(DECL_CATALOG)

    def run(name: str, out: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kbench.cli", "run", "--suite", "all", "--shapes", str(cat),
             "--backend", "plugin", "--plugin", pattern(name), "--target", "qemu:svl=512",
             "--no-history", "--no-report", "--out", str(tmp_path / out)],
            capture_output=True, text=True, timeout=900, cwd=tmp_path)

    clean = run("exdecl", "clean")
    assert clean.returncode == 0, clean.stdout[-3000:]
    broken = run("exdecl_bad", "broken")
    assert broken.returncode == 1, broken.stdout[-3000:]
    with open(tmp_path / "broken" / "failures.csv") as f:
        failures = list(csv.DictReader(f))

    def found(realization: str, text: str) -> dict[str, str]:
        hits = [r for r in failures if r["realization"] == f"exdecl_bad.{realization}"
                and text in r["message"]]
        assert hits, (realization, text, [r["message"][:200] for r in failures])
        return hits[0]

    found("gemm_overread", "33 byte(s) past its end read, 32 declared readable")
    assert "in its gemm at gemm_overread+" in found("gemm_overread", "B[0]")["message"]
    found("gemm_pack_overread", "17 byte(s) past its end read, 16 declared readable")
    found("gemm_pack_overread", "in its pack_b at pack_overread+")
    found("gemm_dispatch", "ran elsewhere than it declares: none of exdecl_fast_* ran")
    vl = found("gemm_nobias_svl", "accepts a B packed at SVL 256 while running at SVL 512")
    assert vl["suite"] == "plugin-contracts" and vl["status"] == "fail"
    cmd = shlex.split(vl["reproduce"])
    again = subprocess.run([sys.executable, "-m", "kbench.cli", *cmd[1:]], capture_output=True,
                           text=True, timeout=900, cwd=tmp_path,
                           env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")})
    assert again.returncode == 1, (vl["reproduce"], again.stdout[-2000:])
