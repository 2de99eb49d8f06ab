"""Small helpers shared by the CLI groups: parsing ``--set`` overrides, the choices of enumerated
options, safe output paths (never overwriting without ``--force``, written whole or not at all),
JSON output."""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import stat
import tempfile
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    # typer is imported where an error is raised or a line echoed: `movelab.dram` (and a
    # `movelab dram run` that parses its own command line) starts without it.
    import typer

# ------------------------------------------------------------------------------------------------
# Enumerated options: typer refuses anything else with "Invalid value for '--format': 'jsno' is not
# one of 'table', 'json'." (exit 2).


class TableJson(str, Enum):
    table = "table"
    json = "json"


class TomlJson(str, Enum):
    toml = "toml"
    json = "json"


class TraceFormat(str, Enum):
    auto = "auto"
    native = "native"
    ramulator = "ramulator"
    dramsim3 = "dramsim3"


class TraceFileFormat(str, Enum):
    native = "native"
    ramulator = "ramulator"
    dramsim3 = "dramsim3"


class GeneratorKind(str, Enum):
    stream = "stream"
    random = "random"
    hotset = "hotset"


# ------------------------------------------------------------------------------------------------
# Signals


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``kill``, a closed terminal, a job scheduler's time limit), raised as
    Ctrl-C's KeyboardInterrupt is: every output being written is removed on the way out (its
    ``.partial`` file and lock), which the signal's default action (ending the process at once)
    left behind. ``signum``: the signal; the command line exits with 128 + it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


def stop_on_termination() -> None:
    """Makes SIGTERM and SIGHUP raise :class:`Terminated` (in the main thread; a long native call
    sees it within milliseconds, as it sees Ctrl-C). A signal ignored when the process started
    (``nohup``) stays ignored."""
    import signal

    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _raise_terminated)


def interrupted_exit(e: KeyboardInterrupt) -> int:
    """Prints the command line's one line for an interrupt on stderr and returns its exit status:
    130 for Ctrl-C, 128 + the signal for :class:`Terminated`."""
    from rich.console import Console

    if isinstance(e, Terminated):
        import signal

        Console(stderr=True).print(f"movelab: stopped by {signal.Signals(e.signum).name}", highlight=False)
        return 128 + e.signum
    Console(stderr=True).print("movelab: interrupted", highlight=False)
    return 130


# ------------------------------------------------------------------------------------------------
# Values

I64_MIN, I64_MAX, U64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1


def check_value(value: Any, where: str, unsigned: bool = False) -> None:
    """Raises ``ValueError`` naming ``where`` (a dotted key) for a number no config can hold: NaN,
    an infinity, or an integer outside TOML's signed 64 bits (every config is TOML). A trace
    generator's spec travels as JSON into unsigned 64-bit fields (``unsigned``): 0 to 2**64 - 1.
    ``None`` (TOML has no null) and values of other types are refused too. Walks dicts and lists."""
    if isinstance(value, bool):
        return
    if value is None:
        # TOML has no null: a key given None would be dropped on the way and the config run
        # without it, a typo in its name passing unnoticed.
        raise ValueError(f"{where}: None is not a setting's value (configs are TOML, which has no null): "
                         "give a value, or leave the key out")
    if not isinstance(value, (int, float, str, dict, list, tuple)):
        raise TypeError(f"{where}: a {type(value).__name__} is not a setting's value (give a number, a "
                        "string, a bool, a list or a dict)")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value} is not a finite number")
    lo, hi, what = (0, U64_MAX, "unsigned") if unsigned else (I64_MIN, I64_MAX, "signed")
    if unsigned and isinstance(value, int) and value < 0:
        raise ValueError(f"{where}: {value} is negative; this setting takes 0 or more")
    if isinstance(value, int) and not lo <= value <= hi:
        raise ValueError(f"{where}: {value} does not fit in a setting's {what} 64 bits "
                         f"({lo:,} to {hi:,})")
    if isinstance(value, dict):
        for k, v in value.items():
            check_value(v, f"{where}.{k}" if where else str(k), unsigned)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_value(v, f"{where}[{i}]", unsigned)


def check_progress(progress: Any, takes: str) -> None:
    """Raises ``TypeError`` for a ``progress`` that is given but cannot be called (it failed only
    after the run had started, as "'int' object is not callable"); ``takes`` says what it is passed."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable taking {takes}, not {type(progress).__name__}")


def finite(option: str):
    """A typer callback refusing NaN and infinities for a float option (typer's ``min``/``max``
    let NaN through)."""

    def cb(value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise _bad(option, f"{value} is not a finite number")
        return value

    return cb


def parse_set(items: list[str] | None, option: str = "--set") -> dict[str, Any]:
    """Turns ``["dram.timing.nRAS=30", "controller.scheduler=fcfs"]`` into a nested dict.

    Values are read as TOML literals (numbers, booleans, quoted strings); anything else is a string.
    NaN, infinities and integers beyond 64 bits are refused, naming the key.
    """
    out: dict[str, Any] = {}
    for item in items or []:
        if "=" not in item:
            raise _bad(option, f"'{item}' is not KEY=VALUE (e.g. dram.timing.nRAS=30)")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key or any(not part.strip() for part in key.split(".")):
            raise _bad(option, f"'{item}': empty key")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        try:
            check_value(value, key)
        except ValueError as e:
            raise _bad(option, str(e)) from None
        try:
            _set_path(out, [p.strip() for p in key.split(".")], value, key)
        except ValueError as e:
            raise _bad(option, f"'{item}': {e}") from None
    return out


def _set_path(out: dict[str, Any], parts: list[str], value: Any, key: str) -> None:
    """Sets ``value`` at the path ``parts`` of nested dict ``out`` (``key``: the path as the user wrote
    it, for the error). A leaf set twice, or a path through a value that is not a table, is refused."""
    node = out
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ValueError(f"{key} sets inside a value that is not a table")
        node = child
    last = parts[-1]
    if last in node and not (isinstance(node[last], dict) and isinstance(value, dict)):
        raise ValueError(f"{key} is given twice (once is enough; which one was meant?)")
    if last in node:
        for k, v in value.items():
            _set_path(node[last], [k], v, f"{key}.{k}")
    else:
        node[last] = value


def nested(overrides: Any, what: str = "overrides") -> Any:
    """``overrides`` with every dotted key spelled as nested tables, as ``--set`` writes them:
    ``{"controller.read_queue": 33}`` is ``{"controller": {"read_queue": 33}}``; both spellings mix
    freely (``{"copy": {"mode": "ASYNC"}, "copy.mechanism": "ce"}``). A setting given twice (in two
    spellings) or set inside a value that is not a table is refused, naming it. Keys that are not
    strings, and a value that is not a mapping at all, are left for the caller's own check."""
    if not isinstance(overrides, Mapping):
        return overrides
    out: dict[str, Any] = {}
    for k, v in overrides.items():
        value = nested(v, f"{what}.{k}")
        if not isinstance(k, str):
            out[k] = value
            continue
        parts = k.split(".") if "." in k else [k]
        if any(not p for p in parts):
            raise ValueError(f"{what}: {k!r}: empty key")
        try:
            _set_path(out, parts, value, k)
        except ValueError as e:
            raise ValueError(f"{what}: {e}") from None
    return out


def layered(base: Mapping[str, Any] | None, top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` layered on ``base`` (a new dict; nested tables merged key by key, anything else in
    ``top`` replaces ``base``'s value). The one merge of override tables on the Python side."""
    out = nested(base or {})
    for k, v in nested(top).items():
        old = out.get(k)
        out[k] = layered(old, v) if isinstance(v, Mapping) and (old is None or isinstance(old, Mapping)) else v
    return out


def _first_given(overrides: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    """The first of the dotted ``keys`` that ``overrides`` (nested tables or dotted keys) sets."""
    overrides = nested(overrides)
    for key in keys:
        node: Any = overrides
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            return key
    return None


def refuse_keys(overrides: dict[str, Any], keys: Iterable[str], what: str) -> None:
    """Raises ``ValueError`` if ``overrides`` sets any of the dotted ``keys``: ``what`` (a
    reproduction) sets them itself, so an override would be silently dropped."""
    key = _first_given(overrides, keys)
    if key is not None:
        raise ValueError(f"{key}: {what} sets {key} itself for each of its runs, so an override of it "
                         f"would be ignored; leave it out")


def refuse_unread(overrides: Mapping[str, Any], keys: Iterable[str], what: str) -> None:
    """Raises ``ValueError`` if ``overrides`` sets any of the dotted ``keys``, which nothing in ``what``
    reads (a copy engine's keys in a reproduction that runs no copy engine): an override would
    change nothing, and the results would look as if it had been taken."""
    key = _first_given(overrides, keys)
    if key is not None:
        raise ValueError(f"{key}: {what}, so an override of it would change nothing; leave it out")


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def given_on_command_line(ctx: Any, *names: str) -> set[str]:
    """The parameters among ``names`` (their Python names) that the command line gave, not their defaults:
    for refusing an option the rest of the command line would make it ignore. (typer carries its own click,
    so the source is compared by name.)"""
    return {n for n in names if getattr(ctx.get_parameter_source(n), "name", None) == "COMMANDLINE"}


def parse_size(text: str, option: str) -> int:
    """``"64M"`` -> 67108864: a whole number of bytes, optionally with K, M, G or T (binary units,
    ``KiB``/``KB`` spellings too). Raises ``typer.BadParameter`` naming ``option``."""
    m = re.fullmatch(r"\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not m:
        raise _bad(option, f"'{text}' is not a size (bytes, or with K, M, G or T, e.g. 64M)")
    n = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if n > U64_MAX:
        raise _bad(option, f"'{text}' does not fit in 64 bits")
    return n


# ------------------------------------------------------------------------------------------------
# Output files


def _bad(option: str, msg: str) -> typer.BadParameter:
    import typer

    return typer.BadParameter(msg, param_hint=option)


def _make_dir(d: Path, option: str) -> None:
    if d.exists() and not d.is_dir():
        raise _bad(option, f"{d} exists and is not a directory")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _bad(option, f"cannot create directory {d}: {e.strerror or e}") from None
    if not os.access(d, os.W_OK | os.X_OK):
        raise _bad(option, f"cannot write into directory {d}: permission denied")


def _check_target(path: Path, force: bool, option: str) -> None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    except OSError as e:
        raise _bad(option, f"cannot use {path}: {e.strerror or e}") from None
    if stat.S_ISDIR(st.st_mode):
        raise _bad(option, f"{path} is a directory; give a file name")
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise _bad(option, f"{path} exists and is not a regular file")
    if not force:
        raise _bad(option, f"{path} exists; pass --force to overwrite it")


def output_path(path: Path | None, force: bool, what: str) -> Path | None:
    """Checks that ``path`` can be written: an existing file is refused unless ``force``, a
    directory or a special file (FIFO, device) always; the parent directory is created. Raises
    ``typer.BadParameter`` naming the option ``what``."""
    if path is None:
        return None
    _check_target(path, force, what)
    _make_dir(path.parent if str(path.parent) else Path("."), what)
    return path


class OutputBusy(FileExistsError):
    """Another process is writing the same output now."""


def _lock_file(path: Path) -> Path:
    """The lock of output ``path``: a hidden file beside it (inside it for a directory)."""
    return path / ".movelab.lock" if path.is_dir() else path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def output_lock(path: Path) -> Iterator[None]:
    """Holds an exclusive lock on output ``path`` (a file or a directory) for the block, so that two
    runs never write one output at once: the second raises :class:`OutputBusy` at once, naming the
    process that holds it. The lock (``flock`` on a hidden file beside the output) is released when
    the process ends however it ends; the file is removed when the block ends."""
    import fcntl

    lock = _lock_file(path)
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise OSError(f"cannot lock {path}: cannot create {lock}: {e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise OutputBusy(f"{path} is being written by process {holder}; wait for it to finish "
                             "(or stop it) and run again") from None
        # The holder before us may have removed the file after we opened it: lock the one in place.
        try:
            same = os.fstat(fd).st_ino == os.stat(lock).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yields a temporary path beside ``path``; when the block ends normally the file is renamed
    onto ``path``, else removed. An interrupted or failed run leaves no partial file behind. The
    output is locked meanwhile (:func:`output_lock`)."""
    with output_lock(path), _atomic_path(path) as tmp:
        yield tmp


@contextlib.contextmanager
def _atomic_path(path: Path) -> Iterator[Path]:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)  # an ordinary file's mode (mkstemp makes it private: 0600)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


def check_output_dir(out: Path | None, names: Iterable[str], force: bool, option: str = "--out") -> None:
    """Before a run: refuses an ``out`` that cannot be a directory, or that already holds one of the
    files ``names`` (unless ``force``), naming the file."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise _bad(option, f"{out} exists and is not a directory")
    for name in names:
        _check_target(out / name, force, option)


@contextlib.contextmanager
def staged_dir(out: Path, force: bool, option: str = "--out") -> Iterator[Path]:
    """Yields an empty staging directory inside ``out``; when the block ends normally every file
    written there is moved into ``out`` (refusing, before moving any, a name that exists unless
    ``force``), else the staging directory is removed. So an interrupted run leaves the files of
    the last run or none, never a half-written one. ``out`` is locked meanwhile (:func:`output_lock`):
    a second run writing there fails at once."""
    _make_dir(out, option)
    with output_lock(out):
        stage = Path(tempfile.mkdtemp(prefix=".staging-", dir=out))
        try:
            yield stage
            files = sorted(p for p in stage.iterdir())
            for p in files:
                _check_target(out / p.name, force, option)
            for p in files:
                os.replace(p, out / p.name)
        finally:
            shutil.rmtree(stage, ignore_errors=True)


@contextlib.contextmanager
def progress_bar(label: str, enabled: bool = True) -> Iterator[Any]:
    """A progress bar on stderr (gone when it closes), fed by a simulator's ``progress(done,
    total)`` callback, which it yields; ``enabled`` False shows nothing (for JSON output)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    # Elapsed and estimated remaining time: a run asking for days says so within seconds.
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("left"),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True,
                  disable=not enabled) as prog:
        task = prog.add_task(label, total=None)

        def update(done: int, total: int | None) -> None:
            prog.update(task, completed=done, total=total)
            prog.refresh()  # the simulator holds the interpreter between callbacks

        yield update


def lit(value: Any) -> str:
    """``value`` as text that rich prints literally (its brackets are not read as markup)."""
    from rich.markup import escape

    return escape(str(value))


def error_line(e: BaseException | str) -> None:
    """Prints ``error: MESSAGE`` on stderr as one line (not wrapped, no markup read from it)."""
    from rich.console import Console
    from rich.markup import escape

    Console(stderr=True).print(f"[red]error:[/red] {escape(str(e))}", soft_wrap=True, highlight=False)


def fail(e: BaseException | str) -> NoReturn:
    """Reports a user error in one line and exits with status 2."""
    import typer

    error_line(e)
    raise typer.Exit(2) from (e if isinstance(e, BaseException) else None)


def echo_json(data: Any) -> None:
    import typer

    typer.echo(json.dumps(data, indent=2, sort_keys=False))


def input_path(p: str | Path, what: str) -> Path:
    """An input file that exists and is a regular file (a FIFO would block, a directory fails late)."""
    if not isinstance(p, (str, Path)):
        raise TypeError(f"{what} must be a path, not {type(p).__name__}")
    path = Path(p)
    if path.is_dir():
        raise ValueError(f"{what}: {path} is a directory, not a file")
    if not path.exists():
        raise FileNotFoundError(f"{what} file {path} does not exist")
    if not path.is_file():
        raise ValueError(f"{what}: {path} is not a regular file (a FIFO or a device is not read"
                         f"{'; pipe a trace to stdin instead: TRACE -' if what == 'trace' else ''})")
    return path
