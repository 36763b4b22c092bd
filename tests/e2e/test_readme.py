"""Every command block of the README, run exactly as written against `make dev` on its documented ports, as a
newcomer pastes them into a shell. A block this test does not know fails it: a new block needs its check."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator

import boto3
import httpx
import pytest

from tests.support.local_cloud import start_make_dev
from tests.support.readme import DEV_STATE, json_values, newcomer_environment, readme_blocks, run_block
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

BLOCKS = readme_blocks()
NOT_RUN_HERE = {
    # `make dev` is what this test runs (and tests/e2e/test_make_dev.py); `make test` is the suite itself.
    "make dev    # creates .venv, installs, starts the whole product on this machine",
    # needs AWS credentials; `make test` runs its build (`make sam-check`), and issue 13's note shows a fresh
    # clone reaching `sam deploy`
    "make deploy          # sam build && sam deploy, with samconfig.toml",
}
TRY_IT = "ALICE=$(.venv/bin/herald token --user 10001)"
EVENTS = "PARTNER=$(.venv/bin/herald-ops keys create --service scheduler"
TURNS = "BOB=$(.venv/bin/herald token --user 10002)"
KEYS = "OLD=$(.venv/bin/herald-ops keys create --service reports"
OWNER_SERVICE = "ADMIN=$(.venv/bin/herald token --user 10001)"
SDK = "PARTNER=$(.venv/bin/herald-ops keys create --service sdk-demo"
TENANTS = ".venv/bin/herald fake im-app --sdk-app-id 1400000002"
OWN_PROVIDER = ".venv/bin/herald local --parameter TencentImBaseUrl=http://127.0.0.1:9000"  # its own test module


def block(start: str) -> str:
    (found,) = [text for first, text in BLOCKS.items() if first.startswith(start)]
    return found


@pytest.fixture(scope="module")
def make_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    if DEV_STATE.exists():
        pytest.fail(f"{DEV_STATE} exists: is `make dev` already running? The README's ports must be free")
    process = start_make_dev(newcomer_environment(), DEV_STATE, tmp_path_factory.mktemp("readme") / "make-dev.log")
    try:
        yield
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=30)


def test_the_readme_has_no_command_block_this_test_does_not_run_or_explain() -> None:
    starts = (TRY_IT, EVENTS, TURNS, KEYS, OWN_PROVIDER, OWNER_SERVICE, SDK, TENANTS)
    unknown = [first for first in BLOCKS if first not in NOT_RUN_HERE and not first.startswith(starts)]
    assert unknown == []
    assert all(block(start) for start in starts)  # each known block is there, once


def test_try_it_invite_accept_and_watch_as_written(make_dev: None) -> None:
    for _ in range(2):  # a second run finds the first one's messages, and must not take them for its own
        output = run_block(block(TRY_IT), type_after="Connected to", typed='{"action":"ping"}\n', leave_after="pong")
        values = json_values(output)
        invitation, accepted, deliveries = [v for v in values if "code" in v]  # the API's answers
        (update,) = [v for v in values if "msg_key" in v]  # what the fake Tencent IM received
        assert invitation["data"]["status"] == "pending"
        assert accepted["data"]["status"] == "accepted"
        assert update["data"]["type"] == "im_confirm_update" and update["data"]["status"] == "accepted"
        assert update["data"]["confirm_id"] == accepted["data"]["confirm_id"]
        assert [d["push"] for d in deliveries["data"]["deliveries"]] == ["im_confirm", "im_confirm_update:accepted"]
        assert '< {"type":"pong"}' in output


def test_the_sample_owner_service_as_written(make_dev: None) -> None:
    for _ in range(2):  # a second run asks again: a new join request, a new confirm
        values = json_values(run_block(block(OWNER_SERVICE)))
        push, accepted, group, registration = values[0], values[1], values[2], values[3]
        assert push["data"]["type"] == "im_confirm" and push["data"]["business_type"] == "group_join"
        assert [a["label"] for a in push["data"]["actions"]] == ["Decline", "Let them in"]
        assert accepted["data"]["status"] == "accepted"
        assert accepted["data"]["confirm_id"] == push["data"]["confirm_id"]
        assert "10002" in group["members"]
        (request,) = [r for r in group["requests"] if r["request_id"] == accepted["data"]["business_id"]]
        assert request["state"] == "accepted"
        assert registration["business_type"] == "group_join" and "whsec_" not in json.dumps(values)


def one_card_at_revision_two(feishu: str, chat: str) -> None:
    """One message in the chat, ending at step 2: revision 1 sent then updated in place, or, when revision 2
    was already waiting behind it, revision 1 superseded and only revision 2 sent."""
    mine = [c for c in httpx.get(f"{feishu}/__fake/messages").json() if c["receive_id"] == chat]
    steps = [(c["op"], "step 2" in json.dumps(c)) for c in mine]
    assert steps in ([("send", False), ("update", True)], [("send", True)]), mine
    assert len({c["message_id"] for c in mine}) == 1, mine


def test_the_python_sdk_as_written(make_dev: None) -> None:
    for _ in range(2):  # a second run posts the same event ids: duplicates, still one card
        output = run_block(block(SDK))
        answers = [line for line in output.splitlines() if line.startswith("{'event_id'")]
        assert [a.split("'")[3] for a in answers] == ["sdk-1", "sdk-2"], output
    feishu = json.loads(DEV_STATE.read_text())["fakes"]["feishu"]

    eventually(lambda: one_card_at_revision_two(feishu, "oc_sdk"))


def test_external_events_as_written(make_dev: None) -> None:
    output = run_block(block(EVENTS))
    answers = [v for v in json_values(output) if "code" in v]
    assert [(a["code"], a["data"]["event_id"]) for a in answers] == [("OK", "evt-1"), ("OK", "evt-2")], output
    assert [v["revision"] for v in json_values(output) if v.get("job_id") == "scheduler:1"] == [1], output
    feishu = json.loads(DEV_STATE.read_text())["fakes"]["feishu"]

    eventually(lambda: one_card_at_revision_two(feishu, "oc_demo"))


def test_agent_turn_queue_as_written(make_dev: None) -> None:
    output = run_block(block(TURNS))
    answers = json_values(output)
    deliveries = [a["data"]["delivery"] for a in answers[:3]]
    assert deliveries[0] in ("started", "queued") and deliveries[1:] == ["queued", "queued"], output
    assert answers[3]["data"]["events"]


def test_service_keys_as_written(make_dev: None) -> None:
    output = run_block(block(KEYS))
    listed = json_values(output)
    assert any(key["service_id"] == "reports" for key in listed), output


def test_several_apps_on_one_stack_as_written(make_dev: None) -> None:
    for _ in range(2):  # a second run keeps the app's key, and finds its own push
        output = run_block(block(TENANTS))
        values = json_values(output)
        (push,) = [v for v in values if "msg_key" in v]
        assert push["sdk_app_id"] == 1400000002 and push["data"]["type"] == "im_confirm", output
        assert any(v.get("app_code") == "shop" and v.get("enabled") is False for v in values), output
        refused = [v for v in values if v.get("code") == "PERMISSION_DENIED"]
        assert [r["data"]["reason"] for r in refused] == ["tenant_disabled"], output
        assert values[-1]["app_code"] == "shop" and values[-1]["enabled"] is True
    key = boto3.client(
        "ssm",
        endpoint_url=json.loads(DEV_STATE.read_text())["aws_endpoint"],
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    ).get_parameter(Name="/herald/tenants/shop/tencent-im-key", WithDecryption=True)["Parameter"]["Value"]
    assert key not in output
