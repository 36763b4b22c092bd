"""External events (contract §3): what a partner service posts (the event, its target and card), the lane it
runs in, and how its job is named. The job that delivers it is `jobs`; what a delivery does to the card it
updates is `cards`."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


@dataclass(frozen=True)
class Target:
    receive_id_type: str
    receive_id: str

    @property
    def key(self) -> str:
        """How a target is named in a service's allowed targets: `chat_id:oc_xxx`."""
        return f"{self.receive_id_type}:{self.receive_id}"

    @classmethod
    def parse(cls, key: str) -> Target:
        kind, sep, receive_id = key.partition(":")
        if not sep or not kind or not receive_id:
            raise ValueError(f"a target reads receive_id_type:receive_id, not {key!r}")
        return cls(kind, receive_id)


@dataclass(frozen=True)
class ExternalEvent:
    """One posted event, as validated. `card_id` (the body's `data.event_id`) and `revision` go together."""

    event_id: str
    event_type: str
    title: str
    status: str
    summary: str
    target: Target
    card_id: str | None = None
    revision: int | None = None
    markdown: bool = False  # the summary is Feishu markdown (a key allowed to opt in); otherwise plain text

    def content(self) -> dict[str, Any]:
        """The event's content as posted (less the top-level event id): what duplicates are compared on."""
        data: dict[str, Any] = {
            "title": self.title,
            "status": self.status,
            "summary": self.summary,
            "target": {"receive_id": self.target.receive_id, "receive_id_type": self.target.receive_id_type},
        }
        if self.card_id is not None:
            data["event_id"] = self.card_id
            data["revision"] = self.revision
        if self.markdown:
            data["format"] = "markdown"
        return {"event_type": self.event_type, "data": data}

    @property
    def content_hash(self) -> str:
        return content_hash(self.content())

    def card(self) -> Card:
        """What the event shows: a shared card (so later revisions can update it for everyone)."""
        return Card(self.title, self.status, self.summary, self.event_type, self.markdown)

    @classmethod
    def from_content(cls, event_id: str, content: dict[str, Any]) -> ExternalEvent:
        data = content["data"]
        return cls(
            event_id=event_id,
            event_type=content["event_type"],
            title=data["title"],
            status=data["status"],
            summary=data.get("summary", ""),
            target=Target(data["target"]["receive_id_type"], data["target"]["receive_id"]),
            card_id=data.get("event_id"),
            revision=data.get("revision"),
            markdown=data.get("format") == "markdown",
        )


@dataclass(frozen=True)
class Card:
    """What one external event shows: a shared card (so later revisions can update it for everyone)."""

    title: str
    status: str
    summary: str
    event_type: str
    markdown: bool = False  # the summary as lark_md (links, mentions); otherwise shown as plain text
    continues_from_ms: int | None = None  # a new card continuing one Feishu no longer edits, sent then (0: unknown)


MAX_LANE_KEY = 300  # a service id (64) and a target key (200), with room to spare


@dataclass(frozen=True)
class Lane:
    """The order a job runs in: by default its service's whole order (contract §3), or, for a service whose
    key orders by target, one target of it: strict order inside a lane, lanes run side by side, and a blocked
    job holds up only its own lane. A card's revisions share a lane (a card is one target's)."""

    service_id: str
    target: str = ""  # a target key when the service orders by target

    @property
    def key(self) -> str:
        """How the lane is named in the table, in dispatch messages and in job ids: `svc` or `svc/chat_id:oc_x`."""
        return f"{self.service_id}/{self.target}" if self.target else self.service_id

    @classmethod
    def of(cls, service_id: str, target: Target, by_target: bool) -> Lane:
        return cls(service_id, target.key if by_target else "")

    @classmethod
    def parse(cls, key: str) -> Lane:
        service_id, sep, target = key.partition("/")
        if not service_id or (sep and not target) or len(key) > MAX_LANE_KEY:
            raise ValueError(f"a lane reads SERVICE or SERVICE/RECEIVE_ID_TYPE:RECEIVE_ID, not {key!r}")
        if target:
            Target.parse(target)
        return cls(service_id, target)


def format_job_id(lane: str, seq: int) -> str:
    return f"{lane}:{seq}"


def parse_job_id(job_id: str) -> tuple[str, int]:
    """The lane's key and the sequence of `SERVICE:SEQ` or `SERVICE/TARGET:SEQ`."""
    lane, sep, seq = job_id.rpartition(":")
    if not sep or not seq.isascii() or not seq.isdigit():
        raise ValueError(f"a job id reads SERVICE:SEQ or SERVICE/TARGET:SEQ, not {job_id!r}")
    return Lane.parse(lane).key, int(seq)


@dataclass(frozen=True)
class LaneHead:
    """A lane's receive counter (`next_seq`: the last assigned, received at `last_received_at_ms`) and
    cursor (`done_seq`: every job up to it is finished)."""

    lane: str
    next_seq: int = 0
    done_seq: int = 0
    last_received_at_ms: int = 0


@dataclass(frozen=True)
class Accepted:
    event_id: str
    duplicate: bool


class DuplicateEvent(Exception):
    def __init__(self, stored: StoredEvent) -> None:
        super().__init__(f"event {stored.event_id} was already received")
        self.stored = stored


@dataclass(frozen=True)
class StoredEvent:
    event_id: str
    seq: int
    content_hash: str
    received_at_ms: int
