"""Confirms, the pace of Herald's calls to Tencent IM: each push's `sendmsg`, and each history lookup
(`admin_getroammsg`) that settles a send whose answer was lost, counts against the app's bucket for that API,
shared by every worker through the governor (herald.limits.governor). docs/side-effects.md cites each limit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from herald.confirms.delivery import SENDMSG
from herald.limits.governor import BucketLimit, Gate, Governor
from herald.limits.shares import Share


@dataclass(frozen=True)
class TencentImLimits:
    """Tencent IM's published per-app limits of the two REST APIs a push uses, calls a second (0: not paced)."""

    sendmsg_per_second: int = 200
    roammsg_per_second: int = 200


class TencentImPace:
    def __init__(self, governor: Governor, sdk_app_id: int, limits: TencentImLimits) -> None:
        self._governor = governor
        self._app = f"tim:{sdk_app_id}"
        self._limits = limits

    def wait(self, api: str, budget_ms: Callable[[], int], share: Share | None = None) -> int:
        return self._governor.take([self._gate(api)], budget_ms, share=share)

    def refused(self, api: str) -> None:
        self._governor.refused(self._gate(api))

    def _gate(self, api: str) -> Gate:
        per_second = self._limits.sendmsg_per_second if api == SENDMSG else self._limits.roammsg_per_second
        return Gate(f"{self._app}:{api}", BucketLimit(per_second), shared=True)
