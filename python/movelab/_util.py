"""Small helpers shared by the CLI groups: parsing ``--set`` overrides, safe output paths, JSON output."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import typer


def parse_set(items: list[str] | None) -> dict[str, Any]:
    """Turns ``["dram.timing.nRAS=30", "controller.scheduler=fcfs"]`` into a nested dict.

    Values are read as TOML literals (numbers, booleans, quoted strings); anything else is a string.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise typer.BadParameter(f"'{item}' is not KEY=VALUE (e.g. dram.timing.nRAS=30)", param_hint="--set")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key or any(not part for part in key.split(".")):
            raise typer.BadParameter(f"'{item}': empty key", param_hint="--set")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise typer.BadParameter(f"'{key}' sets inside a value that is not a table", param_hint="--set")
            node = child
        node[parts[-1]] = value
    return out


def output_path(path: Path | None, force: bool, what: str) -> Path | None:
    """Refuses to overwrite an existing file unless ``force``."""
    if path is None:
        return None
    if path.exists() and not force:
        raise typer.BadParameter(f"{path} exists; pass --force to overwrite it", param_hint=what)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=False))
