"""Wun & Crowley: network I/O on small cores (IXP2350-like platform; emu nic, softnic, onloader):

* receive throughput against the UDP payload size (Fig. 3) and the onloader's gain over the
  softnic (Fig. 4);
* the onloader's receive blocks with and without the user program (Fig. 5);
* transmit throughput (Fig. 6);
* the per-connection mapping cache on and off, and the L2 push on and off (section 6);
* the small cores' own limits: the receive blocks alone on slow cores, where core count, clock and
  threads move the throughput (``me-bound``); the receive blocks with both gigabit ports' worth of
  traffic and with an open wire (``me-ceiling``: "the ME code sustains about 2 Gb/s"); the small
  cores' DRAM-to-DRAM copy against the host core's (``dram-copy``: "up to 10x faster", section 7).

Every experiment runs on the one platform (Rust: ``experiments::wun_onload``): two ``ixp-host``
platforms on one wire (``systems/cluster.rs``), one the configuration under test (its
microengines' receive or transmit program and the host program of ``presets/network/wun-programs``),
the other the iperf peer (its microengines a UDP source or sink); ``dram-copy`` runs on one
``ixp-host`` (the host core's copy loop, or the copies handed to its microengines).
``mapping-cache`` and ``l2-push`` are receive runs with the host program's ``mapping_cache`` and
``l2_push`` (and the microengines' ``l2_push``) set per variant. The network platform's preset
(``presets/network/ixp2350.toml``) gives the keys an override may set. The paper states its
results in its text (``presets/papers/wun-onload.toml``). Every delivered datagram is
byte-checked by the receiver, and again when the host program consumes it; a receive rate with the
application is the payload the host consumed per second (``consumed``), as iperf's server counts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.text import Text

from movelab import _core
from movelab._util import refuse_keys
from movelab.executor import costs, run_points
from movelab.reproduce import group, ledger, paper_data, table, write_rows

NAME = "wun-onload"
ROW_KEY = ["experiment", "config", "payload_bytes", "variant"]
KEYS = ["experiment", "config", "payload_bytes", "variant", "throughput_mbps", "offered_mbps", "sent", "delivered",
        "consumed", "lost", "rbuf_drops", "ring_drops", "buffer_drops", "socket_drops", "fins_sent", "fin_drops",
        "interrupts",
        "host_irq", "host_softirq", "host_process", "host_spin", "host_idle", "small_core_busy", "rx_cores_busy",
        "mapping_misses", "sim_time_us", "sim_packets", "wall_s"]
EXPERIMENTS = ["rx", "tx", "rx-components", "mapping-cache", "l2-push", "me-bound", "me-ceiling", "dram-copy"]
#: The experiments on the one platform (all of them). Every key of the network platform reaches
#: them (the network's config refuses any other, naming it), except those an experiment's variants
#: set themselves (refused below).
ON_PLATFORM = list(EXPERIMENTS)
#: ``me-bound``'s small cores (``me{cores}-{MHz}mhz-t{threads}``) and ``me-ceiling``'s wires, as the
#: Rust points name them; ``dram-copy``'s copiers.
ME_BOUND = ["me1-50mhz-t8", "me2-50mhz-t8", "me1-100mhz-t8", "me1-100mhz-t1", "me2-900mhz-t8"]
ME_CEILING = ["wire-2gbps", "wire-10gbps"]
COPIERS = ["me", "xscale"]
CONFIGS = ["emu", "softnic", "onloader"]
PAYLOADS = [64, 128, 256, 512, 1024, 1472]
#: UDP payloads: iperf's header needs 16 bytes; one 1500-byte Ethernet frame holds 1472.
MIN_PAYLOAD, MAX_PAYLOAD = 16, 1472


def _payloads(v: Any) -> list[int]:
    if v is None:
        return list(PAYLOADS)
    if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
        raise TypeError(f"payloads must be a list of integers, not {type(v).__name__}")
    out = list(v)
    if not out or len(out) > 32 or any(isinstance(x, bool) or not isinstance(x, int)
                                       or not MIN_PAYLOAD <= x <= MAX_PAYLOAD for x in out):
        raise ValueError(f"payloads: {out!r} must be 1 to 32 integers from {MIN_PAYLOAD} to {MAX_PAYLOAD} "
                         "(UDP payload bytes in one 1500-byte frame)")
    if len(set(out)) != len(out):
        raise ValueError(f"payloads: {out!r} repeats a size")
    return out


def _experiments(v: Any) -> list[str]:
    if v is None:
        return list(EXPERIMENTS)
    if isinstance(v, str) or not hasattr(v, "__iter__"):
        raise TypeError(f"experiments must be a list of names, not {type(v).__name__}")
    out = list(v)
    bad = [e for e in out if e not in EXPERIMENTS]
    if not out or bad:
        raise ValueError(f"experiments: {bad or out!r} - known: {', '.join(EXPERIMENTS)}")
    return out


def points(overrides: Mapping[str, Any] | None = None, payloads: list[int] | None = None,
           experiments: list[str] | None = None) -> list[dict[str, Any]]:
    """One point per run: (experiment, config, payload, variant) with the overrides."""
    pts = json.loads(_core.wun_onload_points(_experiments(experiments), _payloads(payloads)))
    ov = dict(overrides) if overrides else None
    return [{"point": p, "overrides": ov} for p in pts]


#: A scheduling estimate (CPU seconds per point by experiment, the largest measured point by point
#: on the 2-core development machine; receive and transmit on the one platform grow with the payload):
#: orders the work, never a row.
EXPERIMENT_CPU_S = {"rx": 0.3, "tx": 0.17, "rx-components": 0.3, "mapping-cache": 0.3, "l2-push": 0.3,
                    "me-bound": 0.2, "me-ceiling": 0.4, "dram-copy": 0.1}
OTHER_EXPERIMENT_CPU_S = 0.1


def cost(p: dict[str, Any]) -> float:
    """A point's CPU seconds, estimated from its experiment and payload."""
    q = p["point"]
    base = EXPERIMENT_CPU_S.get(q["experiment"], OTHER_EXPERIMENT_CPU_S)
    return base * (1.0 + q["payload_bytes"] / 1472)


@costs(cost)
def point(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The row of one point of :func:`points`."""
    ov = json.dumps(p["overrides"]) if p.get("overrides") else None
    return json.loads(_core.reproduce_wun_onload(json.dumps([p["point"]]), "ixp2350", ov, None))


def run(overrides: Mapping[str, Any] | None = None, payloads: list[int] | None = None,
        experiments: list[str] | None = None,
        progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Rows with :data:`KEYS` (``variant`` is None where it does not apply) and ``basis``
    (calibrated where the ledger says a fit used the row, else predicted).

    ``overrides``: a dict shaped like the network platform (``presets/network/ixp2350.toml``),
    e.g. ``{"host": {"clock_mhz": 600.0}}``."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like the network platform, not {type(overrides).__name__}")
    exps = _experiments(experiments)
    if overrides:
        from movelab.network import config as network_config

        network_config("ixp2350", overrides)  # every key checked (a misspelt cost too) before any run
        # The variants set these themselves: an override would be dropped in their rows.
        sets = {"l2-push": ["host.l2_push"], "mapping-cache": ["host.mapping_cache"],
                "me-bound": ["small_cores.rx_cores", "small_cores.tx_cores", "small_cores.clock_mhz",
                             "small_cores.threads"],
                "me-ceiling": ["wire.gbps", "msf.mac_gbps"]}
        for e, ks in sets.items():
            if e in exps:
                refuse_keys(dict(overrides), ks, f"{NAME}'s {e} experiment (leave it out with --experiments)")
    pts = points(overrides, payloads, exps)
    rows = []
    for r in (r for rs in run_points(point, pts, progress) for r in rs):
        row = {k: r.get(k) for k in KEYS}
        for k in ["throughput_mbps", "offered_mbps", "sim_time_us"]:
            row[k] = round(row[k], 3)
        for k in ["host_irq", "host_softirq", "host_process", "host_spin", "host_idle", "small_core_busy",
                  "rx_cores_busy"]:
            row[k] = round(row[k], 4)
        row["wall_s"] = round(row["wall_s"], 4)
        rows.append(row)
    return ledger.label_plain_rows(NAME, rows, ROW_KEY)


def paper() -> dict[str, Any]:
    """The paper's statements (``presets/papers/wun-onload.toml``)."""
    return paper_data("wun-onload")


def _tp(rows: list[dict[str, Any]], exp: str, config: str, variant: str | None = None) -> dict[int, float]:
    return {r["payload_bytes"]: r["throughput_mbps"] for r in rows
            if r["experiment"] == exp and r["config"] == config and r["variant"] == variant}


def gains(rows: list[dict[str, Any]]) -> dict[int, float]:
    """Fig. 4: the onloader's receive gain over the softnic, per payload (0.2 = +20%)."""
    on, soft = _tp(rows, "rx", "onloader"), _tp(rows, "rx", "softnic")
    return {p: on[p] / soft[p] - 1 for p in sorted(on) if soft.get(p)}


def results(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Every number and fact the paper's text states, beside movelab's (ids as in
    ``presets/ledger.toml``, which says which are calibrated and the tolerance)."""
    p = paper()
    R = ledger.Result
    out: list[R] = []
    emu, soft, on = (_tp(rows, "rx", c) for c in CONFIGS)
    if emu and soft and on:
        big = max(set(emu) & set(soft) & set(on))
        for c, d in [("softnic", soft), ("onloader", on)]:
            out.append(R(f"rx/{c}_over_emu", f"rx at {big} B: {c} over the emu nic", d[big] / emu[big],
                         p["rx"]["large_gain_over_emu"], "x"))
        g = gains(rows)
        ps = sorted(g)
        out.append(R("fig4/small/onloader_over_softnic", f"rx at {ps[0]} B: onloader over softnic", g[ps[0]],
                     p["rx"]["onloader_gain_small"], "%"))
        out.append(R("fig4/large/onloader_over_softnic", f"rx at {ps[-1]} B: onloader over softnic", g[ps[-1]],
                     p["rx"]["onloader_gain_large"], "%"))
        out.append(R("rx/host-ceiling", f"rx at {big} B: onloader below the host's ceiling", on[big],
                     p["rx"]["host_ceiling_mbps"], "Mb/s"))
    ceil = _tp(rows, "me-ceiling", "onloader", "wire-2gbps")
    if ceil:
        big = max(ceil)
        out.append(R("small-core/ceiling", f"the receive blocks alone sustain about 2 Gb/s (both gigabit ports' "
                     f"worth, {big} B)", ceil[big], p["rx"]["small_core_mbps"], "Mb/s"))
    opened = _tp(rows, "me-ceiling", "onloader", "wire-10gbps")
    if opened:
        big = max(opened)
        out.append(R("small-core/open-wire", f"the receive blocks alone on a 10 Gb/s wire ({big} B): above the "
                     "2 Gb/s the paper could offer", opened[big], p["rx"]["small_core_mbps"], "Mb/s"))
    copy = {r["config"]: r["throughput_mbps"] for r in rows if r["experiment"] == "dram-copy"}
    if copy.get("me") and copy.get("xscale"):
        out.append(R("small-core/dram-copy", "DRAM-to-DRAM copy: the small cores over the host core",
                     copy["me"] / copy["xscale"], p["dram_copy"]["small_core_gain"], "x"))
    won = _tp(rows, "rx-components", "onloader", "with-app")
    woff = _tp(rows, "rx-components", "onloader", "without-app")
    if won and woff:
        offered = {r["payload_bytes"]: r["offered_mbps"] for r in rows if r["experiment"] == "rx-components"}
        near = all(woff[k] >= 0.9 * offered[k] for k in woff)
        out.append(R("fig5/blocks-near-sender", "Fig. 5: receive blocks alone near the sender's rate; with recvmsg "
                     "the host is the bottleneck", None, None, holds=near and all(won[k] < woff[k] for k in won)))
    temu, tsoft, ton = (_tp(rows, "tx", c) for c in CONFIGS)
    if temu and tsoft and ton:
        big = max(set(temu) & set(tsoft) & set(ton))
        a, b = tsoft[big] / temu[big], ton[big] / temu[big]
        out.append(R("tx/softnic_over_emu", f"tx at {big} B: softnic over the emu nic", a, p["tx"]["gain_over_emu"],
                     "x"))
        out.append(R("tx/onloader_over_emu", f"tx at {big} B: onloader over the emu nic", b,
                     p["tx"]["gain_over_emu"], "x"))
        out.append(R("tx/no-clear-winner", f"tx at {big} B: no clear winner (within 15% of each other)", None, None,
                     holds=abs(a - b) / max(a, b) <= 0.15))
    mon, moff = _tp(rows, "mapping-cache", "onloader", "cache-on"), _tp(rows, "mapping-cache", "onloader", "cache-off")
    # The softnic with its L2 push on (the preset's), beside the onloader without the mapping
    # cache.
    soft = _tp(rows, "l2-push", "softnic", "push-on")
    if mon and moff and soft:
        big = max(set(mon) & set(moff) & set(soft))
        out.append(R("mapping-cache/rx_gain", f"mapping cache at {big} B: on over off", mon[big] / moff[big],
                     p["mapping_cache"]["rx_gain"], "x"))
        out.append(R("mapping-cache/off-below-softnic", f"mapping cache off at {big} B: slower than the softnic",
                     None, None, holds=moff[big] < soft[big]))
    out.append(R("mapping-cache/per-packet-share", "mapping the buffer: a third of the per-packet overhead", None,
                 p["mapping_cache"]["per_packet_share"], "%"))
    pon, poff = _tp(rows, "l2-push", "softnic", "push-on"), _tp(rows, "l2-push", "softnic", "push-off")
    if pon and poff:
        big = max(set(pon) & set(poff))
        out.append(R("l2-push/softnic_loss", f"L2 push off at {big} B: the softnic's loss", 1 - poff[big] / pon[big],
                     p["l2_push"]["softnic_loss"], "%"))
    return out


def summary(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(statement, movelab, paper) for the report."""
    return [(r.what, ledger.show(r), ledger.show(r, paper=True)) for r in ledger.judge(NAME, results(rows))]


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """The headline: the predictions within the ledger's tolerance out of all of them."""
    return ledger.check(NAME, results(rows))


def speed(rows: list[dict[str, Any]]) -> float | None:
    """Simulated packets per wall second over the rows."""
    wall = sum(r["wall_s"] for r in rows)
    return sum(r["sim_packets"] for r in rows) / wall if wall > 0 else None


def me_bound(rows: list[dict[str, Any]]) -> dict[str, float]:
    """``me-bound``: the receive blocks' throughput per small-core setting (variant)."""
    return {r["variant"]: r["throughput_mbps"] for r in rows if r["experiment"] == "me-bound"}


def tables(rows: list[dict[str, Any]]) -> list[Group | Text]:
    out = []
    small = [r for r in rows if r["experiment"] in ("me-bound", "me-ceiling", "dram-copy")]
    if small:
        t = table("Small cores' own limits: receive blocks alone (me-bound, me-ceiling) and DRAM-to-DRAM copy, Mb/s")
        for c in ["experiment", "config", "payload B", "variant", "throughput", "offered", "rx cores busy"]:
            t.add_column(c, justify="left" if c in ("experiment", "config", "variant") else "right")
        for r in small:
            off = f"{r['offered_mbps']:.0f}" if r["offered_mbps"] else "-"
            busy = f"{r['rx_cores_busy']:.0%}" if r["experiment"] != "dram-copy" else "-"
            t.add_row(r["experiment"], r["config"], str(r["payload_bytes"]), r["variant"] or "-",
                      f"{r['throughput_mbps']:.1f}", off, busy)
        out.append(group(t))
    for exp, title in [("rx", "Receive throughput, Mb/s (Fig. 3) and the onloader's gain over the softnic (Fig. 4)"),
                       ("tx", "Transmit throughput, Mb/s (Fig. 6)")]:
        sel = {c: _tp(rows, exp, c) for c in CONFIGS}
        ps = sorted({p for v in sel.values() for p in v})
        if not ps:
            continue
        t = table(title)
        for c in ["payload B", *CONFIGS, "onloader/softnic"]:
            t.add_column(c, justify="right")
        for p in ps:
            vals = [sel[c].get(p) for c in CONFIGS]
            g = f"{vals[2] / vals[1] - 1:+.0%}" if vals[1] and vals[2] else "-"
            t.add_row(str(p), *("-" if v is None else f"{v:.1f}" for v in vals), g)
        out.append(group(t))
    var = [r for r in rows if r["variant"] is not None and r["experiment"] not in ("me-bound", "me-ceiling")]
    if var:
        t = table("Variants: onloader components (Fig. 5), mapping cache, L2 push (section 6), Mb/s")
        for c in ["experiment", "config", "payload B", "variant", "throughput", "offered"]:
            t.add_column(c, justify="right" if c in ("payload B", "throughput", "offered") else "left")
        for r in var:
            t.add_row(r["experiment"], r["config"], str(r["payload_bytes"]), r["variant"],
                      f"{r['throughput_mbps']:.1f}", f"{r['offered_mbps']:.0f}")
        out.append(group(t))
    pps = speed(rows)
    if pps is not None:
        out.append(Text(f"{pps:,.0f} simulated packets per second of wall time", style="dim"))
    return out


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Fig. 3/6 (throughput), Fig. 4 (gain), Fig. 5 and section 6 variants; returns the paths."""
    plt = _plt()
    paths = []
    p = paper()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    for ax, exp, title in [(axes[0], "rx", "receive (Fig. 3)"), (axes[2], "tx", "transmit (Fig. 6)")]:
        for c in CONFIGS:
            d = _tp(rows, exp, c)
            if d:
                ax.plot(list(d), list(d.values()), "-o", markersize=4, label=c)
        ax.axhline(p["rx"]["host_ceiling_mbps"], color="grey", linestyle=":", label="paper: host ceiling")
        ax.set_xlabel("UDP payload, bytes")
        ax.set_ylabel("throughput, Mb/s")
        ax.set_title(title, fontsize=10)
        ax.legend(frameon=False, fontsize=8)
    g = gains(rows)
    if g:
        axes[1].bar([str(k) for k in g], [v * 100 for v in g.values()], label="movelab")
        for key, ls in [("onloader_gain_small", ":"), ("onloader_gain_large", "--")]:
            axes[1].axhline(p["rx"][key] * 100, color="grey", linestyle=ls,
                            label=f"paper: {key.removeprefix('onloader_gain_')}")
        axes[1].set_xlabel("UDP payload, bytes")
        axes[1].set_ylabel("onloader over softnic, %")
        axes[1].set_title("receive gain (Fig. 4)", fontsize=10)
        axes[1].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    paths.append(out / f"{NAME}-throughput.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    specs = [(axes[0], "rx-components", "onloader", ["without-app", "with-app"], "onloader receive (Fig. 5)"),
             (axes[1], "mapping-cache", "onloader", ["cache-on", "cache-off"], "mapping cache (section 6)"),
             (axes[2], "l2-push", "softnic", ["push-on", "push-off"], "softnic, L2 push (section 6)")]
    for ax, exp, config, variants, title in specs:
        for v in variants:
            d = _tp(rows, exp, config, v)
            if d:
                ax.plot(list(d), list(d.values()), "-o", markersize=4, label=v)
        if exp == "rx-components":
            off = {r["payload_bytes"]: r["offered_mbps"] for r in rows if r["experiment"] == exp}
            if off:
                ax.plot(list(off), list(off.values()), ":", color="black", label="sender")
        if exp == "mapping-cache":
            d = _tp(rows, "rx", "softnic")
            if d:
                ax.plot(list(d), list(d.values()), "--", color="grey", label="softnic")
        ax.set_xlabel("UDP payload, bytes")
        ax.set_ylabel("receive throughput, Mb/s")
        ax.set_title(title, fontsize=10)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    paths.append(out / f"{NAME}-variants.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def write(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Writes the JSON, CSV and PNGs into ``out``; returns the paths."""
    return write_rows(rows, out, NAME, KEYS) + plot(rows, out)
