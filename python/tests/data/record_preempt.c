/* A program whose large copies are preempted on purpose, for movelab's recording tests: it pins
 * itself and a spinning child to one CPU, makes COPIES copies of 128 MiB each, and writes, per copy,
 * the thread's CPU time inside it (CLOCK_THREAD_CPUTIME_ID around the call) to the file named by
 * argv[1], one number of ns a line: the oracle for the interposer's off-CPU time. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COPIES 24
#define BYTES (128u << 20)

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000ll + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 3;
    char *a = malloc(BYTES), *b = malloc(BYTES);
    if (!a || !b) return 4;
    for (unsigned i = 0; i < BYTES; i += 4096) a[i] = b[i] = (char)i; /* faults before the copies */
    pid_t spin = fork();
    if (spin == 0) {
        for (;;) __asm__ volatile("" ::: "memory"); /* shares CPU 0 until killed */
    }
    long long ns[COPIES];
    for (int i = 0; i < COPIES; i++) {
        long long c = cpu_ns();
        memcpy(b, a, BYTES);
        ns[i] = cpu_ns() - c;
    }
    kill(spin, SIGKILL);
    waitpid(spin, NULL, 0);
    FILE *f = fopen(argv[1], "w");
    if (!f) return 5;
    for (int i = 0; i < COPIES; i++) fprintf(f, "%lld\n", ns[i]);
    fclose(f);
    free(a);
    free(b);
    return 0;
}
