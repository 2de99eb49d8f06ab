"""Builds the recording interposer (``interposer.c``, shipped as package data beside this module)
with the system C compiler, once, into a per-user cache directory keyed by the source's digest and
the compiler's version. The same code path serves a source checkout and a pip-installed wheel: the
wheel carries the C source, not a binary, so it needs no platform-specific payload."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

#: The flags the interposer needs: -fno-builtin and -fno-tree-loop-distribute-patterns keep the
#: compiler from turning the library's own byte loops into calls to memcpy/memset (which would be
#: the interposed functions); initial-exec TLS needs no allocation on first access.
CFLAGS = ["-O2", "-fPIC", "-shared", "-fno-builtin", "-fno-tree-loop-distribute-patterns",
          "-fvisibility=hidden", "-ftls-model=initial-exec", "-Wall"]
LIBS = ["-ldl", "-lpthread"]


def source_text(name: str = "interposer.c") -> bytes:
    return resources.files("movelab.record").joinpath(name).read_bytes()


def cache_dir() -> Path:
    """MOVELAB_CACHE_DIR, else $XDG_CACHE_HOME/movelab, else ~/.cache/movelab."""
    if os.environ.get("MOVELAB_CACHE_DIR"):
        return Path(os.environ["MOVELAB_CACHE_DIR"])
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "movelab"


def compiler() -> str:
    cc = os.environ.get("MOVELAB_CC") or os.environ.get("CC") or "cc"
    path = shutil.which(cc)
    if path is None:
        raise RuntimeError(f"movelab record needs a C compiler to build its interposer and found none "
                           f"('{cc}' is not on PATH); install one (e.g. gcc) or set MOVELAB_CC")
    return path


def library() -> Path:
    """The path of the built interposer, building it first if needed."""
    return _built("interposer.c", "libmovelab_record.so", CFLAGS, LIBS, "record")


#: The calibration program (calibrate.c): an ordinary executable; -fno-builtin keeps its calls to
#: memcpy and memset calls (the ones the interposer measures).
PROGRAM_CFLAGS = ["-O2", "-fno-builtin", "-Wall"]


def calibration_program() -> Path:
    """The path of the built calibration program (calibrate.c), building it first if needed."""
    return _built("calibrate.c", "movelab_calibrate", PROGRAM_CFLAGS, [], "calibrate")


def _built(source: str, target: str, cflags: list[str], libs: list[str], tag: str) -> Path:
    src = source_text(source)
    cc = compiler()
    try:
        version = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise RuntimeError(f"cannot run the C compiler {cc}: {e}") from None
    digest = hashlib.sha256(src + version.encode() + " ".join(cflags).encode()).hexdigest()[:16]
    out_dir = cache_dir() / f"{tag}-{digest}"
    lib = out_dir / target
    if lib.is_file():
        return lib
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        which = ("MOVELAB_CACHE_DIR" if os.environ.get("MOVELAB_CACHE_DIR")
                 else "XDG_CACHE_HOME" if os.environ.get("XDG_CACHE_HOME") else "the home directory's .cache")
        raise RuntimeError(f"cannot make movelab's build cache {cache_dir()} (from {which}): "
                           f"{e.strerror or e}") from None
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        c = Path(tmp) / source
        c.write_bytes(src)
        so = Path(tmp) / "out"
        proc = subprocess.run([cc, *cflags, str(c), "-o", str(so), *libs], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"building {source} with {cc} failed:\n{proc.stderr.strip()}")
        os.replace(so, lib)  # atomic: a concurrent build gives the same bytes
    return lib
