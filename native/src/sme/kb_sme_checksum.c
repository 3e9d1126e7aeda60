/* kb_sme_checksum.c — the whole 256-byte chunks of the payload checksum
 * (kb_checksum.c has the definition) in streaming mode, any SVL from 128 to
 * 2048 bits.
 *
 * A chunk is 256 / VL streaming vectors of 64-bit lanes (16 at SVL 128, 1 at
 * SVL 2048). S holds the lane sums, T their running totals: T += S once per
 * chunk, before the chunk's vectors join S. One load and one add per
 * vector, one add per chunk; the caller turns (S, T) into the weighted sum.
 * SME1 instructions only (streaming SVE), so every SME machine runs it. */
#include "kb_sme.h"

#if defined(__aarch64__)
#include "kb_sme_asm.h"

#include <stdint.h>

/* The lane sums of S and T, summed across lanes: out[0] = sum(S),
 * out[1] = sum(T). */
static void chunk_sums(const unsigned char *p, size_t chunks, uint64_t out[2]) {
    __asm__ volatile(
        ".arch armv8.2-a+sme\n"
        "smstart sm\n"
        "ptrue p0.d\n"
        "ptrue p2.d, vl1\n"
        "dup z24.d, #0\n"                          /* S                      */
        "dup z25.d, #0\n"                          /* T                      */
        "mov x0, %x[p]\n"
        "mov x10, %x[n]\n"
        "cbz x10, 9f\n"
        "cntb x9\n"
        "cmp x9, #64\n"
        "b.eq 64f\n"
        "cmp x9, #32\n"
        "b.eq 32f\n"
        "cmp x9, #16\n"
        "b.eq 16f\n"
        "cmp x9, #128\n"
        "b.eq 128f\n"
        "256:\n"                                   /* SVL 2048: 1 per chunk  */
        "add z25.d, z25.d, z24.d\n"
        "ld1d {z0.d}, p0/z, [x0]\n"
        "add z24.d, z24.d, z0.d\n"
        "addvl x0, x0, #1\n"
        "subs x10, x10, #1\n"
        "b.ne 256b\n"
        "b 9f\n"
        "128:\n"                                   /* SVL 1024: 2 per chunk  */
        "add z25.d, z25.d, z24.d\n"
        "ld1d {z0.d}, p0/z, [x0]\n"
        "ld1d {z1.d}, p0/z, [x0, #1, mul vl]\n"
        "add z0.d, z0.d, z1.d\n"
        "add z24.d, z24.d, z0.d\n"
        "addvl x0, x0, #2\n"
        "subs x10, x10, #1\n"
        "b.ne 128b\n"
        "b 9f\n"
        "64:\n"                                    /* SVL 512: 4 per chunk   */
        "lsr x11, x10, #1\n"                       /* chunk pairs            */
        "cbz x11, 65f\n"
        "63:\n"
        "add z25.d, z25.d, z24.d\n"
        "ld1d {z0.d}, p0/z, [x0]\n"
        "ld1d {z1.d}, p0/z, [x0, #1, mul vl]\n"
        "ld1d {z2.d}, p0/z, [x0, #2, mul vl]\n"
        "ld1d {z3.d}, p0/z, [x0, #3, mul vl]\n"
        "ld1d {z4.d}, p0/z, [x0, #4, mul vl]\n"
        "ld1d {z5.d}, p0/z, [x0, #5, mul vl]\n"
        "ld1d {z6.d}, p0/z, [x0, #6, mul vl]\n"
        "ld1d {z7.d}, p0/z, [x0, #7, mul vl]\n"
        "add z0.d, z0.d, z1.d\n"
        "add z2.d, z2.d, z3.d\n"
        "add z4.d, z4.d, z5.d\n"
        "add z6.d, z6.d, z7.d\n"
        "add z0.d, z0.d, z2.d\n"
        "add z4.d, z4.d, z6.d\n"
        "add z24.d, z24.d, z0.d\n"
        "add z25.d, z25.d, z24.d\n"
        "add z24.d, z24.d, z4.d\n"
        "addvl x0, x0, #8\n"
        "subs x11, x11, #1\n"
        "b.ne 63b\n"
        "65:\n"
        "tbz x10, #0, 9f\n"                        /* an odd last chunk      */
        "add z25.d, z25.d, z24.d\n"
        "ld1d {z0.d}, p0/z, [x0]\n"
        "ld1d {z1.d}, p0/z, [x0, #1, mul vl]\n"
        "ld1d {z2.d}, p0/z, [x0, #2, mul vl]\n"
        "ld1d {z3.d}, p0/z, [x0, #3, mul vl]\n"
        "add z0.d, z0.d, z1.d\n"
        "add z2.d, z2.d, z3.d\n"
        "add z0.d, z0.d, z2.d\n"
        "add z24.d, z24.d, z0.d\n"
        "b 9f\n"
        "32:\n"                                    /* SVL 256: 8 per chunk   */
        "add z25.d, z25.d, z24.d\n"
        "ld1d {z0.d}, p0/z, [x0]\n"
        "ld1d {z1.d}, p0/z, [x0, #1, mul vl]\n"
        "ld1d {z2.d}, p0/z, [x0, #2, mul vl]\n"
        "ld1d {z3.d}, p0/z, [x0, #3, mul vl]\n"
        "ld1d {z4.d}, p0/z, [x0, #4, mul vl]\n"
        "ld1d {z5.d}, p0/z, [x0, #5, mul vl]\n"
        "ld1d {z6.d}, p0/z, [x0, #6, mul vl]\n"
        "ld1d {z7.d}, p0/z, [x0, #7, mul vl]\n"
        "add z0.d, z0.d, z1.d\n"
        "add z2.d, z2.d, z3.d\n"
        "add z4.d, z4.d, z5.d\n"
        "add z6.d, z6.d, z7.d\n"
        "add z0.d, z0.d, z2.d\n"
        "add z4.d, z4.d, z6.d\n"
        "add z24.d, z24.d, z0.d\n"
        "add z24.d, z24.d, z4.d\n"
        "addvl x0, x0, #8\n"
        "subs x10, x10, #1\n"
        "b.ne 32b\n"
        "b 9f\n"
        "16:\n"                                    /* SVL 128: 16 per chunk  */
        "add z25.d, z25.d, z24.d\n"
        "ld1d {z0.d}, p0/z, [x0]\n"
        "ld1d {z1.d}, p0/z, [x0, #1, mul vl]\n"
        "ld1d {z2.d}, p0/z, [x0, #2, mul vl]\n"
        "ld1d {z3.d}, p0/z, [x0, #3, mul vl]\n"
        "ld1d {z4.d}, p0/z, [x0, #4, mul vl]\n"
        "ld1d {z5.d}, p0/z, [x0, #5, mul vl]\n"
        "ld1d {z6.d}, p0/z, [x0, #6, mul vl]\n"
        "ld1d {z7.d}, p0/z, [x0, #7, mul vl]\n"
        "addvl x0, x0, #16\n"
        "ld1d {z8.d}, p0/z, [x0, #-8, mul vl]\n"
        "ld1d {z9.d}, p0/z, [x0, #-7, mul vl]\n"
        "ld1d {z10.d}, p0/z, [x0, #-6, mul vl]\n"
        "ld1d {z11.d}, p0/z, [x0, #-5, mul vl]\n"
        "ld1d {z12.d}, p0/z, [x0, #-4, mul vl]\n"
        "ld1d {z13.d}, p0/z, [x0, #-3, mul vl]\n"
        "ld1d {z14.d}, p0/z, [x0, #-2, mul vl]\n"
        "ld1d {z15.d}, p0/z, [x0, #-1, mul vl]\n"
        "add z0.d, z0.d, z1.d\n"
        "add z2.d, z2.d, z3.d\n"
        "add z4.d, z4.d, z5.d\n"
        "add z6.d, z6.d, z7.d\n"
        "add z8.d, z8.d, z9.d\n"
        "add z10.d, z10.d, z11.d\n"
        "add z12.d, z12.d, z13.d\n"
        "add z14.d, z14.d, z15.d\n"
        "add z0.d, z0.d, z2.d\n"
        "add z4.d, z4.d, z6.d\n"
        "add z8.d, z8.d, z10.d\n"
        "add z12.d, z12.d, z14.d\n"
        "add z0.d, z0.d, z4.d\n"
        "add z8.d, z8.d, z12.d\n"
        "add z24.d, z24.d, z0.d\n"
        "add z24.d, z24.d, z8.d\n"
        "subs x10, x10, #1\n"
        "b.ne 16b\n"
        "9:\n"
        "uaddv d0, p0, z24.d\n"
        "uaddv d1, p0, z25.d\n"
        "add x12, %x[out], #8\n"
        "st1d {z0.d}, p2, [%x[out]]\n"            /* lane 0: the sums       */
        "st1d {z1.d}, p2, [x12]\n"
        "smstop sm\n"
        :
        : [p] "r"(p), [n] "r"(chunks), [out] "r"(out)
        : "x0", "x9", "x10", "x11", "x12", "p0", "p2", KB_SME_CLOBBER_VEC);
}

uint64_t kb_sme_payload_chunks(const void *data, size_t chunks) {
    uint64_t out[2] = {0, 0};
    chunk_sums((const unsigned char *)data, chunks, out);
    return chunks ? 2 * ((chunks - 1) * out[0] - out[1]) + out[0] : 0;
}
#endif
