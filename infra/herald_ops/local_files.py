"""Files Herald's tools leave on an operator's or developer's machine: the running cloud's state, the saved
snapshot of `make dev` (every local secret), redrive journals. Each is readable by its owner alone from its
first byte, and the `.herald/` folder that holds them is the owner's alone too."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

LOCAL_FOLDER = ".herald"


def private_directory(folder: Path) -> None:
    """Make `folder` (and any missing folder above it) 0700, and `.herald/` with every folder inside it above
    `folder`; a folder of the operator's own choosing outside `.herald/` that already exists is left as it is."""
    missing = [directory for directory in (folder, *folder.parents) if not directory.exists()]
    for directory in reversed(missing):
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)  # mkdir's mode is only what the umask leaves
    for directory in (folder, *folder.parents):
        if LOCAL_FOLDER not in directory.parts:
            break
        os.chmod(directory, 0o700)
        if directory.name == LOCAL_FOLDER:
            break


def write_private(path: Path, text: str) -> None:
    """Write `path` whole or not at all (readers see the old file or the new one, by a rename), created 0600 with
    O_CREAT|O_EXCL before its first byte, in a private folder."""
    private_directory(path.parent)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
