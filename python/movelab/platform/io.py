"""Larsen & Lee's two hosts from Python, by I/O preset (``presets/io/``): a thin wrapper over the
cluster, the one run loop's way of joining platforms. Each host is a platform (``larsen-io`` with a
descriptor-DMA NIC like the 82598/82599, or ``larsen-io-idma`` with the integrated DMA engine and its
FIFO+PHY adapter) whose device runs on the preset's PCIe link and NIC; the two sit on one Ethernet
link. Host 0 sends messages to host 1; every frame is checked byte for byte on arrival (a run whose
bytes differ is refused). Between two descriptor NICs the receiver sends TCP ACKs back.

>>> from movelab.platform import io
>>> res = io.run("larsen-82598-gen1", count=1, nbytes=64)
>>> round(res.stats["tx_stack"]["total"]) > 0
True

``res.stats`` holds a summary: the time, the devices (``kind``), frames sent, the receiver's checked
bytes (frames with their headers), the sender's first transmit stack (``tx_stack``: doorbell,
descriptor, payload fetch), each host's link bytes by category (``hosts[i].link.categories``:
payload, tlp_overhead, descriptor, doorbell, write_back, interrupt, dllp); ``stats["cluster"]`` is
the whole cluster run (both platforms' statistics and the Ethernet link's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from movelab import _core
from movelab._util import check_value, nested
from movelab.dram import _native_call
from movelab.platform import PlatformResult

__all__ = ["DEVICES", "MAX_BYTES", "MAX_COUNT", "load_config", "presets", "run"]

DEVICES = ("descriptor", "idma")
#: Bounds of a stream: a cluster stream sends at most 250 frames (the rings hold 512 descriptors and
#: the receiver posts its buffers up front); a message up to 64 KiB is one send (the descriptor NIC
#: segments it by TSO; the iDMA takes one frame of at most 9018 B). The run refuses a count and size
#: whose frames exceed that, naming them.
MAX_COUNT = 250
MAX_BYTES = 1 << 16


def presets() -> list[dict[str, Any]]:
    """The built-in I/O platforms (``presets/io/``): name, description, source, gen, lanes, nic."""
    return json.loads(_core.io_presets())


def _overrides(overrides: Any) -> str | None:
    if overrides is None:
        return None
    if not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like an I/O config (e.g. {{'link': {{'gen': 2}}}}), "
                        f"not {type(overrides).__name__}")
    overrides = nested(overrides)
    check_value(dict(overrides), "overrides")
    return json.dumps(dict(overrides))


def load_config(platform: str, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An I/O platform's config (a built-in name or a TOML path) after ``overrides``."""
    if not isinstance(platform, str):
        raise TypeError(f"platform must be an I/O preset name or a TOML path, not {type(platform).__name__}")
    return json.loads(_native_call(_core.io_platform_config, platform, _overrides(overrides)))


def run(platform: str, count: int = 1, nbytes: int = 64, devices: tuple[str, str] | list[str] | None = None,
        overrides: Mapping[str, Any] | None = None) -> PlatformResult:
    """Host 0 sends ``count`` messages of ``nbytes`` (TCP payload) to host 1, both devices on I/O
    preset ``platform``, on the cluster; ``devices`` gives each host's device (``"descriptor"`` or
    ``"idma"``; default: the preset's ``nic.kind``). ``overrides`` change the preset's ``link`` and
    ``nic`` keys (e.g. ``{"link": {"gen": 2}}``); other sections are refused by name."""
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
