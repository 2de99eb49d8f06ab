"""RowClone section 7.2's stated trends (:func:`movelab.reproduce.rowclone_fork.trends`), on
hand-made points: each holds on the paper's picture and fails when one step goes the other way; a
trend needs two points to be judged."""

from __future__ import annotations

import copy

import pytest
from movelab.reproduce import ledger
from movelab.reproduce import rowclone_fork as rf


def point(fmtc: float, fpm: float, psm_energy: float) -> dict:
    return {"baseline": {"fmtc": fmtc}, "fpm": {"speedup": fpm}, "psm": {"energy_reduction": psm_energy}}


# S = 64 and 128 MB, N = 2, 512, 16k: FMTC, FPM speedup and PSM energy reduction rise with N, and
# FMTC is larger at 64 MB.
PICTURE = {
    (64, 2): point(0.00010, 1.001, 0.0004), (64, 512): point(0.05, 1.09, 0.04), (64, 16384): point(0.63, 2.26, 0.40),
    (128, 2): point(0.00005, 1.0003, 0.0002), (128, 512): point(0.025, 1.05, 0.02),
    (128, 16384): point(0.47, 1.81, 0.29),
}
IDS = {"fig7/fmtc-grows-with-n", "fig7/fmtc-larger-for-smaller-s", "fig8/fpm-gain-grows-with-n",
       "fig9/psm-energy-grows-with-n"}


def verdicts(fork: dict) -> dict[str, bool | None]:
    return {r.id: r.within for r in ledger.judge(rf.NAME, rf.trends(fork))}


def test_the_papers_picture_holds() -> None:
    assert verdicts(PICTURE) == dict.fromkeys(IDS, True)


def test_each_trend_fails_on_one_step() -> None:
    for (key, mech, field, value), broken in [
        (((128, 512), "baseline", "fmtc", 0.00004), "fig7/fmtc-grows-with-n"),
        (((64, 2), "baseline", "fmtc", 0.00005), "fig7/fmtc-larger-for-smaller-s"),  # a tie is not larger
        (((128, 16384), "fpm", "speedup", 1.05), "fig8/fpm-gain-grows-with-n"),
        (((64, 512), "psm", "energy_reduction", 0.5), "fig9/psm-energy-grows-with-n"),
        # 128 MB's PSM energy is not Fig. 9's: a drop there breaks nothing.
        (((128, 512), "psm", "energy_reduction", 0.5), None),
    ]:
        fork = copy.deepcopy(PICTURE)
        fork[key][mech][field] = value
        v = verdicts(fork)
        assert {k for k, ok in v.items() if not ok} == ({broken} if broken else set()), (key, mech, v)


def test_the_first_step_that_fails_is_named() -> None:
    fork = copy.deepcopy(PICTURE)
    fork[(64, 16384)]["fpm"]["speedup"] = 1.0
    r = next(r for r in rf.trends(fork) if r.id == "fig8/fpm-gain-grows-with-n")
    assert "N = 512 to 16,384 at S = 64 MB" in r.what


def test_too_few_points_judge_nothing() -> None:
    assert rf.trends({(64, 2): point(0.1, 1.0, 0.0)}) == []
    one_size = {k: v for k, v in PICTURE.items() if k[0] == 64}
    assert {r.id for r in rf.trends(one_size)} == IDS - {"fig7/fmtc-larger-for-smaller-s"}


def test_rowclones_reproductions_refuse_a_copy_engines_keys() -> None:
    # None runs a copy engine: copy.mode and the engine's buffer changed no row.
    from movelab.reproduce import rowclone_apps, rowclone_apps_recorded, rowclone_fork, rowclone_multicore

    for mod in (rowclone_fork, rowclone_apps, rowclone_apps_recorded, rowclone_multicore):
        with pytest.raises(ValueError, match=r"copy\.(mode|stream_buffer_lines): .* runs no copy engine"):
            mod.run(overrides={"copy": {"mode": "ASYNC", "stream_buffer_lines": 1}})
