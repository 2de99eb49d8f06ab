"""Bad arguments to the Python API (``movelab.dram``, ``movelab.platform``, the reproductions),
table-driven: each raises the documented exception (``ValueError`` for a bad value, ``TypeError``
for a wrong type, ``FileNotFoundError`` for a missing file) with a message naming the argument
(or the key, the item, the file) and never leaking the positions of JSON the library made itself.
Also: a Python trace is streamed, not joined in memory."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from movelab import dram, platform, sweep
from movelab.reproduce import rowclone_fork as rf
from movelab.reproduce import rowclone_latency as rl
from movelab.reproduce import zhao_copy_engine as zc

CFG = "ddr3-1600k-bench"
GEN = {"kind": "random", "count": 100, "seed": 1}
NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("api")
    p = {"dir": d / "a-dir", "fifo": d / "a-fifo", "empty": d / "empty.log", "missing": d / "missing.trace"}
    p["dir"].mkdir()
    os.mkfifo(p["fifo"])
    p["empty"].write_text("")
    import pyarrow as pa
    import pyarrow.parquet as pq

    p["recording"] = d / "rec.parquet"
    pq.write_table(pa.table({"a": [1]}).replace_schema_metadata({b"movelab.record": b"{}"}), p["recording"])
    p["text"] = d / "spec.toml"
    p["text"].write_text('simulator = "dram"\n')
    return p


# (id, call, exception, message regex). A call takes the fixture's paths.
Call = Callable[[dict[str, Path]], Any]
CASES: list[tuple[str, Call, type[BaseException], str]] = [
    # --- configs and overrides
    ("config wrong type", lambda p: dram.load_config(3), TypeError, "config must be"),
    ("config unknown preset", lambda p: dram.load_config("ddr9"), ValueError, "ddr9"),
    ("config directory", lambda p: dram.load_config(p["dir"]), ValueError, "a-dir.*directory"),
    ("config FIFO", lambda p: dram.load_config(p["fifo"]), ValueError, "a-fifo.*not a regular file"),
    ("config missing", lambda p: dram.load_config("nope.toml"), FileNotFoundError, "nope.toml"),
    # given as strings without .toml: on disk, so read as files, not looked up as "SPEED/PART" names
    ("config directory str", lambda p: dram.load_config(str(p["dir"])), ValueError, "a-dir is a directory"),
    ("config FIFO str", lambda p: dram.load_config(str(p["fifo"])), ValueError, "a-fifo is not a regular file"),
    ("config dict NaN", lambda p: dram.load_config({"preset": CFG, "energy": {"io_pj_per_bit": NAN}}), ValueError,
     r"config\.energy\.io_pj_per_bit: nan"),
    ("config dict non-string key", lambda p: dram.load_config({"preset": CFG, 3: 4}), TypeError,
     "keys must be strings"),
    ("overrides NaN", lambda p: dram.load_config(CFG, {"dram": {"timing": {"nRAS": NAN}}}), ValueError,
     r"overrides\.dram\.timing\.nRAS: nan is not a finite number"),
    ("overrides inf", lambda p: dram.simulate(CFG, GEN, overrides={"energy": {"io_pj_per_bit": -INF}}), ValueError,
     r"overrides\.energy\.io_pj_per_bit"),
    ("overrides beyond 64 bits", lambda p: dram.load_config(CFG, {"dram": {"channels": 1 << 70}}), ValueError,
     r"overrides\.dram\.channels.*64 bits"),
    ("overrides wrong type", lambda p: dram.load_config(CFG, [("a", 1)]), TypeError, "overrides must be a dict"),
    ("overrides not JSON", lambda p: dram.load_config(CFG, {"dram": {"part": object()}}), TypeError,
     r"overrides"),
    ("overrides unknown key", lambda p: dram.load_config(CFG, {"dram": {"timing": {"nXYZ": 3}}}), ValueError,
     r"dram\.timing\.nXYZ"),
    # --- traces
    ("trace wrong type", lambda p: dram.simulate(CFG, 3), TypeError, "trace must be"),
    ("trace bytes", lambda p: dram.simulate(CFG, b"R 0x0\n"), TypeError, "trace must be"),
    ("trace missing", lambda p: dram.simulate(CFG, p["missing"]), FileNotFoundError, "missing.trace"),
    ("trace directory", lambda p: dram.simulate(CFG, p["dir"]), ValueError, "trace: .*a-dir.*directory"),
    ("trace FIFO", lambda p: dram.simulate(CFG, p["fifo"]), ValueError, "trace: .*a-fifo.*not a regular file"),
    ("generator kind typo", lambda p: dram.simulate(CFG, {"kind": "strem", "count": 3}), ValueError, "strem"),
    ("generator NaN", lambda p: dram.simulate(CFG, {**GEN, "read_fraction": NAN}), ValueError,
     r"trace\.read_fraction: nan"),
    ("generator negative count", lambda p: dram.simulate(CFG, {**GEN, "count": -1}), ValueError, "count|-1"),
    ("generator count beyond 64 bits", lambda p: dram.simulate(CFG, {**GEN, "count": 1 << 64}), ValueError, "count"),
    # accepted and run without end before; the CLI's --count had the same bound already
    ("generator count beyond the bound", lambda p: dram.simulate(CFG, {**GEN, "count": 1 << 63}), ValueError,
     r"generator\.count: 9223372036854775808 requests is more than the 1000000000000"),
    ("zhao payloads repeated", lambda p: zc.run(payloads=[512, 512]), ValueError, "repeats a size"),
    ("platform dict's own unknown key", lambda p: platform.run({"preset": "rowclone-system", "nosuch": 1},
                                                               "bulk-zero"), ValueError, r"^platform: nosuch"),
    ("sweep.read of a directory", lambda p: sweep.read(p["dir"]), ValueError, "is a directory"),
    ("sweep.read of a recording", lambda p: sweep.read(p["recording"]), ValueError, "is a recording"),
    ("trace_format with a generator", lambda p: dram.simulate(CFG, GEN, trace_format="ramulator"), ValueError,
     "generator dict is not read in any format"),
    ("mixes negative count", lambda p: __import__("movelab.reproduce.rowclone_multicore").reproduce
     .rowclone_multicore.mixes(n=-1), ValueError, "mixes: -1 must be"),
    ("pair gbps below the NIC's", lambda p: platform.pair(messages=1, gbps=0.001), ValueError,
     r"gbps 0\.001 \(--gbps\) on the sender: .*mac_gbps"),
    ("sweep summary of no table", lambda p: sweep.summary(None), TypeError, "result table"),
    ("sweep summary unknown axis", lambda p: sweep.summary(__import__("pandas").DataFrame({"a": [1]}), ["nosuch"]),
     ValueError, "axes: 'nosuch' is not a column"),
    # a progress that cannot be called failed only once the run had started
    ("pair progress not callable", lambda p: platform.pair(messages=1, progress=5), TypeError,
     "progress must be a callable"),
    ("sweep progress not callable", lambda p: sweep.run({"simulator": "dram", "config": CFG, "workload": GEN,
                                                         "axes": {"workload.seed": [1]}}, progress=5), TypeError,
     "progress must be a callable"),
    ("generator read_fraction 2", lambda p: dram.simulate(CFG, {**GEN, "read_fraction": 2.0}), ValueError,
     "read_fraction"),
    ("item empty", lambda p: dram.simulate(CFG, [()]), ValueError, "trace item 1:"),
    ("item None", lambda p: dram.simulate(CFG, [("R", 0), None]), ValueError, "trace item 2:"),
    ("platform override None", lambda p: platform.run("zhao-uma-emc", "tcp-rx", overrides={"core": {"windo": None}},
                                                       params={"packets": 5}),
     ValueError, "overrides.core.windo: None is not a setting's value"),
    ("dram override of a set", lambda p: dram.simulate(CFG, GEN, overrides={"controller": {"scheduler": {"fcfs"}}}),
     TypeError, "overrides.controller.scheduler: a set is not a setting's value"),
    ("generator fraction negative", lambda p: dram.simulate(CFG, {**GEN, "read_fraction": -1}), ValueError,
     "read_fraction: -1 is negative"),
    ("interconnect far too slow", lambda p: platform.run("zhao-uma-emc", "tcp-rx",
                                                         overrides={"interconnect": {"bandwidth_gbs": 1e-9}},
                                                         params={"packets": 5}),
     ValueError, "interconnect.bandwidth_gbs: 0.000000001: must be between 0.01 and 10000 GB/s"),
    ("copy landing on its source once addresses wrap",
     lambda p: dram.simulate("ddr4-2400r", [("R", 0), ("COPY", 0x4_0000_0000, 0, 4096)]), ValueError,
     "trace item 2: COPY of 4096 bytes from 0x400000000 to 0x0: source and destination overlap once addresses wrap"),
    # The simulator's own checks number the items as the Python side does (from 1).
    ("item zero-byte copy", lambda p: dram.simulate(CFG, [("R", 0), ("COPY", 0, 4096, 0)]), ValueError,
     "trace:2: COPY of zero bytes"),
    ("item unknown op", lambda p: dram.simulate(CFG, [("X", 1)]), ValueError, "trace item 1: unknown operation 'X'"),
    ("item arity", lambda p: dram.simulate(CFG, [("COPY", 0, 64)]), ValueError, "trace item 1: COPY takes 3"),
    ("item negative", lambda p: dram.simulate(CFG, [("R", -64)]), ValueError, "trace item 1: values must be"),
    ("item beyond 64 bits", lambda p: dram.simulate(CFG, [("R", 1 << 64)]), ValueError, "trace item 1"),
    ("item float", lambda p: dram.simulate(CFG, [("R", 1.5)]), ValueError, "trace item 1: arguments must be integers"),
    ("item bool", lambda p: dram.simulate(CFG, [("R", True)]), ValueError, "trace item 1: arguments must be integers"),
    ("item string with newline", lambda p: dram.simulate(CFG, ["R 0x0\nW 0x40"]), ValueError, "trace item 1"),
    ("item bad line", lambda p: dram.simulate(CFG, ["R 0x0", "R zz"]), ValueError, "trace:2"),
    ("item late", lambda p: dram.simulate(CFG, [("R", 64 * i) for i in range(10_000)] + [("Q", 0)]), ValueError,
     "trace item 10001:"),
    # --- other simulate arguments
    ("trace_format", lambda p: dram.simulate(CFG, GEN, trace_format="xml"), ValueError, "trace_format: 'xml'"),
    ("trace_format type", lambda p: dram.simulate(CFG, GEN, trace_format=3), ValueError, "trace_format"),
    ("progress_every 0", lambda p: dram.simulate(CFG, GEN, progress_every=0), ValueError, "progress_every: 0"),
    ("progress_every float", lambda p: dram.simulate(CFG, GEN, progress_every=1.5), ValueError, "progress_every"),
    ("progress not callable", lambda p: dram.simulate(CFG, GEN, progress=5), TypeError, "progress must be"),
    ("command_log directory", lambda p: dram.simulate(CFG, GEN, command_log=p["dir"]), ValueError,
     "command_log: .*directory"),
    ("command_log type", lambda p: dram.simulate(CFG, GEN, command_log=3), TypeError, "command_log must be"),
    # --- check_log, write_trace
    ("check_log missing", lambda p: dram.check_log(p["missing"]), FileNotFoundError, "missing.trace"),
    ("check_log directory", lambda p: dram.check_log(p["dir"]), ValueError, "a-dir.*directory"),
    ("check_log FIFO", lambda p: dram.check_log(p["fifo"]), ValueError, "a-fifo.*not a regular file"),
    ("check_log empty", lambda p: dram.check_log(p["empty"]), ValueError, r"empty\.log: line 1"),
    ("check_log type", lambda p: dram.check_log(None), TypeError, "command log must be a path"),
    ("write_trace fmt", lambda p: dram.write_trace(GEN, p["dir"] / "t", "xml"), ValueError, "fmt: 'xml'"),
    ("write_trace generator NaN", lambda p: dram.write_trace({**GEN, "read_fraction": NAN}, p["dir"] / "t"),
     ValueError, r"generator\.read_fraction"),
    ("write_trace generator type", lambda p: dram.write_trace("random", p["dir"] / "t"), TypeError,
     "generator must be a dict"),
    # --- platform
    ("platform overrides NaN", lambda p: platform.run("rowclone-system", "bulk-zero", {"core": {"width": NAN}}),
     ValueError, r"overrides\.core\.width: nan"),
    ("platform derived key", lambda p: platform.load_config("rowclone-system",
                                                            {"memory": {"controller": {"bulk": "baseline"}}}),
     ValueError, r"memory\.controller\.bulk"),
    ("platform unknown", lambda p: platform.run("no-such", "bulk-zero"), ValueError, "no-such"),
    ("platform params negative", lambda p: platform.run("rowclone-system", "bulk-zero", params={"pages": -1}),
     ValueError, r"params\['pages'\]"),
    ("platform params float", lambda p: platform.run("rowclone-system", "bulk-zero", params={"pages": 1.5}),
     TypeError, r"params\['pages'\]"),
    ("platform params wrong type", lambda p: platform.run("rowclone-system", "bulk-zero", params=[1]), TypeError,
     "params must be"),
    ("platform workload type", lambda p: platform.run("rowclone-system", 3), TypeError, "workload must be"),
    ("platform workload missing", lambda p: platform.run("rowclone-system", "w.toml"), FileNotFoundError, "w.toml"),
    # --- reproductions
    ("rowclone-latency nbytes 0", lambda p: rl.run(nbytes=0), ValueError, "nbytes: 0"),
    ("rowclone-latency nbytes huge", lambda p: rl.run(nbytes=1 << 40), ValueError, "nbytes"),
    ("rowclone-latency nbytes line", lambda p: rl.run(nbytes=100), ValueError, "64-byte line"),
    ("zhao packets 0", lambda p: zc.run(packets=0), ValueError, "packets: 0"),
    ("zhao packets huge", lambda p: zc.run(packets=10**9), ValueError, "packets"),
    ("zhao payloads", lambda p: zc.run(payloads=[0]), ValueError, "payloads"),
    ("zhao overrides type", lambda p: zc.run(overrides=[1]), TypeError, "overrides must be"),
    ("fork sizes huge", lambda p: rf.run(sizes_mb=[1 << 30]), ValueError, "sizes_mb"),
    ("fork pages 0", lambda p: rf.run(n_pages=[0]), ValueError, "n_pages"),
    ("fork pages over the array", lambda p: rf.run(sizes_mb=[1], n_pages=[257]), ValueError, "256 pages of 4 KB"),
    ("fork zero_pages", lambda p: rf.run(zero_pages=-1), ValueError, "zero_pages: -1"),
    ("latency overrides type", lambda p: __import__("movelab.reproduce.rowclone_latency").reproduce
     .rowclone_latency.run(overrides=[1]), TypeError, "overrides must be a dict"),
    ("apps as a string", lambda p: __import__("movelab.reproduce.rowclone_apps").reproduce.rowclone_apps
     .run(apps="shell"), TypeError, "a list of application names"),
    ("sweep out a directory", lambda p: sweep.run({"simulator": "dram", "config": CFG, "workload": GEN,
                                                   "axes": {"workload.seed": [1]}}, out=p["dir"]), ValueError,
     "is a directory; the result table is one Parquet file"),
    ("sweep read not Parquet", lambda p: sweep.read(p["text"]), ValueError, "is not a sweep's result table"),
]

JSON_POSITION = re.compile(r"line \d+ column \d+")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_argument_raises_naming_it(case, paths) -> None:
    _, call, exc, pattern = case
    with pytest.raises(exc) as e:
        call(paths)
    msg = str(e.value)
    assert re.search(pattern, msg), f"{pattern!r} not in {msg!r}"
    assert not JSON_POSITION.search(msg), msg


# ------------------------------------------------------------------------------------------------
# Streaming


def test_a_python_trace_is_streamed_not_joined() -> None:
    consumed = 0
    seen_at_first_progress: list[int] = []

    def items():
        nonlocal consumed
        for i in range(200_000):
            consumed += 1
            yield ("R", (i * 64) % (1 << 26))

    def progress(n: int) -> None:
        if not seen_at_first_progress:
            seen_at_first_progress.append(consumed)

    res = dram.simulate(CFG, items(), progress=progress, progress_every=1000)
    assert res.stats["reads"] == 200_000
    # When the simulator reports its first thousand items, the generator has been read only a
    # few chunks ahead, not to its end.
    assert seen_at_first_progress and seen_at_first_progress[0] <= 1000 + 4 * dram.CHUNK_ITEMS


def test_an_exception_in_the_users_generator_reaches_the_caller() -> None:
    def items():
        yield ("R", 0)
        raise RuntimeError("the user's bug")

    with pytest.raises(RuntimeError, match="the user's bug"):
        dram.simulate(CFG, items())


def test_streamed_and_listed_traces_give_the_same_stats() -> None:
    items = [("R", i * 4096) for i in range(500)] + [("W", 64), ("COPY", 0, 1 << 20, 4096), ("INIT", 8192, 4096, 0)]
    assert dram.simulate("rowclone-ddr3-1066", items).stats == dram.simulate("rowclone-ddr3-1066", iter(items)).stats
    text = "\n".join(["R 0x0", "W 0x40"])
    assert dram.simulate(CFG, text.splitlines()).stats == dram.simulate(CFG, [("R", 0), ("W", 0x40)]).stats
