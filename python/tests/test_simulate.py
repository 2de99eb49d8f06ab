"""The one entry point: ``movelab.simulate`` and ``movelab run`` run every system, give the same
statistics as each system's own call, and refuse a wrong system, workload or parameter by name."""

from __future__ import annotations

import json
from pathlib import Path

import movelab
import pytest
from movelab import network, platform
from movelab.cli import app
from typer.testing import CliRunner

runner = CliRunner()
SHORT = {"wire": {"duration_us": 2000.0}}


def test_every_system_runs_with_its_own_results() -> None:
    r = movelab.simulate("rowclone-system", "bulk-zero", params={"pages": 8})
    assert r["system"] == "platform" and r["workload"] == "bulk-zero"
    assert r["stats"] == platform.run("rowclone-system", "bulk-zero", params={"pages": 8}).stats
    assert r["time_ns"] == r["stats"]["time_ns"] > 0

    r = movelab.simulate("larsen-io", "pair", params={"messages": 2}, system="cluster")
    assert r["system"] == "cluster" and r["stats"]["hosts"][1]["devices"][0]["rx_bytes_checked"] > 0

    r = movelab.simulate("ixp2350", "udp-rx", SHORT, {"config": "softnic", "payload": 256})
    assert r["system"] == "network-io"
    own = network.run("softnic", "rx", 256, overrides=SHORT)
    assert r["stats"]["throughput_mbps"] == own["throughput_mbps"] > 0


def test_the_registry_lists_every_system_and_preset() -> None:
    s = {x["name"]: x for x in movelab.systems()}
    assert set(s) == {"platform", "cluster", "network-io", "nic-stream"}
    assert "rowclone-system" in s["platform"]["presets"] and "ixp2350" in s["network-io"]["presets"]
    assert {w["name"] for w in s["network-io"]["workloads"]} == {"udp-rx", "udp-tx"}


@pytest.mark.parametrize("args, words", [
    (("nope-preset", "stream"), ("nope-preset", "cluster")),
    (("larsen-82598-gen1", "stream"), ("retired", "cluster", "larsen-io", "nic-stream")),
    (("larsen-82598-gen1", "stream", None, None, "io-pair"), ("retired", "cluster")),
    (("ixp2350", "udp-rxx"), ("udp-rxx", "udp-rx")),
    (("larsen-io", "pair", None, {"cnt": 1}, "cluster"), ("params.cnt", "messages")),
    (("rowclone-system", "bulk-zero", None, {"pages": -1}), ("params.pages",)),
    # every system is named, nic-stream (run from Python) too
    (("ixp2350", "udp-rx", None, None, "nope"), ("nope", "network-io", "nic-stream")),
    (("ixp2350", "udp-rx", {"host": {"costs": {"ip_rxx": 5}}}), ("host.costs.ip_rxx",)),
    # the parameter is `payload` (the run's own check named payload_bytes)
    (("ixp2350", "udp-rx", None, {"payload": 0}), ("params.payload", "16..=1472")),
])
def test_bad_requests_are_refused_by_name(args: tuple, words: tuple[str, ...]) -> None:
    with pytest.raises(ValueError) as e:
        movelab.simulate(*args)
    assert all(w in str(e.value) for w in words), str(e.value)


def test_the_cli_runs_any_system() -> None:
    r = runner.invoke(app, ["run", "larsen-io-idma", "pair", "--system", "cluster", "--param", "messages=2",
                            "--format", "json"])
    assert r.exit_code == 0, r.output
    # The table shows the scalars; it says where the per-host and per-link statistics are.
    t = runner.invoke(app, ["run", "larsen-io-idma", "pair", "--system", "cluster", "--param", "messages=2"])
    assert t.exit_code == 0 and "hosts, links) are in --format json" in " ".join(t.stdout.split()), t.output
    rep = json.loads(r.stdout)
    assert rep["system"] == "cluster" and rep["time_ns"] > 0
    r = runner.invoke(app, ["run", "ixp2350", "udp-tx", "--param", "config=emu", "--param", "payload=64",
                            "--set", "small_cores.threads=4"])
    assert r.exit_code == 0, r.output
    assert "network-io: ixp2350 / udp-tx" in r.stdout and "throughput_mbps" in r.stdout
    # How long the peer sends is a receive run's setting: a transmit run refuses it by name.
    r = runner.invoke(app, ["run", "ixp2350", "udp-tx", "--param", "config=emu", "--set", "wire.duration_us=2000"])
    assert r.exit_code != 0 and "wire.duration_us: not read by this run" in r.output, r.output
    r = runner.invoke(app, ["run", "ixp2350", "udp-rx", "--param", "app=2"])
    assert r.exit_code != 0 and "params.app" in r.output, r.output
    r = runner.invoke(app, ["run", "ixp2350", "udp-rx", "--param", "payload"])
    assert r.exit_code == 2 and "NAME=VALUE" in r.output
    r = runner.invoke(app, ["systems"])
    assert r.exit_code == 0 and "network-io" in r.stdout and "udp-rx" in r.stdout


PRESETS = Path(__file__).resolve().parents[2] / "presets"


def test_every_platform_io_and_network_preset_file_is_listed() -> None:
    """`movelab systems` left out nic-stream and the I/O presets: the listing comes from the presets
    themselves, and every preset file of a system appears in it, in the API and on the command line."""
    files = {p.stem for d in ("platforms", "io", "network") for p in (PRESETS / d).glob("*.toml")}
    assert {"haswell-gen3", "larsen-82598-gen1", "rowclone-system", "ixp2350"} <= files
    listed = {n for x in movelab.systems() for n in x["presets"]}
    assert files <= listed, sorted(files - listed)
    r = CliRunner(env={"COLUMNS": "250"}).invoke(app, ["systems"])
    assert r.exit_code == 0, r.output
    words = set(r.stdout.replace("│", " ").split())
    assert files | {"nic-stream"} <= words, sorted(files - words)
    js = json.loads(runner.invoke(app, ["systems", "--format", "json"]).stdout)
    assert {"haswell-gen3", "larsen-82599-gen2"} <= set(next(x for x in js if x["name"] == "nic-stream")["presets"])


def test_nic_stream_runs_on_an_io_preset_as_listed() -> None:
    r = movelab.simulate("larsen-82598-gen1", "nic-stream", params={"count": 2, "bytes": 128})
    assert r["system"] == "nic-stream" and r["time_ns"] > 0 and r["stats"]["messages_total"] == 2
    assert r["stats"]["bytes_wrong"] == 0
    with pytest.raises(ValueError, match=r"params\.cnt: unknown parameter of nic-stream \(known: count, bytes\)"):
        movelab.simulate("larsen-82598-gen1", "nic-stream", params={"cnt": 1})
    out = runner.invoke(app, ["run", "haswell-gen3", "nic-stream", "--param", "count=1", "--format", "json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["system"] == "nic-stream"


def test_progress_reaches_the_planned_operations_on_the_platform_and_the_cluster() -> None:
    """``progress(done, planned)`` rises to the run's operation count: the platform's own count
    (as ``platform.run`` reports it) and, on the cluster, both hosts' programs together."""
    calls: list[tuple[int, int]] = []
    movelab.simulate("rowclone-system", "bulk-zero", params={"pages": 64}, progress=lambda d, t: calls.append((d, t)))
    own: list[tuple[int, int]] = []
    platform.run("rowclone-system", "bulk-zero", params={"pages": 64}, progress=lambda d, t: own.append((d, t)))
    assert calls == own and len(calls) > 1 and calls[-1][0] == calls[-1][1]

    def pair(messages: int) -> list[tuple[int, int]]:
        calls: list[tuple[int, int]] = []
        movelab.simulate("larsen-io", "pair", params={"messages": messages}, system="cluster",
                         progress=lambda d, t: calls.append((d, t)))
        assert calls and all(d <= t for d, t in calls) and calls[-1][0] == calls[-1][1], calls
        return calls

    assert pair(400)[-1][1] > pair(100)[-1][1]
    with pytest.raises(TypeError, match="progress must be a callable"):
        movelab.simulate("rowclone-system", "bulk-zero", progress="yes")  # type: ignore[arg-type]
