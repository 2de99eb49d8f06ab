/* A C program against the onload C API: a datagram received into a buffer smaller than its payload
 * is handed back with `truncated` set and only the buffer's bytes written (the kernel's MSG_TRUNC),
 * and the datagrams after it arrive whole in the buffers posted after it. One line per check. */
#include "movelab_host.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The replay's payloads: sequence number (little endian) then (k*131 + seq*7 + 1) bytes. */
static int payload_ok(const unsigned char *p, size_t n, uint64_t seq) {
    for (size_t k = 0; k < n; k++) {
        unsigned char want = k < 8 ? (unsigned char)(seq >> (8 * k)) : (unsigned char)(k * 131 + seq * 7 + 1);
        if (p[k] != want) return 0;
    }
    return 1;
}

/* Every byte of [p, p + n) still holds the guard value. */
static int untouched(const unsigned char *p, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (p[k] != 0xA5) return 0;
    return 1;
}

enum { PAYLOAD = 1472, SLOT = 4096, N = 5 };

int main(void) {
    movelab_onload *o = movelab_onload_create(
        "{\"replay\": {\"payload_bytes\": 1472, \"count\": 5, \"pool_frames\": 5, \"port\": 9100, \"gated\": true},"
        " \"idle_spin_us\": 50}");
    if (!o) { printf("create failed: %s\n", movelab_last_error()); return 1; }
    movelab_udp_socket *s = movelab_udp_bind(o, 9100);
    if (!s) { printf("bind failed: %s\n", movelab_last_error()); return 1; }

    /* Five slots, each filled with a guard value; buffer i is posted at the start of slot i with
     * the length below: too small, whole, too small by one byte, exactly the payload, one byte. */
    const size_t lens[N] = {100, 2048, PAYLOAD - 1, PAYLOAD, 1};
    unsigned char *slots = malloc((size_t)N * SLOT);
    if (!slots) return 1;
    memset(slots, 0xA5, (size_t)N * SLOT);
    int rc = 0;
    for (int i = 0; i < N; i++) rc |= movelab_udp_post(s, slots + (size_t)i * SLOT, lens[i], (uint64_t)i);
    rc |= movelab_onload_go(o);
    movelab_udp_completion c[N];
    int got = 0;
    while (got < N && movelab_udp_recv(s, 5000, &c[got]) == 1) got++;
    printf("posted and received: %s\n", rc == 0 && got == N ? "ok" : "BAD");
    if (got != N) return 1;

    for (int i = 0; i < N; i++) {
        const unsigned char *b = slots + (size_t)c[i].tag * SLOT;
        size_t kept = lens[i] < PAYLOAD ? lens[i] : PAYLOAD;
        int in_order = c[i].tag == (uint64_t)i;
        int flag_right = c[i].truncated == (lens[i] < PAYLOAD);
        int bytes_right = c[i].ok && c[i].len == kept && payload_ok(b, kept, (uint64_t)i);
        int nothing_past = untouched(b + kept, SLOT - kept);
        printf("buffer of %zu B: %s%s, %s\n", lens[i], c[i].truncated ? "truncated" : "whole",
               in_order && flag_right ? "" : " (WRONG)",
               bytes_right && nothing_past ? "payload intact" : "BAD BYTES");
    }

    movelab_onload_counters st;
    movelab_onload_stats(o, &st);
    printf("stats: %s\n", st.delivered == N && st.dropped == 0 && st.no_buffer == 0 ? "ok" : "BAD");
    movelab_udp_close(s);
    movelab_onload_destroy(o);
    free(slots);
    return 0;
}
