"""The ``movelab dram ...`` and ``movelab reproduce rowclone-latency`` commands: JSON output, command
logs and their checker, trace generation, presets, and the reproduction's response to timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from movelab import dram
from movelab.cli import app
from typer.testing import CliRunner

MOVELAB = Path(sys.executable).parent / "movelab"
runner = CliRunner()


def cli(*args: str, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


RUN = ["dram", "run", "ddr3-1600k-bench", "--generate", "random", "--count", "3000", "--seed", "9", "--format", "json"]


def test_run_json_is_byte_identical_across_processes() -> None:
    outs = [subprocess.run([str(MOVELAB), *RUN], capture_output=True, check=True).stdout for _ in range(2)]
    assert outs[0] == outs[1]
    s = json.loads(outs[0])
    assert s["reads"] + s["writes"] == 3000
    # The CLI prints what the API returns.
    api = dram.simulate("ddr3-1600k-bench", {"kind": "random", "count": 3000, "read_fraction": 0.8, "seed": 9,
                                             "footprint_bytes": "1G"}).stats
    assert s == api
    other = cli(*RUN[:-4], "--seed", "10", "--format", "json")
    assert json.loads(other) != s


# ------------------------------------------------------------------------------------------------
# Command logs and the checker


@pytest.fixture(scope="module")
def command_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    log = tmp_path_factory.mktemp("log") / "cmds.log"
    cli(*RUN[:-2], "--count", "2000", "--command-log", log, "--format", "json")
    return log


def test_command_log_passes_the_checker(command_log: Path) -> None:
    lines = command_log.read_text().splitlines()
    assert lines[0] == "# movelab-command-log v2"
    assert lines[1].startswith("# spec {")
    assert lines[-1] == f"# end {len(lines) - 3}"
    assert len(lines) > 2000
    out = cli("dram", "check", command_log)
    assert "OK" in out and "no violations" in out
    report = json.loads(cli("dram", "check", command_log, "--format", "json"))
    assert report["ok"] is True and report["violation_count"] == 0
    assert report["commands_checked"] == len(lines) - 3


def _shift_first_read_earlier(text: str) -> tuple[str, int, int]:
    """Moves the first RD to one cycle after the ACT that opened its row (breaking nRCD)."""
    lines = text.splitlines()
    acts: dict[tuple[str, ...], int] = {}
    for i, line in enumerate(lines):
        if line.startswith("#"):
            continue
        f = line.split()
        bank = tuple(f[2:6])
        if f[1] == "ACT":
            acts[bank] = i
        elif f[1] in ("RD", "RDA") and bank in acts:
            j = acts[bank]
            act_cycle, rd_cycle = int(lines[j].split()[0]), int(f[0])
            new = act_cycle + 1
            taken = {int(x.split()[0]) for x in lines if not x.startswith("#")}
            assert new not in taken and rd_cycle - act_cycle >= 11
            del lines[i]
            lines.insert(j + 1, " ".join([str(new), *f[1:]]))
            return "\n".join(lines) + "\n", new, act_cycle
    raise AssertionError("no ACT followed by a read in the log")


def test_corrupted_command_log_fails_naming_the_rule(command_log: Path, tmp_path: Path) -> None:
    bad_text, cycle, act_cycle = _shift_first_read_earlier(command_log.read_text())
    bad = tmp_path / "bad.log"
    bad.write_text(bad_text)
    out = cli("dram", "check", bad, code=1)
    assert "nRCD" in out and "1 violation in" in out and "what" not in out
    r = runner.invoke(app, ["dram", "check", str(bad), "--format", "json"])
    assert r.exit_code == 1
    report = json.loads(r.output)
    assert report["ok"] is False and report["violation_count"] >= 1
    v = report["violations"][0]
    assert v["rule"].startswith("nRCD") and v["cycle"] == cycle
    assert (v["required_cycles"], v["actual_cycles"]) == (11, cycle - act_cycle)


def test_check_reports_unreadable_and_malformed_logs(command_log: Path, tmp_path: Path) -> None:
    out = cli("dram", "check", tmp_path / "missing.log", code=2)
    assert "missing.log" in out
    lines = command_log.read_text().splitlines()
    lines[3] = "abc " + lines[3].split(" ", 1)[1]
    bad = tmp_path / "garbage.log"
    bad.write_text("\n".join(lines) + "\n")
    out = cli("dram", "check", bad, code=2)
    assert "line 4" in out and "abc" in out


def test_check_refuses_cycles_beyond_the_signed_range_naming_the_line(command_log: Path, tmp_path: Path) -> None:
    """A cycle past 2^63 - 1 was checked with its separations saturated (actual_cycles printed as
    9223372036854775807 in the JSON): it is refused, naming the line and the bound."""
    lines = command_log.read_text().splitlines()
    last = len(lines) - 2  # the last command, before '# end N'
    lines[last] = f"{2**64 - 1} " + lines[last].split(" ", 1)[1]
    big = tmp_path / "big.log"
    big.write_text("\n".join(lines) + "\n")
    for fmt in ("json", "table"):
        out = " ".join(cli("dram", "check", big, "--format", fmt, code=2).split())
        assert f"big.log: line {last + 1}: cycle 18446744073709551615 is beyond the largest cycle a command log may " \
               "hold, 9223372036854775807" in out, out
        assert "9223372036854775807," not in out.split("hold,")[0]
    with pytest.raises(ValueError, match=f"line {last + 1}: cycle 18446744073709551615 is beyond"):
        dram.check_log(big)
    lines[last] = f"{2**63 - 1} " + lines[last].split(" ", 1)[1]  # the largest: checked
    big.write_text("\n".join(lines) + "\n")
    r = json.loads(cli("dram", "check", big, "--format", "json", code=1))
    assert r["violations"][0]["cycle"] == 2**63 - 1  # the refresh it then misses, with its true separation


def test_command_log_is_not_overwritten_without_force(command_log: Path, tmp_path: Path) -> None:
    log = tmp_path / "again.log"
    log.write_text("keep me\n")
    out = cli(*RUN[:-4], "--count", "50", "--command-log", log, code=2)
    assert "--force" in out and "exists" in out
    assert log.read_text() == "keep me\n"
    cli(*RUN[:-4], "--count", "50", "--command-log", log, "--force", "--format", "json")
    assert log.read_text().startswith("# movelab-command-log v2")
    cli("dram", "check", log)


# ------------------------------------------------------------------------------------------------
# generate -> run


@pytest.mark.parametrize("kind", ["stream", "random"])
def test_generate_writes_a_trace_that_run_reads_back_in_each_format(kind: str, tmp_path: Path) -> None:
    gen = ["--count", "400", "--read-fraction", "0.5", "--seed", "4", "--footprint", "16M"]
    stats = {}
    for fmt in ["native", "ramulator", "dramsim3"]:
        path = tmp_path / f"t.{fmt}"
        cli("dram", "generate", kind, "--out", path, "--format", fmt, *gen)
        lines = path.read_text().splitlines()
        assert len(lines) == 400
        first = lines[0].split()
        assert {"native": first[0] in ("R", "W"), "ramulator": first[0] in ("LD", "ST"),
                "dramsim3": first[1] in ("READ", "WRITE")}[fmt], lines[0]
        s = json.loads(cli("dram", "run", "ddr3-1600k-bench", path, "--format", "json"))
        assert s["reads"] + s["writes"] == 400
        # Forcing the format gives the same as detecting it.
        assert json.loads(cli("dram", "run", "ddr3-1600k-bench", path, "--trace-format", fmt,
                              "--format", "json")) == s
        stats[fmt] = s
    # Native and Ramulator carry no arrival cycles: the same requests give the same run.
    assert stats["native"] == stats["ramulator"]
    assert stats["dramsim3"]["reads"] == stats["native"]["reads"]
    direct = json.loads(cli("dram", "run", "ddr3-1600k-bench", "--generate", kind, *gen, "--format", "json"))
    assert direct == stats["native"]
    # generate refuses to overwrite too.
    out = cli("dram", "generate", kind, "--out", tmp_path / "t.native", code=2)
    assert "--force" in out


def test_run_errors_exit_2_naming_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.trace"
    bad.write_text("R 0x0\nR 0x40\nBOGUS 1\n")
    out = cli("dram", "run", "ddr3-1600k-bench", bad, "--format", "json", code=2)
    assert "bad.trace:3" in out
    out = cli("dram", "run", "no-such-preset", bad, code=2)
    assert "unknown config preset 'no-such-preset'" in out
    out = cli("dram", "run", "ddr3-1600k-bench", "--generate", "stream", "--set", "controller.mapper=Nope", code=2)
    assert "controller.mapper" in out


# ------------------------------------------------------------------------------------------------
# presets, show


def test_presets_json_lists_the_speed_bins_and_parts() -> None:
    p = json.loads(cli("dram", "presets", "--format", "json"))
    speeds = {s["name"]: s for s in p["speeds"]}
    for name, tck in [("DDR3-1066G", 1875), ("DDR3-1600K", 1250), ("DDR4-2400R", 833), ("DDR4-3200AA", 625)]:
        assert speeds[name]["params"]["tCK_ps"] == tck
    assert speeds["DDR3-1600K"]["params"]["nCL"] == 11 and speeds["DDR3-1066G"]["params"]["nCL"] == 8
    x8 = {(s["standard"], s["density_gbit"]) for s in p["parts"] if s["device_width"] == 8}
    assert {("DDR3", 2), ("DDR3", 4), ("DDR3", 8), ("DDR4", 4), ("DDR4", 8)} <= x8
    parts = {s["name"]: s for s in p["parts"]}
    assert (parts["DDR3-2Gb-x8"]["rows"], parts["DDR3-4Gb-x8"]["rows"]) == (32768, 65536)
    assert (parts["DDR3-2Gb-x8"]["tRFC_ns"], parts["DDR3-4Gb-x8"]["tRFC_ns"]) == (160, 260)
    assert {c["name"] for c in p["configs"]} >= {"ddr3-1600k-bench", "rowclone-ddr3-1066"}
    # A part goes with its own file's speed bins; a die two LPDDR5 variant files share is one table row.
    assert "DDR3-1600K" in parts["DDR3-4Gb-x8"]["speeds"]
    lp = [s for s in p["parts"] if s["name"] == "LPDDR5-8Gb-x16"]
    assert {b for s in lp for b in s["speeds"]} >= {"LPDDR5-6400", "LPDDR5-6400-BL32"}
    table = cli("dram", "presets")
    assert "Speed bins" in table and "Parts" in table and "ddr3-1600k-bench" in table
    assert sum(line.split()[0] == "LPDDR5-8Gb-x16" for line in table.splitlines() if line.split()) == 1


def test_show_applies_set_overrides() -> None:
    s = json.loads(cli("dram", "show", "ddr3-1600k-bench", "--set", "dram.timing.nRCD=14",
                       "--set", "controller.scheduler=\"fcfs\""))
    assert s["spec"]["timing"]["nRCD"] == 14 and s["config"]["controller"]["scheduler"] == "fcfs"
    out = cli("dram", "show", "ddr3-1600k-bench", "--set", "dram.timing.nBOGUS=1", code=2)
    assert "dram.timing.nBOGUS" in out


# ------------------------------------------------------------------------------------------------
# reproduce rowclone-latency

KEYS = ["operation", "mechanism", "latency_ns", "energy_uj", "paper_latency_ns", "paper_energy_uj", "basis",
        "basis_latency_ns", "basis_energy_uj"]
TCK_NS = 1.875  # DDR3-1066


def rowclone_rows(*args: str) -> dict[tuple[str, str], dict]:
    rows = json.loads(cli("reproduce", "rowclone-latency", "--format", "json", *args))
    assert all(list(r) == KEYS for r in rows)
    return {(r["operation"], r["mechanism"]): r for r in rows}


def test_rowclone_latency_json_rows() -> None:
    rows = rowclone_rows()
    assert set(rows) == {(op, m) for op in ["copy", "zero"] for m in ["baseline", "fpm", "psm-inter", "psm-intra"]}
    for r in rows.values():
        assert r["latency_ns"] > 0 and r["energy_uj"] > 0
    copy = {m: rows[("copy", m)] for m in ["baseline", "fpm", "psm-inter", "psm-intra"]}
    assert copy["fpm"]["latency_ns"] < copy["psm-inter"]["latency_ns"] < copy["baseline"]["latency_ns"]
    assert copy["fpm"]["energy_uj"] < copy["baseline"]["energy_uj"] / 10
    # FPM is ACT, ACT, PRE: 2 nRAS + nRP = 48 clocks of DDR3-1066.
    assert copy["fpm"]["latency_ns"] == pytest.approx((2 * 20 + 8) * TCK_NS)
    assert copy["baseline"]["paper_latency_ns"] == 1046 and copy["fpm"]["paper_energy_uj"] == 0.04


@pytest.mark.parametrize("n_ras,n_rc", [(24, None), (28, 36), (16, 24)])
def test_rowclone_latency_moves_with_tras(n_ras: int, n_rc: int | None) -> None:
    base = rowclone_rows()
    extra = ["--set", f"dram.timing.nRC={n_rc}"] if n_rc else []
    moved = rowclone_rows("--set", f"dram.timing.nRAS={n_ras}", *extra)
    delta = n_ras - 20
    for op in ["copy", "zero"]:
        got = moved[(op, "fpm")]["latency_ns"] - base[(op, "fpm")]["latency_ns"]
        assert got == pytest.approx(2 * delta * TCK_NS), op
        # The paper's values are data: they do not move.
        assert moved[(op, "fpm")]["paper_latency_ns"] == base[(op, "fpm")]["paper_latency_ns"]
    assert moved[("copy", "fpm")]["energy_uj"] != base[("copy", "fpm")]["energy_uj"]


def test_rowclone_latency_on_ddr5_beside_ddr3() -> None:
    rows = json.loads(cli("reproduce", "rowclone-latency", "--standard", "ddr5", "--format", "json"))
    keys = ["operation", "mechanism", "standard", "speed", "latency_ns", "energy_uj", "ddr3_latency_ns",
            "ddr3_energy_uj"]
    assert all(list(r) == keys for r in rows) and len(rows) == 8
    by = {(r["operation"], r["mechanism"]): r for r in rows}
    fpm = by[("copy", "fpm")]
    assert fpm["standard"] == "DDR5" and fpm["speed"] == "DDR5-4800B"
    # FPM is 2 nRAS + nRP of DDR5-4800B (77, 39 clocks of 0.416 ns), beside DDR3-1066's 48 clocks.
    assert fpm["latency_ns"] == pytest.approx((2 * 77 + 39) * 0.416)
    assert fpm["ddr3_latency_ns"] == pytest.approx((2 * 20 + 8) * TCK_NS)
    moved = json.loads(cli("reproduce", "rowclone-latency", "--standard", "ddr5", "--format", "json",
                           "--set", "dram.timing.nRAS=90", "--set", "dram.timing.nRC=140"))
    got = {(r["operation"], r["mechanism"]): r for r in moved}[("copy", "fpm")]
    assert got["latency_ns"] - fpm["latency_ns"] == pytest.approx(2 * 13 * 0.416)
    assert got["ddr3_latency_ns"] == fpm["ddr3_latency_ns"]
    out = cli("reproduce", "rowclone-latency", "--standard", "lpddr9", code=2)
    assert "lpddr9" in out


@pytest.mark.parametrize("standard,speed,ras,rp,tck", [("lpddr5", "LPDDR5-6400", 34, 15, 1.25),
                                                        ("lpddr5-bl32", "LPDDR5-6400-BL32", 34, 15, 1.25),
                                                        ("lpddr5-8b", "LPDDR5-6400-8B", 34, 15, 1.25),
                                                        ("hbm3", "HBM3-6400", 45, 26, 0.625)])
def test_rowclone_latency_on_lpddr5_and_hbm3_beside_ddr3(standard: str, speed: str, ras: int, rp: int,
                                                         tck: float) -> None:
    rows = json.loads(cli("reproduce", "rowclone-latency", "--standard", standard, "--format", "json"))
    by = {(r["operation"], r["mechanism"]): r for r in rows}
    assert len(rows) == 8 and all(r["speed"] == speed for r in rows)
    # FPM: 2 nRAS + nRP of the bin; energy is not available (no public currents), not zero.
    for op in ["copy", "zero"]:
        assert by[(op, "fpm")]["latency_ns"] == pytest.approx((2 * ras + rp) * tck)
    assert all(r["energy_uj"] is None and r["ddr3_energy_uj"] > 0 for r in rows)
    assert by[("copy", "fpm")]["latency_ns"] < by[("copy", "psm-inter")]["latency_ns"] \
        < by[("copy", "baseline")]["latency_ns"]
    table = " ".join(cli("reproduce", "rowclone-latency", "--standard", standard).split())
    assert "energy not available" in table and "n/a" in table


def test_multi_row_copy_replication_table() -> None:
    rows = json.loads(cli("reproduce", "rowclone-latency", "--replication", "--format", "json"))
    by = {(r["copies"], r["mechanism"]): r for r in rows}
    assert sorted({r["copies"] for r in rows}) == [1, 3, 7, 15, 31]
    # One MRC takes one FPM copy's time (2 nRAS + nRP) whatever the copies; N FPM copies N times it.
    one = by[(1, "fpm")]["latency_ns"]
    assert one == pytest.approx((2 * 20 + 8) * TCK_NS)
    for n in [1, 3, 7, 15, 31]:
        assert by[(n, "mrc")]["latency_ns"] == pytest.approx(one)
        assert by[(n, "fpm")]["latency_ns"] == pytest.approx(n * one)
        assert by[(n, "mrc")]["bytes"] == 4096 * n
        assert by[(n, "baseline")]["latency_ns"] > by[(n, "fpm")]["latency_ns"] or n == 1
    assert by[(31, "mrc")]["energy_uj"] < by[(31, "fpm")]["energy_uj"]
    out = " ".join(cli("reproduce", "rowclone-latency", "--replication", "--standard", "hbm3").split())
    assert "Multi-RowCopy on HBM3-6400" in out and "energy not available" in out


def test_bench_dram_on_another_config() -> None:
    rows = json.loads(cli("bench", "dram", "--requests", "2000", "--repeats", "1", "--config", "ddr5-3200an",
                          "--bulk-sizes", "none", "--format", "json"))["requests"]
    assert [(r["pattern"], r["requests"]) for r in rows] == [("stream", 2000), ("stream", 400), ("random", 2000),
                                                             ("random", 400)]
    assert all(r["cycles"] > 0 and r["mreq_per_s"] > 0 for r in rows)
    out = cli("bench", "dram", "--requests", "10", "--config", "no-such-config", code=2)
    assert "no-such-config" in out


def test_ddr5_same_bank_refresh_runs_and_counts_refsb() -> None:
    s = dram.simulate("ddr5-4800b-sb", {"kind": "random", "count": 20000, "seed": 3}).stats
    assert s["commands"]["REFSB"] > 0 and s["commands"]["REF"] == 0
    assert s["energy"]["refresh_nj"] > 0
    out = cli("dram", "show", "ddr3-1600k-bench", "--set", "controller.refresh=\"same-bank\"", code=2)
    assert "tRFCsb" in out


def test_hbm2_says_energy_is_not_available() -> None:
    s = dram.simulate("hbm2-2000", {"kind": "random", "count": 3000, "seed": 5}).stats
    assert s["energy_available"] is False and set(s["energy"].values()) == {None}
    assert s["reads"] + s["writes"] == 3000
    out = cli("dram", "run", "hbm2-2000", "--generate", "random", "--count", "2000")
    assert "not available" in out and "HBM2-8Gb-PC" in out
    assert dram.simulate("ddr5-3200an", {"kind": "random", "count": 1000, "seed": 5}).stats["energy_available"]


@pytest.mark.parametrize(("config", "speed", "part", "standard"),
                         [("gddr7-28000", "GDDR7-28000", "GDDR7-16Gb-x8-CH", "GDDR7"),
                          ("hbm4-8000", "HBM4-8000", "HBM4-32Gb-8Hi-PC", "HBM4"),
                          ("lpddr6-10667", "LPDDR6-10667", "LPDDR6-16Gb-SC", "LPDDR6")])
def test_gddr7_and_hbm4_are_listed_run_and_report_energy_unavailable(config: str, speed: str, part: str,
                                                                     standard: str) -> None:
    p = json.loads(cli("dram", "presets", "--format", "json"))
    assert speed in {s["name"] for s in p["speeds"]} and config in {c["name"] for c in p["configs"]}
    parts = {s["name"]: s for s in p["parts"]}
    assert parts[part]["standard"] == standard and speed in parts[part]["speeds"]
    s = dram.simulate(config, {"kind": "random", "count": 2000, "seed": 3}).stats
    assert s["reads"] + s["writes"] == 2000 and s["energy_available"] is False
    out = cli("dram", "run", config, "--generate", "random", "--count", "1000")
    assert "not available" in out and part in out


def test_run_refuses_the_in_dram_copys_settings_on_the_baseline() -> None:
    args = ["dram", "run", "ddr3-1600k-bench", "--generate", "random", "--count", "200",
            "--set", "controller.copy.success=0.5"]
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert "controller.copy.success: not read" in " ".join(r.output.split()), r.output


def test_generate_writes_lines_of_the_bytes_asked(tmp_path: Path) -> None:
    out = tmp_path / "g.trace"
    r = runner.invoke(app, ["dram", "generate", "stream", "--count", "3", "--line-bytes", "32", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text().split() == ["R", "0x0", "R", "0x20", "R", "0x40"]
    r = runner.invoke(app, ["dram", "generate", "stream", "--count", "3", "--line-bytes", "48", "-o", str(out),
                            "--force"])
    assert r.exit_code == 2 and "line_bytes: 48 is not a power of two" in " ".join(r.output.split())


def test_check_says_what_a_violation_without_cycles_is(tmp_path: Path) -> None:
    # A bounds violation has no required / actual cycles: the table said "0 / 0" and not what was wrong.
    trace, log = tmp_path / "t.trace", tmp_path / "l.log"
    trace.write_text("R 0x0\nR 0x40\n")
    cli("dram", "run", "ddr3-1600k-bench", trace, "--command-log", log, "--format", "json")
    text = log.read_text()
    last = [ln for ln in text.splitlines() if ln and not ln.startswith("#")][-1]
    f = last.split()
    f[2] = "9"  # the channel field: out of range on a one-channel device
    log.write_text(text.replace(last, " ".join(f)))
    out = " ".join(runner.invoke(app, ["dram", "check", str(log)], env={"COLUMNS": "160"}).output.split())
    assert "1 violation in" in out and "channel 9 is out of range" in out


def test_an_empty_trace_runs_with_a_warning(tmp_path: Path) -> None:
    empty = tmp_path / "empty.trace"
    empty.write_text("# nothing\n")
    r = runner.invoke(app, ["dram", "run", "ddr3-1600k-bench", str(empty), "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["reads"] == 0
    assert "holds no requests or bulk operations" in r.stderr
