"""movelab.dram.simulate and friends: every way of giving a config and a trace, the result's shapes,
and the errors a user can cause (each must name what was wrong and where)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from movelab import dram

GEN = {"kind": "random", "count": 500, "read_fraction": 0.7, "seed": 5}
BENCH = "ddr3-1600k-bench"


@pytest.fixture(scope="module")
def bench_stats() -> dict:
    return dram.simulate(BENCH, GEN).stats


def test_preset_name_runs_the_generator(bench_stats: dict) -> None:
    s = bench_stats
    assert (s["speed"], s["part"], s["channels"], s["ranks"]) == ("DDR3-1600K", "DDR3-4Gb-x8", 1, 1)
    assert s["reads"] + s["writes"] == 500
    assert 0.6 < s["reads"] / 500 < 0.8
    assert s["cycles"] >= 500 and s["time_ns"] == pytest.approx(s["cycles"] * 1.25)
    assert s["read_latency"]["count"] == s["reads"]
    assert s["commands"]["RD"] + s["commands"]["RDA"] == s["reads"]


def test_speed_slash_part_equals_the_bench_preset(bench_stats: dict) -> None:
    # The bench preset is DDR3-1600K/DDR3-4Gb-x8 with every controller default.
    assert dram.simulate("DDR3-1600K/DDR3-4Gb-x8", GEN).stats == bench_stats


def test_dict_config_and_a_config_object_and_a_path(tmp_path: Path, bench_stats: dict) -> None:
    as_dict = {"dram": {"speed": "DDR3-1600K", "part": "DDR3-4Gb-x8"}}
    assert dram.simulate(as_dict, GEN).stats == bench_stats
    cfg = dram.load_config(BENCH)
    assert isinstance(cfg, dram.Config)
    assert cfg.spec["timing"]["nCL"] == 11 and cfg.spec["org"]["rows"] == 65536
    assert dram.simulate(cfg, GEN).stats == bench_stats
    toml = tmp_path / "my.toml"
    toml.write_text('[dram]\nspeed = "DDR3-1600K"\npart = "DDR3-4Gb-x8"\n')
    assert dram.simulate(toml, GEN).stats == bench_stats
    assert dram.simulate(str(toml), GEN).stats == bench_stats


def test_overrides_change_the_run_the_same_way_from_every_source(tmp_path: Path, bench_stats: dict) -> None:
    over = {"controller": {"scheduler": "fcfs", "row_policy": "closed"}, "dram": {"timing": {"nRCD": 15}}}
    a = dram.simulate(BENCH, GEN, overrides=over).stats
    assert (a["scheduler"], a["row_policy"]) == ("fcfs", "closed")
    assert a["cycles"] != bench_stats["cycles"]
    b = dram.simulate({"preset": BENCH, **over}, GEN).stats
    c = dram.simulate(dram.load_config(BENCH).with_overrides(over), GEN).stats
    toml = tmp_path / "over.toml"
    toml.write_text(f'preset = "{BENCH}"\n[controller]\nscheduler = "fcfs"\nrow_policy = "closed"\n'
                    "[dram.timing]\nnRCD = 15\n")
    d = dram.simulate(toml, GEN).stats
    assert a == b == c == d
    assert dram.load_config(BENCH, over).spec["timing"]["nRCD"] == 15


def test_list_of_tuples_trace() -> None:
    items = [("R", 0x40), ("W", 0x80), ("r", 0x1000), ("COPY", 0, 1 << 16, 4096), ("INIT", 1 << 20, 4096, 0)]
    s = dram.simulate(BENCH, items).stats
    # Baseline bulk: the copy reads and writes 64 lines, the zeroing writes 64.
    assert (s["reads"], s["writes"]) == (2 + 64, 1 + 64 + 64)
    assert (s["bulk"]["copies"], s["bulk"]["inits"], s["bulk"]["bytes"]["baseline"]) == (1, 1, 8192)
    rc = dram.simulate("rowclone-ddr3-1066", [("COPY", 0, 1 << 16, 4096)]).stats
    moved = rc["bulk"]["bytes"]
    assert sum(moved.values()) == 4096 and moved["baseline"] < 4096


def test_generator_dict_kinds_and_seeds() -> None:
    a = dram.simulate(BENCH, {"kind": "stream", "count": 300, "read_fraction": 1.0}).stats
    assert (a["reads"], a["writes"]) == (300, 0)
    # A stream of consecutive lines mostly hits open rows.
    assert a["row"]["hits"] > 250
    b = dram.simulate(BENCH, {**GEN, "seed": 6}).stats
    assert b != dram.simulate(BENCH, GEN).stats


def test_to_pandas_is_one_flat_row(bench_stats: dict) -> None:
    res = dram.simulate(BENCH, GEN)
    df = res.to_pandas()
    assert df.shape[0] == 1
    flat = dram.flatten(res.stats)
    assert list(df.columns) == list(flat)
    for col in ["cycles", "read_latency.mean_cycles", "read_latency.p99_cycles", "row.hits", "commands.ACT",
                "energy.total_nj", "bulk.bytes.fpm"]:
        assert col in df.columns
    assert not any(isinstance(v, dict) for v in df.iloc[0].tolist())
    assert df["cycles"].iloc[0] == bench_stats["cycles"]
    assert df["read_latency.mean_cycles"].iloc[0] == pytest.approx(bench_stats["read_latency"]["mean_cycles"])
    assert json.loads(res.to_json()) == res.stats


# ------------------------------------------------------------------------------------------------
# Errors


def test_unknown_preset() -> None:
    with pytest.raises(ValueError, match=r"unknown config preset 'no-such-preset'.*ddr3-1600k-bench"):
        dram.simulate("no-such-preset", GEN)


def test_unknown_key_in_dict_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"config dict.*schedulr"):
        dram.simulate({"preset": BENCH, "controller": {"schedulr": "fcfs"}}, GEN)
    with pytest.raises(ValueError, match=r"overrides: dram\.timing\.nXYZ"):
        dram.simulate(BENCH, GEN, overrides={"dram": {"timing": {"nXYZ": 3}}})
    with pytest.raises(ValueError, match=r"controller\.scheduler.*'lifo'"):
        dram.simulate(BENCH, GEN, overrides={"controller": {"scheduler": "lifo"}})


def test_unknown_key_in_toml_file_names_the_file_and_key(tmp_path: Path) -> None:
    p = tmp_path / "cfg.toml"
    p.write_text(f'preset = "{BENCH}"\n[dram.org]\nbogus_key = 1\n')
    with pytest.raises(ValueError) as e:
        dram.simulate(p, GEN)
    assert str(p) in str(e.value) and "bogus_key" in str(e.value)
    p.write_text(f'preset = "{BENCH}"\n[dram]\nchannels = 3\n')
    with pytest.raises(ValueError, match=r"cfg\.toml: dram\.channels: 3 must be a power of two"):
        dram.simulate(p, GEN)


def test_wrongly_typed_value_names_the_key() -> None:
    with pytest.raises(ValueError, match="read_queue"):
        dram.simulate({"preset": BENCH, "controller": {"read_queue": "x"}}, GEN)


def test_huge_queue_is_a_value_error_not_a_panic() -> None:
    with pytest.raises(ValueError, match="read_queue"):
        dram.simulate(BENCH, GEN, overrides={"controller": {"read_queue": 2**63 - 1}})


def test_timing_override_that_makes_a_separation_negative_is_valid() -> None:
    # Was a bug (the error named the standard's rule row). A negative separation constrains
    # nothing, so the config is valid; a value no DRAM has is refused naming its key.
    s = dram.simulate(BENCH, GEN, overrides={"dram": {"timing": {"nCL": 100}}}).stats
    assert s["read_latency"]["mean_cycles"] > 100
    with pytest.raises(ValueError, match=r"dram\.timing\.nRAS"):
        dram.simulate(BENCH, GEN, overrides={"dram": {"timing": {"nRAS": 2**63 - 1}}})


def test_clock_override_rescales_the_refresh_timings() -> None:
    spec = dram.load_config(BENCH, {"dram": {"timing": {"tCK_ps": 2500}}}).spec
    assert (spec["timing"]["nRFC"], spec["timing"]["nREFI"]) == (104, 3120)


def test_rowclone_moves_every_byte_of_a_copy_within_one_row() -> None:
    over = {"controller": {"bulk": "rowclone"}}
    s = dram.simulate("ddr4-3200aa-2ch", [("COPY", 0, 0x2000, 8192)], overrides=over).stats
    assert sum(s["bulk"]["bytes"].values()) == 8192
    assert sum(s["commands"].values()) > 0


def test_bad_trace_line_names_the_line(tmp_path: Path) -> None:
    p = tmp_path / "t.trace"
    p.write_text("R 0x40\n# comment\nR 0x80\nR zz\nR 0x100\n")
    with pytest.raises(ValueError, match=rf"{p}:4: address: 'zz'"):
        dram.simulate(BENCH, p)
    with pytest.raises(ValueError, match=r"^trace:2: "):
        dram.simulate(BENCH, [("R", 0x40), "W 0xZZ"])
    with pytest.raises(ValueError, match=r"trace item 2: unknown operation 'X'"):
        dram.simulate(BENCH, [("R", 0), ("X", 1)])
    with pytest.raises(ValueError, match=r"generator.*read_fraction"):
        dram.simulate(BENCH, {"kind": "random", "count": 10, "read_fraction": 1.5})


def test_missing_files_raise_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.toml"):
        dram.simulate(tmp_path / "nope.toml", GEN)
    with pytest.raises(FileNotFoundError, match=r"nope\.toml"):
        dram.simulate(str(tmp_path / "nope.toml"), GEN)
    with pytest.raises(FileNotFoundError, match=r"nope\.trace"):
        dram.simulate(BENCH, tmp_path / "nope.trace")


# ------------------------------------------------------------------------------------------------
# Property: any valid generator dict simulates, and every request is served once.

generators = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["stream", "random"]),
        "count": st.integers(min_value=0, max_value=400),
        "read_fraction": st.floats(min_value=0.0, max_value=1.0),
        "seed": st.integers(min_value=0, max_value=2**64 - 1),
    },
    optional={
        "footprint_bytes": st.sampled_from([4096, 1 << 20, "64M", "1G", 1 << 34]),
        "base": st.sampled_from([0, 64, "0x40000000"]),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen=generators, preset=st.sampled_from(["ddr3-1600k-bench", "ddr4-3200aa-2ch", "rowclone-ddr3-1066"]))
def test_valid_generators_always_simulate(gen: dict, preset: str) -> None:
    s = dram.simulate(preset, gen).stats
    assert s["reads"] + s["writes"] == gen["count"]
    if gen["read_fraction"] == 1.0:
        assert s["writes"] == 0
    if gen["read_fraction"] == 0.0:
        assert s["reads"] == 0
    assert s["read_latency"]["count"] == s["reads"]
    assert (s["cycles"] > 0) == (gen["count"] > 0)


def test_bad_trace_arguments_are_clear_errors() -> None:
    with pytest.raises(TypeError, match="trace must be"):
        dram.simulate(BENCH, 123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"trace item 2: arguments must be integers"):
        dram.simulate(BENCH, [("R", 0x40), ("R", "abc")])


def test_the_in_dram_copys_settings_are_refused_where_the_controller_does_not_copy_in_dram() -> None:
    # On the baseline's bulk mode, controller.copy.* reaches nothing: the copy is reads and writes.
    ops = [("COPY", 0, 1 << 20, 8192)]
    baseline = {"controller": {"bulk": "baseline"}}
    base = dram.simulate("rowclone-ddr3-1066", ops, overrides=baseline)
    given = {"controller": {"bulk": "baseline", "copy": {"success": 0.5}}}
    with pytest.raises(ValueError, match=r"controller\.copy\.success: not read.*controller\.bulk = 'baseline'"):
        dram.simulate("rowclone-ddr3-1066", ops, overrides=given)
    # What the refusal protects: the key moves nothing there.
    assert dram.simulate(dram.load_config("rowclone-ddr3-1066", given), ops).stats["cycles"] == base.stats["cycles"]
    # Under RowClone the same key is read: failed attempts are retried, and the copy takes longer.
    s = dram.simulate("rowclone-ddr3-1066", ops, overrides={"controller": {"copy": {"success": 0.5, "seed": 3}}})
    one = dram.simulate("rowclone-ddr3-1066", ops)
    assert s.stats["bulk"]["in_dram_copy"]["retries"] > 0 and s.stats["cycles"] > one.stats["cycles"]


def test_cpu_request_bypass_is_refused_in_a_dram_run() -> None:
    # Only a platform's copy engine makes engine requests: in a DRAM run bypass never applies
    # (cpu_bypass and engine_share gave the same cycles at every value).
    gen = {"kind": "random", "count": 200, "seed": 1}
    for key, v in (("cpu_bypass", True), ("engine_share", 0.9)):
        with pytest.raises(ValueError, match=rf"controller\.{key}: not read"):
            dram.simulate("ddr3-1600k-bench", gen, overrides={"controller": {key: v}})


def test_an_rfm_scope_with_refresh_management_off_is_refused() -> None:
    gen = {"kind": "random", "count": 50, "seed": 1}
    with pytest.raises(ValueError, match=r"controller\.rfm_scope: not read: refresh management is off"):
        dram.simulate("ddr5-3200an", gen, overrides={"controller": {"rfm": False, "rfm_scope": "same-bank"}})
    assert dram.simulate("ddr5-3200an", gen, overrides={"controller": {"rfm_scope": "same-bank"}}).stats["cycles"] > 0


def test_generated_lines_are_the_devices_bursts_so_every_channel_is_used() -> None:
    # HBM3's pseudo-channels take 32-byte bursts and the channel bit sits just above them: 64-byte
    # lines would leave one of the two channels idle. A generator's lines default to the device's.
    stream = {"kind": "stream", "count": 4000, "read_fraction": 1.0}
    off = {"controller": {"refresh": "none"}}
    default = dram.simulate("hbm3-6400", stream, overrides=off).stats
    burst = dram.simulate("hbm3-6400", {**stream, "line_bytes": 32}, overrides=off).stats
    line64 = dram.simulate("hbm3-6400", {**stream, "line_bytes": 64}, overrides=off).stats
    assert default == burst
    assert default["bandwidth_gb_s"] > 1.8 * line64["bandwidth_gb_s"]
    # On a device of 64-byte bursts nothing changes.
    assert dram.simulate(BENCH, stream).stats == dram.simulate(BENCH, {**stream, "line_bytes": 64}).stats


def test_a_replication_is_an_item_as_in_a_trace_file() -> None:
    # REPL SRC BYTES COPIES, as a tuple: Multi-RowCopy copies each row of 8 KiB into 3 rows.
    stats = dram.simulate("rowclone-ddr3-1066", [("REPL", 0, 8192, 3), ("R", 64)],
                          overrides={"controller": {"bulk": "multi-row-copy"}}).stats
    assert stats["bulk"]["copies"] == 1 and stats["bulk"]["bytes"]["mrc"] == 3 * 8192


def test_a_bulk_operation_refused_while_it_runs_names_its_file_and_line(tmp_path: Path) -> None:
    # Found once the run reaches it (the memory's capacity is the config's): the file is read
    # ahead, yet the error names the item's line, not its number among the items.
    p = tmp_path / "cap.trace"
    p.write_text("# header\nR 0x0\n\nW 0x40\nINIT 0x0 1099511627776 0\n")
    with pytest.raises(ValueError, match=re.escape(f"{p}:5: bulk operation of 1099511627776 bytes exceeds")):
        dram.simulate("rowclone-ddr3-1066", p, overrides={"controller": {"bulk": "rowclone"}})


def test_the_api_writers_refuse_an_existing_file_unless_forced(tmp_path: Path) -> None:
    """write_trace, simulate's command_log and drampower_trace never overwrite a file that is
    there (as the command line's --force): FileExistsError names it; force=True overwrites."""
    gen = {"kind": "random", "count": 20, "seed": 1}
    trace, log, csv = tmp_path / "t.trace", tmp_path / "c.log", tmp_path / "d.csv"
    for p in (trace, log, csv):
        p.write_text("mine\n")
    with pytest.raises(FileExistsError, match=re.escape(f"path: {trace} exists; pass force=True")):
        dram.write_trace(gen, trace)
    with pytest.raises(FileExistsError, match=re.escape(f"command_log: {log} exists; pass force=True")):
        dram.simulate(BENCH, gen, command_log=log)
    assert trace.read_text() == log.read_text() == "mine\n"
    assert dram.write_trace(gen, trace, force=True) == 20
    dram.simulate("ddr4-2400r", gen, command_log=log, force=True)
    assert len(trace.read_text().splitlines()) == 20 and log.read_text() != "mine\n"
    with pytest.raises(FileExistsError, match=re.escape(f"out: {csv} exists; pass force=True")):
        dram.drampower_trace(log, csv)
    assert csv.read_text() == "mine\n"
    assert dram.drampower_trace(log, csv, force=True)["commands"] > 0 and csv.read_text() != "mine\n"
    # A file that is not there is written without force.
    assert dram.write_trace(gen, tmp_path / "new.trace") == 20
    with pytest.raises(TypeError, match="force must be True or False"):
        dram.write_trace(gen, tmp_path / "x.trace", force="yes")
