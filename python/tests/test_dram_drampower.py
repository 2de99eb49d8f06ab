"""DRAMPower exchange from Python and the CLI: a command log as a DRAMPower trace, a device written
as a DRAMPower memspec and read back, a run on a memspec's values, and the refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from movelab import dram
from movelab.cli import app
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: object, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


def cli_json(*args: object) -> dict:
    """A command's JSON on stdout (its notes go to stderr)."""
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return json.loads(r.stdout)


RUN = ["dram", "run", "ddr4-2400r", "--generate", "random", "--count", "2000", "--seed", "3", "--format", "json"]


@pytest.fixture(scope="module")
def run_and_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    log = tmp_path_factory.mktemp("dp") / "cmds.log"
    stats = json.loads(cli(*RUN, "--command-log", log))
    return stats, log


def test_trace_has_every_command_of_the_log(run_and_log: tuple[dict, Path], tmp_path: Path) -> None:
    stats, log = run_and_log
    out = tmp_path / "trace.csv"
    s = dram.drampower_trace(log, out, end=stats["cycles"])
    lines = out.read_text().splitlines()
    assert s["commands"] == len(lines) - 1 == sum(stats["commands"].values())
    assert lines[-1] == f"{stats['cycles']},END,0,0,0,0,0"
    names = {ln.split(",")[1] for ln in lines}
    assert {"ACT", "PRE", "RD", "WR", "END"} <= names
    rd = next(ln for ln in lines if ",RD," in ln)
    assert len(rd.split(",")) == 8 and rd.split(",")[7] == "0x" + "00" * 64
    # The CLI writes the same file, and does not overwrite it without --force.
    out2 = tmp_path / "cli.csv"
    cli("dram", "drampower-trace", log, "--out", out2, "--end", stats["cycles"])
    assert out2.read_text() == out.read_text()
    assert "exists" in cli("dram", "drampower-trace", log, "--out", out2, code=2)
    assert "before the last command" in cli("dram", "drampower-trace", log, "--out", tmp_path / "x.csv", "--end", 1,
                                            code=2)


def test_memspec_round_trip_and_run(tmp_path: Path) -> None:
    ms = tmp_path / "ddr5.json"
    cli("dram", "memspec", "--write", "DDR5-6400B/DDR5-32Gb-x16", "--out", ms)
    spec = json.loads(ms.read_text())["memspec"]
    assert spec["memoryType"] == "DDR5" and spec["memarchitecturespec"]["nbrOfBanks"] == 16
    r = dram.read_memspec(ms)
    assert r["notes"] == []
    settings = dict(r["settings"])
    assert settings["dram.org.rows"] == "131072" and settings["dram.timing.nCL"] == "52"
    # Another preset with the memspec's values: the carried timings, organisation and currents are the device's.
    mine = dram.load_config("ddr5-3200an", r["overrides"]).spec
    dev = dram.load_config("DDR5-6400B/DDR5-32Gb-x16").spec
    for k, _ in r["settings"]:
        if k.startswith("dram.timing."):
            name = k.removeprefix("dram.timing.")
            assert mine["timing"][name] == dev["timing"][name], name
    assert mine["org"]["rows"] == dev["org"]["rows"] and mine["currents"] == dev["currents"]
    # The CLI runs on it; --set wins over the memspec.
    base = ["dram", "run", "ddr5-3200an", "--generate", "random", "--count", "500", "--format", "json"]
    a = cli_json(*base, "--memspec", ms)
    assert a["tck_ps"] == 312 and a["speed"] == "DDR5-3200AN"
    c = cli_json(*base, "--memspec", ms, "--set", "dram.timing.tCK_ps=400")
    assert c["tck_ps"] == 400
    # The memspec's device is x16; ddr5-3200an's part is x8, whose devices the run's energy is for: said.
    assert "memarchitecturespec.width 16" in cli(*base, "--memspec", ms)
    text = cli("dram", "memspec", ms)
    assert "dram.timing.nRFC=" in text


def test_a_run_on_a_memspec_says_what_it_did_not_carry(tmp_path: Path) -> None:
    """A timing the memspec leaves at 0 (DRAMPower's "not given") keeps the config's value: `dram run
    --memspec` says so on stderr, and its JSON on stdout is whole."""
    ms = tmp_path / "ddr4.json"
    cli("dram", "memspec", "--write", "ddr4-2400r", "--out", ms)
    doc = json.loads(ms.read_text())
    doc["memspec"]["memtimingspec"]["RCD"] = 0
    zero = tmp_path / "rcd0.json"
    zero.write_text(json.dumps(doc))
    assert "nRCD (RCD)" in " ".join(dram.read_memspec(zero)["notes"])
    r = subprocess.run([sys.executable, "-m", "movelab", "dram", "run", "ddr4-2400r", "--generate", "random",
                        "--count", "300", "--format", "json", "--memspec", str(zero)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["reads"] > 0
    assert "not carried over" in r.stderr and "nRCD (RCD)" in r.stderr
    # A device of another shape (x16, four a rank): its width and count are the config's part's, which the
    # run's energy is for; said, where before the run went on silently with x8 devices.
    doc = json.loads(ms.read_text())
    doc["memspec"]["memarchitecturespec"].update(width=16, nbrOfDevices=4)
    x16 = tmp_path / "x16.json"
    x16.write_text(json.dumps(doc))
    diff = dram.memspec_device_differences(dram.read_memspec(x16), dram.load_config("ddr4-2400r").spec)
    assert len(diff) == 2 and "width 16" in diff[0] and "x8" in diff[0] and "nbrOfDevices 4" in diff[1], diff
    r = subprocess.run([sys.executable, "-m", "movelab", "dram", "run", "ddr4-2400r", "--generate", "random",
                        "--count", "300", "--format", "json", "--memspec", str(x16)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "memarchitecturespec.width 16" in r.stderr, r.stderr
    assert dram.memspec_device_differences(dram.read_memspec(ms), dram.load_config("ddr4-2400r").spec) == []
    # The memspec as written gives every timing: nothing to say.
    r = subprocess.run([sys.executable, "-m", "movelab", "dram", "run", "ddr4-2400r", "--generate", "random",
                        "--count", "300", "--format", "json", "--memspec", str(ms)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "not carried over" not in r.stderr, r.stderr


def test_refusals_name_the_problem(tmp_path: Path) -> None:
    assert "DDR4, DDR5 and LPDDR5" in cli("dram", "memspec", "--write", "hbm3-6400", code=2)
    bad = tmp_path / "bad.json"
    bad.write_text('{"memspec": {"memoryType": "GDDR9"}}')
    assert "GDDR9" in cli("dram", "memspec", bad, code=2)
    assert "does not exist" in cli("dram", "memspec", tmp_path / "none.json", code=2)
    assert "give a memspec" in cli("dram", "memspec", code=2)
    with pytest.raises(ValueError, match="channel"):
        dram.drampower_trace(bad, tmp_path / "t.csv", channel=-1)


def test_a_failed_conversion_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    """The command log given as the output is refused (it was emptied before being read), and a
    conversion that fails (an END before the last command) leaves a trace already there whole."""
    log = tmp_path / "log.txt"
    st = dram.simulate("ddr3-1600k-bench", {"kind": "random", "count": 50}, command_log=str(log))
    before = log.read_bytes()
    with pytest.raises(ValueError, match="is the command log itself"):
        dram.drampower_trace(log, log)
    assert log.read_bytes() == before
    good = tmp_path / "good.csv"
    dram.drampower_trace(log, good)
    kept = good.read_bytes()
    assert b",END," in kept.rstrip().splitlines()[-1]
    with pytest.raises(ValueError, match="before the last command"):
        dram.drampower_trace(log, good, end=1, force=True)
    assert good.read_bytes() == kept and st.stats["cycles"] > 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.csv", "log.txt"]


LPDDR5_CURRENTS = [
    "dram.currents.idd5pb=40", "dram.currents.vdd=1.05", "dram.currents.idd0=60", "dram.currents.idd2n=30",
    "dram.currents.idd3n=38", "dram.currents.idd4r=180", "dram.currents.idd4w=160", "dram.currents.idd5=110",
    "dram.currents.vpp=1.8", "dram.currents.ipp0=8", "dram.currents.ipp2n=2", "dram.currents.ipp3n=2.5",
    "dram.currents.ipp4r=3", "dram.currents.ipp4w=3",
    "dram.currents.vdd2l=0.9", "dram.currents.idd02l=10", "dram.currents.idd2n2l=5", "dram.currents.idd3n2l=6",
    "dram.currents.idd4r2l=25", "dram.currents.idd4w2l=20",
]


def test_lpddr5_currents_travel_through_a_memspec(tmp_path: Path) -> None:
    """An LPDDR5 device given currents on its three supplies (made up: none are public) is written as a
    DRAMPower memspec and read back by another run, which then reports the same energy."""
    ms = tmp_path / "lp5.json"
    args = [a for kv in LPDDR5_CURRENTS for a in ("--set", kv)]
    cli("dram", "memspec", "--write", "lpddr5-6400", *args, "-o", ms)
    power = json.loads(ms.read_text())["memspec"]["mempowerspec"]
    assert (power["vdd1"], power["vdd2h"], power["vdd2l"]) == (1.8, 1.05, 0.9)
    assert power["idd02l"] == pytest.approx(0.010)
    base = ["dram", "run", "lpddr5-6400", "--generate", "random", "--count", "2000", "--format", "json"]
    given = json.loads(cli(*base, *args))
    read = json.loads(cli(*base, "--memspec", ms))
    assert given["energy_available"] and read["energy_available"]
    assert read["energy"]["total_nj"] == pytest.approx(given["energy"]["total_nj"], rel=1e-12)
    assert given["energy"]["total_nj"] > 0
    # Without currents the preset still has no energy; a supply given in part is refused.
    assert not json.loads(cli(*base))["energy_available"]
    out = cli(*base, "--set", "dram.currents.vdd=1.05", "--set", "dram.currents.idd0=60", code=2)
    assert "publishes no currents" in " ".join(out.replace("│", " ").split())


def test_memspec_refuses_the_other_directions_options(tmp_path: Path) -> None:
    # Reading took --set and --out and wrote nothing (exit 0); --write printed JSON for --format table.
    ms = tmp_path / "ms.json"
    assert runner.invoke(app, ["dram", "memspec", "--write", "ddr4-2400r", "-o", str(ms)]).exit_code == 0
    r = runner.invoke(app, ["dram", "memspec", str(ms), "--set", "dram.timing.nRAS=99", "-o", str(tmp_path / "x")])
    assert r.exit_code == 2 and "only --write takes them" in " ".join(r.output.split()), r.output
    assert not (tmp_path / "x").exists()
    r = runner.invoke(app, ["dram", "memspec", "--write", "ddr4-2400r", "--format", "table"])
    assert r.exit_code == 2 and "--format" in r.output, r.output
