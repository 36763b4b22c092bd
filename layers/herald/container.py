"""The one place a process builds its parts: settings and clients in, services out, each built once.

Each context's `wiring` module declares its parts with `@part` (a recipe: a function of the container).
Calling a part with no argument builds it in the process's container, which is made from the environment
on first use: once per Lambda container. The CLI and the tests make their own, with their settings and
clients, and `use` it; a test changes a setting with `reconfigured` and puts a fake in a part's place with
`override`, never by patching a module. A part is built on first use, so a worker builds (and imports) only
what it uses.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from herald.clock import Clock, now_ms
from herald.observability import observe_stage
from herald.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_apigatewaymanagementapi import ApiGatewayManagementApiClient
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient

T = TypeVar("T")


@dataclass(frozen=True)
class Clients:
    """The AWS clients parts talk through; None: the process's own (herald.aws, endpoints from the
    environment)."""

    dynamodb: DynamoDBClient | None = None
    sqs: SQSClient | None = None
    apigw_management: ApiGatewayManagementApiClient | None = None  # the WebSocket API's connections


class Container:
    """Settings, clients, and every part built from them so far."""

    def __init__(self, settings: Settings, clients: Clients | None = None, clock: Clock = now_ms) -> None:
        self.settings = settings
        self.clients = clients or Clients()
        self.clock = clock  # every service's "now" (a test's own clock moves leases and expiries without sleeping)
        self._parts: dict[Callable[[Container], Any], Any] = {}
        self._overrides: dict[Callable[[Container], Any], Any] = {}
        self._lock = threading.RLock()  # a part's recipe builds the parts it needs

    def reconfigured(self, *, clock: Clock | None = None, clients: Clients | None = None, **settings: Any) -> Container:
        """A container with these settings changed (its clients and clock unless given, its overrides), nothing
        built yet: the parts built from it see the change."""
        changed = Container(
            dataclasses.replace(self.settings, **settings), clients or self.clients, clock or self.clock
        )
        for recipe, value in self._overrides.items():
            changed.override(recipe, value)
        return changed

    def override(self, recipe: Callable[[Container], T], value: T) -> None:
        """`value` stands for the part from now on (a test's fake); every other part is built again from it."""
        with self._lock:
            key = recipe.recipe if isinstance(recipe, Part) else recipe
            self._overrides[key] = value
            self._parts = dict(self._overrides)

    def build(self, recipe: Callable[[Container], T]) -> T:
        built: T | None = self._parts.get(recipe)  # built already: no lock on the hot path
        if built is None:
            with self._lock:
                if recipe not in self._parts:
                    self._parts[recipe] = recipe(self)
                built = self._parts[recipe]
        return built


class Part(Generic[T]):
    """A recipe, callable as the part itself: `confirms()` in the process's container, `confirms(c)` in c."""

    def __init__(self, recipe: Callable[[Container], T]) -> None:
        self.recipe = recipe
        functools.update_wrapper(self, recipe)

    def __call__(self, container: Container | None = None) -> T:
        return (container or current()).build(self.recipe)


def part(recipe: Callable[[Container], T]) -> Part[T]:
    return Part(recipe)


_current: Container | None = None
_current_lock = threading.Lock()


def current() -> Container:
    """The process's container: the one given to `use`, or one made from the environment on first use."""
    global _current  # noqa: PLW0603 - the one process-wide container
    container = _current  # made already: no lock on the hot path
    if container is not None:
        return container
    with _current_lock:
        if _current is None:
            _current = Container(Settings.from_env())
            observe_stage(_current.settings.stage)
        return _current


def use(container: Container | None) -> None:
    """Make `container` the process's (None: the next `current()` makes a fresh one from the environment)."""
    global _current  # noqa: PLW0603 - the one process-wide container
    with _current_lock:
        _current = container
        if container is not None:
            observe_stage(container.settings.stage)
