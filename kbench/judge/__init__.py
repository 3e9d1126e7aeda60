"""Judging results: the float64 oracle, the error models (the GEMM-class
bound and Winograd's own), verdicts, and accumulation-model fingerprints.
Pure numerics on arrays: nothing here runs a kernel.

May import: kbench.errors, kbench.native."""
