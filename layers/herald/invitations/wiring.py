"""Builds the invitations service from settings, once per process."""

from functools import lru_cache

from herald.invitations.dynamo import DynamoInvitationStore
from herald.invitations.service import Invitations
from herald.settings import get_settings


@lru_cache(maxsize=1)
def invitations() -> Invitations:
    settings = get_settings()
    return Invitations(DynamoInvitationStore(settings.invitations_table), ttl_ms=settings.confirm_ttl_seconds * 1000)
