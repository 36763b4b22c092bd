"""One pooled HTTP client for provider calls: urllib3 is already loaded by botocore, so it costs nothing."""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import urllib3

from herald import budgets
from herald.circuits import CallGuard, Unguarded

_UNGUARDED = Unguarded()
_LEASE_MARGIN_MS = 1_000  # a call's slot outlives its timeouts by this much (the answer's reading, a slow clock)
_lock = threading.Lock()
_pool: urllib3.PoolManager | None = None


@dataclass(frozen=True)
class HttpResponse:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # names lowercased

    def seconds(self, *names: str) -> float | None:
        """The first of these headers that holds a number of seconds (>= 0), or None."""
        for name in names:
            try:
                value = float(self.headers.get(name, ""))
            except ValueError:
                continue
            if math.isfinite(value) and value >= 0:
                return value
        return None

    def json(self) -> Any:
        return json.loads(self.body)


class TransportError(Exception):
    """The request failed in transit. `maybe_delivered` is False only when it never left this machine
    (no connection could be made), so the provider cannot have acted on it."""

    def __init__(self, message: str, *, maybe_delivered: bool) -> None:
        super().__init__(message)
        self.maybe_delivered = maybe_delivered


def pool() -> urllib3.PoolManager:
    global _pool  # noqa: PLW0603 - one pool per process, created on first use
    with _lock:
        if _pool is None:
            _pool = urllib3.PoolManager(num_pools=4, maxsize=8, retries=False)
        return _pool


def request(
    method: str,
    url: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout_s: float = budgets.PROVIDER_READ_S,
    guard: CallGuard = _UNGUARDED,
) -> HttpResponse:
    """One request; `budgets.OutOfTime` (nothing sent) when a worker's invocation could end during it. Through
    `guard`, the provider app's circuit: `herald.circuits.Parked` (nothing sent) when it may not start now; no
    answer or a 5xx counts as the app's failure."""
    budgets.ensure_time_for_provider_call(f"{method} {url.split('?', maxsplit=1)[0]}")
    payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() if body is not None else None
    all_headers = {"content-type": "application/json; charset=utf-8", **(headers or {})}
    read_s = min(timeout_s, budgets.PROVIDER_READ_S)
    with guard.call(math.ceil((budgets.PROVIDER_CONNECT_S + read_s) * 1000) + _LEASE_MARGIN_MS) as failed:
        try:
            response = pool().request(
                method,
                url,
                body=payload,
                headers=all_headers,
                timeout=urllib3.Timeout(connect=budgets.PROVIDER_CONNECT_S, read=read_s),
            )
        except urllib3.exceptions.HTTPError as exc:
            failed()
            reason = exc.reason if isinstance(exc, urllib3.exceptions.MaxRetryError) else exc
            never_sent = isinstance(
                reason, urllib3.exceptions.NewConnectionError | urllib3.exceptions.ConnectTimeoutError
            )
            raise TransportError(
                f"{method} {url.split('?', maxsplit=1)[0]} failed: {type(reason).__name__}",
                maybe_delivered=not never_sent,
            ) from exc
        if response.status >= 500:
            failed()
    headers = {name.lower(): value for name, value in response.headers.items()}
    return HttpResponse(status=response.status, body=response.data, headers=headers)
