/* kb_json.c — recursive-descent JSON parser (RFC 8259 subset enough for
 * machine-written files: \uXXXX escapes are decoded to UTF-8). */
#include "kb_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *p, *end, *start;
    char *error;
    size_t error_len;
    int depth;
} parser;

static kb_json *fail(parser *ps, const char *what) {
    if (ps->error && !ps->error[0])
        snprintf(ps->error, ps->error_len, "%s at byte %zu", what, (size_t)(ps->p - ps->start));
    return NULL;
}

static void skip_ws(parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

/* Four hex digits of a \u escape. */
static bool hex4(parser *ps, unsigned int *u) {
    if (ps->end - ps->p < 4) return false;
    *u = 0;
    for (int i = 0; i < 4; i++) {
        char h = *ps->p++;
        *u <<= 4;
        if (h >= '0' && h <= '9') *u |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f') *u |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F') *u |= (unsigned)(h - 'A' + 10);
        else return false;
    }
    return true;
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), 0 if there is none. */
static size_t utf8_len(const char *p, const char *end) {
    const unsigned char *s = (const unsigned char *)p;
    size_t avail = (size_t)(end - p);
    unsigned c = s[0], cp;
    size_t n;
    if (c >= 0xc2 && c <= 0xdf) { n = 2; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 3; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 4; cp = c & 0x07; }
    else return 0;
    if (avail < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return n;
}

static kb_json *node(kb_json_type t) {
    kb_json *n = calloc(1, sizeof *n);
    if (n) n->type = t;
    return n;
}

static char *parse_string_raw(parser *ps) {
    if (ps->p >= ps->end || *ps->p != '"') return (char *)fail(ps, "expected a string");
    ps->p++;
    size_t cap = 16, len = 0;
    char *out = malloc(cap);
    if (!out) return (char *)fail(ps, "out of memory");
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned int c = (unsigned char)*ps->p++;
        char buf[4];
        size_t n = 1;
        buf[0] = (char)c;
        if (c < 0x20) { free(out); return (char *)fail(ps, "control character in a string"); }
        if (c >= 0x80) { /* a UTF-8 sequence, copied whole once checked */
            n = utf8_len(ps->p - 1, ps->end);
            if (!n) { free(out); return (char *)fail(ps, "invalid UTF-8 in a string"); }
            memcpy(buf, ps->p - 1, n);
            ps->p += n - 1;
        }
        if (c == '\\') {
            if (ps->p >= ps->end) break;
            char e = *ps->p++;
            switch (e) {
            case '"': case '\\': case '/': buf[0] = e; break;
            case 'b': buf[0] = '\b'; break;
            case 'f': buf[0] = '\f'; break;
            case 'n': buf[0] = '\n'; break;
            case 'r': buf[0] = '\r'; break;
            case 't': buf[0] = '\t'; break;
            case 'u': {
                unsigned int u = 0;
                if (!hex4(ps, &u)) { free(out); return (char *)fail(ps, "bad \\u escape"); }
                if (u >= 0xdc00 && u <= 0xdfff) { free(out); return (char *)fail(ps, "unpaired surrogate in a \\u escape"); }
                if (u >= 0xd800 && u <= 0xdbff) { /* a pair: \uD8xx\uDCxx */
                    unsigned int lo = 0;
                    if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u') { free(out); return (char *)fail(ps, "unpaired surrogate in a \\u escape"); }
                    ps->p += 2;
                    if (!hex4(ps, &lo) || lo < 0xdc00 || lo > 0xdfff) { free(out); return (char *)fail(ps, "unpaired surrogate in a \\u escape"); }
                    u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                }
                /* NUL would end the C string early: the loader would read another name than
                 * any other JSON reader */
                if (u == 0) { free(out); return (char *)fail(ps, "\\u0000 in a string"); }
                if (u < 0x80) buf[0] = (char)u;
                else if (u < 0x800) { buf[0] = (char)(0xc0 | (u >> 6)); buf[1] = (char)(0x80 | (u & 0x3f)); n = 2; }
                else if (u < 0x10000) { buf[0] = (char)(0xe0 | (u >> 12)); buf[1] = (char)(0x80 | ((u >> 6) & 0x3f)); buf[2] = (char)(0x80 | (u & 0x3f)); n = 3; }
                else { buf[0] = (char)(0xf0 | (u >> 18)); buf[1] = (char)(0x80 | ((u >> 12) & 0x3f)); buf[2] = (char)(0x80 | ((u >> 6) & 0x3f)); buf[3] = (char)(0x80 | (u & 0x3f)); n = 4; }
                break;
            }
            default: free(out); return (char *)fail(ps, "bad escape");
            }
        }
        if (len + n + 1 > cap) {
            while (len + n + 1 > cap) cap *= 2;
            char *o = realloc(out, cap);
            if (!o) { free(out); return (char *)fail(ps, "out of memory"); }
            out = o;
        }
        memcpy(out + len, buf, n);
        len += n;
    }
    if (ps->p >= ps->end) { free(out); return (char *)fail(ps, "unterminated string"); }
    ps->p++;
    out[len] = '\0';
    return out;
}

static kb_json *parse_value(parser *ps);

static kb_json *parse_container(parser *ps, int object) {
    kb_json *n = node(object ? KB_JSON_OBJECT : KB_JSON_ARRAY);
    if (!n) return fail(ps, "out of memory");
    ps->p++;
    kb_json **tail = &n->child;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) { ps->p++; return n; }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (object) {
            key = parse_string_raw(ps);
            if (!key) { kb_json_free(n); return NULL; }
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') { free(key); kb_json_free(n); return fail(ps, "expected ':'"); }
            ps->p++;
        }
        kb_json *v = parse_value(ps);
        if (!v) { free(key); kb_json_free(n); return NULL; }
        v->key = key;
        *tail = v;
        tail = &v->next;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) { ps->p++; return n; }
        kb_json_free(n);
        return fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

/* A JSON number (RFC 8259 grammar, strictly) without strtod, which reads
 * the decimal point of the current LC_NUMERIC locale: under de_DE a table
 * written by `kbench tune` ("1.5") would not parse. Exact for integers up
 * to 2^64 and, via the classic fast path, correctly rounded for decimals
 * with at most 15 significant digits and |exponent| <= 22; otherwise
 * within a few ulp (enough for a dispatch table's bounds and times). */
static const double kb_pow10_exact[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
    1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static double kb_scale10(double v, long e) {
    while (e > 22) { v *= 1e22; e -= 22; }
    while (e < -22) { v /= 1e22; e += 22; }
    return e >= 0 ? v * kb_pow10_exact[e] : v / kb_pow10_exact[-e];
}

static int kb_is_digit(char c) { return c >= '0' && c <= '9'; }

static kb_json *parse_number(parser *ps) {
    const char *p = ps->p, *end = ps->end;
    int neg = 0;
    unsigned long long sig = 0;
    int digits = 0;      /* significant digits kept in sig (at most 19) */
    long dropped = 0;    /* integer digits that did not fit in sig */
    long frac = 0;       /* fraction digits kept in sig */
    if (p < end && *p == '-') { neg = 1; p++; }
    if (p >= end || !kb_is_digit(*p)) return fail(ps, "bad value");
    if (*p == '0') {
        p++;
        if (p < end && kb_is_digit(*p)) return fail(ps, "bad number (leading zero)");
    } else {
        for (; p < end && kb_is_digit(*p); p++) {
            if (digits < 19) { sig = sig * 10 + (unsigned)(*p - '0'); if (sig) digits++; }
            else dropped++;
        }
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !kb_is_digit(*p)) return fail(ps, "bad number (digit expected after '.')");
        for (; p < end && kb_is_digit(*p); p++) {
            if (digits < 19) {
                sig = sig * 10 + (unsigned)(*p - '0');
                if (sig) digits++;
                frac++;
            }
        }
    }
    long exp10 = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0;
        if (p < end && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p >= end || !kb_is_digit(*p)) return fail(ps, "bad number (exponent digits expected)");
        for (; p < end && kb_is_digit(*p); p++)
            if (exp10 < 100000) exp10 = exp10 * 10 + (*p - '0');
        if (eneg) exp10 = -exp10;
    }
    long e = exp10 + dropped - frac;
    double v = (double)sig;
    if (sig != 0 && e != 0) {
        if (sig <= (1ull << 53) && e >= -22 && e <= 22) v = kb_scale10(v, e);
        else if (e > 400) v = HUGE_VAL;
        else if (e < -400) v = 0.0;
        else v = kb_scale10(v, e);
    }
    kb_json *n = node(KB_JSON_NUMBER);
    if (!n) return fail(ps, "out of memory");
    n->number = neg ? -v : v;
    ps->p = p;
    return n;
}

static kb_json *parse_value(parser *ps) {
    if (++ps->depth > 64) return fail(ps, "nesting too deep");
    skip_ws(ps);
    kb_json *n = NULL;
    if (ps->p >= ps->end) n = fail(ps, "unexpected end");
    else if (*ps->p == '{') n = parse_container(ps, 1);
    else if (*ps->p == '[') n = parse_container(ps, 0);
    else if (*ps->p == '"') {
        char *s = parse_string_raw(ps);
        if (s && (n = node(KB_JSON_STRING))) n->string = s;
        else free(s);
    } else if (ps->end - ps->p >= 4 && !strncmp(ps->p, "true", 4)) {
        ps->p += 4; if ((n = node(KB_JSON_BOOL))) n->number = 1;
    } else if (ps->end - ps->p >= 5 && !strncmp(ps->p, "false", 5)) {
        ps->p += 5; n = node(KB_JSON_BOOL);
    } else if (ps->end - ps->p >= 4 && !strncmp(ps->p, "null", 4)) {
        ps->p += 4; n = node(KB_JSON_NULL);
    } else {
        n = parse_number(ps);
    }
    ps->depth--;
    return n;
}

kb_json *kb_json_parse(const char *text, size_t len, char *error, size_t error_len) {
    parser ps = {text, text + len, text, error, error_len, 0};
    if (error && error_len) error[0] = '\0';
    kb_json *root = parse_value(&ps);
    if (!root) return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        kb_json_free(root);
        return fail(&ps, "trailing characters");
    }
    return root;
}

void kb_json_free(kb_json *n) {
    while (n) {
        kb_json *next = n->next;
        kb_json_free(n->child);
        free(n->string);
        free(n->key);
        free(n);
        n = next;
    }
}

const kb_json *kb_json_get(const kb_json *o, const char *key) {
    if (!o || o->type != KB_JSON_OBJECT) return NULL;
    for (const kb_json *c = o->child; c; c = c->next)
        if (c->key && !strcmp(c->key, key)) return c;
    return NULL;
}
