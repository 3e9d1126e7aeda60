/* extest.c — a small test program of the kind a kernel library ships with
 * its kernels: it checks a few outputs of one GEMM and nothing else.
 *
 *     extest LIBRARY [REALIZATION]
 *
 * It loads a plugin library (kbench's plugin ABI, native/include/kbench_plugin.h),
 * takes the named realization (default: the first micro-kernel GEMM with a
 * packed LHS), packs B with its bias and A with the realization's own
 * packers, runs its micro-kernel once per m_step band of one GEMM (M = 8,
 * N = 24, K = 16, small integers, so every correct kernel is exact) and
 * compares four outputs with a direct computation. Exit status 0: the four
 * match; 1: one does not; 2: the library cannot be loaded or has no such
 * realization.
 *
 * It is the external test of `kbench mutate --external-test` in CI and on
 * the mutation page (docs/mutation.md): a test that checks four outputs of
 * one shape, to set beside kbench's suites on the same machine-code
 * mutants. It is meant to be weak; do not take it as a model. */
#include "kbench_plugin.h"

#include "../common/exfp16.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M 8
#define N 24
#define K 16

static const kb_plugin_realization *pick(const kb_plugin *p, const char *name) {
    for (size_t i = 0; i < p->count; i++) {
        const kb_plugin_realization *r = &p->realizations[i];
        int gemm = r->op == KB_OP_GEMM && r->form == KB_PLUGIN_MICRO_KERNEL && r->matmul &&
                   r->matmul->run_matmul && r->matmul->lhs_pack;
        if (name ? strcmp(r->name, name) == 0 : gemm)
            return gemm ? r : NULL;
    }
    return NULL;
}

static int value(size_t i, size_t j, size_t mod) { return (int)((i * 3 + j * 7) % mod) - (int)(mod / 2); }

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: extest LIBRARY [REALIZATION]\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "extest: %s\n", dlerror());
        return 2;
    }
    kb_plugin_entry_fn entry = (kb_plugin_entry_fn)dlsym(lib, KB_PLUGIN_ENTRY_SYMBOL);
    const kb_plugin *p = entry ? entry(KB_PLUGIN_ABI_VERSION) : NULL;
    const kb_plugin_realization *r = p ? pick(p, argc == 3 ? argv[2] : NULL) : NULL;
    if (!r) {
        fprintf(stderr, "extest: %s has no micro-kernel GEMM with a packed LHS%s%s\n", argv[1],
                argc == 3 ? " named " : "", argc == 3 ? argv[2] : "");
        return 2;
    }
    const kb_plugin_matmul_ukernel *uk = r->matmul;
    uint16_t a[M * K], b[K * N], bias[N], c[M * N];
    float want[M][N];
    for (size_t i = 0; i < M; i++)
        for (size_t k = 0; k < K; k++) a[i * K + k] = ex_f2h((float)value(i, k, 5));
    for (size_t k = 0; k < K; k++)
        for (size_t j = 0; j < N; j++) b[k * N + j] = ex_f2h((float)value(k, j, 7));
    for (size_t j = 0; j < N; j++) bias[j] = ex_f2h((float)(j % 3));
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            float s = ex_h2f(bias[j]);
            for (size_t k = 0; k < K; k++) s += ex_h2f(a[i * K + k]) * ex_h2f(b[k * N + j]);
            want[i][j] = s;
        }
    size_t mr = uk->get_mr(), nr = uk->get_nr(), kr = uk->get_kr(), sr = uk->get_sr();
    size_t m_step = uk->get_m_step();
    void *lhs = calloc(1, uk->lhs_get_packed_size(M, K, mr, kr, sr));
    void *rhs = calloc(1, uk->rhs_get_packed_size(N, K));
    if (!lhs || !rhs || !m_step) {
        fprintf(stderr, "extest: out of memory or m_step 0\n");
        return 2;
    }
    uk->lhs_pack(M, K, mr, kr, sr, 0, a, K * sizeof a[0], lhs);
    uk->rhs_pack(1, N, K, nr, kr, sr, N * sizeof b[0], b, bias, NULL, rhs, 0, NULL);
    memset(c, 0xff, sizeof c);
    for (size_t m0 = 0; m0 < M; m0 += m_step) {
        size_t rows = M - m0 < m_step ? M - m0 : m_step;
        uk->run_matmul(rows, N, K, (const char *)lhs + uk->get_lhs_packed_offset(m0, K),
                       (const char *)rhs + uk->get_rhs_packed_offset(0, K),
                       (char *)c + uk->get_dst_offset(m0, 0, N * sizeof c[0]), N * sizeof c[0],
                       sizeof c[0], -INFINITY, INFINITY);
    }
    /* four outputs: the first, one inside, one in the last column, the last */
    static const size_t checks[4][2] = {{0, 0}, {3, 5}, {5, N - 1}, {M - 1, N - 1}};
    int bad = 0;
    for (size_t t = 0; t < 4; t++) {
        size_t i = checks[t][0], j = checks[t][1];
        float got = ex_h2f(c[i * N + j]);
        if (got != want[i][j]) {
            printf("extest: %s.%s: C[%zu][%zu] = %g, expected %g\n", p->name, r->name, i, j, got,
                   want[i][j]);
            bad = 1;
        }
    }
    if (!bad) printf("extest: %s.%s: 4 outputs of a %dx%dx%d GEMM match\n", p->name, r->name, M, N, K);
    free(lhs);
    free(rhs);
    return bad;
}
