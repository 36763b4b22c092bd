"""`herald webhooks receive`: a partner's status webhook endpoint on loopback, to try Herald's webhooks with."""

from __future__ import annotations

import json
import sys
import time

import click
from herald_ops.output import printable

from herald_dev.webhook_receiver import WebhookReceiver


@click.group("webhooks", help="partners' status webhooks, from the receiving end")
def webhooks() -> None:
    pass


@webhooks.command("receive", help="listen on loopback for status webhooks and print each verified one")
@click.option("--port", type=click.IntRange(1, 65535), default=8094, help="the loopback port to listen on")
@click.option("--secret", required=True, envvar="HERALD_WEBHOOK_SECRET", help="the webhook's signing secret")
@click.option("--count", type=click.IntRange(1), default=1, help="exit after this many verified posts")
@click.option("--wait", type=click.FloatRange(0), default=60.0, help="give up after this many seconds")
def receive(port: int, secret: str, count: int, wait: float) -> int:
    """Each post whose Standard Webhooks signature checks out is printed as one JSON line (`{"type", "timestamp",
    "data"}`) and answered 204; one that does not is answered 401 and named on stderr. Loopback only: it is a way
    to look, not an endpoint to expose."""
    if not secret.startswith("whsec_"):
        raise click.BadParameter("a webhook secret reads whsec_...", param_hint="--secret")
    receiver = WebhookReceiver(secret, port=port).start()
    deadline, shown = time.monotonic() + wait, 0
    try:
        with receiver.posted:
            while shown < count:
                for entry in receiver.received[shown:]:
                    click.echo(printable(json.dumps(entry["document"], ensure_ascii=False)))
                shown = len(receiver.received)
                if shown >= count or not receiver.posted.wait(timeout=max(0.0, deadline - time.monotonic())):
                    break
    finally:
        receiver.stop()
    for why in receiver.refused:
        print(f"refused a post: {why}", file=sys.stderr)
    if shown < count:
        print(f"error: {shown} of {count} verified posts within {wait:g} s", file=sys.stderr)
        return 1
    return 0
