"""ISA classes: their order (a tree, not a chain), caps, and how a CPU's
hwcaps become features and classes.

The native library and kbench.native.isa each hold the order; here they are
checked against each other pair by pair, and both against the facts: sme and
sve2 are two branches above fhm, a cap on one branch hides the other, and
the AT_HWCAP/AT_HWCAP2 words read under qemu-aarch64 11.1.3
(ci/TOOLCHAIN-NOTES.md) give the features and best class each model has.
Runs on any host (kb_cpu_from_hwcaps is the Linux rule as a pure function)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest

from kbench.errors import InvalidArgument
from kbench.native import api, isa
from kbench.native.loader import load
from kbench.targets.spec import parse_qemu

NAT = load()
VALUES = range(len(isa.ISA_LEVELS))


def test_the_python_names_are_the_libraries_names_in_kb_isa_order() -> None:
    assert isa.ISA_LEVELS == ("scalar", "neon", "fhm", "sme", "sme2", "sve2", "sve2p1")
    names = tuple(NAT.ffi.string(NAT.lib.kb_isa_name(i)).decode() for i in VALUES)
    assert names == isa.ISA_LEVELS == api.ISA_LEVELS
    # existing values keep their numbers: a version-2 plugin's isa reads the same
    assert (NAT.lib.KB_ISA_SCALAR, NAT.lib.KB_ISA_NEON_FP16, NAT.lib.KB_ISA_NEON_FHM,
            NAT.lib.KB_ISA_SME, NAT.lib.KB_ISA_SME2) == (0, 1, 2, 3, 4)
    assert (NAT.lib.KB_ISA_SVE2, NAT.lib.KB_ISA_SVE2P1) == (5, 6)
    assert NAT.lib.KB_ISA_NO_CAP == NAT.lib.KB_ISA_MAX == isa.NO_CAP == 7
    for bad in (-1, isa.NO_CAP, 99):
        assert NAT.lib.kb_isa_name(bad) == NAT.ffi.NULL


@pytest.mark.parametrize("cls, cap, ok", [
    ("sme", "sve2p1", False), ("sme2", "sve2p1", False), ("sve2", "sme2", False),
    ("sve2p1", "sme2", False), ("sve2p1", "sve2", False), ("sme2", "sme", False),
    ("fhm", "neon", False), ("neon", "scalar", False),
    ("sve2", "sve2p1", True), ("fhm", "sve2", True), ("fhm", "sme", True), ("sme", "sme2", True),
    ("scalar", "sve2", True), ("sve2p1", "sve2p1", True), ("sve2p1", None, True),
    ("sme2", None, True)])
def test_a_class_is_within_a_cap_only_on_its_own_branch(cls, cap, ok) -> None:
    assert isa.within(cls, cap) is ok
    c_cap = isa.NO_CAP if cap is None else isa.ISA_LEVELS.index(cap)
    assert NAT.lib.kb_isa_within(isa.ISA_LEVELS.index(cls), c_cap) == int(ok)


def test_the_library_and_python_agree_on_every_pair() -> None:
    caps = [*VALUES, isa.NO_CAP]
    name = {**dict(enumerate(isa.ISA_LEVELS)), isa.NO_CAP: None}
    for a, b in itertools.product(VALUES, caps):
        assert NAT.lib.kb_isa_within(a, b) == int(isa.within(name[a], name[b])), (a, b)
    for a, b in itertools.product(caps, caps):
        met = NAT.lib.kb_isa_meet(a, b)
        assert name[met] == isa.meet(name[a], name[b]), (a, b)
        # the meet is within both, and every class within both is within it
        for c in VALUES:
            both = isa.within(name[c], name[a]) and isa.within(name[c], name[b])
            assert both == isa.within(name[c], name[met]), (a, b, c)


def test_caps_meet_where_their_branches_part() -> None:
    assert isa.meet("sme2", "sve2p1") == "fhm" and isa.meet("sme", "sve2") == "fhm"
    assert isa.meet("sve2p1", "sve2") == "sve2" and isa.meet("sme", "sme2") == "sme"
    assert isa.meet("neon", "sve2p1") == "neon" and isa.meet(None, "sve2") == "sve2"
    assert isa.meet(None, None) is None
    fhm = isa.ISA_LEVELS.index("fhm")
    assert NAT.lib.kb_isa_meet(isa.ISA_LEVELS.index("sme2"), isa.ISA_LEVELS.index("sve2p1")) == fhm


def test_values_that_are_not_classes_are_refused_everywhere() -> None:
    for bad in (-1, 8, 1000):
        assert NAT.lib.kb_isa_within(bad, isa.NO_CAP) == 0
        assert NAT.lib.kb_isa_within(0, bad) == 0
        assert NAT.lib.kb_isa_meet(bad, 0) == -1 and NAT.lib.kb_isa_meet(0, bad) == -1
    with pytest.raises(ValueError, match="not an ISA class"):
        isa.within("sve3", None)
    with pytest.raises(ValueError, match="not an ISA class"):
        isa.meet("fhm", "avx")


# AT_HWCAP, AT_HWCAP2 read under qemu-aarch64 11.1.3 (ci/TOOLCHAIN-NOTES.md): features, best class
HWCAPS = {
    "max": (0xB01FEFFFFFFB, 0x7FFFBFF47FC77FFF,
            {"fp16", "fhm", "sve", "sve2", "sve2p1", "sme", "sme2"}, "sme2"),
    "max,sme=off": (0x1FEFFFFFFB, 0x1FFB81400477FFF,
                    {"fp16", "fhm", "sve", "sve2", "sve2p1"}, "sve2p1"),
    "max,sve=off": (0xB01FEFBFFFFB, 0x7FFF9FE43FC761BD, {"fp16", "fhm", "sme", "sme2"}, "sme2"),
    "neoverse-n2": (0xEFFFFFFB, 0x773FF, {"fp16", "fhm", "sve", "sve2"}, "sve2"),
    "cortex-a710": (0xEFFFFFFB, 0x673FF, {"fp16", "fhm", "sve", "sve2"}, "sve2"),
    "neoverse-v1": (0xCFFFFFFB, 0x13201, {"fp16", "fhm", "sve"}, "fhm"),
    "a64fx": (0x415FFB, 0x0, {"fp16", "sve"}, "neon"),
    "neoverse-n1": (0x119FFB, 0x0, {"fp16"}, "neon"),
    "cortex-a53": (0x8FB, 0x0, set(), "scalar"),
}


def _from_hwcaps(hw: int, hw2: int) -> tuple[set[str], str, list[str]]:
    c = NAT.ffi.new("kb_cpu_info *")
    NAT.lib.kb_cpu_from_hwcaps(hw, hw2, c)
    assert NAT.ffi.string(c.arch).decode() == "aarch64"
    assert c.sme_vector_bits == 0 and c.sve_vector_bits == 0  # lengths are read, not derived
    features = {v for k, v in api.CPU_FEATURES.items() if c.features & k}
    has = [name for i, name in enumerate(isa.ISA_LEVELS) if NAT.lib.kb_cpu_has_class(c, i)]
    return features, isa.ISA_LEVELS[c.isa], has


@pytest.mark.parametrize("model", list(HWCAPS))
def test_hwcaps_become_features_classes_and_the_best_class(model) -> None:
    hw, hw2, features, best = HWCAPS[model]
    got, got_best, has = _from_hwcaps(hw, hw2)
    assert got == features and got_best == best
    assert has == isa.classes_of(features)
    assert ("sve2p1" in has) == (model == "max" or model == "max,sme=off")
    assert ("sme" in has) == ("sme" in features)


@pytest.mark.parametrize("hw, hw2, features, best", [
    # SVE2 and SVE2p1 without SVE: dropped
    (1 << 9 | 1 << 10 | 1 << 23, 1 << 1 | 1 << 36, {"fp16", "fhm"}, "fhm"),
    # SVE2p1 without SVE2: dropped
    (1 << 9 | 1 << 10 | 1 << 23 | 1 << 22, 1 << 36, {"fp16", "fhm", "sve"}, "fhm"),
    # SME2 without SME: dropped
    (1 << 9 | 1 << 10 | 1 << 23, 1 << 37, {"fp16", "fhm"}, "fhm"),
    # FHM without FP16 (ASIMDHP missing): neither
    (1 << 9 | 1 << 23, 0, set(), "scalar"),
    # SVE2 and SME without FHM: features kept, but no class above neon
    (1 << 9 | 1 << 10 | 1 << 22, 1 << 1 | 1 << 23, {"fp16", "sve", "sve2", "sme"}, "neon"),
])
def test_features_that_need_others_are_dropped_without_them(hw, hw2, features, best) -> None:
    got, got_best, has = _from_hwcaps(hw, hw2)
    assert got == features and got_best == best
    assert has == isa.classes_of(features) and has[-1] == best


def test_the_best_class_prefers_smes_branch_when_a_cpu_has_both() -> None:
    fhm = 1 << 9 | 1 << 10 | 1 << 23 | 1 << 22
    _, best, has = _from_hwcaps(fhm, 1 << 1 | 1 << 36 | 1 << 23)  # SVE2.1 and SME (no SME2)
    assert best == "sme" and {"sme", "sve2", "sve2p1"} <= set(has)
    _, best, _ = _from_hwcaps(fhm, 1 << 1 | 1 << 36)
    assert best == "sve2p1"


def test_a_selectors_cap_meets_kbench_isa_cap() -> None:
    """KBENCH_ISA_CAP and a selector's cap both hold: their meet, not the smaller
    number (sme is 3 and sve2p1 6, yet neither admits the other)."""
    code = ("from kbench.native import api; from kbench.native.loader import load; "
            "nat = load(); "
            "print(*[api.Selector(isa_cap=c).to_c(nat)[0].isa_cap "
            "for c in ('sme', 'sve2', 'scalar')], api.Selector().to_c(nat)[0].isa_cap)")
    env = {**os.environ, "KBENCH_ISA_CAP": "sve2p1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert [isa.ISA_LEVELS[int(v)] for v in out] == ["fhm", "sve2", "scalar", "sve2p1"]
    env["KBENCH_ISA_CAP"] = ""
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert [int(v) for v in out] == [3, 5, 0, isa.NO_CAP]


def test_a_cap_that_is_not_a_class_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidArgument, match="selector.isa_cap: 'sve3' is not one of .*sve2p1"):
        api.Selector(isa_cap="sve3").to_c(NAT)


# ---- the SVE2.1-only target's spec -------------------------------------------------


@pytest.mark.parametrize("spec, name, cpu", [
    ("qemu:sme=off", "qemu:cpu=max:sme=off", "max,sme=off"),
    ("qemu:sme=off:vl=256", "qemu:cpu=max:sme=off:vl=256",
     "max,sme=off,sve-default-vector-length=32"),
    ("qemu:vl=2048:sme=off:cpu=max", "qemu:cpu=max:sme=off:vl=2048",
     "max,sme=off,sve-default-vector-length=256"),
    ("qemu:vl=128:svl=512", "qemu:cpu=max:svl=512:vl=128",
     "max,sme-default-vector-length=64,sve-default-vector-length=16"),
    ("qemu:sme=off:isa=sve2", "qemu:cpu=max:sme=off:isa=sve2", "max,sme=off"),
    ("qemu:sme=on", "qemu:cpu=max", "max"),
    ("qemu-python:sme=off:vl=512", "qemu-python:cpu=max:sme=off:vl=512",
     "max,sme=off,sve-default-vector-length=64"),
])
def test_sme_off_and_the_sve_vector_length_are_cpu_properties(spec, name, cpu) -> None:
    q = parse_qemu(spec)
    assert q.name == name and q.qemu_cpu == cpu
    assert parse_qemu(q.name) == q  # the canonical name reads back as the same target


@pytest.mark.parametrize("spec, words", [
    ("qemu:sme=no", "sme must be on or off"),
    ("qemu:cpu=neoverse-n2:sme=off", "sme=off needs cpu=max"),
    ("qemu:sme=off:svl=512", "svl= sets the SME streaming vector length"),
    ("qemu:sme=off:fa64=off", "sme=off leaves no SME"),
    ("qemu:sme=off:isa=sme2", "isa=sme2 caps at an SME class"),
    ("qemu:sme=off:isa=sme", "isa=sme caps at an SME class"),
    ("qemu:vl=100", "vl must be one of (128, 256, 512, 1024, 2048) bits"),
    ("qemu:vl=4096", "vl must be one of"),
    ("qemu:vl=", "expected cpu=MODEL, sme=off"),
    ("qemu:cpu=neoverse-v1:vl=256", "vl= needs cpu=max"),
    ("qemu:isa=sve3", "isa must be one of scalar, neon, fhm, sme, sme2, sve2, sve2p1"),
    ("qemu:cpu=neoverse-v2", "cpu 'neoverse-v2' is not one of"),  # not a model QEMU 11.1.3 has
])
def test_bad_sve_target_specs_are_one_line_naming_the_target(spec, words) -> None:
    with pytest.raises(InvalidArgument) as exc:
        parse_qemu(spec)
    assert exc.value.field == "target" and words in str(exc.value)
    assert "\n" not in str(exc.value)
