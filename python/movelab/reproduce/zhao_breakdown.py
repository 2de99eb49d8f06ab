"""Zhao et al. Table 3, broken down by payload size: where each run's time goes, and which of the
engine's mechanisms moves the split between faster copies and overlap.

Three things, each printed by ``python -m movelab.reproduce.zhao_breakdown``:

* :func:`breakdown`: for every Table 3 cell (core, payload) and mode, per packet: BASE's time, its
  copy cost ``C_base`` (BASE less the same run without the copies) and the path without the copy;
  the engine's copy time as the core sees it (``C_mode``, Table 3's split) and its ratio to
  ``C_base``; the engine's lines read and written; the DRAM's row-hit rate, mean read latency and
  its data rate as a share of the channels' peak; pending-copy stalls; the share of the run the
  engine spends copying. Which resource bounds a run is read from these (an ASYNC run whose
  channels carry most of their peak is bound by memory bandwidth, not by its core).
* :func:`paper_bypass_gap`: from the paper's Table 3 alone, SYNC_NLB's faster copy less
  SYNC_WLB's in each cell. Both modes run the same engine; bypass (section 5.4) puts the core's
  requests in front of the engine's, so it can only delay the engine, and the gap is positive
  wherever the paper's engine behaves as its text describes.
* :func:`mechanisms`: the out-of-order split at each payload with one of the engine's parameters
  moved (the fairness share, the page split, the stream buffer, the bus's address phase and
  messages, the pending copy table, when a write counts done): which of them moves the 1400 B
  point, and by how much.

Nothing here is fitted or judged; the reproduction's rows (``movelab reproduce zhao-copy-engine``)
are the results. Times are per packet (one copy per packet); fractions are of BASE's time.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from movelab import _core, platform
from movelab._util import layered
from movelab.reproduce import paper_data

NAME = "zhao-copy-engine"
PLATFORM = "zhao-uma-emc"
MODES = ["SYNC_NLB", "SYNC_WLB", "ASYNC"]
PAYLOADS = [512, 1024, 1400]
#: One parameter of the engine or its platform moved at a time (label, platform overrides).
MECHANISMS: list[tuple[str, dict[str, Any]]] = [
    ("as preset", {}),
    ("engine_share 0.05 (bypass fairness)", {"copy": {"engine_share": 0.05}}),
    ("engine_share 1.0 (bypass fairness)", {"copy": {"engine_share": 1.0}}),
    ("page_bytes 1 MiB (no page split)", {"copy": {"page_bytes": 1 << 20}}),
    ("stream_buffer_lines 16", {"copy": {"stream_buffer_lines": 16}}),
    ("stream_buffer_lines 256", {"copy": {"stream_buffer_lines": 256}}),
    ("address_ns 0 (free snoop turns)", {"interconnect": {"address_ns": 0.0}}),
    ("engine_message_ns 0 (free bus messages)", {"interconnect": {"engine_message_ns": 0.0}}),
    ("pending_copy_entries 1", {"copy": {"pending_copy_entries": 1}}),
    ("write_done accepted (posted writes)", {"copy": {"write_done": "accepted"}}),
]
MAX_PACKETS = 100_000


def _check(packets: int, payloads: list[int], cores: list[str]) -> None:
    if isinstance(packets, bool) or not isinstance(packets, int) or not 1 <= packets <= MAX_PACKETS:
        raise ValueError(f"zhao breakdown: packets {packets!r} must be an integer from 1 to {MAX_PACKETS:,}")
    if not payloads or any(isinstance(p, bool) or not isinstance(p, int) or p < 1 for p in payloads):
        raise ValueError(f"zhao breakdown: payloads {payloads!r} must be positive byte counts")
    bad = [c for c in cores if c not in ("in-order", "out-of-order")]
    if bad or not cores:
        raise ValueError(f"zhao breakdown: cores {cores!r} must be 'in-order' and/or 'out-of-order'")


def _stats(core: str, payload: int, mode: str, packets: int, overrides: Mapping[str, Any]) -> dict[str, Any]:
    ov: dict[str, Any] = {"core": {"kind": core}}
    if mode != "BASE":
        ov["copy"] = {"mechanism": "ce", "mode": mode, "placement": "off-die"}
    # BASE runs without the engine the user's overrides may tune.
    return platform._run(PLATFORM, "tcp-rx", layered(overrides, ov), {"payload": payload, "packets": packets},
                         unread_ok=True).stats


def _peak_gbs(dram: Mapping[str, Any]) -> float:
    """The channels' peak data rate: two 8-byte transfers per clock on each 64-bit channel (Table 2:
    DDR2-400, 3.2 GB/s per channel)."""
    return dram["channels"] * 16.0 / (dram["tck_ps"] / 1000.0)


def _cell(core: str, payload: int, packets: int, overrides: Mapping[str, Any]) -> list[dict[str, Any]]:
    ov = json.dumps(overrides) if overrides else None
    t3 = json.loads(_core.reproduce_zhao(ov, packets, [payload], None, [core], False))
    rows = []
    base = _stats(core, payload, "BASE", packets, overrides)
    t_base = base["time_ns"] / packets
    nlb = next(r for r in t3 if r["mode"] == "SYNC_NLB")
    # C_base from the split: faster_copy = (C_base - C_mode) / T_base, with SYNC_NLB's own C_mode.
    c_base = nlb["faster_copy"] * t_base + nlb["mean_copy_ns"]
    for r in t3:
        s = _stats(core, payload, r["mode"], packets, overrides)
        d, a = s["dram"], s["agents"][0]
        row = d["row"]
        seen = row["hits"] + row["misses"] + row["conflicts"]
        rows.append({
            "core": core, "payload_bytes": payload, "mode": r["mode"],
            "base_ns": t_base, "base_copy_ns": c_base, "path_ns": t_base - c_base,
            "time_ns": s["time_ns"] / packets, "copy_ns": s["mean_offload_ns"],
            "copy_vs_base": s["mean_offload_ns"] / c_base if c_base > 0 else None,
            "engine_share_of_run": a["op_time_ns"] / s["time_ns"],
            "lines_read": a["lines"]["engine_read"] / packets,
            "lines_written": a["lines"]["engine_written"] / packets,
            "row_hit": row["hits"] / seen if seen else None,
            "read_latency_ns": d["read_latency"]["mean_ns"],
            "dram_utilisation": s["memory"]["bandwidth_gbs"] / _peak_gbs(d),
            "pending_copy_stalls": s["pending_copy_stalls"] / packets,
            "reduction": r["reduction"], "faster_copy": r["faster_copy"], "overlap": r["overlap"],
            "paper_reduction": r["paper_reduction"], "paper_faster_copy": r["paper_faster_copy"],
            "paper_overlap": r["paper_overlap"],
        })
    return rows


def breakdown(packets: int = 200, payloads: list[int] | None = None, cores: list[str] | None = None,
              overrides: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per (core, payload, mode): see the module's docstring."""
    payloads = list(payloads or PAYLOADS)
    cores = list(cores or ["out-of-order"])
    _check(packets, payloads, cores)
    return [r for c in cores for p in payloads for r in _cell(c, p, packets, dict(overrides or {}))]


def paper_bypass_gap() -> list[dict[str, Any]]:
    """Per Table 3 cell of the paper: SYNC_NLB's faster copy less SYNC_WLB's (fractions of BASE)."""
    t3 = paper_data(NAME)["table3"]
    out = []
    for core in ("in-order", "out-of-order"):
        for p in PAYLOADS:
            f = {r["mode"]: r["faster_copy"] for r in t3 if r["core"] == core and r["payload_bytes"] == p}
            out.append({"core": core, "payload_bytes": p, "nlb_minus_wlb": round(f["SYNC_NLB"] - f["SYNC_WLB"], 4)})
    return out


def mechanisms(packets: int = 200, payloads: list[int] | None = None) -> list[dict[str, Any]]:
    """The out-of-order Table 3 split with each of :data:`MECHANISMS` in turn."""
    payloads = list(payloads or PAYLOADS)
    _check(packets, payloads, ["out-of-order"])
    out = []
    for label, ov in MECHANISMS:
        for p in payloads:
            t3 = json.loads(_core.reproduce_zhao(json.dumps(ov) if ov else None, packets, [p], None,
                                                 ["out-of-order"], False))
            m = {r["mode"]: r for r in t3}
            out.append({
                "mechanism": label, "payload_bytes": p,
                "nlb_faster_copy": m["SYNC_NLB"]["faster_copy"], "wlb_faster_copy": m["SYNC_WLB"]["faster_copy"],
                "wlb_reduction": m["SYNC_WLB"]["reduction"], "async_reduction": m["ASYNC"]["reduction"],
                "nlb_copy_ns": m["SYNC_NLB"]["mean_copy_ns"], "wlb_copy_ns": m["SYNC_WLB"]["mean_copy_ns"],
                "async_copy_ns": m["ASYNC"]["mean_copy_ns"],
            })
    return out


def _pct(v: Any) -> str:
    return "-" if v is None else f"{v * 100:5.1f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=200)
    ap.add_argument("--in-order", action="store_true", help="also break down the in-order core's cells")
    a = ap.parse_args(argv)
    cores = ["in-order", "out-of-order"] if a.in_order else ["out-of-order"]
    print("Per packet (ns) and per run; fractions in % of BASE (paper in brackets)")
    print("core          B    mode      T_base C_base  path  T_mode C_mode C/Cb  eng%  rd   wr   rowhit rdlat dram% "
          "red (paper)   faster (paper) overlap (paper)")
    for r in breakdown(a.packets, cores=cores):
        print(f"{r['core']:12} {r['payload_bytes']:5} {r['mode']:8} {r['base_ns']:6.0f} {r['base_copy_ns']:6.0f} "
              f"{r['path_ns']:5.0f} {r['time_ns']:6.0f} {r['copy_ns']:6.0f} {r['copy_vs_base']:4.2f} "
              f"{r['engine_share_of_run'] * 100:4.0f} {r['lines_read']:4.1f} {r['lines_written']:4.1f} "
              f"{r['row_hit']:6.2f} {r['read_latency_ns']:5.0f} {r['dram_utilisation'] * 100:4.0f}  "
              f"{_pct(r['reduction'])} ({_pct(r['paper_reduction'])}) {_pct(r['faster_copy'])} "
              f"({_pct(r['paper_faster_copy'])}) {_pct(r['overlap'])} ({_pct(r['paper_overlap'])})")
    print("\nThe paper's Table 3: SYNC_NLB's faster copy less SYNC_WLB's (points of BASE)")
    for r in paper_bypass_gap():
        print(f"{r['core']:12} {r['payload_bytes']:5} {r['nlb_minus_wlb'] * 100:5.1f}")
    print("\nOut-of-order split with one parameter moved: faster copy NLB / WLB, reduction WLB / ASYNC (%), "
          "copy ns NLB / WLB / ASYNC")
    for r in mechanisms(a.packets):
        print(f"{r['mechanism']:40} {r['payload_bytes']:5} {_pct(r['nlb_faster_copy'])} {_pct(r['wlb_faster_copy'])} "
              f"{_pct(r['wlb_reduction'])} {_pct(r['async_reduction'])}  {r['nlb_copy_ns']:4.0f} "
              f"{r['wlb_copy_ns']:4.0f} {r['async_copy_ns']:4.0f}")


if __name__ == "__main__":
    main()
