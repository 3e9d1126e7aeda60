"""Runtime detection under emulation: for each QEMU CPU model CI runs on,
the exact CPU features, streaming vector length and set of backends, and
the realization that default dispatch picks (no silent fallback).

The expected feature sets were read under qemu-aarch64 11.1.3. Skipped when
QEMU is not installed, unless KBENCH_REQUIRE_QEMU is set (as in CI)."""

import numpy as np
import pytest
from qemu_gate import needs_qemu

from kbench.native import api, isa
from kbench.native.api import RawProblem
from kbench.targets.spec import parse_target

pytestmark = needs_qemu

ALL = {"fp16", "fhm", "sve", "sve2", "sve2p1", "sme", "sme2"}
SVE21 = ALL - {"sme", "sme2"}  # max with sme=off
MODELS = {
    # spec: (features, SVL bits, SVE vector length bits, ISA cap inside the worker)
    "qemu:cpu=max": (ALL, 256, 512, None),
    "qemu:cpu=max:svl=128": (ALL, 128, 512, None),
    "qemu:cpu=max:svl=256": (ALL, 256, 512, None),
    "qemu:cpu=max:svl=512": (ALL, 512, 512, None),
    "qemu:cpu=max:svl=1024": (ALL, 1024, 512, None),
    "qemu:cpu=max:svl=2048": (ALL, 2048, 512, None),
    "qemu:cpu=max:isa=sme": (ALL, 256, 512, "sme"),
    "qemu:cpu=max:isa=sve2p1": (ALL, 256, 512, "sve2p1"),
    "qemu:cpu=max:sme=off": (SVE21, 0, 512, None),
    "qemu:cpu=max:sme=off:vl=128": (SVE21, 0, 128, None),
    "qemu:cpu=max:sme=off:vl=2048": (SVE21, 0, 2048, None),
    "qemu:cpu=max:svl=512:vl=256": (ALL, 512, 256, None),
    "qemu:cpu=neoverse-v1": ({"fp16", "fhm", "sve"}, 0, 256, None),
    "qemu:cpu=neoverse-n2": ({"fp16", "fhm", "sve", "sve2"}, 0, 128, None),
    "qemu:cpu=neoverse-n1": ({"fp16"}, 0, 0, None),
    "qemu:cpu=cortex-a53": (set(), 0, 0, None),
}
# the class each of our backends needs at least (its lowest kernel)
BACKEND_CLASS = {"scalar": "scalar", "neon": "neon", "sme": "sme", "sve": "sve2p1"}


def expected_backends(features, compiled, cap):
    return [b for b in compiled if isa.IMPLIED[BACKEND_CLASS[b]] <= features
            and isa.within(BACKEND_CLASS[b], cap)]


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    t = parse_target(request.param)
    yield request.param, t
    t.close()


def test_detected_features_and_backends(model):
    spec, target = model
    features, svl, vl, cap = MODELS[spec]
    info = target.info()
    assert info.arch == "aarch64"
    assert set(info.cpu_features) == features
    assert info.sme_vector_bits == svl
    assert info.sve_vector_bits == vl
    assert info.backends == expected_backends(features, info.compiled_backends, cap)
    assert info.isa == ("sme2" if "sme2" in features else "sve2p1" if "sve2p1" in features
                        else "sve2" if "sve2" in features else "fhm" if "fhm" in features
                        else "neon" if "fp16" in features else "scalar")
    if cap is not None:
        assert all(isa.within(r.isa, cap) for r in info.realizations)
        assert info.extra["isa_cap_env"] == cap
    if "sme2" not in features or cap == "sve2p1":
        assert not any(r.isa in ("sme", "sme2") for r in info.realizations)


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
                "qemu:isa=avx", "qemu:frobnicate", "qemu:sme=off:svl=512", "qemu:vl=100",
                "qemu:cpu=neoverse-v1:sme=off", "qemu:sme=off:isa=sme2"):
        with pytest.raises(api.InvalidArgument, match="target"):
            parse_target(bad)


def test_a_selectors_cap_meets_the_workers_kbench_isa_cap():
    """In the worker too the selector's cap and KBENCH_ISA_CAP meet in the tree of
    classes: under isa=sve2p1 a cap of sme leaves fhm (neither SME nor SVE2); without
    a cap of its own the call runs our SVE2.1 GEMM."""
    a = np.ones((4, 8), np.float16)
    b = np.ones((8, 5), np.float16)
    t = parse_target("qemu:cpu=max:isa=sve2p1")
    try:
        for cap, best in (("sme", "fhm"), ("sme2", "fhm"), ("neon", "neon"), (None, "sve2p1")):
            c = np.zeros((4, 5), np.float16)
            res = t.engine.gemm_raw(4, 5, 8, [RawProblem(a, 8, b, 5, c, 5)],
                                    api.Selector(isa_cap=cap))
            assert res.realization.isa == best and (c == 8).all(), (cap, res.realization)
        with pytest.raises(api.KbenchError, match="gemm_sme2"):
            t.engine.gemm_raw(4, 5, 8, [RawProblem(a, 8, b, 5, np.zeros((4, 5), np.float16), 5)],
                              api.Selector(force="gemm_sme2_mopa_f32acc"))
    finally:
        t.close()


def test_kbench_info_shows_the_sve21_only_target():
    """`kbench info --target qemu:sme=off:vl=256`: SVE2.1 and its vector length,
    no SME (the one-line summary a user checks the target by), and JSON alike."""
    import json

    from click.testing import CliRunner

    from kbench.cli.main import main
    res = CliRunner().invoke(main, ["info", "--target", "qemu:sme=off:vl=256"])
    assert res.exit_code == 0, res.output
    lines = dict(line.split(":", 1) for line in res.output.splitlines()[:8] if ":" in line)
    assert lines["target"].strip() == "qemu:cpu=max:sme=off:vl=256 (worker, emulated)"
    assert lines["cpu features"].strip() == "fp16, fhm, sve, sve2, sve2p1"
    assert lines["SVE vector"].strip() == "256 bits"
    assert lines["ISA classes"].strip() == "scalar, neon, fhm, sve2, sve2p1"
    assert lines["highest ISA"].strip() == "sve2p1"
    assert "SME vector" not in res.output and "sme" not in lines["cpu features"]
    res = CliRunner().invoke(main, ["info", "--json", "--target", "qemu:sme=off:vl=256",
                                    "--target", "qemu:svl=512"])
    sve, sme = json.loads(res.output)
    assert (sve["sve_vector_bits"], sve["sme_vector_bits"], sve["isa"]) == (256, 0, "sve2p1")
    assert (sme["sve_vector_bits"], sme["sme_vector_bits"], sme["isa"]) == (512, 512, "sme2")
