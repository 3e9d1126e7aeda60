"""The payload checksum of packed buffers (version 2, kbench.h): every path
of the library (portable, NEON, streaming SME at SVL 128 to 2048) against a
slow reference written from the definition, on random payloads of every
length 0-4,096 and a few large ones; what it detects; and the refusal of a
buffer sealed by the old (version 1) checksum.

The emulated half runs native/test/kb_test_checksum.c (the library's paths
one by one) under qemu-aarch64; it skips without QEMU unless
KBENCH_REQUIRE_QEMU is set (as in CI)."""

from __future__ import annotations

import struct
import subprocess

import numpy as np
import pytest
from qemu_gate import needs_qemu

import kbench
from kbench.errors import ContractViolation
from kbench.harness import contracts

MASK = (1 << 64) - 1
LARGE = (65_536 + 13, 131_584, 1 << 20)  # 131,584: a 256 x 256 B with its bias, SVL 512


def slow_reference(data: bytes) -> int:
    """The definition, word by word in Python integers."""
    total = 0
    for i in range(0, len(data), 8):
        word = int.from_bytes(data[i:i + 8].ljust(8, b"\0"), "little")
        total = (total + (2 * (i // 256) + 1) * word) & MASK
    return total


def payloads() -> list[bytes]:
    rng = np.random.default_rng(20261201)
    out = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in range(4097)]
    out += [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in LARGE]
    out.append(b"\xff" * 4096)  # every word 2^64 - 1: the sums wrap
    return out


@pytest.fixture(scope="module")
def cases() -> list[tuple[bytes, int]]:
    out = []
    for data in payloads():
        want = slow_reference(data) if len(data) <= 4096 else contracts.payload_checksum(data)
        out.append((data, want))
    return out


def test_numpy_reference_is_the_definition():
    """The numpy reference (used for the large payloads and by the contract
    cases) agrees with the word-by-word one, and the definition's fixed
    points hold: zero for no bytes, a lone byte is itself, chunk 1 weighs 3."""
    rng = np.random.default_rng(7)
    for n in (0, 1, 7, 8, 9, 255, 256, 257, 511, 513, 2049):
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        assert contracts.payload_checksum(data) == slow_reference(data), n
    assert slow_reference(b"") == 0
    assert slow_reference(b"\x05") == 5
    assert slow_reference(b"\0" * 256 + b"\x01") == 3


def test_library_on_this_machine_matches_the_reference(cases):
    for data, want in cases:
        assert kbench.payload_checksum(data) == want, len(data)


def test_every_single_byte_and_bit_change_is_detected():
    """An odd weight times a nonzero difference of less than 2^64 is never 0
    modulo 2^64: every byte value at every position of a payload spanning
    three chunks, and every bit of one, moves the checksum."""
    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, 600, dtype=np.uint8)
    ref = kbench.payload_checksum(base)
    for pos in range(base.size):
        for value in range(256):
            if value == base[pos]:
                continue
            mutated = base.copy()
            mutated[pos] = value
            assert contracts.payload_checksum(mutated) != ref, (pos, value)
    for pos in range(base.size):
        for bit in range(8):
            mutated = base.copy()
            mutated[pos] ^= 1 << bit
            assert kbench.payload_checksum(mutated) != ref, (pos, bit)


def test_moved_chunks_are_detected():
    """Whole chunks swapped or rotated change their weights."""
    rng = np.random.default_rng(4)
    base = rng.integers(0, 256, 4 * 256, dtype=np.uint8)
    ref = kbench.payload_checksum(base)
    chunks = base.reshape(4, 256)
    assert kbench.payload_checksum(chunks[[1, 0, 2, 3]].reshape(-1)) != ref
    assert kbench.payload_checksum(chunks[[3, 0, 1, 2]].reshape(-1)) != ref


def test_a_version_1_buffer_is_refused_with_the_repack_message():
    b = np.arange(12, dtype=np.float16).reshape(3, 4)
    for packed in (kbench.pack_b(b), kbench.pack_b(b, backend="scalar")):
        old = contracts.reseal(packed.data, version=1)
        with pytest.raises(ContractViolation) as exc:
            kbench.verify_packed(old)
        assert exc.value.field == "B.version"
        assert "FNV-1a" in str(exc.value) and "repack" in str(exc.value)


def test_sealed_buffers_carry_the_reference_checksum():
    """A buffer packed here holds the definition's value over its payload, so
    it verifies on any other machine."""
    b = np.random.default_rng(5).standard_normal((45, 53)).astype(np.float16)
    for packed in (kbench.pack_b(b), kbench.pack_b(b, backend="scalar")):
        h = contracts.header_values(packed.data)
        assert h["payload_checksum"] == contracts.payload_checksum(
            packed.data[contracts.HEADER_SIZE:])


@pytest.fixture(scope="module")
def payload_file(tmp_path_factory, cases):
    path = tmp_path_factory.mktemp("checksum") / "payloads.bin"
    with path.open("wb") as fh:
        for data, _ in cases:
            fh.write(struct.pack("<Q", len(data)) + data)
    return path


@needs_qemu
@pytest.mark.parametrize("svl", [128, 256, 512, 2048])
def test_every_emulated_path_matches_the_reference(svl, cases, payload_file):
    """Portable, NEON and streaming SME paths of the aarch64 library at this
    SVL: the same value as the reference on every payload."""
    from kbench.targets.crossbuild import build_test_program
    from kbench.targets.tools import find_qemu
    program = build_test_program("kb_test_checksum")
    res = subprocess.run([str(find_qemu()), "-cpu", f"max,sme-default-vector-length={svl // 8}",
                          str(program), str(payload_file)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == len(cases)
    for (data, want), line in zip(cases, lines, strict=True):
        length, *values = line.split()
        assert int(length) == len(data)
        assert values != [] and "-" not in values, line  # all three paths ran
        assert [int(v, 16) for v in values] == [want] * 3, (svl, len(data), values)


# ---- the seal computed while packing ----------------------------------------------------

# N x K of the packed B: fewer columns than a block, partial last blocks, enough blocks
# (N up to 560) for the chunks to start at every place of a block's steps, odd and even K,
# K of fewer pairs than a step, K with pairs past the whole steps; a ldb padded past N
SEAL_SHAPES = [(1, 1), (7, 3), (16, 2), (17, 9), (53, 45), (100, 17), (130, 64), (257, 33),
               (300, 100), (560, 31), (64, 256)]


def _sealed(target, backend, n: int, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    ldb = n + 3
    b = rng.integers(0, 1 << 16, size=(k, ldb), dtype=np.uint16).view(np.float16)
    bias = rng.integers(0, 1 << 16, size=n, dtype=np.uint16).view(np.float16)
    out = [target.engine.pack_raw(backend, n, k, b, ldb, bias)]
    if backend not in (None, "scalar"):
        out.append(target.engine.pack_raw(backend, n, k, b, ldb, None))  # no bias: zeros
    return out


def _check_sealed(bufs: list[np.ndarray], where: str) -> None:
    for buf in bufs:
        h = contracts.header_values(buf)
        payload = buf[contracts.HEADER_SIZE:contracts.HEADER_SIZE + h["payload_size"]]
        assert h["payload_checksum"] == contracts.payload_checksum(payload), where


def test_the_seal_is_computed_while_packing_on_this_machine():
    """The portable and scalar packers of this machine's library seal every
    buffer with the definition's value over the bytes they wrote."""
    from kbench.targets.spec import parse_target
    rng = np.random.default_rng(66)
    target = parse_target("host")
    try:
        for n, k in SEAL_SHAPES:
            for backend in (None, "scalar"):
                _check_sealed(_sealed(target, backend, n, k, rng), f"host {backend} {n}x{k}")
    finally:
        target.close()


@needs_qemu
@pytest.mark.parametrize("spec", ["qemu:cpu=max:svl=128", "qemu:cpu=max:svl=256",
                                  "qemu:cpu=max:svl=512", "qemu:cpu=max:svl=1024",
                                  "qemu:cpu=max:svl=2048", "qemu:cpu=max:svl=512:isa=sme"])
def test_the_seal_is_computed_while_packing_on_every_emulated_path(spec):
    """The SME packer (SME2: the seal in its loops, a chunk starting at every
    place of a block's steps, in both phases, and one pair at a time at SVL
    2048; SME without SME2: its own pass), the NEON native and panel packers
    and the scalar one seal every buffer with the definition's value over the
    bytes they wrote, with and without a bias."""
    from kbench.targets.spec import parse_target
    rng = np.random.default_rng(len(spec))
    target = parse_target(spec)
    try:
        for n, k in SEAL_SHAPES:
            for backend in ("sme", "neon", None, "scalar"):
                _check_sealed(_sealed(target, backend, n, k, rng), f"{spec} {backend} {n}x{k}")
    finally:
        target.close()
