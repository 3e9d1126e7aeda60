pytest_plugins = ["kbench.harness.pytest_plugin", "kb_mutmut_order"]

from kb_servers import pg_server  # noqa: E402, F401 - session fixture for the suites


def pytest_configure(config):
    config.addinivalue_line("markers", "kb_op(op): parametrize kb_job over cases of this operator")


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _kbench_runs_write_no_report(monkeypatch):
    """`kbench run` started by a test writes no HTML report unless the test
    asks for one (KBENCH_RUN_REPORT=1, --report): the report has tests of
    its own, and building it after each of the suites' many runs would only
    cost time."""
    monkeypatch.setenv("KBENCH_RUN_REPORT", "0")
