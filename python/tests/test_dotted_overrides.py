"""Overrides in the Python API take the dotted keys of ``--set`` as well as nested tables, in every
system (DRAM, platform, I/O, network) and in the reproductions' own checks; one setting given in two
spellings is refused, naming it."""

from __future__ import annotations

import pytest
from movelab import dram, network, platform
from movelab._util import layered, nested, refuse_keys
from movelab.platform import io

TRACE = {"kind": "random", "count": 2000, "seed": 1}


def test_nested_spells_dotted_keys_as_tables() -> None:
    assert nested({"a.b": 1, "a": {"c": 2}, "d": 3}) == {"a": {"b": 1, "c": 2}, "d": 3}
    assert nested({"a": {"b.c": 1}}) == {"a": {"b": {"c": 1}}}
    assert nested({"x.y.z": [1, {"k.l": 2}]}) == {"x": {"y": {"z": [1, {"k.l": 2}]}}}  # lists are values
    assert nested(None) is None and nested(5) == 5  # left for the caller's type check


@pytest.mark.parametrize("ov, msg", [
    ({"a.b": 1, "a": {"b": 2}}, "a.b is given twice"),
    ({"a": 1, "a.b": 2}, "a.b sets inside a value that is not a table"),
    ({"a..b": 1}, "empty key"),
    ({".a": 1}, "empty key"),
])
def test_nested_refuses_a_setting_given_twice_or_inside_a_value(ov: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        nested(ov)


def test_layered_merges_either_spelling() -> None:
    assert layered({"copy": {"mechanism": "ce"}}, {"copy.mode": "ASYNC"}) == \
        {"copy": {"mechanism": "ce", "mode": "ASYNC"}}
    # the top layer wins in either spelling
    assert layered({"copy.mode": "SYNC_NLB"}, {"copy": {"mode": "ASYNC"}}) == {"copy": {"mode": "ASYNC"}}


def test_dram_overrides_dotted_equal_nested() -> None:
    base = dram.simulate("ddr3-1600k-bench", TRACE).stats["cycles"]
    dotted = dram.simulate("ddr3-1600k-bench", TRACE, overrides={"controller.read_queue": 4}).stats["cycles"]
    tables = dram.simulate("ddr3-1600k-bench", TRACE, overrides={"controller": {"read_queue": 4}}).stats["cycles"]
    assert dotted == tables != base
    assert dram.load_config("ddr3-1600k-bench", {"dram.timing.nRAS": 30}).data["dram"]["timing"]["nRAS"] == 30


def test_dram_refuses_one_setting_in_two_spellings() -> None:
    with pytest.raises(ValueError, match=r"overrides: controller.read_queue is given twice"):
        dram.simulate("ddr3-1600k-bench", TRACE, overrides={"controller.read_queue": 4,
                                                             "controller": {"read_queue": 5}})


def test_dram_unknown_dotted_key_is_named_by_its_last_part() -> None:
    with pytest.raises(ValueError, match=r"controller.nosuch: unknown field `nosuch`"):
        dram.simulate("ddr3-1600k-bench", TRACE, overrides={"controller.nosuch": 1})


def test_platform_overrides_dotted_equal_nested() -> None:
    params = {"packets": 4}
    a = platform.run("zhao-uma-emc", "tcp-rx", overrides={"copy.mechanism": "ce", "copy": {"mode": "ASYNC"}},
                     params=params).stats
    b = platform.run("zhao-uma-emc", "tcp-rx", overrides={"copy": {"mechanism": "ce", "mode": "ASYNC"}},
                     params=params).stats
    c = platform.run("zhao-uma-emc", "tcp-rx", params=params).stats
    assert a["time_ns"] == b["time_ns"] != c["time_ns"]
    # a platform dict takes dotted keys too
    cfg = platform.load_config({"preset": "zhao-uma-emc", "copy.mechanism": "ce"})
    assert cfg["copy"]["mechanism"] == "ce"


def test_io_and_network_take_dotted_keys() -> None:
    assert io.load_config("larsen-82598-gen1", {"link.gen": 2})["link"]["gen"] == 2
    assert network.config("ixp2350", {"host.cpi": 7.0})["host"]["cpi"] == 7.0


def test_a_reproductions_own_keys_are_refused_in_either_spelling() -> None:
    for ov in ({"copy": {"mechanism": "ce"}}, {"copy.mechanism": "ce"}):
        with pytest.raises(ValueError, match=r"copy\.mechanism: zhao sets copy\.mechanism itself"):
            refuse_keys(ov, ["copy.mechanism"], "zhao")
