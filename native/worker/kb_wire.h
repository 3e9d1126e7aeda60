/* kb_wire.h — the worker protocol: frames, message types, and a bounded
 * reader/writer for little-endian payloads. Shared by the worker only; the
 * Python side (kbench/worker.py) speaks the same format.
 *
 * Frame:  u32 magic "KBW1" | u32 type | u64 payload length | payload
 * Reply:  type | KB_WIRE_REPLY, or KB_WIRE_PROTOCOL_ERROR with a message.
 *
 * Compatibility: KB_WIRE_PROTOCOL changes whenever the encoding of any
 * message changes (both sides change together); the hello reply starts
 * with it and the Python side refuses a worker speaking another number.
 * Protocol 2: a realization carries block_m, block_n, block_k (u32 each)
 * after error_model. Protocol 3: a realization ends with u32 nan_clamp, and
 * each realization of a LOAD_PLUGIN reply with u32 nan_clamp, str
 * rhs_layout, str lhs_layout (plugin ABI 2) and u32 mr, nr, kr; the hello
 * reply ends with u64 calls checked for the calling convention so far.
 * Protocol 4: each realization of a LOAD_PLUGIN reply ends with u32 flags,
 * u32 overread[8], u64 scratch_cap and str expect_symbols (plugin ABI 3),
 * and an input buffer's reserved word carries in bits 16..31 the bytes past
 * its end its realization may read (the guard page starts that far out).
 * The hello reply ends (after the micro-kernel steps) with u32 the SVE vector
 * length in bits, read only where present. SET_SVE_VL (a new message, like
 * SET_SVL with the SVE vector length) changes no existing encoding.
 * Protocol 5: a GEMM or CONV reply ends with the call's heap figures
 * (kb_heap.h): u32 status (0: measured, else why not, KB_HEAP_*), u32 whose
 * (1: the forced plugin realization's blocks, 2: kbench's scratch, what our
 * own realizations hold), u64 bytes held when the call started, u64 the most
 * held at once during it, u64 bytes still held when it returned.
 * Plugins (no change to existing encodings): LOAD_PLUGIN loads a plugin
 * library into the worker, after which every selector the worker reads lets
 * plugin realizations take part; PACK mode 2 packs B with the plugin
 * realization named by the request's selector.force.
 */
#ifndef KB_WIRE_H
#define KB_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KB_WIRE_MAGIC 0x3157424bu /* "KBW1" */
#define KB_WIRE_PROTOCOL 5u
#define KB_WIRE_MAX_PAYLOAD ((uint64_t)1 << 30)
#define KB_WIRE_REPLY 0x80000000u
#define KB_WIRE_PROTOCOL_ERROR 0xffffffffu

enum {
    KB_MSG_HELLO = 1,
    KB_MSG_GEMM = 2,
    KB_MSG_CONV = 3,
    KB_MSG_PACK = 4,
    KB_MSG_SET_SVL = 5,
    KB_MSG_SHUTDOWN = 6,
    KB_MSG_LOAD_TABLE = 7, /* a tuned dispatch table for selectors that ask for it */
    KB_MSG_LOAD_PLUGIN = 8, /* a plugin library (payload: its path); see kb_worker.c */
    KB_MSG_CODE_MAP = 9,    /* where the loaded code lies (the instruction counter) */
    KB_MSG_SET_SVE_VL = 10, /* the SVE vector length, as SET_SVL sets the streaming one */
    KB_MSG_FENCE = 11       /* calls kb_worker_fence and replies: a mark in an execution log */
};

typedef struct kb_reader {
    const unsigned char *p;
    size_t left;
    bool bad;          /* set on the first read past the end */
    const char *what;  /* what was being read when it went bad */
} kb_reader;

typedef struct kb_writer {
    unsigned char *buf;
    size_t len, cap;
    bool oom;
} kb_writer;

uint32_t kb_rd_u32(kb_reader *r, const char *what);
int32_t kb_rd_i32(kb_reader *r, const char *what);
uint64_t kb_rd_u64(kb_reader *r, const char *what);
float kb_rd_f32(kb_reader *r, const char *what);
/* Returns a pointer into the payload (not NUL terminated) and its length. */
const unsigned char *kb_rd_bytes(kb_reader *r, size_t n, const char *what);

void kb_wr_u32(kb_writer *w, uint32_t v);
void kb_wr_i32(kb_writer *w, int32_t v);
void kb_wr_u64(kb_writer *w, uint64_t v);
void kb_wr_f32(kb_writer *w, float v);
void kb_wr_bytes(kb_writer *w, const void *p, size_t n);
void kb_wr_str(kb_writer *w, const char *s);
void kb_wr_zeros(kb_writer *w, size_t n);

#endif
