/* kb_test_checksum.c — TEST ONLY: the payload checksum by every path this
 * build and machine have, on payloads read from a file, for
 * suites/test_checksum.py to compare with its slow reference. Never part of
 * the library or the worker: kbench.targets.crossbuild links it with the
 * library's objects into build/worker/aarch64-test/.
 *
 * Input: records of a little-endian u64 length and that many bytes.
 * Output: one line per record, "<length> <portable> <neon> <sme>", each
 * value in hex or "-" where the path is not available here. */
#include "../src/core/kb_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PAYLOADS\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    unsigned char lenbuf[8];
    while (fread(lenbuf, 1, 8, f) == 8) {
        uint64_t len = 0;
        for (int b = 0; b < 8; b++) len |= (uint64_t)lenbuf[b] << (8 * b);
        unsigned char *data = malloc(len ? (size_t)len : 1);
        if (!data || fread(data, 1, (size_t)len, f) != len) {
            fprintf(stderr, "truncated record of %" PRIu64 " bytes\n", len);
            return 2;
        }
        printf("%" PRIu64, len);
        for (int path = KB_CHECKSUM_PORTABLE; path <= KB_CHECKSUM_SME; path++) {
            if (kb_checksum_path_available(path))
                printf(" %016" PRIx64, kb_payload_checksum_on(path, data, (size_t)len));
            else
                printf(" -");
        }
        printf("\n");
        free(data);
    }
    return ferror(f) ? 2 : 0;
}
