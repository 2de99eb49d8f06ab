/* A C program against the onload part of the movelab-host C API; prints one line per check. */
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

int main(void) {
    movelab_onload *bad = movelab_onload_create("{\"burst\": 0}");
    printf("bad spec: %s\n", bad == NULL && strstr(movelab_last_error(), "burst") ? "rejected" : "ACCEPTED");

    movelab_onload *o = movelab_onload_create(
        "{\"replay\": {\"payload_bytes\": 1472, \"count\": 32, \"pool_frames\": 32, \"port\": 9000, \"gated\": true},"
        " \"idle_spin_us\": 50}");
    if (!o) { printf("create failed: %s\n", movelab_last_error()); return 1; }
    movelab_udp_socket *s = movelab_udp_bind(o, 9000);
    movelab_udp_socket *dup = movelab_udp_bind(o, 9000);
    printf("double bind: %s\n", s && !dup ? "rejected" : "WRONG");
    printf("post null: %s\n", movelab_udp_post(s, NULL, 10, 0) == MOVELAB_EINVAL ? "EINVAL" : "WRONG");

    enum { N = 32 };
    unsigned char *bufs = malloc(N * 2048);
    int rc = 0;
    for (int i = 0; i < N; i++) rc |= movelab_udp_post(s, bufs + i * 2048, 2048, (uint64_t)i);
    movelab_udp_completion c;
    printf("poll before go: %s\n", movelab_udp_recv(s, 0, &c) == 0 ? "empty" : "WRONG");
    rc |= movelab_onload_go(o);
    int good = 0;
    for (int i = 0; i < N; i++) {
        if (movelab_udp_recv(s, -1, &c) != 1) break;
        if (c.ok && c.len == 1472 && c.tag == (uint64_t)i && c.src_port == 40000 &&
            c.src_ip == ((10u << 24) | (77u << 16) | 2u) && payload_ok(bufs + c.tag * 2048, c.len, c.tag))
            good++;
    }
    printf("receive: %s\n", rc == 0 && good == N ? "ok" : "BAD");
    printf("timeout: %s\n", movelab_udp_recv(s, 5, &c) == MOVELAB_EINVAL ? "nothing posted" : "WRONG");

    const char msg[] = "hello onload";
    printf("send: %s\n", movelab_udp_send(s, msg, sizeof msg, (10u << 24) | (77u << 16) | 2u, 6000) == 0 ? "ok" : "BAD");
    movelab_onload_counters st;
    movelab_onload_stats(o, &st);
    printf("stats: %s\n", st.delivered == N && st.tx_frames == 1 && st.dropped == 0 ? "ok" : "BAD");
    movelab_udp_close(s);
    movelab_onload_destroy(o);
    free(bufs);
    printf("destroy: ok\n");
    return 0;
}
