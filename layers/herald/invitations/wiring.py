"""Builds the invitations service from settings, once per process."""

from functools import lru_cache

from herald.invitations.dynamo import DynamoInvitationStore
from herald.invitations.service import Invitations, PendingCaps
from herald.settings import get_settings


@lru_cache(maxsize=1)
def invitations() -> Invitations:
    settings = get_settings()
    caps = PendingCaps(settings.invitations_pending_per_inviter, settings.invitations_pending_per_target)
    return Invitations(
        DynamoInvitationStore(settings.invitations_table), ttl_ms=settings.confirm_ttl_seconds * 1000, caps=caps
    )
