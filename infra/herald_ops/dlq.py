"""Dead-letter queues for operators: list, peek, redrive and purge (`herald-ops dlq ...`).

Which queue is whose dead-letter queue comes from template.yaml (a queue's `RedrivePolicy`, a stream
mapping's `OnFailure` destination); the physical queues from the running local cloud or a deployed stack.

Redrive does not use SQS's `StartMessageMoveTask` (not available locally; on FIFO queues it interleaves
moved messages with new traffic at its own pace). It moves messages itself, per message group in the order
the DLQ holds them, at a bounded rate:

1. receive a batch from the DLQ (hidden from other readers for `visibility_s`);
2. for each message, in order: record "sending" in the journal, send it to its source queue with its group
   and the deduplication id `redrive-<DLQ message id>`, record "sent", delete it from the DLQ, forget it.

Interrupted anywhere, a later run (the same journal) resumes: a message recorded "sent" is only deleted,
never sent again; one recorded "sending" is sent again with the same deduplication id, which SQS drops if the
first send landed less than five minutes before. Order within a group holds because a FIFO group hands out
its next message only after the previous one is deleted or released. Redriven messages join their group
behind newer traffic, which each queue tolerates by design: the events queue's messages only say "this
service has work" (the order lives in DynamoDB); an IM push is keyed by its confirm and status, and the
sender skips one already delivered; a turn is the agent's one current turn until the engine finishes it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from herald_ops.local_files import write_private
from herald_ops.template import StackTemplate

DEDUP_PREFIX = "redrive-"
_FORWARDED_ATTRIBUTES_DROPPED = {"failure_reason", "source_message_id"}


@dataclass(frozen=True)
class DeadLetterQueue:
    logical_id: str
    url: str
    fifo: bool
    source_logical_id: str | None  # the queue it takes failures from; None for a stream's failure destination
    source_url: str | None
    kind: str  # "queue" (a redrive policy's target) or "stream failures" (an OnFailure destination)

    @property
    def redrivable(self) -> bool:
        return self.source_url is not None


def dead_letter_queues(template: StackTemplate, queue_urls: dict[str, str]) -> list[DeadLetterQueue]:
    """Every DLQ the template declares, with the URLs of the running stack (logical id -> queue URL)."""
    found: dict[str, DeadLetterQueue] = {}
    for logical_id, resource in template.of_type("AWS::SQS::Queue").items():
        policy = resource.get("Properties", {}).get("RedrivePolicy")
        if not policy:
            continue
        target = _logical_id_of(policy["deadLetterTargetArn"])
        fifo = bool(template.resolve(template.resources[target].get("Properties", {}).get("FifoQueue", False)))
        found[target] = DeadLetterQueue(target, queue_urls[target], fifo, logical_id, queue_urls[logical_id], "queue")
    for logical_id in template.of_type("AWS::Serverless::Function"):
        for event in template.function_properties(logical_id).get("Events", {}).values():
            destination = event.get("Properties", {}).get("DestinationConfig", {}).get("OnFailure", {})
            if "Destination" in destination:
                target = _logical_id_of(destination["Destination"])
                found.setdefault(
                    target, DeadLetterQueue(target, queue_urls[target], False, None, None, "stream failures")
                )
    return sorted(found.values(), key=lambda dlq: dlq.logical_id)


def _logical_id_of(reference: Any) -> str:
    """`!GetAtt X.Arn` as the template loader reads it."""
    if isinstance(reference, dict) and "Fn::GetAtt" in reference:
        value = reference["Fn::GetAtt"]
        return str(value[0] if isinstance(value, list) else value.split(".")[0])
    raise ValueError(f"expected !GetAtt <Queue>.Arn, got {reference!r}")


# ---------------------------------------------------------------------------------------------- reading
def depth(sqs: Any, url: str) -> int:
    """Every message in the queue, counting those a reader holds (in flight)."""
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(attributes[name]) for name in names)


# How long one receive waits for messages (long polling): a short poll asks only some of SQS's servers and
# may come back empty while messages wait. 20 s is SQS's maximum.
WAIT_SECONDS = 5


@dataclass(frozen=True)
class Peek:
    """What a read of a DLQ saw, beside how many messages the queue held when it began."""

    messages: list[dict[str, Any]]
    depth: int

    @property
    def not_shown(self) -> int:
        """Messages the read could not see: held by another reader, or (FIFO) waiting behind a message of
        their group that this read held (SQS hands out a group's next message only after the one before)."""
        return max(0, self.depth - len(self.messages))


def describe(sqs: Any, dlq: DeadLetterQueue, now_ms: int, wait_s: int = WAIT_SECONDS) -> dict[str, Any]:
    seen = peek(sqs, dlq, 100, wait_s=wait_s)
    oldest = min((int(m["Attributes"]["SentTimestamp"]) for m in seen.messages), default=None)
    return {
        "dlq": dlq.logical_id,
        "kind": dlq.kind,
        "source": dlq.source_logical_id,
        "depth": seen.depth,
        "oldest_age_s": round((now_ms - oldest) / 1000, 1) if oldest is not None else None,
    }


def peek(sqs: Any, dlq: DeadLetterQueue, limit: int, visibility_s: int = 30, wait_s: int = WAIT_SECONDS) -> Peek:
    """Up to `limit` messages, in the order the queue hands them out, left in the queue (made visible again).
    A FIFO group shows as many of its messages as SQS hands out in one receive (up to 10): the ones behind
    them stay hidden while those are held, and are counted in `not_shown`."""
    at_start = depth(sqs, dlq.url)
    seen: list[dict[str, Any]] = []
    try:
        for batch in _batches(sqs, dlq.url, min(limit, at_start), visibility_s, wait_s):
            seen.extend(batch)
    finally:
        for message in seen:
            sqs.change_message_visibility(QueueUrl=dlq.url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0)
    return Peek(seen, at_start)


def _batches(sqs: Any, url: str, wanted: int, visibility_s: int, wait_s: int) -> Iterator[list[dict[str, Any]]]:
    """Receive (long polling) until `wanted` messages were taken or a receive hands out nothing new: what
    remains is then in flight elsewhere, or behind a message of its FIFO group that the caller holds."""
    taken: set[str] = set()
    while len(taken) < wanted:
        messages = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=min(10, wanted - len(taken)),
            VisibilityTimeout=visibility_s,
            WaitTimeSeconds=wait_s,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        fresh = [m for m in messages if m["MessageId"] not in taken]  # a slow read may see one again
        if not fresh:
            return
        taken.update(m["MessageId"] for m in fresh)
        yield fresh


def peeked_view(message: dict[str, Any]) -> dict[str, Any]:
    attributes = message.get("Attributes", {})
    custom = message.get("MessageAttributes", {})
    return {
        "message_id": message["MessageId"],
        "group": attributes.get("MessageGroupId"),
        "sent_at_ms": int(attributes.get("SentTimestamp", 0)),
        "receive_count": int(attributes.get("ApproximateReceiveCount", 0)),
        "failure_reason": custom.get("failure_reason", {}).get("StringValue"),
        "body": message["Body"],
    }


def plan(sqs: Any, dlq: DeadLetterQueue, limit: int, wait_s: int = WAIT_SECONDS) -> dict[str, Any]:
    """What a redrive would move: the queue's depth, and per group the message ids it could see, in the order
    they would go (a FIFO group's first ten at most; the rest follow them)."""
    seen = peek(sqs, dlq, limit, wait_s=wait_s)
    groups: dict[str, list[str]] = {}
    for message in seen.messages:
        groups.setdefault(message.get("Attributes", {}).get("MessageGroupId") or "-", []).append(message["MessageId"])
    return {
        "dlq": dlq.logical_id,
        "to": dlq.source_logical_id,
        "messages": min(limit, seen.depth),
        "listed": len(seen.messages),
        "not_listed": seen.not_shown,
        "groups": groups,
    }


# ---------------------------------------------------------------------------------------------- redrive
@dataclass
class Journal:
    """Which DLQ messages a redrive is moving (`sending`) or has moved (`sent`) but not yet deleted.
    Written through to a file, so an interrupted redrive resumes without sending anything twice."""

    path: Path
    entries: dict[str, str] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path) -> Journal:
        entries = json.loads(path.read_text()) if path.exists() else {}
        return cls(path, entries)

    def set(self, message_id: str, state: str | None) -> None:
        if state is None:
            self.entries.pop(message_id, None)
        else:
            self.entries[message_id] = state
        self._write()

    def clear(self) -> None:
        self.entries.clear()
        self._write()

    def _write(self) -> None:
        write_private(self.path, json.dumps(self.entries))  # atomic: the journal is never half written


@dataclass
class RedriveReport:
    sent: int = 0
    resumed_without_sending: int = 0
    groups: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"sent": self.sent, "resumed_without_sending": self.resumed_without_sending, "groups": self.groups}


class Redrive:
    def __init__(
        self,
        sqs: Any,
        dlq: DeadLetterQueue,
        journal: Journal,
        rate_per_s: float = 10.0,
        visibility_s: int = 60,
        sleep: Callable[[float], None] = time.sleep,
        wait_s: int = WAIT_SECONDS,
    ) -> None:
        if not dlq.redrivable:
            raise ValueError(
                f"{dlq.logical_id} holds {dlq.kind}, not messages of a queue: nothing to send back "
                "(see README, Operating)"
            )
        self._sqs = sqs
        self._dlq = dlq
        self._journal = journal
        self._interval = 1.0 / rate_per_s if rate_per_s > 0 else 0.0
        self._visibility_s = visibility_s
        self._sleep = sleep
        self._wait_s = wait_s

    def run(self, limit: int) -> RedriveReport:
        report = RedriveReport()
        wanted = min(limit, depth(self._sqs, self._dlq.url))
        for batch in _batches(self._sqs, self._dlq.url, wanted, self._visibility_s, self._wait_s):
            for message in batch:
                self._move(message, report)
        # Nothing left, not even messages an interrupted run still holds (those must keep their entry): what
        # the journal still names was deleted before an interruption could record it.
        if self._journal.entries and depth(self._sqs, self._dlq.url) == 0:
            self._journal.clear()
        return report

    def _move(self, message: dict[str, Any], report: RedriveReport) -> None:
        message_id = message["MessageId"]
        group = message.get("Attributes", {}).get("MessageGroupId")
        if self._journal.entries.get(message_id) == "sent":
            report.resumed_without_sending += 1
        else:
            self._journal.set(message_id, "sending")
            self._send(message, group)
            self._journal.set(message_id, "sent")
            report.sent += 1
            report.groups[group or "-"] = report.groups.get(group or "-", 0) + 1
            if self._interval:
                self._sleep(self._interval)
        self._sqs.delete_message(QueueUrl=self._dlq.url, ReceiptHandle=message["ReceiptHandle"])
        self._journal.set(message_id, None)

    def _send(self, message: dict[str, Any], group: str | None) -> None:
        params: dict[str, Any] = {"QueueUrl": self._dlq.source_url, "MessageBody": message["Body"]}
        attributes = {
            name: {key: value for key, value in attr.items() if key in ("DataType", "StringValue", "BinaryValue")}
            for name, attr in message.get("MessageAttributes", {}).items()
            if name not in _FORWARDED_ATTRIBUTES_DROPPED
        }
        if attributes:
            params["MessageAttributes"] = attributes
        if self._dlq.fifo:
            params["MessageGroupId"] = group or "default"
            params["MessageDeduplicationId"] = DEDUP_PREFIX + message["MessageId"]
        self._sqs.send_message(**params)


def purge(sqs: Any, dlq: DeadLetterQueue) -> None:
    sqs.purge_queue(QueueUrl=dlq.url)
