"""External events, the pace of Herald's calls to Feishu: each card's send or update counts against its chat's
(or person's) bucket and the app's (per second and per minute), shared by every worker through the
governor (herald.limits.governor), which reserves the call's moment in all of them at once. A worker waits
a second at most for its call's moment (the lane's messages wait behind it, in order; a later moment sends the
message back for then); a rate-limit answer from Feishu slows or holds the bucket it names.
docs/side-effects.md cites each limit."""

from __future__ import annotations

from dataclasses import dataclass

from herald.events.models import Target
from herald.events.ports import Budget, Meanwhile
from herald.limits.governor import BucketLimit, Gate, Governor, Look
from herald.limits.shares import Share


@dataclass(frozen=True)
class FeishuLimits:
    """Feishu's published limits for sending and updating messages, per app and per chat (0: not paced)."""

    app_per_second: int = 50
    app_per_minute: int = 1000
    chat_per_second: int = 5


class FeishuPace:
    def __init__(self, governor: Governor, app_id: str, limits: FeishuLimits) -> None:
        self._governor = governor
        self._app = f"feishu:{app_id}"
        self._limits = limits

    def wait(self, target: Target, budget_ms: Budget, meanwhile: Meanwhile, share: Share | None = None) -> int:
        return self._governor.take([*self._app_gates(), self._chat(target)], budget_ms, meanwhile, share)

    def look(self, target: Target, budget_ms: int, share: Share | None = None) -> Look:
        return self._governor.look([*self._app_gates(), self._chat(target)], budget_ms, share)

    def refused(self, target: Target, scope: str, retry_after_ms: int = 0) -> None:
        for gate in [self._chat(target)] if scope == "chat" else self._app_gates():
            self._governor.refused(gate, retry_after_ms)

    def _chat(self, target: Target) -> Gate:
        return Gate(f"{self._app}:chat:{target.key}", BucketLimit(self._limits.chat_per_second))

    def _app_gates(self) -> list[Gate]:
        limits = self._limits
        return [
            Gate(f"{self._app}:s", BucketLimit(limits.app_per_second), shared=True),
            Gate(f"{self._app}:m", BucketLimit(limits.app_per_minute, per_seconds=60), shared=True),
        ]


class Unpaced:
    """No limits of Herald's own (Feishu's answers still stop a call it refuses)."""

    def wait(self, target: Target, budget_ms: Budget, meanwhile: Meanwhile, share: Share | None = None) -> int:
        meanwhile()
        return 0

    def look(self, target: Target, budget_ms: int, share: Share | None = None) -> Look:
        return Look()

    def refused(self, target: Target, scope: str, retry_after_ms: int = 0) -> None:
        return None
