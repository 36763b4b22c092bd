"""The Cards panel: every card the fake Feishu received, with its history and the revision Herald recorded."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import APIRouter
from herald_ops.stack import Stack

from herald_dev.console.cloud import Shown


def card_routes(shown: Shown, http: httpx.Client) -> APIRouter:
    router = APIRouter()

    @router.get("/console/feishu")
    def feishu() -> list[dict[str, Any]]:
        cards: dict[str, dict[str, Any]] = {}
        for entry in http.get(f"{shown.fake('feishu')}/__fake/messages").json():
            card = cards.setdefault(
                entry["message_id"],
                {"message_id": entry["message_id"], "chat": entry["receive_id"], "history": []},
            )
            status, summary = _status_line(entry["card"]), _summary_text(entry["card"])
            card["title"], card["card"], card["status"] = entry["title"], entry["card"], status
            shown_now = {"title": entry["title"], "status": status, "summary": summary}
            card["history"].append({"op": entry["op"], "at_ms": entry["at_ms"], **shown_now})
        revisions = _card_revisions(shown.stack)
        for card in cards.values():
            card["revision"] = revisions.get(card["message_id"])
        return sorted(cards.values(), key=lambda c: c["history"][-1]["at_ms"], reverse=True)

    return router


def _status_line(card: dict[str, Any]) -> str:
    """A Herald card's status line (its `note`: the event's status and type), as a person sees it on the card."""
    notes = [element for element in card.get("elements", []) if element.get("tag") == "note"]
    return " ".join(str(part.get("content", "")) for note in notes for part in note.get("elements", []))


def _summary_text(card: dict[str, Any]) -> str:
    return " ".join(str(e["text"].get("content", "")) for e in card.get("elements", []) if "text" in e).strip()


def _card_revisions(stack: Stack) -> dict[str, int]:
    """Feishu message id -> the revision Herald's card mapping holds (what the card shows now)."""
    table = stack.settings.events_table
    dynamodb = stack.client("dynamodb")
    found: dict[str, int] = {}
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="item_type = :card",
        ExpressionAttributeValues={":card": {"S": "card"}},
    ):
        for item in page["Items"]:
            found[item["message_id"]["S"]] = int(item["revision"]["N"])
    return found
