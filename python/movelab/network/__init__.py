"""The network platform's Python API: Wun & Crowley's emu nic, softnic or onloader against an
iperf-UDP peer, run on the one platform - two ``ixp-host`` platforms (a host core beside
microengines and their MAC) on one wire - with the settings of the network platform
(``presets/network/ixp2350.toml``; docs/onload-sim.md).

>>> from movelab import network
>>> s = network.run("onloader", "rx", 1472, overrides={"wire": {"duration_us": 2000.0}})
>>> 0 < s["throughput_mbps"] < s["offered_mbps"]
True

``overrides`` is a dict shaped like the network platform (``{"host": {"clock_mhz": 600.0}}``); only
the keys that reach the platform may be set (:data:`PLATFORM_KEYS`), any other is refused by name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from movelab import _core
from movelab._util import nested
from movelab.dram import _dict_json, _native_call

__all__ = ["CONFIGS", "DIRECTIONS", "PLATFORM_KEYS", "config", "presets", "run"]

CONFIGS = ["emu", "softnic", "onloader"]
DIRECTIONS = ["rx", "tx"]
#: The network platform's keys that reach the one platform.
PLATFORM_KEYS = {"small_cores": {"clock_mhz", "threads", "rx_cores", "tx_cores"},
                 "host": {"clock_mhz", "cpi", "app_per_datagram", "onload_send", "l2_push", "mapping_cache"},
                 "wire": {"gbps", "duration_us"}}
#: UDP payload bytes: iperf's header needs 16; one 1500-byte Ethernet frame holds 1472.
MIN_PAYLOAD, MAX_PAYLOAD = 16, 1472


def presets() -> list[str]:
    """The built-in network platforms."""
    return list(_core.network_presets())


def _ov(overrides: Mapping[str, Any] | None) -> str | None:
    return None if overrides is None else _dict_json(nested(overrides), "overrides")


def config(platform: str = "ixp2350", overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The platform (a built-in name or a TOML path) after ``overrides``, every value filled in."""
    if not isinstance(platform, str):
        raise TypeError(f"platform must be a name or a path, not {type(platform).__name__}")
    return json.loads(_native_call(_core.network_config, platform, _ov(overrides)))


def run(config: str, direction: str, payload: int, with_app: bool = True, platform: str = "ixp2350",
        overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One run on the one platform: ``config`` ("emu", "softnic" or "onloader"), ``direction`` "rx"
    or "tx", ``payload`` UDP bytes; ``with_app=False`` runs the onloader's receive blocks alone. The
    statistics: ``throughput_mbps`` (iperf's figure at the receiver), ``offered_mbps``,
    sent/delivered/lost and where packets were dropped (``rbuf_drops``), the interrupts the host
    under test took, the microengines' busy shares, the bytes checked, and ``hosts`` and ``links``:
    both platforms' full statistics (the host under test first) and the wire's. The host-time split
    of the retired network model (``host_irq`` .. ``host_idle``) is not measured on the platform
    and reads 0 (the host core's own figures are ``host_instructions``, ``host_cycles``)."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction: '{direction}' is not one of {', '.join(DIRECTIONS)}")
    if isinstance(payload, bool) or not isinstance(payload, int) or not MIN_PAYLOAD <= payload <= MAX_PAYLOAD:
        raise ValueError(f"payload: {payload!r} must be an integer from {MIN_PAYLOAD} to {MAX_PAYLOAD}")
    if not isinstance(with_app, bool):
        raise TypeError(f"with_app must be True or False, not {type(with_app).__name__}")
    if not isinstance(config, str) or not isinstance(platform, str):
        raise TypeError("config and platform must be strings")
    return json.loads(_native_call(_core.network_run, config, direction, payload, with_app, platform,
                                   _ov(overrides)))
