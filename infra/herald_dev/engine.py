"""A reference agent engine for `make dev`, so a newcomer can watch the turn queue work.

It opens a demo session (members 10002 and 10003, agent `assistant`), takes turns from the turn queue,
"works" on each for a configurable time, logs what it read, and finishes the turn through Herald's engine
route. Messages sent meanwhile wait in the queue and come back merged as the next turn. It is written on the
Python SDK (clients/python: `ServiceClient`, `TurnReader`), as an engine team's would be.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

import httpx

from herald.ids import DEFAULT_APP_CODE
from herald_client import HeraldError, ServiceClient, TurnReader

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

log = logging.getLogger("reference-engine")

DEMO_SESSION = "demo"
DEMO_AGENT = "assistant"
DEMO_MEMBERS = {"10002": "developer", "10003": "developer"}


class ReferenceEngine:
    def __init__(self, sqs: SQSClient, queue_url: str, http_url: str, key: str, turn_seconds: float) -> None:
        self._herald = ServiceClient(http_url, key, app_code=DEFAULT_APP_CODE, retries=1)
        self._reader = TurnReader(self._herald, sqs, queue_url, visibility_s=int(turn_seconds) + 60)
        self.turn_seconds = turn_seconds
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ an event source of the local cloud
    def start(self, stop: threading.Event) -> None:
        thread = threading.Thread(target=self._run, args=(stop,), name="reference-engine", daemon=True)
        thread.start()
        self._threads.append(thread)

    def join(self, timeout: float) -> None:
        for thread in self._threads:
            thread.join(timeout)

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set() and not self._open_demo_session():
            stop.wait(0.2)  # the HTTP API is still starting
        while not stop.is_set():
            try:
                turns = list(self._reader.turns(wait_s=1))
            except Exception:
                log.warning("turn queue unavailable", exc_info=True)
                stop.wait(1)
                continue
            for turn, receipt in turns:
                worker = threading.Thread(target=self._work, args=(turn, receipt, stop), daemon=True)
                worker.start()
                self._threads.append(worker)
            self._threads = [t for t in self._threads if t.is_alive()]

    # ------------------------------------------------------------------ the engine's work
    def _work(self, turn: dict[str, Any], receipt: str, stop: threading.Event) -> None:
        log.info(
            "turn %s for %s/%s (%d message(s), lang %s):\n%s",
            turn["turn_id"],
            turn["session_id"],
            turn["agent"],
            len(turn["message_ids"]),
            turn["lang"],
            turn["text"],
        )
        if stop.wait(self.turn_seconds):
            return  # stopped mid-turn: the message comes back after its visibility timeout
        try:
            state = self._reader.end(turn, receipt)
        except (HeraldError, httpx.HTTPError) as error:
            log.warning("finishing turn %s: %s", turn["turn_id"], error)
            return
        log.info("turn %s finished; agent now %s (%s)", turn["turn_id"], state["state"], state["turn_id"] or "-")

    def _open_demo_session(self) -> bool:
        try:
            self._herald.put_session(DEMO_SESSION, DEMO_MEMBERS, [DEMO_AGENT])
        except (HeraldError, httpx.HTTPError):
            return False
        log.info(
            "demo session %r open: members %s may talk to %r (each turn takes %.0f s)",
            DEMO_SESSION,
            ", ".join(DEMO_MEMBERS),
            DEMO_AGENT,
            self.turn_seconds,
        )
        return True
