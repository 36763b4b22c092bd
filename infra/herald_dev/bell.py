"""A user's inbox bell for `herald bell`: what an app's WebSocket client sees, printed a line a frame."""

from __future__ import annotations

import json
import os
import sys
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect


def frame_text(frame: dict[str, object]) -> str:
    """`inbox_updated` as the bell a user sees; any other frame as it came."""
    if frame.get("type") == "inbox_updated":
        return f"bell: {frame.get('unreadCount')} unread (version {frame.get('version')})"
    return f"bell: {json.dumps(frame, ensure_ascii=False)}"


def ring(url: str, token: str, until_unread: int | None, seconds: float, ready_fd: int) -> int:
    """Connect, tell `ready_fd` (b"1" connected, b"0" not), then print each frame until one shows
    `until_unread`, the connection closed or `seconds` passed. As the contract asks of a client, a count whose
    version is not newer than one already shown is dropped (a push carries the count when it is sent)."""
    deadline = time.monotonic() + seconds
    try:
        connection = connect(f"{url}/?token={token}", open_timeout=10)
    except (OSError, TimeoutError, ConnectionClosed) as error:
        print(f"error: the bell could not connect to {url}: {error}", file=sys.stderr)
        os.write(ready_fd, b"0")
        return 1
    shown_version = -1
    with connection:
        print(f"bell: connected to {url}", flush=True)
        os.write(ready_fd, b"1")
        os.close(ready_fd)
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                frame = json.loads(connection.recv(timeout=remaining))
            except (TimeoutError, ConnectionClosed):
                break
            if frame.get("type") == "inbox_updated":
                if int(frame.get("version", 0)) <= shown_version:
                    continue
                shown_version = int(frame.get("version", 0))
            print(frame_text(frame), flush=True)
            if until_unread is not None and frame.get("unreadCount") == until_unread:
                break
    return 0
