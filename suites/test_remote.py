"""Remote targets end to end on this machine: real ssh (an OpenSSH server on
a loopback port, a throwaway key) into an emulated aarch64 box, and a
stand-in adb with a local folder as the device; both run the static aarch64
worker under QEMU (kb_servers, kb_emulated_box)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from kb_servers import FakeAdb, LoopbackSsh, fake_adb, loopback_ssh
from plugin_builds import ARCH_PATTERN, build, lib

from kbench.errors import InvalidArgument, KbenchError
from kbench.harness.runner import jobs_for, run_job
from kbench.judge.verdict import ERROR, PASS
from kbench.problems.cases import GemmCase
from kbench.targets.remote import RemoteError, parse_remote
from kbench.targets.spec import Target, parse_target
from kbench.targets.tools import find_qemu

try:
    QEMU = find_qemu()
except Exception:  # noqa: BLE001
    QEMU = ""
    if os.environ.get("KBENCH_REQUIRE_QEMU"):
        raise
needs_qemu = pytest.mark.skipif(not QEMU, reason="qemu-aarch64 not installed")

CASES = [GemmCase(f"remote_{m}x{n}x{k}", m, n, k) for m, n, k in
         ((1, 24, 17), (5, 33, 9), (8, 16, 40), (3, 7, 5), (6, 20, 12), (2, 9, 31))]


@pytest.mark.parametrize("spec, want", [
    ("ssh:board", ("ssh", "board", None, None, None, None, False)),
    ("ssh:ci@graviton.example:2200,svl=512,isa=sme",
     ("ssh", "graviton.example", "ci", 2200, 512, "sme", False)),
    ("ssh:127.0.0.1:22,emulated", ("ssh", "127.0.0.1", None, 22, None, None, True)),
    ("adb:", ("adb", "", None, None, None, None, False)),
    ("adb:R5CT1234,svl=256", ("adb", "R5CT1234", None, None, 256, None, False)),
])
def test_parse_remote(spec: str, want: tuple) -> None:
    r = parse_remote(spec)
    assert (r.kind, r.host, r.user, r.port, r.svl, r.isa, r.emulated) == want
    assert r.vl is None
    assert parse_remote(r.name) == r


def test_parse_remote_sve_vector_length() -> None:
    r = parse_remote("ssh:board,vl=256,isa=sve2p1")
    assert (r.vl, r.svl, r.isa) == (256, None, "sve2p1")
    assert r.name == "ssh:board,vl=256,isa=sve2p1" and parse_remote(r.name) == r
    assert parse_remote("adb:X,svl=512,vl=128").name == "adb:X,svl=512,vl=128"


@pytest.mark.parametrize("spec, field", [
    ("ssh:", "ssh:[user@]host"), ("ssh:host:99999", "port"), ("ssh:host,svl=300", "svl"),
    ("ssh:host,isa=avx", "isa"), ("ssh:host,fast", "expected svl=BITS, vl=BITS"),
    ("ssh:host,vl=96", "vl in"),
    ("ssh:a;rm -rf x", "ssh:[user@]host"), ("adb:two words", "serial"),
])
def test_parse_remote_refuses_bad_specs(spec: str, field: str) -> None:
    with pytest.raises(InvalidArgument, match="target: ") as exc:
        parse_target(spec)
    assert field in str(exc.value) and spec.split(",")[0][:5] in str(exc.value)


@pytest.fixture(scope="module")
def sshd() -> Iterator[LoopbackSsh]:
    if not QEMU:
        pytest.skip("qemu-aarch64 not installed")
    with loopback_ssh(QEMU) as server:
        yield server


@pytest.fixture
def ssh(sshd: LoopbackSsh, monkeypatch: pytest.MonkeyPatch) -> LoopbackSsh:
    monkeypatch.setenv("KBENCH_SSH", sshd.ssh_command)
    sshd.box()  # the default box: aarch64 under qemu -cpu max
    (sshd.folder / "dropped").unlink(missing_ok=True)
    return sshd


def _run_cases(target: Target, cases: list[GemmCase]) -> list:
    info = target.info()
    real = next(r for r in info.realizations if r.name == "gemm_neon_f32acc_fhm")
    return [run_job(target, job) for job in jobs_for(cases, [real], target.name,
                                                      kinds=("exact",))]


@needs_qemu
def test_ssh_deploys_caches_and_runs(ssh: LoopbackSsh) -> None:
    cache = ssh.folder / "home" / ".cache" / "kbench"
    for leftover in cache.glob("*") if cache.exists() else []:
        leftover.unlink()
    first = parse_target(ssh.spec + ",svl=256")
    info = first.info()
    assert (info.kind, info.arch, info.sme_vector_bits) == ("ssh", "aarch64", 256)
    assert info.extra["worker_copied"] is True and "sme2" in info.cpu_features
    copies = list(cache.glob("kbench-worker-aarch64-*"))
    assert len(copies) == 1 and os.access(copies[0], os.X_OK)
    verdicts = _run_cases(first, CASES[:2])
    assert [v.status for v in verdicts] == [PASS, PASS]
    assert all(v.realization == "gemm_neon_f32acc_fhm" and v.target == first.name
               for v in verdicts)
    first.close()
    # the SVE vector length is set in the started worker, apart from the SVL
    sve = parse_target(ssh.spec + ",vl=1024")
    assert (sve.info().sve_vector_bits, sve.info().sme_vector_bits) == (1024, 256)
    sve.close()
    second = parse_target(ssh.spec + ",isa=sme")
    again = second.info()
    assert again.extra["worker_copied"] is False  # cached
    assert again.extra["isa_cap_env"] == "sme"  # capped
    assert not any(r.isa == "sme2" for r in again.realizations)
    second.close()
    copies[0].write_bytes(b"\x7fELF cut short")  # a damaged cached copy is replaced
    third = parse_target(ssh.spec)
    assert third.info().extra["worker_copied"] is True
    third.close()


@needs_qemu
def test_ssh_killed_connection_fails_only_the_current_case(ssh: LoopbackSsh) -> None:
    # request 1 is the hello, then one GEMM request per case: the connection
    # dies when case 3's arrives
    ssh.box(drop_after=4)
    target = parse_target(ssh.spec)
    target.info()
    verdicts = _run_cases(target, CASES)
    target.close()
    statuses = [v.status for v in verdicts]
    assert statuses == [PASS, PASS, ERROR, PASS, PASS, PASS], [v.line() for v in verdicts]
    failed = verdicts[2]
    assert failed.case == CASES[2].name and failed.target == ssh.spec
    assert f"{ssh.spec}: connection lost" in failed.message, failed.message
    assert (ssh.folder / "dropped").exists()


@needs_qemu
def test_ssh_unreachable_wrong_arch_and_unrunnable_worker(ssh: LoopbackSsh,
                                                           tmp_path: Path) -> None:
    closed = f"ssh:{ssh.user}@127.0.0.1:1"  # nothing listens on port 1
    with pytest.raises(RemoteError, match=r"ssh:.*@127.0.0.1:1: cannot connect \(.*refused"):
        parse_target(closed).info()
    ssh.box(arch="riscv64")
    with pytest.raises(RemoteError, match="no kbench worker for the remote architecture "
                                          "riscv64"):
        parse_target(ssh.spec).info()
    ssh.box(emulate=False)  # the box cannot execute aarch64 code
    with pytest.raises(RemoteError, match="the worker cannot run there.*(Exec format|exec)"):
        parse_target(ssh.spec).info()
    # as a verdict: the case fails, naming the target and the reason
    ssh.box()
    target = parse_target(ssh.spec)
    info = target.info()
    real = next(r for r in info.realizations if r.name == "gemm_scalar_f32acc")
    ssh.box(emulate=False)
    target.engine.kill()  # the next case reconnects and finds the box broken
    v = run_job(target, jobs_for(CASES[:1], [real], target.name, kinds=("exact",))[0])
    assert v.status == ERROR and ssh.spec in v.message and "cannot run there" in v.message
    target.close()


@pytest.fixture
def adb(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAdb]:
    if not QEMU:
        pytest.skip("qemu-aarch64 not installed")
    with fake_adb(QEMU, ("emulator-5554", "R5CT1234")) as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        yield fake


@needs_qemu
def test_adb_pushes_to_the_device_and_runs(adb: FakeAdb) -> None:
    target = parse_target("adb:R5CT1234,svl=512,vl=128")
    info = target.info()
    assert (info.kind, info.arch, info.sme_vector_bits) == ("adb", "aarch64", 512)
    assert info.sve_vector_bits == 128 and target.name == "adb:R5CT1234,svl=512,vl=128"
    pushed = list((adb.root / "R5CT1234" / "data/local/tmp/kbench").glob("kbench-worker-*"))
    assert len(pushed) == 1 and info.extra["remote_worker"].startswith("/data/local/tmp/kbench/")
    assert not (adb.root / "emulator-5554" / "data/local/tmp/kbench").exists()
    assert [v.status for v in _run_cases(target, CASES[:2])] == [PASS, PASS]
    target.close()
    assert parse_target("adb:R5CT1234").info().extra["worker_copied"] is False


@needs_qemu
def test_adb_device_choice_and_failures(adb: FakeAdb) -> None:
    with pytest.raises(RemoteError, match="adb:nosuch: .*device 'nosuch' not found"):
        parse_target("adb:nosuch").info()
    with pytest.raises(RemoteError, match="adb:: .*more than one device"):
        parse_target("adb:").info()
    adb.box("emulator-5554", arch="aarch64", qemu=QEMU, drop_after=3)
    target = parse_target("adb:emulator-5554")
    target.info()
    statuses = [v.status for v in _run_cases(target, CASES[:3])]
    assert statuses == [PASS, ERROR, PASS]
    target.close()


def test_missing_client_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBENCH_ADB", "/nonexistent/adb")
    with pytest.raises(KbenchError, match="adb:: /nonexistent/adb is not installed"):
        parse_target("adb").info()


def _plugin_verdicts(target: Target) -> list:
    info = target.info()
    reals = [r for r in info.realizations if r.name == "exwhole.gemm_f32acc"]
    assert reals, [r.name for r in info.realizations if r.is_plugin]
    return [run_job(target, job) for job in jobs_for(CASES[:2], reals, target.name,
                                                      kinds=("exact",))]


@needs_qemu
def test_ssh_takes_plugins_copied_once_and_checksummed(ssh: LoopbackSsh) -> None:
    cache = ssh.folder / "home" / ".cache" / "kbench"
    for leftover in cache.glob("*") if cache.exists() else []:
        leftover.unlink()
    build("aarch64")
    plugin = f"{ARCH_PATTERN}/libexwhole.so"
    first = parse_target(ssh.spec, [plugin])
    verdicts = _plugin_verdicts(first)
    assert [v.status for v in verdicts] == [PASS, PASS], [v.line() for v in verdicts]
    assert all(v.plugin == "exwhole 1.0.0" and v.target == first.name for v in verdicts)
    first.close()
    (copy,) = cache.glob("kbench-plugin-*-libexwhole.so")
    assert copy.read_bytes() == Path(lib("exwhole", "aarch64")).read_bytes()
    assert len(list(cache.glob("kbench-worker-aarch64-dyn-*"))) == 1
    stamp = copy.stat().st_mtime_ns
    second = parse_target(ssh.spec, [plugin])
    assert [v.status for v in _plugin_verdicts(second)] == [PASS, PASS]
    second.close()
    assert copy.stat().st_mtime_ns == stamp  # cached: not copied again
    copy.write_bytes(b"\x7fELF cut short")  # a damaged copy is replaced
    third = parse_target(ssh.spec, [plugin])
    assert [v.status for v in _plugin_verdicts(third)] == [PASS, PASS]
    third.close()


@needs_qemu
def test_adb_takes_plugins(adb: FakeAdb) -> None:
    build("aarch64")
    target = parse_target("adb:R5CT1234", [f"{ARCH_PATTERN}/libexwhole.so"])
    verdicts = _plugin_verdicts(target)
    assert [v.status for v in verdicts] == [PASS, PASS], [v.line() for v in verdicts]
    target.close()
    pushed = adb.root / "R5CT1234" / "data/local/tmp/kbench"
    assert len(list(pushed.glob("kbench-plugin-*-libexwhole.so"))) == 1
