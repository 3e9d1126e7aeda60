"""The emulated aarch64 CPython (kbench.targets.pyroot): kbench's in-process path run
inside Debian's arm64 CPython 3.11 under qemu-aarch64.

The unit tests need neither network nor QEMU. The guest tests start the
guest twice (-cpu max, -cpu neoverse-n1) and are skipped when the emulated
Python is not installed (`python -m kbench.targets.pyroot`), unless
KBENCH_REQUIRE_QEMU_PYTHON=1 (then they fail)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbench.errors import KbenchError
from kbench.native import api
from kbench.targets import pyroot
from kbench.targets.pyroot import PyRoot

REQUIRED = os.environ.get("KBENCH_REQUIRE_QEMU_PYTHON") == "1"
SHAPE = (7, 19, 33)  # M, N, K: off every tile size
BACKENDS = ("scalar", "neon", "sme", "sve")  # the backends of the aarch64 module (-cpu max)


# ---- unit tests: no network, no guest ------------------------------------------------


def test_status_of_an_empty_folder_names_the_fix(tmp_path: Path) -> None:
    ready, why = pyroot.status(tmp_path / "nothing")
    assert ready is None
    assert str(tmp_path / "nothing") in why
    assert "python -m kbench.targets.pyroot" in why


def test_install_folder_follows_kbench_pyroot(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBENCH_PYROOT", str(tmp_path))
    assert pyroot.home_dir() == tmp_path.resolve()
    assert pyroot.layout().root == tmp_path.resolve() / "root"
    ready, why = pyroot.status()
    assert ready is None and str(tmp_path) in why
    monkeypatch.delenv("KBENCH_PYROOT")
    monkeypatch.setenv("KBENCH_TOOLS", str(tmp_path / "tools"))
    assert pyroot.home_dir() == tmp_path.resolve() / "tools" / "aarch64-python"


def _fake_root(home: Path, manifest: str) -> None:
    python = home / "root" / "usr" / "bin" / "python3.11"
    python.parent.mkdir(parents=True)
    python.write_bytes(b"")
    (home / "site").mkdir()
    (home / "manifest.json").write_text(manifest)


def test_status_with_an_unreadable_manifest(tmp_path: Path) -> None:
    _fake_root(tmp_path, "{not json")
    ready, why = pyroot.status(tmp_path)
    assert ready is None and "manifest" in why


def test_status_when_a_host_version_changed(tmp_path: Path) -> None:
    pins = {**pyroot.host_pins(), "numpy": "0.0.1"}
    debs = {d: "1" for d in pyroot.DEBS}
    _fake_root(tmp_path, json.dumps({"format": pyroot.FORMAT, "debs": debs, "pins": pins}))
    ready, why = pyroot.status(tmp_path)
    assert ready is None
    assert f"numpy 0.0.1, the host now has {np.__version__}" in why


def test_status_names_missing_packages(tmp_path: Path) -> None:
    debs = {d: "1" for d in pyroot.DEBS if d != "libffi8"}
    _fake_root(tmp_path, json.dumps({"format": pyroot.FORMAT, "debs": debs}))
    ready, why = pyroot.status(tmp_path)
    assert ready is None and "libffi8" in why


def test_extension_build_names_the_toolchain_script(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBENCH_CLANG", str(tmp_path / "no-such-clang-19"))
    with pytest.raises(KbenchError, match="ci/install-toolchain.sh"):
        pyroot.build_extension(tmp_path, print)


def test_host_pins_follow_the_host() -> None:
    import cffi
    pins = pyroot.host_pins()
    assert pins["numpy"] == np.__version__
    assert pins["cffi"] == cffi.__version__
    assert "pycparser" in pins  # a dependency of cffi, pinned too


def test_argv_and_env(tmp_path: Path) -> None:
    pr = PyRoot(tmp_path / "root", tmp_path / "site", tmp_path / "ext", "_mod")
    assert pr.python == tmp_path / "root" / "usr" / "bin" / "python3.11"
    assert pr.argv("qemu", "neoverse-n1", ["-c", "pass"]) == [
        "qemu", "-cpu", "neoverse-n1", "-L", str(pr.root), str(pr.python), "-c", "pass"]
    base = {"PYTHONHOME": "/h", "VIRTUAL_ENV": "/v", "PYTHONPATH": "/p", "QEMU_CPU": "a64fx",
            "LD_PRELOAD": "x.so", "KBENCH_NATIVE": "kbench._native", "HOME": "/root",
            "KBENCH_ISA_CAP": "neon"}
    env = pr.env(base)
    for gone in ("PYTHONHOME", "VIRTUAL_ENV", "QEMU_CPU", "LD_PRELOAD"):
        assert gone not in env
    assert env["HOME"] == "/root" and env["KBENCH_ISA_CAP"] == "neon"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(pyroot.REPO), str(pr.ext_dir),
                                                   str(pr.site)]
    assert env["KBENCH_NATIVE"] == "_mod"
    assert env["PYTHONNOUSERSITE"] == "1"
    assert not Path(env["PYTHONPYCACHEPREFIX"]).is_relative_to(pyroot.REPO / "kbench")


def _wheel(path: Path, members: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return path


def test_unzip_wheel_folds_purelib_and_drops_scripts(tmp_path: Path) -> None:
    whl = _wheel(tmp_path / "pkg-1.0-py3-none-any.whl", {
        "pkg/__init__.py": "X = 1\n", "pkg-1.0.data/purelib/extra.py": "Y = 2\n",
        "pkg-1.0.data/scripts/tool": "#!/bin/sh\n", "pkg-1.0.dist-info/METADATA": "Name: pkg\n"})
    site = tmp_path / "site"
    site.mkdir()
    pyroot.unzip_wheel(whl, site)
    assert (site / "pkg" / "__init__.py").read_text() == "X = 1\n"
    assert (site / "extra.py").exists()
    assert not (site / "tool").exists() and not (site / "pkg-1.0.data").exists()


def test_unzip_wheel_refuses_a_member_outside_the_folder(tmp_path: Path) -> None:
    whl = _wheel(tmp_path / "bad-1.0-py3-none-any.whl", {"../evil.py": "boom\n"})
    (tmp_path / "site").mkdir()
    with pytest.raises(KbenchError, match="escapes"):
        pyroot.unzip_wheel(whl, tmp_path / "site")
    assert not (tmp_path / "evil.py").exists()


# ---- the installed guest -------------------------------------------------------------


@pytest.fixture(scope="module")
def installed() -> tuple[PyRoot, str]:
    ready, why = pyroot.status()
    qemu = ""
    if ready is not None:
        from kbench.targets.tools import find_qemu
        try:
            qemu = find_qemu()
        except KbenchError as exc:
            ready, why = None, str(exc)
    if ready is None:
        if REQUIRED:
            pytest.fail(f"KBENCH_REQUIRE_QEMU_PYTHON=1 but the emulated Python is not ready: {why}")
        pytest.skip(f"emulated Python not installed: {why}")
    return ready, qemu


@pytest.fixture(scope="module")
def operands(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """Exact-by-design operands (small integers: every backend must match bit
    for bit) and real-valued ones, saved for the guest to read."""
    m, n, k = SHAPE
    rng = np.random.default_rng(20240611)
    ops = {
        "exact_a": rng.integers(-3, 4, (m, k)).astype(np.float16),
        "exact_b": rng.integers(-3, 4, (k, n)).astype(np.float16),
        "exact_bias": rng.integers(-8, 9, n).astype(np.float16),
        "real_a": rng.normal(0, 1, (m, k)).astype(np.float16),
        "real_b": rng.normal(0, 1, (k, n)).astype(np.float16),
        "real_bias": rng.normal(0, 1, n).astype(np.float16),
    }
    path = tmp_path_factory.mktemp("pyroot") / "operands.npz"
    np.savez(path, **ops)
    return path, ops


def only(backend: str) -> api.Selector:
    return api.Selector(disabled=frozenset(set(api.BACKENDS) - {backend}))


GUEST = """
import json, platform, sys, time
t0 = time.perf_counter()
import kbench.targets.inprocess
from kbench import api
t1 = time.perf_counter()
import numpy as np
ops = np.load(sys.argv[1])
out, ran = {}, {}
for backend in api.backends():
    sel = api.Selector(disabled=frozenset(set(api.BACKENDS) - {backend}))
    for kind in ("exact", "real"):
        res = api.gemm(ops[kind + "_a"], ops[kind + "_b"], ops[kind + "_bias"], selector=sel)
        out[f"{backend}_{kind}"] = res.c[0]
        ran[f"{backend}_{kind}"] = [res.realization.name, res.realization.backend]
np.savez(sys.argv[2], **out)
t2 = time.perf_counter()
ort = {}
if sys.argv[3] == "ort":
    import onnx, onnxruntime
    from onnx import TensorProto, helper
    t3 = time.perf_counter()
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["A", "B"], ["C"])], "g",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT16, [2, 3]),
         helper.make_tensor_value_info("B", TensorProto.FLOAT16, [3, 2])],
        [helper.make_tensor_value_info("C", TensorProto.FLOAT16, [2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    sess = onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"])
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    b = np.ones((3, 2), np.float16)
    ort = {"version": onnxruntime.__version__, "import_s": t3 - t2,
           "matmul": sess.run(None, {"A": a, "B": b})[0].tolist()}
info = api.cpu_info()
print(json.dumps({"machine": platform.machine(), "features": list(info.features),
                  "svl": info.sme_vector_bits, "backends": api.backends(), "ran": ran,
                  "import_kbench_engine_s": t1 - t0, "ort": ort}))
"""


def run_guest(installed: tuple[PyRoot, str], cpu: str, operands: Path, tmp: Path,
              with_ort: bool) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    pr, qemu = installed
    out = tmp / f"out-{cpu}.npz"
    argv = pr.argv(qemu, cpu, ["-c", GUEST, str(operands), str(out), "ort" if with_ort else "-"])
    t0 = time.perf_counter()
    res = subprocess.run(argv, env=pr.env(), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, f"guest under -cpu {cpu} failed:\n{res.stderr[-3000:]}"
    report = json.loads(res.stdout.strip().splitlines()[-1])
    report["wall_s"] = time.perf_counter() - t0
    print(f"guest -cpu {cpu}: {report['wall_s']:.1f} s, import kbench.targets.inprocess "
          f"{report['import_kbench_engine_s']:.2f} s", file=sys.stderr)
    with np.load(out) as z:
        return report, {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def guest_max(installed: tuple[PyRoot, str], operands: tuple[Path, dict[str, np.ndarray]],
              tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return run_guest(installed, "max", operands[0], tmp_path_factory.mktemp("gmax"), True)


@pytest.fixture(scope="module")
def guest_n1(installed: tuple[PyRoot, str], operands: tuple[Path, dict[str, np.ndarray]],
             tmp_path_factory: pytest.TempPathFactory
             ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    return run_guest(installed, "neoverse-n1", operands[0], tmp_path_factory.mktemp("gn1"),
                     False)


@pytest.fixture(scope="module")
def host_results(operands: tuple[Path, dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    ops = operands[1]
    out = {}
    for kind in ("exact", "real"):
        res = api.gemm(ops[kind + "_a"], ops[kind + "_b"], ops[kind + "_bias"],
                       selector=only("scalar"))
        assert res.realization.backend == "scalar"
        out[kind] = res.c[0]
    return out


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint16)


def test_ensure_is_fast_when_installed(installed: tuple[PyRoot, str]) -> None:
    said: list[str] = []
    t0 = time.perf_counter()
    pr = pyroot.ensure(said.append)
    assert time.perf_counter() - t0 < 1.0
    assert pr == installed[0]
    assert said and said[0].startswith("up to date")


def test_guest_is_aarch64_with_sme2_under_max(guest_max: tuple[dict[str, Any], Any]) -> None:
    report, _ = guest_max
    assert report["machine"] == "aarch64"
    assert {"fp16", "fhm", "sme", "sme2"} <= set(report["features"])
    assert report["svl"] > 0
    assert set(report["backends"]) == set(BACKENDS)


def test_guest_under_neoverse_n1_has_no_sme(guest_n1: tuple[dict[str, Any], Any]) -> None:
    report, _ = guest_n1
    assert report["machine"] == "aarch64"
    assert "fp16" in report["features"]
    assert not {"sme", "sme2"} & set(report["features"])
    assert report["svl"] == 0
    assert set(report["backends"]) == {"scalar", "neon"}


def test_scalar_gemm_in_the_guest_is_bit_identical_to_the_host(
        guest_max: tuple[dict[str, Any], dict[str, np.ndarray]],
        guest_n1: tuple[dict[str, Any], dict[str, np.ndarray]],
        host_results: dict[str, np.ndarray]) -> None:
    for report, c in (guest_max, guest_n1):
        for kind in ("exact", "real"):
            assert report["ran"][f"scalar_{kind}"][1] == "scalar"
            np.testing.assert_array_equal(bits(c[f"scalar_{kind}"]), bits(host_results[kind]))


@pytest.mark.parametrize("backend", ["neon", "sme"])
def test_arm_backends_in_the_guest(backend: str,
                                   guest_max: tuple[dict[str, Any], dict[str, np.ndarray]],
                                   guest_n1: tuple[dict[str, Any], dict[str, np.ndarray]],
                                   host_results: dict[str, np.ndarray]) -> None:
    runs = [guest_max, guest_n1] if backend == "neon" else [guest_max]
    for report, c in runs:
        name, ran_backend = report["ran"][f"{backend}_exact"]
        assert ran_backend == backend and backend in name
        # exact-by-design inputs: every correct backend matches bit for bit
        np.testing.assert_array_equal(bits(c[f"{backend}_exact"]), bits(host_results["exact"]))
        # real-valued: FP32 accumulation in another order, within one FP16 ulp
        ref = host_results["real"].astype(np.float64)
        got = c[f"{backend}_real"].astype(np.float64)
        assert np.all(np.isfinite(got))
        ulp = np.spacing(np.abs(host_results["real"])).astype(np.float64)
        assert np.all(np.abs(got - ref) <= ulp), f"{name}: more than one ulp from the scalar"


def test_onnxruntime_runs_in_the_guest(guest_max: tuple[dict[str, Any], Any]) -> None:
    ort = guest_max[0]["ort"]
    host = pyroot.host_pins()["onnxruntime"]
    assert host is None or ort["version"] == host  # pinned to the host's version
    assert ort["matmul"] == [[3.0, 3.0], [12.0, 12.0]]
