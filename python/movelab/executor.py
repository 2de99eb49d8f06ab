"""One executor for independent runs: sweeps and reproductions hand it a point function and a list of
points, and it runs them on a local pool of processes (every core by default), in this process
(``workers=1``), or on a Dask cluster (``dask.distributed``) given its scheduler's address or a
``Client``.

Outcomes come back as points finish, in any order, each carrying its point's index, so a caller can
store results as they arrive and order them afterwards: the table is the same whichever executor ran
it. A point whose function raises does not stop the others; its outcome carries the error message.
A point function may declare a cost hint (:func:`costs`): the pool and Dask then start its costliest
points first (largest-first scheduling), which only changes when a point runs, never its result.

The point function must be importable by the workers (a module-level function of an installed
package), since both the process pool and Dask send it by reference.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import signal
import time
import traceback
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["Executor", "Outcome", "PointError", "costs", "cpu_count", "current", "largest_first", "make_executor",
           "run_points", "use"]


@dataclass(frozen=True)
class Outcome:
    """The result of point ``index``: ``value`` when it succeeded, else ``error`` (``"Type: message"``)."""

    index: int
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class PointError(ValueError):
    """Raised by :meth:`Executor.map` when a point failed."""


def cpu_count() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def costs(estimate: Callable[[Any], float],
          feeds_next: bool = False) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    """Declares a point function's cost hint: ``estimate(point)``, the point's CPU seconds as
    estimated from its parameters (one unit for every point function, so that points of several
    functions can be ordered together). Executors start the costliest points first (largest-first
    scheduling: a long point started last would otherwise hold the run's end). Only the order of
    the work depends on it, never a result. ``feeds_next``: the caller's next batch of points
    needs these results (a planner may run a cheap batch of them at once, to start the next one
    early: :class:`PlanningExecutor`)::

        @costs(lambda p: 0.5 * p["packets"])
        def point(p): ...
    """

    def declare(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
        fn.cost = estimate  # type: ignore[attr-defined]
        fn.feeds_next = feeds_next  # type: ignore[attr-defined]
        return fn

    return declare


def _cost(fn: Callable[[Any], Any], point: Any) -> float:
    """``fn``'s cost hint for ``point``; infinite (start it first) without one or where the hint
    fails on this point: a point of unknown length started early costs little, a long one
    started last holds the end."""
    estimate = getattr(fn, "cost", None)
    if estimate is None:
        return math.inf
    try:
        return float(estimate(point))
    except Exception:
        return math.inf


Batch = tuple[Callable[[Any], Any], Sequence[Any]]


def largest_first(batches: Sequence[Batch]) -> list[tuple[Callable[[Any], Any], Any]]:
    """Every (function, point) of ``batches``, the costliest first by the functions' hints
    (:func:`costs`), points without one first; points of equal cost keep their order."""
    pairs = [(fn, p) for fn, pts in batches for p in pts]
    return sorted(pairs, key=lambda fp: -_cost(*fp))


def _submission_order(fn: Callable[[Any], Any], points: Sequence[Any]) -> Iterator[tuple[int, Any]]:
    """(index, point) in the order to start them: the costliest first when ``fn`` has a cost hint,
    else as given, lazily (a sweep's points are made as they are iterated, never indexed)."""
    if getattr(fn, "cost", None) is None:
        return iter(enumerate(points))
    return iter(sorted(enumerate(points), key=lambda ip: -_cost(fn, ip[1])))


def _guarded(fn: Callable[[Any], Any], point: Any) -> tuple[bool, Any]:
    """Runs ``fn(point)`` in a worker; an exception becomes ``(False, "Type: message")`` so that it
    crosses any process boundary (some exceptions do not pickle)."""
    try:
        return True, fn(point)
    except Exception as e:
        msg = str(e).strip() or traceback.format_exc(limit=2).strip().splitlines()[-1]
        return False, f"{type(e).__name__}: {msg}"


def _worker_init(parent: int) -> None:
    """Pool workers leave Ctrl-C to the parent, which stops them (otherwise every worker prints a
    traceback of its own), and die with the parent: a sweep killed with ``kill -9`` leaves no worker
    running its points (Linux's parent-death signal; elsewhere they stop at their next point)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


@contextmanager
def _main_not_inherited(fn: Callable[[Any], Any]) -> Iterator[None]:
    """While workers may be started (a pool starts them as points are submitted): keeps the spawned
    workers from running the caller's main script again, which ``spawn`` does so that functions
    defined there can be found. A script without an ``if __name__ == "__main__":`` guard would
    otherwise run once more in every worker (its prints repeated, and its own sweep starting
    workers of its own, which multiprocessing refuses). Only when ``fn`` does not live in the
    main script: then the workers never need it."""
    import sys

    main = sys.modules.get("__main__")
    if main is None or getattr(fn, "__module__", None) == "__main__":
        yield
        return
    d = main.__dict__
    saved = {k: d[k] for k in ("__file__", "__spec__") if k in d}
    d.pop("__file__", None)
    d["__spec__"] = None
    try:
        yield
    finally:
        d.pop("__spec__", None)
        d.update(saved)


class Executor:
    """Runs a point function over points. Use :func:`make_executor` to build one; use it as a context
    manager (or call :meth:`close`) to release its workers."""

    workers: int
    description: str
    #: The process that made the executor (one that owns threads: a pool's, a Dask client's).
    _owner: int | None = None

    def _forked(self) -> bool:
        """True in a child forked from the process that made the executor."""
        return self._owner is not None and os.getpid() != self._owner

    def _check_owner(self) -> None:
        """Refuses a forked child at once: the threads that feed the workers (the pool's manager,
        the Dask client's event loop) exist only in the parent, so waiting on them would hang."""
        if self._forked():
            raise RuntimeError(f"this executor belongs to process {self._owner}, not to this forked child "
                               f"({os.getpid()}); make a new executor in the child")

    def imap(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> Iterator[Outcome]:
        """Yields one :class:`Outcome` per point as points finish (in any order)."""
        raise NotImplementedError

    def map(self, fn: Callable[[Any], Any], points: Sequence[Any],
            progress: Callable[[int, int], None] | None = None) -> list[Any]:
        """``[fn(p) for p in points]``, computed by the executor; raises :class:`PointError` naming the
        first failed point (by index) after the others finish. ``progress(done, total)`` after each."""
        out: list[Any] = [None] * len(points)
        errors: list[Outcome] = []
        for done, o in enumerate(self.imap(fn, points), 1):
            if o.ok:
                out[o.index] = o.value
            else:
                errors.append(o)
            if progress is not None:
                progress(done, len(points))
        if errors:
            first = min(errors, key=lambda o: o.index)
            raise PointError(f"{len(errors)} of {len(points)} points failed; point {first.index}: {first.error}")
        return out

    def prefetch(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> None:
        """Starts ``fn`` on ``points`` now, ahead of the :meth:`imap` that will ask for them (a pool
        runs several commands' points side by side); the default runs nothing ahead."""

    def provide(self, fn: Callable[[Any], Any], point: Any, value: Any) -> None:
        """Hands over ``fn(point)``'s result, computed elsewhere (while planning), so that the
        :meth:`imap` that asks for it takes it instead of running the point again; the default
        keeps nothing (the point runs again)."""

    def close(self) -> None:
        pass

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SerialExecutor(Executor):
    """Every point in this process, one after another (``workers=1``): no start-up cost, and the
    reference a parallel executor's speedup is measured against."""

    def __init__(self) -> None:
        self.workers = 1
        self.description = "this process"

    def imap(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> Iterator[Outcome]:
        for i, p in enumerate(points):
            ok, v = _guarded(fn, p)
            yield Outcome(i, v) if ok else Outcome(i, error=v)


class Planned(BaseException):
    """Raised by :class:`PlanningExecutor` when a command asks for its first points: the command
    stops there, its points recorded."""


class PlanningExecutor(Executor):
    """Runs nothing costly: records the first batch of points a command asks for (``batches``) and
    stops the command with :class:`Planned`. ``movelab reproduce all`` plans every reproduction this
    way, then starts all their first batches on the pool at once (:meth:`Executor.prefetch`), so
    that a reproduction's longest point no longer waits for the one before to finish.

    A batch whose results feed the command's next batch (:func:`costs`' ``feeds_next``) and whose
    cost hints add up to at most ``run_below`` CPU seconds is run instead, on ``through`` (the pool,
    idle while planning; default: this process), its results kept in ``ran`` (for
    :meth:`Executor.provide`), and the command goes on to its next batch, which is then started at
    once with the others (rowclone-multicore's mixes need every application's alone run)."""

    def __init__(self, run_below: float = 0.0, through: Executor | None = None) -> None:
        self.workers = 1
        self.description = "planning"
        self.run_below = run_below
        self.through = through
        self.batches: list[tuple[Callable[[Any], Any], list[Any]]] = []
        self.ran: list[tuple[Callable[[Any], Any], Any, Any]] = []

    def imap(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> Iterator[Outcome]:
        if getattr(fn, "feeds_next", False) and sum(_cost(fn, p) for p in points) <= self.run_below:
            for o in (self.through or SerialExecutor()).imap(fn, points):
                if o.ok:
                    self.ran.append((fn, points[o.index], o.value))
                yield o
            return
        self.batches.append((fn, list(points)))
        raise Planned


def _point_key(fn: Callable[[Any], Any], point: Any) -> str | None:
    """What identifies a point of ``fn`` across two requests for it (None: not identifiable)."""
    try:
        return f"{fn.__module__}.{fn.__qualname__}:" + json.dumps(point, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):
        return None


class LocalExecutor(Executor):
    """A pool of worker processes on this machine. At most ``2 * workers`` points are queued at once,
    so a sweep of a million points holds a few in memory, and Ctrl-C stops the workers at once."""

    def __init__(self, workers: int | None = None) -> None:
        n = cpu_count() if workers is None else workers
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 4096:
            raise ValueError(f"workers must be an integer between 1 and 4096, got {workers!r}")
        self.workers = n
        self.description = f"local pool of {n} processes"
        self._pool: ProcessPoolExecutor | None = None
        self._owner = os.getpid()
        #: Points started ahead (:meth:`prefetch`), by key: their futures, in the order started.
        self._ahead: dict[str, list[Future]] = {}

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: the parent may run threads (progress bars, Dask); forking beside them is unsafe.
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_worker_init, initargs=(os.getpid(),))
        return self._pool

    def imap(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> Iterator[Outcome]:
        self._check_owner()
        if len(points) <= 1 and self._pool is None:  # a pool would only add its start-up time
            yield from SerialExecutor().imap(fn, points)
            return
        pool = self._get_pool()
        pending: dict[Future, int] = {}
        it = _submission_order(fn, points)
        window = 2 * self.workers
        try:
            while True:
                while len(pending) < window:
                    nxt = next(it, None)
                    if nxt is None:
                        break
                    key = _point_key(fn, nxt[1]) if self._ahead else None
                    ahead = self._ahead.get(key) if key is not None else None
                    if ahead:
                        pending[ahead.pop(0)] = nxt[0]
                        continue
                    with _main_not_inherited(fn):
                        pending[pool.submit(_guarded, fn, nxt[1])] = nxt[0]
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for f in sorted(done, key=lambda f: pending[f]):
                    i = pending.pop(f)
                    exc = f.exception()
                    if exc is not None:  # the worker died (killed, out of memory): the pool is broken
                        raise RuntimeError(f"a worker process died while running point {i}: {exc}") from exc
                    ok, v = f.result()
                    yield Outcome(i, v) if ok else Outcome(i, error=v)
        except BaseException:
            self._kill()
            raise

    def prefetch(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> None:
        self._check_owner()
        pool = self._get_pool()
        for p in points:
            key = _point_key(fn, p)
            if key is None:
                continue
            with _main_not_inherited(fn):
                self._ahead.setdefault(key, []).append(pool.submit(_guarded, fn, p))

    def provide(self, fn: Callable[[Any], Any], point: Any, value: Any) -> None:
        key = _point_key(fn, point)
        if key is None:
            return
        f: Future = Future()
        f.set_result((True, value))
        self._ahead.setdefault(key, []).append(f)

    def _kill(self) -> None:
        """Stops the workers now (Ctrl-C, a broken pool, or the caller abandoning the iteration)."""
        self._ahead.clear()
        pool, self._pool = self._pool, None
        if pool is None:
            return
        procs = list(getattr(pool, "_processes", {}).values())  # no public way to stop running tasks
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=5)

    def close(self) -> None:
        self._ahead.clear()
        if self._forked():  # the pool and its threads are the parent's: only let go
            self._pool = None
            return
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


#: Seconds a Dask scheduler has to accept a connection and answer (refused connections fail at once).
CONNECT_TIMEOUT = 20.0


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a tcp:// or tls:// address (None for other schemes); a bad port is an error."""
    scheme, _, rest = address.partition("://")
    if scheme not in ("tcp", "tls"):
        return None
    rest = rest.split("/", 1)[0]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"cluster address '{address}': the port must be a number from 1 to 65535")
    return host.strip("[]") or "127.0.0.1", int(port)


def _probe_scheduler(address: str, timeout: float) -> None:
    """Fails at once on a refused connection, and within ``timeout`` seconds on an address that
    accepts connections but does not answer as a Dask scheduler would (``Client`` itself may wait
    for ever on such a peer). Raises ``ConnectionError`` naming the address."""
    import asyncio
    import socket

    hp = _host_port(address)
    if hp is not None:
        try:
            socket.create_connection(hp, timeout=timeout).close()
        except OSError as e:
            raise ConnectionError(f"cannot reach the Dask scheduler at {address}: {e.strerror or e}") from None

    async def identity() -> Any:
        from distributed.core import rpc

        r = rpc(address, timeout=timeout)
        try:
            return await r.identity()
        finally:
            await r.close_rpc()

    async def bounded() -> Any:
        return await asyncio.wait_for(identity(), timeout)

    try:
        asyncio.get_running_loop()
        return  # called from async code (a notebook): Client's own timeout is all we can use
    except RuntimeError:
        pass

    try:
        asyncio.run(bounded())
    except TimeoutError:
        raise ConnectionError(f"cannot reach the Dask scheduler at {address}: it accepts connections but did not "
                              f"answer in {timeout:g} s (is it a Dask scheduler?)") from None
    except (OSError, ValueError) as e:
        raise ConnectionError(f"cannot reach the Dask scheduler at {address}: {e}") from None


#: The Dask executors whose client movelab made (from an address), for the fork hook below.
_OWN_CLIENTS: weakref.WeakSet[DaskExecutor] = weakref.WeakSet()


def _let_go_of_clients_in_child() -> None:
    """In a child after ``fork()``: marks every client movelab made as closed, so that nothing in the
    child (``close``, ``dask.distributed``'s own exit hook) waits on the parent's event loop, which
    the child does not have. The parent's clients are untouched."""
    for ex in list(_OWN_CLIENTS):
        ex.client.status = "closed"


os.register_at_fork(after_in_child=_let_go_of_clients_in_child)


class DaskExecutor(Executor):
    """Points as tasks on a Dask cluster (``dask.distributed``). The workers must have movelab
    installed (see docs/sweeps.md). In a child after ``fork()`` it refuses every use at once, and a
    client it made is let go of (a client the caller gave stays the caller's)."""

    def __init__(self, cluster: Any) -> None:
        try:
            from distributed import Client
        except ImportError as e:  # pragma: no cover - a dependency of movelab
            raise RuntimeError("running on a cluster needs dask.distributed: pip install 'dask[distributed]'") from e
        if isinstance(cluster, Client):
            self.client, self._own = cluster, False
        elif isinstance(cluster, str):
            if not cluster.startswith(("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")):
                raise ValueError(f"cluster address '{cluster}' must look like tcp://HOST:PORT")
            _probe_scheduler(cluster, CONNECT_TIMEOUT)
            try:
                self.client, self._own = Client(cluster, timeout=f"{CONNECT_TIMEOUT}s"), True
            except (OSError, TimeoutError) as e:
                raise ConnectionError(f"cannot reach the Dask scheduler at {cluster}: {e}") from e
        else:
            raise TypeError(f"cluster must be an address (tcp://HOST:PORT) or a dask.distributed.Client, "
                            f"not {type(cluster).__name__}")
        threads = sum(self.client.nthreads().values())
        self.workers = max(1, threads)
        self.description = f"Dask cluster at {self.client.scheduler.address} ({threads} threads)"
        self._owner = os.getpid()
        if self._own:
            _OWN_CLIENTS.add(self)

    def imap(self, fn: Callable[[Any], Any], points: Sequence[Any]) -> Iterator[Outcome]:
        self._check_owner()
        from distributed import as_completed

        # Keep the scheduler's queue a few points per thread deep, so that memory stays bounded and
        # Ctrl-C has little to cancel; the cluster may grow while we run, so ask again as we go.
        it = _submission_order(fn, points)
        index: dict[Any, int] = {}
        ac = as_completed()
        threads = {"n": self.workers, "asked": time.monotonic()}

        def top_up() -> None:
            if time.monotonic() - threads["asked"] > 5.0:  # one round trip to the scheduler every 5 s at most
                threads["n"], threads["asked"] = sum(self.client.nthreads().values()), time.monotonic()
            window = 4 * max(1, threads["n"])
            while ac.count() < window:
                nxt = next(it, None)
                if nxt is None:
                    return
                f = self.client.submit(_guarded, fn, nxt[1], pure=False)
                index[f.key] = nxt[0]
                ac.add(f)

        try:
            top_up()
            while not ac.is_empty():
                f = next(ac)
                i = index.pop(f.key)
                if f.status == "error":
                    exc = f.exception()
                    f.release()
                    raise RuntimeError(f"the cluster lost point {i}: {exc}")
                ok, v = f.result()
                f.release()
                yield Outcome(i, v) if ok else Outcome(i, error=v)
                top_up()
        except BaseException:
            futures = list(ac.futures) if hasattr(ac, "futures") else []
            if futures:
                self.client.cancel(futures)
            raise

    def close(self) -> None:
        if self._forked():  # the client's event loop is the parent's: only let go
            return
        if self._own:
            self.client.close()


def make_executor(cluster: Any = None, workers: int | None = None) -> Executor:
    """A Dask executor when ``cluster`` (an address or a ``Client``) is given; else a local pool of
    ``workers`` processes (every core by default), or this process alone when ``workers == 1``."""
    if cluster is not None:
        if workers is not None:
            raise ValueError("give either a cluster or a number of local workers, not both")
        return DaskExecutor(cluster)
    if workers == 1:
        return SerialExecutor()
    return LocalExecutor(workers)


_current: ContextVar[Executor | None] = ContextVar("movelab_executor", default=None)


@contextmanager
def use(executor: Executor) -> Iterator[Executor]:
    """Makes ``executor`` the one :func:`run_points` uses in this block (the CLI's ``--cluster``)."""
    token = _current.set(executor)
    try:
        yield executor
    finally:
        _current.reset(token)


def current() -> Executor:
    """The executor set by :func:`use`, else this process (a library call does not start workers
    unless asked)."""
    return _current.get() or SerialExecutor()


def run_points(fn: Callable[[Any], Any], points: Sequence[Any],
               progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """``[fn(p) for p in points]`` on the current executor: the hook a reproduction calls with its
    point function and its list of points."""
    return current().map(fn, points, progress)
