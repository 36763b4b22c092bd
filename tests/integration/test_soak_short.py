"""The short soak CI runs: the load mix against the local cloud for a few seconds, then the audit (nothing
lost, nothing doubled, events in order, unread counts exact, no 5xx). `make soak` runs it for minutes."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.soak.load import LoadRun
from tests.support.local_cloud import LocalCloudProcess

pytestmark = pytest.mark.integration


def test_mixed_load_loses_nothing_doubles_nothing_and_keeps_order(cloud: LocalCloudProcess) -> None:
    report = asyncio.run(LoadRun(cloud.state, seconds=10, workers=2, seed=3).run(drain_timeout=90))
    print(json.dumps(report, indent=2))
    audit = report["audit"]
    assert report["5xx"] == 0 and report["transport_errors"] == 0, report["statuses"]
    assert audit["lost"] == 0 and audit["duplicates"] == 0, audit
    assert audit["out_of_order"] == 0 and audit["unread_miscounted"] == 0, audit
    assert audit["confirms"] > 0 and audit["events"] > 0 and audit["notifications"] > 0 and audit["turns"] > 0
