"""The worker protocol: every message type, malformed and oversized frames
(an error reply, never a crash or a hang), a crashing kernel (a failed
verdict, then a fresh worker), native timing, and no lost results.

Runs against the worker built for this machine (fast) and, where QEMU is
installed, against the aarch64 worker under emulation."""

import os
import struct
import subprocess

import numpy as np
import pytest

from kbench.errors import InvalidArgument, ProtocolError, Unsupported, WorkerCrashed
from kbench.harness import runner
from kbench.judge.verdict import CRASHED, PASS
from kbench.native.calls import ConvDesc, Timing, pack
from kbench.problems.cases import GemmCase
from kbench.results.store import RunWriter
from kbench.targets import worker
from kbench.targets.spec import parse_target
from kbench.targets.tools import find_qemu


def _specs():
    specs = ["worker:host"]
    try:
        find_qemu()
        specs.append("qemu:cpu=max:svl=256")
    except Exception:  # noqa: BLE001
        if os.environ.get("KBENCH_REQUIRE_QEMU"):
            raise
    return specs


@pytest.fixture(params=_specs())
def target(request):
    t = parse_target(request.param)
    yield t
    t.close()


def _general_gemm(target):
    """The first GEMM realization that takes any M (not a GEMV)."""
    return [x for x in target.info().realizations if x.op == "gemm" and not x.max_m][0]


def _frame(mtype, payload=b"", magic=worker.MAGIC, length=None):
    n = len(payload) if length is None else length
    return struct.pack("<IIQ", magic, mtype, n) + payload


def _replies(raw):
    out = []
    while len(raw) >= 16:
        magic, rtype, n = struct.unpack("<IIQ", raw[:16])
        out.append((rtype, raw[16:16 + n]))
        raw = raw[16 + n:]
    return out


def _run_raw(target, data):
    """Sends bytes to a fresh worker process; returns (replies, exit status)."""
    cmd = target.engine.spec.command
    res = subprocess.run(cmd, input=data, capture_output=True, timeout=120)
    return _replies(res.stdout), res.returncode


def test_hello_describes_the_worker(target):
    info = target.info()
    assert info.kind == "worker"
    assert info.library_version
    assert "scalar" in info.backends
    assert {r.op for r in info.realizations} == {"gemm", "conv2d"}


def test_a_hello_without_the_trailing_steps_is_read_as_an_older_worker(target, monkeypatch):
    """The micro-kernels' steps, then the SVE vector length, follow the HELLO
    reply's last field: a worker of an older build sends neither (its
    realizations report no steps, the tails fall back to the kernel names, and
    it reports no SVE vector length) or only the steps; a count that does not
    match is refused."""
    full = target.info()
    replies, _ = _run_raw(target, _frame(worker.HELLO) + _frame(worker.SHUTDOWN))
    payload = replies[0][1]
    n = len(full.realizations)
    assert struct.unpack("<I", payload[-4:])[0] == full.sve_vector_bits
    steps = payload[:-4]
    assert struct.unpack("<I", steps[-4 - 12 * n:-12 * n])[0] == n
    old = steps[:-4 - 12 * n]
    # the patch is undone before the target's teardown, whose SHUTDOWN must reach the
    # real worker (a patched call sends nothing: the worker would be waited for 10 s)
    with monkeypatch.context() as mp:
        mp.setattr(target.engine, "call", lambda *a, **k: worker.Reader(steps))
        info = target.engine.info("steps only")
        assert info.sve_vector_bits == 0
        assert [(r.m_step, r.n_step, r.kr) for r in info.realizations] == [
            (r.m_step, r.n_step, r.kr) for r in full.realizations]
        mp.setattr(target.engine, "call", lambda *a, **k: worker.Reader(old))
        info = target.engine.info("older")
        assert [r.name for r in info.realizations] == [r.name for r in full.realizations]
        assert all((r.m_step, r.n_step, r.kr) == (0, 0, 0) for r in info.realizations)
        assert info.sve_vector_bits == 0
        if full.arch == "aarch64":
            assert all(r.n_step for r in full.realizations if r.backend in ("neon", "sme"))
        bad = old + struct.pack("<I", n + 1) + b"\0" * 12 * (n + 1)
        mp.setattr(target.engine, "call", lambda *a, **k: worker.Reader(bad))
        with pytest.raises(worker.ProtocolError, match="steps of"):
            target.engine.info("bad")


@pytest.mark.parametrize("bad", ["magic", "oversized", "truncated_header", "truncated_payload"])
def test_unrecoverable_frames_get_an_error_reply_and_a_clean_exit(target, bad):
    data = {
        "magic": _frame(worker.HELLO, magic=0xDEADBEEF),
        "oversized": _frame(worker.GEMM, length=worker.MAX_PAYLOAD + 1),
        "truncated_header": b"KBW1\x01\x00",
        "truncated_payload": _frame(worker.GEMM, b"\x01" * 10, length=100),
    }[bad]
    replies, code = _run_raw(target, data)
    assert replies and replies[-1][0] == worker.PROTOCOL_ERROR
    assert code == 3, code  # a clean exit, not a signal


def test_malformed_requests_get_an_error_and_the_worker_goes_on(target):
    rng = np.random.default_rng(5)
    frames = [
        _frame(worker.GEMM, b"\x00" * 7),                    # truncated fields
        _frame(99),                                          # unknown type
        _frame(worker.CONV, b"\xff" * 200),                  # garbage
        _frame(worker.PACK, struct.pack("<IiQQQ", 0, 0, 4, 4, 4)),
    ]
    for t in (worker.GEMM, worker.CONV, worker.PACK, worker.SET_SVL, worker.SET_SVE_VL):
        for _ in range(25):
            frames.append(_frame(t, rng.integers(0, 256, int(rng.integers(0, 300)),
                                                 dtype=np.uint8).tobytes()))
    frames.append(_frame(worker.HELLO))
    replies, code = _run_raw(target, b"".join(frames))
    assert code == 0
    assert len(replies) == len(frames)
    assert replies[-1][0] == worker.HELLO | worker.REPLY
    assert all(r[0] in (worker.PROTOCOL_ERROR,) or r[0] & worker.REPLY for r in replies)


def test_pointer_outside_its_buffer_is_refused(target):
    eng = target.engine
    w = worker.Writer()
    for v in (1, 1, 1):
        w.u64(v)
    w.u32(1)
    worker._selector(w, None)
    w.u32(1)  # one buffer of 8 bytes
    w.u64(8)
    w.u32(0)
    w.u32(0)
    w.raw(b"\0" * 8)
    w.i32(0)
    w.u64(64)  # A at offset 64 of an 8-byte buffer
    w.u64(1)
    for _ in range(2):  # B, C inside the buffer
        w.i32(0)
        w.u64(0)
        w.u64(1)
        if _ == 0:
            w.u64(0)
    w.i32(-1)
    w.u64(0)
    w.f32(0.0)
    w.f32(1.0)
    w.u32(0)
    w.u32(0)
    worker._timing(w, None)
    with pytest.raises(ProtocolError, match="pointer outside its buffer"):
        eng.call(worker.GEMM, w.bytes(), "GEMM")
    with pytest.raises(ProtocolError, match="truncated at"):
        eng.call(worker.GEMM, w.bytes()[:-6], "GEMM")
    assert target.info().library_version  # still alive


def test_a_crashing_worker_fails_its_case_and_the_next_case_runs(target, tmp_path):
    """A worker killed by SIGSEGV in the middle of a call (as a faulting kernel
    would be): that call raises WorkerCrashed, the next one gets a fresh worker."""
    flag = tmp_path / "crashed-once"
    script = 'if [ -e "$0" ]; then exec "$@"; fi; : > "$0"; head -c 16 > /dev/null; kill -SEGV $$'
    spec = worker.WorkerSpec(["sh", "-c", script, str(flag), *target.engine.spec.command], {},
                             emulated=target.emulated)
    from kbench.targets.spec import Target
    crashing = Target(target.name, worker.WorkerEngine(spec))
    a = np.ones(4, np.float16)
    c = np.zeros(4, np.float16)
    from kbench.native.api import RawProblem
    with pytest.raises(WorkerCrashed, match="signal SIGSEGV"):
        crashing.engine.gemm_raw(1, 1, 1, [RawProblem(a, 1, a, 1, c, 1)])
    case = GemmCase("after_crash", 4, 4, 4)
    r = _general_gemm(crashing)
    v = runner.run_job(crashing, runner.Job(case, "exact", r, target.name))
    assert v.status == PASS
    assert crashing.engine.restarts == 1
    crashing.close()


@pytest.mark.parametrize("lie", ["M", "N", "K", "lda", "ldc", "b_size"])
def test_dimensions_beyond_the_buffers_sent_are_refused(target, lie):
    """A well-formed GEMM request whose M/N/K (or leading dimensions, or
    packed size) exceed the buffers sent with it: before, the worker read and
    wrote past them (ASan: heap-buffer-overflow; here it died or returned
    garbage); now it refuses, naming the operand, and keeps running."""
    from kbench.errors import InvalidArgument
    from kbench.native.api import RawProblem
    eng = target.engine
    a = np.ones(16, np.float16)
    b = np.ones(16, np.float16)
    c = np.zeros(16, np.float16)
    m = n = k = 4
    p = RawProblem(a, 4, b, 4, c, 4)
    if lie in ("M", "N", "K"):
        m, n, k = {"M": (2**40, 4, 4), "N": (4, 2**40, 4), "K": (4, 4, 2**40)}[lie]
        p.lda, p.ldb, p.ldc = k, n, n
    elif lie == "lda":
        p.lda = 2**30
    elif lie == "ldc":
        p.ldc = 2**30
    else:
        packed = pack(eng, np.ones((4, 4), np.float16), None, None)
        p = RawProblem(a, 4, packed, 0, c, 4, b_size=packed.size + 2**20, b_is_packed=True)
    field = {"M": "A", "N": "B", "K": "A", "lda": "A", "ldc": "C", "b_size": "b_size"}[lie]
    with pytest.raises(InvalidArgument, match=rf"problems\[0\]\.{field}: the call reads"):
        eng.gemm_raw(m, n, k, [p])
    assert (c == 0).all()
    assert eng.restarts == 0
    assert target.info().library_version


@pytest.mark.parametrize("what", ["conv_input", "conv_output", "conv_filter", "pack_b", "bias"])
def test_conv_and_pack_dimensions_beyond_the_buffers_are_refused(target, what):
    from kbench.errors import InvalidArgument
    eng = target.engine
    x = np.ones(1 * 6 * 6 * 4, np.float16)
    w = np.ones(3 * 3 * 4 * 4, np.float16)
    out = np.zeros(1 * 4 * 4 * 4, np.float16)
    desc = ConvDesc(n=1, h=6, w=6, c_in=4, c_out=4, kh=3, kw=3)
    if what == "pack_b":
        with pytest.raises(InvalidArgument, match=r"^B: the call reads"):
            eng.pack_raw(None, 4096, 4096, np.ones(16, np.float16), 4096)
    elif what == "bias":
        with pytest.raises(InvalidArgument, match=r"^bias: the call reads"):
            eng.conv_raw(desc, x, w, np.ones(1, np.float16), out)
    else:
        field = what.split("_")[1]
        big = {"input": {"h": 600, "w": 600}, "output": {}, "filter": {"c_out": 4096}}[field]
        desc = ConvDesc(**{**desc.__dict__, **big})
        out = {"input": out, "output": np.zeros(8, np.float16),
               "filter": np.zeros(1 * 4 * 4 * 4096, np.float16)}[field]
        with pytest.raises(InvalidArgument, match=rf"^{field}: the call reads"):
            eng.conv_raw(desc, x, w, None, out)
    assert eng.restarts == 0
    assert target.info().library_version


def test_a_pack_reply_never_exceeds_the_frame_limit(target):
    """A pack whose reply (the packed bytes plus status, strings and times)
    would exceed the protocol's frame limit is refused before the worker
    allocates it; before, it packed 1 GiB and sent a frame over the limit."""
    eng = target.engine
    with pytest.raises(ProtocolError, match="exceed the frame limit"):
        eng.pack_raw(None, 4, 4, np.ones(16, np.float16), 4, None, worker.MAX_PAYLOAD - 8)
    assert eng.restarts == 0
    assert target.info().library_version


def test_killed_worker_is_a_crashed_verdict_and_results_survive(target, tmp_path):
    r = _general_gemm(target)
    writer = RunWriter(tmp_path / "run", {"kind": "test"})
    jobs = [runner.Job(GemmCase(f"k{i}", 3, 5, 7), "exact", r, target.name) for i in range(3)]
    writer.add(runner.run_job(target, jobs[0]))
    target.engine.proc.kill()  # somebody kills the worker mid-run
    killed = runner.run_job(target, jobs[1])
    writer.add(killed)
    writer.add(runner.run_job(target, jobs[2]))
    assert killed.status == CRASHED and "signal SIGKILL" in killed.message
    assert killed.message.startswith(f"crashed: {r.name} on m3n5k7 (k1, exact): worker: died")
    rows = (tmp_path / "run" / "results.csv").read_text().splitlines()
    assert len(rows) == 4  # header + three verdicts, before close()
    assert '"complete": false' in (tmp_path / "run" / "run.json").read_text()
    writer.close(complete=True)


def test_timing_returns_one_time_per_repetition(target):
    a = np.ones((8, 16), np.float16)
    b = np.ones((16, 8), np.float16)
    c = np.zeros((8, 8), np.float16)
    from kbench.native.api import RawProblem
    res = target.engine.gemm_raw(8, 8, 16, [RawProblem(a, 16, b, 8, c, 8)],
                                 timing=Timing(warmup=2, rounds=7))
    assert len(res.times_ns) == 7 and all(t > 0 for t in res.times_ns)
    assert (c == 16).all()
    x = np.ones((1, 5, 5, 2), np.float16)
    wt = np.ones((3, 3, 2, 2), np.float16)
    out = np.zeros((1, 3, 3, 2), np.float16)
    res = target.engine.conv_raw(ConvDesc(1, 5, 5, 2, 2, 3, 3), x, wt, None, out,
                                 timing=Timing(1, 3, min_round_ns=100_000))
    assert len(res.times_ns) == 3 and (out == 18).all()


def test_packing_in_the_worker_matches_the_host(target):
    from kbench.targets.inprocess import InProcessEngine
    b = np.arange(7 * 20, dtype=np.float16).reshape(7, 20)
    host = InProcessEngine()
    assert np.array_equal(pack(target.engine, b), pack(host, b))
    bias = np.ones(20, np.float16)
    assert np.array_equal(pack(target.engine, b, "scalar", bias), pack(host, b, "scalar", bias))


def test_set_svl(target):
    info = target.info()
    if "sme" not in info.cpu_features:
        with pytest.raises(Exception, match="vector length|SME"):
            target.engine.set_svl(512)
        return
    assert target.engine.set_svl(512) == 512
    assert target.engine.info("again").sme_vector_bits == 512
    assert target.engine.set_svl(128) == 128


def test_set_sve_vl(target):
    """The SVE vector length changes inside the worker (PR_SVE_SET_VL), apart from
    the streaming one; a worker without SVE refuses, naming the reason."""
    info = target.info()
    if "sve" not in info.cpu_features:
        with pytest.raises(Unsupported, match="this CPU has no SVE vector length"):
            target.engine.set_sve_vl(256)
        assert target.engine.info("again").sve_vector_bits == 0
        return
    svl = info.sme_vector_bits
    for bits in (128, 2048, 256):
        assert target.engine.set_sve_vl(bits) == bits
        again = target.engine.info("again")
        assert again.sve_vector_bits == bits and again.sme_vector_bits == svl
    assert target.engine.set_sve_vl(4096) == 2048  # the kernel rounds down to what it offers
    with pytest.raises(InvalidArgument, match="bits: a vector length in bits"):
        target.engine.set_sve_vl(0)


def test_an_operand_at_an_odd_offset_is_refused(target):
    """Found by fuzz_worker: a pointer at an odd byte offset into its buffer
    reached the kernels as a misaligned kb_f16 pointer (UBSan)."""
    from kbench.errors import InvalidArgument
    from kbench.native.api import RawProblem
    raw = np.zeros(70, np.uint8)
    a = raw[1:65].view(np.float16)
    b = np.ones(16, np.float16)
    c = np.zeros(16, np.float16)
    with pytest.raises(InvalidArgument, match=r"problems\[0\]\.A: is not aligned"):
        target.engine.gemm_raw(4, 4, 4, [RawProblem(a, 4, b, 4, c, 4)])
    assert (c == 0).all() and target.engine.restarts == 0
