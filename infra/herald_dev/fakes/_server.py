"""A tiny threaded JSON HTTP server on loopback, and the base of the provider fakes built on it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit


class Request:
    def __init__(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes, target: str = ""
    ) -> None:
        self.method = method
        self.path = path
        self.target = target or path  # the request line's path and query, as sent
        self.query = query
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass(frozen=True)
class Dribble:
    """An answer whose status line comes at once and every later byte (headers, body) `interval_s` apart:
    a slow peer, for the tests of Herald's total deadlines (the sleep is the behaviour under test)."""

    body: bytes
    interval_s: float


@dataclass(frozen=True)
class WithHeaders:
    """An answer's body with headers of its own (a rate limit's reset, say)."""

    body: Any
    headers: dict[str, str]


Response = tuple[int, Any, str]  # status, body (JSON-able, str, Dribble or WithHeaders), content type
Handler = Callable[[Request], Response]

HANGING = -1  # an app's outage "status": its calls are accepted and never answered while it lasts
_HANG_MOST_S = 120.0


def outage_status(body: dict[str, Any]) -> int:
    """An outage as POSTed to a fake: `{"status": 503}` answers with that status, `{"hang": true}` never answers."""
    return HANGING if body.get("hang") else int(body.get("status", 0))


class LoopbackServer:
    def __init__(self, handle: Handler, host: str = "127.0.0.1", port: int = 0) -> None:
        self._handle = handle
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-provider")

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload, content_type = server._handle(
                    Request(self.command, parts.path, query, headers, body, self.path)
                )
                if isinstance(payload, Dribble):
                    self._dribble(status, payload, content_type)
                    return
                extra: dict[str, str] = {}
                if isinstance(payload, WithHeaders):
                    payload, extra = payload.body, payload.headers
                data = (
                    payload.encode() if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False).encode()
                )
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _dribble(self, status: int, answer: Dribble, content_type: str) -> None:
                self.close_connection = True
                rest = f"content-type: {content_type}\r\ncontent-length: {len(answer.body)}\r\n\r\n".encode()
                try:
                    self.wfile.write(f"HTTP/1.1 {status} OK\r\n".encode())
                    for byte in rest + answer.body:
                        self.wfile.flush()
                        time.sleep(answer.interval_s)
                        self.wfile.write(bytes([byte]))
                except OSError:
                    return  # the caller gave up and closed: what a total deadline does

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return

        return _Handler


class LoopbackFake:
    """A provider fake: one loopback server answering with `_handle`, and a lock for the fake's state."""

    def __init__(self, port: int = 0) -> None:
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._handle, port=port)
        self.outages: dict[str, int] = {}  # an app's id -> the HTTP status its every call is answered with

    def set_outage(self, app: str | int, status: int) -> None:
        """Every call of that app answered with `status` (HANGING: never answered; 0: the outage is over)."""
        with self._lock:
            if status:
                self.outages[str(app)] = status
            else:
                self.outages.pop(str(app), None)

    def _outage_status(self, app: str) -> int | None:
        """The status an app's call is answered with during its outage (None: no outage). A hanging outage holds
        the call, unanswered, until it ends (a client's timeout comes first), then answers 503, nothing done."""

        def now() -> int | None:
            with self._lock:
                return self.outages.get(app)

        status = now()
        if status != HANGING:
            return status
        until = time.monotonic() + _HANG_MOST_S
        while now() == HANGING and time.monotonic() < until:
            time.sleep(0.05)  # the fake's connection held open: the hang is the behaviour under test
        return 503

    @property
    def url(self) -> str:
        return self._server.url

    def start(self) -> Self:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def _handle(self, request: Request) -> Response:
        raise NotImplementedError
