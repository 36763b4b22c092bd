"""FastAPI dependencies that say who is calling. A client header never names the user: the principal
comes from API Gateway's verified authorizer claims or from a JWT this process verifies itself."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import Depends, Request

from herald.auth.models import OWNER_CAPABILITY, Principal, ServiceCaller
from herald.auth.tokens import principal_from_claims
from herald.auth.wiring import jwt_verifier, service_keys
from herald.container import current
from herald.errors import PermissionDenied, Unauthorized
from herald.limits.wiring import key_limit, rate_limiter, user_limit
from herald.tenants.wiring import tenants

# How a service route documents its `app_code`.
TENANT = "the tenant; optional when the key acts for exactly one (a key acts only for its own tenants: 403)"


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, credential = header.partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise Unauthorized("missing bearer credential")
    return credential.strip()


def _authorizer_claims(request: Request) -> dict[str, Any] | None:
    """Claims API Gateway's JWT authorizer put in the Lambda event (only Mangum sets `aws.event`)."""
    event = request.scope.get("aws.event")
    if not isinstance(event, dict):
        return None
    claims = event.get("requestContext", {}).get("authorizer", {}).get("jwt", {}).get("claims")
    return claims if isinstance(claims, dict) else None


def current_principal(request: Request) -> Principal:
    """The app user, counted against its own rate limit."""
    claims = _authorizer_claims(request)
    if claims is not None:
        principal = principal_from_claims(claims, current().settings)
    else:
        principal = jwt_verifier().verify(_bearer(request))
    tenants().admit(principal.app_code)
    rate_limiter().check(user_limit(), f"{principal.app_code}#{principal.user_id}")
    return principal


def current_service(request: Request) -> ServiceCaller:
    """The service, counted against its key's rate limit."""
    caller = _admitted(service_keys().authenticate(_bearer(request), request.url.path))
    rate_limiter().check(key_limit(), caller.key_id)
    return caller


def current_key_holder(request: Request) -> ServiceCaller:
    """Any live service key, whatever its capabilities (who-am-I: a key may always learn what it is)."""
    caller = _admitted(service_keys().authenticate(_bearer(request), None))
    rate_limiter().check(key_limit(), caller.key_id)
    return caller


def current_owner(request: Request) -> ServiceCaller:
    """An owner service: a key holding the owner capability by name (a broader prefix does not grant it)."""
    caller = service_keys().authenticate(_bearer(request), OWNER_CAPABILITY)
    if OWNER_CAPABILITY not in caller.capabilities:
        raise PermissionDenied(f"owner routes need a key created with the capability {OWNER_CAPABILITY}")
    caller = _admitted(caller)
    rate_limiter().check(key_limit(), caller.key_id)
    return caller


def _admitted(caller: ServiceCaller) -> ServiceCaller:
    """The caller with the tenants the stack refuses set apart (a request for one of them is 403); a key
    whose every tenant is refused is refused here, before anything else is read or written."""
    refused: dict[str, PermissionDenied] = {}
    for app_code in caller.app_codes:
        try:
            tenants().admit(app_code)
        except PermissionDenied as refusal:
            refused[app_code] = refusal
    if refused and len(refused) == len(caller.app_codes):
        raise refused[min(refused)]
    return replace(caller, refused_tenants=refused) if refused else caller


def current_reader_or_owner(request: Request) -> ServiceCaller:
    """A key with the route's capability, or an owner service's key (which the route limits to its own)."""
    try:
        return current_service(request)
    except PermissionDenied:
        return current_owner(request)


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]
CurrentService = Annotated[ServiceCaller, Depends(current_service)]
CurrentKeyHolder = Annotated[ServiceCaller, Depends(current_key_holder)]
CurrentOwner = Annotated[ServiceCaller, Depends(current_owner)]
CurrentReaderOrOwner = Annotated[ServiceCaller, Depends(current_reader_or_owner)]
