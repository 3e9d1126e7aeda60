"""With a tuned dispatch table (--kb-dispatch; `kbench run --dispatch FILE`
adds this suite): every case runs unforced and must be computed by the
realization the table names. Without a table its one test is skipped and
says so."""

import pytest

from kbench.harness.runner import run_job
from kbench.judge.verdict import MISTRUSTED, PASS
from kbench.native.api import Selector


@pytest.mark.correctness
def test_dispatch_table(kb_session, kb_dispatch_job):
    """With --kb-dispatch: the case runs unforced under the table and must be
    computed by the realization the table names (or, for a shape no rule
    covers, by the default order's first choice)."""
    job = kb_dispatch_job
    target = kb_session.target(job.target)
    sel = Selector(table=kb_session.table)
    verdict = run_job(target, job, sel, cache=kb_session.inputs, force=False)
    verdict.suite = "dispatch"  # the same case also runs forced: not the same verdict
    kb_session.record(verdict)
    if verdict.status == MISTRUSTED:
        pytest.xfail(f"mistrusted: {verdict.message}")
    table = kb_session.table.path if kb_session.table is not None else ""
    assert verdict.status == PASS, (f"{verdict.line()}\n  reproduce: "
                                    f"{kb_session.reproducer(verdict)} --dispatch {table}")
