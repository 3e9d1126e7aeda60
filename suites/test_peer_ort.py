"""The onnxruntime peer: listed beside our backends but never as one of them,
judged by the same oracle through the same runner, timed by the same
protocol. Skipped when onnxruntime is not installed, unless
KBENCH_REQUIRE_ORT is set (CI installs the `ort` extra and sets it)."""

import math
import os

import numpy as np
import pytest

from kbench.errors import Unsupported
from kbench.harness import contracts
from kbench.harness.runner import Job, jobs_for, run_job
from kbench.judge.verdict import ERROR, FAIL, PASS, SKIP
from kbench.native import api
from kbench.native.calls import Timing
from kbench.peers.ort import CONV_NAME, GEMM_NAME, NO_KLEIDIAI, OrtPeer, kleidiai_switch
from kbench.peers.timing import time_calls
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.problems.catalog import load_catalog, resolve_catalog
from kbench.targets.inprocess import InProcessEngine
from kbench.targets.spec import GuardedBuffer, Target, parse_target

REQUIRED = bool(os.environ.get("KBENCH_REQUIRE_ORT"))


@pytest.fixture(scope="module")
def peer():
    p = OrtPeer()
    if not p.available():
        if REQUIRED:
            pytest.fail(f"KBENCH_REQUIRE_ORT is set but the ort peer is unavailable: "
                        f"{p.unavailable_reason()}")
        pytest.skip(p.unavailable_reason())
    return p


@pytest.fixture(scope="module")
def host(peer):
    t = parse_target("host")
    yield t
    t.close()


def _realization(host, name):
    return next(r for r in host.info().realizations if r.name == name)


def _run(host, case, kind, name):
    return run_job(host, Job(case, kind, _realization(host, name), "host"))


def test_listed_as_peer_not_as_backend(host):
    info = host.info()
    peers = [r for r in info.realizations if r.backend == "ort"]
    expected = {GEMM_NAME: "gemm", CONV_NAME: "conv2d"}
    if kleidiai_switch():  # Arm64: each also with KleidiAI switched off
        expected |= {n + NO_KLEIDIAI: op for n, op in expected.items()}
    assert {r.name: r.op for r in peers} == expected
    for r in peers:
        assert r.peer and r.accum == "fp16" and r.k_per_rounding == 1
        assert r.kernel.startswith("onnxruntime ")
        assert r.to_dict()["peer"] is True
        assert api.Realization.from_dict(r.to_dict()) == r
    assert _realization(host, GEMM_NAME).bforms == ("plain",)
    assert "ort" not in info.backends and info.peers[0] == "ort"  # other packages may add peers
    assert not any(r.peer for r in info.realizations if r.backend in api.BACKENDS)
    # the packed-B contract suite works from TargetInfo.backends: no peer there
    assert "ort" not in contracts.native_backends(host.engine)


def test_kernel_names_the_compute_path(peer):
    for op, name in (("MatMul", GEMM_NAME), ("Conv", CONV_NAME)):
        ops = peer.graph_ops(op)
        assert op in ops
        kernel = next(r.kernel for r in peer.realizations() if r.name == name)
        assert (f"FP32 {op} between Casts" in kernel) == ("Cast" in ops), kernel


def test_engine_without_peers():
    info = InProcessEngine(peers=[]).info("host")
    assert not info.peers and not any(r.peer for r in info.realizations)


@pytest.mark.parametrize("kind", ["exact", "uniform", "specials"])
def test_matmul_bias_clamp_strided(host, kind):
    """Bias, clamp, padded lda and ldc (padding between C rows must stay
    untouched, which the target's guard check enforces), a batch of two."""
    case = GemmCase("ort_strided", 19, 37, 70, batch=2, bias=True, clamp=True, lda_pad=5,
                    ldc_pad=3)
    v = _run(host, case, kind, GEMM_NAME)
    assert v.status == PASS, v.line()
    assert v.backend == "ort" and v.realization == GEMM_NAME
    if kind == "exact":  # exact by design: bit for bit
        assert v.exact == v.total and v.max_ulp == 0


def test_matmul_gemv_no_bias_and_packed_skipped(host):
    v = _run(host, GemmCase("ort_gemv", 1, 129, 257, bias=False, ldb_pad=7), "normal",
             GEMM_NAME)
    assert v.status == PASS, v.line()
    v = _run(host, GemmCase("ort_packed", 4, 8, 8, b_form="packed"), "exact", GEMM_NAME)
    assert v.status == SKIP


def test_packed_b_refused_without_writing(host):
    case = GemmCase("ort_packed", 4, 8, 8, b_form="packed")
    out = host.run_gemm(case, inputs.gemm_inputs(case, "exact"), GEMM_NAME)
    assert isinstance(out.error, Unsupported) and out.error.field == "problems[0].b"
    assert out.guard_detail == ""


@pytest.mark.parametrize("lo,hi", [(-math.inf, 7.0), (-5.0, math.inf), (-math.inf, math.inf)])
def test_one_sided_clamp_matches_scalar(host, lo, hi):
    """Clip gets only the finite bound; exact inputs agree with our scalar
    reference bit for bit."""
    rng = np.random.default_rng(3)
    m, n, k = 6, 10, 12
    a = rng.integers(-4, 5, (m, k)).astype(np.float16)
    b = rng.integers(-4, 5, (k, n)).astype(np.float16)
    bias = rng.integers(-4, 5, n).astype(np.float16)
    outs = []
    for name in (GEMM_NAME, "gemm_scalar_f32acc"):
        c = GuardedBuffer(m, n, n + 2)
        p = api.RawProblem(a, k, b, n, c.view, n + 2, bias, lo, hi)
        res = host.engine.gemm_raw(m, n, k, [p], api.Selector(force=name))
        assert res.realization.name == name and c.damage() == ""
        outs.append(c.view.view(np.uint16).copy())
    assert np.array_equal(outs[0], outs[1])


@pytest.mark.parametrize("kind", ["exact", "uniform", "specials"])
def test_conv_groups_stride_pad_dilation(host, kind):
    case = ConvCase("ort_conv", 2, 11, 9, 8, 12, 3, 2, stride=(2, 1), pad=(1, 2, 0, 1),
                    dilation=(2, 1), groups=4, bias=True, clamp=True)
    v = _run(host, case, kind, CONV_NAME)
    assert v.status == PASS, v.line()
    assert v.backend == "ort"
    if kind == "exact":
        assert v.exact == v.total and v.max_ulp == 0


def test_conv_depthwise_no_bias(host):
    case = ConvCase("ort_dw", 1, 7, 7, 16, 16, 3, 3, pad=(1, 1, 1, 1), groups=16, bias=False)
    for kind in ("exact", "normal"):
        v = _run(host, case, kind, CONV_NAME)
        assert v.status == PASS, v.line()


def test_timing_gemm_and_conv(host):
    g = GemmCase("ort_time", 16, 32, 48, clamp=True, ldc_pad=2)
    res, packing = host.time_gemm(g, inputs.gemm_inputs(g, "uniform"), GEMM_NAME,
                                  Timing(warmup=1, rounds=3, min_round_ns=200_000))
    assert packing is None and res.realization.name == GEMM_NAME
    assert len(res.times_ns) == 3 and res.reps_per_round >= 1
    assert all(t > 0 for t in res.times_ns)
    c = ConvCase("ort_time_conv", 1, 8, 8, 8, 8, 3, 3, pad=(1, 1, 1, 1))
    res = host.time_conv(c, inputs.conv_inputs(c, "uniform"), CONV_NAME,
                         Timing(warmup=0, rounds=2, cold=True))
    assert res.realization.name == CONV_NAME
    assert len(res.times_ns) == 2 and res.reps_per_round == 1


def test_time_calls_protocol():
    calls = []
    times, reps = time_calls(lambda: calls.append(1), Timing(warmup=2, rounds=4, max_reps=5))
    assert reps == 5 and len(times) == 4
    assert len(calls) == 1 + 2 + 4 * 5  # validating call, warm-up, rounds
    calls.clear()
    times, reps = time_calls(lambda: calls.append(1),
                             Timing(warmup=0, rounds=2, min_round_ns=10**9, max_reps=7))
    assert reps == 7 and len(calls) == 1 + 1 + 2 * 7  # calibration call, capped


def test_sessions_cached_per_shape(peer):
    engine = InProcessEngine(peers=[peer])
    a = np.ones((3, 4), np.float16)
    b = np.ones((4, 5), np.float16)
    sel = api.Selector(force=GEMM_NAME)
    for _ in range(3):
        c = np.zeros((3, 5), np.float16)
        engine.gemm_raw(3, 5, 4, [api.RawProblem(a, 4, b, 5, c, 5)], sel)
        assert (c == 4).all()
    key_count = len(peer._sessions)
    c = np.zeros((3, 5), np.float16)
    engine.gemm_raw(3, 5, 4, [api.RawProblem(a, 4, b, 5, c, 5, clamp_max=2.0)], sel)
    assert (c == 2).all() and len(peer._sessions) == key_count + 1


def test_smoke_catalog(host):
    """The smoke catalog on both peer realizations: nothing fails (packed and
    native B forms are not offered to a plain-B-only realization)."""
    cat = load_catalog(resolve_catalog("smoke"))
    reals = [r for r in host.info().realizations if r.peer and r.backend == "ort"]
    jobs = jobs_for(list(cat.cases), reals, "host", cat.name)
    assert {j.realization.name for j in jobs} == {GEMM_NAME, CONV_NAME}
    verdicts = [run_job(host, j) for j in jobs]
    bad = [v.line() for v in verdicts if v.status in (FAIL, ERROR)]
    assert not bad, "\n".join(bad)
    assert all(v.status == PASS for v in verdicts if v.kind == "exact")


def test_kleidiai_off_variants(monkeypatch):
    """Arm64 gets `..._nokleidiai` twins (session option mlas.disable_kleidiai=1);
    here the switch is forced on to check the plumbing: each twin is listed,
    runs on its own session and reports its own name."""
    import kbench.peers.ort as ort_mod
    monkeypatch.setattr(ort_mod, "kleidiai_switch", lambda: True)
    peer = OrtPeer()
    names = [r.name for r in peer.realizations()]
    assert names == [GEMM_NAME, CONV_NAME, GEMM_NAME + NO_KLEIDIAI, CONV_NAME + NO_KLEIDIAI]
    off = next(r for r in peer.realizations() if r.name == GEMM_NAME + NO_KLEIDIAI)
    assert off.kernel.endswith("; mlas.disable_kleidiai=1)") and off.peer
    target = Target("host", InProcessEngine(peers=[peer]))
    case = GemmCase("ort_off", 3, 5, 7, bias=True)
    for name in (GEMM_NAME, GEMM_NAME + NO_KLEIDIAI):
        v = run_job(target, Job(case, "exact", target._realization(name), "host"))
        assert v.status == PASS and v.realization == name, v.line()
    assert {k[-1] for k in peer._sessions} == {True, False}
    conv = ConvCase("ort_off_conv", 1, 5, 5, 4, 4, 3, 3, pad=(1, 1, 1, 1))
    v = run_job(target, Job(conv, "exact", target._realization(CONV_NAME + NO_KLEIDIAI), "host"))
    assert v.status == PASS and v.realization == CONV_NAME + NO_KLEIDIAI, v.line()
