"""The native library from Python: the cffi build script, the loader, the
Python API over the C library (kbench.native.api, re-exported as kbench's
public API), the call-level types every engine speaks (kbench.native.calls)
and models of packed layouts (kbench.native.sme_layout).

May import: kbench.errors."""
