"""Status webhooks (issue 46, item 4): which stored change of a job is told of, how a partner's webhook is kept
(secret answered once, rotation with an overlap, the owner callbacks' URL rules), and what a post carries:
a body every Standard Webhooks verifier (the official `standardwebhooks` library among them) accepts."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook

from herald.callback_urls import EndpointUnreachable, UrlPolicy
from herald.errors import InvalidArgument, NotFound
from herald.events.jobs import Job, JobStatus
from herald.events.models import ExternalEvent, Target
from herald.events.webhooks.models import DEFAULT_STATUSES, StatusNotice, notice_for
from herald.events.webhooks.service import Posted, StatusWebhooks, WebhookNotDelivered, WebhookPoster
from herald.webhook_signing import ROTATION_OVERLAP_MS
from herald_client.webhooks import WebhookVerificationError, verify_webhook
from tests.support.clock import FakeClock
from tests.support.fakes import InMemoryWebhookStore, StaticResolver

NOW = 1_800_000_000_000
URL = "https://ci.example.com/herald"


def job(status: JobStatus = JobStatus.QUEUED, **changes: Any) -> Job:
    event = ExternalEvent("e1", "build", "Build", "failed", "", Target("chat_id", "oc_1"))
    return dataclasses.replace(Job("ci", 1, event, "h", NOW, tenant="acme", status=status), **changes)


class Endpoint:
    def __init__(self, answers: list[int | Exception] | None = None) -> None:
        self.answers = answers or []
        self.posts: list[tuple[str, dict[str, str], bytes]] = []

    def call(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> tuple[int, bytes]:
        self.posts.append((url, headers, body or b""))
        answer = self.answers.pop(0) if self.answers else 204
        if isinstance(answer, Exception):
            raise answer
        return answer, b""


@pytest.fixture
def clock() -> FakeClock:
    """Now, as a receiver's verifier reads its own clock (the official library takes no other)."""
    return FakeClock(int(time.time() * 1000))


@pytest.fixture
def store() -> InMemoryWebhookStore:
    return InMemoryWebhookStore()


@pytest.fixture
def webhooks(store: InMemoryWebhookStore, clock: FakeClock) -> StatusWebhooks:
    return StatusWebhooks(store, UrlPolicy(StaticResolver(), https_only=True, allow_private=False), clock)


# ------------------------------------------------------------------ which changes are told of
@pytest.mark.parametrize("status", ["succeeded", "superseded", "rejected", "skipped", "failed", "unknown"])
def test_a_job_reaching_a_status_a_webhook_may_ask_for_is_one_notice(status: str) -> None:
    before, after = job(JobStatus.RUNNING), job(JobStatus(status), finished_at_ms=NOW + 5)
    notice = notice_for(before, after, NOW + 9)
    assert notice is not None and (notice.service_id, notice.tenant, notice.status) == ("ci", "acme", after.status)
    assert notice.data["event_id"] == "e1" and notice.data["status"] == status and notice.at_ms == NOW + 5
    assert notice_for(after, after, NOW) is None  # a change that leaves the status is none


@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.RUNNING])
def test_a_job_still_on_its_way_is_no_notice(status: JobStatus) -> None:
    assert notice_for(job(), job(status), NOW) is None and notice_for(None, job(), NOW) is None


def test_an_unknown_job_is_told_of_once_not_again_after_each_settling_try() -> None:
    first = notice_for(job(JobStatus.RUNNING), job(JobStatus.UNKNOWN), NOW)
    again = notice_for(job(JobStatus.RUNNING, settle_tries=1), job(JobStatus.UNKNOWN, settle_tries=1), NOW)
    assert first is not None and again is None


def test_a_requeued_job_reaching_the_same_status_again_is_a_new_notice_with_a_new_id() -> None:
    first = notice_for(job(JobStatus.RUNNING), job(JobStatus.FAILED), NOW)
    again = notice_for(job(JobStatus.RUNNING, generation=1), job(JobStatus.FAILED, generation=1), NOW)
    assert first is not None and again is not None and first.webhook_id != again.webhook_id
    repeat = notice_for(job(JobStatus.RUNNING), job(JobStatus.FAILED), NOW + 60_000)  # the stream record again
    assert repeat is not None and repeat.webhook_id == first.webhook_id


def test_a_notice_survives_its_queue_and_a_newer_or_broken_one_is_refused() -> None:
    notice = notice_for(job(JobStatus.RUNNING), job(JobStatus.FAILED), NOW)
    assert notice is not None and StatusNotice.from_message(json.loads(json.dumps(notice.to_message()))) == notice
    for broken in ({**notice.to_message(), "v": 2}, {"v": 1}, {**notice.to_message(), "status": "lost"}):
        with pytest.raises(ValueError):
            StatusNotice.from_message(broken)


# ------------------------------------------------------------------ a partner's webhook
def test_the_secret_is_answered_once_a_change_keeps_it_and_the_default_statuses_apply(
    webhooks: StatusWebhooks,
) -> None:
    first, secret = webhooks.put("ci", "acme", URL, None)
    assert secret is not None and secret.startswith("whsec_") and first.statuses == DEFAULT_STATUSES
    changed, again = webhooks.put("ci", "acme", URL + "/v2", ["succeeded"])
    assert again is None and changed.secret == secret and changed.statuses == {JobStatus.SUCCEEDED}
    assert secret not in json.dumps(changed.view()) and secret not in repr(changed)


@pytest.mark.parametrize(
    "url",
    [
        "http://ci.example.com/hook",
        "https://user:pw@ci.example.com/hook",
        "https://127.0.0.1/hook",
        "https://[::ffff:169.254.169.254]/hook",
        "ftp://ci.example.com/",
        "not a url",
    ],
)
def test_a_url_owner_callbacks_may_not_use_is_400_and_registers_nothing(
    webhooks: StatusWebhooks, store: InMemoryWebhookStore, url: str
) -> None:
    with pytest.raises(InvalidArgument) as refused:
        webhooks.put("ci", "acme", url, None)
    assert refused.value.reason == "forbidden_url" and store.webhooks == {}


@pytest.mark.parametrize("statuses", [[], ["queued"], ["running"], ["lost"]])
def test_statuses_a_webhook_cannot_ask_for_are_400(webhooks: StatusWebhooks, statuses: list[str]) -> None:
    with pytest.raises(InvalidArgument):
        webhooks.put("ci", "acme", URL, statuses)


def test_a_rotation_answers_a_new_secret_and_the_old_one_signs_beside_it_for_a_day(
    webhooks: StatusWebhooks, clock: FakeClock
) -> None:
    _, old = webhooks.put("ci", "acme", URL, None)
    rotated, new = webhooks.rotate_secret("ci", "acme")
    assert new != old and rotated.secrets_at(clock()) == (new, old)
    assert rotated.secrets_at(clock() + ROTATION_OVERLAP_MS) == (new,)


def test_another_tenants_webhook_of_the_same_service_is_its_own_and_a_missing_one_is_404(
    webhooks: StatusWebhooks,
) -> None:
    webhooks.put("ci", "acme", URL, None)
    for act in (lambda: webhooks.rotate_secret("ci", "globex"), lambda: webhooks.delete("ci", "globex")):
        with pytest.raises(NotFound):
            act()
    webhooks.delete("ci", "acme")
    with pytest.raises(NotFound):
        webhooks.delete("ci", "acme")


# ------------------------------------------------------------------ a post
def notice(status: JobStatus = JobStatus.FAILED) -> StatusNotice:
    found = notice_for(job(JobStatus.RUNNING), job(status), NOW)
    assert found is not None
    return found


def test_a_post_verifies_with_the_official_standard_webhooks_library_and_the_sdk(
    webhooks: StatusWebhooks, store: InMemoryWebhookStore, clock: FakeClock
) -> None:
    _, secret = webhooks.put("ci", "acme", URL, None)
    assert secret is not None
    endpoint = Endpoint()
    assert WebhookPoster(store, endpoint, clock).post(notice()) is Posted.SENT
    ((url, headers, body),) = endpoint.posts
    document = Webhook(secret).verify(body, headers)
    assert url == URL and document == verify_webhook(secret, headers, body, now_s=clock() / 1000)
    assert document["type"] == "event.failed" and document["data"]["event_id"] == "e1"
    assert headers["webhook-id"] == notice().webhook_id and headers["content-type"] == "application/json"
    with pytest.raises(WebhookVerificationError):
        verify_webhook(secret, headers, body.replace(b"failed", b"succeeded"), now_s=clock() / 1000)


def test_during_a_rotation_a_receiver_holding_either_secret_verifies_the_post(
    webhooks: StatusWebhooks, store: InMemoryWebhookStore, clock: FakeClock
) -> None:
    _, old = webhooks.put("ci", "acme", URL, None)
    _, new = webhooks.rotate_secret("ci", "acme")
    endpoint = Endpoint()
    WebhookPoster(store, endpoint, clock).post(notice())
    ((_, headers, body),) = endpoint.posts
    assert old is not None and Webhook(old).verify(body, headers) == Webhook(new).verify(body, headers)


def test_a_status_not_asked_for_or_a_service_without_a_webhook_posts_nothing(
    webhooks: StatusWebhooks, store: InMemoryWebhookStore, clock: FakeClock
) -> None:
    endpoint = Endpoint()
    poster = WebhookPoster(store, endpoint, clock)
    assert poster.post(notice()) is Posted.NO_WEBHOOK
    webhooks.put("ci", "acme", URL, ["failed"])
    assert poster.post(notice(JobStatus.SUCCEEDED)) is Posted.NOT_ASKED and endpoint.posts == []


@pytest.mark.parametrize("answer", [500, 301, 404, EndpointUnreachable("no whole answer within 5 s")])
def test_an_answer_other_than_2xx_is_not_delivered_and_comes_back(
    webhooks: StatusWebhooks, store: InMemoryWebhookStore, clock: FakeClock, answer: int | Exception
) -> None:
    webhooks.put("ci", "acme", URL, None)
    with pytest.raises(WebhookNotDelivered):
        WebhookPoster(store, Endpoint([answer]), clock).post(notice())
