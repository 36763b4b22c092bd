"""A card's revisions (contract §3): which call a revision makes on the card a target already shows, and the
mapping a delivered job leaves so the next revision updates the same message.

Feishu edits a sent card (PATCH im/v1/messages/{message_id}, 更新已发送的消息卡片) only through the identity that
sent it, only within 14 days of the send, and never once it was recalled. A card lives longer than that (a
nightly job, a release train): a revision Feishu will not edit goes out as a new card that continues the
earlier one, and the mapping moves to it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from herald.events.jobs import Job
from herald.events.models import Target

FEISHU_EDIT_WINDOW_MS = 14 * 86_400_000  # "仅支持更新 14 天内发送的消息"
EDIT_WINDOW_MARGIN_MS = 3_600_000  # Herald's clock and Feishu's, and the update's own time: never try at the edge
# An update Feishu refuses for good: the message was recalled or deleted (230011), or is past the edit window
# (230031). docs/side-effects.md cites them.
NOT_EDITABLE_CODES = frozenset({230011, 230031})


@dataclass(frozen=True)
class CardMessage:
    """Where a card (service, card id, receiver) was delivered, which revision it shows, and the Feishu app that
    sent the message and when ("" and 0 on a mapping recorded before Herald kept them)."""

    message_id: str
    revision: int
    content_hash: str
    app_id: str = ""
    sent_at_ms: int = 0
    tenant: str = ""  # the tenant it was sent for: the app is looked up among that tenant's

    def editable_by(self, app_id: str, now: int) -> bool:
        """Whether Feishu would let `app_id` update the message now: the app that sent it, within the window."""
        same_app = not self.app_id or self.app_id == app_id
        fresh = not self.sent_at_ms or now < self.sent_at_ms + FEISHU_EDIT_WINDOW_MS - EDIT_WINDOW_MARGIN_MS
        return same_app and fresh


class CardDecision(StrEnum):
    SEND = "send"
    UPDATE = "update"
    CONTINUE = "continue"  # newer, but its message cannot be updated any more: a new card continues it
    STALE = "stale_revision"
    SAME = "same_revision"
    CONFLICT = "revision_conflict"

    @property
    def sends(self) -> bool:
        """Its side effect is a send (with the job's uuid): a resend is deduplicated only inside Feishu's hour."""
        return self in (CardDecision.SEND, CardDecision.CONTINUE)

    @property
    def call(self) -> str:
        """The call a send or an update makes, as a job's evidence names it."""
        return {CardDecision.UPDATE: "the card's update", CardDecision.CONTINUE: "the continuing card's send"}.get(
            self, "the send"
        )


def decide_card(current: CardMessage | None, revision: int, new_hash: str, *, app_id: str, now: int) -> CardDecision:
    """Revisions only move forward: older or identical never overwrite; same revision, other content conflicts.
    A newer one updates the message `app_id` may still edit now, and continues it as a new card otherwise."""
    if current is None:
        return CardDecision.SEND
    if revision > current.revision:
        return CardDecision.UPDATE if current.editable_by(app_id, now) else CardDecision.CONTINUE
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


def card_write(
    job: Job, message_id: str, current: CardMessage | None, *, sent_by: str = "", at_ms: int = 0, tenant: str = ""
) -> CardWrite | None:
    """The card mapping a delivered job leaves: none for a one-off event, or when `current` already shows a
    newer revision (the mapping stays). A new message records who sent it and when (`sent_by`, `at_ms`); an
    update of the same message keeps its send's."""
    event = job.event
    if event.card_id is None or event.revision is None:
        return None
    if current is not None and current.revision > event.revision:
        return None
    same_message = current is not None and current.message_id == message_id
    kept = current if current is not None and same_message else None
    app_id, sent_at_ms, sent_for = (kept.app_id, kept.sent_at_ms, kept.tenant) if kept else (sent_by, at_ms, tenant)
    shown = CardMessage(
        message_id, event.revision, job.content_hash, app_id=app_id, sent_at_ms=sent_at_ms, tenant=sent_for
    )
    return CardWrite(
        service_id=job.service_id,
        card_id=event.card_id,
        target=event.target,
        card=shown,
        expected_revision=current.revision if current else None,
    )
