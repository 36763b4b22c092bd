"""Entry points load with the collector paused, and what they loaded is never walked by a collection again."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from herald.coldstart import permanent_imports
from tests.support.aws import REPO


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


def test_the_collector_is_paused_while_an_entry_point_loads_and_running_after() -> None:
    gc.enable()
    with permanent_imports():
        assert not gc.isenabled()
        loaded = [object() for _ in range(10)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(loaded)  # moved to the permanent generation


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with permanent_imports():
        pass
    assert not gc.isenabled()


def test_a_failing_import_still_gives_the_collector_back() -> None:
    gc.enable()
    with pytest.raises(ImportError), permanent_imports():
        raise ImportError("no such module")
    assert gc.isenabled()


def test_the_http_app_builds_no_body_or_answer_validator_until_a_request_needs_it() -> None:
    """Cold start: registering the routes builds none of Herald's API models (pydantic's deferred build); the
    health check builds only what it answers with. Run in a fresh interpreter: other tests built them all."""
    probe = """
from herald.api.app import create_app
from herald.web.envelope import ApiModel
from fastapi.testclient import TestClient
def concrete(cls):
    for sub in cls.__subclasses__():
        if not sub.__pydantic_generic_metadata__["parameters"]:
            yield sub
        yield from concrete(sub)
def built():
    return sorted({m.__name__ for m in concrete(ApiModel) if m.__pydantic_complete__})
app = create_app()
print(built())
assert TestClient(app).get("/api/v1/health").status_code == 200
print(built())
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "layers"), os.environ.get("PYTHONPATH", "")])}
    lines = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    at_init, after_health = lines.splitlines()
    assert at_init == "[]"
    assert "'Health'" in after_health and "NotificationIn" not in after_health  # an inbox route's body
