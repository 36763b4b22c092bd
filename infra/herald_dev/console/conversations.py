"""The panels that show what people see: an IM conversation as the fake Tencent IM received it, and a session's
members and agents with each agent's turn state (the operator's view of the store)."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import APIRouter, HTTPException

from herald_dev.console.cloud import Shown


def conversation_routes(shown: Shown, http: httpx.Client) -> APIRouter:
    router = APIRouter()

    @router.get("/console/sessions/{session_id}")
    def session(session_id: str, app_code: str | None = None) -> dict[str, Any]:
        from herald.turns.wiring import turn_store

        tenant = app_code or shown.default_app_code
        store = turn_store(shown.stack.container)
        found = store.session(tenant, session_id)
        if found is None:
            raise HTTPException(404, "no such session")
        agents = [store.agent(tenant, session_id, agent) for agent in found.agents]
        return {
            "members": dict(found.members),
            "status": str(found.status),
            "owner_service": found.owner_service,
            "agents": [
                {
                    "agent": a.agent,
                    "state": str(a.state),
                    "turn_id": a.turn.turn_id if a.turn else None,
                    "waiting": len(a.queue),
                }
                for a in agents
            ],
        }

    @router.get("/console/im")
    def im(a: str, b: str) -> list[dict[str, Any]]:
        messages = http.get(f"{shown.fake('tencent_im')}/__fake/messages").json()
        return [m for m in messages if {m["from"], m["to"]} == {a, b}]

    return router
