"""ISA classes and their order, as the native library defines them (kbench.h, kb_isa).

The classes form a tree, not a chain: scalar < neon < fhm, and above fhm two
branches, sme < sme2 and sve2 < sve2p1. Each class implies the CPU features of
every class below it. A CPU has a class when it has every feature the class
implies; a class is within a cap when the cap implies every feature the class
does (a cap of sme hides sve2 code, a cap of sve2p1 hides SME code). These
names are the one list of valid values of KBENCH_ISA_CAP, a selector's
isa_cap and a target's isa=CAP; the native library's kb_isa_name spells the
same (suites/test_isa.py checks that the two agree).
"""

from __future__ import annotations

# kb_isa values in order: a class's index is its value (values are never renumbered)
ISA_LEVELS = ("scalar", "neon", "fhm", "sme", "sme2", "sve2", "sve2p1")
NO_CAP = len(ISA_LEVELS)  # KB_ISA_NO_CAP: a selector's cap that admits every class

_FHM = frozenset({"fp16", "fhm"})
# the CPU features (kbench.native.api.CPU_FEATURES names) each class implies
IMPLIED: dict[str, frozenset[str]] = {
    "scalar": frozenset(),
    "neon": frozenset({"fp16"}),
    "fhm": _FHM,
    "sme": _FHM | {"sme"},
    "sme2": _FHM | {"sme", "sme2"},
    "sve2": _FHM | {"sve", "sve2"},
    "sve2p1": _FHM | {"sve", "sve2", "sve2p1"},
}
SME_CLASSES = ("sme", "sme2")
SVE_CLASSES = ("sve2", "sve2p1")


def _known(name: str) -> str:
    if name not in IMPLIED:
        raise ValueError(f"{name!r} is not an ISA class ({', '.join(ISA_LEVELS)})")
    return name


def within(isa: str, cap: str | None) -> bool:
    """May code of class `isa` run under `cap` (None: no cap)?"""
    if cap is None:
        return bool(_known(isa))
    return IMPLIED[_known(isa)] <= IMPLIED[_known(cap)]


def meet(a: str | None, b: str | None) -> str | None:
    """The greatest class within both caps (None: no cap): sme and sve2p1 meet at fhm."""
    if a is None:
        return b if b is None else _known(b)
    if b is None:
        return _known(a)
    common = IMPLIED[_known(a)] & IMPLIED[_known(b)]
    return max((c for c in ISA_LEVELS if IMPLIED[c] <= common), key=lambda c: len(IMPLIED[c]))


def classes_of(features: set[str] | frozenset[str] | tuple[str, ...] | list[str]) -> list[str]:
    """Every class a CPU with these features has, in kb_isa order."""
    have = set(features)
    return [c for c in ISA_LEVELS if IMPLIED[c] <= have]


__all__ = ["IMPLIED", "ISA_LEVELS", "NO_CAP", "SME_CLASSES", "SVE_CLASSES", "classes_of", "meet",
           "within"]
