"""`herald`: the developer's command line (an operator's commands are `herald-ops`: herald_ops.cli).

herald local                 the whole stack on this machine (what `make dev` runs)
herald backing               AWS (moto) and the provider fakes alone, to outlive `herald local --backing`
herald token --user 10002    a dev JWT for the local cloud
herald now                   this moment in epoch milliseconds (what `--after-ms` takes)
herald bell --user 10002     a user's inbox bell: returns once connected, then prints each newer count pushed
herald fake im --to 10002 --type im_confirm --after-ms T   wait for what the fake Tencent IM received
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import jwt
from herald_ops.stack import DEFAULT_STATE, DEFAULT_TEMPLATE

from herald.ids import DEFAULT_APP_CODE
from herald_dev.cloud import LocalCloud, LocalCloudConfig, write_state
from herald_dev.fakes import Providers
from herald_dev.local_identity import LOCAL_JWT_SECRET


def _int_env(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _parse_pairs(pairs: list[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"expected KEY=VALUE, got {pair!r}")
        result[key] = value
    return result


def cmd_local(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)-5s %(name)s: %(message)s", datefmt="%H:%M:%S"
    )
    logging.getLogger("botocore").setLevel(logging.WARNING)
    logging.getLogger("pynamodb").setLevel(logging.WARNING)
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)  # pollers sharing a client: pool notes
    # One line a request (the console polls every second, health checks) only when asked for.
    logging.getLogger("httpx").setLevel(logging.INFO if args.request_logs else logging.WARNING)
    backing = json.loads(Path(args.backing).read_text()) if args.backing else None
    config = LocalCloudConfig(
        template_path=Path(args.template).resolve(),
        stack_name=args.stack,
        host=args.host,
        http_port=args.http_port,
        ws_port=args.ws_port,
        moto_port=args.moto_port,
        aws_endpoint=backing["aws_endpoint"] if backing else args.aws_endpoint,
        dynamodb_endpoint=args.dynamodb_endpoint,
        sqs_endpoint=args.sqs_endpoint,
        parameter_overrides=_parse_pairs(args.parameter),
        environment=_parse_pairs(args.env),
        secrets=_parse_pairs(args.secret),
        state_file=Path(args.state_file) if args.state_file else None,
        tencent_im_port=args.tencent_im_port,
        feishu_port=args.feishu_port,
        ttl_sweep_seconds=args.ttl_sweep_seconds,
        engine_turn_seconds=args.engine_turn_seconds,
        sample_owner_port=args.sample_owner_port,
        console_port=args.console_port,
        providers=Providers.from_dict(backing["providers"]) if backing else None,
        data_dir=Path(args.data_dir).resolve() if args.data_dir else None,
        fresh=args.fresh,
    )
    LocalCloud(config).run()
    return 0


def cmd_backing(args: argparse.Namespace) -> int:
    """The state a local cloud keeps outside itself: SQS (moto, corrected as the local cloud's) and the
    provider fakes. A `herald local --backing FILE` can then be killed and restarted (with DynamoDB Local for
    the tables) without losing a queued message or what the fakes received."""
    import signal
    import threading

    from moto.server import ThreadedMotoServer

    from herald_dev import moto_patches
    from herald_dev.fakes import start_fakes

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-5s %(name)s: %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    moto_patches.install()
    moto = ThreadedMotoServer(ip_address=args.host, port=args.moto_port, verbose=False)
    moto.start()
    fakes = start_fakes(args.tencent_im_port, args.feishu_port)
    state = {"aws_endpoint": f"http://{args.host}:{args.moto_port}", "providers": fakes.providers.to_dict()}
    write_state(Path(args.state_file), state)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    logging.getLogger("backing").info("ready: %s", json.dumps(state))
    stop.wait()
    fakes.stop()
    moto.stop()
    Path(args.state_file).unlink(missing_ok=True)
    return 0


def cmd_fake_im(args: argparse.Namespace) -> int:
    """Wait for the first message the local cloud's fake Tencent IM received to `--to` (of `--type`) after
    `--after-ms`, and print it (or one field of its data): how a script waits for a push, never racing it."""
    import urllib.request

    url = _local_state(args)["fakes"]["tencent_im"]
    deadline = time.monotonic() + args.wait
    while True:
        with urllib.request.urlopen(f"{url}/__fake/messages", timeout=10) as response:  # noqa: S310 - loopback fake
            received = json.loads(response.read())
        for message in received:
            data = message["data"]
            if message["to"] != args.to or message["received_at_ms"] <= args.after_ms:
                continue
            if args.type and data.get("type") != args.type:
                continue
            print(data[args.field] if args.field else json.dumps(message, ensure_ascii=False))
            return 0
        if time.monotonic() >= deadline:
            print(f"error: no message to {args.to} within {args.wait:g} s", file=sys.stderr)
            return 1
        time.sleep(0.1)


def cmd_fake_app(args: argparse.Namespace) -> int:
    """Another application on a provider fake (a tenant's own Tencent IM app or Feishu app), its secret the
    local cloud's SSM SecureString `--secret-parameter` (made once, as an operator stores it in AWS; a run
    again keeps it). Prints the app and the parameter's name, never the secret."""
    import secrets

    import boto3

    state = _local_state(args)
    name = "/" + args.secret_parameter.lstrip("/")
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
    if args.fake_command == "im-app":
        fake, app = "tencent_im", {"sdk_app_id": args.sdk_app_id, "admin": args.admin, "secret_key": secret}
    else:
        fake, app = "feishu", {"app_id": args.app_id, "app_secret": secret}
    _post_to_fake(state["fakes"][fake], "/__fake/apps", app)
    shown = {key: value for key, value in app.items() if key not in ("secret_key", "app_secret")}
    print(json.dumps({**shown, "secret_parameter": name}))
    return 0


def _post_to_fake(fake_url: str, path: str, body: object) -> None:
    """A control call to one of the running local cloud's loopback fakes (its URL from the state file)."""
    import urllib.request

    request = urllib.request.Request(  # noqa: S310 - the local cloud's loopback fake
        f"{fake_url}{path}", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    urllib.request.urlopen(request, timeout=10).close()  # noqa: S310 - the local cloud's loopback fake


def cmd_feishu_fail(args: argparse.Namespace) -> int:
    """The fake Feishu refuses the next card sent to `--chat` with a Feishu error code: a permanent one (230002,
    the bot is not in the chat) fails its job at once and blocks its lane until an operator resolves it."""
    fault = {"op": "send", "code": args.code, "status": 400, "receive_id": args.chat}
    _post_to_fake(_local_state(args)["fakes"]["feishu"], "/__fake/faults", [fault])
    print(f"the next card to {args.chat} is refused with Feishu code {args.code}")
    return 0


def cmd_console(args: argparse.Namespace) -> int:
    """The console on its own: against the running local cloud, or a deployed stack (`--stack`)."""
    import uvicorn
    from herald_ops.stack import DEFAULT_TEMPLATE, Stack

    from herald_dev.console.app import create_console

    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    if not loopback:
        print(
            f"warning: --host {args.host} lets other machines reach the console, which acts with your credentials"
            f" ({'the AWS profile of the stack' if args.stack else 'minting any user token'}).",
            file=sys.stderr,
        )
        if not args.allow_non_loopback:
            print("error: pass --allow-non-loopback to serve it there anyway", file=sys.stderr)
            return 2
    stack = Stack(args.stack, args.profile, args.region, Path(args.state_file), DEFAULT_TEMPLATE)
    print(f"Herald console on http://{args.host}:{args.port}/ ({args.stack or 'the local cloud'})")
    app = create_console(stack, extra_host=None if loopback else args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _token(user: str, app: str, roles: str, ttl_s: int) -> str:
    now = int(time.time())
    claims: dict[str, Any] = {"sub": user, "app_code": app, "iat": now, "exp": now + ttl_s}
    if roles:
        claims["roles"] = [role for role in roles.split(",") if role]
    return jwt.encode(claims, os.environ.get("HERALD_JWT_HS256_SECRET", LOCAL_JWT_SECRET), algorithm="HS256")


def cmd_token(args: argparse.Namespace) -> int:
    print(_token(args.user, args.app, args.roles, args.ttl))
    return 0


def cmd_now(_: argparse.Namespace) -> int:
    print(time.time_ns() // 1_000_000)
    return 0


def cmd_bell(args: argparse.Namespace) -> int:
    """Connect to the local WebSocket API as `--user` and return once connected; a child process stays and
    prints each newer count pushed to it until `--until-unread` shows or `--seconds` passed, so a script can go
    on writing and every push it causes reaches the bell (none races the connection)."""
    from herald_dev.bell import ring

    url = _local_state(args)["ws_url"]
    token = _token(args.user, args.app, "", 3600)
    ready_read, ready_write = os.pipe()
    if os.fork() == 0:  # the bell itself, in the background
        os.close(ready_read)
        os._exit(ring(url, token, args.until_unread, args.seconds, ready_write))
    os.close(ready_write)
    connected = os.read(ready_read, 1) == b"1"
    os.close(ready_read)
    return 0 if connected else 1


def _local_state(args: argparse.Namespace) -> dict[str, Any]:
    state_path = Path(args.state_file)
    if not state_path.exists():
        raise SystemExit(f"no local cloud is running ({state_path} not found): start it with `make dev`")
    return json.loads(state_path.read_text())  # type: ignore[no-any-return]


def _state_file_option(parser: argparse.ArgumentParser) -> None:
    """Where the running local cloud writes its endpoints and resources."""
    parser.add_argument("--state-file", default=os.environ.get("HERALD_LOCAL_STATE", str(DEFAULT_STATE)))


def _console_parser(console: argparse.ArgumentParser) -> None:
    console.add_argument("--host", default="127.0.0.1", help="loopback: the console acts with your credentials")
    console.add_argument(
        "--allow-non-loopback",
        action="store_true",
        help="let --host be an address other machines reach (anyone who reaches it acts as you)",
    )
    console.add_argument("--port", type=int, default=_int_env("HERALD_CONSOLE_PORT", 8093))
    console.add_argument("--stack", help="a deployed stack (Operate only; default: the running local cloud)")
    console.add_argument("--profile")
    console.add_argument("--region")
    _state_file_option(console)
    console.set_defaults(run=cmd_console)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="herald", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    local = commands.add_parser("local", help="run the whole stack locally")
    local.add_argument("--template", default=str(DEFAULT_TEMPLATE))
    local.add_argument("--stack", default=os.environ.get("HERALD_LOCAL_STACK", "herald-local"))
    local.add_argument("--host", default="127.0.0.1")
    local.add_argument("--http-port", type=int, default=_int_env("HERALD_HTTP_PORT", 8080))
    local.add_argument("--ws-port", type=int, default=_int_env("HERALD_WS_PORT", 8081))
    local.add_argument("--moto-port", type=int, default=_int_env("HERALD_MOTO_PORT", 4566))
    local.add_argument(
        "--aws-endpoint",
        default=os.environ.get("HERALD_AWS_ENDPOINT"),
        help="use this AWS emulator instead of the embedded moto",
    )
    local.add_argument(
        "--dynamodb-endpoint", default=os.environ.get("HERALD_DYNAMODB_ENDPOINT"), help="e.g. DynamoDB Local"
    )
    local.add_argument(
        "--sqs-endpoint", default=os.environ.get("HERALD_SQS_ENDPOINT"), help="e.g. fauxqs (infra/fauxqs/serve.mjs)"
    )
    local.add_argument(
        "--parameter", action="append", default=[], metavar="NAME=VALUE", help="template parameter override"
    )
    local.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="extra function environment")
    local.add_argument(
        "--secret",
        action="append",
        default=[],
        metavar="PARAMETER=VALUE",
        help="store VALUE as the SSM SecureString a template parameter names (e.g. TencentImSecretKeyParameter),"
        " or, for a PARAMETER starting with /, the SecureString of that name (a tenant's secret)",
    )
    local.add_argument(
        "--tencent-im-port", type=int, default=_int_env("HERALD_TENCENT_IM_PORT", 8090), help="fake Tencent IM (0: any)"
    )
    local.add_argument(
        "--feishu-port", type=int, default=_int_env("HERALD_FEISHU_PORT", 8091), help="fake Feishu (0: any)"
    )
    local.add_argument(
        "--ttl-sweep-seconds",
        type=float,
        default=float(os.environ.get("HERALD_TTL_SWEEP_SECONDS", "10")),
        help="TTL check period",
    )
    local.add_argument(
        "--engine-turn-seconds",
        type=float,
        default=float(os.environ.get("HERALD_ENGINE_TURN_SECONDS", "8")),
        help="how long the reference agent engine works on a turn (0: no engine)",
    )
    local.add_argument(
        "--sample-owner-port",
        type=int,
        default=_int_env("HERALD_SAMPLE_OWNER_PORT", 8092),
        help="the sample owner service, join-group approvals (0: any port, -1: none)",
    )
    local.add_argument(
        "--console-port",
        type=int,
        default=_int_env("HERALD_CONSOLE_PORT", 8093),
        help="the Herald console (-1: none)",
    )
    _state_file_option(local)
    local.add_argument("--backing", help="the state file of a running `herald backing` (AWS and fakes live there)")
    local.add_argument(
        "--data-dir",
        help="keep the embedded AWS's tables, queues and parameters and the fakes' records here between runs"
        " (`make dev`: .herald/dev-data)",
    )
    local.add_argument("--fresh", action="store_true", help="start empty, whatever --data-dir holds")
    local.add_argument(
        "--request-logs",
        action="store_true",
        help="log every HTTP request the local cloud's own parts make (the console's polls, health checks)",
    )
    local.set_defaults(run=cmd_local)

    backing = commands.add_parser("backing", help="AWS (moto) and the provider fakes, outside the local cloud")
    backing.add_argument("--host", default="127.0.0.1")
    backing.add_argument("--moto-port", type=int, required=True)
    backing.add_argument("--tencent-im-port", type=int, default=0)
    backing.add_argument("--feishu-port", type=int, default=0)
    backing.add_argument(
        "--state-file", required=True, help="where to write the endpoints for `herald local --backing`"
    )
    backing.set_defaults(run=cmd_backing)

    _console_parser(commands.add_parser("console", help="the Herald console: watch every flow and operate it"))

    token = commands.add_parser("token", help="print a dev JWT (HS256, the local secret)")
    token.add_argument("--user", required=True)
    token.add_argument("--app", default=DEFAULT_APP_CODE)
    token.add_argument("--roles", default="")
    token.add_argument("--ttl", type=int, default=24 * 3600, help="seconds")
    token.set_defaults(run=cmd_token)

    commands.add_parser("now", help="print this moment in epoch milliseconds").set_defaults(run=cmd_now)

    bell = commands.add_parser("bell", help="a user's inbox bell on the local WebSocket API (returns once connected)")
    bell.add_argument("--user", required=True)
    bell.add_argument("--app", default=DEFAULT_APP_CODE)
    bell.add_argument("--until-unread", type=int, help="stop once a push shows this unread count")
    bell.add_argument("--seconds", type=float, default=30.0, help="stop after this long in any case")
    _state_file_option(bell)
    bell.set_defaults(run=cmd_bell)

    _fake_parsers(commands)
    return parser


def _fake_parsers(commands: Any) -> None:
    fake = commands.add_parser(
        "fake", help="the local cloud's provider fakes: what they received, and tenants' own apps on them"
    ).add_subparsers(dest="fake_command", required=True)
    fake_im = fake.add_parser("im", help="wait for a message the fake Tencent IM received, and print it")
    fake_im.add_argument("--to", required=True, help="the receiving user id")
    fake_im.add_argument("--type", help="the custom message's data.type, e.g. im_confirm")
    fake_im.add_argument("--after-ms", type=int, default=0, help="only messages received after this (epoch ms)")
    fake_im.add_argument("--field", help="print this field of the message's data instead of the whole message")
    fake_im.add_argument("--wait", type=float, default=15.0, help="seconds to wait for it")
    _state_file_option(fake_im)
    fake_im.set_defaults(run=cmd_fake_im)
    im_app = fake.add_parser("im-app", help="another Tencent IM app on the fake (a tenant's), its key in the local SSM")
    im_app.add_argument("--sdk-app-id", type=int, required=True)
    im_app.add_argument("--admin", default="administrator")
    im_app.add_argument("--secret-parameter", required=True, help="the SSM SecureString to store its key as")
    _state_file_option(im_app)
    im_app.set_defaults(run=cmd_fake_app)
    feishu_app = fake.add_parser(
        "feishu-app", help="another Feishu app on the fake (a tenant's), its secret in the local SSM"
    )
    feishu_app.add_argument("--app-id", required=True)
    feishu_app.add_argument("--secret-parameter", required=True, help="the SSM SecureString to store its secret as")
    _state_file_option(feishu_app)
    feishu_app.set_defaults(run=cmd_fake_app)
    feishu_fail = fake.add_parser("feishu-fail", help="the fake Feishu refuses the next card to one chat")
    feishu_fail.add_argument("--chat", required=True, help="the chat (or person) id, e.g. oc_ops")
    feishu_fail.add_argument(
        "--code", type=int, default=230002, help="the Feishu error code (230002: the bot is not in the chat)"
    )
    _state_file_option(feishu_fail)
    feishu_fail.set_defaults(run=cmd_feishu_fail)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
