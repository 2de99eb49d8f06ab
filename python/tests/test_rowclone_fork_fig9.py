"""rowclone-fork's Fig. 9 results are over the points Fig. 9 plots: forkbench with S = 64 MB only
(section 7.2), while Fig. 7's FMTC and Fig. 8's speedups span both array sizes. Built on
hand-made rows, so no simulation runs."""

from __future__ import annotations

from typing import Any

from movelab.reproduce import rowclone_fork as rf


def _row(s_mb: int, n: int, mech: str, energy: float, speedup: float = 1.0, fmtc: float = 0.0) -> dict[str, Any]:
    return {"workload": "forkbench", "s_mb": s_mb, "n_pages": n, "mechanism": mech, "fmtc": fmtc,
            "speedup": speedup, "energy_reduction": energy, "bandwidth_reduction": 0.0, "time_ns": 1.0,
            "ipc": 1.0, "dram_energy_uj": 1.0, "channel_mb": 1.0}


def _rows() -> list[dict[str, Any]]:
    rows = []
    # S = 64 MB: FPM saves 0.2 and 0.6, PSM 0.05 and 0.1; S = 128 MB saves far more and far less.
    for s, n, fpm, psm, speed, fmtc in [(64, 2, 0.2, 0.05, 1.1, 0.3), (64, 16, 0.6, 0.1, 2.0, 0.6),
                                        (128, 2, 0.0, 0.0, 1.0, 0.1), (128, 16, 0.9, 0.5, 3.0, 0.7)]:
        rows += [_row(s, n, "baseline", 0.0, fmtc=fmtc), _row(s, n, "fpm", fpm, speed), _row(s, n, "psm", psm)]
    return rows


def _by_id(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {r.id: r.value for r in rf.results(rows)}


def test_fig9_energy_results_are_over_s_64_mb_only() -> None:
    got = _by_id(_rows())
    assert got["fig9/fpm-max-energy-reduction"] == 0.6
    assert abs(got["fig9/fpm-mean-energy-reduction"] - 0.4) < 1e-12
    assert got["fig9/psm-max-energy-reduction"] == 0.1


def test_fig7_and_fig8_still_span_both_sizes() -> None:
    got = _by_id(_rows())
    assert got["fig7/fmtc-min"] == 0.1 and got["fig7/fmtc-max"] == 0.7
    assert got["fig8/fpm-peak-speedup"] == 3.0


def test_fig9_has_no_value_without_s_64_mb() -> None:
    got = _by_id([r for r in _rows() if r["s_mb"] == 128])
    assert got["fig9/fpm-max-energy-reduction"] is None
    assert got["fig9/fpm-mean-energy-reduction"] is None
    assert got["fig9/psm-max-energy-reduction"] is None
    assert got["fig8/fpm-peak-speedup"] == 3.0
