"""Runtime detection under emulation: for each QEMU CPU model CI runs on,
the exact CPU features, streaming vector length and set of backends, and
the realization that default dispatch picks (no silent fallback).

The expected feature sets were read under qemu-aarch64 11.1.3. Skipped when
QEMU is not installed, unless KBENCH_REQUIRE_QEMU is set (as in CI)."""

import numpy as np
import pytest
from qemu_gate import needs_qemu

from kbench.native import api
from kbench.native.api import RawProblem
from kbench.targets.spec import parse_target

pytestmark = needs_qemu

ALL = {"fp16", "fhm", "sve", "sme", "sme2"}
MODELS = {
    # spec: (features, SVL bits, ISA cap inside the worker)
    "qemu:cpu=max": (ALL, 256, None),
    "qemu:cpu=max:svl=128": (ALL, 128, None),
    "qemu:cpu=max:svl=256": (ALL, 256, None),
    "qemu:cpu=max:svl=512": (ALL, 512, None),
    "qemu:cpu=max:svl=1024": (ALL, 1024, None),
    "qemu:cpu=max:svl=2048": (ALL, 2048, None),
    "qemu:cpu=max:isa=sme": (ALL, 256, "sme"),
    "qemu:cpu=neoverse-v1": ({"fp16", "fhm", "sve"}, 0, None),
    "qemu:cpu=neoverse-n1": ({"fp16"}, 0, None),
    "qemu:cpu=cortex-a53": (set(), 0, None),
}
NEEDS = {"scalar": set(), "neon": {"fp16"}, "sme": {"sme"}}
ISA_RANK = {name: i for i, name in enumerate(api.ISA_LEVELS)}


def expected_backends(features, compiled, cap):
    out = []
    for b in compiled:
        if not NEEDS[b] <= features:
            continue
        if cap is not None and ISA_RANK[b] > ISA_RANK[cap]:  # backend names are ISA levels
            continue
        out.append(b)
    return out


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    t = parse_target(request.param)
    yield request.param, t
    t.close()


def test_detected_features_and_backends(model):
    spec, target = model
    features, svl, cap = MODELS[spec]
    info = target.info()
    assert info.arch == "aarch64"
    assert set(info.cpu_features) == features
    assert info.sme_vector_bits == svl
    assert info.backends == expected_backends(features, info.compiled_backends, cap)
    if cap is not None:
        assert all(ISA_RANK[r.isa] <= ISA_RANK[cap] for r in info.realizations)
        assert info.extra["isa_cap_env"] == cap
    if "sme2" not in features:
        assert not any(r.isa == "sme2" for r in info.realizations)


def test_default_dispatch_reports_the_best_usable_realization(model):
    spec, target = model
    info = target.info()
    a = np.ones((4, 8), np.float16)
    b = np.ones((8, 5), np.float16)
    c = np.zeros((4, 5), np.float16)
    res = target.engine.gemm_raw(4, 5, 8, [RawProblem(a, 8, b, 5, c, 5)])
    gemms = [r for r in info.realizations if r.op == "gemm" and "plain" in r.bforms
             and (not r.max_m or r.max_m >= 4)]
    assert res.realization.name == gemms[0].name  # the table's first usable entry for M = 4
    assert (c == 8).all()


def test_unknown_model_and_bad_svl_are_refused():
    for bad in ("qemu:cpu=pentium", "qemu:cpu=neoverse-n1:svl=512", "qemu:svl=100",
                "qemu:isa=avx", "qemu:frobnicate"):
        with pytest.raises(api.InvalidArgument, match="target"):
            parse_target(bad)
