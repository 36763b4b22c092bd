"""Pure rules of confirms: the state machine, which pushes a change causes, the IM payload, page tokens."""

from __future__ import annotations

import pytest

from herald.confirms.delivery import IM_CONFIRM, IM_CONFIRM_UPDATE, Push, message_for, pushes_for
from herald.confirms.models import ALLOWED, Confirm, ConfirmStatus, view
from herald.errors import InvalidArgument
from herald.pagination import decode_token, encode_token
from herald.providers.tencent_im import send_body


def _confirm(status: ConfirmStatus = ConfirmStatus.PENDING, **changes: object) -> Confirm:
    base = Confirm(
        app_code="lalu",
        confirm_id="cfm_" + "a" * 32,
        business_type="role_invitation",
        business_subtype="host",
        business_id="inv_" + "b" * 32,
        sender_user_id="10001",
        receiver_user_id="10002",
        status=status,
        message_text="hello",
        source_name="role_invitations",
        source_event_id="inv_" + "b" * 32,
        created_at_ms=1,
        updated_at_ms=1,
        expire_at_ms=2,
        version=1,
    )
    return base.evolve(**changes)


def test_terminal_states_allow_nothing() -> None:
    for status in ConfirmStatus:
        if status.terminal:
            assert ALLOWED[status] == frozenset()
    assert ConfirmStatus.FAILED in ALLOWED[ConfirmStatus.PROCESSING]
    assert ConfirmStatus.FAILED not in ALLOWED[ConfirmStatus.PENDING]


def test_a_new_confirm_pushes_im_confirm_and_a_terminal_change_pushes_one_update() -> None:
    pending = _confirm()
    processing = _confirm(ConfirmStatus.PROCESSING)
    accepted = _confirm(ConfirmStatus.ACCEPTED)
    assert pushes_for(None, pending) == [Push("lalu", pending.confirm_id, IM_CONFIRM, "pending")]
    assert pushes_for(pending, processing) == []
    assert pushes_for(processing, accepted) == [Push("lalu", pending.confirm_id, IM_CONFIRM_UPDATE, "accepted")]
    assert pushes_for(accepted, accepted.evolve(version=3)) == []


def test_each_push_has_its_own_delivery_key() -> None:
    assert Push("lalu", "c", IM_CONFIRM, "pending").delivery_key == "im_confirm"
    assert Push("lalu", "c", IM_CONFIRM_UPDATE, "accepted").dedup_id == "c:im_confirm_update:accepted"


def test_the_update_message_greys_buttons_without_counting_as_unread() -> None:
    confirm = _confirm(ConfirmStatus.ACCEPTED, processed_action="accept", processed_at_ms=5)
    body = send_body(message_for(confirm, Push("lalu", confirm.confirm_id, IM_CONFIRM_UPDATE, "accepted"), 7))
    assert body["SyncOtherMachine"] == 1 and body["SendMsgControl"] == ["NoUnread", "NoLastMsg"]
    assert body["From_Account"] == "10001" and body["To_Account"] == "10002" and body["MsgRandom"] == 7
    content = body["MsgBody"][0]["MsgContent"]
    assert (content["Desc"], content["Ext"]) == ("im_confirm", "im_confirm")


def test_view_has_exactly_the_contract_fields() -> None:
    assert set(view(_confirm())) == {
        "confirm_id",
        "business_type",
        "business_subtype",
        "business_id",
        "sender_user_id",
        "receiver_user_id",
        "status",
        "processed_action",
        "processed_at_ms",
        "created_at_ms",
        "expire_at_ms",
    }


def test_page_tokens_round_trip_and_refuse_another_scope() -> None:
    token = encode_token({"pair_key": "lalu#1#2", "pair_sort": "x"})
    assert decode_token(token, {"pair_key": "lalu#1#2"}) == {"pair_key": "lalu#1#2", "pair_sort": "x"}
    with pytest.raises(InvalidArgument):
        decode_token(token, {"pair_key": "lalu#1#3"})
    for bad in ("%%%", "bm90IGpzb24", "a" * 2000):
        with pytest.raises(InvalidArgument):
            decode_token(bad, {"pair_key": "lalu#1#2"})
    assert decode_token("", {"pair_key": "x"}) is None and encode_token(None) == ""
