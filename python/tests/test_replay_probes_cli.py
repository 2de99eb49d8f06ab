"""The probe rules as users reach them: ``calibration.load_probes`` / ``probe_rules`` (the Python
API's arguments from a platform description) and ``movelab replay`` / ``movelab what-if`` with
``--probes``, ``--buffer-states``, ``--cold-copies`` and ``--streams`` (off by default), on a
synthetic trace."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from movelab.record import calibration
from test_replay_buffers import _events

FILL = {"ns": {"hot": 24.0, "llc": 26.0, "memory": 120.0}, "copy_bytes": 1024, "per_buffer": 15,
        "sweep": {"1": 24.0, "16": 30.0, "64": 120.0}}
COLD = {"sizes": {"1024": {"hot_ns": 40.0, "cold_ns": 340.0, "extra_ns": 300.0},
                  "2048": {"hot_ns": 45.0, "cold_ns": 465.0, "extra_ns": 420.0}},
        "sweep_size": 1024, "sweep": {"4": 100.0, "8": 150.0, "16": 300.0}}


def test_probe_rules_give_the_replay_its_arguments_and_name_the_missing_probe(tmp_path: Path) -> None:
    rules = calibration.probe_rules({"fill": FILL, "cold_copy": COLD}, cold_copies=True, streams=True)
    assert rules["dst_write"] == calibration.dst_write_costs(FILL)
    assert rules["llc_boundary"] == calibration.llc_boundary(FILL)
    assert rules["cold_copy"] == {1024: 300.0, 2048: 420.0} and rules["streams"] is True
    assert rules["cold_copy_boundary"] == calibration.cold_copy_boundary(COLD)
    assert "cold_copy" not in calibration.probe_rules({"fill": FILL})
    assert calibration.probe_rules({}, buffer_states=False) == {}
    with pytest.raises(ValueError, match=r"no fill probe.*movelab bench record"):
        calibration.probe_rules({"cold_copy": COLD})
    with pytest.raises(ValueError, match=r"no cold-copy probe.*python -m movelab.record.calibration cold"):
        calibration.probe_rules({"fill": FILL}, cold_copies=True)
    with pytest.raises(ValueError, match="needs the cold small-copy rule"):
        calibration.probe_rules({"fill": FILL}, streams=True)
    with pytest.raises(ValueError, match="needs each buffer in its own state"):
        calibration.probe_rules({"fill": FILL, "cold_copy": COLD}, buffer_states=False, cold_copies=True)
    # files: platform.json's keys, or the cold-copy probe alone; later files win
    (tmp_path / "platform.json").write_text(json.dumps({"platform": {}, "fill": FILL}))
    (tmp_path / "cold.json").write_text(json.dumps(COLD))
    got = calibration.load_probes([tmp_path / "platform.json", tmp_path / "cold.json"])
    assert got["fill"] == FILL and got["cold_copy"] == COLD
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match=r"bad.json: not JSON"):
        calibration.load_probes([tmp_path / "bad.json"])
    with pytest.raises(ValueError, match=r"missing.json: cannot be read"):
        calibration.load_probes([tmp_path / "missing.json"])
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(ValueError, match="a JSON object is needed"):
        calibration.load_probes([tmp_path / "list.json"])


def _cli(*args: str) -> Any:
    """The command in process (typer's runner): exit_code, stdout and stderr apart."""
    from movelab.cli import app
    from typer.testing import CliRunner

    r = CliRunner(env={"COLUMNS": "240"}).invoke(app, list(args))
    r.returncode = r.exit_code
    return r


def test_cli_replay_and_what_if_reach_the_probe_rules(tmp_path: Path) -> None:
    """movelab replay and what-if take the rules from --probes; each option's misuse and a missing
    probe are refused, the latter naming the command that measures it; the rule by context moves the
    replay's prediction as the Python API's does."""
    import movelab
    from movelab.record.trace import write_parquet

    df = _events(step=1024)
    trace = tmp_path / "t.parquet"
    write_parquet(df, {**df.attrs["movelab"], "command": ["synthetic"], "wall_ns": 1e6, "program_ns": 1e6}, trace)
    plat = tmp_path / "platform.json"
    plat.write_text(json.dumps({"platform": {}, "fill": FILL}))
    cold = tmp_path / "cold.json"
    cold.write_text(json.dumps(COLD))
    base = ["--samples", "2", "--no-call-cost"]
    r = _cli("replay", str(trace), *base, "--cold-copies")
    assert r.returncode == 2 and "--cold-copies" in r.stderr and "needs --buffer-states" in r.stderr
    r = _cli("replay", str(trace), *base, "--buffer-states")
    assert r.returncode == 2 and "needs --probes" in r.stderr
    r = _cli("replay", str(trace), *base, "--buffer-states", "--streams", "--probes", str(plat))
    assert r.returncode == 2 and "needs --cold-copies" in r.stderr
    r = _cli("what-if", str(trace), *base, "--buffer-states", "--cold-copies", "--probes", str(plat))
    assert r.returncode == 2 and "no cold-copy probe" in r.stderr and "movelab bench record" in r.stderr
    r = _cli("replay", str(trace), *base, "--probes", str(plat))
    assert r.returncode == 2 and "applies with --buffer-states" in r.stderr
    r = _cli("replay", str(trace), *base, "--cache", "warm", "--buffer-states", "--probes", str(plat))
    assert r.returncode == 2 and "--cache tracked only" in r.stderr
    runs = {}
    for name, extra in (("fill", []), ("cold", ["--cold-copies"]), ("streams", ["--cold-copies", "--streams"])):
        r = _cli("replay", str(trace), *base, "--format", "json", "--buffer-states", "--probes", str(plat),
                 "--probes", str(cold), *extra)
        assert r.returncode == 0, r.stderr
        runs[name] = json.loads(r.stdout)["replays"][0]["summary"]
    assert runs["fill"]["cold_copy"] is None and runs["cold"]["cold_copy"] == {"1024": 300.0, "2048": 420.0}
    assert runs["streams"]["streams"] and runs["streams"]["cold_copy_boundary"] == calibration.cold_copy_boundary(COLD)
    api = movelab.replay(df, "rowclone-system", "cpu", samples=2,
                         **calibration.probe_rules({"fill": FILL, "cold_copy": COLD}, cold_copies=True, streams=True))
    assert runs["streams"]["movement_ns"] == pytest.approx(api.summary["movement_ns"])
    assert runs["fill"]["movement_ns"] != pytest.approx(runs["cold"]["movement_ns"])
    r = _cli("what-if", str(trace), *base, "--format", "json", "--buffer-states", "--cold-copies", "--streams",
             "--probes", str(plat), "--probes", str(cold))
    assert r.returncode == 0, r.stderr
    cpu = next(m for m in json.loads(r.stdout)["mechanisms"] if m["mechanism"] == "cpu")
    assert cpu["movement_ns"] == pytest.approx(api.summary["movement_ns"])


def test_bench_record_refuses_streams_without_cold_copies(tmp_path: Path) -> None:
    """Refused before anything is recorded or written."""
    r = _cli("bench", "record", "--no-cold-copies", "--streams", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "--streams needs --cold-copies" in r.stderr
    r = _cli("bench", "record", "--no-buffer-states", "--cold-copies", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and "--cold-copies needs --buffer-states" in r.stderr
    assert not (tmp_path / "out").exists()


def test_bench_record_validates_with_every_rule_by_default() -> None:
    """All four probe rules on unless turned off; turning one off turns off the rules that refine
    it (so --no-buffer-states alone gives the mixed rule); asking for a rule without the one it
    refines is refused."""
    from movelab.record.bench import validation_rules

    assert validation_rules() == (True, True, True, True)
    assert validation_rules(buffer_states=False) == (False, False, False, False)
    assert validation_rules(cold_copies=False) == (True, False, False, False)
    assert validation_rules(streams=False) == (True, True, False, False)
    assert validation_rules(stream_copies=False) == (True, True, True, False)
    assert validation_rules(True, True, True, True) == (True, True, True, True)
    for args, flag in (((False, True), "--cold-copies"), ((None, False, True), "--streams"),
                       ((None, None, False, True), "--stream-copies")):
        with pytest.raises(ValueError, match=f"^{flag} needs"):
            validation_rules(*args)
