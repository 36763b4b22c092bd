"""The invitations table's stream is the owner's outbox: each change of an invitation is projected into its
confirm (herald.confirms.role_invitation)."""

from __future__ import annotations

from herald.confirms.role_invitation import project_invitation_change
from herald.confirms.wiring import confirms
from herald.dynamo import Image
from herald.invitations.dynamo import invitation_from_image


def on_invitation_change(old: Image | None, new: Image | None) -> None:
    """The invitations table's stream is the owner's outbox (claims and grants are not invitations)."""
    invitation = invitation_from_image(new) if new else None
    if invitation is not None:
        project_invitation_change(confirms(), invitation_from_image(old) if old else None, invitation)
