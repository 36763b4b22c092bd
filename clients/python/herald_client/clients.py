"""Herald's API for each of its callers: an app user (a JWT), and a service (a key) acting as a partner, an
agent engine or an operator. Methods return the answer's `data` and raise `herald_client.errors` types."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Literal
from urllib.parse import quote

import httpx

from herald_client.transport import Transport

Json = dict[str, Any]
Step = Literal["finish", "suspend", "resume"]


def every_item(transport: Transport, path: str, params: Json) -> Iterator[Json]:
    """Each item of a paged listing, following `next_page_token` until it is empty."""
    token = ""
    while True:
        page = transport.call("GET", path, params={**params, "page_token": token or None})
        yield from page["items"]
        token = page["next_page_token"]
        if not token:
            return


class AppClient:
    """What an app user may do, as that user (the token names the user and the tenant)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        http: httpx.Client | None = None,
        retries: int = 3,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self._t = Transport(base_url, token, http=http, retries=retries, sleep=sleep)

    def health(self) -> Json:
        return self._t.call("GET", "/api/v1/health")

    def me(self) -> Json:
        return self._t.call("GET", "/api/v1/me")

    # role invitations (the reference owner of confirms)
    def invite(self, invitation_type: str, target_user_id: str, agency_name: str = "") -> Json:
        body = {"invitation_type": invitation_type, "target_user_id": target_user_id}
        return self._t.call(
            "POST", "/api/v1/role-invitations", json={**body, **({"agency_name": agency_name} if agency_name else {})}
        )

    def invitation(self, invitation_id: str) -> Json:
        return self._t.call("GET", f"/api/v1/role-invitations/{invitation_id}")

    def cancel_invitation(self, invitation_id: str) -> Json:
        return self._t.call("POST", f"/api/v1/role-invitations/{invitation_id}/cancel")

    # action confirms
    def accept(self, confirm_id: str, command_id: str) -> Json:
        return self._t.call(
            "POST", f"/api/v1/message/action-confirms/{confirm_id}/accept", json={"command_id": command_id}
        )

    def reject(self, confirm_id: str, command_id: str, reason: str = "") -> Json:
        body = {"command_id": command_id, "reason": reason}
        return self._t.call("POST", f"/api/v1/message/action-confirms/{confirm_id}/reject", json=body)

    def confirm_statuses(self, confirm_ids: list[str]) -> list[Json]:
        return list(
            self._t.call("POST", "/api/v1/message/action-confirms/status", json={"confirm_ids": confirm_ids})["items"]
        )

    def confirms_with(self, peer_user_id: str, page_size: int = 50) -> Iterator[Json]:
        params = {"peer_user_id": peer_user_id, "page_size": page_size}
        return every_item(self._t, "/api/v1/message/action-confirms", params)

    # inbox
    def notifications(self, unread_only: bool = False, page_size: int = 20, page_token: str = "") -> Json:
        params = {"unread_only": str(unread_only).lower(), "page_size": page_size, "page_token": page_token or None}
        return self._t.call("GET", "/api/v1/inbox/notifications", params=params)

    def unread_count(self) -> int:
        return int(self._t.call("GET", "/api/v1/inbox/unread-count")["unread_count"])

    def read(self, notification_id: str) -> int:
        return int(self._t.call("POST", f"/api/v1/inbox/notifications/{notification_id}/read")["unread_count"])

    def read_all(self) -> int:
        return int(self._t.call("POST", "/api/v1/inbox/notifications/read-all")["unread_count"])

    def delete(self, notification_id: str) -> int:
        return int(self._t.call("DELETE", f"/api/v1/inbox/notifications/{notification_id}")["unread_count"])

    def preferences(self) -> Json:
        return self._t.call("GET", "/api/v1/inbox/preferences")

    def set_preferences(self, **switches: bool) -> Json:
        return self._t.call("PUT", "/api/v1/inbox/preferences", json=switches)

    # agent turn queue
    def send(self, session_id: str, agent: str, text: str, lang: str | None = None) -> Json:
        body = {"text": text, **({"lang": lang} if lang else {})}
        return self._t.call("POST", f"/api/v1/sessions/{session_id}/agents/{agent}/messages", json=body)

    def cancel(self, session_id: str, agent: str, message_id: str) -> Json:
        return self._t.call("POST", f"/api/v1/sessions/{session_id}/agents/{agent}/messages/{message_id}/cancel")

    def session_events(self, session_id: str, after_seq: int = 0) -> Json:
        return self._t.call("GET", f"/api/v1/sessions/{session_id}/events", params={"after_seq": after_seq})


class ServiceClient:
    """What a service key may do (its capabilities decide which of these it may call)."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        app_code: str | None = None,
        http: httpx.Client | None = None,
        retries: int = 3,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self._t = Transport(base_url, key, http=http, retries=retries, sleep=sleep)
        self._app = {"app_code": app_code} if app_code else {}

    def whoami(self) -> Json:
        return self._t.call("GET", "/internal/v1/whoami")

    # partner: external events (retried with the same event_id: a retry is a duplicate, never a second event)
    def post_event(self, event_id: str, event_type: str, data: Json) -> Json:
        return self._t.call(
            "POST", "/events/external", json={"event_id": event_id, "event_type": event_type, "data": data}
        )

    def get_event(self, event_id: str) -> Json:
        """What became of one of the service's events: its status, whether it blocks, its attempts."""
        return self._t.call("GET", f"/events/external/{quote(event_id, safe='')}")

    def list_events(self, status: str | None = None, page_size: int = 20) -> Iterator[Json]:
        """The service's events, newest first (of one status, when given), page after page."""
        return every_item(self._t, "/events/external", {"status": status, "page_size": page_size})

    def set_event_webhook(self, url: str, statuses: list[str] | None = None) -> Json:
        """Register (or change) the status webhook; `secret` is in the answer once, the first time."""
        body: Json = {"url": url} if statuses is None else {"url": url, "statuses": statuses}
        return self._t.call("PUT", "/events/external/webhook", json=body)

    def delete_event_webhook(self) -> Json:
        return self._t.call("DELETE", "/events/external/webhook")

    def rotate_event_webhook_secret(self) -> Json:
        """A new signing secret (in the answer, once); the old one signs beside it for 24 hours."""
        return self._t.call("POST", "/events/external/webhook/rotate-secret")

    # partner: inbox producer (idempotent by the dedup key user_id:kind:session_id:tail)
    def notify(self, user_id: str, kind: str, session_id: str, tail: str, title: str, **fields: Any) -> Json:
        body = {"user_id": user_id, "kind": kind, "session_id": session_id, "tail": tail, "title": title, **fields}
        return self._t.call("POST", "/internal/v1/inbox/notifications", json={**self._app, **body})

    def resolve(self, user_id: str, kind: str, session_id: str, tail: str) -> Json:
        body = {"user_id": user_id, "kind": kind, "session_id": session_id, "tail": tail}
        return self._t.call("POST", "/internal/v1/inbox/notifications/resolve", json={**self._app, **body})

    # partner: owner services (docs/owner-services.md)
    def register_business_type(
        self, business_type: str, callback_url: str, fact_url: str, subtypes: list[str], **spec: Any
    ) -> Json:
        body = {"callback_url": callback_url, "fact_url": fact_url, "subtypes": subtypes, **spec}
        return self._t.call("PUT", f"/internal/v1/confirms/owners/{business_type}", json={**self._app, **body})

    def rotate_secret(self, business_type: str) -> Json:
        return self._t.call("POST", f"/internal/v1/confirms/owners/{business_type}/rotate-secret", json=self._app)

    def registrations(self) -> list[Json]:
        return list(self._t.call("GET", "/internal/v1/confirms/owners", params=self._app)["items"])

    def ask_confirm(self, **confirm: Any) -> Json:
        """business_type, business_subtype, business_id, source_event_id, sender_user_id, receiver_user_id,
        message_text[, actions, payload, expire_at_ms]: retried with the same source_event_id."""
        return self._t.call("POST", "/internal/v1/confirms", json={**self._app, **confirm})

    def cancel_confirm(self, business_type: str, business_id: str) -> Json:
        body = {"business_type": business_type, "business_id": business_id}
        return self._t.call("POST", "/internal/v1/confirms/cancel", json={**self._app, **body})

    # operator
    def confirm_deliveries(self, confirm_id: str) -> Json:
        return self._t.call("GET", f"/internal/v1/confirms/{confirm_id}/deliveries", params=self._app)

    # agent engine
    def put_session(self, session_id: str, members: dict[str, str], agents: list[str], status: str = "active") -> Json:
        body = {"members": members, "agents": agents, "status": status}
        return self._t.call("PUT", f"/internal/v1/sessions/{session_id}", json={**self._app, **body})

    def turn(self, session_id: str, agent: str, turn_id: str, step: Step, app_code: str | None = None) -> Json:
        path = f"/internal/v1/sessions/{session_id}/agents/{agent}/turns/{turn_id}/{step}"
        return self._t.call("POST", path, params={"app_code": app_code} if app_code else self._app)

    def take_pending(self, session_id: str, agent: str, turn_id: str, app_code: str | None = None) -> Json:
        """The messages waiting for the agent, taken into its running turn at a step boundary."""
        path = f"/internal/v1/sessions/{session_id}/agents/{agent}/turns/{turn_id}/pending"
        return self._t.call("POST", path, params={"app_code": app_code} if app_code else self._app)

    def request_approval(self, session_id: str, agent: str, turn_id: str, approval: dict[str, Any]) -> Json:
        """Ask a member (`approval`: approval_id, user_id, text, actions?, expire_in_s?); the turn waits for the
        answer, which arrives on the turn queue as `approval.decided`."""
        path = f"/internal/v1/sessions/{session_id}/agents/{agent}/turns/{turn_id}/approvals"
        return self._t.call("POST", path, json={**self._app, **approval})

    def cancel_approval(
        self, session_id: str, agent: str, turn_id: str, approval_id: str, app_code: str | None = None
    ) -> Json:
        path = f"/internal/v1/sessions/{session_id}/agents/{agent}/turns/{turn_id}/approvals/{approval_id}/cancel"
        return self._t.call("POST", path, params={"app_code": app_code} if app_code else self._app)


# Every operation of events/openapi.json and the SDK method that calls it (tests/unit/test_sdk.py holds them equal).
OPERATIONS: dict[str, Callable[..., Any]] = {
    "health.health": AppClient.health,
    "identity.me": AppClient.me,
    "identity.whoami": ServiceClient.whoami,
    "invitations.createInvitation": AppClient.invite,
    "invitations.getInvitation": AppClient.invitation,
    "invitations.cancelInvitation": AppClient.cancel_invitation,
    "confirms.batchStatus": AppClient.confirm_statuses,
    "confirms.listWithPeer": AppClient.confirms_with,
    "confirms.accept": AppClient.accept,
    "confirms.reject": AppClient.reject,
    "confirms.confirmDeliveries": ServiceClient.confirm_deliveries,
    "owners.register": ServiceClient.register_business_type,
    "owners.rotateSecret": ServiceClient.rotate_secret,
    "owners.listRegistrations": ServiceClient.registrations,
    "owners.createConfirm": ServiceClient.ask_confirm,
    "owners.cancelConfirm": ServiceClient.cancel_confirm,
    "inbox.listNotifications": AppClient.notifications,
    "inbox.unreadCount": AppClient.unread_count,
    "inbox.readAll": AppClient.read_all,
    "inbox.read": AppClient.read,
    "inbox.delete": AppClient.delete,
    "inbox.getPreferences": AppClient.preferences,
    "inbox.putPreferences": AppClient.set_preferences,
    "inbox.record": ServiceClient.notify,
    "inbox.resolve": ServiceClient.resolve,
    "events.postExternalEvent": ServiceClient.post_event,
    "events.getExternalEvent": ServiceClient.get_event,
    "events.listExternalEvents": ServiceClient.list_events,
    "webhooks.putStatusWebhook": ServiceClient.set_event_webhook,
    "webhooks.deleteStatusWebhook": ServiceClient.delete_event_webhook,
    "webhooks.rotateStatusWebhookSecret": ServiceClient.rotate_event_webhook_secret,
    "turns.postMessage": AppClient.send,
    "turns.cancelMessage": AppClient.cancel,
    "turns.listEvents": AppClient.session_events,
    "turns.putSession": ServiceClient.put_session,
    "turns.turnStep": ServiceClient.turn,
    "turns.takePending": ServiceClient.take_pending,
    "approvals.request": ServiceClient.request_approval,
    "approvals.cancel": ServiceClient.cancel_approval,
}
