"""``movelab report DIR``: a static HTML report of what a directory holds, readable from the files
alone (no server): ``DIR/index.html`` with every reproduction (its tables, movelab's values beside
the paper's, its plots, and whether it lands within the tolerance its docs state), and a page per
sweep (``DIR/sweep-NAME.html``) with its table and plots of any statistic against any axis.

What is reported is discovered, not listed here: a reproduction is a sub-directory ``DIR/NAME/``
holding ``NAME.json`` (the rows ``movelab reproduce NAME --out DIR/NAME`` writes) and its PNGs; a sweep
is any result table (``*.parquet``) under DIR. When the package has a module for the reproduction
(``movelab.reproduce.NAME``, dashes as underscores), its ``check(rows)`` gives the headline (the
predictions within the paper's tolerance out of all of them) and its ``results(rows)`` the results
beside the paper's, each labelled calibrated, predicted or not reproduced from the calibration
ledger (calibrated ones greyed and counted apart; ``summary(rows)`` serves a module without
``results``); without them the page still shows the reproduction's table (its ``paper_*`` columns
beside movelab's) and plots.
"""

from __future__ import annotations

import hashlib
import html
import importlib
import json
import math
import re
from pathlib import Path
from typing import Any

__all__ = ["GENERATOR", "write_report"]

GENERATOR = "movelab report"
MAX_TABLE_ROWS = 500

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 13px; margin: 0.6em 0; }
th, td { padding: 2px 8px; text-align: right; border-bottom: 1px solid #eee; white-space: nowrap; }
th { background: #f4f4f4; position: sticky; top: 0; } td.s, th.s { text-align: left; }
td.paper, th.paper { background: #fff8e6; }
tr.calibrated td, td.calibrated { color: #888; background: #efefef; }
tr.not-reproduced td, td.not-reproduced { font-style: italic; color: #777; }
.ok { color: #176b1c; font-weight: bold; } .off { color: #a33; font-weight: bold; } .na { color: #777; }
.scroll { max-height: 480px; overflow: auto; border: 1px solid #ddd; display: inline-block; max-width: 100%; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.4em 0; }
nav a { margin-right: 1em; } .muted { color: #666; font-size: 13px; }
select { margin: 0 1em 0 0.3em; } svg { border: 1px solid #ddd; background: white; }
"""

# Counts the page's images when it has loaded (the browser test reads these attributes).
_IMAGE_CHECK = """
<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; });
  document.body.setAttribute('data-images-total', imgs.length);
  document.body.setAttribute('data-images-loaded', ok.length);
  document.body.setAttribute('data-images-broken',
    imgs.filter(function (i) { return ok.indexOf(i) < 0; })
        .map(function (i) { return i.getAttribute('src'); }).join(' '));
});
</script>
"""


def _e(v: Any) -> str:
    # A file name that is not UTF-8 holds surrogates: shown escaped (\\udcff), never an encode error.
    return html.escape(str(v).encode("utf-8", "backslashreplace").decode("utf-8"), quote=True)


#: Entries the report could not use (name not UTF-8, not a regular file): (path, why), shown on
#: the index page and returned by :func:`skipped`.
_SKIPPED: dict[Path, str] = {}


def _usable(p: Path, want_dir: bool = False) -> bool:
    """Whether the report reads ``p``: a regular file (or a directory), whose name is UTF-8 (a
    FIFO would block the report; a name a page cannot hold would break it). Others are noted."""
    try:
        p.name.encode("utf-8")
    except UnicodeEncodeError:
        _SKIPPED.setdefault(p, "its name is not UTF-8")
        return False
    try:
        ok = p.is_dir() if want_dir else p.is_file()
    except OSError as e:
        _SKIPPED.setdefault(p, e.strerror or str(e))
        return False
    if not ok and not want_dir and p.exists() and not p.is_dir():
        _SKIPPED.setdefault(p, "not a regular file")
    return ok


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    return str(v)


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="generator" content="{GENERATOR}">\n<title>{_e(title)}</title>\n<style>{_CSS}</style>\n'
            f"</head><body>\n{body}\n{_IMAGE_CHECK}</body></html>\n")


def _table(rows: list[dict[str, Any]], columns: list[str] | None = None, total: int | None = None) -> str:
    """An HTML table of the first MAX_TABLE_ROWS of ``rows`` (``total``: how many the whole table
    has, when ``rows`` is only its start)."""
    total = len(rows) if total is None else total
    if not rows:
        return '<p class="na">no rows</p>'
    cols = columns or list(dict.fromkeys(k for r in rows for k in r))
    # movelab's value, then the paper's beside it.
    ordered: list[str] = []
    for c in cols:
        if c.startswith("paper_") and c.removeprefix("paper_") in cols:
            continue
        ordered.append(c)
        if f"paper_{c}" in cols:
            ordered.append(f"paper_{c}")
    ordered += [c for c in cols if c not in ordered]

    def cls(c: str, v: Any = None, r: dict[str, Any] | None = None) -> str:
        names = []
        # A compared value's label (basis_METRIC beside it, or the row's basis for value/paper_value).
        basis = (r or {}).get(f"basis_{c.removeprefix('paper_')}")
        if basis is None and c in ("value", "paper_value", "basis"):
            basis = (r or {}).get("basis")
        if basis in ("calibrated", "not reproduced"):
            names.append(basis.replace(" ", "-"))
        elif c.startswith("paper_"):
            names.append("paper")
        if isinstance(v, str) or (v is None and not any(isinstance(r.get(c), (int, float)) for r in rows)):
            names.append("s")
        return f' class="{" ".join(names)}"' if names else ""

    head = "".join(f"<th{cls(c, rows[0].get(c))}>{_e(c)}</th>" for c in ordered)
    body = []
    for r in rows[:MAX_TABLE_ROWS]:
        body.append("<tr>" + "".join(f"<td{cls(c, r.get(c), r)}>{_e(_fmt(r.get(c)))}</td>" for c in ordered)
                    + "</tr>")
    more = (f'<p class="muted">first {MAX_TABLE_ROWS} of {total} rows; all of them are in the CSV/Parquet '
            f"file</p>") if total > MAX_TABLE_ROWS else ""
    return f'<div class="scroll"><table><tr>{head}</tr>\n{"".join(body)}</table></div>{more}'


def _module(name: str) -> Any:
    try:
        return importlib.import_module(f"movelab.reproduce.{name.replace('-', '_')}")
    except ImportError:
        return None


def _known_reproductions() -> list[str]:
    """The reproductions this package has: modules of :mod:`movelab.reproduce` with a ``run``."""
    import pkgutil

    import movelab.reproduce as pkg

    out = []
    for m in pkgutil.iter_modules(pkg.__path__):
        if m.name != "cli" and not m.name.startswith("_"):
            mod = _module(m.name)
            if mod is not None and callable(getattr(mod, "run", None)):
                out.append(m.name.replace("_", "-"))
    return out


def _reproductions(root: Path) -> list[dict[str, Any]]:
    out = []
    for d in sorted(p for p in root.iterdir() if _usable(p, want_dir=True)):
        data = d / f"{d.name}.json"
        if not _usable(data):
            continue
        try:
            rows = json.loads(data.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            out.append({"name": d.name, "dir": d, "rows": [], "error": f"{data}: {e}"})
            continue
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            out.append({"name": d.name, "dir": d, "rows": [], "error": f"{data}: not a list of rows"})
            continue
        out.append({"name": d.name, "dir": d, "rows": rows, "error": None})
    return out


def _reproduction_section(rep: dict[str, Any], root: Path) -> tuple[str, str]:
    """(HTML section, the one-line verdict for the index's summary)."""
    name, rows, mod = rep["name"], rep["rows"], _module(rep["name"])
    title = name
    if mod is not None and mod.__doc__:
        # The docstring's whole first paragraph: its first line alone may stop mid-phrase.
        first = " ".join(ln.strip() for ln in mod.__doc__.strip().split("\n\n")[0].splitlines())
        title = f"{name}: {first.rstrip(':')}"
    parts = [f'<h2 id="{_e(name)}" class="reproduction" data-name="{_e(name)}">{_e(title)}</h2>']
    if rep["error"]:
        verdict = f'<span class="off">unreadable</span>: {_e(rep["error"])}'
        parts.append(f"<p>{verdict}</p>")
        return "\n".join(parts), verdict
    check = getattr(mod, "check", None) if mod is not None else None
    if check is not None:
        try:
            ok, text = check(rows)
            head, _, rest = text.partition("; ")
            verdict = f'<span class="{"ok" if ok else "off"}">{_e(head)}</span>' + (f"; {_e(rest)}" if rest else "")
        except Exception as e:  # a report shows what it can; the reproduction's own tests check its rows
            verdict = f'<span class="off">check failed</span>: {_e(f"{type(e).__name__}: {e}")}'
    else:
        verdict = '<span class="na">no tolerance stated</span> for this reproduction'
    parts.append(f'<p class="verdict">{verdict}</p>')
    results = getattr(mod, "results", None) if mod is not None else None
    summary = getattr(mod, "summary", None) if mod is not None else None
    if results is not None:
        try:
            parts.append(_results_table(name, results(rows)))
        except Exception as e:
            parts.append(f'<p class="off">results failed: {_e(f"{type(e).__name__}: {e}")}</p>')
    elif summary is not None:
        try:
            stmts = summary(rows)
            if stmts:
                parts.append("<h3>Beside the paper</h3>")
                parts.append(_table([{"statement": s, "movelab": m, "paper": p} for s, m, p in stmts]))
        except Exception as e:
            parts.append(f'<p class="off">summary failed: {_e(e)}</p>')
    files = sorted(p.name for p in rep["dir"].iterdir() if p.suffix in (".csv", ".json") and _usable(p))
    links = " ".join(f'<a href="{_e(rep["dir"].relative_to(root).as_posix())}/{_e(f)}">{_e(f)}</a>' for f in files)
    parts.append(f"<h3>Rows</h3><p class=\"muted\">movelab's values with the paper's (shaded) beside them; "
                 f"files: {links}</p>")
    parts.append(_table(rows))
    parts.append(_what_if_section(rep["dir"]))
    for png in sorted(p for p in rep["dir"].glob("*.png") if _usable(p)):
        rel = png.relative_to(root).as_posix()
        parts.append(f'<div><img src="{_e(rel)}" alt="{_e(png.stem)}" loading="eager"></div>')
    return "\n".join(parts), verdict


#: The columns of a saved what-if table (``movelab what-if``, ``movelab bench record``) the report shows.
_WHAT_IF_COLUMNS = ["mechanism", "movement_ns", "saving_pct", "total_ns", "energy_nj", "channel_bytes",
                    "copy_threshold_bytes", "init_threshold_bytes", "error"]


def _what_if_section(d: Path) -> str:
    """Every saved what-if table in ``d`` (``PROGRAM-what-if.csv``): all mechanisms side by side,
    the saving in data movement per program in one table, then each program's table. Read from the
    files: nothing is replayed."""
    import csv

    tables: dict[str, list[dict[str, Any]]] = {}
    for p in sorted(d.glob("*-what-if.csv")):
        if not _usable(p):
            continue
        try:
            with p.open(newline="") as f:
                rows = [{k: _csv_value(v) for k, v in r.items() if k in _WHAT_IF_COLUMNS} for r in csv.DictReader(f)]
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            _SKIPPED[p] = f"unreadable what-if table ({e})"
            continue
        if rows and "mechanism" in rows[0]:
            tables[p.name.removesuffix("-what-if.csv")] = rows
    if not tables:
        return ""
    mechs = list(dict.fromkeys(r["mechanism"] for rows in tables.values() for r in rows))
    side = []
    for m in mechs:
        row: dict[str, Any] = {"mechanism": m}
        for prog, rows in tables.items():
            r = next((x for x in rows if x["mechanism"] == m), None)
            row[f"{prog} saving %"] = None if r is None or r.get("error") else r.get("saving_pct")
        side.append(row)
    plural = "s" if len(tables) != 1 else ""
    parts = [f'<h3 class="what-if">What if: the saving in data movement per mechanism '
             f"({len(tables)} program{plural})</h3>"
             '<p class="muted">predicted time in data movement under each mechanism against the CPU copy '
             "(the baseline), from the saved what-if tables (PROGRAM-what-if.csv); blank: the platform "
             "cannot run it</p>", _table(side)]
    for prog, rows in tables.items():
        parts.append(f'<h4 class="what-if-program" data-program="{_e(prog)}">{_e(prog)}: every mechanism</h4>')
        parts.append(_table(rows, [c for c in _WHAT_IF_COLUMNS if any(c in r for r in rows)]))
    return "\n".join(parts)


def _csv_value(v: str | None) -> Any:
    """A CSV cell as a number where it is one (empty: None)."""
    if v is None or v == "":
        return None
    try:
        f = float(v)
    except ValueError:
        return v
    return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() else f


def _results_table(name: str, results: list[Any]) -> str:
    """The reproduction's results beside the paper: predictions (within tolerance or not), then
    the calibrated results (greyed, not counted) and those not reproduced, counted apart."""
    from movelab.reproduce import ledger

    res = ledger.judge(name, results)
    c = ledger.counts(res)
    order = {ledger.PREDICTED: 0, ledger.CALIBRATED: 1, ledger.NOT_REPRODUCED: 2}
    rows = []
    for r in sorted(res, key=lambda r: order[r.basis]):
        verdict = "-" if r.within is None else ("yes" if r.within else "no")
        vcls = "" if r.within is None else (' class="ok"' if r.within else ' class="off"')
        note = r.note or r.rule
        rows.append(f'<tr class="{r.basis.replace(" ", "-")}" data-basis="{_e(r.basis)}"><td class="s">{_e(r.what)}'
                    f"</td><td>{_e(ledger.show(r))}</td><td class=\"paper\">{_e(ledger.show(r, paper=True))}</td>"
                    f'<td class="s">{_e(r.basis)}</td><td{vcls}>{verdict}</td><td class="s">{_e(note)}</td></tr>')
    head = ("<tr><th class=\"s\">result</th><th>movelab</th><th class=\"paper\">paper</th><th class=\"s\">basis</th>"
            "<th>within</th><th class=\"s\">tolerance, or what it was fitted to</th></tr>")
    return (f'<h3>Beside the paper</h3><p class="counts" data-within="{c["within"]}" data-predicted='
            f'"{c["predicted"]}" data-calibrated="{c["calibrated"]}" data-not-reproduced="{c["not_reproduced"]}">'
            f'{c["within"]} of {c["predicted"]} predictions within tolerance; {c["calibrated"]} calibrated (greyed, '
            f'not counted); {c["not_reproduced"]} not reproduced. Tolerance: {_e(ledger.entry(name)["tolerance"])}.'
            f'</p><div class="scroll"><table>{head}\n{"".join(rows)}</table></div>')


# ------------------------------------------------------------------------------------------------
# Sweeps

_PLOT_JS = """
<script>
(function () {
  var data = JSON.parse(document.getElementById('sweep-data').textContent);
  var rows = data.rows, axes = data.axes, stats = data.stats;
  var sel = {stat: document.getElementById('stat'), x: document.getElementById('x'),
             group: document.getElementById('group')};
  function opts(el, list, extra) {
    (extra || []).concat(list).forEach(function (v) { var o = document.createElement('option');
      o.value = v; o.textContent = v || '(none)'; el.appendChild(o); });
  }
  opts(sel.stat, stats); opts(sel.x, axes); opts(sel.group, axes, ['']);
  if (axes.length > 1) sel.group.value = axes[1];
  var colours = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
  function draw() {
    var s = sel.stat.value, x = sel.x.value, g = sel.group.value;
    var series = {};
    rows.forEach(function (r) {
      var y = r[s]; if (typeof y !== 'number' || !isFinite(y)) return;
      var k = g ? String(r[g]) : s; var xv = r[x];
      series[k] = series[k] || {}; series[k][xv] = series[k][xv] || []; series[k][xv].push(y);
    });
    var xs = []; rows.forEach(function (r) { if (xs.indexOf(r[x]) < 0) xs.push(r[x]); });
    var numeric = xs.every(function (v) { return typeof v === 'number'; });
    if (numeric) xs.sort(function (a, b) { return a - b; });
    var W = 860, H = 380, L = 95, R = 200, T = 20, B = 50, ys = [];
    Object.keys(series).forEach(function (k) { Object.keys(series[k]).forEach(function (xv) {
      var v = series[k][xv]; var m = v.reduce(function (a, b) { return a + b; }, 0) / v.length;
      series[k][xv] = m; ys.push(m); }); });
    var svg = document.getElementById('plot');
    if (!ys.length) { svg.innerHTML = '<text x="20" y="40">no numeric values of ' + s + '</text>'; return; }
    var lo = Math.min.apply(null, ys), hi = Math.max.apply(null, ys); if (lo === hi) { lo -= 1; hi += 1; }
    var xmin = numeric ? xs[0] : 0, xmax = numeric ? xs[xs.length - 1] : xs.length - 1;
    if (xmin === xmax) { xmin -= 1; xmax += 1; }
    function px(v) { var i = numeric ? v : xs.indexOf(v); return L + (i - xmin) / (xmax - xmin) * (W - L - R); }
    function py(v) { return T + (1 - (v - lo) / (hi - lo)) * (H - T - B); }
    var out = ['<line x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - R) + '" y2="' + (H - B) + '" stroke="#000"/>',
               '<line x1="' + L + '" y1="' + T + '" x2="' + L + '" y2="' + (H - B) + '" stroke="#000"/>'];
    xs.forEach(function (v) { out.push('<text font-size="11" text-anchor="middle" x="' + px(v) + '" y="' +
      (H - B + 15) + '">' + v + '</text>'); });
    for (var i = 0; i <= 4; i++) { var v = lo + (hi - lo) * i / 4;
      out.push('<text font-size="11" text-anchor="end" x="' + (L - 5) + '" y="' + (py(v) + 4) + '">' +
               Number(v.toPrecision(4)).toLocaleString('en') + '</text>'); }
    out.push('<text id="ylabel" font-size="12" text-anchor="middle" transform="translate(14,' + ((T + H - B) / 2) +
             ') rotate(-90)">' + s + '</text>');
    out.push('<text font-size="12" text-anchor="middle" x="' + ((L + W - R) / 2) + '" y="' + (H - 10) + '">' + x +
             '</text>');
    Object.keys(series).forEach(function (k, n) {
      var c = colours[n % colours.length];
      var pts = xs.filter(function (v) { return v in series[k]; }).map(function (v) {
        return px(v) + ',' + py(series[k][v]); });
      out.push('<polyline class="series" fill="none" stroke="' + c + '" stroke-width="2" points="' +
               pts.join(' ') + '"/>');
      pts.forEach(function (p) { var xy = p.split(','); out.push('<circle r="3" fill="' + c + '" cx="' + xy[0] +
        '" cy="' + xy[1] + '"/>'); });
      out.push('<text font-size="11" fill="' + c + '" x="' + (W - R + 10) + '" y="' + (T + 14 * (n + 1)) + '">' +
               k + '</text>');
    });
    if (g) out.push('<text font-size="11" font-weight="bold" x="' + (W - R + 10) + '" y="' + T + '">' + g +
                    '</text>');
    svg.innerHTML = out.join('');
    document.getElementById('caption').textContent = s + ' against ' + x + (g ? ', a line per ' + g : '') +
      ' (mean over the other axes)';
  }
  [sel.stat, sel.x, sel.group].forEach(function (el) { el.addEventListener('change', draw); });
  draw();
})();
</script>
"""


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", s).strip("-") or "sweep"


def _json_value(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


# Rows of a sweep's table given to the page's plot (and the first MAX_TABLE_ROWS to its table).
PLOT_ROWS = 20_000


def _sweep_page(path: Path, root: Path) -> tuple[str, str, dict[str, Any]]:
    """(file name, HTML, summary for the index) of one sweep. The table is read a column of a row
    group at a time (its error count, the numeric statistics' ranges) plus its first PLOT_ROWS
    rows, so a million-row table costs a column of a row group and a batch, not the table."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from movelab import sweep

    meta = sweep.read_meta(path) or {}
    # Streamed reads (no pre-buffering of a whole row group's column chunks).
    f = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
    schema = f.schema_arrow
    columns = schema.names
    npoints = f.metadata.num_rows
    axes = [a for a in meta.get("axes", []) if a in columns]
    if not axes:  # a table from elsewhere: the non-numeric columns before the first numeric one
        axes = [c for c in columns if c not in ("point", "error")][:1]

    def is_number(t: Any) -> bool:
        return bool(pa.types.is_integer(t) or pa.types.is_floating(t))

    numeric = [c for c in columns if c not in ("point", "error", *axes) and is_number(schema.field(c).type)]
    has_error = "error" in columns
    failed = 0
    lo: dict[str, Any] = {}
    hi: dict[str, Any] = {}
    # One column of one row group at a time.
    for rg in range(f.num_row_groups):
        if has_error:
            err = f.read_row_group(rg, columns=["error"]).column(0)
            failed += len(err) - err.null_count
        for c in numeric:
            mm = pc.min_max(f.read_row_group(rg, columns=[c]).column(0)).as_py()
            if mm["min"] is not None:
                lo[c] = mm["min"] if c not in lo else min(lo[c], mm["min"])
                hi[c] = mm["max"] if c not in hi else max(hi[c], mm["max"])
            pa.default_memory_pool().release_unused()  # the column is gone: give its memory back
    # The statistics the axes move first; those constant over the sweep are not worth a plot.
    stats = [c for c in numeric if c in lo and lo[c] != hi[c]] or numeric

    def head(n: int, cols: list[str] | None = None) -> list[dict[str, Any]]:
        batch = next(f.iter_batches(batch_size=n, columns=cols), None)
        return [{k: _json_value(v) for k, v in r.items()} for r in batch.to_pylist()] if batch is not None else []

    rows = head(MAX_TABLE_ROWS)  # the table shows every column of the first rows
    plotted = head(PLOT_ROWS, [*axes, *stats]) if stats and axes else []  # the plot needs only these
    name = meta.get("name") or path.stem
    rel = path.relative_to(root).as_posix()
    fname = f"sweep-{_slug(rel.removesuffix('.parquet'))}.html"
    head = (f'<nav><a href="index.html">report index</a></nav><h1 class="sweep" data-name="{_e(name)}">'
            f"Sweep: {_e(name)}</h1><p>{npoints} points, {failed} failed; {_e(meta.get('simulator', '?'))} on "
            f"{_e(meta.get('config', '?'))}; axes: {_e(', '.join(axes))}. Data: "
            f'<a href="{_e(rel)}">{_e(rel)}</a> (pandas: <code>pd.read_parquet("{_e(rel)}")</code>)</p>')
    plot = ("<h2>Plot</h2><p>statistic<select id=\"stat\"></select> against<select id=\"x\"></select>"
            "a line per<select id=\"group\"></select></p>"
            '<svg id="plot" width="860" height="380"></svg><p id="caption" class="muted"></p>') if stats and axes \
        else '<p class="na">no numeric statistic to plot</p>'
    data = json.dumps({"rows": plotted, "axes": axes, "stats": stats}, default=str).replace("</", "<\\/")
    body = (head + plot + "<h2>Table</h2>" + _table(rows, columns, total=npoints) +
            f'<script type="application/json" id="sweep-data">{data}</script>' + (_PLOT_JS if stats and axes else ""))
    return fname, _page(f"movelab sweep {name}", body), {"name": name, "points": npoints, "failed": failed,
                                                          "file": fname, "axes": axes, "source": rel}


# ------------------------------------------------------------------------------------------------


def _is_recording(path: Path) -> bool:
    """A ``movelab record`` recording (shown through its directory's rows, not as a sweep)."""
    try:
        import pyarrow.parquet as pq

        return b"movelab.record" in (pq.read_schema(path).metadata or {})
    except Exception:
        return False


def _ours(path: Path) -> bool:
    try:
        return f'content="{GENERATOR}"' in path.read_text(errors="replace")[:2000]
    except OSError:
        return False


def skipped() -> list[tuple[Path, str]]:
    """The entries the last :func:`write_report` left out, each with why."""
    return list(_SKIPPED.items())


def _skipped_note(root: Path) -> str:
    if not _SKIPPED:
        return ""
    items = "".join(f"<li>{_e(p.relative_to(root) if p.is_relative_to(root) else p)}: {_e(why)}</li>"
                    for p, why in _SKIPPED.items())
    return f'<h2>Skipped</h2><ul class="off" id="skipped">{items}</ul>'


def write_report(root: str | Path, force: bool = False) -> Path:
    """Writes ``ROOT/index.html`` (and a page per sweep); returns its path. Pages this command wrote
    before are replaced; any other file in the way needs ``force``."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a directory (run movelab reproduce all --out {root} first)")
    _SKIPPED.clear()
    reps = _reproductions(root)
    sweeps = sorted(p for p in root.rglob("*.parquet")
                    if not any(s.name.endswith(".parts") for s in p.parents) and _usable(p) and not _is_recording(p))
    pages: list[tuple[Path, str]] = []
    sweep_items = []
    for p in sweeps:
        try:
            fname, page, info = _sweep_page(p, root)
        except Exception as e:
            sweep_items.append(f'<li class="off">{_e(p.relative_to(root))}: unreadable ({_e(e)})</li>')
            continue
        if any(q == root / fname for q, _ in pages):
            # Two paths with the same slug (a/b-s.parquet and a-b/s.parquet): each keeps a page of its own.
            digest = hashlib.sha1(p.relative_to(root).as_posix().encode()).hexdigest()[:8]
            fname = f"{fname.removesuffix('.html')}-{digest}.html"
        pages.append((root / fname, page))
        sweep_items.append(f'<li><a class="sweep-link" href="{_e(fname)}">{_e(info["name"])}</a>: {info["points"]} '
                           f'points, {info["failed"]} failed, axes {_e(", ".join(info["axes"]))} '
                           f'<span class="muted">({_e(info["source"])})</span></li>')
    sections, summary = [], []
    for rep in reps:
        section, verdict = _reproduction_section(rep, root)
        sections.append(section)
        summary.append(f'<li><a href="#{_e(rep["name"])}">{_e(rep["name"])}</a>: {verdict}</li>')
    for name in sorted(set(_known_reproductions()) - {r["name"] for r in reps}):
        summary.append(f'<li class="missing">{_e(name)}: <span class="off">not in this directory</span> '
                       f"(<code>movelab reproduce {_e(name)} --out {_e(root)}/{_e(name)}</code>)</li>")
    from movelab import __version__

    body = (f"<h1>movelab report</h1><p class=\"muted\">movelab {_e(__version__)}; {len(reps)} reproductions, "
            f"{len(sweeps)} sweeps, from {_e(root.resolve())}</p>"
            "<h2>Reproductions</h2>" + (f"<ul id=\"reproductions\">{''.join(summary)}</ul>" if summary else
                                         '<p class="na">none here (movelab reproduce all --out DIR)</p>') +
            "<h2>Sweeps</h2>" + (f"<ul id=\"sweeps\">{''.join(sweep_items)}</ul>" if sweep_items else
                                 '<p class="na">none here (movelab sweep SPEC --out DIR/NAME.parquet)</p>') +
            _skipped_note(root) + "\n".join(sections))
    index = root / "index.html"
    pages.append((index, _page("movelab report", body)))
    from movelab._util import output_lock

    # Two reports never write one directory's pages at once: the second is refused (OutputBusy).
    with output_lock(index):
        for path, _ in pages:
            if path.exists() and not force and not _ours(path):
                raise FileExistsError(f"{path} exists and movelab did not write it; pass --force to replace it")
        for path, text in pages:
            tmp = path.with_name(f".{path.name}.tmp")
            try:
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(path)
            except OSError as e:
                tmp.unlink(missing_ok=True)  # no half-written page left behind (a full disk)
                raise OSError(f"cannot write {path}: {e.strerror or e}") from None
    return index
