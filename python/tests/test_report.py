"""``movelab report DIR``: the static page lists every reproduction found in DIR (including one the
package has never heard of), its tolerance line, the paper's values beside movelab's, and a page per
sweep; a real headless Chromium opens it, takes a screenshot, and every image loads."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from movelab import sweep
from movelab.cli import app
from movelab.report import write_report
from typer.testing import CliRunner

runner = CliRunner()


def cli(*args: object, code: int = 0) -> str:
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == code, f"exit {r.exit_code} for {args}:\n{r.output}\n{r.exception!r}"
    return r.output


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    """Small runs of the three reproductions, a reproduction the package does not know, and a sweep."""
    d = tmp_path_factory.mktemp("reports")
    cli("reproduce", "--workers", "1", "rowclone-latency", "--out", d / "rowclone-latency")
    cli("reproduce", "--workers", "1", "zhao-copy-engine", "--packets", "5", "--out", d / "zhao-copy-engine")
    cli("reproduce", "--workers", "1", "rowclone-fork", "--sizes", "4", "--pages", "2,64", "--zero-pages", "16",
        "--out", d / "rowclone-fork")
    new = d / "someone-elses-repro"
    new.mkdir()
    (new / "someone-elses-repro.json").write_text(json.dumps([{"case": "a", "speedup": 1.5, "paper_speedup": 1.4}]))
    shutil.copy(d / "rowclone-latency" / "rowclone-latency.png", new / "speedup.png")
    sweep.run({"simulator": "dram", "config": "ddr3-1600k-bench", "workload": {"kind": "random", "count": 500},
               "axes": {"controller.scheduler": ["frfcfs", "fcfs"], "workload.seed": [1, 2]},
               "keep": ["cycles", "read_latency.mean_ns"]}, d / "sweeps" / "sched.parquet", workers=1)
    assert "index.html" in cli("report", d)
    return d


NAMES = ["rowclone-fork", "rowclone-latency", "someone-elses-repro", "zhao-copy-engine"]


def test_index_lists_every_reproduction_with_its_verdict(reports: Path) -> None:
    page = (reports / "index.html").read_text()
    listed = re.findall(r'<h2 id="([^"]+)" class="reproduction"', page)
    assert listed == NAMES
    assert page.count("within tolerance") >= 1
    assert "no tolerance stated" in page  # the unknown reproduction
    assert 'class="paper"' in page and "paper_latency_ns" in page  # the paper's values beside movelab's
    assert "Beside the paper" in page  # rowclone-fork's statements
    assert 'href="sweep-sweeps-sched.html"' in page
    sweep_page = (reports / "sweep-sweeps-sched.html").read_text()
    assert 'id="sweep-data"' in sweep_page and "read_latency.mean_ns" in sweep_page


def test_report_never_replaces_a_page_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html>mine</html>")
    with pytest.raises(FileExistsError, match="--force"):
        write_report(tmp_path)
    assert "--force" in cli("report", tmp_path, code=2)
    write_report(tmp_path, force=True)
    # An empty directory: every reproduction the package has is listed as missing, with its command.
    page = (tmp_path / "index.html").read_text()
    for name in ["rowclone-fork", "rowclone-latency", "zhao-copy-engine"]:
        assert f"movelab reproduce {name} --out" in page
    write_report(tmp_path)  # its own page: replaced without --force
    assert "movelab report" in (tmp_path / "index.html").read_text()
    assert "not a directory" in cli("report", tmp_path / "nope", code=2)


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("skipped: Chromium is not installed; `make browser` installs it from the Debian packages "
                    "(as root), and `make test` runs that first")
    return exe


def _browse(exe: str, page: Path, *args: str) -> str:
    r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--virtual-time-budget=5000", *args, page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_the_report_in_a_real_browser(reports: Path) -> None:
    exe = _chromium()
    shot = reports / "screenshot.png"
    _browse(exe, reports / "index.html", "--window-size=1280,2400", f"--screenshot={shot}")
    assert shot.stat().st_size > 20_000
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dom = _browse(exe, reports / "index.html", "--dump-dom")
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:500]
    total = int(re.search(r'data-images-total="(\d+)"', body.group(1)).group(1))
    loaded = int(re.search(r'data-images-loaded="(\d+)"', body.group(1)).group(1))
    pngs = [p for p in reports.rglob("*.png") if p.name != "screenshot.png"]
    assert total == len(pngs) and loaded == total, body.group(1)
    for name in NAMES:
        assert f'href="#{name}"' in dom, name
    # The sweep page draws its plot (a line per scheduler) in the browser.
    dom = _browse(exe, reports / "sweep-sweeps-sched.html", "--dump-dom")
    svg = re.search(r'<svg id="plot".*?</svg>', dom, re.S)
    assert svg and svg.group(0).count("<polyline") == 2, dom[-3000:]


def test_two_reports_never_write_one_directory_at_once(tmp_path: Path) -> None:
    import sys

    holder = subprocess.Popen([sys.executable, "-c", "import sys; from pathlib import Path; "
                               "from movelab._util import output_lock\n"
                               f"with output_lock(Path({str(tmp_path / 'index.html')!r})):\n"
                               " print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        text = cli("report", tmp_path, code=2)
        assert "being written by process" in text and str(holder.pid) in text
        assert not (tmp_path / "index.html").exists()
    finally:
        holder.communicate("", timeout=30)
    assert "index.html" in cli("report", tmp_path)


def test_two_sweeps_whose_paths_share_a_slug_keep_a_page_each(reports: Path, tmp_path: Path) -> None:
    """sweeps/a/b-s.parquet and sweeps/a-b/s.parquet both slug to sweep-sweeps-a-b-s: one page
    used to overwrite the other, and both links led to it."""
    src = reports / "sweeps" / "sched.parquet"
    for rel in ("a/b-s.parquet", "a-b/s.parquet"):
        (tmp_path / Path(rel).parent).mkdir(parents=True, exist_ok=True)
        shutil.copy(src, tmp_path / rel)
    write_report(tmp_path)
    page = (tmp_path / "index.html").read_text()
    links = re.findall(r'class="sweep-link" href="([^"]+)"', page)
    assert len(links) == 2 and len(set(links)) == 2, links
    for link in links:
        assert (tmp_path / link).is_file()
    texts = {(tmp_path / link).read_text().split("Data: ")[1][:60] for link in links}
    assert len(texts) == 2  # each page shows its own file
