/* movelab_host.h: the C API of movelab-host's asynchronous copy runtime.
 *
 * Link with -lmovelab_host (libmovelab_host.so, built by `cargo build -p movelab-host`).
 * Every function returns MOVELAB_OK (0) on success or a negative MOVELAB_E* code;
 * movelab_check returns 1 (done) or 0 (in flight). movelab_last_error() describes the calling
 * thread's last failure.
 *
 * Buffer rule: after movelab_icopy, neither buffer may be freed, written, or (destination) read
 * until movelab_wait (or movelab_check returned 1, or movelab_wait_all). movelab_engine_destroy
 * waits for every operation still in flight.
 *
 * Fork: a "thread" engine's workers exist only in the process that created it. In a forked child
 * every call on it returns MOVELAB_EFORKED at once (never a hang), and movelab_engine_destroy
 * there frees it without waiting for the parent's operations. A "cpu" engine works in the child.
 */
#ifndef MOVELAB_HOST_H
#define MOVELAB_HOST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOVELAB_OK 0
#define MOVELAB_EINVAL (-1)   /* bad argument (null pointer, unknown engine, ...) */
#define MOVELAB_ECOOKIE (-2)  /* unknown or already-waited cookie */
#define MOVELAB_EABORTED (-3) /* the operation was aborted by an engine shutdown */
#define MOVELAB_EOS (-4)      /* the operating system refused (thread creation, ...) */
#define MOVELAB_EFORKED (-5)  /* a thread engine used in a forked child (create a new engine there) */

typedef struct MovelabEngine movelab_engine;

/* Create an engine: name "cpu" (memcpy in the caller) or "thread" (software copy engine);
 * channels = worker threads (0 = default of 1). NULL on error. */
movelab_engine *movelab_engine_create(const char *name, uint32_t channels);
/* Wait for in-flight operations, stop the workers and free the engine. NULL is ignored. */
void movelab_engine_destroy(movelab_engine *e);

/* Blocking copy of len bytes (overlapping buffers: memmove semantics). */
int movelab_copy(const movelab_engine *e, const void *src, void *dst, size_t len);
/* Start a copy; the cookie names it for movelab_check / movelab_wait. */
int movelab_icopy(const movelab_engine *e, const void *src, void *dst, size_t len, uint64_t *cookie);
/* 1 if done, 0 if in flight, negative on error (e.g. MOVELAB_ECOOKIE). */
int movelab_check(const movelab_engine *e, uint64_t cookie);
/* Wait for the operation and retire the cookie (a second wait gives MOVELAB_ECOOKIE). */
int movelab_wait(const movelab_engine *e, uint64_t cookie);
/* Wait for every outstanding operation. */
int movelab_wait_all(const movelab_engine *e);
/* Blocking fill of len bytes with value. */
int movelab_fill(const movelab_engine *e, void *dst, uint8_t value, size_t len);

/* Message of the calling thread's last error ("" if none); valid until the next call. */
const char *movelab_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* MOVELAB_HOST_H */
