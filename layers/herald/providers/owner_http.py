"""Calls to owner services' callback URLs, guarded against server-side request forgery.

The host is resolved once per call and every address checked (`herald.owners.addresses`); the connection
then goes to a checked address, with the URL's host name for the Host header and TLS (SNI and certificate),
so a name cannot resolve to a public address for the check and a private one for the call. No redirect is
followed, both timeouts are bounded and an answer larger than `max_answer_bytes` is not read.
"""

from __future__ import annotations

import socket
import threading

import urllib3

from herald import budgets
from herald.owners.addresses import ForbiddenUrl, Target, UrlPolicy
from herald.owners.callbacks import OwnerUnreachable


class SocketResolver:
    def addresses(self, host: str, port: int) -> list[str]:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise ForbiddenUrl(f"the callback host does not resolve ({exc})") from exc
        return list(dict.fromkeys(str(entry[4][0]) for entry in found))


class GuardedTransport:
    def __init__(self, urls: UrlPolicy, max_answer_bytes: int = 64 * 1024) -> None:
        self._urls = urls
        self._max = max_answer_bytes
        self._pools: dict[tuple[str, str, int, str], urllib3.HTTPConnectionPool] = {}
        self._lock = threading.Lock()

    def call(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bytes]:
        try:
            budgets.ensure_time_for_provider_call(f"owner callback {method}")
            target, addresses = self._urls.resolve(url)
        except (ForbiddenUrl, budgets.OutOfTime) as exc:
            raise OwnerUnreachable(str(exc)) from exc
        default_port = 443 if target.scheme == "https" else 80
        host_header = target.host if target.port == default_port else f"{target.host}:{target.port}"
        try:
            response = self._pool(target, addresses[0]).urlopen(
                method,
                target.path,
                body=body,
                headers={**headers, "host": host_header, "user-agent": "Herald-Confirms/1"},
                retries=False,
                redirect=False,
                preload_content=False,
                timeout=urllib3.Timeout(connect=budgets.PROVIDER_CONNECT_S, read=budgets.PROVIDER_READ_S),
            )
            try:
                answer = response.read(self._max + 1)
            finally:
                response.release_conn()
        except urllib3.exceptions.HTTPError as exc:
            raise OwnerUnreachable(f"{method} failed: {type(exc).__name__}") from exc
        if len(answer) > self._max:
            raise OwnerUnreachable(f"the answer is larger than {self._max} bytes")
        return response.status, answer

    def _pool(self, target: Target, address: str) -> urllib3.HTTPConnectionPool:
        key = (target.scheme, address, target.port, target.host)
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                if target.scheme == "https":
                    pool = urllib3.HTTPSConnectionPool(
                        address, target.port, maxsize=4, server_hostname=target.host, assert_hostname=target.host
                    )
                else:
                    pool = urllib3.HTTPConnectionPool(address, target.port, maxsize=4)
                self._pools[key] = pool
            return pool
