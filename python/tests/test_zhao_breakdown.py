"""The breakdown of Zhao et al.'s Table 3 by payload size (movelab.reproduce.zhao_breakdown): what the
paper's own figures imply, and what the engine model does with each mechanism's parameter."""

from __future__ import annotations

import pytest
from movelab.reproduce import zhao_breakdown as zb

PACKETS = 60


@pytest.fixture(scope="module")
def ooo() -> dict[tuple[int, str], dict]:
    return {(r["payload_bytes"], r["mode"]): r for r in zb.breakdown(PACKETS, payloads=[512, 1400])}


def test_paper_bypass_gap_changes_sign_only_at_1400_bytes_out_of_order() -> None:
    # Bypass can only delay the engine, so SYNC_NLB's faster copy is at least SYNC_WLB's: the paper's
    # Table 3 holds that in every cell but the out-of-order 1400 B one.
    gap = {(r["core"], r["payload_bytes"]): r["nlb_minus_wlb"] for r in zb.paper_bypass_gap()}
    assert gap[("out-of-order", 1400)] == pytest.approx(-0.093)
    assert all(v > 0 for k, v in gap.items() if k != ("out-of-order", 1400))


def test_bypass_never_makes_the_engine_faster(ooo: dict) -> None:
    for p in (512, 1400):
        nlb, wlb = ooo[(p, "SYNC_NLB")], ooo[(p, "SYNC_WLB")]
        assert wlb["copy_ns"] >= nlb["copy_ns"]
        assert nlb["faster_copy"] >= wlb["faster_copy"]


def test_the_row_accounts_add_up(ooo: dict) -> None:
    for r in ooo.values():
        assert r["base_copy_ns"] + r["path_ns"] == pytest.approx(r["base_ns"])
        assert r["reduction"] == pytest.approx(1 - r["time_ns"] / r["base_ns"], abs=1e-3)
        assert 0 < r["row_hit"] <= 1 and 0 < r["dram_utilisation"] < 1
    # 1400 B from one line into the receive buffer is 22 source lines; its destination, back to back,
    # spans 22 or 23 lines.
    assert ooo[(1400, "ASYNC")]["lines_read"] == pytest.approx(22, abs=0.5)
    assert 22 <= ooo[(1400, "ASYNC")]["lines_written"] <= 23


def test_async_at_1400_bytes_is_bound_by_memory_not_by_the_core(ooo: dict) -> None:
    a, w = ooo[(1400, "ASYNC")], ooo[(1400, "SYNC_WLB")]
    assert a["engine_share_of_run"] > 0.9  # the engine copies almost all the time
    assert a["dram_utilisation"] > 0.7 and a["dram_utilisation"] > w["dram_utilisation"]
    assert a["time_ns"] > a["path_ns"] * 1.3  # the core's own path is not what it waits for
    # At 512 B the core's path is the longer: the engine is idle part of the run.
    assert ooo[(512, "ASYNC")]["engine_share_of_run"] < 0.9


def test_the_fairness_share_does_not_move_the_synchronous_engine() -> None:
    rows = {r["mechanism"]: r for r in zb.mechanisms(PACKETS, payloads=[1400])}
    base = rows["as preset"]
    for label in ("engine_share 0.05 (bypass fairness)", "engine_share 1.0 (bypass fairness)"):
        assert rows[label]["wlb_copy_ns"] == pytest.approx(base["wlb_copy_ns"], rel=0.01)
        assert rows[label]["nlb_copy_ns"] == pytest.approx(base["nlb_copy_ns"], rel=0.01)
    # Every variant keeps SYNC_NLB's faster copy at or above SYNC_WLB's.
    assert all(r["nlb_faster_copy"] >= r["wlb_faster_copy"] for r in rows.values())
    # A smaller stream buffer does move the 1400 B copy (it then takes two batches).
    assert rows["stream_buffer_lines 16"]["wlb_copy_ns"] > base["wlb_copy_ns"] * 1.05


@pytest.mark.parametrize("kw, what", [({"packets": 0}, "packets"), ({"cores": ["big"]}, "cores"),
                                      ({"payloads": [0]}, "payloads")])
def test_bad_input_names_what_is_wrong(kw: dict, what: str) -> None:
    with pytest.raises(ValueError, match=what):
        zb.breakdown(**kw)
