/* kb_f16.c — IEEE 754 binary16 <-> binary32 conversion, bit exact,
 * round to nearest even, no dependence on compiler FP16 support. */
#include "kb_internal.h"

#include <string.h>

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float kb_h2f(kb_f16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* inf or NaN; keep the payload, quiet it */
        return u2f(sign | 0x7f800000u | (man << 13) | (man ? 0x00400000u : 0));
    if (exp == 0) {
        if (man == 0) return u2f(sign);
        /* subnormal: value = man * 2^-24, exact in binary32 */
        float v = (float)man * u2f(0x33800000u); /* 2^-24 */
        return sign ? -v : v;
    }
    return u2f(sign | ((exp + 112u) << 23) | (man << 13));
}

kb_f16 kb_f2h(float f) {
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) /* NaN: quiet, keep the top payload bits */
        return (kb_f16)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
    if (abs >= 0x477ff000u) /* >= 65520 rounds to inf */
        return (kb_f16)(sign | 0x7c00u);
    if (abs < 0x38800000u) { /* below 2^-14: subnormal or zero in binary16 */
        if (abs < 0x33000000u) return sign; /* <= 2^-25 rounds to zero (tie to even 0) */
        uint32_t e = abs >> 23;                 /* biased binary32 exponent */
        uint32_t m = (abs & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e;              /* 14 + (126 - e) - 14 ... */
        /* value = m * 2^(e-150); in units of 2^-24: m * 2^(e-126) */
        uint32_t q = m >> (shift);
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (kb_f16)(sign | q);
    }
    /* normal */
    uint32_t e = (abs >> 23) - 112u;
    uint32_t m = abs & 0x7fffffu;
    uint32_t q = (e << 10) | (m >> 13);
    uint32_t rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++; /* may carry into exp: correct */
    return (kb_f16)(sign | q);
}

float kb_f16_to_f32(kb_f16 h) { return kb_h2f(h); }
kb_f16 kb_f32_to_f16(float f) { return kb_f2h(f); }
