"""`movelab dram run` without typer (movelab.dram.fast_start): the plain command lines it takes print
the same bytes, on the same streams, with the same exit status as the typer command line, and
import neither typer nor rich nor pydantic; every other command line is left to typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from movelab.dram.fast_start import _exit_as_the_command_line_does, parse_run

# Both take the command line after `movelab`; the typer one builds the whole root command.
FAST = "import sys; sys.argv[0] = 'movelab'; from movelab.__main__ import main; main()"
TYPER = "import sys; sys.argv[0] = 'movelab'; from movelab.cli import build_app; build_app()()"
PROBE = ("import sys; sys.argv = ['movelab', *sys.argv[1:]]; from movelab.__main__ import main; main(); "
         "print(sorted(m for m in ('typer', 'rich', 'pydantic', 'click') if m in sys.modules), file=sys.stderr)")


def _run(code: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    p = tmp_path / "t.trace"
    p.write_text("LD 0x40\nST 0x80\nLD 0x100000\nLD 0x40\n")
    return p


def test_plain_command_lines_are_recognised() -> None:
    kw = parse_run(["cfg", "t.trace", "--set", "a.b=1", "--set=c=2", "--trace-format=ramulator", "--format", "json"])
    assert kw is not None
    assert (kw["config"], str(kw["trace"]), kw["set_"], kw["trace_format"], kw["fmt"]) == (
        "cfg", "t.trace", ["a.b=1", "c=2"], "ramulator", "json")
    assert parse_run(["cfg", "t.trace"]) is not None


@pytest.mark.parametrize("args", [
    [], ["cfg"], ["cfg", "a", "b"], ["cfg", "t", "-h"], ["cfg", "t", "--help"], ["cfg", "-"],
    ["cfg", "t", "--format", "jsno"], ["cfg", "t", "--format", "json", "--format", "table"],
    ["cfg", "t", "--trace-format", "RAMULATOR"], ["cfg", "t", "--set"], ["cfg", "t", "--set", "--format"],
    ["cfg", "t", "--set", "novalue"], ["cfg", "t", "--set", "=1"], ["cfg", "t", "--command-log", "x"],
    ["cfg", "t", "--generate", "random"], ["cfg", "t", "--"], ["cfg", "t", "--forma", "json"],
])
def test_anything_else_is_left_to_typer(args: list[str]) -> None:
    assert parse_run(args) is None


@pytest.mark.parametrize(("config", "missing", "args", "ok"), [
    ("ddr3-1600k-bench", False, ["--format", "json"], True),
    ("ddr3-1600k-bench", False, ["--set", "controller.scheduler=fcfs", "--set=controller.row_policy=closed"], True),
    ("ddr3-1600k-bench", False, ["--set", "controller.read_queue=0", "--format", "json"], False),
    ("ddr3-1600k-bench", False, ["--trace-format", "dramsim3", "--format=json"], False),
    ("no-such-preset", False, ["--format", "json"], False),
    ("ddr3-1600k-bench", True, [], False),
])
def test_same_output_as_the_typer_command_line(tmp_path: Path, trace: Path, config: str, missing: bool,
                                               args: list[str], ok: bool) -> None:
    line = ["dram", "run", config, str(tmp_path / "missing.trace" if missing else trace), *args]
    fast, slow = _run(FAST, line, tmp_path), _run(TYPER, line, tmp_path)
    assert (fast.returncode, fast.stdout, fast.stderr) == (slow.returncode, slow.stdout, slow.stderr)
    assert (fast.returncode == 0) == ok, fast.stderr
    if not ok:
        # (a table run's transient progress bar leaves an empty line before it, either way)
        err = fast.stderr.strip()
        assert fast.returncode == 2 and err.startswith("error: ") and "\n" not in err


def test_typer_errors_stay_typers(tmp_path: Path, trace: Path) -> None:
    for line in (["dram", "run", "ddr3-1600k-bench", str(trace), "--set", "nokey"],
                 ["dram", "run", "ddr3-1600k-bench", str(trace), "--format", "xml"],
                 ["dram", "run", "ddr3-1600k-bench"]):
        fast, slow = _run(FAST, line, tmp_path), _run(TYPER, line, tmp_path)
        assert fast.returncode == slow.returncode == 2
        assert (fast.stdout, fast.stderr) == (slow.stdout, slow.stderr)


def test_a_plain_run_imports_no_command_line_library(tmp_path: Path, trace: Path) -> None:
    p = _run(PROBE, ["dram", "run", "ddr3-1600k-bench", str(trace), "--trace-format", "ramulator", "--format",
                     "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip() == "[]"
    assert '"cycles"' in p.stdout


def test_an_interrupt_ends_with_status_130(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        _exit_as_the_command_line_does(KeyboardInterrupt(), [])
    assert e.value.code == 130
    assert capsys.readouterr().err.strip() == "movelab: interrupted"


def test_a_user_error_ends_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        _exit_as_the_command_line_does(ValueError("config x: no such preset"), [])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == "error: config x: no such preset"


def test_an_unexpected_error_is_raised_again() -> None:
    with pytest.raises(ZeroDivisionError):
        _exit_as_the_command_line_does(ZeroDivisionError(), [])
