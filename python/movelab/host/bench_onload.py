"""``movelab bench host onload``: Wun & Crowley's three configurations on this machine
(kernel = the emu nic, softnic, onload with the mapping cache on and off), receive and transmit,
against UDP payload size, on the ``replay`` source (no privileges) and the ``veth`` source
(real frames through the kernel, when permitted).

The timing loops run in Rust (``movelab_host::onload::bench``), one point per call so that a
progress bar can follow and Ctrl-C stops between points. Rows carry ``direction``, ``config``,
``source``, ``payload_bytes``, ``throughput_mbps``, ``packets_per_s``, ``loss``,
``host_cpu_ns_per_packet``, ``engine_cpu_ns_per_packet``, ``wakeups_per_packet``,
``latency_p50_ns``/``latency_p99_ns`` and ``corrupted`` (payloads failing the byte check).
"""

from __future__ import annotations

import contextlib
import json
import platform
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from movelab import _core

CONFIGS = ["kernel", "softnic", "onload", "onload-nocache"]
SOURCES = ["replay", "veth"]
DIRECTIONS = ["rx", "tx"]
SIZES = [18, 64, 256, 512, 1024, 1472, 8972]
QUICK_SIZES = [64, 1472]
MAX_PAYLOAD = 8972
#: The files :func:`write_outputs` writes into its folder.
OUTPUTS = ["onload.csv", "onload.png", "onload.json"]


def veth_status() -> tuple[bool, str]:
    """(True, "") when the veth source can run here, else (False, one-line reason). The probe makes
    and removes a namespace pair, so SIGTERM is handled as Ctrl-C while it runs (see
    :func:`_terminate_as_interrupt`)."""
    with _terminate_as_interrupt():
        ok, reason = _core.onload_veth_available()
    return bool(ok), str(reason)


def plan(quick: bool = False, sizes: list[int] | None = None, configs: list[str] | None = None,
         sources: list[str] | None = None, directions: list[str] | None = None) -> list[dict[str, Any]]:
    """The points to run, each a spec for one Rust call. Sources that cannot run here are left
    out (see :func:`veth_status`); replay stands in when nothing else is left."""
    sizes = list(sizes) if sizes else (QUICK_SIZES if quick else SIZES)
    for s in sizes:
        if not isinstance(s, int) or not 1 <= s <= MAX_PAYLOAD:
            raise ValueError(f"sizes: {s!r} is not a UDP payload size in 1..{MAX_PAYLOAD}")
    for name, given, known in (("config", configs, CONFIGS), ("source", sources, SOURCES),
                               ("direction", directions, DIRECTIONS)):
        for g in given or []:
            if g not in known:
                raise ValueError(f"{name}: unknown {g!r} (expected one of {', '.join(known)})")
    return [{"configs": [c], "sources": [src], "directions": [d], "sizes": [s]}
            for src in (sources or ["replay", "veth"])
            for d in (directions or DIRECTIONS)
            for c in (configs or CONFIGS)
            for s in sizes]


def run(quick: bool = False, sizes: list[int] | None = None, configs: list[str] | None = None,
        sources: list[str] | None = None, directions: list[str] | None = None,
        seconds: float | None = None, rate_mbps: float | None = None, realtime: bool = False,
        push: bool = True,
        progress: Callable[[str], None] | None = None,
        notice: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Run the benchmark; returns its rows. ``progress`` is called before each point and
    ``notice`` with the one-line reason when the veth source is not available."""
    if seconds is not None and not 0.01 <= seconds <= 600:
        raise ValueError(f"seconds: {seconds} is not in 0.01..600")
    if rate_mbps is not None and not 0 <= rate_mbps <= 1e6:
        raise ValueError(f"rate_mbps: {rate_mbps} is not in 0..1000000")
    wanted = list(sources or ["replay", "veth"])
    if "veth" in wanted:
        ok, why = veth_status()
        if not ok:
            if notice:
                notice(f"veth source skipped: {why}; using replay")
            wanted = [s for s in wanted if s != "veth"] or ["replay"]
    points = plan(quick, sizes, configs, wanted, directions)
    extra: dict[str, Any] = {"seconds": seconds if seconds is not None else (0.25 if quick else 1.0)}
    if rate_mbps is not None:
        extra["rate_mbps"] = rate_mbps
    if realtime:
        extra["realtime"] = True
    if not push:
        extra["push"] = False
    rows: list[dict[str, Any]] = []
    with _terminate_as_interrupt():
        for pt in points:
            if progress:
                progress(f"{pt['directions'][0]} {pt['configs'][0]} {pt['sources'][0]} {pt['sizes'][0]} B")
            rows.extend(json.loads(_core.onload_bench(json.dumps({**pt, **extra}))))
    return rows


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (``kill``, ``timeout``) stops the benchmark as Ctrl-C does: after the point that is
    running, whose network namespaces are removed when it ends; the default action would kill the
    process at once and leave them behind. (A SIGKILL leaves them; the next veth run removes those
    of dead processes.) Only in the main thread, where Python runs signal handlers."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def count_points(quick: bool = False, sizes: list[int] | None = None, configs: list[str] | None = None,
                 sources: list[str] | None = None, directions: list[str] | None = None) -> int:
    """How many points :func:`run` will measure (veth counted only if available)."""
    wanted = list(sources or ["replay", "veth"])
    if "veth" in wanted and not veth_status()[0]:
        wanted = [s for s in wanted if s != "veth"] or ["replay"]
    return len(plan(quick, sizes, configs, wanted, directions))


def bars(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The targets from the rows: onload below kernel in host CPU per received packet at
    every size, the mapping cache cheaper for the engine than process_vm_writev, and no
    corrupted payload."""
    out: dict[str, Any] = {"corrupted_payloads": sum(r["corrupted"] for r in rows)}
    for src in sorted({r["source"] for r in rows}):
        rx = [r for r in rows if r["source"] == src and r["direction"] == "rx"]
        k = {r["payload_bytes"]: r for r in rx if r["config"] == "kernel"}
        o = {r["payload_bytes"]: r for r in rx if r["config"] == "onload"}
        nc = {r["payload_bytes"]: r for r in rx if r["config"] == "onload-nocache"}
        common = sorted(set(k) & set(o))
        if common:
            ratio = {s: round(o[s]["host_cpu_ns_per_packet"] / max(k[s]["host_cpu_ns_per_packet"], 1e-9), 3)
                     for s in common}
            out[f"{src}_rx_host_cpu_onload_over_kernel"] = ratio
            out[f"{src}_rx_onload_below_kernel_every_size"] = all(v < 1 for v in ratio.values())
        both = sorted(set(o) & set(nc))
        if both:
            def busy(r: dict[str, Any]) -> float:
                return r.get("engine_busy_ns_per_packet") or r["engine_cpu_ns_per_packet"]
            ratio = {s: round(busy(nc[s]) / max(busy(o[s]), 1e-9), 3) for s in both}
            out[f"{src}_rx_engine_busy_nocache_over_cache"] = ratio
            out[f"{src}_rx_cache_cheaper_every_size"] = all(v > 1 for v in ratio.values())
    return out


def write_outputs(rows: list[dict[str, Any]], out: Path, force: bool = False) -> list[Path]:
    """onload.csv, onload.png and onload.json (rows, bars, machine) into ``out``; refuses to
    overwrite existing files unless ``force``."""
    from movelab.host.bench import machine, write_csv

    out.mkdir(parents=True, exist_ok=True)
    paths = [out / n for n in OUTPUTS]
    existing = [p for p in paths if p.exists()]
    if existing and not force:
        raise FileExistsError(f"{existing[0]} exists; pass --force to overwrite")
    write_csv(rows, paths[0])
    plot(rows, paths[1])
    paths[2].write_text(json.dumps({"machine": machine(), "bars": bars(rows), "rows": rows}, indent=1))
    return paths


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Throughput and CPU per packet against payload size, one line per configuration and source."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("rx", "throughput_mbps", "receive throughput (Mb/s)"),
              ("rx", "host_cpu_ns_per_packet", "receive: host CPU ns / packet"),
              ("tx", "throughput_mbps", "transmit throughput (Mb/s)"),
              ("rx", "engine_cpu_ns_per_packet", "receive: engine-core CPU ns / packet")]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    for ax, (d, key, title) in zip(axes.flat, panels, strict=True):
        series: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if r["direction"] == d:
                series.setdefault(f"{r['config']} ({r['source']})", []).append(r)
        for label, rs in series.items():
            rs = sorted(rs, key=lambda r: r["payload_bytes"])
            ax.plot([r["payload_bytes"] for r in rs], [r[key] for r in rs], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("UDP payload (bytes)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        if series:
            ax.legend(fontsize=7)
        else:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle(f"network onload on {platform.node()}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
