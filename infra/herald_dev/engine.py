"""A reference agent engine for `make dev`, so a newcomer can watch the turn queue work.

It opens a demo session (members 10002 and 10003, agent `assistant`), takes turns from the turn queue,
"works" on each for a configurable time in two steps, logs what it read, and finishes the turn through Herald's
engine route. Between the two steps it takes the messages sent meanwhile (`/pending`); what arrives after that
waits in the queue and comes back merged as the next turn. A turn whose text holds the word "approve" first asks
member 10002 for an approval, which arrives in 10002's IM as a confirm; the turn waits for the decision (it lets
go of its queue message: the decision follows it in the same message group) and goes on once it is told. It is
written on the Python SDK (clients/python: `ServiceClient`, `TurnReader`), as an engine team's would be.
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
APPROVER = "10002"  # whom a turn asking for an approval asks
ASKS_FOR_APPROVAL = "approve"  # a word in the turn's text that makes the engine ask first


class ReferenceEngine:
    def __init__(self, sqs: SQSClient, queue_url: str, http_url: str, key: str, turn_seconds: float) -> None:
        self._herald = ServiceClient(http_url, key, app_code=DEFAULT_APP_CODE, retries=1)
        self._reader = TurnReader(self._herald, sqs, queue_url, visibility_s=int(turn_seconds) + 60)
        self.turn_seconds = turn_seconds
        self._threads: list[threading.Thread] = []
        self._decisions: dict[str, dict[str, Any]] = {}  # approval id -> its decision, once told
        self._told = threading.Condition()

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
                if turn.get("type") == "approval.decided":
                    self._decided(turn, receipt)
                    continue
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
        said = turn["text"]  # what the engine reads at this step: the turn, then what it takes between the steps
        try:
            for step in (1, 2):
                if ASKS_FOR_APPROVAL in said.lower():
                    if self._approved(turn, receipt, said.splitlines()[-1][:200], step, stop) is None:
                        return  # stopped while waiting: the turn stays suspended at Herald
                    receipt = ""  # let go of while it waited
                if stop.wait(self.turn_seconds / 2):
                    return  # stopped mid-turn: the message comes back after its visibility timeout
                said = self._take_pending(turn) if step == 1 else ""
            state = self._finish(turn, receipt)
        except (HeraldError, httpx.HTTPError) as error:
            log.warning("turn %s: %s", turn["turn_id"], error)
            return
        log.info("turn %s finished; agent now %s (%s)", turn["turn_id"], state["state"], state["turn_id"] or "-")

    def _approved(
        self, turn: dict[str, Any], receipt: str, question: str, step: int, stop: threading.Event
    ) -> dict[str, Any] | None:
        """Ask, let go of the turn's queue message (if it still holds it), and wait until told the decision (None:
        stopped first)."""
        approval_id = f"ap-{turn['turn_id'].removeprefix('turn_')[:16]}-{step}"
        asked = self._herald.request_approval(
            turn["session_id"],
            turn["agent"],
            turn["turn_id"],
            {
                "approval_id": approval_id,
                "user_id": APPROVER,
                "text": f"May I go on with: {question}",
                "expire_in_s": 600,
            },
        )
        if receipt:
            self._reader.ack(receipt)
        log.info(
            "turn %s waits: asked %s for approval %s (confirm %s)",
            turn["turn_id"],
            APPROVER,
            approval_id,
            asked["confirm_id"],
        )
        with self._told:
            while approval_id not in self._decisions:
                if stop.is_set():
                    return None
                self._told.wait(0.5)
            decision = self._decisions.pop(approval_id)
        log.info(
            "turn %s resumed: approval %s %s by %s",
            turn["turn_id"],
            approval_id,
            decision["decision"],
            decision["decided_by"],
        )
        return decision

    def _decided(self, decision: dict[str, Any], receipt: str) -> None:
        log.info("told: approval %s of turn %s %s", decision["approval_id"], decision["turn_id"], decision["decision"])
        with self._told:
            self._decisions[decision["approval_id"]] = decision
            self._told.notify_all()
        self._reader.ack(receipt)

    def _take_pending(self, turn: dict[str, Any]) -> str:
        """Between the two steps: what was sent to the agent meanwhile joins this turn (its text: "" for none)."""
        taken = self._herald.take_pending(turn["session_id"], turn["agent"], turn["turn_id"], app_code=turn["app_code"])
        if not taken["message_ids"]:
            return ""
        log.info("turn %s took %d waiting message(s):\n%s", turn["turn_id"], len(taken["message_ids"]), taken["text"])
        return str(taken["text"])

    def _finish(self, turn: dict[str, Any], receipt: str) -> dict[str, Any]:
        if receipt:
            return self._reader.end(turn, receipt)
        return self._herald.turn(
            turn["session_id"], turn["agent"], turn["turn_id"], "finish", app_code=turn["app_code"]
        )

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
