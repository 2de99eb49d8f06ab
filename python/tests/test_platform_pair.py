"""Two platforms on one Ethernet link (``movelab.platform.pair``, ``movelab platform pair``): every
frame lands checked, the cable and the frame size move what they should, bad input is named."""

from __future__ import annotations

import json

import pytest
from movelab import platform
from movelab.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def test_every_frame_lands_checked() -> None:
    r = platform.pair(messages=5)
    s = r.summary()
    assert s["frames_sent"] == 5 and s["frames_landed"] == 5
    assert s["bytes_checked"] == 5 * 64 and s["bytes_wrong"] == 0
    assert s["receiver_interrupts"] >= 1
    assert set(s["tx_stack_ns"]) == {"doorbell", "descriptor", "payload"}
    assert s["wire_arrival_ns"] - s["wire_start_ns"] == pytest.approx(70.4 + 15.0)


def test_cable_and_frame_size_move_the_passage() -> None:
    # The receiver posts 4 buffers, so its run ends with the frame's handler.
    near = platform.pair(messages=1, meters=1.0, rx_params={"buffers": 4}).summary()
    far = platform.pair(messages=1, meters=101.0, rx_params={"buffers": 4}).summary()
    assert far["wire_arrival_ns"] - near["wire_arrival_ns"] == pytest.approx(500.0)
    assert far["receiver_done_ns"] - near["receiver_done_ns"] == pytest.approx(500.0, abs=20.0)
    big = platform.pair(messages=1, frame_bytes=1514).summary()
    # 1538 byte times at 10 Gb/s on the wire, and a longer payload fetch.
    assert big["wire_arrival_ns"] - big["wire_start_ns"] == pytest.approx(1230.4 + 15.0)
    assert big["bytes_checked"] == 1514 and big["bytes_wrong"] == 0


@pytest.mark.parametrize(("kwargs", "exc", "words"), [
    ({"messages": -1}, ValueError, "messages"),
    ({"messages": "3"}, TypeError, "messages"),
    ({"meters": float("nan")}, ValueError, "meters"),
    ({"frame_bytes": 10}, ValueError, "frame_bytes"),
    ({"receiver_overrides": {"io": {"loopback": True}}}, ValueError, "loopback"),
    ({"receiver_overrides": {"io": {"nic": {"mac_gbps": 1.0}}}}, ValueError, "one rate"),
    ({"sender": "rowclone-system"}, ValueError, "no agent with a free Ethernet port"),
])
def test_bad_input_is_named(kwargs: dict, exc: type, words: str) -> None:
    with pytest.raises(exc, match=words):
        platform.pair(**kwargs)


def test_cli_table_and_json() -> None:
    r = runner.invoke(app, ["platform", "pair", "--messages", "3", "--format", "json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    assert s["links"][0]["a_to_b"]["frames"] == 3
    assert s["hosts"][1]["devices"][0]["rx_bytes_wrong"] == 0
    r = runner.invoke(app, ["platform", "pair", "--messages", "2", "--meters", "30"])
    assert r.exit_code == 0, r.output
    assert "bytes checked / wrong" in r.output and "150.0" in r.output
    r = runner.invoke(app, ["platform", "pair", "--meters", "-1"])
    assert r.exit_code == 2
    r = runner.invoke(app, ["platform", "pair", "--set-receiver", "io.loopback=true"])
    assert r.exit_code != 0 and "loopback" in r.output


@pytest.mark.parametrize(("sender", "receiver"), [("larsen-io-idma", "larsen-io-idma"), ("larsen-io", "larsen-io-idma"),
                                                  ("larsen-io-idma", "larsen-io")])
def test_the_idma_on_either_end(sender: str, receiver: str) -> None:
    s = platform.pair(sender, receiver, messages=4, tx_params={"gap": 2000}).summary()
    assert s["frames_sent"] == 4
    assert s["bytes_checked"] == 4 * 64 and s["bytes_wrong"] == 0
    # The frame size reaches the iDMA too (an agent, not [io]): 1514 B frames land whole.
    big = platform.pair(sender, receiver, messages=2, frame_bytes=1514, tx_params={"gap": 2000}).summary()
    assert big["bytes_checked"] == 2 * 1514 and big["bytes_wrong"] == 0


def test_microengines_at_the_receiving_end() -> None:
    # ixp-host's MAC runs at 1 Gb/s: --gbps puts both ports at one rate.
    with pytest.raises(ValueError, match="one rate"):
        platform.pair("larsen-io", "ixp-host", messages=2)
    s = platform.pair("larsen-io", "ixp-host", messages=8, frame_bytes=1514, gbps=1.0,
                      tx_params={"gap": 0}).summary()
    assert (s["frames_sent"], s["frames_landed"], s["frames_dropped"]) == (8, 8, 0)
    assert s["bytes_checked"] == 8 * 1514 and s["bytes_wrong"] == 0
    assert 0.8 < s["receive_gbps"] <= 1.0
    assert 0.0 < s["small_core_busy"] < 0.2
    # One slow context: the microengines bind, the surplus is dropped and counted, nothing aborts.
    slow = {"agents": [{"kind": "microengines", "params": {"count": 1, "threads": 1, "clock_mhz": 10.0}}]}
    t = platform.pair("larsen-io", "ixp-host", messages=16, frame_bytes=1514, gbps=1.0, tx_params={"gap": 0},
                      receiver_overrides=slow).summary()
    assert t["frames_dropped"] > 0 and t["frames_landed"] + t["frames_dropped"] == 16
    assert t["bytes_wrong"] == 0 and t["receive_gbps"] < s["receive_gbps"] / 2
    assert t["small_core_busy"] > 0.9
    with pytest.raises(ValueError, match="gbps"):
        platform.pair("larsen-io", "ixp-host", gbps=0.0)


def test_cli_microengines_and_gbps() -> None:
    r = runner.invoke(app, ["platform", "pair", "--receiver", "ixp-host", "--gbps", "1", "--messages", "4",
                            "--frame-bytes", "1514"])
    assert r.exit_code == 0, r.output
    assert "4 / 4 / 0" in r.output and "microengines busy" in r.output
    r = runner.invoke(app, ["platform", "pair", "--receiver", "ixp-host", "--gbps", "0"])
    assert r.exit_code == 2


def test_a_setting_given_two_ways_is_refused() -> None:
    """The frame count and size each have one place: given again in the nic-tx parameters or the overrides,
    one of the two was dropped without a word (the parameter won over messages; frame_bytes over io.frame_bytes)."""
    with pytest.raises(ValueError, match="'messages' is the messages argument"):
        platform.pair(messages=4, tx_params={"messages": 10})
    with pytest.raises(ValueError, match=r"sender_overrides: io\.frame_bytes and frame_bytes"):
        platform.pair(messages=1, frame_bytes=100, sender_overrides={"io": {"frame_bytes": 1514}})
    with pytest.raises(ValueError, match=r"receiver_overrides: io\.frame_bytes and frame_bytes"):
        platform.pair(messages=1, frame_bytes=100, receiver_overrides={"io": {"frame_bytes": 1514}})


def test_a_frame_too_big_for_the_buffers_names_the_option() -> None:
    """--frame-bytes allows up to 9018 (a jumbo frame); a platform whose TX buffers are 2 KiB apart refuses it,
    naming the argument the user gave, not only the key it became."""
    with pytest.raises(ValueError, match=r"frame_bytes 9018 \(--frame-bytes\) on the sender: .*tx_buffer_stride"):
        platform.pair(messages=1, frame_bytes=9018)
    # With the sender's stride raised, the receiver's buffers are the ones named.
    with pytest.raises(ValueError, match=r"frame_bytes 3000 \(--frame-bytes\) on the receiver: .*\(2048\)"):
        platform.pair(messages=1, frame_bytes=3000, sender_overrides={"io": {"tx_buffer_stride": 4096}})
    s = platform.pair(messages=2, frame_bytes=3000, sender_overrides={"io": {"tx_buffer_stride": 4096}},
                      receiver_overrides={"io": {"tx_buffer_stride": 4096}}).summary()
    assert s["bytes_wrong"] == 0 and s["frames_landed"] == s["frames_sent"] > 2  # a message is several frames
    # An iDMA sender's frame size is its agent's key, named by the argument too.
    with pytest.raises(ValueError, match=r"frame_bytes 9000 \(--frame-bytes\) on the sender: .*agents\[0\]"):
        platform.pair("larsen-io-idma", "larsen-io", messages=1, frame_bytes=9000)


def test_a_key_one_side_does_not_read_is_refused_naming_the_side() -> None:
    with pytest.raises(ValueError, match=r"^receiver: overrides: copy\.mode: not read on this platform"):
        platform.pair(messages=1, receiver_overrides={"copy": {"mode": "ASYNC"}})


def test_a_pair_asking_for_days_of_work_is_refused_before_it_runs() -> None:
    """The work bound holds for every run, a pair's too: a per-message gap of 10^12 instructions
    (bytes meant as MB, say) is refused at once, naming the parameters that make the run long and
    not the switches beside them."""
    long = r"params\.messages = 1000, params\.gap = 1000000000000: the run would take"
    with pytest.raises(ValueError, match=long) as e:
        platform.pair("larsen-io", "larsen-io", messages=1000, tx_params={"gap": 10**12})
    assert "write_payload" not in str(e.value) and "rx_post" not in str(e.value)
    r = CliRunner(env={"COLUMNS": "240"}).invoke(app, ["run", "larsen-io", "pair", "--system", "cluster", "--param",
                                                      "messages=1000", "--param", "gap=1000000000000"])
    assert r.exit_code == 2 and "params.gap = 1000000000000" in r.output, r.output
