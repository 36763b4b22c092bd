"""The approvals' part: the projection of an approval into its confirm and inbox notification."""

from herald.confirms.approvals.business import ApprovalProjection
from herald.confirms.wiring import confirms
from herald.container import Container, part
from herald.inbox.wiring import inbox


@part
def approval_projection(c: Container) -> ApprovalProjection:
    """An agent's approval as the person sees it: its confirm and inbox notification."""
    return ApprovalProjection(confirms(c), inbox(c))
