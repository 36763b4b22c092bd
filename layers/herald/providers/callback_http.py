"""Calls to callback URLs (owner services', partners' status webhooks), guarded against server-side request
forgery and slow receivers.

The host is resolved once per call and every address checked (`herald.callback_urls`); the connection
then goes to a checked address, with the URL's host name for the Host header and TLS (SNI and certificate),
so a name cannot resolve to a public address for the check and a private one for the call. No redirect is
followed and an answer larger than `max_answer_bytes` is not read.

Each call has a *total* deadline, connect to last byte: a socket timeout bounds one read only, so an owner
dripping a byte a second would hold a call (and the janitor or a receiver's click behind it) for as long as
it likes. A watchdog shuts the socket down when the deadline passes, whatever the call is waiting for.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
from types import TracebackType

from herald import budgets
from herald.callback_urls import EndpointUnreachable, ForbiddenUrl, Target, UrlPolicy
from herald.settings import Settings


def callback_url_policy(settings: Settings) -> UrlPolicy:
    """Where callbacks may go under the stack's settings, owner callbacks and status webhooks alike (names resolved
    by the system's resolver, at registration and at every call)."""
    return UrlPolicy(
        SocketResolver(),
        https_only=settings.owner_callbacks_https_only,
        allow_private=settings.owner_callbacks_allow_private,
    )


class SocketResolver:
    def addresses(self, host: str, port: int) -> list[str]:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError) as exc:
            raise ForbiddenUrl(f"the callback host does not resolve ({type(exc).__name__})") from exc
        return list(dict.fromkeys(str(entry[4][0]) for entry in found))


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection to one checked address, speaking to the URL's host name."""

    def __init__(self, target: Target, address: str, connect_s: float, total_s: float, tls: ssl.SSLContext) -> None:
        super().__init__(target.host, target.port, timeout=total_s)
        self._address = address
        self._connect_s = connect_s
        self._tls = tls if target.scheme == "https" else None
        self._server_name = target.host

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), timeout=self._connect_s)
        sock.settimeout(self.timeout)
        self.sock = self._tls.wrap_socket(sock, server_hostname=self._server_name) if self._tls else sock


class _Watchdog:
    """Shuts the connection's socket down at the deadline, so no wait inside the call outlives it."""

    def __init__(self, connection: _PinnedConnection, seconds: float) -> None:
        self.fired = False
        self._connection = connection
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired = True
        sock = self._connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                return  # closed already

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._timer.cancel()
        self._connection.close()


class GuardedTransport:
    def __init__(
        self,
        urls: UrlPolicy,
        max_answer_bytes: int = 64 * 1024,
        total_s: float = budgets.OWNER_CALL_TOTAL_S,
        connect_s: float = budgets.PROVIDER_CONNECT_S,
        user_agent: str = "Herald-Confirms/1",
    ) -> None:
        self._user_agent = user_agent
        self._urls = urls
        self._max = max_answer_bytes
        self._total_s = total_s
        self._connect_s = min(connect_s, total_s)
        self._tls = ssl.create_default_context()

    def call(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bytes]:
        try:
            budgets.ensure_time_for_provider_call(f"callback {method}")
            target, addresses = self._urls.resolve(url)
        except (ForbiddenUrl, budgets.OutOfTime) as exc:
            raise EndpointUnreachable(str(exc)) from exc
        connection = _PinnedConnection(target, addresses[0], self._connect_s, self._total_s, self._tls)
        name = f"[{target.host}]" if ":" in target.host else target.host  # an IPv6 literal goes in brackets
        host_header = name if target.port == (443 if target.scheme == "https" else 80) else f"{name}:{target.port}"
        sent = {**headers, "host": host_header, "user-agent": self._user_agent, "connection": "close"}
        watchdog = _Watchdog(connection, self._total_s)
        try:
            with watchdog:
                connection.request(method, target.path, body=body, headers=sent)
                response = connection.getresponse()
                answer = response.read(self._max + 1)
        except Exception as exc:  # any way a call can fail in transit is the owner not answering, never a 500
            if watchdog.fired:
                raise EndpointUnreachable(f"{method}: no whole answer within {self._total_s:g} s") from exc
            raise EndpointUnreachable(f"{method} failed: {type(exc).__name__}") from exc
        if watchdog.fired:
            raise EndpointUnreachable(f"{method}: no whole answer within {self._total_s:g} s")
        if len(answer) > self._max:
            raise EndpointUnreachable(f"the answer is larger than {self._max} bytes")
        return response.status, answer
