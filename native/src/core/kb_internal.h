/* kb_internal.h — declarations shared inside the library (not public). */
#ifndef KB_INTERNAL_H
#define KB_INTERNAL_H

#include "kbench.h"

#include <stdatomic.h>
#include <stdbool.h>

/* A helper kept out of line so that kbench's instruction counter
 * (kbench.targets.counting) can attribute its instructions to a phase of
 * the call (e.g. LHS packing); it costs one call per use, never per element. */
#if defined(__GNUC__)
#define KB_NOINLINE __attribute__((noinline))
#else
#define KB_NOINLINE
#endif

/* KB_ASSUME(cond): a precondition every caller meets (checked at the API:
 * K >= 1, at least one filter tap), told to the compiler so that it emits
 * no code for the case that cannot occur (a zero-trip loop entry no call
 * reaches would be a machine-code path no test can execute). */
#if defined(__clang__)
#define KB_ASSUME(cond) __builtin_assume(cond)
#elif defined(__GNUC__)
#define KB_ASSUME(cond) do { if (!(cond)) __builtin_unreachable(); } while (0)
#else
#define KB_ASSUME(cond) ((void)0)
#endif

/* KB_NOT_DRIVEN(fn, reason): fn, a function of a kernel or packer file, is
 * one kbench's own drivers never call (the public micro-kernel interface:
 * queries and run entry points, for a user's code or a plugin built from
 * the file), with the reason. The record lands in the section kb_not_driven
 * of the binary; `kbench run --coverage` (kbench.targets.coverage) lists
 * such functions apart with their reason instead of as never executed. */
#define KB_PASTE_(a, b) a##b
#define KB_PASTE(a, b) KB_PASTE_(a, b)
#if defined(__GNUC__)
#define KB_NOT_DRIVEN(fn, reason) \
    __attribute__((used, section("kb_not_driven"))) static const char \
    KB_PASTE(kb_not_driven_, __LINE__)[] = __FILE__ "\0" #fn "\0" reason
#else
#define KB_NOT_DRIVEN(fn, reason)
#endif

/* ---- errors -------------------------------------------------------------- */

/* Sets err (if not NULL) and returns code. */
kb_status kb_fail(kb_error *err, kb_status code, const char *field,
                  const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
void kb_clear_error(kb_error *err);

/* ---- CPU ------------------------------------------------------------------ */

/* Does the CPU have what code at this kb_isa level needs? */
bool kb_cpu_has_isa(const kb_cpu_info *cpu, int isa);

/* The vector length code of class isa runs at on this CPU now: the
 * streaming vector length for sme/sme2, the SVE vector length for
 * sve2/sve2p1, 0 for the others. */
uint32_t kb_isa_vector_bits(int isa);

/* ---- checked size arithmetic ---------------------------------------------- */

/* *out = a * b; false on overflow. */
static inline bool kb_mul_ok(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}
static inline bool kb_add_ok(size_t a, size_t b, size_t *out) {
    if (b > SIZE_MAX - a) return false;
    *out = a + b;
    return true;
}
static inline size_t kb_ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* Is p aligned to a (a power of two)? FP16 operands need 2 bytes, packed
 * buffers the alignment of their header (8): reading either through a
 * pointer that is not is undefined behaviour, so entry points refuse it. */
static inline bool kb_aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }
#define KB_PACKED_ALIGN _Alignof(kb_packed_header)

/* ---- FP16 ---------------------------------------------------------------- */

float kb_h2f(kb_f16 h);
kb_f16 kb_f2h(float f); /* round to nearest even, overflow to inf */

/* Clamp then round: the store step every kernel shares. NaN passes through. */
static inline kb_f16 kb_store_f16(float v, float lo, float hi) {
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return kb_f2h(v);
}

/* ---- a view of B, whatever its form -----------------------------------
 * Element (k, n) sits at data[(n / panel_cols) * panel_stride
 *                              + k * row_stride + n % panel_cols].
 * Bias for column n (if bias != NULL) sits at
 *   bias[(n / panel_cols) * bias_panel_stride + n % panel_cols]. */
typedef struct kb_bview {
    const kb_f16 *data;
    size_t panel_cols;
    size_t panel_stride;
    size_t row_stride;
    const kb_f16 *bias;
    size_t bias_panel_stride;
} kb_bview;

/* One GEMM problem after validation, handed to a realization. */
struct kb_gemm_impl;
typedef struct kb_gemm_call {
    size_t M, N, K;
    const kb_f16 *A;
    size_t lda;
    int bform;                       /* KB_BFORM_*                         */
    const kb_f16 *B;                 /* plain B                            */
    size_t ldb;
    const kb_packed_header *bhdr;    /* packed B: header                   */
    const void *bpayload;            /* packed B: payload                  */
    const kb_f16 *bias;              /* separate bias or NULL              */
    kb_f16 *C;
    size_t ldc;
    float clamp_min, clamp_max;
    int threads;
    int one_call;                    /* selector.one_call: one kernel call, 1 thread */
    const struct kb_gemm_impl *impl; /* the realization that runs the call     */
    size_t b_size;                   /* packed B: bytes at the buffer          */
} kb_gemm_call;

/* Plugin realizations (kb_plugin.c): the backend number their impls carry
 * (named "plugin"; never a bit of kb_selector.disabled_backends' range of
 * ours) and the layout a plugin's own packed B stands for in dispatch. */
#define KB_BACKEND_PLUGIN 31
#define KB_LAYOUT_PLUGIN 0x70

/* Builds the view of B for a call whose layout is plain, portable or the
 * scalar native layout. */
void kb_bview_from_call(const kb_gemm_call *c, kb_bview *v);

/* ---- packed layouts --------------------------------------------------- */

#define KB_PORTABLE_BLOCK_N 16
#define KB_SCALAR_NATIVE_BLOCK_N 16
#define KB_NEON_NATIVE_BLOCK_N 16 /* the NEON micro-kernels' tile width */

/* Payload bytes for a layout, or false on overflow / unknown layout. */
bool kb_layout_payload_size(int layout, size_t n, size_t k,
                            uint32_t vector_bits, size_t *bytes);
uint32_t kb_layout_block_n(int layout, uint32_t vector_bits);
int kb_layout_has_bias(int layout);
uint64_t kb_fnv1a64(const void *data, size_t len);
/* The payload checksum (kb_checksum.c; kb_payload_checksum in kbench.h) by
 * one path: the value is the same on every path, only the code differs. A
 * packed buffer is sealed and checked by the path of its backend on this
 * machine (streaming for SME buffers where SME is present). */
enum { KB_CHECKSUM_PORTABLE = 0, KB_CHECKSUM_NEON = 1, KB_CHECKSUM_SME = 2 };
int kb_checksum_path_for(int backend);
int kb_checksum_path_available(int path);
uint64_t kb_payload_checksum_on(int path, const void *data, size_t len);
/* The payload checksum from what a packer accumulated while it wrote the
 * payload (its words in order): s, the sum of the words; t, the sum of the
 * running sums s taken at the start of every 256-byte chunk (before the
 * chunk's words join s); bytes, the payload's size. Every packer that seals
 * computes s and t as it writes, where the words are in its registers.
 * Inline: a packer's file stands alone (the example plugins compile our
 * packers without the rest of the library). */
#define KB_CHECKSUM_CHUNK_BYTES 256u
static inline uint64_t kb_seal_checksum(uint64_t s, uint64_t t, size_t bytes) {
    size_t chunks = bytes / KB_CHECKSUM_CHUNK_BYTES + (bytes % KB_CHECKSUM_CHUNK_BYTES != 0);
    /* the chunks' weighted sum, as the vector loops finish it */
    return chunks ? 2 * ((chunks - 1) * s - t) + s : 0;
}
/* The same in C, a 16-bit value at a time (the portable and scalar packers):
 * pos counts the values written. */
typedef struct kb_seal {
    uint64_t s, t;
    size_t pos;
} kb_seal;
static inline void kb_seal_put(kb_seal *z, uint16_t v) {
    if ((z->pos & 127u) == 0) z->t += z->s; /* a chunk starts: 128 values */
    z->s += (uint64_t)v << (16u * (z->pos & 3u));
    z->pos++;
}

/* A published layout a plugin may declare (kbench_plugin.h, ABI 2): RHS
 * "x16p<NR>x<KR>b" or LHS "x16p<MR>x<KR>"; <NR>/<MR> a number of columns or
 * rows, or "<c>vl" (c times the streaming vector length in 32-bit lanes). */
typedef struct kb_layout_spec {
    uint32_t block;     /* columns (RHS) or rows (LHS) per block, when fixed */
    uint32_t block_vl;  /* c of "<c>vl" (block = c * SVL / 32), 0 when fixed */
    uint32_t kr;        /* k values per group                                */
} kb_layout_spec;
bool kb_layout_parse(const char *name, bool rhs, kb_layout_spec *out);
bool kb_layout_name_ok(const char *name, bool rhs);
/* Panels of bn columns: per panel [bn bias values if with_bias] then K rows
 * of bn values; columns past N (and a NULL bias) are zero. Returns the
 * payload checksum, computed as the values are written. */
uint64_t kb_pack_panels(size_t N, size_t K, const kb_f16 *B, size_t ldb, const kb_f16 *bias,
                        int with_bias, size_t bn, kb_f16 *out);
/* Checks a packed buffer of `size` bytes on its own: header fields, header
 * checksum, payload size against the layout, the buffer's size; with check_nk
 * also N and K against the call. O(1). `who` starts each message ("problem 2",
 * "buffer"). Fills *out with the header (if out != NULL). */
kb_status kb_header_check(const void *buf, size_t size, const char *who, int check_nk,
                          size_t N, size_t K, kb_packed_header *out, kb_error *err);
/* The payload checksum of a buffer whose header passed kb_header_check. O(size). */
kb_status kb_payload_check(const void *buf, const kb_packed_header *h, const char *who,
                           kb_error *err);
/* Fills every header field, the payload checksum the packer computed while it
 * wrote the payload, and the header's own checksum. */
void kb_header_seal(kb_packed_header *h, int layout, int backend,
                    uint32_t vector_bits, size_t n, size_t k, uint32_t flags,
                    size_t payload_size, uint64_t payload_checksum);

/* ---- realizations (the dispatch table) ------------------------------ */

typedef kb_status (*kb_gemm_run_fn)(const kb_gemm_call *c, kb_error *err);

struct kb_conv_impl;
typedef kb_status (*kb_conv_run_fn)(const struct kb_conv_impl *self,
                                    const kb_conv_desc *d, size_t out_h,
                                    size_t out_w, const kb_f16 *input,
                                    const kb_f16 *filter, const kb_f16 *bias,
                                    kb_f16 *output, const kb_selector *sel,
                                    kb_error *err);

typedef struct kb_gemm_impl {
    const char *name;
    int backend;          /* kb_backend                                   */
    const char *kernel;
    int isa;              /* kb_isa needed                                */
    int accum;            /* kb_accum                                     */
    uint32_t k_per_rounding; /* 0 or 1: one rounding per product          */
    uint32_t bforms;      /* KB_BFORM_*                                   */
    int native_layout;    /* kb_layout it consumes as native, 0 if none   */
    uint32_t max_m;       /* shape class: largest M it takes (1 = GEMV), 0 = any */
    int threaded;         /* 1: honours selector.threads                  */
    kb_gemm_run_fn run;
    uint32_t block_m, block_n, block_k; /* cache blocking (0 = none), as reported */
    /* optional: fills parameters known only at run time (e.g. SVL-sized blocks) */
    void (*describe)(kb_realization *r);
    uint32_t error_model; /* KB_ERROR_MODEL_*: GEMM (0) or GEMM_BIAS_FIRST */
    uint32_t nan_clamp;   /* 0: its clamp keeps NaN (ours); a plugin's KB_PLUGIN_NAN_* */
    /* optional: the micro-kernel's m_step, n_step, kr from its queries */
    void (*steps)(uint32_t steps[3]);
} kb_gemm_impl;

typedef struct kb_conv_impl {
    const char *name;
    int backend;
    const char *kernel;
    int isa;
    int accum;
    uint32_t k_per_rounding;
    int threaded;
    kb_conv_run_fn run;
    const struct kb_gemm_impl *gemm; /* the GEMM an im2col realization uses */
    uint32_t max_groups;  /* 0 = any; 1 = groups 1 only (others go elsewhere) */
    uint32_t conv_class;  /* KB_CONV_CLASS_*: shapes it takes */
    uint32_t error_model; /* KB_ERROR_MODEL_* */
    uint32_t nan_clamp;   /* as kb_gemm_impl.nan_clamp */
    void (*describe)(kb_realization *r); /* optional, as for kb_gemm_impl */
    void (*steps)(uint32_t steps[3]);    /* optional, as for kb_gemm_impl (an
                                            im2col realization: its GEMM's) */
} kb_conv_impl;

/* Backend registries: each backend exposes its tables (may be empty). The
 * NEON, SME and SVE backends exist in aarch64 builds only. */
const kb_gemm_impl *const *kb_scalar_gemm_impls(size_t *count);
const kb_conv_impl *const *kb_scalar_conv_impls(size_t *count);
/* The scalar backend's native packer (panels of 16 columns, bias first).
 * Native packers return the payload checksum (kb_seal_checksum), computed
 * while they write; sme2: the CPU runs SME2 and the selector allows it. */
uint64_t kb_scalar_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                               void *dst, int sme2);
#if defined(__aarch64__)
#define KB_HAVE_NEON 1
#define KB_HAVE_SME 1
const kb_gemm_impl *const *kb_neon_gemm_impls(size_t *count);
const kb_conv_impl *const *kb_neon_conv_impls(size_t *count);
const kb_gemm_impl *const *kb_sme_gemm_impls(size_t *count);
const kb_conv_impl *const *kb_sme_conv_impls(size_t *count);
/* Native packers: write the payload of the backend's native layout (bias
 * first in each block, zero padding); the header is written by kb_pack.c. */
uint64_t kb_neon_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                             void *dst, int sme2);
/* Panels of 16 columns in NEON code, K rows of 16 values each, zeros past N
 * (the portable layout; the NEON native one is the same with a bias row
 * first in each panel); returns the payload checksum. */
uint64_t kb_neon_pack_panels16(size_t n, size_t k, const kb_f16 *b, size_t ldb, void *dst);
uint64_t kb_sme_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                            void *dst, int sme2);
#define KB_HAVE_SVE 1
const kb_gemm_impl *const *kb_sve_gemm_impls(size_t *count);
/* The SVE2.1 native layout (x16p4vlx2b at the running SVE vector length);
 * returns the payload checksum (of what it wrote, after writing it). */
uint64_t kb_sve_pack_native(size_t n, size_t k, const kb_f16 *b, size_t ldb, const kb_f16 *bias,
                            void *dst, int sme2);
/* The payload checksum's whole 256-byte chunks in streaming mode (SME only). */
uint64_t kb_sme_payload_chunks(const void *data, size_t chunks);
#endif

/* Current vector length a backend's native layout depends on (0 if none). */
uint32_t kb_backend_vector_bits(int backend);
const char *kb_backend_name(int backend);
int kb_backend_native_layout(int backend);
/* Packs B into a backend's native payload (dst has the payload size) and
 * returns the payload checksum it computed while writing. */
typedef uint64_t (*kb_native_pack_fn)(size_t n, size_t k, const kb_f16 *b, size_t ldb,
                                      const kb_f16 *bias, void *dst, int sme2);

/* Is the backend usable under sel on this CPU? */
bool kb_backend_usable(int backend, const kb_selector *sel,
                       const kb_cpu_info *cpu);

/* Picks the GEMM realization for a call (after argument validation). */
kb_status kb_select_gemm(const kb_selector *sel, int bform, int native_layout,
                         size_t M, size_t N, size_t K, const kb_gemm_impl **out, kb_error *err);
/* The realization a dispatch table names for a shape, or NULL. */
const char *kb_table_gemm_choice(const kb_dispatch_table *t, size_t M, size_t N, size_t K);
const char *kb_table_conv_choice(const kb_dispatch_table *t, const kb_conv_desc *d);
kb_status kb_select_conv(const kb_selector *sel, const kb_conv_desc *d,
                         const kb_conv_impl **out, kb_error *err);
void kb_fill_gemm_realization(const kb_gemm_impl *impl, int threads,
                              kb_realization *r);
void kb_fill_conv_realization(const kb_conv_impl *impl, int threads,
                              kb_realization *r);

/* Backend-generic im2col + GEMM convolution (kb_im2col.c): the loops are
 * written once; the realization names the plain-B GEMM it drives
 * (self->gemm, required). */
kb_status kb_conv_im2col_gemm_run(const kb_conv_impl *self, const kb_conv_desc *d, size_t oh,
                                  size_t ow, const kb_f16 *input, const kb_f16 *filter,
                                  const kb_f16 *bias, kb_f16 *output, const kb_selector *sel,
                                  kb_error *err);

/* ---- calling-convention checks (kb_cc.c) ------------------------------ */

/* One call through the checking trampoline: up to 16 integer or pointer
 * arguments in order (the first 8 on aarch64, 6 on x86_64, in registers,
 * the rest on the stack) and up to 2 float arguments (s0/s1, xmm0/xmm1). */
typedef struct kb_cc_call {
    void *fn;
    uint64_t x[16];
    uint32_t nx;
    uint32_t nf;
    float f[2];
    uint64_t ret;       /* x0 / rax after the call                      */
    uint32_t clobbered; /* a bit per callee-saved register not restored */
    uint32_t pad;
} kb_cc_call;
void kb_cc_invoke(kb_cc_call *c);
/* Nonzero in a checking run (kb_cc_set_checking): kernel and packer calls
 * then go through kb_cc_run. */
int kb_cc_checking(void);
/* Calls fn through the trampoline; a violation is kept (the first of the
 * call, with `what`); returns the callee's x0 / rax. */
uint64_t kb_cc_run(const char *what, void *fn, unsigned nx, const uint64_t *x, unsigned nf,
                   const float *f);
/* KB_OK, or the kept violation as the error of `who`'s call (and cleared):
 * one relaxed load when there is none, so that a production call pays next
 * to nothing. */
extern _Atomic uint32_t kb_cc_first_mask;
kb_status kb_cc_take_violation(const char *who, kb_error *err);
static inline kb_status kb_cc_take(const char *who, kb_error *err) {
    return atomic_load_explicit(&kb_cc_first_mask, memory_order_relaxed) ? kb_cc_take_violation(who, err)
                                                                         : KB_OK;
}
/* The guard mode of scratch (kb_guard_set_mode), read where scratch is taken. */
extern _Atomic int kb_guard_scratch_mode;
static inline int kb_guard_on(void) {
    return atomic_load_explicit(&kb_guard_scratch_mode, memory_order_relaxed);
}

/* ---- scratch --------------------------------------------------------- */

/* Thread-local scratch of at least bytes; NULL when out of memory. GEMM
 * drivers use kb_scratch_get; operator-level drivers that call a GEMM
 * (im2col, indirection tables) use kb_scratch_get_outer. Only the public
 * entry points call kb_scratch_release. */
void *kb_scratch_get(size_t bytes);
void *kb_scratch_get_outer(size_t bytes);
/* In a guard mode (kb_guard_set_mode): one guarded buffer of its own, named
 * for the report of a read past it, freed by kb_scratch_release; NULL when
 * no guard mode is set. */
void *kb_scratch_piece(size_t bytes, size_t allowance, const char *name);
/* Ends a call's use of scratch: frees it if above the retain cap. */
void kb_scratch_release(void);
/* Frees the calling thread's scratch (helper threads, before they exit). */
void kb_scratch_free_thread(void);

/* ---- threads --------------------------------------------------------- */

typedef void (*kb_task_fn)(void *ctx, size_t task);
/* Runs fn(ctx, i) for every i < ntasks on up to `threads` threads, the
 * caller's included; returns how many threads took part. */
int kb_parallel_for(size_t ntasks, int threads, kb_task_fn fn, void *ctx);
/* Threads kb_parallel_for(_slots) uses at most for ntasks tasks (>= 1). */
int kb_parallel_threads(size_t ntasks, int threads);
/* The same loop; fn also gets the slot of the thread running the task,
 * 0 <= slot < kb_parallel_threads(ntasks, threads), one thread per slot. */
typedef void (*kb_slot_task_fn)(void *ctx, size_t task, int slot);
int kb_parallel_for_slots(size_t ntasks, int threads, kb_slot_task_fn fn, void *ctx);

/* ---- streaming state (kb_sme_state.c) ------------------------------- */

/* A helper thread about to end records whether it left streaming mode or
 * ZA on; the next kb_check_sme_state reports it. */
void kb_sme_note_thread_end(void);

#endif /* KB_INTERNAL_H */
