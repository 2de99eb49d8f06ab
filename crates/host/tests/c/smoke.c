/* A small C program against the movelab-host C API; prints one line per check. */
#include "movelab_host.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_bytes(const unsigned char *a, const unsigned char *b, size_t n) {
    return memcmp(a, b, n) == 0;
}

int main(void) {
    const size_t n = 3u << 20; /* 3 MiB: above the split and streaming thresholds */
    unsigned char *src = malloc(n), *dst = malloc(n), *small = malloc(4096);
    if (!src || !dst || !small) return 2;
    for (size_t i = 0; i < n; i++) src[i] = (unsigned char)(i * 7 + 3);

    movelab_engine *bad = movelab_engine_create("warp-drive", 1);
    printf("unknown engine: %s\n", bad == NULL && strstr(movelab_last_error(), "warp-drive") ? "rejected" : "ACCEPTED");

    movelab_engine *e = movelab_engine_create("thread", 2);
    if (!e) { printf("create failed: %s\n", movelab_last_error()); return 1; }

    uint64_t c = 0;
    int rc = movelab_icopy(e, src, dst, n, &c);
    int polled = 0;
    while (rc == 0 && movelab_check(e, c) == 0) polled++;
    rc |= movelab_wait(e, c);
    printf("icopy: %s\n", rc == 0 && check_bytes(src, dst, n) ? "ok" : "BAD");
    printf("second wait: %s\n", movelab_wait(e, c) == MOVELAB_ECOOKIE ? "ECOOKIE" : "WRONG");
    printf("unknown check: %s\n", movelab_check(e, 987654321) == MOVELAB_ECOOKIE ? "ECOOKIE" : "WRONG");

    rc = movelab_fill(e, dst, 0x5a, n);
    int filled = rc == 0;
    for (size_t i = 0; i < n && filled; i++) filled = dst[i] == 0x5a;
    printf("fill: %s\n", filled ? "ok" : "BAD");

    memcpy(small, src, 4096);
    rc = movelab_copy(e, small, small + 100, 1000); /* overlapping: memmove semantics */
    printf("overlap copy: %s\n", rc == 0 && check_bytes(small + 100, src, 1000) ? "ok" : "BAD");

    uint64_t cs[8];
    rc = 0;
    for (int k = 0; k < 8; k++) rc |= movelab_icopy(e, src + k * 1000, dst + k * 1000, 1000, &cs[k]);
    rc |= movelab_wait_all(e);
    printf("wait_all: %s\n", rc == 0 && check_bytes(src, dst, 8000) ? "ok" : "BAD");
    printf("null src: %s\n", movelab_copy(e, NULL, dst, 10) == MOVELAB_EINVAL ? "EINVAL" : "WRONG");
    printf("zero length: %s\n", movelab_copy(e, NULL, NULL, 0) == MOVELAB_OK ? "ok" : "BAD");

    /* destroy with an operation in flight: must wait for it */
    memset(dst, 0, n);
    rc = movelab_icopy(e, src, dst, n, &c);
    movelab_engine_destroy(e);
    printf("destroy in flight: %s\n", rc == 0 && check_bytes(src, dst, n) ? "ok" : "BAD");
    free(src); free(dst); free(small);
    return 0;
}
