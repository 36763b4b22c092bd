"""`herald`: the developer and operator command line.

herald local                 the whole stack on this machine (what `make dev` runs)
herald backing               AWS (moto) and the provider fakes alone, to outlive `herald local --backing`
herald token --user 10002    a dev JWT for the local cloud
herald fake im --to 10002 --type im_confirm --after-ms T   wait for what the fake Tencent IM received
herald keys create|list|rotate|revoke   service keys (a new key is printed once), local or --stack
herald ops events ...        blocked services, UNKNOWN jobs, and their resolution
herald ops dlq ...           dead-letter queues: list, peek, redrive (order kept, resumable), purge
herald ops confirms ...      confirms past their expiry or lease, failed pushes, and their repair
herald ops preflight --stack NAME   SSM secrets, identity provider, provider ids and KMS key of a stack
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

import boto3
import jwt

from herald.ids import DEFAULT_APP_CODE
from herald_dev.cloud import LOCAL_JWT_SECRET, LocalCloud, LocalCloudConfig
from herald_dev.fakes import Providers

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TEMPLATE = REPO_ROOT / "template.yaml"
DEFAULT_STATE = REPO_ROOT / ".herald" / "local.json"


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
        providers=Providers.from_dict(backing["providers"]) if backing else None,
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
    Path(args.state_file).write_text(json.dumps(state))
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


def cmd_token(args: argparse.Namespace) -> int:
    now = int(time.time())
    claims: dict[str, Any] = {"sub": args.user, "app_code": args.app, "iat": now, "exp": now + args.ttl}
    if args.roles:
        claims["roles"] = [role for role in args.roles.split(",") if role]
    secret = os.environ.get("HERALD_JWT_HS256_SECRET", LOCAL_JWT_SECRET)
    print(jwt.encode(claims, secret, algorithm="HS256"))
    return 0


def _local_state(args: argparse.Namespace) -> dict[str, Any]:
    state_path = Path(args.state_file)
    if not state_path.exists():
        raise SystemExit(
            f"no local cloud is running ({state_path} not found): start it with `make dev`, or pass --stack"
        )
    return json.loads(state_path.read_text())  # type: ignore[no-any-return]


def _client(args: argparse.Namespace, service: str) -> Any:
    """A client of the deployed stack's account (--stack) or of the running local cloud's endpoints."""
    if args.stack:
        return boto3.Session(profile_name=args.profile, region_name=args.region).client(service)  # type: ignore[call-overload]
    state = _local_state(args)
    endpoint = state["aws_endpoint"]
    if service in ("dynamodb", "dynamodbstreams") and state.get("dynamodb_endpoint"):
        endpoint = state["dynamodb_endpoint"]
    if service == "sqs" and state.get("sqs_endpoint"):
        endpoint = state["sqs_endpoint"]
    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=endpoint,
        region_name=state["region"],
        aws_access_key_id="local",
        aws_secret_access_key="local",  # noqa: S106 - the local emulators accept any credentials
    )


def _physical_ids(args: argparse.Namespace) -> dict[str, str]:
    """Logical id -> physical id (a table's name, a queue's URL) of the deployed stack or the local cloud."""
    if args.stack:
        pages = _client(args, "cloudformation").get_paginator("list_stack_resources").paginate(StackName=args.stack)
        return {
            r["LogicalResourceId"]: r["PhysicalResourceId"] for page in pages for r in page["StackResourceSummaries"]
        }
    return {logical_id: str(attributes["Ref"]) for logical_id, attributes in _local_state(args)["resources"].items()}


def _settings(args: argparse.Namespace) -> Any:
    """The settings the stack's functions run with: the deployed HTTP function's environment (--stack), or
    the running local cloud's. Operators' tools build Herald's services exactly as the functions do."""
    from herald.settings import Settings

    if args.stack:
        function = _physical_ids(args)["HttpApiFunction"]
        configuration = _client(args, "lambda").get_function_configuration(FunctionName=function)
        return Settings.from_env(configuration["Environment"]["Variables"])
    return Settings.from_env(_local_state(args)["settings"])


def _container(args: argparse.Namespace) -> Any:
    """Herald's parts, built from the stack's settings, talking to its tables and queues."""
    from herald.container import Clients, Container

    return Container(_settings(args), Clients(dynamodb=_client(args, "dynamodb"), sqs=_client(args, "sqs")))


def _service_keys(args: argparse.Namespace) -> Any:
    from herald.auth.wiring import service_keys

    return service_keys(_container(args))


def _refused(exc: Any) -> int:
    print(f"error: {exc.message}", file=sys.stderr)
    return 2


def _key_view(record: Any) -> dict[str, Any]:
    """A key as an operator sees it: never its secret or hash."""
    return {
        "key_id": record.key_id,
        "service_id": record.service_id,
        "capabilities": sorted(record.capabilities),
        "app_codes": sorted(record.app_codes),
        "targets": sorted(record.targets),
        "allow_markdown": record.allow_markdown,
        "created_at_ms": record.created_at_ms,
        "expires_at_ms": record.expires_at_ms,
        "revoked_at_ms": record.revoked_at_ms,
        "last_used_at_ms": record.last_used_at_ms,
        "rotated_from": record.rotated_from,
    }


def _print_new_key(key: str, record: Any) -> None:
    print(key)
    print(
        f"# {json.dumps(_key_view(record))} (the key is shown once; only its hash is stored)",
        file=sys.stderr,
    )


def cmd_keys_create(args: argparse.Namespace) -> int:
    from herald.clock import now_ms
    from herald.errors import HeraldError

    expires = now_ms() + args.expires_in_days * 86_400_000 if args.expires_in_days else None
    try:
        key, record = _service_keys(args).create_key(
            args.service, args.cap, args.app_code, args.target, expires, allow_markdown=args.allow_markdown
        )
    except HeraldError as exc:
        return _refused(exc)
    _print_new_key(key, record)
    return 0


def cmd_keys_list(args: argparse.Namespace) -> int:
    for record in _service_keys(args).list_keys(args.service):
        print(json.dumps(_key_view(record)))
    return 0


def cmd_keys_rotate(args: argparse.Namespace) -> int:
    from herald.errors import HeraldError

    revoke_in = args.revoke_old_in * 1000 if args.revoke_old_in is not None else None
    try:
        key, record = _service_keys(args).rotate(args.key_id, revoke_in)
    except HeraldError as exc:
        return _refused(exc)
    _print_new_key(key, record)
    return 0


def cmd_keys_revoke(args: argparse.Namespace) -> int:
    from herald.errors import HeraldError

    try:
        record = _service_keys(args).revoke(args.key_id, in_ms=args.in_seconds * 1000)
    except HeraldError as exc:
        return _refused(exc)
    print(json.dumps(_key_view(record)))
    return 0


def _event_operations(args: argparse.Namespace) -> Any:
    from herald.events.wiring import operations

    return operations(_container(args))


def cmd_events_blocked(args: argparse.Namespace) -> int:
    from herald.clock import now_ms
    from herald.events.operations import describe

    now = now_ms()
    for job, head in _event_operations(args).blocked():
        if args.command_name == "unknown" and str(job.status) != "unknown":
            continue
        row = describe(job)
        row["age_s"] = round((now - job.blocked_at_ms) / 1000, 1)
        row["waiting_behind"] = max(0, head.next_seq - job.seq)
        print(json.dumps(row, ensure_ascii=False))
    return 0


def cmd_events_resolve(args: argparse.Namespace) -> int:
    from herald.errors import HeraldError
    from herald.events.operations import describe

    operations = _event_operations(args)
    try:
        if args.sent:
            job = operations.sent(args.job, args.sent, args.by, args.note)
        elif args.requeue:
            job = operations.requeue(args.job, args.by, args.note)
        else:
            job = operations.skip(args.job, args.by, args.note)
    except HeraldError as exc:
        return _refused(exc)
    print(json.dumps(describe(job), ensure_ascii=False))
    return 0


def _dead_letter_queue(args: argparse.Namespace, name: str | None = None) -> list[Any]:
    from herald_dev.dlq import dead_letter_queues
    from herald_dev.template import StackTemplate

    template = StackTemplate.from_file(Path(args.template), parameter_overrides={"Stage": "local"})
    queues = dead_letter_queues(template, _physical_ids(args))
    if name is None:
        return queues
    chosen = [q for q in queues if q.logical_id.lower() == name.lower()]
    if not chosen:
        raise SystemExit(f"no dead-letter queue {name!r}; one of: {', '.join(q.logical_id for q in queues)}")
    return chosen


def cmd_dlq_list(args: argparse.Namespace) -> int:
    from herald.clock import now_ms
    from herald_dev.dlq import describe

    sqs = _client(args, "sqs")
    for dlq in _dead_letter_queue(args):
        print(json.dumps(describe(sqs, dlq, now_ms(), wait_s=args.wait)))
    return 0


def cmd_dlq_peek(args: argparse.Namespace) -> int:
    from herald_dev.dlq import peek, peeked_view

    (dlq,) = _dead_letter_queue(args, args.dlq)
    seen = peek(_client(args, "sqs"), dlq, args.max, wait_s=args.wait)
    for message in seen.messages:
        print(json.dumps(peeked_view(message), ensure_ascii=False))
    print(f"# {len(seen.messages)} shown of {seen.depth} in {dlq.logical_id}", file=sys.stderr)
    if seen.not_shown and len(seen.messages) < args.max:
        print(
            f"# {seen.not_shown} not shown: in flight elsewhere, or behind the shown ones of their FIFO group",
            file=sys.stderr,
        )
    return 0


def cmd_dlq_redrive(args: argparse.Namespace) -> int:
    from herald_dev.dlq import Journal, Redrive, plan

    (dlq,) = _dead_letter_queue(args, args.dlq)
    sqs = _client(args, "sqs")
    if not dlq.redrivable:
        return _refused_text(f"{dlq.logical_id} holds {dlq.kind}: nothing to send back (see README, Operating)")
    if not args.execute:
        print(json.dumps({"dry_run": True, **plan(sqs, dlq, args.max, wait_s=args.wait)}))
        print("# nothing moved: add --execute to redrive", file=sys.stderr)
        return 0
    journal_path = Path(
        args.journal or REPO_ROOT / ".herald" / "redrive" / f"{args.stack or 'local'}-{dlq.logical_id}.json"
    )
    redrive = Redrive(
        sqs, dlq, Journal.open(journal_path), rate_per_s=args.rate, visibility_s=args.visibility, wait_s=args.wait
    )
    print(json.dumps({"dlq": dlq.logical_id, "to": dlq.source_logical_id, **redrive.run(args.max).as_dict()}))
    return 0


def cmd_dlq_purge(args: argparse.Namespace) -> int:
    from herald_dev.dlq import purge

    (dlq,) = _dead_letter_queue(args, args.dlq)
    if not args.yes:
        answer = input(f"Delete every message in {dlq.logical_id}? Type its name to confirm: ")
        if answer.strip() != dlq.logical_id:
            return _refused_text("not confirmed: nothing deleted")
    purge(_client(args, "sqs"), dlq)
    print(json.dumps({"dlq": dlq.logical_id, "purged": True}))
    return 0


def _refused_text(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _wait_option(parser: Any) -> None:
    from herald_dev.dlq import WAIT_SECONDS

    parser.add_argument(
        "--wait",
        type=int,
        default=WAIT_SECONDS,
        choices=range(21),
        metavar="0-20",
        help=f"seconds each receive waits for messages (long polling; default {WAIT_SECONDS})",
    )


def _add_dlq_parsers(ops: Any) -> None:
    dlq = ops.add_parser("dlq", help="dead-letter queues").add_subparsers(dest="dlq_command", required=True)
    listing = dlq.add_parser("list", help="every DLQ: depth, oldest message age, source")
    _wait_option(listing)
    _stack_options(listing)
    listing.set_defaults(run=cmd_dlq_list)
    peek = dlq.add_parser("peek", help="messages with their group, receive count and failure reason (left in place)")
    peek.add_argument("dlq", help="its logical id, e.g. EventsDeadLetters")
    peek.add_argument("--max", type=int, default=10)
    _wait_option(peek)
    _stack_options(peek)
    peek.set_defaults(run=cmd_dlq_peek)
    redrive = dlq.add_parser("redrive", help="plan (default) or move messages back to their queue, group order kept")
    redrive.add_argument("dlq")
    redrive.add_argument("--execute", action="store_true", help="move them (without it: print the plan only)")
    redrive.add_argument("--max", type=int, default=1000, help="at most this many messages")
    redrive.add_argument("--rate", type=float, default=10.0, help="messages per second")
    redrive.add_argument("--visibility", type=int, default=60, help="seconds a batch stays hidden while moved")
    redrive.add_argument("--journal", help="where progress is kept (default .herald/redrive/<stack>-<dlq>.json)")
    _wait_option(redrive)
    _stack_options(redrive)
    redrive.set_defaults(run=cmd_dlq_redrive)
    purge = dlq.add_parser("purge", help="delete every message (asks first)")
    purge.add_argument("dlq")
    purge.add_argument("--yes", action="store_true", help="do not ask")
    _stack_options(purge)
    purge.set_defaults(run=cmd_dlq_purge)


def _confirm_operations(args: argparse.Namespace) -> Any:
    from herald.confirms.wiring import confirm_operations

    return confirm_operations(_container(args))


def cmd_confirms_stuck(args: argparse.Namespace) -> int:
    from herald.clock import now_ms
    from herald.confirms.models import view

    operations = _confirm_operations(args)
    now = now_ms()
    for confirm in operations.stuck(args.grace * 1000):
        due = confirm.expire_at_ms if str(confirm.status) == "pending" else confirm.lock_until_ms
        why = "past its expiry" if str(confirm.status) == "pending" else "past its lease"
        print(json.dumps({"app_code": confirm.app_code, **view(confirm), "why": why, "overdue_s": (now - due) / 1000}))
    for delivery in operations.failed_deliveries():
        print(
            json.dumps(
                {
                    "app_code": delivery.app_code,
                    "confirm_id": delivery.confirm_id,
                    "push": delivery.key,
                    "why": "push failed for good",
                    "last_error": delivery.last_error,
                    "attempts": delivery.attempts,
                }
            )
        )
    return 0


def cmd_confirms_repair(args: argparse.Namespace) -> int:
    from herald.confirms.models import view
    from herald.errors import HeraldError

    try:
        repaired = _confirm_operations(args).repair(args.app or _settings(args).default_app_code, args.confirm_id)
    except HeraldError as exc:
        return _refused(exc)
    print(json.dumps({**view(repaired.confirm), "resent": list(repaired.resent)}))
    return 0


def _add_confirms_parsers(ops: Any) -> None:
    confirms = ops.add_parser("confirms", help="action confirms").add_subparsers(dest="confirms_command", required=True)
    stuck = confirms.add_parser("stuck", help="confirms the janitor did not settle, and pushes that failed for good")
    stuck.add_argument("--grace", type=int, default=120, help="seconds past expiry/lease before it counts as stuck")
    _stack_options(stuck)
    stuck.set_defaults(run=cmd_confirms_stuck)
    repair = confirms.add_parser("repair", help="settle a confirm from its owner now and resend its failed pushes")
    repair.add_argument("confirm_id")
    repair.add_argument("--app", help="the confirm's app_code (default: the stack's default_app_code)")
    _stack_options(repair)
    repair.set_defaults(run=cmd_confirms_repair)


def _state_file_option(parser: argparse.ArgumentParser) -> None:
    """Where the running local cloud writes its endpoints and resources."""
    parser.add_argument("--state-file", default=os.environ.get("HERALD_LOCAL_STATE", str(DEFAULT_STATE)))


def _stack_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stack", help="a deployed stack (default: the running local cloud)")
    parser.add_argument("--profile")
    parser.add_argument("--region")
    _state_file_option(parser)
    parser.add_argument("--template", default=str(DEFAULT_TEMPLATE), help="where the DLQs are declared")


def _add_keys_parsers(commands: Any) -> None:
    keys = commands.add_parser("keys", help="service keys").add_subparsers(dest="keys_command", required=True)
    create = keys.add_parser("create", help="create a key (printed once) with rights fixed for its life")
    create.add_argument("--service", required=True)
    create.add_argument("--cap", action="append", required=True, help="route prefix, e.g. /events/external")
    create.add_argument(
        "--app-code",
        action="append",
        default=[],
        help="a tenant the key acts for (repeatable; default: default_app_code)",
    )
    create.add_argument(
        "--target", action="append", default=[], help="allowed external-event target, e.g. chat_id:oc_xxx"
    )
    create.add_argument("--expires-in-days", type=int, default=0, help="0: never expires")
    create.add_argument("--allow-markdown", action="store_true", help="its cards may opt into Feishu markdown")
    create.set_defaults(run=cmd_keys_create)
    listing = keys.add_parser("list", help="every key (or one service's): rights, expiry, revocation, last use")
    listing.add_argument("--service")
    listing.set_defaults(run=cmd_keys_list)
    rotate = keys.add_parser("rotate", help="a new key with the same rights; the old one works until revoked")
    rotate.add_argument("key_id")
    rotate.add_argument("--revoke-old-in", type=int, metavar="SECONDS", help="revoke the old key this much later")
    rotate.set_defaults(run=cmd_keys_rotate)
    revoke = keys.add_parser("revoke", help="stop a key (refused everywhere within the key cache time)")
    revoke.add_argument("key_id")
    revoke.add_argument("--in-seconds", type=int, default=0, help="revoke later instead of now")
    revoke.set_defaults(run=cmd_keys_revoke)
    for command in (create, listing, rotate, revoke):
        _stack_options(command)


def cmd_preflight(args: argparse.Namespace) -> int:
    from herald_dev.preflight import preflight

    if not args.stack:
        print("error: preflight checks a deployed stack: pass --stack NAME", file=sys.stderr)
        return 2
    findings = preflight(args.stack, _client(args, "cloudformation"), _client(args, "ssm"), _client(args, "kms"))
    for finding in findings:
        print(json.dumps(finding.to_dict()))
    return 0 if all(finding.ok for finding in findings) else 1


def _add_ops_parsers(commands: Any) -> None:
    ops = commands.add_parser("ops", help="operators' commands").add_subparsers(dest="area", required=True)
    check = ops.add_parser("preflight", help="what a deployed stack needs: SSM secrets, identity provider, ids")
    _stack_options(check)
    check.set_defaults(run=cmd_preflight)
    _add_dlq_parsers(ops)
    _add_confirms_parsers(ops)
    events = ops.add_parser("events", help="external events").add_subparsers(dest="command_name", required=True)
    for name, text in (
        ("blocked", "services stopped by a failed or UNKNOWN job: the job, why, age, how many wait behind it"),
        ("unknown", "jobs whose side effect may or may not have happened (check Feishu, then resolve)"),
    ):
        listing = events.add_parser(name, help=text)
        _stack_options(listing)
        listing.set_defaults(run=cmd_events_blocked)
    resolve = events.add_parser("resolve", help="resolve a blocked job (recorded with who and when)")
    resolve.add_argument("job", help="SERVICE:SEQ, as the listings print it")
    action = resolve.add_mutually_exclusive_group(required=True)
    action.add_argument("--sent", metavar="MESSAGE_ID", help="it did arrive in Feishu: record this message id")
    action.add_argument(
        "--requeue", action="store_true", help="run it again (it did not arrive, or the cause is fixed)"
    )
    action.add_argument("--skip", action="store_true", help="give up on it; the service goes on")
    resolve.add_argument("--by", default=os.environ.get("USER", "operator"), help="who resolves (recorded)")
    resolve.add_argument("--note", default="", help="why (recorded)")
    _stack_options(resolve)
    resolve.set_defaults(run=cmd_events_resolve)


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
        help="store VALUE as the SSM SecureString a template parameter names (e.g. TencentImSecretKeyParameter)",
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
    _state_file_option(local)
    local.add_argument("--backing", help="the state file of a running `herald backing` (AWS and fakes live there)")
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

    token = commands.add_parser("token", help="print a dev JWT (HS256, the local secret)")
    token.add_argument("--user", required=True)
    token.add_argument("--app", default=DEFAULT_APP_CODE)
    token.add_argument("--roles", default="")
    token.add_argument("--ttl", type=int, default=24 * 3600, help="seconds")
    token.set_defaults(run=cmd_token)

    fake = commands.add_parser("fake", help="what the local cloud's provider fakes received").add_subparsers(
        dest="fake_command", required=True
    )
    fake_im = fake.add_parser("im", help="wait for a message the fake Tencent IM received, and print it")
    fake_im.add_argument("--to", required=True, help="the receiving user id")
    fake_im.add_argument("--type", help="the custom message's data.type, e.g. im_confirm")
    fake_im.add_argument("--after-ms", type=int, default=0, help="only messages received after this (epoch ms)")
    fake_im.add_argument("--field", help="print this field of the message's data instead of the whole message")
    fake_im.add_argument("--wait", type=float, default=15.0, help="seconds to wait for it")
    _state_file_option(fake_im)
    fake_im.set_defaults(run=cmd_fake_im)

    _add_keys_parsers(commands)
    _add_ops_parsers(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
