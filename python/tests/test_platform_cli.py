"""``movelab platform ...`` and the system-level reproductions (``movelab reproduce zhao-copy-engine``,
``rowclone-fork`` and ``all``): JSON output, errors, files written, and the figures' response to the
model's parameters."""

from __future__ import annotations

import csv
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from movelab import platform
from movelab.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: str, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


# ------------------------------------------------------------------------------------------------
# movelab platform


def test_presets_json_and_table() -> None:
    p = json.loads(cli("platform", "presets", "--format", "json"))
    assert {q["name"] for q in p["platforms"]} == {"zhao-uma-emc", "zhao-numa-imc", "rowclone-system",
                                                   "rowclone-multicore", "larsen-io", "larsen-io-idma",
                                                   "server-composed", "ixp-host"}
    table = cli("platform", "presets")
    assert "Platforms" in table and "Workloads" in table and "tcp-rx" in table


def test_show_prints_toml_or_json_with_overrides() -> None:
    s = json.loads(cli("platform", "show", "rowclone-system", "--set", "copy.mechanism=rowclone",
                       "--set", "core.width=2", "--format", "json"))
    assert s["copy"]["mechanism"] == "rowclone" and s["core"]["width"] == 2
    t = tomllib.loads(cli("platform", "show", "rowclone-system", "--set", "copy.mechanism=rowclone",
                          "--set", "core.width=2"))
    assert t == {k: v for k, v in s.items() if v is not None}
    out = cli("platform", "show", "rowclone-system", "--set", "copy.nope=1", code=2)
    assert "error:" in out and "copy.nope" in out


def test_run_json_is_what_the_api_returns() -> None:
    args = ["platform", "run", "rowclone-system", "bulk-zero", "--set", "copy.mechanism=rowclone-zi",
            "--param", "pages=16"]
    s = json.loads(cli(*args, "--format", "json"))
    assert s == platform.run("rowclone-system", "bulk-zero", {"copy": {"mechanism": "rowclone-zi"}},
                             {"pages": 16}).stats
    assert s["mechanism"] == "rowclone-zi" and s["offloads"] == 16
    table = cli(*args)
    assert "rowclone-system / bulk-zero" in table and "IPC" in table and "FMTC" in table


def test_run_errors_exit_2_naming_the_problem() -> None:
    out = cli("platform", "run", "no-such", "bulk-zero", code=2)
    assert "error:" in out and "no-such" in out
    out = cli("platform", "run", "rowclone-system", "no-such", code=2)
    assert "unknown workload" in out
    out = cli("platform", "run", "rowclone-system", "bulk-zero", "--set", "copy.mode=FAST", code=2)
    assert "copy.mode" in out
    out = cli("platform", "run", "rowclone-system", "bulk-zero", "--param", "nope=3", code=2)
    assert "nope" in out
    out = cli("platform", "run", "rowclone-system", "bulk-zero", "--param", "pages=many", code=2)
    assert "--param" in out
    out = cli("platform", "run", "rowclone-system", "bulk-zero", "--format", "yaml", code=2)
    assert "--format" in out


# ------------------------------------------------------------------------------------------------
# reproduce zhao-copy-engine

ZHAO_KEYS = {"figure", "core", "payload_bytes", "mode", "placement", "variant", "reduction", "faster_copy", "overlap",
             "paper_reduction", "paper_faster_copy", "paper_overlap"}


def zhao(*args: str) -> list[dict]:
    return json.loads(cli("reproduce", "zhao-copy-engine", "--packets", "20", "--format", "json", *args))


@pytest.fixture(scope="module")
def zhao_rows() -> list[dict]:
    return zhao()


def test_zhao_json_rows(zhao_rows: list[dict]) -> None:
    assert all(ZHAO_KEYS <= set(r) for r in zhao_rows)
    t3 = [r for r in zhao_rows if r["figure"] == "table3"]
    assert len(t3) == 18
    assert {(r["core"], r["payload_bytes"], r["mode"]) for r in t3} == {
        (c, p, m) for c in ["in-order", "out-of-order"] for p in [512, 1024, 1400]
        for m in ["SYNC_NLB", "SYNC_WLB", "ASYNC"]}
    for r in t3:
        assert r["placement"] == "off-die" and r["paper_reduction"] is not None
        assert r["reduction"] == pytest.approx(r["faster_copy"] + r["overlap"], abs=1e-3)
    p = {(r["core"], r["payload_bytes"], r["mode"]): r for r in t3}
    assert p[("out-of-order", 512, "SYNC_NLB")]["paper_reduction"] == 0.146
    assert p[("in-order", 1400, "ASYNC")]["paper_overlap"] == 0.176
    figures = {r["figure"] for r in zhao_rows}
    assert figures == {"table3", "fig11", "table4", "fig15", "fig12", "fig13", "fig14"}
    assert {r["variant"] for r in zhao_rows if r["figure"] == "table4"} == {"ack-before-snoop", "ack-after-snoop"}
    assert all(r["paper_cache_gain"] is not None for r in zhao_rows if r["figure"] == "fig15")


def test_zhao_stream_buffer_moves_table3(zhao_rows: list[dict]) -> None:
    small = zhao("--set", "copy.stream_buffer_lines=1")
    key = lambda r: (r["figure"], r["core"], r["payload_bytes"], r["mode"], r["placement"], r["variant"])  # noqa: E731
    before = {key(r): r for r in zhao_rows}
    after = {key(r): r for r in small}
    assert before.keys() == after.keys()
    moved = [k for k in before if k[0] == "table3" and after[k]["reduction"] != before[k]["reduction"]]
    assert moved, "a one-line stream buffer changed no Table 3 figure"
    # A one-line buffer cannot make the engine's copies faster.
    for k in moved:
        assert after[k]["faster_copy"] <= before[k]["faster_copy"] + 1e-9, k
    # The paper's values are data: they do not move.
    assert all(after[k]["paper_reduction"] == before[k]["paper_reduction"] for k in before)


def test_zhao_table_and_files(tmp_path: Path) -> None:
    out = cli("reproduce", "zhao-copy-engine", "--packets", "5", "--out", tmp_path)
    assert "Table 3" in out and "Fig. 11" in out and "Table 4" in out and "Fig. 15" in out
    rows = json.loads((tmp_path / "zhao-copy-engine.json").read_text())
    with open(tmp_path / "zhao-copy-engine.csv") as f:
        assert len(list(csv.DictReader(f))) == len(rows)
    for name in ["table3", "fig11", "fig15"]:
        assert (tmp_path / f"zhao-copy-engine-{name}.png").stat().st_size > 1000


def test_zhao_errors() -> None:
    out = cli("reproduce", "zhao-copy-engine", "--packets", "5", "--set", "copy.mode=FAST", code=2)
    assert "error:" in out and "copy.mode" in out
    cli("reproduce", "zhao-copy-engine", "--packets", "0", code=2)


# ------------------------------------------------------------------------------------------------
# reproduce rowclone-fork

FORK = ["reproduce", "rowclone-fork", "--sizes", "4", "--pages", "8,32", "--zero-pages", "16", "--format", "json"]
FORK_KEYS = {"workload", "s_mb", "n_pages", "mechanism", "fmtc", "speedup", "energy_reduction", "bandwidth_reduction"}


@pytest.fixture(scope="module")
def fork_rows() -> list[dict]:
    return json.loads(cli(*FORK))


def by_key(rows: list[dict]) -> dict[tuple, dict]:
    return {(r["workload"], r["n_pages"], r["mechanism"]): r for r in rows}


def test_rowclone_fork_json_rows(fork_rows: list[dict]) -> None:
    assert all(FORK_KEYS <= set(r) for r in fork_rows)
    rows = by_key(fork_rows)
    assert set(rows) == {("forkbench", n, m) for n in [8, 32] for m in ["baseline", "fpm", "psm"]} | {
        ("bulk-zero", 16, m) for m in ["baseline", "rowclone", "rowclone-zi", "mc-dma"]}
    for r in fork_rows:
        if r["mechanism"] == "baseline":
            assert r["speedup"] == 1.0 and r["energy_reduction"] == 0.0
        if r["workload"] == "forkbench":
            assert r["s_mb"] == 4
    # More copy-on-write updates: more of the traffic is copies, and FPM gains more. (Not N = 2: at
    # S = 4 MB a quarter of the array is still cached, dirty, from the fill, and two random source
    # pages may both be there; FPM then flushes them first and is slower than the baseline.)
    assert rows[("forkbench", 32, "baseline")]["fmtc"] > rows[("forkbench", 8, "baseline")]["fmtc"] > 0
    assert rows[("forkbench", 32, "fpm")]["speedup"] > rows[("forkbench", 8, "fpm")]["speedup"] > 1.0
    assert rows[("forkbench", 32, "fpm")]["energy_reduction"] > 0
    # RowClone-ZI leaves the zeroed lines in the cache: the reads that follow hit.
    assert rows[("bulk-zero", 16, "rowclone-zi")]["speedup"] > rows[("bulk-zero", 16, "rowclone")]["speedup"]


def test_rowclone_fork_moves_with_tras_and_bus_bandwidth(fork_rows: list[dict]) -> None:
    base = by_key(fork_rows)
    # A longer tRAS lengthens every in-DRAM zeroing (ACT, ACT, PRE): RowClone's gain shrinks.
    slow = by_key(json.loads(cli(*FORK, "--set", "memory.dram.timing.nRAS=30")))
    assert slow[("bulk-zero", 16, "rowclone")]["speedup"] < base[("bulk-zero", 16, "rowclone")]["speedup"]
    # A slower path to memory hurts the baseline, which moves the zeroed data over it.
    narrow = by_key(json.loads(cli(*FORK, "--set", "interconnect.bandwidth_gbs=2.0")))
    assert narrow[("bulk-zero", 16, "rowclone-zi")]["speedup"] > base[("bulk-zero", 16, "rowclone-zi")]["speedup"]


def test_rowclone_fork_table_and_files(tmp_path: Path) -> None:
    out = cli(*FORK[:-2], "--out", tmp_path)
    assert "forkbench" in out and "Bulk zeroing" in out and "FMTC, smallest" in out and "14.0%" in out
    assert "predictions within tolerance" in out
    rows = json.loads((tmp_path / "rowclone-fork.json").read_text())
    assert len(rows) == 10
    for name in ["fmtc", "speedup", "energy", "bulk-zero"]:
        assert (tmp_path / f"rowclone-fork-{name}.png").stat().st_size > 1000


def test_rowclone_fork_errors() -> None:
    out = cli(*FORK, "--set", "copy.mechanism=teleport", code=2)
    assert "copy.mechanism" in out
    out = cli("reproduce", "rowclone-fork", "--sizes", "4,x", code=2)
    assert "--sizes" in out
    out = cli("reproduce", "rowclone-fork", "--pages", "0", code=2)
    assert "--pages" in out


# ------------------------------------------------------------------------------------------------
# reproduce all


def test_reproduce_all_runs_every_reproduction_into_its_folder(monkeypatch, tmp_path: Path) -> None:
    from movelab.reproduce import cli as rcli

    calls: list[tuple[str, Path, bool]] = []
    planned: list[str] = []

    def rec(name: str, out: Path, force: bool) -> None:
        # While reproduce all plans (to start every reproduction's first points at once), a job
        # runs silently up to its first points; these stand-ins have none, so they return.
        (planned.append(name) if rcli._PLANNING else calls.append((name, out, force)))

    monkeypatch.setattr(rcli, "_rowclone_latency", lambda fmt, cfg, ov, out, force: rec("rowclone-latency", out, force))
    monkeypatch.setattr(rcli, "_zhao_copy_engine", lambda fmt, ov, packets, out, force: rec("zhao-copy-engine", out,
                                                                                            force))
    monkeypatch.setattr(rcli, "_rowclone_fork", lambda fmt, ov, s, n, z, out, force: rec("rowclone-fork", out, force))
    monkeypatch.setattr(rcli, "_rowclone_apps", lambda fmt, ov, ap, i, w, out, force: rec("rowclone-apps", out, force))
    monkeypatch.setattr(rcli, "_rowclone_apps_recorded",
                        lambda fmt, ov, i, w, out, force, whole: rec("rowclone-apps-recorded", out, force))
    monkeypatch.setattr(rcli, "_rowclone_multicore",
                        lambda fmt, ov, ap, m, s, c, i, w, out, force: rec("rowclone-multicore", out, force))
    monkeypatch.setattr(rcli, "_larsen_idma", lambda fmt, small, large, out, force: rec("larsen-idma", out, force))
    monkeypatch.setattr(rcli, "_wun_onload", lambda fmt, ov, p, e, out, force: rec("wun-onload", out, force))
    cli("reproduce", "--workers", "2", "all", "--out", tmp_path)
    names = ["rowclone-latency", "zhao-copy-engine", "rowclone-fork", "larsen-idma", "wun-onload", "rowclone-apps",
             "rowclone-apps-recorded", "rowclone-multicore"]
    assert calls == [(name, tmp_path / name, False) for name in names]
    # Every reproduction with points is planned first; rowclone-latency (no points) is not.
    assert planned == names[1:]
    calls.clear()
    planned.clear()
    cli("reproduce", "--workers", "1", "all", "--out", tmp_path, "--force")
    assert calls == [(name, tmp_path / name, True) for name in names]
    assert planned == []  # one worker: nothing to start ahead


def test_a_memory_without_currents_has_no_energy_not_zero() -> None:
    """LPDDR5 parts carry no public currents: the platform's DRAM energy is reported not available (the
    JSON says why, in dram.energy_available), where a memory with currents gives its energy."""
    args = ["platform", "run", "rowclone-system", "bulk-copy", "--param", "pages=4"]
    text = cli(*args, "--set", "memory.preset=lpddr5-6400-bl32")
    assert "not available: no public currents for" in " ".join(text.split())
    s = json.loads(cli(*args, "--set", "memory.preset=lpddr5-6400-bl32", "--format", "json"))
    assert s["dram"]["energy_available"] is False
    text = cli(*args)
    assert "not available" not in text and json.loads(cli(*args, "--format", "json"))["dram_energy_nj"] > 0


def test_cores_that_should_not_share_but_do_are_warned_about() -> None:
    """rowclone-multicore gives each core 512 MiB (the paper's mixes fit); bulk-copy's source and destination are
    512 MiB apart, so core 1 copies from core 0's destination: the run says so (it used to say nothing), and a
    stride that keeps them apart runs without the warning."""
    import subprocess
    import sys

    base = [sys.executable, "-m", "movelab", "platform", "run", "rowclone-multicore", "bulk-copy", "--param",
            "pages=8", "--format", "json"]
    r = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "the programs overlap" in r.stderr and "cores[0].stride" in r.stderr, r.stderr
    assert json.loads(r.stdout)["coherence"]["invalidations"] > 0
    r = subprocess.run([*base, "--set", "cores=[{count = 2, stride = 0x40000000}]"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "overlap" not in r.stderr, r.stderr


def test_a_replay_on_a_memory_without_currents_gives_no_energy_not_zero() -> None:
    """The replay's per-run figures: a memory whose part has no public currents gives NaN energy (no model),
    not the 0 nJ the platform's stats carry; a memory with currents gives its figure."""
    import math

    from movelab.record.replay import _stats

    st = {"time_ns": 5.0, "dram_energy_nj": 0.0, "memory": {"channel_bytes": 64}}
    assert math.isnan(_stats({**st, "dram": {"energy_available": False}})[1])
    assert _stats({**st, "dram_energy_nj": 3.0, "dram": {"energy_available": True}}) == (5.0, 3.0, 64.0)


def test_run_refuses_an_engine_key_on_a_platform_without_an_engine() -> None:
    args = ["zhao-uma-emc", "tcp-rx", "--param", "packets=3", "--set", "copy.mode=ASYNC"]
    for cmd in (["platform", "run"], ["run"]):
        r = runner.invoke(app, [*cmd, *args])
        assert r.exit_code == 2, r.output
        assert "copy.mode: not read on this platform" in " ".join(r.output.split()), r.output
    r = runner.invoke(app, ["platform", "run", *args, "--set", "copy.mechanism=ce", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["mode"] == "ASYNC"


def test_a_platform_whose_groups_run_their_own_programs_names_them_all() -> None:
    # server-composed's first core runs its own nic-tx and the others the run's server-rx: the run
    # was labelled "nic-tx" on an "out-of-order" core with the "base" mechanism, though the copies
    # went to its agents.
    s = platform.run("server-composed", "server-rx", params={"chunks": 5}).stats
    assert (s["workload"], s["core"]) == ("nic-tx + server-rx", "out-of-order + multithreaded")
    assert {c["workload"] for c in s["per_core"]} == {"nic-tx", "server-rx"}
    out = " ".join(runner.invoke(app, ["platform", "run", "server-composed", "server-rx", "--param",
                                       "chunks=5"], env={"COLUMNS": "100"}).output.split())
    assert "server-composed / nic-tx + server-rx" in out and "copy agents rowclone-zi, copy-engine" in out, out
    one = platform.run("zhao-uma-emc", "tcp-rx", params={"packets": 2}).stats
    assert (one["workload"], one["core"]) == ("tcp-rx", "out-of-order")


# A server receiving a stream from a sender core on the composed platform: with too short a gap the
# sender's driver overruns its TX ring, and with many messages it posted RX buffers a ring ahead of
# the NIC (frames landed at address 0); both used to end with status 0.
_SENDER = ('cores=[{count=1, workload="nic-tx", params={messages=%d, rx_post=%d, gap=2000, write_payload=1}}, '
           '{count=1, core={kind="multithreaded", threads=8, clock_mhz=900, width=1, switch_cycles=1}}]')


def test_a_driver_that_overruns_its_tx_ring_is_refused_naming_the_ring() -> None:
    out = cli("platform", "run", "server-composed", "server-rx", "--param", "chunks=1", "--param", "chunk=100",
              "--set", _SENDER % (2048, 0), code=2)
    text = " ".join(out.replace("│", " ").split())
    assert "ring overrun" in text and "512-descriptor TX ring" in text and "io.nic.tx_ring" in text
    out = cli("platform", "run", "server-composed", "server-rx", "--param", "chunks=1", "--param", "chunk=100",
              "--set", _SENDER % (1000, 1), code=2)
    text = " ".join(out.replace("│", " ").split())
    assert "ring overrun" in text and "512-descriptor RX ring" in text and "io.nic.rx_ring" in text


def test_wrong_bytes_fail_the_run_after_its_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    # No known input makes the byte checks fail (each cause found so far is refused); a run whose
    # NIC reports wrong bytes stands in for the next one.
    args = ["platform", "run", "server-composed", "server-rx", "--param", "chunks=1", "--param", "chunk=100",
            "--set", _SENDER % (64, 1)]
    cli(*args)  # a run whose bytes are right ends normally
    real = platform.run

    def broken(*a: Any, **k: Any) -> platform.PlatformResult:
        res = real(*a, **k)
        nic = next(d for d in res.stats["devices"] if d["name"] == "nic")
        nic["rx_bytes_wrong"] = 24
        return res

    monkeypatch.setattr(platform, "run", broken)
    r = runner.invoke(app, [*args, "--format", "json"])
    assert r.exit_code == 1, r.output
    stats = json.loads(r.stdout[: r.stdout.rindex("}") + 1])
    nic = next(d for d in stats["devices"] if d["name"] == "nic")
    assert nic["rx_bytes_wrong"] == 24
    assert "the byte checks failed" in r.stderr and f"24 of {nic['rx_bytes_checked']:,}" in r.stderr


def test_a_workload_parameter_beyond_the_platforms_memory_is_refused_at_once() -> None:
    out = " ".join(cli("platform", "run", "rowclone-system", "forkbench", "--param", "s_mb=1000000",
                       code=2).replace("│", " ").split())
    assert "params.s_mb = 1000000 is more than the platform's memory of 4,294,967,296 bytes; params.s_mb can be " \
           "at most 4096 here" in out, out
