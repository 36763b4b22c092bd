"""Registering owner services and taking their confirms, independent of DynamoDB, HTTP and the network.

A business type belongs to the service that registered it in a tenant: only that service changes it, asks
for its confirms or cancels them (another service gets 404, as if it did not exist, and spends none of the
owner's limits). Operators list, disable, release (free a squatted type) and transfer registrations. A
disabled owner gets no callbacks and may create no confirms; its open confirms wait. What an owner asks a
person is plain text (`herald.plain_text`): no links unless its registration allows them.
"""

from __future__ import annotations

import re
from typing import Protocol

from herald.callback_urls import ForbiddenUrl, UrlPolicy
from herald.clock import Clock, now_ms
from herald.confirms.models import Action, Button, Confirm, ConfirmDraft
from herald.confirms.owners.models import (
    BUSINESS_ID,
    BUSINESS_TYPE,
    MAX_EXPIRY_S,
    MAX_LABEL,
    MAX_SUBTYPES,
    MAX_TEXT,
    MIN_EXPIRY_S,
    SUBTYPE,
    OwnerConfirmRequest,
    OwnerSpec,
    Registration,
    RegistrationExists,
    StaleRegistration,
)
from herald.confirms.service import USER_ID, Confirms
from herald.errors import Conflict, InvalidArgument, NotFound
from herald.plain_text import plain_text_problem
from herald.webhook_signing import ROTATION_OVERLAP_MS, new_secret

SOURCE_PREFIX = "owner:"
_STYLES = ("primary", "secondary", "danger")
_LABEL = re.compile(rf"^[^\x00-\x1f\x7f]{{1,{MAX_LABEL}}}$")


class RegistrationStore(Protocol):
    def get(self, app_code: str, business_type: str) -> Registration | None: ...

    def create(self, registration: Registration) -> None:
        """Insert; RegistrationExists when the tenant's business type is taken."""
        ...

    def replace(self, current: Registration, new: Registration) -> Registration:
        """Write `new` if the stored registration is still `current` (its version); else StaleRegistration."""
        ...

    def all(self, app_code: str | None) -> list[Registration]:
        """A tenant's registrations (every tenant's for None), by business type."""
        ...

    def delete(self, current: Registration) -> None:
        """Remove it if it is still `current` (its version); else StaleRegistration."""
        ...


class Admission(Protocol):
    def check(self, limit: str, subject: str) -> None:
        """Count one request of `subject` against the named limit (`owner`, `owner_receiver`); raises
        RateLimited when it is over."""
        ...


def check_buttons(buttons: tuple[Button, ...]) -> tuple[Button, ...]:
    actions = [button.action for button in buttons]
    if not buttons or len(set(actions)) != len(actions):
        raise InvalidArgument("actions: one or both of accept and reject, each once")
    for button in buttons:
        if button.style not in _STYLES or not _LABEL.fullmatch(button.label):
            raise InvalidArgument(f"actions: a label is 1-{MAX_LABEL} characters, a style one of {', '.join(_STYLES)}")
        problem = plain_text_problem(button.label)
        if problem:
            raise InvalidArgument(f"actions: a label {problem}", reason="text_not_plain")
    return buttons


class Registrations:
    def __init__(self, store: RegistrationStore, urls: UrlPolicy, built_in: frozenset[str], clock: Clock = now_ms):
        self._store = store
        self._urls = urls
        self._built_in = built_in
        self._clock = clock

    def register(
        self, service_id: str, app_code: str, business_type: str, spec: OwnerSpec
    ) -> tuple[Registration, str | None]:
        """Register a business type, or change its owner's own registration. The signing secret is
        returned once, when the registration is new (None on a change: the secret stays)."""
        self._validate(business_type, spec)
        if business_type in self._built_in:
            raise Conflict("this business type is built into Herald", reason="business_type_taken")
        now = self._clock()
        current = self._store.get(app_code, business_type)
        if current is None:
            secret = new_secret()
            registration = Registration(app_code, business_type, service_id, spec, secret, now, now)
            try:
                self._store.create(registration)
            except RegistrationExists:
                current = self._store.get(app_code, business_type)
                if current is None:
                    raise
            else:
                return registration, secret
        if current.service_id != service_id:
            raise Conflict("another service owns this business type", reason="business_type_taken")
        return self._change(current, spec=spec, updated_at_ms=now), None

    def rotate_secret(self, service_id: str, app_code: str, business_type: str) -> tuple[Registration, str]:
        """A new secret, returned once; the old one keeps signing beside it for the overlap."""
        current = self.owned(service_id, app_code, business_type)
        secret, now = new_secret(), self._clock()
        rotated = self._change(
            current,
            secret=secret,
            previous_secret=current.secret,
            previous_secret_until_ms=now + ROTATION_OVERLAP_MS,
            updated_at_ms=now,
        )
        return rotated, secret

    def set_enabled(self, app_code: str, business_type: str, enabled: bool) -> Registration:
        """Operators: stop (or resume) an owner's callbacks and new confirms."""
        return self._change(self._operated(app_code, business_type), enabled=enabled, updated_at_ms=self._clock())

    def release(self, app_code: str, business_type: str) -> Registration:
        """Operators: free a business type (a squatted one, say) for any service to register anew. Its open
        confirms wait, as a disabled owner's do, until a new owner registers the type and answers for them."""
        current = self._operated(app_code, business_type)
        try:
            self._store.delete(current)
        except StaleRegistration as exc:
            raise Conflict("the registration changed meanwhile; retry", reason="changed") from exc
        return current

    def transfer(self, app_code: str, business_type: str, to_service_id: str) -> tuple[Registration, str]:
        """Operators: give a business type to another service. The new secret (returned once, for the new
        owner) replaces every old one at once, and the registration is disabled: the old owner's URLs must not
        be called on the new owner's behalf. The new owner registers its URLs, then an operator enables it."""
        current = self._operated(app_code, business_type)
        secret = new_secret()
        moved = self._change(
            current,
            service_id=to_service_id,
            secret=secret,
            previous_secret="",
            previous_secret_until_ms=0,
            enabled=False,
            updated_at_ms=self._clock(),
        )
        return moved, secret

    def _operated(self, app_code: str, business_type: str) -> Registration:
        current = self._store.get(app_code, business_type)
        if current is None:
            raise NotFound("no such registration")
        return current

    def owned(self, service_id: str, app_code: str, business_type: str) -> Registration:
        """The caller's own registration; another service's is as absent as a missing one."""
        if not BUSINESS_TYPE.fullmatch(business_type):
            raise InvalidArgument("business_type must be 2-48 characters of a-z 0-9 _, starting with a letter")
        registration = self._store.get(app_code, business_type)
        if registration is None or registration.service_id != service_id:
            raise NotFound("no such registration")
        return registration

    def of_service(self, service_id: str, app_code: str) -> list[Registration]:
        return [r for r in self._store.all(app_code) if r.service_id == service_id]

    def all(self, app_code: str | None = None) -> list[Registration]:
        return self._store.all(app_code)

    def _change(self, current: Registration, **changes: object) -> Registration:
        try:
            return self._store.replace(current, current.evolve(**changes))
        except StaleRegistration as exc:
            raise Conflict("the registration changed meanwhile; retry", reason="changed") from exc

    def _validate(self, business_type: str, spec: OwnerSpec) -> None:
        if not BUSINESS_TYPE.fullmatch(business_type):
            raise InvalidArgument("business_type must be 2-48 characters of a-z 0-9 _, starting with a letter")
        for field, url in (("callback_url", spec.callback_url), ("fact_url", spec.fact_url)):
            try:
                self._urls.check(url)
            except ForbiddenUrl as exc:
                raise InvalidArgument(f"{field}: {exc}", reason="forbidden_url", details={"field": field}) from exc
        if not 1 <= len(spec.subtypes) <= MAX_SUBTYPES or not all(SUBTYPE.fullmatch(s) for s in spec.subtypes):
            raise InvalidArgument(f"subtypes: 1-{MAX_SUBTYPES} of 1-32 characters a-z 0-9 _")
        check_buttons(spec.buttons)
        if not MIN_EXPIRY_S <= spec.default_expiry_s <= MAX_EXPIRY_S:
            raise InvalidArgument(f"default_expiry_seconds must be between {MIN_EXPIRY_S} and {MAX_EXPIRY_S}")


class OwnerConfirms:
    """Confirms an owner service asks for and withdraws, through the one confirm state machine."""

    def __init__(
        self, registrations: Registrations, confirms: Confirms, admission: Admission, clock: Clock = now_ms
    ) -> None:
        self._registrations = registrations
        self._confirms = confirms
        self._admission = admission
        self._clock = clock

    def create(self, service_id: str, app_code: str, ask: OwnerConfirmRequest) -> Confirm:
        """Exactly one confirm (and so one IM push) per `source_event_id`, however often it is retried. Only
        the owner's own requests count against its business type's limit (ownership is checked first), and
        each receiver is asked at most so often by owner services."""
        registration = self._registrations.owned(service_id, app_code, ask.business_type)
        if not registration.enabled:
            raise Conflict("this business type is disabled by an operator", reason="owner_disabled")
        self._admission.check("owner", f"{app_code}#{ask.business_type}")
        spec, now = registration.spec, self._clock()
        if ask.business_subtype not in spec.subtypes:
            raise InvalidArgument("business_subtype is not one this business type registered")
        for name, value in (("business_id", ask.business_id), ("source_event_id", ask.source_event_id)):
            if not BUSINESS_ID.fullmatch(value):
                raise InvalidArgument(f"{name} must be 1-96 characters of A-Z a-z 0-9 _ . : -")
        _check_users(ask.sender_user_id, ask.receiver_user_id)
        if not 1 <= len(ask.message_text) <= MAX_TEXT:
            raise InvalidArgument(f"message_text must be 1-{MAX_TEXT} characters")
        problem = plain_text_problem(ask.message_text, links_allowed=spec.allow_links)
        if problem:
            raise InvalidArgument(f"message_text {problem}", reason="text_not_plain")
        offered = {str(button.action): button for button in spec.buttons}
        if not set(ask.actions) <= set(offered):
            raise InvalidArgument(f"actions must be among the registered ones: {', '.join(offered)}")
        buttons = tuple(offered[str(a)] for a in Action if str(a) in ask.actions) if ask.actions else spec.buttons
        expire_at_ms = ask.expire_at_ms if ask.expire_at_ms is not None else now + spec.default_expiry_s * 1000
        source_name = SOURCE_PREFIX + ask.business_type
        if not now < expire_at_ms <= now + MAX_EXPIRY_S * 1000 and not self._confirms.made_from(
            app_code, source_name, ask.source_event_id
        ):  # a retry of an ask that made its confirm gets that confirm, even once its expiry has passed
            raise InvalidArgument(f"expire_at_ms must be in the future, at most {MAX_EXPIRY_S // 86_400} days away")
        self._admission.check("owner_receiver", f"{app_code}#{ask.receiver_user_id}")
        return self._confirms.project(
            ConfirmDraft(
                app_code=app_code,
                business_type=ask.business_type,
                business_subtype=ask.business_subtype,
                business_id=ask.business_id,
                sender_user_id=ask.sender_user_id,
                receiver_user_id=ask.receiver_user_id,
                message_text=ask.message_text,
                source_name=source_name,
                source_event_id=ask.source_event_id,
                created_at_ms=now,
                expire_at_ms=expire_at_ms,
                payload=dict(ask.payload),
                buttons=buttons,
            )
        )

    def cancel(self, service_id: str, app_code: str, business_type: str, business_id: str) -> Confirm:
        self._registrations.owned(service_id, app_code, business_type)
        if not BUSINESS_ID.fullmatch(business_id):
            raise InvalidArgument("business_id must be 1-96 characters of A-Z a-z 0-9 _ . : -")
        return self._confirms.cancel_by_business(app_code, business_type, business_id)


def _check_users(sender_user_id: str, receiver_user_id: str) -> None:
    if not (USER_ID.fullmatch(sender_user_id) and USER_ID.fullmatch(receiver_user_id)):
        raise InvalidArgument("sender_user_id and receiver_user_id must be numeric user ids")
    if sender_user_id == receiver_user_id:
        raise InvalidArgument("the receiver must be another user than the sender")
