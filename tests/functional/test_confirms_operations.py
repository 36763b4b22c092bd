"""`herald-ops confirms stuck | repair`: what the janitor could not settle and pushes that failed for good
are listed, and a repair settles from the owner's fact and sends a failed push once more."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from herald.auth.models import Principal
from herald.confirms.models import Action
from herald.confirms.role_invitation import RoleInvitationBusiness
from herald.confirms.wiring import confirm_operations as operations
from herald.confirms.wiring import confirms
from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.functional.test_confirms_flow import TARGET, created, invitation_item, invite, stored_confirms
from tests.functional.test_confirms_repair import LEASE_MS, SimulatedCrash, api, clock, crash_before_owner
from tests.support.clock import FakeClock
from tests.support.pipeline import ConfirmPipeline

__all__ = ["api", "clock"]  # the lease-shortened app of test_confirms_repair, and its clock


def test_confirm_left_processing_past_its_lease_is_listed_and_repaired_from_the_owner(
    api: TestClient,
    clock: FakeClock,
    pipeline: ConfirmPipeline,
    fake_im: FakeTencentIm,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    invitation, confirm_id = created(api, pipeline, fake_im)
    with monkeypatch.context() as patch:
        patch.setattr(RoleInvitationBusiness, "act", crash_before_owner(RoleInvitationBusiness.act))
        with pytest.raises(SimulatedCrash):
            confirms().act(Principal(TARGET, "lalu"), confirm_id, Action.ACCEPT, "first-click")
    assert operations().stuck(grace_ms=0) == []  # its lease still holds
    clock.advance(LEASE_MS + 1)
    (stuck,) = operations().stuck(grace_ms=0)
    assert (stuck.confirm_id, str(stuck.status)) == (confirm_id, "processing")
    repaired = operations().repair("lalu", confirm_id)
    assert str(repaired.confirm.status) == "accepted" and repaired.resent == ()
    assert invitation_item(invitation["invitation_id"])["status"]["S"] == "accepted"
    assert operations().stuck(grace_ms=0) == []


def test_push_that_failed_for_good_is_listed_and_sent_once_more_after_the_fix(
    api: TestClient, pipeline: ConfirmPipeline, fake_im: FakeTencentIm
) -> None:
    fake_im.queue_faults({"error_code": 20003, "info": "invalid To_Account"})  # Tencent does not know the account
    invite(api)
    pipeline.drain()
    assert fake_im.messages == []
    (failed,) = operations().failed_deliveries()
    assert failed.key == "im_confirm" and "20003" in failed.last_error
    confirm_id = stored_confirms()[0]["confirm_id"]["S"]
    repaired = operations().repair("lalu", confirm_id)  # the account was imported meanwhile
    assert repaired.resent == ("im_confirm",)
    pipeline.drain()
    assert [m["data"]["type"] for m in fake_im.messages] == ["im_confirm"]
    assert operations().failed_deliveries() == []
    assert operations().repair("lalu", confirm_id).resent == ()  # nothing failed any more: nothing sent
