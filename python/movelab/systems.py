"""One entry point for every simulated system: the platform of cores, caches, copy engines,
RowClone and DRAM (``platform``), two such platforms with NICs on one Ethernet link (``cluster``:
name it, e.g. ``simulate("larsen-io", "pair", system="cluster")``: Larsen & Lee's two hosts over
PCIe), a host core beside small cores and a MAC (``network-io``: two such platforms on one wire,
the host under test and its peer), and an I/O preset's device streaming messages between two such
hosts (``nic-stream``: the workload of the I/O presets, :func:`movelab.platform.io.run`; params
``count`` and ``bytes``). The retired two-host system ``io-pair`` is refused with what replaces it.

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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from movelab import _core
from movelab._util import check_progress
from movelab.dram import _dict_json, _native_call

__all__ = ["simulate", "systems"]


#: The I/O presets' system: their one workload streams messages between two hosts on one link.
NIC_STREAM = "nic-stream"
NIC_STREAM_PARAMS = {"count": 1, "bytes": 64}


def systems() -> list[dict[str, Any]]:
    """The systems: name, description, built-in presets, workloads and their parameters. Every
    built-in preset is listed, read from the presets themselves (the I/O presets, ``presets/io``,
    under ``nic-stream``)."""
    from movelab.platform import io

    out = json.loads(_core.systems())
    params = ", ".join(f"{k}={v}" for k, v in NIC_STREAM_PARAMS.items())
    out.append({"name": NIC_STREAM,
                "about": "an I/O preset's device (a descriptor-DMA NIC or the integrated DMA engine) on its PCIe link "
                         "in each of two hosts on one Ethernet link: host 0 streams count messages of bytes to host 1, "
                         "every frame checked on arrival (movelab.platform.io.run)",
                "presets": [p["name"] for p in io.presets()],
                "workloads": [{"name": NIC_STREAM, "params": params}]})
    return out


def _nic_stream(config: str, workload: str, overrides: Mapping[str, Any] | None,
                params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``nic-stream`` on an I/O preset, as the one report."""
    from movelab.platform import io

    if workload != NIC_STREAM:
        raise ValueError(f"{config}: '{workload}' is not a workload of the {NIC_STREAM} system, whose one workload "
                         f"is {NIC_STREAM}")
    p = dict(params or {})
    unknown = sorted(set(p) - set(NIC_STREAM_PARAMS))
    if unknown:
        raise ValueError(f"params.{unknown[0]}: unknown parameter of {NIC_STREAM} (known: "
                         f"{', '.join(NIC_STREAM_PARAMS)})")
    try:
        res = io.run(config, p.get("count", NIC_STREAM_PARAMS["count"]), p.get("bytes", NIC_STREAM_PARAMS["bytes"]),
                     overrides=overrides or None)
    except ValueError as e:
        msg = str(e)
        for name, key in (("nbytes", "bytes"), ("count", "count")):
            if msg.startswith(f"{name}: "):
                msg = f"params.{key}: {msg.removeprefix(name + ': ')}"
        raise ValueError(msg) from None
    return {"system": NIC_STREAM, "config": str(config), "workload": workload, "time_ns": res.stats["time_ns"],
            "stats": res.stats}


def simulate(config: str | Path, workload: str, overrides: Mapping[str, Any] | None = None,
             params: Mapping[str, Any] | None = None, system: str | None = None,
             progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Runs ``workload`` on ``config`` and returns the report (see the module's help).
    ``progress(done, planned)``, if given, is called now and then with the operations fed to the
    cores so far and in all (the platform and cluster systems; an exception it raises stops the
    run)."""
    if not isinstance(config, str | Path):
        raise TypeError(f"config must be a preset name or a path, not {type(config).__name__}")
    if not isinstance(workload, str):
        raise TypeError(f"workload must be a name or a path, not {type(workload).__name__}")
    if system is not None and not isinstance(system, str):
        raise TypeError(f"system must be a name, not {type(system).__name__}")
    ov = None if overrides is None else _dict_json(overrides, "overrides")
    ps = None if params is None else _dict_json(params, "params")
    check_progress(progress, "the operations done and the operations planned")
    if system == NIC_STREAM or (system is None and workload == NIC_STREAM):
        return _nic_stream(str(config), workload, overrides, params)
    try:
        out = _native_call(_core.simulate, str(config), workload, system, ov, ps, progress)
    except ValueError as e:
        if system is not None and str(e).startswith("unknown system "):
            # The native side knows its own systems; nic-stream is run from here.
            known = [s["name"] for s in json.loads(_core.systems())]
            raise ValueError(f"unknown system '{system}' (known: {', '.join([*known, NIC_STREAM])})") from None
        raise
    return json.loads(out)
