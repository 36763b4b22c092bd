"""`/events/external/webhook` (contract §3): a partner's status webhook, kept with the key it posts events with
(for that key's tenant): registered or changed by `PUT`, removed by `DELETE`, its secret rotated by a `POST`."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request
from pydantic import ConfigDict, Field

from herald.events.webhooks.models import StatusWebhook
from herald.events.webhooks.wiring import status_webhooks
from herald.web.envelope import PARTNER, SERVICE, ApiModel, Envelope, errors, ok
from herald.web.security import CurrentService

router = APIRouter(tags=[PARTNER])

WebhookStatus = Literal["succeeded", "superseded", "rejected", "skipped", "failed", "unknown"]


class WebhookIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=2048, description="https, a public host (the owner callbacks' rules)")
    statuses: list[WebhookStatus] | None = Field(
        default=None,
        min_length=1,
        max_length=6,
        description="the statuses to be told of (default: failed, unknown, rejected)",
    )


class WebhookOut(ApiModel):
    url: str
    statuses: list[WebhookStatus]
    created_at_ms: int
    updated_at_ms: int
    previous_secret_until_ms: int | None = Field(description="after a rotation: the old secret signs until then")
    secret: str | None = Field(
        description="the signing secret (whsec_...), answered once: when the webhook is first registered or its"
        " secret is rotated; null otherwise"
    )


class DeletedOut(ApiModel):
    deleted: Literal[True] = True


def _out(webhook: StatusWebhook, secret: str | None) -> WebhookOut:
    view = webhook.view()
    return WebhookOut(
        url=webhook.url,
        statuses=view["statuses"],
        created_at_ms=webhook.created_at_ms,
        updated_at_ms=webhook.updated_at_ms,
        previous_secret_until_ms=view["previous_secret_until_ms"],
        secret=secret,
    )


@router.put(
    "/events/external/webhook",
    responses=errors(*SERVICE, "INVALID_ARGUMENT"),
    response_model=Envelope[WebhookOut],
    summary="Register (or change) the service's status webhook: its secret is answered once, the first time",
)
def put_status_webhook(request: Request, body: WebhookIn, caller: CurrentService) -> Envelope[WebhookOut]:
    webhook, secret = status_webhooks().put(caller.service_id, caller.delivery_tenant, body.url, body.statuses)
    return ok(request, _out(webhook, secret))


@router.delete(
    "/events/external/webhook",
    responses=errors(*SERVICE, "NOT_FOUND"),
    response_model=Envelope[DeletedOut],
    summary="Remove the service's status webhook (notices already queued for it are dropped)",
)
def delete_status_webhook(request: Request, caller: CurrentService) -> Envelope[DeletedOut]:
    status_webhooks().delete(caller.service_id, caller.delivery_tenant)
    return ok(request, DeletedOut())


@router.post(
    "/events/external/webhook/rotate-secret",
    responses=errors(*SERVICE, "NOT_FOUND"),
    response_model=Envelope[WebhookOut],
    summary="A new signing secret, answered once; the old one still signs beside it for 24 hours",
)
def rotate_status_webhook_secret(request: Request, caller: CurrentService) -> Envelope[WebhookOut]:
    webhook, secret = status_webhooks().rotate_secret(caller.service_id, caller.delivery_tenant)
    return ok(request, _out(webhook, secret))
