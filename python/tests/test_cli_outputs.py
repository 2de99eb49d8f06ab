"""Output files: never overwritten without ``--force``, and written whole or not at all (a run that
fails or is interrupted leaves the previous file or none, never a partial one that looks
complete). Ctrl-C exits with status 130 and one line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from movelab import dram
from movelab.cli import app
from movelab.reproduce import rowclone_latency as rl
from typer.testing import CliRunner

MOVELAB = Path(sys.executable).parent / "movelab"
runner = CliRunner(env={"COLUMNS": "200"})


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def listing(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_reproduce_out_is_not_overwritten_without_force(tmp_path: Path) -> None:
    out = tmp_path / "r"
    assert invoke("reproduce", "rowclone-latency", "--out", out).exit_code == 0
    first = listing(out)
    assert set(first) == {"rowclone-latency.json", "rowclone-latency.csv", "rowclone-latency.png"}
    (out / "rowclone-latency.csv").write_text("mine\n")
    r = invoke("reproduce", "rowclone-latency", "--out", out, "--set", "dram.timing.nRAS=24")
    assert r.exit_code == 2 and "rowclone-latency.json" in r.output and "--force" in r.output
    assert (out / "rowclone-latency.csv").read_text() == "mine\n"
    assert listing(out)["rowclone-latency.json"] == first["rowclone-latency.json"]
    r = invoke("reproduce", "rowclone-latency", "--out", out, "--set", "dram.timing.nRAS=24", "--force")
    assert r.exit_code == 0
    after = listing(out)
    assert set(after) == set(first) and after["rowclone-latency.json"] != first["rowclone-latency.json"]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging left


def test_an_interrupted_reproduction_leaves_no_partial_files(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "r"

    def plot_then_interrupt(rows, path, *a):
        path.write_bytes(b"\x89PNG half")
        raise KeyboardInterrupt

    monkeypatch.setattr(rl, "plot", plot_then_interrupt)
    r = invoke("reproduce", "rowclone-latency", "--out", out)
    assert r.exit_code == 130 and "interrupted" in r.output
    assert listing(out) == {}  # neither the JSON/CSV written before the plot, nor the half PNG


def test_an_interrupted_generate_leaves_no_file(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "t.trace"

    def write_then_interrupt(gen, path, fmt, force=False):
        Path(path).write_text("R 0x0\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(dram, "write_trace", write_then_interrupt)
    r = invoke("dram", "generate", "random", "-o", target)
    assert r.exit_code == 130
    assert r.output.strip().splitlines()[-1] == "movelab: interrupted"
    assert list(tmp_path.iterdir()) == []


def test_a_failed_run_leaves_no_command_log(tmp_path: Path) -> None:
    log = tmp_path / "cmds.log"
    bad = tmp_path / "bad.trace"
    bad.write_text("R 0x0\nR 0x40\nBOGUS\n")
    r = invoke("dram", "run", "ddr3-1600k-bench", bad, "--command-log", log)
    assert r.exit_code == 2 and "bad.trace:3" in r.output
    assert list(tmp_path.iterdir()) == [bad]  # no header-only log for `dram check` to pass


def test_generate_writes_whole_files_and_refuses_existing(tmp_path: Path) -> None:
    target = tmp_path / "t.trace"
    assert invoke("dram", "generate", "random", "-o", target, "--count", "10").exit_code == 0
    assert len(target.read_text().splitlines()) == 10
    r = invoke("dram", "generate", "random", "-o", target, "--count", "20")
    assert r.exit_code == 2 and "--force" in r.output and len(target.read_text().splitlines()) == 10
    assert invoke("dram", "generate", "random", "-o", target, "--count", "20", "--force").exit_code == 0
    assert len(target.read_text().splitlines()) == 20
    assert [p.name for p in tmp_path.iterdir()] == ["t.trace"]


def test_bench_out_is_checked_before_the_benchmark_runs(tmp_path: Path) -> None:
    (tmp_path / "bench-dram.json").write_text("keep\n")
    t = time.perf_counter()
    r = invoke("bench", "dram", "--out", tmp_path)
    assert r.exit_code == 2 and "bench-dram.json" in r.output
    assert time.perf_counter() - t < 5  # refused at once, not after minutes of benchmarking
    assert (tmp_path / "bench-dram.json").read_text() == "keep\n"


def _hangup_at_default() -> None:
    """In the started program: SIGHUP at its default, as from a terminal (a test run under `nohup`
    would hand it SIGHUP ignored, and the program rightly keeps an ignored hang-up ignored)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _interrupt(args: list[str], tmp_path: Path, after: float = 3.0, sig: int = signal.SIGINT) -> tuple[int, str]:
    """Starts the CLI, sends ``sig`` (SIGINT) ``after`` seconds later, and returns its exit status
    and stderr; it must exit within a few seconds of the signal."""
    p = subprocess.Popen([str(MOVELAB), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path,
                         text=True, env={**os.environ, "COLUMNS": "200"}, preexec_fn=_hangup_at_default)
    time.sleep(after)
    assert p.poll() is None, "finished before the signal"
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail(f"{args} ignored Ctrl-C")
    return p.returncode, err


def test_ctrl_c_in_a_benchmark_exits_130_leaving_no_output(tmp_path: Path) -> None:
    code, err = _interrupt(["bench", "dram", "--requests", "200000000", "--repeats", "1", "--out", "o"],
                           tmp_path)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "movelab: interrupted" and "Traceback" not in err
    assert not (tmp_path / "o" / "bench-dram.json").exists()


def test_ctrl_c_in_a_long_dram_run_exits_130_leaving_no_log(tmp_path: Path) -> None:
    code, err = _interrupt(["dram", "run", "ddr3-1600k-bench", "--generate", "random", "--count", str(10**10),
                            "--command-log", "c.log"], tmp_path)
    assert code == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == "movelab: interrupted"
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_in_generate_exits_130_leaving_no_file(tmp_path: Path) -> None:
    code, err = _interrupt(["dram", "generate", "random", "--count", str(10**11), "-o", "t.trace"], tmp_path)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "movelab: interrupted" and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_killed_generate_or_run_leaves_no_partial_file(tmp_path: Path, sig: int) -> None:
    """`kill` (SIGTERM) or a closed terminal (SIGHUP) ended the process where it stood, leaving the
    hidden .partial file (gigabytes of it for a large --count) and the output's lock: it stops as
    Ctrl-C does, removing both, with exit status 128 + the signal and one line naming it."""
    name = signal.Signals(sig).name
    code, err = _interrupt(["dram", "generate", "random", "--count", str(10**11), "-o", "t.trace"], tmp_path,
                           after=2.0, sig=sig)
    assert code == 128 + sig, err
    assert err.strip().splitlines()[-1] == f"movelab: stopped by {name}" and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
    # `dram run` takes the fast start, without typer: the same.
    code, err = _interrupt(["dram", "run", "ddr3-1600k-bench", "--generate", "random", "--count", str(10**10),
                            "--command-log", "c.log"], tmp_path, after=2.0, sig=sig)
    assert code == 128 + sig and err.strip().splitlines()[-1] == f"movelab: stopped by {name}", err
    assert list(tmp_path.iterdir()) == []
