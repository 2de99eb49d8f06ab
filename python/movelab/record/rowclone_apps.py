"""``movelab bench rowclone-apps``: real programs of the kinds of RowClone's (MICRO 2013) Table 4
recorded on this machine, and the parameters of the copy/initialisation-intensive applications'
program (``presets/workloads/rowclone-apps/copy-init-app.toml``) derived from them, so that section
7.3's Table 5 reductions are predictions of recorded programs instead of fits
(``movelab reproduce rowclone-apps --apps recorded``; docs/rowclone-system.md, "Applications from
recordings").

Each program runs three times:

1. under perf alone (:func:`kernel_pages`, no interposer in its processes): the kernel's page
   events RowClone can take, the copy-on-write copies (``page_cow``) and first-touch zeroings
   (``page_zero``); write faults that reused a page (``page_reuse``) move nothing
   (:func:`movelab.record.kernel.cow_or_reuse`);
2. under ``movelab record`` (:func:`movelab.record.run`, no kernel events): the recorded
   ``memcpy``/``memmove``/``realloc`` calls whose source and destination share their offset in a
   page (the whole pages inside them), ``memset(0)`` and small ``calloc`` calls (the whole pages
   inside them);
3. under Valgrind's cachegrind with the paper's caches (32 KB 8-way L1, 1 MB 16-way last level,
   64-byte lines; Table 2): the program's user-mode instructions and its last-level read and write
   misses (the ordinary memory traffic; the simulator knows nothing of the kernel's zeroing, so a
   program's first writes to a fresh page are write misses there); ``--keep-cachegrind`` keeps
   these figures from an earlier entry instead.

:func:`derive` turns them into the program's per-unit parameters by the rules in its docstring;
nothing in it looks at the paper's results. ``bootup`` cannot be recorded here (it is a full-system
trace of a machine booting) and keeps the fitted set.
"""

from __future__ import annotations

import hashlib
import math
import os
import platform as _platform
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

# the database load `movelab bench record` records: the same SQL here
from movelab.record.bench import _SQL

console = Console()

PAGE = 4096
LINES = PAGE // 64
#: The paper's caches (RowClone Table 2; the L1 is a usual 32 KB 8-way one, as presets/platforms/
#: rowclone-system.toml says): cachegrind's --I1/--D1/--LL.
CACHES = {"I1": "32768,8,64", "D1": "32768,8,64", "LL": "1048576,16,64"}
#: Kernel instructions per page fault (copy-on-write or first touch) the derivation adds to the
#: user-mode instructions cachegrind counts: section 7.2's fault handler (1,500 instructions).
FAULT_INSTRUCTIONS = 1500
#: glibc's default mmap threshold: a calloc this large gets fresh pages from mmap, which the kernel
#: zeroes on first touch (recorded as page_zero): its own bytes are not counted again.
CALLOC_MMAP_THRESHOLD = 128 * 1024
#: The copy-init-app program's defaults the derivation keeps (not measurable from a recording):
#: instructions after each touch of a zeroed line, lines of a copied page written after the copy
#: (the write that faulted), the ordinary data set.
TOUCH_WORK, COPY_TOUCH, DATA_MB = 40, 1, 64
#: Largest per-unit parameter (Rust: rowclone_apps::MAX_APP_PARAM).
MAX_PARAM = 1_000_000
#: The relative rounding error of per-unit counts the unit size aims at.
ROUNDING = 0.02
PORT = 11311
#: A last level large enough to hold whatever one process touches: with it, cachegrind's misses are
#: the process's cold misses alone (:attr:`Program.warm_shared`).
COLD_LL = "67108864,16,64"


@dataclass(frozen=True)
class Program:
    """A real program standing for one of Table 4's applications."""

    app: str
    description: str
    needs: list[str]
    #: bash command with {tmp} (a scratch folder holding the C sources), {forkbench}, {port}, {n}
    #: (the load: :attr:`steady`)
    command: str
    #: executable whose processes are the application ("" for every process of the command)
    focus: str = ""
    #: command printing the program's version
    version: str = ""
    #: --trace-children-skip patterns for cachegrind (a load generator outside the application)
    skip: list[str] = field(default_factory=list)
    #: (short, long) loads for ``{n}`` in ``command``: the program is recorded under both and its
    #: figures are the long run's less the short run's, the steady-state phase alone (start-up and
    #: shut-down, the same in both runs, drop out). (): one run, ``{n}`` unused.
    steady: tuple[int, int] = ()
    #: The same short programs run many times (shell's ``ls``, once per directory): on a machine
    #: their code and the files they read are the same physical lines from one run to the next, but
    #: cachegrind starts every process with empty caches. Such a program is also run under
    #: cachegrind with a last level of :data:`COLD_LL` (every line a process touches misses once,
    #: and only once): ``ll_read_misses_cold``, its cold read misses. The derivation counts the
    #: code misses of every process of an executable but its coldest as hits
    #: (``ll_code_misses_repeated``: the executable's code is the same page-cache lines in each, and
    #: shell's per-process footprint, ~5,200 lines, fits the 1 MB last level's 16,384 three times); the
    #: data misses stay cachegrind's cold ones; ``derive(..., warm=True)`` gives the other bound,
    #: every line the processes read left in the cache by the run before (only the misses the 1 MB
    #: last level adds).
    warm_shared: bool = False


PROGRAMS: dict[str, Program] = {p.app: p for p in [
    Program("compile", "gcc -O2 compiling movelab's three C sources (the recorder's interposer, its calibration "
            "program and forkbench)", ["gcc"],
            "for f in interposer calibrate forkbench; do gcc -O2 -fPIC -c {tmp}/$f.c -o {tmp}/$f.o; done",
            version="gcc --version"),
    Program("forkbench", "section 7.2's forkbench as a C program: a 64 MB buffer filled, fork, the child writes "
            "one word in each of 1,000 random pages; the phase after the fork alone (a run with N = 1,000 less a "
            "run with N = 0: the fill, the fork and the exits drop out)", ["cc"], "{forkbench} 64 {n} 7",
            version="", steady=(0, 1000)),
    Program("mcached", "redis-server on loopback under redis-benchmark inserting key-value pairs: SETs of 1 KiB "
            "values to distinct random keys (-r: a keyspace of 10^9), the steady-state insert phase of 60,000 "
            "SETs (a run of 80,000 less a run of 20,000: the server's start-up drops out); memcached cannot run "
            "under cachegrind: Valgrind refuses its setrlimit of the hard open-files limit",
            ["redis-server", "redis-cli", "redis-benchmark"],
            "redis-server --port {port} --save '' --appendonly no --bind 127.0.0.1 --logfile /dev/null & "
            "for i in $(seq 600); do redis-cli -p {port} ping >/dev/null 2>&1 && break; sleep 0.2; done; "
            "redis-benchmark -p {port} -h 127.0.0.1 -q -n {n} -r 1000000000 -d 1024 -t set >/dev/null; "
            "redis-cli -p {port} shutdown nosave >/dev/null; wait",
            focus="redis-server", version="redis-server --version",
            skip=["*redis-cli*", "*redis-benchmark*", "*sleep*", "*seq*"], steady=(20000, 80000)),
    Program("mysql", "sqlite3 loading a database: 50,000 rows inserted, indexed, queried, updated, vacuumed (a "
            "file database; MySQL is not installed here)", ["sqlite3"],
            "rm -f {tmp}/t.db && sqlite3 {tmp}/t.db \"" + _SQL + "\"", focus="sqlite3", version="sqlite3 --version"),
    Program("shell", "a shell workload: find over /usr/include (one level) running ls -l in each directory "
            "(a fork and exec per directory)", ["find", "ls"],
            "find /usr/include -maxdepth 1 -type d -exec ls -l {{}} ';' > /dev/null",
            version="find --version", warm_shared=True),
]}
#: Table 4's applications this machine cannot record, and why.
NOT_RECORDED = {"bootup": "a full-system trace of a machine booting Debian: a process recorder on a running "
                          "machine cannot see it; the fitted set stays"}


# ------------------------------------------------------------------------------------------------
# What a recording holds


def page_span(dst: Any, size: Any) -> Any:
    """Whole 4 KiB pages inside ``[dst, dst + size)`` (arrays)."""
    import numpy as np

    d = np.asarray(dst, dtype=np.uint64)
    n = np.asarray(size, dtype=np.uint64)
    first = (d + np.uint64(PAGE - 1)) // np.uint64(PAGE)
    last = (d + n) // np.uint64(PAGE)
    return np.where(last > first, last - first, 0).astype(np.int64)


def movement(df: Any, pages: dict[str, int] | None = None) -> dict[str, int]:
    """The page-granular copies and zeroings of a recording (its rows of one application), and the
    bytes of the other copies and zeroings (RowClone cannot take them; their traffic is ordinary).
    ``pages``: the kernel's page events (:func:`kernel_pages`, a run without the interposer) instead
    of the recording's own kernel rows."""
    import numpy as np

    k = df[df["source"] == "kernel"]
    u = df[(df["source"] == "interposer")]
    one = u[u["size"].notna() & u["dst"].notna()]
    size = one["size"].to_numpy(dtype=np.int64)
    dst = one["dst"].to_numpy(dtype=np.uint64)
    n_pages = page_span(dst, size)
    kind = one["kind"].to_numpy(dtype=object)
    src = one["src"].fillna(0).to_numpy(dtype=np.uint64)
    same_offset = (src % np.uint64(PAGE)) == (dst % np.uint64(PAGE))
    is_copy = np.isin(kind, ["memcpy", "memmove", "realloc"]) & one["src"].notna().to_numpy()
    value = one["value"].fillna(-1).to_numpy(dtype=np.int64)
    is_zero = ((kind == "memset") & (value == 0)) | ((kind == "calloc") & (size < CALLOC_MMAP_THRESHOLD))
    copy_pages = np.where(is_copy & same_offset, n_pages, 0)
    zero_pages = np.where(is_zero, n_pages, 0)
    copy_bytes = int(u.loc[u["kind"].isin(["memcpy", "memmove", "realloc"]), "bytes"].fillna(0).sum())
    zero_bytes = int(u.loc[(u["kind"] == "memset") & (u["value"].fillna(-1) == 0), "bytes"].fillna(0).sum())
    if pages is None:
        pages = {kk: int((k["kind"] == kk).sum()) for kk in KERNEL_PAGE_KINDS}
    return {
        **{kk: int(pages.get(kk, 0)) for kk in KERNEL_PAGE_KINDS},
        **({"syscall_bytes": int(pages["syscall_bytes"])} if "syscall_bytes" in pages else {}),
        "user_copy_pages": int(copy_pages.sum()),
        "user_zero_pages": int(zero_pages.sum()),
        "user_copy_bytes": copy_bytes,
        "user_zero_bytes": zero_bytes,
        "user_copy_bytes_not_page_granular": max(0, copy_bytes - PAGE * int(copy_pages.sum())),
        "calls": int(u["count"].fillna(0).sum()),
    }


#: The kernel's page events a recording counts: copy-on-write copies, first-touch zeroings, and the
#: write faults on a present page that copied nothing (the page was the process's alone: Linux
#: reused it; ``movelab.record.kernel.cow_or_reuse``).
KERNEL_PAGE_KINDS = ("page_cow", "page_zero", "page_reuse")


def kernel_pages(cmd: str, data: Path, focus: str) -> dict[str, int]:
    """The page events of ``bash -c cmd`` from perf alone: no interposer in the processes, so the
    recorder's own buffers and their copy-on-write in forked children (a few pages per process,
    most of a short process's page events) are not counted as the program's. ``focus``: only the
    processes running that executable ("" for all). Also ``syscall_bytes``: the bytes the kernel
    copied between user and kernel buffers for the processes' read/write/send/recv calls (not page
    operations; ordinary traffic cachegrind does not see: :func:`derive`'s ``kernel_copies``)."""
    from movelab.record import kernel

    perf = shutil.which("perf")
    ok, why = kernel.status()
    if perf is None or not ok:
        raise RuntimeError(f"perf cannot record the kernel's page events here: {why}")
    events = [*kernel.FAULTS, *kernel.LIFECYCLE, *[f"syscalls:sys_exit_{c}" for c in kernel.SYSCALLS]]
    # -d: the data mappings too (an anonymous page's first write after a read zeroes, a private file
    # page's copies: movelab.record.kernel.cow_or_reuse)
    rec = subprocess.run([perf, "record", "-q", "-d", "-k", "CLOCK_MONOTONIC", "-o", str(data), "-e", ",".join(events),
                          "--", "bash", "-c", cmd], capture_output=True, text=True, timeout=1800)
    if rec.returncode != 0:
        raise RuntimeError(f"perf record of the page events failed (status {rec.returncode}): "
                           f"{rec.stderr.strip()[-400:]}")
    script = subprocess.run([perf, "script", "--ns", "--show-mmap-events", "-i", str(data), "-F",
                             "pid,tid,time,event,trace"],
                            capture_output=True, text=True, timeout=1800)
    faults, sums, _, _ = kernel.parse_lines(script.stdout.splitlines())
    if focus:
        path = shutil.which(focus)
        names = {focus, path or focus, os.path.realpath(path) if path else focus}
        faults = faults[faults["exe"].isin(names) | faults["exe"].map(lambda e: Path(e).name == focus)]
        sums = sums[sums["pid"].isin(set(faults["pid"]))]
    return {**{k: int((faults["kind"] == k).sum()) for k in KERNEL_PAGE_KINDS},
            "syscall_bytes": int(sums["bytes"].sum())}


# ------------------------------------------------------------------------------------------------
# Cachegrind

_SUMMARY = re.compile(r"^summary:\s+(.*)$", re.M)
_EVENTS = re.compile(r"^events:\s+(.*)$", re.M)
_CMD = re.compile(r"^cmd:\s+(.*)$", re.M)
_PARENT = re.compile(r"Parent PID: (\d+)")
_COMMAND = re.compile(r"Command: (.*)")


def read_cachegrind(folder: Path) -> list[dict[str, Any]]:
    """The processes of a cachegrind run with ``--trace-children=yes`` (files ``cg.PID`` and logs
    ``vg.PID``): pid, parent pid, command and counters. A child forked without an exec inherits its
    parent's counters (cachegrind copies them at the fork): its own are its counters less its
    parent's (exact when the parent does little after the fork, as forkbench's waits), at least 0."""
    procs = {}
    for f in sorted(folder.glob("cg.*")):
        pid = int(f.name.split(".")[1])
        text = f.read_text(errors="replace")
        ev, su, cmd = _EVENTS.search(text), _SUMMARY.search(text), _CMD.search(text)
        if not ev or not su:
            raise ValueError(f"{f}: not a cachegrind output file (no events/summary line)")
        names, vals = ev.group(1).split(), [int(v) for v in su.group(1).split()]
        log = folder / f"vg.{pid}"
        ltext = log.read_text(errors="replace") if log.is_file() else ""
        pm = _PARENT.search(ltext)
        procs[pid] = {"pid": pid, "ppid": int(pm.group(1)) if pm else 0, "cmd": cmd.group(1).strip() if cmd else "",
                      "counts": dict(zip(names, vals, strict=False))}
    for p in procs.values():
        parent = procs.get(p["ppid"])
        p["forked"] = bool(parent and parent["cmd"] == p["cmd"])
    out = []
    for p in procs.values():
        own = dict(p["counts"])
        if p["forked"]:
            pc = procs[p["ppid"]]["counts"]
            own = {k: max(0, v - pc.get(k, 0)) for k, v in own.items()}
        out.append({**p, "own": own})
    return out


def cachegrind_counts(procs: list[dict[str, Any]], focus: str) -> dict[str, int]:
    """User-mode instructions and last-level read (data and instruction) and write misses of the
    processes running ``focus`` (all of them when it is ""), and ``ll_code_misses_repeated``: the
    last-level instruction misses of every process of an executable but the one with the most (its
    first, coldest run): the code lines an earlier process of the same executable had fetched."""
    sel = [p for p in procs if not focus or Path(p["cmd"].split()[0]).name == focus] if procs else []
    tot = {"instructions": 0, "ll_read_misses": 0, "ll_write_misses": 0, "processes": len(sel)}
    code: dict[str, list[int]] = {}
    for p in sel:
        c = p["own"]
        tot["instructions"] += c.get("Ir", 0)
        tot["ll_read_misses"] += c.get("DLmr", 0) + c.get("ILmr", 0)
        tot["ll_write_misses"] += c.get("DLmw", 0)
        code.setdefault(p["cmd"].split()[0] if p["cmd"] else "", []).append(c.get("ILmr", 0))
    tot["ll_code_misses_repeated"] = sum(sum(v) - max(v) for v in code.values())
    return tot


# ------------------------------------------------------------------------------------------------
# The derivation


def _unit_scale(copies: int, zeros: int) -> float:
    """Events per unit: the smallest unit holding ``k`` (1 to 16) of either page event whose per-unit
    counts, rounded, are each within ``ROUNDING`` of their recorded value; the best of them
    otherwise. An event under ``ROUNDING`` of the page events (copies + zeroings) need only round
    within ``ROUNDING`` of the unit's page events: it may round to none, instead of making a unit of
    thousands of the other (3 copies beside 21,000 zeroings, as one of mcached's recordings had)."""
    events = [v for v in (copies, zeros) if v > 0]
    total = sum(events)
    best = (math.inf, 1.0)
    for s in sorted({k / b for b in events for k in range(1, 17)}):
        err = max(abs(round(v * s) - v * s) / ((v if v >= ROUNDING * total else total) * s) for v in events)
        if err <= ROUNDING:
            return s
        best = min(best, (err, s))
    return best[1]


def derive(m: dict[str, int], cg: dict[str, int], warm: bool = False,
           kernel_copies: bool = False) -> tuple[dict[str, int], dict[str, Any]]:
    """The copy-init-app parameters of one recorded program: (params, the derivation's
    intermediate figures). ``m``: :func:`movement`'s figures; ``cg``: :func:`cachegrind_counts`'.

    Rules (docs/rowclone-system.md, "Applications from recordings"):

    * page copies ``C`` = copy-on-write faults + whole pages of same-offset user copies; page
      zeroings ``Z`` = first-touch zeroings + whole pages of user zeroings;
    * instructions ``I`` = cachegrind's user-mode instructions + 1,500 per fault (section 7.2),
      the write faults that reused a page (``page_reuse``, no copy) included;
    * ``kernel_copies`` (a bound, not the committed sets): the kernel's system-call copies
      (``syscall_bytes``, :func:`kernel_pages`) all miss: a read and a write miss per 64 bytes
      added to the ordinary ones (cachegrind sees only user mode);
    * ordinary read misses = cachegrind's last-level read misses less a warm_shared program's
      repeated code misses (``ll_code_misses_repeated``, :attr:`Program.warm_shared`; ``warm``: less
      all its cold read misses instead, the bound) less the
      page-granular user copies' own source reads (64 a page); its write misses less the user copies' and zeroings'
      destination writes (64 a page) are first charged to the zeroed pages' phase-2 touches (up to
      all 64 lines of each: ``dirty``; a fresh page's first writes miss in cachegrind, which does not
      know that the kernel's zeroing left it cached), the rest are ordinary write misses;
    * a unit holds ``k`` of one page event (:func:`_unit_scale`); every figure is scaled to it
      and rounded; ``fault`` = 1,500 x the copy-on-write share of the copies; the unit's remaining
      instructions spread evenly before the ordinary misses (``gap``), the rest is ``work``.
    """
    copies = m["page_cow"] + m["user_copy_pages"]
    zeros = m["page_zero"] + m["user_zero_pages"]
    if copies + zeros == 0:
        raise ValueError("the recording holds no page-granular copy or zeroing: nothing for RowClone to take")
    # every fault runs the handler, a reused page's too (it moves nothing)
    instructions = cg["instructions"] + FAULT_INSTRUCTIONS * (m["page_cow"] + m["page_zero"] + m.get("page_reuse", 0))
    # warm: a warm_shared program's cold read misses (``ll_read_misses_cold``) are lines an earlier
    # run of the same programs left in the cache; only the misses the 1 MB last level adds count.
    # Otherwise a warm_shared program's repeated code misses (``ll_code_misses_repeated``, recorded
    # for those programs alone) are hits: the same executable's code is the same page-cache lines
    # from one process to the next, left in the shared last level by the run before.
    cold = cg.get("ll_read_misses_cold", 0) if warm else cg.get("ll_code_misses_repeated", 0)
    extra = m.get("syscall_bytes", 0) // 64 if kernel_copies else 0
    reads = max(0, cg["ll_read_misses"] - cold - LINES * m["user_copy_pages"]) + extra
    writes_all = max(0, cg["ll_write_misses"] - LINES * (m["user_copy_pages"] + m["user_zero_pages"]))
    dirty = min(LINES, round(writes_all / zeros)) if zeros else 0
    writes = max(0, writes_all - dirty * zeros) + extra
    s = _unit_scale(copies, zeros)
    c_u, z_u = round(copies * s), round(zeros * s)
    fault = round(FAULT_INSTRUCTIONS * m["page_cow"] / copies) if copies else 0
    misses_u, writes_u = round(reads * s), round(writes * s)
    unit = round(instructions * s)
    touch_work = TOUCH_WORK
    # The unit's instructions besides its compute: one per load, store, copy and zeroing; the
    # copies' fault handlers; the phase-2 touches (a load, a store and touch_work each).
    fixed = misses_u + writes_u + c_u * (1 + COPY_TOUCH + fault) + z_u * (1 + 2 * dirty)
    if z_u * dirty and unit - fixed < z_u * dirty * touch_work:
        touch_work = max(0, (unit - fixed) // (z_u * dirty))
    budget = max(0, unit - fixed - z_u * dirty * touch_work)
    gap = min(MAX_PARAM, budget // (misses_u + 1))
    work = min(MAX_PARAM, budget - gap * misses_u)
    params = {"work": work, "misses": misses_u, "gap": gap, "writes": writes_u, "fill_lines": 0, "copies": c_u,
              "fault": fault, "copy_touch": COPY_TOUCH, "zeros": z_u, "dirty": dirty, "clean": 0,
              "touch_work": touch_work, "data_mb": DATA_MB}
    for k, v in params.items():
        if not 0 <= v <= MAX_PARAM:
            raise ValueError(f"derived {k} = {v} is outside 0 to {MAX_PARAM:,} (the program's per-unit bound)")
    lost = budget - gap * misses_u - work
    info = {"page_copies": copies, "page_zeroings": zeros, "instructions": instructions,
            "ordinary_read_misses": reads, "ordinary_write_misses": writes, "phase2_write_misses": dirty * zeros,
            "events_per_unit_scale": s, "unit_instructions": unit, "unit_instructions_modelled":
            fixed + z_u * dirty * touch_work + gap * misses_u + work, "instructions_cut_by_bound": max(0, lost),
            "copy_init_page_events_per_kilo_instruction": 1000 * (copies + zeros) / instructions
            if instructions else 0.0}
    return params, info


# ------------------------------------------------------------------------------------------------
# Recording


def _version(cmd: str) -> str:
    if not cmd:
        return ""
    try:
        out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (out.stdout.strip().splitlines() or [""])[0]


def _source_digest(prog: Program) -> str:
    """forkbench's version: its source's digest."""
    if prog.app != "forkbench":
        return ""
    src = resources.files("movelab.record").joinpath("forkbench.c").read_bytes()
    return f"forkbench.c sha256 {hashlib.sha256(src).hexdigest()[:16]}"


def _scratch(tmp: Path) -> dict[str, str]:
    """The scratch folder's files: the C sources, the built forkbench."""
    from movelab.record import _build

    for name in ("interposer.c", "calibrate.c", "forkbench.c"):
        (tmp / name).write_bytes(_build.source_text(name))
    fb = _build._built("forkbench.c", "movelab_forkbench", _build.PROGRAM_CFLAGS, [], "forkbench")
    return {"tmp": str(tmp), "forkbench": str(fb), "port": str(PORT)}


#: cachegrind's figures in a ``measured`` table (kept by ``--keep-cachegrind``).
CACHEGRIND_KEYS = ("instructions", "ll_read_misses", "ll_write_misses", "processes", "ll_read_misses_cold",
                   "ll_code_misses_repeated")


def _record_once(prog: Program, cmd: str, tmp: Path, trace: Path,
                 cachegrind: bool = True) -> tuple[dict[str, int], dict[str, int], dict]:
    """One run of ``cmd`` under the recorder (the user-space calls), one under perf alone (the
    kernel's page events: :func:`kernel_pages`) and, with ``cachegrind``, one under cachegrind:
    (:func:`movement`'s figures, :func:`cachegrind_counts`' or {}, the recording's metadata)."""
    from movelab import record
    from movelab.record.bench import _focus

    df = record.run(["bash", "-c", cmd], trace, min_bytes=PAGE, force=True, timeout_s=900, kernel_events=False)
    meta = df.attrs["movelab"]
    if meta.get("exit_status") != 0:
        raise RuntimeError(f"{prog.app}: the recorded command exited with status {meta.get('exit_status')}")
    pages = kernel_pages(cmd, tmp / f"{trace.stem}.perf", prog.focus)
    m = movement(_focus(df, prog.focus), pages)
    if not cachegrind:
        return m, {}, meta
    cg = _cachegrind(prog, cmd, tmp / f"cg-{trace.stem}", CACHES)
    if not prog.warm_shared:  # one process of each executable, or code too large to stay in the cache
        cg.pop("ll_code_misses_repeated")
    else:
        cold = _cachegrind(prog, cmd, tmp / f"cg-cold-{trace.stem}", {**CACHES, "LL": COLD_LL})
        cg["ll_read_misses_cold"] = cold["ll_read_misses"]
    return m, cg, meta


def _cachegrind(prog: Program, cmd: str, cgdir: Path, caches: dict[str, str]) -> dict[str, int]:
    """``cmd`` under cachegrind with ``caches``: :func:`cachegrind_counts`' figures."""
    cgdir.mkdir()
    skip = [f"--trace-children-skip={','.join(prog.skip)}"] if prog.skip else []
    vg = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", "--trace-children=yes", *skip,
          *[f"--{k}={v}" for k, v in caches.items()],
          f"--cachegrind-out-file={cgdir}/cg.%p", f"--log-file={cgdir}/vg.%p", "bash", "-c", cmd]
    proc = subprocess.run(vg, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"cachegrind run of {prog.app} failed (status {proc.returncode}): "
                           f"{proc.stderr.strip()[-400:]}")
    cg = cachegrind_counts(read_cachegrind(cgdir), prog.focus)
    if cg["processes"] == 0:
        raise RuntimeError(f"cachegrind saw no process running {prog.focus or 'the command'}")
    return cg


def steady_state(long: dict[str, int], short: dict[str, int]) -> dict[str, int]:
    """The figures of the phase a long run holds beyond a short one: each count's difference (at
    least 0); ``processes`` is the long run's."""
    return {k: v if k == "processes" else max(0, v - short.get(k, 0)) for k, v in long.items()}


def record_app(prog: Program, traces: Path | None, kept: dict[str, Any] | None = None) -> dict[str, Any]:
    """Records ``prog`` (the recorder, perf alone, then cachegrind), under its short and long loads
    when it has them (:attr:`Program.steady`: the figures are their difference), and derives its
    parameters. ``kept``: an earlier entry of the same program whose cachegrind figures (user-mode
    instructions and misses, which the kernel's page events do not change) are kept instead of
    running cachegrind again (``cachegrind_recorded_at`` says when they were measured)."""
    with tempfile.TemporaryDirectory(prefix="movelab-rc-apps-") as tmp:
        fmt = _scratch(Path(tmp))
        loads = list(prog.steady) or [0]
        runs = []
        for n in loads:
            cmd = prog.command.format(**fmt, n=n)
            name = f"{prog.app}-{n}" if prog.steady else prog.app
            trace = (traces / f"{name}.parquet") if traces else Path(tmp) / f"{name}.parquet"
            runs.append(_record_once(prog, cmd, Path(tmp), trace, cachegrind=kept is None))
    m, cg, meta = runs[-1]
    if prog.steady:
        (ms, cgs, _), (ml, cgl, _) = runs
        m, cg = steady_state(ml, ms), steady_state(cgl, cgs)
    if kept is not None:
        cg = {k: int(kept["measured"][k]) for k in CACHEGRIND_KEYS if k in kept["measured"]}
    params, info = derive(m, cg)
    mach = meta.get("machine", {})
    return {"name": prog.app, "program": prog.description, "command": prog.command, "focus": prog.focus or "(all)",
            "version": _version(prog.version) or _source_digest(prog),
            "recorded_at": meta.get("recorded_at", ""),
            "machine": f"{mach.get('model', '')}, {mach.get('cpus', 0)} CPUs, Linux {_platform.release()}"
                       + (" (virtual machine)" if mach.get("hypervisor") else ""),
            "tools": f"{_version('valgrind --version')} cachegrind; perf tracepoints",
            "program_s": round(sum(r[2].get("program_ns", 0) for r in runs) / 1e9, 3),
            **({"cachegrind_recorded_at": kept.get("cachegrind_recorded_at", kept.get("recorded_at", ""))}
               if kept is not None else {}),
            "params": params, "measured": {**m, **cg}, "derived": info}


# ------------------------------------------------------------------------------------------------
# The data file


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(round(v, 6))
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def _inline(d: dict[str, Any]) -> str:
    return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in d.items()) + " }"


HEADER = """# RowClone (Seshadri et al., MICRO 2013) section 7.3's copy/initialisation-intensive applications,
# from recordings of real programs of the same kinds on this machine: the parameters of
# copy-init-app.toml derived from each recording by movelab.record.rowclone_apps.derive (rules in
# docs/rowclone-system.md, "Applications from recordings"). Nothing here was chosen to match the
# paper: the Table 5 reductions `movelab reproduce rowclone-apps --apps recorded` computes from these
# are predictions (presets/ledger.toml, [rowclone-apps-recorded]).
# Written by: movelab bench rowclone-apps --out presets/workloads/rowclone-apps/recorded.toml --force
# (do not edit by hand; re-run it). `measured` holds the recordings' figures, `derived` the
# derivation's intermediate ones. Applications not recorded keep the fitted set of apps.toml.
"""


def to_toml(apps: list[dict[str, Any]]) -> str:
    out = [HEADER]
    for a in apps:
        out.append("[[app]]")
        for k in ("name", "program", "command", "focus", "version", "recorded_at", "machine", "tools", "program_s",
                  "cachegrind_recorded_at"):
            if k in a:
                out.append(f"{k} = {_toml_value(a[k])}")
        out.append(f"params = {_inline(a['params'])}")
        out.append(f"measured = {_inline(a['measured'])}")
        out.append(f"derived = {_inline(a['derived'])}")
        out.append("")
    for name, why in NOT_RECORDED.items():
        out += ["[[not_recorded]]", f"name = {_toml_value(name)}", f"why = {_toml_value(why)}", ""]
    return "\n".join(out)


def bench_rowclone_apps(
    out: Path = typer.Option(Path("presets/workloads/rowclone-apps/recorded.toml"), "--out",
                             help="The derived parameters (TOML)."),
    apps: list[str] | None = typer.Option(None, "--app", help=f"Only these ({', '.join(PROGRAMS)})."),
    traces: Path | None = typer.Option(None, "--traces", help="Also keep the recordings (Parquet) here.",
                                       show_default=False),
    force: bool = typer.Option(False, "--force", help="Overwrite --out if it exists (with --app, the other "
                               "applications' entries in it are kept)."),
    keep_cachegrind: bool = typer.Option(False, "--keep-cachegrind", help="Keep each application's cachegrind "
                                         "figures from --out (same command and version) instead of running "
                                         "cachegrind again; the page events are recorded afresh."),
) -> None:
    """Record real programs of RowClone's Table 4 kinds (compile, forkbench, mcached, mysql, shell)
    and derive the applications' parameters from them (writes --out)."""
    names = apps or list(PROGRAMS)
    for n in names:
        if n not in PROGRAMS:
            raise typer.BadParameter(f"unknown application {n!r} (recordable: {', '.join(PROGRAMS)})",
                                     param_hint="--app")
    if out.exists() and not force:
        raise typer.BadParameter(f"{out} exists; pass --force to overwrite it", param_hint="--out")
    import tomllib

    before: dict[str, Any] = {}
    if keep_cachegrind:
        try:
            before = {a.get("name"): a for a in tomllib.loads(out.read_text()).get("app", [])} if out.exists() else {}
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise typer.BadParameter(f"{out} cannot be read as the derived sets' TOML: {e}",
                                     param_hint="--keep-cachegrind") from e
        for n in names:
            e = before.get(n)
            if e is None or e.get("command") != PROGRAMS[n].command:
                raise typer.BadParameter(f"{out} has no entry of {n} with its present command: nothing to keep",
                                         param_hint="--keep-cachegrind")
    elif shutil.which("valgrind") is None:
        raise typer.BadParameter("valgrind is not installed (Debian: valgrind; make bench-record-deps)")
    if traces:
        traces.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in names:
        prog = PROGRAMS[n]
        missing = [p for p in prog.needs if shutil.which(p) is None]
        if missing:
            console.print(f"{n}: skipped, {', '.join(missing)} not installed (make bench-record-deps)")
            continue
        console.print(f"{n}: recording {prog.description} ...", highlight=False)
        kept = before.get(n) if keep_cachegrind else None
        if kept is not None and kept.get("version") != (_version(prog.version) or _source_digest(prog)):
            raise typer.BadParameter(f"{n}: the program's version changed since its cachegrind figures were "
                                     f"measured ({kept.get('version')!r}); run without --keep-cachegrind",
                                     param_hint="--keep-cachegrind")
        rows.append(record_app(prog, traces, kept))
        r = rows[-1]
        console.print(f"  {r['measured']['instructions']:,} instructions, {r['derived']['page_copies']:,} page "
                      f"copies, {r['derived']['page_zeroings']:,} page zeroings; params {r['params']}",
                      highlight=False)
    if apps and out.exists():
        # Only some applications re-recorded: the others' entries of --out stay as they were.
        mine = {r["name"] for r in rows}
        kept = [a for a in tomllib.loads(out.read_text()).get("app", []) if a.get("name") not in mine]
        rows = sorted(kept + rows, key=lambda a: list(PROGRAMS).index(a["name"]) if a["name"] in PROGRAMS else 99)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(to_toml(rows))
    os.replace(tmp, out)
    console.print(f"written: {out}", markup=False)
