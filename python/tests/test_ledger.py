"""The calibration ledger (``presets/ledger.toml``, :mod:`movelab.reproduce.ledger`): every row of
every reproduction carries its label, a result the ledger lists as fitted is never a prediction,
the tolerance rules judge as the paper defines (a bound is a bound), and each headline counts all
the predictions."""

from __future__ import annotations

import fnmatch
import importlib
import json
import re

import pytest
from movelab import data
from movelab.reproduce import ledger
from test_golden_rows import CASES, GOLDEN


def _module(name: str):
    return importlib.import_module(f"movelab.reproduce.{name.replace('-', '_')}")


@pytest.fixture(scope="module")
def runs() -> dict[str, list[dict]]:
    """Each reproduction's rows with the golden test's small options: its stored golden rows,
    which test_golden_rows.py checks are what the CLI prints now (wall-clock fields left out), so
    the reproductions are not run a second time here."""
    return {name: json.loads((GOLDEN / f"{name}.json").read_text()) for name in CASES}


def test_every_reproduction_has_a_ledger_with_a_tolerance() -> None:
    led = data.ledger()
    for name in CASES:
        assert name in led, name
        assert isinstance(led[name]["tolerance"], str) and led[name]["tolerance"]
        assert led[name].get("rule"), f"{name}: no tolerance rule"
        for e in led[name].get("calibrated", []):
            assert e["fitted_to"] and e.get("parameters"), e
        for e in led[name].get("not_reproduced", []):
            assert e["reason"], e


@pytest.mark.parametrize("name", list(CASES))
def test_every_row_carries_a_label(runs: dict[str, list[dict]], name: str) -> None:
    rows = runs[name]
    assert rows
    for r in rows:
        assert r.get("basis") in (*ledger.BASES, "mixed"), r
        cols = [k for k in r if k.startswith("basis_")]
        assert all(r[k] in ledger.BASES for k in cols), r
        if r["basis"] == "mixed":
            assert len({r[k] for k in cols}) > 1, r
        elif cols:
            assert {r[k] for k in cols} == {r["basis"]}, r


@pytest.mark.parametrize("name", list(CASES))
def test_a_fitted_result_is_never_a_prediction(runs: dict[str, list[dict]], name: str) -> None:
    """Against the ledger itself: every result or row its calibrated entries name is labelled
    calibrated, in the results and in the rows' label columns."""
    mod = _module(name)
    entries = data.ledger()[name].get("calibrated", [])
    res = ledger.judge(name, mod.results(runs[name]))
    fitted = [p for e in entries for p in e.get("results", [])]
    for r in res:
        if any(fnmatch.fnmatchcase(r.id, p) for p in fitted):
            assert r.basis == ledger.CALIBRATED, r
    # The rows' labels: a compared (row, metric) named by a calibrated pattern is calibrated.
    key = mod.ROW_KEY
    for row in runs[name]:
        base = "/".join("-" if row.get(k) is None else str(row[k]) for k in key)
        for col, label in row.items():
            if col == "basis" and "metric" in key and row.get("paper_value") is not None:
                rid = base
            elif col.startswith("basis_"):
                rid = f"{base}/{col.removeprefix('basis_')}"
            else:
                continue
            if any(fnmatch.fnmatchcase(rid, p) for p in fitted):
                assert label == ledger.CALIBRATED, (rid, row)
        row_patterns = [p for e in entries for p in e.get("rows", [])]
        if "basis" in row and not any(k.startswith("basis_") for k in row) and row.get("paper_value") is None \
                and any(fnmatch.fnmatchcase(base, p) for p in row_patterns):
            assert row["basis"] == ledger.CALIBRATED, row


@pytest.mark.parametrize("name", list(CASES))
def test_every_ledger_pattern_names_a_result(runs: dict[str, list[dict]], name: str) -> None:
    """A misspelt pattern would silently label nothing: each one must name a result (or a row)."""
    mod = _module(name)
    ids = [r.id for r in mod.results(runs[name])]
    rows = ["/".join("-" if r.get(k) is None else str(r[k]) for k in mod.ROW_KEY) for r in runs[name]]
    led = data.ledger()[name]
    for e in [*led.get("calibrated", []), *led.get("not_reproduced", []), *led.get("rule", [])]:
        for p in e.get("results", []):
            assert any(fnmatch.fnmatchcase(i, p) for i in ids), f"{name}: '{p}' names no result of {ids}"
        for p in e.get("rows", []):
            assert any(fnmatch.fnmatchcase(i, p) for i in rows), f"{name}: row pattern '{p}' names no row"


@pytest.mark.parametrize("name", list(CASES))
def test_the_headline_counts_every_prediction(runs: dict[str, list[dict]], name: str) -> None:
    mod = _module(name)
    res = ledger.judge(name, mod.results(runs[name]))
    assert res
    # An independent count: each prediction judged by its rule, written out here.
    within = 0
    for r in res:
        if r.basis != ledger.PREDICTED:
            continue
        rule = ledger.rule_of(name, r.id)
        if rule.get("statement"):
            ok = r.holds is True
        elif "relative" in rule:
            ok = abs(r.value / r.paper - 1) <= rule["relative"] + 1e-9
        elif "points" in rule:
            ok = abs(r.value - r.paper) <= rule["points"] + 1e-9
        else:
            ok = r.value < r.paper if rule.get("below") else r.value > r.paper
        within += ok
    predicted = sum(r.basis == ledger.PREDICTED for r in res)
    ok, text = mod.check(runs[name])
    m = re.match(r"(\d+) of (\d+) predictions within tolerance; (\d+) calibrated \(not counted\); (\d+) not "
                 r"reproduced", text)
    assert m, text
    assert (int(m[1]), int(m[2])) == (within, predicted), text
    assert int(m[3]) == sum(r.basis == ledger.CALIBRATED for r in res)
    assert int(m[4]) == sum(r.basis == ledger.NOT_REPRODUCED for r in res)
    assert ok == (predicted > 0 and within == predicted)
    assert "issue" not in text


def test_a_bound_is_a_bound() -> None:
    below = {"below": True}
    assert ledger.within(below, 0.05, 0.05) is False  # at the bound: not below it
    assert ledger.within(below, 0.0499, 0.05) is True
    assert ledger.within(below, 0.071, 0.05) is False  # Larsen's rx-64KB, 7.1% against "< 5%"
    assert ledger.within({"above": True}, 1.0, 1.0) is False
    assert ledger.within({"points": 0.05}, 0.10, 0.05) is True  # a tolerance is inclusive
    assert ledger.within({"points": 0.05}, 0.1001, 0.05) is False
    assert ledger.within({"relative": 0.10}, 1.1, 1.0) is True
    assert ledger.within({"relative": 0.10}, 1.11, 1.0) is False
    assert ledger.within({"statement": True}, None, None, holds=False) is False
    assert ledger.within({"relative": 0.10}, None, 1.0) is None


def test_larsen_counts_every_fig10_bar_and_its_identities(runs: dict[str, list[dict]]) -> None:
    li = _module("larsen-idma")
    res = {r.id: r for r in ledger.judge("larsen-idma", li.results(runs["larsen-idma"]))}
    for bar in ["rx-64B", "tx-64B", "rx-64KB", "tx-64KB"]:
        r = res[f"fig10/{bar}/descriptor_doorbell_share"]
        assert r.basis == ledger.PREDICTED, r
        assert r.within is not None, r  # every bar is judged, none left out
    assert res["fig10/rx-64KB/descriptor_doorbell_share"].rule.startswith("below")
    assert res["fig10/tx-64KB/descriptor_doorbell_share"].rule.startswith("below")
    # Table 1 on the cluster: only the host software is fitted (the descriptor-DMA 8.8 us); the
    # iDMA's latency is a separate run, a prediction.
    assert res["table1/descriptor-dma/end_to_end_us"].basis == ledger.CALIBRATED
    assert res["table1/idma/end_to_end_us"].basis == ledger.PREDICTED
    assert all(r.basis == ledger.CALIBRATED for k, r in res.items() if k.startswith("fig8/"))
    # Fig. 9's doorbell and memory reads come out of the platform's memory system: predictions
    # (the doorbell judged against the paper's bound); its push is the calibrated downstream path.
    for part in ["doorbell_ns", "descriptor_ns", "payload_ns", "nic_tx_latency_ns"]:
        assert res[f"fig9/idma/{part}"].basis == ledger.PREDICTED, part
    assert res["fig9/idma/doorbell_ns"].rule.startswith("below")
    assert res["fig9/idma/push_ns"].basis == ledger.CALIBRATED
    # Table 1's Gb/s per lane is a simulated stream's payload: a prediction, below a lane's rate
    # (Gen2: 4.0 Gb/s), which is a fact of the link given in the note, never a row of its own.
    rows = runs["larsen-idma"]
    for case in ["descriptor-dma", "idma"]:
        r = res[f"table1/{case}/gbps_per_lane"]
        assert r.basis == ledger.PREDICTED and r.rule == "within 10%", r
        assert 0 < r.value < 4.0, r
        assert "4.00 Gb/s" in li._get(rows, "table1", case, "gbps_per_lane")["note"]
        assert li._get(rows, "table1", case, "lane_limit_gbps") is None
    # The summary states every Fig. 10 bar by the one judged metric, RX as TX.
    said = {what: mine for what, mine, _ in li.summary(rows)}
    for size, dirs in [("small", ("TX", "RX")), ("large", ("TX", "RX"))]:
        for d in dirs:
            key = next(k for k in said if f"share, {size} {d}" in k)
            bar = f"{d.lower()}-{'64B' if size == 'small' else '64KB'}"
            row = li._get(rows, "fig10", bar, "descriptor_doorbell_share")
            assert said[key] == f"{row['value'] * 100:.1f}", (key, said[key], row)


def test_csv_and_json_carry_the_labels(tmp_path) -> None:
    from movelab.reproduce import write_rows

    rows = [{"a": 1, "paper_a": 2, "basis": "predicted", "basis_a": "predicted"}]
    js, csv = write_rows(rows, tmp_path, "x", ["a", "paper_a"])
    assert json.loads(js.read_text())[0]["basis"] == "predicted"
    assert csv.read_text().splitlines()[0] == "a,paper_a,basis,basis_a"


def test_report_shows_calibrated_results_apart(runs: dict[str, list[dict]], tmp_path) -> None:
    from movelab.report import write_report

    d = tmp_path / "larsen-idma"
    d.mkdir()
    (d / "larsen-idma.json").write_text(json.dumps(runs["larsen-idma"]))
    page = write_report(tmp_path).read_text()
    m = re.search(r'data-within="(\d+)" data-predicted="(\d+)" data-calibrated="(\d+)"', page)
    assert m and int(m[3]) > 0 and int(m[2]) >= 4, m
    assert '<tr class="calibrated" data-basis="calibrated">' in page
    assert 'td class="calibrated"' in page  # the rows' calibrated cells are greyed too
    assert "issue" not in page.lower()


def test_the_ledger_is_shown_to_users_of_the_package() -> None:
    # A wheel has no presets/ folder: the results tables point at the command, which prints the
    # shipped ledger (tolerance, rules, calibrated results with their preset values, not reproduced).
    from movelab.cli import app
    from typer.testing import CliRunner

    r = CliRunner().invoke(app, ["reproduce", "ledger", "larsen-idma"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    led = data.ledger()["larsen-idma"]
    out = " ".join(r.output.split())
    assert led["tolerance"] in out and "calibrated" in out
    # Each calibrated entry, by the first words of what it was fitted to (cells wrap in columns).
    assert all(" ".join(c["fitted_to"].split()[:3]) in out for c in led["calibrated"])
    js = CliRunner().invoke(app, ["reproduce", "ledger", "--format", "json"])
    assert js.exit_code == 0 and json.loads(js.stdout) == data.ledger()
    bad = CliRunner().invoke(app, ["reproduce", "ledger", "no-such"])
    assert bad.exit_code == 2 and "rowclone-latency" in bad.output
    from rich.console import Console

    con = Console(width=200, record=True)
    con.print(ledger.results_table("rowclone-latency", []))
    assert "movelab reproduce ledger rowclone-latency" in con.export_text()
