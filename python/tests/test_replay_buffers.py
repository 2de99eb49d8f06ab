"""movelab replay: each buffer in its own cache state (``cachestate.states(..., split=True)``) and
the destination write cost measured by the fill probe (``calibration.dst_write_costs``,
``replay(..., dst_write=...)``)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from movelab.record import cachestate, calibration
from movelab.record.replay import dst_write_ns

CC = shutil.which("cc") or shutil.which("gcc")


def _reply_fill(rounds: int, nbuf: int, step: int = 1033) -> pd.DataFrame:
    """A server's replies: 1 KiB copies from one hot source into ``nbuf`` buffers of 16 KiB, each
    filled sequentially ``step`` bytes at a time (a bulk reply's framing), the buffers in turn,
    round after round (the calibration program's fill)."""
    rows, t = [], 0
    for _ in range(rounds):
        for b in range(nbuf):
            for i in range(16384 // step):
                rows.append({"t_ns": float(t), "pid": 1, "size": 1024, "src": 0x100000,
                             "dst": 0x4000000 + b * 16384 + i * step, "op": "copy"})
                t += 10
    return pd.DataFrame(rows)


def test_split_states_give_a_hot_source_and_a_sequentially_written_destination_their_own_state() -> None:
    """Eight 16 KiB reply buffers written in turn, 1,033 bytes at a time: in the last round a
    destination line was last written 8 x 15 copies of 2 KiB (the source's bytes count too) = 240
    KiB ago, past a 64 KiB level 2 and inside a 1 MiB last level, except the line a copy shares
    with the one before it; the source was read by the call before. Split: every source line warm,
    the destination's lines llc but the shared one. Mixed with 1 KiB regions (the rule before):
    the copy before touched the first line of the region each copy goes on into, and the whole
    region is credited with that recency: most destination lines warm."""
    ev = _reply_fill(rounds=3, nbuf=8)
    last = ev.index[-8 * 15 // 2 + 1:]  # the last round's second half: every buffer written before
    last = [i for i in last if (ev.loc[i, "dst"] - 0x4000000) % 16384 >= 1033]  # not a buffer's first copy
    st = cachestate.states(ev, 64 << 10, 1 << 20, touch_rate=0.0, region=1024, split=True)
    assert (st.loc[last, "src_warm"] == 1.0).all()
    shared = 1 - st.loc[last, "dst_llc"]  # the line shared with the copy before: warm
    assert (st.loc[last, "dst_warm"] == shared).all() and (shared <= 1 / 16).all()
    assert (st.loc[last, "dst_distance"] == 8 * 15 * 2048).all()
    assert (st.loc[last, "src_distance"] == 2048).all()
    mixed = cachestate.states(ev, 64 << 10, 1 << 20, touch_rate=0.0, region=1024)
    assert "dst_warm" not in mixed.columns
    # mixed: both buffers' lines together, the destination's mostly credited warm by its neighbour
    assert mixed.loc[last, "warm"].mean() > 0.9 and (st.loc[last, "warm"] < 0.55).all()
    # with a last level smaller than the distance, the destination is in memory
    small = cachestate.states(ev, 64 << 10, 128 << 10, touch_rate=0.0, region=1024, split=True)
    assert (small.loc[last, "dst_cold"] == st.loc[last, "dst_llc"]).all()
    assert (small.loc[last, "src_warm"] == 1.0).all()
    # first round: nothing touched the destinations before (untouched: warm); an init has no source
    first = cachestate.states(ev.iloc[:16], 64 << 10, 1 << 20, untouched="cold", split=True)
    assert first["dst_cold"].iloc[0] == 1.0 and first["src_cold"].iloc[0] == 1.0 and (first["dst_cold"] > 0.9).all()
    init = ev.iloc[:4].assign(op="init", src=pd.NA)
    ist = cachestate.states(init, 64 << 10, 1 << 20, split=True)
    assert ist["src_warm"].isna().all() and ist["dst_warm"].notna().all()


def test_dst_write_costs_come_from_the_fill_probe() -> None:
    fill = {"ns": {"hot": 24.0, "llc": 32.0, "memory": 136.0}, "copy_bytes": 1024}
    assert calibration.dst_write_costs(fill) == pytest.approx({"llc": 0.5, "cold": 7.0})
    # a last level faster than the hot point's noise is no negative cost
    assert calibration.dst_write_costs({"ns": {"hot": 24.0, "llc": 20.0, "memory": 40.0}})["llc"] == 0.0
    with pytest.raises(ValueError, match="fill probe needs"):
        calibration.dst_write_costs({"ns": {"hot": 24.0, "llc": 32.0}})
    with pytest.raises(ValueError, match="fill probe needs"):
        calibration.dst_write_costs({"ns": {"hot": 24.0, "llc": float("nan"), "memory": 1.0}})
    with pytest.raises(ValueError, match="fill points"):
        calibration.fill_costs({"hot": 1, "llc": 0, "memory": 4})


def test_dst_write_charge_counts_each_calls_destination_lines_in_their_states() -> None:
    cls = pd.DataFrame({"t_ns": [1.0, 2.0, np.nan], "count": [1, 1, 2], "size": [1024, 60, 64],
                        "dst": [0x1000, 0x2010, np.nan]})
    st = pd.DataFrame({"dst_warm": [0.5, 0.0], "dst_llc": [0.25, 0.0], "dst_cold": [0.25, 1.0]}, index=[0, 1])
    # call 0: 16 lines, a quarter in memory (7 ns), a quarter in the last level (1 ns): 32 ns;
    # call 1: 60 bytes from offset 16 span 2 lines, both in memory: 14 ns; two aggregated 64-byte
    # calls: one line each in the last level: 1 ns each
    got = dst_write_ns(cls, st, {"llc": 1.0, "cold": 7.0})
    assert got == pytest.approx((16 * (0.25 * 1 + 0.25 * 7) + 2 * 7 + 2 * 1) / 4)


def _events(n: int = 24, step: int = 4096 * 16) -> pd.DataFrame:
    """Three rounds of ``n`` 1 KiB copies from one source into destinations ``step`` bytes apart
    (each round the same), 2 MiB of the kernel's writes between rounds."""
    from movelab.record.trace import conform

    rows, t = [], 1000
    for rnd in range(3):
        for b in range(n):
            rows.append({"source": "interposer", "kind": "memcpy", "pid": 1, "tid": 1, "image": 0, "t_ns": t,
                         "dur_ns": 100, "count": 1, "size": 1024, "bytes": 1024, "size_class": 11,
                         "src": 0x100000, "dst": 0x900000 + b * step, "faults": 0, "switches": 0})
            t += 200
        # 2 MiB through the cache between rounds (the kernel writing a buffer: not replayed)
        rows.append({"source": "kernel", "kind": "user_buf_written", "pid": 1, "tid": 1, "image": 0, "t_ns": t,
                     "count": 1, "size": 1 << 20, "bytes": 0, "dst": 0x8000000 + rnd * (1 << 21)})
        t += 200
    df = conform(pd.DataFrame(rows))
    df.attrs["movelab"] = {"processes": [{"pid": 1, "image": 0, "clock_ns": 30}]}
    return df


def test_replay_costs_source_by_simulation_and_destination_by_the_probe() -> None:
    """rowclone-system (1 MiB level 2, no larger last level): each round's 24 destinations are 2 MiB
    of other data away (memory), the source read by every call (warm). Costed apart: the class is its
    source's warm simulation (destination cached) plus the destination write charge, which moves
    with the probe's figure; the bad charge is refused by name."""
    import movelab

    df = _events()
    dw = {"llc": 2.0, "cold": 7.0}
    r = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw)
    c = r.classes.iloc[0]
    assert r.summary["split"] and r.summary["dst_write"] == dw
    # the source: read by every call, but by the first of rounds 2 and 3 after the kernel's 2 MiB
    assert c["share_src_warm"] == pytest.approx(1 - 2 / 72)
    assert c["share_src_llc"] + c["share_src_cold"] == pytest.approx(2 / 72)
    # two of three rounds find their destination lines in memory; the first, untouched (warm)
    assert c["share_dst_cold"] == pytest.approx(2 / 3) and c["share_dst_warm"] == pytest.approx(1 / 3)
    assert c["dst_write_ns"] == pytest.approx(2 / 3 * 16 * 7.0)
    assert c["sim_ns_per_call"] == pytest.approx(sum(c[f"share_src_{s}"] * c[f"sim_ns_{s}"] for s in cachestate.STATES)
                                                 + c["dst_write_ns"])
    r2 = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write={"llc": 2.0, "cold": 9.0})
    assert r2.classes.iloc[0]["predicted_ns"] - c["predicted_ns"] == pytest.approx(c["calls"] * 2 / 3 * 16 * 2.0)
    # without the probe: split classification, mixed costing (both buffers simulated in each state)
    mixed = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, split=True)
    assert mixed.summary["split"]
    assert not movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0).summary["split"]
    m = mixed.classes.iloc[0]
    assert "dst_write_ns" not in mixed.classes.columns and mixed.summary["dst_write"] is None
    assert m["sim_ns_per_call"] == pytest.approx(sum(m[f"share_{s}"] * m[f"sim_ns_{s}"]
                                                     for s in cachestate.STATES))
    for bad in ({"llc": 1.0}, {"llc": -1.0, "cold": 2.0}, {"llc": 1.0, "cold": float("inf")}):
        with pytest.raises(ValueError, match="dst_write must map"):
            movelab.replay(df, "rowclone-system", "cpu", samples=2, dst_write=bad)
    with pytest.raises(ValueError, match="cache='tracked' only"):
        movelab.replay(df, "rowclone-system", "cpu", samples=2, cache="cold", dst_write=dw)


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_fill_probe_gives_ns_per_copy_at_each_point() -> None:
    f = calibration.fill_costs({"hot": 1, "llc": 2, "memory": 4}, copies=3000)
    assert set(f["ns"]) == {"hot", "llc", "memory"} and all(v > 0 for v in f["ns"].values())
    d = calibration.dst_write_costs(f)
    assert d["llc"] >= 0 and d["cold"] >= 0


def test_llc_boundary_is_where_the_fill_costs_half_way_to_memory() -> None:
    # 15 copies of 1 KiB per buffer, each counted twice: 30,720 bytes of distance per buffer
    fill = {"ns": {"hot": 20.0, "llc": 22.0, "memory": 120.0}, "per_buffer": 15, "copy_bytes": 1024,
            "sweep": {"1": 20.0, "100": 30.0, "300": 70.0, "1000": 120.0}}
    # half-way (70 ns) is reached exactly at 300 buffers
    assert calibration.llc_boundary(fill) == pytest.approx(300 * 30720)
    fill["sweep"]["300"] = 50.0  # 30 % at 300, 100 % at 1000: 50 % two sevenths of the way on
    assert calibration.llc_boundary(fill) == pytest.approx(300 * 30720 + 2 / 7 * 700 * 30720)
    assert calibration.llc_boundary({"ns": fill["ns"]}) is None  # no sweep
    assert calibration.llc_boundary({**fill, "sweep": {"1": 20.0, "100": 30.0}}) is None  # never half-way


def test_replay_llc_boundary_moves_lines_to_memory_and_is_checked() -> None:
    import movelab

    df = _events()
    dw = {"llc": 2.0, "cold": 7.0}
    # rowclone-system's level 2 is 1 MiB; with a last level of 64 MiB the 2 MiB rounds are llc,
    # with the probe's boundary at 1.5 MiB of distance they are in memory
    big = {"llc": {"size_kib": 65536, "ways": 16, "line_bytes": 64, "hit_cycles": 40}}
    a = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw, overrides=big)
    b = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw, overrides=big,
                       llc_boundary=1.5 * 2**20)
    assert a.classes.iloc[0]["share_dst_llc"] == pytest.approx(2 / 3)
    assert b.classes.iloc[0]["share_dst_cold"] == pytest.approx(2 / 3)
    assert b.summary["llc_boundary"] == int(1.5 * 2**20) and b.summary["llc_bytes"] == 64 << 20
    assert b.summary["movement_ns"] > a.summary["movement_ns"]
    for bad in (1024, float("nan"), True):
        with pytest.raises(ValueError, match="llc_boundary must be"):
            movelab.replay(df, "rowclone-system", "cpu", samples=2, llc_boundary=bad)


def test_cold_copy_rule_charges_a_small_copy_with_its_destination_in_memory_the_probes_cost() -> None:
    """The isolated cold-copy rule (``cold_copy``): a copy within the probe's sizes pays, for its
    destination's share in memory, the probe's ns a call at its size (linear between the sizes), in
    place of the per-line figure; a larger copy, the last level's share and initialisations keep
    the per-line figures."""
    cls = pd.DataFrame({"t_ns": [1.0, 2.0, 3.0], "count": [1, 1, 1], "size": [1024, 1536, 4096],
                        "dst": [0x1000, 0x2000, 0x3000]})
    st = pd.DataFrame({"dst_warm": [0.5, 0.0, 0.0], "dst_llc": [0.25, 0.0, 0.0], "dst_cold": [0.25, 1.0, 1.0]},
                      index=[0, 1, 2])
    dw = {"llc": 1.0, "cold": 7.0}
    cc = {1024: 300.0, 2048: 500.0}
    per_line = [16 * (0.25 * 1 + 0.25 * 7), 24 * 7, 64 * 7]
    assert dst_write_ns(cls, st, dw) == pytest.approx(sum(per_line) / 3)
    rule = [16 * 0.25 * 1 + 0.25 * 300, 400.0, 64 * 7]
    assert dst_write_ns(cls, st, dw, cc, "copy") == pytest.approx(sum(rule) / 3)
    assert dst_write_ns(cls, st, dw, cc, "init") == pytest.approx(sum(per_line) / 3)


def test_replay_with_the_cold_copy_rule_costs_cold_small_copies_by_the_probe() -> None:
    """A synthetic trace of 1 KiB copies whose destinations are in memory in two rounds of three:
    with the rule, the class's destination charge is two thirds of the probe's ns a call, and the
    prediction moves by the calls times the difference when the probe's figure moves; the rule is
    refused without the per-buffer costing and for malformed figures."""
    import movelab

    df = _events()
    dw = {"llc": 2.0, "cold": 7.0}
    sims: dict = {}
    base = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw, _cache=sims)
    r = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw,
                       cold_copy={1024: 300.0, 2048: 500.0}, _cache=sims)
    c, b = r.classes.iloc[0], base.classes.iloc[0]
    assert r.summary["cold_copy"] == {1024: 300.0, 2048: 500.0} and base.summary["cold_copy"] is None
    assert c["dst_write_ns"] == pytest.approx(2 / 3 * 300.0) and b["dst_write_ns"] == pytest.approx(2 / 3 * 16 * 7.0)
    assert c["predicted_ns"] - b["predicted_ns"] == pytest.approx(c["calls"] * 2 / 3 * (300.0 - 16 * 7.0))
    r2 = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw,
                        cold_copy={1024: 400.0, 2048: 500.0}, _cache=sims)
    assert r2.classes.iloc[0]["predicted_ns"] - c["predicted_ns"] == pytest.approx(c["calls"] * 2 / 3 * 100.0)
    with pytest.raises(ValueError, match="costed in its own state"):
        movelab.replay(df, "rowclone-system", "cpu", samples=2, cold_copy={1024: 300.0})
    with pytest.raises(ValueError, match="costed in its own state"):
        movelab.replay(df, "rowclone-system", "cpu", samples=2, dst_write=dw, split=False, cold_copy={1024: 300.0})
    for bad in ({}, {1024: -1.0}, {"1024": 300.0}, {1024: float("nan")}):
        with pytest.raises(ValueError, match="cold_copy must map"):
            movelab.replay(df, "rowclone-system", "cpu", samples=2, dst_write=dw, cold_copy=bad)


def test_cold_copy_boundary_classifies_the_small_copies_destinations_by_the_probes_own_sweep() -> None:
    """With ``cold_copy_boundary`` the rule's copies take their destination shares from the states
    at the probe's own boundary: a boundary past every distance leaves them in the last level (no
    cold-copy charge), one inside it as the default boundary puts them; bad values are refused."""
    import movelab

    df = _events()
    dw = {"llc": 2.0, "cold": 7.0}
    cc = {1024: 300.0, 2048: 500.0}
    sims: dict = {}
    near = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw, cold_copy=cc,
                          _cache=sims)
    far = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw, cold_copy=cc,
                         cold_copy_boundary=64 << 20, _cache=sims)
    # 24 KiB of copies and 2 MiB of the kernel's writes between a destination's touches: inside 64 MiB
    assert far.classes.iloc[0]["dst_write_ns"] == pytest.approx(2 / 3 * 16 * 2.0)
    assert near.classes.iloc[0]["dst_write_ns"] == pytest.approx(2 / 3 * 300.0)
    assert far.summary["cold_copy_boundary"] == 64 << 20
    same = movelab.replay(df, "rowclone-system", "cpu", samples=4, touch_rate=0.0, dst_write=dw, cold_copy=cc,
                          cold_copy_boundary=2 << 20, _cache=sims)
    assert same.classes.iloc[0]["dst_write_ns"] == pytest.approx(2 / 3 * 300.0)
    with pytest.raises(ValueError, match="with cold_copy only"):
        movelab.replay(df, "rowclone-system", "cpu", samples=2, dst_write=dw, cold_copy_boundary=4 << 20)
    with pytest.raises(ValueError, match="at least the level-2 size"):
        movelab.replay(df, "rowclone-system", "cpu", samples=2, dst_write=dw, cold_copy=cc, cold_copy_boundary=1024)


def test_cold_copy_boundary_is_where_the_probes_sweep_costs_half_way_to_memory() -> None:
    cold = {"sizes": {"1024": {"hot_ns": 40.0, "cold_ns": 340.0, "extra_ns": 300.0}}, "sweep_size": 1024,
            "sweep": {"1": 50.0, "8": 130.0, "16": 250.0, "32": 340.0}}
    # 30 % at 8 MiB, 70 % at 16 MiB: half-way half-way between them
    assert calibration.cold_copy_boundary(cold) == pytest.approx(12 * 2**20)
    assert calibration.cold_copy_boundary({**cold, "sweep": {}}) is None
    assert calibration.cold_copy_boundary({**cold, "sweep": {"1": 50.0, "2": 60.0}}) is None


def test_the_mechanisms_own_keys_are_refused_as_overrides_and_the_engines_others_taken() -> None:
    # Each mechanism lays its copy.mechanism, placement and mode over the overrides: --mechanism
    # ce-on-die-async with copy.mode=SYNC_NLB ran ASYNC without a word.
    import movelab
    from movelab.record.replay import replay_windows

    df = _events(n=4)
    for key, value in (("mode", "SYNC_NLB"), ("placement", "off-die"), ("mechanism", "base")):
        with pytest.raises(ValueError, match=rf"copy\.{key}: the replayed mechanism \(--mechanism\) sets"):
            movelab.replay(df, "rowclone-system", "ce-on-die-async", samples=2, overrides={"copy": {key: value}})
    with pytest.raises(ValueError, match=r"copy\.mode"):
        replay_windows(df, "rowclone-system", "ce-on-die-async", overrides={"copy": {"mode": "SYNC_NLB"}})
    # An engine key the mechanisms leave alone reaches the engine.
    kw = {"samples": 2, "touch_rate": 0.0}
    one = movelab.replay(df, "rowclone-system", "ce-on-die-async", overrides={"copy": {"stream_buffer_lines": 1}}, **kw)
    many = movelab.replay(df, "rowclone-system", "ce-on-die-async", **kw)
    assert one.summary["movement_ns"] != many.summary["movement_ns"]


def test_a_recording_without_call_times_gives_no_total() -> None:
    # record --no-time: the calls' time is inside the program's and cannot be taken out, so the
    # total (program less measured plus predicted) counted the calls twice.
    import math

    import movelab

    df = _events(n=4)
    df.attrs["movelab"] = {**df.attrs["movelab"], "timed": False, "program_ns": 1e7}
    r = movelab.replay(df, "rowclone-system", "cpu", samples=2, touch_rate=0.0)
    assert math.isnan(r.summary["total_ns"]) and math.isnan(r.summary["measured_net_ns"])
    assert r.summary["movement_ns"] > 0 and any("not timed" in n for n in r.notes)
    df.attrs["movelab"]["timed"] = True
    timed = movelab.replay(df, "rowclone-system", "cpu", samples=2, touch_rate=0.0)
    assert timed.summary["total_ns"] == pytest.approx(1e7 - timed.summary["measured_in_calls_ns"]
                                                      + timed.summary["movement_ns"])
