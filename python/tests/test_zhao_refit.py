"""The Table 3 calibration step (movelab.reproduce.zhao_refit) computes the calibrated cells as the
reproduction does, and the snoop order moves them."""

import json

import pytest
from movelab import _core
from movelab.reproduce import zhao_refit


def test_the_preset_counts_give_the_reproductions_calibrated_cells():
    rows = _core.reproduce_zhao(None, 200, [512], None, ["in-order"], False)
    row = next(r for r in json.loads(rows) if r["mode"] == "SYNC_NLB")
    c = zhao_refit.cells(zhao_refit.scaled(1.0))[512]
    assert c[0] == pytest.approx(row["reduction"], abs=1e-9)
    assert c[1] == pytest.approx(row["faster_copy"], abs=1e-9)


def test_parallel_snoops_make_the_engines_copy_faster():
    counts = zhao_refit.scaled(1.0)
    serial, parallel = zhao_refit.cells(counts, "serial"), zhao_refit.cells(counts, "parallel")
    for pl in zhao_refit.PAYLOADS:
        assert parallel[pl][1] > serial[pl][1] + 0.005, (pl, serial[pl], parallel[pl])


def test_a_scale_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        zhao_refit.scaled(0)
