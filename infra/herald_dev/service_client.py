"""How the local cloud's sample services (the reference agent engine, the sample owner) call Herald: one
service key, JSON in and out, over loopback."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


class ServiceClient:
    def __init__(self, http_url: str, key: str) -> None:
        self._http_url = http_url
        self._key = key

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """The status and the JSON answer (0 and None when Herald's HTTP API is not up yet)."""
        request = urllib.request.Request(  # noqa: S310 - loopback URL of the local cloud
            self._http_url + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self._key}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode(errors="replace")
        except OSError:
            return 0, None
