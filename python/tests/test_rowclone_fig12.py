"""RowClone section 7.4's statements about Fig. 12's 4-core workloads
(:func:`movelab.reproduce.rowclone_multicore.fig12_counts` and ``fig12_statements``), on hand-made
mixes: each verdict flips when one mix moves the other way."""

from __future__ import annotations

from movelab.reproduce import ledger
from movelab.reproduce import rowclone_multicore as rm

MODERATE = rm.moderate_apps()


def mix(apps: list[str], base: float, rc: float, zi: float) -> dict:
    return {"mix": {"cores": len(apps), "index": 0, "apps": apps, "highly_intensive": 0},
            "runs": [{"mechanism": "baseline", "weighted_speedup": base},
                     {"mechanism": "rowclone", "weighted_speedup": rc},
                     {"mechanism": "rowclone-zi", "weighted_speedup": zi}]}


def rows(results: list[dict]) -> list[dict]:
    return [{"cores": 4, "mechanism": m, "mixes": len(results), **rm.fig12_counts(results, m, MODERATE)}
            for m in ["rowclone", "rowclone-zi"]]


def verdicts(results: list[dict]) -> dict[str, bool | None]:
    return {r.id: r.within for r in ledger.judge(rm.NAME, rm.fig12_statements(rows(results)))}


GOOD = [mix(["compile", "shell", "mcf", "lbm"], 3.0, 2.9, 3.2),    # slower with compile; ZI best
        mix(["forkbench", "shell", "mcf", "lbm"], 3.0, 3.5, 3.5),  # no zeroed line: ZI = RowClone
        mix(["bootup", "mysql", "gcc", "lbm"], 3.0, 3.1, 3.3)]


def test_the_papers_picture_holds() -> None:
    assert MODERATE == {"compile", "mcached", "mysql"}
    c = rm.fig12_counts(GOOD, "rowclone", MODERATE)
    assert c == {"mixes_below_baseline": 1, "mixes_below_baseline_without_moderate": 0,
                 "mixes_below_rowclone": None}
    assert rm.fig12_counts(GOOD, "rowclone-zi", MODERATE)["mixes_below_rowclone"] == 0
    assert verdicts(GOOD) == {"fig12/rowclone-slower-only-with-moderate": True,
                              "fig12/rowclone-zi-outperforms-both": True}


def test_a_slower_mix_without_a_moderate_application_breaks_the_first() -> None:
    v = verdicts([*GOOD, mix(["bootup", "shell", "mcf", "lbm"], 3.0, 2.95, 3.1)])
    assert v["fig12/rowclone-slower-only-with-moderate"] is False
    assert v["fig12/rowclone-zi-outperforms-both"] is True


def test_no_slower_mix_breaks_the_first() -> None:
    # "degrades performance of certain 4-core workloads": some must be slower.
    v = verdicts([m for m in GOOD if m["mix"]["apps"][0] != "compile"])
    assert v["fig12/rowclone-slower-only-with-moderate"] is False


def test_rowclone_zi_below_either_breaks_the_second() -> None:
    assert verdicts([*GOOD, mix(["bootup", "forkbench", "mcf", "lbm"], 3.0, 3.6, 3.59)])[
        "fig12/rowclone-zi-outperforms-both"] is False
    assert verdicts([*GOOD, mix(["compile", "mysql", "mcf", "lbm"], 3.0, 2.8, 2.99)])[
        "fig12/rowclone-zi-outperforms-both"] is False


def test_rows_without_the_counts_judge_nothing() -> None:
    assert rm.fig12_statements([{"cores": 4, "mechanism": "rowclone", "mixes": 2}]) == []
    assert rm.fig12_statements([{**r, "cores": 2} for r in rows(GOOD)]) == []
