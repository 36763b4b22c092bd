"""`herald`: the developer's command line (an operator's commands are `herald-ops`: herald_ops.cli).

herald local                 the whole stack on this machine (what `make dev` runs)
herald backing               AWS (moto) and the provider fakes alone, to outlive `herald local --backing`
herald console               the Herald console on its own (the local cloud's, or a deployed stack's)
herald token --user 10002    a dev JWT for the local cloud
herald now                   this moment in epoch milliseconds (what `--after-ms` takes)
herald bell --user 10002     a user's inbox bell: returns once connected, then prints each newer count pushed
herald fake im --to 10002 --type im_confirm --after-ms T   wait for what the fake Tencent IM received
herald webhooks receive --secret whsec_...   a status webhook endpoint on loopback: prints each verified post
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click
from herald_ops.commands.common import run
from herald_ops.stack import DEFAULT_TEMPLATE

from herald.ids import DEFAULT_APP_CODE
from herald_dev.commands.common import dev_token, env_int, local_state, state_file_option
from herald_dev.commands.fakes import fake
from herald_dev.commands.local import backing, local
from herald_dev.commands.webhooks import webhooks


@click.group(help=(__doc__ or "").replace("\n\nherald local", "\n\n\b\nherald local", 1))
def cli() -> None:
    pass


@cli.command("console", help="the Herald console: watch every flow and operate it")
@click.option("--host", default="127.0.0.1", help="loopback: the console acts with your credentials")
@click.option(
    "--allow-non-loopback",
    is_flag=True,
    help="let --host be an address other machines reach (anyone who reaches it acts as you)",
)
@click.option("--port", type=int, default=env_int("HERALD_CONSOLE_PORT", 8093))
@click.option("--stack", help="a deployed stack (Operate only; default: the running local cloud)")
@click.option("--profile")
@click.option("--region")
@state_file_option
def console(
    host: str, allow_non_loopback: bool, port: int, stack: str | None, profile: str | None, region: str | None,
    state_file: str,
) -> int:  # fmt: skip
    """The console on its own: against the running local cloud, or a deployed stack (`--stack`)."""
    import uvicorn
    from herald_ops.stack import Stack

    from herald_dev.console.app import create_console

    loopback = host in ("127.0.0.1", "localhost", "::1")
    if not loopback:
        acts_as = "the AWS profile of the stack" if stack else "minting any user token"
        print(f"warning: --host {host} lets other machines reach the console, which acts with your credentials"
              f" ({acts_as}).", file=sys.stderr)  # fmt: skip
        if not allow_non_loopback:
            print("error: pass --allow-non-loopback to serve it there anyway", file=sys.stderr)
            return 2
    print(f"Herald console on http://{host}:{port}/ ({stack or 'the local cloud'})")
    app = create_console(Stack(stack, profile, region, Path(state_file), DEFAULT_TEMPLATE), None if loopback else host)
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0


@cli.command("token", help="print a dev JWT (HS256, the local secret)")
@click.option("--user", required=True)
@click.option("--app", default=DEFAULT_APP_CODE)
@click.option("--roles", default="")
@click.option("--ttl", type=int, default=24 * 3600, help="seconds")
def token(user: str, app: str, roles: str, ttl: int) -> int:
    print(dev_token(user, app, roles, ttl))
    return 0


@cli.command("now", help="print this moment in epoch milliseconds")
def now() -> int:
    print(time.time_ns() // 1_000_000)
    return 0


@cli.command("bell", help="a user's inbox bell on the local WebSocket API (returns once connected)")
@click.option("--user", required=True)
@click.option("--app", default=DEFAULT_APP_CODE)
@click.option("--until-unread", type=int, help="stop once a push shows this unread count")
@click.option("--seconds", type=float, default=30.0, help="stop after this long in any case")
@state_file_option
def bell(user: str, app: str, until_unread: int | None, seconds: float, state_file: str) -> int:
    """Connect to the local WebSocket API as `--user` and return once connected; a child process stays and
    prints each newer count pushed to it until `--until-unread` shows or `--seconds` passed, so a script can go
    on writing and every push it causes reaches the bell (none races the connection)."""
    from herald_dev.bell import ring

    url = local_state(state_file)["ws_url"]
    user_token = dev_token(user, app, "", 3600)
    ready_read, ready_write = os.pipe()
    if os.fork() == 0:  # the bell itself, in the background
        os.close(ready_read)
        os._exit(ring(url, user_token, until_unread, seconds, ready_write))
    os.close(ready_write)
    connected = os.read(ready_read, 1) == b"1"
    os.close(ready_read)
    return 0 if connected else 1


for command in (local, backing, fake, webhooks):
    cli.add_command(command)


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code (2 for a usage error)."""
    return run(cli, argv, "herald")


if __name__ == "__main__":
    sys.exit(main())
