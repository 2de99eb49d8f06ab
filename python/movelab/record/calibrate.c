/* movelab's per-call calibration program: run under the recording interposer (movelab record), it
 * makes calls of known sizes on buffers that are hot in the caches, so that the time the
 * interposer measures inside them is the call's fixed cost (the jump through the PLT, the C
 * library's size dispatch, the return, the clock reads the correction leaves) plus a copy of
 * bytes that are already in the L1 cache. The replay (calibration.py) subtracts the simulated
 * cost of the same hot calls and keeps the rest as the per-call cost of each function.
 *
 * Usage: calibrate REPS [disturbed]. For each size 1, 2, 4, ... 2048 bytes: REPS calls of memcpy, memmove,
 * memset, then calloc+free and a moving realloc (malloc, a guard block, realloc to twice the size
 * plus a line, free), each on
 * the same buffers, after 64 unrecorded warm-up calls (the interposer records them too; the
 * calibration drops the first 64 of each size and function). Called through volatile pointers so
 * the compiler cannot inline or drop the calls. With "disturbed", each memcpy/memmove/memset call
 * is made on buffers 64 KiB further into a 64 MiB arena (not in the private caches, in the last
 * level after the first lap), with 64 KiB of other data read between calls (the private caches
 * filled with something else, as a program's own work does): the same calls in the state the
 * tracked replay calls "llc".
 *
 * Usage: calibrate alloc REPS [cold] [reuse]: the allocator's own path in calloc and a moving realloc, in a
 * heap that has been used (a bench of its own, for the replay's allocator cost; calibration.py,
 * alloc_costs). A pool of 8,192 live blocks of sizes spread log-uniformly over 16 bytes - 4 KiB,
 * every other one then freed (holes of every size in the bins, as a program's heap has after its
 * start-up); then per size class 2^k .. 2^(k+1) - 1, k = 0 .. 12: REPS times, a random pool slot
 * freed and refilled by calloc(1, n) of a random size of the class (each call finds the bins as
 * the previous frees left them; glibc's calloc does not take the per-thread cache), then REPS
 * times a random slot's block (replaced first by one of the class) moved by realloc to twice its size plus
 * a line (a guard block after it keeps realloc from growing it in place). Then REPS memset and
 * memcpy calls of each class's sizes on hot buffers, so that the same run gives the bytes' own
 * cost to subtract. With "cold", 64 KiB of other data (cycling through 1 MiB) is read before each
 * timed call: the level-1 caches emptied of the allocator's bins and code, as a few microseconds of
 * a program's own work do. With "reuse", the calloc calls instead ask for the size of a block freed
 * just before, per size bucket (1-16, 17-32, ... 1009-1024 bytes, then 1-2, 2-4 and 4-8 KiB: 64
 * live blocks of the bucket, each freed and called for again in random order; no realloc pass):
 * the path of a program that frees and allocates blocks of the same sizes, whose allocator hands
 * the freed block back (glibc: from its exact-size bin, as the recording shows by the same address
 * returned again for the same size). The buckets are calibration.ALLOC_REUSE_BOUNDS.
 *
 * Usage: calibrate latency KIB HOPS: the load-to-use latency of a buffer of KIB KiB, by a pointer
 * chase through its lines in a random cyclic order (each load's address comes from the previous
 * load, so nothing overlaps); prints "latency_ns KIB NS" (run without the interposer). With a
 * third argument "huge", the buffer is in 2 MiB pages (madvise(MADV_HUGEPAGE); transparent huge
 * pages set to "madvise" or "always"): no page walk after the first touch of each 2 MiB, so the
 * figure is the caches' own, as the processor's guide states them (the best of 5 timed laps).
 *
 * Usage: calibrate clock: the core's actual clock, from a chain of 1.6 billion dependent integer
 * adds (one cycle each on x86) timed on the thread's CPU time; prints "clock_ghz GHZ". /proc/cpuinfo
 * gives a virtual machine's nominal clock only.
 *
 * Usage: calibrate mlp MIB K HOPS: memory-level parallelism. K independent pointer chases, each
 * through its own part of one random cycle of a MIB MiB buffer in 2 MiB pages (far beyond the last
 * level), advanced one hop each per round, HOPS rounds (the best of 3); prints "mlp K NS_PER_ROUND".
 * While K is below the number of misses the core can keep outstanding, a round takes one memory
 * latency whatever K; past it, rounds grow in proportion to K: K x latency / round is the number
 * in flight.
 *
 * Usage: calibrate fill NBUF ROUNDS: a reply buffer's fill. 1 KiB memcpy calls from 15 hot sources
 * into NBUF buffers of 16 KiB, each filled 1,033 bytes at a time (a bulk reply's framing), the
 * buffers in turn, so that a buffer is written again after the other NBUF - 1 (its lines last
 * written NBUF x 16 KiB ago: a server answering NBUF clients); ROUNDS laps over the buffers after
 * one untimed lap, the best of 3 on the thread's CPU time; prints "fill NBUF NS_PER_COPY". NBUF = 1
 * is the hot copy; the difference is the cost of writing a destination that left the private
 * caches while the source stayed hot (docs/record-replay.md, "Redis's 1-2 KiB copies").
 *
 * Usage: calibrate cold SIZE COPIES: isolated small copies into cold destinations. SIZE-byte memcpy
 * calls from a hot source, each timed on its own (CLOCK_MONOTONIC around the call, as the
 * interposer times a recorded call): COPIES into one destination (hot: the private caches), then
 * COPIES into destinations in memory, one copy per destination, each 8 KiB apart in a 64 MiB arena
 * visited in a random order, in batches of 64: the batch's destination lines written, then a read
 * sweep of 96 MiB (three times the 32 MiB last level Linux reports here: every destination line
 * evicted) and a read of the source (hot again), then the 64 timed copies. Both buffers in 2 MiB pages where the kernel grants them: the figure is the cache miss's
 * own, not a page walk's. Calls over 5 us (a stop of the CPU, trace.STOP_NS) are left out of the
 * means. Prints "cold SIZE HOT_MEAN_NS COLD_MEAN_NS HOT_MEDIAN_NS COLD_MEDIAN_NS CLOCK_NS LEFT_OUT"
 * (CLOCK_NS: the median of back-to-back clock reads; in both means alike). Where the fill above
 * streams 15 copies into each buffer in a row (the prefetchers follow the fill), one copy here is
 * all its destination gets. With a third argument SWEEP_MIB (1 to 1024), the sweep reads that many
 * MiB instead of 96: the destinations were last written that far back (to find the reuse distance
 * at which an isolated copy's destination costs what memory does).
 *
 * Usage: calibrate stream SIZE COPIES SWEEP_KIB: streaming reply copies, timed each on its own as the
 * interposer times a recorded call. A reply is a 16 KiB block filled by a chain of SIZE-byte memcpy
 * calls appended one after another, each after a 9-byte header the program writes itself (a bulk
 * reply's framing: SIZE + 9 bytes a step), from 100 source elements of SIZE bytes read on every
 * reply (a list's elements, hot in the caches). The blocks are in ordinary 4 KiB pages
 * (MADV_NOHUGEPAGE: a server's heap; each new page is a new translation and the end of the
 * prefetchers' stream), 4,096 of them (64 MiB) visited in a random order, in batches of 16: the
 * batch's blocks written, then a read sweep of SWEEP_KIB KiB (other data, in 4 KiB pages: the
 * blocks' reuse distance), the sources read again, then the batch's replies filled, COPIES copies in
 * all. SWEEP_KIB 0: no sweep, every reply into the same block (the hot chain). Prints "stream SIZE
 * SWEEP_KIB MEAN_NS MEDIAN_NS CROSS_MEAN_NS INSIDE_MEAN_NS CLOCK_NS LEFT_OUT" (ns inside a call,
 * the clock read included as in a recorded call's duration; CROSS: the copies whose destination
 * crosses into a new 4 KiB page, INSIDE: the others; calls over 5 us left out of the means).
 *
 * Usage: calibrate tiny SIZE SWEEP_KIB COPIES: a tiny memmove after the program's own work, timed on
 * its own as the interposer times a recorded call. COPIES SIZE-byte memmove calls within one 4 KiB
 * buffer (addresses varying by a few bytes), each after a read of SWEEP_KIB KiB of other data (one
 * load a line, in 4 KiB pages, continuing round a 128 MiB arena: what the program touched between two
 * calls), in four ways: "hot" (no read: back to back), "all" (the read alone: the copy's code, its
 * buffers and their translations as the read left them), "code" (after the read the copy's buffers
 * read again: only the copy's code, the C library's entry and their translations cold) and
 * "buffers" (after the read one memmove of other bytes: the code hot again, the buffers cold).
 * Prints "tiny SIZE SWEEP_KIB HOT ALL CODE BUFFERS HOT_MED ALL_MED CODE_MED BUFFERS_MED CLOCK_NS
 * LEFT_OUT": mean and median ns a call, the clock read included; calls over 5 us left out of the
 * means. SWEEP_KIB 0: the read is empty (a gap of the same loop without a touch). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static void *(*volatile cp)(void *, const void *, size_t) = memcpy;
static void *(*volatile mv)(void *, const void *, size_t) = memmove;
static void *(*volatile st)(void *, int, size_t) = memset;
static void *(*volatile cl)(size_t, size_t) = calloc;
static void *(*volatile ra)(void *, size_t) = realloc;

static char a[4096] __attribute__((aligned(64))), b[4096] __attribute__((aligned(64)));

#define ARENA (64L << 20)
#define STEP (64L << 10)
static volatile long sink;

/* Reads 64 KiB of other data (one load per line). */
static void disturb(const char *other, long i) {
    long s = 0;
    const char *p = other + (i * STEP) % ARENA;
    for (long j = 0; j < STEP; j += 64) s += p[j];
    sink += s;
}

static int disturbed_run(long reps) {
    char *arena = malloc(ARENA), *other = malloc(ARENA);
    if (!arena || !other) return 1;
    for (long j = 0; j < ARENA; j += 4096) arena[j] = other[j] = 1; /* faults taken here, not in calls */
    for (size_t n = 1; n <= 2048; n *= 2) {
        for (long i = 0; i < reps + 64; i++) {
            char *d = arena + (i * STEP) % ARENA;
            disturb(other, i);
            cp(d, d + STEP / 2, n);
        }
        for (long i = 0; i < reps + 64; i++) {
            char *d = arena + (i * STEP) % ARENA;
            disturb(other, i);
            mv(d, d + STEP / 2, n);
        }
        for (long i = 0; i < reps + 64; i++) {
            char *d = arena + (i * STEP) % ARENA;
            disturb(other, i);
            st(d, 0, n);
        }
    }
    free(arena);
    free(other);
    return 0;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static char *volatile chase_end;
static uint64_t next_rand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double thread_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* n bytes (rounded up to 2 MiB) in 2 MiB pages where the kernel grants them, touched; NULL if the
 * mapping fails. */
static char *huge_buffer(size_t n) {
    size_t a = 2UL << 20;
    n = (n + a - 1) / a * a;
    char *m = mmap(NULL, n + a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    char *p = (char *)(((uintptr_t)m + a - 1) / a * a);
    madvise(p, n, MADV_HUGEPAGE);
    for (size_t i = 0; i < n; i += 4096) p[i] = 0;
    return p;
}

/* A random cycle through every line of buf (order: scratch of `lines` entries). */
static void random_cycle(char *buf, long lines, long *order) {
    for (long i = 0; i < lines; i++) order[i] = i;
    for (long i = lines - 1; i > 0; i--) {
        long j = (long)(next_rand() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (long i = 0; i < lines; i++) *(char **)(buf + order[i] * 64) = buf + order[(i + 1) % lines] * 64;
}

static int clock_run(void) {
    long n = 400000000;
    uint64_t x = 1;
    double t0 = thread_ns();
    for (long i = 0; i < n; i++) __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
    double t = thread_ns() - t0;
    sink += (long)x;
    printf("clock_ghz %.3f\n", 4.0 * (double)n / t);
    return 0;
}

/* K chases, one hop each per round (kept out of line so that the chases stay in registers). */
__attribute__((noinline)) static void mlp_rounds(char **p, int k, long hops) {
    char *q[64];
    for (int j = 0; j < k; j++) q[j] = p[j];
    for (long i = 0; i < hops; i++)
        for (int j = 0; j < k; j++) {
            q[j] = *(char **)q[j];
            __asm__ volatile("" : "+r"(q[j]));
        }
    for (int j = 0; j < k; j++) p[j] = q[j];
}

static int mlp(long mib, int k, long hops) {
    long lines = mib * 1024 * 16;
    if (mib < 1 || mib > 4096 || k < 1 || k > 64 || hops < 1) {
        fprintf(stderr, "calibrate: mlp needs 1 <= MIB <= 4096, 1 <= K <= 64 and HOPS >= 1\n");
        return 2;
    }
    char *buf = huge_buffer((size_t)lines * 64);
    long *order = malloc(sizeof(long) * (size_t)lines);
    if (!buf || !order) return 1;
    random_cycle(buf, lines, order);
    char *p[64];
    for (int j = 0; j < k; j++) p[j] = buf + order[(long)j * (lines / k)] * 64;
    double best = 1e300;
    for (int r = 0; r < 3; r++) {
        double t0 = thread_ns();
        mlp_rounds(p, k, hops);
        double t = thread_ns() - t0;
        if (t < best) best = t;
    }
    for (int j = 0; j < k; j++) chase_end = p[j];
    printf("mlp %d %.3f\n", k, best / (double)hops);
    free(order);
    return 0;
}

/* huge: the buffer in 2 MiB pages, the best of 5 timed laps; else 4 KiB pages, one timed lap. */
static int latency(long kib, long hops, int huge) {
    long lines = kib * 1024 / 64;
    if (kib < 4 || hops < 1 || lines > (1L << 26)) {
        fprintf(stderr, "calibrate: latency needs KIB >= 4 (at most 4 GiB) and HOPS >= 1\n");
        return 2;
    }
    char *buf = huge ? huge_buffer((size_t)lines * 64) : aligned_alloc(4096, (size_t)lines * 64);
    long *order = malloc(sizeof(long) * (size_t)lines);
    if (!buf || !order) return 1;
    random_cycle(buf, lines, order);
    char *p = buf + order[0] * 64;
    for (long i = 0; i < lines; i++) p = *(char **)p; /* one lap: the buffer where it settles */
    /* the thread's CPU time: a shared machine's preemptions are not counted */
    double best = 1e300;
    for (int r = 0; r < (huge ? 5 : 1); r++) {
        double t0 = thread_ns();
        for (long i = 0; i < hops; i++) {
            p = *(char **)p;
            __asm__ volatile("" : "+r"(p)); /* one hop after another: nothing hoisted or merged */
        }
        double t = thread_ns() - t0;
        if (t < best) best = t;
    }
    chase_end = p; /* keeps the chase */
    printf("latency_ns %ld %.3f\n", kib, best / (double)hops);
    free(order);
    if (!huge) free(buf);
    return 0;
}

#define POOL 8192
static char *pool[POOL];

/* A size in [16, 4096), log-uniform. */
static size_t pool_size(void) {
    unsigned sh = 4 + (unsigned)(next_rand() % 8);
    return ((size_t)1 << sh) + (size_t)(next_rand() % ((size_t)1 << sh));
}

/* A size in [2^k, 2^(k+1)). */
static size_t class_size(unsigned k) {
    return ((size_t)1 << k) + (size_t)(next_rand() % ((size_t)1 << k));
}

/* The reuse pass's live blocks of one size bucket: a calloc of a block's own size right after its
 * free (usage above). */
#define REUSE_SLOTS 64

static int alloc_run(long reps, int cold, int reuse) {
    char *other = cold ? malloc(1L << 20) : NULL;
    if (cold && !other) return 1;
    if (other)
        for (long j = 0; j < (1L << 20); j += 64) other[j] = 1;
    for (int i = 0; i < POOL; i++) {
        pool[i] = malloc(pool_size());
        if (!pool[i]) return 1;
        pool[i][0] = 1;
    }
    for (int i = 0; i < POOL; i += 2) {
        free(pool[i]);
        pool[i] = NULL;
    }
    if (reuse) {
        /* Per size bucket (16-byte steps up to 1 KiB, then 1-2, 2-4 and 4-8 KiB: the allocators'
         * bins are by size, and a program's sizes within a power-of-two class are its own), REUSE_SLOTS
         * pool slots hold blocks of the bucket (malloc and free are not recorded); each timed calloc
         * asks for the size of the block just freed. */
        for (size_t lo = 1, hi = 16; hi <= 8192; lo = hi + 1, hi = hi < 1024 ? hi + 16 : 2 * hi) {
            int slot[REUSE_SLOTS];
            size_t size[REUSE_SLOTS];
            for (int q = 0; q < REUSE_SLOTS; q++) {
                slot[q] = (int)(next_rand() % POOL);
                free(pool[slot[q]]);
                size[q] = lo + (size_t)(next_rand() % (hi - lo + 1));
                pool[slot[q]] = malloc(size[q]);
                if (!pool[slot[q]]) return 1;
            }
            for (long i = 0; i < reps; i++) {
                int q = (int)(next_rand() % REUSE_SLOTS);
                free(pool[slot[q]]);
                if (other) disturb(other, i % 16);
                pool[slot[q]] = cl(1, size[q]);
                if (!pool[slot[q]]) return 1;
            }
        }
    }
    for (unsigned k = 0; k <= 12 && !reuse; k++) {
        for (long i = 0; i < reps; i++) {
            int j = (int)(next_rand() % POOL);
            free(pool[j]);
            if (other) disturb(other, i % 16);
            pool[j] = cl(1, class_size(k));
            if (!pool[j]) return 1;
        }
        for (long i = 0; i < reps; i++) {
            int j = (int)(next_rand() % POOL);
            size_t n = class_size(k);
            free(pool[j]); /* a block of the class (malloc and free are not recorded) */
            char *p = malloc(n);
            if (!p) return 1;
            p[0] = 1;
            char *guard = malloc(16);
            if (other) disturb(other, i % 16);
            pool[j] = ra(p, 2 * n + 64);
            free(guard);
            if (!pool[j]) return 1;
        }
    }
    for (unsigned k = 0; k <= 11; k++) {
        for (long i = 0; i < reps; i++) {
            if (other) disturb(other, i % 16);
            st(b, 0, class_size(k));
        }
        for (long i = 0; i < reps; i++) {
            if (other) disturb(other, i % 16);
            cp(b, a, class_size(k));
        }
    }
    for (int i = 0; i < POOL; i++) free(pool[i]);
    free(other);
    return 0;
}

/* NBUF reply buffers of 16 KiB filled in turn by 1 KiB copies from hot sources (usage above). */
static int fill(long nbuf, long rounds) {
    if (nbuf < 1 || nbuf > 65536 || rounds < 1 || rounds > 1000000) {
        fprintf(stderr, "calibrate: fill needs 1 <= NBUF <= 65536 and 1 <= ROUNDS <= 1000000\n");
        return 2;
    }
    const size_t bs = 16384, step = 1033, per = bs / step;
    char *bufs = aligned_alloc(4096, bs * (size_t)nbuf);
    char *src = aligned_alloc(4096, per * 1028 + 64);
    if (!bufs || !src) return 1;
    memset(bufs, 1, bs * (size_t)nbuf);
    memset(src, 2, per * 1028 + 64);
    double best = 1e300;
    for (int r = 0; r < 4; r++) {
        double t0 = thread_ns();
        for (long k = 0; k < (r ? rounds : 1); k++)
            for (long b = 0; b < nbuf; b++)
                for (size_t i = 0; i < per; i++) cp(bufs + (size_t)b * bs + 3 + i * step, src + 5 + i * 1028, 1024);
        double t = thread_ns() - t0;
        if (r && t < best) best = t;
    }
    printf("fill %ld %.3f\n", nbuf, best / (double)(rounds * nbuf * (long)per));
    free(bufs);
    free(src);
    return 0;
}

static double mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* order[0..n) = 0..n-1 in a random order. */
static void shuffled(long *order, long n) {
    for (long i = 0; i < n; i++) order[i] = i;
    for (long i = n - 1; i > 0; i--) {
        long j = (long)(next_rand() % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* The median of 101 back-to-back clock reads (the cost one timed call includes). */
static double clock_read_ns(void) {
    double clk[101];
    for (int i = 0; i < 101; i++) {
        double t0 = mono_ns();
        clk[i] = mono_ns() - t0;
    }
    qsort(clk, 101, sizeof(double), cmp_double);
    return clk[50];
}

/* The mean of the values up to 5 us (the rest counted in *left_out) and the median of all. */
static double mean_below(const double *v, long n, long *left_out, double *median, double *scratch) {
    double s = 0;
    long k = 0;
    for (long i = 0; i < n; i++) {
        scratch[i] = v[i];
        if (v[i] <= 5000.0) {
            s += v[i];
            k++;
        }
    }
    *left_out += n - k;
    qsort(scratch, (size_t)n, sizeof(double), cmp_double);
    *median = scratch[n / 2];
    return k ? s / (double)k : 0.0;
}

#define COLD_ARENA (64L << 20)
#define COLD_SWEEP_MIB 96L
#define COLD_STRIDE 8192L
#define COLD_BATCH 64

/* Isolated SIZE-byte copies into a hot and into cold destinations (usage above). */
static int cold_copies(long size, long copies, long sweep_mib) {
    if (size < 1 || size > 4096 || copies < 1 || copies > 1000000 || sweep_mib < 1 || sweep_mib > 1024) {
        fprintf(stderr, "calibrate: cold needs 1 <= SIZE <= 4096 and 1 <= COPIES <= 1000000 (and 1 <= SWEEP_MIB <= 1024)\n");
        return 2;
    }
    const long sweep_bytes = sweep_mib << 20;
    char *dst = huge_buffer(COLD_ARENA), *sweep = huge_buffer((size_t)sweep_bytes), *src = aligned_alloc(4096, 8192);
    long slots = COLD_ARENA / COLD_STRIDE;
    long *order = malloc(sizeof(long) * (size_t)slots);
    double *hot = malloc(sizeof(double) * (size_t)copies), *cold = malloc(sizeof(double) * (size_t)copies),
           *scratch = malloc(sizeof(double) * (size_t)copies);
    if (!dst || !sweep || !src || !order || !hot || !cold || !scratch) return 1;
    memset(src, 2, 8192);
    shuffled(order, slots);
    double clock = clock_read_ns();
    for (long i = 0; i < copies + 64; i++) {
        double t0 = mono_ns();
        cp(dst + 3, src + 5, (size_t)size);
        double t = mono_ns() - t0;
        if (i >= 64) hot[i - 64] = t;
    }
    long done = 0, next = 0;
    while (done < copies) {
        long s = 0, first = next;
        /* the batch's destinations written first: the sweep is then their reuse distance */
        for (long b = 0; b < COLD_BATCH; b++) {
            char *d = dst + order[(first + b) % slots] * COLD_STRIDE;
            for (long j = 0; j < size + 3; j += 64) d[j] = 1;
        }
        for (long j = 0; j < sweep_bytes; j += 64) s += sweep[j];
        for (long j = 0; j < 8192; j += 64) s += src[j];
        sink += s;
        for (long b = 0; b < COLD_BATCH && done < copies; b++) {
            char *d = dst + order[next++ % slots] * COLD_STRIDE + 3;
            double t0 = mono_ns();
            cp(d, src + 5, (size_t)size);
            cold[done++] = mono_ns() - t0;
        }
    }
    long left_out = 0;
    double hot_med, cold_med;
    double hot_mean = mean_below(hot, copies, &left_out, &hot_med, scratch);
    double cold_mean = mean_below(cold, copies, &left_out, &cold_med, scratch);
    printf("cold %ld %.3f %.3f %.3f %.3f %.3f %ld\n", size, hot_mean, cold_mean, hot_med, cold_med, clock, left_out);
    free(order);
    free(hot);
    free(cold);
    free(scratch);
    free(src);
    return 0;
}

#define STREAM_ARENA (64L << 20)
#define STREAM_BLOCK 16384L
#define STREAM_BATCH 16
#define STREAM_ELEMS 100

/* n bytes in ordinary 4 KiB pages (transparent huge pages refused), touched; NULL on failure. */
static char *small_page_buffer(size_t n) {
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    madvise(p, n, MADV_NOHUGEPAGE);
    for (size_t i = 0; i < n; i += 4096) p[i] = 0;
    return p;
}

/* A chain of SIZE-byte copies appended into reply blocks last written SWEEP_KIB KiB ago (usage above). */
static int stream_copies(long size, long copies, long sweep_kib) {
    if (size < 64 || size > 4096 || copies < 1 || copies > 1000000 || sweep_kib < 0 || sweep_kib > (1L << 20)) {
        fprintf(stderr, "calibrate: stream needs 64 <= SIZE <= 4096, 1 <= COPIES <= 1000000 and 0 <= SWEEP_KIB <= 1048576\n");
        return 2;
    }
    const long step = size + 9, per = STREAM_BLOCK / step, blocks = STREAM_ARENA / STREAM_BLOCK;
    const size_t sweep_bytes = (size_t)(sweep_kib > 0 ? sweep_kib : 1) << 10;
    char *arena = small_page_buffer((size_t)STREAM_ARENA), *sweep = small_page_buffer(sweep_bytes);
    char *src = aligned_alloc(4096, (size_t)(STREAM_ELEMS * (size + 16)));
    long *order = malloc(sizeof(long) * (size_t)blocks);
    double *t = malloc(sizeof(double) * (size_t)copies), *scratch = malloc(sizeof(double) * (size_t)copies);
    char *cross = malloc((size_t)copies);
    if (!arena || !sweep || !src || !order || !t || !scratch || !cross || per < 1) return 1;
    memset(src, 2, (size_t)(STREAM_ELEMS * (size + 16)));
    shuffled(order, blocks);
    double clock = clock_read_ns();
    long done = 0, next = 0, elem = 0, warm = 64;
    while (done < copies) {
        long s = 0, first = next;
        if (sweep_kib > 0) {
            /* the batch's blocks written first: the sweep is then their reuse distance */
            for (long b = 0; b < STREAM_BATCH; b++) memset(arena + order[(first + b) % blocks] * STREAM_BLOCK, 1, STREAM_BLOCK);
            for (size_t j = 0; j < sweep_bytes; j += 64) s += sweep[j];
        }
        for (long j = 0; j < STREAM_ELEMS * (size + 16); j += 64) s += src[j];
        sink += s;
        for (long b = 0; b < STREAM_BATCH && done < copies; b++) {
            char *blk = arena + (sweep_kib > 0 ? order[next++ % blocks] : 0) * STREAM_BLOCK;
            for (long i = 0; i < per && done < copies; i++) {
                char *d = blk + i * step;
                memcpy(d, "$1024\r\n", 7); /* the header the program writes itself */
                d[size + 7] = '\r';
                const char *from = src + (elem++ % STREAM_ELEMS) * (size + 16) + 5;
                uintptr_t a = (uintptr_t)(d + 7);
                double t0 = mono_ns();
                cp(d + 7, from, (size_t)size);
                double x = mono_ns() - t0;
                if (warm > 0) {
                    warm--;
                    continue;
                }
                cross[done] = (a >> 12) != ((a + (uintptr_t)size - 1) >> 12);
                t[done++] = x;
            }
        }
    }
    long left_out = 0, nc = 0, ni = 0;
    double med, sc = 0, si = 0;
    double mean = mean_below(t, copies, &left_out, &med, scratch);
    for (long i = 0; i < copies; i++) {
        if (t[i] > 5000.0) continue;
        if (cross[i]) { sc += t[i]; nc++; } else { si += t[i]; ni++; }
    }
    printf("stream %ld %ld %.3f %.3f %.3f %.3f %.3f %ld\n", size, sweep_kib, mean, med, nc ? sc / (double)nc : 0.0,
           ni ? si / (double)ni : 0.0, clock, left_out);
    munmap(arena, (size_t)STREAM_ARENA);
    munmap(sweep, sweep_bytes);
    free(src);
    free(order);
    free(t);
    free(scratch);
    free(cross);
    return 0;
}

#define TINY_ARENA (128L << 20)

/* Tiny memmove calls after a read of SWEEP_KIB KiB of other data (usage above). */
static int tiny_copies(long size, long sweep_kib, long copies) {
    if (size < 1 || size > 256 || sweep_kib < 0 || sweep_kib > (TINY_ARENA >> 10) || copies < 1 || copies > 1000000) {
        fprintf(stderr, "calibrate: tiny needs 1 <= SIZE <= 256, 0 <= SWEEP_KIB <= 131072 and 1 <= COPIES <= 1000000\n");
        return 2;
    }
    char *buf = small_page_buffer(4096), *other = small_page_buffer(4096), *arena = small_page_buffer(TINY_ARENA);
    double *t[4], *scratch = malloc(sizeof(double) * (size_t)copies);
    for (int m = 0; m < 4; m++) t[m] = malloc(sizeof(double) * (size_t)copies);
    if (!buf || !other || !arena || !scratch || !t[0] || !t[1] || !t[2] || !t[3]) return 1;
    const long sweep = sweep_kib << 10;
    long pos = 0;
    double clock = clock_read_ns();
    for (int m = 0; m < 4; m++) {
        for (long i = 0; i < copies + 64; i++) {
            char *d = buf + 128 + (i & 7), *src = buf + 1024 + (i & 15);
            if (m > 0) {
                long s = 0;
                for (long j = 0; j < sweep; j += 64) {
                    s += arena[pos];
                    pos += 64;
                    if (pos >= TINY_ARENA) pos = 0;
                }
                if (m == 2) s += d[0] + d[size - 1] + src[0] + src[size - 1]; /* the buffers hot again */
                if (m == 3) mv(other + 128, other + 1024, (size_t)size);      /* the code hot again */
                sink += s;
            }
            double t0 = mono_ns();
            mv(d, src, (size_t)size);
            double dt = mono_ns() - t0;
            if (i >= 64) t[m][i - 64] = dt;
        }
    }
    long left_out = 0;
    double mean[4], med[4];
    for (int m = 0; m < 4; m++) mean[m] = mean_below(t[m], copies, &left_out, &med[m], scratch);
    printf("tiny %ld %ld %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f %.3f %ld\n", size, sweep_kib, mean[0], mean[1], mean[2],
           mean[3], med[0], med[1], med[2], med[3], clock, left_out);
    for (int m = 0; m < 4; m++) free(t[m]);
    free(scratch);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "alloc") == 0) {
        long reps = strtol(argv[2], NULL, 10);
        if (reps < 1 || reps > 1000000) {
            fprintf(stderr, "calibrate: alloc REPS must be between 1 and 1000000\n");
            return 2;
        }
        int cold = 0, reuse = 0;
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "cold") == 0) cold = 1;
            else if (strcmp(argv[i], "reuse") == 0) reuse = 1;
            else {
                fprintf(stderr, "calibrate: alloc takes REPS [cold] [reuse], got %s\n", argv[i]);
                return 2;
            }
        }
        return alloc_run(reps, cold, reuse);
    }
    if (argc > 3 && strcmp(argv[1], "latency") == 0)
        return latency(strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10), argc > 4 && strcmp(argv[4], "huge") == 0);
    if (argc > 1 && strcmp(argv[1], "clock") == 0) return clock_run();
    if (argc > 3 && strcmp(argv[1], "fill") == 0) return fill(strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10));
    if (argc > 3 && strcmp(argv[1], "cold") == 0)
        return cold_copies(strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10),
                           argc > 4 ? strtol(argv[4], NULL, 10) : COLD_SWEEP_MIB);
    if (argc > 4 && strcmp(argv[1], "stream") == 0)
        return stream_copies(strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10));
    if (argc > 4 && strcmp(argv[1], "tiny") == 0)
        return tiny_copies(strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10));
    if (argc > 4 && strcmp(argv[1], "mlp") == 0)
        return mlp(strtol(argv[2], NULL, 10), (int)strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10));
    long reps = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
    if (reps < 1 || reps > 10000000) {
        fprintf(stderr, "calibrate: REPS must be between 1 and 10000000\n");
        return 2;
    }
    if (argc > 2 && strcmp(argv[2], "disturbed") == 0) return disturbed_run(reps);
    for (size_t n = 1; n <= 2048; n *= 2) {
        for (long i = 0; i < reps + 64; i++) cp(b, a, n);
        for (long i = 0; i < reps + 64; i++) mv(b, a, n);
        for (long i = 0; i < reps + 64; i++) st(b, 0, n);
        for (long i = 0; i < reps + 64; i++) free(cl(1, n));
        for (long i = 0; i < reps + 64; i++) {
            char *p = malloc(n);
            char *guard = malloc(16); /* the block after p is taken: the realloc must move */
            char *q = ra(p, 2 * n + 64);
            free(guard);
            free(q);
        }
    }
    return (int)(a[0] + b[0]);
}
