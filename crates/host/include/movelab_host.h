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

/* ---- Network onload (docs/host-onload.md) --------------------------------------------------
 * An onload engine runs the UDP/IPv4 receive and transmit paths on its own core and writes each
 * payload straight into a buffer the application posted. Buffer rule: a posted buffer may not be
 * freed, read or written until its completion is received or the socket is closed; close every
 * socket before destroying its engine.
 * Fork: an onload engine's thread exists only in the process that created it. In a forked child
 * every call on the engine or its sockets returns MOVELAB_EFORKED (NULL from movelab_udp_bind) at
 * once, and movelab_udp_close / movelab_onload_destroy there only let go (nothing is waited for). */
#define MOVELAB_ESTOPPED (-8) /* the onload engine has stopped */
#define MOVELAB_EFULL (-6)    /* too many buffers posted (or sends queued) on the socket */
#define MOVELAB_EINUSE (-7)   /* the port is already bound */

typedef struct MovelabOnload movelab_onload;
typedef struct MovelabUdpSocket movelab_udp_socket;

typedef struct {
    uint64_t tag;        /* the tag the buffer was posted with */
    size_t len;          /* payload bytes at the start of the buffer */
    uint32_t src_ip;     /* sender, host byte order */
    uint16_t src_port;
    uint8_t ok;          /* 0: the delivery failed, len is 0 */
    uint8_t truncated;   /* 1: the buffer was smaller than the payload; len bytes kept (MSG_TRUNC) */
    uint64_t arrival_ns; /* when the frame reached the host (engine clock) */
} movelab_udp_completion;

typedef struct {
    uint64_t frames, delivered, delivered_bytes, dropped, bad_checksum, unbound_port, no_buffer,
        wakeups, tx_frames;
} movelab_onload_counters;

/* Start an engine from a JSON spec (NULL or "" = defaults: a replay source; see the docs for the
 * fields, e.g. {"replay": {"payload_bytes": 1472, "count": 1000, "port": 9000, "gated": true}}).
 * NULL on error. */
movelab_onload *movelab_onload_create(const char *spec_json);
/* Stop the engine (queued sends complete) and free it. NULL is ignored. */
void movelab_onload_destroy(movelab_onload *o);
/* Start a gated replay's frames. */
int movelab_onload_go(const movelab_onload *o);
int movelab_onload_stats(const movelab_onload *o, movelab_onload_counters *out);
/* The core the engine runs on, or -1. */
int movelab_onload_cpu(const movelab_onload *o);
/* Bind a UDP port (1..65535); NULL on error (e.g. MOVELAB_EINUSE). */
movelab_udp_socket *movelab_udp_bind(const movelab_onload *o, uint16_t port);
/* Unbind: on return the engine no longer touches the socket's buffers. */
void movelab_udp_close(movelab_udp_socket *s);
/* Post a receive buffer named by tag (< 2^63). */
int movelab_udp_post(const movelab_udp_socket *s, void *buf, size_t len, uint64_t tag);
/* timeout_ms < 0 blocks, 0 polls: 1 = a completion stored in *out, 0 = none yet, < 0 error. */
int movelab_udp_recv(const movelab_udp_socket *s, int64_t timeout_ms, movelab_udp_completion *out);
/* Send len bytes to dst_ip (host byte order):dst_port; returns once the frame is transmitted. */
int movelab_udp_send(const movelab_udp_socket *s, const void *data, size_t len, uint32_t dst_ip,
                     uint16_t dst_port);

/* Message of the calling thread's last error ("" if none); valid until the next call. */
const char *movelab_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* MOVELAB_HOST_H */
