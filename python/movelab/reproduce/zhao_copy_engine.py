"""Zhao, Bhuyan, Iyer, Makineni, Newell, "Hardware Support for Accelerating Data Movement in Server
Platform" (IEEE TC 2007): TCP/IP receive processing with a copy engine.

* Table 3: the reduction of execution time with an off-die engine (UMA/EMC platform) for in-order
  and out-of-order cores, 512/1024/1400-byte payloads and the SYNC_NLB, SYNC_WLB and ASYNC modes,
  split into faster copies and overlap with other work;
* Fig. 11: the on-die engine on the NUMA/IMC platform against the off-die one (1 KB, out-of-order);
* Table 4: early notification with the acknowledgment before or after the multiline snoop;
* Fig. 15: the on-die engine writing the destination into the cache;
* Figs. 12-14: the off-die engine (1 KB, out-of-order) with memory bandwidth 3.2 / 6.4 GB/s, memory
  latency 110 / 95 / 80 ns and CPU clock 2 / 3 / 4 GHz, each against BASE at the first setting
  (:data:`SENSITIVITY` says how each setting is made).

The runs are the platform model's (Rust: ``experiments::zhao_copy_engine``); the paper's values are
data (``presets/papers/zhao-copy-engine.toml``). Fractions are of the BASE system's time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Group

from movelab import _core
from movelab._util import layered, refuse_keys
from movelab.executor import costs, run_points
from movelab.reproduce import check_overrides, fraction, group, ledger, paper_data, table, write_rows

NAME = "zhao-copy-engine"
# The columns that name a row (a sweep of this reproduction's points labels statistics with them).
ROW_KEY = ["figure", "core", "payload_bytes", "mode", "placement", "variant"]
KEYS = ["figure", "core", "payload_bytes", "mode", "placement", "variant", "reduction", "faster_copy", "overlap",
        "time_ns", "base_time_ns", "ipc", "mean_copy_ns", "paper_reduction", "paper_faster_copy", "paper_overlap",
        "cache_gain", "paper_cache_gain", "change", "paper_change"]
CORES = ["in-order", "out-of-order"]
MODES = ["SYNC_NLB", "SYNC_WLB", "ASYNC"]
#: Platform keys the experiment sets itself for each run (an override of them would be dropped).
SETS = ["core.kind", "copy.mechanism", "copy.mode", "copy.placement", "copy.snoop_ack", "copy.dest_to_cache"]
_FRACTIONS = {"reduction", "faster_copy", "overlap", "paper_reduction", "paper_faster_copy", "paper_overlap",
              "cache_gain", "paper_cache_gain", "change", "paper_change"}

# Figs. 12-14 (sections 6.5, 6.6): the off-die engine on UMA/EMC, 1 KB packets, out-of-order core, with
# one platform parameter moved. Each setting: (label, its value, the platform overrides). The first
# setting is the figure's reference (its BASE is the 100% of every bar); the Table 2 platform is one
# of the settings and is not run again (Table 3's out-of-order 1 KB cell is the same run).
# - Fig. 12, memory bandwidth 3.2 -> 6.4 "GHz": Table 2's memory is two DDR2-400 channels of 3.2 GB/s
#   each (6.4 GB/s); 3.2 GB/s is one channel (modelling choice: the paper does not say how it halved
#   the bandwidth; the front-side bus keeps its 6.4 GB/s).
# - Fig. 13, memory latency 110 / 95 / 80 ns: the unloaded latency of section 6.1 ("approximately 80
#   ns ... include the delays taken to propagate the request and response via a realistic chipset")
#   grows by 15 and 30 ns in the chipset, half on the request's way and half on the response's; the
#   DRAM's 15-15-15 ns timings of Table 2 stay as they are.
# - Fig. 14, CPU clock 2 / 3 / 4 GHz: the core's clock; caches keep their latencies in cycles, the bus
#   and memory theirs in ns ("the memory subsystem is not scaled at all").
FIGURE_MODES = ["BASE", *MODES]
#: Table 2's chipset latencies (presets/platforms/zhao-uma-emc.toml), to which Fig. 13 adds.
_REQUEST_NS, _RESPONSE_NS = 12.0, 6.0


def _latency(extra_ns: float) -> dict[str, Any]:
    return {"interconnect": {"request_ns": _REQUEST_NS + extra_ns / 2, "response_ns": _RESPONSE_NS + extra_ns / 2}}


SENSITIVITY: dict[str, list[tuple[str, float, dict[str, Any]]]] = {
    "fig12": [("memory 3.2 GB/s", 3.2, {"memory": {"dram": {"channels": 1}}}), ("memory 6.4 GB/s", 6.4, {})],
    "fig13": [("latency 110 ns", 110, _latency(30)), ("latency 95 ns", 95, _latency(15)), ("latency 80 ns", 80, {})],
    "fig14": [("CPU 2 GHz", 2, {"core": {"clock_mhz": 2000}}), ("CPU 3 GHz", 3, {}),
              ("CPU 4 GHz", 4, {"core": {"clock_mhz": 4000}})],
}
#: Platform keys Figs. 12-14 set (a user override of them is refused, as it would be dropped).
SENSITIVITY_SETS = ["memory.dram.channels", "interconnect.request_ns", "interconnect.response_ns", "core.clock_mhz"]


#: Bounds of the run's sizes (a million packets is hours of simulation; a 64 KB payload is a jumbo
#: TCP segment's limit).
MAX_PACKETS = 1_000_000
MAX_PAYLOAD = 65_536


def run(
    overrides: Mapping[str, Any] | None = None,
    packets: int = 200,
    payloads: list[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows with exactly :data:`KEYS` (paper values None where the paper gives none).

    ``overrides`` (shaped like a platform config) apply to both platforms; ``progress(done, total)``
    is called after each simulation."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like a platform config, not {type(overrides).__name__}")
    if isinstance(packets, bool) or not isinstance(packets, int) or not 1 <= packets <= MAX_PACKETS:
        raise ValueError(f"packets: {packets!r} must be an integer from 1 to {MAX_PACKETS:,}")
    if payloads is not None and (not payloads or any(isinstance(p, bool) or not isinstance(p, int)
                                                     or not 1 <= p <= MAX_PAYLOAD for p in payloads)):
        raise ValueError(f"payloads: {payloads!r} must be byte counts from 1 to {MAX_PAYLOAD:,}")
    if payloads is not None and len(set(payloads)) != len(payloads):
        raise ValueError(f"payloads: {payloads!r} repeats a size (each would run twice, as rows of their own)")
    if overrides:
        refuse_keys(dict(overrides), SETS + SENSITIVITY_SETS, "zhao-copy-engine")
        check_overrides(overrides, ["zhao-uma-emc", "zhao-numa-imc"])
    pts = points(overrides, packets, payloads)
    rows = []
    for r in assemble(run_points(point, pts, progress)):
        if r.get("mode") in MODES and not (r.get("mean_copy_ns") or 0) > 0:
            # Every engine row must have offloaded its copies (the statistics say who copied).
            raise ValueError(f"zhao-copy-engine: the {r['figure']} {r['mode']} run offloaded no copy to the engine; "
                             f"its row would not be the engine it names")
        row = {k: r.get(k) for k in KEYS}
        for k in KEYS:
            v = row[k]
            if isinstance(v, float):
                row[k] = round(v, 4) if k in _FRACTIONS else round(v, 3)
        rows.append(row)
    return ledger.label_rows(NAME, rows, ROW_KEY, ledger.paper_metrics(KEYS))


def points(overrides: Mapping[str, Any] | None = None, packets: int = 200,
           payloads: list[int] | None = None) -> list[dict[str, Any]]:
    """The independent runs: a Table 3 cell per (core, payload), and the figures (Fig. 11, Table 4,
    Fig. 15) as one more."""
    base = {"overrides": dict(overrides) if overrides else None, "packets": packets}
    cells = [{**base, "core": c, "payload": p} for c in CORES for p in (payloads or [512, 1024, 1400])]
    # Figs. 12-14: the settings other than Table 2's (which is the out-of-order 1 KB cell above).
    sens = [{**base, "sensitivity": fig, "setting": label, "setting_overrides": ov}
            for fig, settings in SENSITIVITY.items() for label, _, ov in settings
            if ov and 1024 in (payloads or [1024])]
    return [*cells, {**base, "figures": True}, *sens]


#: A scheduling estimate (CPU seconds per packet of one simulation, and per simulation, measured
#: by ``python -m movelab.reproduce._critical_path`` at 50 and 200 packets): orders the work, never a row.
CPU_S_PER_PACKET, CPU_S_PER_RUN = 3e-4, 0.04


def cost(p: dict[str, Any]) -> float:
    """A point's CPU seconds, estimated: a Table 3 cell or a setting of Figs. 12-14 is five
    simulations (base, no copies, three engine modes), the figures ten."""
    runs = 10 if p.get("figures") else 5
    return runs * (CPU_S_PER_RUN + p["packets"] * CPU_S_PER_PACKET)


@costs(cost)
def point(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one point of :func:`points` (the model's, unrounded)."""
    if p.get("sensitivity"):
        ov = json.dumps(layered(p.get("overrides"), p["setting_overrides"]))
        raw = json.loads(_core.reproduce_zhao(ov, p["packets"], [1024], None, ["out-of-order"], False))
        return [{**r, "figure": p["sensitivity"], "variant": p["setting"]} for r in raw]
    ov = json.dumps(p["overrides"]) if p.get("overrides") else None
    if p.get("figures"):
        raw = _core.reproduce_zhao(ov, p["packets"], [1024], None, [], True)
    else:
        raw = _core.reproduce_zhao(ov, p["packets"], [p["payload"]], None, [p["core"]], False)
    return json.loads(raw)


def assemble(results: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The points' rows in the order one whole run gives them: Table 3, then Fig. 11 with the
    off-die bars (Table 3's out-of-order 1 KB cells) after the on-die ones, Table 4, Fig. 15."""
    t3 = [r for rs in results for r in rs if r["figure"] == "table3"]
    figs = [r for rs in results for r in rs if r["figure"] not in ("table3", *SENSITIVITY)]
    on_die = [r for r in figs if r["figure"] == "fig11"]
    off_die = [{**r, "figure": "fig11", "paper_reduction": None, "paper_faster_copy": None, "paper_overlap": None}
               for r in t3 if r["core"] == "out-of-order" and r["payload_bytes"] == 1024]
    rest = [r for r in figs if r["figure"] != "fig11"]
    sens = [r for rs in results for r in rs if r["figure"] in SENSITIVITY]
    return t3 + (on_die + off_die if on_die else []) + rest + sensitivity_rows(t3, sens)


def sensitivity_rows(t3: list[dict[str, Any]], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Figs. 12-14 from the runs at each setting (Table 3's out-of-order 1 KB rows are the Table 2
    setting): per figure, setting and mode, the reduction of execution time against BASE at the
    figure's first setting, and ``change``, the points the mode gained since that first setting.
    Empty when the runs do not include the Table 2 setting's cell."""
    ref_cell = [r for r in t3 if r["core"] == "out-of-order" and r["payload_bytes"] == 1024]
    if not ref_cell or not runs:
        return []
    paper = paper_data(NAME)
    out = []
    for fig, settings in SENSITIVITY.items():
        # time of each (setting, mode): BASE is each row's base_time_ns
        times: dict[tuple[str, str], float] = {}
        ipc: dict[tuple[str, str], Any] = {}
        copy_ns: dict[tuple[str, str], Any] = {}
        for label, _, ov in settings:
            rs = ref_cell if not ov else [r for r in runs if r["figure"] == fig and r["variant"] == label]
            for r in rs:
                times[(label, r["mode"])] = r["time_ns"]
                times[(label, "BASE")] = r["base_time_ns"]
                ipc[(label, r["mode"])] = r["ipc"]
                copy_ns[(label, r["mode"])] = r["mean_copy_ns"]
        first = settings[0][0]
        if (first, "BASE") not in times:
            continue
        ref = times[(first, "BASE")]
        for label, value, _ in settings:
            for mode in FIGURE_MODES:
                t = times.get((label, mode))
                if t is None:
                    continue
                reduction = 1.0 - t / ref
                change = reduction - (1.0 - times[(first, mode)] / ref) if (first, mode) in times else None
                pr, pc = _paper_sensitivity(paper, fig, mode, value)
                out.append({"figure": fig, "core": "out-of-order", "payload_bytes": 1024, "mode": mode,
                            "placement": "off-die", "variant": label, "reduction": reduction, "faster_copy": None,
                            "overlap": None, "time_ns": t, "base_time_ns": ref, "ipc": ipc.get((label, mode)),
                            "mean_copy_ns": copy_ns.get((label, mode)), "paper_reduction": pr,
                            "paper_faster_copy": None, "paper_overlap": None, "cache_gain": None,
                            "paper_cache_gain": None, "change": None if label == first else change,
                            "paper_change": pc})
    return out


def _paper_sensitivity(paper: Mapping[str, Any], fig: str, mode: str, value: float) -> tuple[Any, Any]:
    """The paper's reduction and change for ``fig``'s ``mode`` at setting ``value`` (None where the text
    gives none)."""
    key = {"fig13": "latency_ns", "fig14": "clock_ghz"}.get(fig)
    entries = paper.get(fig, []) if key else []
    for e in entries if isinstance(entries, list) else []:
        if e.get("mode") == mode and float(e.get(key, -1)) == float(value):
            return e.get("reduction"), e.get("change")
    return None, None


def _pair(v: Any, p: Any) -> str:
    return f"{fraction(v)} ({fraction(p)})" if p is not None else fraction(v)


def tables(rows: list[dict[str, Any]]) -> list[Group]:
    """Table 3, Fig. 11, Table 4 and Fig. 15 as rich tables: movelab% (paper%)."""
    out = []
    t3 = {(r["core"], r["payload_bytes"], r["mode"]): r for r in rows if r["figure"] == "table3"}
    t = table("Zhao et al. Table 3: off-die engine (UMA/EMC); % of BASE time: movelab (paper)",
               "overall = faster copy + overlap; in-ord = in-order core, OoO = out-of-order core", tight=True)
    t.add_column("payload\nmode", no_wrap=True)
    for core in CORES:
        short = "in-ord" if core == "in-order" else "OoO"
        for col in ["overall", "faster", "overlap"]:
            t.add_column(f"{short}\n{col}", justify="right", no_wrap=True)
    for payload in sorted({k[1] for k in t3}):
        t.add_row(f"[bold]{payload} B[/bold]")
        for mode in MODES:
            cells = []
            for core in CORES:
                r = t3.get((core, payload, mode))
                if r is None:
                    cells += ["-"] * 3
                    continue
                cells += [_pair(r["reduction"], r["paper_reduction"]), _pair(r["faster_copy"], r["paper_faster_copy"]),
                          _pair(r["overlap"], r["paper_overlap"])]
            t.add_row(mode, *cells)
    out.append(group(t))

    paper = paper_data(NAME)
    f11 = {(r["placement"], r["mode"]): r for r in rows if r["figure"] == "fig11"}
    if f11:
        numa = paper.get("fig11", {}).get("numa_base_reduction")
        t = table("Fig. 11: 1 KB, out-of-order core; reduction % of UMA/EMC BASE time")
        t.add_column("mode", no_wrap=True)
        t.add_column("off-die (UMA/EMC)", justify="right", no_wrap=True)
        t.add_column("on-die (NUMA/IMC)", justify="right", no_wrap=True)
        t.add_column("paper", no_wrap=True)
        notes = {"BASE": f"NUMA/IMC base ~{fraction(numa, 0)}% faster" if numa is not None else "",
                 "SYNC_NLB": "on-die ~ off-die", "SYNC_WLB": "on-die ~ off-die", "ASYNC": "on-die < off-die"}
        for mode in ["BASE", *MODES]:
            off = f11.get(("off-die", mode))
            on = f11.get(("on-die", mode))
            t.add_row(mode, "0.0" if mode == "BASE" else fraction(off and off["reduction"]),
                      fraction(on and on["reduction"]), notes[mode])
        out.append(group(t))

    t4 = [r for r in rows if r["figure"] == "table4"]
    if t4:
        t = table("Table 4: ASYNC on-die, early notification; reduction % of NUMA/IMC BASE")
        t.add_column("acknowledgment", no_wrap=True)
        t.add_column("movelab", justify="right")
        t.add_column("paper", justify="right")
        t.add_column("mean copy ns", justify="right")
        for r in t4:
            t.add_row(r["variant"], fraction(r["reduction"]), fraction(r["paper_reduction"]),
                      f"{r['mean_copy_ns']:.0f}")
        out.append(group(t))

    titles = {"fig12": "Fig. 12: memory bandwidth", "fig13": "Fig. 13: memory latency", "fig14": "Fig. 14: CPU clock"}
    for fig, settings in SENSITIVITY.items():
        rs = {(r["variant"], r["mode"]): r for r in rows if r["figure"] == fig}
        if not rs:
            continue
        t = table(f"{titles[fig]} (off-die engine, UMA/EMC, 1 KB, out-of-order); reduction % of BASE at "
                  f"{settings[0][0]}: movelab (paper)",
                  f"change: points gained from {settings[0][0]} to the last setting (paper's in parentheses)")
        t.add_column("mode", no_wrap=True)
        for label, _, _ in settings:
            t.add_column(label, justify="right", no_wrap=True)
        t.add_column("change", justify="right", no_wrap=True)
        last = settings[-1][0]
        for mode in FIGURE_MODES:
            cells = []
            for label, _, _ in settings:
                r = rs.get((label, mode))
                cells.append("-" if r is None else _pair(r["reduction"], r["paper_reduction"]))
            r = rs.get((last, mode))
            cells.append("-" if r is None else _pair(r["change"], r["paper_change"]))
            t.add_row(mode, *cells)
        out.append(group(t))

    f15 = [r for r in rows if r["figure"] == "fig15"]
    if f15:
        t = table("Fig. 15: on-die engine writing the destination into the cache, %",
                   "gain: further reduction over writing to memory, % of UMA/EMC BASE time")
        t.add_column("mode", no_wrap=True)
        t.add_column("reduction", justify="right")
        t.add_column("gain", justify="right")
        t.add_column("paper gain", justify="right")
        for r in f15:
            t.add_row(r["mode"], fraction(r["reduction"]), fraction(r["cache_gain"]), fraction(r["paper_cache_gain"]))
        out.append(group(t))
    return out


# ------------------------------------------------------------------------------------------------
# Plots


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_table3(rows: list[dict[str, Any]], path: Path) -> None:
    """Per core: for each payload and mode, movelab's and the paper's reduction, stacked as faster
    copy + overlap."""
    plt = _plt()
    t3 = [r for r in rows if r["figure"] == "table3"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), sharey=True)
    for ax, core in zip(axes, CORES, strict=True):
        rs = [r for r in t3 if r["core"] == core]
        rs.sort(key=lambda r: (r["payload_bytes"], MODES.index(r["mode"])))
        x = list(range(len(rs)))
        for off, who, alpha in [(-0.2, "", 1.0), (0.2, "paper_", 0.55)]:
            fc = [(r[f"{who}faster_copy"] or 0) * 100 for r in rs]
            ov = [(r[f"{who}overlap"] or 0) * 100 for r in rs]
            label = "paper" if who else "movelab"
            ax.bar([i + off for i in x], fc, width=0.4, color="tab:blue", alpha=alpha, label=f"{label}: faster copy")
            ax.bar([i + off for i in x], ov, width=0.4, bottom=fc, color="tab:orange", alpha=alpha,
                   label=f"{label}: overlap")
        ax.set_xticks(x, [f"{r['payload_bytes']}\n{r['mode']}" for r in rs], fontsize=7)
        ax.set_xlabel("payload (bytes) and engine mode")
        ax.set_ylabel("reduction of BASE time, %")
        ax.set_title(f"{core} core")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.tick_params(labelleft=True)  # shared y: every panel keeps its tick labels
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False, fontsize=8)
    fig.suptitle("Zhao et al. Table 3: off-die copy engine on UMA/EMC (left bar movelab, right bar paper)")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_fig11(rows: list[dict[str, Any]], path: Path) -> None:
    plt = _plt()
    f11 = {(r["placement"], r["mode"]): r for r in rows if r["figure"] == "fig11"}
    modes = ["BASE", *MODES]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = list(range(len(modes)))
    for off, placement, label in [(-0.2, "off-die", "off-die (UMA/EMC)"), (0.2, "on-die", "on-die (NUMA/IMC)")]:
        vals = [(f11[(placement, m)]["reduction"] if (placement, m) in f11 else 0.0) * 100 for m in modes]
        ax.bar([i + off for i in x], vals, width=0.4, label=label)
    numa = paper_data(NAME).get("fig11", {}).get("numa_base_reduction")
    if numa is not None:
        ax.plot([0.2], [numa * 100], marker="_", markersize=18, color="black", linestyle="none",
                label="paper: NUMA/IMC base (text)")
    t3 = {r["mode"]: r["paper_reduction"] for r in rows if r["figure"] == "table3" and r["core"] == "out-of-order"
          and r["payload_bytes"] == 1024 and r["paper_reduction"] is not None}
    pts = [(i - 0.2, t3[m] * 100) for i, m in enumerate(modes) if m in t3]
    if pts:
        ax.plot([a for a, _ in pts], [b for _, b in pts], marker="_", markersize=18, color="grey", linestyle="none",
                label="paper: off-die (Table 3)")
    ax.set_xticks(x, modes)
    ax.set_xlabel("copy mode (BASE: the core copies)")
    ax.set_ylabel("reduction vs UMA/EMC BASE, %")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.legend(frameon=False, fontsize=8)
    ax.set_title("Zhao et al. Fig. 11: 1 KB payloads, out-of-order core")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_fig15(rows: list[dict[str, Any]], path: Path) -> None:
    plt = _plt()
    f15 = [r for r in rows if r["figure"] == "fig15"]
    t4 = [r for r in rows if r["figure"] == "table4"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, rs, label, key, pkey, title in [
        (axes[0], f15, "mode", "cache_gain", "paper_cache_gain", "Fig. 15: gain from destination into cache"),
        (axes[1], t4, "variant", "reduction", "paper_reduction", "Table 4: ASYNC on-die, early notification"),
    ]:
        x = list(range(len(rs)))
        ax.bar([i - 0.2 for i in x], [(r[key] or 0) * 100 for r in rs], width=0.4, label="movelab")
        ax.bar([i + 0.2 for i in x], [(r[pkey] or 0) * 100 for r in rs], width=0.4, label="paper")
        ax.set_xticks(x, [r[label] for r in rs])
        ax.set_xlabel("engine mode" if label == "mode" else "acknowledgment")
        ax.set_ylabel("gain, percentage points of BASE time" if key == "cache_gain"
                      else "reduction of NUMA/IMC BASE, %")
        ax.set_title(title, fontsize=10)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_sensitivity(rows: list[dict[str, Any]], path: Path) -> None:
    """Figs. 12-14: each mode's reduction against the figure's reference BASE, per setting; the
    paper's values (where its text gives them) as marks."""
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    titles = {"fig12": "Fig. 12: memory bandwidth", "fig13": "Fig. 13: memory latency", "fig14": "Fig. 14: CPU clock"}
    for ax, (name, settings) in zip(axes, SENSITIVITY.items(), strict=True):
        rs = {(r["variant"], r["mode"]): r for r in rows if r["figure"] == name}
        labels = [label for label, _, _ in settings]
        w = 0.8 / len(labels)
        for k, label in enumerate(labels):
            xs = [i + (k - (len(labels) - 1) / 2) * w for i in range(len(FIGURE_MODES))]
            vals = [(rs[(label, m)]["reduction"] * 100 if (label, m) in rs else 0.0) for m in FIGURE_MODES]
            ax.bar(xs, vals, w, label=label)
            pts = [(x, rs[(label, m)]["paper_reduction"] * 100) for x, m in zip(xs, FIGURE_MODES, strict=True)
                   if (label, m) in rs and rs[(label, m)]["paper_reduction"] is not None]
            if pts:
                ax.plot([x for x, _ in pts], [v for _, v in pts], "k_", markersize=12,
                        label="paper (text)" if k == 0 or name == "fig14" else None)
        ax.set_xticks(range(len(FIGURE_MODES)), FIGURE_MODES, fontsize=8)
        ax.set_xlabel("copy mode (BASE: the core copies)")
        ax.set_title(f"{titles[name]} (vs BASE at {labels[0]})", fontsize=9)
        ax.tick_params(labelleft=True)
        ax.axhline(0, color="black", linewidth=0.6)
        handles, names = ax.get_legend_handles_labels()
        uniq = dict(zip(names, handles, strict=True))
        ax.legend(uniq.values(), uniq.keys(), frameon=False, fontsize=7)
        ax.set_ylabel("reduction of the reference BASE time, %")
    fig.suptitle("Zhao et al. Figs. 12-14: off-die engine on UMA/EMC, 1 KB packets, out-of-order core", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Writes the JSON, CSV and PNGs into ``out``; returns the paths."""
    paths = write_rows(rows, out, NAME, KEYS)
    paths += [out / f"{NAME}-table3.png", out / f"{NAME}-fig11.png", out / f"{NAME}-fig15.png"]
    plot_table3(rows, paths[2])
    plot_fig11(rows, paths[3])
    plot_fig15(rows, paths[4])
    paths.append(out / f"{NAME}-fig12-14.png")
    plot_sensitivity(rows, paths[-1])
    return paths


def results(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Every paper value beside movelab's, and what the text states about Figs. 11-14 (the ledger
    says which are calibrated, and the tolerance)."""
    return [*ledger.percent_results(NAME, rows, ROW_KEY, ledger.paper_metrics(KEYS)), *fig11_results(rows),
            *sensitivity_statements(rows)]


def fig11_results(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Section 6.4 on Fig. 11 (1 KB, out-of-order core, reductions of UMA/EMC BASE time): the NUMA/IMC
    system is "better than the UMA/EMC system by about 10 percent" (the on-die BASE row's reduction);
    "the benefits of synchronous copy engines are about the same for both architectures" (each
    synchronous mode's on-die and off-die reductions within the reproduction's 5 points); "the
    performance of the asynchronous on-die copy engine is lower than that of the off-die copy
    engine". None without the figure's rows."""
    f11 = {(r["placement"], r["mode"]): r["reduction"] for r in rows if r["figure"] == "fig11"}
    if not all((p, m) in f11 for p in ("on-die", "off-die") for m in MODES) or ("on-die", "BASE") not in f11:
        return []
    f11_paper = paper_data(NAME)["fig11"]
    numa, within = f11_paper["numa_base_reduction"], f11_paper["sync_same_within"]
    same = max(abs(f11[("on-die", m)] - f11[("off-die", m)]) for m in ("SYNC_NLB", "SYNC_WLB"))
    on, off = f11[("on-die", "ASYNC")], f11[("off-die", "ASYNC")]
    return [
        ledger.Result("fig11/numa-base-faster", "Fig. 11: NUMA/IMC BASE faster than UMA/EMC BASE",
                      f11[("on-die", "BASE")], numa, "%"),
        ledger.Result("fig11/sync-same-on-and-off-die", f"Fig. 11: synchronous engines gain about the same on- and "
                      f"off-die (largest difference {same * 100:.1f} points)", None, None,
                      holds=same <= within),
        ledger.Result("fig11/async-on-die-less", f"Fig. 11: the asynchronous engine gains less on-die than off-die "
                      f"({on * 100:.1f}% against {off * 100:.1f}%)", None, None, holds=on < off),
    ]


def sensitivity_statements(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Sections 6.5 and 6.6's statements about Figs. 12-14, judged on the figures' rows: each mode's
    ``change`` from the figure's first setting to its last (twice the memory bandwidth, 80 ns, 4
    GHz). A figure whose rows are missing (runs without the 1 KB cell) gives no statement."""
    paper = paper_data(NAME)
    out = []
    for fig, settings in SENSITIVITY.items():
        last = settings[-1][0]
        gain = {r["mode"]: r["change"] for r in rows
                if r["figure"] == fig and r["variant"] == last and r["change"] is not None}
        if set(gain) != set(FIGURE_MODES):
            continue
        shown = ", ".join(f"{m} {gain[m] * 100:.1f}" for m in FIGURE_MODES)
        if fig == "fig12":
            out.append(ledger.Result("fig12/every-mode-faster", f"Fig. 12: {paper['fig12']['statement']} (points "
                                     f"gained: {shown})", None, None, holds=min(gain.values()) > 0))
            continue
        st = paper[f"{fig}_statement"]
        out.append(ledger.Result(f"{fig}/engines-gain-less-than-base",
                                 f"Fig. {fig[3:]}: {st['statement']} (points gained: "
                                 f"{shown})", None, None, holds=max(gain[m] for m in MODES) < gain["BASE"]))
        if fig == "fig14":
            below = st["async_gain_below"]
            out.append(ledger.Result("fig14/async-almost-no-gain", f"Fig. 14: {st['async_statement']} (ASYNC gains "
                                     f"{gain['ASYNC'] * 100:.1f} points; read as under {below * 100:g})", None, None,
                                     holds=gain["ASYNC"] < below))
    return out


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """The headline: the predictions within the ledger's tolerance out of all of them."""
    return ledger.check(NAME, results(rows))
