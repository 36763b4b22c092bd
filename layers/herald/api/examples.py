"""One example per operation for the OpenAPI document (request body where it has one, and its answer's
`data`), kept in one place; tests/unit/test_openapi_export.py validates each against its schema."""

from __future__ import annotations

from typing import Any

T0 = 1_796_330_454_117
CONFIRM = {
    "confirm_id": "cfm_ea0a7f2026024783a358e9b21016dbb5",
    "business_type": "role_invitation",
    "business_subtype": "host",
    "business_id": "inv_3f1c2a9d0b7e4c5a8d6f1e2b3c4d5e6f",
    "sender_user_id": "10001",
    "receiver_user_id": "10002",
    "status": "accepted",
    "processed_action": "accept",
    "processed_at_ms": T0 + 9_000,
    "created_at_ms": T0,
    "expire_at_ms": T0 + 7 * 86_400_000,
}
INVITATION = {
    "invitation_id": "inv_3f1c2a9d0b7e4c5a8d6f1e2b3c4d5e6f",
    "invitation_type": "host",
    "status": "pending",
    "inviter_user_id": "10001",
    "target_user_id": "10002",
    "agency_name": "",
    "created_at_ms": T0,
    "expire_at_ms": T0 + 7 * 86_400_000,
}
NOTIFICATION = {
    "notification_id": "ntf_7c2e4a1b9d8f4e3a2b1c0d9e8f7a6b5c",
    "kind": "QUESTION_PENDING",
    "title": "The agent asks: deploy to staging?",
    "content": "",
    "session_id": "s-42",
    "payload": {"request_id": "q-9"},
    "is_read": False,
    "read_at_ms": 0,
    "created_at_ms": T0,
}
PREFERENCES = {
    "task_completed": True,
    "question_pending": True,
    "approval_pending": True,
    "subagent_done": False,
    "system_notify": True,
}
REGISTRATION = {
    "app_code": "lalu",
    "business_type": "group_join",
    "service_id": "groups",
    "callback_url": "https://groups.example.com/herald/callback",
    "fact_url": "https://groups.example.com/herald/fact",
    "subtypes": ["join"],
    "actions": [
        {"action": "reject", "label": "Decline", "style": "secondary"},
        {"action": "accept", "label": "Let them in", "style": "primary"},
    ],
    "default_expiry_seconds": 86_400,
    "allow_links": False,
    "enabled": True,
    "created_at_ms": T0,
    "updated_at_ms": T0,
}
OWNER_CONFIRM = {
    **CONFIRM,
    "business_type": "group_join",
    "business_subtype": "join",
    "business_id": "jr-8f2a",
    "status": "pending",
    "processed_action": "",
    "processed_at_ms": 0,
}
EVENT_FATE = {
    "event_id": "evt-2",
    "event_type": "job.progress",
    "status": "succeeded",
    "blocked": False,
    "card": {"event_id": "job-42", "revision": 2},
    "target": {"receive_id_type": "chat_id", "receive_id": "oc_demo"},
    "message_id": "om_dc13264520392913993dd051dba21dcf",
    "superseded_by": None,
    "continued_from": None,
    "attempts": [{"at_ms": T0 + 40, "operation": "update", "outcome": "done", "code": 0}],
    "accepted_at_ms": T0,
    "completed_at_ms": T0 + 45,
}
STATUS_WEBHOOK = {
    "url": "https://ci.example.com/herald/events",
    "statuses": ["failed", "succeeded", "unknown"],
    "created_at_ms": T0,
    "updated_at_ms": T0,
    "previous_secret_until_ms": None,
}
NOTIFY = {"user_id": "10002", "kind": "QUESTION_PENDING", "session_id": "s-42", "tail": "q-9"}

# operation id -> (request body or None, the answer's data)
EXAMPLES: dict[str, tuple[Any, Any]] = {
    "health.health": (None, {"status": "ok", "stage": "prod"}),
    "identity.me": (None, {"user_id": "10002", "app_code": "lalu", "roles": []}),
    "identity.whoami": (
        None,
        {
            "service_id": "scheduler",
            "key_id": "3f9a1c2b7d4e5f60",
            "capabilities": ["/events/external"],
            "app_codes": ["lalu"],
        },
    ),
    "invitations.createInvitation": ({"invitation_type": "host", "target_user_id": "10002"}, INVITATION),
    "invitations.getInvitation": (None, INVITATION),
    "invitations.cancelInvitation": (None, {**INVITATION, "status": "cancelled"}),
    "confirms.batchStatus": ({"confirm_ids": [CONFIRM["confirm_id"]]}, {"items": [CONFIRM]}),
    "confirms.listWithPeer": (None, {"items": [CONFIRM], "next_page_token": ""}),
    "confirms.accept": ({"command_id": "tap-1"}, CONFIRM),
    "confirms.reject": (
        {"command_id": "tap-1", "reason": "not now"},
        {**CONFIRM, "status": "rejected", "processed_action": "reject"},
    ),
    "confirms.confirmDeliveries": (
        None,
        {
            "confirm": CONFIRM,
            "deliveries": [
                {
                    "push": "im_confirm",
                    "status": "sent",
                    "attempts": 1,
                    "sent_at_ms": T0 + 300,
                    "last_error": "",
                    "last_error_at_ms": 0,
                    "msg_random": 1_860_396_420,
                }
            ],
        },
    ),
    "owners.register": (
        {
            "callback_url": REGISTRATION["callback_url"],
            "fact_url": REGISTRATION["fact_url"],
            "subtypes": ["join"],
            "actions": REGISTRATION["actions"],
            "default_expiry_seconds": 86_400,
        },
        {"registration": REGISTRATION, "signing_secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    ),
    "owners.rotateSecret": (
        {},
        {"registration": REGISTRATION, "signing_secret": "whsec_hvERiU9gkQ1Z5E5V5yNNxMTaWRn+bTOI"},
    ),
    "owners.listRegistrations": (None, {"items": [REGISTRATION]}),
    "owners.createConfirm": (
        {
            "business_type": "group_join",
            "business_subtype": "join",
            "business_id": "jr-8f2a",
            "source_event_id": "jr-8f2a",
            "sender_user_id": "10001",
            "receiver_user_id": "10002",
            "message_text": "User 10001 asks to join night-owls",
            "payload": {"group": "night-owls"},
        },
        OWNER_CONFIRM,
    ),
    "owners.cancelConfirm": (
        {"business_type": "group_join", "business_id": "jr-8f2a"},
        {**OWNER_CONFIRM, "status": "cancelled"},
    ),
    "inbox.listNotifications": (None, {"items": [NOTIFICATION], "next_page_token": "", "unread_count": 1}),
    "inbox.unreadCount": (None, {"unread_count": 3}),
    "inbox.readAll": (None, {"unread_count": 0}),
    "inbox.read": (None, {"unread_count": 2}),
    "inbox.delete": (None, {"unread_count": 2}),
    "inbox.getPreferences": (None, PREFERENCES),
    "inbox.putPreferences": ({"subagent_done": True}, {**PREFERENCES, "subagent_done": True}),
    "inbox.record": (
        {**NOTIFY, "title": "The agent asks: deploy to staging?", "payload": {"request_id": "q-9"}},
        {"notification_id": NOTIFICATION["notification_id"], "created": True, "skipped": None},
    ),
    "inbox.resolve": (NOTIFY, {"resolved": True}),
    "events.postExternalEvent": (
        {
            "event_id": "evt-2",
            "event_type": "job.progress",
            "data": {
                "event_id": "job-42",
                "revision": 2,
                "title": "Job 42",
                "status": "running",
                "summary": "step 2 of 3",
                "target": {"receive_id": "oc_demo", "receive_id_type": "chat_id"},
            },
        },
        {"event_id": "evt-2", "duplicate": False, "status": "accepted"},
    ),
    "events.getExternalEvent": (None, EVENT_FATE),
    "webhooks.putStatusWebhook": (
        {"url": "https://ci.example.com/herald/events", "statuses": ["failed", "unknown", "succeeded"]},
        {**STATUS_WEBHOOK, "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
    ),
    "webhooks.deleteStatusWebhook": (None, {"deleted": True}),
    "webhooks.rotateStatusWebhookSecret": (
        None,
        {**STATUS_WEBHOOK, "previous_secret_until_ms": T0 + 86_400_000, "secret": "whsec_3sFZt0yC1yBGzlNl8W6nJ1g"},
    ),
    "events.listExternalEvents": (None, {"items": [EVENT_FATE], "next_page_token": ""}),
    "turns.postMessage": (
        {"text": "and the tests?", "lang": "en"},
        {"message_id": "msg_6ea21a58bd55e7272b38cec21ad7c02e", "delivery": "queued", "position": 1},
    ),
    "turns.cancelMessage": (None, {"message_id": "msg_6ea21a58bd55e7272b38cec21ad7c02e", "status": "cancelled"}),
    "turns.listEvents": (
        None,
        {
            "events": [
                {
                    "seq": 1,
                    "type": "chat.message",
                    "at_ms": T0,
                    "actor": "10002",
                    "data": {"agent": "po", "message_id": "msg_6ea21a58bd55e7272b38cec21ad7c02e", "text": "hi"},
                }
            ],
            "next_after_seq": 1,
        },
    ),
    "turns.putSession": (
        {"members": {"10002": "developer"}, "agents": ["po"], "status": "active"},
        {
            "session_id": "s-42",
            "app_code": "lalu",
            "members": {"10002": "developer"},
            "agents": ["po"],
            "status": "active",
        },
    ),
    "turns.takePending": (
        None,
        {
            "turn_id": "turn_3f1c",
            "message_ids": ["msg_51ab", "msg_9c07"],
            "text": "2 messages arrived while you were working; read them together, in order:\n1. and the logs\n"
            "2. from yesterday",
            "lang": "en",
        },
    ),
    "approvals.request": (
        {
            "app_code": "lalu",
            "approval_id": "deploy-prod-1",
            "user_id": "10001",
            "text": "Deploy build 512 to production?",
            "actions": [
                {"action": "reject", "label": "Not now", "style": "secondary"},
                {"action": "accept", "label": "Deploy", "style": "danger"},
            ],
            "expire_in_s": 3600,
        },
        {
            "approval_id": "deploy-prod-1",
            "confirm_id": "cfm_8d0c2b6a4f1e4a7e9b3c5d7f9a1b3c5d",
            "turn_id": "turn_3f1c",
            "user_id": "10001",
            "status": "pending",
            "expire_at_ms": 1767229200000,
        },
    ),
    "approvals.cancel": (
        None,
        {
            "approval_id": "deploy-prod-1",
            "confirm_id": "cfm_8d0c2b6a4f1e4a7e9b3c5d7f9a1b3c5d",
            "turn_id": "turn_3f1c",
            "user_id": "10001",
            "status": "cancelled",
            "expire_at_ms": 1767229200000,
            "decided_by": "engine",
            "decided_at_ms": 1767226020000,
        },
    ),
    "turns.turnStep": (
        None,
        {"session_id": "s-42", "agent": "po", "state": "idle", "turn_id": None, "pending": 0},
    ),
}


def add_examples(schema: dict[str, Any]) -> None:
    """Each operation's example request body and answer (the envelope around its `data`)."""
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            request, data = EXAMPLES[operation["operationId"]]
            if request is not None and "requestBody" in operation:
                operation["requestBody"]["content"]["application/json"]["example"] = request
            for status in ("200", "202"):
                answer = operation["responses"].get(status, {}).get("content", {}).get("application/json")
                if answer is not None:
                    answer["example"] = {"code": "OK", "message": "", "data": data, "request_id": "5f0c2d6e9a7b4c1d"}
