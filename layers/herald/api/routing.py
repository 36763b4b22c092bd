"""Each bounded context's routes, included when a request first needs them: a cold start imports and registers
only what its first request needs (its context's module, models and data access), not every context's. The
OpenAPI includes them all first, in one fixed order, so the document never depends on which request came first."""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass

from fastapi import FastAPI
from starlette.routing import BaseRoute


@dataclass(frozen=True)
class RouteGroup:
    """One context's routers (`module:attribute`) and the path prefixes they serve: a path has one group."""

    prefixes: tuple[str, ...]
    routers: tuple[str, ...]

    def serves(self, path: str) -> bool:
        return any(path == prefix or path.startswith(prefix + "/") for prefix in self.prefixes)


# In the order their routes are matched and documented (confirms' deliveries before the owner routes that share
# their prefix, as they were always included).
ROUTE_GROUPS = (
    RouteGroup(("/api/v1/me", "/internal/v1/whoami"), ("herald.api.identity:router",)),
    RouteGroup(("/api/v1/role-invitations",), ("herald.invitations.routes:router",)),
    RouteGroup(("/api/v1/message/action-confirms",), ("herald.confirms.routes:router",)),
    RouteGroup(
        ("/internal/v1/confirms",), ("herald.confirms.routes:internal_router", "herald.confirms.owners.routes:router")
    ),
    RouteGroup(
        ("/api/v1/inbox", "/internal/v1/inbox"), ("herald.inbox.routes:router", "herald.inbox.routes:producer_router")
    ),
    RouteGroup(("/events/external",), ("herald.events.webhooks.routes:router", "herald.events.routes:router")),
    RouteGroup(
        ("/api/v1/sessions", "/internal/v1/sessions"),
        # the approval routes before the turn steps, whose `{step}` would take `approvals` for one
        ("herald.turns.routes:router", "herald.confirms.approvals.routes:router", "herald.turns.routes:engine_router"),
    ),
)


class LazyRoutes:
    """Includes `groups` into `app` on demand. The routes `app` already has (health, the reference page, the
    OpenAPI) stay first; the groups' routes follow in the groups' order, whatever order they were included in."""

    def __init__(self, app: FastAPI, groups: tuple[RouteGroup, ...] = ROUTE_GROUPS) -> None:
        self._app = app
        self._groups = groups
        self._included: set[int] = set()
        self._order: dict[int, int] = {id(route): -1 for route in app.router.routes}
        self._lock = threading.Lock()

    def for_path(self, path: str) -> None:
        """Include every group that serves `path` (a path no group serves includes nothing: it is a 404)."""
        for index, group in enumerate(self._groups):
            if index not in self._included and group.serves(path):
                self._include(index)

    def all(self) -> None:
        for index in range(len(self._groups)):
            if index not in self._included:
                self._include(index)

    def _include(self, index: int) -> None:
        with self._lock:
            if index in self._included:
                return
            for router in self._groups[index].routers:
                module, name = router.split(":")
                self._app.include_router(getattr(importlib.import_module(module), name))
            routes: list[BaseRoute] = self._app.router.routes
            for route in routes:
                self._order.setdefault(id(route), index)
            routes.sort(key=lambda route: self._order[id(route)])
            self._included.add(index)
