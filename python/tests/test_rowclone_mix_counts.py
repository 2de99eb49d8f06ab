"""RowClone section 7.4's mix counts and confidence intervals: the default (``--full``) is the paper's
counts (138, 50, 40), ``--sample`` a sample in their proportions, and every Table 7 cell carries the
95% confidence interval of its mean over the mixes, checked here against the per-mix values."""

from __future__ import annotations

import math
import statistics

import pytest
from movelab.cli import app
from movelab.reproduce import rowclone_multicore as rm
from movelab.reproduce.cli import _mix_counts
from typer.testing import CliRunner


def test_counts_are_the_papers_or_a_sample_in_their_proportions() -> None:
    assert rm.PAPER_MIXES == {2: 138, 4: 50, 8: 40}
    # The paper's counts, and the sample's on 6 cores (which the paper did not run).
    assert _mix_counts(None, None) == _mix_counts(None, True) == rm.FULL_MIXES == {**rm.PAPER_MIXES, 6: 12}
    assert _mix_counts(None, False) == rm.SAMPLE_MIXES
    assert _mix_counts(5, None) == 5
    # The sample is whole rounds of the six copy/initialisation-intensive applications (each dealt
    # to every copy slot once a round), within a round of the paper's proportions, at no more
    # simulated cost (a mix: about its cores squared) than the earlier 24, 9, 7.
    share = rm.SAMPLE_MIXES[2] / rm.PAPER_MIXES[2]
    for c, n in rm.PAPER_MIXES.items():
        assert rm.SAMPLE_MIXES[c] % 6 == 0, c
        assert abs(rm.SAMPLE_MIXES[c] - n * share) < 6, c
    cost = sum(c * c * rm.SAMPLE_MIXES[c] for c in rm.PAPER_MIXES)
    assert cost <= 4 * 24 + 16 * 9 + 64 * 7


def test_the_sample_holds_the_applications_in_the_populations_proportions() -> None:
    # Four and eight cores: every copy/initialisation-intensive application fills every copy slot
    # equally often, so half the copy slots are highly copy-intensive (three of Table 6's six).
    for c in (4, 8):
        ms = rm.mixes(7, [c], rm.SAMPLE_MIXES[c])
        for slot in range(c // 2):
            counts: dict[str, int] = {}
            for m in ms:
                counts[m["apps"][slot]] = counts.get(m["apps"][slot], 0) + 1
            assert len(counts) == 6 and len(set(counts.values())) == 1, (c, slot, counts)
        assert sum(m["highly_intensive"] for m in ms) == len(ms) * c // 4


def test_a_mapping_draws_that_many_mixes_per_size_and_the_same_mixes() -> None:
    ms = rm.mixes(7, [2, 4], {2: 3, 4: 2})
    assert [m["cores"] for m in ms] == [2, 2, 2, 4, 4]
    assert ms[:3] == rm.mixes(7, [2], 3)  # a mix does not depend on how many are drawn
    with pytest.raises(ValueError, match="no mix count for \\[6\\] cores"):
        rm.run_mixes(cores=[6], n_mixes=rm.PAPER_MIXES)
    with pytest.raises(ValueError, match="mixes"):
        rm.run_mixes(cores=[2], n_mixes={2: 0})


def test_full_or_sample_and_mixes_together_are_refused() -> None:
    for flag in ("--full", "--sample"):
        r = CliRunner().invoke(app, ["reproduce", "rowclone-multicore", flag, "--mixes", "3"])
        assert r.exit_code == 2 and flag in r.output, flag


@pytest.mark.parametrize(("args", "want"), [([], rm.FULL_MIXES), (["--full"], rm.FULL_MIXES),
                                            (["--sample"], rm.SAMPLE_MIXES), (["--mixes", "3"], 3)])
def test_the_command_runs_the_papers_counts_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch,
                                                                  args: list[str], want: object) -> None:
    from movelab.reproduce import cli as rcli

    seen = []
    monkeypatch.setattr(rcli, "_rowclone_multicore", lambda *a, **k: seen.append(a[3]))
    r = CliRunner().invoke(app, ["reproduce", "rowclone-multicore", *args])
    assert r.exit_code == 0, r.output
    assert seen == [want]


def test_six_cores_run_by_default() -> None:
    # The paper ran no 6-core mixes: the default gives 6 cores the sample's count rather than an error.
    results = rm.run_mixes(cores=[6], n_mixes=rm.FULL_MIXES, instructions=2000, warmup=1000)
    assert len(results) == rm.SAMPLE_MIXES[6]


# Student's t, two-sided 95%, from a statistics table.
T975 = {1: 12.706, 2: 4.303, 3: 3.182}


def test_each_cell_carries_the_confidence_interval_of_its_mixes() -> None:
    results = rm.run_mixes(cores=[2], n_mixes=4, instructions=4000, warmup=2000)
    rows = rm.rows_of(results)
    for row in rows:
        per_mix = []
        for r in results:
            runs = {x["mechanism"]: x for x in r["runs"]}
            b, m = runs["baseline"], runs[row["mechanism"]]
            per_mix.append({
                "weighted_speedup_improvement": m["weighted_speedup"] / b["weighted_speedup"] - 1,
                "instruction_throughput_improvement": m["instruction_throughput"] / b["instruction_throughput"] - 1,
                "max_slowdown_reduction": 1 - m["max_slowdown"] / b["max_slowdown"],
                "bandwidth_per_instruction_reduction": 1 - m["bytes_per_instruction"] / b["bytes_per_instruction"],
            })
        for k in per_mix[0]:
            xs = [p[k] for p in per_mix]
            assert row[k] == pytest.approx(statistics.fmean(xs), abs=1e-4)
            half = T975[len(xs) - 1] * statistics.stdev(xs) / math.sqrt(len(xs))
            assert row[f"{k}_ci95"] == pytest.approx(half, abs=2e-4), k
            assert row[f"{k}_ci95"] >= 0


def test_two_core_mixes_are_the_papers_pairs() -> None:
    # Section 7.4's 138 two-core workloads are as many as the pairs of Table 6's six
    # copy/initialisation-intensive and 23 memory-intensive applications: --full runs each pair once.
    ms = rm.mixes(7, [2], rm.PAPER_MIXES[2])
    pairs = {tuple(m["apps"]) for m in ms}
    assert len(pairs) == 138
    assert len({a for a, _ in pairs}) == 6 and len({b for _, b in pairs}) == 23
    # The sample (--sample) is balanced: each copy-intensive application equally often, half the
    # mixes with a highly copy-intensive one (Fig. 13's two groups).
    sample = ms[: rm.SAMPLE_MIXES[2]]
    counts = {a: sum(m["apps"][0] == a for m in sample) for a, _ in pairs}
    assert set(counts.values()) == {4}
    assert sum(m["highly_intensive"] for m in sample) == 12
    with pytest.raises(ValueError, match="139 two-core mixes"):
        rm.run_mixes(cores=[2], n_mixes=139)


def _row(cores: int, mech: str, groups: list[tuple[int, int, float]]) -> dict:
    return {"cores": cores, "mechanism": mech, "by_highly_intensive": [list(g) for g in groups]}


def test_fig13s_trend_is_judged_per_core_count_on_rowclone_zi() -> None:
    from movelab.reproduce import ledger

    rows = [
        _row(2, "rowclone", [(0, 3, 0.5), (1, 3, 0.1)]),  # not RowClone-ZI: not judged
        _row(2, "rowclone-zi", [(0, 3, 0.08), (1, 3, 0.24)]),
        _row(4, "rowclone-zi", [(0, 2, 0.12), (1, 4, 0.30), (2, 2, 0.29)]),  # falls at the last group
        _row(8, "rowclone-zi", [(2, 3, 0.35)]),  # one group drawn: nothing to judge
        _row(6, "rowclone-zi", [(0, 0, 0.9), (1, 2, 0.1), (2, 2, 0.2)]),  # an empty group is not a group
    ]
    got = {r.id: r.holds for r in rm.fig13_trend(rows)}
    assert got == {"fig13/2/improvement-grows-with-intensity": True,
                   "fig13/4/improvement-grows-with-intensity": False,
                   "fig13/6/improvement-grows-with-intensity": True}
    judged = ledger.judge(rm.NAME, rm.fig13_trend(rows))
    assert {(r.basis, r.rule) for r in judged} == {(ledger.PREDICTED, "the statement holds")}
    assert [r.within for r in judged] == [True, False, True]
