/* kb_checksum.c — the payload checksum of packed buffers (header version 2).
 *
 * Definition (the same value whatever computes it: any vector length, any
 * backend, any machine): read the payload as little-endian 64-bit words
 * w_0 .. w_{n-1}, the last one zero-padded, in chunks of 32 words (256
 * bytes); chunk c = i / 32 gets the odd weight 2c + 1:
 *
 *     checksum = sum over i of (2 * (i / 32) + 1) * w_i    (mod 2^64)
 *
 * Every change confined to one word is detected: it moves the sum by an odd
 * multiple of a nonzero difference d with |d| < 2^64 times that odd weight,
 * which is not 0 mod 2^64 (an odd number is invertible mod 2^64). So is
 * every single-bit and every single-byte change. Whole chunks moved to other
 * positions change their weights. Truncation is caught by the header's size
 * fields, checked on every call.
 *
 * A vector of L 64-bit lanes computes it with two adds per vector: lane sums
 * S and their running totals T, updated once per 256-byte chunk (T += S
 * before the chunk's words join S); after C chunks, sum over chunks of
 * c * (chunk sum) is (C - 1) * sum(S) - sum(T), so the checksum is
 * 2 * ((C - 1) * sum(S) - sum(T)) + sum(S), whatever L is. The streaming
 * routine (native/src/sme/kb_sme_checksum.c) and the NEON loop below do that;
 * the portable loop does it per chunk. Every path gives the same value: a
 * buffer sealed on one machine verifies on any other. */
#include "kb_internal.h"

#include <string.h>

#if defined(__aarch64__)
#include <arm_neon.h>
#endif

#define CHUNK_BYTES KB_CHECKSUM_CHUNK_BYTES
#define CHUNK_WORDS (CHUNK_BYTES / 8u)

static uint64_t le_word(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Whole chunks the portable way, the first one chunk number `first`: each
 * chunk's sum once, times its weight. */
static uint64_t chunks_portable(const unsigned char *p, size_t chunks, uint64_t first) {
    uint64_t acc = 0;
    for (size_t c = 0; c < chunks; c++) {
        uint64_t s = 0;
        for (size_t w = 0; w < CHUNK_WORDS; w++) s += le_word(p + c * CHUNK_BYTES + 8 * w);
        acc += (2 * (first + c) + 1) * s;
    }
    return acc;
}

#if defined(__aarch64__)
/* NEON: S and T in one 2-lane vector each; a chunk is four 4-register loads,
 * a tree of 15 adds, S += and T += (23 instructions with the loop). */
static uint64_t chunks_neon(const unsigned char *p, size_t chunks) {
    uint64x2_t s, t;
    size_t left = chunks;
    __asm__ volatile(
        "movi %[s].2d, #0\n"
        "movi %[t].2d, #0\n"
        "cbz %x[n], 2f\n"
        "1:\n"
        "add %[t].2d, %[t].2d, %[s].2d\n"
        "ld1 {v0.2d, v1.2d, v2.2d, v3.2d}, [%x[p]], #64\n"
        "ld1 {v4.2d, v5.2d, v6.2d, v7.2d}, [%x[p]], #64\n"
        "ld1 {v16.2d, v17.2d, v18.2d, v19.2d}, [%x[p]], #64\n"
        "ld1 {v20.2d, v21.2d, v22.2d, v23.2d}, [%x[p]], #64\n"
        "add v0.2d, v0.2d, v1.2d\n"
        "add v2.2d, v2.2d, v3.2d\n"
        "add v4.2d, v4.2d, v5.2d\n"
        "add v6.2d, v6.2d, v7.2d\n"
        "add v16.2d, v16.2d, v17.2d\n"
        "add v18.2d, v18.2d, v19.2d\n"
        "add v20.2d, v20.2d, v21.2d\n"
        "add v22.2d, v22.2d, v23.2d\n"
        "add v0.2d, v0.2d, v2.2d\n"
        "add v4.2d, v4.2d, v6.2d\n"
        "add v16.2d, v16.2d, v18.2d\n"
        "add v20.2d, v20.2d, v22.2d\n"
        "add v0.2d, v0.2d, v4.2d\n"
        "add v16.2d, v16.2d, v20.2d\n"
        "add v0.2d, v0.2d, v16.2d\n"
        "add %[s].2d, %[s].2d, v0.2d\n"
        "subs %x[n], %x[n], #1\n"
        "b.ne 1b\n"
        "2:\n"
        : [s] "=&w"(s), [t] "=&w"(t), [p] "+r"(p), [n] "+r"(left)
        :
        : "cc", "memory", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v16", "v17", "v18",
          "v19", "v20", "v21", "v22", "v23");
    uint64_t ss = vgetq_lane_u64(s, 0) + vgetq_lane_u64(s, 1);
    uint64_t tt = vgetq_lane_u64(t, 0) + vgetq_lane_u64(t, 1);
    return chunks ? 2 * ((chunks - 1) * ss - tt) + ss : 0;
}
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define KB_HWCAP2_SME_BIT (1ul << 23)
#endif

int kb_checksum_path_for(int backend) {
#if defined(__aarch64__) && defined(__linux__)
    if (backend == KB_BACKEND_SME && (getauxval(AT_HWCAP2) & KB_HWCAP2_SME_BIT)) return KB_CHECKSUM_SME;
#endif
    (void)backend;
#if defined(__aarch64__)
    return KB_CHECKSUM_NEON;
#else
    return KB_CHECKSUM_PORTABLE;
#endif
}

int kb_checksum_path_available(int path) {
    switch (path) {
    case KB_CHECKSUM_PORTABLE: return 1;
#if defined(__aarch64__)
    case KB_CHECKSUM_NEON: return 1;
    case KB_CHECKSUM_SME: return kb_checksum_path_for(KB_BACKEND_SME) == KB_CHECKSUM_SME;
#endif
    default: return 0;
    }
}

uint64_t kb_payload_checksum_on(int path, const void *data, size_t len) {
    const unsigned char *p = (const unsigned char *)data;
    size_t chunks = len / CHUNK_BYTES;
    uint64_t acc;
    switch (path) {
#if defined(__aarch64__)
    case KB_CHECKSUM_NEON: acc = chunks_neon(p, chunks); break;
    case KB_CHECKSUM_SME: acc = kb_sme_payload_chunks(p, chunks); break;
#endif
    default: acc = chunks_portable(p, chunks, 0); break;
    }
    size_t rest = len - chunks * CHUNK_BYTES;
    if (rest) { /* the last, partial chunk: zero padded to whole words */
        unsigned char tail[CHUNK_BYTES];
        memset(tail, 0, sizeof tail);
        memcpy(tail, p + chunks * CHUNK_BYTES, rest);
        acc += chunks_portable(tail, 1, chunks);
    }
    return acc;
}

uint64_t kb_payload_checksum(const void *data, size_t len) {
    return kb_payload_checksum_on(kb_checksum_path_for(-1), data, len);
}
