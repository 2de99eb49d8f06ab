"""A property test over the documented ranges of the two-host I/O system (the cluster pair:
frame size, PCIe generation and lanes, DRAM timing, messages and gap) and the network onload
system (udp-rx: configuration, payload, microengine clock, count and contexts): every run
completes, every byte checks, and slowing a resource (a lower microengine clock, fewer
microengines) never raises the throughput beyond noise. Small runs, few examples, derandomized."""

from __future__ import annotations

import movelab
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _device(r: dict, host: int) -> dict:
    return r["stats"]["hosts"][host]["devices"][0]


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(preset=st.sampled_from(["larsen-io", "larsen-io-idma"]),
       frame=st.sampled_from([64, 128, 1000, 1514]),
       gen=st.sampled_from([1, 2, 3]), lanes=st.sampled_from([1, 4, 8, 16]),
       ncl=st.sampled_from([None, 8, 16]),
       messages=st.integers(1, 12), gap=st.sampled_from([0, 2000, 20000]))
def test_the_two_host_io_system_completes_and_checks_every_byte_across_its_ranges(
        preset: str, frame: int, gen: int, lanes: int, ncl: int | None, messages: int, gap: int) -> None:
    # larsen-io-idma's device is an agent with no [io] table: its link and frame stay the preset's.
    over: dict = {"io": {"frame_bytes": frame, "link": {"gen": gen, "lanes": lanes}}} if preset == "larsen-io" else {}
    if ncl is not None:
        over["memory"] = {"dram": {"timing": {"nCL": ncl}}}
    r = movelab.simulate(preset, "pair", over, {"messages": messages, "gap": gap}, system="cluster")
    tx, rx = _device(r, 0), _device(r, 1)
    assert tx["frames"] == messages, tx
    assert rx["rx_frames_in"] == messages, rx
    if preset == "larsen-io":
        assert rx["rx_bytes_checked"] == messages * frame, rx
    else:
        assert rx["rx_bytes_checked"] > 0, rx
    assert rx["rx_bytes_wrong"] == 0 and tx.get("stale_lines", 0) == 0
    assert r["time_ns"] > 0


def _udp_rx(config: str, payload: int, clock: float, cores: int, threads: int) -> dict:
    over = {"wire": {"duration_us": 200.0},
            "small_cores": {"clock_mhz": clock, "rx_cores": cores, "threads": threads}}
    return movelab.simulate("ixp2350", "udp-rx", over, {"config": config, "payload": payload})["stats"]


def _checked(s: dict, payload: int) -> None:
    assert s["delivered"] > 0, s
    assert s["consumed"] == s["delivered"], s
    # The onloader lands the payload alone; emu and softnic the whole frame (42 B of headers).
    per = payload if s["config"] == "onloader" else payload + 42
    assert s["rx_bytes_checked"] == s["delivered"] * per, s


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(config=st.sampled_from(["emu", "softnic", "onloader"]),
       payload=st.sampled_from([16, 64, 512, 1472]),
       clock=st.sampled_from([10.0, 50.0, 200.0, 900.0, 3000.0]),
       cores=st.integers(1, 4), threads=st.sampled_from([1, 2, 8]))
def test_the_onload_system_completes_checks_bytes_and_slower_engines_never_go_faster(
        config: str, payload: int, clock: float, cores: int, threads: int) -> None:
    base = _udp_rx(config, payload, clock, cores, threads)
    _checked(base, payload)
    # Noise: the throughput counts the second half's deliveries of a 200 us run, a datagram or
    # two either way.
    slack = 1.10 * base["throughput_mbps"] + 30.0
    slow = _udp_rx(config, payload, clock / 2, cores, threads)
    _checked(slow, payload)
    assert slow["throughput_mbps"] <= slack, (base["throughput_mbps"], slow["throughput_mbps"])
    if cores > 1:
        fewer = _udp_rx(config, payload, clock, cores - 1, threads)
        _checked(fewer, payload)
        assert fewer["throughput_mbps"] <= slack, (base["throughput_mbps"], fewer["throughput_mbps"])


def test_out_of_range_settings_are_refused_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"small_cores\.threads: 65 is outside 1..=64"):
        movelab.simulate("ixp2350", "udp-rx", {"small_cores": {"threads": 65}})
    with pytest.raises(ValueError, match=r"params\.payload: 15 is outside 16..=1472"):
        movelab.simulate("ixp2350", "udp-rx", None, {"payload": 15})
    with pytest.raises(ValueError, match=r"link\.lanes"):
        movelab.simulate("larsen-io", "pair", {"io": {"link": {"lanes": 3}}}, system="cluster")
