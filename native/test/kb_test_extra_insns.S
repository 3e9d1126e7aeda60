/* kb_test_extra_insns.S — TEST ONLY: the deterministic "extra instructions"
 * knob of the count gate. Never part of the library or the production
 * worker: kbench.targets.crossbuild links it into a separate worker
 * (build/worker/aarch64-extra<N>/) with --wrap=kb_sme_gemm_mopa_run, so
 * every call of the SME MOPA GEMM driver first runs exactly
 *     1 (mov) + 2 * KB_EXTRA_ITERS (subs, b.ne) + 1 (b)
 * more instructions, inside the counted call and outside the kernel. */
#ifndef KB_EXTRA_ITERS
#error "KB_EXTRA_ITERS (loop iterations, 1..65535) must be defined"
#endif
    .text
    .p2align 2
    .globl __wrap_kb_sme_gemm_mopa_run
    .type __wrap_kb_sme_gemm_mopa_run, %function
__wrap_kb_sme_gemm_mopa_run:
    mov x9, #KB_EXTRA_ITERS
1:  subs x9, x9, #1
    b.ne 1b
    b __real_kb_sme_gemm_mopa_run
    .size __wrap_kb_sme_gemm_mopa_run, . - __wrap_kb_sme_gemm_mopa_run
