"""Tencent IM: UserSig by the TLS v2 algorithm, the sendmsg request shape, and error classification."""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterator

import pytest
import TLSSigAPIv2

from herald.confirms.models import CustomMessage
from herald.providers.tencent_im import (
    TencentImClient,
    TencentImError,
    _url_b64decode,
    user_sig,
    verify_user_sig,
)
from herald_dev.fakes.tencent_im import FakeTencentIm


def _decode(sig: str) -> dict[str, object]:
    return json.loads(zlib.decompress(_url_b64decode(sig)))  # type: ignore[no-any-return]


def test_user_sig_matches_the_reference_implementation() -> None:
    reference = TLSSigAPIv2.TLSSigAPIv2(1400000001, "secret-key").gen_sig("administrator", 86400)
    ours = user_sig(
        1400000001, "secret-key", "administrator", 86400, issued_at=int(str(_decode(reference)["TLS.time"]))
    )
    assert _decode(ours) == _decode(reference)


def test_reference_signatures_verify_and_tampered_ones_do_not() -> None:
    reference = TLSSigAPIv2.TLSSigAPIv2(1400000001, "secret-key").gen_sig("administrator", 86400)
    assert verify_user_sig(reference, 1400000001, "secret-key", "administrator") is None
    assert verify_user_sig(reference, 1400000001, "other-key", "administrator") == "usersig signature mismatch"
    assert verify_user_sig(reference, 1400000001, "secret-key", "someone") is not None
    old = user_sig(1400000001, "secret-key", "administrator", 60, issued_at=int(time.time()) - 120)
    assert verify_user_sig(old, 1400000001, "secret-key", "administrator") == "usersig expired"


@pytest.fixture
def fake() -> Iterator[FakeTencentIm]:
    server = FakeTencentIm().start()
    yield server
    server.stop()


def _client(fake: FakeTencentIm, key: str | None = None) -> TencentImClient:
    return TencentImClient(fake.url, fake.sdk_app_id, fake.admin, lambda: key or fake.secret_key)


MESSAGE = CustomMessage("10001", "10002", 42, {"type": "im_confirm"}, "im_confirm", "im_confirm")


def test_send_passes_the_fakes_checks_and_is_recorded(fake: FakeTencentIm) -> None:
    result = _client(fake).send(MESSAGE)
    (recorded,) = fake.messages
    assert recorded["msg_key"] == result.msg_key
    assert (recorded["from"], recorded["to"], recorded["msg_random"], recorded["data"]) == (
        "10001",
        "10002",
        42,
        {"type": "im_confirm"},
    )


@pytest.mark.parametrize(
    ("fault", "retryable", "throttled"),
    [
        ({"status": 500}, True, ""),
        ({"status": 503}, True, ""),
        ({"status": 429}, True, "app"),
        ({"status": 403}, False, ""),
        ({"error_code": 20005}, True, ""),
        ({"error_code": 90992}, True, ""),
        ({"error_code": 20003}, False, ""),
        ({"error_code": 20007}, False, ""),
        ({"error_code": 80001}, False, ""),
        ({"error_code": 60007}, True, "app"),  # REST API call frequency over the limit
        ({"error_code": 60011}, True, "app"),  # SDKAppID request frequency over the limit
        ({"error_code": 60018}, True, "app"),
        ({"error_code": 60019}, True, "app"),
    ],
)
def test_failures_are_classified_retryable_or_permanent_and_a_rate_limit_answer_told_apart(
    fake: FakeTencentIm, fault: dict[str, int], retryable: bool, throttled: str
) -> None:
    fake.queue_faults(fault)
    with pytest.raises(TencentImError) as error:
        _client(fake).send(MESSAGE)
    assert (error.value.retryable, error.value.throttled) == (retryable, throttled)
    assert fake.messages == []


def test_a_wrong_secret_is_a_permanent_signature_error(fake: FakeTencentIm) -> None:
    with pytest.raises(TencentImError) as error:
        _client(fake, key="wrong").send(MESSAGE)
    assert (error.value.error_code, error.value.retryable) == (70003, False)


def test_an_unreachable_server_is_retryable() -> None:
    client = TencentImClient("http://127.0.0.1:9", 1, "admin", lambda: "k", timeout_s=0.5)
    with pytest.raises(TencentImError) as error:
        client.send(MESSAGE)
    assert error.value.retryable


def test_the_admin_user_sig_is_reused_across_sends_and_made_again_when_the_key_is_rotated(fake: FakeTencentIm) -> None:
    keys = [fake.secret_key]
    client = TencentImClient(fake.url, fake.sdk_app_id, fake.admin, lambda: keys[-1])
    for _ in range(3):
        client.send(MESSAGE)
    assert len({message["usersig"] for message in fake.messages}) == 1
    fake.add_app(fake.sdk_app_id, fake.admin, "rotated-key")  # the app's key rotated, and so did the secret's value
    keys.append("rotated-key")
    client.send(MESSAGE)  # signed with the new key at once, not refused until the old signature expires
    assert len(fake.messages) == 4 and fake.messages[-1]["usersig"] != fake.messages[0]["usersig"]


def test_a_sent_message_is_found_in_the_pairs_history_by_its_msg_random(fake: FakeTencentIm) -> None:
    import time

    client = _client(fake)
    result = client.send(MESSAGE)
    now = int(time.time())
    assert client.find_sent("10001", "10002", 42, now - 5, now + 5) == result
    assert client.find_sent("10001", "10002", 43, now - 5, now + 5) is None  # another message
    assert client.find_sent("10001", "10003", 42, now - 5, now + 5) is None  # another conversation
    assert client.find_sent("10001", "10002", 42, now + 10, now + 20) is None  # outside the window
