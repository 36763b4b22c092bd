"""DynamoDB's Time to Live, locally: neither moto nor DynamoDB Local ever deletes expired items.

Every `interval` seconds each table with `TimeToLiveSpecification` enabled is scanned for items whose TTL
attribute (epoch seconds) has passed, and each is deleted (conditionally, so a refreshed item stays). The
deletions appear on the table's stream as REMOVE records, as TTL deletions do in AWS.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

log = logging.getLogger("local-cloud")


class TtlSweeper:
    def __init__(self, dynamodb: Any, table: str, key_names: list[str], attribute: str, interval: float) -> None:
        self._ddb = dynamodb
        self.table = table
        self._keys = key_names
        self._attribute = attribute
        self.interval = interval
        self._thread: threading.Thread | None = None

    def start(self, stop: threading.Event) -> None:
        self._thread = threading.Thread(target=self._run, args=(stop,), name=f"ttl-{self.table}", daemon=True)
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread:
            self._thread.join(timeout)

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            try:
                self.sweep()
            except Exception:
                log.exception("TTL sweep of %s failed", self.table)

    def sweep(self) -> int:
        now = {":now": {"N": str(int(time.time()))}}
        names = {"#ttl": self._attribute, **{f"#k{i}": k for i, k in enumerate(self._keys)}}
        removed = 0
        paginator = self._ddb.get_paginator("scan")
        for page in paginator.paginate(
            TableName=self.table,
            FilterExpression="#ttl < :now",
            ProjectionExpression=", ".join(f"#k{i}" for i in range(len(self._keys))),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=now,
        ):
            for key in page.get("Items", []):
                try:
                    self._ddb.delete_item(
                        TableName=self.table,
                        Key=key,
                        ConditionExpression="#ttl < :now",
                        ExpressionAttributeNames={"#ttl": self._attribute},
                        ExpressionAttributeValues=now,
                    )
                    removed += 1
                except self._ddb.exceptions.ConditionalCheckFailedException:
                    continue
        if removed:
            log.info("TTL removed %d expired items from %s", removed, self.table)
        return removed
