"""Status webhooks (contract §3): a partner registers, changes, rotates and removes its endpoint with the key it
posts events with; Herald posts each notice there, signed, through the same URL rules and total deadline as owner
callbacks, and a notice that got no 2xx is tried again later by its queue (herald.events.webhooks.handlers)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from enum import StrEnum
from typing import Protocol

from herald.callback_urls import CallbackTransport, EndpointUnreachable, ForbiddenUrl, UrlPolicy
from herald.clock import Clock, now_ms
from herald.errors import InvalidArgument, NotFound
from herald.events.jobs import JobStatus
from herald.events.webhooks.models import DEFAULT_STATUSES, WEBHOOK_STATUSES, StatusNotice, StatusWebhook
from herald.webhook_signing import ROTATION_OVERLAP_MS, new_secret, sign


class WebhookStore(Protocol):
    def get(self, service_id: str, tenant: str) -> StatusWebhook | None: ...

    def put(self, webhook: StatusWebhook) -> None: ...

    def delete(self, service_id: str, tenant: str) -> bool:
        """Whether there was one to delete."""
        ...

    def all(self) -> list[StatusWebhook]: ...


class WebhookNotDelivered(Exception):
    """The endpoint gave no 2xx (or no answer within the deadline): the notice is tried again later."""


class Posted(StrEnum):
    SENT = "sent"
    NO_WEBHOOK = "no_webhook"  # the service (for that tenant) has none now
    NOT_ASKED = "not_asked"  # its webhook does not ask for this status


def unasked(webhook: StatusWebhook | None, notice: StatusNotice) -> Posted | None:
    """Why `notice` is not to be posted to `webhook`, the service's as registered now (None: it is). The events
    outbox asks before it queues a notice, the poster again before it posts (a webhook changes in between)."""
    if webhook is None:
        return Posted.NO_WEBHOOK
    return Posted.NOT_ASKED if notice.status not in webhook.statuses else None


class StatusWebhooks:
    """A partner's webhook, kept per service and tenant."""

    def __init__(self, store: WebhookStore, urls: UrlPolicy, clock: Clock = now_ms) -> None:
        self._store = store
        self._urls = urls
        self._clock = clock

    def put(
        self, service_id: str, tenant: str, url: str, statuses: Iterable[str] | None
    ) -> tuple[StatusWebhook, str | None]:
        """Register or change the webhook; its signing secret is answered once, when it is first registered."""
        try:
            self._urls.check(url)
        except ForbiddenUrl as exc:
            raise InvalidArgument(f"url: {exc}", reason="forbidden_url", details={"field": "url"}) from exc
        wanted = self._statuses(statuses)
        now, existing = self._clock(), self._store.get(service_id, tenant)
        if existing is not None:
            changed = replace(existing, url=url, statuses=wanted, updated_at_ms=now)
            self._store.put(changed)
            return changed, None
        secret = new_secret()
        webhook = StatusWebhook(service_id, tenant, url, wanted, secret, now, now)
        self._store.put(webhook)
        return webhook, secret

    def get(self, service_id: str, tenant: str) -> StatusWebhook:
        webhook = self._store.get(service_id, tenant)
        if webhook is None:
            raise NotFound("this service has no status webhook")
        return webhook

    def delete(self, service_id: str, tenant: str) -> None:
        if not self._store.delete(service_id, tenant):
            raise NotFound("this service has no status webhook")

    def rotate_secret(self, service_id: str, tenant: str) -> tuple[StatusWebhook, str]:
        """A new signing secret, answered once; the old one still signs beside it for a day."""
        webhook, now, secret = self.get(service_id, tenant), self._clock(), new_secret()
        rotated = replace(
            webhook,
            secret=secret,
            updated_at_ms=now,
            previous_secret=webhook.secret,
            previous_secret_until_ms=now + ROTATION_OVERLAP_MS,
        )
        self._store.put(rotated)
        return rotated, secret

    def all(self) -> list[StatusWebhook]:
        return sorted(self._store.all(), key=lambda webhook: (webhook.service_id, webhook.tenant))

    @staticmethod
    def _statuses(statuses: Iterable[str] | None) -> frozenset[JobStatus]:
        if statuses is None:
            return DEFAULT_STATUSES
        names = list(statuses)
        if not names or any(name not in WEBHOOK_STATUSES for name in names):
            allowed = ", ".join(sorted(WEBHOOK_STATUSES))
            raise InvalidArgument(f"statuses: one or more of {allowed}", reason="unknown_status")
        return frozenset(JobStatus(name) for name in names)


class WebhookPoster:
    """Posts one notice to its service's webhook as registered now."""

    def __init__(self, store: WebhookStore, transport: CallbackTransport, clock: Clock = now_ms) -> None:
        self._store = store
        self._transport = transport
        self._clock = clock

    def post(self, notice: StatusNotice) -> Posted:
        webhook = self._store.get(notice.service_id, notice.tenant)
        if webhook is None:
            return Posted.NO_WEBHOOK
        if (not_for := unasked(webhook, notice)) is not None:
            return not_for
        body, now = notice.body(), self._clock()
        headers = {
            "content-type": "application/json",
            **sign(webhook.secrets_at(now), notice.webhook_id, now // 1000, body),
        }
        try:
            status, _ = self._transport.call("POST", webhook.url, headers, body)
        except EndpointUnreachable as exc:
            raise WebhookNotDelivered(f"{notice.webhook_id}: {exc}") from exc
        if not 200 <= status < 300:
            raise WebhookNotDelivered(f"{notice.webhook_id}: the endpoint answered {status}")
        return Posted.SENT
