"""The console's server without a browser: what it refuses (tests/browser/test_console.py clicks through the
rest against a local cloud)."""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import jwt
import pytest
from fastapi.testclient import TestClient
from herald_ops.stack import DEFAULT_TEMPLATE, Stack

from herald.clock import now_ms
from herald.events.dynamo import DynamoEventStore
from herald.events.models import ExternalEvent, Lane
from herald_dev.console.app import PAGE_HEADER, create_console
from tests.support.deployed import deployed_stack

CONSOLE = "http://127.0.0.1:8093"


def console(stack_name: str | None, state: Path) -> TestClient:
    """The console as its own page calls it: its loopback origin, and its page token on every change."""
    client = TestClient(create_console(Stack(stack_name, None, "us-east-1", state, DEFAULT_TEMPLATE)), base_url=CONSOLE)
    client.headers[PAGE_HEADER] = client.get("/console/config").json()["page_token"]
    return client


@pytest.fixture
def local_state(tmp_path: Path) -> Path:
    state = tmp_path / "local.json"
    state.write_text(json.dumps({"http_url": "http://127.0.0.1:9", "ws_url": "ws://127.0.0.1:9", "fakes": {}}))
    return state


def test_against_a_deployed_stack_only_operate_runs_no_token_no_fake_no_app_call(tmp_path: Path) -> None:
    deployed = console("herald-prod", tmp_path / "none.json")
    config = deployed.get("/console/config").json()
    assert {k: config[k] for k in ("stack", "local")} == {"stack": "herald-prod", "local": False}
    assert deployed.post("/console/token", json={"user_id": "1"}).status_code == 404
    assert deployed.get("/console/im", params={"a": "1", "b": "2"}).status_code == 404
    assert deployed.get("/console/app/api/v1/inbox/unread-count").status_code == 404


def test_the_page_calls_only_app_routes_and_serves_only_its_own_files(tmp_path: Path) -> None:
    state = tmp_path / "local.json"
    state.write_text(json.dumps({"http_url": "http://127.0.0.1:9", "ws_url": "ws://127.0.0.1:9", "fakes": {}}))
    local = console(None, state)
    assert local.get("/").status_code == 200 and "Herald console" in local.get("/").text
    assert local.get("/static/console.js").status_code == 200
    for path in ("/static/..%2Fapp.py", "/static/%2E%2E/app.py", "/static/nothing.js"):
        assert local.get(path).status_code == 404, path
    for path in ("internal/v1/whoami", "events/external", "api/v2/x"):
        assert local.get(f"/console/app/{path}").status_code == 404, path
    assert local.get("/console/im", params={"a": "1", "b": "2"}).status_code == 404  # no fake IM: a real provider
    token = local.post("/console/token", json={"user_id": "10002"}).json()["token"]
    assert token.count(".") == 2


def test_a_deployed_stack_without_credentials_is_a_502_in_aws_words_not_a_500(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # nor the instance's role: nothing leaves loopback
    deployed = console("herald-prod", tmp_path / "none.json")
    answer = deployed.get("/console/operate")
    assert answer.status_code == 502
    assert answer.json()["error"].startswith("AWS refused: Unable to locate credentials")


# ---------------------------------------------------------------------- its own origin only (issue 28, item 1)


@pytest.mark.parametrize(
    "host", ["evil.example:8093", "127.0.0.1:8094", "127.0.0.1.evil.example:8093", "", "10.0.0.5:8093"]
)
def test_a_foreign_host_is_refused_on_every_route(local_state: Path, host: str) -> None:
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 is same-origin with the console, and names
    its own host. Regression: POST /console/token with Host evil.example minted a token (200)."""
    local = console(None, local_state)
    headers = {"host": host, "content-type": "application/json"}
    for method, path in [
        ("GET", "/"),
        ("GET", "/console/config"),
        ("POST", "/console/token"),
        ("GET", "/console/operate"),
    ]:
        answer = local.request(method, path, headers=headers, json={"user_id": "10002"} if method == "POST" else None)
        assert answer.status_code == 421, (method, path, answer.text)
        assert "token" not in answer.json()


@pytest.mark.parametrize("host", ["127.0.0.1:8093", "localhost:8093", "[::1]:8093"])
def test_the_loopback_names_with_the_consoles_port_are_served(local_state: Path, host: str) -> None:
    local = console(None, local_state)
    assert local.get("/console/config", headers={"host": host}).status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example:8093", "http://evil.example", "null", "http://127.0.0.1:9999"])
def test_a_foreign_origin_is_refused_even_with_the_right_host(local_state: Path, origin: str) -> None:
    local = console(None, local_state)
    minted = local.post("/console/token", json={"user_id": "10002"}, headers={"origin": origin})
    assert minted.status_code == 403 and "token" not in minted.json()
    assert local.get("/console/config", headers={"origin": origin}).status_code == 403
    same = local.post("/console/token", json={"user_id": "10002"}, headers={"origin": CONSOLE})
    assert same.status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/console/confirms/lalu/cfm_" + "0" * 32 + "/repair",
        "/console/dlq/ImPushDeadLetters/peek",
        "/console/token",
        "/console/pauses",
        "/console/pauses/resume",
        "/console/events/resolve-many",
    ],
)
def test_a_cross_site_form_post_changes_nothing(local_state: Path, path: str) -> None:
    """Regression: a form post (no JSON, no page token) ran repair and peek (200)."""
    local = console(None, local_state)
    form = local.post(
        path,
        content=b"confirm=x",
        headers={"content-type": "application/x-www-form-urlencoded", PAGE_HEADER: ""},
    )
    assert form.status_code == 415, form.text
    text = local.post(path, content=b"{}", headers={"content-type": "text/plain", PAGE_HEADER: ""})
    assert text.status_code == 415, text.text


def test_a_change_without_the_page_token_is_refused(local_state: Path) -> None:
    local = console(None, local_state)
    for token in ("", "guessed", "x" * 43):
        answer = local.post("/console/token", json={"user_id": "10002"}, headers={PAGE_HEADER: token})
        assert answer.status_code == 403 and "token" not in answer.json()
    other_start = console(None, local_state)  # a token is per start: another console's does not work here
    stale = local.post("/console/token", json={"user_id": "1"}, headers={PAGE_HEADER: other_start.headers[PAGE_HEADER]})
    assert stale.status_code == 403
    assert local.post("/console/token", json={"user_id": "10002"}).status_code == 200


def test_a_non_loopback_host_needs_an_explicit_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from herald_dev.cli import main

    assert main(["console", "--host", "0.0.0.0", "--state-file", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert "warning" in err and "--allow-non-loopback" in err


# ---------------------------------------------------------------------- like the product (issue 45, item 4)


def test_a_refusal_of_herald_is_answered_with_the_status_the_api_gives_it(tmp_path: Path) -> None:
    """Every HeraldError was a 409, whatever it said: an unknown job read as a conflict."""
    event = {"event_type": "job.done", "data": {"title": "t", "status": "ok", "target": {"receive_id": "oc_1",
             "receive_id_type": "chat_id"}}}  # fmt: skip
    with deployed_stack("herald-prod") as environment:
        DynamoEventStore(environment["HERALD_EVENTS_TABLE"]).append(
            Lane("nightly"), ExternalEvent.from_content("e1", event), now_ms
        )
        deployed = console("herald-prod", tmp_path / "none.json")
        answers = {
            job_id: deployed.post(f"/console/events/{job_id}/resolve", json={"action": "requeue"})
            for job_id in ("nightly:7", "not a job id", "nightly:1")
        }
    statuses = {job_id: (answer.status_code, answer.json()["code"]) for job_id, answer in answers.items()}
    assert statuses == {
        "nightly:7": (404, "NOT_FOUND"),
        "not a job id": (404, "NOT_FOUND"),  # as `herald-ops events show` finds it: no such job
        "nightly:1": (409, "CONFLICT"),  # queued, not blocked: nothing to resolve
    }
    assert answers["nightly:1"].json()["reason"] == "job_not_blocked"


def test_the_console_acts_in_the_stacks_default_tenant_not_a_hard_coded_one(tmp_path: Path) -> None:
    state = tmp_path / "local.json"
    settings = {"HERALD_DEFAULT_APP_CODE": "acme"}
    state.write_text(json.dumps({"http_url": "http://127.0.0.1:9", "ws_url": "", "fakes": {}, "settings": settings}))
    token = console(None, state).post("/console/token", json={"user_id": "10002"}).json()["token"]
    assert jwt.decode(token, options={"verify_signature": False})["app_code"] == "acme"


class _Together(BaseHTTPRequestHandler):
    """Answers only once two requests are in at the same time (a barrier): one at a time, neither is answered."""

    barrier = threading.Barrier(2, timeout=5)

    def do_GET(self) -> None:
        try:
            self.barrier.wait()
            body, status = b'{"data":{"unread_count":0}}', 200
        except threading.BrokenBarrierError:
            body, status = b'{"error":"alone"}', 504
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_console_calls_the_api_off_its_event_loop_so_one_slow_answer_holds_up_no_other(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Together)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state = tmp_path / "local.json"
    state.write_text(json.dumps({"http_url": f"http://127.0.0.1:{server.server_port}", "ws_url": "", "fakes": {}}))
    app = create_console(Stack(None, None, "us-east-1", state, DEFAULT_TEMPLATE))

    async def two_at_once() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=CONSOLE, timeout=20) as client:
            path = "/console/app/api/v1/inbox/unread-count"
            answers = await asyncio.gather(client.get(path), client.get(path))
        return [answer.status_code for answer in answers]

    try:
        assert asyncio.run(two_at_once()) == [200, 200]
    finally:
        server.shutdown()
