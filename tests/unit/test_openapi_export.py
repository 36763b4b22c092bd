"""The OpenAPI document in the repo (events/openapi.json, what client generators read) is the app's own:
a route or schema changed without `make openapi` fails here."""

from __future__ import annotations

import json
import re

from jsonschema import Draft202012Validator

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


def test_every_operation_has_an_example_that_its_schema_accepts() -> None:
    spec = json.loads(document())
    checked = 0
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            contents = [operation.get("requestBody", {}).get("content", {}).get("application/json")]
            contents += [
                operation["responses"].get(status, {}).get("content", {}).get("application/json")
                for status in ("200", "202")
            ]
            examples = [(c["schema"], c["example"]) for c in contents if c is not None and "example" in c]
            assert examples, f"{method.upper()} {path} has no example"
            for schema, example in examples:
                validator = Draft202012Validator({**schema, "components": spec["components"]})
                errors = [e.message for e in validator.iter_errors(example)]
                assert errors == [], (operation["operationId"], errors)
                checked += 1
    assert checked >= len(spec["paths"])
