"""Issue 49, item 7: herald-ops says its version, its listings fit 120 columns unless `--wide`, and `keys create`
refuses a capability no route of Herald's is under and warns about an app_code no tenant is registered as."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from herald_ops.cli import main

from tests.support.deployed import deployed_stack

STACK = "herald-prod"


@pytest.fixture
def deployed() -> Iterator[None]:
    with deployed_stack(STACK):
        yield


def test_herald_ops_says_its_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == "herald-ops 0.1.0"


def test_keys_list_fits_120_columns_and_wide_prints_every_column_whole(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    caps = ["--cap", "/events/external", "--cap", "/internal/v1/inbox", "--cap", "/internal/v1/sessions"]
    apps = [argument for n in range(4) for argument in ("--app-code", f"tenant-with-a-long-name-{n}")]
    assert main(["keys", "create", "--service", "a-service-with-a-long-name", *caps, *apps, "--stack", STACK]) == 0
    capsys.readouterr()
    assert main(["keys", "list", "--stack", STACK]) == 0
    fitted = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in fitted) <= 120 and "…" in fitted[1]
    assert main(["keys", "list", "--wide", "--stack", STACK]) == 0
    wide = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in wide) > 120 and "tenant-with-a-long-name-3" in wide[1]


def test_keys_create_refuses_a_capability_herald_has_no_route_under_and_makes_no_key(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "create", "--service", "billing", "--cap", "/bogus", "--stack", STACK]) == 2
    err = capsys.readouterr().err
    assert "no route of Herald's is under /bogus" in err and "/events/external" in err
    assert main(["keys", "list", "--stack", STACK, "--json"]) == 0
    assert capsys.readouterr().out == ""
    for narrower_or_wider in ("/events/external/webhook", "/internal/v1", "/internal/v1/confirms/owner"):
        assert main(["keys", "create", "--service", "billing", "--cap", narrower_or_wider, "--stack", STACK]) == 0


def test_keys_create_warns_when_an_app_code_is_no_registered_tenant_and_makes_the_key(
    deployed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["keys", "create", "--service", "billing", "--cap", "/events/external", "--stack", STACK]
    assert main([*args, "--app-code", "nosuch"]) == 0
    assert "'nosuch' is not a registered tenant" in capsys.readouterr().err
    assert main(args) == 0  # the stack's default app_code: nothing to warn about
    assert "warning" not in capsys.readouterr().err
