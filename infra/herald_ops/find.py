"""`herald-ops find ID`: whatever Herald issued or recorded under an id, found without knowing which kind it is.

An id leads straight to its item where its shape says where it lives (an event job `SERVICE:SEQ`, an `event_id`
with its service); every other id is looked for in the attributes that hold such ids (a confirm's, an
invitation's, a notification's, a turn's or a message's id, a Feishu message id, an IM MsgRandom), table by table
(a scan with a filter: an operator's question, not a hot path). Each item found is told as what it is, with its
timeline: every time recorded on it (created, sent, decided, read, ...), each call to a provider and each
operator's resolution, oldest first. Items are read as stored, whichever model wrote them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

# Per table setting: the attribute paths an id may be found under ("#" names: reserved words and nested maps).
SEARCHED = {
    "confirms_table": ["confirm_id"],
    "deliveries_table": ["confirm_id_in_pk", "msg_random"],
    "invitations_table": ["invitation_id"],
    "inbox_table": ["notification_id"],
    "events_table": ["event_id", "message_id"],
    "turns_table": ["turn.turn_id", "finished_turn_id", "dispatched_turn_id", "data.turn_id", "sk", "data.message_id"],
}
_DESERIALIZE = TypeDeserializer()


@dataclass(frozen=True)
class Found:
    kind: str
    key: str
    fields: dict[str, Any]
    timeline: list[dict[str, Any]]

    def view(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, **self.fields, "timeline": self.timeline}


def kind_of(table: str, item: dict[str, Any]) -> str:
    """What an item is, from its table and its key's prefix."""
    pk, sk = str(item.get("pk", "")), str(item.get("sk", ""))
    if table == "events_table":
        kinds = {"SVC": "event job" if sk.startswith("JOB#") else "lane", "EVT": "event record", "CARD": "Feishu card"}
        return kinds.get(pk.split("#", 1)[0], "event item")
    if table == "inbox_table":
        if pk.startswith("D#"):
            return "notification's dedup key"
        return "notification" if sk.startswith("N#") else "notification (deleted)" if sk.startswith("T#") else "inbox"
    if table == "invitations_table":
        kinds = {"INV": "invitation", "ROLE": "role grant"}
        return kinds.get(pk.split("#", 1)[0], "invitation's claim")
    if table == "confirms_table":
        return {"SRC": "confirm's source event", "BIZ": "confirm's business record"}.get(pk.split("#", 1)[0], "confirm")
    if table == "turns_table":
        return {"MSG": "turn-queue message", "AGENT": "agent turn", "EVT": "session log entry"}.get(
            sk.split("#", 1)[0], "session"
        )
    names = {
        "deliveries_table": "confirm push (Tencent IM)",
    }
    return names.get(table, table)


def timeline(item: dict[str, Any]) -> list[dict[str, Any]]:
    """Every time recorded on the item, with what it marks, oldest first: its `..._at_ms` attributes, each provider
    call (`calls`) and each resolution (`resolutions`)."""
    moments: list[dict[str, Any]] = []
    for name, value in item.items():
        if name.endswith("at_ms") and isinstance(value, int | float) and value:
            moments.append({"at_ms": int(value), "what": name.removesuffix("_ms").removesuffix("_at") or "at"})
    for call in item.get("calls") or []:
        what = f"{call.get('operation')} call: {call.get('outcome')} (code {call.get('code')})"
        moments.append({"at_ms": int(call.get("at_ms", 0)), "what": what})
    for resolution in item.get("resolutions") or []:
        what = f"resolution {resolution.get('action')} by {resolution.get('by')}"
        note = resolution.get("note")
        moments.append({"at_ms": int(resolution.get("at_ms", 0)), "what": f"{what}: {note}" if note else what})
    turn = item.get("turn")
    if isinstance(turn, dict) and turn.get("started_at_ms"):
        moments.append({"at_ms": int(turn["started_at_ms"]), "what": f"turn {turn.get('turn_id')} started"})
    return sorted(moments, key=lambda moment: (moment["at_ms"], moment["what"]))


SHOWN = (
    "app_code", "tenant", "service_id", "status", "state", "event_id", "message_id", "business_type", "business_id",
    "receiver_user_id", "user_id", "target_user_id", "title", "type", "agent", "sender", "msg_random", "attempts",
    "last_error", "outcome", "is_read", "revision",
)  # fmt: skip


def found(table: str, item: dict[str, Any]) -> Found:
    plain = {name: _plain(value) for name, value in item.items()}
    key = "/".join(str(plain[name]) for name in ("pk", "sk") if plain.get(name))
    fields = {name: plain[name] for name in SHOWN if plain.get(name) not in (None, "")}
    return Found(kind_of(table, plain), key, fields, timeline(plain))


def _of_service(result: Found, service: str) -> bool:
    """Whether an events table item is `service`'s: its job's service, or its key's (a record's, a card's)."""
    if "service_id" in result.fields:
        return bool(result.fields["service_id"] == service)
    return result.key.startswith((f"EVT#{service}#", f"CARD#{service}#", f"SVC#{service}/", f"SVC#{service}#"))


def _plain(value: Any) -> Any:
    """DynamoDB's numbers as int where whole, maps and lists all the way down."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | set):
        return [_plain(v) for v in value]
    if hasattr(value, "as_integer_ratio") and not isinstance(value, bool | int):
        return int(value) if value == int(value) else float(value)
    return value


class Finder:
    """Looks an id up in the stack's tables (their names from its settings)."""

    def __init__(self, dynamodb: Any, tables: dict[str, str]) -> None:
        self._dynamodb = dynamodb
        self._tables = tables  # setting name -> table name

    def find(self, wanted: str, service: str | None = None) -> list[Found]:
        results = [found(table, item) for table, item in self._direct(wanted, service)]
        seen = {result.key for result in results}
        for table, item in self._searched(wanted):
            result = found(table, item)
            if service and table == "events_table" and not _of_service(result, service):
                continue  # another service's event of the same id: not the one asked about
            if result.key not in seen:
                seen.add(result.key)
                results.append(result)
        return results

    def _direct(self, wanted: str, service: str | None) -> Iterator[tuple[str, dict[str, Any]]]:
        """An event job by its id, and an event by `event_id` with its service: their keys say where they are."""
        from herald.events.models import parse_job_id
        from herald.events.rows import EVENT, event_pk, job_sk, lane_pk

        events = self._tables["events_table"]
        jobs: list[tuple[str, int]] = []
        with contextlib.suppress(ValueError):  # not a job id
            jobs.append(parse_job_id(wanted))
        if service and (record := self._get(events, event_pk(service, wanted), EVENT)) is not None:
            yield "events_table", record
            if record.get("lane"):
                jobs.append((str(record["lane"]), int(record["seq"])))
        for lane, seq in jobs:
            if (job := self._get(events, lane_pk(lane), job_sk(seq))) is not None:
                yield "events_table", job

    def _get(self, table: str, pk: str, sk: str) -> dict[str, Any] | None:
        answer = self._dynamodb.get_item(TableName=table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True)
        item = answer.get("Item")
        return {name: _DESERIALIZE.deserialize(value) for name, value in item.items()} if item else None

    def _searched(self, wanted: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for setting, paths in SEARCHED.items():
            names: dict[str, str] = {}
            terms = []
            for n, path in enumerate(paths):
                if path == "confirm_id_in_pk":  # a push's key is APP#CONFIRM_ID: a confirm id's own, checked below
                    if wanted.startswith("cfm_"):
                        names["#pk"] = "pk"
                        terms.append("contains(#pk, :s)")
                    continue
                if path == "msg_random":
                    if wanted.isdigit() and len(wanted) <= 12:
                        names["#mr"] = "msg_random"
                        terms.append("#mr = :n")
                    continue
                parts = path.split(".")
                aliases = [f"#p{n}_{i}" for i in range(len(parts))]
                names.update(zip(aliases, parts, strict=True))
                value = ":msg" if path == "sk" else ":s"
                terms.append(f"{'.'.join(aliases)} = {value}")
            values: dict[str, Any] = {":s": {"S": wanted}, ":msg": {"S": f"MSG#{wanted}"}}
            if wanted.isdigit() and len(wanted) <= 12:
                values[":n"] = {"N": wanted}
            if not terms:
                continue  # no attribute of this table can hold such an id
            expression = " OR ".join(terms)
            used = {name: value for name, value in values.items() if name in expression}
            for item in self._scan(self._tables[setting], expression, names, used):
                if setting == "deliveries_table" and not (
                    str(item.get("pk", "")).endswith(f"#{wanted}") or str(item.get("msg_random")) == wanted
                ):
                    continue  # the id only inside another confirm's id
                yield setting, item

    def _scan(
        self, table: str, expression: str, names: dict[str, str], values: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        pages = self._dynamodb.get_paginator("scan").paginate(
            TableName=table,
            FilterExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ConsistentRead=True,
        )
        for page in pages:
            for item in page.get("Items", []):
                yield {name: _DESERIALIZE.deserialize(value) for name, value in item.items()}
