/* A C program against the onload C API after fork(): in the child every call on the parent's engine
 * and socket returns MOVELAB_EFORKED at once (a blocking receive included), closing and destroying
 * only let go, and the child exits normally; the parent's engine is untouched. One line per check. */
#define _DEFAULT_SOURCE
#include "movelab_host.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int forked(int rc) { return rc == MOVELAB_EFORKED && strstr(movelab_last_error(), "forked child") != NULL; }

int main(void) {
    movelab_onload *o = movelab_onload_create(
        "{\"replay\": {\"payload_bytes\": 64, \"count\": 4, \"pool_frames\": 4, \"port\": 9200, \"gated\": true},"
        " \"idle_spin_us\": 50}");
    if (!o) { printf("create failed: %s\n", movelab_last_error()); return 1; }
    movelab_udp_socket *s = movelab_udp_bind(o, 9200);
    static unsigned char bufs[4][2048];
    for (int i = 0; i < 4; i++) movelab_udp_post(s, bufs[i], sizeof bufs[i], (uint64_t)i);
    printf("codes distinct: %s\n", MOVELAB_EFORKED != MOVELAB_ESTOPPED ? "ok" : "BAD");
    fflush(stdout);

    pid_t pid = fork();
    if (pid == 0) {
        movelab_udp_completion c;
        movelab_onload_counters st;
        static unsigned char extra[64];
        int ok = forked(movelab_udp_recv(s, -1, &c)) && forked(movelab_udp_recv(s, 0, &c)) &&
                 forked(movelab_udp_recv(s, 100, &c)) && forked(movelab_udp_post(s, extra, sizeof extra, 9)) &&
                 forked(movelab_udp_send(s, "x", 1, (10u << 24) | (77u << 16) | 2u, 6000)) &&
                 forked(movelab_onload_stats(o, &st)) && forked(movelab_onload_go(o));
        movelab_udp_socket *again = movelab_udp_bind(o, 9201);
        ok = ok && again == NULL && strstr(movelab_last_error(), "forked child") != NULL;
        movelab_udp_close(s);     /* lets go */
        movelab_onload_destroy(o); /* lets go: no join of the parent's thread */
        printf("child: %s\n", ok ? "every call refused" : "WRONG");
        fflush(stdout);
        exit(ok ? 0 : 3);          /* a normal exit */
    }
    /* Wait for the child, at most 20 s (a hang is a failure, not a stuck test). */
    int status = 0;
    struct timespec t = {0, 5 * 1000 * 1000};
    for (int k = 0; k < 4000 && waitpid(pid, &status, WNOHANG) == 0; k++) nanosleep(&t, NULL);
    if (waitpid(pid, &status, WNOHANG) == 0 && kill(pid, 0) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        printf("child: HUNG\n");
        return 1;
    }
    printf("child exit: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    movelab_onload_go(o);
    movelab_udp_completion c;
    int got = 0;
    while (got < 4 && movelab_udp_recv(s, 5000, &c) == 1 && c.ok && c.len == 64) got++;
    printf("parent: %s\n", got == 4 ? "received" : "BAD");
    movelab_udp_close(s);
    movelab_onload_destroy(o);
    return 0;
}
