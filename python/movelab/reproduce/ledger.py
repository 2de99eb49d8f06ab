"""The calibration ledger: which of a reproduction's results were fitted, which are predictions,
which are not reproduced, and the tolerance each is judged by.

The ledger is data (``presets/ledger.toml``, shipped like every preset and read through
:func:`movelab.data.ledger`). For each reproduction it holds

* ``tolerance``: the one sentence stating its tolerance, and ``[[NAME.rule]]`` tables that apply
  it (first match wins): ``relative`` (|movelab / paper - 1| at most this), ``points`` (|movelab -
  paper| at most this many fraction points), ``below`` / ``above`` (the paper's value is a bound:
  movelab must be strictly below / above it), ``statement`` (the paper states a fact; the
  reproduction says whether it holds);
* ``[[NAME.calibrated]]``: results set from the paper (fitted to it, typed in from it, or an
  arithmetic identity of such inputs), each with the result it was fitted to and the preset
  values that carry the fit (each marked ``# calibrated:`` where it lives);
* ``[[NAME.not_reproduced]]``: results movelab does not produce as the paper defines them, with
  the reason.

A result is named by an id, ``part/part/.../metric``: for a row-shaped result the values of the
reproduction's ``ROW_KEY`` columns and the metric; for a statement, the id its module gives it.
Ledger entries name results by shell-style patterns of these ids (``fig8/*``). Everything else
with a movelab value is a prediction. Labels are never set by hand per row: :func:`label_rows`
and :func:`judge` read them from the ledger.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from movelab import data

CALIBRATED, PREDICTED, NOT_REPRODUCED = "calibrated", "predicted", "not reproduced"
BASES = (CALIBRATED, PREDICTED, NOT_REPRODUCED)
#: The predictions outside tolerance a headline names (the results table lists them all).
MAX_LISTED = 6
#: Slack for floating-point rounding in the tolerance comparisons (never for bounds).
_EPS = 1e-9

__all__ = ["BASES", "CALIBRATED", "NOT_REPRODUCED", "PREDICTED", "Result", "basis_of", "check", "counts", "entry",
           "headline", "judge", "label_rows", "row_results", "rule_of", "within"]


@dataclass(frozen=True)
class Result:
    """One of a paper's results beside movelab's. ``value``/``paper`` are numbers (None: none);
    ``holds`` is a statement's verdict, computed by the reproduction. :func:`judge` fills
    ``basis``, ``within``, ``rule`` and ``note`` from the ledger."""

    id: str
    what: str
    value: float | None
    paper: float | None
    unit: str = ""
    holds: bool | None = None
    basis: str = ""
    within: bool | None = None
    rule: str = ""
    note: str = ""


def entry(name: str) -> dict[str, Any]:
    """The ledger of reproduction ``name``; a reproduction without one is an error naming it."""
    led = data.ledger()
    if name not in led:
        raise KeyError(f"presets/ledger.toml has no [{name}] table: every reproduction states its tolerance and "
                       f"its calibrated results there")
    return led[name]


def _matches(patterns: Iterable[str], rid: str) -> bool:
    return any(fnmatch.fnmatchcase(rid, p) for p in patterns)


def _ledger_basis(name: str, rid: str, key: str) -> tuple[str, str] | None:
    led = entry(name)
    for e in led.get("calibrated", []):
        if _matches(e.get(key, []), rid):
            return CALIBRATED, e["fitted_to"]
    for e in led.get("not_reproduced", []):
        if _matches(e.get(key, []), rid):
            return NOT_REPRODUCED, e["reason"]
    return None


def basis_of(name: str, rid: str, has_value: bool = True) -> tuple[str, str]:
    """(basis, note) of result ``rid``: the ledger's calibrated or not-reproduced entry that names
    it, else a prediction when movelab gives a value, else not reproduced."""
    found = _ledger_basis(name, rid, "results")
    if found is not None:
        return found
    return (PREDICTED, "") if has_value else (NOT_REPRODUCED, "movelab gives no value")


def rule_of(name: str, rid: str) -> dict[str, Any]:
    """The tolerance rule that judges result ``rid`` (the ledger's first matching ``rule``)."""
    for r in entry(name).get("rule", []):
        if _matches(r["results"], rid):
            return r
    raise KeyError(f"presets/ledger.toml: no [[{name}.rule]] names the result '{rid}'")


def rule_text(rule: dict[str, Any]) -> str:
    if "relative" in rule:
        return f"within {rule['relative'] * 100:g}%"
    if "points" in rule:
        n = rule['points'] * 100
        return f"within {n:g} point{'' if n == 1 else 's'}"
    if rule.get("below"):
        return "below the paper's bound"
    if rule.get("above"):
        return "above the paper's bound"
    return "the statement holds"


def within(rule: dict[str, Any], value: float | None, paper: float | None, holds: bool | None = None) -> bool | None:
    """Whether ``value`` meets ``rule`` against ``paper`` (None when there is nothing to judge).
    A bound is a bound: ``below`` passes only strictly below the paper's value."""
    if rule.get("statement"):
        return holds
    if value is None or paper is None:
        return None
    if "relative" in rule:
        return paper != 0 and abs(value / paper - 1) <= rule["relative"] + _EPS
    if "points" in rule:
        return abs(value - paper) <= rule["points"] + _EPS
    if rule.get("below"):
        return value < paper
    if rule.get("above"):
        return value > paper
    raise ValueError(f"presets/ledger.toml: rule {rule!r} has none of relative, points, below, above, statement")


def judge(name: str, results: Sequence[Result]) -> list[Result]:
    """The results with their basis, verdict, rule and note from the ledger."""
    out = []
    for r in results:
        has = r.holds is not None if r.value is None else True
        basis, note = basis_of(name, r.id, has)
        rule = rule_of(name, r.id)
        out.append(replace(r, basis=basis, note=note, rule=rule_text(rule),
                           within=None if basis == NOT_REPRODUCED else within(rule, r.value, r.paper, r.holds)))
    return out


def counts(results: Sequence[Result]) -> dict[str, int]:
    """How many judged results are predictions within tolerance, predictions, calibrated and not
    reproduced."""
    pred = [r for r in results if r.basis == PREDICTED]
    return {"within": sum(r.within is True for r in pred), "predicted": len(pred),
            "calibrated": sum(r.basis == CALIBRATED for r in results),
            "not_reproduced": sum(r.basis == NOT_REPRODUCED for r in results)}


def headline(name: str, results: Sequence[Result]) -> tuple[bool, str]:
    """(every prediction within tolerance, the headline): the predictions within the paper's
    tolerance out of all of them, then the calibrated and not-reproduced results apart."""
    res = judge(name, results) if any(not r.basis for r in results) else list(results)
    c = counts(res)
    if not res:
        return False, "no result to compare with the paper"
    missed = [f"{r.what} ({_show(r.value, r.unit)} vs {_show(r.paper, r.unit)})" for r in res
              if r.basis == PREDICTED and r.within is not True]
    text = (f"{c['within']} of {c['predicted']} predictions within tolerance; {c['calibrated']} calibrated (not "
            f"counted); {c['not_reproduced']} not reproduced (tolerance: {entry(name)['tolerance']})")
    if missed:
        more = f" and {len(missed) - MAX_LISTED} more" if len(missed) > MAX_LISTED else ""
        text += ". Outside: " + ", ".join(missed[:MAX_LISTED]) + more
    return c["predicted"] > 0 and c["within"] == c["predicted"], text


def check(name: str, results: Sequence[Result]) -> tuple[bool, str]:
    """A reproduction's ``check(rows)``: :func:`headline` of its judged results."""
    return headline(name, judge(name, results))


def _show(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "%":
        return f"{v * 100:.1f}%"
    if unit == "x":
        return f"{v:.2f}x"
    return f"{v:.4g}{(' ' + unit) if unit else ''}"


def show(r: Result, paper: bool = False) -> str:
    """A result's movelab (or paper) value as text; a statement's verdict when it has no number."""
    v = r.paper if paper else r.value
    if v is None and r.value is None and r.holds is not None:
        return "holds" if (r.holds and not paper) else ("stated" if paper else "does not hold")
    if paper and r.rule.startswith("below"):
        return f"< {_show(v, r.unit)}"
    if paper and r.rule.startswith("above"):
        return f"> {_show(v, r.unit)}"
    return _show(v, r.unit)


def _rid(row: dict[str, Any], key: Sequence[str]) -> str:
    return "/".join("-" if row.get(k) is None else str(row[k]) for k in key)


def row_results(name: str, rows: Sequence[dict[str, Any]], key: Sequence[str], metrics: Sequence[str] | None = None,
                unit: str = "") -> list[Result]:
    """The results of row-shaped data: each ``(row, metric)`` with a paper value, id ``ROW_KEY
    values/metric``. ``metrics`` None: long rows (the metric named by the row's ``metric`` column,
    values in ``value``/``paper_value``)."""
    out = []
    for r in rows:
        base = _rid(r, key)
        if metrics is None:
            if r.get("paper_value") is not None:
                rid = base if "metric" in key else f"{base}/{r['metric']}"
                out.append(Result(rid, rid, r.get("value"), r["paper_value"], r.get("unit") or unit))
            continue
        for m in metrics:
            if r.get(f"paper_{m}") is not None:
                out.append(Result(f"{base}/{m}", f"{base}/{m}", r.get(m), r[f"paper_{m}"], unit))
    return out


def label_rows(name: str, rows: list[dict[str, Any]], key: Sequence[str],
               metrics: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``rows`` with a ``basis`` column (and, for rows holding several compared metrics, a
    ``basis_METRIC`` column each), read from the ledger. A row's ``basis`` is its compared values'
    basis (``mixed`` when they differ: see its ``basis_*`` columns); a row the paper gives no value
    for is calibrated when the ledger names it (``rows`` patterns), else predicted."""
    for r in rows:
        base = _rid(r, key)
        if metrics is None:
            rid = base if "metric" in key else f"{base}/{r.get('metric')}"
            has = r.get("value") is not None
            if r.get("paper_value") is not None:
                r["basis"] = basis_of(name, rid, has)[0]
            else:
                r["basis"] = _row_basis(name, base, has)
            continue
        labels = {}
        for m in metrics:
            has = r.get(m) is not None
            labels[m] = basis_of(name, f"{base}/{m}", has)[0] if r.get(f"paper_{m}") is not None \
                else _row_basis(name, f"{base}/{m}", has)
        kinds = set(labels.values())
        r["basis"] = kinds.pop() if len(kinds) == 1 else "mixed"
        r.update({f"basis_{m}": v for m, v in labels.items()})
    return rows


def label_plain_rows(name: str, rows: list[dict[str, Any]], key: Sequence[str]) -> list[dict[str, Any]]:
    """``rows`` (which hold no paper value: the paper's results are statements drawn from them)
    with a ``basis`` column: calibrated where the ledger's ``rows`` patterns name the row, else
    predicted."""
    for r in rows:
        r["basis"] = _row_basis(name, _rid(r, key), True)
    return rows


def _row_basis(name: str, rid: str, has_value: bool) -> str:
    found = _ledger_basis(name, rid, "results") or _ledger_basis(name, rid, "rows")
    if found is not None:
        return found[0]
    return PREDICTED if has_value else NOT_REPRODUCED


def basis_columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The label columns the rows carry (``basis`` first)."""
    cols = list(dict.fromkeys(k for r in rows for k in r if k == "basis" or k.startswith("basis_")))
    return sorted(cols, key=lambda k: k != "basis")


def style(basis: str | None) -> str | None:
    """The rich style of a row or cell with this basis: calibrated dim, not reproduced italic."""
    return {CALIBRATED: "dim", NOT_REPRODUCED: "italic"}.get(basis or "")


def results_table(name: str, results: Sequence[Result]) -> Any:
    """The judged results as a rich table (calibrated rows dim and not counted), its title the
    headline counts."""
    from movelab.reproduce import group, table

    res = judge(name, results)
    c = counts(res)
    t = table(f"Beside the paper: {c['within']} of {c['predicted']} predictions within tolerance; "
              f"{c['calibrated']} calibrated (dim, not counted); {c['not_reproduced']} not reproduced",
              f"tolerance: {entry(name)['tolerance']}. Calibrated results and what they were fitted to: "
              f"movelab reproduce ledger {name}.")
    for col in ["result", "movelab", "paper", "basis", "within"]:
        t.add_column(col, justify="right" if col in ("movelab", "paper") else "left")
    for r in res:
        verdict = "-" if r.within is None or r.basis == NOT_REPRODUCED else ("yes" if r.within else "NO")
        t.add_row(r.what, show(r), show(r, paper=True), r.basis, verdict, style=style(r.basis))
    return group(t)


def paper_metrics(keys: Sequence[str]) -> list[str]:
    """The metrics a row schema compares with the paper: those with a ``paper_`` column."""
    return [k.removeprefix("paper_") for k in keys if k.startswith("paper_") and k != "paper_value"]


def percent_results(name: str, rows: Sequence[dict[str, Any]], key: Sequence[str],
                    metrics: Sequence[str]) -> list[Result]:
    """:func:`row_results` of fractions shown in percent (reductions, improvements, shares)."""
    return [replace(r, what=" ".join(r.id.replace("/", " ").split()), unit="%")
            for r in row_results(name, rows, key, metrics)]
