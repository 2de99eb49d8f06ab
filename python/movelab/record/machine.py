"""This machine as a simulated platform: what Linux says about the processor, its caches and memory
(/proc/cpuinfo, /sys/devices/system/cpu, /proc/meminfo), turned into overrides of a built-in
platform so that a recording's baseline replay can be compared with the time measured inside the
recorded calls. What Linux does not say (the core's width, window and queues, the caches' published
hit latencies) comes from the host file whose ``[match]`` names this processor's vendor, family and
model (``presets/hosts/*.toml``, each value with its source there; a processor none matches gets the
fallback file, and the notes say its figures are not this core's). The DRAM's standard and speed are
given by the caller."""

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

    def _int(k: str) -> int | None:
        v = field.get(k, "")
        return int(v) if v.isdigit() else None

    return {
        "vendor": field.get("vendor_id", ""), "family": _int("cpu family"), "model_number": _int("model"),
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


def _host_files() -> list[dict[str, Any]]:
    """The host files (``presets/hosts/*.toml``), parsed, each with its ``file`` name."""
    import tomllib

    from movelab import data

    out = []
    for name in sorted(data.files("hosts")):
        if name.endswith(".toml"):
            out.append({**tomllib.loads(data.file_text(name)), "file": f"presets/{name}"})
    return out


def host_preset(desc: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The host file for the processor ``desc`` describes (its ``vendor``, ``family`` and
    ``model_number`` from /proc/cpuinfo) and whether it matched; the fallback file when none does.
    A host file without ``[match]`` or a second fallback is an error naming the file."""
    files = _host_files()
    fallback = [f for f in files if f.get("fallback")]
    if len(fallback) != 1:
        raise ValueError(f"presets/hosts: exactly one host file must say fallback = true, found "
                         f"{[f['file'] for f in fallback]}")
    for f in files:
        m = f.get("match")
        if not isinstance(m, dict) or not {"vendor", "family", "models"} <= set(m):
            raise ValueError(f"{f['file']}: [match] needs vendor, family and models")
        if (desc.get("vendor") == m["vendor"] and desc.get("family") == m["family"]
                and desc.get("model_number") is not None
                and any(lo <= desc["model_number"] <= hi for lo, hi in m["models"])):
            return f, True
    return fallback[0], False


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
    host, matched = host_preset(d)
    cpu = f"{d.get('vendor') or '?'} family {d.get('family')} model {d.get('model_number')}"
    if matched:
        notes.append(f"host file {host['file']} ({host['description']}): chosen for {cpu} (/proc/cpuinfo)")
    else:
        notes.append(f"host file {host['file']} ({host['description']}): no host file matches {cpu}; its core "
                     f"figures and hit latencies are not this processor's")
    ov: dict[str, Any] = {"preset": "rowclone-system"}
    core: dict[str, Any] = {}
    if d.get("cpu_mhz"):
        core["clock_mhz"] = round(d["cpu_mhz"])
        notes.append(f"core clock {core['clock_mhz']} MHz: /proc/cpuinfo 'cpu MHz' (the nominal clock; turbo "
                     f"is not visible here)")
    # Not visible to Linux: the microarchitecture's widths and queues (the host file, each value
    # with its source there); 64-byte registers where AVX-512 is present (glibc's memcpy uses them),
    # unless the host file gives the core's data path per operation (Zen 4: 32 bytes).
    core.update(host.get("core", {}))
    if d.get("flags_avx512") and "register_bytes" not in host.get("core", {}):
        core["register_bytes"] = 64
    core.setdefault("register_bytes", 32)
    notes.append(", ".join(f"{k} {v}" for k, v in sorted(core.items()) if k != "clock_mhz")
                 + f": {host['file']} (published figures, sources cited there), not readable from Linux")
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
        pub = host.get(key, {})
        cfg["hit_cycles"] = hit.get(key, pub.get("hit_cycles"))
        if cfg["hit_cycles"] is None:
            raise ValueError(f"{host['file']}: [{key}] hit_cycles missing (needed when latencies are not measured)")
        if pub.get("fill_bytes_per_cycle"):
            cfg["fill_bytes_per_cycle"] = pub["fill_bytes_per_cycle"]
        ov[key] = cfg
        note = f"{key}: {c['size_kib']} KiB {c['ways']}-way from /sys/devices/system/cpu/cpu0/cache"
        if size != c["size_kib"]:
            note += f", simulated as {size} KiB (a power of two of sets)"
        differs = [f"{k} {pub[k]}" for k in ("size_kib", "ways", "line_bytes") if k in pub and pub[k] != c[k]]
        if differs:
            note += f" (the host file says {', '.join(differs)}: Linux's figures are used)"
        notes.append(note + (f"; hit latency {cfg['hit_cycles']} cycles, measured" if key in hit else
                             f"; hit latency {cfg['hit_cycles']} cycles: {host['file']}, not measured")
                     + (f"; fills the level above at {cfg['fill_bytes_per_cycle']} bytes a cycle: {host['file']}"
                        if "fill_bytes_per_cycle" in cfg else ""))
    documented = host.get("memory", {}).get("documented")
    ov["memory"] = {"preset": memory}
    notes.append(f"memory: the {memory} DRAM config, given (Linux in a virtual machine does not expose the "
                 f"DIMMs; " + (f"the processor's documented memory is {documented}, {host['file']}; " if documented
                               else "") + "pass another with --memory)")
    return {"platform": ov, "notes": notes}
