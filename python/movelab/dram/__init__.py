"""The DRAM simulator's Python API.

>>> from movelab import dram
>>> res = dram.simulate("ddr3-1600k-bench", {"kind": "random", "count": 10000, "seed": 1})
>>> res.stats["cycles"] > 0
True

``config`` may be a preset name (``movelab dram presets``), ``"SPEED/PART"``, a path to a TOML file,
a dict shaped like a config (optionally with ``preset = NAME`` to start from one), or a
:class:`Config`. ``trace`` may be a trace file path, a generator spec dict, or a list of items such
as ``("R", 0x1000)``, ``("W", 0x40)``, ``("COPY", src, dst, nbytes)``, ``("INIT", dst, nbytes, value)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from movelab import _core

__all__ = ["Config", "SimResult", "check_log", "flatten", "load_config", "presets", "simulate"]


@dataclass(frozen=True)
class Config:
    """A fully layered simulation config (``data``) and the DRAM spec it resolves to (``spec``)."""

    data: dict[str, Any]
    spec: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps(self.data)

    def with_overrides(self, overrides: dict[str, Any]) -> Config:
        return load_config(self, overrides)


def load_config(config: str | Path | dict[str, Any] | Config, overrides: dict[str, Any] | None = None) -> Config:
    """Builds a :class:`Config`; errors name the file or preset and the key."""
    ov = json.dumps(overrides) if overrides else None
    if isinstance(config, Config):
        raw = _core.dram_config("json", config.to_json(), ov)
    elif isinstance(config, dict):
        raw = _core.dram_config("json", json.dumps(config), ov)
    elif isinstance(config, Path) or (isinstance(config, str) and (config.endswith(".toml") or Path(config).is_file())):
        path = Path(config)
        if not path.is_file():
            raise FileNotFoundError(f"config file {path} does not exist")
        raw = _core.dram_config("file", str(path), ov)
    elif isinstance(config, str):
        raw = _core.dram_config("preset", config, ov)
    else:
        raise TypeError(f"config must be a preset name, a path, a dict or a Config, not {type(config).__name__}")
    d = json.loads(raw)
    return Config(data=d["config"], spec=d["spec"])


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flattens nested dicts into ``a.b.c`` keys (for one-row DataFrames and CSV)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


@dataclass(frozen=True)
class SimResult:
    """The result of a run: ``stats`` is a plain dict (see docs/dram.md, "Stats")."""

    stats: dict[str, Any]
    config: Config

    def to_pandas(self):
        """The stats as a one-row DataFrame with flattened column names."""
        import pandas as pd

        return pd.DataFrame([flatten(self.stats)])

    def to_json(self) -> str:
        return json.dumps(self.stats, indent=2)


def _items_to_native(items: Iterable[Any]) -> str:
    lines = []
    for i, it in enumerate(items):
        if isinstance(it, str):
            lines.append(it)
            continue
        if not isinstance(it, (tuple, list)) or not it:
            raise ValueError(f"trace item {i}: expected a tuple like ('R', addr), got {it!r}")
        op = str(it[0]).upper()
        try:
            args = [int(a) for a in it[1:]]
        except (TypeError, ValueError):
            raise ValueError(f"trace item {i}: arguments must be integers, got {it!r}") from None
        arity = {"R": 1, "W": 1, "COPY": 3, "INIT": 3}.get(op)
        if arity is None:
            raise ValueError(f"trace item {i}: unknown operation {it[0]!r} (R, W, COPY, INIT)")
        if len(args) != arity:
            raise ValueError(f"trace item {i}: {op} takes {arity} arguments, got {len(args)}")
        if any(a < 0 for a in args):
            raise ValueError(f"trace item {i}: negative value in {it!r}")
        lines.append(" ".join([op] + [hex(a) if j < 2 else str(a) for j, a in enumerate(args)]))
    return "\n".join(lines) + "\n"


def simulate(
    config: str | Path | dict[str, Any] | Config,
    trace: str | Path | dict[str, Any] | Iterable[Any],
    *,
    overrides: dict[str, Any] | None = None,
    trace_format: str = "auto",
    command_log: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
    progress_every: int = 100_000,
) -> SimResult:
    """Runs ``trace`` on the memory system ``config`` describes and returns its stats."""
    cfg = load_config(config, overrides)
    if isinstance(trace, dict):
        kind, value = "generator", json.dumps(trace)
    elif isinstance(trace, (str, Path)):
        path = Path(trace)
        if not path.is_file():
            raise FileNotFoundError(f"trace file {path} does not exist")
        kind, value = "file", str(path)
    elif isinstance(trace, Iterable):
        kind, value = "text", _items_to_native(trace)
        if trace_format == "auto":
            trace_format = "native"
    else:
        raise TypeError(
            f"trace must be a file path, a generator dict or a list of items, not {type(trace).__name__}"
        )
    raw = _core.dram_simulate(
        cfg.to_json(),
        kind,
        value,
        trace_format,
        str(command_log) if command_log is not None else None,
        progress,
        max(1, int(progress_every)),
    )
    return SimResult(stats=json.loads(raw), config=cfg)


def check_log(path: str | Path) -> dict[str, Any]:
    """Replays a command log through the independent timing checker; returns its report."""
    return json.loads(_core.dram_check(str(path)))


def presets() -> dict[str, Any]:
    """Built-in speed bins, parts and configuration presets."""
    return json.loads(_core.dram_presets())


def write_trace(generator: dict[str, Any], path: str | Path, fmt: str = "native") -> int:
    """Writes a generated trace to ``path`` in ``fmt`` (native, ramulator, dramsim3)."""
    return int(_core.dram_write_trace(json.dumps(generator), str(path), fmt))
