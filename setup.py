# The project is described in pyproject.toml; setup.py only hands the cffi
# extension (built by kbench/_build.py) to setuptools.
from setuptools import setup

setup(cffi_modules=["kbench/_build.py:ffibuilder"])
