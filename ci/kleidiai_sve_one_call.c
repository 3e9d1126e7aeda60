/* kleidiai_sve_one_call.c — a one-call harness for counting Arm KleidiAI's
 * SVE2.1 FP16 GEMM (kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot)
 * as its own benchmark and a single-threaded caller run it: one call of its
 * public entry point (the api's run) over the whole M x N x K problem, its C
 * wrapper and its row and column loops included.
 *
 * Built by ci/kleidiai_sve_anchor_table.py against a KleidiAI checkout (the
 * kernel's C file and assembly and kai_common_sve_asm.S) as a static aarch64
 * program; run under qemu-aarch64 with execution logging, the instructions
 * executed inside the kernel's run (the api's entry point, which
 * kbx_one_call calls) are counted, from its entry to its return (the second
 * of two identical calls, as kbench's count engine counts the second call of
 * a warm worker).
 * The inputs are small integers: the kernel takes no data-dependent path.
 *
 *     kleidiai_sve_one_call M N K
 *
 * Only kbench's own code is here: KleidiAI is used through its headers. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "kai/ukernels/matmul/kai_matmul.h"
#include "kai/ukernels/matmul/kai_matmul_types.h"

struct kai_matmul_uker_api kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot(void);

/* One call of the kernel's run over the whole problem. */
__attribute__((noinline, visibility("default"))) void kbx_one_call(const struct kai_matmul_uker_api *api,
                                                                 const struct kai_matmul_uker_config *cfg,
                                                                 const struct kai_matmul_uker_args *args) {
    api->run(cfg, args);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s M N K\n", argv[0]);
        return 2;
    }
    size_t m = strtoull(argv[1], NULL, 10), n = strtoull(argv[2], NULL, 10);
    size_t k = strtoull(argv[3], NULL, 10);
    int vl = prctl(51 /* PR_SVE_GET_VL */);
    if (m == 0 || n == 0 || k == 0 || vl <= 0) {
        fprintf(stderr, "bad shape or no SVE\n");
        return 2;
    }
    size_t nr = (size_t)(vl & 0xffff); /* 4 VL32 columns = the vector length in bytes */
    size_t kp = (k + 1) / 2 * 2, blocks = (n + nr - 1) / nr;
    size_t block_bytes = nr * (1 + kp) * 2; /* bias, then the k pairs (x16p16vsx2b) */
    uint16_t *a = calloc(m * k, 2), *rhs = calloc(blocks * block_bytes / 2, 2), *c = calloc(m * n, 2);
    if (!a || !rhs || !c) return 3;
    for (size_t i = 0; i < m * k; i++) a[i] = 0x3c00;                          /* 1.0 */
    for (size_t i = 0; i < blocks * block_bytes / 2; i++) rhs[i] = 0x3800;     /* 0.5 */
    struct kai_matmul_uker_api api = kai_matmul_clamp_f16_f16_f16p16vsx2bf16_6x16vs_sve2p1_dot();
    struct kai_matmul_uker_config cfg;
    memset(&cfg, 0, sizeof cfg);
    float lo = -__builtin_inff(), hi = __builtin_inff(); /* a call without a clamp, as kbench's */
    struct kai_matmul_uker_args args;
    memset(&args, 0, sizeof args);
    args.flags = KAI_MATMUL_UKER_FLAGS_ARGS_CLAMP;
    args.shape.m = m;
    args.shape.n = n;
    args.shape.k = k;
    args.operand.lhs.ptr = a;
    args.operand.lhs.stride.m = k * 2;
    args.operand.rhs.ptr = rhs;
    args.operand.rhs.stride.n = block_bytes;
    args.operand.dst.ptr = c;
    args.operand.dst.stride.m = n * 2;
    args.activation.clamp.min_ptr = &lo;
    args.activation.clamp.max_ptr = &hi;
    kbx_one_call(&api, &cfg, &args); /* warm-up */
    kbx_one_call(&api, &cfg, &args); /* counted */
    /* every output is bias 0.5 + K * 0.5 * 1.0 (exact in FP16 for the shapes counted) */
    printf("%zu %zu %zu vl=%d c0=0x%04x\n", m, n, k, vl & 0xffff, c[0]);
    return 0;
}
