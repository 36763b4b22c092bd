"""What `make dev` and herald-ops leave on the developer's machine is readable by its owner alone, from the first
byte: `.herald/` is 0700, and each file (the running cloud's state, the saved snapshot with every local secret,
a redrive journal) is created 0600 with O_CREAT|O_EXCL, never written first and made private after."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from herald_ops.dlq import Journal
from moto import mock_aws

from herald_dev.cloud import write_state
from herald_dev.persistence import SavedState


@pytest.fixture
def no_umask() -> Iterator[None]:
    """A umask that hides nothing, so a file is as private as its writer made it and no more."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.fixture
def creations(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int]]:
    """Every file created through os.open: its name, flags and mode."""
    seen: list[tuple[str, int, int]] = []
    real_open = os.open

    def spy(path: Any, flags: int, mode: int = 0o777, *args: Any, **kwargs: Any) -> int:
        seen.append((os.fspath(path), flags, mode))
        return real_open(path, flags, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    return seen


def _write_snapshot(path: Path) -> None:
    with mock_aws():
        ssm = boto3.client("ssm", region_name="us-east-1")
        ssm.put_parameter(Name="/herald/local/secret", Value="s3cret", Type="SecureString")
        SavedState(path.parent).save(
            {}, {}, "us-east-1", lambda name: boto3.client(name, region_name="us-east-1"), None
        )


WRITERS: dict[str, tuple[str, Callable[[Path], None]]] = {
    "the running cloud's state": ("local.json", lambda path: write_state(path, {"http_url": "http://127.0.0.1"})),
    "the saved snapshot": ("dev-data/snapshot.json", _write_snapshot),
    "a redrive journal": ("redrive/herald-ImPushDeadLetters.json", lambda path: Journal(path, {}).set("m1", "sent")),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_local_file_is_created_owner_only_before_its_first_byte_in_an_owner_only_folder(
    writer: str, tmp_path: Path, no_umask: None, creations: list[tuple[str, int, int]]
) -> None:
    relative, write = WRITERS[writer]
    herald = tmp_path / ".herald"
    herald.mkdir(mode=0o755)  # as an earlier Herald left it
    path = herald / relative

    write(path)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in (herald, path.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    (created,) = [(flags, mode) for name, flags, mode in creations if Path(name).parent == path.parent]
    flags, mode = created
    assert flags & os.O_CREAT and flags & os.O_EXCL and mode == 0o600
