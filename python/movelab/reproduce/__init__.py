"""Paper reproductions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from movelab import data


def paper_data(name: str) -> dict[str, Any]:
    """The published figures of paper ``name`` (``presets/papers/NAME.toml``, found by
    :mod:`movelab.data`)."""
    return data.paper(name)


def check_overrides(overrides: Any, platforms: list[str]) -> None:
    """Refuses ``overrides`` that any of ``platforms`` (the built-in platforms a reproduction runs
    on) would refuse, before its points start: the error names the key, once, instead of every
    point failing with it."""
    if overrides:
        from movelab.platform import load_config

        for p in platforms:
            load_config(p, overrides)


def fraction(v: Any, digits: int = 1) -> str:
    """0.146 -> '14.6'; None -> '-'."""
    return "-" if v is None else f"{v * 100:.{digits}f}"


def table(title: str, caption: str | None = None, tight: bool = False) -> Table:
    """A reproduction table. tight: columns one space apart (the box's divider), so a wide table
    fits 80 columns."""
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=0 if tight else (0, 1))
    t.title, t.caption = title, caption  # printed by group(), outside the table's width
    return t


def group(t: Table) -> Group:
    """A table with its title above and its caption below, each as wide as the console allows. A
    cell too wide for a narrow console folds onto the next line: no case name, label or number is
    cut short."""
    for c in t.columns:
        if c.overflow == "ellipsis":
            c.overflow = "fold"
    parts = [Text(t.title or "", style="bold"), t]
    t.title = None
    if t.caption:
        parts.append(Text(str(t.caption), style="dim"))
        t.caption = None
    return Group(*parts, Text(""))


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (the reproductions write PNGs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def write_csv(path: Path, rows: list[dict[str, Any]], keys: list[str]) -> None:
    """Rows as CSV with columns ``keys``; a list in a cell is written as JSON."""
    import csv
    import json

    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()})


def write_rows(rows: list[dict[str, Any]], out: Path, name: str, keys: list[str]) -> list[Path]:
    """``NAME.json`` and ``NAME.csv`` in ``out`` (created); returns their paths. The rows' label
    columns (``basis``, ``basis_*``: calibrated, predicted or not reproduced) are written whether
    or not ``keys`` names them."""
    import json

    from movelab.reproduce.ledger import basis_columns

    keys = list(keys) + [k for k in basis_columns(rows) if k not in keys]

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{name}.json", out / f"{name}.csv"]
    paths[0].write_text(json.dumps(rows, indent=2))
    write_csv(paths[1], rows, keys)
    return paths
