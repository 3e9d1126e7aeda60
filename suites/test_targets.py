"""Every chosen target is reachable: one that is not (no connection, no
worker for its architecture, a worker that cannot run) is an error verdict
naming the target and the reason, and the run goes on with the others."""

import pytest


def test_target_available(kb_session, kb_spec):
    verdict = kb_session.unavailable_verdict(kb_spec)
    if verdict is not None:
        kb_session.record(verdict)
        pytest.fail(verdict.message)
