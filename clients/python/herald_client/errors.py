"""Herald's error envelope as exceptions: one class per `code`, with the named `reason` where Herald gives one."""

from __future__ import annotations

from typing import Any


class HeraldError(Exception):
    code = "INTERNAL"

    def __init__(self, status: int, message: str, reason: str | None = None, data: Any = None) -> None:
        super().__init__(f"{status} {self.code}: {message}" + (f" ({reason})" if reason else ""))
        self.status = status
        self.message = message
        self.reason = reason
        self.data = data


class InvalidArgument(HeraldError):
    code = "INVALID_ARGUMENT"


class Unauthorized(HeraldError):
    code = "UNAUTHORIZED"


class PermissionDenied(HeraldError):
    code = "PERMISSION_DENIED"


class NotFound(HeraldError):
    code = "NOT_FOUND"


class Conflict(HeraldError):
    code = "CONFLICT"


class RateLimited(HeraldError):
    code = "RATE_LIMITED"

    def __init__(
        self, status: int, message: str, reason: str | None = None, data: Any = None, retry_after_s: float = 1
    ):
        super().__init__(status, message, reason, data)
        self.retry_after_s = retry_after_s


class Unavailable(RateLimited):
    """Herald is busy (503 with Retry-After): retried like a rate limit."""

    code = "UNAVAILABLE"


class UpstreamError(HeraldError):
    code = "UPSTREAM_ERROR"


BY_CODE: dict[str, type[HeraldError]] = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        Unauthorized,
        PermissionDenied,
        NotFound,
        Conflict,
        RateLimited,
        Unavailable,
        UpstreamError,
    )
}
