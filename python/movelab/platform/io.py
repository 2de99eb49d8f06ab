"""The I/O model's Python API: two hosts, each with a root complex, a PCIe link and a device (a
descriptor-DMA NIC like the 82598/82599, or the integrated DMA engine with a FIFO+PHY adapter),
on a 10 Gb/s wire. Host 0 sends messages to host 1; every frame is byte-checked on arrival.

>>> from movelab.platform import io
>>> res = io.run("larsen-82598-gen1", count=1, nbytes=64)
>>> round(res.stats["tx_stack"]["total"]) > 0
True

``res.stats`` holds the time, each host's link bytes by category (``hosts[i].link.categories``:
payload, tlp_overhead, descriptor, doorbell, write_back, interrupt, dllp; and per direction and
purpose), the root complex's, NIC's or iDMA's counters, the driver's, every message's latency,
and the transmit latency stack of the first message (``tx_stack``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from movelab import _core
from movelab._util import check_value
from movelab.dram import _native_call
from movelab.platform import PlatformResult

__all__ = ["DEVICES", "MAX_BYTES", "MAX_COUNT", "load_config", "presets", "run"]

DEVICES = ("descriptor", "idma")
#: Bounds of a stream: the model has no retransmission, so the sender's window is bounded by the
#: receiver's RX FIFO and a message over 64 KiB is cut into sends of whole segments (docs/io.md);
#: 100,000 messages and 1 MiB run (measured) and bound the run's time and memory.
MAX_COUNT = 100_000
MAX_BYTES = 1 << 20


def presets() -> list[dict[str, Any]]:
    """The built-in I/O platforms (``presets/io/``): name, description, source, gen, lanes, nic."""
    return json.loads(_core.io_presets())


def _overrides(overrides: Any) -> str | None:
    if overrides is None:
        return None
    if not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like an I/O config (e.g. {{'link': {{'gen': 2}}}}), "
                        f"not {type(overrides).__name__}")
    check_value(dict(overrides), "overrides")
    return json.dumps(dict(overrides))


def load_config(platform: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An I/O platform's config (a built-in name or a TOML path) after ``overrides``."""
    if not isinstance(platform, str):
        raise TypeError(f"platform must be an I/O preset name or a TOML path, not {type(platform).__name__}")
    return json.loads(_native_call(_core.io_platform_config, platform, _overrides(overrides)))


def run(platform: str, count: int = 1, nbytes: int = 64, devices: tuple[str, str] | list[str] | None = None,
        overrides: Mapping[str, Any] | None = None) -> PlatformResult:
    """Host 0 sends ``count`` messages of ``nbytes`` to host 1 on I/O platform ``platform``;
    ``devices`` gives each host's device (``"descriptor"`` or ``"idma"``; default: the config's)."""
    if not isinstance(platform, str):
        raise TypeError(f"platform must be an I/O preset name or a TOML path, not {type(platform).__name__}")
    for name, v, most in [("count", count, MAX_COUNT), ("nbytes", nbytes, MAX_BYTES)]:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= most:
            raise ValueError(f"{name}: {v!r} must be an integer from 1 to {most:,}")
    devs = None
    if devices is not None:
        devs = list(devices)
        if len(devs) != 2 or any(d not in DEVICES for d in devs):
            raise ValueError(f"devices: {devices!r} must be two of {', '.join(DEVICES)} (host 0, host 1)")
    out = _native_call(_core.io_run, platform, count, nbytes, devs, _overrides(overrides))
    return PlatformResult(stats=json.loads(out))
