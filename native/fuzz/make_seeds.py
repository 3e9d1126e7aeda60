"""Writes the seed corpora of the fuzz targets (native/fuzz/corpus/<target>/).

The seeds are kept in the repository; this script says how they were made
and makes them again (`python native/fuzz/make_seeds.py`): byte strings that
decode, in each harness's order, to ordinary and edge-case calls; packed
buffers from the library itself; dispatch tables for this machine and broken
variants; and worker frames recorded from the worker engine's own encoder
(kbench.targets.worker) for every message type."""

from __future__ import annotations

import contextlib
import json
import struct
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from kbench.native import api  # noqa: E402
from kbench.native.api import DispatchTable, RawProblem, Selector  # noqa: E402
from kbench.native.calls import ConvDesc, Timing  # noqa: E402
from kbench.targets import worker  # noqa: E402


def u8(v: int) -> bytes:
    return struct.pack("<B", v & 0xFF)


def u16(v: int) -> bytes:
    return struct.pack("<H", v & 0xFFFF)


def f32(v: float) -> bytes:
    return struct.pack("<f", v)


def fp16(rng: np.random.Generator, n: int) -> bytes:
    return rng.integers(-3, 4, n).astype(np.float16).tobytes()


def write(target: str, name: str, data: bytes) -> None:
    folder = HERE / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)


def range_value(lo: int, hi: int, want: int) -> bytes:
    """The u16 that kb_take_range(lo, hi) decodes to `want`."""
    return u16(want - lo)


def gemm_seeds(rng: np.random.Generator) -> None:
    # M N K batch mode selector(flags) then per problem: 3 ld pads, lie, A, B, C, bias?, clamp
    for i, (m, n, k, mode, clamp) in enumerate([(1, 1, 1, 0, 0), (4, 17, 7, 0, 3),
                                               (5, 16, 33, 1, 0), (3, 19, 8, 2, 1),
                                               (2, 8, 8, 6, 0), (7, 5, 3, 9, 2),
                                               (1, 40, 12, 2, 3), (6, 6, 6, 64, 0)]):
        body = (range_value(1, 48, m) + range_value(1, 48, n) + range_value(1, 48, k)
                + range_value(1, 3, 1) + u8(mode) + u8(0))
        lda, ldb, ldc = k + i % 3, n + i % 2, n
        body += u8(i % 3) + u8(i % 2) + u8(0) + u8(0)
        body += fp16(rng, (m - 1) * lda + k) + fp16(rng, (k - 1) * ldb + n)
        body += fp16(rng, (m - 1) * ldc + n) + u8(1) + fp16(rng, n) + u8(clamp)
        if clamp & 1:
            body += f32(-2.0)
        if clamp & 2:
            body += f32(3.5)
        write("gemm", f"seed-{i}", body)
    write("gemm", "empty", b"")


def conv_seeds(rng: np.random.Generator) -> None:
    shapes = [  # n h w groups cin/g cout/g kh kw sh sw pads dil
        (1, 6, 6, 1, 4, 4, 3, 3, 1, 1, (1, 1, 1, 1), (1, 1)),
        (2, 7, 5, 2, 2, 3, 1, 1, 1, 1, (0, 0, 0, 0), (1, 1)),
        (1, 9, 9, 1, 3, 8, 5, 5, 2, 2, (2, 2, 2, 2), (1, 1)),
        (1, 8, 8, 4, 1, 1, 3, 3, 1, 1, (1, 1, 1, 1), (2, 2)),
        (1, 5, 11, 1, 2, 2, 3, 1, 1, 3, (0, 3, 1, 0), (1, 1)),
    ]
    for i, (n, h, w, g, cg, og, kh, kw, sh, sw, pads, dil) in enumerate(shapes):
        body = u8(255) + range_value(1, 2, n) + range_value(1, 12, h) + range_value(1, 12, w)
        body += range_value(1, 4, g) + range_value(1, 4, cg) + range_value(1, 4, og) + u8(0)
        body += range_value(1, 5, kh) + range_value(1, 5, kw)
        body += range_value(1, 3, sh) + range_value(1, 3, sw)
        body += b"".join(range_value(0, 3, p) for p in pads)
        body += range_value(1, 3, dil[0]) + range_value(1, 3, dil[1])
        body += u8(3 if i % 2 else 0) + (f32(-1.0) + f32(2.0) if i % 2 else b"")
        body += u8(16 if i == 0 else 0) + (u8(i) if i == 0 else b"")
        oh = (h + pads[0] + pads[1] - (dil[0] * (kh - 1) + 1)) // sh + 1
        ow = (w + pads[2] + pads[3] - (dil[1] * (kw - 1) + 1)) // sw + 1
        body += fp16(rng, n * h * w * g * cg) + fp16(rng, kh * kw * cg * g * og) + u8(1)
        body += fp16(rng, g * og) + fp16(rng, n * oh * ow * g * og)
        write("conv", f"seed-{i}", body)


def pack_seeds(rng: np.random.Generator) -> None:
    for i, (n, k, mode) in enumerate([(16, 8, 0), (17, 3, 1), (40, 9, 9), (1, 1, 32),
                                      (33, 65, 17), (8, 8, 3)]):
        body = range_value(0, 80, n) + range_value(0, 80, k) + u8(i % 3) + u8(mode)
        if mode & 2:
            body += u8(1)
        body += u8(0) + fp16(rng, (k - 1) * (n + i % 3) + n)
        if mode & 8:
            body += fp16(rng, n)
        write("pack", f"seed-{i}", body)


def describe_seeds(rng: np.random.Generator) -> None:
    for i, (k, n, native) in enumerate([(8, 24, False), (3, 1, False), (5, 17, True),
                                        (16, 16, True), (2, 40, False)]):
        b = rng.integers(-3, 4, (k, n)).astype(np.float16)
        packed = api.pack_b(b, backend="scalar", bias=np.ones(n, np.float16)) if native \
            else api.pack_b(b)
        write("describe", f"seed-{i}", bytes([1 if i % 2 == 0 else 5]) + packed.data.tobytes())
    write("describe", "header-only", b"\x01" + api.pack_b(np.ones((1, 1), np.float16))
          .data.tobytes()[:64])


def host_table(**extra: object) -> dict:
    cpu = api.cpu_info()
    return {"kbench_dispatch_table": 1, "library_version": api.version(),
            "fingerprint": {"arch": cpu.arch, "cpu_features": list(cpu.features),
                            "sme_vector_bits": cpu.sme_vector_bits},
            "rules": [{"op": "gemm", "class": {"m_min": 2, "m_max": 32, "n_min": 1,
                                               "n_max": 63, "k_min": 1, "k_max": 7},
                       "realization": "gemm_scalar_f32acc", "time_ns": 1000.5,
                       "runner_up": {"realization": "x", "time_ns": 2000}},
                      {"op": "conv2d", "class": {"kh": 3, "kw": 3, "stride_h": 1,
                                                 "stride_w": 1, "depthwise": False},
                       "realization": "conv2d_direct_scalar_f32acc",
                       "shapes": ["a", "b\u00e9"]},
                      {"op": "conv2d", "class": {}, "realization":
                       "conv2d_winograd_f2x2_3x3_scalar_f32acc"}], **extra}


def table_seeds() -> None:
    good = json.dumps(host_table(), indent=1)
    write("table", "host", good.encode())
    write("table", "host-escapes", json.dumps(host_table(note="\u00e9\U0001f600\t\"\\/"),
                                              ensure_ascii=True).encode())
    write("table", "other-version", good.replace(api.version(), "9.9.9").encode())
    write("table", "duplicate", good.replace('"op": "gemm",', '"op": "gemm", "op": "conv2d",')
          .encode())
    write("table", "range", good.replace('"kh": 3', '"kh": 1e300').encode())
    write("table", "deep", b'{"a": ' + b"[" * 70 + b"]" * 70 + b"}")
    write("table", "numbers", b'[0, -0, 1.5e-3, -2E+7, 1e999, 12345678901234567890]')
    write("table", "surrogates", b'["\\ud83d\\ude00", "\\udcff", "\\u0000"]')


def worker_seeds(rng: np.random.Generator) -> None:
    frames: list[tuple[int, bytes]] = []

    class Recorder(worker.WorkerEngine):
        def call(self, mtype: int, payload: bytes, during: str,
                 *bound: object) -> worker.Reader:
            frames.append((mtype, payload))
            if mtype == worker.LOAD_TABLE:  # "loaded": status 0, no field or message, 0 rules
                return worker.Reader(bytes(16))
            raise StopIteration

    eng = Recorder(worker.WorkerSpec(["unused"], {}, emulated=False))

    def record(fn, *args, **kwargs) -> bytes:
        frames.clear()
        with contextlib.suppress(StopIteration):  # raised once the request is recorded
            fn(*args, **kwargs)
        return b"".join(struct.pack("<IIQ", worker.MAGIC, t, len(p)) + p for t, p in frames)

    a = rng.integers(-3, 4, 4 * 7).astype(np.float16)
    b = rng.integers(-3, 4, 7 * 5).astype(np.float16)
    c = np.zeros(4 * 5, np.float16)
    bias = np.ones(5, np.float16)
    hello = struct.pack("<IIQ", worker.MAGIC, worker.HELLO, 0)
    shutdown = struct.pack("<IIQ", worker.MAGIC, worker.SHUTDOWN, 0)
    gemm = record(eng.gemm_raw, 4, 5, 7, [RawProblem(a, 7, b, 5, c, 5, bias, -1.0, 2.0)])
    timed = record(eng.gemm_raw, 4, 5, 7, [RawProblem(a, 7, b, 5, c, 5)],
                   Selector(force="gemm_scalar_f32acc", threads=2), Timing(1, 2, 0, 1, False))
    x = np.ones(1 * 6 * 6 * 4, np.float16)
    w = np.ones(3 * 3 * 4 * 4, np.float16)
    out = np.zeros(1 * 4 * 4 * 4, np.float16)
    conv = record(eng.conv_raw, ConvDesc(1, 6, 6, 4, 4, 3, 3), x, w, None, out)
    pack = record(eng.pack_raw, None, 5, 7, b, 5)
    pack_native = record(eng.pack_raw, "scalar", 5, 7, b, 5, bias)
    table = DispatchTable(json.dumps(host_table()))
    with_table = record(eng.gemm_raw, 4, 5, 7, [RawProblem(a, 7, b, 5, c, 5)],
                        Selector(table=table))
    svl = struct.pack("<IIQI", worker.MAGIC, worker.SET_SVL, 4, 512)
    write("worker", "hello", hello)
    write("worker", "gemm", gemm)
    write("worker", "gemm-timed", timed)
    write("worker", "conv", conv)
    write("worker", "pack", pack + pack_native)
    write("worker", "table-then-gemm", with_table)
    write("worker", "session", hello + gemm + conv + svl + pack + shutdown + hello)
    write("worker", "bad-magic", struct.pack("<IIQ", 0xDEADBEEF, 1, 0))


def main() -> None:
    rng = np.random.default_rng(2016)
    gemm_seeds(rng)
    conv_seeds(rng)
    pack_seeds(rng)
    describe_seeds(rng)
    table_seeds()
    worker_seeds(rng)
    for folder in sorted((HERE / "corpus").iterdir()):
        print(f"{folder.name}: {len(list(folder.iterdir()))} seeds")


if __name__ == "__main__":
    main()
