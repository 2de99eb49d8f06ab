"""``movelab platform ...``: built-in platforms and workloads, configs, and runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from movelab import platform as plat
from movelab._util import (
    U64_MAX,
    TableJson,
    TomlJson,
    check_output_dir,
    echo_json,
    lit,
    parse_set,
    progress_bar,
    staged_dir,
)
from movelab._util import fail as _fail

app = typer.Typer(help="Platform simulator: a core, caches, a bus and DRAM, with copy engines and RowClone.",
                  no_args_is_help=True)
console = Console()


def parse_params(items: list[str] | None, names: bool = False) -> dict[str, Any]:
    """Turns ``["payload=1400", "packets=1_000"]`` into ``{"payload": 1400, "packets": 1000}``;
    ``names``: a value that is not an integer is kept as a name (``config=softnic``)."""
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise typer.BadParameter(f"'{item}' is not NAME={'VALUE' if names else 'INTEGER'} (e.g. packets=100)",
                                     param_hint="--param")
        key, raw = (s.strip() for s in item.split("=", 1))
        if not key:
            raise typer.BadParameter(f"'{item}': empty name", param_hint="--param")
        if key in out:
            raise typer.BadParameter(f"'{item}': {key} is given twice (once is enough; which one was meant?)",
                                     param_hint="--param")
        try:
            value = int(raw, 0)
        except ValueError:
            if names:
                out[key] = raw
                continue
            raise typer.BadParameter(f"'{item}': {key} must be a non-negative integer", param_hint="--param") from None
        if not 0 <= value <= U64_MAX:
            raise typer.BadParameter(f"'{item}': {key} must be a non-negative 64-bit integer", param_hint="--param")
        out[key] = value
    return out


@app.command("presets")
def presets_cmd(fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json")) -> None:
    """List the built-in platforms and workloads."""
    try:
        p = plat.presets()
    except ValueError as e:
        _fail(e)
    if fmt == "json":
        echo_json(p)
        return
    t = Table(title="Platforms", box=box.SIMPLE_HEAD, show_lines=True)
    t.add_column("name", no_wrap=True)
    t.add_column("core\ninterconnect", no_wrap=True)
    t.add_column("description (source)")
    for q in p["platforms"]:
        t.add_row(q["name"], f"{q['core']}\n{q['interconnect']}", f"{q['description']}\n[dim]{q['source']}[/dim]")
    console.print(t)
    t = Table(title="Workloads (set parameters with --param NAME=VALUE)", box=box.SIMPLE_HEAD)
    for col in ["name", "description", "parameters (defaults)"]:
        t.add_column(col, no_wrap=col == "name")
    for w in p["workloads"]:
        t.add_row(w["name"], w["description"], ", ".join(f"{k}={v}" for k, v in w["params"].items()))
    console.print(t)


@app.command("show")
def show_cmd(
    platform: str = typer.Argument(..., help="Built-in platform name or a TOML file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override KEY=VALUE (repeatable).", show_default=False),
    fmt: TomlJson = typer.Option(TomlJson.toml, "--format", help="toml or json"),
) -> None:
    """Print a platform config after presets and overrides."""
    try:
        cfg = plat.load_config(platform, parse_set(set_))
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    if fmt == "json":
        echo_json(cfg)
    else:
        typer.echo(plat.to_toml(cfg))


def _fmt_bytes(n: int) -> str:
    for unit, size in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]:
        if n >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,} B"


def _device_rows(dev: dict[str, Any]) -> list[tuple[str, str]]:
    """A PCIe device's rows: its first TX stack, link bytes by category, where its lines went."""
    name = dev["name"]
    rows = []
    # A device that only received (the microengines, a receiving NIC) gets no empty transmit rows.
    if dev["frames"] or dev["tx_stack"] or not dev.get("rx_frames_in"):
        rows.append((f"{name}: frames sent", f"{dev['frames']:,} ({dev['frame_bytes']:,} B)"))
        for part, v in dev["tx_stack"]:
            rows.append((f"{name}: first TX stack: {part}", f"{v:,.1f} ns"))
        rows.append((f"{name}: first TX stack: total", f"{dev['tx_stack_total_ns']:,.1f} ns"))
    if dev.get("rx_frames_in"):
        nic = dev.get("nic") or {}
        rows.append((f"{name}: frames in / landed / dropped",
                     f"{dev['rx_frames_in']:,} / {nic.get('rx_frames', 0):,} / {nic.get('rx_drops', 0):,}"))
    for direction in ("up", "down"):
        for cat, v in dev[f"bytes_{direction}"]:
            rows.append((f"{name}: link bytes {direction}: {cat}", f"{v:,}"))
    rows += [
        (f"{name}: lines read from mem / cache", f"{dev['lines_from_memory']:,} / {dev['lines_from_cache']:,}"),
        (f"{name}: lines written to mem / cache", f"{dev['lines_to_memory']:,} / {dev['lines_to_cache']:,}"),
        (f"{name}: interrupts", f"{dev['interrupts']:,}"),
    ]
    return rows


def stats_table(s: dict[str, Any]) -> Table:
    copy = s["mechanism"] if s["mechanism"] != "ce" else f"ce ({s['placement']}, {s['mode']})"
    # Copy agents listed in [[agents]] besides the one [copy] makes (its kind's first).
    copy_kinds = ("copy-engine", "in-memory")
    agents = [a for a in s.get("agents", []) if a.get("kind") in copy_kinds]
    own = "copy-engine" if s["mechanism"] == "ce" else None if s["mechanism"] == "base" else "in-memory"
    if own is not None:
        first = next((i for i, a in enumerate(agents) if a["kind"] == own), None)
        agents = [a for i, a in enumerate(agents) if i != first]
    t = Table(title=f"{lit(s['platform'])} / {lit(s['workload'])}", box=box.SIMPLE_HEAD)
    t.add_column("metric", no_wrap=True)
    t.add_column("value", justify="right", no_wrap=True)
    c, m = s["caches"], s["memory"]
    rows = [
        ("core / copy mechanism", f"{s['core']} / {copy}"),
        *([("copy agents", ", ".join(a["name"] for a in agents))] if agents else []),
        ("simulated time", f"{s['time_ns'] / 1000:,.3f} us"),
        ("core cycles / instructions", f"{s['core_cycles']:,} / {s['instructions']:,}"),
        ("IPC", f"{s['ipc']:.3f}"),
        ("head-of-window stall cycles", f"{s['head_stall_cycles']:,}"),
        ("offloaded copies / inits", f"{s['offloads']:,}"),
    ]
    if s["offloads"]:
        rows += [
            ("  mean / total offload time",
             f"{s['mean_offload_ns']:,.1f} ns / {s['offload_time_ns'] / 1000:,.3f} us"),
            ("  accesses held by a pending copy", f"{s['pending_copy_stalls']:,}"),
        ]
    rows += [
        ("L1 hits / misses", f"{c['l1_hits']:,} / {c['l1_misses']:,}"),
        ("L2 hits / misses", f"{c['l2_hits']:,} / {c['l2_misses']:,}"),
    ]
    if c.get("llc_hits") or c.get("llc_misses"):
        rows.append(("LLC hits / misses", f"{c['llc_hits']:,} / {c['llc_misses']:,}"))
    rows += [
        ("bus / path busy", f"{s['bus_busy_fraction'] * 100:.1f} %"),
        ("memory channel traffic", _fmt_bytes(m["channel_bytes"])),
        ("  copies / controller bulk", f"{_fmt_bytes(m['copy_bytes'])} / {_fmt_bytes(m['bulk_bytes'])}"),
        ("  FMTC (copies' share)", f"{m['fmtc'] * 100:.1f} %"),
        ("  bandwidth", f"{m['bandwidth_gbs']:.3f} GB/s"),
    ]
    d = s.get("dram") or {}
    # A memory without public currents has no energy model: not a zero.
    rows.append(("DRAM energy (incl. channel I/O)", f"{s['dram_energy_nj'] / 1000:,.3f} uJ"
                 if d.get("energy_available", True) else f"not available: no public currents for {d.get('part')}"))
    if d:
        rows.append(("memory", f"{d.get('speed')} / {d.get('part')}, {d.get('channels')} ch x {d.get('ranks')} rank"))
    for dev in s.get("devices") or []:
        rows += _device_rows(dev)
    for a in s.get("agents") or []:
        sc = a.get("small_cores")
        if sc:
            shape = f"{sc['engines']} x {sc['threads']}, {sc['clock_mhz']:g} MHz"
            rows.append((f"{a['name']}: busy", f"{sc['busy_share'] * 100:.1f} % ({shape})"))
            lines = a.get("lines") or {}
            if lines.get("engine_read") or lines.get("engine_written"):
                rows.append((f"{a['name']}: copy lines in / out",
                             f"{lines.get('engine_read', 0):,} / {lines.get('engine_written', 0):,}"))
    for k, v in rows:
        t.add_row(k, v)
    return t


@app.command("run")
def run_cmd(
    platform: str = typer.Argument(..., help="Built-in platform name or a TOML file."),
    workload: str = typer.Argument(..., help="Built-in workload name (tcp-rx, forkbench, ...) or a TOML file."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override platform KEY=VALUE, e.g. copy.mechanism=ce.",
                                          show_default=False),
    param: list[str] | None = typer.Option(None, "--param", help="Workload parameter NAME=VALUE, e.g. packets=100.",
                                           show_default=False),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
) -> None:
    """Run a workload on a platform and print its statistics. The workload nic-stream runs an
    I/O preset (movelab systems lists them) on the cluster: two platforms with its device on one
    link: params count and bytes; --set nic.kind=idma for the integrated DMA engine."""
    overrides, params = parse_set(set_), parse_params(param)
    if workload == "nic-stream":
        _io_run(platform, overrides, params, fmt)
        return
    try:
        # The bar counts the operations fed to the cores (none for JSON).
        with progress_bar("simulating", fmt != "json") as progress:
            res = plat.run(platform, workload, overrides, params, progress=progress)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    if (note := no_device_note(res.stats)) is not None:
        typer.echo(f"warning: {note}", err=True)
    if (note := no_frames_note(res.stats)) is not None:
        typer.echo(f"warning: {note}", err=True)
    if (note := shared_stride_note(plat.load_config(platform, overrides), res.stats)) is not None:
        typer.echo(f"warning: {note}", err=True)
    if fmt == "json":
        typer.echo(json.dumps(res.stats, indent=2))
    else:
        console.print(stats_table(res.stats))
    if (wrong := wrong_bytes_note(res.stats)) is not None:
        typer.echo(f"error: {wrong}", err=True)
        raise typer.Exit(1)


def wrong_bytes_note(stats: dict[str, Any]) -> str | None:
    """What the byte checks of the devices found wrong (every frame sent and landed is compared
    with what the driver wrote and what was sent), or None when every byte checked is right."""
    bad = [f"{d.get('name', 'device')}: {d.get('tx_bytes_wrong', 0):,} of {d.get('tx_bytes_checked', 0):,} sent "
           f"and {d.get('rx_bytes_wrong', 0):,} of {d.get('rx_bytes_checked', 0):,} received bytes"
           for d in stats.get("devices") or [] if d.get("tx_bytes_wrong") or d.get("rx_bytes_wrong")]
    if not bad:
        return None
    return (f"the byte checks failed ({'; '.join(bad)} differ from what was sent): this run's frames are not the "
            "data its driver wrote, so its figures describe a broken transfer; the statistics above are shown "
            "for diagnosis")


def no_device_note(stats: dict[str, Any]) -> str | None:
    """A note when the workload wrote device registers (uncached accesses: doorbells, tail
    registers) on a platform with no device to receive them, so no NIC was simulated."""
    n = stats.get("uncached_accesses") or 0
    if not n or stats.get("devices"):
        return None
    return (f"platform '{stats.get('platform')}' has no [io] devices: the workload's {n:,} uncached accesses "
            "(doorbells, device registers) reached no NIC, so no NIC was simulated and no NIC statistics are "
            "given (an I/O platform such as larsen-io has one)")


def no_frames_note(stats: dict[str, Any]) -> str | None:
    """A note when a device took receive buffers (fetched RX descriptors) but no frame ever reached
    it: on its own a platform's NIC has no far end (no link; frames come back only from a loopback
    peer), so a receive workload's path never ran."""
    idle = [d for d in stats.get("devices") or []
            if (d.get("nic") or {}).get("rx_desc_fetched") and not d.get("rx_frames_in")]
    if not idle:
        return None
    names = ", ".join(str(d.get("name", "device")) for d in idle)
    return (f"{names}: receive buffers were posted but no frame arrived, so no receive path ran; a platform's NIC "
            "has no far end of its own: run a sender and this receiver on one link (movelab platform pair, or "
            "movelab run PRESET pair --system cluster), or loop its frames back (io.loopback = true) with a core "
            "that sends")


def shared_stride_note(cfg: dict[str, Any], stats: dict[str, Any]) -> str | None:
    """A note when the cores of a group whose ``stride`` gives each program its own memory shared lines
    anyway: the workload's addresses span more than the stride (a built-in workload on rowclone-multicore,
    whose 512 MiB stride fits the paper's mixes), so the cores' programs overlap."""
    c = stats.get("coherence") or {}
    shared = (c.get("invalidations") or 0) + (c.get("cache_to_cache") or 0)
    groups = [(i, g) for i, g in enumerate(cfg.get("cores") or []) if g.get("count", 1) > 1 and g.get("stride")]
    if not shared or not groups:
        return None
    i, g = groups[0]
    return (f"the {g['count']} cores of cores[{i}] have a stride ({g['stride']:#x}) to give each program its own "
            f"memory, yet shared lines ({c.get('invalidations', 0):,} invalidations, {c.get('cache_to_cache', 0):,} "
            f"transfers between caches): the workload's addresses span more than the stride, so the programs "
            f"overlap; give cores[{i}].stride a larger value, or 0 to share on purpose")


@app.command("compose")
def compose_cmd(
    frames: int = typer.Option(32, min=1, max=4096, help="Frames the server receives."),
    set_: list[str] | None = typer.Option(None, "--set", help="Override server-composed KEY=VALUE (every variant).",
                                          show_default=False),
    out: Path | None = typer.Option(None, "--out", help="Directory for composition.json, .csv and .png.",
                                    show_default=False),
    force: bool = typer.Option(False, "--force", help="Overwrite existing outputs in --out."),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
) -> None:
    """What no paper could run: a receive server with a DDIO NIC, RowClone-ZI, an on-die ASYNC copy
    engine and a small multithreaded network core, each mechanism alone, in pairs and all together,
    and an integrated DMA engine (iDMA) in the NIC's place, alone and with the others."""
    from movelab.platform import composition as comp
    from movelab.reproduce import write_csv

    names = ["composition.json", "composition.csv", "composition.png"]
    check_output_dir(out, names, force)
    try:
        # A bar of the variants run (none for JSON).
        with progress_bar("simulating the variants", fmt != "json") as progress:
            rows = comp.run(frames, parse_set(set_) or None, progress=progress)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    if out is not None:
        with staged_dir(out, force) as d:
            (d / names[0]).write_text(json.dumps(rows, indent=2))
            write_csv(d / names[1], rows, comp.KEYS)
            comp.plot(rows, d / names[2])
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table(title=f"server-composed: {frames} frames received (network-core time, every frame byte-checked)",
              box=box.SIMPLE_HEAD, padding=(0, 1), show_edge=False, pad_edge=False)
    # The numbers never wrap or get cut; on a narrow terminal the mechanisms' names fold.
    t.add_column("mechanisms", justify="left", overflow="fold")
    # (The payload's Gb/s, the inverse of ns/frame, is in --format json.)
    for c in ["ns/frame", "irqs", "saving", "DRAM uJ", "KiB", "offloads"]:
        t.add_column(c, justify="right", no_wrap=True, min_width=len(c))
    for r in rows:
        t.add_row(r["variant"], f"{r['ns_per_frame']:,.0f}", f"{r['interrupts']:,}", f"{r['saving'] * 100:.1f}%",
                  f"{r['dram_energy_uj']:,.1f}", f"{r['channel_kb']:,.0f}",
                  f"{r['zero_offloads']}z {r['copy_offloads']}c")
    alone, together = comp.additivity(rows)
    t.caption = (f"Savings alone sum to {alone * 100:.1f}%; all together save {together * 100:.1f}%. "
                 "Saving: 1 - time / the time of 'none'; irqs: interrupts the network core took (one vector "
                 "for transmit and receive; each runs the receive path once per frame it announced, and those "
                 "that come while a handler runs wait as one); KiB: DRAM channel traffic; offloads: zeroings (z) "
                 "and copies (c) the agents took.")
    console.print(t)


@app.command("pair")
def pair_cmd(
    sender: str = typer.Option("larsen-io", "--sender",
                               help="The sending platform (a preset with a NIC, or a TOML file)."),
    receiver: str = typer.Option("larsen-io", "--receiver", help="The receiving platform (its NIC needs rx_ring and "
                                 "rx_buffers; or microengines with their MAC, e.g. ixp-host)."),
    messages: int = typer.Option(8, min=0, max=1_000_000, help="Messages the sender's driver sends (nic-tx); one "
                                 "longer than the link's MSS leaves as several frames."),
    frame_bytes: int | None = typer.Option(None, "--frame-bytes", min=14, max=9018,
                                           help="Bytes of each message the sender sends (default: its own); at "
                                                "most each side's buffer stride (2 KiB on larsen-io: raise "
                                                "io.tx_buffer_stride on both sides)."),
    meters: float = typer.Option(3.0, min=0.0, max=100_000.0, help="Cable length."),
    ns_per_meter: float = typer.Option(5.0, "--ns-per-meter", min=0.0, max=100.0, help="Propagation per meter."),
    gbps: float | None = typer.Option(None, "--gbps", min=0.001, max=1000.0,
                                      help="Both ports' line rate, Gb/s (default: the platforms' own, which must "
                                      "agree); a NIC's port takes 0.1 to 1000, microengines' 0.001 to 1000."),
    set_sender: list[str] | None = typer.Option(None, "--set-sender", help="Override the sender KEY=VALUE.",
                                                show_default=False),
    set_receiver: list[str] | None = typer.Option(None, "--set-receiver", help="Override the receiver KEY=VALUE.",
                                                  show_default=False),
    param: list[str] | None = typer.Option(None, "--param", help="nic-tx parameter NAME=INTEGER (e.g. gap=0).",
                                           show_default=False),
    rx_param: list[str] | None = typer.Option(None, "--rx-param", help="nic-rx parameter NAME=INTEGER "
                                              "(buffers, post, stack).", show_default=False),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
) -> None:
    """Two platforms on one Ethernet link: the sender's driver sends frames through its NIC, the wire
    carries them, the receiver's NIC lands them in RX buffers and interrupts its core. Every landed
    byte is checked against the frames that came off the wire."""
    try:
        res = plat.pair(sender, receiver, messages=messages, frame_bytes=frame_bytes, meters=meters,
                        ns_per_meter=ns_per_meter, sender_overrides=parse_set(set_sender) or None,
                        receiver_overrides=parse_set(set_receiver) or None,
                        tx_params=parse_params(param) or None, rx_params=parse_params(rx_param) or None,
                        gbps=gbps)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    if fmt == "json":
        typer.echo(res.to_json())
        return
    s = res.summary()
    t = Table(title=f"{lit(sender)} -> {lit(receiver)}: {messages} messages over {meters:g} m", box=box.SIMPLE_HEAD,
              padding=(0, 1), show_edge=False)
    t.add_column("quantity", no_wrap=True)
    t.add_column("value", justify="right", no_wrap=True)
    rows = [("frames sent / landed / dropped", f"{s['frames_sent']} / {s['frames_landed']} / {s['frames_dropped']}"),
            ("bytes checked / wrong", f"{s['bytes_checked']:,} / {s['bytes_wrong']:,}")]
    if s["receive_gbps"] is not None:
        rows.append(("receive rate, first frame on the wire to last landed (Gb/s)", f"{s['receive_gbps']:.3f}"))
    if s["small_core_busy"] is not None:
        rows.append(("receiver's microengines busy", f"{s['small_core_busy'] * 100:.1f}%"))
    rows += [(f"first frame: {k} (ns)", f"{v:,.1f}") for k, v in s["tx_stack_ns"].items()]
    if s["wire_start_ns"] is not None:
        rows += [("first frame on the wire at (ns)", f"{s['wire_start_ns']:,.1f}"),
                 ("first frame's last bit in at (ns)", f"{s['wire_arrival_ns']:,.1f}")]
    rows += [("propagation (ns)", f"{s['propagation_ns']:,.1f}"),
             ("receiver interrupts", f"{s['receiver_interrupts']}"),
             ("receiver done at (ns)", f"{s['receiver_done_ns']:,.1f}"),
             ("link busy (share of the sender's run)", f"{s['link_busy_share'] * 100:.1f}%")]
    for r in rows:
        t.add_row(*r)
    console.print(t)
    lost = s["frames_sent"] - s["frames_landed"] - s["frames_dropped"]
    if s["bytes_wrong"] or lost:
        _fail(ValueError(f"{lost} frames neither landed nor were counted as dropped, or {s['bytes_wrong']} bytes "
                         "differ from the frames sent (a receiver without RX buffers keeps frames in its NIC)"))


def _io_run(platform: str, overrides: dict[str, Any], params: dict[str, int], fmt: str) -> None:
    """``movelab platform run IO-PRESET nic-stream``: the cluster run's summary."""
    from movelab.platform import io

    unknown = sorted(set(params) - {"count", "bytes"})
    if unknown:
        _fail(ValueError(f"--param: nic-stream takes count and bytes, not {', '.join(unknown)}"))
    try:
        res = io.run(platform, params.get("count", 1), params.get("bytes", 64), overrides=overrides or None)
    except (ValueError, TypeError, OSError) as e:
        _fail(e)
    s = res.stats
    if fmt == "json":
        typer.echo(json.dumps(s, indent=2))
        return
    t = Table(title=f"{lit(platform)}: {s['messages_total']} message(s), devices {s['kind']}", box=box.SIMPLE_HEAD)
    t.add_column("statistic", justify="left")
    t.add_column("value", justify="right")
    t.add_row("simulated time (ns)", f"{s['time_ns']:,.1f}")
    t.add_row("frames sent", f"{s['frames']:,}")
    for name, v in s["tx_stack"]["parts"]:
        t.add_row(f"first TX stack: {name} (ns)", f"{v:,.1f}")
    t.add_row("first TX stack: total (ns)", f"{s['tx_stack']['total']:,.1f}")
    for i, h in enumerate(s["hosts"]):
        for name, v in h["link"]["categories"]:
            t.add_row(f"host {i} link bytes: {name}", f"{v:,}")
        t.add_row(f"host {i} link bytes: total", f"{h['link']['total']:,}")
    t.add_row("payload bytes checked", f"{s['bytes_checked']:,}")
    console.print(t)


def bench_platform(
    repeats: int = typer.Option(3, min=1, max=100, help="Runs per case (median reported)."),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
    out: Path | None = typer.Option(None, "--out", help="Directory for platform-speed.json "
                                                        "\\[default: none, nothing is written].", show_default=False),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing platform-speed.json."),
) -> None:
    """Speed of the platform model: simulated instructions per second on the built-in workloads."""
    from movelab.platform.bench import run_bench

    check_output_dir(out, ["platform-speed.json"], force)
    rows = run_bench(repeats, console=None if fmt == "json" else console)
    if out is not None:
        with staged_dir(out, force) as d:
            (d / "platform-speed.json").write_text(json.dumps(rows, indent=2))
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=2))
        return
    t = Table(title=f"Platform model speed (median of {repeats} runs, fresh process each)")
    for c in ["case", "instructions", "sim ms", "wall s", "M instr/s", "peak MiB"]:
        t.add_column(c, justify="left" if c == "case" else "right")
    for r in rows:
        t.add_row(r["case"], f"{r['instructions']:,}", f"{r['simulated_ms']:.2f}", f"{r['seconds_median']:.2f}",
                  f"{r['minstr_per_s']:.2f}", f"{r['peak_rss_mib']:.0f}")
    console.print(t)
