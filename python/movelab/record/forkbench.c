/* forkbench: RowClone's (Seshadri et al., MICRO 2013) section 7.2 benchmark as a real program, to be
 * recorded on this machine (`movelab bench rowclone-apps`).
 *
 *   forkbench SIZE_MB PAGES [SEED]
 *
 * The parent allocates SIZE_MB of memory and fills every 8-byte word with pseudo-random values
 * (ordinary stores: the kernel zeroes each page on its first touch), then forks. The child writes
 * one 8-byte word in each of PAGES pages chosen at random (each first write to a page still shared
 * with the parent is a copy-on-write fault: the kernel copies the 4 KiB page), then exits; the
 * parent waits for it. The values are not zero, so no compiler turns the fill into memset.
 * Exit status: 0, or 2 on bad arguments, 1 when a system call fails.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096u

static uint64_t next(uint64_t *s) {
    /* xorshift64: enough for choosing pages and filling words */
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *s = x;
    return x;
}

static int parse(const char *text, const char *what, unsigned long lo, unsigned long hi, unsigned long *out) {
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "forkbench: %s '%s' must be an integer from %lu to %lu\n", what, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int main(int argc, char **argv) {
    unsigned long mb, pages, seed = 1;
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: forkbench SIZE_MB PAGES [SEED]\n");
        return 2;
    }
    if (parse(argv[1], "SIZE_MB", 1, 4096, &mb) || parse(argv[2], "PAGES", 0, 1UL << 30, &pages) ||
        (argc == 4 && parse(argv[3], "SEED", 1, ~0UL, &seed)))
        return 2;
    size_t bytes = (size_t)mb << 20;
    size_t npages = bytes / PAGE;
    uint64_t *buf = malloc(bytes);
    if (buf == NULL) {
        perror("forkbench: malloc");
        return 1;
    }
    uint64_t s = seed;
    for (size_t i = 0; i < bytes / sizeof *buf; i++)
        buf[i] = next(&s) | 1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("forkbench: fork");
        return 1;
    }
    if (pid == 0) {
        uint64_t c = seed * 2654435761u + 1;
        for (unsigned long k = 0; k < pages; k++) {
            size_t page = (size_t)(next(&c) % npages);
            buf[page * (PAGE / sizeof *buf) + next(&c) % (PAGE / sizeof *buf)] = k + 1;
        }
        exit(0); /* not _exit: the recorder's per-process footer is written at exit */
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) {
        perror("forkbench: waitpid");
        return 1;
    }
    /* one word at an index known only at run time keeps the whole fill observable (and the parent's
     * work after the fork negligible: a recording of its counters stands for the child's too) */
    printf("%llu\n", (unsigned long long)(buf[next(&s) % (bytes / sizeof *buf)] & 1));
    free(buf);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
