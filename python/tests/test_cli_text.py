"""What a new user reads: the README's examples run and show what they claim, tables fit 80
columns without cutting names, and no user-facing text points at issue numbers or files outside
the repository."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from movelab import dram, platform
from movelab.cli import app
from typer.testing import CliRunner

README = Path(__file__).resolve().parents[2] / "README.md"
OUTSIDE = re.compile(r"\bissue \d+\b|\.\./shared|shared/seeds|shared/reference|[\w-]+-facts(-modern)?\.md|"
                     r"the facts page|the issue's|/work/")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README.read_text(), re.S)


def test_the_readme_rowclone_example_is_a_rowclone_fpm() -> None:
    code = _blocks("python")[0].split("from movelab import platform")[0]
    ns: dict = {}
    exec(code, ns)  # the README's own lines
    b = ns["res"].stats["bulk"]
    assert b["bytes"]["fpm"] == 8192 and b["bytes"]["baseline"] == 0, b["bytes"]
    assert b["latency"]["p50_ns"] == 90.0


def test_every_file_the_readme_tour_reads_is_made_by_an_earlier_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    lines = [ln.split("#")[0].strip() for ln in _blocks("")[1].splitlines()]
    lines = [ln for ln in lines if ln.startswith("movelab dram")]
    ran = 0
    for ln in lines:
        args = shlex.split(ln)[1:]
        if args[:2] == ["dram", "run"] and "--generate" in args:
            continue  # the million-request run: the same code as the generated-trace run below
        if "--count" in args:
            args[args.index("--count") + 1] = "2000"
        r = runner.invoke(app, args)
        assert r.exit_code == 0, f"{ln}:\n{r.output}"
        ran += 1
    assert ran >= 5 and (tmp_path / "trace.txt").is_file() and (tmp_path / "cmds.log").is_file()


def test_presets_fit_80_columns_without_cutting_a_name() -> None:
    out = CliRunner(env={"COLUMNS": "80"}).invoke(app, ["dram", "presets"]).output
    assert max(len(ln) for ln in out.splitlines()) <= 80
    p = dram.presets()
    names = [s["name"] for s in p["speeds"]] + [s["name"] for s in p["parts"]] + [c["name"] for c in p["configs"]]
    for name in names:
        assert re.search(rf"(^|\s){re.escape(name)}(\s|$)", out, re.M), f"{name} cut off:\n{out}"
    assert "…" not in out


def _help_texts() -> list[tuple[str, str]]:
    import typer.main

    out = []

    def walk(cmd, path):
        out.append((path, cmd.help or ""))
        for p in getattr(cmd, "params", []):
            out.append((f"{path} {getattr(p, 'opts', [''])[0]}", getattr(p, "help", "") or ""))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "movelab")
    return out


@pytest.mark.parametrize("source", ["help", "dram presets", "platform presets", "readme"])
def test_no_user_facing_text_points_outside_the_repository(source: str) -> None:
    if source == "help":
        texts = _help_texts()
    elif source == "dram presets":
        texts = [("dram presets", json.dumps(dram.presets()))]
    elif source == "platform presets":
        texts = [("platform presets", json.dumps(platform.presets()))]
    else:
        texts = [("README.md", README.read_text())]
        texts += [(f"docs/{p.name}", p.read_text()) for p in sorted((README.parent / "docs").glob("*.md"))]
    bad = [(where, m.group(0)) for where, text in texts for m in OUTSIDE.finditer(text)]
    assert not bad, bad


def test_a_commands_summary_in_its_groups_list_is_not_cut_mid_phrase() -> None:
    # The summaries keep no line break of their docstrings: each wraps as one paragraph at the
    # panel's width (a docstring's break used to start a new line after "simulated cycles and").
    runner = CliRunner(env={"COLUMNS": "100"})
    out = runner.invoke(app, ["bench", "-h"]).output
    text = " ".join(ln.strip("│ ").strip() for ln in out.splitlines())
    assert "simulated cycles and peak memory; with --ramulator" in " ".join(text.split()), out
    lines = [ln for ln in out.splitlines() if "simulated cycles and" in ln]
    assert lines and not lines[0].rstrip(" │").endswith("simulated cycles and"), out
    out = CliRunner(env={"COLUMNS": "200"}).invoke(app, ["reproduce", "-h"]).output
    assert "section 6 and the small cores' own limits (section 7)." in out, out
