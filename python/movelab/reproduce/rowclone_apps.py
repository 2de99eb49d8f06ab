"""RowClone (MICRO 2013) sections 7.3 and 7.5: the copy/initialisation-intensive applications alone:

* IPC of the baseline, RowClone and RowClone-ZI per application (Fig. 11);
* the reduction of DRAM energy and of memory bandwidth (Table 5), beside the paper's values;
* the fraction of the baseline's memory traffic due to copies and initialisation (Fig. 10);
* the same under section 7.5's memory-controller-based DMA (MC-DMA: the controller does the bulk
  operations RowClone does, moving every line over the channel), judged by the section's means
  and its statement about energy.

The applications (bootup, compile, forkbench, mcached, mysql, shell) are parameter sets of one
program (``presets/workloads/rowclone-apps/``; docs/rowclone-system.md says what each stands for and
which numbers come from the paper). The runs are the platform model's (Rust:
``experiments::rowclone_apps``); the paper's values come from ``presets/papers/rowclone.toml``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Group

from movelab import _core
from movelab._util import refuse_keys, refuse_unread
from movelab.executor import costs, run_points
from movelab.platform import ENGINE_KEYS
from movelab.reproduce import check_overrides, fraction, group, ledger, paper_data, pyplot, table, write_rows

NAME = "rowclone-apps"
ROW_KEY = ["app", "mechanism"]
KEYS = ["app", "mechanism", "ipc", "speedup", "paper_speedup", "energy_reduction", "paper_energy_reduction",
        "bandwidth_reduction", "paper_bandwidth_reduction", "copy_init_fraction", "bytes_per_instruction",
        "energy_nj_per_instruction"]
APPS = ["bootup", "compile", "forkbench", "mcached", "mysql", "shell"]
MECHS = ["baseline", "rowclone", "rowclone-zi", "mc-dma"]
#: The mechanisms' names in the 80-column table.
SHORT = {"baseline": "base", "rowclone": "RC", "rowclone-zi": "RC-ZI", "mc-dma": "MC-DMA"}
#: The platform every run starts from (Rust: ``rowclone_apps::alone``).
PLATFORM = "rowclone-system"
#: Platform keys the experiment sets itself for each run (an override of them would be dropped;
#: MC-DMA is an agent the experiment lists).
SETS = ["copy.mechanism", "agents"]
#: Keys none of RowClone's reproductions reads: they run the base system, RowClone, RowClone-ZI and
#: MC-DMA, never a copy engine (an override of one changed no row).
UNREAD = [f"copy.{k}" for k in ENGINE_KEYS]
UNREAD_WHY = "runs no copy engine (its mechanisms are the base system, RowClone, RowClone-ZI and MC-DMA)"
#: Default run lengths (program instructions per application; docs/rowclone-system.md).
INSTRUCTIONS = 100_000
WARMUP = 50_000
MAX_INSTRUCTIONS = 1 << 32
#: Largest application parameter override (Rust: ``rowclone_apps::MAX_APP_PARAM``).
MAX_APP_PARAM = 1_000_000


def check_lengths(instructions: Any, warmup: Any) -> None:
    """Refuses run lengths out of range."""
    for v, what, lo in [(instructions, "instructions", 1), (warmup, "warmup", 0)]:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= MAX_INSTRUCTIONS:
            raise ValueError(f"{what}: {v!r} must be an integer from {lo} to {MAX_INSTRUCTIONS:,}")


def app_param_names() -> set[str]:
    """The parameters of the copy/initialisation-intensive applications' program (the shipped
    ``workloads/rowclone-apps/copy-init-app.toml``), which ``app_params`` may override."""
    import tomllib

    from movelab import data

    return set(tomllib.loads(data.file_text("workloads/rowclone-apps/copy-init-app.toml"))["params"])


def check_app_params(app_params: Mapping[str, Any] | None) -> dict[str, int] | None:
    """Overrides of the copy/initialisation-intensive applications' parameters: names to integers."""
    if app_params is None:
        return None
    if not isinstance(app_params, Mapping):
        raise TypeError(f"app_params must be a dict of parameter names to integers, not {type(app_params).__name__}")
    out = {}
    known = app_param_names()
    for k, v in app_params.items():
        if k not in known:
            # Refused here, before any point starts, rather than by every point's workload loader.
            raise ValueError(f"app_params: {k!r}: the copy/initialisation-intensive applications have no such "
                             f"parameter (they have: {', '.join(sorted(known))})")
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_APP_PARAM:
            raise ValueError(f"app_params: {k} = {v!r} must be an integer from 0 to {MAX_APP_PARAM:,}")
        out[str(k)] = v
    return out


def paper() -> dict[str, Any]:
    """The paper's statements: ``table5`` (by application), ``fig10``, ``fig11``, ``mc_dma``
    (section 7.5)."""
    d = paper_data("rowclone")
    return {"table5": {r["app"]: r for r in d.get("table5", [])}, "fig10": d.get("fig10", {}),
            "fig11": d.get("fig11", {}), "mc_dma": d.get("mc_dma", {})}


def _paper_cells(app: str, mech: str, p: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(speedup, energy reduction, bandwidth reduction) the paper gives for (app, mechanism)."""
    t5 = p["table5"].get(app, {})
    if mech == "rowclone":
        return None, t5.get("rowclone_energy_reduction"), t5.get("rowclone_bandwidth_reduction")
    if mech == "rowclone-zi":
        return (p["fig11"].get("zi_speedup", {}).get(app), t5.get("zi_energy_reduction"),
                t5.get("zi_bandwidth_reduction"))
    return None, None, None


def run(
    overrides: Mapping[str, Any] | None = None,
    apps: list[str] | None = None,
    instructions: int = INSTRUCTIONS,
    warmup: int = WARMUP,
    app_params: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows with exactly :data:`KEYS`: each application under each mechanism."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like a platform config, not {type(overrides).__name__}")
    if overrides:
        refuse_keys(dict(overrides), SETS, NAME)
        refuse_unread(overrides, UNREAD, f"{NAME} {UNREAD_WHY}")
        check_overrides(overrides, [PLATFORM])
    check_lengths(instructions, warmup)
    ap = check_app_params(app_params)
    if isinstance(apps, str):
        raise TypeError(f"apps: a list of application names (e.g. [{apps!r}]), not a string")
    names = list(apps) if apps is not None else APPS
    if not names or len(names) > 64 or not all(isinstance(a, str) for a in names):
        raise ValueError(f"apps: {names!r} must be a list of 1 to 64 application names")
    unknown = [a for a in names if a not in APPS]
    if unknown:
        raise ValueError(f"apps: unknown application {unknown[0]!r} (known: {', '.join(APPS)})")
    pts = points(overrides, names, instructions, warmup, ap)
    p = paper()
    rows = []
    for r in (r for rs in run_points(point, pts, progress) for r in rs):
        ps, pe, pb = _paper_cells(r["app"], r["mechanism"], p)
        row = {k: r.get(k) for k in KEYS}
        row.update(paper_speedup=ps, paper_energy_reduction=pe, paper_bandwidth_reduction=pb)
        for k in ["ipc", "speedup", "energy_reduction", "bandwidth_reduction", "copy_init_fraction",
                  "bytes_per_instruction", "energy_nj_per_instruction"]:
            row[k] = round(row[k], 4)
        rows.append(row)
    return ledger.label_rows(NAME, rows, ROW_KEY, ledger.paper_metrics(KEYS))


def points(overrides: Mapping[str, Any] | None, apps: list[str], instructions: int, warmup: int,
           app_params: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """The independent runs: one application (under the four mechanisms) each."""
    return [{"overrides": dict(overrides) if overrides else None, "app": a, "instructions": instructions,
             "warmup": warmup, "app_params": dict(app_params) if app_params else None} for a in apps]


#: Scheduling estimates (CPU seconds of a run's set-up, and per simulated instruction of one core
#: alone, fitted to ``python -m movelab.reproduce._critical_path``'s times at 15k and 150k
#: instructions): they order the work, never a row.
RUN_S, CPU_S_PER_INSTRUCTION = 0.065, 0.07e-6


def run_cost(p: dict[str, Any]) -> float:
    """One alone run's CPU seconds, estimated: its set-up, then warm-up plus measured instructions."""
    return RUN_S + (p["instructions"] + p["warmup"]) * CPU_S_PER_INSTRUCTION


def cost(p: dict[str, Any]) -> float:
    """A point's CPU seconds, estimated: four alone runs (one per mechanism)."""
    return len(MECHS) * run_cost(p)


@costs(cost)
def point(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one point of :func:`points` (the model's, unrounded)."""
    ov = json.dumps(p["overrides"]) if p.get("overrides") else None
    ap = json.dumps(p["app_params"]) if p.get("app_params") else None
    return json.loads(_core.reproduce_rowclone_apps([p["app"]], p["instructions"], p["warmup"], ov, ap, None))


def mc_dma(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Section 7.5's figures from the rows: ``speedup`` (the mean over the paper's six applications
    of MC-DMA's IPC over the baseline's) and ``over_rowclone`` (of MC-DMA's IPC over RowClone's),
    each None unless all six ran; ``energy`` (application -> MC-DMA's DRAM energy reduction, every
    application that ran under MC-DMA)."""
    by = {(r["app"], r["mechanism"]): r for r in rows}
    ran = [a for a in dict.fromkeys(r["app"] for r in rows)
           if all((a, m) in by for m in ("baseline", "rowclone", "mc-dma"))]
    six = all(a in ran for a in APPS)
    sp = [by[(a, "mc-dma")]["speedup"] for a in APPS] if six else []
    rc = [by[(a, "mc-dma")]["ipc"] / by[(a, "rowclone")]["ipc"] for a in APPS
          if six and by[(a, "rowclone")]["ipc"] > 0]
    return {"speedup": sum(sp) / len(sp) if sp else None,
            "over_rowclone": sum(rc) / len(rc) if six and len(rc) == len(APPS) else None,
            "energy": {a: by[(a, "mc-dma")]["energy_reduction"] for a in ran}}


def summary(rows: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(statement, movelab, paper) for the paper's statements of sections 7.3 and 7.5."""
    by = {(r["app"], r["mechanism"]): r for r in rows}
    p = paper()
    out = []
    fr = [r["copy_init_fraction"] for r in rows if r["mechanism"] == "baseline"]
    if fr:
        f10 = p["fig10"]
        out.append(("copy + initialisation share of memory traffic (Fig. 10)",
                    f"{min(fr) * 100:.0f}% - {max(fr) * 100:.0f}%",
                    f"{f10.get('copy_init_fraction_min', 0) * 100:.0f}% - "
                    f"{f10.get('copy_init_fraction_max', 0) * 100:.0f}%"))
    for app, sp in p["fig11"].get("zi_speedup", {}).items():
        r = by.get((app, "rowclone-zi"))
        if r:
            out.append((f"RowClone-ZI speedup, {app} (Fig. 11)", f"{r['speedup']:.2f}x", f"{sp:.2f}x"))
    deg = [a for a in p["fig11"].get("rowclone_degrades", []) if (a, "rowclone") in by]
    if deg:
        out.append(("RowClone on " + ", ".join(deg) + " (Fig. 11)",
                    ", ".join(f"{by[(a, 'rowclone')]['speedup']:.2f}x" for a in deg), "slightly below 1x"))
    zi = [r for r in rows if r["mechanism"] == "rowclone-zi"]
    if zi:
        out.append(("RowClone-ZI never slower than the baseline (section 7.3)",
                    f"lowest {min(r['speedup'] for r in zi):.2f}x", "improves every application"))
    mc, pm = mc_dma(rows), p["mc_dma"]
    if mc["speedup"] is not None:
        out.append(("MC-DMA over the baseline, mean of six (section 7.5)", f"{mc['speedup']:.2f}x",
                    f"{pm.get('speedup_vs_baseline', 0):.2f}x"))
    if mc["over_rowclone"] is not None:
        out.append(("MC-DMA over RowClone, mean of six (section 7.5)", f"{mc['over_rowclone']:.2f}x",
                    f"{pm.get('speedup_vs_rowclone', 0):.2f}x"))
    if mc["energy"]:
        best = max(mc["energy"], key=mc["energy"].get)
        out.append(("MC-DMA saves no DRAM energy (section 7.5)",
                    f"most saved {mc['energy'][best] * 100:.1f}% ({best})", "none saved"))
    return out


def tables(rows: list[dict[str, Any]]) -> list[Group]:
    t = table("RowClone sections 7.3 and 7.5: applications alone (Fig. 11 IPC, Table 5 reductions over the "
              "baseline, Fig. 10 copy + init share; MC-DMA)",
              "paper: Table 5; Fig. 11's speedups where the text gives them (forkbench, shell); section 7.5 gives "
              "MC-DMA's means only (below). Energy and bandwidth are per program instruction over the measured "
              "window.", tight=True)
    for col in ["app", "mech", "IPC", "speedup", "paper", "energy %", "paper", "bandwidth %", "paper",
                "copy+init %"]:
        t.add_column(col, justify="left" if col in ("app", "mech") else "right", no_wrap=True)
    last = None
    for r in rows:
        if last is not None and r["app"] != last:
            t.add_section()
        last = r["app"]
        base = r["mechanism"] == "baseline"
        t.add_row(r["app"], SHORT.get(r["mechanism"], r["mechanism"]), f"{r['ipc']:.3f}", f"{r['speedup']:.2f}",
                  "-" if r["paper_speedup"] is None else f"{r['paper_speedup']:.2f}",
                  "-" if base else fraction(r["energy_reduction"]), fraction(r["paper_energy_reduction"], 0),
                  "-" if base else fraction(r["bandwidth_reduction"]), fraction(r["paper_bandwidth_reduction"], 0),
                  fraction(r["copy_init_fraction"]) if base else "")
    out = [group(t)]
    s = summary(rows)
    if s:
        t = table("Beside the paper's statements (sections 7.3 and 7.5)")
        for col in ["statement", "movelab", "paper"]:
            t.add_column(col, no_wrap=col != "statement", justify="left" if col == "statement" else "right")
        for row in s:
            t.add_row(*row)
        out.append(group(t))
    return out


def plot(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Fig. 11 (IPC by mechanism), Table 5 (energy and bandwidth reductions beside the paper's) and
    Fig. 10 (copy + init share); returns the paths."""
    plt = pyplot()
    apps = list(dict.fromkeys(r["app"] for r in rows))
    by = {(r["app"], r["mechanism"]): r for r in rows}
    x = range(len(apps))
    w = 0.27
    paths = []

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    w = 0.8 / len(MECHS)
    for k, m in enumerate(MECHS):
        vals = [by[(a, m)]["ipc"] if (a, m) in by else 0 for a in apps]
        bars = ax.bar([i + (k - (len(MECHS) - 1) / 2) * w for i in x], vals, w, label=m)
        if m == "rowclone-zi":
            for b, a in zip(bars, apps, strict=True):
                if (a, m) in by:
                    ax.annotate(f"{(by[(a, m)]['speedup'] - 1) * 100:+.0f}%", (b.get_x() + w / 2, b.get_height()),
                                ha="center", va="bottom", fontsize=7)
    ax.set_xticks(list(x), apps)
    ax.set_ylabel("IPC (program instructions per cycle)")
    ax.set_title("Applications alone: IPC (RowClone Fig. 11 and section 7.5's MC-DMA; label: RowClone-ZI over "
                 "baseline)", fontsize=9)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    paths.append(out / f"{NAME}-ipc.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, key, label in [(axes[0], "energy_reduction", "DRAM energy reduction, %"),
                           (axes[1], "bandwidth_reduction", "memory bandwidth reduction, %")]:
        for k, m in enumerate(MECHS[1:]):
            off = (k - (len(MECHS) - 2) / 2) * w
            vals = [by[(a, m)][key] * 100 if (a, m) in by else 0 for a in apps]
            ax.bar([i + off for i in x], vals, w, label=f"{m}", color=f"C{MECHS.index(m)}")
            ref = [by[(a, m)].get(f"paper_{key}") if (a, m) in by else None for a in apps]
            px = [i + off for i, v in zip(x, ref, strict=True) if v is not None]
            ax.plot(px, [v * 100 for v in ref if v is not None], "k_", markersize=12,
                    label="paper (Table 5)" if k == 0 else None)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xticks(list(x), apps, fontsize=8)
        ax.set_ylabel(label)
        ax.legend(frameon=False, fontsize=7)
    ax = axes[2]
    ax.bar(list(x), [by[(a, "baseline")]["copy_init_fraction"] * 100 if (a, "baseline") in by else 0
                     for a in apps], 0.5, color="grey")
    f10 = paper()["fig10"]
    if f10:
        ax.axhspan(f10.get("copy_init_fraction_min", 0) * 100, f10.get("copy_init_fraction_max", 0) * 100,
                   color="tab:blue", alpha=0.1, label="paper's range (Fig. 10)")
        ax.legend(frameon=False, fontsize=7)
    ax.set_xticks(list(x), apps, fontsize=8)
    ax.set_ylabel("copy + initialisation, % of traffic")
    fig.suptitle("Applications alone: Table 5 reductions and Fig. 10 traffic share", fontsize=10)
    fig.tight_layout()
    paths.append(out / f"{NAME}-table5.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def write(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Writes the JSON, CSV and PNGs into ``out``; returns the paths."""
    return write_rows(rows, out, NAME, KEYS) + plot(rows, out)


def results(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Table 5's reductions, Fig. 11's speedups and the section's stated facts beside movelab's
    (the ledger says which are calibrated, and the tolerance)."""
    out = []
    for r in ledger.row_results(NAME, rows, ROW_KEY, ledger.paper_metrics(KEYS)):
        out.append(replace(r, what=r.id.replace("/", " "), unit="x" if r.id.endswith("/speedup") else "%"))
    p = paper()
    by = {(r["app"], r["mechanism"]): r for r in rows}
    fr = [r["copy_init_fraction"] for r in rows if r["mechanism"] == "baseline"]
    if fr:
        lo, hi = p["fig10"].get("copy_init_fraction_min", 0), p["fig10"].get("copy_init_fraction_max", 1)
        out.append(ledger.Result("fig10/copy-init-share", f"Fig. 10: copy + initialisation {lo * 100:.0f}%-"
                                 f"{hi * 100:.0f}% of the traffic (movelab {min(fr) * 100:.0f}%-"
                                 f"{max(fr) * 100:.0f}%)", None, None, holds=all(lo <= f <= hi for f in fr)))
    for a in p["fig11"].get("rowclone_degrades", []):
        if (a, "rowclone") in by:
            sp = by[(a, "rowclone")]["speedup"]
            out.append(ledger.Result(f"fig11/{a}/rowclone-slightly-slower", f"Fig. 11: RowClone slightly degrades {a} "
                                     f"(movelab {sp:.2f}x)", None, None, holds=0.9 <= sp < 1.0))
    zi = [r for r in rows if r["mechanism"] == "rowclone-zi"]
    if zi:
        low = min(r["speedup"] for r in zi)
        out.append(ledger.Result("fig11/rowclone-zi-never-slower", f"RowClone-ZI improves every application "
                                 f"(movelab lowest {low:.2f}x)", None, None, holds=low > 1.0))
    mc, pm = mc_dma(rows), p["mc_dma"]
    if mc["speedup"] is not None:
        out.append(ledger.Result("sec7.5/mc-dma-speedup", "Section 7.5: MC-DMA's speedup over the baseline, mean "
                                 "of the six applications", mc["speedup"], pm.get("speedup_vs_baseline"), "x"))
    if mc["over_rowclone"] is not None:
        out.append(ledger.Result("sec7.5/mc-dma-over-rowclone", "Section 7.5: MC-DMA's IPC over RowClone's, mean "
                                 "of the six applications", mc["over_rowclone"], pm.get("speedup_vs_rowclone"),
                                 "x"))
    if mc["energy"] and pm.get("saves_no_energy"):
        saved = [f"{a} {e * 100:.1f}%" for a, e in mc["energy"].items() if e > 0]
        out.append(ledger.Result("sec7.5/mc-dma-saves-no-energy", "Section 7.5: MC-DMA does not conserve any DRAM "
                                 "energy (movelab: " + (", ".join(saved) + " saved" if saved else "none saved") + ")",
                                 None, None, holds=not saved))
    return out


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """The headline: the predictions within the ledger's tolerance out of all of them."""
    return ledger.check(NAME, results(rows))
