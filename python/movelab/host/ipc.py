"""IPC endpoints after Table 2 of the I/OAT user-space paper: ``iwrite`` / ``iread`` / ``write`` /
``read`` / ``check`` / ``wait`` between two processes connected by a Unix-domain socket.

A transfer moves the data once, from the writer's buffer straight into the reader's
(process_vm_readv / process_vm_writev), where the kernel allows it; otherwise it falls back to a
shared-memory two-copy path, and says why. Every completed operation returns a dict::

    {"cookie": 3, "direction": "read", "bytes": 4096, "path": "single-copy", "note": None}

``path`` is ``"single-copy"``, ``"two-copy"`` or ``"socket"``; ``note`` explains a fallback.

Buffers may be ``bytes`` (writes only), ``bytearray``, ``memoryview`` or C-contiguous NumPy arrays
of any dtype (moved as raw bytes). A posted buffer is held until ``wait`` returns: do not modify a
buffer being written, nor read a buffer being read into, before then. A connection belongs to the
process that made it: a forked child must connect again.

Endpoint rules: ``listen`` on a path where a live server listens raises ``OSError`` (errno
EADDRINUSE); only a stale socket file (nobody listening) is replaced; a listener removes the
socket file on close only if it is still its own (and not from a forked child). ``connect`` to a
path that exists but is not a socket raises ``ValueError`` at once. ``accept``, ``connect`` and
``wait`` react to Ctrl-C within a fraction of a second (``KeyboardInterrupt``; an interrupted
``wait`` leaves the operation in flight and its buffer held).

Example::

    # process A                                  # process B
    with listen("/tmp/x.sock") as lst:           with connect("/tmp/x.sock") as c:
        c = lst.accept(timeout=10)                   buf = bytearray(5)
        c.write(b"hello", timeout=10)                c.read(buf, timeout=10)
"""

from __future__ import annotations

from typing import Any, Self

from movelab import _core

__all__ = ["Connection", "Listener", "connect", "listen"]

_EMPTY_RO = memoryview(b"")


def _byte_view(obj: Any, writable: bool) -> memoryview:
    """A flat unsigned-byte view of ``obj`` (no copy); clear errors for unusable buffers."""
    try:
        mv = memoryview(obj)
    except TypeError:
        raise TypeError(
            f"expected a buffer (bytes, bytearray, memoryview or a NumPy array), got {type(obj).__name__}"
        ) from None
    if writable and mv.readonly:
        raise ValueError(
            f"the read buffer ({type(obj).__name__}) is read-only; pass a bytearray, a writable "
            "memoryview or a NumPy array"
        )
    if not mv.c_contiguous:
        raise ValueError("the buffer is not C-contiguous; pass a contiguous array (e.g. numpy.ascontiguousarray)")
    if mv.nbytes == 0:
        return _EMPTY_RO if not writable else memoryview(bytearray(0))
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


class Connection:
    """One end of an IPC connection (see the module docstring). Use as a context manager."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def iwrite(self, data: Any) -> int:
        """Post a write of ``data``'s bytes; returns a cookie for ``check`` / ``wait``."""
        return self._raw.iwrite(_byte_view(data, writable=False))

    def iread(self, buf: Any) -> int:
        """Post a read into the writable ``buf``; returns a cookie. The k-th read on one side
        receives the k-th write of the other; ``buf`` may be larger than the message."""
        return self._raw.iread(_byte_view(buf, writable=True))

    def check(self, cookie: int) -> bool:
        """True once the operation has finished (then ``wait`` returns at once)."""
        return self._raw.check(cookie)

    def wait(self, cookie: int, timeout: float | None = None) -> dict:
        """Block until the operation finishes (sleeping, GIL released); returns the transfer dict.
        Raises TimeoutError (the operation stays in flight), ValueError (size mismatch, unknown
        cookie) or ConnectionError (peer closed)."""
        return self._raw.wait(cookie, timeout)

    def write(self, data: Any, timeout: float | None = None) -> dict:
        """Blocking write: returns when the data has left ``data``."""
        return self.wait(self.iwrite(data), timeout)

    def read(self, buf: Any, timeout: float | None = None) -> dict:
        """Blocking read: returns when the message is in ``buf``."""
        return self.wait(self.iread(buf), timeout)

    def close(self) -> None:
        """Close; operations still in flight fail with ConnectionError. Idempotent."""
        self._raw.close()

    @property
    def closed(self) -> bool:
        return self._raw.closed

    @property
    def peer(self) -> dict:
        """The authenticated peer's credentials from SO_PEERCRED: ``{"pid", "uid", "gid"}``."""
        return self._raw.peer

    @property
    def preferred_path(self) -> str:
        """The path preference in force on this connection (the stricter of both sides')."""
        return self._raw.preferred_path

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<movelab.host.ipc.Connection peer pid {self.peer['pid']} {self.preferred_path} {state}>"


class Listener:
    """A listening endpoint; the socket file is removed on close."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def accept(self, timeout: float | None = None) -> Connection:
        """Accept one peer, authenticate it (SO_PEERCRED) and return the connection."""
        return Connection(self._raw.accept(timeout))

    @property
    def path(self) -> str:
        return self._raw.path

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def listen(
    path: str,
    *,
    prefer: str = "auto",
    deny_single_copy: bool = False,
    ring_slots: int = 8,
    slot_size: int = 256 * 1024,
    timeout: float = 10.0,
) -> Listener:
    """Listen on the Unix socket ``path``.

    ``prefer``: ``"auto"`` (single copy where the kernel allows it), ``"two-copy"`` or
    ``"socket"``; a connection uses the stricter of both sides' preferences.
    ``deny_single_copy``: behave as if the kernel refused cross-process access (EPERM), to
    exercise the fallback. ``ring_slots`` x ``slot_size``: this side's shared-memory ring.
    ``timeout``: default limit (seconds) for accepting and the handshake.
    """
    return Listener(
        _core.ipc_listen(
            str(path),
            prefer=prefer,
            deny_single_copy=deny_single_copy,
            ring_slots=ring_slots,
            slot_size=slot_size,
            timeout=timeout,
        )
    )


def connect(
    path: str,
    *,
    prefer: str = "auto",
    deny_single_copy: bool = False,
    ring_slots: int = 8,
    slot_size: int = 256 * 1024,
    timeout: float = 10.0,
) -> Connection:
    """Connect to a listener at ``path``, waiting up to ``timeout`` seconds for it to appear.
    Options as for :func:`listen`."""
    return Connection(
        _core.ipc_connect(
            str(path),
            prefer=prefer,
            deny_single_copy=deny_single_copy,
            ring_slots=ring_slots,
            slot_size=slot_size,
            timeout=timeout,
        )
    )
