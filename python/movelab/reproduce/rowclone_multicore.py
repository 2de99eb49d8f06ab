"""RowClone (MICRO 2013) section 7.4: multi-programmed mixes on 2, 4 and 8 cores:

* Table 7: weighted speedup, instruction throughput, harmonic speedup, maximum slowdown, memory
  bandwidth per instruction and memory energy per instruction, as the improvement (or reduction) of
  RowClone and RowClone-ZI over the baseline, averaged over the mixes;
* Fig. 13: weighted speedup improvement against the number of highly copy-intensive applications,
  each group's mean with its 95% confidence interval;
* what sets Table 7's cells (:data:`SPLIT`, :func:`split_of`): observations of the model, no paper value.

Each mix is half copy/initialisation-intensive applications (Table 4), half memory-intensive ones
standing for Table 6's SPEC CPU2006 programs. On two cores the mixes are the pairs of one of each
class, each once (the paper's 138 two-core workloads are its 6 x 23 pairs; fewer: a balanced sample
of them in a seeded order); on four and more, drawn with a seed, balanced: each slot of a mix deals
its class's applications from a deck shuffled anew every round, so every application fills every
slot equally often (to one round) while each mix remains a uniform random draw. Each application's alone IPC (the
reference of the speedups) is computed once, alone on the same multi-core system under the baseline,
and reused by every mix. With ``functional_warming``, every run starts from functionally warmed caches
(full, as over the paper's long runs, so that write-backs reach the DRAM); by default they start cold.
The runs are the platform model's (Rust: ``experiments::rowclone_multicore``).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Group

from movelab import _core
from movelab._util import refuse_keys, refuse_unread
from movelab.executor import costs, run_points
from movelab.reproduce import (
    check_overrides,
    fraction,
    group,
    ledger,
    paper_data,
    pyplot,
    table,
    write_csv,
    write_rows,
)
from movelab.reproduce import rowclone_apps as ra
from movelab.reproduce.rowclone_apps import INSTRUCTIONS, RUN_S, WARMUP, check_app_params, check_lengths, run_cost

NAME = "rowclone-multicore"
ROW_KEY = ["cores", "mechanism"]
METRICS = ["weighted_speedup_improvement", "instruction_throughput_improvement", "harmonic_speedup_improvement",
           "max_slowdown_reduction", "bandwidth_per_instruction_reduction", "energy_per_instruction_reduction"]
#: What sets Table 7's cells, per core count and mechanism (means over the mixes; observations of the
#: model, no paper value): the weighted speedup and instruction throughput improvements split into
#: the copy/initialisation-intensive half's part and the memory-intensive half's part (each part the
#: change of that half's sum over the baseline's whole sum, so the two add up to the mix's
#: improvement); the copy-intensive half's share of the baseline's instruction throughput (above 1/2,
#: throughput weighs the copy-intensive half's gains more than weighted speedup does); how often a
#: copy-intensive application sets the maximum slowdown, under the baseline and under the mechanism;
#: the memory-intensive half's mean slowdown (alone / shared IPC) under the baseline and the mechanism.
SPLIT = ["ws_gain_copy", "ws_gain_memory", "it_gain_copy", "it_gain_memory", "baseline_copy_ipc_share",
         "baseline_max_slowdown_by_copy", "max_slowdown_by_copy", "baseline_memory_slowdown", "memory_slowdown"]
#: Per core count and mechanism, the mixes Fig. 12's statements read (counts over the mixes): those
#: whose weighted speedup under the mechanism is below the baseline's; of them, those holding no
#: moderately copy/initialisation-intensive application (compile, mcached, mysql: section 7.4); and,
#: for RowClone-ZI, those below RowClone's (None for RowClone).
FIG12 = ["mixes_below_baseline", "mixes_below_baseline_without_moderate", "mixes_below_rowclone"]
KEYS = ["cores", "mechanism", "mixes", *[k for m in METRICS for k in (m, f"paper_{m}")], "by_highly_intensive",
        *[f"{m}_ci95" for m in METRICS], "by_highly_intensive_ci95", *SPLIT, *FIG12]
LABELS = {"weighted_speedup_improvement": "weighted speedup", "instruction_throughput_improvement":
          "instruction throughput", "harmonic_speedup_improvement": "harmonic speedup",
          "max_slowdown_reduction": "maximum slowdown (reduction)",
          "bandwidth_per_instruction_reduction": "bandwidth / instruction (reduction)",
          "energy_per_instruction_reduction": "energy / instruction (reduction)"}
CORES = [2, 4, 8]
#: The paper's workload counts per core count (section 7.4: 138, 50 and 40): the default of
#: ``movelab reproduce rowclone-multicore`` and ``make reproduce`` (``--full``; 37 s of wall time on
#: this project's 2-core machine, quiet), each cell reported with its 95% confidence interval.
PAPER_MIXES = {2: 138, 4: 50, 8: 40}
#: ``--sample``: a sample of the paper's counts at about a sixth of the simulation. Each size's
#: count is a whole number of rounds of the six copy/initialisation-intensive applications (the
#: draw deals each of them to every copy slot once a round, :func:`mixes`), so the sample holds
#: them, and the highly copy-intensive ones, in the population's proportions: within a round (six
#: mixes) of the paper's proportions (17%: 24, 8.7, 7.0 for 138, 50, 40) at the simulated cost of
#: the earlier 24, 9, 7 (a mix costs about its cores squared: 672 against 688). It was the default
#: while the paper's counts took more than ``make reproduce``'s five minutes.
SAMPLE_MIXES = {2: 24, 4: 12, 6: 12, 8: 6}
#: The default (``--full``): the paper's counts, and on 6 cores (which the paper did not run) the
#: sample's.
FULL_MIXES = {**SAMPLE_MIXES, **PAPER_MIXES}
MIXES = 10
SEED = 7
MAX_MIXES = 10_000
#: Instructions of functional warming that fill each core's 1 MB cache twice over for the lightest
#: application (``rowclone_multicore::STEADY_STATE_WARMING``); the default runs cold (0).
STEADY_STATE_WARMING = 20_000_000
MAX_WARMING = 1 << 32
SETS = ["copy.mechanism", "cores"]
#: Keys nothing here reads (see ``rowclone_apps.UNREAD``).
UNREAD, UNREAD_WHY = ra.UNREAD, ra.UNREAD_WHY


def paper() -> dict[str, Any]:
    """Table 7 (RowClone-ZI) by core count, and Fig. 12's 4-core means."""
    d = paper_data("rowclone")
    return {"table7": {r["cores"]: r for r in d.get("table7", [])}, "fig12": d.get("fig12", {})}


def _paper_cells(cores: int, mech: str, p: dict[str, Any]) -> dict[str, Any]:
    if mech == "rowclone-zi":
        t7 = p["table7"].get(cores, {})
        return {f"paper_{m}": t7.get(m) for m in METRICS}
    out: dict[str, Any] = {f"paper_{m}": None for m in METRICS}
    if cores == 4:
        out["paper_weighted_speedup_improvement"] = p["fig12"].get("rowclone_weighted_speedup_improvement")
    return out


def mixes(seed: int = SEED, cores: list[int] | None = None, n: int | Mapping[int, int] = MIXES) -> list[dict[str, Any]]:
    """The seeded mixes (each: cores, index, apps, highly_intensive); ``n`` mixes per core count, or
    ``n[cores]`` (a mix does not depend on how many others are drawn). Two cores: the pairs of one
    copy/initialisation-intensive and one memory-intensive application, each once, in a seeded
    order (all 138 at the paper's count; more are refused); more cores: drawn at random, every
    application dealt to every slot once a round (``rowclone_multicore::draw_mixes``)."""
    _check(cores, n, seed)  # as run_mixes does (a negative count or seed was an OverflowError)
    out = []
    for c in cores or CORES:
        k = n[c] if isinstance(n, Mapping) else n
        out.extend(json.loads(_core.rowclone_mixes(seed, c, k)))
    return out


def _check(cores: Any, n: Any, seed: Any) -> list[int]:
    cs = list(cores) if cores is not None else CORES
    if not cs or any(isinstance(c, bool) or not isinstance(c, int) or c not in (2, 4, 6, 8) for c in cs):
        raise ValueError(f"cores: {cs!r} must be a list of even core counts from 2 to 8")
    if isinstance(n, Mapping) and (missing := [c for c in cs if c not in n]):
        raise ValueError(f"mixes: no mix count for {missing} cores (given for {sorted(n)})")
    counts = [n[c] for c in cs] if isinstance(n, Mapping) else [n]
    if any(isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_MIXES for k in counts):
        raise ValueError(f"mixes: {n!r} must be an integer from 1 to {MAX_MIXES:,}"
                         + (" for every core count" if isinstance(n, Mapping) else ""))
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 64:
        raise ValueError(f"seed: {seed!r} must be a non-negative 64-bit integer")
    return sorted(set(cs))


def run_mixes(
    overrides: Mapping[str, Any] | None = None,
    cores: list[int] | None = None,
    n_mixes: int | Mapping[int, int] = MIXES,
    seed: int = SEED,
    instructions: int = INSTRUCTIONS,
    warmup: int = WARMUP,
    app_params: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    functional_warming: int = 0,
) -> list[dict[str, Any]]:
    """Every mix's result (the mix, its alone IPCs, its runs under the three mechanisms); ``n_mixes``
    per core count, or a mapping from core count to mixes (:data:`SAMPLE_MIXES`,
    :data:`PAPER_MIXES`). The alone
    runs first (one per application, reused by every mix), then the mixes, on the executor.
    ``functional_warming``: program instructions each core runs through its caches without timing
    before every run (0: cold caches; :data:`STEADY_STATE_WARMING` fills them twice over)."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like a platform config, not {type(overrides).__name__}")
    if overrides:
        refuse_keys(dict(overrides), SETS, NAME)
        refuse_unread(overrides, UNREAD, f"{NAME} {UNREAD_WHY}")
        check_overrides(overrides, [NAME])
    cs = _check(cores, n_mixes, seed)
    check_lengths(instructions, warmup)
    if isinstance(functional_warming, bool) or not isinstance(functional_warming, int) \
            or not 0 <= functional_warming <= MAX_WARMING:
        raise ValueError(f"functional_warming: {functional_warming!r} must be an integer from 0 to {MAX_WARMING:,}")
    ap = check_app_params(app_params)
    ms = mixes(seed, cs, n_mixes)
    base = {"overrides": dict(overrides) if overrides else None, "instructions": instructions, "warmup": warmup,
            "app_params": ap or None, "functional_warming": functional_warming}
    names = sorted({a for m in ms for a in m["apps"]})
    total = len(names) + len(ms)

    def shifted(offset: int) -> Callable[[int, int], None] | None:
        if progress is None:
            return None
        return lambda done, _t: progress(offset + done, total)

    ipcs = run_points(alone_point, [{**base, "app": a} for a in names], shifted(0))
    alone = dict(zip(names, ipcs, strict=True))
    return run_points(mix_point, [{**base, "mix": m, "alone": alone} for m in ms], shifted(len(names)))


#: A scheduling estimate (CPU seconds per simulated instruction and square core count, fitted to
#: ``python -m movelab.reproduce._critical_path``'s times of 2-, 4- and 8-core mixes: the cores
#: contend, so a mix's time grows faster than its core count): orders the work, never a row.
CPU_S_PER_CORE2_INSTRUCTION = 1.5e-7


def mix_cost(p: dict[str, Any]) -> float:
    """A mix point's CPU seconds, estimated: three runs (one per mechanism) of all its cores."""
    cores = p["mix"]["cores"]
    return 3 * (RUN_S + cores * cores * (p["instructions"] + p["warmup"]) * CPU_S_PER_CORE2_INSTRUCTION)


@costs(run_cost, feeds_next=True)
def alone_point(p: dict[str, Any]) -> float:
    """One application's alone IPC: alone on the multi-core system (the others idle), baseline."""
    ov = json.dumps(p["overrides"]) if p.get("overrides") else None
    ap = json.dumps(p["app_params"]) if p.get("app_params") else None
    return float(_core.rowclone_multicore_alone(p["app"], p["instructions"], p["warmup"], ov, ap,
                                                p.get("functional_warming", 0)))


@costs(mix_cost)
def mix_point(p: dict[str, Any]) -> dict[str, Any]:
    """One mix under the three mechanisms."""
    ov = json.dumps(p["overrides"]) if p.get("overrides") else None
    ap = json.dumps(p["app_params"]) if p.get("app_params") else None
    return json.loads(_core.rowclone_mix(json.dumps(p["mix"]), json.dumps(p["alone"]), p["instructions"],
                                         p["warmup"], ov, ap, p.get("functional_warming", 0)))


def split_of(result: dict[str, Any], mechanism: str) -> dict[str, float]:
    """One mix's :data:`SPLIT` observables for ``mechanism`` against the baseline, from each core's
    shared IPC and its application's alone IPC (the first half of a mix's cores run the
    copy/initialisation-intensive applications, :func:`mixes`)."""
    h = result["mix"]["cores"] // 2
    alone = result["alone_ipc"]
    runs = {x["mechanism"]: x for x in result["runs"]}
    b, m = runs["baseline"]["ipc"], runs[mechanism]["ipc"]
    sb = [s / a for s, a in zip(b, alone, strict=True)]
    sm = [s / a for s, a in zip(m, alone, strict=True)]
    ws, it = sum(sb), sum(b)

    def worst(sp: list[float]) -> float:
        return float(min(range(len(sp)), key=lambda i: sp[i]) < h)

    def slowdown(sp: list[float]) -> float:
        return sum(1 / max(v, 1e-12) for v in sp[h:]) / (len(sp) - h)

    return {"ws_gain_copy": (sum(sm[:h]) - sum(sb[:h])) / ws, "ws_gain_memory": (sum(sm[h:]) - sum(sb[h:])) / ws,
            "it_gain_copy": (sum(m[:h]) - sum(b[:h])) / it, "it_gain_memory": (sum(m[h:]) - sum(b[h:])) / it,
            "baseline_copy_ipc_share": sum(b[:h]) / it, "baseline_max_slowdown_by_copy": worst(sb),
            "max_slowdown_by_copy": worst(sm), "baseline_memory_slowdown": slowdown(sb),
            "memory_slowdown": slowdown(sm)}


def moderate_apps() -> set[str]:
    """The moderately copy/initialisation-intensive applications (``apps.toml``'s class)."""
    return {a["name"] for a in json.loads(_core.rowclone_app_list()) if a["class"] == "moderate"}


def fig12_counts(results: list[dict[str, Any]], mechanism: str, moderate: set[str]) -> dict[str, int | None]:
    """:data:`FIG12`'s counts for ``mechanism`` over the mix ``results`` (of one core count)."""
    below, without, below_rc = 0, 0, 0
    for r in results:
        ws = {x["mechanism"]: x["weighted_speedup"] for x in r["runs"]}
        if ws[mechanism] < ws["baseline"]:
            below += 1
            without += not moderate & set(r["mix"]["apps"])
        below_rc += mechanism == "rowclone-zi" and ws[mechanism] < ws["rowclone"]
    return {"mixes_below_baseline": below, "mixes_below_baseline_without_moderate": without,
            "mixes_below_rowclone": below_rc if mechanism == "rowclone-zi" else None}


def rows_of(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 7 rows (with Fig. 13's ``by_highly_intensive``: [count, mixes, mean weighted speedup
    improvement], and ``by_highly_intensive_ci95``: [count, half-width of that mean's 95% interval])
    beside the paper's values, the :data:`SPLIT` observables and :data:`FIG12`'s counts."""
    p = paper()
    moderate = moderate_apps()
    out = []
    for r in json.loads(_core.rowclone_summarise(json.dumps(results))):
        row = {k: r.get(k) for k in KEYS}
        row.update(_paper_cells(r["cores"], r["mechanism"], p))
        for m in METRICS:
            row[m] = round(row[m], 4)
            row[f"{m}_ci95"] = round(r["ci95"][m], 4)
        row["by_highly_intensive"] = [[k, n, round(v, 4)] for k, n, v in r["by_highly_intensive"]]
        row["by_highly_intensive_ci95"] = [[k, round(v, 4)] for k, v in r["by_highly_intensive_ci95"]]
        splits = [split_of(x, r["mechanism"]) for x in results if x["mix"]["cores"] == r["cores"]]
        for k in SPLIT:
            row[k] = round(sum(s[k] for s in splits) / max(len(splits), 1), 4)
        row.update(fig12_counts([x for x in results if x["mix"]["cores"] == r["cores"]], r["mechanism"], moderate))
        out.append(row)
    return ledger.label_rows(NAME, out, ROW_KEY, METRICS)


def run(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """Rows with exactly :data:`KEYS`: one per core count and mechanism (RowClone, RowClone-ZI); the
    arguments are :func:`run_mixes`'s."""
    return rows_of(run_mixes(*args, **kwargs))


def mix_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat row per mix and mechanism (the per-mix file)."""
    out = []
    for r in results:
        m = r["mix"]
        for x in r["runs"]:
            out.append({"cores": m["cores"], "mix": m["index"], "apps": " ".join(m["apps"]),
                        "highly_intensive": m["highly_intensive"], "mechanism": x["mechanism"],
                        **{k: round(x[k], 4) for k in ["weighted_speedup", "instruction_throughput",
                                                        "harmonic_speedup", "max_slowdown",
                                                        "bytes_per_instruction", "energy_nj_per_instruction"]}})
    return out


def tables(rows: list[dict[str, Any]]) -> list[Group]:
    cores = sorted({r["cores"] for r in rows})
    n = {r["cores"]: r["mixes"] for r in rows}
    t = table("RowClone Table 7: improvement over the baseline, % (mean over the mixes; paper's in parentheses)",
              "WS weighted speedup, IT instruction throughput, HS harmonic speedup, MS maximum slowdown "
              "(reduction), BW/i memory bandwidth per instruction (reduction), E/i memory energy per "
              "instruction (reduction); under each mean, \u00b1 its 95% confidence interval over the mixes (the draw). "
              "Paper: Table 7 (RowClone-ZI; 138, 50, 40 workloads); RowClone's "
              "4-core WS is Fig. 12's mean. Mixes here: " + ", ".join(f"{n[c]} on {c} cores" for c in cores),
              tight=True)
    t.add_column("cores", justify="right", no_wrap=True)
    t.add_column("mech", no_wrap=True)
    for col in ["WS", "IT", "HS", "MS", "BW/i", "E/i"]:
        t.add_column(col, justify="right", no_wrap=True)
    last = None
    for r in rows:
        if last is not None and r["cores"] != last:
            t.add_section()
        last = r["cores"]
        cells = []
        for m in METRICS:
            pv = r.get(f"paper_{m}")
            ci = r.get(f"{m}_ci95")
            cells.append(fraction(r[m]) + ("" if pv is None else f" ({pv * 100:.0f})")
                         + ("" if ci is None else f"\n\u00b1{ci * 100:.1f}"))
        t.add_row(str(r["cores"]), "RC" if r["mechanism"] == "rowclone" else "RC-ZI", *cells)
    out = [group(t)]
    t = table("RowClone Fig. 13: weighted speedup improvement, % (mixes), by highly copy-intensive applications "
              "in the mix")
    t.add_column("cores", justify="right")
    t.add_column("mechanism")
    ks = sorted({k for r in rows for k, _, _ in r["by_highly_intensive"]})
    for k in ks:
        t.add_column(str(k), justify="right", no_wrap=True)
    for r in rows:
        d = {k: (nm, v) for k, nm, v in r["by_highly_intensive"]}
        ci = dict(map(tuple, r.get("by_highly_intensive_ci95") or []))
        t.add_row(str(r["cores"]), r["mechanism"],
                  *[f"{d[k][1] * 100:.1f} ({d[k][0]})" + (f" \u00b1{ci[k] * 100:.1f}" if ci.get(k) else "")
                    if k in d else "-" for k in ks])
    out.append(group(t))
    if all(k in r for r in rows for k in SPLIT):
        t = table("RowClone Table 7: what sets the cells (means over the mixes; observations, no paper value)",
                  "WS, IT: the weighted speedup and instruction throughput improvements, %, split into the "
                  "copy/initialisation-intensive half's part + the memory-intensive half's; copy IPC: that half's "
                  "share of the baseline's throughput, %; MS by copy: mixes whose maximum slowdown is a "
                  "copy-intensive application's, %, baseline -> mechanism; mem. slowdown: the memory-intensive "
                  "half's mean slowdown, baseline -> mechanism", tight=True)
        for col in ["cores", "mech", "WS copy + mem", "IT copy + mem", "copy IPC", "MS by copy", "mem. slowdown"]:
            t.add_column(col, justify="left" if col == "mech" else "right", no_wrap=True)
        for r in rows:
            t.add_row(str(r["cores"]), "RC" if r["mechanism"] == "rowclone" else "RC-ZI",
                      f"{r['ws_gain_copy'] * 100:.1f} + {r['ws_gain_memory'] * 100:.1f}",
                      f"{r['it_gain_copy'] * 100:.1f} + {r['it_gain_memory'] * 100:.1f}",
                      f"{r['baseline_copy_ipc_share'] * 100:.0f}",
                      f"{r['baseline_max_slowdown_by_copy'] * 100:.0f} -> {r['max_slowdown_by_copy'] * 100:.0f}",
                      f"{r['baseline_memory_slowdown']:.2f} -> {r['memory_slowdown']:.2f}")
        out.append(group(t))
    return out


def plot(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Table 7 (bars by core count beside the paper's) and Fig. 13 (lines); returns the paths."""
    plt = pyplot()
    cores = sorted({r["cores"] for r in rows})
    by = {(r["cores"], r["mechanism"]): r for r in rows}
    paths = []
    fig, axes = plt.subplots(2, 3, figsize=(12, 6))
    w = 0.35
    for ax, m in zip(axes.flat, METRICS, strict=True):
        for k, mech in enumerate(["rowclone", "rowclone-zi"]):
            vals = [by[(c, mech)][m] * 100 if (c, mech) in by else 0 for c in cores]
            ax.bar([i + (k - 0.5) * w for i in range(len(cores))], vals, w, label=mech)
        ref = [(i + 0.5 * w, by[(c, "rowclone-zi")].get(f"paper_{m}")) for i, c in enumerate(cores)
               if (c, "rowclone-zi") in by]
        ref = [(x, v * 100) for x, v in ref if v is not None]
        if ref:
            ax.plot([x for x, _ in ref], [v for _, v in ref], "k_", markersize=14, label="paper (Table 7)")
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_xticks(range(len(cores)), [f"{c} cores" for c in cores])
        ax.set_title(LABELS[m], fontsize=9)
        ax.set_ylabel("%", fontsize=8)
    axes.flat[0].legend(frameon=False, fontsize=7)
    fig.suptitle("RowClone on multi-core systems: improvement over the baseline (Table 7)", fontsize=10)
    fig.tight_layout()
    paths.append(out / f"{NAME}-table7.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for c in cores:
        for mech, style in [("rowclone-zi", "-o"), ("rowclone", "--s")]:
            r = by.get((c, mech))
            if r and r["by_highly_intensive"]:
                pts = sorted((k, v * 100) for k, _, v in r["by_highly_intensive"])
                ax.plot([k for k, _ in pts], [v for _, v in pts], style, label=f"{c} cores, {mech}", markersize=4)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlabel("highly copy/initialisation-intensive applications in the mix")
    ax.set_ylabel("weighted speedup improvement, %")
    ax.set_title("RowClone Fig. 13: effect of copy/initialisation intensity", fontsize=10)
    ax.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    paths.append(out / f"{NAME}-fig13.png")
    fig.savefig(paths[-1], dpi=120)
    plt.close(fig)
    return paths


def write(rows: list[dict[str, Any]], out: Path, results: list[dict[str, Any]] | None = None) -> list[Path]:
    """Writes the JSON, CSV (and, given the mixes' results, the per-mix CSV) and PNGs into ``out``."""
    paths = write_rows(rows, out, NAME, KEYS)
    mr = mix_rows(results or [])
    if mr:
        paths.append(out / f"{NAME}-mixes.csv")
        write_csv(paths[-1], mr, list(mr[0]))
    return paths + plot(rows, out)


def results(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Table 7's and Fig. 12's values beside movelab's, and Fig. 12's and Fig. 13's stated facts (the
    ledger gives the tolerance)."""
    return [*ledger.percent_results(NAME, rows, ROW_KEY, METRICS), *fig12_statements(rows), *fig13_trend(rows)]


def fig12_statements(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Section 7.4 on Fig. 12 (the 4-core workloads): "although RowClone degrades performance of
    certain 4-core workloads (with compile, mcached or mysql benchmarks), it significantly improves
    performance for all other workloads", read as: some 4-core mix's weighted speedup is below the
    baseline's under RowClone, and every such mix holds a moderately copy-intensive application;
    and "RowClone-ZI ... consistently outperforms both the baseline and RowClone for all
    workloads", read as: no 4-core mix's weighted speedup under RowClone-ZI is below the baseline's
    or RowClone's (equal to RowClone's where a mix leaves RowClone-ZI no zeroed line to insert, as
    Table 5's forkbench row is). None without the counts (rows of another version)."""
    by = {(r["cores"], r["mechanism"]): r for r in rows}
    out = []
    rc, zi = by.get((4, "rowclone")), by.get((4, "rowclone-zi"))
    if rc is not None and rc.get("mixes_below_baseline") is not None:
        n, k = rc["mixes_below_baseline"], rc["mixes_below_baseline_without_moderate"]
        out.append(ledger.Result("fig12/rowclone-slower-only-with-moderate",
                                 "Fig. 12: RowClone slows some 4-core workloads, each with compile, mcached or "
                                 f"mysql, and improves the others (movelab: {n} of {rc['mixes']} slower, {k} of "
                                 "them without)", None, None, holds=n > 0 and k == 0))
    if zi is not None and zi.get("mixes_below_rowclone") is not None:
        a, b = zi["mixes_below_baseline"], zi["mixes_below_rowclone"]
        out.append(ledger.Result("fig12/rowclone-zi-outperforms-both",
                                 "Fig. 12: RowClone-ZI outperforms the baseline and RowClone on every 4-core "
                                 f"workload (movelab: below the baseline on {a}, below RowClone on {b} of "
                                 f"{zi['mixes']})", None, None, holds=a == 0 and b == 0))
    return out


def fig13_trend(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Section 7.4 on Fig. 13: "the performance improvement increases with increasing number of
    [highly copy/initialisation-intensive] benchmarks for all three multi-core systems". One
    statement per core count, on the mechanism Table 7 is compared with (RowClone-ZI): its mean
    weighted speedup improvement rises strictly from each group of mixes (by how many highly
    intensive applications they hold) to the next. A core count with fewer than two groups drawn
    gives none."""
    out = []
    for r in rows:
        groups = sorted((g[0], g[2]) for g in r.get("by_highly_intensive") or [] if g[1] > 0)
        if r["mechanism"] != "rowclone-zi" or len(groups) < 2:
            continue
        shown = " < ".join(f"{v * 100:.1f}" for _, v in groups)
        out.append(ledger.Result(f"fig13/{r['cores']}/improvement-grows-with-intensity",
                                 f"Fig. 13, {r['cores']} cores: weighted speedup improvement grows with the highly "
                                 f"copy-intensive applications in a mix ({shown}% for "
                                 f"{', '.join(str(n) for n, _ in groups)} of them)", None, None,
                                 holds=all(a[1] < b[1] for a, b in itertools.pairwise(groups))))
    return out


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """The headline: the predictions within the ledger's tolerance out of all of them."""
    return ledger.check(NAME, results(rows))
