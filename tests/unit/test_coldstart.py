"""Entry points load with the collector paused, and what they loaded is never walked by a collection again."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from herald.coldstart import permanent_imports


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
