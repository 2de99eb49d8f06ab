"""Design-space sweeps: a spec (TOML or a dict) names what to run (the DRAM simulator or a platform),
its base config and workload, the axes to vary (lists, ranges, products and zips, seeds) and the
statistics to keep. Every point is an independent task on the executor (:mod:`movelab.executor`:
every core of this machine, or a Dask cluster), and the results form one table, a row per point:
``point``, the axes (named as in the spec), the statistics, and ``error`` (the message of a point
that failed, else null).

Results are stored as points finish, in numbered Parquet parts under ``OUT.parts/``; when every point
has run the parts are merged into ``OUT`` (written to a temporary name, then renamed) and removed.
An interrupted sweep therefore never leaves an ``OUT`` that looks complete, and ``resume=True`` runs
only the points its parts do not hold (failed points are run again).

>>> from movelab import sweep
>>> df = sweep.run({"simulator": "dram", "config": "ddr3-1600k-bench",
...                 "workload": {"kind": "random", "count": 1000},
...                 "axes": {"controller.scheduler": ["frfcfs", "fcfs"]}}, workers=1)
>>> list(df["controller.scheduler"])
['frfcfs', 'fcfs']

See docs/sweeps.md for the spec format.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import itertools
import json
import math
import os
import shutil
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from movelab import data
from movelab._util import check_progress, input_path
from movelab.dram import flatten
from movelab.executor import Executor, make_executor

__all__ = ["Spec", "SpecError", "SweepBroken", "SweepInterrupted", "load_spec", "read", "run", "summary"]

SIMULATORS = ("dram", "platform")
TOP_KEYS = {"name", "description", "simulator", "config", "set", "workload", "point", "axes", "zip", "seeds", "keep"}
MAX_POINTS = 1_000_000
MAX_AXIS = 100_000
META_KEY = b"movelab.sweep"
# A part is written when this many rows wait, or this many seconds passed since the last one.
FLUSH_ROWS = 1000
FLUSH_SECONDS = 2.0


class SpecError(ValueError):
    """A spec that cannot run: the message names the file and the key."""


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep: every finished point is saved in ``parts`` (resume with ``resume=True``)."""

    def __init__(self, done: int, total: int, parts: Path | None) -> None:
        super().__init__(f"interrupted after {done} of {total} points")
        self.done, self.total, self.parts = done, total, parts


class SweepBroken(RuntimeError):
    """The executor failed during a sweep (a lost Dask scheduler, a worker process that died):
    every finished point is saved in ``parts`` (resume with ``resume=True``)."""

    def __init__(self, why: str, done: int, total: int, parts: Path | None) -> None:
        where = f"{done} of {total} points saved in {parts}; run again with --resume" if parts is not None \
            else f"{done} of {total} points had finished (nothing saved: no output was given)"
        super().__init__(f"{why}; {where}")
        self.done, self.total, self.parts = done, total, parts


def _executor_failure(e: BaseException) -> str:
    """What went wrong with the executor, in a phrase."""
    if type(e).__module__.split(".")[0] == "distributed" or "scheduler" in str(e).lower():
        return f"lost the Dask scheduler ({type(e).__name__}: {str(e).strip() or 'no message'})"
    return str(e).strip() or type(e).__name__


# ------------------------------------------------------------------------------------------------
# The spec


@dataclass(frozen=True)
class Axis:
    """One factor of the product: a single key, or several keys zipped (varying together)."""

    keys: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]  # one tuple per step, a value per key


class Points(Sequence[dict[str, Any]]):
    """The product of a spec's axes in order (the last axis varies fastest), as a read-only
    sequence: ``len`` is computed, point ``i`` is built from ``i``'s digits in the axes' lengths,
    and iterating builds one point at a time."""

    def __init__(self, axes: tuple[Axis, ...]) -> None:
        self._axes = axes
        self._n = math.prod(len(a.values) for a in axes)

    def __len__(self) -> int:
        return self._n

    def _point(self, combo: tuple[tuple[Any, ...], ...]) -> dict[str, Any]:
        p: dict[str, Any] = {}
        for axis, values in zip(self._axes, combo, strict=True):
            p.update(zip(axis.keys, values, strict=True))
        return p

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"point {i} of {self._n}")
        steps = []
        for a in reversed(self._axes):
            i, k = divmod(i, len(a.values))
            steps.append(a.values[k])
        return self._point(tuple(reversed(steps)))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for combo in itertools.product(*(a.values for a in self._axes)):
            yield self._point(combo)

    def index(self, point: Mapping[str, Any], *_: Any) -> int:  # type: ignore[override]
        """The position of ``point`` (matched by each axis's values, as JSON); ValueError if absent."""
        i = _PointIndex(self._axes).find(point)
        if i is None:
            raise ValueError("the point is not in the spec")
        return i


class _PointIndex:
    """Finds a saved row's position in a spec's product from its axis values: a dict per axis (its
    steps as JSON), so the cost is the axes' lengths, not the number of points."""

    def __init__(self, axes: tuple[Axis, ...]) -> None:
        self.axes = axes
        self.steps = [{json.dumps(list(step), default=str): k for k, step in enumerate(a.values)} for a in axes]

    def find(self, row: Mapping[str, Any]) -> int | None:
        i = 0
        for axis, steps in zip(self.axes, self.steps, strict=True):
            k = steps.get(json.dumps([_plain(row.get(key)) for key in axis.keys], default=str))
            if k is None:
                return None
            i = i * len(axis.values) + k
        return i


def _plain(v: Any) -> Any:
    """A value read back from Parquet as the spec writes it (NumPy scalars as Python ones)."""
    return v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v


@dataclass(frozen=True)
class Spec:
    """A validated sweep. ``points()`` lists the points as ``{axis key: value}`` dicts."""

    source: str
    simulator: str
    config: Any
    set: dict[str, Any]
    workload: dict[str, Any]
    axes: tuple[Axis, ...]
    keep: tuple[str, ...] | None
    name: str
    description: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def axis_keys(self) -> list[str]:
        return [k for a in self.axes for k in a.keys]

    @property
    def count(self) -> int:
        """How many points the spec has: the product of the axes' lengths (nothing is built)."""
        return math.prod(len(a.values) for a in self.axes)

    def points(self) -> Points:
        """The points, lazily: a sequence that builds each ``{axis key: value}`` dict when asked for
        it, so a million-point spec costs the axes' values, not a million dicts."""
        return Points(self.axes)

    def base(self) -> dict[str, Any]:
        """What every point shares (the resume check compares it)."""
        return {"simulator": self.simulator, "config": self.config, "set": self.set, "workload": self.workload,
                "keep": list(self.keep) if self.keep is not None else None}

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps(self.base(), sort_keys=True, default=str).encode()).hexdigest()[:16]

    def to_json(self) -> str:
        return json.dumps({**self.base(), "name": self.name, "axes": self.axis_keys}, default=str)


def _err(source: str, key: str, what: str) -> SpecError:
    return SpecError(f"{source}: '{key}': {what}")


def _scalar_kind(v: Any) -> str | None:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return None


def _range(source: str, key: str, t: Mapping[str, Any]) -> list[Any]:
    """``{from, to, step}`` (arithmetic, ``to`` included when reached) or ``{from, to, times}``
    (geometric: 64, 128, ... up to ``to``)."""
    allowed = {"from", "to", "step", "times"}
    extra = sorted(set(t) - allowed)
    if extra:
        raise _err(source, key, f"unknown range key '{extra[0]}' "
                                "(a range is {from, to, step} or {from, to, times})")
    if "from" not in t or "to" not in t:
        raise _err(source, key, "a range needs 'from' and 'to' (and 'step' or 'times')")
    if ("step" in t) == ("times" in t):
        raise _err(source, key, "a range needs exactly one of 'step' (arithmetic) or 'times' (geometric)")
    lo, hi = t["from"], t["to"]
    for name, v in [("from", lo), ("to", hi), *[(k, t[k]) for k in ("step", "times") if k in t]]:
        if _scalar_kind(v) != "number" or not math.isfinite(v):
            raise _err(source, f"{key}.{name}", f"must be a number, got {v!r}")
    values: list[Any] = []
    if "step" in t:
        step = t["step"]
        if step == 0 or (hi - lo) / step < 0:
            raise _err(source, f"{key}.step", f"{step!r} never goes from {lo!r} to {hi!r}")
        n = math.floor((hi - lo) / step + 1e-9) + 1
        if n > MAX_AXIS:
            raise _err(source, key, f"the range has {n} values; an axis has at most {MAX_AXIS}")
        values = [lo + i * step for i in range(n)]
        if all(isinstance(x, int) for x in (lo, hi, step)):
            values = [int(v) for v in values]
        else:
            values = [round(v, 12) for v in values]
    else:
        f = t["times"]
        if f <= 1 or lo <= 0 or hi < lo:
            raise _err(source, f"{key}.times", "a geometric range needs from > 0, to >= from and times > 1")
        v = lo
        while v <= hi * (1 + 1e-12):
            values.append(v)
            if len(values) > MAX_AXIS:
                raise _err(source, key, f"the range has more than {MAX_AXIS} values")
            v = v * f
        if all(isinstance(x, int) for x in (lo, hi, f)):
            values = [int(v) for v in values]
    return values


def _axis_values(source: str, key: str, v: Any) -> list[Any]:
    if isinstance(v, Mapping):
        values = _range(source, key, v)
    elif isinstance(v, list):
        values = v
    elif _scalar_kind(v) is not None:
        values = [v]
    else:
        raise _err(source, key, f"an axis is a list of values or a range table, got {type(v).__name__}")
    if not values:
        raise _err(source, key, "the axis is empty (give at least one value)")
    if len(values) > MAX_AXIS:
        raise _err(source, key, f"the axis has {len(values)} values; at most {MAX_AXIS}")
    kinds = {_scalar_kind(x) for x in values}
    if None in kinds:
        bad = next(x for x in values if _scalar_kind(x) is None)
        raise _err(source, key, f"axis values must be strings, numbers or booleans, got {_short(bad)}")
    if len(kinds) > 1:
        raise _err(source, key, f"the axis mixes {' and '.join(sorted(kinds))} values; one column has one type")
    if len({json.dumps(x) for x in values}) != len(values):
        raise _err(source, key, "the axis repeats a value")
    return values


def _short(v: Any, most: int = 80) -> str:
    """``repr(v)``, cut to ``most`` characters (a message never echoes a huge value whole)."""
    r = repr(v)
    return r if len(r) <= most else f"{r[:most - 20]}...{r[-12:]} ({len(r):,} characters)"


def _cap(text: str, most: int = 600) -> str:
    """A message cut in its middle to ``most`` characters (the simulator echoes the value it refuses,
    which may be huge; printing and wrapping it whole would take minutes)."""
    return text if len(text) <= most else f"{text[:most // 2]} ... {text[-most // 2:]}"


def _check_key(source: str, key: Any, where: str) -> str:
    if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
        raise _err(source, f"{where}.{key}", "axis keys are dotted names like controller.scheduler")
    if key == "point" or key == "error":
        raise _err(source, f"{where}.{key}", f"'{key}' is a column of every result table; rename the axis")
    return key


def _set_path(d: dict[str, Any], dotted: str, value: Any, source: str, what: str) -> None:
    parts = dotted.split(".")
    node = d
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise _err(source, what, f"sets inside '{part}', which is a value, not a table")
        node = child
    node[parts[-1]] = value


def _resolve_path(value: Any, base_dir: Path | None) -> Any:
    """A relative ``.toml`` or trace path in a spec file is relative to the spec file."""
    if isinstance(value, str) and base_dir is not None and (value.endswith((".toml", ".trace", ".txt"))):
        p = Path(value)
        if not p.is_absolute() and (base_dir / p).exists():
            return str(base_dir / p)
    return value


def _shipped_spec_name(given: str) -> str | None:
    """The name of the shipped example spec ``given`` names (``dram-240``, ``dram-240.toml`` or
    ``presets/sweeps/dram-240.toml``), or None."""
    p = Path(given)
    if p.parent.parts not in ((), ("presets", "sweeps")) or p.suffix not in ("", ".toml"):
        return None
    return p.stem if f"sweeps/{p.stem}.toml" in data.files("sweeps") else None


def load_spec(spec: str | Path | Mapping[str, Any], *, source: str | None = None) -> Spec:
    """Reads and checks a spec (a TOML file or a dict). Errors name the file and the key; configs and
    workloads are checked against the simulator (every axis value), so a typo fails before any run."""
    base_dir: Path | None = None
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, (str, Path)):
        path = Path(spec)
        shipped = None if path.is_file() else _shipped_spec_name(str(spec))
        if shipped is not None:
            # An example spec that ships with movelab, by name or by its repository path (so the
            # README's commands work from an installed wheel too).
            raw, source = data.sweep_spec(shipped)
        else:
            source = source or str(path)
            if path.is_dir():
                raise SpecError(f"{path}: a directory, not a spec file")
            if path.exists() and not path.is_file():
                raise SpecError(f"{path}: not a regular file (a FIFO or a device is not read)")
            if not path.is_file():
                names = ", ".join(sorted(Path(n).stem for n in data.files("sweeps")))
                raise SpecError(f"{path}: no such spec file (the example specs that ship with movelab can be "
                                f"given by name: {names})")
            try:
                raw = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is allowed, as in configs
            except tomllib.TOMLDecodeError as e:
                raise SpecError(f"{path}: not valid TOML: {e}") from None
            except UnicodeDecodeError:
                raise SpecError(f"{path}: not a text file") from None
            base_dir = path.resolve().parent
    elif isinstance(spec, Mapping):
        raw = dict(spec)
        source = source or "spec"
    else:
        raise TypeError(f"a spec is a TOML path or a dict, not {type(spec).__name__}")

    for k in raw:
        if k not in TOP_KEYS:
            raise _err(source, k, f"unknown key (a spec has: {', '.join(sorted(TOP_KEYS))})")
    sim = raw.get("simulator")
    known = [*SIMULATORS, *reproductions()]
    if sim is None:
        raise _err(source, "simulator", f"missing: say what to run ({', '.join(known)})")
    if sim not in known:
        raise _err(source, "simulator", f"unknown simulator {sim!r} ({', '.join(known)})")
    if sim not in SIMULATORS:
        return _load_reproduction_spec(raw, source, sim)
    if "point" in raw:
        raise _err(source, "point", "only a reproduction's sweep has a [point] (dram and platform have [workload])")
    config = raw.get("config")
    if config is None:
        raise _err(source, "config", "missing: a preset name, SPEED/PART or a TOML file")
    if not isinstance(config, (str, dict)):
        raise _err(source, "config", f"must be a preset name, a path or a table, got {type(config).__name__}")
    config = _resolve_path(config, base_dir)
    sets = raw.get("set", {})
    if not isinstance(sets, dict):
        raise _err(source, "set", f"must be a table of config keys, got {type(sets).__name__}")
    workload = raw.get("workload")
    if not isinstance(workload, dict):
        raise _err(source, "workload", "missing or not a table: say what the simulator runs")
    workload = {k: _resolve_path(v, base_dir) for k, v in workload.items()}
    for k in ("name", "description"):
        if k in raw and not isinstance(raw[k], str):
            raise _err(source, k, f"must be a string, got {type(raw[k]).__name__}")
    name = raw.get("name") or (Path(source).stem if source != "spec" else "sweep")

    axes = _axes(raw, source)
    keep = _keep(raw, source)
    s = Spec(source=source, simulator=sim, config=config, set=sets, workload=workload, axes=tuple(axes), keep=keep,
             name=name, description=raw.get("description", ""), raw=raw)
    _validate(s)
    return s


def _keep(raw: Mapping[str, Any], source: str) -> tuple[str, ...] | None:
    keep = raw.get("keep")
    if keep is not None:
        if not isinstance(keep, list) or not keep or any(not isinstance(k, str) or not k for k in keep):
            raise _err(source, "keep", "must be a non-empty list of statistic names (globs allowed: 'read_latency.*')")
        keep = tuple(keep)
    return keep


def _axes(raw: Mapping[str, Any], source: str) -> list[Axis]:
    axes: list[Axis] = []
    seen: set[str] = set()

    def claim(key: str, where: str) -> None:
        if key in seen:
            raise _err(source, f"{where}.{key}", "the key is swept twice")
        seen.add(key)

    ax = raw.get("axes", {})
    if not isinstance(ax, dict):
        raise _err(source, "axes", f"must be a table of KEY = [values], got {type(ax).__name__}")
    for key, v in ax.items():
        _check_key(source, key, "axes")
        claim(key, "axes")
        axes.append(Axis((key,), tuple((x,) for x in _axis_values(source, f"axes.{key}", v))))
    zips = raw.get("zip", {})
    if not isinstance(zips, dict) or any(not isinstance(z, dict) for z in zips.values()):
        raise _err(source, "zip", "zips are tables of tables: [zip.NAME] with KEY = [values] that vary together")
    for zname, z in zips.items():
        if not z:
            raise _err(source, f"zip.{zname}", "the zip is empty")
        cols = []
        for key, v in z.items():
            _check_key(source, key, f"zip.{zname}")
            claim(key, f"zip.{zname}")
            cols.append(_axis_values(source, f"zip.{zname}.{key}", v))
        lengths = {len(c) for c in cols}
        if len(lengths) > 1:
            raise _err(source, f"zip.{zname}", f"zipped axes must have one length, got {sorted(lengths)}")
        axes.append(Axis(tuple(z), tuple(zip(*cols, strict=True))))
    seeds = raw.get("seeds")
    if seeds is not None:
        if isinstance(seeds, bool) or not isinstance(seeds, (int, list)):
            raise _err(source, "seeds", "must be a count (seeds = 3: seeds 1, 2, 3) or a list of seeds")
        if isinstance(seeds, int) and not 1 <= seeds <= MAX_AXIS:
            # Checked before the list is built: a huge count must not allocate anything first.
            raise _err(source, "seeds", f"the axis has {seeds} values; at least 1 and at most {MAX_AXIS}"
                       if seeds > 0 else f"a seed count is at least 1, got {seeds}")
        values = list(range(1, seeds + 1)) if isinstance(seeds, int) else seeds
        values = _axis_values(source, "seeds", values)
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in values):
            raise _err(source, "seeds", f"seeds are non-negative integers, got {values!r}")
        claim("workload.seed", "seeds")
        axes.append(Axis(("workload.seed",), tuple((s,) for s in values)))
    n = math.prod(len(a.values) for a in axes)
    if n > MAX_POINTS:
        raise _err(source, "axes", f"the sweep has {n:,} points; at most {MAX_POINTS:,}")
    return axes


# ------------------------------------------------------------------------------------------------
# A reproduction's point function as the simulator


def reproductions() -> dict[str, str]:
    """The reproductions whose points a sweep can run: modules of :mod:`movelab.reproduce` with a
    ``points()`` list and a ``point(p)`` function, by name (``zhao-copy-engine``) -> module."""
    import importlib
    import pkgutil

    import movelab.reproduce as pkg

    out = {}
    for m in pkgutil.iter_modules(pkg.__path__):
        if m.name == "cli" or m.name.startswith("_"):
            continue
        try:
            mod = importlib.import_module(f"{pkg.__name__}.{m.name}")
        except ImportError:
            continue
        if callable(getattr(mod, "points", None)) and callable(getattr(mod, "point", None)):
            out[m.name.replace("_", "-")] = mod.__name__
    return out


def _load_reproduction_spec(raw: Mapping[str, Any], source: str, sim: str) -> Spec:
    """A sweep of a reproduction's point function: the base point is the reproduction's first with
    ``[point]`` layered on, and the axes set its keys (dotted: ``overrides.copy.stream_buffer_lines``)."""
    import importlib

    for k in ("config", "set", "workload"):
        if k in raw:
            raise _err(source, k, f"a sweep of the reproduction {sim} has no '{k}': its points are [point] tables "
                                  "(axes set their keys, e.g. \"overrides.copy.mode\")")
    mod = importlib.import_module(reproductions()[sim])
    given = raw.get("point", {})
    if not isinstance(given, dict):
        raise _err(source, "point", f"must be a table (a point of {sim}), got {type(given).__name__}")
    base = {**mod.points()[0], **given}
    axes = _axes(raw, source)
    for a in axes:
        for key in a.keys:
            if key.split(".")[0] not in base:
                raise _err(source, f"axes.{key}", f"a point of {sim} has no '{key.split('.')[0]}' "
                                                  f"(it has: {', '.join(base)})")
    _refuse_dropped_overrides(mod, sim, base, axes, source)
    return Spec(source=source, simulator=sim, config=None, set={}, workload=dict(base), axes=tuple(axes),
                keep=_keep(raw, source), name=raw.get("name") or (Path(source).stem if source != "spec" else sim),
                description=raw.get("description", ""), raw=dict(raw))


def _refuse_dropped_overrides(mod: Any, sim: str, base: Mapping[str, Any], axes: Sequence[Axis], source: str) -> None:
    """An override a reproduction's point would drop is refused where the spec gives it, as the
    reproduction's own command refuses it: a key the point sets itself (``SETS``; a sensitivity
    point's ``SENSITIVITY_SETS``), or one nothing in it reads (``UNREAD``: a copy engine's keys where
    no engine runs). An axis of such a key ran the same point at every value."""
    sets = [*getattr(mod, "SETS", []), *(getattr(mod, "SENSITIVITY_SETS", []) if base.get("sensitivity") else [])]
    unread = list(getattr(mod, "UNREAD", []))
    given = [(f"point.overrides.{k}", k) for k in flatten(dict(base.get("overrides") or {}))]
    given += [(f"axes.{k}", k.removeprefix("overrides.")) for a in axes for k in a.keys if k.startswith("overrides.")]
    for where, key in given:
        for k in sets:
            if key == k or key.startswith(k + "."):
                raise _err(source, where, f"{sim} sets {k} itself for each of its runs, so every value would run "
                                          "the same point; leave it out")
        for k in unread:
            if key == k or key.startswith(k + "."):
                raise _err(source, where, f"{sim} {getattr(mod, 'UNREAD_WHY', 'does not read it')}, so every value "
                                          "would run the same point; leave it out")


def _rows_stats(out: Any, row_key: list[str] | None) -> dict[str, Any]:
    """A point function's result as statistics: a dict is flattened; a list of rows gives
    ``LABEL.COLUMN``, the label joining the row's key columns (``table3/in-order/512/ASYNC/off-die``)."""
    if isinstance(out, dict):
        return flatten(out)
    if not isinstance(out, list):
        return {"value": out}
    stats: dict[str, Any] = {}
    for i, r in enumerate(out):
        if not isinstance(r, dict):
            stats[str(i)] = r
            continue
        keys = [k for k in (row_key or []) if k in r]
        label = "/".join(str(r[k]) for k in keys if r[k] not in (None, "")) or str(i)
        for k, v in r.items():
            if k not in keys:
                stats[f"{label}.{k}"] = v
    return stats


# ------------------------------------------------------------------------------------------------
# Points


@dataclass(frozen=True)
class Task:
    """What a worker needs to run one point (picklable: plain data)."""

    simulator: str
    config: Any
    set: dict[str, Any]
    workload: dict[str, Any]
    keep: tuple[str, ...] | None
    point: tuple[tuple[str, Any], ...]


def _reproduction_point(task: Task) -> dict[str, Any]:
    p = json.loads(json.dumps(task.workload))
    for key, value in task.point:
        node = p
        parts = key.split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        node[parts[-1]] = value
    return p


def _layered(task: Task, source: str = "spec") -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(config, overrides, workload) of a point: ``config`` replaces the config, ``workload.X`` sets a
    workload parameter, any other key sets a config key."""
    config = task.config
    overrides = json.loads(json.dumps(task.set))
    workload = dict(task.workload)
    for key, value in task.point:
        if key == "config":
            config = value
        elif key.startswith("workload."):
            workload[key.removeprefix("workload.")] = value
        else:
            _set_path(overrides, key, value, source, f"axes.{key}")
    return config, overrides, workload


def _run_dram(config: Any, overrides: dict[str, Any], workload: dict[str, Any]) -> dict[str, Any]:
    from movelab import dram

    # The axes go into the config first: a cross product may pair the in-DRAM copy's settings with
    # the baseline's bulk mode on purpose (dram.simulate refuses that for an override).
    cfg = dram.load_config(config, overrides or None)
    w = dict(workload)
    if "trace" in w:
        trace = w.pop("trace")
        fmt = w.pop("format", "auto")
        if w:
            raise ValueError(f"workload: a trace workload takes only 'trace' and 'format', not '{next(iter(w))}'")
        res = dram.simulate(cfg, trace, trace_format=fmt)
    else:
        res = dram.simulate(cfg, w)
    return flatten(res.stats)


def _run_platform(config: Any, overrides: dict[str, Any], workload: dict[str, Any]) -> dict[str, Any]:
    from movelab import platform

    w = dict(workload)
    name = w.pop("name", None)
    if not isinstance(name, str):
        raise ValueError("workload: a platform workload needs name = \"WORKLOAD\" (movelab platform presets)")
    # A sweep's cross product runs a copy engine's keys on its points without one too.
    return platform._run(config, name, overrides, w, unread_ok=True).flat()


def run_point(task: Task) -> dict[str, Any]:
    """Runs one point; returns its kept statistics, flattened (``read_latency.mean_ns``)."""
    if task.simulator in SIMULATORS:
        config, overrides, workload = _layered(task)
        runner = _run_dram if task.simulator == "dram" else _run_platform
        raw = runner(config, overrides, workload)
    else:
        import importlib

        mod = importlib.import_module(f"movelab.reproduce.{task.simulator.replace('-', '_')}")
        raw = _rows_stats(mod.point(_reproduction_point(task)), getattr(mod, "ROW_KEY", None))
    stats = {k: v for k, v in raw.items() if v is None or isinstance(v, (bool, int, float, str))}
    if task.keep is None:
        return stats
    out: dict[str, Any] = {}
    for pattern in task.keep:
        hits = [k for k in stats if fnmatch.fnmatchcase(k, pattern)]
        if not hits:
            raise ValueError(f"keep: '{pattern}' names no statistic of the {task.simulator} simulator "
                             f"(some it has: {', '.join(list(stats)[:8])}, ...)")
        for k in hits:
            out[k] = stats[k]
    return out


def _probed_steps(axis: Axis) -> list[tuple[Any, ...]]:
    """The steps of ``axis`` that validation layers on the base: every step of an axis holding a
    string or a boolean (each may name something unknown), but only the ends and the extremes of a
    numeric axis (its values share one type, checked already; a number the simulator refuses is one
    beyond a limit, so the smallest and largest find it). So validating a 100,000-seed axis
    simulates two one-request probes, not 100,000."""
    values = axis.values
    numeric = all(_scalar_kind(v) == "number" for step in values for v in step)
    if not numeric or len(values) <= 4:
        return list(values)
    picks = {0, len(values) - 1}
    for k in range(len(axis.keys)):
        column = [step[k] for step in values]
        picks.add(column.index(min(column)))
        picks.add(column.index(max(column)))
    return [values[i] for i in sorted(picks)]


def _validate(spec: Spec) -> None:
    """Checks the base config and workload, and the axis values layered on them, with the
    simulator's own parsers (fast: no simulation beyond a one-request probe, and only the extremes
    of a numeric axis; see :func:`_probed_steps`)."""
    from movelab import dram, platform

    probes: list[tuple[str, tuple[tuple[str, Any], ...]]] = [("", ())]
    for axis in spec.axes:
        for values in _probed_steps(axis):
            probes.append((f"axes.{'/'.join(axis.keys)} = {_short(values[0] if len(values) == 1 else list(values))}",
                           tuple(zip(axis.keys, values, strict=True))))
    checked: set[str] = set()
    for where, point in probes:
        task = Task(spec.simulator, spec.config, spec.set, spec.workload, spec.keep, point)
        config, overrides, workload = _layered(task, spec.source)
        for what, probe in [("config", (config, overrides)), ("workload", workload)]:
            sig = json.dumps([what, probe], sort_keys=True, default=str)
            if sig in checked:
                continue
            checked.add(sig)
            label = where or ("config/set" if what == "config" else "workload")
            try:
                if what == "config":
                    if spec.simulator == "dram":
                        dram.load_config(config, overrides)
                    else:
                        platform.load_config(config, overrides)
                elif spec.simulator == "dram":
                    _probe_dram_workload(config, overrides, workload)
                else:
                    _probe_platform_workload(workload)
            except (ValueError, TypeError, FileNotFoundError) as e:
                raise SpecError(_cap(f"{spec.source}: '{label}': {e}")) from None
    if spec.simulator == "platform":
        _refuse_engine_keys_no_point_reads(spec, probes)
    if spec.simulator == "dram" and spec.keep is not None:
        _check_dram_keep(spec)


def _check_dram_keep(spec: Spec) -> None:
    """Each ``keep`` pattern must name a statistic of the DRAM simulator, checked before any point
    runs (a typo would otherwise fail every point after its whole simulation). The DRAM simulator
    reports the same statistics whatever its workload, so a one-request run on the base config
    names them all."""
    from movelab import dram

    # The first point's config (an axis may name the config itself), with its settings laid in.
    first = tuple((a.keys[k], a.values[0][k]) for a in spec.axes for k in range(len(a.keys)))
    config, overrides, _ = _layered(Task(spec.simulator, spec.config, spec.set, spec.workload, None, first),
                                    spec.source)
    cfg = dram.load_config(config, overrides or None)
    stats = flatten(dram.simulate(cfg, {"kind": "random", "count": 1}).stats)
    names = [k for k, v in stats.items() if v is None or isinstance(v, (bool, int, float, str))]
    for pattern in spec.keep:
        if not any(fnmatch.fnmatchcase(k, pattern) for k in names):
            raise _err(spec.source, "keep", _cap(f"'{pattern}' names no statistic of the dram simulator "
                                                 f"(some it has: {', '.join(names[:8])}, ...)"))


def _refuse_engine_keys_no_point_reads(spec: Spec, probes: list[tuple[str, tuple[tuple[str, Any], ...]]]) -> None:
    """A copy engine's key (``copy.mode``, its buffer, ...) in ``set`` or on an axis that no probed
    point has an engine to read is refused: every value would run the same (the table would still
    show the value). A cross product that gives some points an engine (an axis of
    ``copy.mechanism``) keeps it: those points read it."""
    from movelab import _core
    from movelab.platform import ENGINE_KEYS, _source

    engine = {f"copy.{k}" for k in ENGINE_KEYS}
    given = {k: f"set.{k}" for k in flatten(dict(spec.set)) if k in engine}
    given.update({k: f"axes.{k}" for a in spec.axes for k in a.keys if k in engine})
    if not given:
        return
    unread = set(given)
    for _, point in probes:
        task = Task(spec.simulator, spec.config, spec.set, spec.workload, spec.keep, point)
        config, overrides, _ = _layered(task, spec.source)
        name, ov = _source(config, overrides)
        unread &= set(json.loads(_core.platform_unread_keys(name, json.dumps(sorted(unread)), ov)))
        if not unread:
            return
    key = sorted(unread)[0]
    raise SpecError(_cap(f"{spec.source}: '{given[key]}': no point of this sweep has a copy engine to read {key} "
                         "(copy.mechanism is not \"ce\" and no copy-engine agent takes it), so every value would "
                         "run the same; set copy.mechanism = \"ce\" or sweep it too"))


def _probe_dram_workload(config: Any, overrides: dict[str, Any], workload: dict[str, Any]) -> None:
    from movelab import dram

    w = dict(workload)
    if "trace" in w:
        trace = w["trace"]
        if not isinstance(trace, str):
            raise ValueError(f"workload.trace: a trace file's path, not {trace!r}")
        input_path(trace, "workload.trace")
        extra = set(w) - {"trace", "format"}
        if extra:
            raise ValueError(f"a trace workload takes only 'trace' and 'format', not '{sorted(extra)[0]}'")
        return
    count = w.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"workload.count must be a positive integer, got {count!r}")
    if count > dram.MAX_COUNT:
        raise ValueError(f"workload.count {count:,} is more than the {dram.MAX_COUNT:,} requests one generator may "
                         "give")
    dram.simulate(config, {**w, "count": 1}, overrides=overrides)


def _probe_platform_workload(workload: dict[str, Any]) -> None:
    from movelab import platform

    w = dict(workload)
    name = w.pop("name", None)
    workloads = {x["name"]: x for x in platform.presets()["workloads"]}
    if not isinstance(name, str):
        raise ValueError(f"workload.name: say which workload runs ({', '.join(workloads)})")
    if name.endswith(".toml"):
        if not Path(name).is_file():
            raise FileNotFoundError(f"workload.name: workload file {name} does not exist")
        known = None
    else:
        if name not in workloads:
            raise ValueError(f"workload.name: unknown workload '{name}' ({', '.join(workloads)})")
        known = set(workloads[name].get("params", {}))
    for k, v in w.items():
        if known is not None and k not in known:
            raise ValueError(f"workload.{k}: '{name}' has no parameter '{k}' ({', '.join(sorted(known))})")
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"workload.{k}: workload parameters are non-negative integers, got {v!r}")


# ------------------------------------------------------------------------------------------------
# Results: Parquet parts while running, one Parquet file at the end


class _Store:
    """The parts directory of a sweep being run: ``spec.json`` and ``part-NNNNN.parquet`` files, each
    written under a temporary name and renamed, so a part is either whole or absent. Rows are held
    only until the next part is written, and the final table is merged from the parts a range of
    points at a time, so memory is bounded by a part and a range, not by the number of points."""

    def __init__(self, out: Path, spec: Spec, save_every: float | None = None) -> None:
        self.save_every = FLUSH_SECONDS if save_every is None else save_every
        self.out = out
        self.dir = out.with_name(out.name + ".parts")
        self.spec = spec
        self.buffer: list[dict[str, Any]] = []
        self.last = time.monotonic()
        self.nparts = 0

    def start(self, resume: bool, force: bool, done: bytearray) -> int:
        """Prepares the directory. When resuming, every saved row that succeeded and is a point of
        the spec is marked in ``done`` (by its position) and kept, renumbered, in new parts; returns
        how many points are done."""
        sources: list[Path] = []
        if resume:
            if self.out.exists():
                sources.append(self.out)
            if self.dir.exists():
                parts = sorted(self.dir.glob("part-*.parquet"))
                sources += parts
                self.nparts = max((int(part.stem.split("-")[1]) for part in parts), default=0)
            index = _PointIndex(self.spec.axes)
            for src in sources:  # every check before anything is written
                what = "the finished table" if src == self.out else "its saved results"
                _check_saved(src, self.spec, what)
                # A finished point the spec no longer has would be dropped with the table rewritten:
                # the user's results lost without a word.
                for r in _saved_rows(src, what):
                    if r.get("error") is None and index.find(r) is None:
                        at = ", ".join(f"{k}={r.get(k)!r}" for k in self.spec.axis_keys)
                        raise SpecError(f"{self.spec.source}: {src} holds a finished point this spec does not have "
                                        f"({at}); resume with the same spec (axes may grow, not shrink) or pass "
                                        "--force to start over")
        else:
            if (self.out.exists() or self.dir.exists()) and not force:
                what = self.out if self.out.exists() else self.dir
                raise FileExistsError(f"{what} exists; pass --resume to continue that sweep or --force to start over")
            if self.dir.exists():
                shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "spec.json").write_text(self.spec.to_json())
        ndone = 0
        index = _PointIndex(self.spec.axes)
        for src in sources:
            for r in _saved_rows(src, "the finished table" if src == self.out else "its saved results"):
                i = index.find(r)
                # A failed point runs again; a point saved twice (a resume stopped while renumbering)
                # is kept once.
                if i is None or r.get("error") is not None or done[i]:
                    continue
                done[i] = 1
                ndone += 1
                self.add({**r, "point": i}, saving=False)
        self.flush()
        # The kept rows are in the new parts: only now are the old ones removed.
        for src in sources:
            if src != self.out:
                src.unlink(missing_ok=True)
        return ndone

    def add(self, row: dict[str, Any], saving: bool = True) -> None:
        self.buffer.append(row)
        if len(self.buffer) >= FLUSH_ROWS or (saving and time.monotonic() - self.last >= self.save_every):
            self.flush()

    def flush(self) -> None:
        self.last = time.monotonic()
        if not self.buffer:
            return
        import pandas as pd

        self.nparts += 1
        path = self.dir / f"part-{self.nparts:05d}.parquet"
        tmp = path.with_suffix(".tmp")
        with _written(tmp, path):
            pd.DataFrame.from_records(self.buffer).to_parquet(tmp, index=False)
        self.buffer = []

    def finish(self) -> None:
        _merge_parts(sorted(self.dir.glob("part-*.parquet")), self.out, self.spec)
        shutil.rmtree(self.dir, ignore_errors=True)


def _check_saved(path: Path, spec: Spec, what: str) -> None:
    """Refuses a saved table or part that belongs to another sweep (its base differs, or it lacks an
    axis); reads only the schema."""
    import pyarrow.parquet as pq

    if path.suffix == ".parquet" and path.parent.name.endswith(".parts"):
        saved = path.parent / "spec.json"
        if saved.is_file():
            diff = _base_diff(json.loads(saved.read_text()), spec)
            if diff:
                raise SpecError(f"{spec.source}: '{diff}' differs from the sweep saved in {path.parent}; "
                                "resume with the same spec (axes may grow) or pass --force to start over")
    else:
        meta = read_meta(path)
        if meta and meta.get("simulator") != spec.simulator:
            raise SpecError(f"{path} holds a {meta.get('simulator')} sweep, not a {spec.simulator} one")
        if meta:
            diff = _base_diff(meta, spec)
            if diff:
                raise SpecError(f"{spec.source}: '{diff}' differs from the sweep saved in {path}; "
                                "resume with the same spec (axes may grow) or pass --force to start over")
    try:
        columns = pq.read_schema(path).names
    except Exception as e:
        raise OSError(f"cannot read {what} in {path}: {e}") from None
    missing = [k for k in spec.axis_keys if k not in columns]
    if missing:
        raise SpecError(f"{spec.source}: axis '{missing[0]}' is not a column of {path}; resume with the same axes")


def _saved_rows(path: Path, what: str) -> Iterator[dict[str, Any]]:
    """The rows of a saved table or part, a batch at a time (missing values left out)."""
    import pyarrow.parquet as pq

    try:
        f = pq.ParquetFile(path)
        for batch in f.iter_batches(batch_size=FLUSH_ROWS):
            for r in batch.to_pylist():
                yield {k: v for k, v in r.items() if not _is_missing(v)}
    except OSError:
        raise
    except Exception as e:
        raise OSError(f"cannot read {what} in {path}: {e}") from None


# Points merged at once into the final table (one row group each), and the most rows read from a
# part at once: memory is bounded by a few ranges of this many rows, whatever the number of points.
MERGE_ROWS = 16384


def _part_spans(parts: list[Path]) -> tuple[Any, list[tuple[Path, int, int]]]:
    """The parts' unified schema (columns in the order they first appear, types promoted where parts
    differ) and each part's smallest and largest point, from the Parquet footers' statistics (a part
    without them has its ``point`` column read). Nothing but footers and ``point`` is read."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    unified = pa.schema([])
    spans: list[tuple[Path, int, int]] = []
    for p in parts:
        try:
            f = pq.ParquetFile(p)
            schema = f.schema_arrow.remove_metadata()
            unified = pa.unify_schemas([unified, schema], promote_options="permissive")
            if f.metadata.num_rows == 0:
                continue
            if "point" not in schema.names:
                raise ValueError("it has no 'point' column")
            col = schema.get_field_index("point")
            stats = [f.metadata.row_group(g).column(col).statistics for g in range(f.metadata.num_row_groups)]
            if all(s is not None and s.has_min_max for s in stats):
                lo, hi = min(s.min for s in stats), max(s.max for s in stats)
            else:
                mm = pc.min_max(f.read(columns=["point"]).column("point"))
                lo, hi = mm["min"].as_py(), mm["max"].as_py()
        except Exception as e:
            raise OSError(f"cannot read the saved results in {p}: {e}") from None
        spans.append((p, int(lo), int(hi)))
    return unified, spans


def _part_batches(path: Path, rows: int) -> Iterator[Any]:
    """The record batches of a part, ``rows`` at most each, read one at a time."""
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as f:
        yield from f.iter_batches(batch_size=rows)


def _merge_parts(parts: list[Path], out: Path, spec: Spec) -> None:
    """Writes the final table from ``parts``: a row per point in the spec's order, columns ``point``,
    the axes, the statistics (in the order they first appear) and ``error``. The points are merged a
    range of ``MERGE_ROWS`` at a time: the parts whose points reach into the range (known from their
    footers) are read a batch of at most ``MERGE_ROWS`` rows at a time, each batch's rows in the range
    are kept, and the range is sorted and written as one row group. Memory is bounded by a range and
    a batch, not by the number of points or parts."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    unified, spans = _part_spans(parts)
    names = ["point", *spec.axis_keys]
    stats = [n for n in unified.names if n not in (*names, "error")]
    fields = [unified.field(n) if n in unified.names else pa.field(n, pa.int64()) for n in [*names, *stats]]
    target = pa.schema([*fields, pa.field("error", pa.string())])
    # pandas' description of the columns, as a DataFrame of the table would write it (``error`` in
    # pandas' string dtype), so ``pd.read_parquet`` gives the frame ``run`` returns.
    empty = target.empty_table().to_pandas().astype({"error": "string"})
    pandas_meta = pa.Table.from_pandas(empty, preserve_index=False).schema.metadata or {}
    target = target.with_metadata({**pandas_meta, META_KEY: spec.to_json().encode()})

    def conform(batch: Any) -> Any:
        """A batch with the final table's columns, in its order and types (absent ones null)."""
        cols = [batch.column(f.name).cast(f.type) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
                for f in target]
        return pa.RecordBatch.from_arrays(cols, schema=target)

    n = spec.count
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with _written(tmp, out):
        with pq.ParquetWriter(tmp, target) as w:
            if n == 0:
                w.write_table(target.empty_table())
            for a in range(0, n, MERGE_ROWS):
                b = min(n, a + MERGE_ROWS)
                held: list[Any] = []
                rows = 0
                for path, lo, hi in spans:
                    if hi < a or lo >= b:
                        continue
                    for batch in _part_batches(path, MERGE_ROWS):
                        point = batch.column("point")
                        inside = batch.filter(pc.and_(pc.greater_equal(point, a), pc.less(point, b)))
                        del batch, point  # only the rows in the range are held
                        if inside.num_rows:
                            rows += inside.num_rows
                            if rows > b - a:
                                raise RuntimeError(f"the saved results hold more than {b - a} rows for points "
                                                   f"{a}..{b - 1}: some points are saved twice")
                            held.append(conform(inside))
                        del inside
                if rows != b - a:
                    raise RuntimeError(f"the saved results hold {rows} rows for points {a}..{b - 1}, "
                                       f"not {b - a}; resume the sweep to run the missing ones")
                t = pa.Table.from_batches(held, schema=target).sort_by("point")
                held.clear()
                w.write_table(t, row_group_size=MERGE_ROWS)
                del t
                pa.default_memory_pool().release_unused()  # the range is written: give its memory back


def _base_diff(saved: Mapping[str, Any], spec: Spec) -> str | None:
    """The first key of the base (what every point shares) in which a saved sweep differs from
    ``spec``, or None: a resumed sweep may grow its axes, never change its base."""
    mine = json.loads(spec.to_json())
    return next((k for k in ("simulator", "config", "set", "workload", "keep") if saved.get(k) != mine.get(k)), None)


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


@contextlib.contextmanager
def _written(tmp: Path, path: Path) -> Iterator[None]:
    """Write ``tmp`` in the block, then rename it to ``path``; on an OS error (a full disk) remove
    ``tmp`` and raise one naming ``path``."""
    try:
        yield
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OSError(f"cannot write {path}: {e.strerror or e}") from None


def read_meta(path: str | Path) -> dict[str, Any] | None:
    """The sweep description stored in a result table (simulator, config, axes, ...), if any."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(path).metadata or {}
    raw = meta.get(META_KEY)
    return json.loads(raw) if raw else None


def read(path: str | Path):
    """A result table as a pandas DataFrame (``error`` as pandas' string dtype, missing: NA)."""
    import pandas as pd
    import pyarrow.parquet as pq

    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{p} is a directory; give a sweep's result table (the .parquet file sweep run wrote)")
    if not p.is_file():
        raise FileNotFoundError(f"{p} does not exist")
    from movelab.record.trace import META_KEY as RECORDING

    try:
        schema = pq.read_schema(p)
    except Exception as e:  # pyarrow's errors say nothing of the file
        raise ValueError(f"{p} is not a sweep's result table (a Parquet file): {e}") from None
    if RECORDING in (schema.metadata or {}):
        raise ValueError(f"{p} is a recording, not a sweep's result table: read it with movelab.record.read")
    df = pd.read_parquet(p)
    if "error" in df.columns:
        df["error"] = df["error"].astype("string")
    return df


def _table(spec: Spec, rows: dict[int, dict[str, Any]]):
    import pandas as pd

    ordered = [rows[i] for i in sorted(rows)]
    stats: list[str] = []
    seen = {"point", "error", *spec.axis_keys}
    for r in ordered:
        for k in r:
            if k not in seen:
                seen.add(k)
                stats.append(k)
    df = pd.DataFrame.from_records(ordered, columns=["point", *spec.axis_keys, *stats, "error"])
    return df.astype({"error": "string"})


# ------------------------------------------------------------------------------------------------
# Running


def run(
    spec: str | Path | Mapping[str, Any] | Spec,
    out: str | Path | None = None,
    *,
    cluster: Any = None,
    workers: int | None = None,
    executor: Executor | None = None,
    resume: bool = False,
    force: bool = False,
    progress: Callable[[int, int, int], None] | None = None,
    save_every: float | None = None,
    table: bool = True,
):
    """Runs every point of ``spec`` and returns the result table (a DataFrame, a row per point in
    the spec's order). With ``out`` the table is also written there as Parquet, saving points as
    they finish (see the module's doc). ``cluster`` (an address or a ``dask.distributed.Client``)
    runs the points on Dask; else ``workers`` local processes (every core by default; 1 runs them in
    this process). ``progress(done, failed, total)`` is called after each point. Finished points are
    saved at least every ``save_every`` seconds (default 2; 0 saves each point as it finishes).

    With ``out`` and ``table=False`` the table is only written, not returned (a million-point sweep
    then holds a bit per point, not its rows): the return value is ``{"points", "failed",
    "first_error": (point, message) or None}``."""
    if save_every is not None and not 0 <= save_every <= 3600:
        raise ValueError(f"save_every must be between 0 and 3600 seconds, got {save_every!r}")
    check_progress(progress, "(done, failed, total)")
    s = load_spec(spec)
    if out is None:
        return _run(s, None, cluster, workers, executor, resume, force, progress, save_every)
    from movelab._util import output_lock

    out = Path(out)
    if out.is_dir():
        raise ValueError(f"out {out} is a directory; the result table is one Parquet file: name it FILE.parquet")
    if out.suffix != ".parquet":
        raise ValueError(f"out {out}: the result table is Parquet; name it FILE.parquet")
    out.parent.mkdir(parents=True, exist_ok=True)
    # Two sweeps never write one table (and its parts) at once: the second is refused at once.
    with output_lock(out):
        return _run(s, out, cluster, workers, executor, resume, force, progress, save_every, table)


def _run(s: Spec, out: Path | None, cluster: Any, workers: int | None, executor: Executor | None, resume: bool,
         force: bool, progress: Callable[[int, int, int], None] | None, save_every: float | None,
         table: bool = True):
    points = s.points()
    n = len(points)
    store = _Store(out, s, save_every) if out is not None else None
    # With an output, finished rows go to the parts and only a bit per point stays here; without one
    # the rows are the returned table and stay in memory.
    done_mask = bytearray(n) if store is not None else bytearray()
    rows: dict[int, dict[str, Any]] = {}
    done = store.start(resume, force, done_mask) if store is not None else 0
    # Position in the task stream -> point: entries live only while their task is in flight.
    position: dict[int, int] = {}

    def todo() -> Iterator[Task]:
        k = 0
        for i, p in enumerate(points):
            if store is not None and done_mask[i]:
                continue
            position[k] = i
            k += 1
            yield Task(s.simulator, s.config, s.set, s.workload, s.keep, tuple(p.items()))

    tasks = _Stream(todo(), n - done)
    failed = 0
    first_error: tuple[int, str] | None = None
    if progress is not None:
        progress(done, failed, n)
    own = executor is None
    ex = executor or make_executor(cluster, workers)
    try:
        for o in ex.imap(run_point, tasks):
            i = position.pop(o.index)
            row: dict[str, Any] = {"point": i, **points[i]}
            if o.ok:
                row.update({k: v for k, v in o.value.items() if k not in row})
            else:
                row["error"] = o.error
                failed += 1
                if first_error is None or i < first_error[0]:
                    first_error = (i, o.error)
            done += 1
            if store is not None:
                store.add(row)
            else:
                rows[i] = row
            if progress is not None:
                progress(done, failed, n)
    except KeyboardInterrupt:
        if store is not None:
            store.flush()
        raise SweepInterrupted(done, n, store.dir if store is not None else None) from None
    except Exception as e:
        # The executor broke (a point's own error is an outcome, not an exception): keep what finished.
        if store is not None:
            store.flush()
        raise SweepBroken(_executor_failure(e), done, n, store.dir if store is not None else None) from e
    finally:
        if own:
            ex.close()
    if store is None:
        return _table(s, rows)
    store.flush()
    store.finish()
    if table:
        return read(out)  # type: ignore[arg-type]
    return {"points": n, "failed": failed, "first_error": first_error}


class _Stream(Sequence[Task]):
    """Tasks made as the executor asks for them, with their count known up front (executors take
    sequences; only ``len`` and one pass of iteration are used)."""

    def __init__(self, it: Iterator[Task], n: int) -> None:
        self._it, self._n = it, n

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Task]:
        return self._it

    def __getitem__(self, i: Any) -> Any:
        raise TypeError("the tasks of a sweep are made as they run: iterate, do not index")


def _sorted(values: list[Any]) -> list[Any]:
    """An axis's values in their natural order (8, 16, 32, 64: numbers as numbers)."""
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


def summary(df: Any, axes: list[str] | None = None) -> dict[str, Any]:
    """What a result table holds: points, failures, each axis's values, each statistic's range."""
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a sweep's result table (a DataFrame, from sweep.read), not {type(df).__name__}")
    axes = axes if axes is not None else []
    missing = [a for a in axes if a not in df.columns]
    if missing:
        raise ValueError(f"axes: {missing[0]!r} is not a column of the table (its columns: {', '.join(df.columns)})")
    stats = [c for c in df.columns if c not in ("point", "error", *axes)]
    failed = df[df["error"].notna()] if "error" in df.columns else df.iloc[0:0]
    out: dict[str, Any] = {
        "points": len(df),
        "failed": len(failed),
        "axes": {a: _sorted(df[a].dropna().unique().tolist()) for a in axes if a in df.columns},
        "stats": {},
        "errors": failed["error"].value_counts().head(5).to_dict() if len(failed) else {},
    }
    for c in stats:
        col = df[c].dropna()
        if len(col) and col.dtype.kind in "iuf":
            out["stats"][c] = {"min": col.min().item(), "mean": float(col.mean()), "max": col.max().item()}
        elif len(col):
            out["stats"][c] = {"values": sorted(map(str, col.unique()))[:5]}
    return out
