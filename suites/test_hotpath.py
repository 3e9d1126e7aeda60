"""What a production call costs beyond its kernel: no environment lookup and
no clock read, in C (kb_gemm_batch, kb_conv2d with the default selector) and
in the Python API; and a dispatch table written by `kbench tune` loads
whatever the process's LC_NUMERIC locale is (the C JSON reader never
consults the locale)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from kbench.errors import KbenchError
from kbench.native import api
from kbench.targets import crossbuild

REPO = Path(__file__).resolve().parents[1]

# A driver linked against the library's objects with getenv and clock_gettime
# wrapped (ld --wrap): it counts every call the library makes to them.
DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kbench.h"

static long n_getenv, n_clock;
char *__real_getenv(const char *name);
int __real_clock_gettime(clockid_t id, struct timespec *ts);
char *__wrap_getenv(const char *name) { n_getenv++; return __real_getenv(name); }
int __wrap_clock_gettime(clockid_t id, struct timespec *ts) {
    n_clock++;
    return __real_clock_gettime(id, ts);
}

int main(void) {
    enum { M = 8, N = 16, K = 8 };
    static kb_f16 a[M * K], b[K * N], c[M * N];
    kb_gemm_problem p;
    memset(&p, 0, sizeof p);
    p.A = a; p.B = b; p.C = c; p.lda = K; p.ldb = N; p.ldc = N;
    p.clamp_min = -1e30f; p.clamp_max = 1e30f;
    kb_realization ran;
    kb_error err;
    kb_conv_desc d;
    memset(&d, 0, sizeof d);
    d.n = 1; d.h = 6; d.w = 6; d.c_in = 4; d.c_out = 4; d.kh = 3; d.kw = 3;
    d.stride_h = d.stride_w = 1; d.dil_h = d.dil_w = 1; d.groups = 1;
    static kb_f16 x[6 * 6 * 4], w[3 * 3 * 4 * 4], y[4 * 4 * 4];
    /* first use: the library may read KBENCH_ISA_CAP once */
    if (kb_gemm_batch(M, N, K, &p, 1, NULL, &ran, &err) != KB_OK) return 2;
    if (kb_conv2d(&d, x, w, NULL, y, NULL, &ran, &err) != KB_OK) return 2;
    n_getenv = n_clock = 0;
    for (int i = 0; i < 200; i++) {
        kb_selector sel;
        kb_selector_default(&sel);
        if (kb_gemm_batch(M, N, K, &p, 1, NULL, &ran, &err) != KB_OK) return 3;
        if (kb_gemm_batch(M, N, K, &p, 1, &sel, &ran, &err) != KB_OK) return 3;
        if (kb_conv2d(&d, x, w, NULL, y, NULL, &ran, &err) != KB_OK) return 3;
    }
    long calls_env = n_getenv, calls_clock = n_clock;
    /* control: the native timer does read the clock (the check can fail) */
    kb_timing t;
    memset(&t, 0, sizeof t);
    t.rounds = 2;
    t.max_reps = 3;
    double rounds[2];
    uint32_t reps;
    n_getenv = n_clock = 0;
    if (kb_time_gemm(M, N, K, &p, 1, NULL, &t, rounds, &reps, &ran, &err) != KB_OK) return 4;
    printf("calls getenv=%ld clock=%ld timer getenv=%ld clock=%ld\n", calls_env, calls_clock,
           n_getenv, n_clock);
    return 0;
}
"""


def _driver_output(tmp_path: Path) -> dict[str, int]:
    cc = crossbuild.toolchain_compiler("host")
    if not shutil.which(cc):
        pytest.skip(f"no C compiler ({cc}) to build the driver")
    out = crossbuild.build("host")
    objs = [str(crossbuild.object_path(src, out)) for src in crossbuild.sources("host")
            if src.parent.name != "worker"]
    src = tmp_path / "driver.c"
    src.write_text(DRIVER)
    exe = tmp_path / "driver"
    subprocess.run([cc, "-std=c11", "-O1", f"-I{REPO / 'native' / 'include'}", str(src), *objs,
                    "-Wl,--wrap=getenv", "-Wl,--wrap=clock_gettime", "-pthread", "-lm",
                    "-o", str(exe)], check=True, capture_output=True, text=True)
    res = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    words = res.stdout.split()
    assert words[0] == "calls", res.stdout
    return {f"{scope} {k}": int(v) for scope, kv in
            (("calls", words[1:3]), ("timer", words[4:6])) for k, v in
            (w.split("=") for w in kv)}


def test_production_calls_read_neither_environment_nor_clock(tmp_path: Path) -> None:
    counts = _driver_output(tmp_path)
    assert counts["calls getenv"] == 0, counts
    assert counts["calls clock"] == 0, counts
    # the control: the same wrapping sees the timer's clock reads
    assert counts["timer clock"] > 0, counts


def test_isa_cap_is_read_once_per_process() -> None:
    code = textwrap.dedent("""
        import os
        from kbench.native import api
        first = api.backends()
        os.environ["KBENCH_ISA_CAP"] = "neon"  # too late: read on first use
        print(first, api.backends())
    """)
    env = {**os.environ, "KBENCH_ISA_CAP": "scalar"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "['scalar'] ['scalar']"


class _CountingEnviron(dict):
    def __init__(self, data: dict[str, str]) -> None:
        super().__init__(data)
        self.reads = 0

    def __getitem__(self, key: str) -> str:
        self.reads += 1
        return super().__getitem__(key)

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        self.reads += 1
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.reads += 1
        return super().__contains__(key)


def test_python_api_calls_read_neither_environment_nor_clock(monkeypatch) -> None:
    a = np.ones((4, 8), np.float16)
    b = np.ones((8, 16), np.float16)
    x = np.ones((1, 5, 5, 2), np.float16)
    w = np.ones((3, 3, 2, 2), np.float16)
    api.gemm(a, b)
    api.conv2d(x, w)  # first use loads the library
    env = _CountingEnviron(dict(os.environ))
    clock_reads: list[str] = []

    def counting(name: str, fn):
        def wrapped(*args, **kwargs):
            clock_reads.append(name)
            return fn(*args, **kwargs)
        return wrapped
    monkeypatch.setattr(os, "environ", env)
    monkeypatch.setattr(os, "getenv", lambda *a: env.get(*a))
    for name in ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic",
                 "monotonic_ns"):
        monkeypatch.setattr(time, name, counting(name, getattr(time, name)))
    for _ in range(20):
        api.gemm(a, b, clamp=(-4.0, 4.0))
        api.conv2d(x, w)
    assert env.reads == 0
    assert clock_reads == []
    # the control: the patched objects do see reads
    os.environ.get("HOME")
    time.monotonic()
    assert env.reads == 1 and clock_reads == ["monotonic"]


LOCALE_PROBE = textwrap.dedent("""
    import ctypes, json, locale, sys
    locale.setlocale(locale.LC_NUMERIC, "")
    libc = ctypes.CDLL(None)
    libc.strtod.restype = ctypes.c_double
    libc.strtod.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    # proof that the locale is in force: C's strtod stops at the '.'
    point = locale.localeconv()["decimal_point"]
    print("decimal_point", point, "strtod", libc.strtod(b"1.5", None))
    from kbench.native import api
    table = api.DispatchTable(open(sys.argv[1]).read())
    print("rules", table.rules())
""")


def _german_locale(tmp_path: Path) -> dict[str, str]:
    """An environment whose LC_NUMERIC is de_DE.UTF-8 (compiled into
    tmp_path with localedef when the system has not generated it)."""
    have = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower()
    env = {**os.environ, "LC_ALL": "de_DE.UTF-8"}
    if "de_de.utf8" in have:
        return env
    if not shutil.which("localedef") or not Path("/usr/share/i18n/locales/de_DE").exists():
        if os.environ.get("CI"):
            pytest.fail("localedef and the de_DE locale source are needed (apt: locales)")
        pytest.skip("no de_DE locale and no localedef/locale sources to make one")
    subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(tmp_path / "de_DE.UTF-8")],
                   capture_output=True, check=False)
    if not (tmp_path / "de_DE.UTF-8").exists():
        pytest.fail("localedef could not compile de_DE.UTF-8")
    env["LOCPATH"] = str(tmp_path)
    return env


def _tuned_table() -> dict[str, object]:
    cpu = api.cpu_info()
    return {
        "kbench_dispatch_table": 1, "library_version": api.version(),
        "fingerprint": {"arch": cpu.arch, "cpu_features": list(cpu.features),
                        "sme_vector_bits": cpu.sme_vector_bits, "target": "host"},
        "emulated": False,
        "rules": [{"op": "gemm", "class": {"m_min": 1, "m_max": 1, "n_min": 64, "n_max": 127,
                                           "k_min": 1.0e2, "k_max": 2.5e3},
                   "realization": "gemm_scalar_f32acc", "time_ns": 12345.678,
                   "default_time_ns": 1.5e4, "shapes": ["a"]}],
    }


def test_tuned_table_loads_under_a_comma_decimal_locale(tmp_path: Path) -> None:
    env = _german_locale(tmp_path)
    path = tmp_path / "dispatch.json"
    path.write_text(json.dumps(_tuned_table(), indent=2))
    res = subprocess.run([sys.executable, "-c", LOCALE_PROBE, str(path)], env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    lines = dict(line.split(" ", 1) for line in res.stdout.splitlines())
    assert lines["decimal_point"].startswith(",") and "strtod 1.0" in lines["decimal_point"], \
        res.stdout
    assert lines["rules"] == "1"


@pytest.mark.parametrize("text, ok", [
    ("1", True), ("-0", True), ("12.5e-1", True), ("4611686018427387904", True),
    ("1E+2", True), ("01", False), ("1.", False), (".5", False), ("+1", False),
    ("1e", False), ("-", False), ("1.5.5", False),
])
def test_json_numbers_follow_the_grammar(text: str, ok: bool) -> None:
    table = _tuned_table()
    raw = json.dumps(table).replace('"time_ns": 12345.678', f'"time_ns": {text}')
    assert text in raw
    t = api.DispatchTable(raw)
    if ok:
        assert t.rules() == 1
    else:
        with pytest.raises(KbenchError, match="not valid JSON"):
            t.rules()


def test_json_number_values_decide_rule_matches() -> None:
    """Numbers written as 3.0e0, 1.0 and 1e0 are 3, 1 and 1: the conv rule
    sends a 3x3 stride-1 convolution to the direct kernel (not the default
    order's first choice) and leaves a stride-2 one to the default order."""
    table = _tuned_table()
    table["rules"] = [{"op": "conv2d", "realization": "conv2d_direct_scalar_f32acc",
                       "class": {"kh": 3.0e0, "kw": 3, "stride_h": 1.0, "stride_w": 1e0},
                       "time_ns": 1.25, "shapes": ["a"]}]
    sel = api.Selector(table=api.DispatchTable(json.dumps(table)))
    x = np.ones((1, 6, 6, 2), np.float16)
    w = np.ones((3, 3, 2, 2), np.float16)
    default = api.conv2d(x, w).realization.name
    assert default != "conv2d_direct_scalar_f32acc"
    assert api.conv2d(x, w, selector=sel).realization.name == "conv2d_direct_scalar_f32acc"
    strided = api.ConvParams(stride=(2, 2))
    assert api.conv2d(x, w, None, strided, selector=sel).realization.name == default
