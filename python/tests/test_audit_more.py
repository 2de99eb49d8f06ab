"""The audit's remaining low defects, each as the property it breaks: every help text shows its
defaults and no stray " ." (brackets in help are not eaten as markup), every CLI command is in the
README's tour, a workload that rings doorbells on a platform with no device says so, and the
larsen-idma stack plot has a legend entry for every segment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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
