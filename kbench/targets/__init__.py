"""Targets: where kernels run. Target specs and the guarded-buffer protocol,
the engines (in-process cffi, the worker over its wire protocol, the
in-process engine inside an emulated aarch64 Python), the plugins each
target loads, the emulated CPython root, cross builds and the tools that
run them (QEMU), and the instruction counter of emulated targets (QEMU
execution logs, ELF symbols, AArch64 instruction classes).

May import: kbench.errors, kbench.native, kbench.judge, kbench.problems,
kbench.peers."""
