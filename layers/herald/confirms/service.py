"""The confirm state machine and its repairs, independent of DynamoDB, HTTP and Tencent IM.

Every change is a conditional write on the confirm's version, so of two racing writers one wins and the
other re-reads. Clicking claims the confirm (`pending -> processing`) under a lease, asks the owner, then
records the owner's answer. Two crash windows are repaired from the owner's fact, by the next request for
that confirm or by the janitor: after the claim (the owner may or may not have been asked: the intended
action is carried out, idempotently) and after the owner decided (the owner's decision is recorded).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from herald import budgets
from herald.auth.models import Principal
from herald.clock import Clock, now_ms
from herald.confirms.businesses import BusinessRefused, BusinessRegistry, OwnerBackoff, OwnerResting, OwnerSilent
from herald.confirms.models import (
    ACTION_OF,
    ALLOWED,
    RESULT_OF,
    Action,
    BusinessTaken,
    Confirm,
    ConfirmDraft,
    ConfirmStatus,
    OwnerFact,
    OwnerState,
    StaleConfirm,
)
from herald.errors import Conflict, InvalidArgument, NotFound, PermissionDenied, UpstreamError
from herald.ids import new_id

CONFIRM_ID = re.compile(r"^cfm_[0-9a-f]{32}$")
COMMAND_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,96}$")
USER_ID = re.compile(r"^[0-9]{1,20}$")
MAX_BATCH = 100
MAX_PAGE = 100
MAX_REASON = 256
_ATTEMPTS = 5


class ConfirmStore(Protocol):
    def create(self, confirm: Confirm) -> Confirm:
        """Insert unless a confirm for the same source exists; returns the stored one either way. Raises
        BusinessTaken when another source's confirm asks about the same business id."""
        ...

    def get(self, app_code: str, confirm_id: str) -> Confirm | None: ...

    def get_many(self, app_code: str, confirm_ids: list[str]) -> list[Confirm]: ...

    def by_source(self, app_code: str, source_name: str, source_event_id: str) -> Confirm | None: ...

    def by_business(self, app_code: str, business_type: str, business_id: str) -> Confirm | None: ...

    def transition(self, current: Confirm, new: Confirm) -> Confirm:
        """Write `new` if the stored confirm is still `current` (same version); else StaleConfirm."""
        ...

    def between(
        self, app_code: str, user_a: str, user_b: str, limit: int, page_token: str
    ) -> tuple[list[Confirm], str]:
        """Confirms between two users, newest first, from the page `page_token` names (opaque; "" for the
        first); with the next page's token ("" after the last)."""
        ...

    def due(self, now: int, limit: int) -> list[Confirm]:
        """Pending confirms past their expiry and processing ones past their lease."""
        ...


@dataclass
class JanitorPass:
    """What one janitor pass did: settled (or found current), left waiting on its owner, failed unexpectedly."""

    settled: list[Confirm] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    out_of_time: bool = False


def validate_confirm_id(confirm_id: str) -> str:
    if not CONFIRM_ID.fullmatch(confirm_id):
        raise InvalidArgument("confirm_id is malformed")
    return confirm_id


class Confirms:
    def __init__(
        self,
        store: ConfirmStore,
        registry: BusinessRegistry,
        lease_ms: int,
        clock: Clock = now_ms,
        backoff: OwnerBackoff | None = None,
    ) -> None:
        self._store = store
        self._registry = registry
        self._lease_ms = lease_ms
        self._clock = clock
        self._backoff = backoff or OwnerBackoff()

    # ------------------------------------------------------------------ creation (from an owner's outbox)
    def made_from(self, app_code: str, source_name: str, source_event_id: str) -> bool:
        """Whether a confirm was made from this source already (a repeat of its request is answered with it)."""
        return self._store.by_source(app_code, source_name, source_event_id) is not None

    def project(self, draft: ConfirmDraft) -> Confirm:
        """Create the confirm a business asked for; a repeat of the same source creates nothing new."""
        existing = self._store.by_source(draft.app_code, draft.source_name, draft.source_event_id)
        if existing is None:
            try:
                existing = self._store.create(self._new(draft))
            except BusinessTaken as exc:
                raise Conflict(
                    "a confirm for this business_id exists (from another source_event_id)", reason="business_id_taken"
                ) from exc
        if (existing.business_type, existing.business_id) != (draft.business_type, draft.business_id):
            raise Conflict(
                "this source_event_id already made a confirm for another business_id", reason="source_event_id_reused"
            )
        return existing

    def _new(self, draft: ConfirmDraft) -> Confirm:
        now = self._clock()
        return Confirm(
            app_code=draft.app_code,
            confirm_id=draft.confirm_id or new_id("cfm"),
            business_type=draft.business_type,
            business_subtype=draft.business_subtype,
            business_id=draft.business_id,
            sender_user_id=draft.sender_user_id,
            receiver_user_id=draft.receiver_user_id,
            status=ConfirmStatus.PENDING,
            message_text=draft.message_text,
            payload=dict(draft.payload),
            source_name=draft.source_name,
            source_event_id=draft.source_event_id,
            created_at_ms=draft.created_at_ms or now,
            updated_at_ms=now,
            expire_at_ms=draft.expire_at_ms,
            version=1,
            buttons=draft.buttons,
        )

    def owner_decided(self, app_code: str, source_name: str, source_event_id: str, fact: OwnerFact) -> Confirm | None:
        """The owner reached a decision by itself (e.g. the inviter cancelled): follow it if still pending."""
        confirm = self._store.by_source(app_code, source_name, source_event_id)
        return self._follow(confirm, fact) if confirm is not None else None

    def cancel_by_business(self, app_code: str, business_type: str, business_id: str) -> Confirm:
        """An owner service withdrew the thing it asked about: its pending confirm is cancelled (again:
        the same answer). A confirm being processed waits for the owner's own answer to that callback."""
        confirm = self._store.by_business(app_code, business_type, business_id)
        if confirm is None:
            raise NotFound("no confirm for this business_id")
        confirm = self._follow(confirm, OwnerFact(OwnerState.CANCELLED, self._clock()))
        if confirm.status is ConfirmStatus.CANCELLED:
            return confirm
        if confirm.status is ConfirmStatus.PROCESSING:
            raise Conflict("the receiver's action is with the owner service now; retry", reason="processing")
        raise Conflict(f"the confirm is {confirm.status}", reason=str(confirm.status))

    def _follow(self, confirm: Confirm, fact: OwnerFact) -> Confirm:
        """Record a decision the owner reached by itself on a pending confirm. A processing confirm is left to
        the request or janitor that holds or reclaims its lease: the owner's answer to that call decides."""
        while confirm.status is ConfirmStatus.PENDING and fact.confirm_status is not None:
            try:
                return self._store.transition(confirm, self._decided(confirm, fact))
            except StaleConfirm:
                confirm = self._reload(confirm)
        return confirm

    # ------------------------------------------------------------------ the receiver acts
    def act(self, principal: Principal, confirm_id: str, action: Action, command_id: str, reason: str = "") -> Confirm:
        validate_confirm_id(confirm_id)
        if not COMMAND_ID.fullmatch(command_id):
            raise InvalidArgument("command_id must be 1-96 characters of A-Z a-z 0-9 _ . : -")
        if len(reason) > MAX_REASON:
            raise InvalidArgument(f"reason is longer than {MAX_REASON} characters")
        confirm = self._store.get(principal.app_code, confirm_id)
        if confirm is None or not confirm.party(principal.user_id):
            raise NotFound("no such confirm")
        if confirm.receiver_user_id != principal.user_id:
            raise PermissionDenied("only the receiver may act on this confirm")
        if not confirm.offers(action):
            raise Conflict(f"this confirm does not offer {action}", reason="action_not_offered")
        for _ in range(_ATTEMPTS):
            confirm = self.settle(confirm)
            if confirm.status.terminal:
                return self._answer(confirm, action)
            if confirm.status is ConfirmStatus.PROCESSING:
                raise Conflict("the confirm is being processed", reason="processing")
            claimed = confirm.evolve(
                status=ConfirmStatus.PROCESSING,
                processing_action=str(action),
                processing_command_id=command_id,
                processing_reason=reason,  # kept with the claim: a repair carries it to the owner
                locked_by=uuid.uuid4().hex,
                lock_until_ms=self._clock() + self._lease_ms,
            )
            try:
                claimed = self._write(confirm, claimed)
            except StaleConfirm:
                confirm = self._reload(confirm)
                if not confirm.holds_lock(claimed.locked_by):
                    continue
                claimed = confirm  # this very claim landed; only its reply was lost
            return self._answer(self._complete(claimed, reason), action)
        raise Conflict("the confirm is changing; retry", reason="processing")

    @staticmethod
    def _answer(confirm: Confirm, action: Action) -> Confirm:
        """The same action again returns the same terminal view; anything else is a conflict. A confirm
        its owner refused carries the owner's named reason."""
        if confirm.status is RESULT_OF[action]:
            return confirm
        if confirm.status is ConfirmStatus.FAILED and confirm.failure_reason:
            raise Conflict("the owner refused this action", reason=confirm.failure_reason)
        raise Conflict(f"the confirm is {confirm.status}", reason=str(confirm.status))

    def _complete(self, claimed: Confirm, reason: str) -> Confirm:
        """Ask the owner to carry out the claimed action, then record what the owner says."""
        handler = self._registry.handler(claimed.app_code, claimed.business_type)
        try:
            fact = handler.act(claimed, Action(claimed.processing_action), reason)
        except BusinessRefused as exc:
            return self._finish(claimed, claimed.evolve(status=ConfirmStatus.FAILED, failure_reason=exc.reason))
        if fact.confirm_status is None:
            raise UpstreamError("the owner left the request undecided")
        return self._finish(claimed, self._decided(claimed, fact))

    def _decided(self, confirm: Confirm, fact: OwnerFact) -> Confirm:
        status = fact.confirm_status
        assert status is not None
        action = ACTION_OF.get(status)
        return confirm.evolve(
            status=status,
            processed_action=str(action) if action else "",
            processed_command_id=confirm.processing_command_id
            if action and confirm.processing_action == str(action)
            else "",
            processed_by_user_id=confirm.receiver_user_id if action else "",
            processed_at_ms=fact.decided_at_ms or self._clock(),
        )

    def _finish(self, current: Confirm, final: Confirm) -> Confirm:
        final = final.evolve(locked_by="", lock_until_ms=0)
        try:
            return self._write(current, final)
        except StaleConfirm:
            return self._reload(current)  # a repair or the janitor recorded it first

    # ------------------------------------------------------------------ repairs and expiry
    def settle(self, confirm: Confirm) -> Confirm:
        """Bring a confirm up to date: expire it past its time, repair a claim whose lease ran out."""
        now = self._clock()
        if confirm.status is ConfirmStatus.PENDING and now >= confirm.expire_at_ms:
            handler = self._registry.handler(confirm.app_code, confirm.business_type)
            fact = self._asked(confirm, lambda: handler.expire(confirm))
            if fact.confirm_status is None:
                return confirm
            return self._finish(confirm, self._decided(confirm, fact))
        if confirm.status is ConfirmStatus.PROCESSING and now >= confirm.lock_until_ms:
            handler = self._registry.handler(confirm.app_code, confirm.business_type)
            fact = self._asked(confirm, lambda: handler.fact(confirm))
            if fact.confirm_status is not None:
                return self._finish(confirm, self._decided(confirm, fact))
            reclaimed = confirm.evolve(locked_by=uuid.uuid4().hex, lock_until_ms=now + self._lease_ms)
            try:
                reclaimed = self._write(confirm, reclaimed)
            except StaleConfirm:
                return self._reload(confirm)
            return self._complete(reclaimed, reclaimed.processing_reason)
        return confirm

    def settle_now(self, confirm: Confirm) -> Confirm:
        """An operator's repair: the owner is asked now even while it rests (the operator says it is back)."""
        self._backoff.answered((confirm.app_code, confirm.business_type))
        return self.settle(confirm)

    def _asked(self, confirm: Confirm, question: Callable[[], OwnerFact]) -> OwnerFact:
        """The owner's truth for a repair. Only an action can be refused; an owner that refuses to state its
        truth is answering wrongly, which is an outage: the confirm waits (and counts as stuck) until it answers.
        An owner that gave no answer rests for its back-off: it is not asked again meanwhile."""
        owner = (confirm.app_code, confirm.business_type)
        if self._backoff.resting(owner, self._clock()):
            raise OwnerResting("the owner service gave no answer lately: it rests before it is asked again")
        try:
            fact = question()
        except BusinessRefused as exc:
            raise UpstreamError(f"the owner refused to state its truth ({exc.reason})") from exc
        self._backoff.answered(owner)
        return fact

    def settle_due(self, limit: int = 100, scan: int = 1000) -> JanitorPass:
        """The janitor's pass: confirms past their expiry or lease, settled one by one while the invocation
        has time for another owner call. One confirm's failure never ends the pass; a resting owner's confirms
        are passed over (cheaply: among the `scan` due ones read) so that other owners' are served."""
        done = JanitorPass()
        for confirm in self._store.due(self._clock(), scan):
            if len(done.settled) >= limit or not budgets.time_for_provider_call():
                done.out_of_time = len(done.settled) < limit
                break
            try:
                done.settled.append(self._settle_watched(confirm))
            except UpstreamError:
                done.waiting.append(confirm.confirm_id)  # the owner is down or resting: a later pass tries again
            except Exception as exc:  # one confirm's fault must not cost the others their pass
                done.failed.append((confirm.confirm_id, f"{type(exc).__name__}: {exc}"))
        return done

    def _settle_watched(self, confirm: Confirm) -> Confirm:
        """`settle`, remembering an owner that gave no answer so that it rests (`OwnerBackoff`)."""
        try:
            return self.settle(confirm)
        except OwnerSilent:
            self._backoff.silent((confirm.app_code, confirm.business_type), self._clock())
            raise

    # ------------------------------------------------------------------ reads
    def get(self, app_code: str, confirm_id: str) -> Confirm:
        """For operators (service routes): no party check, but the tenant still scopes it."""
        confirm = self._store.get(app_code, validate_confirm_id(confirm_id))
        if confirm is None:
            raise NotFound("no such confirm")
        return confirm

    def statuses(self, principal: Principal, confirm_ids: list[str]) -> list[Confirm]:
        """The caller's confirms among `confirm_ids`, in the order asked; others are simply absent."""
        if len(confirm_ids) > MAX_BATCH:
            raise InvalidArgument(f"at most {MAX_BATCH} confirm_ids")
        wanted = list(dict.fromkeys(validate_confirm_id(cid) for cid in confirm_ids))
        found = {
            c.confirm_id: c for c in self._store.get_many(principal.app_code, wanted) if c.party(principal.user_id)
        }
        return [self._settled_quietly(found[cid]) for cid in wanted if cid in found]

    def between(
        self, principal: Principal, peer_user_id: str, page_size: int, page_token: str
    ) -> tuple[list[Confirm], str]:
        if not USER_ID.fullmatch(peer_user_id):
            raise InvalidArgument("peer_user_id must be a numeric user id")
        if not 1 <= page_size <= MAX_PAGE:
            raise InvalidArgument(f"page_size must be between 1 and {MAX_PAGE}")
        items, next_token = self._store.between(
            principal.app_code, principal.user_id, peer_user_id, page_size, page_token
        )
        return [self._settled_quietly(c) for c in items if c.party(principal.user_id)], next_token

    def _settled_quietly(self, confirm: Confirm) -> Confirm:
        """Reads settle lazily too, but an owner outage never fails a read: the stored state is shown."""
        try:
            return self._settle_watched(confirm)
        except UpstreamError:
            return confirm

    # ------------------------------------------------------------------ helpers
    def _write(self, current: Confirm, new: Confirm) -> Confirm:
        if new.status not in ALLOWED[current.status]:
            raise Conflict(f"confirm cannot go from {current.status} to {new.status}", reason=str(current.status))
        return self._store.transition(current, new.evolve(version=current.version + 1, updated_at_ms=self._clock()))

    def _reload(self, confirm: Confirm) -> Confirm:
        latest = self._store.get(confirm.app_code, confirm.confirm_id)
        if latest is None:
            raise NotFound("no such confirm")
        return latest
