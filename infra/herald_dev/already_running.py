"""Before a local cloud starts: is one already running from this checkout (its state file names a live process),
or does another program hold one of its ports? Either way it says so in one line, with what to do, and starts
nothing: a second `make dev` must never disturb the first (nor remove its state file)."""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path

from herald_dev.config import LocalCloudConfig


def refusal(config: LocalCloudConfig) -> str | None:
    """Why this local cloud must not start, or None."""
    running = _running_owner(config.state_file)
    if running is not None:
        pid, url = running
        return (
            f"a local cloud is already running from this checkout (pid {pid}, HTTP API on {url}): use it, "
            f"or stop it first (Ctrl-C where it runs, or `kill {pid}`)"
        )
    for name, port in _ports(config):
        if port > 0 and not _free(config.host, port):
            variable = f"HERALD_{name.upper().replace(' ', '_')}_PORT"
            return f"port {port} ({name}) is in use by another program: stop it, or run with {variable}=<another port>"
    return None


def _running_owner(state_file: Path | None) -> tuple[int, str] | None:
    """The live process that wrote the state file, and its HTTP URL; None when there is none (a stale file of a
    process that died is nobody's: the new cloud writes its own over it once it is ready)."""
    if state_file is None or not state_file.exists():
        return None
    try:
        state = json.loads(state_file.read_text())
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if pid == os.getpid() or not _alive(pid):
        return None
    return pid, str(state.get("http_url", "?"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError as error:
        return error.errno == errno.EPERM  # alive, another user's
    return True


def _ports(config: LocalCloudConfig) -> list[tuple[str, int]]:
    ports = [
        ("http", config.http_port),
        ("ws", config.ws_port),
        ("sample owner", config.sample_owner_port),
        ("console", config.console_port),
    ]
    if config.providers is None:  # the fakes run here (not in a `herald backing`)
        ports += [("tencent im", config.tencent_im_port), ("feishu", config.feishu_port)]
    if config.aws_endpoint is None:
        ports.append(("moto", config.moto_port))  # the embedded AWS
    return ports


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free; a listener's is not
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def owns(state_file: Path) -> bool:
    """Whether this process wrote the state file (only its owner may remove it)."""
    try:
        return int(json.loads(state_file.read_text())["pid"]) == os.getpid()
    except (OSError, ValueError, KeyError, TypeError):
        return False
