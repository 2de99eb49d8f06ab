"""RowClone (MICRO 2013) Table 3: latency and DRAM-plus-channel energy of a 4 KB copy and a 4 KB
zeroing for the baseline, FPM, inter-bank PSM and intra-bank PSM, on the paper's system (Table 2).

The figures come from simulating each command sequence through the controller (Rust:
``experiments::rowclone_latency``); the paper's values are data (``presets/papers/rowclone.toml``).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from movelab import _core
from movelab.dram import load_config

PRESET = "rowclone-ddr3-1066"
KEYS = ["operation", "mechanism", "latency_ns", "energy_uj", "paper_latency_ns", "paper_energy_uj"]


def paper_table3() -> dict[tuple[str, str], dict[str, float]]:
    data = tomllib.loads(_core.paper_data("rowclone"))
    return {(r["operation"], r["mechanism"]): r for r in data["table3"]}


def run(config: Any = PRESET, overrides: dict[str, Any] | None = None, nbytes: int = 4096) -> list[dict[str, Any]]:
    """Rows with exactly :data:`KEYS`; paper values are None where the paper gives none."""
    cfg = load_config(config, overrides)
    sim = json.loads(_core.dram_rowclone_latency(cfg.to_json(), nbytes))
    paper = paper_table3()
    rows = []
    for r in sim:
        p = paper.get((r["operation"], r["mechanism"]), {})
        rows.append({
            "operation": r["operation"],
            "mechanism": r["mechanism"],
            "latency_ns": round(r["latency_ns"], 3),
            "energy_uj": round(r["energy_uj"], 4),
            "paper_latency_ns": p.get("latency_ns"),
            "paper_energy_uj": p.get("energy_uj"),
        })
    return rows


def reductions(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, float]]:
    """Latency and energy reduction factors of each row over its operation's baseline."""
    base = {r["operation"]: r for r in rows if r["mechanism"] == "baseline"}
    return {(r["operation"], r["mechanism"]): (base[r["operation"]]["latency_ns"] / r["latency_ns"],
                                               base[r["operation"]]["energy_uj"] / r["energy_uj"]) for r in rows}


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    labels = [f"{r['operation']}\n{r['mechanism']}" for r in rows]
    x = range(len(rows))
    for ax, key, pkey, unit in [(axes[0], "latency_ns", "paper_latency_ns", "ns"),
                                (axes[1], "energy_uj", "paper_energy_uj", "uJ")]:
        ax.bar([i - 0.2 for i in x], [r[key] for r in rows], width=0.4, label="movelab")
        ax.bar([i + 0.2 for i in x], [r[pkey] or 0 for r in rows], width=0.4, label="paper (Table 3)")
        ax.set_xticks(list(x), labels, fontsize=7)
        ax.set_ylabel(unit)
        ax.set_title(f"4 KB {key.split('_')[0]}")
    axes[1].set_yscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.suptitle("RowClone Table 3 on DDR3-1066 (8-8-8)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


# docs/dram.md: "Latencies are within 4% of the paper."
LATENCY_TOLERANCE = 0.04


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether every latency the paper gives is within :data:`LATENCY_TOLERANCE` of it."""
    errs = [(abs(r["latency_ns"] - r["paper_latency_ns"]) / r["paper_latency_ns"], r) for r in rows
            if r.get("paper_latency_ns")]
    if not errs:
        return False, "no row has a paper latency to compare with"
    worst, r = max(errs, key=lambda e: e[0])
    ok = worst <= LATENCY_TOLERANCE
    return ok, (f"{sum(e <= LATENCY_TOLERANCE for e, _ in errs)} of {len(errs)} latencies within "
                f"{LATENCY_TOLERANCE:.0%} of the paper's Table 3 (docs/dram.md); worst {worst:.1%} "
                f"({r['operation']} {r['mechanism']})")
