"""`herald fake ...`: the running local cloud's provider fakes: what they received, tenants' own apps on them, and
a refusal to come."""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from typing import Any

import click

from herald_dev.commands.common import local_state, state_file_option


@click.group("fake", help="the local cloud's provider fakes: what they received, and tenants' own apps on them")
def fake() -> None:
    pass


@fake.command("im", help="wait for a message the fake Tencent IM received, and print it")
@click.option("--to", "receiver", required=True, help="the receiving user id")
@click.option("--type", "data_type", help="the custom message's data.type, e.g. im_confirm")
@click.option("--after-ms", type=int, default=0, help="only messages received after this (epoch ms)")
@click.option("--field", help="print this field of the message's data instead of the whole message")
@click.option("--wait", type=float, default=15.0, help="seconds to wait for it")
@state_file_option
def fake_im(
    receiver: str, data_type: str | None, after_ms: int, field: str | None, wait: float, state_file: str
) -> int:
    """Wait for the first message the local cloud's fake Tencent IM received to `--to` (of `--type`) after
    `--after-ms`, and print it (or one field of its data): how a script waits for a push, never racing it."""
    url = local_state(state_file)["fakes"]["tencent_im"]
    deadline = time.monotonic() + wait
    while True:
        with urllib.request.urlopen(f"{url}/__fake/messages", timeout=10) as response:  # noqa: S310 - loopback fake
            received = json.loads(response.read())
        for message in received:
            data = message["data"]
            if message["to"] != receiver or message["received_at_ms"] <= after_ms:
                continue
            if data_type and data.get("type") != data_type:
                continue
            print(data[field] if field else json.dumps(message, ensure_ascii=False))
            return 0
        if time.monotonic() >= deadline:
            print(f"error: no message to {receiver} within {wait:g} s", file=sys.stderr)
            return 1
        time.sleep(0.1)


@fake.command("im-app", help="another Tencent IM app on the fake (a tenant's), its key in the local SSM")
@click.option("--sdk-app-id", type=int, required=True)
@click.option("--admin", default="administrator")
@click.option("--secret-parameter", required=True, help="the SSM SecureString to store its key as")
@state_file_option
def im_app(sdk_app_id: int, admin: str, secret_parameter: str, state_file: str) -> int:
    return _add_app(
        "tencent_im", {"sdk_app_id": sdk_app_id, "admin": admin}, "secret_key", secret_parameter, state_file
    )


@fake.command("feishu-app", help="another Feishu app on the fake (a tenant's), its secret in the local SSM")
@click.option("--app-id", required=True)
@click.option("--secret-parameter", required=True, help="the SSM SecureString to store its secret as")
@state_file_option
def feishu_app(app_id: str, secret_parameter: str, state_file: str) -> int:
    return _add_app("feishu", {"app_id": app_id}, "app_secret", secret_parameter, state_file)


def _add_app(fake_name: str, app: dict[str, Any], secret_field: str, secret_parameter: str, state_file: str) -> int:
    """Another application on a provider fake (a tenant's own Tencent IM app or Feishu app), its secret the
    local cloud's SSM SecureString `--secret-parameter` (made once, as an operator stores it in AWS; a run
    again keeps it). Prints the app and the parameter's name, never the secret."""
    import secrets

    import boto3

    state = local_state(state_file)
    name = "/" + secret_parameter.lstrip("/")
    ssm = boto3.client(
        "ssm",
        endpoint_url=state["aws_endpoint"],
        region_name=state["region"],
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - the local emulator accepts any credentials
    )
    try:  # run again: the same secret (the functions keep the one they read for minutes)
        secret = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
    except ssm.exceptions.ParameterNotFound:
        secret = secrets.token_urlsafe(24)
        ssm.put_parameter(Name=name, Value=secret, Type="SecureString")
    post_to_fake(state["fakes"][fake_name], "/__fake/apps", {**app, secret_field: secret})
    print(json.dumps({**app, "secret_parameter": name}))
    return 0


def post_to_fake(fake_url: str, path: str, body: object) -> None:
    """A control call to one of the running local cloud's loopback fakes (its URL from the state file)."""
    request = urllib.request.Request(  # noqa: S310 - the local cloud's loopback fake
        f"{fake_url}{path}", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    urllib.request.urlopen(request, timeout=10).close()  # noqa: S310 - the local cloud's loopback fake


@fake.command("feishu-fail", help="the fake Feishu refuses the next card to one chat")
@click.option("--chat", required=True, help="the chat (or person) id, e.g. oc_ops")
@click.option("--code", type=int, default=230002, help="the Feishu error code (230002: the bot is not in the chat)")
@state_file_option
def feishu_fail(chat: str, code: int, state_file: str) -> int:
    """The fake Feishu refuses the next card sent to `--chat` with a Feishu error code: a permanent one (230002,
    the bot is not in the chat) fails its job at once and blocks its lane until an operator resolves it."""
    fault = {"op": "send", "code": code, "status": 400, "receive_id": chat}
    post_to_fake(local_state(state_file)["fakes"]["feishu"], "/__fake/faults", [fault])
    print(f"the next card to {chat} is refused with Feishu code {code}")
    return 0
