pytest_plugins = ["kbench.harness.pytest_plugin"]


def pytest_configure(config):
    config.addinivalue_line("markers", "kb_op(op): parametrize kb_job over cases of this operator")
