"""The platform simulator's Python API: presets, configs with overrides, runs, results as DataFrames,
and errors that name the argument or the key."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from movelab import platform

PLATFORMS = {"zhao-uma-emc", "zhao-numa-imc", "rowclone-system", "rowclone-multicore", "larsen-io", "larsen-io-idma",
             "server-composed", "ixp-host"}
WORKLOADS = {"tcp-rx", "forkbench", "bulk-copy", "bulk-zero", "nic-tx", "server-rx", "nic-rx"}
ZERO16 = {"pages": 16}


def test_presets_list_the_platforms_and_workloads() -> None:
    p = platform.presets()
    assert {q["name"] for q in p["platforms"]} == PLATFORMS
    assert {w["name"] for w in p["workloads"]} == WORKLOADS
    for q in p["platforms"]:
        assert q["description"] and q["source"] and q["core"] in ("in-order", "out-of-order")
    tcp = next(w for w in p["workloads"] if w["name"] == "tcp-rx")
    assert {"packets", "payload"} <= set(tcp["params"])


def test_load_config_layers_overrides_and_dict_presets() -> None:
    base = platform.load_config("rowclone-system")
    assert base["name"] == "rowclone-system" and base["copy"]["mechanism"] == "base"
    cfg = platform.load_config("rowclone-system", {"copy": {"mechanism": "rowclone"}, "core": {"width": 2}})
    assert cfg["copy"]["mechanism"] == "rowclone" and cfg["core"]["width"] == 2
    assert cfg["l2"] == base["l2"]
    # A dict names its starting platform with "preset"; overrides layer on top of it.
    d = platform.load_config({"preset": "rowclone-system", "core": {"width": 2, "window": 64}}, {"core": {"width": 1}})
    assert (d["core"]["width"], d["core"]["window"]) == (1, 64)


def test_run_returns_stats_and_a_one_row_dataframe() -> None:
    res = platform.run("rowclone-system", "bulk-zero", params=ZERO16)
    s = res.stats
    assert (s["platform"], s["workload"], s["mechanism"]) == ("rowclone-system", "bulk-zero", "base")
    assert s["time_ns"] > 0 and s["instructions"] > 0 and 0 < s["ipc"] < 4
    assert s["memory"]["channel_bytes"] >= 16 * 4096
    assert s["dram"]["energy"]["total_nj"] > 0
    df = res.to_pandas()
    assert len(df) == 1
    assert df["time_ns"].iloc[0] == s["time_ns"]
    assert df["memory.fmtc"].iloc[0] == s["memory"]["fmtc"]
    assert "dram.energy.total_nj" in df.columns
    # Parameters and overrides reach the model.
    more = platform.run("rowclone-system", "bulk-zero", params={"pages": 32}).stats
    assert more["memory"]["channel_bytes"] == 2 * s["memory"]["channel_bytes"]
    rc = platform.run("rowclone-system", "bulk-zero", {"copy": {"mechanism": "rowclone"}}, ZERO16).stats
    assert rc["mechanism"] == "rowclone" and rc["offloads"] == 16 and rc["dram"]["bulk"]["inits"] == 16
    assert rc["time_ns"] != s["time_ns"]


def test_platform_and_workload_from_toml_files(tmp_path: Path) -> None:
    p = tmp_path / "mine.toml"
    p.write_text('preset = "rowclone-system"\nname = "mine"\n[copy]\nmechanism = "rowclone-zi"\n')
    assert platform.load_config(p)["copy"]["mechanism"] == "rowclone-zi"
    s = platform.run(str(p), "bulk-zero", params=ZERO16).stats
    assert s["platform"] == "mine" and s["mechanism"] == "rowclone-zi"
    # A written-out config (to_toml) reads back as the same platform.
    cfg = platform.load_config("rowclone-system", {"copy": {"mechanism": "mc-dma"}})
    text = platform.to_toml(cfg)
    assert tomllib.loads(text) == {k: v for k, v in cfg.items() if v is not None}
    q = tmp_path / "again.toml"
    q.write_text(text)
    assert platform.load_config(q) == cfg


def test_errors_name_the_argument_or_the_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown platform preset or file 'no-such'"):
        platform.run("no-such", "bulk-zero")
    with pytest.raises(ValueError, match="unknown workload or file 'no-such'"):
        platform.run("rowclone-system", "no-such")
    with pytest.raises(ValueError, match=r"copy\.bogus"):
        platform.load_config("rowclone-system", {"copy": {"bogus": 1}})
    with pytest.raises(ValueError, match=r"copy\.mechanism: 'dma' is not one of"):
        platform.run("rowclone-system", "bulk-zero", {"copy": {"mechanism": "dma"}}, ZERO16)
    with pytest.raises(ValueError, match=r"interconnect\.bandwidth_gbs"):
        platform.load_config("rowclone-system", {"interconnect": {"bandwidth_gbs": 0.0}})
    with pytest.raises(ValueError, match="no parameter 'nope'"):
        platform.run("rowclone-system", "bulk-zero", params={"nope": 1})
    with pytest.raises(ValueError, match="preset"):
        platform.load_config({"core": {"width": 2}})
    with pytest.raises(FileNotFoundError, match=r"missing\.toml"):
        platform.load_config(tmp_path / "missing.toml")
    with pytest.raises(FileNotFoundError, match=r"missing\.toml"):
        platform.run("rowclone-system", str(tmp_path / "missing.toml"))


@pytest.mark.parametrize("call,arg", [
    (lambda: platform.run(3, "bulk-zero"), "platform"),
    (lambda: platform.run("rowclone-system", 3), "workload"),
    (lambda: platform.run("rowclone-system", "bulk-zero", "copy.mechanism=ce"), "overrides"),
    (lambda: platform.run("rowclone-system", "bulk-zero", params=[("pages", 1)]), "params"),
    (lambda: platform.run("rowclone-system", "bulk-zero", params={"pages": "16"}), "params['pages']"),
    (lambda: platform.run("rowclone-system", "bulk-zero", params={"pages": 1.5}), "params['pages']"),
    (lambda: platform.run("rowclone-system", "bulk-zero", params={"pages": True}), "params['pages']"),
])
def test_argument_types_are_checked(call, arg: str) -> None:
    with pytest.raises(TypeError) as e:
        call()
    assert arg in str(e.value)


def test_negative_parameter_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"params\['pages'\]"):
        platform.run("rowclone-system", "bulk-zero", params={"pages": -1})


def test_copy_engine_on_the_zhao_platform() -> None:
    params = {"packets": 20, "payload": 1024}
    base = platform.run("zhao-uma-emc", "tcp-rx", params=params).stats
    ce = platform.run("zhao-uma-emc", "tcp-rx", {"copy": {"mechanism": "ce", "mode": "ASYNC"}}, params).stats
    assert base["offloads"] == 0 and ce["offloads"] >= 20
    assert (ce["mechanism"], ce["mode"], ce["placement"]) == ("ce", "ASYNC", "off-die")
    assert ce["time_ns"] < base["time_ns"]


def test_several_cores_from_overrides() -> None:
    # Two cores, each its own copy of the program in its own memory: per-core rows and the
    # coherence counters come back; a core group with a kind the model lacks is named.
    over = {"cores": [{"count": 2, "stride": 0x1000_0000}]}
    s = platform.run("zhao-uma-emc", "tcp-rx", over, {"packets": 20}).stats
    assert [c["core"] for c in s["per_core"]] == [0, 1]
    one = platform.run("zhao-uma-emc", "tcp-rx", params={"packets": 20}).stats
    assert s["instructions"] == 2 * one["instructions"]
    assert all(c["time_ns"] >= one["time_ns"] for c in s["per_core"])
    assert "upgrades" in s["coherence"]
    with pytest.raises(ValueError, match="vliw"):
        platform.run("zhao-uma-emc", "tcp-rx", {"cores": [{"core": {"kind": "vliw"}}]}, {"packets": 2})


def test_an_engine_key_without_an_engine_is_refused_naming_it() -> None:
    # zhao-uma-emc describes its engine but runs the base system: copy.mode alone changed nothing
    # and the run printed as if it had been taken.
    params = {"packets": 5, "payload": 1024}
    with pytest.raises(ValueError, match=r"copy\.mode: not read on this platform: only a copy engine reads it.*'base'"):
        platform.run("zhao-uma-emc", "tcp-rx", {"copy": {"mode": "ASYNC"}}, params)
    with pytest.raises(ValueError, match=r"copy\.stream_buffer_lines"):
        platform.run({"preset": "zhao-uma-emc", "copy": {"stream_buffer_lines": 16}}, "tcp-rx", params=params)
    # What the refusal protects: let through, the key moves nothing.
    base = platform.run("zhao-uma-emc", "tcp-rx", params=params).stats
    let = platform._run("zhao-uma-emc", "tcp-rx", {"copy": {"mode": "ASYNC"}}, params, unread_ok=True).stats
    assert let["time_ns"] == base["time_ns"] and let["offloads"] == 0
    # With the engine on, the same keys are taken.
    ce = platform.run("zhao-uma-emc", "tcp-rx", {"copy": {"mechanism": "ce", "mode": "ASYNC",
                                                          "stream_buffer_lines": 16}}, params).stats
    assert ce["mode"] == "ASYNC" and ce["offloads"] > 0


def test_the_engine_share_is_refused_where_no_engine_bypasses() -> None:
    params = {"packets": 5, "payload": 1024}
    with pytest.raises(ValueError, match=r"copy\.engine_share: .*SYNC_NLB"):
        platform.run("zhao-uma-emc", "tcp-rx", {"copy": {"mechanism": "ce", "engine_share": 0.5}}, params)
    s = platform.run("zhao-uma-emc", "tcp-rx", {"copy": {"mechanism": "ce", "mode": "SYNC_WLB",
                                                         "engine_share": 0.5}}, params).stats
    assert s["mode"] == "SYNC_WLB"


def test_an_engine_agent_reads_the_copy_keys_it_does_not_set_itself() -> None:
    # server-composed's engine is an agent with its own placement, mode and snoop_ack: [copy]'s
    # mode reaches nothing, its stream buffer does.
    over = {"copy": {"mode": "SYNC_WLB"}}
    assert platform.load_config("server-composed", over)["copy"]["mode"] == "SYNC_WLB"  # only a run judges
    with pytest.raises(ValueError, match=r"copy\.mode: .*every copy-engine agent sets its own"):
        platform.run("server-composed", "server-rx", over, {"chunks": 5})
    # (With the application's work minimal, as the composition runs it, the copies are on the run's
    # path; with more, the handler waits behind the other hardware contexts' compute.)
    app = {"chunks": 1, "chunk": 100}
    few = platform.run("server-composed", "server-rx", {"copy": {"stream_buffer_lines": 1}}, app).stats
    assert few["time_ns"] != platform.run("server-composed", "server-rx", params=app).stats["time_ns"]


def test_core_and_level1_keys_no_core_reads_are_refused() -> None:
    # zhao-numa-imc's core is out-of-order: in_order_ilp, switch_cycles and l1's fill path moved
    # nothing (13,735.917 ns every time); an on-die engine does not take the off-die path's latency.
    params = {"packets": 3}
    for over, key in (({"core": {"in_order_ilp": 3}}, "core.in_order_ilp"),
                      ({"core": {"switch_cycles": 500}}, "core.switch_cycles"),
                      ({"l1": {"fill_bytes_per_cycle": 1}}, "l1.fill_bytes_per_cycle"),
                      ({"copy": {"mechanism": "ce", "placement": "on-die", "engine_memory_ns": 500.0}},
                       "copy.engine_memory_ns")):
        with pytest.raises(ValueError, match=rf"{re.escape(key)}: not read on this platform"):
            platform.run("zhao-numa-imc", "tcp-rx", over, params)
    # Read where a core takes it: the in-order core's ILP moves its time.
    a = platform.run("zhao-numa-imc", "tcp-rx", {"core": {"kind": "in-order", "in_order_ilp": 1}}, params).stats
    b = platform.run("zhao-numa-imc", "tcp-rx", {"core": {"kind": "in-order", "in_order_ilp": 4}}, params).stats
    assert a["time_ns"] != b["time_ns"]


def test_the_in_dram_copys_keys_are_refused_where_nothing_copies_in_dram() -> None:
    # rowclone-system on the base mechanism: memory.controller.copy.success changed nothing; under
    # RowClone the same key makes copies retry (mean operation time 118 -> 212 ns).
    params = {"s_mb": 1, "n_pages": 16}
    over = {"memory": {"controller": {"copy": {"success": 0.5}}}}
    with pytest.raises(ValueError, match=r"memory\.controller\.copy\.success: not read on this platform"):
        platform.run("rowclone-system", "forkbench", over, params)
    rc = {"copy": {"mechanism": "rowclone"}}
    a = platform.run("rowclone-system", "forkbench", rc, params).stats
    b = platform.run("rowclone-system", "forkbench", {**rc, **over}, params).stats
    assert b["time_ns"] > a["time_ns"]


def test_workload_parameters_beyond_the_simulated_memory_or_the_work_bound_are_refused_at_once() -> None:
    """forkbench with S = a million MB ran on for ever (a 1 TB array on a 4 GiB memory): a region or
    a move larger than the platform's memory is refused naming the parameter, its value and the
    largest that fits; a run asking for more than a trillion operations (the DRAM generator's
    bound) naming the parameters it depends on."""
    import time

    t = time.perf_counter()
    with pytest.raises(ValueError, match=re.escape(
            "regions[0] (array): its size of 's_mb * 1MiB' = 1,048,576,000,000 bytes with params.s_mb = 1000000 "
            "is more than the platform's memory of 4,294,967,296 bytes; params.s_mb can be at most 4096 here")):
        platform.run("rowclone-system", "forkbench", params={"s_mb": 1_000_000})
    with pytest.raises(ValueError, match=r"params\.packets = 1000000000000000.*more than the 1,000,000,000,000 a "
                                         r"run may take"):
        platform.run("zhao-uma-emc", "tcp-rx", params={"packets": 10**15})
    with pytest.raises(ValueError, match=r"ops\[0\]: a copy of 'bytes' = 8,589,934,592 bytes with params\.bytes = "
                                         r"8589934592 is more than the platform's memory"):
        platform.run("rowclone-system", "bulk-copy", params={"bytes": 8 << 30, "pages": 1})
    assert time.perf_counter() - t < 10  # refused before the run


def test_progress_counts_the_operations_fed_up_to_the_planned_total() -> None:
    """``progress(done, planned)`` rises to the run's whole operation count, which follows the
    workload's parameters and the cores the workload runs on."""
    def planned_and_calls(pl: str, params: dict[str, int]) -> tuple[int, list[tuple[int, int]]]:
        calls: list[tuple[int, int]] = []
        platform.run(pl, "bulk-zero", params=params, progress=lambda d, t: calls.append((d, t)))
        assert calls, "no progress was reported"
        totals = {t for _, t in calls}
        assert len(totals) == 1
        done = [d for d, _ in calls]
        assert done == sorted(done) and done[-1] == calls[0][1]
        return calls[0][1], calls

    small, calls = planned_and_calls("zhao-uma-emc", {"pages": 64})
    assert len(calls) > 1  # reported along the way, not only at the end
    big, _ = planned_and_calls("zhao-uma-emc", {"pages": 128})
    assert big > small
    # Every core runs the workload: two cores feed twice the operations.
    two: list[tuple[int, int]] = []
    platform.run("zhao-uma-emc", "bulk-zero", {"cores": [{"count": 2, "stride": 0x1000_0000}]}, {"pages": 64},
                 progress=lambda d, t: two.append((d, t)))
    assert two[-1] == (2 * small, 2 * small)


def test_a_progress_callback_that_raises_stops_the_run_and_a_bad_one_is_refused() -> None:
    def boom(done: int, planned: int) -> None:
        raise RuntimeError(f"stopped at {done} of {planned}")

    with pytest.raises(RuntimeError, match="stopped at"):
        platform.run("zhao-uma-emc", "bulk-zero", params={"pages": 64}, progress=boom)
    with pytest.raises(TypeError, match="progress must be a callable"):
        platform.run("zhao-uma-emc", "bulk-zero", params=ZERO16, progress=3)  # type: ignore[arg-type]
