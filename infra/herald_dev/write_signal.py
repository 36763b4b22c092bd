"""A local cloud's stream readers wake when its functions write to DynamoDB, whichever engine serves the table.

The embedded moto counts the writes it serves itself (`moto_patches.DYNAMODB_WRITES`). DynamoDB Local is another
process, so there each Lambda instance and the HTTP function's server tell the cloud of their own writes: a
datagram on loopback after each write call (`HERALD_LOCAL_WRITE_SIGNAL` names the port), and so does the cloud's
own process (its TTL sweeps, the state it loads). A reader then waits for the next write instead of asking DynamoDB
Local for records four times a second per shard, which kept a Java core a quarter busy while nothing happened. A
write from outside the cloud (a test's own, a `herald-ops` verb) is not told: the reader's longest wait bounds how
late it is seen.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import Any

SIGNAL_VARIABLE = "HERALD_LOCAL_WRITE_SIGNAL"
_HOST = "127.0.0.1"
WRITE_ACTIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


class WriteSignal:
    """Counts the DynamoDB writes seen (served by the embedded moto, or told by the functions), so a local stream's
    reader sleeps until one comes instead of asking for new records four times a second."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.generation = 0

    def wake(self) -> None:
        """Every waiting reader looks again (a write, or the cloud stopping)."""
        with self._changed:
            self.generation += 1
            self._changed.notify_all()

    def wait_after(self, generation: int, timeout_s: float) -> None:
        """Until a write after `generation` was counted, or `timeout_s`."""
        with self._changed:
            self._changed.wait_for(lambda: self.generation != generation, timeout_s)


class WriteListener:
    """The cloud's end: every datagram is a write somewhere; each wakes the readers waiting on `signal`."""

    def __init__(self) -> None:
        self.signal = WriteSignal()
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind((_HOST, 0))
        threading.Thread(target=self._listen, name="dynamodb-write-signal", daemon=True).start()

    @property
    def environment(self) -> dict[str, str]:
        """What a function's process needs to tell this listener of its writes."""
        return {SIGNAL_VARIABLE: str(self._socket.getsockname()[1])}

    def _listen(self) -> None:
        while self._socket.recv(16):  # the thread ends with the cloud's process
            self.signal.wake()


def tell_writes_from_this_process() -> None:
    """In a process of the cloud (a function's, or its own), when the cloud listens: a datagram after each DynamoDB
    write call, on boto3's default session (before any client is made: a client copies its session's hooks)."""
    port = os.environ.get(SIGNAL_VARIABLE)
    if not port:
        return
    import boto3

    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    address = (_HOST, int(port))

    def written(model: Any, **_: Any) -> None:
        if model.name in WRITE_ACTIONS:
            with contextlib.suppress(OSError):  # the cloud is stopping: nobody waits
                sender.sendto(b"w", address)

    boto3._get_default_session().events.register("after-call.dynamodb.*", written)
