/* kb_gemm.c — the GEMM entry point: validates every argument and the
 * packed-B contract, picks a realization, runs it, reports it. Nothing is
 * written to any C before every problem of the batch has been validated.
 * The contract's cost in a call is O(1): the header is checked against the
 * call and the CPU; the payload checksum (O(size)) is verified where a
 * buffer is made or loaded (kb_verify_packed_b), or in the call when the
 * selector sets verify_payload. */
#include "kb_internal.h"
#include "kb_plugin.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FIELD(buf, i, name) (snprintf((buf), sizeof(buf), "problems[%zu].%s", (size_t)(i), (name)), (buf))

/* Checks that rows x ld elements of FP16 have a byte count that fits. */
static bool span_ok(size_t rows, size_t cols, size_t ld) {
    size_t s;
    return kb_mul_ok(rows - 1, ld, &s) && kb_add_ok(s, cols, &s) && kb_mul_ok(s, sizeof(kb_f16), &s);
}

static kb_status check_clamp(size_t i, float lo, float hi, kb_error *err) {
    char f[KB_FIELD_LEN];
    if (isnan(lo)) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "clamp_min"), "is NaN");
    if (isnan(hi)) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "clamp_max"), "is NaN");
    if (lo > hi)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "clamp_min"), "%g is greater than clamp_max %g", lo, hi);
    return KB_OK;
}

/* Validates a packed B against the call and the running CPU: O(1), the
 * header only, unless the selector asks for the payload checksum too. */
static kb_status check_packed(size_t i, const kb_gemm_problem *p, size_t N, size_t K,
                              const kb_selector *sel, const kb_cpu_info *cpu,
                              const kb_packed_header **hdr_out, kb_error *err) {
    char f[KB_FIELD_LEN];
    char who[40];
    snprintf(who, sizeof who, "problem %zu", i);
    kb_packed_header hc;
    kb_status st = kb_header_check(p->B, p->b_size, who, 1, N, K, &hc, err);
    if (st != KB_OK) return st;
    int native = hc.layout != KB_LAYOUT_PORTABLE;
    if (native != (p->b_is_backend_native_packed != 0))
        return kb_fail(err, KB_ERR_CONTRACT, FIELD(f, i, "b_is_backend_native_packed"),
                       "is %d but the buffer holds the %s layout", p->b_is_backend_native_packed,
                       native ? "backend-native" : "portable");
    if (native) {
        if (sel->disabled_backends & (1u << hc.backend))
            return kb_fail(err, KB_ERR_CONTRACT, "B.backend", "problem %zu: buffer belongs to backend %s, which the selector disables",
                           i, kb_backend_name(hc.backend));
        if (!kb_backend_usable(hc.backend, sel, cpu))
            return kb_fail(err, KB_ERR_CONTRACT, "B.backend", "problem %zu: buffer belongs to backend %s, which this CPU or the ISA cap does not allow",
                           i, kb_backend_name(hc.backend));
        if (kb_backend_native_layout(hc.backend) != hc.layout)
            return kb_fail(err, KB_ERR_CONTRACT, "B.layout", "problem %zu: layout %u is not the native layout of backend %s", i,
                           hc.layout, kb_backend_name(hc.backend));
        uint32_t vb = kb_backend_vector_bits(hc.backend);
        if (hc.vector_bits != vb)
            return kb_fail(err, KB_ERR_CONTRACT, "B.vector_bits", "problem %zu: packed for a %u-bit vector length, the CPU runs at %u bits",
                           i, hc.vector_bits, vb);
        if (p->bias)
            return kb_fail(err, KB_ERR_CONTRACT, FIELD(f, i, "bias"),
                           "must be NULL: the backend-native buffer carries its bias inside");
    }
    if (sel->verify_payload && (st = kb_payload_check(p->B, &hc, who, err)) != KB_OK) return st;
    *hdr_out = (const kb_packed_header *)p->B;
    return KB_OK;
}

/* Does a packed B carry the header of one of this library's own layouts? (A
 * table that routes a shape to a plugin still sends such a B to our realizations.) */
static bool ours_packed(const kb_gemm_problem *p) {
    kb_packed_header h;
    if (p->b_size < sizeof h) return false;
    memcpy(&h, p->B, sizeof h);
    return h.magic == KB_PACK_MAGIC && h.layout >= KB_LAYOUT_PORTABLE && h.layout <= KB_LAYOUT_SVE_X16P4VLX2B;
}

kb_status kb_gemm_batch(size_t M, size_t N, size_t K, const kb_gemm_problem *problems,
                        size_t batch, const kb_selector *sel, kb_realization *ran,
                        kb_error *err) {
    kb_clear_error(err);
    if (ran) memset(ran, 0, sizeof *ran);
    if (M == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "M", "must be positive, got 0");
    if (N == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "N", "must be positive, got 0");
    if (K == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "K", "must be positive, got 0");
    if (!problems) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "problems", "is NULL");
    if (batch == 0) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "batch", "must be positive, got 0");
    kb_selector def;
    if (!sel) { kb_selector_default(&def); sel = &def; }
    if (sel->isa_cap < KB_ISA_SCALAR || sel->isa_cap > KB_ISA_NO_CAP)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "selector.isa_cap", "%d is not an ISA class or KB_ISA_NO_CAP", sel->isa_cap);
    if (sel->threads < 0)
        return kb_fail(err, KB_ERR_INVALID_ARGUMENT, "selector.threads", "%d is negative", sel->threads);
    kb_cpu_info cpu;
    kb_cpu_detect(&cpu);

    /* Pass 1: validate everything. A plugin realization that packs its own B
     * (forced, or its table's choice for this shape) receives such a B as it
     * is: its bytes are its own. */
    char f[KB_FIELD_LEN];
    int bform = 0, native_layout = 0;
    const kb_plugin_gemm_impl *own_b = kb_plugin_own_packed_b(
        sel, sel->force ? sel->force : sel->table ? kb_table_gemm_choice(sel->table, M, N, K) : NULL);
    for (size_t i = 0; i < batch; i++) {
        const kb_gemm_problem *p = &problems[i];
        if (!p->A) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "A"), "is NULL");
        if (!p->B) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "B"), "is NULL");
        if (!p->C) return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "C"), "is NULL");
        if (!kb_aligned(p->A, sizeof(kb_f16)))
            return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "A"), "is not aligned to 2 bytes");
        if (!kb_aligned(p->C, sizeof(kb_f16)))
            return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "C"), "is not aligned to 2 bytes");
        if (!kb_aligned(p->bias, sizeof(kb_f16)))
            return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "bias"), "is not aligned to 2 bytes");
        if (!kb_aligned(p->B, p->b_is_packed ? KB_PACKED_ALIGN : sizeof(kb_f16)))
            return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "B"), "is not aligned to %zu bytes",
                           p->b_is_packed ? (size_t)KB_PACKED_ALIGN : sizeof(kb_f16));
        if (p->lda < K)
            return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "lda"), "%zu is smaller than K = %zu", p->lda, K);
        if (p->ldc < N)
            return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "ldc"), "%zu is smaller than N = %zu", p->ldc, N);
        if (!span_ok(M, K, p->lda))
            return kb_fail(err, KB_ERR_OVERFLOW, FIELD(f, i, "lda"), "M * lda * 2 bytes overflow size_t");
        if (!span_ok(M, N, p->ldc))
            return kb_fail(err, KB_ERR_OVERFLOW, FIELD(f, i, "ldc"), "M * ldc * 2 bytes overflow size_t");
        kb_status st = check_clamp(i, p->clamp_min, p->clamp_max, err);
        if (st != KB_OK) return st;
        int form;
        if (!p->b_is_packed) {
            if (p->b_is_backend_native_packed)
                return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "b_is_backend_native_packed"),
                               "is set but b_is_packed is not");
            if (p->ldb < N)
                return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "ldb"), "%zu is smaller than N = %zu", p->ldb, N);
            if (!span_ok(K, N, p->ldb))
                return kb_fail(err, KB_ERR_OVERFLOW, FIELD(f, i, "ldb"), "K * ldb * 2 bytes overflow size_t");
            form = KB_BFORM_PLAIN;
        } else if (own_b && p->b_is_backend_native_packed && (sel->force || !ours_packed(p))) {
            if (p->b_size == 0)
                return kb_fail(err, KB_ERR_CONTRACT, "B.size", "problem %zu: 0 bytes of packed B", i);
            form = KB_BFORM_NATIVE;
            native_layout = KB_LAYOUT_PLUGIN;
        } else {
            const kb_packed_header *h = NULL;
            st = check_packed(i, p, N, K, sel, &cpu, &h, err);
            if (st != KB_OK) return st;
            form = h->layout == KB_LAYOUT_PORTABLE ? KB_BFORM_PORTABLE : KB_BFORM_NATIVE;
            if (form == KB_BFORM_NATIVE) {
                if (native_layout && native_layout != h->layout)
                    return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "B"), "native layout differs from problem 0's");
                native_layout = h->layout;
            }
        }
        if (bform && bform != form)
            return kb_fail(err, KB_ERR_INVALID_ARGUMENT, FIELD(f, i, "b_is_packed"),
                           "every problem of a batch must pass B in the same form");
        bform = form;
    }

    const kb_gemm_impl *impl;
    kb_status st = kb_select_gemm(sel, bform, native_layout, M, N, K, &impl, err);
    if (st != KB_OK) return st;

    /* Pass 2: run. */
    for (size_t i = 0; i < batch; i++) {
        const kb_gemm_problem *p = &problems[i];
        kb_gemm_call c;
        memset(&c, 0, sizeof c);
        c.M = M; c.N = N; c.K = K;
        c.A = p->A; c.lda = p->lda;
        c.bform = bform;
        if (bform == KB_BFORM_PLAIN) {
            c.B = (const kb_f16 *)p->B;
            c.ldb = p->ldb;
        } else if (native_layout == KB_LAYOUT_PLUGIN) {
            c.bpayload = p->B; /* the plugin realization's own bytes */
        } else {
            c.bhdr = (const kb_packed_header *)p->B;
            c.bpayload = (const unsigned char *)p->B + sizeof(kb_packed_header);
        }
        c.b_size = p->b_size;
        c.impl = impl;
        c.bias = p->bias;
        c.C = p->C; c.ldc = p->ldc;
        c.clamp_min = p->clamp_min; c.clamp_max = p->clamp_max;
        c.threads = sel->threads > 0 && !sel->one_call ? sel->threads : 1;
        c.one_call = sel->one_call != 0;
        st = impl->run(&c, err);
        if (st == KB_OK) st = kb_cc_take(impl->name, err); /* a checking run's ABI check */
        if (st != KB_OK) {
            kb_scratch_release();
            return st;
        }
    }
    kb_scratch_release();
    kb_fill_gemm_realization(impl, sel->threads, ran);
    return KB_OK;
}
