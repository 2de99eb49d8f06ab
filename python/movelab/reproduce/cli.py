"""``movelab reproduce ...``: the papers' results, computed by the models, beside the published values."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from movelab._util import TableJson, check_output_dir, given_on_command_line, lit, parse_set, progress_bar, staged_dir
from movelab._util import fail as _fail
from movelab.reproduce import write_rows

app = typer.Typer(help="Reproduce the papers' results from the models.", no_args_is_help=True)
console = Console()

_CLUSTER_HELP = "Run the points on a Dask cluster, tcp://HOST:PORT \\[default: a local pool on every core]."
_WORKERS_HELP = "Local worker processes \\[default: one per core; 1 runs everything in this process]."


def _executor(ctx: typer.Context, cluster: str | None, workers: int | None) -> None:
    """Runs this command's reproductions on the executor the options name (the points of every
    reproduction go through :func:`movelab.executor.run_points`)."""
    from movelab.executor import make_executor, use

    try:
        ex = make_executor(cluster, workers)
    except (ValueError, TypeError, ConnectionError, OSError) as e:
        _fail(e)
    ctx.with_resource(ex)
    ctx.with_resource(use(ex))


@app.callback()
def _main(
    ctx: typer.Context,
    cluster: str | None = typer.Option(None, "--cluster", help=_CLUSTER_HELP),
    workers: int | None = typer.Option(None, "--workers", min=1, max=4096, help=_WORKERS_HELP),
) -> None:
    _executor(ctx, cluster, workers)


def _num(v) -> str:
    return "-" if v is None else f"{v:g}"


def _x(v) -> str:
    return "-" if v is None else f"{v:g}"


def _check_format(fmt: str) -> None:
    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"'{fmt}' is not one of: table, json", param_hint="--format")


#: The files each reproduction writes into --out (checked before it runs, so that an existing one
#: is refused without --force before minutes of simulation, not after).
FILES = {
    "rowclone-latency": ["rowclone-latency.json", "rowclone-latency.csv", "rowclone-latency.png"],
    "zhao-copy-engine": ["zhao-copy-engine.json", "zhao-copy-engine.csv", "zhao-copy-engine-table3.png",
                         "zhao-copy-engine-fig11.png", "zhao-copy-engine-fig15.png", "zhao-copy-engine-fig12-14.png"],
    "rowclone-fork": ["rowclone-fork.json", "rowclone-fork.csv", "rowclone-fork-fmtc.png", "rowclone-fork-speedup.png",
                      "rowclone-fork-energy.png", "rowclone-fork-bulk-zero.png"],
    "larsen-idma": ["larsen-idma.json", "larsen-idma.csv", "larsen-idma-stacks.png", "larsen-idma-fig10.png"],
    "wun-onload": ["wun-onload.json", "wun-onload.csv", "wun-onload-throughput.png", "wun-onload-variants.png"],
    "rowclone-apps": ["rowclone-apps.json", "rowclone-apps.csv", "rowclone-apps-ipc.png", "rowclone-apps-table5.png"],
    "rowclone-apps-recorded": ["rowclone-apps-recorded.json", "rowclone-apps-recorded.csv",
                               "rowclone-apps-recorded-ipc.png", "rowclone-apps-recorded-table5.png"],
    "rowclone-multicore": ["rowclone-multicore.json", "rowclone-multicore.csv", "rowclone-multicore-mixes.csv",
                           "rowclone-multicore-table7.png", "rowclone-multicore-fig13.png"],
}
FORCE_HELP = "Overwrite files that exist in --out."
#: The longest Fig. 10 streams of larsen-idma (the options' bounds and defaults).
_LARSEN_LIMITS = json.loads(importlib.import_module("movelab._core").larsen_idma_stream_limits())
OUT_HELP = ("Directory for CSV, JSON and PNG (an existing file there is kept unless --force) "
            "\\[default: none, nothing is written].")


def _int_list(text: str | None, option: str, most: int, least: int = 1, count: int = 64) -> list[int] | None:
    """``"64,128"`` -> ``[64, 128]``: 1 to ``count`` different integers, each from ``least`` to ``most``."""
    if text is None:
        return None
    try:
        values = [int(v.strip(), 0) for v in text.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(f"'{text}' is not a comma-separated list of integers", param_hint=option) from None
    if not values or len(values) > count or any(not least <= v <= most for v in values):
        raise typer.BadParameter(f"'{text}': give 1 to {count} integers from {least} to {most:,}, e.g. 64,128",
                                 param_hint=option)
    if len(set(values)) != len(values):
        raise typer.BadParameter(f"'{text}' repeats a value", param_hint=option)
    return values


#: True while ``reproduce all`` plans its reproductions (nothing is shown).
_PLANNING = False


def _progress(label: str, enabled: bool) -> contextlib.AbstractContextManager[Callable[[int, int], None]]:
    """A progress bar on stderr, fed by the simulator's ``progress(done, total)`` callback (none
    while ``reproduce all`` plans its reproductions)."""
    return progress_bar(label, enabled and not _PLANNING)


def _simulate(fmt: str, run: Callable[[Callable[[int, int], None]], Any]) -> Any:
    """Checks --format, then runs a reproduction under a progress bar (none for JSON); a bad
    input ends the command with its message."""
    _check_format(fmt)
    try:
        with _progress("simulating", fmt != "json") as progress:
            return run(progress)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)


def _emit(fmt: str, rows: Any, out: Path | None, force: bool, write: Callable[[Path], Any],
          tables: Callable[[Any], Any]) -> None:
    """Writes a reproduction's files into ``out`` (staged, kept without --force), then prints
    its rows as JSON or its tables. While ``reproduce all`` plans, nothing is written."""
    if _PLANNING:
        from movelab.executor import Planned

        raise Planned
    if out is not None:
        with staged_dir(out, force) as d:
            write(d)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    for t in tables(rows):
        console.print(t)
    _print_results(importlib.import_module(tables.__module__), rows)


def _print_results(mod: Any, rows: Any) -> None:
    """The reproduction's results beside the paper: predicted, calibrated and not reproduced apart."""
    from movelab.reproduce import ledger

    console.print(ledger.results_table(mod.NAME, mod.results(rows)))
    ok, text = mod.check(rows)
    console.print(f"[{'green' if ok else 'red'}]{lit(text)}[/]")


@app.command("rowclone-latency")
def rowclone_latency(
    ctx: typer.Context,
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    config: str | None = typer.Option(None, help="Config preset or TOML file (default: the standard's, "
                                                 "rowclone-ddr3-1066 for DDR3).", show_default=False),
    standard: str = typer.Option("ddr3", "--standard", help="ddr3 (the paper's system), or ddr5, lpddr5, hbm3 (the "
                                                            "same system on DDR5-4800B, LPDDR5-6400, HBM3-6400, "
                                                            "shown beside DDR3); lpddr5-bl32, lpddr5-8b for "
                                                            "LPDDR5's BL32 and 8-bank variants."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE, e.g. dram.timing.nRAS=24.",
                                          show_default=False),
    nbytes: int = typer.Option(4096, "--bytes", min=64, max=1 << 20,
                               help="Bytes per operation (the paper's 4 KB is one row of its system)."),
    out: Path | None = typer.Option(None, "--out", help=OUT_HELP, show_default=False),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    replicate: bool = typer.Option(False, "--replication", help="Instead of Table 3: replicate the page into 1-31 "
                                                                 "rows by Multi-RowCopy (DSN 2024) vs FPM copies "
                                                                 "vs the channel."),
) -> None:
    """RowClone Table 3: copy and zeroing latency and energy per mechanism (4 KB on the paper's system)."""
    from movelab.reproduce import rowclone_latency as rl

    if standard not in rl.STANDARDS:
        _fail(ValueError(f"--standard: '{standard}' is not one of {', '.join(rl.STANDARDS)}"))
    cfg = config or rl.STANDARDS[standard]
    if config is not None and given_on_command_line(ctx, "standard"):
        # Both given: the config runs, so it must be of the standard asked for (or the rows would be labelled
        # with one standard and run on another).
        from movelab import dram

        try:
            have, want = (dram.load_config(c).spec["standard"] for c in (config, rl.STANDARDS[standard]))
        except (ValueError, FileNotFoundError) as e:
            _fail(e)
        if have != want:
            _fail(ValueError(f"--config {config} is {have}, and --standard {standard} asks for {want}: give one, "
                             "or a config of that standard"))
    if replicate:
        _replication(fmt, cfg, parse_set(set_), out, force, nbytes)
    elif standard == "ddr3":
        check_output_dir(out, FILES["rowclone-latency"], force)
        _rowclone_latency(fmt, cfg, parse_set(set_), out, force, nbytes)
    else:
        _rowclone_beside_ddr3(fmt, cfg, parse_set(set_), out, force)


def _replication(fmt: str, config: str, overrides: dict[str, Any], out: Path | None, force: bool,
                 nbytes: int) -> None:
    from movelab.reproduce import rowclone_latency as rl

    _check_format(fmt)
    try:
        rows = rl.replication(config, overrides, nbytes)
    except (ValueError, FileNotFoundError) as e:
        _fail(e)
    if out is not None:
        name = f"multi-row-copy-{rows[0]['standard'].lower()}"
        check_output_dir(out, [f"{name}.json", f"{name}.csv"], force)
        with staged_dir(out, force) as d:
            write_rows(rows, d, name, rl.REPLICATION_KEYS)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    std, speed = rows[0]["standard"], rows[0]["speed"]
    by = {(r["copies"], r["mechanism"]): r for r in rows}
    energy = rows[0]["energy_uj"] is not None
    measured = "timing and success rate measured on DDR4 chips" if std == "DDR4" else "modelled, not measured"
    t = Table(title=f"Multi-RowCopy on {speed}: a {nbytes} B page replicated into N rows of its block; "
                    f"{measured}" + ("" if energy else f"; energy not available for {std}"),
              box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    # Two-line headers: at 80 columns every number stays whole.
    for col in ["N", "MRC\nns", "N x FPM\nns", "channel\nns", "MRC vs\nFPM x", "MRC\nuJ", "FPM\nuJ", "channel\nuJ"]:
        t.add_column(col, justify="right", no_wrap=True)

    def e(r: dict[str, Any]) -> str:
        return "n/a" if r["energy_uj"] is None else f"{r['energy_uj']:.3f}"

    for n in sorted({r["copies"] for r in rows}):
        m, f, b = by[(n, "mrc")], by[(n, "fpm")], by[(n, "baseline")]
        t.add_row(str(n), f"{m['latency_ns']:.0f}", f"{f['latency_ns']:.0f}", f"{b['latency_ns']:.0f}",
                  f"{f['latency_ns'] / m['latency_ns']:.1f}", e(m), e(f), e(b))
    console.print(t)


def _rowclone_beside_ddr3(fmt: str, config: str, overrides: dict[str, Any], out: Path | None,
                          force: bool = False) -> None:
    from movelab.reproduce import rowclone_latency as rl

    _check_format(fmt)
    try:
        rows = rl.beside_ddr3(config, overrides)
    except (ValueError, FileNotFoundError) as e:
        _fail(e)
    if out is not None:
        name = f"rowclone-latency-{rows[0]['standard'].lower()}"
        check_output_dir(out, [f"{name}.json", f"{name}.csv"], force)
        with staged_dir(out, force) as d:
            write_rows(rows, d, name, rl.BESIDE_KEYS)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    std, speed = rows[0]["standard"], rows[0]["speed"]
    red = rl.reductions(rows)
    red3 = rl.reductions([{**r, "latency_ns": r["ddr3_latency_ns"], "energy_uj": r["ddr3_energy_uj"]} for r in rows])
    energy = rows[0]["energy_uj"] is not None
    note = "energy = DRAM commands + channel" if energy else f"energy not available for {std} (no public currents)"
    t = Table(title=f"RowClone Table 3 on {speed} beside DDR3-1066 (8-8-8): 4 KB operations, modelled "
                    f"(no {std} chip result is public); {note}",
              box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1), collapse_padding=True)
    t.add_column("op", no_wrap=True, min_width=4)
    t.add_column("mechanism", no_wrap=True, min_width=9)
    # Two-line headers: at 80 columns every number stays whole.
    for col in [f"{std}\nns", "DDR3\nns", f"{std}\nuJ", "DDR3\nuJ", f"{std}\nlat x", "DDR3\nlat x", f"{std}\nE x",
                "DDR3\nE x"]:
        t.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        k = (r["operation"], r["mechanism"])
        e, ex = r["energy_uj"], red[k][1]
        t.add_row(r["operation"], r["mechanism"], f"{r['latency_ns']:.0f}", f"{r['ddr3_latency_ns']:.0f}",
                  "n/a" if e is None else f"{e:.3f}", f"{r['ddr3_energy_uj']:.3f}", f"{red[k][0]:.2f}",
                  f"{red3[k][0]:.2f}", "n/a" if ex is None else f"{ex:.1f}", f"{red3[k][1]:.1f}")
    console.print(t)


def _rowclone_latency(fmt: str, config: str, overrides: dict[str, Any], out: Path | None, force: bool = False,
                      nbytes: int = 4096) -> None:
    from movelab.dram import load_config
    from movelab.reproduce import rowclone_latency as rl

    _check_format(fmt)
    try:
        rows = rl.run(config, overrides, nbytes)
        what = rl.title(load_config(config, overrides), nbytes)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    if out is not None:
        with staged_dir(out, force) as d:
            write_rows(rows, d, "rowclone-latency", rl.KEYS)
            rl.plot(rows, d / "rowclone-latency.png", what)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    red = rl.reductions(rows)
    paper = rl.paper_table3() if nbytes == rl.PAPER_BYTES else {}
    t = Table(title=f"RowClone Table 3: {what}; energy = DRAM commands + channel"
                    + ("" if paper else " (the paper's values are for 4 KB: not shown)"),
              box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1))
    t.add_column("op", no_wrap=True, min_width=4)
    t.add_column("mechanism", no_wrap=True, min_width=9)
    for col in ["ns", "paper", "uJ", "paper", "lat x", "paper", "E x", "paper"]:
        t.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        lr, er = red[(r["operation"], r["mechanism"])]
        p = paper.get((r["operation"], r["mechanism"]), {})
        t.add_row(r["operation"], r["mechanism"], f"{r['latency_ns']:.0f}", _num(r["paper_latency_ns"]),
                  "n/a" if r["energy_uj"] is None else f"{r['energy_uj']:.3f}", _num(r["paper_energy_uj"]),
                  f"{lr:.2f}", _x(p.get("latency_reduction")),
                  "n/a" if er is None else f"{er:.1f}", _x(p.get("energy_reduction")))
    console.print(t)
    if paper:
        _print_results(rl, rows)


@app.command("zhao-copy-engine")
def zhao_copy_engine(
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a platform KEY=VALUE on both platforms, "
                                                              "e.g. copy.stream_buffer_lines=16.", show_default=False),
    packets: int = typer.Option(200, "--packets", min=1, max=1_000_000, help="Packets per run."),
    out: Path | None = typer.Option(None, "--out", help=OUT_HELP, show_default=False),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Zhao et al. (IEEE TC 2007) Table 3, Fig. 11, Table 4, Figs. 12-15: TCP/IP receive with copy engines."""
    check_output_dir(out, FILES["zhao-copy-engine"], force)
    _zhao_copy_engine(fmt, parse_set(set_), packets, out, force)


def _zhao_copy_engine(fmt: str, overrides: dict[str, Any], packets: int, out: Path | None,
                      force: bool = False) -> None:
    from movelab.reproduce import zhao_copy_engine as zc

    rows = _simulate(fmt, lambda progress: zc.run(overrides, packets=packets, progress=progress))
    _emit(fmt, rows, out, force, lambda d: zc.write(rows, d), zc.tables)


@app.command("rowclone-fork")
def rowclone_fork(
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a platform KEY=VALUE (rowclone-system).",
                                          show_default=False),
    sizes: str | None = typer.Option(None, "--sizes", help="forkbench array sizes S in MB, 1 to 4096 "
                                                           "\\[default: 64,128].", show_default=False),
    pages: str | None = typer.Option(None, "--pages", help="Pages N the child updates "
                                                           "\\[default: 2,8,32,128,512,2048,8192,16384].",
                                     show_default=False),
    zero_pages: int = typer.Option(1024, "--zero-pages", min=1, max=1 << 22, help="Pages of the bulk-zero workload."),
    out: Path | None = typer.Option(None, "--out", help=OUT_HELP, show_default=False),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """RowClone (MICRO 2013) Fig. 7-9 (forkbench) and bulk zeroing with RowClone, RowClone-ZI, MC-DMA."""
    check_output_dir(out, FILES["rowclone-fork"], force)
    s_list, n_list = _int_list(sizes, "--sizes", 4096), _int_list(pages, "--pages", 1 << 22)
    from movelab.reproduce import rowclone_fork as rf

    try:
        rf.check_pages_fit(s_list, n_list)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--pages") from None
    _rowclone_fork(fmt, parse_set(set_), s_list, n_list, zero_pages, out, force)


def _rowclone_fork(fmt: str, overrides: dict[str, Any], sizes: list[int] | None, pages: list[int] | None,
                   zero_pages: int, out: Path | None, force: bool = False) -> None:
    from movelab.reproduce import rowclone_fork as rf

    rows = _simulate(fmt, lambda progress: rf.run(overrides, sizes, pages, zero_pages, progress=progress))
    _emit(fmt, rows, out, force, lambda d: rf.write(rows, d), rf.tables)


@app.command("larsen-idma")
def larsen_idma(
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    small: int = typer.Option(_LARSEN_LIMITS["small_count"], "--small-count", min=1,
                              max=_LARSEN_LIMITS["small_count"],
                              help="64 B messages per Fig. 10 stream (a stream holds "
                                   f"{_LARSEN_LIMITS['small_count']} frames)."),
    large: int = typer.Option(_LARSEN_LIMITS["large_count"], "--large-count", min=1,
                              max=_LARSEN_LIMITS["large_count"],
                              help="64 KB messages per Fig. 10 stream (as many as fill its "
                                   f"{_LARSEN_LIMITS['small_count']} frames on either device)."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a platform KEY=VALUE on the Fig. 8 and "
                                                              "Fig. 9 platforms (larsen-io, larsen-io-idma), e.g. "
                                                              "memory.dram.timing.nCL=16. A key must exist on "
                                                              "both: core, l1, l2, llc, interconnect, memory, "
                                                              "interrupts (the descriptor NIC's io section is "
                                                              "on larsen-io only; the iDMA is an agent).",
                                                              show_default=False),
    out: Path | None = typer.Option(None, "--out", help=OUT_HELP, show_default=False),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Larsen & Lee (CACHES 2011) Fig. 8, 9, Table 1, Fig. 10: descriptor DMA vs the integrated DMA engine."""
    check_output_dir(out, FILES["larsen-idma"], force)
    _larsen_idma(fmt, small, large, out, force, parse_set(set_))


def _larsen_idma(fmt: str, small: int, large: int, out: Path | None, force: bool = False,
                 overrides: dict[str, Any] | None = None) -> None:
    from movelab.reproduce import larsen_idma as li

    rows = _simulate(fmt, lambda progress: li.run(small, large, progress=progress, overrides=overrides or None))
    _emit(fmt, rows, out, force, lambda d: li.write(rows, d), li.tables)


@app.command("wun-onload")
def wun_onload(
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a network-platform KEY=VALUE (the "
                                                              "keys movelab network config prints), e.g. host.cpi=8.",
                                          show_default=False),
    payloads: str | None = typer.Option(None, "--payloads", help="UDP payload bytes, 16 to 1472 "
                                                                 "\\[default: 64,128,256,512,1024,1472].",
                                        show_default=False),
    experiments: str | None = typer.Option(None, "--experiments", help="Comma-separated subset of rx, tx, "
                                                                       "rx-components, mapping-cache, l2-push, "
                                                                       "me-bound, me-ceiling, dram-copy "
                                                                       "\\[default: all].", show_default=False),
    out: Path | None = typer.Option(None, "--out", help=OUT_HELP, show_default=False),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Wun & Crowley: network I/O on small cores (emu nic, softnic, onloader), Fig. 3-6, section 6 and the small
    cores' own limits (section 7)."""
    check_output_dir(out, FILES["wun-onload"], force)
    exps = None if experiments is None else [e.strip() for e in experiments.split(",") if e.strip()]
    _wun_onload(fmt, parse_set(set_), _int_list(payloads, "--payloads", 1472, least=16, count=32), exps, out, force)


def _wun_onload(fmt: str, overrides: dict[str, Any], payloads: list[int] | None, experiments: list[str] | None,
                out: Path | None, force: bool = False) -> None:
    from movelab.reproduce import wun_onload as wo

    rows = _simulate(fmt, lambda progress: wo.run(overrides, payloads, experiments, progress=progress))
    _emit(fmt, rows, out, force, lambda d: wo.write(rows, d), wo.tables)


def _app_params(items: list[str] | None) -> dict[str, int] | None:
    """``["copies=0", "zeros=0"]`` -> ``{"copies": 0, "zeros": 0}``."""
    if not items:
        return None
    out = {}
    for it in items:
        k, eq, v = it.partition("=")
        try:
            out[k.strip()] = int(v.strip(), 0)
        except ValueError:
            raise typer.BadParameter(f"'{it}' is not NAME=INTEGER", param_hint="--app-param") from None
        if not eq or not k.strip() or out[k.strip()] < 0:
            raise typer.BadParameter(f"'{it}' is not NAME=INTEGER (non-negative)", param_hint="--app-param")
    return out


_APP_PARAM_HELP = ("Override a parameter of every copy/initialisation-intensive application NAME=INTEGER, "
                   "e.g. copies=0 or zeros=2 (a name they lack is refused, with the names they have).")
_INSTR_HELP = "Program instructions measured per application (a copy or zeroing counts as one)."
_WARMUP_HELP = "Program instructions run before measuring (caches filled)."


@app.command("rowclone-apps")
def rowclone_apps(
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a platform KEY=VALUE (rowclone-system).",
                                          show_default=False),
    app_param: list[str] | None = typer.Option(None, "--app-param", help=_APP_PARAM_HELP, show_default=False),
    instructions: int = typer.Option(100_000, "--instructions", min=1, max=1 << 32, help=_INSTR_HELP),
    warmup: int = typer.Option(50_000, "--warmup", min=0, max=1 << 32, help=_WARMUP_HELP),
    out: Path | None = typer.Option(None, "--out", help=OUT_HELP, show_default=False),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    apps: str = typer.Option("fitted", "--apps", help="fitted: the calibrated parameter sets (apps.toml); "
                             "recorded: those derived from recordings of real programs (recorded.toml; "
                             "bootup stays fitted), written as rowclone-apps-recorded.*"),
) -> None:
    """RowClone (MICRO 2013) section 7.3: six copy/initialisation-intensive applications alone.

    Fig. 11, Table 5 and Fig. 10 of the paper."""
    if apps not in ("fitted", "recorded"):
        raise typer.BadParameter(f"'{apps}' is not one of: fitted, recorded", param_hint="--apps")
    if apps == "recorded":
        if app_param:
            raise typer.BadParameter("the recorded applications' parameters are their recordings'; --app-param "
                                     "applies to --apps fitted only", param_hint="--app-param")
        check_output_dir(out, FILES["rowclone-apps-recorded"], force)
        _rowclone_apps_recorded(fmt, parse_set(set_), instructions, warmup, out, force)
        return
    check_output_dir(out, FILES["rowclone-apps"], force)
    _rowclone_apps(fmt, parse_set(set_), _app_params(app_param), instructions, warmup, out, force)


def _rowclone_apps(fmt: str, overrides: dict[str, Any], app_params: dict[str, int] | None, instructions: int,
                   warmup: int, out: Path | None, force: bool = False) -> None:
    from movelab.reproduce import rowclone_apps as ra

    rows = _simulate(fmt, lambda progress: ra.run(overrides, None, instructions, warmup, app_params, progress=progress))
    _warn_no_bulk_work(rows, instructions)
    _emit(fmt, rows, out, force, lambda d: ra.write(rows, d), ra.tables)


def _warn_no_bulk_work(rows: list[dict[str, Any]], instructions: int) -> None:
    """A warning when a window measured no copy or initialisation of an application: its mechanisms
    cannot differ there, so its speedups and reductions compare nothing."""
    from movelab.reproduce import rowclone_apps as ra

    idle = sorted({r["app"] for r in rows if r.get("mechanism") == "baseline" and not r.get("copy_init_fraction")})
    if idle:
        typer.echo(f"warning: the measured window of {instructions:,} instructions holds no copy or initialisation "
                   f"of {', '.join(idle)}: its rows compare nothing; give more --instructions (the default is "
                   f"{ra.INSTRUCTIONS:,})", err=True)


@app.command("rowclone-apps-recorded")
def rowclone_apps_recorded(
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a platform KEY=VALUE (rowclone-system).",
                                          show_default=False),
    instructions: int = typer.Option(100_000, "--instructions", min=1, max=1 << 32, help=_INSTR_HELP),
    warmup: int = typer.Option(50_000, "--warmup", min=0, max=1 << 32, help=_WARMUP_HELP),
    out: Path | None = typer.Option(None, "--out", help=OUT_HELP, show_default=False),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """RowClone (MICRO 2013) section 7.3 with the applications derived from recordings of real programs.

    The same as rowclone-apps --apps recorded: each application's parameters derived from a recording
    of a real program of its kind (movelab bench rowclone-apps derives them again)."""
    check_output_dir(out, FILES["rowclone-apps-recorded"], force)
    _rowclone_apps_recorded(fmt, parse_set(set_), instructions, warmup, out, force)


def _rowclone_apps_recorded(fmt: str, overrides: dict[str, Any], instructions: int, warmup: int, out: Path | None,
                            force: bool = False, whole_units: bool = True) -> None:
    from movelab.reproduce import rowclone_apps_recorded as rr

    rows = _simulate(fmt, lambda progress: rr.run(overrides, None, instructions, warmup, progress=progress,
                                                  whole_units=whole_units))
    _warn_no_bulk_work(rows, instructions)
    _emit(fmt, rows, out, force, lambda d: rr.write(rows, d), rr.tables)


@app.command("rowclone-multicore")
def rowclone_multicore(
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a platform KEY=VALUE (rowclone-multicore).",
                                          show_default=False),
    app_param: list[str] | None = typer.Option(None, "--app-param", help=_APP_PARAM_HELP, show_default=False),
    mixes: int | None = typer.Option(None, "--mixes", min=1, max=10_000,
                                     help="Mixes per core count; on 2 cores at most 138 (each pair of a "
                                          "copy-intensive and a memory-intensive application once) "
                                          "\\[default: the paper's counts, 138, 50, 40 on 2, 4, 8 "
                                          "cores; 12 on 6, which the paper did not run].", show_default=False),
    full: bool | None = typer.Option(None, "--full/--sample",
                                     help="--full: the paper's mix counts, 138 (every two-core pair), 50, 40 on "
                                          "2, 4, 8 cores (the default; 12 on 6 cores, which the paper did not "
                                          "run); --sample: a sample of them in the same proportions, 24, 12, 6 "
                                          "(about a sixth of the run time).",
                                     show_default=False),
    seed: int = typer.Option(7, "--seed", min=0, max=(1 << 63) - 1, help="Seed of the mixes' draw."),
    cores: str | None = typer.Option(None, "--cores", help="Core counts, even, 2 to 8 \\[default: 2,4,8].",
                                     show_default=False),
    instructions: int = typer.Option(100_000, "--instructions", min=1, max=1 << 32, help=_INSTR_HELP),
    warmup: int = typer.Option(50_000, "--warmup", min=0, max=1 << 32, help=_WARMUP_HELP),
    out: Path | None = typer.Option(None, "--out", help=OUT_HELP, show_default=False),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """RowClone (MICRO 2013) section 7.4: multi-programmed mixes on 2, 4 and 8 cores (Table 7, Fig. 13)."""
    if full is not None and mixes is not None:
        raise typer.BadParameter(f"give --mixes or {'--full' if full else '--sample'}, not both",
                                 param_hint="--full/--sample")
    check_output_dir(out, FILES["rowclone-multicore"], force)
    _rowclone_multicore(fmt, parse_set(set_), _app_params(app_param), _mix_counts(mixes, full), seed,
                        _int_list(cores, "--cores", 8), instructions, warmup, out, force)


def _mix_counts(mixes: int | None, full: bool | None) -> int | dict[int, int]:
    """Mixes per core count: ``--mixes N``, the sample (``--sample``: ``full`` false) or the
    paper's (``--full`` or neither; the sample's count on 6 cores, which the paper did not run)."""
    from movelab.reproduce import rowclone_multicore as rm

    if mixes is not None:
        return mixes
    return dict(rm.SAMPLE_MIXES if full is False else rm.FULL_MIXES)


def _rowclone_multicore(fmt: str, overrides: dict[str, Any], app_params: dict[str, int] | None,
                        mixes: int | dict[int, int],
                        seed: int, cores: list[int] | None, instructions: int, warmup: int, out: Path | None,
                        force: bool = False) -> None:
    from movelab.reproduce import rowclone_multicore as rm

    results = _simulate(fmt, lambda progress: rm.run_mixes(overrides, cores, mixes, seed, instructions, warmup,
                                                           app_params, progress=progress))
    rows = rm.rows_of(results)
    _emit(fmt, rows, out, force, lambda d: rm.write(rows, d, results), rm.tables)


#: CPU seconds (by the points' cost hints) under which a batch whose results feed the next is run
#: on the pool while planning, so that the batch after it starts with the others:
#: rowclone-multicore's alone runs (about 2 s, under a second on 16 workers), whose results its
#: mixes need.
PLAN_THROUGH_S = 10.0


def _start_all_first_points(jobs: list[Callable[[Path], Any]], out: Path) -> None:
    """On a pool of several workers, starts every reproduction's first batch of points at once:
    each job runs (silently) up to its first request for points, which is recorded and stops it
    (:class:`movelab.executor.PlanningExecutor`; a batch cheaper than :data:`PLAN_THROUGH_S` whose
    results feed the next is run on the pool, and the job goes on to its next batch); the pool
    then runs all the batches side by side, the costliest points first, and each reproduction,
    run in turn, finds its points started or done. Without this a reproduction's longest point
    waits for every point of the reproductions before it."""
    global _PLANNING
    from movelab import executor

    ex = executor.current()
    if ex.workers < 2 or type(ex).prefetch is executor.Executor.prefetch:
        return
    planner = executor.PlanningExecutor(run_below=PLAN_THROUGH_S, through=ex)
    _PLANNING = True
    try:
        # Silent: a job's messages (an error too) come when it runs for real.
        with executor.use(planner), redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            for job in jobs:
                try:
                    job(out)
                except (executor.Planned, Exception, SystemExit):
                    # Planned: its first points are recorded. Anything else (a job with no points
                    # that reached its output, an error) is left to the real run.
                    pass
    finally:
        _PLANNING = False
    for fn, pt, value in planner.ran:
        ex.provide(fn, pt, value)
    # The costliest points first, whichever reproduction they belong to (largest-first scheduling).
    for fn, pt in executor.largest_first(planner.batches):
        ex.prefetch(fn, [pt])


@app.command("ledger")
def ledger_cmd(
    name: str | None = typer.Argument(None, help="A reproduction (all of them when left out).", show_default=False),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
) -> None:
    """The calibration ledger: per reproduction, its tolerance, the results set from the paper (what
    each was fitted to and the preset values that carry the fit) and those not reproduced, with why."""
    from movelab import data
    from movelab.reproduce import ledger

    led = data.ledger()
    if name is not None and name not in led:
        _fail(ValueError(f"no reproduction '{name}' in the ledger (known: {', '.join(led)})"))
    names = [name] if name is not None else list(led)
    if fmt == "json":
        typer.echo(json.dumps({n: led[n] for n in names}, indent=2))
        return
    from movelab.reproduce import group, table

    for n in names:
        e = led[n]
        console.print(Text(f"{n}: {e.get('paper', '')}", style="bold"))
        console.print(f"tolerance: {e.get('tolerance', '')}")
        rules = table("rules (the first that names a result judges it)")
        for c in ["results", "judged"]:
            rules.add_column(c)
        for r in e.get("rule", []):
            rules.add_row(", ".join(r["results"]), ledger.rule_text(r))
        console.print(group(rules))
        cal = table("calibrated (set from the paper: never counted as predictions)")
        for c in ["results", "fitted to", "how", "preset values carrying the fit"]:
            cal.add_column(c)
        for c in e.get("calibrated", []):
            cal.add_row(", ".join(c.get("results", []) + c.get("rows", [])), c.get("fitted_to", ""), c.get("how", ""),
                        "\n".join(c.get("parameters", [])))
        console.print(group(cal))
        if e.get("not_reproduced"):
            nr = table("not reproduced")
            for c in ["results", "why"]:
                nr.add_column(c)
            for x in e["not_reproduced"]:
                nr.add_row(", ".join(x.get("results", []) + x.get("rows", [])), x.get("reason", ""))
            console.print(group(nr))


@app.command("all")
def all_cmd(
    ctx: typer.Context,
    out: Path = typer.Option(Path("reports"), "--out", help="Report directory: files go under OUT/<name>/."),
    force: bool = typer.Option(False, "--force", help="Overwrite report files that exist."),
    cluster: str | None = typer.Option(None, "--cluster", help=_CLUSTER_HELP, show_default=False),
    workers: int | None = typer.Option(None, "--workers", min=1, max=4096, help=_WORKERS_HELP,
                                       show_default=False),
    quick: bool = typer.Option(False, "--quick", help="A smoke test in seconds: every reproduction and its files, "
                                                      "on shorter runs (fewer packets, messages, pages, "
                                                      "instructions and mixes) than the papers' \\[default: off]."),
) -> None:
    """Run every reproduction, printing tables and writing CSV/JSON/PNG under OUT/<name>/."""
    for name, files in FILES.items():
        check_output_dir(out / name, files, force)
    if cluster is not None or workers is not None:
        _executor(ctx, cluster, workers)
    # The papers' run lengths, or (--quick) short ones that still give every row, table and plot.
    most_small, most_large = _LARSEN_LIMITS["small_count"], _LARSEN_LIMITS["large_count"]
    packets, small, large = (50, 200, most_large) if quick else (200, most_small, most_large)
    sizes, pages, zero_pages = ([8], [2, 64], 64) if quick else (None, None, 1024)
    payloads = [64, 1472] if quick else None
    instructions, warmup = (10_000, 5_000) if quick else (100_000, 50_000)
    mixes = 2 if quick else _mix_counts(None, None)
    jobs = [
        ("rowclone-latency", lambda d: _rowclone_latency("table", "rowclone-ddr3-1066", {}, d, force)),
        ("zhao-copy-engine", lambda d: _zhao_copy_engine("table", {}, packets, d, force)),
        ("rowclone-fork", lambda d: _rowclone_fork("table", {}, sizes, pages, zero_pages, d, force)),
        ("larsen-idma", lambda d: _larsen_idma("table", small, large, d, force)),
        ("wun-onload", lambda d: _wun_onload("table", {}, payloads, None, d, force)),
        ("rowclone-apps", lambda d: _rowclone_apps("table", {}, None, instructions, warmup, d, force)),
        # The recorded applications run whole units of their work (millions of instructions);
        # --quick runs them as short as the others (a smoke test, not the recorded ratios).
        ("rowclone-apps-recorded", lambda d: _rowclone_apps_recorded("table", {}, instructions, warmup, d, force,
                                                                     not quick)),
        ("rowclone-multicore", lambda d: _rowclone_multicore("table", {}, None, mixes, 7, None, instructions, warmup,
                                                             d, force)),
    ]
    # rowclone-latency computes its rows without points: it is not planned (it would run in full).
    _start_all_first_points([fn for name, fn in jobs if name != "rowclone-latency"], out)
    for i, (name, fn) in enumerate(jobs, 1):
        console.rule(f"{name} ({i}/{len(jobs)})")
        fn(out / name)
    console.print(f"reports written under {lit(out)}/")
