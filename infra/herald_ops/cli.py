"""`herald-ops`: what an operator runs against a deployed stack (`--stack NAME`) or the local cloud.

    herald-ops keys create|list|rotate|revoke      service keys
    herald-ops events blocked|unknown|show|resolve external events a failed or UNKNOWN job holds up (Herald settles
                                                  an UNKNOWN one itself where Feishu makes it provable)
    herald-ops events pause|resume|paused          hold a partner service's (or one target's) deliveries
    herald-ops dlq list|peek|redrive|purge         dead-letter queues
    herald-ops confirms stuck|repair               confirms the janitor could not settle
    herald-ops confirms pause|resume|paused        hold a tenant's IM pushes
    herald-ops owners list|disable|enable|release|transfer   owner services' registered business types
    herald-ops tenants set|list|show|disable|enable   each app_code's own Tencent IM and Feishu apps
    herald-ops preflight --stack NAME              what a deploy still needs
    herald-ops audit [--since] [--actor] [--verb]  every operator act that changed anything (kept 400 days)
    herald-ops find ID [--service S]               what any id Herald issued or recorded names, and its timeline

Installed with Herald's runtime and `click` and `PyYAML` only (`pip install '.[ops]'`): no emulator, no test
dependency. Each command prints a table (or one record's fields) with local times and ages, and `--json` JSON
lines as Herald records them; an empty listing says so. A refusal prints `error: ...` and exits 2.
"""

from __future__ import annotations

import sys

import click
from herald_ops.commands import audit, confirms, dlq, events, find, keys, owners, preflight, tenants
from herald_ops.commands.common import refuse, run
from herald_ops.stack import NoLocalCloud


@click.group(help=__doc__.split("\n\n")[0] if __doc__ else None)
@click.version_option(package_name="herald", prog_name="herald-ops", message="%(prog)s %(version)s")
def cli() -> None:
    pass


for group in (keys.keys, events.events, dlq.dlq, confirms.confirms, owners.owners, tenants.tenants):
    cli.add_command(group)
cli.add_command(preflight.preflight_command)
cli.add_command(audit.audit_command)
cli.add_command(find.find_command)


def main(argv: list[str] | None = None) -> int:
    """Run one command; its exit code (2 for a refusal or a usage error)."""
    try:
        return run(cli, argv, "herald-ops")
    except NoLocalCloud as error:
        return refuse(str(error))


if __name__ == "__main__":
    sys.exit(main())
