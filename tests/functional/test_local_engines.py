"""The second engines the tests run on stay on this machine: no telemetry, no files left where they started."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.local_cloud import DynamoDBLocal


def test_dynamodb_local_sends_no_telemetry_and_leaves_no_file_where_it_was_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DynamoDB Local with telemetry on records an installation id in `dynamodb-local-metadata.json` in its
    # working directory; with `-disableTelemetry` it writes nothing and sends nothing.
    started_from, workdir = tmp_path / "started-from", tmp_path / "workdir"
    started_from.mkdir()
    workdir.mkdir()
    monkeypatch.chdir(started_from)

    engine = DynamoDBLocal(workdir).start()
    engine.stop()

    assert sorted(p.name for p in tmp_path.rglob("dynamodb-local-metadata.json")) == []
    assert [p.name for p in started_from.iterdir()] == []
