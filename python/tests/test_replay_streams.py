"""Isolated and streaming copies (``movelab.record.streams``): the classification on synthetic
traces, and the replay's rule by context (``replay(..., streams=True)``): only isolated small copies
take the cold-copy probe."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from movelab.record import streams
from movelab.record.replay import dst_write_ns
from test_replay_buffers import _events


def _writes(rows: list[tuple]) -> pd.DataFrame:
    """Timed writes (t_ns, dur_ns, tid, dst, size, op) of process 1."""
    return pd.DataFrame([{"t_ns": float(t), "dur_ns": float(d), "pid": 1, "tid": tid, "dst": dst, "size": n, "op": op}
                         for t, d, tid, dst, n, op in rows])


def test_a_fill_of_consecutive_copies_streams_after_its_first_copy() -> None:
    """The fill probe's pattern: 1 KiB copies 1,033 bytes apart (a reply's framing between them),
    back to back: the first is isolated (nothing before it), every later one continues the stream."""
    ev = _writes([(i * 100, 50, 1, 0x10000 + i * 1033, 1024, "copy") for i in range(15)])
    s = streams.streaming(ev)
    assert list(s) == [False] + [True] * 14


def test_copies_into_destinations_of_their_own_are_isolated() -> None:
    """The cold-copy probe's pattern: destinations 8 KiB apart in random order: none continues
    another's destination."""
    order = np.random.default_rng(1).permutation(64)
    ev = _writes([(i * 100, 50, 1, 0x100000 + int(b) * 8192, 1024, "copy") for i, b in enumerate(order)])
    assert not streams.streaming(ev).any()


def test_a_stream_needs_its_bytes_its_window_and_its_thread() -> None:
    """A 7-byte header written just before a copy into a cold block is not a stream (fewer than
    STREAM_MIN_BYTES before it); the next copy, after the first copy's 1 KiB, is. A write too long
    before (beyond the window), on another thread, or more than a line before the destination does
    not make a stream; a small unrelated call in between does not break one; an initialisation
    can start a stream but is never classed as streaming itself."""
    base = 0x200000
    ev = _writes([
        (0, 10, 1, base, 7, "copy"),                       # header
        (50, 60, 1, base + 7, 1024, "copy"),               # continues 7 bytes: isolated
        (200, 10, 1, 0x900000, 8, "copy"),                 # unrelated small call in between
        (250, 60, 1, base + 7 + 1024 + 9, 1024, "copy"),   # continues 1 KiB + 7 (9 bytes of framing): streaming
        (5000, 60, 1, base + 2 * 1033 + 7, 1024, "copy"),  # 4.7 us after: isolated
        (5100, 60, 2, base + 3 * 1033 + 7, 1024, "copy"),  # another thread's stream: isolated
        (5200, 60, 1, base + 3 * 1033 + 7 + 200, 1024, "copy"),  # 200 bytes past the end: isolated
        (6000, 60, 1, 0x500000, 512, "init"),              # an initialisation
        (6100, 60, 1, 0x500000 + 512, 1024, "copy"),       # continues it: streaming
        (6200, 60, 1, 0x500000 + 1536, 256, "init"),       # an initialisation continuing: never streaming
    ])
    assert list(streams.streaming(ev)) == [False, False, False, True, False, False, False, False, True, False]
    # untimed (aggregated) rows get no classification; the result keeps ev's index
    agg = pd.concat([ev, pd.DataFrame([{"t_ns": np.nan, "dur_ns": np.nan, "pid": 1, "tid": 1, "dst": np.nan,
                                        "size": 8, "op": "copy"}])], ignore_index=True)
    assert list(streams.streaming(agg).index) == list(range(len(ev)))


def test_the_stream_rule_moves_with_its_parameters_and_refuses_bad_ones() -> None:
    ev = _writes([(0, 10, 1, 0x1000, 64, "copy"), (100, 10, 1, 0x1040, 1024, "copy")])
    assert not streams.streaming(ev).iloc[1]  # 64 bytes before it: below STREAM_MIN_BYTES
    assert streams.streaming(ev, min_bytes=64).iloc[1]
    assert not streams.streaming(ev, min_bytes=64, window_ns=50.0).iloc[1]
    for bad in ({"gap": -1}, {"calls": 0}, {"min_bytes": 1.5}, {"window_ns": float("nan")}, {"calls": True}):
        with pytest.raises(ValueError, match="streaming: "):
            streams.streaming(ev, **bad)
    assert streams.streaming(ev.iloc[0:0]).empty


def test_dst_write_charge_gives_only_isolated_small_copies_the_cold_copy_probe() -> None:
    cls = pd.DataFrame({"t_ns": [1.0, 2.0, 3.0], "count": [1, 1, 1], "size": [1024, 1024, 4096],
                        "dst": [0x1000, 0x2000, 0x3000]})
    st = pd.DataFrame({"dst_warm": [0.0, 0.0, 0.0], "dst_llc": [0.0, 0.0, 0.0], "dst_cold": [1.0, 1.0, 1.0]})
    stream = pd.Series([False, True, False])
    dw, cc = {"llc": 1.0, "cold": 7.0}, {1024: 300.0, 2048: 500.0}
    # isolated 1 KiB: the probe; streaming 1 KiB: per line; 4 KiB: per line whatever its context
    assert dst_write_ns(cls, st, dw, cc, "copy", stream=stream) == pytest.approx((300 + 16 * 7 + 64 * 7) / 3)
    assert dst_write_ns(cls, st, dw, cc, "copy") == pytest.approx((300 + 300 + 64 * 7) / 3)
    # the isolated copies alone take the probe boundary's shares
    far = pd.DataFrame({"dst_warm": [1.0, 1.0, 1.0], "dst_llc": [0.0, 0.0, 0.0], "dst_cold": [0.0, 0.0, 0.0]})
    assert dst_write_ns(cls, st, dw, cc, "copy", st_small=far, stream=stream) == pytest.approx((16 * 7 + 64 * 7) / 3)


def test_replay_streams_charges_a_stream_the_fill_probe_and_isolated_copies_the_cold_copy_probe() -> None:
    """rowclone-system (1 MiB level 2): two rounds of three find their destinations in memory.
    Isolated destinations: the rule by context charges what the cold small-copy rule charges.
    A stream: only each round's first copy is isolated, the 23 others keep the fill probe's
    per-line figure. The rule is refused without cold_copy."""
    import movelab

    dw, cc = {"llc": 2.0, "cold": 7.0}, {1024: 300.0, 2048: 500.0}
    kw = {"samples": 4, "touch_rate": 0.0, "dst_write": dw, "cold_copy": cc}
    sims: dict = {}
    iso = _events()
    a = movelab.replay(iso, "rowclone-system", "cpu", _cache=sims, **kw)
    b = movelab.replay(iso, "rowclone-system", "cpu", streams=True, _cache=sims, **kw)
    assert b.summary["streams"] and not a.summary["streams"]
    assert b.classes.iloc[0]["dst_write_ns"] == pytest.approx(a.classes.iloc[0]["dst_write_ns"])
    assert b.classes.iloc[0]["isolated_share"] == pytest.approx(1.0)
    seq = _events(step=1024)
    sims = {}
    c = movelab.replay(seq, "rowclone-system", "cpu", _cache=sims, **kw).classes.iloc[0]
    d = movelab.replay(seq, "rowclone-system", "cpu", streams=True, _cache=sims, **kw).classes.iloc[0]
    assert c["dst_write_ns"] == pytest.approx(2 / 3 * 300.0)
    assert d["isolated_share"] == pytest.approx(1 / 24)
    assert d["dst_write_ns"] == pytest.approx(2 / 3 * (300.0 / 24 + 23 / 24 * 16 * 7.0))
    assert d["predicted_ns"] - c["predicted_ns"] == pytest.approx(c["calls"] * (d["dst_write_ns"] - c["dst_write_ns"]))
    with pytest.raises(ValueError, match="streams applies with cold_copy only"):
        movelab.replay(seq, "rowclone-system", "cpu", samples=2, dst_write=dw, streams=True)
    with pytest.raises(ValueError, match="streams must be True or False"):
        movelab.replay(seq, "rowclone-system", "cpu", samples=2, dst_write=dw, cold_copy=cc, streams="yes")
