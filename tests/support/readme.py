"""The README's ```bash blocks, and running one as a newcomer pastes it into a shell."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

from tests.support.local_cloud import REPO

DEV_STATE = REPO / ".herald" / "local.json"


def readme_blocks() -> dict[str, str]:
    """Each ```bash block of the README, by its first line."""
    blocks = re.findall(r"^```bash\n(.*?)^```", (REPO / "README.md").read_text(), flags=re.S | re.M)
    return {block.splitlines()[0]: block for block in blocks}


def newcomer_environment() -> dict[str, str]:
    """A shell's environment without the tests' own settings (the README's defaults apply)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "AWS_", "POWERTOOLS_"))}


def run_block(block: str, type_after: str = "", typed: str = "", leave_after: str = "") -> str:
    """The block through bash, in the repository; its output (it must succeed). Like a person at a terminal:
    once the output shows `type_after`, `typed` is typed; once it shows `leave_after`, Ctrl-D."""
    process = subprocess.Popen(
        ["bash", "-c", block],
        cwd=REPO,
        env=newcomer_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    output: list[str] = []
    if not type_after:
        process.stdin.close()
    for line in process.stdout:
        output.append(line)
        if type_after and type_after in line and not process.stdin.closed:
            process.stdin.write(typed)
            process.stdin.flush()
        if leave_after and leave_after in line and not process.stdin.closed:
            process.stdin.close()
    process.wait(timeout=120)
    text = "".join(output)
    assert process.returncode == 0, text
    return text


def json_values(output: str) -> list[Any]:
    """Every JSON object printed, in order (curl prints them without a newline between)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while (start := output.find("{", at)) != -1:
        try:
            value, at = decoder.raw_decode(output, start)
        except ValueError:
            at = start + 1
            continue
        found.append(value)
    return found
