"""Every command block of the README, run exactly as written against `make dev` on its documented ports, as a
newcomer pastes them into a shell. A block this test does not know fails it: a new block needs its check."""

from __future__ import annotations

import functools
import json
import os
import re
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
APPROVAL = "APPROVER=$(.venv/bin/herald token --user 10002)"
KEYS = "OLD=$(.venv/bin/herald-ops keys create --service reports"
OWNER_SERVICE = "ADMIN=$(.venv/bin/herald token --user 10001)"
SDK = "PARTNER=$(.venv/bin/herald-ops keys create --service sdk-demo"
TENANTS = ".venv/bin/herald fake im-app --sdk-app-id 1400000002"
INBOX = "PRODUCER=$(.venv/bin/herald-ops keys create --service agent-platform"
OPERATE = ".venv/bin/herald fake feishu-fail --chat oc_ops"
STATUS = "WATCHER=$(.venv/bin/herald-ops keys create --service watcher"
PAUSE = "MOVING=$(.venv/bin/herald-ops keys create --service moving"
OWN_PROVIDER = ".venv/bin/herald local --parameter TencentImBaseUrl=http://127.0.0.1:9000"  # its own test module


def block(start: str) -> str:
    (found,) = [text for first, text in BLOCKS.items() if first.startswith(start)]
    return found


@pytest.fixture(scope="module")
def make_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    if DEV_STATE.exists():
        pytest.fail(f"{DEV_STATE} exists: is `make dev` already running? The README's ports must be free")
    workdir = tmp_path_factory.mktemp("readme")
    # A newcomer's first `make dev`: nothing kept from an earlier run on this machine.
    environment = {**newcomer_environment(), "DEV_DATA": str(workdir / "dev-data")}
    process = start_make_dev(environment, DEV_STATE, workdir / "make-dev.log")
    try:
        yield
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=30)


def test_the_readme_has_no_command_block_this_test_does_not_run_or_explain() -> None:
    starts = (
        *(TRY_IT, EVENTS, TURNS, APPROVAL, KEYS, OWN_PROVIDER, OWNER_SERVICE),
        *(SDK, TENANTS, INBOX, OPERATE, STATUS, PAUSE),
    )
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
        output = run_block(block(OWNER_SERVICE))
        push, accepted, group = json_values(output)
        assert push["data"]["type"] == "im_confirm" and push["data"]["business_type"] == "group_join"
        assert [a["label"] for a in push["data"]["actions"]] == ["Decline", "Let them in"]
        assert accepted["data"]["status"] == "accepted"
        assert accepted["data"]["confirm_id"] == push["data"]["confirm_id"]
        assert "10002" in group["members"]
        (request,) = [r for r in group["requests"] if r["request_id"] == accepted["data"]["business_id"]]
        assert request["state"] == "accepted"
        # `owners list`: a table, the registration's row, never its secret
        assert re.search(r"^lalu\s+group_join\s+\S+\s+yes\s+http", output, re.MULTILINE), output
        assert "whsec_" not in output


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
    assert "Nothing is blocked" in output  # `events blocked`, with nothing to show, says so
    assert re.search(r"^job id\s+scheduler:1$", output, re.MULTILINE), output  # `events show`: the job's fields
    assert re.search(r"^revision\s+1$", output, re.MULTILINE), output
    feishu = json.loads(DEV_STATE.read_text())["fakes"]["feishu"]

    eventually(lambda: one_card_at_revision_two(feishu, "oc_demo"))


def test_what_became_of_an_event_as_written(make_dev: None) -> None:
    for _ in range(2):  # a second run removes the first one's webhook, registers it afresh and posts a new event
        output = run_block(block(STATUS))
        values = json_values(output)
        (posted,) = [v for v in values if v.get("type") == "event.succeeded"]  # what the receiver verified
        accepted, fate, listed = [v for v in values if "code" in v]
        assert accepted["data"]["status"] == "accepted" and posted["data"]["event_id"] == accepted["data"]["event_id"]
        assert fate["data"]["status"] == "succeeded" and fate["data"]["attempts"][0]["outcome"] == "done"
        assert fate["data"]["message_id"] == posted["data"]["message_id"]
        assert listed["data"]["items"][0]["event_id"] == accepted["data"]["event_id"]
        assert "http://127.0.0.1:8094/herald" in output and "whsec_" not in output  # the secret is never printed


def test_pausing_a_partner_as_written(make_dev: None) -> None:
    feishu = json.loads(DEV_STATE.read_text())["fakes"]["feishu"]
    for _ in range(2):  # a second run pauses, holds and resumes afresh
        before = len(_cards_to(feishu, "oc_moving"))
        output = run_block(block(PAUSE))
        accepted, held = [v for v in json_values(output) if "code" in v]
        assert accepted["code"] == "OK" and accepted["data"]["status"] == "accepted", output
        assert held["data"]["status"] == "held", output  # the partner's status API, while the pause holds it
        assert re.search(r"^service#moving\s+\S+\s+chat being migrated\s+.*\s1$", output, re.MULTILINE), output
        assert re.search(r"^released\s+1$", output, re.MULTILINE), output
        assert re.search(r"events resume\s+moving\s+ok released=1", output), output  # the audit log
        assert re.search(r"^kind\s+event job$", output, re.MULTILINE), output  # find
        eventually(functools.partial(_one_more, feishu, before))


def _cards_to(feishu: str, chat: str) -> list[dict[str, object]]:
    return [entry for entry in httpx.get(f"{feishu}/__fake/messages").json() if entry["receive_id"] == chat]


def _one_more(feishu: str, before: int) -> None:
    cards = _cards_to(feishu, "oc_moving")
    assert len(cards) == before + 1, cards


def test_agent_turn_queue_as_written(make_dev: None) -> None:
    output = run_block(block(TURNS))
    answers = json_values(output)
    deliveries = [a["data"]["delivery"] for a in answers[:3]]
    assert deliveries[0] in ("started", "queued") and deliveries[1:] == ["queued", "queued"], output
    assert answers[3]["data"]["events"]


def test_an_agents_approval_as_written(make_dev: None) -> None:
    output = run_block(block(APPROVAL))
    values = json_values(output)
    posted, accepted = [v for v in values if "code" in v]  # the API's answers
    (update,) = [v for v in values if "msg_key" in v]  # what the fake Tencent IM received
    assert posted["data"]["delivery"] in ("started", "queued"), output  # it starts a turn, or joins the running one
    assert accepted["data"]["status"] == "accepted" and accepted["data"]["business_type"] == "agent_approval"
    assert update["data"]["status"] == "accepted" and update["data"]["confirm_id"] == accepted["data"]["confirm_id"]


def test_service_keys_as_written(make_dev: None) -> None:
    output = run_block(block(KEYS))
    lines = output.splitlines()
    (heading,) = [at for at, line in enumerate(lines) if line.split()[:4] == ["key", "id", "service", "id"]]
    assert lines[heading + 1].split()[1] == "reports", output  # `keys list`: a table people read
    assert re.search(r"^revoked at\s+\d\d:\d\d:\d\d \(\d+ s ago\)$", output, re.MULTILINE), output


def test_several_apps_on_one_stack_as_written(make_dev: None) -> None:
    for _ in range(2):  # a second run keeps the app's key, and finds its own push
        output = run_block(block(TENANTS))
        values = json_values(output)
        (push,) = [v for v in values if "msg_key" in v]
        assert push["sdk_app_id"] == 1400000002 and push["data"]["type"] == "im_confirm", output
        # set, disable, enable: the tenant's fields; the listing between them a table
        assert re.findall(r"^enabled\s+(\S+)$", output, re.MULTILINE) == ["yes", "no", "yes"], output
        assert re.search(r"^shop\s+The Shop\s+yes\s+sdk_app_id=1400000002", output, re.MULTILINE), output
        refused = [v for v in values if v.get("code") == "PERMISSION_DENIED"]
        assert [r["data"]["reason"] for r in refused] == ["tenant_disabled"], output
    key = boto3.client(
        "ssm",
        endpoint_url=json.loads(DEV_STATE.read_text())["aws_endpoint"],
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    ).get_parameter(Name="/herald/tenants/shop/tencent-im-key", WithDecryption=True)["Parameter"]["Value"]
    assert key not in output


def test_the_inbox_as_written(make_dev: None) -> None:
    """Three notifications, one read, then all: the bell rings with newer counts only and ends at 0."""
    for _ in range(2):  # a second run starts from the first one's zero
        output = run_block(block(INBOX))
        answers = [v for v in json_values(output) if "code" in v]
        assert [a["data"]["created"] for a in answers[:3]] == [True, True, True], output
        assert [a["data"]["unread_count"] for a in answers[3:]] == [2, 0, 0], output
        # the bell prints from the background: a line of it may follow curl's answer before curl's newline
        rung = [(int(n), int(v)) for n, v in re.findall(r"bell: (\d+) unread \(version (\d+)\)", output)]
        assert rung and rung[-1][0] == 0, output  # it rang, and ended where the user is: nothing unread
        assert [version for _, version in rung] == sorted({version for _, version in rung}), output  # newer only


def both_steps_sent_in_order(feishu: str) -> None:
    titles = [c["title"] for c in httpx.get(f"{feishu}/__fake/messages").json() if c["receive_id"] == "oc_ops"]
    assert titles == ["Nightly step 1", "Nightly step 2"], titles


def test_operate_a_blocked_lane_as_written(make_dev: None) -> None:
    output = run_block(block(OPERATE))
    blocked = [line for line in output.splitlines() if line.startswith("nightly ")]
    assert len(blocked) == 1 and "230002" in blocked[0] and " ago)" in blocked[0], output
    assert re.search(r"^resolutions\s+1\n\s+· action=requeue, by=", output, re.MULTILINE), output
    assert output.rstrip().endswith("Nothing is blocked: every lane's events are moving."), output
    feishu = json.loads(DEV_STATE.read_text())["fakes"]["feishu"]

    eventually(lambda: both_steps_sent_in_order(feishu))
