"""The demonstration programs of ``movelab bench record`` (their definitions, not their recordings:
recording a real program is ``make bench``'s, never ``make test``'s): every command formats, the
sixth program (zstd) is held out of the calibration, its generated input is the same bytes on every
run and is written before the recorded command runs, and the Makefile installs its package only on
``make bench``'s path."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from movelab.record import bench
from movelab.record.calibration import GAP_CALIBRATION_PROGRAMS

REPO = Path(__file__).resolve().parents[2]


def test_every_program_formats_and_names_what_it_needs() -> None:
    assert list(bench.PROGRAMS)[:5] == ["gcc", "shell", "python", "sqlite", "redis"]
    for name, (desc, needs, template, exe) in bench.PROGRAMS.items():
        assert "/T" in template.format(tmp="/T", src="/S") or "{tmp}" not in template, name
        assert desc and needs, name
        assert not exe or exe in needs, f"{name}: its focus executable {exe!r} is not among what it needs"
    for name, setup in bench.SETUP.items():
        assert name in bench.PROGRAMS, f"setup for an unknown program {name!r}"
        assert "/T/" in setup.format(tmp="/T")


def test_zstd_is_the_held_out_sixth_program() -> None:
    _desc, needs, template, exe = bench.PROGRAMS["zstd"]
    assert exe == "zstd" and "zstd" in needs
    assert "zstd" not in GAP_CALIBRATION_PROGRAMS and set(GAP_CALIBRATION_PROGRAMS) == {"python", "shell"}
    cmd = template.format(tmp="/T", src="/S")
    # one thread (-T1), level 3, overwriting its outputs (-f: the slowdown's runs repeat it), and
    # reading the generated corpus, not a file of this machine
    assert "-T1" in cmd and "-3" in cmd and cmd.count("-f") == 2 and "/T/corpus.txt" in cmd
    assert "/T/corpus.txt" in bench.SETUP["zstd"].format(tmp="/T")


@pytest.mark.skipif(any(shutil.which(p) is None for p in ("bash", "seq", "shuf", "awk")),
                    reason="needs bash, seq, shuf and awk")
def test_the_corpus_is_deterministic(tmp_path: Path) -> None:
    digests = []
    for run in ("a", "b"):
        d = tmp_path / run
        d.mkdir()
        subprocess.run(["bash", "-c", bench.SETUP["zstd"].format(tmp=d)], check=True, timeout=120)
        data = (d / "corpus.txt").read_bytes()
        assert data.count(b"\n") == 400_000
        assert len(data) == 20_884_016, "the corpus's size is the one docs/record-replay.md states"
        assert re.fullmatch(rb"0000001 \d+ [0-9a-f]+ row-\d+ of the generated table", data.split(b"\n", 1)[0])
        digests.append(hashlib.sha256(data).hexdigest())
    assert digests[0] == digests[1]


def test_record_program_writes_the_input_before_the_runs(tmp_path: Path, monkeypatch) -> None:
    from movelab import record
    from movelab.record import _build

    seen: list[str] = []

    def check(cmd: str) -> None:
        corpus = re.search(r"(\S+/corpus\.txt)", cmd)
        assert corpus and Path(corpus.group(1)).is_file(), "the program ran before its input was written"
        seen.append(cmd)

    monkeypatch.setitem(bench.SETUP, "zstd", "printf 'x\\n' > {tmp}/corpus.txt")
    monkeypatch.setattr(_build, "library", lambda: Path("/nonexistent/lib.so"))
    monkeypatch.setattr(bench, "_slowdown", lambda cmd, lib, runs: check(cmd) or {"plain_s": 1.0})
    monkeypatch.setattr(record, "run", lambda argv, *a, **k: check(argv[-1]) or pd.DataFrame())
    df, slow = bench.record_program("zstd", tmp_path, runs=1)
    assert len(seen) == 2 and slow == {"plain_s": 1.0} and df.empty


def test_a_failing_setup_is_an_error_naming_it(tmp_path: Path, monkeypatch) -> None:
    from movelab.record import _build

    monkeypatch.setitem(bench.SETUP, "zstd", "echo no corpus >&2; exit 3")
    monkeypatch.setattr(_build, "library", lambda: Path("/nonexistent/lib.so"))
    monkeypatch.setattr(bench, "_slowdown", lambda *a: pytest.fail("ran without its input"))
    with pytest.raises(RuntimeError, match=r"zstd: generating its input failed.*no corpus"):
        bench.record_program("zstd", tmp_path, runs=1)


def test_the_makefile_installs_zstd_only_for_make_bench() -> None:
    mk = (REPO / "Makefile").read_text()
    debs = re.search(r"^RECORD_DEBS := (.*)$", mk, re.M)
    assert debs and "zstd" in debs.group(1).split()
    targets = dict(re.findall(r"^([a-z-]+):(.*)$", mk, re.M))
    assert "bench-record-deps" in targets["bench"]
    for t in ("test", "test-python", "test-rust", "install", "reproduce"):
        assert "bench-record-deps" not in targets.get(t, ""), f"make {t} would install the demonstration programs"
