/* kb_json.h — a small JSON reader for dispatch tables: parses a document
 * into a tree of nodes held in one caller-owned arena. */
#ifndef KB_JSON_H
#define KB_JSON_H

#include <stddef.h>

typedef enum { KB_JSON_NULL, KB_JSON_BOOL, KB_JSON_NUMBER, KB_JSON_STRING, KB_JSON_ARRAY,
               KB_JSON_OBJECT } kb_json_type;

typedef struct kb_json {
    kb_json_type type;
    double number;           /* NUMBER, BOOL (0/1) */
    char *string;            /* STRING (NUL terminated, escapes decoded) */
    char *key;               /* member name when inside an object */
    struct kb_json *child;   /* ARRAY / OBJECT: first element */
    struct kb_json *next;    /* next sibling */
} kb_json;

/* Parses text; returns the root or NULL with *error set (position inside). */
kb_json *kb_json_parse(const char *text, size_t len, char *error, size_t error_len);
void kb_json_free(kb_json *root);
const kb_json *kb_json_get(const kb_json *object, const char *key);

#endif
