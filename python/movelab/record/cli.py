"""``movelab record``, ``movelab replay`` and ``movelab what-if``: a real program's data movement,
recorded on this machine and replayed on simulated platforms."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from movelab._util import (
    TableJson,
    atomic_path,
    check_output_dir,
    echo_json,
    given_on_command_line,
    lit,
    output_path,
    parse_set,
    staged_dir,
)
from movelab._util import fail as _fail

console = Console()
err = Console(stderr=True)


def _memory_for_host_only(ctx: Any, name: str, memory: str, has_set: bool = True) -> None:
    """``--memory`` applies to ``--platform host`` only: given with another platform, it would be ignored."""
    if name != "host" and given_on_command_line(ctx, "memory"):
        how = ("set its memory with --set memory.preset=NAME" if has_set
               else "name its memory in the file's [memory] preset, or use replay with --set memory.preset=NAME")
        raise typer.BadParameter(f"{memory!r}: applies to --platform host only; on a platform preset or file, "
                                 f"{how}", param_hint="--memory")


def _platform(name: str, memory: str) -> tuple[Any, list[str]]:
    """``host`` is this machine (read from Linux); anything else goes to the platform loader, whose
    error for a bad name or file is given as --platform's (not as the first run's, the calibration)."""
    if name == "host":
        from movelab.record.machine import host_platform

        h = host_platform(memory=memory, measure=True)
        return h["platform"], h["notes"]
    from movelab.platform import load_config

    try:
        load_config(name)
    except (ValueError, OSError) as e:
        raise typer.BadParameter(str(e).splitlines()[0], param_hint="--platform") from None
    return name, []


def _cache_mode(cache: str) -> str:
    from movelab.record.replay import CACHE_MODES

    if cache not in CACHE_MODES:
        raise typer.BadParameter(f"{cache!r}: one of {', '.join(CACHE_MODES)}", param_hint="--cache")
    return cache


def _distance(distance: str | None, mode: str) -> str | None:
    """``--distance``: one of the known distances, and only with ``--cache tracked``."""
    from movelab.record.cachestate import DISTANCES

    if distance is None:
        return None
    if distance not in DISTANCES:
        raise typer.BadParameter(f"{distance!r}: one of {', '.join(DISTANCES)}", param_hint="--distance")
    if mode != "tracked":
        raise typer.BadParameter(f"applies to --cache tracked only, not --cache {mode}", param_hint="--distance")
    return distance


def _region(region: int | None, mode: str, distance: str | None) -> int | None:
    """``--region``: a power of two of at least one line, with ``--cache tracked`` and the byte
    distance only."""
    from movelab.record.cachestate import LINE

    if region is None:
        return None
    if region < LINE or region & (region - 1):
        raise typer.BadParameter(f"{region}: a power of two of at least {LINE} bytes", param_hint="--region")
    if mode != "tracked":
        raise typer.BadParameter(f"applies to --cache tracked only, not --cache {mode}", param_hint="--region")
    if distance == "lines" and region != LINE:
        raise typer.BadParameter(f"applies to --distance bytes only (lines tracks each {LINE}-byte line)",
                                 param_hint="--region")
    return region


_REGION_HELP = ("With --cache tracked and the byte distance, the recency granularity in bytes: a line counts as "
                "touched when any line of its aligned region was (the program's own touches around what it copies). "
                "Default: the replay's, 1024; 64 tracks each line alone.")

_DISTANCE_HELP = ("With --cache tracked, how a line's reuse distance counts the calls between two touches: lines "
                  "(the distinct lines they touched: the LRU stack distance) or bytes (every byte they moved). "
                  "Default: the replay's, bytes.")


_PROBES_HELP = ("A platform description holding the recording machine's probes: the platform.json movelab bench "
                "record writes beside its recordings (the fill, cold-copy and stream-copy probes), or the cold-copy or "
                "stream-copy probe alone as 'python -m movelab.record.calibration cold|stream --out FILE' writes it "
                "(repeatable; later files win). Used by --buffer-states, --cold-copies, --streams and "
                "--stream-copies.")
_BUFFER_STATES_HELP = ("With --cache tracked: each buffer of a copy in its own cache state, a destination's lines in "
                       "the last level or memory costed by the fill probe of --probes, the last level's boundary from "
                       "its sweep. Off by default (the record and replay guide, \"Cache state\").")
_COLD_COPIES_HELP = ("With --buffer-states: a copy of the cold-copy probe's sizes (1-2 KiB) whose destination is in "
                     "memory costs the probe's isolated copy into a cold destination (from --probes) instead of the "
                     "fill probe's per-line figure. Off by default: it brings some programs closer and not others "
                     "(the record and replay guide, \"Isolated copies into cold destinations\").")
_STREAMS_HELP = ("With --cold-copies: only isolated copies take the cold-copy probe (with its own last-level "
                 "boundary); a copy that continues its thread's writes to consecutive addresses keeps the fill "
                 "probe's figure, as the fill probe measures such copies. Off by default (the record and replay "
                 "guide, \"Isolated and streaming copies\").")
_STREAM_COPIES_HELP = ("With --streams: a 1-2 KiB copy that continues a stream of writes is charged the stream-copy "
                       "probe's extra (from --probes) at its destination's reuse distance, instead of the fill "
                       "probe's per-line figure. Off by default (the record and replay guide, \"Streaming "
                       "reply copies\").")


def _probe_rules(probes: list[Path] | None, buffer_states: bool, cold_copies: bool, streams: bool,
                 mode: str, stream_copies: bool = False) -> dict[str, Any]:
    """The replay's arguments for --buffer-states, --cold-copies, --streams and --stream-copies, from
    the --probes files; each option's misuse and a missing probe are refused by name."""
    from movelab.record.calibration import load_probes, probe_rules

    if stream_copies and not streams:
        raise typer.BadParameter("needs --streams (it decides which copies continue a stream)",
                                 param_hint="--stream-copies")

    if streams and not cold_copies:
        raise typer.BadParameter("needs --cold-copies (it decides which small copies take the cold-copy probe)",
                                 param_hint="--streams")
    if cold_copies and not buffer_states:
        raise typer.BadParameter("needs --buffer-states (it replaces a cost of that rule)", param_hint="--cold-copies")
    if not buffer_states:
        if probes:
            raise typer.BadParameter("applies with --buffer-states (and --cold-copies, --streams)",
                                     param_hint="--probes")
        return {}
    if mode != "tracked":
        raise typer.BadParameter(f"applies to --cache tracked only, not --cache {mode}", param_hint="--buffer-states")
    if not probes:
        raise typer.BadParameter("needs --probes FILE: the platform.json movelab bench record writes with the "
                                 "recording machine's fill probe", param_hint="--buffer-states")
    try:
        return probe_rules(load_probes(probes), buffer_states=True, cold_copies=cold_copies, streams=streams,
                           stream_copies=stream_copies, where="--probes " + ", ".join(str(p) for p in probes))
    except ValueError as e:
        _fail(e)


def _probe_notes(kw: dict[str, Any], notes: list[str]) -> None:
    """What the probe rules in use charge (the notes printed with the replay)."""
    if "dst_write" in kw:
        b = kw.get("llc_boundary")
        notes.append("each buffer in its own state: destination lines charged the fill probe's "
                     f"{kw['dst_write']['llc']:.2f} ns (last level) / {kw['dst_write']['cold']:.2f} ns (memory) a line"
                     + (f", last-level boundary {b / 2**20:.1f} MiB of reuse distance" if b else ""))
    if "cold_copy" in kw:
        notes.append("cold small copies: a copy of " + " to ".join(f"{n}" for n in kw["cold_copy"]) + " bytes "
                     "with its destination in memory charged the cold-copy probe's " + " / ".join(
                         f"{v:.0f}" for v in kw["cold_copy"].values()) + " ns"
                     + (" (isolated copies only, by the probe's boundary"
                        + (f" {kw['cold_copy_boundary'] / 2**20:.1f} MiB" if kw.get("cold_copy_boundary") else "")
                        + "; copies continuing a stream of writes keep the fill probe's)" if kw.get("streams") else ""))
    if "stream_copy" in kw:
        pts = sorted(kw["stream_copy"].items())
        notes.append("streaming small copies: charged the stream-copy probe's extra by their destination's reuse "
                     "distance (" + ", ".join(f"{d / 2**20:g} MiB {v:.0f} ns" for d, v in pts)
                     + f" a {kw.get('stream_copy_size', 1024)}-byte copy)")


def _call_costs(plat: Any, notes: list[str]) -> dict[str, float]:
    """The per-call costs measured on this machine (a calibration; notes say so)."""
    from movelab.record.calibration import call_costs

    try:
        c = call_costs(plat)
    except (RuntimeError, OSError, ValueError) as e:
        _fail(RuntimeError(f"the per-call cost calibration could not run ({e}); pass --no-call-cost"))
    notes.append("per-call cost (a calibration measured on this machine: calls of 1-32 bytes on hot buffers, "
                 "less their simulated warm cost): " + ", ".join(f"{k} {v:.1f} ns" for k, v in
                                                                  sorted(c["call_ns"].items())))
    return c["call_ns"]


def _alloc_costs(notes: list[str]) -> dict[str, Any]:
    """The allocator's own path in calloc and realloc, measured on this machine (cached; notes say
    so and name the command that measures it afresh)."""
    from movelab.record.calibration import alloc_costs

    try:
        a = alloc_costs()
    except (RuntimeError, OSError, ValueError) as e:
        _fail(RuntimeError(f"the allocator calibration could not run ({e}); pass --no-call-cost"))
    notes.append(f"calloc and realloc: the allocator's path measured on this machine per size class "
                 f"({a['command']}), on top of memset's and memcpy's call cost")
    return a


def record_cmd(
    cmd: list[str] = typer.Argument(..., help="The program and its arguments (after --).", show_default=False,
                                    metavar="CMD"),
    out: Path = typer.Option(Path("trace.parquet"), "--out", "-o", help="The recording (Parquet)."),
    min_bytes: int = typer.Option(0, "--min-bytes", min=0,
                                  help="Calls smaller than this are counted per size class, not one by one."),
    no_kernel: bool = typer.Option(False, "--no-kernel", help="Do not record kernel-side movement with perf."),
    no_time: bool = typer.Option(False, "--no-time", help="Do not time the calls (to measure the interposer's cost)."),
    force: bool = typer.Option(False, "--force", help="Overwrite --out."),
) -> None:
    """Run CMD and record its bulk data movement: memcpy, memmove, memset (and _chk), calloc, realloc
    through an LD_PRELOAD interposer; page-fault zeroing, copy-on-write and read/write/send/recv
    bytes through perf where this machine allows it. Usage: movelab record [OPTIONS] -- CMD ARGS..."""
    from movelab import record

    output_path(out, force, "--out")
    try:
        df = record.run(cmd, out, min_bytes=min_bytes, kernel_events=not no_kernel, force=True, timed=not no_time)
    except (RuntimeError, FileNotFoundError, TypeError, ValueError) as e:
        _fail(e)
    meta = df.attrs["movelab"]
    # The summary goes to stderr: stdout is the recorded program's (`record -- CMD > out` keeps it whole).
    _print_recording(df, meta, err)
    err.print(f"recording: {lit(out)}")
    status = int(meta["exit_status"])
    if status != 0:
        # As `time` does: the program's own exit status (128 + N when signal N ended it).
        how = f"was ended by signal {-status}" if status < 0 else f"exited with status {status}"
        err.print(f"note: {lit(cmd[0])} {how}; its recording was written")
        raise typer.Exit(128 - status if status < 0 else min(status, 255))


def _print_recording(df: Any, meta: dict[str, Any], out: Console) -> None:
    g = df.groupby(["source", "kind"], sort=True).agg(calls=("count", "sum"), bytes=("bytes", "sum"),
                                                      ns=("dur_ns", "sum"))
    timed = meta.get("timed", True)
    t = Table(title=lit(f"Recorded data movement of {' '.join(meta['command'])}"), box=box.SIMPLE_HEAD)
    for c in ["source", "kind", "calls", "bytes", "time inside (ms)"]:
        t.add_column(c, justify="right" if c not in ("source", "kind") else "left")
    for (src, kind), r in g.iterrows():
        t.add_row(src, kind, f"{int(r['calls']):,}", f"{int(r['bytes']):,}",
                  f"{r['ns'] / 1e6:.3f}" if src == "interposer" and timed else "-")
    out.print(t)
    inside = float(df.loc[df["source"] == "interposer", "dur_ns"].sum())
    prog = meta.get("program_ns") or meta["wall_ns"]
    within = (f"inside recorded calls {inside / 1e6:.2f} ms ({100 * inside / max(prog, 1):.1f}%)" if timed
              else "the calls were not timed (--no-time)")
    out.print(f"program time {prog / 1e6:.1f} ms (wall {meta['wall_ns'] / 1e6:.1f} ms with start-up); {within}; "
              f"processes {len(meta['processes'])}")
    out.print("[bold]Not recorded[/bold]:")
    for n in meta["not_recorded"]:
        out.print(f"  - {lit(n)}", highlight=False)


def replay_cmd(
    ctx: typer.Context,
    trace: Path = typer.Argument(..., help="A recording from movelab record."),
    platform: str = typer.Option("rowclone-system", "--platform", "-p",
                                 help="A platform preset, a TOML file, or 'host' (this machine)."),
    mechanism: list[str] = typer.Option(["cpu"], "--mechanism", "-m", help="Mechanism (repeatable)."),
    memory: str = typer.Option("rowclone-ddr5-4800b", "--memory", help="DRAM config for --platform host."),
    set_: list[str] | None = typer.Option(None, "--set", help="Platform override KEY=VALUE (repeatable).",
                                          show_default=False),
    samples: int = typer.Option(16, "--samples", min=1, help="Calls replayed per size class at most."),
    sources: str = typer.Option("all", "--sources", help="all, interposer (user-space calls) or kernel."),
    cache: str = typer.Option("tracked", "--cache", help="Where each replayed call finds its buffers: tracked "
                              "(per call, from the recorded addresses), cold (where the previous replayed calls "
                              "left them) or warm (after a first pass that caches them)."),
    warm: bool = typer.Option(False, "--warm", help="The same as --cache warm."),
    distance: str | None = typer.Option(None, "--distance", help=_DISTANCE_HELP, show_default=False),
    region: int | None = typer.Option(None, "--region", help=_REGION_HELP, show_default=False),
    call_cost: bool = typer.Option(True, "--call-cost/--no-call-cost", help="Add each call's own cost (the call "
                                   "and the allocator's work), measured on this machine by a calibration run."),
    probes: list[Path] | None = typer.Option(None, "--probes", help=_PROBES_HELP, show_default=False),
    buffer_states: bool = typer.Option(False, "--buffer-states/--no-buffer-states", help=_BUFFER_STATES_HELP),
    cold_copies: bool = typer.Option(False, "--cold-copies/--no-cold-copies", help=_COLD_COPIES_HELP),
    streams: bool = typer.Option(False, "--streams/--no-streams", help=_STREAMS_HELP),
    stream_copies: bool = typer.Option(False, "--stream-copies/--no-stream-copies", help=_STREAM_COPIES_HELP),
    undisturbed: bool = typer.Option(False, "--undisturbed", help="Only calls inside which their thread took no "
                                   "page fault, was not switched out and was not stopped (slower than 5 us plus "
                                   "1 ns per byte): the validation; such a call's time includes the kernel's, "
                                   "other programs' or the timer tick's work."),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
) -> None:
    """Replay a recording's copies and initialisations, with the compute between them, on a
    simulated platform under each --mechanism: predicted time in data movement, total time, DRAM
    energy and traffic. With the cpu mechanism, the prediction is compared with the time measured
    inside the recorded calls."""
    from movelab.record.replay import MECHANISMS, check_kinds, replay
    from movelab.record.trace import read

    for m in mechanism:
        if m not in MECHANISMS:
            raise typer.BadParameter(f"unknown mechanism {m!r} (known: {', '.join(MECHANISMS)})",
                                     param_hint="--mechanism")
    if sources not in ("all", "interposer", "kernel"):
        raise typer.BadParameter(f"{sources!r}: one of all, interposer, kernel", param_hint="--sources")
    # A copy engine's key with no engine among the mechanisms would change no replay.
    from movelab.dram import flatten as _flatten
    from movelab.platform import ENGINE_KEYS

    engine_keys = [f"copy.{k}" for k in ENGINE_KEYS]
    given = [k for k in _flatten(parse_set(set_)) if k in engine_keys]
    if given and not any(MECHANISMS[m]["copy"].get("mechanism") == "ce" for m in mechanism):
        raise typer.BadParameter(f"{given[0]}: only a copy engine reads it, and no --mechanism here is one "
                                 "(add a ce-* mechanism)", param_hint="--set")
    _memory_for_host_only(ctx, platform, memory)
    if warm and given_on_command_line(ctx, "cache") and cache != "warm":
        raise typer.BadParameter(f"--warm is --cache warm, and --cache says {cache!r}: give one",
                                 param_hint="--warm")
    mode = "warm" if warm else _cache_mode(cache)
    dist = _distance(distance, mode)
    reg = _region(region, mode, dist)
    rules = _probe_rules(probes, buffer_states, cold_copies, streams, mode, stream_copies)
    try:
        df, meta = read(trace)
        check_kinds(df, f"trace {trace}")
    except (ValueError, OSError) as e:
        _fail(e)
    df.attrs["movelab"] = meta
    if undisturbed and meta.get("timed") is False:
        raise typer.BadParameter("the recording's calls were not timed (record --no-time), so none can be told "
                                 "disturbed or not", param_hint="--undisturbed")
    if sources != "all":
        df = df[df["source"] == sources]
    if undisturbed:
        from movelab.record.kernel import TOUCH_KINDS
        from movelab.record.trace import disturbed

        # the kernel's copies to and from user buffers stay: the cache-state tracking counts them
        df = df[((df["source"] == "interposer") & ~disturbed(df)) | df["kind"].isin(TOUCH_KINDS)]
    df.attrs["movelab"] = meta
    plat, notes = _platform(platform, memory)
    if undisturbed and not meta.get("kernel_events"):
        notes.append("--undisturbed: page faults inside the calls were not recorded (the recording has no "
                     "kernel events), so only switches, preemption and stops left calls out")
    costs = _call_costs(plat, notes) if call_cost else None
    alloc = _alloc_costs(notes) if call_cost else None
    _probe_notes(rules, notes)
    memo: dict = {}
    results = []
    for m in mechanism:
        try:
            # the engine's keys were checked above against all the mechanisms together
            r = replay(df, plat, m, samples=samples, overrides=parse_set(set_), cache=mode, call_cost=costs,
                       _engine_keys_ok=True,
                       distance=dist, region=reg, alloc_cost=alloc, _cache=memo, **rules)
        except (ValueError, OSError) as e:
            _fail(e)
        results.append(r)
    if fmt == "json":
        echo_json({"platform": platform, "platform_notes": notes,
                   "replays": [{"summary": r.summary, "classes": r.classes.to_dict("records"), "notes": r.notes}
                               for r in results]})
        return
    for n in notes:
        console.print(f"[dim]{lit(n)}[/dim]", highlight=False)
    t = Table(title=lit(f"Replay of {trace.name} on {platform}"), box=box.SIMPLE_HEAD)
    for c in ["mechanism", "movement (ms)", "total (ms)", "DRAM energy (mJ)", "DRAM traffic (MB)", "measured (ms)",
              "error"]:
        t.add_column(c, justify="left" if c == "mechanism" else "right")
    for r in results:
        s = r.summary
        # Like with like: the measured time is the user-space calls', so is the prediction it meets.
        e = (s["movement_user_ns"] / s["measured_net_ns"] - 1) * 100 if r.mechanism == "cpu" and \
            s["measured_net_ns"] and not math.isnan(s["measured_net_ns"]) else None

        def ms(v: float, digits: int) -> str:
            return "-" if math.isnan(v) else f"{v / 1e6:.{digits}f}"

        t.add_row(r.mechanism, f"{s['movement_ns'] / 1e6:.3f}", ms(s["total_ns"], 1),
                  f"{s['energy_nj'] / 1e6:.4f}", f"{s['channel_bytes'] / 1e6:.2f}",
                  ms(s["measured_net_ns"], 3), f"{e:+.1f}%" if e is not None else "-")
    console.print(t)
    s = results[0].summary
    synth = s.get("synthetic_calls", 0)
    made = (f" ({synth:,} of them synthetic calls of the mean size, for classes recorded only in aggregate "
            f"below --min-bytes)" if synth else "")
    console.print(f"{s['calls']:,} calls ({s['bytes']:,} bytes) in {s['classes']} size classes, replayed from "
                  f"{s['sampled_calls']:,} sampled calls{made} (at most {samples} per class) and scaled by each "
                  f"class's "
                  f"call count; 'measured' is the time inside the recorded calls (user space only) less the "
                  f"clock reads' own cost; 'error' compares the cpu replay of those calls with it.",
                  highlight=False)
    for r in results:
        for n in r.notes:
            console.print(f"[dim]{lit(r.mechanism)}: {lit(n)}[/dim]", highlight=False)


def what_if_cmd(
    ctx: typer.Context,
    trace: Path = typer.Argument(..., help="A recording from movelab record."),
    platform: str = typer.Option("rowclone-system", "--platform", "-p",
                                 help="A platform preset, a TOML file, or 'host' (this machine)."),
    memory: str = typer.Option("rowclone-ddr5-4800b", "--memory", help="DRAM config for --platform host."),
    samples: int = typer.Option(16, "--samples", min=1, help="Calls replayed per size class at most."),
    cache: str = typer.Option("tracked", "--cache", help="tracked, cold or warm (as for movelab replay)."),
    distance: str | None = typer.Option(None, "--distance", help=_DISTANCE_HELP, show_default=False),
    region: int | None = typer.Option(None, "--region", help=_REGION_HELP, show_default=False),
    call_cost: bool = typer.Option(True, "--call-cost/--no-call-cost", help="Add each call's own cost, measured "
                                   "on this machine by a calibration run."),
    probes: list[Path] | None = typer.Option(None, "--probes", help=_PROBES_HELP, show_default=False),
    buffer_states: bool = typer.Option(False, "--buffer-states/--no-buffer-states", help=_BUFFER_STATES_HELP),
    cold_copies: bool = typer.Option(False, "--cold-copies/--no-cold-copies", help=_COLD_COPIES_HELP),
    streams: bool = typer.Option(False, "--streams/--no-streams", help=_STREAMS_HELP),
    stream_copies: bool = typer.Option(False, "--stream-copies/--no-stream-copies", help=_STREAM_COPIES_HELP),
    out: Path | None = typer.Option(None, "--out", help="Write what-if.csv, what-if-classes.csv, what-if.json and "
                                    "what-if.png here."),
    force: bool = typer.Option(False, "--force", help="Overwrite files in --out."),
    fmt: TableJson = typer.Option(TableJson.table, "--format", help="table or json"),
) -> None:
    """Every mechanism side by side on one recording: predicted movement and total time, saving
    against the CPU copy, DRAM energy and traffic, and the size from which each mechanism wins."""
    from movelab.record.replay import check_kinds, what_if
    from movelab.record.trace import read

    names = ["what-if.csv", "what-if-classes.csv", "what-if.json", "what-if.png"]
    check_output_dir(out, names, force)
    _memory_for_host_only(ctx, platform, memory, has_set=False)
    mode = _cache_mode(cache)
    dist = _distance(distance, mode)
    reg = _region(region, mode, dist)
    rules = _probe_rules(probes, buffer_states, cold_copies, streams, mode, stream_copies)
    try:
        df, meta = read(trace)
        check_kinds(df, f"trace {trace}")
    except (ValueError, OSError) as e:
        _fail(e)
    df.attrs["movelab"] = meta
    plat, notes = _platform(platform, memory)
    costs = _call_costs(plat, notes) if call_cost else None
    alloc = _alloc_costs(notes) if call_cost else None
    _probe_notes(rules, notes)
    try:
        summary, classes = what_if(df, plat, samples=samples, cache=mode, call_cost=costs, alloc_cost=alloc,
                                   **({"distance": dist} if dist else {}), **({"region": reg} if reg else {}), **rules)
    except (ValueError, OSError) as e:
        _fail(e)
    if out is not None:
        with staged_dir(out, force) as stage:
            summary.to_csv(stage / names[0], index=False)
            classes.to_csv(stage / names[1], index=False)
            (stage / names[2]).write_text(json.dumps({"trace": trace.name, "command": meta.get("command"),
                                                      "platform": platform, "platform_notes": notes,
                                                      "mechanisms": _records(summary)}, indent=2))
            plot(summary, stage / names[3], f"{' '.join(meta.get('command', []))[:60]} on {platform}")
    if fmt == "json":
        echo_json({"platform": platform, "mechanisms": _records(summary)})
        return
    for n in notes:
        console.print(f"[dim]{lit(n)}[/dim]", highlight=False)
    t = Table(title=lit(f"What if: {trace.name} on {platform}"), box=box.SIMPLE_HEAD)
    # Headers on two lines and short figures, none cut: the mechanisms' names and seven figures fit
    # 80 columns.
    t.show_edge, t.padding = False, (0, 1)
    recs = summary.to_dict("records")
    width = max([9, *(len(str(r["mechanism"])) for r in recs)])
    for c in ["mechanism", "move\nms", "saving", "total\nms", "DRAM\nmJ", "DRAM\nMB", "copy\nfrom", "init\nfrom"]:
        t.add_column(c, justify="left" if c == "mechanism" else "right", no_wrap=True,
                     width=width if c == "mechanism" else None)
    for r in recs:
        if r.get("error"):
            t.add_row(r["mechanism"], f"[red]cannot run: {lit(r['error'])}[/red]", *[""] * 6)
            continue
        t.add_row(r["mechanism"], f"{r['movement_ns'] / 1e6:.2f}", f"{r['saving_pct']:+.0f}%",
                  "-" if math.isnan(r["total_ns"]) else f"{r['total_ns'] / 1e6:.1f}", f"{r['energy_nj'] / 1e6:.1f}",
                  f"{r['channel_bytes'] / 1e6:.1f}", _thr(r["copy_threshold_bytes"]), _thr(r["init_threshold_bytes"]))
    console.print(t)
    console.print("'move': the predicted time in data movement; 'saving': against the CPU copy; 'copy from' / "
                  "'init from': the size from which the mechanism beats the CPU copy for every larger size class "
                  "('never': in no class; '-': no such calls).", highlight=False)
    if out is not None:
        console.print(f"written: {lit(out)}")


def _thr(v: Any) -> str:
    """A size threshold, short: a size class's lower bound is a power of two (``4 MiB``)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "never"
    n = int(v)
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift:,} {unit}"
    return f"{n:,} B"


def _records(df: Any) -> list[dict[str, Any]]:
    out = []
    for r in df.to_dict("records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
    return out


def plot(summary: Any, path: Path, title: str) -> None:
    """Bars: predicted movement time and DRAM energy per mechanism, relative to the CPU copy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = summary[summary["error"].isna()]
    cpu = ok[ok["mechanism"] == "cpu"].iloc[0]
    fig, ax = plt.subplots(figsize=(9, 4))
    x = range(len(ok))
    ax.bar([i - 0.2 for i in x], ok["movement_ns"] / cpu["movement_ns"], width=0.4, label="movement time")
    ax.bar([i + 0.2 for i in x], ok["energy_nj"] / cpu["energy_nj"] if cpu["energy_nj"] else 0, width=0.4,
           label="DRAM energy")
    ax.set_xticks(list(x), ok["mechanism"], rotation=30, ha="right")
    ax.set_ylabel("relative to the CPU copy")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
