"""Issue 47, item 2: an operator sets a service's and a tenant's weight in a shared provider app
(`keys create --weight`, `tenants set --weight`, 1-100), a careless value is refused with nothing written, and the
stack's functions read both as the share of each call (on moto, from the deployed stack's settings)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from herald_ops.cli import main
from herald_ops.stack import Stack

from herald.auth.wiring import service_keys
from herald.limits.shares import Share
from herald.tenants.wiring import shares
from tests.support.deployed import deployed_stack

STACK = "herald-prod"


@pytest.fixture
def deployed() -> Iterator[None]:
    with deployed_stack(STACK, {"HERALD_TENANT_CACHE_SECONDS": "0"}):
        yield


def listed(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, object]]:
    capsys.readouterr()
    assert main([*args, "--json", "--stack", STACK]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_a_keys_and_a_tenants_weight_are_stored_shown_and_read_as_the_share_of_their_calls(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tenants", "set", "acme", "--weight", "5", "--stack", STACK]) == 0
    assert main(["tenants", "set", "acme", "--display-name", "Acme", "--stack", STACK]) == 0  # weight kept
    assert main(["keys", "create", "--service", "reports", "--cap", "/events/external", "--app-code", "acme",
                 "--weight", "3", "--stack", STACK]) == 0  # fmt: skip
    assert listed(capsys, "tenants", "show", "acme")[0]["weight"] == 5
    assert [key["weight"] for key in listed(capsys, "keys", "list", "--service", "reports")] == [3]
    container = Stack(STACK, None, None, Path(".herald/local.json"), Path("template.yaml")).container
    scope = service_keys(container).delivery_scope("reports")
    assert (scope.tenant, scope.weight) == ("acme", 3)  # read with the service's keys, once a drain
    assert shares(container).of("acme", "reports", scope.weight) == Share("acme/reports", 3, 5)
    assert shares(container).of_tenant("acme") == Share("acme/", 1, 5)  # its confirms' pushes


def test_a_weight_outside_1_to_100_is_refused_and_nothing_is_written(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    for weight in ("0", "101", "-1"):
        assert main(["keys", "create", "--service", "reports", "--cap", "/events/external", "--weight", weight,
                     "--stack", STACK]) == 2  # fmt: skip
        assert "1 to 100" in capsys.readouterr().err
        assert main(["tenants", "set", "acme", "--weight", weight, "--stack", STACK]) == 2
        assert "1 to 100" in capsys.readouterr().err
    assert listed(capsys, "keys", "list") == [] and listed(capsys, "tenants", "list") == []
