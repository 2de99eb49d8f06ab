"""One entry point for every simulated system: the platform of cores, caches, copy engines,
RowClone and DRAM (``platform``), two such platforms with NICs on one Ethernet link (``cluster``:
name it, e.g. ``simulate("larsen-io", "pair", system="cluster")``: Larsen & Lee's two hosts over
PCIe), and a host core beside small cores and a MAC (``network-io``: two such platforms on one wire,
the host under test and its peer). The retired two-host system ``io-pair`` is refused with what
replaces it.

>>> import movelab
>>> r = movelab.simulate("rowclone-system", "bulk-zero", params={"pages": 16})
>>> r["system"], r["time_ns"] > 0
('platform', True)

``config`` is a built-in preset (its name says which system runs it) or a TOML file (then name the
``system``). ``overrides`` is a dict shaped like the configuration; ``params`` the workload's
parameters (integers; the network system's ``config`` is a configuration's name). The result is
one report for every system: ``system``, ``config``, ``workload``, ``time_ns`` (simulated) and the
system's own ``stats``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from movelab import _core
from movelab.dram import _dict_json, _native_call

__all__ = ["simulate", "systems"]


def systems() -> list[dict[str, Any]]:
    """The systems: name, description, built-in presets, workloads and their parameters."""
    return json.loads(_core.systems())


def simulate(config: str | Path, workload: str, overrides: Mapping[str, Any] | None = None,
             params: Mapping[str, Any] | None = None, system: str | None = None) -> dict[str, Any]:
    """Runs ``workload`` on ``config`` and returns the report (see the module's help)."""
    if not isinstance(config, str | Path):
        raise TypeError(f"config must be a preset name or a path, not {type(config).__name__}")
    if not isinstance(workload, str):
        raise TypeError(f"workload must be a name or a path, not {type(workload).__name__}")
    if system is not None and not isinstance(system, str):
        raise TypeError(f"system must be a name, not {type(system).__name__}")
    ov = None if overrides is None else _dict_json(overrides, "overrides")
    ps = None if params is None else _dict_json(params, "params")
    return json.loads(_native_call(_core.simulate, str(config), workload, system, ov, ps))
