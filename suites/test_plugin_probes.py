"""Contract probes of realizations that pack their own B (kbench.harness.probes):
every plugin GEMM with its own packed B is called with a B packed for another
N or K, without the bias the call passes, and truncated; and every realization
that packs its own B (ours and plugins') with a B packed at one vector length
and called at another, both ways, on a target whose worker can switch it. Each
finding (refused, accepted and correct, silently wrong, crashed, not
applicable) is a verdict. A plugin's misuse findings are recorded without
failing the run unless --kb-strict-plugins is given; a silently wrong result
across vector lengths, or on the valid call every probe makes first, fails."""

import pytest

from kbench.harness import probes
from kbench.judge.verdict import PASS, SKIP


@pytest.mark.contracts
def test_plugin_probe(kb_session, kb_probe):
    spec, realization, probe = kb_probe
    target = kb_session.probe_target(spec) if realization.is_plugin else kb_session.target(spec)
    svl, sve_vl = kb_session.vector_lengths(spec)
    result = probes.run_probe(target.engine, realization, probe, spec, svl, sve_vl)
    verdict = result.verdict()
    kb_session.record(verdict)
    if verdict.status == SKIP:
        pytest.skip(verdict.message)
    if (verdict.status != PASS and realization.is_plugin and not kb_session.strict_plugins
            and not probes.is_vl_probe(probe) and not result.detail.startswith("a valid call")):
        # a finding about that plugin's checks of misuse, like a peer's: recorded, not a
        # failed run
        pytest.xfail(f"plugin {realization.plugin}: {verdict.line()}")
    assert verdict.status == PASS, verdict.line()
