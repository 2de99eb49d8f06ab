"""RowClone section 7.4 with functional warming: each core's caches start full (as over the paper's
long runs) when ``functional_warming`` is given; off by default; bad values are refused before any
simulation."""

from __future__ import annotations

import pytest
from movelab.reproduce import rowclone_multicore as rm

SHORT = {"cores": [2], "n_mixes": 1, "instructions": 4_000, "warmup": 2_000}


@pytest.mark.parametrize("bad", [-1, True, 1.5, "many", rm.MAX_WARMING + 1])
def test_bad_warming_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="functional_warming"):
        rm.run_mixes(functional_warming=bad, **SHORT)  # type: ignore[arg-type]


def test_warming_changes_the_runs_and_defaults_to_cold() -> None:
    cold = rm.run_mixes(**SHORT)
    assert cold == rm.run_mixes(functional_warming=0, **SHORT)
    warm = rm.run_mixes(functional_warming=2_000_000, **SHORT)
    assert [r["mix"] for r in warm] == [r["mix"] for r in cold]
    # Full caches evict and write back: the baseline's IPCs and alone IPCs move.
    assert warm[0]["alone_ipc"] != cold[0]["alone_ipc"]
    assert warm[0]["runs"][0]["ipc"] != cold[0]["runs"][0]["ipc"]
