"""Packer conformance of plugin realizations (kbench.harness.packers): with
`--kb-plugin`, every plugin GEMM whose packers kbench can call packs the
same operands into destinations filled with 0x00 and with 0xA5 (bytes that
differ are bytes it leaves unwritten), and a packer that declares a
published layout (ABI 2 rhs_layout, lhs_layout) must produce kbench's own
packing of it byte for byte. Each check is a verdict of the plugin
(suite contracts, catalog packers); a packer that does not conform fails
the run: a packed-B contract violation is a bug, whatever the kernel makes
of it."""

import pytest

from kbench.harness import packers
from kbench.judge.verdict import FAIL, PASS, Verdict


@pytest.mark.contracts
def test_plugin_packers(kb_session, kb_packer):
    spec, realization, declared = kb_packer
    target = kb_session.target(spec)
    # a "<c>vl" layout is in lanes of the vector length the realization runs at: the
    # SVL for SME code, the SVE vector length for SVE code (kb_isa_vector_bits)
    checks = packers.checks_for(target, declared, "native" in realization.bforms,
                                realization.vector_bits)
    assert checks, f"{realization.name}: no packer check applies"
    for c in checks:
        kb_session.record(Verdict(
            case=f"{c.packer}_{c.check}", op="gemm", shape=f"{c.shapes} shapes", kind="packer",
            target=spec, backend=realization.backend, realization=realization.name,
            kernel=realization.kernel, accum=realization.accum, k=0, m=0, n=0, b_form="native",
            vector_bits=realization.vector_bits, status=PASS if c.ok else FAIL,
            message=c.problem or c.note,
            catalog="packers", suite="contracts", plugin=realization.plugin))
    bad = [f"{c.packer} packer, {c.check}: {c.problem}" for c in checks if not c.ok]
    assert not bad, f"{realization.name} on {spec}: " + "; ".join(bad)
