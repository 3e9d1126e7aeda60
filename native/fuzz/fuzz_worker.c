/* fuzz_worker.c — the worker's frame decoder (native/worker/kb_worker.c
 * built with KB_WORKER_FUZZ) on arbitrary byte streams: frame headers, every
 * message type, buffer tables, pointers, dimensions, selectors, timing
 * blocks and dispatch tables, decoded and answered as the worker does on
 * stdin/stdout (replies go to /dev/null). Each frame's payload is copied to
 * a buffer of exactly its length. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

int kb_worker_decode_frames(const unsigned char *data, size_t n, int fd);

static int sink = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (sink < 0) {
        sink = open("/dev/null", O_WRONLY);
        if (sink < 0) abort();
    }
    kb_worker_decode_frames(data, size, sink);
    return 0;
}
