"""This machine as a simulated platform: what Linux says about the processor, its caches and memory
(/proc/cpuinfo, /sys/devices/system/cpu, /proc/meminfo), turned into overrides of a built-in
platform so that a recording's baseline replay can be compared with the time measured inside the
recorded calls. What Linux does not say (the DRAM's standard and speed, the core's width and window)
is given by the caller or taken from the defaults below, each with its source."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

CPU = Path("/sys/devices/system/cpu/cpu0/cache")


def _read(p: Path | str) -> str:
    try:
        return Path(p).read_text().strip()
    except OSError:
        return ""


def _size_kib(text: str) -> int:
    m = re.match(r"(\d+)\s*([KMG]?)", text)
    if not m:
        return 0
    n = int(m.group(1))
    return n // 1024 if not m.group(2) else n * {"K": 1, "M": 1024, "G": 1 << 20}[m.group(2)]


def caches() -> list[dict[str, Any]]:
    out = []
    for d in sorted(CPU.glob("index*")):
        kind = _read(d / "type")
        if kind == "Instruction":
            continue
        out.append({"level": int(_read(d / "level") or 0), "type": kind, "size_kib": _size_kib(_read(d / "size")),
                    "ways": int(_read(d / "ways_of_associativity") or 0),
                    "line_bytes": int(_read(d / "coherency_line_size") or 64),
                    "shared_by": _read(d / "shared_cpu_list")})
    return out


def describe() -> dict[str, Any]:
    """What this machine says about itself (stored in every recording)."""
    info = _read("/proc/cpuinfo")
    field = {}
    for line in info.splitlines():
        k, _, v = line.partition(":")
        field.setdefault(k.strip(), v.strip())
    mem = re.search(r"MemTotal:\s+(\d+)", _read("/proc/meminfo"))
    return {
        "model": field.get("model name", ""), "cpu_mhz": float(field.get("cpu MHz", 0) or 0),
        "cpus": sum(1 for line in info.splitlines() if line.startswith("processor")),
        "flags_avx512": " avx512f " in f" {field.get('flags', '')} ",
        "caches": caches(), "mem_kib": int(mem.group(1)) if mem else 0,
        "hypervisor": " hypervisor " in f" {field.get('flags', '')} ",
    }


def _pow2_sets(size_kib: int, ways: int, line: int) -> int:
    """The largest cache of ``ways`` ways, at most ``size_kib``, whose set count is a power of two
    (the simulator's caches index sets by address bits)."""
    sets = max(1, size_kib * 1024 // (ways * line))
    p = 1 << (sets.bit_length() - 1)
    return p * ways * line // 1024


#: Hit latencies (cycles) where none is measured: typical of the class, not of this machine.
TYPICAL_HIT_CYCLES = {"l1": 5, "l2": 15, "llc": 60}


def measured_hit_cycles(d: dict[str, Any]) -> tuple[dict[str, int], list[str]]:
    """Each cache level's hit latency in core cycles, measured on this machine by the calibration
    program's pointer chase (:func:`movelab.record.calibration.latencies`): the level 1 in a
    buffer of half its size, the level 2 in half of the level 2, the last level in four times the
    level 2 (beyond the private caches, well inside the last level). With the notes to print."""
    from movelab.record.calibration import latencies

    sizes = {c["level"]: c["size_kib"] for c in d.get("caches", []) if c.get("size_kib")}
    mhz = d.get("cpu_mhz") or 0
    if not mhz or 1 not in sizes or 2 not in sizes:
        return {}, ["cache latencies: not measured (no clock or cache sizes from Linux)"]
    probe = {"l1": max(4, sizes[1] // 2), "l2": max(4, sizes[2] // 2)}
    if 3 in sizes:
        probe["llc"] = min(4 * sizes[2], max(4, sizes[3] // 2))
    ns = latencies(tuple(probe.values()))
    cycles = {k: max(1, round(ns[v] * mhz / 1000)) for k, v in probe.items()}
    note = ("cache hit latencies measured here (pointer chase through a random cycle of lines, thread CPU time): "
            + ", ".join(f"{k} {ns[probe[k]]:.1f} ns in {probe[k]} KiB = {cycles[k]} cycles" for k in probe))
    return cycles, [note]


def host_platform(desc: dict[str, Any] | None = None, memory: str = "rowclone-ddr5-4800b",
                  measure: bool = False) -> dict[str, Any]:
    """A platform dict (``preset`` + overrides, accepted by :func:`movelab.platform.run`) for the
    machine ``desc`` (default: this one), with notes saying where each value came from.
    ``measure``: the cache hit latencies measured on this machine (:func:`measured_hit_cycles`)
    instead of typical ones."""
    d = desc or describe()
    notes = []
    ov: dict[str, Any] = {"preset": "rowclone-system"}
    core: dict[str, Any] = {}
    if d.get("cpu_mhz"):
        core["clock_mhz"] = round(d["cpu_mhz"])
        notes.append(f"core clock {core['clock_mhz']} MHz: /proc/cpuinfo 'cpu MHz' (the nominal clock; turbo "
                     f"is not visible here)")
    # Not visible to Linux: the microarchitecture's widths. Defaults: a Golden Cove-class server core
    # (Intel's published Sapphire/Emerald Rapids core: 6-wide allocation, 512-entry reorder buffer,
    # 16 L1D fill buffers), and 32-byte registers for glibc's AVX2 memcpy (64 with AVX-512).
    core.update(width=6, window=512, lsq=192, mshrs=16, store_buffer=114,
                register_bytes=64 if d.get("flags_avx512") else 32)
    notes.append("core width 6, window 512, 16 MSHRs, store buffer 114, load/store queue 192: a Golden Cove "
                 "server core (Intel's public figures), not readable from Linux")
    ov["core"] = core
    hit, hit_notes = measured_hit_cycles(d) if measure else ({}, [])
    notes += hit_notes
    for c in d.get("caches", []):
        if not c["size_kib"] or not c["ways"]:
            continue
        size = _pow2_sets(c["size_kib"], c["ways"], c["line_bytes"])
        cfg = {"size_kib": size, "ways": c["ways"], "line_bytes": c["line_bytes"]}
        key = {1: "l1", 2: "l2", 3: "llc"}.get(c["level"])
        if key is None:
            continue
        cfg["hit_cycles"] = hit.get(key, TYPICAL_HIT_CYCLES[key])
        ov[key] = cfg
        note = f"{key}: {c['size_kib']} KiB {c['ways']}-way from /sys/devices/system/cpu/cpu0/cache"
        if size != c["size_kib"]:
            note += f", simulated as {size} KiB (a power of two of sets)"
        notes.append(note + (f"; hit latency {cfg['hit_cycles']} cycles, measured" if key in hit else
                             f"; hit latency {cfg['hit_cycles']} cycles: typical of the class, not measured"))
    ov["memory"] = {"preset": memory}
    notes.append(f"memory: the {memory} DRAM config, given (Linux in a virtual machine does not expose the "
                 f"DIMMs); pass another with --memory")
    return {"platform": ov, "notes": notes}
