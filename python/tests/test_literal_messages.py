"""Every message is printed literally, wherever a user's text reaches it: a name from the user's own
TOML file or a file name with brackets in a table's title is shown as written, never read as rich
markup (which would drop it, restyle it, or fail on an unmatched closing tag). And ``make bench``
can be repeated: every line of it that writes into an output folder passes ``--force``."""

from __future__ import annotations

import re
from pathlib import Path

from movelab.cli import app
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_a_platform_named_with_brackets_is_shown_as_written(tmp_path: Path) -> None:
    text = (REPO / "presets" / "platforms" / "zhao-uma-emc.toml").read_text()
    mine = re.sub(r'(?m)^name = ".*"$', 'name = "[red]mine[/red] [/x]"', text, count=1)
    path = tmp_path / "p[bold]x.toml"
    path.write_text(mine)
    r = runner.invoke(app, ["platform", "run", str(path), "nic-tx"])
    assert r.exit_code == 0, r.output
    assert "[red]mine[/red] [/x] / nic-tx" in r.output


def test_make_bench_can_be_repeated() -> None:
    lines = (REPO / "Makefile").read_text().split("\nbench:", 1)[1].split("\n\n", 1)[0].splitlines()
    writers = [ln for ln in lines if "$(CLI)" in ln and "--out" in ln]
    assert writers, "no bench line writes an output"
    assert all("--force" in ln for ln in writers), [ln for ln in writers if "--force" not in ln]


def test_bench_record_keeps_its_results_unless_force_and_locks_its_folder(tmp_path: Path, monkeypatch) -> None:
    """Before anything is recorded: an existing result is kept unless --force, and a folder another
    process writes is refused at once, naming it."""
    import subprocess
    import sys

    from movelab.record import bench

    def never(*a, **k):
        raise AssertionError("the benchmark ran before --out was checked")

    monkeypatch.setattr(bench, "record_program", never)
    out = tmp_path / "rr"
    out.mkdir()
    (out / "record-replay.json").write_text("PRECIOUS")
    r = runner.invoke(app, ["bench", "record", "--out", str(out), "--program", "gcc"])
    assert r.exit_code == 2 and "--force" in r.output, r.output
    assert (out / "record-replay.json").read_text() == "PRECIOUS"
    (out / "record-replay.json").unlink()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
                               "from movelab._util import output_lock\nwith output_lock(Path(sys.argv[1])):\n"
                               "    print('locked', flush=True)\n    time.sleep(60)\n", str(out)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        r = runner.invoke(app, ["bench", "record", "--out", str(out), "--program", "gcc"])
        assert r.exit_code == 2, r.output
        assert f"being written by process {holder.pid}" in " ".join(r.output.split())
    finally:
        holder.kill()
        holder.wait()
