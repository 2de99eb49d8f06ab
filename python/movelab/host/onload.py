"""Network onload on this machine: a UDP receive and transmit path run by an engine thread on
its own core, which writes each payload straight into a buffer the application posted
(Wun & Crowley's "onloader"; see docs/host-onload.md).

::

    from movelab.host.onload import OnloadEngine
    with OnloadEngine(payload_bytes=1472, count=1000, port=9000) as eng:   # replay source
        sock = eng.bind(9000)
        for _ in range(64):
            sock.post(bytearray(2048))
        msg = sock.recv(timeout=1.0)          # Received(buffer, nbytes, addr, ...) or None
        data = msg.buffer[: msg.nbytes]
        sock.send(b"reply", ("10.77.0.2", 40000))

The ``replay`` source needs no privileges: it hands the engine pre-built frames (its own, or
``frames=[...]`` built with :func:`frame`) paced at ``rate_mbps`` (0: as fast as the engine takes
them). Blocking calls release the GIL and react to Ctrl-C. Bad arguments raise ``ValueError``
naming the argument.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Self

from movelab import _core

__all__ = ["OnloadEngine", "Received", "UdpSocket", "frame", "payload"]

_CONFIG_KEYS = {"cpu", "pin", "max_payload", "burst", "ring_capacity", "push", "idle_spin_us", "nap_us",
                "wait_spin_us"}
_U64_MAX = (1 << 64) - 1
_REPLAY_KEYS = {"payload_bytes", "count", "rate_mbps", "port", "pool_frames", "rx_ring", "gated", "capture_tx"}


@dataclass(frozen=True)
class Received:
    """One received datagram: the posted ``buffer`` (payload in its first ``nbytes``), the
    sender's ``addr`` (ip, port), when the frame reached the host (``arrival_ns``) and the
    datagram's whole payload length (``datagram_nbytes``).

    A buffer smaller than the payload receives the payload's first bytes and the rest is
    discarded, as the kernel's ``recvmsg`` does (``MSG_TRUNC``): then ``truncated`` is True and
    ``datagram_nbytes`` > ``nbytes``. The next datagram goes to the next posted buffer."""

    buffer: Any
    nbytes: int
    addr: tuple[str, int]
    arrival_ns: int
    datagram_nbytes: int

    @property
    def truncated(self) -> bool:
        """True when the buffer was smaller than the datagram, which was cut to ``nbytes``."""
        return self.datagram_nbytes > self.nbytes

    @property
    def payload(self) -> bytes:
        return bytes(memoryview(self.buffer).cast("B")[: self.nbytes])


def _port(port: Any, name: str = "port") -> int:
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise ValueError(f"{name} must be an integer in 1..65535, got {port!r}")
    return port


def _addr(addr: Any) -> tuple[str, int]:
    if not (isinstance(addr, tuple) and len(addr) == 2 and isinstance(addr[0], str)):
        raise ValueError(f"addr must be an (ip, port) tuple, got {addr!r}")
    return addr[0], _port(addr[1], "addr port")


class UdpSocket:
    """A UDP port bound on an :class:`OnloadEngine` (from :meth:`OnloadEngine.bind`)."""

    def __init__(self, raw: Any) -> None:
        self._s = raw

    @property
    def port(self) -> int:
        return self._s.port

    @property
    def posted(self) -> int:
        """Buffers posted and not yet received."""
        return self._s.posted

    @property
    def capacity(self) -> int:
        """How many buffers may be posted at once."""
        return self._s.capacity

    def post(self, buf: Any) -> None:
        """Post a writable buffer (bytearray, writable memoryview, NumPy array) for one datagram.
        The socket holds it until the datagram arrives in it (or the socket closes)."""
        self._s.post(buf)

    def recv(self, block: bool = True, timeout: float | None = None) -> Received | None:
        """The next datagram; None if nothing arrived (``block=False``, or after ``timeout``
        seconds). A datagram larger than its buffer arrives cut short (``Received.truncated``).
        Blocking waits release the GIL and stop on Ctrl-C (KeyboardInterrupt)."""
        if timeout is not None and (not isinstance(timeout, int | float) or timeout < 0):
            raise ValueError(f"timeout must be a non-negative number of seconds or None, got {timeout!r}")
        r = self._s.recv(bool(block), None if timeout is None else float(timeout))
        if r is None:
            return None
        buf, n, ip, port, arrival, whole = r
        return Received(buf, n, (ip, port), arrival, whole)

    def send(self, data: Any, addr: tuple[str, int]) -> None:
        """Send ``data`` (any buffer) to ``addr``; returns once the engine transmitted the frame."""
        ip, port = _addr(addr)
        self._s.send(data, ip, port)

    def stats(self) -> dict[str, int]:
        """delivered, delivered_bytes, no_buffer, too_small (delivered cut short into a buffer smaller
        than the payload; also in delivered), faults, wakeups, tx_frames, tx_failed."""
        return json.loads(self._s.stats_json())

    def close(self) -> None:
        """Unbind; every posted buffer is released."""
        self._s.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OnloadEngine:
    """An onload engine with the ``replay`` frame source.

    Args:
        frames: frames to replay (bytes each, e.g. from :func:`frame`) instead of the replay's
            own (``count`` datagrams of ``payload_bytes`` to ``port``, payload i = :func:`payload`).
        **settings: replay settings (``payload_bytes``, ``count``, ``rate_mbps``, ``port``,
            ``pool_frames``, ``rx_ring``, ``gated``, ``capture_tx``) and engine settings
            (``cpu``, ``pin``, ``max_payload``, ``burst``, ``ring_capacity``, ``push``,
            ``idle_spin_us``, ``nap_us``, ``wait_spin_us``). Unknown names raise ``ValueError``.
    """

    def __init__(self, *, frames: list[bytes] | None = None, **settings: Any) -> None:
        unknown = set(settings) - _CONFIG_KEYS - _REPLAY_KEYS
        if unknown:
            raise ValueError(f"unknown setting(s): {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(sorted(_CONFIG_KEYS | _REPLAY_KEYS))})")
        for k, v in settings.items():
            if k in ("pin", "push", "gated"):
                if not isinstance(v, bool):
                    raise ValueError(f"{k} must be True or False, got {v!r}")
            elif k == "rate_mbps":
                if not isinstance(v, int | float) or isinstance(v, bool) or not 0 <= v < math.inf:
                    raise ValueError(f"rate_mbps must be a finite non-negative number, got {v!r}")
            elif k == "cpu" and v is None:
                continue
            elif k == "port":
                _port(v)
            elif not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= _U64_MAX:
                raise ValueError(f"{k} must be a non-negative integer below 2**64, got {v!r}")
        if frames is not None:
            frames = [bytes(f) for f in frames]
            if not frames:
                raise ValueError("frames must not be empty")
        spec: dict[str, Any] = {k: v for k, v in settings.items() if k in _CONFIG_KEYS}
        spec["source"] = "replay"
        spec["replay"] = {k: v for k, v in settings.items() if k in _REPLAY_KEYS}
        self._e = _core.OnloadEngine(json.dumps(spec), frames)

    @property
    def cpu(self) -> int | None:
        """The core the engine thread is pinned to."""
        return self._e.cpu

    @property
    def source(self) -> str:
        return self._e.source

    def bind(self, port: int) -> UdpSocket:
        """Bind a UDP port; frames for it are delivered to the returned socket."""
        return UdpSocket(self._e.bind(_port(port)))

    def go(self) -> None:
        """Start a gated replay (``gated=True``): frames arrive from now on."""
        self._e.go()

    @property
    def replay_finished(self) -> bool:
        """Has the replay handed every frame to the engine (or dropped it)?"""
        return self._e.replay_finished()

    def captured(self) -> list[bytes]:
        """Frames the engine transmitted (up to ``capture_tx`` of them)."""
        return list(self._e.captured())

    def stats(self) -> dict[str, int]:
        """Engine counters: frames, delivered, every drop reason, wakeups, tx_frames, busy_ns."""
        return json.loads(self._e.stats_json())

    def close(self) -> dict[str, Any] | None:
        """Stop the engine (queued sends complete); returns the final report (None if closed)."""
        r = self._e.shutdown()
        return None if r is None else json.loads(r)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def frame(payload: bytes, src: tuple[str, int] = ("10.77.0.2", 40000),
          dst: tuple[str, int] = ("10.77.0.1", 9000), ip_id: int = 0) -> bytes:
    """An Ethernet/IPv4/UDP frame carrying ``payload`` with correct checksums."""
    s, d = _addr(src), _addr(dst)
    return _core.onload_frame(bytes(payload), s[0], s[1], d[0], d[1], ip_id)


def payload(seq: int, nbytes: int) -> bytes:
    """The payload the replay sends with sequence number ``seq``."""
    if not isinstance(seq, int) or seq < 0 or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"seq and nbytes must be non-negative integers, got {seq!r}, {nbytes!r}")
    return _core.onload_payload(seq, nbytes)
