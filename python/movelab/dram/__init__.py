"""The DRAM simulator's Python API.

>>> from movelab import dram
>>> res = dram.simulate("ddr3-1600k-bench", {"kind": "random", "count": 10000, "seed": 1})
>>> res.stats["cycles"] > 0
True

``config`` may be a preset name (``movelab dram presets``), ``"SPEED/PART"``, a path to a TOML file,
a dict shaped like a config (optionally with ``preset = NAME`` to start from one), or a
:class:`Config`. ``trace`` may be a trace file path, a generator spec dict, or a list of items such
as ``("R", 0x1000)``, ``("W", 0x40)``, ``("COPY", src, dst, nbytes)``, ``("INIT", dst, nbytes, value)``.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from movelab import _core
from movelab._util import U64_MAX, check_progress, check_value, input_path, nested

__all__ = [
    "MAX_COUNT",
    "Config",
    "SimResult",
    "check_log",
    "drampower_trace",
    "flatten",
    "load_config",
    "memspec_device_differences",
    "presets",
    "read_memspec",
    "simulate",
    "write_memspec",
]


@dataclass(frozen=True)
class Config:
    """A fully layered simulation config (``data``) and the DRAM spec it resolves to (``spec``)."""

    data: dict[str, Any]
    spec: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps(self.data)

    def with_overrides(self, overrides: dict[str, Any]) -> Config:
        return load_config(self, overrides)


TRACE_FORMATS = ("auto", "native", "ramulator", "dramsim3")
#: The most requests one generator gives (crates/dram/src/generator.rs, MAX_COUNT): a trillion requests is days of
#: simulation. The command line's --count and sweep specs are bounded by it.
MAX_COUNT = 10**12
_POSITION = re.compile(r" at line \d+ column \d+")


def _native_call(fn: Callable[..., Any], *args: Any, what: str | None = None) -> Any:
    """Calls the extension; a ``ValueError`` loses the JSON parser's positions (the JSON is ours,
    not the user's) and gains ``what`` (the argument at fault) in front."""
    try:
        return fn(*args)
    except ValueError as e:
        msg = _POSITION.sub("", str(e))
        raise ValueError(f"{what}: {msg}" if what and not msg.startswith(what) else msg) from None


def _dict_json(d: Any, what: str, unsigned: bool = False) -> str:
    """``d`` (a mapping with string keys) as JSON; NaN, infinities, 64-bit overflows and values
    JSON cannot hold are refused naming the key (a generator's numbers are unsigned)."""
    if not isinstance(d, Mapping):
        raise TypeError(f"{what} must be a dict, not {type(d).__name__}")
    _check_keys(d, what)
    check_value(dict(d), what, unsigned)
    try:
        return json.dumps(d, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {e}") from None


def _check_keys(d: Mapping[Any, Any], what: str) -> None:
    for k, v in d.items():
        if not isinstance(k, str):
            raise TypeError(f"{what}: keys must be strings, got {k!r}")
        if isinstance(v, Mapping):
            _check_keys(v, f"{what}.{k}")


def load_config(config: str | Path | dict[str, Any] | Config, overrides: dict[str, Any] | None = None) -> Config:
    """Builds a :class:`Config`; errors name the file or preset and the key."""
    ov = _dict_json(nested(overrides), "overrides") if overrides else None
    if isinstance(config, Config):
        raw = _native_call(_core.dram_config, "json", config.to_json(), ov)
    elif isinstance(config, Mapping):
        raw = _native_call(_core.dram_config, "json", _dict_json(config, "config"), ov)
    elif isinstance(config, Path) or (isinstance(config, str) and (config.endswith(".toml") or Path(config).exists())):
        # Anything on disk by that name is a file to read (a directory or a device is refused as
        # such, not looked up as a "SPEED/PART" name).
        path = input_path(config, "config")
        raw = _native_call(_core.dram_config, "file", str(path), ov)
    elif isinstance(config, str):
        raw = _native_call(_core.dram_config, "preset", config, ov)
    else:
        raise TypeError(f"config must be a preset name, a path, a dict or a Config, not {type(config).__name__}")
    d = json.loads(raw)
    return Config(data=d["config"], spec=d["spec"])


def _refuse_unread(cfg: Config, overrides: Mapping[str, Any] | None) -> None:
    """An override nothing in a DRAM run reads is refused, naming the key, rather than run as if it
    had been taken: the in-DRAM copy's settings (``controller.copy.*``: which part, how reliably it
    copies) where the controller runs bulk operations as the baseline's reads and writes, and CPU
    request bypass (``cpu_bypass``, ``engine_share``), which only a platform's copy engine's
    requests meet, and an RFM scope with refresh management off. (A sweep lays its axes into the
    config first: its cross product may pair them on purpose.)"""
    if not overrides:
        return
    ctl = cfg.data["controller"]
    for key in flatten(dict(overrides)):
        if key == "controller.rfm_scope" and not ctl.get("rfm", False):
            raise ValueError(f"overrides: {key}: not read: refresh management is off (controller.rfm = false), "
                             f"so no RFM of any scope issues; set controller.rfm = true too")
        if key in ("controller.cpu_bypass", "controller.engine_share"):
            raise ValueError(f"overrides: {key}: not read: CPU request bypass ranks a copy engine's requests below "
                             f"the cores', and every request of a DRAM run (trace, generator, bulk operation) is a "
                             f"core's; a platform sets both from its [copy] engine")
        if key.startswith("controller.copy.") and ctl["bulk"] == "baseline":
            raise ValueError(f"overrides: {key}: not read: this memory runs bulk operations as the baseline's "
                             f"reads and writes (controller.bulk = 'baseline'); in-DRAM copy reads it under "
                             f"controller.bulk = \"rowclone\" or \"multi-row-copy\"")


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flattens nested dicts into ``a.b.c`` keys (for one-row DataFrames and CSV)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


@dataclass(frozen=True)
class SimResult:
    """The result of a run: ``stats`` is a plain dict (see docs/dram.md, "Stats")."""

    stats: dict[str, Any]
    config: Config

    def to_pandas(self):
        """The stats as a one-row DataFrame with flattened column names."""
        import pandas as pd

        return pd.DataFrame([flatten(self.stats)])

    def to_json(self) -> str:
        return json.dumps(self.stats, indent=2)


_ARITY = {"R": 1, "W": 1, "COPY": 3, "INIT": 3, "REPL": 3}
#: Trace items handed to the simulator per call when a Python iterable is streamed.
CHUNK_ITEMS = 4096


def _item_line(i: int, it: Any) -> str:
    """Trace item ``i`` (a tuple such as ``("R", 0x40)`` or a native trace line) as one line. Items
    are numbered from 1 in messages, as the simulator numbers a trace's items and lines."""
    if isinstance(it, str):
        if "\n" in it or "\r" in it:
            raise ValueError(f"trace item {i}: a string item is one trace line, got {it!r}")
        return it
    if not isinstance(it, (tuple, list)) or not it:
        raise ValueError(f"trace item {i}: expected a tuple like ('R', addr), got {it!r}")
    op = str(it[0]).upper()
    arity = _ARITY.get(op)
    if arity is None:
        raise ValueError(f"trace item {i}: unknown operation {it[0]!r} (R, W, COPY, INIT, REPL)")
    if len(it) - 1 != arity:
        raise ValueError(f"trace item {i}: {op} takes {arity} arguments, got {len(it) - 1}")
    try:
        if any(isinstance(a, bool) for a in it[1:]):
            raise TypeError
        args = [operator.index(a) for a in it[1:]]
    except TypeError:
        raise ValueError(f"trace item {i}: arguments must be integers, got {it!r}") from None
    if any(a < 0 or a > U64_MAX for a in args):
        raise ValueError(f"trace item {i}: values must be in 0..2**64-1, got {it!r}")
    return " ".join([op] + [hex(a) if j < 2 else str(a) for j, a in enumerate(args)])


def _chunks(items: Iterable[Any]) -> Callable[[], str]:
    """A callable returning the next :data:`CHUNK_ITEMS` items as native trace text ("" at the
    end): the simulator pulls a Python trace chunk by chunk instead of holding it whole."""
    lines: Iterator[str] = (_item_line(i, it) for i, it in enumerate(items, 1))

    def next_chunk() -> str:
        part = list(itertools.islice(lines, CHUNK_ITEMS))
        return "\n".join(part) + "\n" if part else ""

    return next_chunk


def _is_stream(p: str | Path) -> bool:
    """``-``: the trace comes on stdin. (A FIFO path stays refused: opening one with no writer
    would block; pipe it to stdin instead.)"""
    return str(p) == "-"


def _pipe_lines(p: str | Path) -> Iterator[str]:
    """The lines of stdin, as they arrive."""
    yield from (line.rstrip("\r\n") for line in sys.stdin)


def simulate(
    config: str | Path | dict[str, Any] | Config,
    trace: str | Path | dict[str, Any] | Iterable[Any],
    *,
    overrides: dict[str, Any] | None = None,
    trace_format: str = "auto",
    command_log: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
    progress_every: int = 100_000,
    force: bool = False,
) -> SimResult:
    """Runs ``trace`` on the memory system ``config`` describes and returns its stats.

    A list or any iterable of items is streamed: it is read as the simulator needs it, so a
    generator of a billion items takes no more memory than one of a thousand. Bad arguments raise
    ``ValueError`` (``TypeError`` for a wrong type, ``FileNotFoundError`` for a missing file)
    naming the argument.

    ``command_log``: a file to write every command the controllers send to; an existing file is refused
    (``FileExistsError`` naming it) unless ``force=True``."""
    if not isinstance(trace_format, str) or trace_format not in TRACE_FORMATS:
        raise ValueError(f"trace_format: {trace_format!r} is not one of: {', '.join(TRACE_FORMATS)}")
    if isinstance(progress_every, bool) or not isinstance(progress_every, int) or not 1 <= progress_every <= U64_MAX:
        raise ValueError(f"progress_every: {progress_every!r} must be a positive integer")
    check_progress(progress, "the items done")
    if command_log is not None and not isinstance(command_log, (str, Path)):
        raise TypeError(f"command_log must be a path, not {type(command_log).__name__}")
    if command_log is not None and Path(command_log).is_dir():
        raise ValueError(f"command_log: {command_log} is a directory; give a file name")
    if command_log is not None:
        _refuse_existing(Path(command_log), "command_log", force)
    cfg = load_config(config, overrides)
    _refuse_unread(cfg, overrides)
    it = None
    if isinstance(trace, Mapping):
        if trace_format != "auto":
            raise ValueError(f"trace_format: {trace_format!r} applies to a trace file or list of items; a "
                             "generator dict is not read in any format")
        kind, value = "generator", _dict_json(trace, "trace", unsigned=True)
    elif isinstance(trace, (str, Path)) and _is_stream(trace):
        # stdin: read once, as it comes, chunk by chunk (no format sniffing, which would read
        # ahead): native lines only.
        if trace_format not in ("auto", "native"):
            raise ValueError(f"trace: '{trace}' is stdin; a piped trace is read in native format only "
                             f"(not {trace_format}); save it to a file to read it as {trace_format}")
        trace_format = "native"
        kind, value, it = "iter", "", _chunks(_pipe_lines(trace))
    elif isinstance(trace, (str, Path)):
        kind, value = "file", str(input_path(trace, "trace"))
    elif isinstance(trace, Iterable) and not isinstance(trace, (bytes, bytearray)):
        kind, value, it = "iter", "", _chunks(trace)
        if trace_format == "auto":
            trace_format = "native"
    else:
        raise TypeError(
            f"trace must be a file path, a generator dict or a list of items, not {type(trace).__name__}"
        )
    raw = _native_call(
        _core.dram_simulate,
        cfg.to_json(),
        kind,
        value,
        trace_format,
        str(command_log) if command_log is not None else None,
        progress,
        progress_every,
        it,
        what="trace" if kind == "generator" else None,
    )
    stats = json.loads(raw)
    if not stats.get("energy_available", True) and isinstance(stats.get("energy"), dict):
        # A part without public currents: its energies are not available (None), never 0 nJ that a
        # sum or a plot would take for energy spent (as rowclone-latency reports them).
        stats["energy"] = dict.fromkeys(stats["energy"])
    return SimResult(stats=stats, config=cfg)


def check_log(path: str | Path) -> dict[str, Any]:
    """Replays a command log through the independent timing checker; returns its report."""
    p = input_path(path, "command log")
    try:
        return json.loads(_core.dram_check(str(p)))
    except ValueError as e:
        raise ValueError(f"{p}: {str(e).removeprefix('command log: ')}") from None


def drampower_trace(log: str | Path, out: str | Path, channel: int = 0, end: int | None = None, *,
                    force: bool = False) -> dict[str, Any]:
    """Writes the command log ``log`` as a DRAMPower command trace at ``out`` (one channel; ``END`` at
    ``end``, default the last command's cycle). Returns how many commands it wrote. An existing
    ``out`` is refused (``FileExistsError`` naming it) unless ``force=True``."""
    p = input_path(log, "command log")
    if not isinstance(out, (str, Path)):
        raise TypeError(f"out must be a path, not {type(out).__name__}")
    for name, v in (("channel", channel), ("end", end)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0 or v >= 1 << 64):
            raise ValueError(f"{name}: {v!r} is not a non-negative 64-bit integer")
    if channel >= 1 << 32:
        raise ValueError(f"channel: {channel} is too large")
    from movelab._util import atomic_path

    o = Path(out)
    if o.exists() and o.resolve() == p.resolve():
        raise ValueError(f"out: {o} is the command log itself; write the trace to another file")
    if o.is_dir():
        raise ValueError(f"out: {o} is a directory; give the trace's file name")
    _refuse_existing(o, "out", force)
    # Written beside `out` and renamed onto it when whole: a failed conversion leaves `out` as it was.
    with atomic_path(o) as tmp:
        return json.loads(_native_call(_core.dram_drampower_trace, str(p), str(tmp), channel, end))


def read_memspec(path: str | Path) -> dict[str, Any]:
    """Reads a DRAMPower JSON memspec: ``overrides`` (a dict for :func:`load_config`), ``settings``
    (``[key, value]`` pairs for ``--set``) and ``notes`` (what was not carried over, and why)."""
    p = input_path(path, "memspec")
    return json.loads(_native_call(_core.dram_read_memspec, str(p)))


def memspec_device_differences(memspec: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Where a memspec's device (``read_memspec(...)["device"]``) differs from the one a resolved config
    (``load_config(...).spec``) simulates: device width, devices per rank and burst length come from the
    config's part and organisation, not from a memspec, and energy is per device (its channel count is
    carried over as ``dram.channels``, so it is not compared)."""
    dev, org = memspec.get("device") or {}, spec["org"]
    chips = org["bus_width"] // max(org["device_width"], 1)
    out = []
    for key, field, ours, what in [
        ("width", "width", org["device_width"], f"the config's part {spec['part']} is x{org['device_width']}"),
        ("devices", "nbrOfDevices", chips,
         f"its rank has {chips} devices ({org['bus_width']} bits of x{org['device_width']})"),
        ("burst_length", "burstLength", org["burst_length"], f"its burst is BL{org['burst_length']}"),
    ]:
        v = dev.get(key)
        if v is not None and v > 0 and int(v) != ours:
            out.append(f"memarchitecturespec.{field} {int(v)}: {what}, which this run simulates (movelab takes it "
                       f"from the config's part and organisation, and energy is per device)")
    return out


def write_memspec(config: str | Path | dict[str, Any] | Config) -> dict[str, Any]:
    """The config's device (DDR4, DDR5 or LPDDR5, with currents) as a DRAMPower JSON memspec."""
    cfg = config if isinstance(config, Config) else load_config(config)
    return json.loads(_native_call(_core.dram_write_memspec, cfg.to_json()))


def _refuse_existing(path: Path, what: str, force: bool) -> None:
    """Raises ``FileExistsError`` naming ``path`` (the argument ``what``) if it exists and ``force``
    is not set: nothing a user has is overwritten unless asked (as the command line's ``--force``)."""
    if not isinstance(force, bool):
        raise TypeError(f"force must be True or False, not {type(force).__name__}")
    if not force and (path.exists() or path.is_symlink()):
        raise FileExistsError(f"{what}: {path} exists; pass force=True to overwrite it")


def presets() -> dict[str, Any]:
    """Built-in speed bins, parts and configuration presets."""
    return json.loads(_core.dram_presets())


def write_trace(generator: dict[str, Any], path: str | Path, fmt: str = "native", *, force: bool = False) -> int:
    """Writes a generated trace to ``path`` in ``fmt`` (native, ramulator, dramsim3). An existing
    file is refused (``FileExistsError`` naming it) unless ``force=True``."""
    if not isinstance(fmt, str) or fmt not in TRACE_FORMATS[1:]:
        raise ValueError(f"fmt: {fmt!r} is not one of: {', '.join(TRACE_FORMATS[1:])}")
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a path, not {type(path).__name__}")
    if Path(path).is_dir():
        raise ValueError(f"path: {path} is a directory; give the trace's file name")
    _refuse_existing(Path(path), "path", force)
    return int(_native_call(_core.dram_write_trace, _dict_json(generator, "generator", unsigned=True), str(path), fmt,
                            what="generator"))
