"""The OpenAPI document in the repo (events/openapi.json, what client generators read) is the app's own:
a route or schema changed without `make openapi` fails here."""

from __future__ import annotations

import json
import re

from herald_dev.openapi import EXPORTED, document


def test_the_exported_openapi_is_the_apps_current_one() -> None:
    assert EXPORTED.read_text() == document(), "events/openapi.json is stale: run `make openapi` and commit it"


def test_every_operation_has_a_short_stable_id_and_an_audience_tag() -> None:
    spec = json.loads(document())
    operations = [op for path in spec["paths"].values() for op in path.values()]
    ids = [op["operationId"] for op in operations]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z]+\.[a-z][A-Za-z]+", operation_id) for operation_id in ids), ids
    assert all(op["tags"] and set(op["tags"]) <= {"app", "partner", "engine", "operator"} for op in operations)
