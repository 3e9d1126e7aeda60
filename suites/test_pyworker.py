"""The emulated-Python engine (kbench.targets.pyworker).

The protocol tests start the guest side with this machine's own Python
(same code, no emulation), so they are fast and always run: arrays keep
their place in their buffers, outputs and guard regions come back, errors
keep their class and field, tables travel, a dead guest is reported and
replaced. The qemu-python tests run the real thing (aarch64 CPython under
qemu-aarch64 with the aarch64 cffi module; skipped unless kbench.targets.pyroot
has installed it, required with KBENCH_REQUIRE_QEMU_PYTHON=1)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from kbench.errors import InvalidArgument, Unsupported, WorkerCrashed
from kbench.harness.runner import Job, applicable, run_job
from kbench.judge.verdict import PASS
from kbench.native import api
from kbench.problems.cases import ConvCase, GemmCase
from kbench.problems.inputs import conv_inputs, gemm_inputs
from kbench.targets import pyroot
from kbench.targets.inprocess import InProcessEngine
from kbench.targets.pyworker import PySpec, PyWorkerEngine
from kbench.targets.spec import Target, parse_qemu, parse_target


@pytest.fixture(scope="module")
def local():
    """The guest loop run by this machine's Python: the protocol without emulation."""
    env = dict(os.environ)
    engine = PyWorkerEngine(PySpec([sys.executable], env, cpu="host"))
    target = Target("qemu-python:local", engine)
    yield target
    target.close()


@pytest.fixture(scope="module")
def host():
    return Target("host", InProcessEngine(peers=[]))


def _ours(info):
    return [r for r in info.realizations if not r.peer]


def test_info_is_the_guests_in_process_engine(local, host):
    info = local.info()
    assert info.kind == "qemu-python" and info.emulated
    assert [r.name for r in _ours(info)] == [r.name for r in _ours(host.info())]
    assert info.extra["guest_python"] and info.extra["qemu_cpu"] == "host"
    assert local.engine.hello["pid"] != os.getpid()


@pytest.mark.parametrize("b_form", ["plain", "packed", "native"])
def test_gemm_bit_identical_to_in_process(local, host, b_form):
    """Strided A (lda padding), padded C rows (ldc), bias, clamp, a batch: the
    guarded buffers travel whole and the padding must come back untouched."""
    case = GemmCase("pyw", 7, 19, 33, batch=2, bias=True, clamp=True, lda_pad=3, ldc_pad=5,
                    b_form=b_form)
    inp = gemm_inputs(case, "normal")
    for r in _ours(host.info()):
        if r.op != "gemm" or b_form not in r.bforms:
            continue
        there = local.run_gemm(case, inp, r.name)
        here = host.run_gemm(case, inp, r.name)
        assert there.error is None and here.error is None, (there.error, here.error)
        assert there.guard_detail == "" and there.ran.name == r.name
        for a, b in zip(there.outputs, here.outputs, strict=True):
            assert np.array_equal(a.view(np.uint16), b.view(np.uint16))


def test_conv_verdict_through_the_guest(local):
    case = ConvCase("pyw_conv", 1, 9, 7, 6, 5, 3, 3, pad=(1, 1, 1, 1), clamp=True)
    r = next(r for r in _ours(local.info()) if r.op == "conv2d")
    v = run_job(local, Job(case, "normal", r, local.name))
    assert v.status == PASS and v.realization == r.name, v.line()
    out = local.run_conv(case, conv_inputs(case, "exact"), r.name)
    assert out.error is None and out.guard_detail == ""


def test_errors_keep_class_and_field(local):
    a = np.zeros((2, 3), np.float16)
    with pytest.raises(InvalidArgument) as info:
        local.engine.gemm_raw(2, 3, 3, [api.RawProblem(a, 2, a, 3, a, 3)])
    assert info.value.field == "problems[0].lda"
    with pytest.raises(Unsupported):
        local.engine.set_svl(256)
    # a failed call writes nothing: the guard check sees the untouched output
    case = GemmCase("pyw_err", 3, 4, 5)
    out = local.run_gemm(case, gemm_inputs(case, "exact"), "no_such_realization")
    assert isinstance(out.error, InvalidArgument) and out.guard_detail == ""


def test_timing_and_packing_through_the_guest(local):
    from kbench.native.calls import Timing
    case = GemmCase("pyw_time", 4, 16, 16, b_form="packed")
    inp = gemm_inputs(case, "uniform")
    r = next(r for r in _ours(local.info()) if r.op == "gemm" and "packed" in r.bforms)
    res, packing = local.time_gemm(case, inp, r.name, Timing(warmup=0, rounds=3, max_reps=2))
    assert len(res.times_ns) == 3 and res.reps_per_round == 2 and all(t > 0 for t in
                                                                      res.times_ns)
    assert packing is not None and len(packing.times_ns) == 3


def _table(info, **change):
    table = {"kbench_dispatch_table": 1, "library_version": info.library_version,
             "fingerprint": {"arch": info.arch, "cpu_features": info.cpu_features,
                             "sme_vector_bits": info.sme_vector_bits},
             "rules": [{"op": "conv2d", "class": {"kh": 3, "kw": 3, "stride_h": 1,
                                                  "stride_w": 1},
                        "realization": "conv2d_direct_scalar_f32acc"}]}
    table.update(change)
    return api.DispatchTable(json.dumps(table), "table.json")


def test_dispatch_table_travels(local):
    """A selector's dispatch table is sent by text, loaded in the guest and
    followed there; a table for another library version is refused there
    with its field named."""
    info = local.info()
    case = ConvCase("pyw_table", 1, 6, 6, 4, 4, 3, 3)
    inp = conv_inputs(case, "exact")
    default = local.run_conv(case, inp, "conv2d_direct_scalar_f32acc", force=False)
    assert default.ran.name != "conv2d_direct_scalar_f32acc"
    out = local.run_conv(case, inp, "conv2d_direct_scalar_f32acc",
                         api.Selector(table=_table(info)), force=False)
    assert out.error is None and out.ran.name == "conv2d_direct_scalar_f32acc"
    bad = local.run_conv(case, inp, "conv2d_direct_scalar_f32acc",
                         api.Selector(table=_table(info, library_version="0.0.0-other")),
                         force=False)
    assert isinstance(bad.error, InvalidArgument)
    assert bad.error.field == "table.library_version"


def test_a_dead_guest_is_reported_and_replaced(local):
    local.info()
    assert local.engine.proc is not None
    local.engine.proc.kill()
    local.engine.proc.wait()
    with pytest.raises(WorkerCrashed, match="emulated python: died"):
        local.engine.info("again")
    restarts = local.engine.restarts
    case = GemmCase("pyw_dead", 2, 3, 4)
    out = local.run_gemm(case, gemm_inputs(case, "exact"), "gemm_scalar_f32acc")
    assert out.error is None and restarts >= 1 and local.engine.proc is not None


def test_target_specs():
    q = parse_qemu("qemu-python:svl=512")
    assert (q.kind, q.cpu, q.svl, q.name) == ("qemu-python", "max", 512,
                                               "qemu-python:cpu=max:svl=512")
    assert q.qemu_cpu == "max,sme-default-vector-length=64"
    assert parse_qemu("qemu-python:cpu=neoverse-n1").qemu_cpu == "neoverse-n1"
    with pytest.raises(InvalidArgument, match="svl= needs cpu=max"):
        parse_qemu("qemu-python:cpu=neoverse-n1:svl=256")
    with pytest.raises(InvalidArgument, match="qemu-python"):
        parse_target("qemu-pythn")


# ---- the real thing: aarch64 CPython under qemu-aarch64 --------------------------------

def _installed() -> None:
    root, reason = pyroot.status()
    if root is None:
        if os.environ.get("KBENCH_REQUIRE_QEMU_PYTHON") == "1":
            pytest.fail(f"the emulated Python is required but not installed: {reason}")
        pytest.skip(f"the emulated Python is not installed ({reason}): "
                    "python -m kbench.targets.pyroot")


@pytest.fixture(scope="module")
def emulated():
    _installed()
    target = parse_target("qemu-python:svl=256")
    yield target
    target.close()


def test_emulated_python_runs_our_aarch64_module(emulated, host):
    info = emulated.info()
    assert info.arch == "aarch64" and info.emulated and info.kind == "qemu-python"
    assert info.sme_vector_bits == 256 and info.isa == "sme2"
    assert {"scalar", "neon", "sme"} <= set(info.backends)
    case = GemmCase("pyw_emu", 5, 40, 37, bias=True, ldc_pad=2)
    inp = gemm_inputs(case, "normal")
    here = host.run_gemm(case, inp, "gemm_scalar_f32acc")
    there = emulated.run_gemm(case, inp, "gemm_scalar_f32acc")
    assert there.error is None and there.guard_detail == ""
    assert np.array_equal(there.outputs[0].view(np.uint16), here.outputs[0].view(np.uint16))
    ran = set()
    for r in _ours(info):
        if r.backend in ("neon", "sme") and applicable(case, r):
            v = run_job(emulated, Job(case, "normal", r, emulated.name))
            assert v.status == PASS and v.realization == r.name, v.line()
            ran.add(r.backend)
    assert ran == {"neon", "sme"}
