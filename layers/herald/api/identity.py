"""Who-am-I routes: let a client or a service check its credential without side effects."""

from fastapi import APIRouter, Request

from herald.web.envelope import APP, APP_AUDIENCE, ENGINE, OPERATOR, PARTNER, SERVICE, ApiModel, Envelope, errors, ok
from herald.web.security import CurrentKeyHolder, CurrentPrincipal

router = APIRouter()


class Me(ApiModel):
    user_id: str
    app_code: str
    roles: list[str]


class ServiceIdentity(ApiModel):
    service_id: str
    key_id: str
    capabilities: list[str]
    app_codes: list[str]


@router.get("/api/v1/me", responses=errors(*APP), response_model=Envelope[Me], tags=[APP_AUDIENCE])
def me(request: Request, principal: CurrentPrincipal) -> Envelope[Me]:
    return ok(request, Me(user_id=principal.user_id, app_code=principal.app_code, roles=sorted(principal.roles)))


@router.get(
    "/internal/v1/whoami",
    responses=errors(*SERVICE),
    response_model=Envelope[ServiceIdentity],
    tags=[PARTNER, ENGINE, OPERATOR],
)
def whoami(request: Request, caller: CurrentKeyHolder) -> Envelope[ServiceIdentity]:
    """Any live key may ask what it is (its capabilities, tenants), whatever routes it opens."""
    identity = ServiceIdentity(
        service_id=caller.service_id,
        key_id=caller.key_id,
        capabilities=sorted(caller.capabilities),
        app_codes=sorted(caller.app_codes),
    )
    return ok(request, identity)
