"""The console's server without a browser: what it refuses (tests/browser/test_console.py clicks through the
rest against a local cloud)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from herald_ops.stack import DEFAULT_TEMPLATE, Stack

from herald_dev.console.app import create_console


def console(stack_name: str | None, state: Path) -> TestClient:
    return TestClient(create_console(Stack(stack_name, None, "us-east-1", state, DEFAULT_TEMPLATE)))


def test_against_a_deployed_stack_only_operate_runs_no_token_no_fake_no_app_call(tmp_path: Path) -> None:
    deployed = console("herald-prod", tmp_path / "none.json")
    assert deployed.get("/console/config").json() == {"stack": "herald-prod", "local": False}
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
