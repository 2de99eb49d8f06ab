"""Larsen & Lee, "Platform IO DMA Transaction Acceleration" (CACHES 2011):

* Fig. 8: the NIC-TX latency stack of a 64 B message under descriptor DMA (doorbell, descriptor
  fetch, payload fetch), 82598 on PCIe Gen1 x8 behind a 5520 IOH, on the platform ``larsen-io``
  (the driver program, its core and caches, the DDR3-1066 DRAM model);
* Fig. 9: the integrated DMA engine's stack (on-die doorbell, memory reads, push to the adapter),
  on the platform ``larsen-io-idma``; both stacks move with DRAM timing and with whether the
  descriptor and frame are cached (each figure's other case and a slower DRAM are reported too);
* Table 1: end-to-end latency of a 64 B message between two systems, and the payload bandwidth
  per PCIe lane of a simulated dual-port stream that saturates the link or the wire;
* Fig. 10: the share of PCIe bytes for descriptors and doorbells (what the iDMA takes off the link:
  descriptor fetches, doorbells, write-backs, MSI-X) in iperf-like streams of 64 B and 64 KB I/O
  (64 B or 64 KiB of TCP payload per send; 82599 on Gen2 x8, set up as Linux ixgbe sets it up:
  write-back thresholds, interrupt moderation, RX tail writes in batches; 64 KB sends as one TSO
  send the NIC segments; the receiver's TCP ACKs go back over the same wire, sent as Linux
  sends them: once more than a receive MSS is unacknowledged, 536 B for 64 B segments, after
  GRO has merged each poll's full-size segments), receive and transmit, and the bars without
  ACKs and the small bars with other write-back thresholds (sensitivity);
* sensitivity: Table 1's run with the descriptor only in memory, with a slower DRAM and with
  DDIO on the receive path (on the cluster); the stacks on a Gen3 / Haswell platform (the
  two-host I/O model).

Table 1 and Fig. 10 run on the cluster: two platforms (``larsen-io``, ``larsen-io-idma``) on one
Ethernet wire, every device memory access through each platform's memory system, every frame
checked byte for byte. Only the host software stack time is fitted (to Table 1's 8.8 us); the
iDMA's latency is a separate run. The runs are the Rust model's
(``experiments::larsen_idma``); the paper's values are in
``presets/papers/larsen-idma.toml``. Rows: ``figure``, ``case``, ``metric``, ``value``,
``paper_value`` (None where the paper gives none), ``unit``, ``note``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Group

from movelab import _core
from movelab.executor import costs, run_points
from movelab.reproduce import group, ledger, table, write_rows

NAME = "larsen-idma"
ROW_KEY = ["figure", "case", "metric"]
KEYS = ["figure", "case", "metric", "value", "paper_value", "unit", "note"]
PARTS = ["latency", "fig10", "sensitivity", "pcie-model"]
#: Bounds of the stream lengths, and the defaults: every stream is cut to 250 frames, so a 64 B
#: stream holds 250 messages and a 64 KB one as many as fill it on either device (the NIC's TSO
#: sends of 46 frames, the iDMA's messages of 45); a longer stream would run the same frames.
_LIMITS = json.loads(_core.larsen_idma_stream_limits())
MAX_SMALL: int = _LIMITS["small_count"]
MAX_LARGE: int = _LIMITS["large_count"]


def run(small_count: int = MAX_SMALL, large_count: int = MAX_LARGE, parts: list[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
        overrides: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Rows with :data:`KEYS` and ``basis`` (calibrated, predicted or not reproduced, from the
    calibration ledger). ``small_count`` 64 B messages and ``large_count`` 64 KB
    messages per Fig. 10 stream; ``parts``: any of :data:`PARTS` (default: all); ``overrides``
    (shaped like a platform config, e.g. ``{"memory": {"dram": {"timing": {"nCL": 16}}}}``) apply
    to the two platforms of Fig. 8 and Fig. 9."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like a platform config, not {type(overrides).__name__}")
    for name, v, most in [("small_count", small_count, MAX_SMALL), ("large_count", large_count, MAX_LARGE)]:
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= most:
            raise ValueError(f"{name}: {v!r} must be an integer from 1 to {most:,}")
    if isinstance(parts, str):
        raise ValueError(f"parts: {parts!r} is one name; give a list of them (some of {', '.join(PARTS)})")
    parts = list(parts) if parts is not None else PARTS
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise ValueError(f"parts: {bad or parts!r} must be some of {', '.join(PARTS)}")
    pts = points(small_count, large_count, parts, overrides)
    rows = [{k: r.get(k) for k in KEYS} for rs in run_points(point, pts, progress) for r in rs]
    return ledger.label_rows(NAME, rows, ROW_KEY)


def points(small_count: int = MAX_SMALL, large_count: int = MAX_LARGE, parts: list[str] | None = None,
           overrides: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The independent runs: one per part."""
    ov = dict(overrides) if overrides else None
    return [{"part": p, "small_count": small_count, "large_count": large_count, "overrides": ov}
            for p in (parts or PARTS)]


#: A scheduling estimate (CPU seconds per part at the default counts, measured point by point on
#: the 2-core development machine): orders the work, never a row. Fig. 10's and the latency part's
#: streams grow with the message counts.
PART_CPU_S = {"fig10": 1.3, "latency": 0.9}
OTHER_PART_CPU_S = 0.15


def cost(p: dict[str, Any]) -> float:
    """A part's CPU seconds, estimated (scaled by its message counts against the defaults)."""
    base = PART_CPU_S.get(p["part"], OTHER_PART_CPU_S)
    scale = 0.5 * (p["small_count"] / MAX_SMALL + p["large_count"] / MAX_LARGE)
    return base * max(scale, 0.05)


@costs(cost)
def point(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one point of :func:`points`."""
    ov = json.dumps(p["overrides"]) if p.get("overrides") else None
    return json.loads(_core.reproduce_larsen_idma([p["part"]], p["small_count"], p["large_count"], None,
                                                  overrides=ov))


def _get(rows: list[dict[str, Any]], figure: str, case: str, metric: str) -> dict[str, Any] | None:
    return next((r for r in rows if r["figure"] == figure and r["case"] == case and r["metric"] == metric), None)


def _v(r: dict[str, Any] | None, fmt: str = "{:.0f}", scale: float = 1.0) -> str:
    return "-" if r is None or r.get("value") is None else fmt.format(r["value"] * scale)


def _p(r: dict[str, Any] | None, fmt: str = "{:.0f}", scale: float = 1.0) -> str:
    return "-" if r is None or r.get("paper_value") is None else fmt.format(r["paper_value"] * scale)


def tables(rows: list[dict[str, Any]]) -> list[Group]:
    """The figures as rich tables, movelab beside the paper."""
    out = []
    t = table("Fig. 8 / Fig. 9: NIC-TX latency of a 64 B message (ns), 82598 on Gen1 x8, 5520 IOH, DDR3-1066",
              "Fig. 8 descriptor DMA: doorbell + descriptor fetch + payload fetch; Fig. 9 iDMA: on-die doorbell + "
              "memory reads + push. Both run on the platform (driver program, caches, DRAM model). Fig. 8 as "
              "measured: descriptor and frame just written, in the driver's cache (-memory: only in DRAM); Fig. 9 "
              "as the paper estimates it, with memory reads (-cached: the lines in the driver's cache).")
    for c in ["stack", "part", "movelab", "paper", "basis"]:
        t.add_column(c, justify="left" if c in ("stack", "part", "basis") else "right")
    for fig, case in [("fig8", "descriptor-dma"), ("fig8", "descriptor-dma-memory"), ("fig9", "idma"),
                      ("fig9", "idma-cached")]:
        for r in rows:
            if r["figure"] == fig and r["case"] == case:
                t.add_row(case, r["metric"].removesuffix("_ns"), _v(r), _p(r), r.get("basis", ""),
                          style=ledger.style(r.get("basis")))
    out.append(group(t))
    t = table("Table 1: iDMA's benefits, on the cluster (two platforms on one wire)",
              "End-to-end: one 64 B message from the sender's first store to the receiver's interrupt handler done "
              "(hardware: to the receiver's interrupt; software: the host stack, instructions of the receiver's "
              "handler, the one value fitted, to the descriptor-DMA 8.8 us). The iDMA's is a separate run with "
              "larsen-io-idma sending: a prediction. Per lane: simulated TCP payload of a dual-port (2 x 10 Gb/s) "
              "stream of full-size frames on the 82599 Gen2 x8 platforms, over the link's lanes; a lane's data rate "
              "after encoding bounds it (in the row's note). By the bars: section 4.2's arithmetic, the ports' line "
              "rate per lane less the mean of this run's four Fig. 10 bars (shown, never judged).")
    for c in ["factor", "case", "movelab", "paper", "basis"]:
        t.add_column(c, justify="left" if c in ("factor", "case", "basis") else "right")
    factors = [("end_to_end_us", "latency (us)", "{:.2f}", 1.0),
               ("hardware_us", "  hardware path (us)", "{:.2f}", 1.0),
               ("software_us", "  host software (us)", "{:.2f}", 1.0),
               ("gbps_per_lane", "Gb/s per lane (payload)", "{:.2f}", 1.0),
               ("link_gbps_per_lane", "  link bytes, Gb/s per lane", "{:.2f}", 1.0),
               ("wire_share", "  of the ports' line rate (%)", "{:.0f}", 100.0),
               ("gbps_per_lane_by_share", "  by the bars, Gb/s per lane", "{:.2f}", 1.0)]
    for metric, label, fmt, scale in factors:
        for case in ["descriptor-dma", "idma", "idma-both"]:
            r = _get(rows, "table1", case, metric)
            if r is not None:
                t.add_row(label, case, _v(r, fmt, scale), _p(r, fmt, scale), r.get("basis", ""),
                          style=ledger.style(r.get("basis")))
    out.append(group(t))
    t = table("Fig. 10: share of PCIe bytes for descriptors and doorbells (%), 82599 on Gen2 x8, on the cluster",
              tight=True, caption=
              "all terms: what the iDMA takes off the link, descriptor fetch (requests + completions) + doorbell + "
              "write-back + MSI-X, over all TLP bytes of the measured host's link (TX: the sender's, RX: the "
              "receiver's; the descriptor NIC's streams carry the receiver's TCP ACKs, sent as Linux "
              "sends them: once more than a receive MSS is unacknowledged, after GRO; 64 B: 64 B of TCP payload "
              "per frame behind 66 B of headers; 64 KB: TSO sends on the NIC, full-size frames through the iDMA); "
              "fetch+doorbell: the first "
              "two only; write-back, MSI-X: those terms alone; iDMA: the same streams with the iDMA on both hosts "
              "(no ACKs); no ACKs: the descriptor NIC's stream with no ACKs going back (sensitivity).")
    for c in ["bar", "all\nterms", "paper", "basis", "fetch+\ndoorbell", "write-\nback", "MSI-X", "DLLP\nshare",
              "iDMA", "no\nACKs"]:
        t.add_column(c, justify="left" if c in ("bar", "basis") else "right")
    for case in ["rx-64B", "tx-64B", "rx-64KB", "tx-64KB"]:
        a = _get(rows, "fig10", case, "descriptor_doorbell_share")
        if a is None:
            continue
        t.add_row(case, _v(a, "{:.1f}", 100), _p(a, "{:.1f}", 100), a.get("basis", ""),
                  _v(_get(rows, "fig10", case, "fetch_doorbell_share"), "{:.1f}", 100),
                  _v(_get(rows, "fig10", case, "write_back_share"), "{:.1f}", 100),
                  _v(_get(rows, "fig10", case, "interrupt_share"), "{:.1f}", 100),
                  _v(_get(rows, "fig10", case, "dllp_share"), "{:.1f}", 100),
                  _v(_get(rows, "fig10", case, "idma_descriptor_doorbell_share"), "{:.1f}", 100),
                  _v(_get(rows, "sensitivity", f"fig10-{case}-no-acks", "descriptor_doorbell_share"), "{:.1f}", 100),
                  style=ledger.style(a.get("basis")))
    out.append(group(t))
    sens = [r for r in rows if r["figure"] == "sensitivity"]
    if sens:
        t = table("Sensitivity: Table 1 on the cluster with the descriptor only in memory or a slower DRAM; "
                  "Fig. 10's bars without ACKs and with other write-back thresholds; Gen3 / Haswell stacks; the "
                  "receive path with DDIO off and on (on the cluster); the Fig. 8 and 9 stacks with a slower DRAM "
                  "(DDR3-1066 at 16-16-16 clocks)")
        for c in ["case", "metric", "value", "unit"]:
            t.add_column(c, justify="right" if c == "value" else "left")
        for r in sens:
            t.add_row(r["case"], r["metric"], f"{r['value']:.4g}", r["unit"])
        out.append(group(t))
    pm = [r for r in rows if r["figure"] == "pcie-model"]
    if pm:
        t = table("Cross-check: effective bandwidth (Gb/s), movelab beside pcie-model (restated in our code)",
                  "movelab counts the DLLPs its link sends; pcie-model charges 8 B per Ack/UpdateFC limit in symbol "
                  "times (8x on x8) to the data direction; 'mended': pcie-model with its RX slip fixed (the I/O guide "
                  "in the documentation).")
        for c in ["case", "movelab", "pcie-model", "mended"]:
            t.add_column(c, justify="left" if c == "case" else "right")
        for case in dict.fromkeys(r["case"] for r in pm):
            t.add_row(case, _v(_get(rows, "pcie-model", case, "movelab_gbps"), "{:.2f}"),
                      _v(_get(rows, "pcie-model", case, "pcie_model_gbps"), "{:.2f}"),
                      _v(_get(rows, "pcie-model", case, "pcie_model_fixed_gbps"), "{:.2f}"))
        out.append(group(t))
    return out


def plot(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """The stacks (Fig. 8, 9) and the shares (Fig. 10) beside the paper's."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    stacks = [(fig, case) for fig, case in [("fig8", "descriptor-dma"), ("fig9", "idma")]
              if _get(rows, fig, case, "nic_tx_latency_ns")]
    if stacks:
        fig, ax = plt.subplots(figsize=(7, 4))
        x = 0
        labels = []
        colors: dict[str, str] = {}  # one colour and one legend entry per segment name, over both figures
        for f, case in stacks:
            parts = [r for r in rows if r["figure"] == f and r["case"] == case and r["metric"] != "nic_tx_latency_ns"]
            for j, who in enumerate(["value", "paper_value"]):
                bottom = 0.0
                for r in parts:
                    v = r[who] or 0.0
                    seg = r["metric"].removesuffix("_ns")
                    name = None if seg in colors else seg
                    color = colors.setdefault(seg, f"C{len(colors)}")
                    ax.bar(x, v, bottom=bottom, color=color, label=name, alpha=1.0 if j == 0 else 0.5)
                    bottom += v
                labels.append(f"{case}\n{'movelab' if j == 0 else 'paper'}")
                x += 1
        ax.set_xticks(range(x), labels)
        ax.set_ylabel("ns")
        ax.set_title("NIC-TX latency of a 64 B message (Fig. 8, Fig. 9)")
        ax.legend()
        fig.tight_layout()
        p = out / f"{NAME}-stacks.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    bars = [c for c in ["rx-64B", "tx-64B", "rx-64KB", "tx-64KB"]
            if _get(rows, "fig10", c, "descriptor_doorbell_share")]
    if bars:
        fig, ax = plt.subplots(figsize=(7, 4))
        w = 0.27
        for j, (label, key, who) in enumerate([("movelab (all terms)", "descriptor_doorbell_share", "value"),
                                               ("movelab (fetch+doorbell)", "fetch_doorbell_share", "value"),
                                               ("paper", "descriptor_doorbell_share", "paper_value")]):
            vals = [((_get(rows, "fig10", c, key) or {}).get(who) or 0.0) * 100 for c in bars]
            ax.bar([i + (j - 1) * w for i in range(len(bars))], vals, w, label=label)
        ax.set_xticks(range(len(bars)), bars)
        ax.set_ylabel("% of PCIe TLP bytes")
        ax.set_title("Descriptors and doorbells on PCIe (Fig. 10)")
        ax.legend()
        fig.tight_layout()
        p = out / f"{NAME}-fig10.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def write(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Writes the JSON, CSV and PNGs into ``out``; returns the paths."""
    return write_rows(rows, out, NAME, KEYS) + plot(rows, out)


def results(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Every paper value beside movelab's: Fig. 8 and 9's parts and totals, Table 1, and all four
    Fig. 10 bars by the paper's one metric (descriptor + doorbell share, every term counted). The
    tolerance and which results are calibrated are the ledger's (``presets/ledger.toml``)."""
    units = {"ns": "ns", "us": "us", "fraction": "%"}
    out = []
    for r in ledger.row_results(NAME, rows, ROW_KEY):
        row = _get(rows, *r.id.split("/"))
        unit = units.get((row or {}).get("unit") or "", "%" if r.id.startswith("fig10/") else "")
        out.append(ledger.Result(r.id, r.id.replace("/", " "), r.value, r.paper, unit))
    return out


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """The headline: Larsen & Lee's predictions within the ledger's tolerance out of all of them."""
    return ledger.check(NAME, results(rows))


def summary(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(statement, movelab, paper) for the paper's headline figures."""
    out = []
    for fig, case, metric, what, fmt in [
        ("fig8", "descriptor-dma", "nic_tx_latency_ns", "NIC-TX latency, 64 B, descriptor DMA (ns)", "{:.0f}"),
        ("fig9", "idma", "nic_tx_latency_ns", "the same with the iDMA (ns)", "{:.0f}"),
        ("table1", "descriptor-dma", "end_to_end_us", "end to end on the cluster, descriptor DMA (us, the host "
         "software fitted)", "{:.2f}"),
        ("table1", "idma", "end_to_end_us", "end to end on the cluster, iDMA on the sender (us, predicted)", "{:.2f}"),
        ("table1", "descriptor-dma", "gbps_per_lane", "payload per PCIe lane, dual-port stream on the cluster, "
         "descriptor DMA (Gb/s, simulated)", "{:.2f}"),
        ("table1", "idma", "gbps_per_lane", "the same with the iDMA (Gb/s, simulated)", "{:.2f}"),
        ("fig10", "tx-64B", "descriptor_doorbell_share", "descriptor/doorbell share, small TX (%)", "{:.1f}"),
        ("fig10", "rx-64B", "descriptor_doorbell_share", "descriptor/doorbell share, small RX (%)", "{:.1f}"),
        ("fig10", "tx-64KB", "descriptor_doorbell_share", "descriptor/doorbell share, large TX (%, below 5)",
         "{:.1f}"),
        ("fig10", "rx-64KB", "descriptor_doorbell_share", "descriptor/doorbell share, large RX (%, below 5)",
         "{:.1f}"),
    ]:
        r = _get(rows, fig, case, metric)
        if r is None:
            continue
        scale = 100 if fig == "fig10" else 1
        out.append((what, _v(r, fmt, scale), _p(r, fmt, scale)))
    return out
