/* 100 threads alive at once, for movelab's recording tests: each makes one 100-byte memcpy, waits
 * for all the others at a barrier, then makes a 200-byte memcpy. The interposer watches the
 * scheduling of at most 64 threads of a process at once (one descriptor each). */
#include <pthread.h>
#include <string.h>

#define THREADS 100

static pthread_barrier_t all;

static void *work(void *arg) {
    char a[256], b[256];
    memset(a, (int)(long)arg, sizeof a);
    memcpy(b, a, 100);
    pthread_barrier_wait(&all);
    memcpy(a, b, 200);
    return NULL;
}

int main(void) {
    pthread_t t[THREADS];
    pthread_barrier_init(&all, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, work, (void *)i) != 0) return 1;
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    return 0;
}
