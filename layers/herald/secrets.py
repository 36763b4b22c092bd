"""Provider secrets: from an SSM SecureString parameter in AWS (cached a few minutes, so a rotation takes
effect without a deploy), or given directly in the environment for local use."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from herald import aws
from herald.errors import ConfigurationError
from herald.settings import Secret

_CACHE_SECONDS = 300


def secret_source(direct: Secret | None, parameter_name: str | None, what: str) -> Callable[[], str]:
    if direct is not None:
        value = direct.get_secret_value()
        return lambda: value
    if not parameter_name:
        raise ConfigurationError(f"{what} is not configured (neither the value nor its SSM parameter)")
    lock = threading.Lock()
    cached: list[tuple[str, float]] = []

    def read() -> str:
        with lock:
            if not cached or time.monotonic() - cached[0][1] > _CACHE_SECONDS:
                response = aws.ssm().get_parameter(Name=parameter_name, WithDecryption=True)
                cached[:] = [(response["Parameter"]["Value"], time.monotonic())]
            return cached[0][0]

    return read
