"""The layer as `sam build` makes it (layers/Makefile's `build-HeraldLayer`), built once for each version of its
inputs and shared by what reads it: the layer's own tests and the cold-start bench run in separate processes of one
`make test`, and each build is fifteen seconds of a core."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYERS = REPO / "layers"
BUILDS = REPO / ".herald" / "layer-builds"


def _version() -> str:
    """A digest of everything the build reads: its Makefile, the pinned requirements and every file of the package
    it copies (its bytecode caches aside, which the build removes)."""
    package = [path for path in (LAYERS / "herald").rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    inputs = [LAYERS / "Makefile", LAYERS / "requirements.txt", *package]
    digest = hashlib.sha256()
    for path in sorted(inputs):
        digest.update(f"{path.relative_to(LAYERS)}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def built_layer() -> Path:
    """The layer's `python` directory (what Lambda unpacks to /opt/python), built if this version has none yet. A
    lock makes a second process wait for the first one's build rather than make its own."""
    BUILDS.mkdir(parents=True, exist_ok=True)
    artifacts = BUILDS / _version()
    with (BUILDS / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (artifacts / "built").exists():
            for older in BUILDS.iterdir():  # builds of sources since changed
                if older.is_dir():
                    shutil.rmtree(older)
            command = ["make", "--no-print-directory", "-C", str(LAYERS), "build-HeraldLayer"]
            subprocess.run([*command, f"ARTIFACTS_DIR={artifacts}"], check=True, stdout=subprocess.DEVNULL)
            (artifacts / "built").touch()
    return artifacts / "python"
