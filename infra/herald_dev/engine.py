"""A reference agent engine for `make dev`, so a newcomer can watch the turn queue work.

It opens a demo session (members 10002 and 10003, agent `assistant`), takes turns from the turn queue,
"works" on each for a configurable time, logs what it read, and finishes the turn through Herald's engine
route. Messages sent meanwhile wait in the queue and come back merged as the next turn.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING

from herald.ids import DEFAULT_APP_CODE
from herald_dev.service_client import ServiceClient

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

log = logging.getLogger("reference-engine")

DEMO_SESSION = "demo"
DEMO_AGENT = "assistant"
DEMO_MEMBERS = {"10002": "developer", "10003": "developer"}


class ReferenceEngine:
    def __init__(self, sqs: SQSClient, queue_url: str, http_url: str, key: str, turn_seconds: float) -> None:
        self._sqs = sqs
        self._queue_url = queue_url
        self._herald = ServiceClient(http_url, key)
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
                messages = self._sqs.receive_message(
                    QueueUrl=self._queue_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=1,
                    VisibilityTimeout=int(self.turn_seconds) + 60,
                ).get("Messages", [])
            except Exception:
                log.warning("turn queue unavailable", exc_info=True)
                stop.wait(1)
                continue
            for message in messages:
                worker = threading.Thread(target=self._work, args=(message, stop), daemon=True)
                worker.start()
                self._threads.append(worker)
            self._threads = [t for t in self._threads if t.is_alive()]

    # ------------------------------------------------------------------ the engine's work
    def _work(self, message: MessageTypeDef, stop: threading.Event) -> None:
        turn = json.loads(message["Body"])
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
        path = (
            f"/internal/v1/sessions/{turn['session_id']}/agents/{turn['agent']}/turns/{turn['turn_id']}/finish"
            f"?app_code={turn['app_code']}"
        )
        status, body = self._herald.call("POST", path)
        if status == 200:
            state = body["data"]
            log.info("turn %s finished; agent now %s (%s)", turn["turn_id"], state["state"], state["turn_id"] or "-")
            self._sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"])
        else:
            log.warning("finishing turn %s: HTTP %s %s", turn["turn_id"], status, body)

    def _open_demo_session(self) -> bool:
        body = {"app_code": DEFAULT_APP_CODE, "members": DEMO_MEMBERS, "agents": [DEMO_AGENT], "status": "active"}
        status, _ = self._herald.call("PUT", f"/internal/v1/sessions/{DEMO_SESSION}", body)
        if status == 200:
            log.info(
                "demo session %r open: members %s may talk to %r (each turn takes %.0f s)",
                DEMO_SESSION,
                ", ".join(DEMO_MEMBERS),
                DEMO_AGENT,
                self.turn_seconds,
            )
        return status == 200
