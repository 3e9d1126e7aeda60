/* exrt.h — the runtime-like example plugin's own interface between its files
 * (exrt.c: the table, the dispatcher, the packed-B header and its checks, the
 * scratch; one file per path: exrt_sme2.c, exrt_sve2p1.c, exrt_neon.c, and
 * the portable path in exrt.c for machines that are not aarch64).
 *
 * The packed B (pack_b) is a 64-byte header followed by the payload of the
 * path that packed it:
 *
 *   path     payload layout                                         depends on
 *   sme2     kbench's x16p2vlx2b (blocks of 2 x SVL/32 columns,     SVL
 *            bias slots zero: the packer takes no bias)
 *   sve2p1   blocks of 2 x VL/32 columns (VL: the SVE vector        SVE VL
 *            length), per k pair the block's columns as (k, k+1)
 *            FP16 pairs; no bias slots
 *   neon,    K rows of roundup(N, 16) FP16 values, zero padded      nothing
 *   portable
 *
 * The header records the path and the vector length it was packed at, N, K
 * and the payload's size; a call checks all of them (exrt.c) before it reads
 * a byte of the payload. The probe program (probe/exrt_probe.c) reads the
 * header too: it is part of this example's documented interface. */
#ifndef EXRT_H
#define EXRT_H

#include "kbench_plugin.h"

#include <stddef.h>
#include <stdint.h>

#define EXRT_MAGIC 0x54525845u /* "EXRT" */
#define EXRT_VERSION 1u
#define EXRT_HEADER_BYTES 64u
#define EXRT_NEON_COLS 16u /* the NEON and portable paths' column block */

typedef enum exrt_path {
    EXRT_PATH_PORTABLE = 0,
    EXRT_PATH_NEON = 1,
    EXRT_PATH_SVE2P1 = 2,
    EXRT_PATH_SME2 = 3,
} exrt_path;

typedef struct exrt_header {
    uint32_t magic;
    uint16_t version;
    uint16_t path;          /* exrt_path that packed it                           */
    uint32_t vl_bytes;      /* the vector length its layout was made for (SME2: the
                               streaming SVL, SVE2.1: the SVE VL), 0: none        */
    uint32_t reserved;
    uint64_t n, k;
    uint64_t payload_bytes; /* bytes after the header                           */
    unsigned char pad[EXRT_HEADER_BYTES - 40];
} exrt_header;

_Static_assert(sizeof(exrt_header) == EXRT_HEADER_BYTES, "the header is 64 bytes");

/* One GEMM as a path computes it: plain B (b, ldb) or the path's own packed
 * payload (packed); bias NULL or N values; scratch as the path asked for
 * (exrt_path_ops.scratch_bytes), 64-byte aligned. */
typedef struct exrt_gemm {
    size_t m, n, k;
    const kb_f16 *a;
    size_t lda;
    const kb_f16 *b;
    size_t ldb;
    const unsigned char *packed;
    const kb_f16 *bias;
    kb_f16 *c;
    size_t ldc;
    float clamp_min, clamp_max;
    unsigned char *scratch;
} exrt_gemm;

typedef struct exrt_path_ops {
    exrt_path path;
    const char *name;                            /* "sme2", "sve2p1", "neon", "portable" */
    size_t (*vl_bytes)(void);                    /* the running vector length, 0: none  */
    size_t (*payload_bytes)(size_t n, size_t k); /* its packed B at the running VL      */
    void (*pack)(size_t n, size_t k, const kb_f16 *b, size_t ldb, unsigned char *dst);
    size_t (*scratch_bytes)(const exrt_gemm *g); /* what one call needs                 */
    void (*gemm)(const exrt_gemm *g);
} exrt_path_ops;

#if defined(__aarch64__)
extern const exrt_path_ops exrt_sme2_ops;
extern const exrt_path_ops exrt_sve2p1_ops;
extern const exrt_path_ops exrt_neon_ops;
#endif

static inline size_t exrt_roundup(size_t v, size_t m) { return (v + m - 1) / m * m; }

/* The NEON and portable paths' packed B (exrt.c): K rows of roundup(N, 16)
 * values, zero padded, whatever the vector length. */
size_t exrt_rows_payload_bytes(size_t n, size_t k);
void exrt_rows_pack(size_t n, size_t k, const kb_f16 *b, size_t ldb, unsigned char *dst);

/* Exported for the probe program (probe/exrt_probe.c), not used by kbench:
 * the path the calling thread's last successful gemm ran, and the scratch
 * bytes this thread keeps between calls. */
const char *exrt_last_path(void);
size_t exrt_retained_bytes(void);

#endif
