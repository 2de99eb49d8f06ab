"""The streaming reply-copy rule (``replay(..., stream_copy=...)``, docs/record-replay.md,
"Streaming reply copies"): a small copy that continues a stream is charged the stream-copy probe's
extra at its destination's reuse distance; the probe's figures are read, checked and turned into
the rule (``calibration.stream_copy_extra``, ``probe_rules``) on synthetic traces and figures."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from movelab.record import calibration
from movelab.record.replay import dst_write_ns
from test_replay_buffers import _events

PROBE = {"size": 1024, "ns": {"0": 50.0, "1024": 60.0, "16384": 120.0, "65536": 130.0}}


def test_stream_copy_extra_is_the_probe_over_its_hot_chain_by_distance_in_bytes() -> None:
    x = calibration.stream_copy_extra(PROBE)
    assert x == {0: 0.0, 1 << 20: 10.0, 16 << 20: 70.0, 64 << 20: 80.0}
    # a point below the hot chain (noise) charges nothing, never a negative
    assert calibration.stream_copy_extra({"size": 1024, "ns": {"0": 50.0, "256": 45.0}})[256 << 10] == 0.0
    for bad in ({"size": 1024, "ns": {"1024": 60.0}}, {"size": 1024, "ns": {"0": 50.0}},
                {"ns": {"0": 50.0, "1": 60.0}}, {"size": 1024, "ns": {"0": 50.0, "x": 60.0}},
                {"size": 1024, "ns": {"0": 50.0, "1": float("nan")}}, "not a mapping"):
        with pytest.raises(ValueError, match="stream-copy probe"):
            calibration.stream_copy_extra(bad)


def test_parse_stream_copy_refuses_a_failed_or_malformed_run_naming_the_point() -> None:
    v = calibration.parse_stream_copy("stream 1024 256 55.0 50.0 70.0 50.0 30.0 2".split(), 1024, 256)
    assert v == [55.0, 50.0, 70.0, 50.0, 30.0, 2.0]
    with pytest.raises(RuntimeError, match="after 256 KiB"):
        calibration.parse_stream_copy("stream 1024 512 55 50 70 50 30 2".split(), 1024, 256)
    with pytest.raises(RuntimeError, match="after 256 KiB: boom"):
        calibration.parse_stream_copy([], 1024, 256, rc=2, err="boom")
    with pytest.raises(RuntimeError, match="not numbers"):
        calibration.parse_stream_copy("stream 1024 256 a 50 70 50 30 2".split(), 1024, 256)
    with pytest.raises(RuntimeError, match="non-negative"):
        calibration.parse_stream_copy("stream 1024 256 -5 50 70 50 30 2".split(), 1024, 256)


def test_stream_copy_costs_refuses_bad_arguments_before_running() -> None:
    for kw in ({"copies": 0}, {"size": 32}, {"repeats": 0}, {"sweep_kib": (256, 1024)}, {"sweep_kib": (0, -1)}):
        with pytest.raises(ValueError, match="stream-copy"):
            calibration.stream_copy_costs(**kw)


def test_dst_write_charge_gives_streaming_small_copies_the_probe_at_their_distance() -> None:
    """Three 1 KiB copies and one 4 KiB copy, all with their destination in memory: the isolated one
    takes the cold-copy probe, the streaming ones the stream probe at their destination's distance
    (interpolated; beyond the last point, the last; never touched: hot), the 4 KiB copy the fill
    probe's per-line figure whatever its context."""
    cls = pd.DataFrame({"t_ns": [1.0, 2.0, 3.0, 4.0, 5.0], "count": [1] * 5, "size": [1024, 1024, 2048, 4096, 1024],
                        "dst": [0x1000, 0x2000, 0x3000, 0x4000, 0x5000]})
    st = pd.DataFrame({"dst_warm": [0.0] * 5, "dst_llc": [0.0] * 5, "dst_cold": [1.0] * 5,
                       "dst_distance": [1e9, 8 << 20, 200 << 20, 1e9, float("nan")]})
    stream = pd.Series([False, True, True, True, True])
    dw, cc = {"llc": 1.0, "cold": 7.0}, {1024: 300.0, 2048: 500.0}
    sx = calibration.stream_copy_extra(PROBE)
    got = dst_write_ns(cls, st, dw, cc, "copy", stream=stream, stream_copy=sx, stream_copy_size=1024)
    at8 = 10.0 + (8 - 1) / (16 - 1) * 60.0
    assert got == pytest.approx((300 + at8 + 2 * 80.0 + 64 * 7 + 0.0) / 5)
    # without the rule the streaming copies keep the fill probe's per-line figure
    base = dst_write_ns(cls, st, dw, cc, "copy", stream=stream)
    assert base == pytest.approx((300 + 16 * 7 + 32 * 7 + 64 * 7 + 16 * 7) / 5)
    # the charge moves with the probe's figures
    more = {k: 2 * v for k, v in sx.items()}
    assert dst_write_ns(cls, st, dw, cc, "copy", stream=stream, stream_copy=more) > got
    # an initialisation is never a streaming copy
    assert dst_write_ns(cls, st, dw, cc, "init", stream=stream, stream_copy=sx) == pytest.approx(
        dst_write_ns(cls, st, dw, cc, "init", stream=stream))


def test_replay_stream_copy_charges_a_stream_by_distance_and_is_refused_without_streams() -> None:
    """rowclone-system: 1 KiB copies written one after another (a stream) whose destinations were
    last written 2 MiB of other data before: with the rule, the streaming copies take the probe's
    extra instead of the fill probe's per-line figure, and the prediction moves by exactly the
    difference of the charge."""
    import movelab

    dw, cc = {"llc": 2.0, "cold": 7.0}, {1024: 300.0, 2048: 500.0}
    kw = {"samples": 4, "touch_rate": 0.0, "dst_write": dw, "cold_copy": cc, "streams": True}
    seq = _events(step=1024)
    sims: dict = {}
    a = movelab.replay(seq, "rowclone-system", "cpu", _cache=sims, **kw)
    sx = {0: 0.0, 1 << 20: 40.0, 4 << 20: 90.0}
    b = movelab.replay(seq, "rowclone-system", "cpu", stream_copy=sx, _cache=sims, **kw)
    ca, cb = a.classes.iloc[0], b.classes.iloc[0]
    assert b.summary["stream_copy"] == sx and a.summary["stream_copy"] is None
    assert cb["dst_write_ns"] != pytest.approx(ca["dst_write_ns"])
    assert cb["predicted_ns"] - ca["predicted_ns"] == pytest.approx(ca["calls"] * (cb["dst_write_ns"]
                                                                                   - ca["dst_write_ns"]))
    bigger = movelab.replay(seq, "rowclone-system", "cpu", stream_copy={k: 2 * v for k, v in sx.items()},
                            _cache=sims, **kw)
    assert bigger.classes.iloc[0]["dst_write_ns"] > cb["dst_write_ns"]
    with pytest.raises(ValueError, match="stream_copy applies with streams=True"):
        movelab.replay(seq, "rowclone-system", "cpu", samples=2, dst_write=dw, cold_copy=cc, stream_copy=sx)
    with pytest.raises(ValueError, match="stream_copy must map"):
        movelab.replay(seq, "rowclone-system", "cpu", stream_copy={-1: 3.0}, **kw)
    with pytest.raises(ValueError, match="stream_copy_size"):
        movelab.replay(seq, "rowclone-system", "cpu", stream_copy=sx, stream_copy_size=0, **kw)


def test_probe_rules_and_load_probes_take_the_stream_probe(tmp_path) -> None:
    fill = {"ns": {"hot": 25.0, "llc": 25.0, "memory": 95.0}, "copy_bytes": 1024, "per_buffer": 15,
            "sweep": {"1": 25.0, "128": 25.0, "8192": 95.0}}
    cold = {"sizes": {"1024": {"extra_ns": 300.0}, "2048": {"extra_ns": 400.0}}}
    f = tmp_path / "stream.json"
    f.write_text(json.dumps(PROBE))
    probes = calibration.load_probes([f])
    assert probes["stream_copy"] == PROBE
    probes |= {"fill": fill, "cold_copy": cold}
    r = calibration.probe_rules(probes, cold_copies=True, streams=True, stream_copies=True)
    assert r["stream_copy"] == calibration.stream_copy_extra(PROBE) and r["stream_copy_size"] == 1024
    with pytest.raises(ValueError, match="needs the rule by context"):
        calibration.probe_rules(probes, cold_copies=True, stream_copies=True)
    with pytest.raises(ValueError, match="calibration stream --out FILE"):
        calibration.probe_rules({"fill": fill, "cold_copy": cold}, cold_copies=True, streams=True,
                                stream_copies=True)


def test_the_stream_probe_runs_and_refuses_bad_arguments() -> None:
    """calibrate stream: one line of figures per point; a hot chain (0 KiB) and a swept one; the
    means are ns inside a call, clock read included, so at least the clock's; bad arguments exit 2
    naming the limits. stream_copy_costs keeps every point's median, spread and repeats."""
    import subprocess

    from movelab.record import _build

    prog = str(_build.calibration_program())
    for kib in ("0", "256"):
        r = subprocess.run([prog, "stream", "1024", "200", kib], capture_output=True, text=True, timeout=60)
        v = calibration.parse_stream_copy(r.stdout.split(), 1024, int(kib), r.returncode, r.stderr)
        assert v[0] >= v[4] * 0.5 and v[5] <= 200
    for args in (("32", "10", "0"), ("1024", "0", "0"), ("1024", "10", "-1"), ("5000", "10", "0")):
        bad = subprocess.run([prog, "stream", *args], capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "stream needs 64 <= SIZE <= 4096" in bad.stderr
    got = json.loads(json.dumps(calibration.stream_copy_costs(copies=200, sweep_kib=(0, 256), repeats=2)))
    assert set(got["ns"]) == {"0", "256"} and got["repeats"] == 2
    for k in got["ns"]:
        assert got["min_ns"][k] <= got["ns"][k] <= got["max_ns"][k]
    assert set(calibration.stream_copy_extra(got)) == {0, 256 << 10}


def test_cli_replay_and_what_if_take_the_stream_copies_rule(tmp_path) -> None:
    """movelab replay / what-if --stream-copies: refused without --streams and without the probe
    (naming the command that measures it); with it, the prediction is the Python API's."""
    import movelab
    from movelab.record.trace import write_parquet
    from test_replay_probes_cli import COLD, FILL, _cli

    df = _events(step=1024)
    trace = tmp_path / "t.parquet"
    write_parquet(df, {**df.attrs["movelab"], "command": ["synthetic"], "wall_ns": 1e6, "program_ns": 1e6}, trace)
    plat = tmp_path / "platform.json"
    plat.write_text(json.dumps({"platform": {}, "fill": FILL, "cold_copy": COLD}))
    probe = tmp_path / "stream.json"
    probe.write_text(json.dumps(PROBE))
    base = ["--samples", "2", "--no-call-cost", "--buffer-states", "--cold-copies", "--probes", str(plat)]
    r = _cli("replay", str(trace), *base, "--stream-copies")
    assert r.returncode == 2 and "--stream-copies" in r.stderr and "needs --streams" in r.stderr
    r = _cli("replay", str(trace), *base, "--streams", "--stream-copies")
    assert r.returncode == 2 and "no stream-copy probe" in r.stderr and "calibration stream" in r.stderr
    r = _cli("replay", str(trace), *base, "--streams", "--stream-copies", "--probes", str(probe), "--format", "json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)["replays"][0]["summary"]
    rules = calibration.probe_rules({"fill": FILL, "cold_copy": COLD, "stream_copy": PROBE}, cold_copies=True,
                                    streams=True, stream_copies=True)
    api = movelab.replay(df, "rowclone-system", "cpu", samples=2, **rules)
    assert got["movement_ns"] == pytest.approx(api.summary["movement_ns"])
    assert got["stream_copy"] is not None
    r = _cli("what-if", str(trace), *base, "--streams", "--stream-copies", "--probes", str(probe), "--format", "json")
    assert r.returncode == 0, r.stderr
    cpu = next(m for m in json.loads(r.stdout)["mechanisms"] if m["mechanism"] == "cpu")
    assert cpu["movement_ns"] == pytest.approx(api.summary["movement_ns"])


def test_bench_record_refuses_stream_copies_without_streams(tmp_path) -> None:
    """Refused before anything is recorded or written."""
    from test_replay_probes_cli import _cli

    r = _cli("bench", "record", "--no-streams", "--stream-copies", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "--stream-copies needs --streams" in r.stderr
    assert not (tmp_path / "o").exists()


def test_calibration_stream_command_writes_the_probe_with_its_time_and_load(tmp_path, monkeypatch, capsys) -> None:
    """python -m movelab.record.calibration stream --out FILE: the probe's figures as load_probes
    reads them, stamped with the time and the load average before and after; a failing probe is
    an error message and exit status 1, no file."""
    fake = {**PROBE, "min_ns": PROBE["ns"], "max_ns": PROBE["ns"], "median_ns": PROBE["ns"],
            "cross_ns": PROBE["ns"], "inside_ns": PROBE["ns"]}
    monkeypatch.setattr(calibration, "stream_copy_costs", lambda: dict(fake))
    out = tmp_path / "s.json"
    assert calibration._main(["stream", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["ns"] == PROBE["ns"] and got["measured_utc"] and len(got["load_average"]) == 2
    assert calibration.load_probes([out])["stream_copy"]["size"] == 1024
    assert "16384 KiB: 120.0 ns" in capsys.readouterr().out

    def boom() -> dict:
        raise RuntimeError("the stream-copy probe failed for 1024 bytes after 0 KiB: x")

    monkeypatch.setattr(calibration, "stream_copy_costs", boom)
    bad = tmp_path / "b.json"
    assert calibration._main(["stream", "--out", str(bad)]) == 1 and not bad.exists()
    assert "error: the stream-copy probe failed" in capsys.readouterr().out
