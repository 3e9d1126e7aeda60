/* exfp16.h — binary16 <-> binary32 conversions for the example plugins
 * (portable C: no compiler FP16 type is needed). f2h rounds to nearest,
 * ties to even, overflowing to infinity; NaNs stay NaNs. */
#ifndef EXFP16_H
#define EXFP16_H

#include <stdint.h>
#include <string.h>

static inline float ex_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
    float f;
    if (e == 0) {
        f = (float)m * 5.9604644775390625e-8f; /* m * 2^-24, exact */
        memcpy(&bits, &f, 4);
        bits |= sign;
    } else if (e == 31) {
        bits = sign | 0x7f800000u | (m << 13);
    } else {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint16_t ex_f2h(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, NaN (kept quiet) */
        return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u | ((ax >> 13) & 0x3ffu) : 0x7c00u));
    uint32_t e = ax >> 23;
    if (e >= 113) { /* normal binary16 range or overflow */
        uint32_t h = ((e - 112u) << 10) | ((ax & 0x7fffffu) >> 13), rem = ax & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
        return (uint16_t)(sign | (h >= 0x7c00u ? 0x7c00u : h));
    }
    if (e < 102) return sign; /* below 2^-25: rounds to zero */
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u, shift = 126u - e;
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

/* The store every example shares: clamp in FP32 (NaN passes), then round. */
static inline uint16_t ex_store(float v, float lo, float hi) {
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return ex_f2h(v);
}

#endif
