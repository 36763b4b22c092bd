"""`GET|HEAD /api/v1/health`: unauthenticated liveness; says nothing about tenants or data."""

from fastapi import APIRouter, Request

from herald.container import current
from herald.web.envelope import APP_AUDIENCE, ApiModel, Envelope, ok

router = APIRouter(tags=[APP_AUDIENCE])


class Health(ApiModel):
    status: str
    stage: str


@router.get("/api/v1/health", response_model=Envelope[Health])
def health(request: Request) -> Envelope[Health]:
    return ok(request, Health(status="ok", stage=current().settings.stage))


@router.head("/api/v1/health", include_in_schema=False)
def health_head(request: Request) -> Envelope[Health]:
    """The same answer for load balancers that probe with HEAD (one operation in the OpenAPI)."""
    return health(request)
