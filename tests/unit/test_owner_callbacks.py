"""The owner port's pure parts: Standard Webhooks signatures, the callback URL rules, and how an owner's
answer becomes a fact, a refusal or an outage (with an in-memory transport)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from herald.callback_urls import EndpointUnreachable, ForbiddenUrl, check_public, parse
from herald.confirms.businesses import BusinessRefused
from herald.confirms.models import Action, Confirm, ConfirmStatus, OwnerState
from herald.confirms.owners.callbacks import RemoteOwner, command_webhook_id
from herald.confirms.owners.models import OwnerSpec, Registration
from herald.errors import UpstreamError
from herald.webhook_signing import ROTATION_OVERLAP_MS, InvalidSignature, new_secret, sign, verify

NOW_MS = 1_796_000_000_000
# The Standard Webhooks reference library's test secret and message (libraries/python/tests).
SPEC_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SPEC_ID, SPEC_BODY = "msg_p5jXN8AQM9LWM0D4loKWxJek", b'{"test": 2432232314}'


def spec_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The spec's construction, written out: HMAC-SHA256 over `id.timestamp.body` under the decoded secret."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def test_a_signature_is_the_specs_construction() -> None:
    headers = sign((SPEC_SECRET,), SPEC_ID, 1_614_265_330, SPEC_BODY)
    assert headers == {
        "webhook-id": SPEC_ID,
        "webhook-timestamp": "1614265330",
        "webhook-signature": spec_signature(SPEC_SECRET, SPEC_ID, 1_614_265_330, SPEC_BODY),
    }


def test_verify_takes_any_live_secret_and_refuses_tampering_and_stale_timestamps() -> None:
    old, new = new_secret(), new_secret()
    headers = sign((new, old), "msg_1", 1000, b"{}")
    assert verify(old, headers, b"{}", now_s=1000) == "msg_1"
    assert verify(new, headers, b"{}", now_s=1299) == "msg_1"
    with pytest.raises(InvalidSignature):
        verify(new, headers, b'{"x":1}', now_s=1000)
    with pytest.raises(InvalidSignature):
        verify(new, headers, b"{}", now_s=1301)
    with pytest.raises(InvalidSignature):
        verify(new_secret(), headers, b"{}", now_s=1000)
    with pytest.raises(InvalidSignature):
        verify(new, {**headers, "webhook-id": "msg_2"}, b"{}", now_s=1000)


def test_an_action_webhook_id_is_stable_per_command_and_has_no_dot() -> None:
    first = command_webhook_id("cfm_1", "tap.1")
    assert first == command_webhook_id("cfm_1", "tap.1")
    assert first != command_webhook_id("cfm_2", "tap.1") != command_webhook_id("cfm_1", "tap.2")
    assert "." not in first


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.16.5.5",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fd00:ec2::254",
        "fe80::1",
        "::ffff:10.0.0.1",
        "224.0.0.1",
        "240.0.0.1",
        "64:ff9b::7f00:1",  # NAT64 (well-known prefix) of 127.0.0.1
        "64:ff9b::a9fe:a9fe",  # NAT64 of the metadata service
        "64:ff9b:1::a00:1",  # NAT64 (local-use prefix) of 10.0.0.1
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:c0a8:101::",  # 6to4 of 192.168.1.1
        "::7f00:1",  # IPv4-compatible 127.0.0.1
        "::a00:1",  # IPv4-compatible 10.0.0.1
        "::ffff:0:7f00:1",  # IPv4-translated 127.0.0.1
        "::ffff:0:a9fe:a9fe",  # IPv4-translated metadata service
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo whose client is 127.0.0.1 (obfuscated)
    ],
)
def test_a_non_public_address_refuses_the_host(address: str) -> None:
    with pytest.raises(ForbiddenUrl):
        check_public(["93.184.216.34", address])  # one bad address among good ones is enough


def test_public_addresses_pass() -> None:
    check_public(["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])


def test_an_ipv6_form_carrying_a_public_ipv4_address_passes() -> None:
    """Unwrapping judges the carried address by the IPv4 rules: a public one is as good as itself."""
    check_public(["64:ff9b::5db8:d822", "2002:5db8:d822::1"])  # NAT64 and 6to4 of 93.184.216.34


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/x",
        "ftp://example.com/x",
        "https://u:p@example.com/",
        "https:///x",
        "https://example.com/#f",
        "https://example.com:99999/",
        "https://exa mple.com/",
        "https://example.com/" + "a" * 2100,
        "https://127.0.0.1\u0000x:8443/cb",  # a control character in the host
        "https://owner\u0007.example.com/cb",
        "https://owner.example.com/cb\u0000",  # ... or anywhere in the URL
        "https://exa_mple..com/cb",  # an empty label
        "https://-owner.example.com/cb",  # a label starting with a hyphen
        "https://" + "a" * 64 + ".example.com/cb",  # a label over 63 characters
        "https://xn--.example.com/cb",  # not IDNA
        "https://\u2488.example.com/cb",  # no IDNA form (a circled digit)
    ],
)
def test_a_callback_url_must_be_plain_https(url: str) -> None:
    with pytest.raises(ForbiddenUrl):
        parse(url, https_only=True)


def test_an_international_host_is_called_by_its_idna_name() -> None:
    assert parse("https://bücher.example/cb", https_only=True).host == "xn--bcher-kva.example"


def test_a_callback_url_keeps_its_path_and_query() -> None:
    target = parse("https://owner.example.com:8443/hooks?team=a", https_only=True)
    assert (target.host, target.port, target.path) == ("owner.example.com", 8443, "/hooks?team=a")


@dataclass
class FakeTransport:
    """The owner, as the port sees it: one canned answer per call, and every request it was sent."""

    answers: list[tuple[int, bytes] | Exception]
    sent: list[dict[str, Any]] = field(default_factory=list)

    def call(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bytes]:
        self.sent.append({"method": method, "url": url, "headers": headers, "body": body})
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def registration(**changes: Any) -> Registration:
    spec = OwnerSpec("https://owner.example.com/cb", "https://owner.example.com/fact?v=1", frozenset({"join"}))
    return Registration("lalu", "group_join", "groups", spec, new_secret(), NOW_MS, NOW_MS).evolve(**changes)


def confirm() -> Confirm:
    return Confirm(
        app_code="lalu",
        confirm_id="cfm_" + "a" * 32,
        business_type="group_join",
        business_subtype="join",
        business_id="g-1",
        sender_user_id="1",
        receiver_user_id="2",
        status=ConfirmStatus.PROCESSING,
        message_text="join?",
        source_name="owner:group_join",
        source_event_id="e-1",
        created_at_ms=NOW_MS,
        updated_at_ms=NOW_MS,
        expire_at_ms=NOW_MS + 60_000,
        version=2,
        processing_action="accept",
        processing_command_id="tap-1",
    )


def owner(*answers: tuple[int, bytes] | Exception, **changes: Any) -> tuple[RemoteOwner, FakeTransport]:
    transport = FakeTransport(list(answers))
    return RemoteOwner(registration(**changes), transport, clock=lambda: NOW_MS), transport


def test_an_accepted_answer_is_the_owners_fact_and_the_request_is_signed() -> None:
    registered = registration()
    transport = FakeTransport([(200, b'{"state":"accepted","decided_at_ms":1796000000123}')])
    fact = RemoteOwner(registered, transport, clock=lambda: NOW_MS).act(confirm(), Action.ACCEPT, "")
    assert (fact.state, fact.decided_at_ms) == (OwnerState.ACCEPTED, 1_796_000_000_123)
    (request,) = transport.sent
    body = json.loads(request["body"])
    assert body["type"] == "confirm.action" and body["confirm"]["business_id"] == "g-1"
    assert verify(registered.secret, request["headers"], request["body"], now_s=NOW_MS // 1000)


def test_the_fact_is_a_signed_get_by_business_id() -> None:
    remote, transport = owner((200, b'{"state":"pending"}'))
    assert remote.fact(confirm()).state is OwnerState.PENDING
    (request,) = transport.sent
    assert request["method"] == "GET" and request["body"] is None
    assert request["url"].startswith("https://owner.example.com/fact?v=1&") and "business_id=g-1" in request["url"]
    assert "webhook-signature" in request["headers"]


def test_a_fact_requests_signature_covers_its_method_path_and_query() -> None:
    """Regression: a GET was signed over an empty body, so a captured one replayed with any business_id."""
    secret = new_secret()
    remote, transport = owner((200, b'{"state":"pending"}'), secret=secret)
    remote.fact(confirm())
    (request,) = transport.sent
    target = request["url"].removeprefix("https://owner.example.com")
    assert target.startswith("/fact?v=1&")
    signed = f"GET {target}".encode()
    assert (
        spec_signature(secret, request["headers"]["webhook-id"], NOW_MS // 1000, signed)
        == (request["headers"]["webhook-signature"])
    )
    assert verify(secret, request["headers"], signed, now_s=NOW_MS // 1000)
    for replayed in (
        target.replace("business_id=g-1", "business_id=g-2"),
        target.replace("/fact", "/other"),
        target + "&x=1",
    ):
        with pytest.raises(InvalidSignature):
            verify(secret, request["headers"], f"GET {replayed}".encode(), now_s=NOW_MS // 1000)
    with pytest.raises(InvalidSignature):
        verify(secret, request["headers"], b"", now_s=NOW_MS // 1000)  # the old, empty content


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ((409, b'{"reason":"group_full"}'), "group_full"),
        ((409, b'{"reason":"Not A Word!"}'), "owner_refused"),
        ((409, b"{}"), "owner_refused"),
    ],
)
def test_a_409_is_a_refusal_with_a_named_reason_or_owner_refused(answer: tuple[int, bytes], reason: str) -> None:
    remote, _ = owner(answer)
    with pytest.raises(BusinessRefused) as refused:
        remote.act(confirm(), Action.ACCEPT, "")
    assert refused.value.reason == reason


@pytest.mark.parametrize(
    "answer",
    [
        (500, b"{}"),
        (401, b"{}"),
        (302, b""),
        (200, b"not json"),
        (200, b"[1]"),
        (200, b'{"state":"maybe"}'),
        (200, b"{}"),
        EndpointUnreachable("timed out"),
    ],
)
def test_anything_else_is_the_owner_being_unavailable(answer: tuple[int, bytes] | Exception) -> None:
    remote, _ = owner(answer)
    with pytest.raises(UpstreamError):
        remote.act(confirm(), Action.ACCEPT, "")


def test_a_disabled_owner_is_not_called() -> None:
    remote, transport = owner(enabled=False)
    with pytest.raises(UpstreamError):
        remote.expire(confirm())
    assert transport.sent == []


def test_a_rotated_secret_signs_beside_the_old_one_only_during_the_overlap() -> None:
    rotated = registration(previous_secret=new_secret(), previous_secret_until_ms=NOW_MS + ROTATION_OVERLAP_MS)
    assert len(rotated.secrets_at(NOW_MS)) == 2
    assert rotated.secrets_at(NOW_MS + ROTATION_OVERLAP_MS) == (rotated.secret,)
    assert rotated.secret not in repr(rotated) and rotated.previous_secret not in repr(rotated)
