pytest_plugins = ["kbench.harness.pytest_plugin"]

from kb_servers import pg_server  # noqa: E402, F401 - session fixture for the suites


def pytest_configure(config):
    config.addinivalue_line("markers", "kb_op(op): parametrize kb_job over cases of this operator")
