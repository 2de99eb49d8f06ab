"""A recording's rows of a kind no recording has (a damaged file, or one written by another version)
are refused by the replay, naming the trace, the row, the kind and the kinds known: they were
dropped without a word, and with them whatever they moved."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from movelab.cli import app
from movelab.record.replay import KNOWN_KINDS, check_kinds, movement_events, replay, replay_windows, what_if
from movelab.record.trace import conform, write_parquet
from typer.testing import CliRunner


def _recording(kinds: list[str | None]) -> pd.DataFrame:
    """One interposer call of 4 KiB per kind, 1 us apart, on one thread."""
    n = len(kinds)
    return conform(pd.DataFrame({
        "source": ["interposer"] * n, "kind": kinds, "pid": [1] * n, "tid": [1] * n, "image": [0] * n,
        "exe": ["prog"] * n, "t_ns": [1000 * i for i in range(n)], "dur_ns": [200] * n, "count": [1] * n,
        "size": [4096] * n, "bytes": [4096] * n, "size_class": [13] * n,
        "src": [0x10000 + 0x2000 * i for i in range(n)], "dst": [0x800000 + 0x2000 * i for i in range(n)],
    }))


def test_every_kind_a_recording_makes_is_known() -> None:
    from movelab.record import kernel, trace

    for k in (*trace.KINDS.values(), *trace.COPY_KINDS, *trace.INIT_KINDS, *kernel.FAULT_KINDS,
              *kernel.SYSCALLS.values(), *kernel.TOUCH_KINDS):
        assert k in KNOWN_KINDS
    check_kinds(_recording(["memcpy", "page_reuse", "read", "user_buf_read"]))  # no error


def test_an_unknown_kind_is_refused_naming_the_row_the_kind_and_the_known_kinds() -> None:
    df = _recording(["memcpy", "memset", "memcpy_avx", "memcpy", "mmap"])
    with pytest.raises(ValueError, match=r"the trace: row 2: unknown kind 'memcpy_avx' \(and 1 more rows of "
                                         r"unknown kinds\); a recording's kinds are memcpy, memmove, .*page_cow"):
        movement_events(df)
    with pytest.raises(ValueError, match="row 2: unknown kind 'memcpy_avx'"):
        replay(df, "rowclone-system", "cpu", samples=2)
    with pytest.raises(ValueError, match="row 2: unknown kind 'memcpy_avx'"):
        replay_windows(df, windows=1, length=2)
    with pytest.raises(ValueError, match="row 2: unknown kind 'memcpy_avx'"):
        what_if(df, mechanisms=["cpu"], samples=2)
    with pytest.raises(ValueError, match="the trace: row 1: no kind;"):
        movement_events(_recording(["memcpy", None]))


def test_the_replay_command_refuses_a_recording_with_an_unknown_kind(tmp_path: Path) -> None:
    path = tmp_path / "rec.parquet"
    write_parquet(_recording(["memcpy", "memcpy", "memcpy", "strcpy"]), {}, path)
    for cmd in (["replay", str(path)], ["what-if", str(path)]):
        r = CliRunner().invoke(app, cmd, env={"COLUMNS": "200"})
        out = " ".join(r.output.replace("│", " ").split())
        assert r.exit_code == 2, (cmd, r.output)
        assert f"trace {path}: row 3: unknown kind 'strcpy'; a recording's kinds are memcpy," in out, out
    with pytest.raises(ValueError, match=f"trace {path}: row 3: unknown kind 'strcpy'"):
        replay(path, "rowclone-system", "cpu", samples=2)
