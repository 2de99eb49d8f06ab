"""The calibration of Zhao et al.'s Table 3 reproduction, as a step that can be run again: the
instruction counts of ``tcp-rx`` (``driver``, ``ip``, ``tcp``, ``socket``, ``wakeup``, marked
calibrated in ``presets/workloads/tcp-rx.toml``) scaled together by one factor, and each scale
judged by how close the in-order SYNC_NLB cells of Table 3 (overall, faster copy and overlap at
512, 1024 and 1400 B: the nine calibrated results of ``presets/ledger.toml``) come to the paper's:
the root mean square of the nine differences, in points.

``python -m movelab.reproduce.zhao_refit --snoop-order parallel --scales 1.0,1.5,1.7`` prints one
line per scale. It runs the same simulations as the reproduction's in-order cells (BASE, BASE
without its copies, SYNC_NLB off-die, 200 packets) and computes the cells as it does. The counts
keep their proportions (1.0 is the preset); each is rounded to ten instructions. It fits only to
the calibrated cells, never to a predicted one; what it reports is a fit, not a prediction.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from movelab import _core

PLATFORM = "zhao-uma-emc"
PAYLOADS = [512, 1024, 1400]
#: The calibrated instruction counts.
COUNTS = ["driver", "ip", "tcp", "socket", "wakeup"]
#: Table 3, in-order SYNC_NLB (Zhao et al.): overall, faster copy, overlap, as fractions of BASE.
PAPER = {512: (0.425, 0.407, 0.018), 1024: (0.525, 0.514, 0.011), 1400: (0.563, 0.554, 0.009)}


def _workloads(folder: Path) -> tuple[str, str]:
    """``tcp-rx`` as shipped and without its copy (the reproduction's ``without_copies``), as files."""
    text = _core.package_file("workloads/tcp-rx.toml")
    nocopy, n = re.subn(r'\[\[ops\]\]\nkind = "copy"\n[^\[]*', "", text)
    if n != 1:
        raise ValueError("tcp-rx: expected exactly one copy op")
    with_copy, without = folder / "tcp-rx.toml", folder / "tcp-rx-nocopy.toml"
    with_copy.write_text(text)
    without.write_text(nocopy)
    return str(with_copy), str(without)


def preset_counts() -> dict[str, int]:
    """The calibrated counts as the preset has them."""
    text = _core.package_file("workloads/tcp-rx.toml")
    out = {}
    for k in COUNTS:
        m = re.search(rf"^{k}\s*=\s*(\d+)", text, re.M)
        if not m:
            raise ValueError(f"tcp-rx: no parameter {k}")
        out[k] = int(m.group(1))
    return out


def scaled(scale: float) -> dict[str, int]:
    """The preset's counts times ``scale``, each rounded to ten instructions."""
    if not scale > 0:
        raise ValueError(f"scale {scale!r} must be positive")
    return {k: int(round(v * scale / 10) * 10) for k, v in preset_counts().items()}


def cells(counts: dict[str, int], snoop_order: str = "serial", packets: int = 200) -> dict[int, tuple[float, ...]]:
    """In-order SYNC_NLB (overall, faster copy, overlap) per payload with ``counts``."""
    with tempfile.TemporaryDirectory() as d:
        wl, nocopy = _workloads(Path(d))

        def run(w: str, payload: int, over: dict[str, Any]) -> dict[str, Any]:
            p = dict(counts, payload=payload, packets=packets)
            ov = {"core": {"kind": "in-order"}, **over}
            return json.loads(_core.platform_run(PLATFORM, w, json.dumps(ov), json.dumps(p)))

        out = {}
        for pl in PAYLOADS:
            b, n = run(wl, pl, {}), run(nocopy, pl, {})
            m = run(wl, pl, {"copy": {"mechanism": "ce", "mode": "SYNC_NLB", "placement": "off-die",
                                      "snoop_order": snoop_order}})
            base, c_base = b["time_ns"], b["time_ns"] - n["time_ns"]
            red = 1 - m["time_ns"] / base
            faster = (c_base - m["offload_time_ns"]) / base
            out[pl] = (red, faster, red - faster)
        return out


def rms_points(c: dict[int, tuple[float, ...]]) -> float:
    """Root mean square difference from the paper's nine cells, in points."""
    d = [(c[pl][i] - PAPER[pl][i]) ** 2 for pl in c for i in range(3)]
    return (sum(d) / len(d)) ** 0.5 * 100


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snoop-order", default="serial", choices=["serial", "parallel"],
                    help="the off-die synchronous engine's snoops (default serial)")
    ap.add_argument("--scales", default="1.0", help="comma-separated factors on the counts (default 1.0)")
    a = ap.parse_args(argv)
    for s in (float(x) for x in a.scales.split(",")):
        counts = scaled(s)
        c = cells(counts, a.snoop_order)
        cols = " ".join(f"{pl}: {c[pl][0] * 100:.1f}/{c[pl][1] * 100:.1f}/{c[pl][2] * 100:.1f}" for pl in c)
        print(f"{a.snoop_order} x{s:g} {counts} {cols} rms {rms_points(c):.2f} points", flush=True)


if __name__ == "__main__":
    main()
