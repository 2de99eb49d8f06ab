"""Paper reproductions."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from movelab import _core

# presets/ of the source tree (the package is installed editable from python/).
PRESETS = Path(__file__).resolve().parents[3] / "presets"


def paper_data(name: str) -> dict[str, Any]:
    """The published figures of paper ``name`` (``presets/papers/NAME.toml``): the file in the source
    tree when there is one, else the copy built into the extension; ``{}`` when neither exists."""
    path = PRESETS / "papers" / f"{name}.toml"
    if path.is_file():
        return tomllib.loads(path.read_text())
    try:
        return tomllib.loads(_core.paper_data(name))
    except ValueError:
        return {}


def fraction(v: Any, digits: int = 1) -> str:
    """0.146 -> '14.6'; None -> '-'."""
    return "-" if v is None else f"{v * 100:.{digits}f}"
