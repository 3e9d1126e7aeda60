/*
 * kbench.h — the one public header of the kbench native library.
 *
 * FP16 GEMM and 2-D convolution with several backends (scalar reference,
 * NEON FP16, SME/SME2, SVE2.1) behind one dispatch table. Every entry point returns
 * a kb_status and, on failure, fills a kb_error with a message that names
 * the offending field. No entry point writes any output when it fails.
 *
 * Values of type kb_f16 are raw IEEE 754 binary16 bit patterns.
 */
#ifndef KBENCH_H
#define KBENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KB_VERSION_MAJOR 0
#define KB_VERSION_MINOR 1
#define KB_VERSION_PATCH 0

typedef uint16_t kb_f16;

/* ---- status and errors ------------------------------------------------ */

typedef enum kb_status {
    KB_OK = 0,
    KB_ERR_INVALID_ARGUMENT = 1, /* bad dimension, stride, pointer, flag    */
    KB_ERR_CONTRACT = 2,         /* packed-B contract violated               */
    KB_ERR_UNSUPPORTED = 3,      /* nothing enabled can run this request     */
    KB_ERR_OUT_OF_MEMORY = 4,
    KB_ERR_OVERFLOW = 5,         /* a byte count does not fit in size_t      */
    KB_ERR_INTERNAL = 6
} kb_status;

#define KB_FIELD_LEN 64
#define KB_MESSAGE_LEN 256

typedef struct kb_error {
    int code;                     /* a kb_status                            */
    char field[KB_FIELD_LEN];     /* e.g. "problems[1].ldc", "B.checksum"   */
    char message[KB_MESSAGE_LEN]; /* human-readable, names the field        */
} kb_error;

const char *kb_status_name(int status);

/* ---- backends, ISA levels, realizations ------------------------------- */

typedef enum kb_backend {
    KB_BACKEND_SCALAR = 0,
    KB_BACKEND_NEON = 1,
    KB_BACKEND_SME = 2,
    KB_BACKEND_SVE = 3,  /* SVE2.1 (non-streaming), at the SVE vector length */
    KB_BACKEND_COUNT = 4
} kb_backend;

/* ISA classes. They are not a chain but a tree: scalar < neon < fhm, and
 * above fhm two branches, sme < sme2 and sve2 < sve2p1. Each class implies
 * the CPU features of every class below it (sve2p1: FP16, FHM, SVE, SVE2,
 * SVE2p1; sme2: FP16, FHM, SME, SME2). A CPU has a class when it has all the
 * features the class implies (kb_isa_within with the CPU's features); a
 * class is within a selector's cap when the cap implies every feature the
 * class does: a cap of sme hides sve2 kernels, a cap of sve2p1 hides SME
 * ones. Values are never renumbered (plugins declare them): new classes are
 * appended. */
typedef enum kb_isa {
    KB_ISA_SCALAR = 0,
    KB_ISA_NEON_FP16 = 1,  /* FEAT_FP16 arithmetic on Advanced SIMD     */
    KB_ISA_NEON_FHM = 2,   /* + FEAT_FHM (FMLAL/FMLAL2)                  */
    KB_ISA_SME = 3,        /* fhm + FEAT_SME                             */
    KB_ISA_SME2 = 4,       /* + FEAT_SME2                                */
    KB_ISA_SVE2 = 5,       /* fhm + FEAT_SVE + FEAT_SVE2 (no SME)        */
    KB_ISA_SVE2P1 = 6,     /* + FEAT_SVE2p1                              */
    KB_ISA_COUNT = 7,      /* classes are 0 .. KB_ISA_COUNT - 1          */
    KB_ISA_NO_CAP = 7,     /* as a selector's cap: no cap                */
    KB_ISA_MAX = 7         /* the older spelling of KB_ISA_NO_CAP        */
} kb_isa;

/* A class's name as KBENCH_ISA_CAP and kbench's Python side spell it
 * ("scalar", "neon", "fhm", "sme", "sme2", "sve2", "sve2p1"); NULL for a
 * value that is not a class. */
const char *kb_isa_name(int isa);

/* 1 if code of class isa may run under cap (isa's implied features are a
 * subset of cap's; cap KB_ISA_NO_CAP admits every class), else 0; 0 when
 * either is not a class. */
int kb_isa_within(int isa, int cap);

/* The greatest class within both caps (KB_ISA_NO_CAP if both are; sme and
 * sve2p1 meet at fhm); -1 when either is neither a class nor KB_ISA_NO_CAP. */
int kb_isa_meet(int cap_a, int cap_b);

typedef enum kb_accum {
    KB_ACCUM_FP32 = 0,     /* products exact, sums rounded to binary32   */
    KB_ACCUM_FP16 = 1      /* sums rounded to binary16                   */
} kb_accum;

typedef enum kb_op { KB_OP_GEMM = 0, KB_OP_CONV2D = 1 } kb_op;

/* Convolution shape classes a realization takes. */
#define KB_CONV_CLASS_ANY 0u
#define KB_CONV_CLASS_3X3_S1 1u   /* 3x3 kernel, stride 1, dilation 1 */

/* Error models: GEMM class (DESIGN.md) or Winograd F(2x2,3x3) (its
 * transforms add roundings and magnify magnitudes; see the kernel file). */
#define KB_ERROR_MODEL_GEMM 0u
#define KB_ERROR_MODEL_WINOGRAD_F2X2_3X3 1u
/* GEMM class with the bias at the start of the accumulation chain (the
 * accumulator is loaded with it, exactly): no rounding for the bias, so
 * K' = ceil(K / k_per_rounding). */
#define KB_ERROR_MODEL_GEMM_BIAS_FIRST 2u

/* Forms of B a GEMM realization accepts (bit set). */
#define KB_BFORM_PLAIN    1u
#define KB_BFORM_PORTABLE 2u
#define KB_BFORM_NATIVE   4u

#define KB_NAME_LEN 96

/* What ran (or what can run). */
typedef struct kb_realization {
    char name[KB_NAME_LEN];  /* unique realization name                  */
    char backend[16];        /* "scalar", "neon", "sme", "sve"           */
    char kernel[KB_NAME_LEN];/* micro-kernel name                        */
    int op;                  /* kb_op                                    */
    int isa;                 /* kb_isa needed                            */
    int accum;               /* kb_accum                                 */
    uint32_t k_per_rounding; /* products summed exactly per rounding     */
    uint32_t bforms;         /* KB_BFORM_* accepted (GEMM)               */
    uint32_t max_m;          /* GEMM: largest M it takes, 0 = any        */
    uint32_t max_groups;     /* conv: largest groups it takes, 0 = any   */
    uint32_t conv_class;     /* conv: KB_CONV_CLASS_* it takes           */
    uint32_t error_model;    /* KB_ERROR_MODEL_* it declares             */
    /* Cache blocking of the loop around the micro-kernel (0 = none: the
     * whole dimension in one block). K blocks carry their partial sums at
     * the accumulator's precision, so blocking changes no bit. Where the
     * driver sizes blocks itself (SME: K chunks by a scratch budget), the
     * values it uses at this vector length are reported. */
    uint32_t block_m;        /* output rows per block                    */
    uint32_t block_n;        /* output columns per block                 */
    uint32_t block_k;        /* K values per accumulation block          */
    uint32_t vector_bits;    /* vector length it ran at, 0 if none       */
    int threads;             /* threads used                             */
    uint32_t nan_clamp;      /* what its clamp makes of a NaN: 0 keeps it
                                (ours), 1 clamp_min, 2 clamp_max (a plugin's
                                KB_PLUGIN_NAN_* declaration)             */
    /* The micro-kernel's steps, from its own queries (get_m_step,
     * get_n_step, get_kr) at this vector length: rows and columns of C per
     * call, K values interleaved in its packed RHS. 0 where it has none
     * (the scalar reference, direct and Winograd convolution; a plugin's
     * come with its description). Filled by kb_list_realizations; a
     * call's record of what ran leaves them 0. */
    uint32_t m_step;
    uint32_t n_step;
    uint32_t kr;
} kb_realization;

/* ---- CPU ---------------------------------------------------------------- */

#define KB_CPU_FP16    (1u << 0)  /* FEAT_FP16 (scalar + SIMD arithmetic) */
#define KB_CPU_FHM     (1u << 1)
#define KB_CPU_SVE     (1u << 2)
#define KB_CPU_SME     (1u << 3)
#define KB_CPU_SME2    (1u << 4)
#define KB_CPU_SVE2    (1u << 5)  /* FEAT_SVE2 (HWCAP2 bit 1)             */
#define KB_CPU_SVE2P1  (1u << 6)  /* FEAT_SVE2p1 (HWCAP2 bit 36)          */

typedef struct kb_cpu_info {
    char arch[16];           /* "x86_64", "aarch64", ...                 */
    uint32_t features;       /* KB_CPU_*                                 */
    uint32_t sme_vector_bits;/* streaming vector length, 0 without SME   */
    int isa;                 /* the best kb_isa this CPU has: the top of
                                the SME branch when it has SME, else of
                                the SVE branch, else of the chain below
                                (it may have classes of both branches:
                                kb_cpu_has_class tells)                  */
    uint32_t sve_vector_bits;/* SVE vector length (non-streaming), 0
                                without SVE                              */
} kb_cpu_info;

/* 1 if the CPU has every feature the class implies, else 0. */
int kb_cpu_has_class(const kb_cpu_info *cpu, int isa);

/* The features and best class of a Linux aarch64 CPU from its AT_HWCAP and
 * AT_HWCAP2 words (what kb_cpu_detect does there; vector lengths are left
 * 0): public so that the rules can be checked on any host. */
void kb_cpu_from_hwcaps(uint64_t hwcap, uint64_t hwcap2, kb_cpu_info *out);

void kb_cpu_detect(kb_cpu_info *out);

/* 1 if this build of the library holds kernels of the backend (whether or
 * not the running CPU can use them). */
int kb_backend_compiled(int backend);

/* ---- dispatch tables ----------------------------------------------------
 * A tuned table maps shape classes to realizations (JSON written by
 * `kbench tune`). Loading checks that it was tuned on this library version
 * and this machine (architecture, CPU features, SVL) and refuses it
 * otherwise, naming the field. A selector that points at a table follows
 * it for every call whose shape a rule covers (a forced realization still
 * wins); other shapes use the default order. */

typedef struct kb_dispatch_table kb_dispatch_table;

kb_status kb_load_dispatch_table(const char *json, size_t len, kb_dispatch_table **out,
                                 kb_error *err);
void kb_free_dispatch_table(kb_dispatch_table *table);
size_t kb_dispatch_table_rules(const kb_dispatch_table *table);

/* ---- selector ---------------------------------------------------------- */

typedef struct kb_selector {
    uint32_t disabled_backends; /* bit (1 << kb_backend) disables one   */
    int isa_cap;                /* kb_isa; KB_ISA_NO_CAP for no cap      */
    const char *force;          /* realization name or NULL              */
    int threads;                /* 0 or 1: single-threaded               */
    int verify_payload;         /* 1: also verify a packed B's payload   *
                                 * checksum in the call (O(size); off by  *
                                 * default, see kb_verify_packed_b)      */
    const kb_dispatch_table *table; /* tuned choices, or NULL           */
    int plugins;                /* 1: realizations of loaded plugins take part
                                   (listing, forcing, tables); 0 by default */
    int one_call;               /* 1: a GEMM's micro-kernel runs as one call
                                   over the whole problem, single threaded (the
                                   whole LHS packed first), as a single-threaded
                                   caller and KleidiAI's own benchmark call it:
                                   a plugin's run_matmul and kbench's SME MOPA
                                   micro-kernel alike; 0 by default */
} kb_selector;

/* Fills *sel with the defaults (everything enabled, no cap, no force).
 * The environment variable KBENCH_ISA_CAP (scalar, neon, fhm, sme, sme2,
 * sve2, sve2p1) sets the default cap; it is read once per process, on first
 * use. */
void kb_selector_default(kb_selector *sel);

/* Realizations the running CPU offers under sel (NULL = defaults).
 * Writes up to cap entries and returns how many there are in all. */
size_t kb_list_realizations(const kb_selector *sel, kb_realization *out,
                            size_t cap);

/* ---- GEMM ---------------------------------------------------------------
 * C[M,N] = clamp(A[M,K] * B[K,N] + bias[N], clamp_min, clamp_max)
 * Every problem in a batch shares M, N, K. No C may share memory with any
 * operand the call reads (A, B, bias) or with another problem's C: kernels
 * read inputs while they write outputs (the Python API refuses such calls). */

typedef struct kb_gemm_problem {
    const kb_f16 *A; size_t lda;
    const void *B;   size_t ldb;    /* ldb ignored when B is packed        */
    size_t b_size;                  /* bytes at B; required when packed    */
    kb_f16 *C;       size_t ldc;
    const kb_f16 *bias;             /* N values or NULL                    */
    float clamp_min, clamp_max;
    int b_is_packed;
    int b_is_backend_native_packed;
} kb_gemm_problem;

kb_status kb_gemm_batch(size_t M, size_t N, size_t K,
                        const kb_gemm_problem *problems, size_t batch,
                        const kb_selector *sel, kb_realization *ran,
                        kb_error *err);

/* ---- packed B -----------------------------------------------------------
 * A packed buffer is a kb_packed_header followed by the payload. */

#define KB_PACK_MAGIC 0x4b50424bu /* "KBPK" little endian */
/* Version 2: the payload checksum is kb_payload_checksum (version 1 sealed
 * it with FNV-1a; such a buffer is refused: repack it). */
#define KB_PACK_VERSION 2

typedef enum kb_layout {
    KB_LAYOUT_PORTABLE = 1,        /* panels of 16 columns, no bias        */
    KB_LAYOUT_SCALAR_F16P16X1B = 2,/* scalar native: panels of 16, bias in */
    KB_LAYOUT_NEON = 3,            /* NEON native: blocks of 16, bias in    */
    KB_LAYOUT_SME_X16P2VLX2B = 4,  /* SME native: 2VL blocks, k pairs, bias */
    KB_LAYOUT_SVE_X16P4VLX2B = 5   /* SVE2.1 native: 4VL blocks (SVE VL), k pairs, bias */
} kb_layout;

typedef struct kb_packed_header {
    uint32_t magic;
    uint16_t version;
    uint16_t header_size;
    uint16_t layout;          /* kb_layout                              */
    uint16_t backend;         /* owning kb_backend (portable: scalar)   */
    uint32_t vector_bits;     /* vector length at pack time, 0 if none  */
    uint64_t n;
    uint64_t k;
    uint32_t flags;           /* KB_PACK_FLAG_*                         */
    uint32_t block_n;         /* columns per panel                      */
    uint64_t payload_size;    /* bytes after the header                 */
    uint64_t payload_checksum;/* kb_payload_checksum of the payload     */
    uint64_t header_checksum; /* FNV-1a 64 of the header, this field 0  */
} kb_packed_header;

#define KB_PACK_FLAG_BIAS 1u

/* Portable layout. */
kb_status kb_pack_b_size(size_t N, size_t K, size_t *size, kb_error *err);
kb_status kb_pack_b(size_t N, size_t K, const kb_f16 *B, size_t ldb,
                    void *dst, size_t dst_size, kb_error *err);

/* The payload checksum of packed buffers (version 2): the payload read as
 * little-endian 64-bit words w_i (the last one zero-padded), in chunks of
 * 32 words (256 bytes), chunk c = i / 32 weighted by the odd 2c + 1:
 * sum of (2 * (i / 32) + 1) * w_i modulo 2^64. The same value whatever
 * vector length, backend or machine computes it. */
uint64_t kb_payload_checksum(const void *data, size_t len);

/* Verifies a packed buffer on its own, payload included: the header's
 * fields and checksum, sizes, and the payload checksum (O(size)). Calls
 * check only the header (O(1)) unless the selector sets verify_payload:
 * verify a buffer once where it is loaded or received. */
kb_status kb_verify_packed_b(const void *buf, size_t size, kb_error *err);

/* Reads and checks a packed buffer of `size` bytes as kb_verify_packed_b
 * does (magic, version, both checksums, a known layout and backend, block
 * width and payload size consistent with N and K, the payload within size)
 * and copies its header to *out; nothing about the running CPU is checked
 * (kb_gemm_batch does that). O(size): it verifies the payload checksum. */
kb_status kb_describe_packed(const void *buf, size_t size, kb_packed_header *out,
                             kb_error *err);

/* A backend's native layout (bias inside; bias may be NULL = zeros). */
kb_status kb_pack_b_native_size(int backend, size_t N, size_t K,
                                const kb_selector *sel, size_t *size,
                                kb_error *err);
kb_status kb_pack_b_native(int backend, size_t N, size_t K, const kb_f16 *B,
                           size_t ldb, const kb_f16 *bias, void *dst,
                           size_t dst_size, const kb_selector *sel,
                           kb_error *err);

/* ---- convolution --------------------------------------------------------
 * NHWC input [n][h][w][c_in], HWIO filter [kh][kw][c_in/groups][c_out],
 * NHWC output [n][out_h][out_w][c_out]. The output must not share memory
 * with the input, filter or bias (direct and Winograd kernels read the input
 * while they write the output). */

typedef struct kb_conv_desc {
    size_t n, h, w, c_in, c_out;
    size_t kh, kw;
    size_t stride_h, stride_w;
    size_t pad_top, pad_bottom, pad_left, pad_right;
    size_t dil_h, dil_w;
    size_t groups;
    float clamp_min, clamp_max;
} kb_conv_desc;

kb_status kb_conv2d_output_shape(const kb_conv_desc *d, size_t *out_h,
                                 size_t *out_w, kb_error *err);

kb_status kb_conv2d(const kb_conv_desc *d, const kb_f16 *input,
                    const kb_f16 *filter, const kb_f16 *bias, kb_f16 *output,
                    const kb_selector *sel, kb_realization *ran,
                    kb_error *err);

/* ---- timing -------------------------------------------------------------
 * A native timer around the kernel: warm-up calls, then `rounds` timed
 * rounds of `reps` calls each, reps calibrated so that a round lasts at
 * least min_round_ns (capped at max_reps). With cold = 1 every round is one
 * call after writing a cache-sized buffer, so no operand is cached.
 * round_ns[i] receives the time of one call in round i (nanoseconds). */

typedef struct kb_timing {
    uint32_t warmup;
    uint32_t rounds;        /* >= 1 */
    uint64_t min_round_ns;  /* 0: max_reps calls per round (1 if max_reps is 0) */
    uint32_t max_reps;      /* cap on calibrated calls per round (0: 1,000,000) */
    int cold;
} kb_timing;

kb_status kb_time_gemm(size_t M, size_t N, size_t K, const kb_gemm_problem *problems,
                       size_t batch, const kb_selector *sel, const kb_timing *t,
                       double *round_ns, uint32_t *reps_per_round, kb_realization *ran,
                       kb_error *err);
kb_status kb_time_conv(const kb_conv_desc *d, const kb_f16 *input, const kb_f16 *filter,
                       const kb_f16 *bias, kb_f16 *output, const kb_selector *sel,
                       const kb_timing *t, double *round_ns, uint32_t *reps_per_round,
                       kb_realization *ran, kb_error *err);
/* Times packing B into a backend's native layout (backend < 0: portable). */
kb_status kb_time_pack_b(int backend, size_t N, size_t K, const kb_f16 *B, size_t ldb,
                         const kb_f16 *bias, void *dst, size_t dst_size,
                         const kb_selector *sel, const kb_timing *t, double *round_ns,
                         uint32_t *reps_per_round, kb_error *err);
/* Monotonic nanoseconds. */
uint64_t kb_now_ns(void);

/* Bytes of scratch the calling thread retains between calls. */
size_t kb_scratch_retained_bytes(void);
#define KB_SCRATCH_RETAIN_CAP ((size_t)8 << 20)

/* ---- plugins --------------------------------------------------------------
 * External kernels from shared libraries that implement the plugin ABI
 * (kbench_plugin.h). kb_plugin_load checks the file before anything in it
 * runs -- its architecture, the entry symbol, the ABI version, every declared
 * field, and the ISA each realization needs against this CPU -- and on failure
 * names the file and the reason (field "plugin"). A plugin stays loaded for
 * the life of the process (loading the same file again returns it). Its
 * realizations are named "<plugin>.<realization>", report the backend
 * "plugin", take part only under a selector with `plugins` set, and come after
 * every realization of this library in the default order: they run when
 * forced or named by a dispatch table, never as a silent default. A GEMM call
 * forcing a realization that packs its own B passes a backend-native packed B
 * (b_is_packed and b_is_backend_native_packed set, b_size bytes) to it as it
 * is: the whole-call form checks it itself, the micro-kernel form behind a
 * kbench header that kbench checks. A build without dlopen (the static
 * worker) refuses every plugin with KB_ERR_UNSUPPORTED. */

#define KB_PLUGIN_NAME_LEN 32
#define KB_PLUGIN_VERSION_LEN 32
#define KB_PLUGIN_PATH_LEN 512
#define KB_PLUGIN_NOTE_LEN 160
#define KB_LAYOUT_NAME_LEN 24
#define KB_PLUGIN_EXPECT_LEN 256

typedef struct kb_plugin_info {
    char name[KB_PLUGIN_NAME_LEN];
    char version[KB_PLUGIN_VERSION_LEN];
    char path[KB_PLUGIN_PATH_LEN];   /* the file as loaded (absolute)            */
    char description[KB_PLUGIN_NOTE_LEN];
    uint32_t abi_version;            /* the plugin ABI it was built against      */
    uint32_t realizations;           /* declared                                 */
    uint32_t usable;                 /* of those, the ones this CPU can run      */
} kb_plugin_info;

typedef struct kb_plugin_realization_info {
    char name[KB_NAME_LEN];          /* "<plugin>.<realization>"                 */
    int op;                          /* kb_op                                    */
    int form;                        /* 1: whole call, 2: micro-kernel            */
    int isa;                         /* kb_isa it needs                          */
    int thread_safe;
    int bias_first;                  /* 1: the accumulator starts from the bias   */
    int usable;                      /* 0: this CPU lacks its ISA (see note)      */
    char note[KB_PLUGIN_NOTE_LEN];
    int nan_clamp;                   /* KB_PLUGIN_NAN_* it declares (ABI 2)       */
    char rhs_layout[KB_LAYOUT_NAME_LEN]; /* declared packed-B layout, "" if none  */
    char lhs_layout[KB_LAYOUT_NAME_LEN]; /* declared packed-LHS layout, "" if none */
    /* a usable micro-kernel GEMM's own blocking (its get_mr, get_nr, get_kr
     * at this vector length; 0 otherwise) */
    uint32_t mr, nr, kr;
    /* its declarations (ABI 3; kbench_plugin.h): KB_PLUGIN_PACK_* and
     * KB_PLUGIN_SCRATCH_CAPPED flags, bytes it may read past the end of each
     * operand (KB_PLUGIN_OPERAND_*), the scratch it may keep after a call
     * (per thread, with the flag), and its expected symbols, space-separated */
    uint32_t flags;
    uint32_t overread[8];
    uint64_t scratch_cap;
    char expect_symbols[KB_PLUGIN_EXPECT_LEN];
} kb_plugin_realization_info;

kb_status kb_plugin_load(const char *path, kb_plugin_info *info, kb_error *err);
size_t kb_plugin_count(void);
kb_status kb_plugin_get(size_t index, kb_plugin_info *info, kb_error *err);
kb_status kb_plugin_realization_get(size_t plugin, size_t index,
                                    kb_plugin_realization_info *out, kb_error *err);
/* Where a loaded plugin realization's code starts, for tools that attribute
 * executed instructions to it (kbench's instruction counter): one entry per
 * function of its table that does work, with the phase it is counted under
 * ("kernel": gemm, conv2d, run_matmul, run_matmul_lhs, run_imatmul;
 * "pack_lhs": lhs_pack; "pack_rhs": pack_b, rhs_pack) and the table field's
 * name. Query functions (get_*) are not listed: they count as kbench's own
 * code around the plugin. *count is set to the number of entries, of which
 * at most `cap` are written. */
typedef struct kb_plugin_code_entry {
    const char *phase;
    const char *field;
    uint64_t address;
} kb_plugin_code_entry;
#define KB_PLUGIN_MAX_CODE_ENTRIES 8
kb_status kb_plugin_code_entries(size_t plugin, size_t index, kb_plugin_code_entry *out,
                                 size_t cap, size_t *count, kb_error *err);
/* B packed by a plugin realization's own packer (whole-call form: its bytes;
 * micro-kernel form: kbench header + the RHS packer's bytes). */
kb_status kb_pack_b_plugin_size(const char *realization, size_t N, size_t K, size_t *size,
                                kb_error *err);
kb_status kb_pack_b_plugin(const char *realization, size_t N, size_t K, const kb_f16 *B,
                           size_t ldb, const kb_f16 *bias, void *dst, size_t dst_size,
                           kb_error *err);
/* A (M x K, rows lda elements apart) packed by the LHS packer of a plugin
 * realization of the micro-kernel form that packs its LHS (its lhs_pack's
 * bytes, as the kernel would see them): for checking the packer. */
kb_status kb_pack_lhs_plugin_size(const char *realization, size_t M, size_t K, size_t *size,
                                  kb_error *err);
kb_status kb_pack_lhs_plugin(const char *realization, size_t M, size_t K, const kb_f16 *A,
                             size_t lda, void *dst, size_t dst_size, kb_error *err);
kb_status kb_time_pack_b_plugin(const char *realization, size_t N, size_t K, const kb_f16 *B,
                                size_t ldb, const kb_f16 *bias, void *dst, size_t dst_size,
                                const kb_timing *t, double *round_ns,
                                uint32_t *reps_per_round, kb_error *err);
/* ---- streaming state (SME) ----------------------------------------------
 * SME kernels enter streaming mode and enable ZA themselves and must leave
 * both off on return (SVCR.SM = SVCR.ZA = 0): on a CPU without
 * FEAT_SME_FA64 the next NEON instruction would trap. kb_check_sme_state
 * reads SVCR on the calling thread (and what helper threads of earlier
 * calls found when they ended); if anything was left on it switches it off
 * and returns KB_ERR_INTERNAL naming "SVCR". KB_OK on CPUs without SME.
 * The worker and the in-process engine call it after every call. */
kb_status kb_check_sme_state(kb_error *err);

/* ---- input guard pages (checking runs) ------------------------------------
 * For correctness runs in a worker: a buffer a kernel reads, placed so that
 * it ends flush against an inaccessible page (KB_GUARD_END) or starts right
 * after one (KB_GUARD_START), the rest of its mapping FP16 NaN poison. With
 * a mode set, the library's own drivers take their scratch (packed LHS and
 * RHS, indirection tables, padding rows) the same way, one guarded buffer
 * each. A read into a guard page faults; kb_guard_describe (safe inside a
 * signal handler) names the buffer and the offset. Not for production
 * calls: every guarded buffer is a mapping of its own. */
#define KB_GUARD_OFF 0
#define KB_GUARD_END 1
#define KB_GUARD_START 2
void kb_guard_set_mode(int mode);
int kb_guard_mode(void);
/* allowance: in KB_GUARD_END mode, bytes after the buffer (NaN poison) that
 * may be read before the guard page (a plugin's declared overread). */
void *kb_guard_alloc(size_t size, size_t align, int mode, size_t allowance, const char *name);
void kb_guard_name(const void *data, const char *name);
void kb_guard_free(void *data);
int kb_guard_describe(const void *addr, char *out, size_t len);

/* Checking runs: every kernel and packer call (plugins' and ours) goes
 * through a trampoline that fills the callee-saved registers with canaries
 * and checks them after the call (aarch64: x19..x29, d8..d15, FPCR;
 * x86_64: rbx, rbp, r12..r15, MXCSR, the x87 control word); a call that
 * does not restore one fails with KB_ERR_INTERNAL, field "ABI", naming the
 * register and the call. Off by default: production calls call directly. */
void kb_cc_set_checking(int on);
/* How many calls this process has made through the trampoline. */
uint64_t kb_cc_checked_calls(void);
/* The call the trampoline is in on this thread ("its gemm", "its rhs_pack",
 * ...), or NULL; safe to read in a signal handler (a fault's report). */
const char *kb_cc_current_call(void);

/* ---- misc ----------------------------------------------------------------*/

const char *kb_version(void);
/* Round-trip helpers used by tests. */
float kb_f16_to_f32(kb_f16 h);
kb_f16 kb_f32_to_f16(float f);

#ifdef __cplusplus
}
#endif
#endif /* KBENCH_H */
