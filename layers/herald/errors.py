"""The one error hierarchy of Herald's domain.

Domain code raises these; the HTTP edge (herald.web.envelope) is the single place that maps a code to a
status. A `reason` is a stable machine-readable word clients may branch on (returned as `data.reason`),
with any `details` beside it in `data`.
"""

from typing import Any


class HeraldError(Exception):
    code = "INTERNAL"

    def __init__(self, message: str, *, reason: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.details = details or {}


class InvalidArgument(HeraldError):
    code = "INVALID_ARGUMENT"


class PayloadTooLarge(HeraldError):
    code = "PAYLOAD_TOO_LARGE"


class Unauthorized(HeraldError):
    code = "UNAUTHORIZED"


class PermissionDenied(HeraldError):
    code = "PERMISSION_DENIED"


class NotFound(HeraldError):
    code = "NOT_FOUND"


class Conflict(HeraldError):
    code = "CONFLICT"


class RateLimited(HeraldError):
    """Over a limit; `retry_after_s` is what the `Retry-After` header tells the caller."""

    code = "RATE_LIMITED"

    def __init__(self, message: str, *, reason: str | None = None, retry_after_s: int = 1) -> None:
        super().__init__(message, reason=reason)
        self.retry_after_s = retry_after_s


class Unavailable(HeraldError):
    """Herald's own store is over capacity right now (throttled after its retries): try again shortly."""

    code = "UNAVAILABLE"

    def __init__(self, message: str, *, retry_after_s: int = 1) -> None:
        super().__init__(message, reason="throttled")
        self.retry_after_s = retry_after_s


class UpstreamError(HeraldError):
    code = "UPSTREAM_ERROR"


class ConfigurationError(HeraldError):
    """A required setting is missing: a deployment fault, never the caller's."""


class DeliveryError(Exception):
    """A provider call (an IM push, a Feishu card) failed. `retryable`: the same call may succeed later.
    `maybe_delivered`: the provider may have acted before failing, so the outcome is unknown; otherwise it
    clearly did not act. `throttled`: the provider refused it by its rate limit, and whose (`app`, `chat`):
    not a failure of the call, a sign to slow down; `retry_after_ms`: how long the provider asked to wait (0: it did
    not say). `code`: the provider's own error code, where it gave one.
    Adapters raise it (or a subclass) so the domain never sees a provider's types."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        maybe_delivered: bool = False,
        throttled: str = "",
        code: int | None = None,
        retry_after_ms: int = 0,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.maybe_delivered = maybe_delivered
        self.throttled = throttled
        self.code = code
        self.retry_after_ms = retry_after_ms
