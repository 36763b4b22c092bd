"""How `make dev` stops: Ctrl-C and SIGTERM reach the local cloud, but a SIGINT sent to `make` alone does not
(make does not pass it on and waits for its recipe forever); the local cloud watches for it in /proc."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path


def _caught_signals(pid: int) -> int | None:
    """The signals a process handles (Linux's /proc `SigCgt` mask), or None where that cannot be read."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    masks = [line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")]
    return int(masks[0], 16) if masks else None


def watch_make(stop: threading.Event, stop_for: Callable[[str], None]) -> None:
    """Stop when the `make` running this (`make dev`) is sent SIGINT alone: make does not pass SIGINT on (a
    terminal sends it to the whole process group) and waits for its recipe forever. Its handler resets SIGINT
    to the default before it waits, which Linux shows in /proc; elsewhere only Ctrl-C and SIGTERM stop it."""
    parent = os.getppid()
    try:
        name = Path(f"/proc/{parent}/comm").read_text().strip()
    except OSError:
        return
    caught = _caught_signals(parent)
    sigint = 1 << (signal.SIGINT - 1)
    if name not in ("make", "gmake") or caught is None or not caught & sigint:
        return

    def watch() -> None:
        while not stop.wait(0.5):
            now = _caught_signals(parent)
            if now is None or not now & sigint:
                stop_for(f"`make` (pid {parent}) was interrupted")
                return

    threading.Thread(target=watch, name="watch-make", daemon=True).start()
