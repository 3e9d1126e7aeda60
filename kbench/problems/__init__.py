"""Problems: what is computed. Shape catalogs (TOML data files in reference/),
the problem descriptions they hold (GEMM and convolution cases), and the
input generators (exact-by-design and real-valued kinds), which attach each
input's float64 reference from kbench.judge.

May import: kbench.errors, kbench.native, kbench.judge."""
