"""RowClone (MICRO 2013) section 7.3 with the applications derived from recordings of real programs
(``movelab reproduce rowclone-apps --apps recorded``): the same runs, rows and figures as
:mod:`movelab.reproduce.rowclone_apps`, but each application that could be recorded here runs with
the parameters ``movelab bench rowclone-apps`` derived from a real program of its kind
(``presets/workloads/rowclone-apps/recorded.toml``: compile, forkbench, mcached, mysql, shell), so
Table 5's bandwidth and energy reductions are predictions; the others (bootup) keep the fitted set
of ``apps.toml`` and stay calibrated (``presets/ledger.toml``, ``[rowclone-apps-recorded]``).

Each recorded application measures whole units of its work, at least :data:`UNITS` of them (a unit
holds a whole number of its page copies and zeroings: docs/rowclone-system.md, "Applications from
recordings"), after at least :data:`WARMUP_UNITS` unmeasured ones.
"""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Group

from movelab import data
from movelab._util import refuse_keys, refuse_unread
from movelab.executor import run_points
from movelab.reproduce import check_overrides, group, ledger, table, write_rows
from movelab.reproduce import rowclone_apps as ra

NAME = "rowclone-apps-recorded"
#: Keys nothing here reads (see ``rowclone_apps.UNREAD``).
UNREAD, UNREAD_WHY = ra.UNREAD, ra.UNREAD_WHY
ROW_KEY = ra.ROW_KEY
#: ``apps_from``: "recorded" (recorded.toml) or "fitted" (apps.toml's calibrated set).
KEYS = [*ra.KEYS, "apps_from"]
DATA = "workloads/rowclone-apps/recorded.toml"
#: Units of work measured (and warmed up) at least, per recorded application.
UNITS, WARMUP_UNITS = 3, 1


def recorded() -> dict[str, Any]:
    """``recorded.toml``: ``app`` (name -> its entry: params, provenance, measured and derived
    figures) and ``not_recorded`` (name -> why)."""
    d = tomllib.loads(data.file_text(DATA))
    apps = {}
    for a in d.get("app", []):
        p = a.get("params")
        if not isinstance(a.get("name"), str) or not isinstance(p, dict):
            raise ValueError(f"presets/{DATA}: every [[app]] needs a name and a params table")
        ra.check_app_params(p)
        apps[a["name"]] = a
    return {"app": apps, "not_recorded": {n["name"]: n.get("why", "") for n in d.get("not_recorded", [])}}


def _lengths(entry: Mapping[str, Any] | None, instructions: int, warmup: int,
             whole_units: bool = True) -> tuple[int, int]:
    """A recorded application's run lengths: whole units (a unit's instructions are counted as the
    program counts them, so the window starts and ends on a unit's boundary), at least :data:`UNITS`
    (:data:`WARMUP_UNITS`) of them and at least ``instructions`` (``warmup``). ``whole_units`` false:
    ``instructions`` and ``warmup`` as given (a smoke test's short runs, not the recorded ratios)."""
    if entry is None or not whole_units:
        return instructions, warmup
    unit = int(entry.get("derived", {}).get("unit_instructions_modelled", 0))
    if unit <= 0:
        return instructions, warmup
    return (min(ra.MAX_INSTRUCTIONS, unit * max(UNITS, -(-instructions // unit))),
            min(ra.MAX_INSTRUCTIONS, unit * max(WARMUP_UNITS, -(-warmup // unit))))


def points(overrides: Mapping[str, Any] | None, apps: list[str], instructions: int,
           warmup: int, whole_units: bool = True) -> list[dict[str, Any]]:
    """The independent runs: one application (its three mechanisms) each, the recorded ones with
    their derived parameters (every parameter of the program set, none left to the fitted set)."""
    rec = recorded()["app"]
    out = []
    for a in apps:
        e = rec.get(a)
        ins, wu = _lengths(e, instructions, warmup, whole_units)
        [p] = ra.points(overrides, [a], ins, wu, dict(e["params"]) if e else None)
        out.append(p)
    return out


def run(
    overrides: Mapping[str, Any] | None = None,
    apps: list[str] | None = None,
    instructions: int = ra.INSTRUCTIONS,
    warmup: int = ra.WARMUP,
    progress: Callable[[int, int], None] | None = None,
    whole_units: bool = True,
) -> list[dict[str, Any]]:
    """Rows with exactly :data:`KEYS` (and the ledger's labels): each application under each
    mechanism, the recorded ones from their recordings (``whole_units``: see :func:`_lengths`)."""
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides must be a dict shaped like a platform config, not {type(overrides).__name__}")
    if overrides:
        refuse_keys(dict(overrides), ra.SETS, NAME)
        refuse_unread(overrides, UNREAD, f"{NAME} {UNREAD_WHY}")
        check_overrides(overrides, [ra.PLATFORM])
    ra.check_lengths(instructions, warmup)
    names = list(apps) if apps is not None else ra.APPS
    if not names or len(names) > 64 or not all(isinstance(a, str) for a in names):
        raise ValueError(f"apps: {names!r} must be a list of 1 to 64 application names")
    rec = recorded()["app"]
    p = ra.paper()
    rows = []
    for r in (r for rs in run_points(ra.point, points(overrides, names, instructions, warmup, whole_units),
                                          progress)
              for r in rs):
        ps, pe, pb = ra._paper_cells(r["app"], r["mechanism"], p)
        row = {k: r.get(k) for k in ra.KEYS}
        row.update(paper_speedup=ps, paper_energy_reduction=pe, paper_bandwidth_reduction=pb,
                   apps_from="recorded" if r["app"] in rec else "fitted")
        for k in ["ipc", "speedup", "energy_reduction", "bandwidth_reduction", "copy_init_fraction",
                  "bytes_per_instruction", "energy_nj_per_instruction"]:
            row[k] = round(row[k], 4)
        rows.append(row)
    return ledger.label_rows(NAME, rows, ROW_KEY, ledger.paper_metrics(ra.KEYS))


def results(rows: list[dict[str, Any]]) -> list[ledger.Result]:
    """Table 5's and Fig. 11's cells of every application; the section's statements over the
    recorded applications alone (a fitted one would make them part calibrated)."""
    cells = [r for r in ra.results(rows) if r.value is not None or r.paper is not None]
    rec = [r for r in rows if r.get("apps_from") == "recorded"]
    stated = [r for r in ra.results(rec) if r.value is None and r.paper is None] if rec else []
    return cells + stated


def check(rows: list[dict[str, Any]]) -> tuple[bool, str]:
    """The headline: the predictions within the ledger's tolerance out of all of them."""
    return ledger.check(NAME, results(rows))


def provenance_table(rows: list[dict[str, Any]]) -> Group:
    """Where each application's parameters came from."""
    rec = recorded()
    t = table("Section 7.3's applications from recordings of real programs on this machine",
              "params derived by movelab bench rowclone-apps (presets/workloads/rowclone-apps/recorded.toml); "
              "per unit of work: instructions, ordinary read/write misses, page copies and zeroings, lines of a "
              "zeroed page touched after it")
    for col in ["app", "from", "program", "unit instr", "misses", "writes", "copies", "zeros", "dirty"]:
        t.add_column(col, justify="left" if col in ("app", "from", "program") else "right")
    for a in dict.fromkeys(r["app"] for r in rows):
        e = rec["app"].get(a)
        if e is None:
            t.add_row(a, "fitted", rec["not_recorded"].get(a, "not recorded"), "", "", "", "", "", "")
            continue
        p = e["params"]
        t.add_row(a, "recorded", f"{e.get('version', '')}: {e.get('program', '')}",
                  f"{e['derived']['unit_instructions_modelled']:,}", str(p["misses"]), str(p["writes"]),
                  str(p["copies"]), str(p["zeros"]), str(p["dirty"]))
    return group(t)


def tables(rows: list[dict[str, Any]]) -> list[Group]:
    return [provenance_table(rows), *ra.tables(rows)]


def write(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Writes the JSON, CSV and PNGs (the figures of :func:`movelab.reproduce.rowclone_apps.plot`,
    named for this reproduction) into ``out``; returns the paths."""
    paths = write_rows(rows, out, NAME, KEYS)
    with tempfile.TemporaryDirectory() as tmp:
        for p in ra.plot(rows, Path(tmp)):
            dst = out / p.name.replace(ra.NAME, NAME, 1)
            shutil.move(p, dst)
            paths.append(dst)
    return paths
