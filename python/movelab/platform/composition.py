"""What no paper could run: one receive server that composes mechanisms from four papers (the
platform ``server-composed``: Larsen & Lee's descriptor NIC with DDIO, RowClone-ZI zeroing socket
buffer pages in DRAM, Zhao et al.'s on-die ASYNC copy engine for payload copies, and the receive
path on a small multithreaded core as Wun & Crowley's microengines), each mechanism alone, in pairs
and all together; then Larsen & Lee's integrated DMA engine (iDMA) in the NIC's place, receiving
through its pinned buffer, alone and with all the others.

The runs are the platform model's (Rust: ``experiments::composition``); every variant is the preset
with agents left out, and every received frame's bytes are checked. ``docs/composition.md`` says
what the combination teaches and what is not modelled.

>>> from movelab.platform import composition
>>> rows = composition.run(frames=4)
>>> [r["variant"] for r in rows][7:]
['all', 'idma', 'all+idma']
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from movelab import _core
from movelab.dram import _dict_json, _native_call

#: The columns of a row, in order.
KEYS = ["variant", "ddio", "rowclone_zi", "copy_engine", "idma", "frames", "interrupts", "time_us", "ns_per_frame",
        "payload_gbps", "saving", "dram_energy_uj", "channel_kb", "zero_offloads", "copy_offloads",
        "rx_bytes_wrong"]
#: The most frames one run takes.
MAX_FRAMES = 4096


def run(frames: int = 32, overrides: Mapping[str, Any] | None = None,
        progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
    """Each variant's row (``KEYS``). ``frames``: frames received (1 to 4,096); ``overrides``: a dict
    shaped like a platform config, layered on ``server-composed`` for every variant."""
    if isinstance(frames, bool) or not isinstance(frames, int) or not 1 <= frames <= MAX_FRAMES:
        raise ValueError(f"frames: {frames!r} must be an integer from 1 to {MAX_FRAMES:,}")
    ov = _dict_json(overrides, "overrides") if overrides else None
    raw = _native_call(_core.platform_composition, frames, ov, progress, what="composition")
    return json.loads(raw)


def additivity(rows: list[dict[str, Any]]) -> tuple[float, float]:
    """(the savings of the mechanisms alone, summed; the saving of all together)."""
    alone = sum(r["saving"] for r in rows if r["variant"] in ("ddio", "rowclone-zi", "copy-engine"))
    together = next(r["saving"] for r in rows if r["variant"] == "all")
    return alone, together


def plot(rows: list[dict[str, Any]], path: Path) -> Path:
    """A bar per variant: network-core time per frame, and the saving over ``none`` above it."""
    from movelab.reproduce import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.0, 4.0))
    names = [r["variant"] for r in rows]
    vals = [r["ns_per_frame"] / 1000 for r in rows]
    bars = ax.bar(range(len(rows)), vals, color="#4c72b0")
    ax.set_xticks(range(len(rows)), [n.replace("+", "+\n") for n in names], fontsize=8)
    for b, r in zip(bars, rows, strict=True):
        if r["variant"] != "none":
            ax.annotate(f"-{r['saving'] * 100:.0f}%", (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("network-core time per frame (us)")
    ax.set_xlabel("mechanisms on the platform")
    ax.set_title(f"server-composed: {rows[0]['frames']} frames received, every combination")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
