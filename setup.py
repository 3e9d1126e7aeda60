# The project is described in pyproject.toml; setup.py only hands the cffi
# extension (built by kbench/native/build.py) to setuptools.
from setuptools import setup

setup(cffi_modules=["kbench/native/build.py:ffibuilder"])
