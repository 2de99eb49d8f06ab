"""The platform simulator's Python API: a core with caches, an interconnect, a memory system (the
DRAM model) and a copy mechanism (the core's loads and stores, a copy engine, RowClone, MC-DMA),
running a workload.

>>> from movelab import platform
>>> res = platform.run("rowclone-system", "bulk-zero", params={"pages": 16})
>>> res.stats["time_ns"] > 0
True

``platform`` may be a built-in name (``movelab platform presets``), a path to a TOML file, or a dict
shaped like a platform config with ``preset = NAME`` naming the platform it starts from.
``overrides`` is a dict shaped like a platform config (``{"copy": {"mechanism": "ce"}}``) or with ``--set``'s
dotted keys (``{"copy.mechanism": "ce"}``), mixed freely.
``workload`` is a built-in name or a TOML path; ``params`` sets its integer parameters.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from movelab import _core
from movelab._util import check_progress, check_value, input_path, layered, nested
from movelab.dram import _native_call, flatten

__all__ = ["ENGINE_KEYS", "PairResult", "PlatformResult", "load_config", "pair", "presets", "run", "to_toml"]

#: The ``[copy]`` keys only a copy engine reads (placement, mode, its buffer, latencies, ...).
ENGINE_KEYS: tuple[str, ...] = tuple(json.loads(_core.platform_engine_keys()))

PlatformLike = str | Path | Mapping[str, Any]


def presets() -> dict[str, Any]:
    """Built-in platforms (name, description, source, core, interconnect) and workloads (name,
    description, default parameters)."""
    return json.loads(_core.platform_presets())


def _check_overrides(overrides: Any, what: str = "overrides") -> dict[str, Any]:
    if overrides is None:
        return {}
    if not isinstance(overrides, Mapping):
        raise TypeError(f"{what} must be a dict shaped like a platform config "
                        f"(e.g. {{'copy': {{'mechanism': 'ce'}}}}), not {type(overrides).__name__}")
    for k in overrides:
        if not isinstance(k, str):
            raise TypeError(f"{what}: keys must be strings, got {k!r}")
    overrides = nested(overrides, what)
    check_value(dict(overrides), what)
    # The memory controller's keys the platform derives from its copy settings are refused by the
    # platform's own checks, whether a file or an override gives them.
    return dict(overrides)


def _source(platform: Any, overrides: Any) -> tuple[str, str | None]:
    """The binding's (platform, overrides JSON) for any accepted ``platform``."""
    ov = _check_overrides(overrides)
    if isinstance(platform, Mapping):
        d = _check_overrides(platform, "platform")
        name = d.pop("preset", None)
        if not isinstance(name, str) or not name:
            raise ValueError("platform: a dict must say which platform it starts from with 'preset' "
                             "(e.g. {'preset': 'zhao-uma-emc', 'core': {'kind': 'in-order'}})")
        if d:
            # The dict's own keys checked alone, so that an error names the platform dict (the
            # merged overrides would be blamed for a key the overrides never held).
            try:
                _native_call(_core.platform_config, name, json.dumps(d, allow_nan=False))
            except ValueError as e:
                msg = str(e)
                raise ValueError("platform: " + msg.removeprefix("overrides: ") if msg.startswith("overrides: ")
                                 else msg) from None
        ov = layered(d, ov)
        platform = name
    if isinstance(platform, Path) or (isinstance(platform, str) and platform.endswith(".toml")):
        platform = str(input_path(platform, "platform"))
    elif not isinstance(platform, str):
        raise TypeError(f"platform must be a built-in name, a TOML path or a dict with 'preset', "
                        f"not {type(platform).__name__}")
    return platform, (json.dumps(ov, allow_nan=False) if ov else None)


def load_config(platform: PlatformLike, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The full platform config after presets and overrides; errors name the file or preset and the key."""
    name, ov = _source(platform, overrides)
    return json.loads(_native_call(_core.platform_config, name, ov))


def _check_params(params: Any) -> str | None:
    if params is None:
        return None
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a dict of workload parameters (e.g. {{'packets': 100}}), "
                        f"not {type(params).__name__}")
    out: dict[str, int] = {}
    for k, v in params.items():
        if not isinstance(k, str):
            raise TypeError(f"params: parameter names must be strings, got {k!r}")
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"params[{k!r}] must be an integer, got {v!r}")
        if v < 0 or v >= 1 << 64:
            raise ValueError(f"params[{k!r}] must be a non-negative 64-bit integer, got {v}")
        out[k] = int(v)
    return json.dumps(out) if out else None


def _workload(workload: Any) -> str:
    if isinstance(workload, Path) or (isinstance(workload, str) and workload.endswith(".toml")):
        return str(input_path(workload, "workload"))
    if not isinstance(workload, str):
        raise TypeError(f"workload must be a built-in name or a TOML path, not {type(workload).__name__}")
    return workload


@dataclass(frozen=True)
class PlatformResult:
    """The result of a platform run: ``stats`` is a plain dict (time, IPC, offloads, caches, memory
    traffic and FMTC, and the DRAM model's own stats under ``dram``)."""

    stats: dict[str, Any]

    def flat(self) -> dict[str, Any]:
        """The scalar stats with ``a.b.c`` keys."""
        return {k: v for k, v in flatten(self.stats).items() if v is None or isinstance(v, (str, int, float))}

    def to_pandas(self):
        """The scalar stats as a one-row DataFrame with flattened column names."""
        import pandas as pd

        return pd.DataFrame([self.flat()])

    def to_json(self) -> str:
        return json.dumps(self.stats, indent=2)


def run(
    platform: PlatformLike,
    workload: str | Path,
    overrides: Mapping[str, Any] | None = None,
    params: Mapping[str, int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> PlatformResult:
    """Runs ``workload`` with ``params`` on ``platform`` with ``overrides``. An override that
    nothing on the platform reads (a copy engine's ``copy.mode`` on a platform without a copy
    engine) raises ``ValueError`` naming the key: the run would otherwise look as if it took it.
    ``progress(done, planned)``, if given, is called now and then with the operations fed to the
    cores so far and the operations the run feeds in all (an exception it raises stops the run)."""
    return _run(platform, workload, overrides, params, progress=progress)


def _run(platform: PlatformLike, workload: str | Path, overrides: Mapping[str, Any] | None = None,
         params: Mapping[str, int] | None = None, unread_ok: bool = False,
         progress: Callable[[int, int], None] | None = None) -> PlatformResult:
    """:func:`run`; with ``unread_ok``, overrides nothing reads are let through, for callers that
    lay their own mechanism settings over a user's (a sweep's cross product, a replay under every
    mechanism), where a copy engine's keys stay unread in the runs without one on purpose."""
    check_progress(progress, "the operations done and the operations planned")
    name, ov = _source(platform, overrides)
    w = _workload(workload)
    p = _check_params(params)
    return PlatformResult(stats=json.loads(_native_call(_core.platform_run, name, w, ov, p, unread_ok,
                                                        progress)))


def _in_range(name: str, v: Any, lo: float, hi: float, integer: bool = False) -> None:
    """Raises ``TypeError`` or ``ValueError`` naming argument ``name`` unless ``lo <= v <= hi``."""
    ok = (int,) if integer else (int, float)
    if isinstance(v, bool) or not isinstance(v, ok):
        raise TypeError(f"{name} must be {'an integer' if integer else 'a number'}, not {v!r}")
    if not (isinstance(v, int) or math.isfinite(v)) or not lo <= v <= hi:
        raise ValueError(f"{name} = {v}: must be in {lo:g}..{hi:g}")


@dataclass(frozen=True)
class PairResult:
    """Two platforms on one Ethernet link: ``stats["hosts"]`` holds each platform's statistics (the
    sender first), ``stats["links"]`` what the link carried (frames, bytes, busy time, and each
    frame's passage: direction, ns it started on the wire, ns its last bit arrived)."""

    stats: dict[str, Any]

    @property
    def sender(self) -> dict[str, Any]:
        return self.stats["hosts"][0]

    @property
    def receiver(self) -> dict[str, Any]:
        return self.stats["hosts"][1]

    def summary(self) -> dict[str, Any]:
        """The figures of a pair run: frames sent and landed, bytes checked and wrong, the first
        frame's transmit stack and passage, and when the receiver finished."""
        tx = (self.sender.get("devices") or [{}])[0]
        rx = (self.receiver.get("devices") or [{}])[0]
        link = self.stats["links"][0]
        first = link["passages"][0] if link["passages"] else None
        landed = (rx.get("nic") or {}).get("rx_frames", 0)
        agent = next((a for a in self.receiver.get("agents", []) if a.get("device") is not None), {})
        span = agent.get("last_done_ns", 0.0) - (first[1] if first else 0.0)
        small = agent.get("small_cores")
        return {
            "frames_sent": tx.get("frames", 0),
            "frames_landed": landed,
            "frames_dropped": (rx.get("nic") or {}).get("rx_drops", 0),
            "receive_gbps": rx.get("rx_bytes_checked", 0) * 8 / span if span > 0 and landed else None,
            "small_core_busy": small["busy_share"] if small else None,
            "bytes_checked": rx.get("rx_bytes_checked", 0),
            "bytes_wrong": rx.get("rx_bytes_wrong", 0),
            "tx_stack_ns": dict(tx.get("tx_stack", [])),
            "wire_start_ns": first[1] if first else None,
            "wire_arrival_ns": first[2] if first else None,
            "propagation_ns": link["propagation_ns"],
            "receiver_interrupts": rx.get("interrupts", 0),
            "receiver_done_ns": self.receiver["time_ns"],
            "link_busy_share": (link["a_to_b"]["busy_ps"] / 1000 / self.sender["time_ns"]
                                if self.sender["time_ns"] > 0 else 0.0),
        }

    def to_json(self) -> str:
        return json.dumps(self.stats, indent=2)


#: The agent kinds with an Ethernet port, and where each keeps its MAC's rate.
_PORT_RATE = {"nic": ("nic", "mac_gbps"), "idma": ("nic", "mac_gbps"), "microengines": (None, "mac_gbps")}


def _port_rate(platform: PlatformLike, ov: dict[str, Any], gbps: float) -> dict[str, Any]:
    """``ov`` with every port of ``platform`` (its ``[io]`` device and listed NICs, iDMAs and
    microengines) set to ``gbps``."""
    cfg = load_config(platform, ov)
    if cfg.get("io") is not None:
        ov = layered(ov, {"io": {"nic": {"mac_gbps": gbps}}})
    agents = [dict(a) for a in cfg.get("agents") or []]
    changed = False
    for a in agents:
        where = _PORT_RATE.get(a.get("kind", ""))
        if where is None:
            continue
        params = dict(a.get("params") or {})
        table, key = where
        if table is None:
            params[key] = gbps
        else:
            params[table] = {**dict(params.get(table) or {}), key: gbps}
        a["params"] = params
        changed = True
    if changed:
        ov = {**ov, "agents": agents}
    return ov


def _frame_size(platform: PlatformLike, ov: dict[str, Any], frame_bytes: int) -> dict[str, Any]:
    """``ov`` with the frame size of ``platform``'s devices (its ``[io]`` NIC and listed iDMAs) set to
    ``frame_bytes``; microengines take any frame up to their buffers' stride and are left as they are."""
    cfg = load_config(platform, ov)
    if cfg.get("io") is not None:
        ov = layered(ov, {"io": {"frame_bytes": frame_bytes}})
    agents = [dict(a) for a in cfg.get("agents") or []]
    if any(a.get("kind") == "idma" for a in agents):
        for a in agents:
            if a.get("kind") == "idma":
                a["params"] = {**dict(a.get("params") or {}), "frame_bytes": frame_bytes}
        ov = {**ov, "agents": agents}
    return ov


def pair(
    sender: PlatformLike = "larsen-io",
    receiver: PlatformLike = "larsen-io",
    messages: int = 8,
    frame_bytes: int | None = None,
    meters: float = 3.0,
    ns_per_meter: float = 5.0,
    sender_overrides: Mapping[str, Any] | None = None,
    receiver_overrides: Mapping[str, Any] | None = None,
    tx_params: Mapping[str, int] | None = None,
    rx_params: Mapping[str, int] | None = None,
    progress: Any = None,
    gbps: float | None = None,
) -> PairResult:
    """Two platforms joined by an Ethernet link between their NICs (Larsen & Lee's two hosts): the
    sender runs ``nic-tx`` (``messages`` frames of ``frame_bytes``), the receiver ``nic-rx`` (it posts
    RX buffers; its interrupt handler takes each frame). Each platform's device with a port is used: a
    descriptor NIC (``larsen-io``) or the iDMA's adapter (``larsen-io-idma``). Both ports must run at
    one rate and the receiver's device needs ``rx_ring`` and ``rx_buffers`` (and the iDMA its
    ``pinned`` buffer; both presets have them), or microengines with their MAC (``ixp-host``). Both ports
    run at one rate: ``gbps`` sets it on both (else each platform's own, which must agree). Every byte that
    lands is checked against the frames that came off the wire (``bytes_wrong`` is 0); frames a receiver's
    microengines had no RBUF room for are dropped and counted (``frames_dropped``)."""
    _in_range("messages", messages, 0, 1_000_000, integer=True)
    _in_range("meters", meters, 0.0, 100_000.0)
    _in_range("ns_per_meter", ns_per_meter, 0.0, 100.0)
    so = dict(_check_overrides(sender_overrides, "sender_overrides"))
    ro = dict(_check_overrides(receiver_overrides, "receiver_overrides"))
    # One setting given two ways would have one of them dropped without a word: refused.
    if "messages" in (tx_params or {}):
        raise ValueError("tx_params: 'messages' is the messages argument (--messages on the command line); "
                         "give the frame count there")
    if frame_bytes is not None:
        _in_range("frame_bytes", frame_bytes, 14, 9018, integer=True)
        for name, ov in (("sender_overrides", so), ("receiver_overrides", ro)):
            if isinstance(ov.get("io"), Mapping) and "frame_bytes" in ov["io"]:
                raise ValueError(f"{name}: io.frame_bytes and frame_bytes (--frame-bytes) both give the frame size; "
                                 "give one")
        so = _frame_size(sender, so, frame_bytes)
        # A receiver with microengines has no [io]: its RX buffers take any frame up to their stride.
        ro = _frame_size(receiver, ro, frame_bytes)
    if gbps is not None:
        _in_range("gbps", gbps, 0.001, 1000.0)
        so = _port_rate(sender, so, float(gbps))
        ro = _port_rate(receiver, ro, float(gbps))
    for side, plat, ov in (("sender", sender, so), ("receiver", receiver, ro)):
        # Each side's config is checked first, so that an error says which side it is.
        try:
            load_config(plat, ov)
        except ValueError as e:
            # The frame size comes back as the device's own key (io.frame_bytes, or an iDMA agent's
            # agents[i].params.frame_bytes): say which argument set it.
            if frame_bytes is not None and "frame_bytes" in str(e):
                raise ValueError(f"frame_bytes {frame_bytes} (--frame-bytes) on the {side}: {e}") from None
            # Likewise the line rate, which the device takes as its MAC's (a NIC's range is narrower
            # than microengines').
            if gbps is not None and "mac_gbps" in str(e):
                raise ValueError(f"gbps {gbps} (--gbps) on the {side}: {e}") from None
            raise ValueError(f"{side}: {e}") from None
    check_progress(progress, "one number (how far the run has got)")
    sname, sov = _source(sender, so)
    rname, rov = _source(receiver, ro)
    tp = dict(tx_params or {})
    tp.setdefault("messages", messages)
    stats = json.loads(_native_call(_core.platform_pair, sname, rname, "nic-tx", "nic-rx", _check_params(tp),
                                    _check_params(rx_params), sov, rov, float(meters), float(ns_per_meter),
                                    "", progress))
    return PairResult(stats=stats)


# ------------------------------------------------------------------------------------------------
# TOML output (the standard library reads TOML but does not write it)

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items() if x is not None) + " }"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def to_toml(d: Mapping[str, Any], _prefix: str = "") -> str:
    """Writes a nested dict as TOML (None values are left out, as TOML has no null)."""
    lines = [f"{_key(k)} = {_value(v)}" for k, v in d.items() if v is not None and not isinstance(v, Mapping)]
    for k, v in d.items():
        if isinstance(v, Mapping):
            name = f"{_prefix}{_key(k)}"
            body = to_toml(v, name + ".")
            if lines:
                lines.append("")
            lines.append(f"[{name}]")
            if body:
                lines.append(body)
    return "\n".join(lines)
