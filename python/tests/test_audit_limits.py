"""Promises of the options kept: every value an option accepts runs (the I/O model's stream limits
are the options' ranges), a cost-name typo is refused naming the key, ``bench host onload`` checks
its outputs before measuring and prints a table that fits 80 columns, and SIGTERM stops it as
Ctrl-C does (so that its veth namespaces are removed)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from movelab import network
from movelab.cli import app
from movelab.platform import io
from movelab.reproduce import larsen_idma as li
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: object, code: int = 0, **kw) -> str:
    r = runner.invoke(app, [str(a) for a in args], **kw)
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


def test_the_io_stream_limits_are_the_options_ranges() -> None:
    # The largest accepted values run on the cluster: a 64 KiB message (the NIC segments it by TSO),
    # and the longest stream of small messages.
    s = io.run("larsen-82598-gen1", count=1, nbytes=io.MAX_BYTES).stats
    assert s["messages_total"] == 1 and s["frames"] == -(-io.MAX_BYTES // 1448)
    assert io.run("larsen-82598-gen1", count=io.MAX_COUNT, nbytes=64).stats["frames"] == io.MAX_COUNT
    for count, nbytes, named in [(1, io.MAX_BYTES + 1, "nbytes"), (io.MAX_COUNT + 1, 64, "count")]:
        with pytest.raises(ValueError, match=named):
            io.run("larsen-82598-gen1", count=count, nbytes=nbytes)
    for opt, value in [("--small-count", str(li.MAX_SMALL + 1)), ("--large-count", str(li.MAX_LARGE + 1))]:
        assert opt in cli("reproduce", "larsen-idma", opt, value, code=2)


def test_a_cost_name_typo_is_refused_naming_the_key() -> None:
    # The network runs on the one platform, whose host programs carry their own costs: a cost
    # override (a typo or not) is refused naming the key, never ignored.
    with pytest.raises(ValueError, match=r"host\.costs\.ip_rxx: not read by the one platform"):
        network.run("softnic", "rx", 1472, overrides={"host": {"costs": {"ip_rxx": 100000}}})
    assert "host.costs.ip_rxx" in cli("network", "run", "softnic", "--set", "host.costs.ip_rxx=100000", code=2)
    assert "host.costs.nosuch" in cli("reproduce", "wun-onload", "--set", "host.costs.nosuch=5", code=2)
    # A key that reaches the platform moves the figure: twice the host's cycles per instruction.
    slow = network.run("softnic", "rx", 1472, overrides={"host": {"cpi": 21.0}, "wire": {"duration_us": 2000.0}})
    fast = network.run("softnic", "rx", 1472, overrides={"wire": {"duration_us": 2000.0}})
    assert slow["throughput_mbps"] < fast["throughput_mbps"] / 1.3


def test_onload_bench_checks_outputs_first_and_its_table_fits(tmp_path: Path, monkeypatch) -> None:
    from movelab.host import bench_onload

    def never(*a, **k):
        raise AssertionError("the benchmark measured before its outputs were checked")

    (tmp_path / "onload.csv").write_text("PRECIOUS")
    with monkeypatch.context() as m:
        m.setattr(bench_onload, "run", never)  # refused before it measures (not timed: the machine may be loaded)
        out = cli("bench", "host", "onload", "--quick", "--source", "replay", "--out", tmp_path, code=2)
    assert "refusing to overwrite" in out
    assert (tmp_path / "onload.csv").read_text() == "PRECIOUS"
    text = cli("bench", "host", "onload", "--quick", "--source", "replay", "--direction", "rx", "--sizes", "64",
               "--out", tmp_path / "o", env={"COLUMNS": "80"})
    table = text[: text.index("every column: onload.csv")]
    assert "…" not in table, table
    assert "onload-nocache" in table and "softnic" in table
    assert max(len(line) for line in table.splitlines()) <= 80


def _has_thread(pid: int, name: str) -> bool:
    """Whether process ``pid`` runs a thread called ``name`` (Linux /proc)."""
    try:
        return any((t / "comm").read_text().strip() == name for t in Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False


def test_sigterm_stops_the_onload_bench_as_ctrl_c_does(tmp_path: Path) -> None:
    # The onload configuration only: its engine thread starts with the first point (with every
    # configuration it started after the kernel's and softnic's points, 7 s in).
    p = subprocess.Popen([sys.executable, "-m", "movelab.cli", "bench", "host", "onload", "--source", "replay",
                          "--config", "onload", "--seconds", "1", "--out", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Inside the measurement loop: once the onload engine's thread runs (a fixed sleep raced a slow
    # start on a loaded machine, where the signal came before the handler was installed).
    for _ in range(600):
        if p.poll() is not None or _has_thread(p.pid, "movelab-onload"):
            break
        time.sleep(0.1)
    assert p.poll() is None, "finished before the signal"
    os.kill(p.pid, signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err  # handled (namespaces dropped after the point), not killed (-15)
    assert "interrupted" in err
    assert not (tmp_path / "onload.csv").exists()


def test_every_output_is_locked_against_a_second_writer(tmp_path: Path) -> None:
    """A reproduction's --out folder and a single output file are locked while written, as a sweep's
    table is: another process writing there makes the run fail at once, naming it."""
    from movelab._util import output_lock

    out = tmp_path / "rep"
    out.mkdir()
    script = tmp_path / "hold.py"
    script.write_text("import sys, time\nfrom pathlib import Path\nfrom movelab._util import output_lock\n"
                      "with output_lock(Path(sys.argv[1])):\n    print('locked', flush=True)\n    time.sleep(60)\n")
    trace = tmp_path / "t.txt"
    for target, args in [(out, ["reproduce", "rowclone-latency", "--out", out]),
                         (trace, ["dram", "generate", "random", "--count", "10", "-o", trace])]:
        holder = subprocess.Popen([sys.executable, str(script), str(target)], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            text = cli(*args, code=2)
            assert f"being written by process {holder.pid}" in " ".join(text.split())
        finally:
            holder.kill()
            holder.wait()
        with output_lock(target):  # free again once its holder is gone
            pass


def _netns_usable() -> bool:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    name = f"movelab-probe-{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode != 0:
        return False
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return True


def test_sigterm_on_the_veth_bench_removes_its_namespaces(tmp_path: Path) -> None:
    # SIGTERM as soon as the process has a namespace: the availability probe's or a point's.
    if not _netns_usable():
        pytest.skip("creating network namespaces needs root and iproute2")
    p = subprocess.Popen([sys.executable, "-m", "movelab.cli", "bench", "host", "onload", "--source", "veth",
                          "--seconds", "1", "--sizes", "64", "--direction", "rx", "--out", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    mine = f"movelab-onl-{p.pid}-"

    def namespaces() -> list[str]:
        netns = Path("/run/netns")
        return sorted(n.name for n in netns.iterdir() if n.name.startswith(mine)) if netns.is_dir() else []

    try:
        for _ in range(600):  # until the benchmark has made its namespace pair (60 s at most)
            if namespaces() or p.poll() is not None:
                break
            time.sleep(0.1)
        made = namespaces()
        assert made, "the veth benchmark made no namespace"
        os.kill(p.pid, signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        left = namespaces()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for n in namespaces():  # never leave one behind, even when the test fails
            subprocess.run(["ip", "netns", "del", n], capture_output=True)
    assert p.returncode == 130, err  # handled (namespaces dropped), not killed (-15)
    assert left == [], f"left behind after SIGTERM: {left} (made {made})"
