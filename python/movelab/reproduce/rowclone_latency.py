"""RowClone (MICRO 2013) Table 3: latency and DRAM-plus-channel energy of a 4 KB copy and a 4 KB
zeroing for the baseline, FPM, inter-bank PSM and intra-bank PSM, on the paper's system (Table 2).

The figures come from simulating each command sequence through the controller (Rust:
``experiments::rowclone_latency``); the paper's values are data (``presets/papers/rowclone.toml``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from movelab import _core, data
from movelab._util import refuse_keys
from movelab.dram import Config, _native_call, load_config
from movelab.reproduce import ledger

PRESET = "rowclone-ddr3-1066"
NAME = "rowclone-latency"
ROW_KEY = ["operation", "mechanism"]
METRICS = ["latency_ns", "energy_uj"]
KEYS = ["operation", "mechanism", "latency_ns", "energy_uj", "paper_latency_ns", "paper_energy_uj", "basis",
        "basis_latency_ns", "basis_energy_uj"]
#: The paper's operation size: its values are for 4 KB.
PAPER_BYTES = 4096
#: Config keys the experiment sets itself for each case.
SETS = ["controller.bulk"]
_BYTES_KEY = {"baseline": "bytes_baseline", "fpm": "bytes_fpm", "psm-inter": "bytes_psm_inter",
              "psm-intra": "bytes_psm_intra"}


def row_bytes(cfg: Config) -> int:
    """Bytes in one row across a rank (what FPM copies at once)."""
    org = cfg.spec["org"]
    return org["columns"] * org["bus_width"] // 8


def _ran(r: dict[str, Any]) -> str:
    """Which mechanisms moved a case's bytes, from the controller's statistics."""
    moved = [(m, r[k]) for m, k in _BYTES_KEY.items() if r.get(k)]
    return ", ".join(f"{m} {b} B" for m, b in moved) or "nothing"

# The config each ``--standard`` runs (the paper's system moved to that standard; docs/dram.md).
STANDARDS = {"ddr3": PRESET, "ddr5": "rowclone-ddr5-4800b", "lpddr5": "rowclone-lpddr5-6400",
             "hbm3": "rowclone-hbm3-6400",
             # LPDDR5's other variants: BL32 in bank-group mode, and 8-bank mode (BL32, 4 KB rows).
             "lpddr5-bl32": "rowclone-lpddr5-6400-bl32", "lpddr5-8b": "rowclone-lpddr5-6400-8b"}
# Rows of another standard beside DDR3's (the paper's figures are DDR3's only).
BESIDE_KEYS = ["operation", "mechanism", "standard", "speed", "latency_ns", "energy_uj", "ddr3_latency_ns",
               "ddr3_energy_uj"]


def paper_table3() -> dict[tuple[str, str], dict[str, float]]:
    return {(r["operation"], r["mechanism"]): r for r in data.paper("rowclone")["table3"]}


def _refuse_done_at_acceptance(cfg: Config) -> None:
    """Table 3's latencies count a baseline operation's writes: it is done when its last write is
    performed. Acknowledged when its writes enter the write queue (``controller.bulk_write_done =
    "accepted"``), a zeroing that fits the queue takes no time, and every ratio over the baseline is
    a division by zero."""
    done = cfg.data["controller"].get("bulk_write_done", "written")
    if done != "written":
        raise ValueError(f"controller.bulk_write_done: '{done}': rowclone-latency's latencies count a baseline "
                         f"operation's writes, as Table 3 does (done when written); leave the key at 'written'")


def run(config: Any = PRESET, overrides: dict[str, Any] | None = None, nbytes: int = PAPER_BYTES
        ) -> list[dict[str, Any]]:
    """Rows with exactly :data:`KEYS`; paper values are None where the paper gives none, and when
    ``nbytes`` is not the paper's 4 KB.

    Each row is the mechanism it names: the controller's statistics say which mechanism moved the
    bytes, and a config on which a case runs another (FPM needs whole rows, so a 4 KB copy on a
    config with 8 KB rows is done by PSM) is refused with the reason, as is an override of a key
    the experiment sets itself (``controller.bulk``)."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 0 < nbytes <= 1 << 20:
        raise ValueError(f"nbytes: {nbytes!r} must be a positive integer of at most 1 MiB")
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like a DRAM config, not {type(overrides).__name__}")
    if overrides:
        refuse_keys(dict(overrides), SETS, "rowclone-latency")
    cfg = load_config(config, overrides)
    _refuse_done_at_acceptance(cfg)
    org = cfg.spec["org"]
    line = org["bus_width"] // 8 * org["burst_length"]
    if nbytes % line:
        raise ValueError(f"nbytes: {nbytes} must be a multiple of the {line}-byte line")
    sim = json.loads(_native_call(_core.dram_rowclone_latency, cfg.to_json(), nbytes))
    for r in sim:
        if r.get(_BYTES_KEY[r["mechanism"]]) != nbytes:
            rb = row_bytes(cfg)
            why = (f"; FPM copies whole rows and this config's rows are {rb} bytes: give the row size "
                   f"(--bytes {rb}) or a config with {nbytes}-byte rows") if rb != nbytes else ""
            raise ValueError(f"rowclone-latency: on this config the '{r['operation']} {r['mechanism']}' case of "
                             f"{nbytes} bytes was carried out by {_ran(r)}, not by {r['mechanism']}{why}")
    paper = paper_table3() if nbytes == PAPER_BYTES else {}
    # A part without public currents has no energy model: its energy is not available (None), not 0.
    energy = cfg.spec.get("energy_available", True)
    rows = []
    for r in sim:
        p = paper.get((r["operation"], r["mechanism"]), {})
        rows.append({
            "operation": r["operation"],
            "mechanism": r["mechanism"],
            "latency_ns": round(r["latency_ns"], 3),
            "energy_uj": round(r["energy_uj"], 4) if energy else None,
            "paper_latency_ns": p.get("latency_ns"),
            "paper_energy_uj": p.get("energy_uj"),
        })
    return ledger.label_rows(NAME, rows, ROW_KEY, METRICS)


def beside_ddr3(config: Any, overrides: dict[str, Any] | None = None,
                nbytes: int = 4096) -> list[dict[str, Any]]:
    """Rows with exactly :data:`BESIDE_KEYS`: ``config``'s Table 3 beside the paper system's (DDR3).

    ``energy_uj`` is None on a part without public currents (LPDDR5, HBM3): energy is not available
    there, not zero."""
    cfg = load_config(config, overrides)
    energy = cfg.spec.get("energy_available", True)
    ddr3 = {(r["operation"], r["mechanism"]): r for r in run(PRESET, None, nbytes)}
    rows = []
    for r in run(cfg, None, nbytes):
        d = ddr3[(r["operation"], r["mechanism"])]
        rows.append({
            "operation": r["operation"],
            "mechanism": r["mechanism"],
            "standard": cfg.spec["standard"],
            "speed": cfg.spec["speed"],
            "latency_ns": r["latency_ns"],
            "energy_uj": r["energy_uj"] if energy else None,
            "ddr3_latency_ns": d["latency_ns"],
            "ddr3_energy_uj": d["energy_uj"],
        })
    return rows


#: Rows of the Multi-RowCopy replication table.
REPLICATION_KEYS = ["copies", "mechanism", "standard", "speed", "latency_ns", "energy_uj", "cycles", "bytes"]


def replication(config: Any = PRESET, overrides: dict[str, Any] | None = None,
                nbytes: int = PAPER_BYTES) -> list[dict[str, Any]]:
    """Rows with exactly :data:`REPLICATION_KEYS`: the time and energy to replicate the page at
    address 0 (``nbytes``, whole rows) into 1, 3, 7, 15, 31 rows of its block by Multi-RowCopy
    (``mrc``, Yuksel et al., DSN 2024), by that many RowClone FPM copies (``fpm``) and over the
    channel (``baseline``). Modelled, not measured, on every standard but DDR4 (docs/dram.md);
    ``energy_uj`` is None where the part has no public currents."""
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 0 < nbytes <= 1 << 20:
        raise ValueError(f"nbytes: {nbytes!r} must be a positive integer of at most 1 MiB")
    if overrides:
        refuse_keys(dict(overrides), SETS, "rowclone-latency")
    cfg = load_config(config, overrides)
    _refuse_done_at_acceptance(cfg)
    sim = json.loads(_native_call(_core.dram_replication_latency, cfg.to_json(), nbytes))
    return [{"copies": r["copies"], "mechanism": r["mechanism"], "standard": cfg.spec["standard"],
             "speed": cfg.spec["speed"], "latency_ns": round(r["latency_ns"], 3),
             "energy_uj": None if r["energy_uj"] is None else round(r["energy_uj"], 4), "cycles": r["cycles"],
             "bytes": r["bytes"]} for r in sim]


def table3_pricing(config: Any = PRESET) -> dict[str, Any]:
    """A what-if, fitted to Table 3 and never used by a reproduction's rows: overrides of ``config``
    (DDR3 currents and the channel's energy per bit) under which each command costs what Table 3
    implies, so that the applications (Table 5) and forkbench (Fig. 9) can be priced with the
    paper's own per-command energies (docs/dram.md, "Table 3's prices on the applications").

    Five Table 3 energies fix five prices: FPM (copy: 3.6 uJ / 74.4) is 2 ACT + 1 PRE, split
    between ACT and PRE as the IDD formulas split them; the zeroing baseline (1 ACT, 64 written
    lines) gives a written line, the copy baseline (2 ACT, 1 PRE, 64 read and 64 written lines) a
    read line, inter-bank PSM (2 ACT, 2 PRE, 64 TRANSFERs; 3.6 uJ / 3.2) a TRANSFER. A TRANSFER is a
    read and a write burst inside the DRAM and a line on the channel is one burst plus the
    channel's share, so the channel's share is (read line + written line - TRANSFER) / 2. Intra-bank
    PSM, twice the inter-bank sequence, then costs 2.25 uJ (Table 3: 2.5; from its reduction 2.4).
    Reading a TRANSFER as a read plus a write puts 69% of the baseline copy on the channel; the
    paper's introduction says 40%, which a TRANSFER priced as one column access gives (39%): the
    reading moves energy between a line's channel and DRAM parts, not Table 3's prices
    (docs/dram.md, "What Table 3 counts, read from the paper")."""
    cfg = load_config(config)
    s = cfg.spec
    if not s.get("energy_available", True):
        raise ValueError("table3_pricing: this config's part has no currents to price")
    c, t, org = s["currents"], s["timing"], s["org"]
    tck = t["tCK_ps"] / 1000.0
    t_ras, t_rp, t_bl = t["nRAS"] * tck, t["nRP"] * tck, t["nBL"] * tck
    nj = org["bus_width"] // org["device_width"] * c["vdd"] / 1000.0  # nJ per mA x ns, a rank
    line_bits = org["bus_width"] * org["burst_length"]
    lines = PAPER_BYTES * 8 // line_bits
    p = paper_table3()
    copy_nj, zero_nj = 1000.0 * p[("copy", "baseline")]["energy_uj"], 1000.0 * p[("zero", "baseline")]["energy_uj"]
    fpm_nj = copy_nj / p[("copy", "fpm")]["energy_reduction"]
    psm_nj = copy_nj / p[("copy", "psm-inter")]["energy_reduction"]
    act0, pre0 = nj * (c["idd0"] - c["idd3n"]) * t_ras, nj * (c["idd0"] - c["idd2n"]) * t_rp
    scale = fpm_nj / (2 * act0 + pre0)
    act, pre = scale * act0, scale * pre0
    written = (zero_nj - act) / lines
    read = (copy_nj - 2 * act - pre - lines * written) / lines
    transfer = (psm_nj - 2 * act - 2 * pre) / lines
    channel = (read + written - transfer) / 2
    idd0 = c["idd3n"] + act / (nj * t_ras)
    currents = {"idd0": round(idd0, 2), "idd2n": round(idd0 - pre / (nj * t_rp), 2),
                "idd4r": round(c["idd3n"] + (read - channel) / (nj * t_bl), 2),
                "idd4w": round(c["idd3n"] + (written - channel) / (nj * t_bl), 2)}
    return {"dram": {"currents": currents}, "energy": {"io_pj_per_bit": round(1000.0 * channel / line_bits, 2)}}


def reductions(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, float | None]]:
    """Latency and energy reduction factors of each row over its operation's baseline (energy: None
    where energy is not available)."""
    base = {r["operation"]: r for r in rows if r["mechanism"] == "baseline"}

    def energy(r: dict[str, Any]) -> float | None:
        b = base[r["operation"]]["energy_uj"]
        return None if b is None or not r["energy_uj"] else b / r["energy_uj"]

    return {(r["operation"], r["mechanism"]): (base[r["operation"]]["latency_ns"] / r["latency_ns"], energy(r))
            for r in rows}


def title(cfg: Config, nbytes: int = PAPER_BYTES) -> str:
    """What ran: the operation size and the memory system, named from the config itself."""
    d, s = cfg.data, cfg.spec
    ch = d.get("dram", {}).get("channels")
    size = f"{nbytes // 1024} KB" if nbytes % 1024 == 0 else f"{nbytes} B"
    return f"{size} operations on {s.get('speed')} / {s.get('part')}" + (f", {ch} ch" if ch else "")


def plot(rows: list[dict[str, Any]], path: Path, what: str = "4 KB operations on DDR3-1066 (8-8-8)") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    labels = [f"{r['operation']}\n{r['mechanism']}" for r in rows]
    x = range(len(rows))
    for ax, key, pkey, unit in [(axes[0], "latency_ns", "paper_latency_ns", "ns"),
                                (axes[1], "energy_uj", "paper_energy_uj", "uJ")]:
        # A memory without public currents has no energies (None): no bar, and the panel says so.
        ax.bar([i - 0.2 for i in x], [math.nan if r[key] is None else r[key] for r in rows], width=0.4,
               label="movelab")
        ax.bar([i + 0.2 for i in x], [r[pkey] or 0 for r in rows], width=0.4, label="paper (Table 3)")
        if all(r[key] is None for r in rows):
            ax.text(0.5, 0.5, "movelab: not available\n(no public currents for this part)",
                    transform=ax.transAxes, ha="center", va="center", fontsize=9)
        ax.set_xticks(list(x), labels, fontsize=7)
        ax.set_xlabel("operation and mechanism")
        ax.set_ylabel(f"{key.split('_')[0]} ({unit})")
        ax.set_title(key.split("_")[0])
    axes[1].set_yscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.suptitle(f"RowClone Table 3: {what} (paper: 4 KB on DDR3-1066 8-8-8)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def results(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Table 3's latencies and energies beside movelab's (the ledger says which are calibrated,
    and the tolerance)."""
    units = {"latency_ns": "ns", "energy_uj": "uJ"}
    return [ledger.Result(r.id, r.id.replace("/", " "), r.value, r.paper, units[r.id.rsplit("/", 1)[1]])
            for r in ledger.row_results(NAME, rows, ROW_KEY, METRICS)]


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """The headline: Table 3's predictions within the ledger's tolerance out of all of them."""
    return ledger.check(NAME, results(rows))
