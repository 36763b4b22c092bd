"""A registered business type: who owns it, where Herald calls it, what its confirms offer."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from herald.confirms.models import DEFAULT_BUTTONS, Button
from herald.webhook_signing import live_secrets

BUSINESS_TYPE = re.compile(r"^[a-z][a-z0-9_]{1,47}$")
SUBTYPE = re.compile(r"^[a-z0-9][a-z0-9_]{0,31}$")
BUSINESS_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,96}$")
MIN_EXPIRY_S = 60
MAX_EXPIRY_S = 30 * 86_400
MAX_SUBTYPES = 32
MAX_LABEL = 32
MAX_TEXT = 512


@dataclass(frozen=True)
class OwnerSpec:
    """What an owner service registers (or changes) for a business type."""

    callback_url: str
    fact_url: str
    subtypes: frozenset[str]
    buttons: tuple[Button, ...] = DEFAULT_BUTTONS
    default_expiry_s: int = 7 * 86_400
    allow_links: bool = False  # whether its confirms' text may hold links and addresses (herald.plain_text)


@dataclass(frozen=True)
class Registration:
    app_code: str
    business_type: str
    service_id: str
    spec: OwnerSpec
    secret: str
    created_at_ms: int
    updated_at_ms: int
    enabled: bool = True
    previous_secret: str = ""
    previous_secret_until_ms: int = 0
    version: int = 1

    def secrets_at(self, now_ms: int) -> tuple[str, ...]:
        return live_secrets(self.secret, self.previous_secret, self.previous_secret_until_ms, now_ms)

    def evolve(self, **changes: Any) -> Registration:
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:  # the secrets never reach a log line
        return f"Registration({self.app_code}/{self.business_type} by {self.service_id}, enabled={self.enabled})"


def view(registration: Registration) -> dict[str, Any]:
    """A registration as its owner and operators see it: never its secret."""
    spec = registration.spec
    return {
        "app_code": registration.app_code,
        "business_type": registration.business_type,
        "service_id": registration.service_id,
        "callback_url": spec.callback_url,
        "fact_url": spec.fact_url,
        "subtypes": sorted(spec.subtypes),
        "actions": [button.to_dict() for button in spec.buttons],
        "default_expiry_seconds": spec.default_expiry_s,
        "allow_links": spec.allow_links,
        "enabled": registration.enabled,
        "created_at_ms": registration.created_at_ms,
        "updated_at_ms": registration.updated_at_ms,
    }


@dataclass(frozen=True)
class OwnerConfirmRequest:
    """An owner service's ask: one confirm, idempotent by `source_event_id`."""

    business_type: str
    business_subtype: str
    business_id: str
    source_event_id: str
    sender_user_id: str
    receiver_user_id: str
    message_text: str
    actions: tuple[str, ...] = ()  # a subset of the registered actions (default: all of them)
    payload: dict[str, Any] = dataclasses.field(default_factory=dict)
    expire_at_ms: int | None = None


class StaleRegistration(Exception):
    """The registration changed since it was read (a lost conditional write)."""


class RegistrationExists(Exception):
    """A registration for this tenant and business type exists already."""
