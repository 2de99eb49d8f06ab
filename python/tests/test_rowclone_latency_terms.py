"""rowclone-latency's energies are sums of their commands' terms (docs/dram.md, "Table 3 term by
term"): each row moves when, and only when, a term it contains moves. The channel's energy per
bit is in the two baselines only (128 lines for a copy, 64 for a zeroing); a write burst's current
is in the baselines and in every TRANSFER (intra-bank PSM twice); FPM holds neither. Three small
simulations of the paper's system (well under a second each)."""

from __future__ import annotations

from typing import Any

import pytest
from movelab.reproduce import rowclone_latency as rl

LINE_BITS = 512
#: Per rank of the paper's system: eight x8 chips at 1.5 V; a DDR3-1066 burst is 4 clocks of 1.875 ns.
CHIPS, VDD, BURST_NS = 8, 1.5, 7.5


def _energy(overrides: dict[str, Any] | None = None) -> dict[tuple[str, str], float]:
    return {(r["operation"], r["mechanism"]): r["energy_uj"] for r in rl.run(overrides=overrides)}


@pytest.fixture(scope="module")
def base() -> dict[tuple[str, str], float]:
    return _energy()


def test_channel_energy_is_in_the_baselines_only(base: dict[tuple[str, str], float]) -> None:
    more = _energy({"energy": {"io_pj_per_bit": 45}})
    per_pj = {k: (more[k] - base[k]) * 1e6 / 10 for k in base}  # uJ per pJ/bit, as bits
    assert per_pj[("copy", "baseline")] == pytest.approx(128 * LINE_BITS, rel=1e-3)
    assert per_pj[("zero", "baseline")] == pytest.approx(64 * LINE_BITS, rel=1e-3)
    for k in [("copy", "fpm"), ("copy", "psm-inter"), ("copy", "psm-intra"), ("zero", "fpm")]:
        assert per_pj[k] == 0.0, k


def test_write_current_is_in_every_line_written(base: dict[tuple[str, str], float]) -> None:
    more = _energy({"dram": {"currents": {"idd4w": 155}}})  # 145 -> 155 mA
    one_line_nj = CHIPS * VDD * 10 * BURST_NS / 1000  # 0.9 nJ per line written
    moved = {k: (more[k] - base[k]) * 1000 / one_line_nj for k in base}  # lines written
    assert moved[("copy", "baseline")] == pytest.approx(64, abs=0.2)
    assert moved[("zero", "baseline")] == pytest.approx(64, abs=0.2)
    assert moved[("copy", "psm-inter")] == pytest.approx(64, abs=0.2)
    assert moved[("copy", "psm-intra")] == pytest.approx(128, abs=0.2)
    assert moved[("copy", "fpm")] == 0.0 and moved[("zero", "fpm")] == 0.0


def test_same_commands_same_energy(base: dict[tuple[str, str], float]) -> None:
    # FPM copies and FPM zeroing are one sequence (ACT, ACT, PRE); intra-bank PSM is the inter-bank
    # sequence twice (Figure 6's caption). Table 3's own reduction factors give FPM 3.6 / 74.4 and
    # 2.0 / 41.5 = 0.048 uJ for both, which its printed 0.04 and 0.05 round two ways.
    assert base[("copy", "fpm")] == base[("zero", "fpm")]
    assert base[("copy", "psm-intra")] == pytest.approx(2 * base[("copy", "psm-inter")], abs=2e-4)


def test_table3_pricing_gives_table3_back() -> None:
    # The what-if prices (docs/dram.md, "Table 3's prices on the applications") are fitted to five
    # Table 3 energies: run through the controller they must give those five back, and intra-bank
    # PSM, the inter-bank sequence twice, exactly twice inter-bank PSM.
    prices = rl.table3_pricing()
    got = _energy(prices)
    assert got[("copy", "baseline")] == pytest.approx(3.6, rel=1e-3)
    assert got[("zero", "baseline")] == pytest.approx(2.0, rel=1e-3)
    assert got[("copy", "fpm")] == pytest.approx(3.6 / 74.4, abs=1e-4)
    assert got[("zero", "fpm")] == got[("copy", "fpm")]
    assert got[("copy", "psm-inter")] == pytest.approx(3.6 / 3.2, rel=1e-3)
    assert got[("copy", "psm-intra")] == pytest.approx(2 * 3.6 / 3.2, rel=1e-3)
    # Every price stays a physical one: currents above standby, a positive channel share.
    c = prices["dram"]["currents"]
    assert c["idd0"] > 35 and 0 < c["idd2n"] < c["idd0"] and c["idd4r"] > 35 and c["idd4w"] > c["idd4r"]
    assert prices["energy"]["io_pj_per_bit"] > 0


def test_table3_pricing_refuses_a_part_without_currents() -> None:
    with pytest.raises(ValueError, match="no currents"):
        rl.table3_pricing("rowclone-lpddr5-6400")


def test_table3_channel_share_tells_the_transfer_readings_apart() -> None:
    # docs/dram.md, "What Table 3 counts": Table 3 fixes a read line, a written line and a TRANSFER;
    # how much of a line is the channel's depends on what a TRANSFER is. table3_pricing reads it as
    # a read plus a write burst, which puts 69% of the baseline copy on the channel; read as one
    # column access (the mean of the two), the same prices put 39% there, the paper's stated 40%.
    prices = rl.table3_pricing()
    c = prices["dram"]["currents"]
    rank_nj = CHIPS * VDD * BURST_NS / 1000  # nJ per mA of one burst, a rank
    read_burst, write_burst = (c["idd4r"] - 35) * rank_nj, (c["idd4w"] - 35) * rank_nj
    channel = prices["energy"]["io_pj_per_bit"] * LINE_BITS / 1000
    read_line, written_line, transfer = read_burst + channel, write_burst + channel, read_burst + write_burst
    copy_nj, lines = 3600.0, 128
    assert lines * channel / copy_nj == pytest.approx(0.69, abs=0.01)
    # One column access: the read and the written line's DRAM parts add up to two TRANSFERs.
    one_access = (read_line + written_line - 2 * transfer) / 2
    assert lines * one_access / copy_nj == pytest.approx(0.39, abs=0.01)


def test_an_acknowledgement_at_acceptance_is_refused_as_table3s_latency(tmp_path) -> None:
    # A 4 KB zeroing fits the write queue: acknowledged at acceptance it takes 0 ns, and the table
    # divided by it (ZeroDivisionError). From an override or a file, the key is named.
    with pytest.raises(ValueError, match=r"controller\.bulk_write_done: 'accepted'"):
        rl.run(overrides={"controller": {"bulk_write_done": "accepted"}})
    f = tmp_path / "accepted.toml"
    f.write_text('preset = "rowclone-ddr3-1066"\n[controller]\nbulk_write_done = "accepted"\n')
    with pytest.raises(ValueError, match=r"controller\.bulk_write_done"):
        rl.replication(str(f))


def test_a_part_without_currents_has_no_energy_rather_than_none_spent() -> None:
    """On a part without public currents (HBM2) every energy is not available (None), never 0 uJ
    judged against the paper's; the latencies are still judged."""
    from movelab.reproduce import ledger
    from movelab.reproduce import rowclone_latency as rl

    rows = rl.run(config="hbm2-2000")
    assert rows and all(r["energy_uj"] is None for r in rows)
    assert all(r["latency_ns"] > 0 for r in rows)
    judged = ledger.judge(rl.NAME, rl.results(rows))
    assert all(r.within is None for r in judged if r.id.endswith("energy_uj"))
    assert any(r.within is not None for r in judged if r.id.endswith("latency_ns"))
