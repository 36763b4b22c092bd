"""A `Schedule` event (EventBridge rate expression), as Lambda receives it."""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
import uuid

from herald_ops.template import ACCOUNT_ID

from herald_dev.runtime import FunctionError, LocalFunction

log = logging.getLogger("local-cloud")
_RATE = re.compile(r"^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$")
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


def rate_seconds(expression: str) -> float:
    match = _RATE.match(expression.strip())
    if not match:
        raise ValueError(f"only rate(...) schedules run locally, not {expression!r}")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2).rstrip("s")]


class ScheduleEventSource:
    def __init__(self, function: LocalFunction, rule_name: str, interval_s: float) -> None:
        self.function = function
        self.rule_arn = f"arn:aws:events:{function.region}:{ACCOUNT_ID}:rule/{rule_name}"
        self.interval_s = interval_s
        self._thread: threading.Thread | None = None

    def start(self, stop: threading.Event) -> None:
        self._thread = threading.Thread(
            target=self._run, args=(stop,), name=f"schedule-{self.function.logical_id}", daemon=True
        )
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread:
            self._thread.join(timeout)

    def event(self) -> dict[str, object]:
        return {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": ACCOUNT_ID,
            "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "region": self.function.region,
            "resources": [self.rule_arn],
            "detail": {},
        }

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval_s):
            try:
                self.function.invoke(self.event())
            except FunctionError:
                log.warning("scheduled run of %s failed", self.function.logical_id)
