"""``movelab dram ...``: presets, runs, command-log checks and trace generation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from movelab import dram
from movelab._util import (
    GeneratorKind,
    TableJson,
    TraceFileFormat,
    TraceFormat,
    atomic_path,
    check_output_dir,
    echo_json,
    finite,
    given_on_command_line,
    lit,
    output_path,
    parse_set,
    parse_size,
    staged_dir,
)
from movelab._util import fail as _fail
from movelab.dram.run import console, run_trace

if TYPE_CHECKING:
    from rich.table import Table

app = typer.Typer(help="Command-level DRAM simulator with in-DRAM copy (RowClone) and energy.",
                  no_args_is_help=True)


@app.command("presets")
def presets_cmd(fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json")) -> None:
    """List the built-in speed bins, parts and configuration presets."""
    from rich import box
    from rich.table import Table

    p = dram.presets()
    if fmt == "json":
        echo_json(p)
        return

    def tbl(title: str, cols: list[str]) -> Table:
        # Names never wrap (they are what a user types); the source column takes what is left, and
        # a word longer than it (a file path) folds onto the next line rather than being cut.
        t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_lines=False)
        for i, col in enumerate(cols):
            last = i == len(cols) - 1
            t.add_column(col, no_wrap=not last, justify="left" if i == 0 or last else "right",
                         ratio=1 if last else None, overflow="fold" if last else "ellipsis")
        return t

    t = tbl("Speed bins (timings in clocks; RCD read/write where a standard splits it)",
            ["name", "tCK ps", "CL-RCD-RP", "RAS", "RC", "source"])
    for s in p["speeds"]:
        q = s["params"]
        rcd = q["nRCD"] if "nRCD" in q else f"{q.get('nRCDRD')}/{q.get('nRCDWR')}"
        t.add_row(s["name"], str(q.get("tCK_ps")), f"{q.get('nCL')}-{rcd}-{q.get('nRP')}",
                  str(q.get("nRAS")), str(q.get("nRC")), f"[dim]{q.get('source', '')}[/dim]")
    console.print(t)
    t = tbl("Parts", ["name", "Gb", "banks", "rows", "cols", "tRFC ns", "source"])
    # A die listed by several variant files of one standard (LPDDR5's BL16 and BL32) is one row; which
    # speed bins go with a part is in the JSON (`speeds`).
    seen: set[tuple[Any, ...]] = set()
    for s in p["parts"]:
        key = (s["name"], s["density_gbit"], s["banks"], s["rows"], s["columns"], s["tRFC_ns"], s["source"])
        if key in seen:
            continue
        seen.add(key)
        t.add_row(s["name"], f"{s['density_gbit']:g}", str(s["banks"]), str(s["rows"]), str(s["columns"]),
                  f"{s['tRFC_ns']:g}", f"[dim]{s['source']}[/dim]")
    console.print(t)
    t = tbl("Configuration presets (also: any SPEED/PART, e.g. DDR3-1600K/DDR3-4Gb-x8)", ["name", "description"])
    for c in p["configs"]:
        t.add_row(c["name"], c["description"])
    console.print(t)


@app.command("show")
def show_cmd(
    config: str = typer.Argument(..., help="Preset name, SPEED/PART, or a TOML file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE (repeatable)."),
) -> None:
    """Print a config after presets and overrides, with the DRAM spec it resolves to (JSON)."""
    try:
        c = dram.load_config(config, parse_set(set_))
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    echo_json({"config": c.data, "spec": c.spec})


# The generator's options, shared by `run --generate` and `generate` (bounded as the generator is: the
# simulator streams generated requests, so the count bounds time, not memory).
COUNT = typer.Option(100_000, min=0, max=dram.MAX_COUNT, help="Requests to generate.")
READ_FRACTION = typer.Option(0.8, min=0.0, max=1.0, callback=finite("--read-fraction"),
                             help="Fraction of generated requests that are reads.")
SEED = typer.Option(0, min=0, max=(1 << 64) - 1, help="Generator seed.")
FOOTPRINT = typer.Option("1G", help="Generated addresses fall within this many bytes (e.g. 64M, 4G).")


@app.command("run")
def run_cmd(
    ctx: typer.Context,
    config: str = typer.Argument(..., help="Preset name, SPEED/PART, or a TOML file."),
    trace: Path | None = typer.Argument(None, help="Trace file (native, Ramulator 2 LD/ST, or DRAMsim3); "
                                                   "- reads a native trace from stdin; make one with "
                                                   "`movelab dram generate`.", show_default=False),
    generate: GeneratorKind | None = typer.Option(None, "--generate", help="Instead of a trace file: generate "
                                                  "requests: stream, random or hotset.", show_default=False),
    count: int = COUNT,
    read_fraction: float = READ_FRACTION,
    seed: int = SEED,
    footprint: str = FOOTPRINT,
    trace_format: TraceFormat = typer.Option(TraceFormat.auto, "--trace-format", help="Format of the trace file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a config KEY=VALUE (repeatable), "
                                          "e.g. dram.timing.nRAS=30.", show_default=False),
    command_log: Path | None = typer.Option(None, "--command-log", help="Write every issued command to this file "
                                            "(check it with `movelab dram check`).", show_default=False),
    memspec: Path | None = typer.Option(None, "--memspec", help="Take the organisation, timings and currents of "
                                        "this DRAMPower JSON memspec (under any --set).", show_default=False),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --command-log file."),
) -> None:
    """Simulate a trace and print its statistics."""
    # Options that the other source of requests would ignore are refused, not dropped.
    given = given_on_command_line(ctx, "count", "read_fraction", "seed", "footprint", "trace_format")
    if trace is not None and given - {"trace_format"}:
        extra = sorted(given - {"trace_format"})
        opts = ", ".join("--" + p.replace("_", "-") for p in extra)
        raise typer.BadParameter(f"only --generate takes {'it' if len(extra) == 1 else 'them'}; a TRACE file's "
                                 "requests are all run as the file gives them", param_hint=opts)
    if generate is not None and "trace_format" in given:
        raise typer.BadParameter("only a TRACE file has a format; --generate makes requests in movelab's own",
                                 param_hint="--trace-format")
    run_trace(config, trace, generate.value if generate else None, count, read_fraction, seed, footprint,
              trace_format.value, set_, command_log, memspec, fmt.value, force)


@app.command("check")
def check_cmd(
    log: Path = typer.Argument(..., help="A command log written by `movelab dram run --command-log`."),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    limit: int = typer.Option(20, min=0, max=1_000_000, help="Violations to print in the table."),
) -> None:
    """Replay a command log through the independent timing checker. Exit status 1 on violations."""
    from rich.table import Table

    try:
        r = dram.check_log(log)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    if fmt == "json":
        echo_json(r)
    else:
        if r["ok"]:
            console.print(f"[green]OK[/green]: {r['commands_checked']:,} commands, no violations")
        else:
            n = r["violation_count"]
            t = Table(title=f"{n:,} violation{'' if n == 1 else 's'} in {r['commands_checked']:,} commands")
            shown = r["violations"][:limit]
            # Timing rules say what is wrong with their cycles; the others (bounds, order, protocol)
            # have none, and say it in words: a column for those words when any is shown.
            timed = [bool(v.get("required_cycles") or v.get("actual_cycles")) for v in shown]
            cols = ["line", "cycle", "command", "rule", "required", "actual"] + ([] if all(timed) else ["what"])
            for col in cols:
                t.add_column(col)
            for v, tv in zip(shown, timed, strict=True):
                row = [str(v.get("line")), str(v["cycle"]), v["command"], v["rule"],
                       str(v["required_cycles"]) if tv else "-", str(v["actual_cycles"]) if tv else "-"]
                t.add_row(*row, *([] if all(timed) else ["" if tv else (v.get("message") or "")]))
            console.print(t)
    if not r["ok"]:
        raise typer.Exit(1)


@app.command("drampower-trace")
def drampower_trace_cmd(
    log: Path = typer.Argument(..., help="A command log written by `movelab dram run --command-log`."),
    out: Path = typer.Option(..., "--out", "-o", help="The DRAMPower command trace (CSV) to write.",
                             show_default=False),
    channel: int = typer.Option(0, "--channel", min=0, max=2**32 - 1, help="The channel to write "
                                "(DRAMPower models one)."),
    end: int | None = typer.Option(None, "--end", min=0, max=2**64 - 1, help="Cycle of the END line: the "
                                   "run's cycles (its stats), so that background energy covers the same time; "
                                   "default the last command's cycle.", show_default=False),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a command log as a DRAMPower command trace (runs without in-DRAM copy or refresh management)."""
    path = output_path(out, force, "--out")
    try:
        with atomic_path(path) as tmp:
            s = dram.drampower_trace(log, tmp, channel=channel, end=end, force=True)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    console.print(f"wrote {s['commands']:,} {s['standard']} commands of channel {channel} (END at cycle "
                  f"{s['end']:,}) to {lit(path)}")


@app.command("memspec")
def memspec_cmd(
    ctx: typer.Context,
    memspec: Path | None = typer.Argument(None, help="A DRAMPower JSON memspec to read (DDR4, DDR5, LPDDR4, "
                                          "LPDDR5).", show_default=False),
    write: str | None = typer.Option(None, "--write", help="Instead: write this config's device (preset "
                                     "name, SPEED/PART or TOML file; DDR4 / DDR5 / LPDDR5 with currents) as a memspec.",
                                     show_default=False),
    set_: list[str] | None = typer.Option(None, "--set", help="Override a config KEY=VALUE for --write.",
                                          show_default=False),
    out: Path | None = typer.Option(None, "--out", "-o", help="File for --write (default: print).",
                                    show_default=False),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file."),
) -> None:
    """Read a DRAMPower memspec as movelab overrides (--set lines), or write a device as one."""
    if (memspec is None) == (write is None):
        _fail(ValueError("give a memspec file to read, or --write CONFIG"))
    # Options of the other direction are refused, not dropped (reading took --set and --out and wrote
    # nothing; --write's output is JSON whatever --format says).
    given = given_on_command_line(ctx, "set_", "out", "force", "fmt")
    if write is None and given & {"set_", "out", "force"}:
        extra = sorted(given & {"set_", "out", "force"})
        opts = ", ".join("--" + p.rstrip("_") for p in extra)
        raise typer.BadParameter(f"only --write takes {'it' if len(extra) == 1 else 'them'}: reading a memspec "
                                 "prints its overrides", param_hint=opts)
    if write is not None and "fmt" in given:
        raise typer.BadParameter("--write writes the memspec as JSON; --format is for reading one",
                                 param_hint="--format")
    try:
        if write is not None:
            cfg = dram.load_config(write, parse_set(set_) or None)
            text = json.dumps(dram.write_memspec(cfg), indent=2)
            path = output_path(out, force, "--out")
            if path is None:
                typer.echo(text)
            else:
                with atomic_path(path) as tmp:
                    tmp.write_text(text + "\n")
                console.print(f"wrote the memspec of {lit(cfg.spec['speed'])} / {lit(cfg.spec['part'])} to {lit(path)}")
            return
        assert memspec is not None
        r = dram.read_memspec(memspec)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    if fmt == "json":
        echo_json(r)
        return
    from rich import box
    from rich.table import Table

    t = Table(title=lit(f"{memspec}: {r['memory_type']} {r['memory_id']}"), box=box.SIMPLE)
    t.add_column("--set")
    for k, v in r["settings"]:
        t.add_row(lit(f"{k}={v}"))
    console.print(t)
    for n in r["notes"]:
        console.print(f"[yellow]not carried over[/yellow]: {lit(n)}")
    dev = {k: int(v) for k, v in (r.get("device") or {}).items() if v}
    if dev:
        shape = ", ".join(x for x in (f"x{dev['width']}" if "width" in dev else "",
                                      f"{dev['devices']} devices a rank" if "devices" in dev else "",
                                      f"BL{dev['burst_length']}" if "burst_length" in dev else "") if x)
        console.print(f"device: {shape} (from the config's part, not carried over; `dram run --memspec` says where "
                      "they differ)")


@app.command("generate")
def generate_cmd(
    kind: GeneratorKind = typer.Argument(..., help="stream, random or hotset"),
    out: Path = typer.Option(..., "--out", "-o", help="File to write.", show_default=False),
    count: int = COUNT,
    read_fraction: float = READ_FRACTION,
    seed: int = SEED,
    footprint: str = FOOTPRINT,
    hot_fraction: float | None = typer.Option(None, min=0.0, max=1.0, callback=finite("--hot-fraction"),
                                              help="hotset: fraction of requests to the hot set (default 0.9).",
                                              show_default=False),
    hot_bytes: str | None = typer.Option(None, help="hotset: bytes of the hot set, the footprint's first "
                                         "(default 1M).", show_default=False),
    line_bytes: str = typer.Option("64", "--line-bytes", help="Bytes per request, a power of two: the burst of "
                                   "the device the trace is for (32 on HBM, GDDR, LPDDR5/6)."),
    fmt: TraceFileFormat = typer.Option(TraceFileFormat.native, "--format", help="Trace format to write."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing file."),
) -> None:
    """Write a seeded synthetic trace in any supported format (to feed other simulators too)."""
    if str(out) == "-":
        raise typer.BadParameter("'-': a trace is written to a file; give its name", param_hint="--out")
    path = output_path(out, force, "--out")
    try:
        with atomic_path(path) as tmp:
            spec = {"kind": kind.value, "count": count, "read_fraction": read_fraction, "seed": seed,
                    "footprint_bytes": parse_size(footprint, "--footprint"),
                    "line_bytes": parse_size(line_bytes, "--line-bytes")}
            if hot_fraction is not None:
                spec["hot_fraction"] = hot_fraction
            if hot_bytes is not None:
                spec["hot_bytes"] = parse_size(hot_bytes, "--hot-bytes")
            n = dram.write_trace(spec, tmp, fmt.value, force=True)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    console.print(f"wrote {n:,} requests to {lit(path)}")


def _sizes(text: str, option: str) -> tuple[int, ...]:
    """``"64M,256M"`` -> bytes; each a positive multiple of 4 KiB of at most 4 GiB."""
    out = []
    for part in text.split(","):
        n = parse_size(part, option)
        if n <= 0 or n % 4096 or n > 4 << 30:
            raise typer.BadParameter(f"'{part.strip()}': give a multiple of 4 KiB between 4K and 4G",
                                     param_hint=option)
        out.append(n)
    return tuple(out)


def bench_dram(
    requests: int = typer.Option(5_000_000, min=1, max=10**9, help="Requests per run (the speed bar: 5 million)."),
    repeats: int = typer.Option(3, min=1, max=100, help="Runs per pattern; the median is reported."),
    bulk_sizes: str = typer.Option("64M,256M", "--bulk-sizes",
                                   help="Sizes of the RowClone COPY whose simulation speed is measured; "
                                        "'none' skips it."),
    out: Path | None = typer.Option(None, "--out", help="Directory for bench-dram.json "
                                                        "\\[default: none, nothing is written].", show_default=False),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing bench-dram.json."),
    config: str = typer.Option("ddr3-1600k-bench", help="Config preset or TOML file for the request runs, "
                                                        "e.g. ddr5-3200an."),
    ramulator: Path | None = typer.Option(None, "--ramulator", help="A built Ramulator 2.1 source tree: also time "
                                          "it against movelab, whole processes alternating, on one random trace "
                                          "of --requests requests (--config ddr3-1600k-bench or ddr5-3200an).",
                                          show_default=False),
    ramulator_python: str = typer.Option("python3", "--ramulator-python", help="The Python interpreter that "
                                         "runs Ramulator 2.1 (its tree's python/ folder is put on its path)."),
) -> None:
    """Speed benchmark of the DRAM simulator: requests/s and bulk-copy bytes/s, simulated cycles and
    peak memory; with --ramulator, the speed ratio against Ramulator 2.1 on the same trace."""
    from rich import box
    from rich.table import Table

    from movelab.dram.against_ramulator import COUNTERPARTS, check_ramulator, run_against_ramulator
    from movelab.dram.bench import run_bench, run_bulk

    sizes = () if bulk_sizes.strip().lower() == "none" else _sizes(bulk_sizes, "--bulk-sizes")
    try:
        spec = dram.load_config(config).spec
    except (ValueError, FileNotFoundError) as e:
        _fail(e)
    if ramulator is not None:
        if config not in COUNTERPARTS:
            _fail(ValueError(f"--config {config}: no Ramulator 2.1 counterpart is defined "
                             f"(known: {', '.join(COUNTERPARTS)})"))
        try:
            check_ramulator(ramulator, ramulator_python)
        except (ValueError, OSError) as e:
            _fail(e)
    check_output_dir(out, ["bench-dram.json"], force)
    log = None if fmt == "json" else console
    rows = run_bench(requests, repeats, console=log, config=config)
    bulk = run_bulk(sizes, 1, console=log)
    vs = None
    if ramulator is not None:
        try:
            vs = run_against_ramulator(config, requests, repeats, ramulator, ramulator_python, console=log)
        except (RuntimeError, ValueError, OSError) as e:
            _fail(e)
    doc: dict[str, Any] = {"requests": rows, "bulk": bulk}
    if vs is not None:
        doc["against_ramulator"] = vs
    if out is not None:
        with staged_dir(out, force) as d:
            (d / "bench-dram.json").write_text(json.dumps(doc, indent=2))
    if fmt == "json":
        echo_json(doc)
        return
    t = Table(title=lit(f"DRAM simulator speed ({config}: {spec['speed']}, {spec['part']}; stream and random, "
                        "80% reads)"),
              box=box.SIMPLE_HEAD, pad_edge=False)
    t.add_column("pattern", no_wrap=True, min_width=7)
    for col in ["requests", "M req/s", "cycles", "cyc/req", "read lat", "RSS MiB"]:
        t.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        t.add_row(r["pattern"], f"{r['requests']:,}", f"{r['mreq_per_s']:.2f}", f"{r['cycles']:,}",
                  f"{r['cycles'] / r['requests']:.3f}", f"{r['mean_read_latency_cycles']:.1f}",
                  f"{r['peak_rss_mib']:.1f}")
    console.print(t)
    if bulk:
        t = Table(title="Bulk copy speed (one COPY on rowclone-ddr3-1066; bytes of copy simulated per second)",
                  box=box.SIMPLE_HEAD, pad_edge=False)
        for col in ["size", "MiB/s", "wall s", "cycles", "moved by", "RSS MiB"]:
            t.add_column(col, justify="left" if col == "moved by" else "right", no_wrap=col != "moved by")
        for r in bulk:
            t.add_row(f"{r['bytes'] >> 20} MiB", f"{r['mib_per_s']:,.1f}", f"{r['seconds_median']:.2f}",
                      f"{r['cycles']:,}", r["by"], f"{r['peak_rss_mib']:.1f}")
        console.print(t)
    if vs is not None:
        console.print(_against_ramulator_table(vs))


def _against_ramulator_table(vs: dict[str, Any]) -> Table:
    """The side-by-side table of `bench dram --ramulator`: whole-process medians of alternating runs."""
    from rich import box
    from rich.table import Table

    r, m = vs["ramulator"], vs["movelab"]
    t = Table(title=f"Against Ramulator 2.1 ({vs['config']} / {r['standard']} {r['timing_preset']}; "
                    f"{vs['requests']:,} random requests, whole processes, {vs['rounds']} alternating rounds)",
              box=box.SIMPLE_HEAD, pad_edge=False)
    # A row per measure, a column per simulator: every figure whole at 80 columns (a column per
    # measure cut the names and numbers to "simula…", "33,1…").
    t.add_column("", no_wrap=True)
    for name in ("Ramulator 2.1", "movelab"):
        t.add_column(name, justify="right", no_wrap=True)
    for label, fmt in [("wall s (median)", lambda s: f"{s['wall_s_median']:.2f}"),
                       ("wall s (range)", lambda s: f"{s['wall_s_min']:.2f}-{s['wall_s_max']:.2f}"),
                       ("CPU s (median)", lambda s: f"{s['cpu_s_median']:.2f}"),
                       ("cycles", lambda s: f"{s['cycles']:,}"),
                       ("row hits", lambda s: f"{s['row']['hits']:,}"),
                       ("row misses", lambda s: f"{s['row']['misses']:,}"),
                       ("row conflicts", lambda s: f"{s['row']['conflicts']:,}"),
                       ("peak RSS MiB", lambda s: f"{s['peak_rss_mib']:.1f}")]:
        t.add_row(label, fmt(r), fmt(m))
    t.caption = (f"movelab faster by {vs['ratio_wall_median']:.1f}x (wall, median of the rounds' ratios; range "
                 f"{vs['ratio_wall_min']:.1f}-{vs['ratio_wall_max']:.1f}x), {vs['ratio_cpu_median']:.1f}x in CPU "
                 f"time; cycles {vs['cycles_difference']:+.2%} against Ramulator 2.1")
    return t
