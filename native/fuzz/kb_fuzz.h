/* kb_fuzz.h — what the libFuzzer targets share: a cursor over the fuzzer's
 * bytes (reads past the end give zeros, so every input decodes to a call),
 * selectors built from those bytes, and the checks every target makes:
 * a failed call names a field and a message that are valid UTF-8 text, and
 * an output is untouched unless the call succeeded. A violated check aborts
 * (libFuzzer reports it as a crash with the input that caused it). */
#ifndef KB_FUZZ_H
#define KB_FUZZ_H

#include "kbench.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kb_cursor {
    const uint8_t *p;
    size_t left;
} kb_cursor;

static inline uint8_t kb_take_u8(kb_cursor *c) {
    if (!c->left) return 0;
    c->left--;
    return *c->p++;
}

static inline uint16_t kb_take_u16(kb_cursor *c) {
    uint16_t lo = kb_take_u8(c);
    return (uint16_t)(lo | (uint16_t)kb_take_u8(c) << 8);
}

static inline uint32_t kb_take_u32(kb_cursor *c) {
    uint32_t lo = kb_take_u16(c);
    return lo | (uint32_t)kb_take_u16(c) << 16;
}

/* A value in [lo, hi]. */
static inline size_t kb_take_range(kb_cursor *c, size_t lo, size_t hi) {
    return lo + (size_t)kb_take_u16(c) % (hi - lo + 1);
}

static inline float kb_take_f32(kb_cursor *c) {
    uint32_t u = kb_take_u32(c);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* n FP16 values on the heap, exactly n (ASan sees any read past them). */
static inline kb_f16 *kb_take_f16s(kb_cursor *c, size_t n) {
    kb_f16 *out = malloc((n ? n : 1) * sizeof *out);
    if (!out) abort();
    for (size_t i = 0; i < n; i++) out[i] = kb_take_u16(c);
    return out;
}

/* A selector: backends disabled, ISA cap (sometimes out of range), a
 * forced realization of the op (or none, or an unknown name), threads. */
static inline void kb_take_selector(kb_cursor *c, kb_selector *sel, int op) {
    kb_selector_default(sel);
    uint8_t flags = kb_take_u8(c);
    sel->disabled_backends = (flags & 1) ? kb_take_u8(c) & 7u : 0;
    if (flags & 2) sel->isa_cap = (int)(kb_take_u8(c) % 10) - 1; /* -1 .. 8: classes, no cap, and neither */
    sel->threads = (flags & 4) ? (int)(kb_take_u8(c) % 3) : 1;
    sel->verify_payload = (flags >> 3) & 1;
    sel->force = NULL;
    if (flags & 16) {
        static kb_realization list[64];
        size_t n = kb_list_realizations(NULL, list, 64);
        uint8_t pick = kb_take_u8(c);
        if (n && pick < 250) {
            size_t i = pick % (n < 64 ? n : 64);
            if (list[i].op == op || (pick & 1)) sel->force = list[i].name;
        } else {
            sel->force = "no_such_realization";
        }
    }
}

/* Is s (NUL-terminated, at most len bytes) well-formed UTF-8 text without
 * control characters? */
static inline int kb_utf8_text(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len && p[i]) {
        unsigned c = p[i];
        size_t n = c < 0x80 ? 1 : (c >= 0xc2 && c <= 0xdf) ? 2 : (c >= 0xe0 && c <= 0xef) ? 3
                 : (c >= 0xf0 && c <= 0xf4) ? 4 : 0;
        if (!n || (n == 1 && (c < 0x20 || c == 0x7f))) return 0;
        for (size_t k = 1; k < n; k++)
            if (i + k >= len || (p[i + k] & 0xc0) != 0x80) return 0;
        i += n;
    }
    return i < len; /* terminated inside the buffer */
}

/* The contract of every entry point on failure: a field, and a message
 * that starts with it, both valid UTF-8. */
static inline void kb_check_error(kb_status st, const kb_error *err) {
    if (st == KB_OK) return;
    if (err->code != (int)st || !kb_utf8_text(err->field, sizeof err->field) ||
        !kb_utf8_text(err->message, sizeof err->message) || !err->message[0]) {
        fprintf(stderr, "kb_fuzz: malformed error (status %d, code %d)\n", st, err->code);
        abort();
    }
}

static inline void kb_check_untouched(kb_status st, const void *now, const void *before,
                                      size_t bytes, const char *what) {
    if (st != KB_OK && memcmp(now, before, bytes)) {
        fprintf(stderr, "kb_fuzz: %s written by a call that failed\n", what);
        abort();
    }
}

#endif
