"""The invitations service's part."""

from herald.container import Container, part
from herald.invitations.dynamo import DynamoInvitationStore
from herald.invitations.service import Invitations, PendingCaps


@part
def invitations(c: Container) -> Invitations:
    settings = c.settings
    caps = PendingCaps(settings.invitations_pending_per_inviter, settings.invitations_pending_per_target)
    store = DynamoInvitationStore(settings.invitations_table, c.clients.dynamodb)
    return Invitations(store, ttl_ms=settings.confirm_ttl_seconds * 1000, caps=caps, clock=c.clock)
