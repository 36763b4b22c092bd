"""Reconfiguring the process's container in a test: a setting changed or a fake put in a part's place goes
through the container's own API, so nothing patches a module and no cache is cleared by hand."""

from __future__ import annotations

import dataclasses
from typing import Any

from herald.container import Container, current, use
from herald.settings import PREFIX, Settings


def reconfigure(**settings: Any) -> Container:
    """The process's container made again with these settings changed and nothing built (its clients, clock and
    overrides kept unless `clock` or `clients` is given): the next part a handler, a route or a test builds
    sees them. With no setting: a fresh process, nothing in memory but what DynamoDB and the queues hold."""
    container = current().reconfigured(**settings)
    use(container)
    return container


def shipped(*variables: str) -> dict[str, Any]:
    """The shipped defaults of these settings, named by their environment variables (HERALD_...)."""
    defaults = {field.name: field.default for field in dataclasses.fields(Settings)}
    return {name: defaults[name] for name in (variable.removeprefix(PREFIX).lower() for variable in variables)}
