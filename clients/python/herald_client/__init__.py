"""Herald's Python SDK: `AppClient` for app users, `ServiceClient` for partner services, agent engines and
operators, `TurnReader` for an engine's turn queue, `verify_webhook` for a status webhook's receiver. Install it
alone: `pip install clients/python`."""

from herald_client.clients import AppClient, ServiceClient
from herald_client.engine import TurnReader
from herald_client.errors import (
    Conflict,
    HeraldError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RateLimited,
    Unauthorized,
    Unavailable,
    UpstreamError,
)
from herald_client.webhooks import WebhookVerificationError, verify_webhook

__all__ = [
    "AppClient",
    "Conflict",
    "HeraldError",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "ServiceClient",
    "TurnReader",
    "Unauthorized",
    "Unavailable",
    "UpstreamError",
    "WebhookVerificationError",
    "verify_webhook",
]
