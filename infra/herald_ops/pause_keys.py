"""Which pause an operator names: a partner service's, one target's lane of it, a tenant's events, or a tenant's IM
pushes. herald-ops and the console both build the key here; a name that cannot be a service, a target or a
tenant is refused (ValueError) before anything is written."""

from __future__ import annotations

import re

from herald.ids import APP_CODE_PATTERN


def events_pause_key(service: str | None, target: str | None, tenant: str | None) -> str:
    from herald.holds.models import Pause

    if (service is None) == (tenant is None):
        raise ValueError("give a service (and perhaps a target) or a tenant")
    if tenant is not None:
        if target is not None:
            raise ValueError("a target names a lane of a service: give it with a service, not a tenant")
        return Pause.key_of_events_tenant(valid_app_code(tenant))
    assert service is not None
    lane = lane_key(service, target)
    return Pause.key_of(service) if target is None else Pause.key_of(service, lane)


def lane_key(service: str, target: str | None) -> str:
    """The lane a service (and perhaps one of its targets) names, each name checked as Herald checks it."""
    from herald.auth.service_keys import validate_service_id
    from herald.errors import InvalidArgument
    from herald.events.models import Lane, Target

    try:
        validate_service_id(service)
    except InvalidArgument as error:
        raise ValueError(error.message) from error
    return Lane.parse(Lane(service, Target.parse(target).key).key if target is not None else service).key


def pushes_pause_key(tenant: str) -> str:
    from herald.holds.models import Pause

    return Pause.key_of_tenant(valid_app_code(tenant))


def valid_app_code(app_code: str) -> str:
    if not re.fullmatch(APP_CODE_PATTERN, app_code):
        raise ValueError(f"an app_code is 1-32 of a-z, 0-9, '_' or '-', not {app_code!r}")
    return app_code
