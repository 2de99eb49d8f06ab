"""movelab.host.Engine on every buffer type, overlap, batches, and the error cases."""

from __future__ import annotations

import gc
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from movelab.host import Engine, cpus, engines

ENGINES = [("cpu", 1), ("thread", 1), ("thread", 2)]


@pytest.fixture(params=ENGINES, ids=lambda p: f"{p[0]}-{p[1]}")
def eng(request: pytest.FixtureRequest) -> Engine:
    name, ch = request.param
    # small thresholds so that splitting and streaming stores are exercised by small buffers
    return Engine(name, channels=ch, nt_threshold=4096, split_threshold=64 * 1024)


def pattern(n: int, seed: int = 1) -> bytes:
    return ((np.arange(n, dtype=np.uint64) * 31 + seed) & 0xFF).astype(np.uint8).tobytes()


def test_registry_and_cpus() -> None:
    assert set(engines()) == {"cpu", "thread"}
    assert cpus() and all(isinstance(c, int) for c in cpus())


@pytest.mark.parametrize("n", [0, 1, 63, 4096, 200_000, 3 << 20])
def test_bytes_to_bytearray_every_size(eng: Engine, n: int) -> None:
    src = pattern(n)
    dst = bytearray(n)
    c = eng.icopy(src, dst)
    eng.wait(c)
    assert dst == src
    eng.copy(src, dst)
    assert dst == src


def test_memoryview_and_numpy(eng: Engine) -> None:
    a = np.arange(300_000, dtype=np.float64)
    b = np.zeros_like(a)
    eng.wait(eng.icopy(a, b))
    np.testing.assert_array_equal(a, b)
    # numpy -> memoryview slice of a bytearray
    buf = bytearray(a.nbytes + 10)
    eng.copy(a, memoryview(buf)[5 : 5 + a.nbytes])
    assert bytes(buf[5 : 5 + a.nbytes]) == a.tobytes()
    # different dtypes, same byte count
    c = np.zeros(a.nbytes, dtype=np.uint8)
    eng.copy(memoryview(a), c)
    assert c.tobytes() == a.tobytes()


def test_overlap_is_memmove(eng: Engine) -> None:
    for s, d, n in [(0, 100, 1000), (100, 0, 1000), (0, 1, 300_000), (1, 0, 300_000)]:
        buf = bytearray(pattern(400_000))
        want = bytearray(buf)
        want[d : d + n] = want[s : s + n]
        mv = memoryview(buf)
        eng.copy(mv[s : s + n], mv[d : d + n])
        assert buf == want, (s, d, n)


def test_fill_and_nbytes(eng: Engine) -> None:
    dst = bytearray(b"\x01" * 100_000)
    eng.fill(dst, 0xAB, 50_000)
    assert dst[:50_000] == b"\xab" * 50_000 and dst[50_000:] == b"\x01" * 50_000
    eng.wait(eng.ifill(dst, 7))
    assert dst == b"\x07" * 100_000
    eng.copy(b"hello world", dst, 5)
    assert dst[:6] == b"hello\x07"


def test_check_wait_batch_wait_all(eng: Engine) -> None:
    srcs = [pattern(10_000 * (i + 1), i) for i in range(12)]
    dsts = [bytearray(len(s)) for s in srcs]
    cookies = eng.icopy_batch(zip(srcs, dsts, strict=True))
    assert len(set(cookies)) == 12
    while not eng.check(cookies[0]):
        pass
    eng.wait(cookies[0])
    assert eng.outstanding == 11
    eng.wait_all()
    assert eng.outstanding == 0
    assert dsts == [bytearray(s) for s in srcs]
    with Engine("thread") as e2:
        d = bytearray(5)
        e2.icopy(b"abcde", d)
    assert d == b"abcde"


def test_errors_are_clear(eng: Engine) -> None:
    with pytest.raises(ValueError, match="unknown cookie 987654"):
        eng.wait(987654)
    with pytest.raises(ValueError, match="unknown cookie"):
        eng.check(987654)
    c = eng.icopy(b"abc", bytearray(3))
    eng.wait(c)
    with pytest.raises(ValueError, match="already been waited"):
        eng.wait(c)
    with pytest.raises(TypeError, match="read-only"):
        eng.copy(b"abc", b"xyz")
    with pytest.raises(TypeError, match="read-only"):
        eng.icopy(b"abc", _readonly_array())
    with pytest.raises(ValueError, match="length mismatch: source has 3 bytes, destination has 4"):
        eng.copy(b"abc", bytearray(4))
    with pytest.raises(ValueError, match="exceeds"):
        eng.copy(b"abc", bytearray(10), 5)
    with pytest.raises(TypeError, match="buffer protocol"):
        eng.copy("a str", bytearray(5))
    with pytest.raises(TypeError, match="C-contiguous"):
        eng.copy(np.arange(10, dtype=np.uint8)[::2], bytearray(5))
    with pytest.raises(ValueError, match=r"value = 256: expected an integer in 0..=255"):
        eng.fill(bytearray(3), 256)
    assert eng.outstanding == 0


def _readonly_array() -> np.ndarray:
    a = np.zeros(3, dtype=np.uint8)
    a.setflags(write=False)
    return a


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="unknown copy engine 'dma'"):
        Engine("dma")
    with pytest.raises(ValueError, match="channels"):
        Engine("thread", channels=0)
    with pytest.raises(ValueError, match="ring_capacity"):
        Engine("thread", ring_capacity=1)


def test_buffers_are_held_while_in_flight() -> None:
    eng = Engine("thread")
    src = bytearray(pattern(8 << 20))
    dst = bytearray(8 << 20)
    before = sys.getrefcount(dst)
    c = eng.icopy(src, dst)
    assert sys.getrefcount(dst) > before  # the export holds a reference
    with pytest.raises(BufferError):
        dst.extend(b"x")  # cannot be resized while the engine writes it
    del src
    gc.collect()
    eng.wait(c)
    assert sys.getrefcount(dst) == before
    dst.extend(b"x")  # released after wait
    assert dst[:100] == bytearray(pattern(8 << 20))[:100]


def test_drop_with_operations_in_flight() -> None:
    srcs = [bytes([i + 1]) * (2 << 20) for i in range(8)]
    dsts = [bytearray(2 << 20) for _ in range(8)]
    eng = Engine("thread", channels=2)
    for s, d in zip(srcs, dsts, strict=True):
        eng.icopy(s, d)
    del eng
    gc.collect()
    assert all(d == s for s, d in zip(srcs, dsts, strict=True))


def test_wait_releases_the_gil() -> None:
    eng = Engine("thread", wait_spin_us=0)
    src = bytes(64 << 20)
    dst = bytearray(64 << 20)
    ticks = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    t = threading.Thread(target=spin)
    t.start()
    for _ in range(3):
        eng.wait(eng.icopy(src, dst))
    stop.set()
    t.join()
    assert ticks > 0


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 70_000),
    s=st.integers(0, 70_000),
    d=st.integers(0, 70_000),
    cache=st.booleans(),
)
def test_matches_python_slicing(n: int, s: int, d: int, cache: bool) -> None:
    size = 140_001
    n = min(n, size - max(s, d))
    buf = bytearray(pattern(size, 3))
    want = bytearray(buf)
    want[d : d + n] = want[s : s + n]
    mv = memoryview(buf)
    _ENG.copy(mv[s : s + n], mv[d : d + n], cache=cache)
    assert buf == want


_ENG = Engine("thread", channels=2, nt_threshold=1024, split_threshold=16 * 1024)
