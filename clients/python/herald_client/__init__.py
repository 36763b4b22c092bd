"""Herald's Python SDK: `AppClient` for app users, `ServiceClient` for partner services, agent engines and
operators, `TurnReader` for an engine's turn queue. Install it alone: `pip install clients/python`."""

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
]
