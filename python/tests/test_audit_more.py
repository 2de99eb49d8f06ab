"""The audit's remaining low defects, each as the property it breaks: every help text shows its
defaults and no stray " ." (brackets in help are not eaten as markup), every CLI command is in the
README's tour, a workload that rings doorbells on a platform with no device says so, and the
larsen-idma stack plot has a legend entry for every segment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from movelab.cli import app
from typer.testing import CliRunner

README = Path(__file__).resolve().parents[2] / "README.md"
runner = CliRunner(env={"COLUMNS": "240"})


def _commands() -> list[list[str]]:
    """Every command path of the CLI (groups and leaves)."""
    out: list[list[str]] = []

    def walk(cmd: Any, path: list[str]) -> None:
        out.append(path)
        if hasattr(cmd, "commands"):  # a group (typer may carry its own copy of click)
            for name, sub in cmd.commands.items():
                if not sub.hidden:
                    walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return out


def test_every_help_shows_its_defaults_and_no_stray_dot() -> None:
    seen = 0
    for path in _commands():
        r = runner.invoke(app, [*path, "--help"])
        assert r.exit_code == 0, (path, r.output)
        for line in r.output.splitlines():
            text = line.strip("│ ")
            assert not re.search(r"\S \.$", text), (path, line)  # a default eaten as markup left " ."
            if text.startswith(("--workers", "--cluster")):
                assert "[default:" in text, (path, line)
                seen += 1
    assert seen >= 6  # reproduce, sweep run and bench sweep at least


@pytest.mark.parametrize("columns", ["80", "240"])
def test_no_help_points_at_the_repositorys_documentation_files(columns: str) -> None:
    """A wheel's users have no docs folder: no help names a docs/*.md path (at 80 columns a path
    may wrap, so "docs/" and ".md" are each looked for); it names a guide or states the fact. Nor a
    file under the repository's presets/ folder (a wheel's presets are inside the package: help names
    the command that shows them), outside an output option's default; nor reST markup (``x``)."""
    wide = CliRunner(env={"COLUMNS": columns})
    bad = []
    for path in _commands():
        r = wide.invoke(app, [*path, "--help"])
        assert r.exit_code == 0, (path, r.output)
        text = " ".join(r.output.replace("│", " ").split())
        bad += [(path, m.group(0)) for m in re.finditer(r"\S*(docs/|\.md\b|``)\S*", text)]
        told = re.sub(r"\[default: [^\]]*\]", "", text)
        bad += [(path, m.group(0)) for m in re.finditer(r"\S*presets/\S*", told)]
    assert not bad, bad


@pytest.mark.parametrize("columns", ["80", "100", "240"])
def test_no_help_cuts_an_option_name_or_a_default_short(columns: str) -> None:
    """The framed option tables cut what does not fit their columns with an ellipsis (an option
    '--no-buffer-sta…', a default 'rowclone-ddr5-48…'): below 100 columns help is plain wrapped
    text, and at 100 and wider every command's tables fit. Plain text shows no markup escape."""
    wide = CliRunner(env={"COLUMNS": columns})
    cut = []
    for path in _commands():
        out = wide.invoke(app, [*path, "--help"]).output
        cut += [(path, line.strip()) for line in out.splitlines() if "…" in line]
        # Plain help kept the framed tables' markup escape: "\\[default: the preset's]".
        cut += [(path, line.strip()) for line in out.splitlines() if "\\[" in line]
    assert not cut, cut
    plain = wide.invoke(app, ["replay", "--help"]).output
    assert ("╭" in plain) == (int(columns) >= 100), plain


@pytest.mark.parametrize("columns", ["80", "240"])
def test_every_group_lists_each_commands_whole_summary(columns: str) -> None:
    """A group's list of commands gives each one's whole summary (the first paragraph of its
    help): plain help (below 100 columns) cut a one-line summary at the column's width with "..."
    ("Write DIRECTORY/index.html: every reproduction and sweep...")."""
    import inspect

    wide = CliRunner(env={"COLUMNS": columns})
    cmd = typer.main.get_command(app)
    cut = []
    for path in _commands():
        group = cmd
        for name in path:
            group = group.commands[name]
        if not hasattr(group, "commands"):
            continue
        # Whitespace apart: plain help may wrap a line after a hyphen ("page-" / "fault").
        text = "".join(wide.invoke(app, [*path, "--help"]).output.replace("│", " ").split())
        for name, sub in group.commands.items():
            if sub.hidden:
                continue
            first = "".join(inspect.cleandoc(sub.short_help or sub.help or "").split("\n\n")[0].split())
            if first and first not in text:
                cut.append(([*path, name], first))
    assert not cut, cut


def test_the_replays_defaults_in_help_are_its_own() -> None:
    from movelab.record import cachestate

    text = " ".join(runner.invoke(app, ["replay", "--help"]).output.replace("│", " ").split())
    assert f"Default: the replay's, {cachestate.REGION};" in text, text
    assert f"Default: the replay's, {cachestate.DISTANCE}." in text, text


def test_help_summaries_do_not_break_inside_a_phrase() -> None:
    out = runner.invoke(app, ["reproduce", "--help"]).output
    assert not re.search(r"\(Fig\. 11,\s*│", out), out


def test_every_command_group_is_in_the_readme_tour() -> None:
    tour = README.read_text()
    top = {p[0] for p in _commands() if len(p) == 1}
    missing = [c for c in sorted(top) if f"movelab {c} " not in tour and f"movelab {c}\n" not in tour]
    assert not missing, missing
    assert "movelab network run" in tour and "movelab network config" in tour


def test_a_doorbell_workload_on_a_platform_without_a_device_warns() -> None:
    r = CliRunner().invoke(app, ["platform", "run", "zhao-uma-emc", "nic-tx", "--format", "json",
                                 "--param", "messages=1"])
    assert r.exit_code == 0, r.output
    assert "has no [io] devices" in r.output and "zhao-uma-emc" in r.output
    ok = CliRunner().invoke(app, ["platform", "run", "larsen-io", "nic-tx", "--format", "json",
                                  "--param", "messages=1"])
    assert ok.exit_code == 0 and "no [io] devices" not in ok.output
    quiet = CliRunner().invoke(app, ["platform", "run", "zhao-uma-emc", "tcp-rx", "--format", "json",
                                     "--param", "packets=2"])
    assert quiet.exit_code == 0 and "no [io] devices" not in quiet.output, quiet.output


def test_a_receive_workload_that_can_never_receive_warns() -> None:
    # A platform's NIC has no far end: nic-rx posts buffers and waits for frames that never come.
    r = CliRunner().invoke(app, ["platform", "run", "larsen-io", "nic-rx"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "no frame arrived" in out and "movelab platform pair" in out, out
    # Frames looped back on the composed server arrive: no warning.
    ok = CliRunner().invoke(app, ["platform", "run", "server-composed", "server-rx", "--param", "chunks=1",
                                  "--param", "chunk=100"])
    assert ok.exit_code == 0 and "no frame arrived" not in ok.output, ok.output
    # movelab run says so too, and of a pair whose receiver had no buffers.
    r = CliRunner().invoke(app, ["run", "larsen-io", "nic-rx", "--format", "json"])
    assert r.exit_code == 0 and "no frame arrived" in " ".join(r.output.split()), r.output
    r = CliRunner().invoke(app, ["run", "larsen-io", "pair", "--system", "cluster", "--param", "messages=4",
                                 "--param", "buffers=0"])
    assert r.exit_code == 0 and "4 frames arrived at a receiver with no RX buffer" in " ".join(r.output.split())
    # The system is named when another system's workload is run on a preset.
    e = CliRunner().invoke(app, ["run", "larsen-io", "pair"])
    assert e.exit_code == 2 and "--system cluster" in " ".join(e.output.replace("│", " ").split()), e.output


def test_the_idma_stack_legend_names_every_segment(tmp_path: Path, monkeypatch) -> None:
    import matplotlib.pyplot as plt
    from movelab.reproduce import larsen_idma as li

    rows = []
    for fig, case, parts in [("fig8", "descriptor-dma", ["doorbell_ns", "descriptor_ns", "payload_ns"]),
                             ("fig9", "idma", ["doorbell_ns", "reads_ns", "push_ns"])]:
        rows.append({"figure": fig, "case": case, "metric": "nic_tx_latency_ns", "value": 100.0,
                     "paper_value": 100.0})
        rows += [{"figure": fig, "case": case, "metric": m, "value": 10.0, "paper_value": 12.0} for m in parts]
    legends: list[list[str]] = []
    real = plt.close

    def capture(fig=None):
        if fig is not None:
            legends.extend([t.get_text() for t in ax.get_legend().get_texts()]
                           for ax in fig.axes if ax.get_legend() is not None)
        return real(fig)

    monkeypatch.setattr(plt, "close", capture)
    li.plot(rows, tmp_path)
    stack = next(names for names in legends if "payload" in names)
    assert sorted(stack) == ["descriptor", "doorbell", "payload", "push", "reads"], stack


def test_report_skips_odd_entries_and_names_them(tmp_path: Path) -> None:
    import os

    (tmp_path / os.fsdecode(b"b\xff.parquet")).write_bytes(b"1")  # a name that is not UTF-8
    os.mkfifo(tmp_path / "f.parquet")  # reading it would block for ever
    r = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "skipped" in r.output and "f.parquet: not a regular file" in r.output
    assert "b\\udcff.parquet: its name is not UTF-8" in r.output
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert 'id="skipped"' in page and "f.parquet" in page


def test_report_on_a_full_disk_names_the_page_and_leaves_no_temporary(tmp_path: Path, monkeypatch) -> None:
    import errno

    real = Path.write_text

    def full(self: Path, data: str, *a: Any, **k: Any) -> int:
        if self.name.endswith(".tmp"):
            real(self, data[:10], *a, **k)
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data, *a, **k)

    monkeypatch.setattr(Path, "write_text", full)
    r = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == 2, r.output
    assert f"cannot write {tmp_path / 'index.html'}: No space left on device" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_sweep_writes_on_a_full_disk_name_the_file_and_leave_no_temporary(tmp_path: Path) -> None:
    import errno

    from movelab.sweep import _written

    out = tmp_path / "x.parquet"
    tmp = tmp_path / ".x.parquet.tmp"
    with pytest.raises(OSError, match=re.escape(f"cannot write {out}: No space left on device")):
        with _written(tmp, out):
            tmp.write_bytes(b"PAR1")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert list(tmp_path.iterdir()) == []
    with _written(tmp, out):
        tmp.write_bytes(b"ok")
    assert out.read_bytes() == b"ok" and not tmp.exists()


def test_overrides_too_large_for_toml_name_the_key() -> None:
    for value in [str((1 << 64) - 1), str(1 << 63)]:
        r = CliRunner().invoke(app, ["dram", "run", "ddr3-1600k-bench", "--generate", "random", "--count", "10",
                                     "--set", f"dram.timing.tCK_ps={value}"])
        assert r.exit_code == 2, r.output
        assert "dram.timing.tCK_ps" in r.output and "signed 64 bits" in r.output, r.output
    from movelab import dram

    with pytest.raises(ValueError, match=re.escape("dram.timing.tCK_ps")):
        dram.simulate("ddr3-1600k-bench", [("R", 0)], overrides={"dram": {"timing": {"tCK_ps": 1 << 63}}})


def test_a_clock_longer_than_the_refresh_interval_names_the_clock() -> None:
    r = CliRunner().invoke(app, ["dram", "run", "ddr3-1600k-bench", "--generate", "random", "--count", "10",
                                 "--set", "dram.timing.tCK_ps=4294967295"])
    assert r.exit_code == 2, r.output
    assert "dram.timing.tCK_ps" in r.output and "refresh interval" in r.output and "nREFI" not in r.output



def test_report_headings_give_the_whole_first_paragraph(tmp_path: Path) -> None:
    d = tmp_path / "rowclone-latency"
    d.mkdir()
    (d / "rowclone-latency.json").write_text("[]")
    r = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    heading = re.search(r'<h2 id="rowclone-latency"[^>]*>(.*?)</h2>', page).group(1)
    assert heading.endswith("on the paper&#x27;s system (Table 2)."), heading
    assert "a 4 KB zeroing" in heading


def test_every_zhao_panel_has_y_tick_labels(tmp_path: Path, monkeypatch) -> None:
    import matplotlib.pyplot as plt
    from movelab.reproduce import zhao_copy_engine as zc

    unlabelled: list[str] = []
    real = plt.close

    def capture(fig=None):
        if fig is not None:
            fig.canvas.draw()
            for ax in fig.axes:
                if not any(t.get_visible() and t.get_text() for t in ax.get_yticklabels()):
                    unlabelled.append(f"{fig.texts[0].get_text() if fig.texts else ''} {ax.get_title()}")
        return real(fig)

    monkeypatch.setattr(plt, "close", capture)
    rows = zc.run(packets=5)
    zc.plot_table3(rows, tmp_path / "t3.png")
    zc.plot_sensitivity(rows, tmp_path / "s.png")
    assert not unlabelled, unlabelled


def test_the_sweep_page_plot_labels_its_y_axis() -> None:
    from movelab import report

    # The page draws its plot in the browser (the report's browser test runs it): the script labels
    # the y axis with the statistic and writes ticks with thousands separators.
    assert 'id="ylabel"' in report._PLOT_JS and "rotate(-90)" in report._PLOT_JS
    assert "toLocaleString('en')" in report._PLOT_JS


def test_a_native_trace_can_be_piped_on_stdin(tmp_path: Path, monkeypatch) -> None:
    import io
    import json
    import os

    from movelab import dram

    t = tmp_path / "t.txt"
    assert CliRunner().invoke(app, ["dram", "generate", "random", "--count", "500", "-o", str(t)]).exit_code == 0
    whole = json.loads(CliRunner().invoke(app, ["dram", "run", "ddr3-1600k-bench", str(t), "--format", "json"]).output)
    piped = CliRunner().invoke(app, ["dram", "run", "ddr3-1600k-bench", "-", "--format", "json"], input=t.read_text())
    assert piped.exit_code == 0, piped.output
    assert json.loads(piped.output) == whole
    monkeypatch.setattr("sys.stdin", io.StringIO(t.read_text()))
    res = dram.simulate("ddr3-1600k-bench", "-")
    assert res.stats["cycles"] == whole["cycles"] and res.stats["reads"] == whole["reads"]
    with pytest.raises(ValueError, match="native format only"):
        dram.simulate("ddr3-1600k-bench", "-", trace_format="ramulator")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # refused at once (no writer would block the open), pointing to stdin
    with pytest.raises(ValueError, match="pipe a trace to stdin"):
        dram.simulate("ddr3-1600k-bench", fifo)


def test_network_run_does_not_show_unmeasured_fields_as_zeros() -> None:
    # The retired model's host-time split reads 0 in the JSON; the table leaves it out.
    r = CliRunner().invoke(app, ["network", "run", "softnic", "rx"], env={"COLUMNS": "120"})
    assert r.exit_code == 0, r.output
    assert "host_irq" not in r.output and "host_cycles" in r.output


def test_a_rowclone_apps_window_with_no_bulk_work_warns() -> None:
    # 2,000 instructions hold no copy or initialisation: every mechanism gives the same row.
    r = CliRunner().invoke(app, ["reproduce", "--workers", "1", "rowclone-apps", "--instructions", "2000",
                                 "--warmup", "100", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert "holds no copy or initialisation of bootup" in " ".join(r.stderr.split())
