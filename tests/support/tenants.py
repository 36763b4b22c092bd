"""Tenants with their own providers on a running local cloud, registered the way an operator does it, and the
fakes' records of what reached each."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from typing import Any

import httpx

from herald.auth.service_keys import ServiceKeys
from tests.support.local_cloud import REPO, LocalCloudProcess
from tests.support.tokens import make_token


class Tenant:
    """A tenant with its own Tencent IM app and Feishu app, registered the way an operator does it."""

    def __init__(self, cloud: LocalCloudProcess, n: int) -> None:
        tag = secrets.token_hex(3)
        self.cloud = cloud
        self.app_code = f"t{n}-{tag}"
        self.sdk_app_id = 1_400_100_000 + secrets.randbelow(800_000)
        self.im_key = f"im-key-{secrets.token_hex(8)}"
        self.feishu_app = f"cli_t{n}{tag}"
        self.feishu_secret = f"feishu-secret-{secrets.token_hex(8)}"
        ssm = cloud.client("ssm")
        for name, value in ((self.im_parameter, self.im_key), (self.feishu_parameter, self.feishu_secret)):
            ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)
        app = {"sdk_app_id": self.sdk_app_id, "admin": "administrator", "secret_key": self.im_key}
        httpx.post(f"{cloud.fake_url('tencent_im')}/__fake/apps", json=app).raise_for_status()
        app = {"app_id": self.feishu_app, "app_secret": self.feishu_secret}
        httpx.post(f"{cloud.fake_url('feishu')}/__fake/apps", json=app).raise_for_status()
        ops(
            cloud,
            "tenants",
            "set",
            self.app_code,
            "--tencent-im-sdk-app-id",
            str(self.sdk_app_id),
            "--tencent-im-secret-parameter",
            self.im_parameter,
            "--feishu-app-id",
            self.feishu_app,
            "--feishu-secret-parameter",
            self.feishu_parameter,
            "--display-name",
            f"tenant {n}",
        )

    @property
    def im_parameter(self) -> str:
        return f"/herald/tenants/{self.app_code}/tencent-im-key"

    @property
    def feishu_parameter(self) -> str:
        return f"/herald/tenants/{self.app_code}/feishu-secret"

    def invite(self, target: str, inviter: str = "10001") -> None:
        http = httpx.Client(base_url=self.cloud.http_url, timeout=30)
        headers = {"Authorization": f"Bearer {make_token(inviter, self.app_code)}"}
        answer = http.post(
            "/api/v1/role-invitations", json={"invitation_type": "host", "target_user_id": target}, headers=headers
        )
        assert answer.status_code == 200, answer.text

    def post_event(self, keys: ServiceKeys, title: str) -> None:
        key, _ = keys.create_key(
            f"ci-{self.app_code}", ["/events/external"], [self.app_code], targets=["chat_id:oc_ops"]
        )
        body = {
            "event_id": title.replace(" ", "-"),
            "event_type": "build",
            "data": {"title": title, "status": "ok", "target": {"receive_id": "oc_ops", "receive_id_type": "chat_id"}},
        }
        answer = httpx.post(
            f"{self.cloud.http_url}/events/external", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30
        )
        assert answer.status_code == 202, answer.text


def ops(cloud: LocalCloudProcess, *args: str) -> list[dict[str, Any]]:
    command = [sys.executable, "-m", "herald_ops.cli", *args, "--state-file", str(cloud.state_file), "--json"]
    result = subprocess.run(command, check=False, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def pushes(cloud: LocalCloudProcess, to: str) -> list[dict[str, Any]]:
    messages = httpx.get(f"{cloud.fake_url('tencent_im')}/__fake/messages", timeout=30).json()
    return [m for m in messages if m["to"] == to]


def cards(cloud: LocalCloudProcess, title: str) -> list[dict[str, Any]]:
    return [
        e for e in httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages", timeout=30).json() if e["title"] == title
    ]


def outage(cloud: LocalCloudProcess, provider: str, app: dict[str, Any], status: int) -> None:
    httpx.post(f"{cloud.fake_url(provider)}/__fake/outage", json={**app, "status": status}).raise_for_status()


def hang(cloud: LocalCloudProcess, provider: str, app: dict[str, Any]) -> None:
    """The app accepts every call and never answers, until `outage(..., 0)` ends it."""
    httpx.post(f"{cloud.fake_url(provider)}/__fake/outage", json={**app, "hang": True}).raise_for_status()
