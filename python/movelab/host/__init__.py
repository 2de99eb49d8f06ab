"""The host runtime: a real asynchronous copy engine, IPC between processes, and host benchmarks.

``Engine`` is the API of Table 1 of the I/OAT user-space paper on this machine::

    from movelab.host import Engine
    eng = Engine("thread", channels=1)      # software copy engine on the other core
    cookie = eng.icopy(src, dst)            # returns at once
    ...                                     # compute while the engine copies
    eng.wait(cookie)                        # dst now holds src

Buffers are anything with the buffer protocol that is C-contiguous: ``bytes`` (as a source only),
``bytearray``, ``memoryview`` and NumPy arrays. The engine holds both buffers from ``icopy`` until
``wait``/``wait_all`` so they cannot be freed (or a bytearray resized) while in flight; waiting
releases the GIL. Bad input raises ``ValueError`` (sizes, cookies, configuration, an integer out
of range: the message names the argument, the value and what is allowed) or ``TypeError`` (not a
buffer, read-only destination, not an integer). The mechanics live in Rust (``movelab_host``).

Every blocking call (``copy``, ``fill``, ``wait``, ``wait_all``, ``close``) reacts to Ctrl-C within
a fraction of a second with ``KeyboardInterrupt``; the operation stays in flight and its buffers
stay held until a later ``wait``/``wait_all``/``close``.

``close()`` (or leaving a ``with Engine(...)`` block) waits for every operation, releases the
buffers and stops the workers; it is idempotent, and any later call raises ``ValueError``. A thread
engine belongs to the process that created it: after ``os.fork()`` the child has none of its
worker threads, so every call there raises ``RuntimeError`` at once (create a new ``Engine`` in the
child); a ``cpu`` engine, which owns no threads, keeps working in the child.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Self

from movelab import _core

__all__ = ["Engine", "cpus", "engines"]

_U64_MAX = (1 << 64) - 1


def engines() -> dict[str, str]:
    """The registered copy engines: name -> one-line description."""
    return dict(_core.host_engines())


def cpus() -> list[int]:
    """The CPUs this process may run on (engine workers are pinned to the last ones)."""
    return list(_core.host_cpus())


class Engine:
    """A copy engine and its cookie table.

    Args:
        name: ``"cpu"`` (memcpy in the caller: every operation completes inside the call) or
            ``"thread"`` (worker threads pinned to cores, fed through lock-free rings).
        channels: worker threads of the thread engine; large copies are split across them.
        nt_threshold: operations of at least this many bytes use non-temporal stores (bypass the
            caches) unless called with ``cache=True``. Default 1 MiB.
        split_threshold: operations of at least this many bytes are split across channels.
        pin: pin each worker to a core.
        spin_us: how long an idle worker spins before sleeping (default 100 us).
        ring_capacity: descriptors per channel ring.
        wait_spin_us: how long ``wait`` spins before sleeping (default 1000 us).
        **more: further engine settings: ``nap_us`` (poll interval of a napping worker, 20 us),
            ``park_after_us`` (idle time before a worker parks on its futex, 20000 us),
            ``cpus`` (cores for the workers). Unknown names raise ``ValueError``.
    """

    def __init__(
        self,
        name: str = "thread",
        channels: int = 1,
        *,
        nt_threshold: int | None = None,
        split_threshold: int | None = None,
        pin: bool = True,
        spin_us: int | None = None,
        ring_capacity: int | None = None,
        wait_spin_us: int | None = None,
        **more: Any,
    ) -> None:
        if not isinstance(channels, int) or isinstance(channels, bool) or channels < 1:
            raise ValueError(f"channels must be a positive integer, got {channels!r}")
        options = {
            "channels": channels,
            "pin": bool(pin),
            "nt_threshold": nt_threshold,
            "split_threshold": split_threshold,
            "spin_us": spin_us,
            "ring_capacity": ring_capacity,
            "wait_spin_us": wait_spin_us,
            **more,
        }
        for key, value in options.items():
            if key == "cpus":
                if not isinstance(value, list | tuple) or not all(
                    isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 4096 for c in value
                ):
                    raise ValueError(f"cpus = {value!r}: expected a list of CPU numbers in 0..4095")
                options[key] = list(value)
                continue
            if value is not None and not isinstance(value, bool | int):
                raise ValueError(f"{key} must be an integer, got {value!r}")
            if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= _U64_MAX:
                raise ValueError(f"{key} = {value}: expected an integer in 0..={_U64_MAX}")
        config = {k: v for k, v in options.items() if v is not None}
        self._e = _core.HostEngine(name, json.dumps(config))

    @property
    def name(self) -> str:
        return self._e.name

    @property
    def config(self) -> dict[str, Any]:
        """The engine's configuration (channels, thresholds, pinning, ...)."""
        return json.loads(self._e.config_json())

    @property
    def outstanding(self) -> int:
        """Cookies issued and not yet waited for."""
        return self._e.outstanding

    def copy(self, src: Any, dst: Any, nbytes: int | None = None, *, cache: bool = False) -> None:
        """Blocking copy of ``src`` into ``dst`` (overlapping views of one buffer: memmove).

        Without ``nbytes`` both buffers must have the same size in bytes. ``cache=True`` allocates
        the destination in the cache even above the streaming-store threshold."""
        self._e.copy(src, dst, nbytes, cache)

    def icopy(self, src: Any, dst: Any, nbytes: int | None = None, *, cache: bool = False) -> int:
        """Start a copy; returns a cookie for :meth:`check` / :meth:`wait`."""
        return self._e.icopy(src, dst, nbytes, cache)

    def icopy_batch(self, pairs: Iterable[tuple[Any, Any]]) -> list[int]:
        """Start several copies (``(src, dst)`` pairs) with one doorbell per channel."""
        return self._e.icopy_batch(list(pairs))

    def fill(self, dst: Any, value: int, nbytes: int | None = None, *, cache: bool = False) -> None:
        """Blocking fill of ``dst`` (or its first ``nbytes``) with the byte ``value``."""
        self._e.fill(dst, value, nbytes, cache)

    def ifill(self, dst: Any, value: int, nbytes: int | None = None, *, cache: bool = False) -> int:
        """Start a fill; returns a cookie."""
        return self._e.ifill(dst, value, nbytes, cache)

    def check(self, cookie: int) -> bool:
        """Has the operation completed? (Does not retire the cookie.)"""
        return self._e.check(cookie)

    def wait(self, cookie: int) -> None:
        """Wait for the operation (GIL released), retire the cookie and release its buffers.
        A cookie can be waited for once: a second wait raises ``ValueError``."""
        self._e.wait(cookie)

    def wait_all(self) -> None:
        """Wait for every outstanding operation and release all held buffers."""
        self._e.wait_all()

    def close(self) -> None:
        """Wait for every operation, release all held buffers and stop the workers. Idempotent;
        afterwards every call raises ``ValueError``. (In a forked child it only lets go.)"""
        self._e.close()

    @property
    def closed(self) -> bool:
        return self._e.closed

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if self.closed:
            return f"Engine({self.name!r}, closed)"
        return f"Engine({self.name!r}, channels={self.config['channels']})"

# IPC endpoints between processes (Table 2 of the paper): see movelab.host.ipc.
from movelab.host.ipc import Connection, Listener, connect, listen

__all__ += ["Connection", "Listener", "connect", "listen"]
