"""One HTTP call to Herald: the envelope unwrapped, errors typed, rate limits and transient failures retried.

Only calls that are safe to repeat are retried after a transport failure: Herald's writes are idempotent by
an id the caller chose (an external event's `event_id`, a notification's dedup key, a confirm's
`source_event_id`, a click's `command_id`), and the SDK resends exactly the same request, so a retry is a
duplicate Herald recognises, never a second effect.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from herald_client.errors import BY_CODE, HeraldError, RateLimited

# Herald's limits slide over a minute: a caller that filled one may wait into the next, up to two minutes.
MAX_RETRY_AFTER_S = 120.0


class Transport:
    def __init__(
        self,
        base_url: str,
        credential: str,
        *,
        retries: int = 3,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] | None = None,
        timeout_s: float = 15.0,
    ) -> None:
        self._http = http or httpx.Client(base_url=base_url, timeout=timeout_s)
        self._headers = {"Authorization": f"Bearer {credential}"}
        self._retries = retries
        self._sleep = sleep or time.sleep

    def call(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The envelope's `data` ({} when there is none); a HeraldError subclass for an error answer."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        for attempt in range(self._retries + 1):
            last = attempt == self._retries
            try:
                response = self._http.request(method, path, json=json, params=query, headers=self._headers)
            except httpx.TransportError:
                if last:
                    raise
                self._sleep(min(2**attempt * 0.2, 5.0))
                continue
            try:
                return _unwrap(response)
            except RateLimited as limited:
                if last:
                    raise
                self._sleep(min(limited.retry_after_s, MAX_RETRY_AFTER_S))
        raise AssertionError("unreachable")


def _unwrap(response: httpx.Response) -> dict[str, Any]:
    try:
        envelope = response.json() if response.content else {}
    except ValueError:
        envelope = {}
    if response.is_success:
        data = envelope.get("data") if isinstance(envelope, dict) else None
        return data if isinstance(data, dict) else {}
    code = envelope.get("code", "INTERNAL") if isinstance(envelope, dict) else "INTERNAL"
    message = envelope.get("message", response.reason_phrase) if isinstance(envelope, dict) else response.text
    data = envelope.get("data") if isinstance(envelope, dict) else None
    reason = data.get("reason") if isinstance(data, dict) else None
    error = BY_CODE.get(code, HeraldError)
    if issubclass(error, RateLimited):
        retry_after = float(response.headers.get("retry-after", "1") or 1)
        raise error(response.status_code, message, reason, data, retry_after_s=retry_after)
    raise error(response.status_code, message, reason, data)
