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
        if (used >= sizeof err->message) return code;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + used, sizeof err->message - used, fmt, ap);
    va_end(ap);
    return code;
}

const char *kb_version(void) {
#define KB_STR2(x) #x
#define KB_STR(x) KB_STR2(x)
    return KB_STR(KB_VERSION_MAJOR) "." KB_STR(KB_VERSION_MINOR) "." KB_STR(KB_VERSION_PATCH);
}
