"""`herald local` (the whole stack on this machine, what `make dev` runs) and `herald backing` (AWS and the
provider fakes alone, to outlive a `herald local --backing` that is killed and restarted)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from herald_ops.stack import DEFAULT_TEMPLATE

from herald_dev.already_running import refusal
from herald_dev.cloud import LocalCloud, write_state
from herald_dev.commands.common import env_int, state_file_option
from herald_dev.config import LocalCloudConfig
from herald_dev.fakes import Providers

# What the functions log as under `--log-format text`: readable lines, and no metrics (EMF JSON lines are for
# CloudWatch, not for a person reading `make dev`).
READABLE_LOGS = {"text": {"HERALD_LOG_FORMAT": "text", "POWERTOOLS_METRICS_DISABLED": "true"}}


def _pairs(pairs: Iterable[str]) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}")
        result[key] = value
    return result


def _env(name: str, default: str | None = None) -> Callable[[], str | None]:
    """An option's default from the environment, read when the command runs."""
    return lambda: os.environ.get(name, default)


@click.command("local", help="run the whole stack locally")
@click.option("--template", default=str(DEFAULT_TEMPLATE))
@click.option("--stack", default=_env("HERALD_LOCAL_STACK", "herald-local"))
@click.option("--host", default="127.0.0.1")
@click.option("--http-port", type=int, default=env_int("HERALD_HTTP_PORT", 8080))
@click.option("--ws-port", type=int, default=env_int("HERALD_WS_PORT", 8081))
@click.option("--moto-port", type=int, default=env_int("HERALD_MOTO_PORT", 4566))
@click.option(
    "--aws-endpoint", default=_env("HERALD_AWS_ENDPOINT"), help="use this AWS emulator, not the embedded moto"
)
@click.option("--dynamodb-endpoint", default=_env("HERALD_DYNAMODB_ENDPOINT"), help="e.g. DynamoDB Local")
@click.option("--sqs-endpoint", default=_env("HERALD_SQS_ENDPOINT"), help="e.g. fauxqs (infra/fauxqs/serve.mjs)")
@click.option("--parameter", multiple=True, metavar="NAME=VALUE", help="template parameter override")
@click.option("--env", multiple=True, metavar="NAME=VALUE", help="extra function environment")
@click.option(
    "--secret",
    multiple=True,
    metavar="PARAMETER=VALUE",
    help="store VALUE as the SSM SecureString a template parameter names (e.g. TencentImSecretKeyParameter),"
    " or, for a PARAMETER starting with /, the SecureString of that name (a tenant's secret)",
)
@click.option(
    "--tencent-im-port", type=int, default=env_int("HERALD_TENCENT_IM_PORT", 8090), help="fake Tencent IM (0: any)"
)
@click.option("--feishu-port", type=int, default=env_int("HERALD_FEISHU_PORT", 8091), help="fake Feishu (0: any)")
@click.option(
    "--ttl-sweep-seconds",
    type=float,
    default=lambda: float(os.environ.get("HERALD_TTL_SWEEP_SECONDS", "10")),
    help="TTL check period",
)
@click.option(
    "--engine-turn-seconds",
    type=float,
    default=lambda: float(os.environ.get("HERALD_ENGINE_TURN_SECONDS", "8")),
    help="how long the reference agent engine works on a turn (0: no engine)",
)
@click.option(
    "--sample-owner-port",
    type=int,
    default=env_int("HERALD_SAMPLE_OWNER_PORT", 8092),
    help="the sample owner service, join-group approvals (0: any port, -1: none)",
)
@click.option(
    "--console-port", type=int, default=env_int("HERALD_CONSOLE_PORT", 8093), help="the Herald console (-1: none)"
)
@state_file_option
@click.option("--backing", help="the state file of a running `herald backing` (AWS and fakes live there)")
@click.option(
    "--data-dir",
    help="keep the embedded AWS's tables, queues and parameters and the fakes' records here between runs"
    " (`make dev`: .herald/dev-data)",
)
@click.option("--fresh", is_flag=True, help="start empty, whatever --data-dir holds")
@click.option(
    "--aws-faults",
    metavar="SPEC",
    help="put a fault-injecting proxy between the functions and AWS: rate=0.03,seed=7[,kinds=throttle+internal+"
    "conflict+unavailable+lost-reply] (herald_dev.fault_proxy)",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=_env("HERALD_LOG_FORMAT", "json"),
    help="the functions' logs: a line a person reads for each record (text: `make dev`), or Powertools' JSON as in"
    " AWS, with its metrics (json)",
)
@click.option(
    "--request-logs",
    is_flag=True,
    help="log every HTTP request the local cloud's own parts make (the console's polls, health checks)",
)
def local(**given: Any) -> int:
    _quiet_logs(given["request_logs"])
    backing = json.loads(Path(given["backing"]).read_text()) if given["backing"] else None
    config = LocalCloudConfig(
        template_path=Path(given["template"]).resolve(),
        stack_name=given["stack"],
        host=given["host"],
        http_port=given["http_port"],
        ws_port=given["ws_port"],
        moto_port=given["moto_port"],
        aws_endpoint=backing["aws_endpoint"] if backing else given["aws_endpoint"],
        dynamodb_endpoint=given["dynamodb_endpoint"],
        sqs_endpoint=given["sqs_endpoint"],
        parameter_overrides=_pairs(given["parameter"]),
        environment={**_pairs(given["env"]), **READABLE_LOGS.get(given["log_format"], {})},
        secrets=_pairs(given["secret"]),
        state_file=Path(given["state_file"]) if given["state_file"] else None,
        tencent_im_port=given["tencent_im_port"],
        feishu_port=given["feishu_port"],
        ttl_sweep_seconds=given["ttl_sweep_seconds"],
        engine_turn_seconds=given["engine_turn_seconds"],
        sample_owner_port=given["sample_owner_port"],
        console_port=given["console_port"],
        providers=Providers.from_dict(backing["providers"]) if backing else None,
        data_dir=Path(given["data_dir"]).resolve() if given["data_dir"] else None,
        fresh=given["fresh"],
    )
    if (why := refusal(config)) is not None:
        click.echo(f"herald local: {why}", err=True)
        return 1
    if not given["aws_faults"]:
        LocalCloud(config).run()
        return 0
    return _run_with_faults(config, given["aws_faults"])


def _run_with_faults(config: LocalCloudConfig, spec: str) -> int:
    """The local cloud with its functions' DynamoDB and SQS calls through a fault proxy (its own pollers, as
    Lambda's event source mappings, reach AWS directly); what was injected is logged when it stops."""
    from herald_dev.fault_proxy import FaultProxy, FaultSpec

    try:
        faults = FaultSpec.parse(spec)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--aws-faults") from error
    aws = config.aws_endpoint or f"http://{config.host}:{config.moto_port}"
    upstreams = {"*": aws, "dynamodb": config.dynamodb_endpoint or aws, "sqs": config.sqs_endpoint or aws}
    proxy = FaultProxy(upstreams, faults, config.host).start()
    logging.getLogger("herald_dev.fault_proxy").info("fault proxy on %s (%s)", proxy.url, spec)
    try:
        LocalCloud(replace(config, environment={**config.environment, **proxy.environment})).run()
    finally:
        proxy.stop()
        logging.getLogger("herald_dev.fault_proxy").info(proxy.summary())
    return 0


def _quiet_logs(request_logs: bool) -> None:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)-5s %(name)s: %(message)s", datefmt="%H:%M:%S"
    )
    logging.getLogger("botocore").setLevel(logging.WARNING)
    logging.getLogger("pynamodb").setLevel(logging.WARNING)
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)  # pollers sharing a client: pool notes
    # One line a request (the console polls every second, health checks) only when asked for.
    logging.getLogger("httpx").setLevel(logging.INFO if request_logs else logging.WARNING)


@click.command("backing", help="AWS (moto) and the provider fakes, outside the local cloud")
@click.option("--host", default="127.0.0.1")
@click.option("--moto-port", type=int, required=True)
@click.option("--tencent-im-port", type=int, default=0)
@click.option("--feishu-port", type=int, default=0)
@click.option("--state-file", required=True, help="where to write the endpoints for `herald local --backing`")
def backing(host: str, moto_port: int, tencent_im_port: int, feishu_port: int, state_file: str) -> int:
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
    moto = ThreadedMotoServer(ip_address=host, port=moto_port, verbose=False)
    moto.start()
    fakes = start_fakes(tencent_im_port, feishu_port)
    state = {"aws_endpoint": f"http://{host}:{moto_port}", "providers": fakes.providers.to_dict()}
    write_state(Path(state_file), state)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    logging.getLogger("backing").info("ready: %s", json.dumps(state))
    stop.wait()
    fakes.stop()
    moto.stop()
    Path(state_file).unlink(missing_ok=True)
    return 0
