/* kb_error.c — status names and error reporting. */
#include "kb_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *kb_status_name(int status) {
    switch (status) {
    case KB_OK: return "ok";
    case KB_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case KB_ERR_CONTRACT: return "contract_violation";
    case KB_ERR_UNSUPPORTED: return "unsupported";
    case KB_ERR_OUT_OF_MEMORY: return "out_of_memory";
    case KB_ERR_OVERFLOW: return "overflow";
    case KB_ERR_INTERNAL: return "internal";
    default: return "unknown";
    }
}

void kb_clear_error(kb_error *err) {
    if (!err) return;
    err->code = KB_OK;
    err->field[0] = '\0';
    err->message[0] = '\0';
}

/* Replaces, in place, every byte that does not belong to a well-formed
 * UTF-8 sequence (or is an ASCII control character) with '?': messages may
 * quote bytes from a caller's input (a dispatch table, a realization name)
 * and may be cut off in the middle of a sequence by the buffer size, and
 * every reader (Python's str.decode, a terminal) needs valid text. */
static void kb_utf8_sanitize(char *text) {
    unsigned char *p = (unsigned char *)text;
    while (*p) {
        unsigned c = *p;
        size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                 : (c & 0xf8) == 0xf0 ? 4 : 0;
        bool ok = n > 0;
        unsigned cp = n == 1 ? c : n == 2 ? (c & 0x1fu) : n == 3 ? (c & 0x0fu) : (c & 0x07u);
        for (size_t i = 1; ok && i < n; i++) {
            if ((p[i] & 0xc0) != 0x80) ok = false;
            else cp = (cp << 6) | (p[i] & 0x3fu);
        }
        /* no overlong forms, no surrogates, nothing past U+10FFFF */
        if (ok && ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
                   (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff))
            ok = false;
        if (ok && n == 1 && (c < 0x20 || c == 0x7f)) ok = false;
        if (!ok) { *p++ = '?'; continue; }
        p += n;
    }
}

kb_status kb_fail(kb_error *err, kb_status code, const char *field,
                  const char *fmt, ...) {
    if (!err) return code;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    /* Every message starts with the field it is about. */
    size_t used = 0;
    err->message[0] = '\0';
    if (field && field[0]) {
        int w = snprintf(err->message, sizeof err->message, "%s: ", field);
        used = w < 0 ? 0 : (size_t)w;
        if (used >= sizeof err->message) {
            kb_utf8_sanitize(err->field);
            kb_utf8_sanitize(err->message);
            return code;
        }
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + used, sizeof err->message - used, fmt, ap);
    va_end(ap);
    kb_utf8_sanitize(err->field);
    kb_utf8_sanitize(err->message);
    return code;
}

const char *kb_version(void) {
#define KB_STR2(x) #x
#define KB_STR(x) KB_STR2(x)
    return KB_STR(KB_VERSION_MAJOR) "." KB_STR(KB_VERSION_MINOR) "." KB_STR(KB_VERSION_PATCH);
}
