"""RowClone section 7.3's applications from recordings (``movelab bench rowclone-apps``,
:mod:`movelab.record.rowclone_apps`; ``movelab reproduce rowclone-apps --apps recorded``,
:mod:`movelab.reproduce.rowclone_apps_recorded`): the derivation against hand-worked figures and
its invariants, cachegrind's fork accounting, the page-granular movement of a recording, the
committed data (each set re-derived from its own measured figures), and the reproduction's labels."""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from movelab import data
from movelab.cli import app
from movelab.record import rowclone_apps as rc
from movelab.reproduce import ledger
from movelab.reproduce import rowclone_apps_recorded as rr
from typer.testing import CliRunner

runner = CliRunner()


def _m(cow: int = 0, zero: int = 0, ucopy: int = 0, uzero: int = 0) -> dict[str, int]:
    return {"page_cow": cow, "page_zero": zero, "user_copy_pages": ucopy, "user_zero_pages": uzero}


def _cg(ir: int, reads: int, writes: int) -> dict[str, int]:
    return {"instructions": ir, "ll_read_misses": reads, "ll_write_misses": writes}


def test_derive_by_hand() -> None:
    # 10 copy-on-write faults, 40 first-touch zeroings: a unit holds 1 copy and 4 zeroings.
    p, info = rc.derive(_m(cow=10, zero=40), _cg(1_000_000, 500, 40 * 64 + 100))
    assert (p["copies"], p["zeros"]) == (1, 4)
    assert p["dirty"] == 64                       # 2,660 write misses over 40 pages: capped at a page
    assert (p["misses"], p["writes"]) == (50, 10)  # 500 and 2,660 - 2,560 over 10 units
    assert p["fault"] == 1500
    assert info["instructions"] == 1_000_000 + 1500 * 50
    assert info["unit_instructions"] == 107_500
    fixed = 50 + 10 + 1 * (1 + 1 + 1500) + 4 * (1 + 2 * 64)
    budget = 107_500 - fixed - 4 * 64 * 40
    assert p["gap"] == budget // 51
    assert p["work"] == budget - p["gap"] * 50
    assert info["unit_instructions_modelled"] == 107_500


def test_derive_user_copies_and_zeroings() -> None:
    # User page copies are no faults (no handler) and their own misses are not ordinary traffic.
    p, info = rc.derive(_m(ucopy=4, zero=4), _cg(400_000, 4 * 64 + 40, 4 * 64 + 4 * 16 + 8))
    assert (p["copies"], p["zeros"], p["fault"]) == (1, 1, 0)
    assert info["ordinary_read_misses"] == 40
    assert p["dirty"] == 18                       # (64 + 8) write misses a zeroed page, rounded
    assert info["ordinary_write_misses"] == 0     # 72 - 18 x 4 = 0


def test_derive_warm_bound_counts_only_the_misses_the_last_level_adds() -> None:
    # A program of short processes run many times: its cold read misses (cachegrind with a last level
    # holding everything) were left in the cache by the run before; 500 - 380 remain ordinary.
    cg = {**_cg(1_000_000, 500, 40 * 64), "ll_read_misses_cold": 380}
    _, info = rc.derive(_m(cow=10, zero=40), cg, warm=True)
    assert info["ordinary_read_misses"] == 120
    # the derivation itself keeps cachegrind's cold processes
    _, cold = rc.derive(_m(cow=10, zero=40), cg)
    assert cold["ordinary_read_misses"] == 500


def test_unit_rounds_a_very_rare_event_away_but_keeps_a_rare_one() -> None:
    # 3 copies beside 21,121 zeroings: a unit of one zeroing and no copy (not 7,040 zeroings)
    s = rc._unit_scale(3, 21121)
    assert (round(3 * s), round(21121 * s)) == (0, 1)
    # 6% copies: each count within 2% of its own recorded value (16.4 zeroings a copy)
    s = rc._unit_scale(1005, 16441)
    assert (round(1005 * s), round(16441 * s)) == (2, 33)
    assert rc._unit_scale(10, 40) == 0.1


def test_kernel_copies_bound_adds_a_read_and_a_write_miss_per_line_copied() -> None:
    m = {**_m(cow=10, zero=40), "syscall_bytes": 64 * 1000}
    cg = _cg(1_000_000, 500, 40 * 64 + 100)
    p0, i0 = rc.derive(m, cg)
    p1, i1 = rc.derive(m, cg, kernel_copies=True)
    assert i1["ordinary_read_misses"] - i0["ordinary_read_misses"] == 1000
    assert i1["ordinary_write_misses"] - i0["ordinary_write_misses"] == 1000
    assert p1["dirty"] == p0["dirty"] and p1["zeros"] == p0["zeros"]
    assert (p1["misses"], p1["writes"]) == (p0["misses"] + 100, p0["writes"] + 100)


def test_steady_state_is_the_long_runs_excess() -> None:
    long = {"page_zero": 900, "page_cow": 10, "instructions": 5000, "processes": 1}
    short = {"page_zero": 300, "page_cow": 12, "instructions": 2000, "processes": 1}
    assert rc.steady_state(long, short) == {"page_zero": 600, "page_cow": 0, "instructions": 3000, "processes": 1}


def test_programs_loads_and_warm_shared_are_consistent() -> None:
    for prog in rc.PROGRAMS.values():
        # a steady-state program puts its load in the command; the others have none
        assert ("{n}" in prog.command) == bool(prog.steady), prog.app
        if prog.steady:
            assert len(prog.steady) == 2 and 0 <= prog.steady[0] < prog.steady[1], prog.app
    # Table 4's memcached inserts many pairs: distinct keys (-r), not one key overwritten
    assert "-r " in rc.PROGRAMS["mcached"].command
    assert rc.PROGRAMS["shell"].warm_shared and not rc.PROGRAMS["compile"].warm_shared


def test_forkbench_window_is_the_phase_after_the_fork() -> None:
    # Table 5's forkbench row is the same with and without zero insertion: its window holds the
    # copy-on-write copies after the fork, not the fill's first-touch zeroings. The recording is
    # N = 1,000 less N = 0 (same buffer, same seed): the fill, the fork and the exits drop out.
    prog = rc.PROGRAMS["forkbench"]
    assert prog.steady == (0, 1000)
    short, long = (prog.command.format(forkbench="fb", n=n) for n in prog.steady)
    assert short == "fb 64 0 7" and long == "fb 64 1000 7"
    fill = {"page_zero": 16437, "page_cow": 21, "page_reuse": 9, "instructions": 125_000_000, "processes": 2}
    after = {**fill, "page_cow": 21 + 967, "instructions": 125_025_000}
    m = rc.steady_state(after, fill)
    assert m["page_zero"] == 0 and m["page_cow"] == 967 and m["instructions"] == 25_000


def test_committed_forkbench_set_has_no_zeroings() -> None:
    sets = {a["name"]: a for a in tomllib.loads(data.file_text(rr.DATA))["app"]}
    fb = sets["forkbench"]
    assert fb["derived"]["page_zeroings"] == 0 and fb["params"]["zeros"] == 0
    assert fb["derived"]["page_copies"] > 900


def test_derive_refuses_a_recording_without_page_movement() -> None:
    with pytest.raises(ValueError, match="no page-granular copy or zeroing"):
        rc.derive(_m(), _cg(1000, 10, 10))


@settings(max_examples=200, deadline=None)
@given(cow=st.integers(0, 5000), zero=st.integers(0, 50000), uc=st.integers(0, 500), uz=st.integers(0, 500),
       ir=st.integers(10**6, 10**10), r=st.integers(0, 10**7), w=st.integers(0, 10**7))
def test_derive_invariants(cow: int, zero: int, uc: int, uz: int, ir: int, r: int, w: int) -> None:
    m = _m(cow, zero, uc, uz)
    if cow + zero + uc + uz == 0:
        return
    try:
        p, info = rc.derive(m, _cg(ir, r, w))
    except ValueError as e:
        assert "outside 0 to" in str(e)  # a unit the program cannot hold: said, never clipped silently
        return
    assert all(0 <= v <= rc.MAX_PARAM for v in p.values())
    assert 0 <= p["dirty"] <= 64
    c, z = cow + uc, zero + uz
    # the copy : zeroing ratio kept within the rounding the unit size aims at (when both occur)
    if c and z and p["copies"] and p["zeros"]:
        s = info["events_per_unit_scale"]
        assert abs(p["copies"] / (c * s) - 1) <= 0.5 and abs(p["zeros"] / (z * s) - 1) <= 0.5
    # every instruction of the unit is modelled, unless a bound cut it (then said)
    assert info["unit_instructions_modelled"] + info["instructions_cut_by_bound"] >= info["unit_instructions"]
    if info["instructions_cut_by_bound"] == 0 and info["unit_instructions_modelled"] > info["unit_instructions"]:
        # more than the unit only when its other operations alone exceed it: no compute left
        assert p["work"] == 0 and p["gap"] == 0


def test_page_span() -> None:
    got = rc.page_span(np.array([0, 1, 4096, 4000, 8192], dtype=np.uint64),
                       np.array([4096, 8192, 12288, 100, 4095], dtype=np.uint64))
    assert got.tolist() == [1, 1, 3, 0, 0]


def test_movement_counts_whole_same_offset_pages() -> None:
    rows = [
        # source, kind, size, src, dst, value
        ("interposer", "memcpy", 8192, 0x10000, 0x20000, None),       # 2 pages, same offset
        ("interposer", "memcpy", 8192, 0x10010, 0x20000, None),       # offsets differ: none
        ("interposer", "memmove", 12288, 0x30100, 0x40100, None),     # 2 whole pages inside
        ("interposer", "memset", 4096, None, 0x50000, 0),              # 1 page zeroed
        ("interposer", "memset", 4096, None, 0x60000, 7),              # not zero
        ("interposer", "calloc", 1 << 20, None, 0x70000, 0),           # mmap'd: the kernel's zeroing
        ("interposer", "calloc", 8192, None, 0x80000, 0),              # 2 pages zeroed
        ("kernel", "page_cow", 4096, 0x1000, 0x2000, None),
        ("kernel", "page_zero", 4096, None, 0x3000, None),
        ("kernel", "page_zero", 4096, None, 0x4000, None),
    ]
    df = pd.DataFrame(rows, columns=["source", "kind", "size", "src", "dst", "value"])
    df["count"] = 1
    df["bytes"] = df["size"]
    for c, t in [("size", "Int64"), ("src", "UInt64"), ("dst", "UInt64"), ("value", "Int64")]:
        df[c] = df[c].astype(t)
    m = rc.movement(df)
    assert (m["page_cow"], m["page_zero"]) == (1, 2)
    assert (m["user_copy_pages"], m["user_zero_pages"]) == (4, 3)


def test_movement_takes_page_events_from_a_run_without_the_interposer() -> None:
    df = pd.DataFrame([("kernel", "page_cow", 4096, 0x1000, 0x2000, None)],
                      columns=["source", "kind", "size", "src", "dst", "value"])
    df["count"] = 1
    df["bytes"] = df["size"]
    m = rc.movement(df, {"page_cow": 5, "page_zero": 7, "page_reuse": 3})
    assert (m["page_cow"], m["page_zero"], m["page_reuse"]) == (5, 7, 3)


def _fault(pid: int, t: int, addr: int, code: int, tid: int | None = None) -> str:
    return (f" {pid}/{tid or pid}  100.{t:09d}:  exceptions:page_fault_user: address={addr:#x} ip=0x1 "
            f"error_code={code:#x}")


def test_cow_fault_copies_only_a_shared_page() -> None:
    from movelab.record import kernel

    W, WP = 0x6, 0x7  # write to a missing page, write to a present one (user mode)
    lines = [
        " 9/9  100.000000001:  sched:sched_process_exec: filename=/usr/bin/fb pid=9 old_pid=9",
        _fault(9, 2, 0x1000, W), _fault(9, 3, 0x2000, W), _fault(9, 4, 0x3000, W),   # 3 first touches
        _fault(9, 5, 0x1000, WP),                                                   # alone: reused
        " 9/9  100.000000010:  sched:sched_process_fork: comm=fb pid=9 child_comm=fb child_pid=10",
        " 9/9  100.000000011:  sched:sched_process_fork: comm=fb pid=9 child_comm=fb child_pid=12",  # a thread
        _fault(9, 12, 0x4000, W, tid=12),
        _fault(10, 20, 0x1000, WP),     # the child writes a shared page: a copy
        _fault(9, 21, 0x1000, WP),      # the parent then writes it: the child has its own, reused
        _fault(9, 22, 0x2000, WP),      # shared with the child still: a copy
        _fault(10, 23, 0x5000, WP),     # a present page nobody wrote (a file page): a copy
        " 10/10  100.000000030:  sched:sched_process_exec: filename=/usr/bin/ls pid=10 old_pid=10",
        _fault(9, 31, 0x3000, WP),      # the child exec'd: the parent's alone, reused
        _fault(10, 32, 0x1000, W),      # the new image's first touch
    ]
    faults = kernel.parse_lines(lines)[0]
    assert faults["kind"].tolist() == ["page_zero", "page_zero", "page_zero", "page_reuse", "page_zero",
                                       "page_cow", "page_reuse", "page_cow", "page_cow", "page_reuse", "page_zero"]
    assert faults["exe"].tolist()[-1] == "/usr/bin/ls" and set(faults["exe"][:-1]) == {"/usr/bin/fb"}
    assert kernel.moved_bytes("page_reuse") == 0
    # a child that ended gives its pages back: the parent's next write is a reuse
    ended = [*lines[:5],
             " 9/9  100.000000010:  sched:sched_process_fork: comm=fb pid=9 child_comm=fb child_pid=10",
             " 10/10  100.000000015:  sched:sched_process_exit: comm=fb pid=10 prio=120",
             _fault(9, 20, 0x2000, WP)]
    assert kernel.parse_lines(ended)[0]["kind"].tolist()[-1] == "page_reuse"


def test_first_write_after_a_read_zeroes_an_anonymous_page_and_copies_a_file_page() -> None:
    from movelab.record import kernel

    R, WP = 0x4, 0x7  # a read of a missing page, a write to a present one (user mode)
    lines = [
        " 9/9  100.000000001:  sched:sched_process_exec: filename=/usr/bin/x pid=9 old_pid=9",
        "9/9 100.000000002: PERF_RECORD_MMAP2 9/9: [0x10000(0x4000) @ 0 00:00 0 0]: rw-p //anon",
        "9/9 100.000000003: PERF_RECORD_MMAP2 9/9: [0x20000(0x4000) @ 0x1000 fe:00 247003 0]: rw-p /usr/lib/x.so",
        _fault(9, 4, 0x10000, R), _fault(9, 5, 0x10000, WP),   # the zero page, then a zeroed page
        _fault(9, 6, 0x20000, R), _fault(9, 7, 0x20000, WP),   # a private file page: copied
        _fault(9, 8, 0x30000, WP),                             # no mapping recorded: a copy
    ]
    faults = kernel.parse_lines(lines)[0]
    assert faults["kind"].tolist() == ["page_zero_map", "page_zero", "page_zero_map", "page_cow", "page_cow"]


def test_first_write_to_a_missing_private_file_page_copies_and_a_shared_one_does_not() -> None:
    """A write fault on a missing page the page cache serves: a private file mapping's (a library's
    data, relocated by the dynamic linker) gets a copy of the page cache's page (do_cow_fault), a
    shared mapping's is written in place, present or not."""
    from movelab.record import kernel

    W, WP = 0x6, 0x7  # a write to a missing page, a write to a present one (user mode)
    served = " 9/9  100.{t:09d}:  filemap:mm_filemap_fault: dev 254:0 ino 3c6d9 pgoff 0x1 ofs=4096"
    lines = [
        " 9/9  100.000000001:  sched:sched_process_exec: filename=/usr/bin/x pid=9 old_pid=9",
        "9/9 100.000000002: PERF_RECORD_MMAP2 9/9: [0x20000(0x4000) @ 0x1000 fe:00 247003 0]: rw-p /usr/lib/x.so",
        "9/9 100.000000003: PERF_RECORD_MMAP2 9/9: [0x40000(0x4000) @ 0 fe:00 247004 0]: rw-s /tmp/shared.db",
        _fault(9, 4, 0x20000, W), served.format(t=5),     # private: the page cache's page copied
        _fault(9, 6, 0x40000, W), served.format(t=7),     # shared: written in place
        _fault(9, 8, 0x41000, WP),                        # shared and present: in place as well
        _fault(9, 9, 0x21000, 0x4), served.format(t=10),  # a read the page cache served: nothing moved
        " 9/9  100.000000011:  sched:sched_process_fork: comm=x pid=9 child_comm=x child_pid=10",
        _fault(10, 12, 0x20000, WP),                      # the private copy is shared with the child: copied
        _fault(10, 13, 0x40000, WP),                      # the shared mapping stays shared: in place
    ]
    faults = kernel.parse_lines(lines)[0]
    assert faults["kind"].tolist() == ["page_cow", "page_file", "page_file", "page_file", "page_cow", "page_file"]
    assert [kernel.moved_bytes(k) for k in faults["kind"]] == [4096, 0, 0, 0, 4096, 0]
    # without a mapping record a served write fault counts as the common case, a private mapping's copy
    assert kernel.parse_lines([_fault(9, 4, 0x20000, W), served.format(t=5)])[0]["kind"].tolist() == ["page_cow"]


def _cg_file(d, pid: int, ppid: int, cmd: str, ir: int, dlmw: int) -> None:
    (d / f"cg.{pid}").write_text(f"desc: LL cache: 1048576 B\ncmd: {cmd}\n"
                                 f"events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nfl=x\n"
                                 f"summary: {ir} 0 1 0 0 2 0 0 {dlmw}\n")
    (d / f"vg.{pid}").write_text(f"==1== Command: {cmd}\n==1== Parent PID: {ppid}\n")


def test_cachegrind_fork_child_counts_its_own(tmp_path) -> None:
    _cg_file(tmp_path, 10, 1, "./fb 64 1000", 1000, 500)
    _cg_file(tmp_path, 11, 10, "./fb 64 1000", 1300, 520)       # forked: inherited 1000 / 500
    _cg_file(tmp_path, 12, 10, "/usr/bin/ls -l", 50, 5)        # exec'd: its own from zero
    procs = {p["pid"]: p for p in rc.read_cachegrind(tmp_path)}
    assert procs[11]["forked"] and not procs[12]["forked"] and not procs[10]["forked"]
    assert procs[11]["own"]["Ir"] == 300 and procs[11]["own"]["DLmw"] == 20
    tot = rc.cachegrind_counts(list(procs.values()), "")  # the forked child inherited all 3 read misses
    assert tot == {"instructions": 1350, "ll_read_misses": 6, "ll_write_misses": 525, "processes": 3,
                   "ll_code_misses_repeated": 0}
    assert rc.cachegrind_counts(list(procs.values()), "ls")["instructions"] == 50


def test_cachegrind_refuses_a_foreign_file(tmp_path) -> None:
    (tmp_path / "cg.5").write_text("hello\n")
    with pytest.raises(ValueError, match="not a cachegrind output file"):
        rc.read_cachegrind(tmp_path)


def _committed() -> dict:
    return tomllib.loads(data.file_text(rr.DATA))


def test_committed_sets_are_their_recordings_derivation() -> None:
    """Each committed set is what the derivation gives from the figures recorded beside it (no
    value edited by hand), sets every parameter of the program, and says where it came from."""
    d = _committed()
    assert d["app"], "no recorded application"
    prog = tomllib.loads(data.file_text("workloads/rowclone-apps/copy-init-app.toml"))["params"]
    for a in d["app"]:
        params, info = rc.derive(a["measured"], a["measured"])
        assert params == a["params"], a["name"]
        assert info["unit_instructions_modelled"] == a["derived"]["unit_instructions_modelled"]
        assert set(prog) - {"units", "seed_salt"} == set(a["params"]), a["name"]
        assert a["command"] == rc.PROGRAMS[a["name"]].command, f"{a['name']}: recorded with another command"
        for k in ("program", "command", "recorded_at", "machine", "tools"):
            assert a[k], (a["name"], k)
    assert {a["name"] for a in d["app"]} | {n["name"] for n in d.get("not_recorded", [])} == set(rr.ra.APPS)


def test_recorded_lengths_hold_whole_units() -> None:
    e = {"derived": {"unit_instructions_modelled": 200_000}}
    assert rr._lengths(e, 100_000, 50_000) == (rr.UNITS * 200_000, rr.WARMUP_UNITS * 200_000)
    small = {"derived": {"unit_instructions_modelled": 7_000}}
    assert rr._lengths(small, 100_000, 50_000) == (15 * 7_000, 8 * 7_000)  # the fewest whole units covering them
    assert rr._lengths(None, 100_000, 50_000) == (100_000, 50_000)


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    r = runner.invoke(app, ["reproduce", "--workers", "1", "rowclone-apps", "--apps", "recorded", "--format",
                            "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_recorded_rows_are_predictions(rows: list[dict]) -> None:
    rec = set(rr.recorded()["app"])
    assert {r["app"] for r in rows} == set(rr.ra.APPS)
    for r in rows:
        assert r["apps_from"] == ("recorded" if r["app"] in rec else "fitted")
        if r["mechanism"] == "baseline":
            continue
        want = "predicted" if r["app"] in rec else "calibrated"
        assert r["basis_bandwidth_reduction"] == want, r
        assert r["basis_energy_reduction"] == "predicted", r
    res = ledger.judge(rr.NAME, rr.results(rows))
    assert all(r.basis == ledger.PREDICTED for r in res if r.id.startswith(("fig10", "fig11"))), res
    _ok, text = rr.check(rows)
    pred = [r for r in res if r.basis == ledger.PREDICTED]
    assert text.startswith(f"{sum(bool(r.within) for r in pred)} of {len(pred)} predictions"), text


def test_recorded_rows_differ_from_the_fitted_ones(rows: list[dict]) -> None:
    """The recorded parameters reach the runs (a recorded application is not its fitted twin)."""
    from movelab.reproduce import rowclone_apps as ra

    fitted = {(r["app"], r["mechanism"]): r for r in ra.run(None, ["forkbench"], 10_000, 5_000)}
    mine = {(r["app"], r["mechanism"]): r for r in rows if r["app"] == "forkbench"}
    assert mine[("forkbench", "baseline")]["bytes_per_instruction"] != \
        fitted[("forkbench", "baseline")]["bytes_per_instruction"]


def test_cli_refuses_app_params_and_unknown_sets() -> None:
    r = runner.invoke(app, ["reproduce", "rowclone-apps", "--apps", "recorded", "--app-param", "copies=0"])
    assert r.exit_code != 0 and "--app-param" in r.output
    r = runner.invoke(app, ["reproduce", "rowclone-apps", "--apps", "measured"])
    assert r.exit_code != 0 and "fitted, recorded" in r.output


def test_bench_refuses_an_unknown_app_and_an_existing_file(tmp_path) -> None:
    r = runner.invoke(app, ["bench", "rowclone-apps", "--app", "bootup", "--out", str(tmp_path / "x.toml")])
    assert r.exit_code != 0 and "recordable" in r.output
    f = tmp_path / "y.toml"
    f.write_text("keep")
    r = runner.invoke(app, ["bench", "rowclone-apps", "--out", str(f)])
    assert r.exit_code != 0 and "--force" in r.output and f.read_text() == "keep"
    # --keep-cachegrind needs an entry of the application in --out to keep
    r = runner.invoke(app, ["bench", "rowclone-apps", "--out", str(f), "--force", "--keep-cachegrind"])
    assert r.exit_code != 0 and "cannot" in r.output and f.read_text() == "keep"
    g = tmp_path / "z.toml"
    g.write_text('[[app]]\nname = "shell"\ncommand = "an older command"\n')
    r = runner.invoke(app, ["bench", "rowclone-apps", "--app", "shell", "--out", str(g), "--force",
                            "--keep-cachegrind"])
    assert r.exit_code != 0 and "nothing" in r.output


def test_its_own_command_is_apps_recorded(monkeypatch) -> None:
    """``movelab reproduce rowclone-apps-recorded`` (the name the report gives) runs what
    ``rowclone-apps --apps recorded`` runs, with the same options."""
    from movelab.reproduce import cli as rcli

    calls = []
    monkeypatch.setattr(rcli, "_rowclone_apps_recorded", lambda *a, **k: calls.append((a, k)))
    for args in (["rowclone-apps-recorded"], ["rowclone-apps", "--apps", "recorded"]):
        r = runner.invoke(app, ["reproduce", *args, "--instructions", "2000", "--warmup", "100", "--format", "json"])
        assert r.exit_code == 0, r.output
    assert len(calls) == 2 and calls[0] == calls[1]
    assert calls[0][0][2:4] == (2000, 100)


def test_repeated_code_misses_are_every_process_of_an_executable_but_its_coldest(tmp_path) -> None:
    """Three ls processes (an executable's code: the same page-cache lines each time) and one find:
    the ls ones but the coldest are repeated code misses, and the derivation of a warm_shared
    program counts them as hits; its data misses stay."""
    def cg(pid: int, cmd: str, ilmr: int, dlmr: int) -> None:
        (tmp_path / f"cg.{pid}").write_text(f"desc: LL cache: 1048576 B\ncmd: {cmd}\n"
                                            f"events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw\nfl=x\n"
                                            f"summary: 1000 0 {ilmr} 0 0 {dlmr} 0 0 7\n")
        (tmp_path / f"vg.{pid}").write_text(f"==1== Command: {cmd}\n==1== Parent PID: 1\n")
    cg(20, "find /usr/include", 50, 30)
    cg(21, "/usr/bin/ls -l a", 300, 40)
    cg(22, "/usr/bin/ls -l b", 120, 45)
    cg(23, "/usr/bin/ls -l c", 100, 41)
    tot = rc.cachegrind_counts(rc.read_cachegrind(tmp_path), "")
    assert tot["ll_read_misses"] == 50 + 30 + 300 + 40 + 120 + 45 + 100 + 41
    assert tot["ll_code_misses_repeated"] == 120 + 100
    m = _m(cow=10, zero=40)
    _, warm_code = rc.derive(m, tot)
    _, cold = rc.derive(m, {k: v for k, v in tot.items() if k != "ll_code_misses_repeated"})
    assert cold["ordinary_read_misses"] - warm_code["ordinary_read_misses"] == 220
