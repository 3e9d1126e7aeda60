"""Streaming mode and ZA are off after every call (SVCR.SM = SVCR.ZA = 0).

The worker and the in-process engine read SVCR after each call
(kb_check_sme_state) and fail the call if an SME kernel left streaming mode
or ZA on; on an emulated CPU without FEAT_SME_FA64 (`fa64=off`, QEMU's
`sme_fa64=off`) such a kernel would also die with SIGILL at the next NEON
instruction. That the check fails a kernel without its SMSTOP is shown by the
mutation catalog (ci/mutants/sme-gemv-sme2-smstop-removed.toml, in every CI
sample); here: the target spec, and every SME realization passing the check
with and without FA64, with one and with several threads.

Skipped when QEMU is not installed, unless KBENCH_REQUIRE_QEMU is set."""

from __future__ import annotations

import pytest
from qemu_gate import needs_qemu

from kbench.errors import InvalidArgument
from kbench.native import api
from kbench.native.api import Selector
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets.spec import parse_qemu, parse_target

GEMM = [GemmCase("state_gemv", 1, 70, 33, bias=True), GemmCase("state_gemm", 9, 70, 33,
                                                                   clamp=True)]
CONV = ConvCase("state_conv", 1, 6, 6, 3, 20, 3, 3, pad=(1, 1, 1, 1))


def test_fa64_off_is_a_cpu_property_of_qemu_targets() -> None:
    q = parse_qemu("qemu:cpu=max:svl=512:fa64=off")
    assert not q.fa64
    assert q.qemu_cpu == "max,sme-default-vector-length=64,sme_fa64=off"
    assert q.name == "qemu:cpu=max:svl=512:fa64=off"
    assert parse_qemu(q.name) == q
    assert parse_qemu("qemu-python:svl=128:fa64=off").qemu_cpu.endswith(",sme_fa64=off")
    assert parse_qemu("qemu:svl=512:fa64=on").fa64
    assert "fa64" not in parse_qemu("qemu:svl=512").name


@pytest.mark.parametrize("spec, word", [("qemu:cpu=neoverse-n1:fa64=off", "cpu=max"),
                                        ("qemu:fa64=no", "on or off"),
                                        ("qemu:fa64=", "fa64=off")])
def test_bad_fa64_specs_are_refused(spec: str, word: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        parse_qemu(spec)
    assert exc.value.field == "target" and word in str(exc.value)


def test_the_check_passes_on_this_host() -> None:
    """No SME here (or every kernel left it off): the check reads nothing or 0."""
    api.check_sme_state()


@needs_qemu
@pytest.mark.parametrize("spec", ["qemu:cpu=max:svl=128:fa64=off",
                                  "qemu:cpu=max:svl=512:fa64=off", "qemu:cpu=max:svl=512"])
@pytest.mark.parametrize("threads", [1, 3])
def test_every_sme_realization_leaves_streaming_mode_off(spec: str, threads: int) -> None:
    """Every SME realization (and the NEON code after it) runs on a CPU
    without FA64, and the worker's SVCR check passes after each call."""
    target = parse_target(spec)
    try:
        sme = [r for r in target.info().realizations if r.backend == "sme"]
        assert {r.op for r in sme} == {"gemm", "conv2d"}, "no SME realizations on " + spec
        sel = Selector(threads=threads)
        for r in sme:
            if r.op == "conv2d":
                o = target.run_conv(CONV, inputs.conv_inputs(CONV, "normal"), r.name, sel)
                runs = [o]
            else:
                runs = [target.run_gemm(c, inputs.gemm_inputs(c, "normal"), r.name, sel)
                        for c in GEMM if not r.max_m or c.m <= r.max_m]
            for o in runs:
                assert o.error is None, f"{spec} {r.name}: {o.error}"
                assert o.ran is not None and o.ran.name == r.name
        # NEON right after the SME calls, in the same worker process
        neon = next(r for r in target.info().realizations if r.backend == "neon")
        o = target.run_gemm(GEMM[1], inputs.gemm_inputs(GEMM[1], "normal"), neon.name)
        assert o.error is None and o.ran is not None and o.ran.name == neon.name
    finally:
        target.close()
