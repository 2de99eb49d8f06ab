"""Zhao et al. Figs. 12-14 in ``reproduce zhao-copy-engine``: every (setting, mode) row is there, each
reduction is the figure's definition (against BASE at the figure's first setting), the Table 2 setting is
Table 3's out-of-order 1 KB cell, and the paper's values are the ones its text gives."""

from __future__ import annotations

import pytest
from movelab.reproduce import paper_data
from movelab.reproduce import zhao_copy_engine as zc


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return zc.run(packets=5)


def test_every_setting_and_mode_has_a_row(rows: list[dict]) -> None:
    for fig, settings in zc.SENSITIVITY.items():
        got = {(r["variant"], r["mode"]) for r in rows if r["figure"] == fig}
        assert got == {(label, m) for label, _, _ in settings for m in zc.FIGURE_MODES}, fig


def test_reductions_follow_the_figures_definition(rows: list[dict]) -> None:
    for fig, settings in zc.SENSITIVITY.items():
        rs = {(r["variant"], r["mode"]): r for r in rows if r["figure"] == fig}
        first = settings[0][0]
        ref = rs[(first, "BASE")]
        assert ref["reduction"] == 0.0 and ref["time_ns"] == ref["base_time_ns"]
        for (label, mode), r in rs.items():
            assert r["base_time_ns"] == ref["time_ns"]
            assert r["reduction"] == pytest.approx(1 - r["time_ns"] / ref["time_ns"], abs=1e-4)
            if label == first:
                assert r["change"] is None
            else:
                assert r["change"] == pytest.approx(r["reduction"] - rs[(first, mode)]["reduction"], abs=2e-4)
            # The engines move the copy: every engine row offloaded its copies.
            if mode != "BASE":
                assert r["mean_copy_ns"] > 0


def test_the_table2_setting_is_table3s_cell(rows: list[dict]) -> None:
    t3 = {r["mode"]: r for r in rows if r["figure"] == "table3" and r["core"] == "out-of-order"
          and r["payload_bytes"] == 1024}
    for fig, label in [("fig12", "memory 6.4 GB/s"), ("fig13", "latency 80 ns"), ("fig14", "CPU 3 GHz")]:
        rs = {r["mode"]: r for r in rows if r["figure"] == fig and r["variant"] == label}
        for mode in zc.MODES:
            assert rs[mode]["time_ns"] == t3[mode]["time_ns"], (fig, mode)
        assert rs["BASE"]["time_ns"] == t3["SYNC_NLB"]["base_time_ns"]


def test_the_settings_move_what_they_name(rows: list[dict]) -> None:
    base = {(r["figure"], r["variant"]): r["time_ns"] for r in rows if r["mode"] == "BASE" and r["figure"] in
            zc.SENSITIVITY}
    # More latency, less bandwidth and a slower clock each make BASE slower.
    assert base[("fig13", "latency 110 ns")] > base[("fig13", "latency 95 ns")] > base[("fig13", "latency 80 ns")]
    assert base[("fig12", "memory 3.2 GB/s")] > base[("fig12", "memory 6.4 GB/s")]
    assert base[("fig14", "CPU 2 GHz")] > base[("fig14", "CPU 3 GHz")] > base[("fig14", "CPU 4 GHz")]


def test_paper_values_are_the_texts(rows: list[dict]) -> None:
    p = paper_data(zc.NAME)
    assert {(e["mode"], e["latency_ns"]): e.get("reduction") for e in p["fig13"]}[("SYNC_NLB", 110)] == 0.337
    rs = {(r["figure"], r["variant"], r["mode"]): r for r in rows if r["figure"] in zc.SENSITIVITY}
    assert rs[("fig13", "latency 95 ns", "BASE")]["paper_reduction"] == 0.10
    assert rs[("fig13", "latency 80 ns", "BASE")]["paper_reduction"] == 0.18
    assert rs[("fig13", "latency 110 ns", "SYNC_NLB")]["paper_reduction"] == 0.337
    assert rs[("fig13", "latency 80 ns", "SYNC_NLB")]["paper_reduction"] == 0.361
    assert rs[("fig13", "latency 80 ns", "SYNC_NLB")]["paper_change"] == 0.024
    assert rs[("fig13", "latency 80 ns", "SYNC_WLB")]["paper_change"] == 0.01
    assert rs[("fig13", "latency 80 ns", "ASYNC")]["paper_change"] == 0.002
    assert rs[("fig14", "CPU 3 GHz", "BASE")]["paper_reduction"] == 0.072
    assert rs[("fig14", "CPU 4 GHz", "BASE")]["paper_reduction"] == 0.101
    # No value the text does not give (Fig. 12 prints none).
    assert all(r["paper_reduction"] is None and r["paper_change"] is None for k, r in rs.items() if k[0] == "fig12")


def test_sensitivity_overrides_are_refused() -> None:
    for key in ["core.clock_mhz", "interconnect.request_ns", "memory.dram.channels"]:
        head, *rest = key.split(".")
        ov: dict = {}
        cur = ov
        for k in [head, *rest[:-1]]:
            cur = cur.setdefault(k, {})
        cur[key.split(".")[-1]] = 1
        with pytest.raises(ValueError):
            zc.run(ov, packets=2)


def _with_gains(rows: list[dict], fig: str, gains: dict[str, float]) -> list[dict]:
    """``rows`` with ``fig``'s last setting's changes replaced by ``gains`` (mode -> points)."""
    last = zc.SENSITIVITY[fig][-1][0]
    return [{**r, "change": gains[r["mode"]]} if r["figure"] == fig and r["variant"] == last else r for r in rows]


def test_the_texts_statements_are_judged_from_the_figures_rows(rows: list[dict]) -> None:
    got = {r.id: r for r in zc.sensitivity_statements(rows)}
    assert set(got) == {"fig12/every-mode-faster", "fig13/engines-gain-less-than-base",
                        "fig14/engines-gain-less-than-base", "fig14/async-almost-no-gain"}
    # Each verdict follows the rows it names, both ways.
    engines_below = {"BASE": 0.05, "SYNC_NLB": 0.02, "SYNC_WLB": 0.01, "ASYNC": 0.004}
    one_above = {**engines_below, "SYNC_WLB": 0.06}
    for fig in ("fig13", "fig14"):
        judged = {r.id: r.holds for r in zc.sensitivity_statements(_with_gains(rows, fig, engines_below))}
        assert judged[f"{fig}/engines-gain-less-than-base"] is True
        judged = {r.id: r.holds for r in zc.sensitivity_statements(_with_gains(rows, fig, one_above))}
        assert judged[f"{fig}/engines-gain-less-than-base"] is False
    # "Almost no effect" on ASYNC: a gain under a point, not merely the least of the four.
    judged = {r.id: r.holds for r in zc.sensitivity_statements(_with_gains(rows, "fig14", engines_below))}
    assert judged["fig14/async-almost-no-gain"] is True
    judged = {r.id: r.holds for r in zc.sensitivity_statements(
        _with_gains(rows, "fig14", {**engines_below, "ASYNC": 0.015}))}
    assert judged["fig14/async-almost-no-gain"] is False
    # Twice the bandwidth: every mode must gain, BASE included.
    judged = {r.id: r.holds for r in zc.sensitivity_statements(
        _with_gains(rows, "fig12", {**engines_below, "BASE": -0.001}))}
    assert judged["fig12/every-mode-faster"] is False
    # They are judged as statements, and counted with the reproduction's predictions.
    from movelab.reproduce import ledger

    judged_all = {r.id: r for r in ledger.judge(zc.NAME, zc.results(rows))}
    for rid in got:
        assert judged_all[rid].basis == ledger.PREDICTED and judged_all[rid].rule == "the statement holds"


def test_no_statement_without_the_figures_rows(rows: list[dict]) -> None:
    ids = {r.id for r in zc.sensitivity_statements([r for r in rows if r["figure"] != "fig13"])}
    assert ids == {"fig12/every-mode-faster", "fig14/engines-gain-less-than-base", "fig14/async-almost-no-gain"}


def _with_fig11(rows: list[dict], red: dict[tuple[str, str], float]) -> list[dict]:
    """``rows`` with Fig. 11's reductions replaced by ``red`` ((placement, mode) -> fraction)."""
    return [{**r, "reduction": red[(r["placement"], r["mode"])]} if r["figure"] == "fig11" else r for r in rows]


def test_fig11s_stated_facts_are_judged_from_its_rows(rows: list[dict]) -> None:
    got = {r.id: r for r in zc.fig11_results(rows)}
    assert set(got) == {"fig11/numa-base-faster", "fig11/sync-same-on-and-off-die", "fig11/async-on-die-less"}
    on_base = next(r["reduction"] for r in rows if r["figure"] == "fig11" and r["placement"] == "on-die"
                   and r["mode"] == "BASE")
    assert got["fig11/numa-base-faster"].value == on_base and got["fig11/numa-base-faster"].paper == 0.10
    like_paper = {("on-die", "BASE"): 0.1, ("on-die", "SYNC_NLB"): 0.30, ("off-die", "SYNC_NLB"): 0.27,
                  ("on-die", "SYNC_WLB"): 0.33, ("off-die", "SYNC_WLB"): 0.30, ("on-die", "ASYNC"): 0.43,
                  ("off-die", "ASYNC"): 0.55}
    judged = {r.id: r.holds for r in zc.fig11_results(_with_fig11(rows, like_paper))}
    assert judged["fig11/sync-same-on-and-off-die"] and judged["fig11/async-on-die-less"]
    apart = {**like_paper, ("on-die", "SYNC_WLB"): 0.36, ("on-die", "ASYNC"): 0.56}
    judged = {r.id: r.holds for r in zc.fig11_results(_with_fig11(rows, apart))}
    assert judged["fig11/sync-same-on-and-off-die"] is False and judged["fig11/async-on-die-less"] is False
    assert zc.fig11_results([r for r in rows if r["figure"] != "fig11"]) == []
