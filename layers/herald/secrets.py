"""Provider secrets: from an SSM SecureString parameter in AWS, through Powertools Parameters (cached a few
minutes, so a rotation takes effect without a deploy), or given directly in the environment locally."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from herald import aws
from herald.errors import ConfigurationError
from herald.settings import Secret

CACHE_SECONDS = 300


def secret_source(direct: Secret | None, parameter_name: str | None, what: str) -> Callable[[], str]:
    if direct is not None:
        value = direct.get_secret_value()
        return lambda: value
    if not parameter_name:
        raise ConfigurationError(f"{what} is not configured (neither the value nor its SSM parameter)")
    lock = threading.Lock()
    providers: list[Any] = []

    def read() -> str:
        with lock:
            if not providers:
                # Imported on the first read: a function that never reads a secret never pays for it.
                from aws_lambda_powertools.utilities.parameters import SSMProvider

                providers.append(SSMProvider(boto3_client=aws.ssm()))
        return str(providers[0].get(parameter_name, decrypt=True, max_age=CACHE_SECONDS))

    return read
