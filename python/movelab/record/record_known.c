/* A program with known copies and initialisations, for the recording tests and the recording
 * benchmark (movelab bench record, program gcc compiles it). Distinctive sizes
 * let the test pick its own calls out of whatever the C library does. Run with no argument:
 *   main:   memcpy 4099 x10, __memcpy_chk 77 x2, memset(0x5a) 1001 x7, memmove 301 x5,
 *           calloc(16, 65) x3, realloc 100 -> 1 MiB x1 (prints the usable size it copies),
 *           4 threads x memcpy 513 x100, a fork whose child does memset 2049 x6,
 *           then exec of itself with "child": memcpy 8193 x2 (same pid, new image). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

extern void *__memcpy_chk(void *, const void *, size_t, size_t);

static void *(*volatile cp)(void *, const void *, size_t) = memcpy;
static void *(*volatile mv)(void *, const void *, size_t) = memmove;
static void *(*volatile st)(void *, int, size_t) = memset;
static void *(*volatile cl)(size_t, size_t) = calloc;
static void *(*volatile ra)(void *, size_t) = realloc;

static char a[1 << 16], b[1 << 16];

static void *worker(void *arg) {
    char *s = malloc(513), *d = malloc(513);
    st(s, 1, 0); /* a zero-byte call: recorded too (size 0) */
    for (int i = 0; i < 100; i++) cp(d, s, 513);
    free(s);
    free(d);
    return arg;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        for (int i = 0; i < 2; i++) cp(b, a, 8193);
        printf("exec ok\n");
        return 0;
    }
    for (int i = 0; i < 10; i++) cp(b, a, 4099);
    for (int i = 0; i < 2; i++) __memcpy_chk(b, a, 77, sizeof b);
    for (int i = 0; i < 7; i++) st(b, 0x5a, 1001);
    for (int i = 0; i < 5; i++) mv(b + 1, b, 301);
    for (int i = 0; i < 3; i++) free(cl(16, 65));
    char *p = malloc(100);
    size_t usable = malloc_usable_size(p);
    char *q = ra(p, 1 << 20);
    printf("realloc usable=%zu moved=%d\n", usable, q != p);
    free(q);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 6; i++) st(b, 0, 2049);
        exit(0);
    }
    int status = 0;
    waitpid(c, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 3;
    fflush(stdout);
    execl(argv[0], argv[0], "child", (char *)NULL);
    perror("execl");
    return 4;
}
