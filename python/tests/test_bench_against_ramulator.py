"""`bench dram --ramulator`'s plumbing, with a stand-in for Ramulator 2.1's Python front (the real one is
built outside the repository): both simulators get the same trace, the rounds alternate, and the result
carries each one's own statistics and the ratios of the same rounds."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from movelab.dram import against_ramulator as ar

FAKE = '''
import types
print("[Ramulator::LoadStoreTrace] info: a log line before the result")
class _C:
    def __init__(self, **kw):
        self.kw = kw
for _ns, _names in {"dram": ["DDR3", "DDR5"], "controller": ["GenericDDR"], "scheduler": ["FRFCFS"],
                    "refresh_manager": ["AllBank"], "row_policy": ["Open"], "addr_mapper": ["RoBaRaCoCh"],
                    "memory_system": ["GenericDRAM"], "channel_mapper": ["CacheLineInterleave"],
                    "frontend": ["LoadStoreTrace"]}.items():
    globals()[_ns] = types.SimpleNamespace(**{n: _C for n in _names})
class Simulation:
    def __init__(self, frontend, memory_system):
        self.path = frontend.kw["path"]
        self.std = type(memory_system.kw["controllers"][0].kw["dram"]).__name__
    def run(self):
        self.lines = open(self.path).read().splitlines()
    @property
    def stats(self):
        n = len(self.lines)
        return {"memory_system": {"controller": {"cycles": 10 * n, "row_hits": 1, "row_misses": 2,
                "row_conflicts": n - 3, "num_read_reqs": sum(ln.startswith("LD") for ln in self.lines),
                "num_write_reqs": sum(ln.startswith("ST") for ln in self.lines)}}}
'''


def test_both_simulators_run_the_same_trace_in_alternating_rounds(tmp_path: Path, monkeypatch) -> None:
    pkg = tmp_path / "python" / "ramulator"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE)
    monkeypatch.setattr(ar, "check_ramulator", lambda root, python: None)
    n = 3000
    v = ar.run_against_ramulator("ddr3-1600k-bench", n, 2, tmp_path, sys.executable)
    assert v["rounds"] == 2 and v["requests"] == n
    r, m = v["ramulator"], v["movelab"]
    assert r["cycles"] == 10 * n  # the stand-in read every line of the trace it was given
    assert r["row"] == {"hits": 1, "misses": 2, "conflicts": n - 3}
    assert m["row"]["hits"] + m["row"]["misses"] + m["row"]["conflicts"] == n
    assert m["set"]["controller.read_queue"] == 33 and m["set"]["controller.keep_activated_rows"] == "true"
    assert v["cycles_difference"] == pytest.approx(m["cycles"] / r["cycles"] - 1)
    assert v["ratio_wall_min"] <= v["ratio_wall_median"] <= v["ratio_wall_max"]
    assert all(x > 0 for x in (r["wall_s_median"], m["wall_s_median"], m["peak_rss_mib"], v["ratio_cpu_median"]))
    json.dumps(v)  # what bench-dram.json holds
    # The table at 80 columns: both names and every figure whole (it cut them to "simula…", "33,1…").
    import io

    from movelab.dram.cli import _against_ramulator_table
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=80).print(_against_ramulator_table(v))
    text = out.getvalue()
    assert "…" not in text and "Ramulator 2.1" in text and "movelab" in text
    assert f"{r['cycles']:,}" in text and f"{m['cycles']:,}" in text and f"{r['row']['conflicts']:,}" in text


def test_each_simulators_memory_is_its_own_not_the_benchmarks(tmp_path: Path, monkeypatch) -> None:
    """A child's peak memory counts from its exec: the benchmark's own memory at the fork (Linux
    carries it across the exec into getrusage's maxrss) is not the child's."""
    from movelab import _peak

    pkg = tmp_path / "python" / "ramulator"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE)
    monkeypatch.setattr(ar, "check_ramulator", lambda root, python: None)
    ballast = b"\x01" * (256 << 20)  # this process: 256 MiB more, resident
    v = ar.run_against_ramulator("ddr3-1600k-bench", 2000, 1, tmp_path, sys.executable)
    parent_mib = _peak.own_peak_rss_kib() / 1024
    assert parent_mib > 256 and len(ballast) == 256 << 20
    for who in ("ramulator", "movelab"):
        assert 1 < v[who]["peak_rss_mib"] < parent_mib - 200, (who, v[who]["peak_rss_mib"], parent_mib)


def test_a_childs_peak_report_is_read_back() -> None:
    from movelab import _peak

    assert _peak.parse_report(f"noise\n{_peak.MARKER} 1234\nmore") == 1234
    assert _peak.parse_report("nothing here") is None and _peak.parse_report(f"{_peak.MARKER} x") is None
    assert _peak.own_peak_rss_kib() > 1000


def test_the_ddr5_run_takes_ramulators_refresh_clocks() -> None:
    sets = ar.movelab_sets("ddr5-3200an")
    assert "dram.timing.nRFC=472" in sets and "dram.timing.nREFI=6240" in sets
    assert "dram.timing.nRFC=472" not in ar.movelab_sets("ddr3-1600k-bench")


def test_the_ddr5_run_is_a_part_without_refresh_management() -> None:
    """Ramulator 2.1's DDR5 issues no RFM; movelab's preset part requires it (RAAIMT 32), which on
    random traffic owes all-bank RFMs: the matched run switches it off, and then issues none."""
    from movelab import dram
    from movelab._util import parse_set

    sets = ar.movelab_sets("ddr5-3200an")
    assert "controller.rfm=false" in sets and "controller.rfm=false" not in ar.movelab_sets("ddr3-1600k-bench")
    gen = {"kind": "random", "count": 60_000, "read_fraction": 0.8, "seed": 0, "footprint_bytes": 1 << 30}
    matched = parse_set(sets[1::2])
    unmatched = parse_set([s for s in sets[1::2] if not s.startswith("controller.rfm")])
    assert dram.simulate("ddr5-3200an", gen, overrides=unmatched).stats["commands"].get("RFM", 0) > 0
    assert dram.simulate("ddr5-3200an", gen, overrides=matched).stats["commands"].get("RFM", 0) == 0


def test_a_tree_that_is_not_built_is_refused(tmp_path: Path) -> None:
    (tmp_path / "python" / "ramulator").mkdir(parents=True)
    (tmp_path / "python" / "ramulator" / "__init__.py").write_text("")
    with pytest.raises(ValueError, match="is not built"):
        ar.check_ramulator(tmp_path, sys.executable)
