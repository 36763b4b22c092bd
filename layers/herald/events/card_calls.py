"""External events, the calls a card's revision makes: what it calls for (`Plan`: send, update, continue), through
which Feishu app (herald.events.apps), the call itself, and the card mapping it leaves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from herald.clock import Clock
from herald.errors import DeliveryError
from herald.events.apps import FeishuApps, FeishuLink
from herald.events.cards import NOT_EDITABLE_CODES, CardDecision, CardMessage, CardWrite, card_write, decide_card
from herald.events.drained import Written
from herald.events.jobs import Job
from herald.events.ports import DispatchStore
from herald.events.records import CallOutcome, Outcome, ProviderCall, provider_call


@dataclass(frozen=True)
class Plan:
    """What a job's card calls for, and who calls: `tenant_app` sends (the job's tenant's app now), `card_app`
    updates (the app that sent the card's message; None when Herald can no longer call as it)."""

    current: CardMessage | None
    decision: CardDecision
    tenant_app: FeishuLink
    card_app: FeishuLink | None

    @property
    def first_call(self) -> FeishuLink:
        """The app of the job's first call (its token is asked before the mark; its pace is waited for)."""
        if self.decision is CardDecision.UPDATE and self.card_app is not None:
            return self.card_app
        return self.tenant_app


class CardCalls:
    """A job's card: its plan, its one side effect, and the mapping it leaves."""

    def __init__(
        self, store: DispatchStore, apps: FeishuApps, clock: Clock, record: Callable[[ProviderCall], None]
    ) -> None:
        self._store = store
        self._apps = apps
        self._clock = clock
        self._record = record

    def write(self, job: Job, plan: Plan) -> Written:
        """The side effect itself: the card's update through the app that sent it, or a send with the job's uuid
        through the tenant's app: a new card, or one that continues a message Feishu no longer edits (known
        before, or said by its answer to the update)."""
        event, current = job.event, plan.current
        if plan.decision is CardDecision.UPDATE and current is not None and (editor := plan.card_app) is not None:
            try:
                shown = current.message_id
                self._called(editor, "update", shown, lambda: editor.messenger.update_card(shown, event.card()))
                return Written(shown, Outcome.UPDATED)
            except DeliveryError as exc:
                if exc.code not in NOT_EDITABLE_CODES:
                    raise
        target, card = event.target, event.card()
        if current is not None:  # the message it shows cannot be updated: a new card continues it
            card = replace(card, continues_from_ms=current.sent_at_ms)
        sender = plan.tenant_app.messenger
        message_id = self._called(
            plan.tenant_app,
            "send",
            "",
            lambda: sender.send_card(target.receive_id_type, target.receive_id, card, job.feishu_uuid),
        )
        if current is None:
            return Written(message_id, Outcome.SENT)
        return Written(message_id, Outcome.CONTINUED, continued_from=current.message_id)

    def _called(self, app: FeishuLink, operation: str, message_id: str, call: Callable[[], str | None]) -> str:
        """One call to Feishu, recorded however it ends; the message it went to (`message_id`, or the call's)."""
        at = self._clock()
        try:
            answered = call() or message_id
        except DeliveryError as exc:
            self._record(
                provider_call(at, app.app_id, operation, exc_outcome(exc), code=exc.code, message_id=message_id)
            )
            raise
        except BaseException:
            self._record(provider_call(at, app.app_id, operation, CallOutcome.INTERRUPTED, message_id=message_id))
            raise
        self._record(provider_call(at, app.app_id, operation, CallOutcome.DONE, message_id=answered))
        return answered

    def mapping(self, job: Job, written: Written, plan: Plan) -> CardWrite | None:
        """The card mapping a written card leaves: a new message is the tenant's app's, sent now."""
        sent_by, tenant = plan.tenant_app.app_id, job.tenant or ""
        return card_write(job, written.message_id, plan.current, sent_by=sent_by, at_ms=self._clock(), tenant=tenant)

    def plan(self, job: Job, tenant_app: FeishuLink) -> Plan:
        """What the job's card calls for, given where its card id was delivered (a one-off event: a send), and
        the apps that make the calls: an update only through the app that sent the card, while Herald can still
        call as it; otherwise the revision continues the card through the tenant's app (`tenant_app`, as the
        attempt found it)."""
        event = job.event
        if event.card_id is None or event.revision is None:
            return Plan(None, CardDecision.SEND, tenant_app, None)
        current = self._store.card(job.service_id, event.card_id, event.target)
        card_app = self._sender(current, tenant_app)
        editor = card_app.app_id if card_app else ""
        decision = decide_card(current, event.revision, job.content_hash, app_id=editor, now=self._clock())
        return Plan(current, decision, tenant_app, card_app)

    def _sender(self, current: CardMessage | None, tenant_app: FeishuLink) -> FeishuLink | None:
        """The app that sent the card's message, if Herald can still call as it (a mapping from before apps were
        recorded: the tenant's app, as then)."""
        if current is None:
            return None
        if not current.app_id:
            return tenant_app
        return self._apps.sender(current.tenant, current.app_id)


def exc_outcome(exc: DeliveryError) -> CallOutcome:
    """How a failed call ended, as its record says."""
    if exc.maybe_delivered:
        return CallOutcome.UNANSWERED
    return CallOutcome.THROTTLED if exc.throttled else CallOutcome.REFUSED
