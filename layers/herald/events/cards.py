"""A card's revisions (contract §3): which call a revision makes on the card a target already shows, and the
mapping a delivered job leaves so the next revision updates the same message."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from herald.events.jobs import Job
from herald.events.models import Target


@dataclass(frozen=True)
class CardMessage:
    """Where a card (service, card id, receiver) was delivered, and which revision it shows."""

    message_id: str
    revision: int
    content_hash: str


class CardDecision(StrEnum):
    SEND = "send"
    UPDATE = "update"
    STALE = "stale_revision"
    SAME = "same_revision"
    CONFLICT = "revision_conflict"

    @property
    def call(self) -> str:
        """The call a send or an update makes, as a job's evidence names it."""
        return "the card's update" if self is CardDecision.UPDATE else "the send"


def decide_card(current: CardMessage | None, revision: int, new_hash: str) -> CardDecision:
    """Revisions only move forward: older or identical never overwrite; same revision, other content conflicts."""
    if current is None:
        return CardDecision.SEND
    if revision > current.revision:
        return CardDecision.UPDATE
    if revision < current.revision:
        return CardDecision.STALE
    return CardDecision.SAME if new_hash == current.content_hash else CardDecision.CONFLICT


@dataclass(frozen=True)
class CardWrite:
    """The card mapping a finished job leaves, written only if the mapping still shows `expected_revision`."""

    service_id: str
    card_id: str
    target: Target
    card: CardMessage
    expected_revision: int | None  # None: no mapping may exist yet


def card_write(job: Job, message_id: str, current: CardMessage | None) -> CardWrite | None:
    """The card mapping a delivered job leaves: none for a one-off event, or when `current` already shows a
    newer revision (the mapping stays)."""
    event = job.event
    if event.card_id is None or event.revision is None:
        return None
    if current is not None and current.revision > event.revision:
        return None
    return CardWrite(
        service_id=job.service_id,
        card_id=event.card_id,
        target=event.target,
        card=CardMessage(message_id=message_id, revision=event.revision, content_hash=job.content_hash),
        expected_revision=current.revision if current else None,
    )
