"""The joint calibration step of Wun & Crowley's reproduction (movelab.reproduce.wun_refit)
computes the calibrated results as the reproduction does, finds the shipped fit again, and each
of its settings moves what it should."""

from __future__ import annotations

import pytest
from movelab.network import config as network_config
from movelab.reproduce import wun_onload as wo
from movelab.reproduce import wun_refit


def _preset() -> tuple[int, int, int]:
    h = network_config("ixp2350")["host"]
    return round(h["cpi"]), int(h["app_per_datagram"]), int(h["onload_send"])


def test_the_step_computes_the_reproductions_results_and_the_preset_is_its_fit() -> None:
    cpi, app, send = _preset()
    p = wun_refit.evaluate(cpi, app, send)
    rows = wo.run(None, [wun_refit.PAYLOAD], ["rx", "tx"])
    want = {r.id: r.value for r in wo.results(rows) if r.id in wun_refit.TARGETS}
    assert p.values == pytest.approx(want, rel=1e-12)
    # The shipped settings are the fit: each result within 2% of the paper's, the statement holds.
    for rid, target in wun_refit.TARGETS.items():
        assert p.values[rid] == pytest.approx(target, rel=0.02), (rid, p.values)
    assert p.error() < 1e-3 and p.no_clear_winner()


def test_the_bisection_finds_the_shipped_sendmsg_cost() -> None:
    cpi, app, send = _preset()
    got = wun_refit.fit_onload_send(cpi, app)
    assert abs(got.onload_send - send) <= wun_refit.STEP, got


def test_the_sendmsg_cost_moves_only_the_onloaders_transmit() -> None:
    cpi, app, send = _preset()
    lo, hi = wun_refit.evaluate(cpi, app, send // 2), wun_refit.evaluate(cpi, app, send * 2)
    assert lo.values["tx/onloader_over_emu"] > 1.3 * hi.values["tx/onloader_over_emu"], (lo, hi)
    for rid in ["fig4/large/onloader_over_softnic", "tx/softnic_over_emu"]:
        assert lo.values[rid] == hi.values[rid], rid


def test_the_error_is_relative_and_bad_options_are_refused() -> None:
    p = wun_refit.Point(7, 800, 2640, {"fig4/large/onloader_over_softnic": 0.22, "tx/softnic_over_emu": 3.3,
                                       "tx/onloader_over_emu": 2.7})
    assert p.error() == pytest.approx(3 * 0.1**2)
    assert not wun_refit.Point(7, 800, 2640, {**p.values, "tx/onloader_over_emu": 2.0}).no_clear_winner()
    for bad in [["--cpis", "0"], ["--apps", "x"], ["--cpis", "-3"]]:
        with pytest.raises(SystemExit):
            wun_refit.main(bad)
