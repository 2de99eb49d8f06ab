"""Kernel-side data movement of a recorded program, from Linux tracepoints through ``perf``:

* page faults (``exceptions:page_fault_user``, and ``exceptions:page_fault_kernel`` on user
  addresses, e.g. a ``read`` into a page not touched yet), classified by the x86 error code and by
  whether the page cache served them (``filemap:mm_filemap_fault`` on the same thread right after):
  a write to a present page is a copy-on-write (``page_cow``, a 4 KiB copy) unless no other process
  maps the page, where Linux makes it writable in place (``page_reuse``, nothing moved: see
  :func:`cow_or_reuse`, which follows the processes' forks, execs and exits,
  ``sched:sched_process_fork``/``_exec``/``_exit``); a write to a missing anonymous page is
  first-touch zeroing (``page_zero``, 4 KiB); a read of a missing anonymous page maps the shared zero
  page (``page_zero_map``, nothing moved); a write to a missing page of a private file mapping
  copies the page cache's page into one of the process's own (``page_cow``: mm/memory.c,
  ``do_cow_fault``); any other file-backed fault, and any write fault in a shared file mapping, maps
  or writes the page cache's page (``page_file``, nothing moved, or a read from storage);
* context switches of the recorded threads (``sched:sched_switch``), to mark the calls during which
  their thread was switched out (their time includes other work);
* the bytes the kernel copied for ``read``/``write``/``pread64``/``pwrite64``/``readv``/``writev``/
  ``recvfrom``/``sendto``/``recvmsg``/``sendmsg`` (their return values), summed per process and call;
* where each single-buffer one of them (``read``, ``pread64``, ``recvfrom``: the kernel writes the
  user buffer; ``write``, ``pwrite64``, ``sendto``: it reads it) copied: the buffer's address from
  the ``sys_enter`` tracepoint, the bytes from the ``sys_exit`` one, one row per call. These are the
  kernel's touches of the program's lines (``user_buf_written``, ``user_buf_read``): the cache-state
  tracking counts them as touches, as it counts the recorded calls' (a page ``pread`` into a buffer
  and then copied out of it finds the buffer in the cache).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pandas as pd

PAGE = 4096
FAULTS = ["exceptions:page_fault_user", "exceptions:page_fault_kernel", "filemap:mm_filemap_fault"]
SYSCALLS = {"read": "read", "write": "write", "pread64": "pread", "pwrite64": "pwrite", "readv": "readv",
            "writev": "writev", "recvfrom": "recv", "sendto": "send", "recvmsg": "recvmsg", "sendmsg": "sendmsg"}
#: A thread switched out (preempted or blocked): a call it was inside took longer than its work.
SWITCH = "sched:sched_switch"
#: Processes forked, exec'd and ended: who still maps a page a write fault finds present
#: (:func:`cow_or_reuse`).
LIFECYCLE = ["sched:sched_process_fork", "sched:sched_process_exec", "sched:sched_process_exit"]
#: The single-buffer system calls whose buffer is recorded: the tracepoint field holding it, and
#: what the kernel does to it (the kind of the touch row).
BUFFERS = {"read": ("buf", "user_buf_written"), "pread64": ("buf", "user_buf_written"),
           "recvfrom": ("ubuf", "user_buf_written"), "write": ("buf", "user_buf_read"),
           "pwrite64": ("buf", "user_buf_read"), "sendto": ("buff", "user_buf_read")}
#: Kinds of the kernel's touches of user buffers (no bytes of their own: the sums count them).
TOUCH_KINDS = ("user_buf_written", "user_buf_read")
#: Kinds of the page faults (:func:`read_perf`, :func:`cow_or_reuse`); :func:`moved_bytes` says which move bytes.
FAULT_KINDS = ("page_zero", "page_cow", "page_reuse", "page_zero_map", "page_file", "page_protect")
EVENTS = ([*FAULTS, SWITCH, *LIFECYCLE] + [f"syscalls:sys_exit_{s}" for s in SYSCALLS]
          + [f"syscalls:sys_enter_{s}" for s in BUFFERS])
USER_TOP = 1 << 47

_LINE = re.compile(r"^\s*(\d+)/(\d+)\s+(\d+)\.(\d+):\s+(\S+):\s*(.*)$")
#: A mapping perf reports (``perf record -d``, ``perf script --show-mmap-events``): start, length,
#: inode, protection (``rw-p``: private, ``rw-s``: shared) and path (``//anon``, ``[heap]``,
#: ``[stack]``: anonymous; inode 0 is never a file).
_MMAP_AT = re.compile(r"^\s*(\d+)/\d+\s+(\d+)\.(\d+):\s+PERF_RECORD_MMAP")
_MMAP = re.compile(r"\[(0x[0-9a-fA-F]+)\((0x[0-9a-fA-F]+)\) @ \S+ \S+ (\d+) \d+\]: (\S+) (.*)$")
_FIELD = re.compile(r"(\w+)=(\S+)")
_ARG = re.compile(r"(\w+): (0x[0-9a-fA-F]+)")


@cache
def status() -> tuple[bool, str]:
    """(available, why not): whether ``perf`` can record these tracepoints here."""
    perf = shutil.which("perf")
    if perf is None:
        return False, "perf is not installed (Debian: linux-perf)"
    try:
        proc = subprocess.run([perf, "record", "-q", "-o", "/dev/null", "-e", ",".join(EVENTS), "--", "true"],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"perf could not run: {e}"
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["unknown error"])[0]
        try:
            paranoid = Path("/proc/sys/kernel/perf_event_paranoid").read_text().strip()
        except OSError:
            paranoid = "unknown"
        return False, f"perf cannot record kernel tracepoints here (perf_event_paranoid={paranoid}): {first}"
    return True, ""


#: Where Linux lists the performance-monitoring units perf can use; a hardware one (``cpu``, or
#: ``cpu_core``/``cpu_atom`` on hybrid parts) is what ``perf mem`` needs for data-address sampling.
PMU_DIR = Path("/sys/bus/event_source/devices")


def use_window_status(pmu_dir: Path = PMU_DIR, arch: str | None = None) -> str:
    """Why the copy-use window (time until a copy's destination is first read) is not recorded on
    this machine: the precise reason, from what the machine offers (stated in every recording)."""
    import platform as _platform

    arch = arch or _platform.machine()
    try:
        pmus = sorted(p.name for p in pmu_dir.iterdir())
    except OSError:
        pmus = []
    hw = [p for p in pmus if p in ("cpu", "cpu_core", "cpu_atom", "armv8_pmuv3") or p.startswith("armv8")]
    why = []
    if hw:
        why.append(f"a hardware PMU is present ({', '.join(hw)}), but movelab does not yet sample load addresses "
                   f"with it (perf mem)")
    else:
        why.append(f"no hardware performance-monitoring unit is exposed here ({pmu_dir} lists only "
                   f"{', '.join(pmus) or 'nothing'}), so load-address sampling (perf mem: PEBS on Intel, IBS "
                   f"on AMD) cannot run; a virtual machine usually hides it")
    if arch in ("x86_64", "i686", "i386"):
        why.append("x86 debug registers cannot watch reads alone (perf_event_open with HW_BREAKPOINT_R is "
                   "refused with EINVAL; read-or-write watchpoints cannot tell the first read from a write), "
                   "and each watches at most 8 bytes")
    why.append("page protection (mprotect and a SIGSEGV handler) makes system calls that write into the "
               "protected page fail with EFAULT instead of faulting, and clashes with programs' own handlers")
    return "copy-use window (use_ns): not measured; " + "; ".join(why) + ". The column is null"


def wrap(cmd: list[str], data: Path) -> list[str]:
    """``cmd`` under ``perf record`` of the events above, timestamps on CLOCK_MONOTONIC (the
    interposer's clock), following forks and execs; ``-d``: the data mappings too
    (:func:`cow_or_reuse` tells the zero page from a file page by them)."""
    return [shutil.which("perf") or "perf", "record", "-q", "-d", "-k", "CLOCK_MONOTONIC", "-o", str(data),
            "-e", ",".join(EVENTS), "--", *cmd]


def parse(data: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(page faults, one row each; kernel copies, summed per pid and call; context switches out,
    one row each: tid, t_abs; the kernel's touches of user buffers, one row per single-buffer
    system call that copied: pid, tid, t_abs (its exit), addr, bytes, kind) from a perf file."""
    perf = shutil.which("perf") or "perf"
    proc = subprocess.Popen([perf, "script", "--ns", "--show-mmap-events", "-i", str(data), "-F",
                             "pid,tid,time,event,trace"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    try:
        return parse_lines(proc.stdout)
    finally:
        proc.stdout.close()
        proc.wait()


def parse_lines(lines: Iterable[str]) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`parse` of ``perf script --ns -F pid,tid,time,event,trace`` output lines."""
    faults: list[list] = []
    last_fault: dict[int, int] = {}
    sums: dict[tuple[int, str], list[int]] = {}
    switches: list[tuple[int, int]] = []
    entered: dict[int, tuple[str, int]] = {}  # tid -> (system call, buffer) since its sys_enter
    touches: list[tuple[int, int, int, int, int, str]] = []
    life: list[tuple[int, str, int, int]] = []  # (t, event, pid, child pid or tid)
    leaders: set[int] = set()  # tids seen as their process's first thread (pid == tid): processes
    exe: dict[int, str] = {}  # pid -> the executable it runs (perf script's lines are in time order)
    maps: list[tuple[int, int, int, int, bool, bool]] = []  # (t, pid, start, end, file-backed, shared)
    for line in lines:
        m = _LINE.match(line)
        if not m:
            mm = _MMAP.search(line) if "PERF_RECORD_MMAP" in line else None
            tm = _MMAP_AT.match(line)
            if mm and tm:
                start, size = int(mm.group(1), 16), int(mm.group(2), 16)
                path = mm.group(5).strip()
                maps.append((int(tm.group(2)) * 1_000_000_000 + int(tm.group(3).ljust(9, "0")[:9]),
                             int(tm.group(1)), start, start + size,
                             int(mm.group(3)) != 0 and not path.startswith(("//anon", "[")),
                             mm.group(4).endswith("s")))
            continue
        pid, tid = int(m.group(1)), int(m.group(2))
        t = int(m.group(3)) * 1_000_000_000 + int(m.group(4).ljust(9, "0")[:9])
        ev, rest = m.group(5), m.group(6)
        if pid == tid:
            leaders.add(tid)
        if ev in LIFECYCLE:
            if ev == "sched:sched_process_fork":
                child = dict(_FIELD.findall(rest)).get("child_pid", "")
                if child.isdigit():
                    life.append((t, "fork", pid, int(child)))
                    if pid in exe:
                        exe[int(child)] = exe[pid]
            else:
                if ev == "sched:sched_process_exec":
                    exe[pid] = dict(_FIELD.findall(rest)).get("filename", "")
                life.append((t, ev.removeprefix("sched:sched_process_"), pid, tid))
            continue
        if ev.startswith("exceptions:page_fault"):
            f = dict(_FIELD.findall(rest))
            try:
                addr = int(f["address"], 16)
                code = int(f["error_code"], 16)
            except (KeyError, ValueError):
                continue
            if addr >= USER_TOP:
                continue
            last_fault[tid] = len(faults)
            faults.append([pid, tid, t, addr, code, False, exe.get(pid, "")])
        elif ev == SWITCH:
            switches.append((tid, t))
        elif ev == "filemap:mm_filemap_fault":
            i = last_fault.pop(tid, None)
            if i is not None:
                faults[i][5] = True
        elif ev.startswith("syscalls:sys_enter_"):
            call = ev.removeprefix("syscalls:sys_enter_")
            buf = dict(_ARG.findall(rest)).get(BUFFERS[call][0]) if call in BUFFERS else None
            if buf is not None:
                entered[tid] = (call, int(buf, 16))
        elif ev.startswith("syscalls:sys_exit_"):
            call = ev.removeprefix("syscalls:sys_exit_")
            name = SYSCALLS.get(call)
            opened = entered.pop(tid, None)
            try:
                ret = int(rest.strip().split()[-1], 16)
            except (ValueError, IndexError):
                continue
            if name is None or ret <= 0 or ret >= 1 << 62:  # errors are negative (printed as large hex)
                continue
            s = sums.setdefault((pid, name), [0, 0])
            s[0] += 1
            s[1] += ret
            if opened is not None and opened[0] == call and 0 < opened[1] < USER_TOP:
                touches.append((pid, tid, t, opened[1], ret, BUFFERS[call][1]))
    # exe: the executable the process ran at the fault ("" when its exec was not seen)
    fdf = pd.DataFrame(faults, columns=["pid", "tid", "t_abs", "addr", "code", "file", "exe"])
    if len(fdf):
        present = (fdf["code"] & 1) == 1
        write = (fdf["code"] & 2) == 2
        kind = pd.Series("page_zero_map", index=fdf.index)
        kind[~present & write] = "page_zero"
        kind[present & write] = "page_cow"
        # a write to a missing page the page cache served: in a private file mapping (a program's or
        # a library's data, written by the dynamic linker's relocations) the kernel copies the page
        # cache's page into a page of the process's own (mm/memory.c, do_cow_fault); in a shared
        # one (cow_or_reuse relabels it) it writes the page cache's page in place
        kind[fdf["file"] & ~present & write] = "page_cow"
        kind[fdf["file"] & ~write] = "page_file"
        kind[present & ~write] = "page_protect"
        fdf["kind"] = kind
        if life or maps:
            fdf["kind"] = cow_or_reuse(fdf, [e for e in life if e[1] != "fork" or e[3] in leaders], maps)
    else:
        fdf["kind"] = pd.Series(dtype="string")
    sdf = pd.DataFrame([(p, k, c, b) for (p, k), (c, b) in sums.items()], columns=["pid", "kind", "count", "bytes"])
    tdf = pd.DataFrame(touches, columns=["pid", "tid", "t_abs", "addr", "bytes", "kind"])
    return fdf, sdf, pd.DataFrame(switches, columns=["tid", "t_abs"]), tdf


def cow_or_reuse(faults: pd.DataFrame, life: list[tuple[int, str, int, int]],
                 maps: list[tuple[int, ...]] | None = None) -> pd.Series:
    """``faults["kind"]`` with each ``page_cow`` that moved nothing relabelled ``page_reuse`` (or
    ``page_file``: a write to a shared file mapping's page), and each that zeroed a page instead of
    copying it relabelled ``page_zero``.

    A write fault on a present, write-protected anonymous page copies it only while another process
    maps the same page; when none does (the fork's other side has written its own copy, exec'd or
    exited) Linux makes the page writable in place (mm/memory.c, ``do_wp_page``: reuse when the
    page's only reference is the faulting process's). So every physical page is followed: a page
    the process wrote (first-touch zeroing, a copy, a private file page's copy) is its own; a fork
    shares all of the parent's with the child (``life``: ``(t, "fork", parent pid, child pid)``,
    processes only, not threads); an exec or the process's end (``(t, "exec"|"exit", pid, tid)``,
    the first thread's) drops its references. A write fault on a present page the process holds
    alone is a reuse; on one it shares, a copy (the process gets a page of its own). A write fault on
    a present page the process never wrote in its image is a private file page (the kernel copies
    the page cache's page: ``page_cow``) or, in an anonymous mapping, the shared zero page a read
    mapped (the kernel allocates a zeroed page: ``page_zero``; mm/memory.c, ``wp_page_copy``).
    ``maps`` (``(t, pid, start, end, file-backed[, shared])``, perf's mapping records) tells the
    two apart; without a record of the page's mapping the fault stays ``page_cow``. A write fault in
    a shared mapping (``rw-s``) copies nothing: the process writes the page cache's page itself
    (mm/memory.c, ``do_shared_fault``, ``wp_page_shared``), and a fork shares it rather than
    marking it copy-on-write: ``page_file``."""
    kind = faults["kind"].to_numpy(dtype=object).copy()
    maps = maps or []
    order = sorted([(t, 0, i) for i, t in enumerate(e[0] for e in life)]
                   + [(e[0], 0, -1 - i) for i, e in enumerate(maps)]
                   + [(t, 1, i) for i, t in enumerate(faults["t_abs"].to_numpy())])
    pids, pages = faults["pid"].to_numpy(), (faults["addr"].to_numpy() // PAGE)
    frames: dict[int, dict[int, int]] = {}  # pid -> page -> physical page id
    refs: dict[int, int] = {}  # physical page id -> processes mapping it
    vmas: dict[int, list[tuple[int, int, bool, bool]]] = {}  # pid -> its mappings, latest last

    def mapping(pid: int, addr: int) -> tuple[bool, bool] | None:
        """(file-backed, shared) of the mapping holding ``addr``, None where none was recorded."""
        for start, end, f, sh in reversed(vmas.get(pid, ())):
            if start <= addr < end:
                return f, sh
        return None
    new = iter(range(1, 1 << 62))

    def drop(pid: int) -> None:
        for f in frames.pop(pid, {}).values():
            refs[f] -= 1

    for _, what, i in order:
        if what == 0 and i < 0:
            _, pid, start, end, f_b, *shared = maps[-1 - i]
            vmas.setdefault(pid, []).append((start, end, f_b, bool(shared and shared[0])))
            continue
        if what == 0:
            _, ev, pid, other = life[i]
            if ev == "fork":
                mine = frames.get(pid, {})
                drop(other)
                frames[other] = dict(mine)
                for f in mine.values():
                    refs[f] += 1
                vmas[other] = list(vmas.get(pid, []))
            elif other == pid:  # exec or the process's first thread ending
                drop(pid)
                if ev == "exit":  # (an exec's new mappings are reported just before it)
                    vmas.pop(pid, None)
            continue
        k = kind[i]
        if k not in ("page_cow", "page_zero"):
            continue
        pid, page = int(pids[i]), int(pages[i])
        vma = mapping(pid, page * PAGE)
        if k == "page_cow" and vma is not None and vma[0] and vma[1]:
            kind[i] = "page_file"  # a shared file mapping: written in place
            continue
        mine = frames.setdefault(pid, {})
        f = mine.get(page)
        if k == "page_cow" and f is not None and refs[f] <= 1:
            kind[i] = "page_reuse"
            continue
        if k == "page_cow" and f is None and vma is not None and not vma[0]:
            kind[i] = "page_zero"  # the shared zero page replaced by a zeroed page
        if f is not None:
            refs[f] -= 1
        mine[page] = f = next(new)
        refs[f] = 1
    return pd.Series(kind, index=faults.index)


def moved_bytes(kind: str) -> int:
    """Bytes a fault of ``kind`` moves (copies or zeroes): a 4 KiB page, or nothing."""
    return PAGE if kind in ("page_zero", "page_cow") else 0
