"""Agent turn queue routes (contract §4): members talk to agents; the engine sets sessions and turns."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import AfterValidator, ConfigDict, Field, field_validator

from herald.ids import APP_CODE_PATTERN
from herald.turns.models import MAX_EVENT_SEQ, ROLE_RANK, AgentTurns, SessionStatus, turn_language, turn_text
from herald.turns.ports import EngineCaller
from herald.turns.wiring import turn_service
from herald.web.envelope import APP, APP_AUDIENCE, ENGINE, SERVICE, ApiModel, Envelope, errors, ok
from herald.web.security import TENANT, CurrentPrincipal, CurrentService

router = APIRouter(prefix="/api/v1/sessions", tags=[APP_AUDIENCE])
engine_router = APIRouter(prefix="/internal/v1/sessions", tags=[ENGINE])

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$"  # no '#' or '/': ids are parts of keys and message groups
SessionId = Annotated[str, Path(pattern=NAME)]
AGENT = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
AgentName = Annotated[str, Path(pattern=AGENT)]
IDENTIFIER = r"^[A-Za-z0-9_-]{1,64}$"  # a turn's, a message's or an approval's id
Identifier = Annotated[str, Path(pattern=IDENTIFIER)]
MAX_MEMBERS, MAX_AGENTS, MAX_EVENTS = 500, 50, 200
MEMBER_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")  # a user id as tokens carry it (`sub`)


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("text is blank")
    return text


NotBlank = AfterValidator(_not_blank)  # a text of spaces alone says nothing: refused like an empty one


class MessageIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    text: Annotated[str, NotBlank] = Field(min_length=1, max_length=4000)
    lang: str | None = Field(default=None, pattern=r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$")


class PostedOut(ApiModel):
    message_id: str
    delivery: Literal["started", "queued"]
    position: int | None = None


class CancelledOut(ApiModel):
    message_id: str
    status: Literal["cancelled"] = "cancelled"


class EventOut(ApiModel):
    seq: int
    type: str
    at_ms: int
    actor: str
    data: dict[str, Any]


class EventsOut(ApiModel):
    events: list[EventOut]
    next_after_seq: int = Field(description="pass as after_seq to read on (the last seq returned, or the same)")


class SessionIn(ApiModel):
    model_config = ConfigDict(extra="forbid")

    app_code: str | None = Field(default=None, pattern=APP_CODE_PATTERN, description=TENANT)
    members: dict[str, str] = Field(max_length=MAX_MEMBERS, description="user id -> role")
    agents: list[str] = Field(max_length=MAX_AGENTS)
    status: SessionStatus

    @field_validator("members")
    @classmethod
    def known_roles(cls, members: dict[str, str]) -> dict[str, str]:
        for user_id, role in members.items():
            if not MEMBER_ID.fullmatch(user_id):
                raise ValueError(f"bad user id {user_id!r}")
            if role not in ROLE_RANK:
                raise ValueError(f"unknown role {role!r} (one of {', '.join(ROLE_RANK)})")
        return members

    @field_validator("agents")
    @classmethod
    def distinct_names(cls, agents: list[str]) -> list[str]:
        for agent in agents:
            if not re.fullmatch(AGENT, agent):
                raise ValueError(f"bad agent name {agent!r}")
        if len(set(agents)) != len(agents):
            raise ValueError("agents repeat")
        return agents


class SessionOut(ApiModel):
    session_id: str
    app_code: str
    members: dict[str, str]
    agents: list[str]
    status: SessionStatus


class TurnStateOut(ApiModel):
    session_id: str
    agent: str
    state: Literal["idle", "running", "suspended"]
    turn_id: str | None
    pending: int


def _turn_state(turns: AgentTurns) -> TurnStateOut:
    return TurnStateOut(
        session_id=turns.session_id,
        agent=turns.agent,
        state=turns.state.value,
        turn_id=turns.turn_id,
        pending=len(turns.pending),
    )


# ---------------------------------------------------------------- app (members)
@router.post(
    "/{session_id}/agents/{agent}/messages",
    responses=errors(*APP, "INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND", "CONFLICT"),
    status_code=202,
    response_model=Envelope[PostedOut],
    summary="Send a message to an agent: it starts a turn, or waits for the running one to finish",
)
def post_message(
    request: Request, session_id: SessionId, agent: AgentName, body: MessageIn, principal: CurrentPrincipal
) -> JSONResponse:
    posted = turn_service().post(principal, session_id, agent, body.text, body.lang)
    out = PostedOut(message_id=posted.message_id, delivery=posted.arrival.value, position=posted.position)
    return JSONResponse(status_code=202, content=ok(request, out).model_dump(exclude_none=True))


@router.post(
    "/{session_id}/agents/{agent}/messages/{message_id}/cancel",
    responses=errors(*APP, "INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND", "CONFLICT"),
    response_model=Envelope[CancelledOut],
    summary="Cancel one of your own messages while it waits in the queue",
)
def cancel_message(
    request: Request, session_id: SessionId, agent: AgentName, message_id: Identifier, principal: CurrentPrincipal
) -> Envelope[CancelledOut]:
    turn_service().cancel(principal, session_id, agent, message_id)
    return ok(request, CancelledOut(message_id=message_id))


@router.get(
    "/{session_id}/events",
    responses=errors(*APP, "INVALID_ARGUMENT", "PERMISSION_DENIED", "NOT_FOUND"),
    response_model=Envelope[EventsOut],
    summary="The session's event log, oldest first",
)
def list_events(
    request: Request,
    session_id: SessionId,
    principal: CurrentPrincipal,
    after_seq: Annotated[int, Query(ge=0, le=MAX_EVENT_SEQ)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_EVENTS)] = 100,
) -> Envelope[EventsOut]:
    events = turn_service().events(principal, session_id, after_seq, limit)
    out = [EventOut(**event.to_dict()) for event in events]
    return ok(request, EventsOut(events=out, next_after_seq=events[-1].seq if events else after_seq))


# ---------------------------------------------------------------- engine (service key)
@engine_router.put(
    "/{session_id}",
    responses=errors(*SERVICE, "INVALID_ARGUMENT"),
    response_model=Envelope[SessionOut],
    summary="Create or update a session",
)
def put_session(
    request: Request, session_id: SessionId, body: SessionIn, caller: CurrentService
) -> Envelope[SessionOut]:
    engine = EngineCaller(caller.service_id, caller.tenant(body.app_code))
    session = turn_service().put_session(engine, session_id, body.members, body.agents, body.status)
    return ok(
        request,
        SessionOut(
            session_id=session.session_id,
            app_code=session.app_code,
            members=dict(session.members),
            agents=list(session.agents),
            status=session.status,
        ),
    )


class TakenOut(ApiModel):
    turn_id: str
    message_ids: list[str] = Field(description="the messages taken into the running turn now, in order (none: [])")
    text: str | None = Field(description="merged as a turn's text is (numbered when several); null when none")
    lang: str | None


@engine_router.post(
    "/{session_id}/agents/{agent}/turns/{turn_id}/pending",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT"),
    response_model=Envelope[TakenOut],
    summary="Take the messages waiting for the agent into its running turn, at a step boundary",
)
def take_pending(
    request: Request,
    session_id: SessionId,
    agent: AgentName,
    turn_id: Identifier,
    caller: CurrentService,
    app_code: Annotated[str | None, Query(pattern=APP_CODE_PATTERN, description=TENANT)] = None,
) -> Envelope[TakenOut]:
    engine = EngineCaller(caller.service_id, caller.tenant(app_code))
    taken = turn_service().take_waiting(engine, session_id, agent, turn_id)
    text = turn_text([m.text for m in taken]) if taken else None
    out = TakenOut(
        turn_id=turn_id,
        message_ids=[m.message_id for m in taken],
        text=text,
        lang=turn_language([m.lang for m in taken]),
    )
    return ok(request, out)


@engine_router.post(
    "/{session_id}/agents/{agent}/turns/{turn_id}/{step}",
    responses=errors(*SERVICE, "INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT"),
    response_model=Envelope[TurnStateOut],
    summary="The engine reports a turn's end (finish), an approval wait (suspend) or the approval (resume)",
)
def turn_step(
    request: Request,
    session_id: SessionId,
    agent: AgentName,
    turn_id: Identifier,
    step: Literal["finish", "suspend", "resume"],
    caller: CurrentService,
    app_code: Annotated[str | None, Query(pattern=APP_CODE_PATTERN, description=TENANT)] = None,
) -> Envelope[TurnStateOut]:
    service = turn_service()
    moves = {"finish": service.finish, "suspend": service.suspend, "resume": service.resume}
    engine = EngineCaller(caller.service_id, caller.tenant(app_code))
    return ok(request, _turn_state(moves[step](engine, session_id, agent, turn_id)))
