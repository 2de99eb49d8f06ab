"""The onload engine's Python API on the replay source (no privileges): receive with and without
blocking, every payload checked byte for byte, faults counted and never delivered, transmit,
argument errors naming the argument, and Ctrl-C interrupting a blocking receive."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

import pytest
from movelab.host.onload import OnloadEngine, frame, payload


def test_receive_every_payload_byte_for_byte() -> None:
    n, size = 200, 1472
    with OnloadEngine(payload_bytes=size, count=n, pool_frames=n, port=9000, gated=True,
                      idle_spin_us=50) as eng:
        sock = eng.bind(9000)
        for _ in range(n):
            sock.post(bytearray(2048))
        assert sock.recv(block=False) is None
        eng.go()
        for seq in range(n):
            msg = sock.recv(timeout=10)
            assert msg is not None
            assert msg.nbytes == size
            assert msg.payload == payload(seq, size)
            assert msg.addr == ("10.77.0.2", 40000)
        st = eng.stats()
        assert st["delivered"] == n and st["no_buffer"] == 0
        assert sock.stats()["delivered_bytes"] == n * size
        sock.close()


def test_faults_are_counted_and_never_delivered() -> None:
    good = frame(payload(1, 100), dst=("10.77.0.1", 7000))
    bad_udp = bytearray(frame(payload(2, 100), dst=("10.77.0.1", 7000)))
    bad_udp[60] ^= 0xFF
    bad_ip = bytearray(good)
    bad_ip[14 + 8] ^= 1
    truncated = good[:50]
    unbound = frame(payload(3, 100), dst=("10.77.0.1", 7001))
    no_buffer = frame(payload(4, 100), dst=("10.77.0.1", 7000))
    frames = [bytes(bad_udp), bytes(bad_ip), truncated, unbound, good, no_buffer]
    with OnloadEngine(frames=frames, gated=True, idle_spin_us=50) as eng:
        sock = eng.bind(7000)
        sock.post(bytearray(128))
        eng.go()
        msg = sock.recv(timeout=10)
        assert msg is not None and msg.payload == payload(1, 100)
        deadline = time.monotonic() + 10
        while eng.stats()["frames"] < len(frames) and time.monotonic() < deadline:
            time.sleep(0.001)
        st = eng.stats()
        assert st["delivered"] == 1
        assert st["bad_udp_checksum"] == 1 and st["bad_ip_checksum"] == 1
        assert st["truncated"] + st["malformed"] == 1
        assert st["unbound_port"] == 1 and st["no_buffer"] == 1
        assert sock.recv(block=False) is None


def test_send_builds_a_valid_frame() -> None:
    with OnloadEngine(capture_tx=4, idle_spin_us=50) as eng:
        sock = eng.bind(5555)
        data = payload(7, 300)
        sock.send(data, ("10.77.0.2", 6000))
        sock.send(bytearray(b"x"), ("10.77.0.2", 6001))
        frames = eng.captured()
        assert len(frames) == 2
        f = frames[0]
        assert f[42:342] == data
        # Past the MAC addresses, the engine's frame is what frame() builds for the same flow.
        assert f[12:] == frame(data, src=("10.77.0.1", 5555), dst=("10.77.0.2", 6000), ip_id=0)[12:]
        assert eng.stats()["tx_frames"] == 2


def test_bad_arguments_raise_value_error_naming_them() -> None:
    with pytest.raises(ValueError, match="bogus"):
        OnloadEngine(bogus=1)
    with pytest.raises(ValueError, match="burst"):
        OnloadEngine(burst=0)
    with pytest.raises(ValueError, match="rate_mbps"):
        OnloadEngine(rate_mbps=-1)
    with pytest.raises(ValueError, match="payload_bytes"):
        OnloadEngine(payload_bytes=70000)
    with OnloadEngine(idle_spin_us=50) as eng:
        with pytest.raises(ValueError, match="port"):
            eng.bind(0)
        sock = eng.bind(9000)
        with pytest.raises(ValueError, match="already bound"):
            eng.bind(9000)
        with pytest.raises(ValueError, match="buf"):
            sock.post(b"read-only bytes")
        with pytest.raises(ValueError, match="buf"):
            sock.post(bytearray())
        with pytest.raises(ValueError, match="no buffer is posted"):
            sock.recv(timeout=0.01)
        sock.post(bytearray(64))
        with pytest.raises(ValueError, match="timeout"):
            sock.recv(timeout=-1)
        with pytest.raises(ValueError, match="addr"):
            sock.send(b"x", ("not-an-ip", 9))
        with pytest.raises(ValueError, match="addr"):
            sock.send(b"x", ("10.77.0.2", 0))
        with pytest.raises(ValueError, match="9001"):
            sock.send(bytes(9001), ("10.77.0.2", 9))
        assert sock.recv(timeout=0.02) is None


def test_ctrl_c_interrupts_a_blocking_receive() -> None:
    # Python's own Ctrl-C handler, whatever an earlier test left installed.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    done = threading.Event()

    def ctrl_c() -> None:
        # Ctrl-C every 0.2 s until the receive returns (one sent before the receive began is
        # taken by the interpreter first); after 20 s the test fails instead of hanging.
        deadline = time.monotonic() + 20
        while not done.wait(0.2) and time.monotonic() < deadline:
            os.kill(os.getpid(), signal.SIGINT)

    try:
        with OnloadEngine(idle_spin_us=50) as eng:
            sock = eng.bind(9000)
            sock.post(bytearray(64))
            sender = threading.Thread(target=ctrl_c, daemon=True)
            t0 = time.monotonic()
            sender.start()
            with pytest.raises(KeyboardInterrupt):
                try:
                    sock.recv(timeout=30)  # nothing will ever arrive
                finally:
                    done.set()
                    # A last Ctrl-C still in flight lands here, not in a later line.
                    while sender.is_alive():
                        with contextlib.suppress(KeyboardInterrupt):
                            sender.join(0.05)
                    with contextlib.suppress(KeyboardInterrupt):
                        time.sleep(0.05)
            assert time.monotonic() - t0 < 5
    finally:
        signal.signal(signal.SIGINT, previous)


def _bench_cli(tmp_path, *args: str):  # type: ignore[no-untyped-def]
    import json

    from movelab.host.cli import bench_host_app
    from typer.testing import CliRunner

    res = CliRunner().invoke(bench_host_app, ["onload", "--quick", "--format", "json", "--out", str(tmp_path),
                                              "--seconds", "0.05", "--sizes", "64", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout.strip().splitlines()[-1])


REQUIRED = {"direction", "config", "source", "payload_bytes", "throughput_mbps", "host_cpu_ns_per_packet",
            "engine_cpu_ns_per_packet", "loss"}


def test_bench_quick_replay_rows_and_outputs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = _bench_cli(tmp_path, "--source", "replay")
    assert {(r["direction"], r["config"]) for r in rows} == {
        (d, c) for d in ("rx", "tx") for c in ("kernel", "softnic", "onload", "onload-nocache")}
    for r in rows:
        assert REQUIRED <= r.keys()
        assert r["source"] == "replay" and r["payload_bytes"] == 64
        assert r["corrupted"] == 0
        assert 0 <= r["loss"] <= 1
        assert r["packets"] > 0, r
    for name in ("onload.csv", "onload.png", "onload.json"):
        assert (tmp_path / name).exists()
    # Outputs are not overwritten without --force.
    from movelab.host.cli import bench_host_app
    from typer.testing import CliRunner

    res = CliRunner().invoke(bench_host_app, ["onload", "--quick", "--out", str(tmp_path), "--seconds", "0.05",
                                              "--sizes", "64", "--source", "replay", "--config", "onload"])
    assert res.exit_code == 2 and "--force" in res.output


def test_bench_rejects_bad_options(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from movelab.host.cli import bench_host_app
    from typer.testing import CliRunner

    for args, word in ((["--config", "warp"], "config"), (["--sizes", "9000"], "sizes"),
                       (["--seconds", "0"], "seconds"), (["--source", "pigeon"], "source")):
        res = CliRunner().invoke(bench_host_app, ["onload", "--out", str(tmp_path), *args])
        assert res.exit_code == 2 and word in res.output, res.output


def test_bench_veth_when_permitted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from movelab.host.bench_onload import veth_status

    ok, why = veth_status()
    if not ok:
        pytest.skip(f"veth source not available here: {why}")
    rows = _bench_cli(tmp_path, "--source", "veth", "--config", "kernel", "--config", "onload")
    assert {r["source"] for r in rows} == {"veth"}
    for r in rows:
        assert r["corrupted"] == 0 and r["packets"] > 0, r


def _wait_frames(eng: OnloadEngine, n: int) -> None:
    deadline = time.monotonic() + 10
    while eng.stats()["frames"] < n and time.monotonic() < deadline:
        time.sleep(0.001)
    assert eng.stats()["frames"] == n


def _check_truncating_receive(sizes: list[int], lengths: list[int]) -> None:
    """Post buffers of ``sizes``, replay datagrams of ``lengths`` (payload i = payload(i, len)):
    datagram i lands in buffer i, cut to the buffer's size and flagged when it is too small, and
    every byte delivered is the payload's."""
    frames = [frame(payload(i, n), dst=("10.77.0.1", 7000)) for i, n in enumerate(lengths)]
    with OnloadEngine(frames=frames, gated=True, pool_frames=len(frames), idle_spin_us=50) as eng:
        sock = eng.bind(7000)
        bufs = [bytearray(b"\xee" * n) for n in sizes]
        for b in bufs:
            sock.post(b)
        eng.go()
        got = min(len(sizes), len(lengths))
        for i in range(got):
            msg = sock.recv(timeout=10)
            assert msg is not None, f"datagram {i} never arrived"
            assert msg.buffer is bufs[i]
            want = payload(i, lengths[i])
            assert msg.datagram_nbytes == lengths[i]
            assert msg.nbytes == min(sizes[i], lengths[i])
            assert msg.truncated == (sizes[i] < lengths[i])
            assert msg.payload == want[: msg.nbytes]
            assert bytes(bufs[i][msg.nbytes:]) == b"\xee" * (sizes[i] - msg.nbytes)
        _wait_frames(eng, len(frames))
        assert sock.recv(block=False) is None
        st = sock.stats()
        short = sum(1 for s, n in zip(sizes, lengths, strict=False) if s < n)
        assert st["delivered"] == got and st["too_small"] == short
        assert st["no_buffer"] == len(lengths) - got
        assert st["delivered_bytes"] == sum(min(s, n) for s, n in zip(sizes, lengths, strict=False))
        assert eng.stats()["delivered"] + sum(
            v for k, v in eng.stats().items()
            if k in ("truncated", "oversized", "malformed", "not_ours", "bad_ip_checksum",
                     "bad_udp_checksum", "unbound_port", "no_buffer", "faults")) == len(frames)


def test_a_too_small_buffer_truncates_and_later_buffers_still_receive() -> None:
    # One 1-byte buffer, then five of 2048 B; a hundred 64-byte datagrams. The first arrives cut
    # to one byte (flagged), the next five whole; none is held back behind the small buffer.
    with OnloadEngine(payload_bytes=64, count=100, pool_frames=100, port=9000, gated=True,
                      idle_spin_us=50) as eng:
        sock = eng.bind(9000)
        sock.post(bytearray(1))
        for _ in range(5):
            sock.post(bytearray(2048))
        eng.go()
        first = sock.recv(timeout=1)
        assert first is not None and first.truncated
        assert first.nbytes == 1 and first.datagram_nbytes == 64
        assert first.payload == payload(0, 64)[:1]
        for seq in range(1, 6):
            msg = sock.recv(timeout=1)
            assert msg is not None and not msg.truncated
            assert msg.nbytes == 64 and msg.payload == payload(seq, 64)
        _wait_frames(eng, 100)
        st = sock.stats()
        assert st["delivered"] == 6 and st["too_small"] == 1 and st["no_buffer"] == 94
        assert sock.posted == 0


def test_several_small_buffers_in_a_row_truncate_each() -> None:
    _check_truncating_receive([1, 3, 8, 63, 64, 2048, 9, 2048], [64] * 12)


def test_mixed_buffer_and_datagram_sizes() -> None:
    lengths = [10, 64, 700, 1472, 1472, 0, 64, 700, 10, 1472]
    sizes = [1472, 9, 700, 64, 1471, 1, 2048, 699, 10, 1472]
    _check_truncating_receive(sizes, lengths)
