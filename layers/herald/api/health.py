"""`GET|HEAD /api/v1/health`: unauthenticated liveness; says nothing about tenants or data."""

from fastapi import APIRouter, Request
from pydantic import BaseModel

from herald.container import current
from herald.web.envelope import Envelope, ok

router = APIRouter()


class Health(BaseModel):
    status: str
    stage: str


@router.api_route("/api/v1/health", methods=["GET", "HEAD"], response_model=Envelope[Health])
def health(request: Request) -> Envelope[Health]:
    return ok(request, Health(status="ok", stage=current().settings.stage))
