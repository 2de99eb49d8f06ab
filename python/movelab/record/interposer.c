/* movelab's recording interposer: an LD_PRELOAD library that records a program's user-space bulk
 * data movement (memcpy, memmove, memset, their _chk variants, calloc, realloc) into a binary file
 * per process image, read by movelab.record.
 *
 * Built by movelab.record._build with the system C compiler:
 *   cc -O2 -fPIC -shared -fno-builtin -fno-tree-loop-distribute-patterns -fvisibility=hidden
 *      -ftls-model=initial-exec interposer.c -o libmovelab_record.so -ldl -lpthread
 * -fno-builtin and -fno-tree-loop-distribute-patterns stop the compiler from turning this file's
 * own loops into calls to memcpy/memset (which would be these very functions).
 *
 * File format (little-endian, see docs/record-replay.md): a 256-byte header, then 64-byte records.
 * Environment: MOVELAB_RECORD_DIR (required; no directory, nothing is recorded),
 * MOVELAB_RECORD_MIN_BYTES (calls smaller than this are counted per size class, not one by one;
 * default 0 = every call), MOVELAB_RECORD_TIME (0: do not time calls; default 1),
 * MOVELAB_RECORD_SCHED (0: do not watch the threads' scheduling; default 1).
 *
 * Scheduling (the time a call spent off the CPU): each thread opens a perf task-clock counter on
 * itself and maps its control page. The kernel rewrites that page's `offset` (the thread's CPU time
 * so far, ns) whenever the thread is scheduled back in, so a call during which `offset` changed was
 * switched out (preempted or blocked): two loads per call, no system call. Once per run slice in
 * which the thread makes a timed call, the counter is read (one read() system call, after that
 * call's end, outside its timed region), which gives the slice's start on the call clock:
 * start = now - (CPU time now - offset). A call switched out between slices k and k+1 was off the
 * CPU for (start[k+1] - start[k]) - (offset[k+1] - offset[k]) ns (exact whatever the number of
 * switches between them), and a call's start less its slice's start is how long the thread had run
 * since it was last scheduled in (caches other programs emptied refill in that time).
 * Stored per call in `extra` (bits 32-63: ns off the CPU, saturated; bits 9-31: run time since
 * scheduled in, in units of 256 ns, saturated) and `flags` (F_SCHED, F_SWITCHED, F_OFFCPU,
 * F_SINCE below).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

enum kind {
    K_MEMCPY = 1,
    K_MEMMOVE = 2,
    K_MEMSET = 3,
    K_CALLOC = 4,
    K_REALLOC = 5,
    K_AGG = 64, /* + kind: a per-size-class aggregate of calls below the threshold */
    K_FOOTER = 255,
};

/* Record flags: the thread's scheduling was watched during the call; it was switched out during
 * the call; the ns off the CPU in extra's high half are known; the run time since it was scheduled
 * in (extra's bits 9-31) is known. */
enum flag {
    F_SCHED = 1,
    F_SWITCHED = 2,
    F_OFFCPU = 4,
    F_SINCE = 8,
};
#define SINCE_SHIFT 9
#define SINCE_UNIT 8 /* log2 of 256 ns */
#define SINCE_MAX ((1ull << 23) - 1)

/* One record, 64 bytes. For an aggregate (kind K_AGG+k): size = total bytes, dst = calls,
 * src = size class (floor(log2(size)), 0 for size 0), dur = total ns, t = when flushed. */
struct rec {
    uint64_t t_ns, dur_ns, dst, src, size, callsite, extra;
    uint32_t tid;
    uint16_t kind, flags;
};
_Static_assert(sizeof(struct rec) == 64, "record is 64 bytes");

#define RING 4096 /* records per thread buffer (256 KiB) */
#define NCLASS 65
#define NKIND 6
#define MAXBUF 4096

struct tbuf {
    volatile uint32_t n;
    uint32_t tid;
    int dead;
    /* scheduling watch: the counter's control page (NULL: not watched), its descriptor, and the
     * run slice whose start on the call clock is known (slice_c: the CPU time at its start). */
    volatile struct perf_event_mmap_page *pg;
    int pfd;
    int slice_ok;
    uint64_t slice_c, slice_s, c_first;
    dev_t pdev;
    ino_t pino;
    struct rec r[RING];
    uint64_t agg_count[NKIND][NCLASS], agg_bytes[NKIND][NCLASS], agg_ns[NKIND][NCLASS];
};

typedef void *(*memcpy_t)(void *, const void *, size_t);
typedef void *(*memset_t)(void *, int, size_t);
typedef void *(*calloc_t)(size_t, size_t);
typedef void *(*realloc_t)(void *, size_t);
typedef void (*free_t)(void *);
typedef size_t (*usable_t)(void *);
typedef int (*execve_t)(const char *, char *const[], char *const[]);
typedef int (*execvp_t)(const char *, char *const[]);
typedef int (*execvpe_t)(const char *, char *const[], char *const[]);
typedef int (*fexecve_t)(int, char *const[], char *const[]);

static memcpy_t real_memcpy, real_memmove;
static memset_t real_memset;
static calloc_t real_calloc;
static realloc_t real_realloc;
static free_t real_free;
static usable_t real_usable;
static execve_t real_execve;
static execvp_t real_execv, real_execvp;
static execvpe_t real_execvpe;
static fexecve_t real_fexecve;

static volatile int resolved, resolving;
static int enabled, fd = -1, timed = 1, sched = 1;
#define MAX_WATCHED 64 /* threads whose scheduling is watched at once (one descriptor each) */
static volatile int watched_threads;
static uint64_t min_bytes;
static char dir[1024];
static uint64_t flush_writes, flush_bytes;

static struct tbuf *bufs[MAXBUF];
static volatile uint32_t nbufs;
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t key;
static int key_ok;

static __thread struct tbuf *mine;
static __thread int in_hook;

/* Memory handed out while dlsym itself allocates, before the real calloc is known. */
static char arena[1 << 16] __attribute__((aligned(64)));
static size_t arena_used;

static int in_arena(const void *p) {
    return (const char *)p >= arena && (const char *)p < arena + sizeof arena;
}

/* Byte loops for calls made while resolving; never turned into library calls (see the flags). */
static void *slow_copy(void *d, const void *s, size_t n) {
    unsigned char *dp = d;
    const unsigned char *sp = s;
    if (dp < sp) {
        for (size_t i = 0; i < n; i++) dp[i] = sp[i];
    } else {
        for (size_t i = n; i > 0; i--) dp[i - 1] = sp[i - 1];
    }
    return d;
}

static void *slow_set(void *d, int c, size_t n) {
    volatile unsigned char *dp = d;
    for (size_t i = 0; i < n; i++) dp[i] = (unsigned char)c;
    return d;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void resolve(void) {
    if (resolved || resolving) return;
    resolving = 1;
    real_memcpy = (memcpy_t)dlsym(RTLD_NEXT, "memcpy");
    real_memmove = (memcpy_t)dlsym(RTLD_NEXT, "memmove");
    real_memset = (memset_t)dlsym(RTLD_NEXT, "memset");
    real_calloc = (calloc_t)dlsym(RTLD_NEXT, "calloc");
    real_realloc = (realloc_t)dlsym(RTLD_NEXT, "realloc");
    real_free = (free_t)dlsym(RTLD_NEXT, "free");
    real_usable = (usable_t)dlsym(RTLD_NEXT, "malloc_usable_size");
    real_execve = (execve_t)dlsym(RTLD_NEXT, "execve");
    real_execv = (execvp_t)dlsym(RTLD_NEXT, "execv");
    real_execvp = (execvp_t)dlsym(RTLD_NEXT, "execvp");
    real_execvpe = (execvpe_t)dlsym(RTLD_NEXT, "execvpe");
    real_fexecve = (fexecve_t)dlsym(RTLD_NEXT, "fexecve");
    resolved = 1;
    resolving = 0;
}

static size_t slen(const char *s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

static void scat(char *d, size_t cap, const char *s) {
    size_t n = slen(d);
    while (*s && n + 1 < cap) d[n++] = *s++;
    d[n] = 0;
}

static void sutoa(char *d, size_t cap, uint64_t v) {
    char t[24];
    int i = 0;
    do {
        t[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    size_t n = slen(d);
    while (i > 0 && n + 1 < cap) d[n++] = t[--i];
    d[n] = 0;
}

static void write_all(const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        c += w;
        n -= (size_t)w;
        flush_bytes += (uint64_t)w;
    }
    flush_writes++;
}

/* The time two back-to-back clock reads take (median of 101), which every measured duration
 * includes; stored in the header so that readers can subtract it. */
static uint64_t clock_overhead;

static void measure_clock(void) {
    uint64_t d[101];
    for (int i = 0; i < 101; i++) {
        uint64_t a = now_ns();
        d[i] = now_ns() - a;
    }
    for (int i = 1; i < 101; i++) /* insertion sort: no library call */
        for (int j = i; j > 0 && d[j - 1] > d[j]; j--) {
            uint64_t t = d[j];
            d[j] = d[j - 1];
            d[j - 1] = t;
        }
    clock_overhead = d[50];
}

/* Opens this image's file, DIR/PID.SEQ.bin (an exec keeps the pid, so SEQ counts up), and writes
 * its header: magic, version, pid, ppid, record size, start time, threshold, executable path (at
 * 40, NUL-terminated, at most 207 bytes), the clock-read overhead in ns (at 248). */
static void open_file(void) {
    char path[1200];
    int pid = getpid();
    for (int seq = 0; seq < 1000 && fd < 0; seq++) {
        path[0] = 0;
        scat(path, sizeof path, dir);
        scat(path, sizeof path, "/");
        sutoa(path, sizeof path, (uint64_t)pid);
        scat(path, sizeof path, ".");
        sutoa(path, sizeof path, (uint64_t)seq);
        scat(path, sizeof path, ".bin");
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        enabled = 0;
        return;
    }
    unsigned char h[256];
    slow_set(h, 0, sizeof h);
    slow_copy(h, "MVLREC01", 8);
    uint32_t v[4] = {1, (uint32_t)pid, (uint32_t)getppid(), (uint32_t)sizeof(struct rec)};
    slow_copy(h + 8, v, sizeof v);
    uint64_t t0 = now_ns();
    slow_copy(h + 24, &t0, 8);
    slow_copy(h + 32, &min_bytes, 8);
    ssize_t k = readlink("/proc/self/exe", (char *)h + 40, 207);
    if (k < 0) k = 0;
    h[40 + k] = 0;
    slow_copy(h + 248, &clock_overhead, 8);
    write_all(h, sizeof h);
}

static void flush_buf(struct tbuf *b) {
    uint32_t n = __atomic_load_n(&b->n, __ATOMIC_ACQUIRE);
    if (n == 0 || fd < 0) return;
    pthread_mutex_lock(&file_lock);
    write_all(b->r, n * sizeof(struct rec));
    pthread_mutex_unlock(&file_lock);
    __atomic_store_n(&b->n, 0, __ATOMIC_RELEASE);
}

static void put(struct tbuf *b, const struct rec *r) {
    uint32_t n = b->n;
    struct rec *s = &b->r[n];
    s->t_ns = r->t_ns;
    s->dur_ns = r->dur_ns;
    s->dst = r->dst;
    s->src = r->src;
    s->size = r->size;
    s->callsite = r->callsite;
    s->extra = r->extra;
    s->tid = r->tid;
    s->kind = r->kind;
    s->flags = r->flags;
    __atomic_store_n(&b->n, n + 1, __ATOMIC_RELEASE);
    if (n + 1 == RING) flush_buf(b);
}

static void flush_aggregates(struct tbuf *b) {
    uint64_t t = now_ns();
    for (int k = 1; k < NKIND; k++)
        for (int c = 0; c < NCLASS; c++) {
            if (!b->agg_count[k][c]) continue;
            struct rec r = {t, b->agg_ns[k][c], b->agg_count[k][c], (uint64_t)c, b->agg_bytes[k][c], 0, 0,
                            b->tid, (uint16_t)(K_AGG + k), 0};
            put(b, &r);
            b->agg_count[k][c] = b->agg_bytes[k][c] = b->agg_ns[k][c] = 0;
        }
}

static void unwatch(struct tbuf *b);

static void thread_done(void *p) {
    struct tbuf *b = p;
    int saved = in_hook;
    in_hook = 1;
    if (b && !b->dead) {
        flush_aggregates(b);
        flush_buf(b);
        unwatch(b);
        b->dead = 1;
    }
    in_hook = saved;
}

static inline uint64_t slice_cpu(volatile struct perf_event_mmap_page *p);

/* Opens the thread's task-clock counter and maps its control page (see the top of this file);
 * on failure (no perf_event_open, a seccomp filter, ...) the thread's calls are not watched. The
 * descriptor is moved above 512 so that it does not take the low numbers programs expect. */
static void watch(struct tbuf *b) {
    b->pg = NULL;
    b->pfd = -1;
    b->slice_ok = 0;
    b->slice_c = ~0ull;
    if (!sched) return;
    /* one descriptor per watched thread: at most MAX_WATCHED at once, so that a program with
     * many threads keeps its descriptors (the others' calls are not watched) */
    if (__atomic_add_fetch(&watched_threads, 1, __ATOMIC_ACQ_REL) > MAX_WATCHED) {
        __atomic_sub_fetch(&watched_threads, 1, __ATOMIC_ACQ_REL);
        return;
    }
    struct perf_event_attr a;
    slow_set(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int f = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (f < 0) {
        __atomic_sub_fetch(&watched_threads, 1, __ATOMIC_ACQ_REL);
        return;
    }
    int g = fcntl(f, F_DUPFD_CLOEXEC, 512);
    if (g >= 0) {
        close(f);
        f = g;
    }
    void *m = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, f, 0);
    if (m == MAP_FAILED) {
        close(f);
        __atomic_sub_fetch(&watched_threads, 1, __ATOMIC_ACQ_REL);
        return;
    }
    struct stat st;
    if (fstat(f, &st) != 0) {
        munmap(m, (size_t)sysconf(_SC_PAGESIZE));
        close(f);
        __atomic_sub_fetch(&watched_threads, 1, __ATOMIC_ACQ_REL);
        return;
    }
    b->pdev = st.st_dev;
    b->pino = st.st_ino;
    b->pg = m;
    b->pfd = f;
    b->c_first = slice_cpu(b->pg);
}

static void unwatch(struct tbuf *b) {
    if (b->pg) __atomic_sub_fetch(&watched_threads, 1, __ATOMIC_ACQ_REL);
    if (b->pg) munmap((void *)b->pg, (size_t)sysconf(_SC_PAGESIZE));
    if (b->pfd >= 0) close(b->pfd);
    b->pg = NULL;
    b->pfd = -1;
    b->slice_ok = 0;
}

/* The thread's CPU time at its last scheduling in (the control page's offset, read under its
 * sequence lock). */
static inline uint64_t slice_cpu(volatile struct perf_event_mmap_page *p) {
    uint32_t q;
    uint64_t o;
    do {
        q = p->lock;
        __asm__ volatile("" ::: "memory");
        o = (uint64_t)p->offset;
        __asm__ volatile("" ::: "memory");
    } while (p->lock != q);
    return o;
}

/* The start, on the call clock, of the run slice that began at CPU time c: one read() of the
 * counter (the thread's CPU time now). 0 when the counter cannot be read: the program closed its
 * descriptor (its number may then be another file of the program's, which must not be read: the
 * descriptor is checked to be the same inode first). */
static uint64_t slice_start(struct tbuf *b, uint64_t c) {
    uint64_t cnt = 0;
    struct stat st;
    if (b->pfd < 0) return 0;
    if (fstat(b->pfd, &st) != 0 || st.st_dev != b->pdev || st.st_ino != b->pino) {
        b->pfd = -1; /* not ours any more: never read it again (and never close it) */
        return 0;
    }
    uint64_t w = now_ns();
    if (read(b->pfd, &cnt, sizeof cnt) != (ssize_t)sizeof cnt || cnt < c) return 0;
    uint64_t ran = cnt - c;
    return w > ran ? w - ran : 0;
}

static struct tbuf *buf(void) {
    if (mine) return mine;
    void *m = mmap(NULL, sizeof(struct tbuf), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    struct tbuf *b = m;
    b->tid = (uint32_t)syscall(SYS_gettid);
    watch(b);
    uint32_t i = __atomic_fetch_add(&nbufs, 1, __ATOMIC_ACQ_REL);
    if (i < MAXBUF) bufs[i] = b;
    mine = b;
    if (key_ok) pthread_setspecific(key, b);
    return b;
}

static int cls(uint64_t n) {
    return n ? 64 - __builtin_clzll(n) : 0;
}

static inline int want(void) {
    return enabled && !in_hook;
}

/* The thread's CPU time at its last scheduling in, read just before a timed call starts; at the
 * first call of a run slice, also that slice's start (one read() of the counter, before the call's
 * clock starts: the call itself is timed as any other). 0 when not watched. */
static uint64_t slice_enter(void) {
    struct tbuf *b = mine;
    if (!timed || !b || !b->pg) return 0;
    uint64_t c = slice_cpu(b->pg);
    /* The read() may itself end in a switch (a system call's return is where a preempted thread
     * leaves the CPU): then the slice found is over before the call starts; look again. */
    for (int tries = 0; c != b->slice_c && tries < 4; tries++) {
        uint64_t s = slice_start(b, c);
        b->slice_ok = s != 0;
        b->slice_c = c;
        b->slice_s = s;
        c = slice_cpu(b->pg);
    }
    return c;
}

/* The scheduling fields of a call timed from t0 to t1, inside which the thread's CPU time at its
 * last scheduling in went from c0 to c1 (read just before t0 and just after t1): flags, and the
 * bits added to extra. */
static uint16_t sched_fields(struct tbuf *b, uint64_t t0, uint64_t dur, uint64_t c0, uint64_t c1, uint64_t *extra) {
    if (!b->pg || !timed) return 0;
    uint16_t fl = F_SCHED;
    int known = b->slice_ok && b->slice_c == c0 && t0 >= b->slice_s;
    /* the first slice's start is the counter's opening, not a scheduling in: no F_SINCE there */
    if (known && c0 != b->c_first) {
        uint64_t since = (t0 - b->slice_s) >> SINCE_UNIT;
        *extra |= (since > SINCE_MAX ? SINCE_MAX : since) << SINCE_SHIFT;
        fl |= F_SINCE;
    }
    if (c1 != c0) {
        fl |= F_SWITCHED;
        uint64_t s1 = slice_start(b, c1);
        if (slice_cpu(b->pg) != c1) s1 = 0; /* switched again during the read: c1's start unknown */
        if (s1 && known && s1 >= b->slice_s && s1 - b->slice_s >= c1 - c0) {
            int64_t off = (int64_t)(s1 - b->slice_s) - (int64_t)(c1 - c0);
            uint64_t o = off < 0 ? 0 : (uint64_t)off;
            /* the two starts are each a few hundred ns late (the read's entry): more than the
             * call's time by over a microsecond means a switch outside the call was counted */
            if (o > dur) o = o > dur + 1000 ? ~0ull : dur;
            if (o != ~0ull) {
                *extra |= (o > 0xffffffffull ? 0xffffffffull : o) << 32;
                fl |= F_OFFCPU;
            }
        }
        b->slice_ok = s1 != 0;
        b->slice_c = c1;
        b->slice_s = s1;
    }
    return fl;
}

static void record(int kind, const void *dst, const void *src, uint64_t n, uint64_t t0, uint64_t t1,
                   void *ret, uint64_t extra, uint64_t c0, uint64_t c1) {
    in_hook = 1;
    int watched = mine != NULL && mine->pg != NULL; /* c0 and c1 were read */
    struct tbuf *b = buf();
    if (b) {
        if (n < min_bytes) {
            int c = cls(n);
            b->agg_count[kind][c]++;
            b->agg_bytes[kind][c] += n;
            b->agg_ns[kind][c] += t1 - t0;
        } else {
            uint16_t fl = watched ? sched_fields(b, t0, t1 - t0, c0, c1, &extra) : 0;
            struct rec r = {t0, t1 - t0, (uint64_t)dst, (uint64_t)src, n, (uint64_t)ret, extra, b->tid,
                            (uint16_t)kind, fl};
            put(b, &r);
        }
    }
    in_hook = 0;
}

#define CLOCK() (timed ? now_ns() : 0)
/* The thread's CPU time at its last scheduling in, when watched (before the start and after the
 * end of each timed call: a switch anywhere inside the call changes it). */
#define SLICE() (timed && mine && mine->pg ? slice_cpu(mine->pg) : 0)
#define SLICE0() slice_enter()

/* The copies and fills, plain and fortified (_chk: abort on overflow, as glibc does); `extra`
 * carries 1 for a fortified call (and memset's fill byte below it). */
#define COPY(name, real, kind)                                                          \
    static void *name##_do(void *d, const void *s, size_t n, uint64_t fortified, void *ra) { \
        if (!resolved) resolve();                                                         \
        if (!resolved) return slow_copy(d, s, n);                                         \
        if (!want()) return real(d, s, n);                                                \
        uint64_t c0 = SLICE0();                                                            \
        uint64_t t0 = CLOCK();                                                            \
        void *r = real(d, s, n);                                                          \
        uint64_t t1 = CLOCK();                                                            \
        record(kind, d, s, n, t0, t1, ra, fortified, c0, SLICE());                        \
        return r;                                                                         \
    }                                                                                     \
    EXPORT void *name(void *d, const void *s, size_t n) {                                 \
        return name##_do(d, s, n, 0, __builtin_return_address(0));                        \
    }                                                                                     \
    EXPORT void *__##name##_chk(void *d, const void *s, size_t n, size_t dlen) {          \
        if (dlen < n) abort();                                                            \
        return name##_do(d, s, n, 1, __builtin_return_address(0));                        \
    }

/* Calls through the pointers, resolved at first use (an indirect call cannot be inlined away). */
static void *call_memcpy(void *d, const void *s, size_t n) { return real_memcpy(d, s, n); }
static void *call_memmove(void *d, const void *s, size_t n) { return real_memmove(d, s, n); }

COPY(memcpy, call_memcpy, K_MEMCPY)
COPY(memmove, call_memmove, K_MEMMOVE)

static void *memset_do(void *d, int c, size_t n, uint64_t fortified, void *ra) {
    if (!resolved) resolve();
    if (!resolved) return slow_set(d, c, n);
    if (!want()) return real_memset(d, c, n);
    uint64_t c0 = SLICE0();
    uint64_t t0 = CLOCK();
    void *r = real_memset(d, c, n);
    uint64_t t1 = CLOCK();
    record(K_MEMSET, d, NULL, n, t0, t1, ra, (uint64_t)(unsigned char)c | (fortified << 8), c0, SLICE());
    return r;
}

EXPORT void *memset(void *d, int c, size_t n) {
    return memset_do(d, c, n, 0, __builtin_return_address(0));
}

EXPORT void *__memset_chk(void *d, int c, size_t n, size_t dlen) {
    if (dlen < n) abort();
    return memset_do(d, c, n, 1, __builtin_return_address(0));
}

EXPORT void *calloc(size_t a, size_t b) {
    size_t n;
    if (__builtin_mul_overflow(a, b, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    if (!resolved) resolve();
    if (!real_calloc) {
        /* dlsym allocating before calloc is known: a bump arena (already zero). */
        size_t at = (arena_used + 15) & ~(size_t)15;
        if (at + n > sizeof arena) return NULL;
        arena_used = at + n;
        return arena + at;
    }
    if (!want()) return real_calloc(a, b);
    uint64_t c0 = SLICE0();
    uint64_t t0 = CLOCK();
    void *r = real_calloc(a, b);
    uint64_t t1 = CLOCK();
    uint64_t c1 = SLICE();
    if (r) record(K_CALLOC, r, NULL, n, t0, t1, __builtin_return_address(0), 0, c0, c1);
    return r;
}

EXPORT void free(void *p) {
    if (!p || in_arena(p)) return;
    if (!real_free) resolve();
    if (real_free) real_free(p);
}

/* realloc: a move copies min(old usable size, new size) bytes; extra = 1 when the block moved.
 * (glibc moves large mmapped blocks with mremap, which remaps pages without copying.) */
EXPORT void *realloc(void *p, size_t n) {
    if (!resolved) resolve();
    if (p && in_arena(p)) {
        void *q = malloc(n);
        if (q) slow_copy(q, p, n);
        return q;
    }
    if (!real_realloc) return NULL;
    if (!want() || !p) return real_realloc(p, n);
    size_t old = real_usable ? real_usable(p) : 0;
    uint64_t c0 = SLICE0();
    uint64_t t0 = CLOCK();
    void *r = real_realloc(p, n);
    uint64_t t1 = CLOCK();
    uint64_t c1 = SLICE();
    if (r && r != p) record(K_REALLOC, r, p, old < n ? old : n, t0, t1, __builtin_return_address(0), 1, c0, c1);
    return r;
}

static void flush_all(void) {
    uint32_t k = nbufs < MAXBUF ? nbufs : MAXBUF;
    for (uint32_t i = 0; i < k; i++) {
        struct tbuf *b = bufs[i];
        if (b && !b->dead) {
            flush_aggregates(b);
            flush_buf(b);
        }
    }
}

/* Flushes everything before the image is replaced; the new image's copy of this library opens a
 * new file (same pid, next sequence number). */
static void before_exec(void) {
    int saved = in_hook;
    in_hook = 1;
    if (enabled) flush_all();
    in_hook = saved;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
    resolve();
    before_exec();
    return real_execve(path, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[]) {
    resolve();
    before_exec();
    return real_execv(path, argv);
}

EXPORT int execvp(const char *file, char *const argv[]) {
    resolve();
    before_exec();
    return real_execvp(file, argv);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
    resolve();
    before_exec();
    return real_execvpe(file, argv, envp);
}

EXPORT int fexecve(int f, char *const argv[], char *const envp[]) {
    resolve();
    before_exec();
    return real_fexecve(f, argv, envp);
}

/* The list forms gather their arguments (up to the NULL) and go through the vector forms above. */
#define MAXARGS 4096

static int gather(char **argv, const char *first, va_list *ap) {
    int i = 0;
    char *a = (char *)first;
    while (a != NULL && i < MAXARGS - 1) {
        argv[i++] = a;
        a = va_arg(*ap, char *);
    }
    argv[i] = NULL;
    if (a != NULL) errno = E2BIG;
    return a == NULL;
}

EXPORT int execl(const char *path, const char *arg, ...) {
    char *argv[MAXARGS];
    va_list ap;
    va_start(ap, arg);
    int ok = gather(argv, arg, &ap);
    va_end(ap);
    return ok ? execv(path, argv) : -1;
}

EXPORT int execlp(const char *file, const char *arg, ...) {
    char *argv[MAXARGS];
    va_list ap;
    va_start(ap, arg);
    int ok = gather(argv, arg, &ap);
    va_end(ap);
    return ok ? execvp(file, argv) : -1;
}

EXPORT int execle(const char *path, const char *arg, ...) {
    char *argv[MAXARGS];
    va_list ap;
    va_start(ap, arg);
    int ok = gather(argv, arg, &ap);
    char *const *envp = ok ? va_arg(ap, char *const *) : NULL;
    va_end(ap);
    return ok ? execve(path, argv, envp) : -1;
}

/* The child of a fork: the parent's unflushed records stay the parent's; the child keeps only its
 * own thread's buffer, emptied, and writes its own file. */
static void in_child(void) {
    if (!enabled) return;
    int saved = in_hook;
    in_hook = 1;
    if (fd >= 0) close(fd);
    fd = -1;
    struct tbuf *b = mine;
    uint32_t had = nbufs < MAXBUF ? nbufs : MAXBUF;
    for (uint32_t i = 0; i < had; i++) /* the parent's other threads' counters: not this process's */
        if (bufs[i] && bufs[i] != b && !bufs[i]->dead) unwatch(bufs[i]);
    watched_threads = (b && b->pg) ? 1 : 0; /* this thread's, released by its unwatch below */
    for (uint32_t i = 0; i < MAXBUF; i++) bufs[i] = NULL;
    nbufs = 0;
    if (b) {
        b->n = 0;
        b->tid = (uint32_t)syscall(SYS_gettid);
        unwatch(b); /* the inherited page watches the parent's thread */
        watch(b);
        for (int k = 0; k < NKIND; k++)
            for (int c = 0; c < NCLASS; c++) b->agg_count[k][c] = b->agg_bytes[k][c] = b->agg_ns[k][c] = 0;
        bufs[0] = b;
        nbufs = 1;
    }
    pthread_mutex_init(&file_lock, NULL);
    flush_writes = flush_bytes = 0;
    open_file();
    in_hook = saved;
}

__attribute__((constructor)) static void start(void) {
    in_hook = 1;
    resolve();
    const char *d = getenv("MOVELAB_RECORD_DIR");
    if (d && *d) {
        dir[0] = 0;
        scat(dir, sizeof dir, d);
        const char *m = getenv("MOVELAB_RECORD_MIN_BYTES");
        if (m) {
            min_bytes = 0;
            for (; *m >= '0' && *m <= '9'; m++) min_bytes = min_bytes * 10 + (uint64_t)(*m - '0');
        }
        const char *t = getenv("MOVELAB_RECORD_TIME");
        timed = !(t && t[0] == '0');
        const char *sc = getenv("MOVELAB_RECORD_SCHED");
        sched = !(sc && sc[0] == '0');
        key_ok = pthread_key_create(&key, thread_done) == 0;
        pthread_atfork(NULL, NULL, in_child);
        enabled = 1;
        measure_clock();
        open_file();
    }
    in_hook = 0;
}

/* At exit: every thread's aggregates and records, then a footer with this process's counts
 * (minor and major faults from getrusage, and this library's own writes to its file). */
__attribute__((destructor)) static void stop(void) {
    if (!enabled) return;
    in_hook = 1;
    flush_all();
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    struct rec f = {now_ns(), 0, (uint64_t)ru.ru_minflt, (uint64_t)ru.ru_majflt, flush_bytes, flush_writes + 1, 0,
                    (uint32_t)syscall(SYS_gettid), K_FOOTER, 0};
    pthread_mutex_lock(&file_lock);
    write_all(&f, sizeof f);
    pthread_mutex_unlock(&file_lock);
    enabled = 0;
}
