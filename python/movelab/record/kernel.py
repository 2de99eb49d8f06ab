"""Kernel-side data movement of a recorded program, from Linux tracepoints through ``perf``:

* page faults (``exceptions:page_fault_user``, and ``exceptions:page_fault_kernel`` on user
  addresses, e.g. a ``read`` into a page not touched yet), classified by the x86 error code and by
  whether the page cache served them (``filemap:mm_filemap_fault`` on the same thread right after):
  a write to a present page is a copy-on-write (``page_cow``, a 4 KiB copy); a write to a missing
  anonymous page is first-touch zeroing (``page_zero``, 4 KiB); a read of a missing anonymous page
  maps the shared zero page (``page_zero_map``, nothing moved); a file-backed fault maps the page
  cache (``page_file``, nothing moved, or a read from storage);
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
#: The single-buffer system calls whose buffer is recorded: the tracepoint field holding it, and
#: what the kernel does to it (the kind of the touch row).
BUFFERS = {"read": ("buf", "user_buf_written"), "pread64": ("buf", "user_buf_written"),
           "recvfrom": ("ubuf", "user_buf_written"), "write": ("buf", "user_buf_read"),
           "pwrite64": ("buf", "user_buf_read"), "sendto": ("buff", "user_buf_read")}
#: Kinds of the kernel's touches of user buffers (no bytes of their own: the sums count them).
TOUCH_KINDS = ("user_buf_written", "user_buf_read")
EVENTS = ([*FAULTS, SWITCH] + [f"syscalls:sys_exit_{s}" for s in SYSCALLS]
          + [f"syscalls:sys_enter_{s}" for s in BUFFERS])
USER_TOP = 1 << 47

_LINE = re.compile(r"^\s*(\d+)/(\d+)\s+(\d+)\.(\d+):\s+(\S+):\s*(.*)$")
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
    interposer's clock), following forks and execs."""
    return [shutil.which("perf") or "perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-o", str(data),
            "-e", ",".join(EVENTS), "--", *cmd]


def parse(data: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(page faults, one row each; kernel copies, summed per pid and call; context switches out,
    one row each: tid, t_abs; the kernel's touches of user buffers, one row per single-buffer
    system call that copied: pid, tid, t_abs (its exit), addr, bytes, kind) from a perf file."""
    perf = shutil.which("perf") or "perf"
    proc = subprocess.Popen([perf, "script", "--ns", "-i", str(data), "-F", "pid,tid,time,event,trace"],
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
    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        pid, tid = int(m.group(1)), int(m.group(2))
        t = int(m.group(3)) * 1_000_000_000 + int(m.group(4).ljust(9, "0")[:9])
        ev, rest = m.group(5), m.group(6)
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
            faults.append([pid, tid, t, addr, code, False])
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
    fdf = pd.DataFrame(faults, columns=["pid", "tid", "t_abs", "addr", "code", "file"])
    if len(fdf):
        present = (fdf["code"] & 1) == 1
        write = (fdf["code"] & 2) == 2
        kind = pd.Series("page_zero_map", index=fdf.index)
        kind[~present & write] = "page_zero"
        kind[present & write] = "page_cow"
        kind[fdf["file"] & ~(present & write)] = "page_file"
        kind[present & ~write] = "page_protect"
        fdf["kind"] = kind
    else:
        fdf["kind"] = pd.Series(dtype="string")
    sdf = pd.DataFrame([(p, k, c, b) for (p, k), (c, b) in sums.items()], columns=["pid", "kind", "count", "bytes"])
    tdf = pd.DataFrame(touches, columns=["pid", "tid", "t_abs", "addr", "bytes", "kind"])
    return fdf, sdf, pd.DataFrame(switches, columns=["tid", "t_abs"]), tdf


def moved_bytes(kind: str) -> int:
    """Bytes a fault of ``kind`` moves (copies or zeroes): a 4 KiB page, or nothing."""
    return PAGE if kind in ("page_zero", "page_cow") else 0
