"""The I/O model from Python: the API (``movelab.platform.io``), ``movelab platform run ... nic-stream``,
and ``movelab reproduce larsen-idma`` (rows, files, the issue's bars, bad input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from movelab.cli import app
from movelab.platform import io
from movelab.reproduce import larsen_idma as li
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: object, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


def test_api_run_counts_bytes_and_stacks() -> None:
    """The thin wrapper over the cluster: the receiver checked every frame (payload and headers)."""
    res = io.run("larsen-82598-gen1", count=3, nbytes=200)
    s = res.stats
    assert s["bytes_checked"] == 3 * (200 + 66) and s["bytes_wrong"] == 0
    assert s["platforms"] == ["larsen-io", "larsen-io"] and len(s["cluster"]["hosts"]) == 2
    assert [p[0] for p in s["tx_stack"]["parts"]] == ["doorbell", "descriptor", "payload"]
    for h in s["hosts"]:
        assert sum(v for _, v in h["link"]["categories"]) == h["link"]["total"]
    idma = io.run("larsen-82598-gen1", 1, 64, devices=["idma", "descriptor"]).stats
    assert idma["tx_stack"]["total"] < s["tx_stack"]["total"]
    assert "tx_stack.total" in res.flat()
    assert {p["name"] for p in io.presets()} >= {"larsen-82598-gen1", "larsen-82599-gen2", "haswell-gen3"}


def test_api_stack_moves_with_the_link() -> None:
    """The preset's link reaches the cluster's devices: Gen3 shortens every fetch of the stack."""
    base = io.run("larsen-82598-gen1").stats["tx_stack"]["parts"]
    fast = io.run("larsen-82598-gen1", overrides={"link": {"gen": 3}}).stats["tx_stack"]["parts"]
    d = {a[0]: a[1] - b[1] for a, b in zip(base, fast, strict=True)}
    assert d["descriptor"] > 5 and d["payload"] > 5, d
    with pytest.raises(ValueError, match=r"overrides\.root_complex"):
        io.run("larsen-82598-gen1", overrides={"root_complex": {"ddio": True}})


def test_retired_root_complex_keys_are_refused_by_name() -> None:
    """Keys only the retired two-host model read are gone: an override of one is an error that names it."""
    out = cli("platform", "run", "larsen-io", "nic-tx", "--set", "io.root_complex.llc_ns=1", code=2)
    assert "llc_ns" in out and "root_complex" in out, out
    out = cli("platform", "run", "larsen-io", "nic-tx", "--set", "io.idma.mem_read_ns=50", code=2)
    assert "mem_read_ns" in out and "idma" in out, out


@pytest.mark.parametrize("kwargs, match", [
    ({"count": 0}, "count"),
    ({"nbytes": 1 << 30}, "nbytes"),
    ({"count": 250, "nbytes": 4000}, "frames"),
    ({"devices": ["descriptor"]}, "devices"),
    ({"overrides": {"link": {"gen": 7}}}, "link.gen"),
    ({"overrides": {"nic": {"rx_fetch": "x"}}}, "nic.rx_fetch"),
])
def test_api_bad_input_names_the_argument(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        io.run("larsen-82598-gen1", **kwargs)


def test_api_unknown_platform() -> None:
    with pytest.raises(ValueError, match="larsen-82598-gen1"):
        io.run("no-such-platform")
    with pytest.raises(TypeError):
        io.run("larsen-82598-gen1", overrides=[1])  # type: ignore[arg-type]


def test_cli_platform_run_nic_stream() -> None:
    s = json.loads(cli("platform", "run", "larsen-82599-gen2", "nic-stream", "--param", "count=20",
                       "--param", "bytes=64", "--set", "nic.kind=idma", "--format", "json"))
    assert s["kind"] == "idma/idma" and s["bytes_checked"] == 20 * (64 + 66)
    text = cli("platform", "run", "larsen-82598-gen1", "nic-stream")
    assert "first TX stack" in text and "doorbell" in text
    assert "nic-stream takes count and bytes" in cli("platform", "run", "larsen-82598-gen1", "nic-stream",
                                                     "--param", "packets=3", code=2)


def test_cli_platform_run_nic_tx_on_the_platform() -> None:
    """The NIC as a platform agent: the driver program's doorbells, the stack and bytes in .stats."""
    s = json.loads(cli("platform", "run", "larsen-io", "nic-tx", "--param", "messages=3", "--format", "json"))
    (dev,) = s["devices"]
    assert [p[0] for p in dev["tx_stack"]] == ["doorbell", "descriptor", "payload"]
    assert abs(dev["tx_stack_total_ns"] - 1770) < 177
    assert dev["frames"] == 3 and dev["interrupts"] == 3 and s["interrupts"] == 3
    assert dict(dev["bytes_down"])["payload"] == 3 * 64
    gen3 = json.loads(cli("platform", "run", "larsen-io", "nic-tx", "--param", "messages=1",
                          "--set", "io.link.gen=3", "--format", "json"))["devices"][0]
    assert gen3["tx_stack_total_ns"] < dev["tx_stack_total_ns"]
    table = cli("platform", "run", "larsen-io", "nic-tx", "--param", "messages=1")
    assert "first TX stack: payload" in table and "link bytes down: payload" in table
    out = cli("platform", "run", "larsen-io", "nic-tx", "--set", "io.bar=268435456", code=2)
    assert "io.bar" in out


def test_reproduction_rows_and_bars(tmp_path: Path) -> None:
    rows = json.loads(cli("reproduce", "larsen-idma", "--format", "json", "--out", tmp_path))
    assert all(set(li.KEYS) <= set(r) for r in rows)
    get = {(r["figure"], r["case"], r["metric"]): r for r in rows}
    for key in [("fig8", "descriptor-dma", "nic_tx_latency_ns"), ("fig9", "idma", "nic_tx_latency_ns"),
                ("table1", "descriptor-dma", "end_to_end_us"), ("table1", "idma", "end_to_end_us")]:
        r = get[key]
        assert abs(r["value"] / r["paper_value"] - 1) <= 0.10, r
    for case in ["rx-64B", "tx-64B", "rx-64KB", "tx-64KB"]:
        assert ("fig10", case, "descriptor_doorbell_share") in get
    assert get[("fig10", "tx-64B", "fetch_doorbell_share")]["value"] < get[("fig10", "tx-64B",
                                                                               "descriptor_doorbell_share")]["value"]
    assert get[("fig10", "rx-64B", "fetch_doorbell_share")]["value"] < get[("fig10", "rx-64B",
                                                                               "descriptor_doorbell_share")]["value"]
    assert ("pcie-model", "kernel-nic-rx-gen3-64B", "pcie_model_fixed_gbps") in get
    # Every Fig. 10 bar is a prediction held to the paper's own metric, measured on the cluster (two platforms
    # on one wire, the receiver's TCP ACKs going back): with 64 B of TCP payload per frame, the small TX bar
    # (40% with every term, against 43%) holds and the RX bar (35%, against 16%) fails, and is counted; the
    # 64 KB TX bar (TSO on the sender) holds the paper's "less than 5%" and so does the 64 KB RX bar (4.2%: the
    # receiver's ACKs go as Linux sends them, one per GRO-merged poll; one per two segments gave 6.6%). Fig. 9's
    # doorbell (a bound), memory reads and total are predictions from the platform: the descriptor read (39 ns against
    # the paper's estimate of 50) is outside 10%, and counted. Table 1's iDMA latency is a prediction from its
    # own cluster run; its Gb/s per lane (two more predictions) comes from a simulated dual-port stream on the
    # cluster, below a Gen2 lane's 4 Gb/s (the descriptor DMA's at the edge of 10% above the paper's 2.1).
    ok, text = li.check(rows)
    assert not ok and text.startswith("8 of 11 predictions within tolerance"), text
    assert "fig10 rx-64B" in text and "fig9 idma descriptor_ns" in text
    assert "fig10 tx-64B" not in text.split("Outside:")[1], text
    assert "fig10 tx-64KB" not in text.split("Outside:")[1], text
    assert "fig10 rx-64KB" not in text.split("Outside:")[1], text
    for case in ["descriptor-dma", "idma"]:
        lane = get[("table1", case, "gbps_per_lane")]
        assert lane["basis"] == "predicted" and lane["value"] < 4.0 and "4.00 Gb/s" in lane["note"]
        assert abs(lane["value"] / lane["paper_value"] - 1) <= 0.11, lane
    # DRAM timing moves the fetches of lines that are not cached, and only those.
    slow = json.loads(cli("reproduce", "larsen-idma", "--format", "json", "--small-count", "40",
                          "--large-count", "4", "--set", "memory.dram.timing.nCL=16",
                          "--set", "memory.dram.timing.nRCD=16"))
    sget = {(r["figure"], r["case"], r["metric"]): r for r in slow}
    for fig, case in [("fig8", "descriptor-dma-memory"), ("fig9", "idma")]:
        for m in ["descriptor_ns", "payload_ns"]:
            assert sget[(fig, case, m)]["value"] > get[(fig, case, m)]["value"] + 10, (fig, case, m)
    for fig, case in [("fig8", "descriptor-dma"), ("fig9", "idma-cached")]:
        assert sget[(fig, case, "nic_tx_latency_ns")]["value"] == get[(fig, case, "nic_tx_latency_ns")]["value"]
    # And Table 1's end to end on the cluster (the receiver reads the landed frame from DRAM).
    for case in ["descriptor-dma", "idma"]:
        key = ("table1", case, "end_to_end_us")
        assert sget[key]["value"] > get[key]["value"] + 0.02, key
    for f in ["larsen-idma.json", "larsen-idma.csv", "larsen-idma-stacks.png", "larsen-idma-fig10.png"]:
        assert (tmp_path / f).is_file()
    # An existing file is kept without --force.
    assert "--force" in cli("reproduce", "larsen-idma", "--out", tmp_path, code=2)


def test_reproduction_bad_input() -> None:
    with pytest.raises(ValueError, match="small_count"):
        li.run(small_count=0)
    with pytest.raises(ValueError, match="parts"):
        li.run(parts=["fig99"])
    cli("reproduce", "larsen-idma", "--small-count", "0", code=2)
    # A stream holds 250 frames: a longer count used to be cut to it without a word (the default of
    # 2,000 small messages ran 250). Beyond the limits, the API and the Rust run refuse by name.
    assert (li.MAX_SMALL, li.MAX_LARGE) == (250, 6)
    for kw in ({"small_count": li.MAX_SMALL + 1}, {"large_count": li.MAX_LARGE + 1}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            li.run(parts=["fig10"], **kw)
    import movelab._core as core

    with pytest.raises(ValueError, match=r"small_count: 251: must be from 1 to 250"):
        core.reproduce_larsen_idma(["fig10"], 251, 6)
    out = cli("reproduce", "larsen-idma", "--set", "memory.dram.nope=1", code=2)
    assert "nope" in out


def test_a_descriptor_nics_key_is_refused_when_both_devices_are_idma() -> None:
    # The iDMA's adapter has no descriptor cache, thresholds or interrupt moderation: itr_us on two
    # iDMA hosts changed nothing. With one descriptor NIC in the run, the key is read.
    with pytest.raises(ValueError, match=r"overrides\.nic\.itr_us: not read: both devices are iDMA"):
        io.run("larsen-82598-gen1", 2, 64, devices=["idma", "idma"], overrides={"nic": {"itr_us": 8.0}})
    mixed = io.run("larsen-82598-gen1", 2, 64, devices=["descriptor", "idma"], overrides={"nic": {"itr_us": 8.0}})
    assert mixed.stats["bytes_checked"] > 0
    # A key the adapter reads moves its run.
    a = io.run("larsen-82598-gen1", 2, 64, devices=["idma", "idma"]).stats["time_ns"]
    b = io.run("larsen-82598-gen1", 2, 64, devices=["idma", "idma"], overrides={"nic": {"mac_tx_ns": 800.0}})
    assert b.stats["time_ns"] > a


def test_the_docs_python_example_runs_as_written() -> None:
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "io.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    ns: dict = {}
    exec(code, ns)  # the page's own lines (it once passed a section the stream refuses)
    assert ns["res"].stats["bytes_checked"] >= 4 * 65536 and ns["res"].stats["frames"] == 184
