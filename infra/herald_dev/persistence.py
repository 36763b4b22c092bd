"""What `make dev` keeps between runs: its tables' items, its queues' messages (those in flight too, visible
again), its SSM parameters and what the provider fakes received, saved when it stops and loaded before it
serves, so keys, confirms, notifications, sessions, tenants and cards outlive a restart. `--fresh` starts empty.

Only the embedded AWS (moto) is saved: an engine given with `--aws-endpoint` or `--dynamodb-endpoint` keeps
its own state. Loaded items are not new writes: the streams are read from after them (`LATEST`), so nothing
is delivered twice. What a stream had not handed to its function when the cloud stopped is not replayed; the
janitors settle what it left (confirms, pushes, events), as they do after any crash."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from herald_ops.local_files import write_private

SNAPSHOT = "snapshot.json"


def _scan(dynamodb: Any, table: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for page in dynamodb.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        items.extend(page["Items"])
    return items


def _write_items(dynamodb: Any, table: str, items: list[dict[str, Any]]) -> None:
    for start in range(0, len(items), 25):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        while requests:
            answer = dynamodb.batch_write_item(RequestItems={table: requests})
            requests = answer.get("UnprocessedItems", {}).get(table, [])


def _moto_messages(queue_name: str, region: str) -> list[dict[str, Any]]:
    """Every message of an embedded moto queue, in flight or not (the API shows only visible ones)."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    queue = sqs_backends[DEFAULT_ACCOUNT_ID][region].queues.get(queue_name)
    if queue is None:
        return []
    saved = []
    for message in list(queue._messages):  # moto's own store: in-flight messages included
        # moto keeps them in the API's own shape ({"DataType", "StringValue" | "BinaryValue"})
        attributes = {name: dict(attribute) for name, attribute in message.message_attributes.items()}
        saved.append(
            {
                "body": message.body,
                "group_id": message.group_id,
                "deduplication_id": message.deduplication_id,
                "attributes": attributes,
            }
        )
    return saved


def _send(sqs: Any, url: str, messages: Iterable[dict[str, Any]]) -> None:
    for message in messages:
        request: dict[str, Any] = {"QueueUrl": url, "MessageBody": message["body"]}
        if message["group_id"]:
            request["MessageGroupId"] = message["group_id"]
        if message["deduplication_id"]:
            request["MessageDeduplicationId"] = message["deduplication_id"]
        if message["attributes"]:
            request["MessageAttributes"] = message["attributes"]
        sqs.send_message(**request)


def _parameters(ssm: Any) -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path="/", Recursive=True, WithDecryption=True):
        found.extend({"name": p["Name"], "value": p["Value"], "type": p["Type"]} for p in page["Parameters"])
    return found


class SavedState:
    """The snapshot in `directory` (readable by its owner only: it holds the local secrets)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / SNAPSHOT

    def exists(self) -> bool:
        return self.path.exists()

    def save(
        self,
        tables: dict[str, str],
        queues: dict[str, str],
        region: str,
        clients: Any,
        fakes: Any,
        sample_owner: dict[str, Any] | None = None,
    ) -> str:
        """Write the snapshot: `tables` logical id -> table name; `queues` logical id -> queue name; the sample
        owner service's own truth (its requests and members), which belongs with Herald's state."""
        dynamodb, ssm = clients("dynamodb"), clients("ssm")
        snapshot = {
            "tables": {logical: _scan(dynamodb, name) for logical, name in tables.items()},
            "queues": {logical: _moto_messages(name, region) for logical, name in queues.items()},
            "parameters": _parameters(ssm),
            "fakes": fakes.saved() if fakes is not None else {},
            "sample_owner": sample_owner or {},
        }
        write_private(self.path, json.dumps(snapshot))
        return self._summary(snapshot)

    def load(self, tables: dict[str, str], queue_urls: dict[str, str], clients: Any, fakes: Any) -> str:
        """Put the snapshot back into freshly made tables, queues and fakes (before anything serves)."""
        snapshot = json.loads(self.path.read_text())
        dynamodb, sqs, ssm = clients("dynamodb"), clients("sqs"), clients("ssm")
        for logical, items in snapshot["tables"].items():
            if logical in tables:
                _write_items(dynamodb, tables[logical], items)
        for logical, messages in snapshot["queues"].items():
            if logical in queue_urls:
                _send(sqs, queue_urls[logical], messages)
        for parameter in snapshot["parameters"]:
            ssm.put_parameter(Name=parameter["name"], Value=parameter["value"], Type=parameter["type"], Overwrite=True)
        if fakes is not None:
            fakes.restore(snapshot.get("fakes", {}))
        return self._summary(snapshot)

    def sample_owner(self) -> dict[str, Any]:
        """What the sample owner kept (nothing in a snapshot from before it kept anything)."""
        kept: dict[str, Any] = json.loads(self.path.read_text()).get("sample_owner", {})
        return kept

    @staticmethod
    def _summary(snapshot: dict[str, Any]) -> str:
        items = sum(len(items) for items in snapshot["tables"].values())
        messages = sum(len(messages) for messages in snapshot["queues"].values())
        return f"{items} items in {len(snapshot['tables'])} tables, {messages} queued messages"
