"""What the console's panels stand on: the stack it shows, and, on the local cloud, the endpoints its state file
names (the HTTP API, the WebSocket API, the provider fakes)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from herald_ops.stack import NoLocalCloud, Stack

from herald.ids import DEFAULT_APP_CODE
from herald.settings import PREFIX


@dataclass(frozen=True)
class Shown:
    """The stack the console shows."""

    stack: Stack

    @property
    def default_app_code(self) -> str:
        """The tenant a panel acts in when the page names none: the stack's own default."""
        if self.stack.name:
            return self.stack.settings.default_app_code
        settings = self.local("settings", {})
        return str(settings.get(f"{PREFIX}DEFAULT_APP_CODE", DEFAULT_APP_CODE))

    def local(self, key: str, default: Any = None) -> Any:
        """A value of the running local cloud's state (404 on a deployed stack, 503 when none is running)."""
        if self.stack.name:
            raise HTTPException(404, f"{key} exists only on the local cloud")
        try:
            return self.stack.local_state.get(key, default)
        except NoLocalCloud as exc:
            raise HTTPException(503, str(exc)) from exc

    def fake(self, name: str) -> str:
        """A provider fake's URL (404 when the local cloud runs with the real provider)."""
        url = (self.local("fakes") or {}).get(name)
        if not url:
            raise HTTPException(404, f"no fake {name}: the local cloud runs with a real provider")
        return str(url)
