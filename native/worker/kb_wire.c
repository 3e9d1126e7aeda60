/* kb_wire.c — bounded little-endian reader and growing writer. */
#include "kb_wire.h"

#include <stdlib.h>
#include <string.h>

static const unsigned char *take(kb_reader *r, size_t n, const char *what) {
    if (r->bad) return NULL;
    if (n > r->left) {
        r->bad = true;
        r->what = what;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    r->left -= n;
    return p;
}

uint64_t kb_rd_u64(kb_reader *r, const char *what) {
    const unsigned char *p = take(r, 8, what);
    uint64_t v = 0;
    if (p)
        for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

uint32_t kb_rd_u32(kb_reader *r, const char *what) {
    const unsigned char *p = take(r, 4, what);
    return p ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24 : 0;
}

int32_t kb_rd_i32(kb_reader *r, const char *what) {
    uint32_t u = kb_rd_u32(r, what);
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

float kb_rd_f32(kb_reader *r, const char *what) {
    uint32_t u = kb_rd_u32(r, what);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

const unsigned char *kb_rd_bytes(kb_reader *r, size_t n, const char *what) {
    return take(r, n, what);
}

static void grow(kb_writer *w, size_t n) {
    if (w->oom) return;
    if (w->len + n <= w->cap) return;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n) cap *= 2;
    unsigned char *b = realloc(w->buf, cap);
    if (!b) {
        w->oom = true;
        return;
    }
    w->buf = b;
    w->cap = cap;
}

void kb_wr_bytes(kb_writer *w, const void *p, size_t n) {
    grow(w, n);
    if (w->oom) return;
    if (n) memcpy(w->buf + w->len, p, n);
    w->len += n;
}

void kb_wr_u32(kb_writer *w, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    kb_wr_bytes(w, b, 4);
}

void kb_wr_i32(kb_writer *w, int32_t v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    kb_wr_u32(w, u);
}

void kb_wr_u64(kb_writer *w, uint64_t v) {
    kb_wr_u32(w, (uint32_t)v);
    kb_wr_u32(w, (uint32_t)(v >> 32));
}

void kb_wr_f32(kb_writer *w, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    kb_wr_u32(w, u);
}

void kb_wr_str(kb_writer *w, const char *s) {
    size_t n = s ? strlen(s) : 0;
    kb_wr_u32(w, (uint32_t)n);
    kb_wr_bytes(w, s, n);
}

void kb_wr_zeros(kb_writer *w, size_t n) {
    static const unsigned char zeros[8] = {0};
    while (n) {
        size_t k = n < 8 ? n : 8;
        kb_wr_bytes(w, zeros, k);
        n -= k;
    }
}
