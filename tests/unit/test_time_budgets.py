"""The time budgets AWS enforces (template.yaml) and the ones Herald enforces (herald.budgets, through the
settings' defaults) still fit together. Each test names the failure it prevents."""

from __future__ import annotations

import dataclasses
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from herald_ops.template import StackTemplate, load_template

from herald import budgets
from herald.events.webhooks.handlers import retry_in_s
from herald.providers import http as provider_http
from herald.settings import Settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def stack() -> StackTemplate:
    return StackTemplate(load_template(REPO / "template.yaml"))


def timeout_ms(stack: StackTemplate, function: str) -> int:
    return int(stack.function_properties(function)["Timeout"]) * 1000


def setting(stack: StackTemplate, function: str, name: str) -> int:
    """The value `function` runs with: its template environment, else the settings' default."""
    variables = stack.function_properties(function).get("Environment", {}).get("Variables", {})
    raw = variables.get("HERALD_" + name.upper())
    if raw is not None:
        return int(raw)
    (default,) = [f.default for f in dataclasses.fields(Settings) if f.name == name]
    assert isinstance(default, int)
    return default


def sqs_consumers(stack: StackTemplate) -> list[tuple[str, str, dict[str, Any]]]:
    """(function, queue logical id, event properties) for every SQS event source in the template."""
    found = []
    for function in stack.of_type("AWS::Serverless::Function"):
        for event in stack.function_properties(function).get("Events", {}).values():
            if event["Type"] == "SQS":
                found.append((function, event["Properties"]["Queue"]["Fn::GetAtt"][0], event["Properties"]))
    return found


def queue_property(stack: StackTemplate, queue: str, name: str) -> Any:
    return stack.resources[queue]["Properties"][name]


def test_every_queue_hides_a_message_six_times_as_long_as_its_consumer_may_run(stack: StackTemplate) -> None:
    consumers = sqs_consumers(stack)
    assert {queue for _, queue, _ in consumers} == {
        "ImPushQueue",
        "EventsQueue",
        "EventsWaitingQueue",
        "EventWebhooksQueue",
    }
    for function, queue, _ in consumers:
        visibility_ms = int(queue_property(stack, queue, "VisibilityTimeout")) * 1000
        assert visibility_ms >= budgets.VISIBILITY_PER_FUNCTION_TIMEOUT * timeout_ms(stack, function), (function, queue)


def test_a_webhook_post_fits_its_function_and_a_notice_is_tried_for_about_six_hours(stack: StackTemplate) -> None:
    """README: a notice an endpoint never takes is posted for about six hours, then dead-lettered."""
    post_ms = setting(stack, "EventWebhooksFunction", "owner_call_total_ms")
    assert timeout_ms(stack, "EventWebhooksFunction") >= post_ms + 2 * budgets.RECORD_OUTCOME_MS
    receives = int(queue_property(stack, "EventWebhooksQueue", "RedrivePolicy")["maxReceiveCount"])
    waited_h = sum(retry_in_s(count) for count in range(1, receives)) / 3600
    assert 5.5 <= waited_h <= 6.5


def test_an_im_sender_invocation_fits_a_history_lookup_and_a_send_with_their_records(stack: StackTemplate) -> None:
    one_call = budgets.PROVIDER_CALL_MS + budgets.RECORD_OUTCOME_MS
    assert timeout_ms(stack, "ImSenderFunction") >= 2 * one_call


def test_events_worker_claims_only_with_time_for_the_side_effect_and_never_outlives_its_lease(
    stack: StackTemplate,
) -> None:
    reserve = setting(stack, "EventsWorkerFunction", "events_reserve_ms")
    lease = setting(stack, "EventsWorkerFunction", "events_lease_ms")
    worker = timeout_ms(stack, "EventsWorkerFunction")
    # A token request and a send, and the claim, mark and completion around them.
    assert reserve >= 2 * budgets.PROVIDER_CALL_MS + 3 * budgets.RECORD_OUTCOME_MS
    assert worker > reserve  # every invocation can claim at least one job
    assert lease > worker  # no second worker takes over a job while the first may still run it


def test_a_confirm_lease_outlives_the_http_invocation_that_holds_it(stack: StackTemplate) -> None:
    lease = setting(stack, "HttpApiFunction", "confirm_lease_ms")
    assert lease > timeout_ms(stack, "HttpApiFunction")
    assert setting(stack, "ConfirmsJanitorFunction", "confirm_lease_ms") == lease


def test_a_push_waiting_behind_its_group_is_not_dead_lettered_before_herald_gives_up(stack: StackTemplate) -> None:
    ((_, _, pushes),) = [c for c in sqs_consumers(stack) if c[1] == "ImPushQueue"]
    attempts = setting(stack, "ImSenderFunction", "im_push_max_attempts")
    max_receives = int(queue_property(stack, "ImPushQueue", "RedrivePolicy")["maxReceiveCount"])
    # Each of the (batch - 1) pushes ahead of it in a batch may fail `attempts` times, and so may it.
    assert max_receives >= int(pushes["BatchSize"]) * attempts


def test_an_events_nudge_outlasts_the_retries_of_the_job_it_runs(stack: StackTemplate) -> None:
    # A batch's messages of one lane run in order behind its first (workers.process_fifo): each is received as
    # often as the one running the job, so the count below holds for each of them.
    attempts = setting(stack, "EventsWorkerFunction", "events_max_attempts")
    max_receives = int(queue_property(stack, "EventsQueue", "RedrivePolicy")["maxReceiveCount"])
    # Per attempt: the receive that failed it, and one more waiting out a dead worker's lease.
    assert max_receives >= 2 * attempts


def test_provider_clients_wait_no_longer_than_the_budget_of_one_call() -> None:
    from herald.providers.feishu import FeishuClient
    from herald.providers.tencent_im import TencentImClient

    for client in (FeishuClient, TencentImClient):
        (timeout,) = [f.default for f in dataclasses.fields(client) if f.name == "timeout_s"]
        assert timeout == budgets.PROVIDER_READ_S
    assert budgets.PROVIDER_CALL_MS == (budgets.PROVIDER_CONNECT_S + budgets.PROVIDER_READ_S) * 1000


@pytest.fixture
def counting_server() -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.path)
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()


def test_a_provider_call_that_could_outlive_the_invocation_is_not_sent(counting_server: tuple[str, list[str]]) -> None:
    url, seen = counting_server
    needed = budgets.PROVIDER_CALL_MS + budgets.RECORD_OUTCOME_MS
    with budgets.invocation(lambda: needed - 1), pytest.raises(budgets.OutOfTime):
        provider_http.request("POST", f"{url}/send", body={})
    assert seen == []
    with budgets.invocation(lambda: needed):
        assert provider_http.request("POST", f"{url}/send", body={}).status == 200
    assert provider_http.request("POST", f"{url}/outside", body={}).status == 200  # no invocation: no deadline
    assert seen == ["/send", "/outside"]
