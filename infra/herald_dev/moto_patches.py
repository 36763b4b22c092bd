"""Corrects the embedded moto server where it is kinder or wronger than AWS; each correction is shown
against plain moto by tests/functional/test_moto_corrections.py.

moto 5.2's FIFO ReceiveMessage gets a group's order wrong when several of its messages come back from
in flight together (a batch whose visibility ran out): it skips each while any other is still marked
pending, so the group's last message is handed out first. It also checks that a message is visible and
marks it in flight in two steps, with no lock between them, on the server's request threads: a receive
that comes between the two gets the same message. Here a FIFO receive is one locked pass over the queue:

* a group with any message in flight delivers nothing else;
* messages of a group are handed out oldest first, consecutively;
* a message received `maxReceiveCount` times moves to the DLQ on its next receive, and only then may the
  next message of its group be delivered.

Standard queues keep moto's behaviour. FIFO deduplication lasts SQS's five minutes from a message's first
send, whether or not it was received and deleted since (moto compares only with messages still queued, so a
resend after a consumer took the first copy went through: a redrive resumed after a crash relies on this).

moto's DynamoDB backend is not thread-safe: a Scan iterates the table's item map, and a put from another
request thread resizes it ("dictionary changed size during iteration", a 500). DynamoDB and DynamoDB Streams
requests are served one at a time, so concurrency tests see DynamoDB's semantics rather than moto's races.

moto 5.2's TransactWriteItems backs up every table it touches with a `deepcopy` (its cost grows with the
table: a few hundred events made each transaction slower than the last) and rolls a cancelled one back by
swapping in that copy. The swap also replaces the table's stream shard, while every shard iterator already
handed out keeps reading the old one: after one cancelled transaction (a duplicate event, a lost race)
readers saw a record of the write that was rolled back and then nothing more from that table. Here a
transaction remembers only the items it touches and the stream's length, and a cancelled one puts those
back on the same table and shard.

moto 5.2 ignores TransactWriteItems' ClientRequestToken. DynamoDB (API reference, TransactWriteItems) makes
identical calls with one token have the effect of one for 10 minutes after the first completes, and answers
IdempotentParameterMismatchException to the same token with other items. Here a token that succeeded is
remembered for 10 minutes: the same items again answer success and change nothing (a lost reply's retry), other
items are refused; a call that failed leaves no mark (its retry runs).

Two costs of the embedded server, not of AWS's behaviour: a FIFO receive waiting on a queue whose visible
messages all belong to groups with a message in flight spun through its whole wait (moto's wait returns at
once while any message is visible), and every request listed moto's package directory to find its backend.
A waiting receive now sleeps until a message is added or briefly, and the listing is read once. Two more costs of
moto's own: its response serializer worked out, for every value of every answer, which attribute names might hold
it (six alias rules a value), a fifth of a queue-heavy test's time; and every read of a queue's attributes turned
their names into snake case again. Both depend only on what they are given (the object's class, the key, the
model's shape; a name), so each is worked out once. So are the handler names of a service's response class, which
moto listed with `inspect.getmembers` on every request; and a request id's 52 random characters are drawn at
once rather than one `choice` at a time. And the serializer asked those rules for every member of a
structure, present or not: a DynamoDB attribute value has ten members and holds one, so an item of twenty
attributes cost two hundred lookups. A structure given as a plain dict now serializes only the members it holds.
"""

from __future__ import annotations

import functools
import json
import string
import threading
import time
from collections.abc import Iterator
from copy import deepcopy
from typing import Any

from moto import backends as moto_backends
from moto.core import responses as moto_responses
from moto.core import serialize as moto_serialize
from moto.core.utils import unix_time
from moto.moto_api._internal import moto_random
from moto.sqs import models as sqs_models

from herald_dev.write_signal import WRITE_ACTIONS, WriteSignal

PLAIN_STRUCTURE = moto_serialize.ResponseSerializer._serialize_type_structure  # moto's, for its tests
_receive_lock = threading.Lock()
RECHECK_S = 5.0  # a waiting receive looks again at least this often, whatever woke it or not
_installed = False


def _until_a_message_turns_visible(queue: Any, deadline: float) -> float:
    """Seconds a waiting receive may sleep: until the first delay or visibility timeout ends, or its deadline."""
    now_ms = unix_time() * 1000
    moments = [max(m.visible_at, m.delayed_until) for m in list(queue._messages)]
    turns = min((at for at in moments if at > now_ms), default=now_ms + RECHECK_S * 1000)
    return max(0.0, min(RECHECK_S, (turns - now_ms) / 1000 + 0.001, deadline - unix_time()))


def _changes_wake_waiting_receives() -> None:
    """A delete or a visibility change can release a FIFO group: moto notifies nobody of either."""
    delete, change = sqs_models.Queue.delete_message, sqs_models.SQSBackend.change_message_visibility

    def delete_message(self: Any, receipt_handle: str) -> None:
        delete(self, receipt_handle)
        with self._messages_lock:
            self._messages_lock.notify_all()

    def change_message_visibility(self: Any, queue_name: str, receipt_handle: str, visibility_timeout: int) -> None:
        change(self, queue_name, receipt_handle, visibility_timeout)
        queue = self.get_queue(queue_name)
        with queue._messages_lock:
            queue._messages_lock.notify_all()

    sqs_models.Queue.delete_message = delete_message  # type: ignore[method-assign]
    sqs_models.SQSBackend.change_message_visibility = change_message_visibility  # type: ignore[method-assign]


def _fifo_receive(queue: Any, count: int, visibility_timeout: int, attribute_names: list[str]) -> list[Any]:
    result: list[Any] = []
    blocked_groups: set[str] = set()
    to_dlq: list[Any] = []
    policy = queue.redrive_policy if queue.dead_letter_queue is not None else None
    for message in list(queue._messages):
        group = message.group_id
        if group in blocked_groups:
            continue
        if not message.visible or message.delayed:
            blocked_groups.add(group)
            continue
        queue.pending_messages.discard(message)
        if policy and message.approximate_receive_count >= int(policy["maxReceiveCount"]):
            to_dlq.append(message)
            continue
        if len(result) >= count:
            blocked_groups.add(group)
            continue
        queue.pending_messages.add(message)
        message.mark_received(visibility_timeout=visibility_timeout)
        copied = deepcopy(message)
        sqs_models._filter_message_attributes(copied, attribute_names)
        result.append(copied)
    for message in to_dlq:
        queue._messages.remove(message)
        queue.dead_letter_queue.add_message(message)
    return result


_dynamodb_lock = threading.RLock()


DYNAMODB_WRITES = WriteSignal()


def _serialize_dynamodb() -> None:
    from moto.dynamodb.responses import DynamoHandler
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    for handler in (DynamoHandler, DynamoDBStreamsHandler):
        original = handler.call_action

        def call_action(self: Any, original: Any = original) -> Any:
            try:
                with _dynamodb_lock:
                    return original(self)
            finally:
                if self._get_action() in WRITE_ACTIONS:
                    DYNAMODB_WRITES.wake()

        handler.call_action = call_action  # type: ignore[method-assign]


def _transactions_roll_back_in_place() -> None:
    import copy

    from moto.dynamodb import models as dynamodb_models
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    class _NoTableCopies:
        """The `copy` module as moto's backend sees it: a Table "copy" is the table itself."""

        @staticmethod
        def deepcopy(value: Any) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value)

    setattr(dynamodb_models, "copy", _NoTableCopies)  # noqa: B010 - the module's own name for `copy`
    original = dynamodb_models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        before: list[tuple[Any, Any, Any, Any]] = []  # table, hash value, range value, item before (or None)
        streams: dict[int, tuple[Any, int]] = {}
        for entry in transact_items:
            operation: Any = next(iter(entry.values()), None)
            table = self.tables.get(operation.get("TableName")) if isinstance(operation, dict) else None
            if table is None:
                continue
            key = operation.get("Item") or operation.get("Key") or {}
            if table.hash_key_attr not in key:
                continue
            hash_value = DynamoType(key[table.hash_key_attr])
            range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr in key else None
            item = table.get_item(hash_value, range_value)
            before.append((table, hash_value, range_value, copy.deepcopy(item) if item else None))
            if table.stream_shard is not None:
                streams.setdefault(id(table), (table.stream_shard, len(table.stream_shard.items)))
        try:
            original(self, transact_items)
        except Exception:
            for table, hash_value, range_value, item in reversed(before):
                stored = table.items[hash_value] if table.range_key_attr else table.items
                slot = range_value if table.range_key_attr else hash_value
                if item is None:
                    stored.pop(slot, None)
                else:
                    stored[slot] = item
            for shard, length in streams.values():
                del shard.items[length:]
            raise

    dynamodb_models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


IDEMPOTENCY_WINDOW_S = 600.0
_clock = time.monotonic  # replaced by a test to pass the window


def _transaction_tokens_are_honoured() -> None:
    from moto.core.exceptions import JsonRESTError
    from moto.dynamodb.responses import DynamoHandler

    class IdempotentParameterMismatch(JsonRESTError):
        def __init__(self) -> None:
            super().__init__(
                "IdempotentParameterMismatchException",
                "the ClientRequestToken was used with other parameters in the last 10 minutes",
            )

    remembered: dict[str, tuple[str, float, Any]] = {}  # token -> (its items, when, the answer it got)
    original = DynamoHandler.transact_write_items

    def transact_write_items(self: Any) -> Any:
        token = self.body.get("ClientRequestToken")
        if not token:
            return original(self)
        items, now = json.dumps(self.body.get("TransactItems"), sort_keys=True), _clock()
        seen = remembered.get(token)
        if seen is not None and now - seen[1] < IDEMPOTENCY_WINDOW_S:
            if seen[0] != items:
                raise IdempotentParameterMismatch()
            return seen[2]
        answer = original(self)  # a cancelled one raises: not remembered
        remembered[token] = (items, now, answer)
        return answer

    DynamoHandler.transact_write_items = transact_write_items  # type: ignore[method-assign]


def _dedup_window_outlives_deletion() -> None:
    original = sqs_models.Queue.add_message
    window_ms = sqs_models.DEDUPLICATION_TIME_IN_SECONDS * 1000

    def add_message(self: Any, message: Any) -> None:
        if self.fifo_queue and message.deduplication_id and not message.approximate_receive_count:  # a send
            seen: dict[str, int] = self.__dict__.setdefault("_herald_dedup_seen", {})
            sent = int(message.sent_timestamp)
            first = seen.get(message.deduplication_id)
            if first is not None and sent - first < window_ms:
                return
            if len(seen) > 50_000:  # forget what is past the window
                for dedup_id in [d for d, at in seen.items() if sent - at >= window_ms]:
                    del seen[dedup_id]
            seen[message.deduplication_id] = sent
        original(self, message)

    sqs_models.Queue.add_message = add_message  # type: ignore[method-assign]


def _answers_cost_less() -> None:
    """The serializer's candidate names for a value, by (alias rules, the object's class, key, shape); and the snake
    case of a queue attribute's name, by the name. Same answers, worked out once."""
    candidates = moto_serialize.AttributePicker.get_possible_keys
    known: dict[tuple[Any, ...], tuple[str, ...]] = {}

    def get_possible_keys(self: Any, context: Any) -> Iterator[str]:
        key = (tuple(self.alias_providers), type(context.obj), context.key, context.shape)
        found = known.get(key)
        if found is None:
            if len(known) >= 50_000:  # shapes of clients long gone: start again rather than keep them
                known.clear()
            found = known[key] = tuple(candidates(self, context))
        return iter(found)

    moto_serialize.AttributePicker.get_possible_keys = get_possible_keys  # type: ignore[method-assign,assignment]
    snake_case = functools.lru_cache(maxsize=1024)(sqs_models.camelcase_to_underscores)  # type: ignore[attr-defined]
    sqs_models.camelcase_to_underscores = snake_case  # type: ignore[attr-defined]
    handlers_of = functools.lru_cache(maxsize=256)(moto_responses.method_names_from_class)  # type: ignore[attr-defined]
    moto_responses.method_names_from_class = handlers_of  # type: ignore[attr-defined]

    def get_random_string(self: Any, length: int = 20, include_digits: bool = True, lower_case: bool = False) -> str:
        pool = string.ascii_letters + (string.digits if include_digits else "")
        drawn = "".join(self.choices(pool, k=length))
        return drawn.lower() if lower_case else drawn

    moto_random.MotoRandom.get_random_string = get_random_string  # type: ignore[method-assign]


def _structures_serialize_what_they_hold() -> None:
    """A structure given as a plain dict serializes the members it holds and skips the rest unasked."""
    plans: dict[tuple[Any, ...], list[tuple[str, Any, tuple[str, ...]]]] = {}

    def plan_of(serializer: Any, value: dict[str, Any], shape: Any) -> list[tuple[str, Any, tuple[str, ...]]]:
        """Each member with the keys a dict may hold it under, as the picker would try them."""
        picker = serializer._value_picker
        cached = (type(picker), tuple(picker.alias_providers), shape)
        plan = plans.get(cached)
        if plan is None:
            plan = []
            for member_key, member_shape in shape.members.items():
                member_shape.parent = shape
                context = moto_serialize.AttributePickerContext(
                    obj=value, key=member_key, shape=member_shape, operation_model=serializer.operation_model,
                    service_model=serializer.operation_model.service_model, key_path="",
                )  # fmt: skip
                plan.append((member_key, member_shape, tuple(picker.get_possible_keys(context))))
            if len(plans) >= 10_000:
                plans.clear()
            plans[cached] = plan
        return plan

    def serialize_structure(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        picker = self._value_picker
        plain = type(value) is not dict or not isinstance(picker, moto_serialize.AttributePicker)
        if plain or picker.response_transformers:  # a transformer may make a value of a missing member
            PLAIN_STRUCTURE(self, serialized, value, shape, key)
            return
        wrapper = self.MAP_TYPE() if key else serialized
        for member_key, member_shape, names in plan_of(self, value, shape):
            if any(name in value or "." in name for name in names):  # a dotted name is a path: ask the picker
                member_shape.parent = shape
                self._serialize_structure_member(wrapper, value, member_shape, member_key)
        if key:
            self._default_serialize(serialized, wrapper, shape, key)

    moto_serialize.ResponseSerializer._serialize_type_structure = serialize_structure  # type: ignore[method-assign]


def install() -> None:
    """Patch moto's SQS and DynamoDB backends in this process (the embedded server or mock_aws runs here)."""
    global _installed  # noqa: PLW0603 - one patch per process
    if _installed:
        return
    _serialize_dynamodb()
    _transactions_roll_back_in_place()
    _transaction_tokens_are_honoured()
    moto_modules = tuple(moto_backends.list_of_moto_modules())
    moto_backends.list_of_moto_modules = lambda: moto_modules
    _dedup_window_outlives_deletion()
    _changes_wake_waiting_receives()
    _answers_cost_less()
    _structures_serialize_what_they_hold()
    original = sqs_models.SQSBackend.receive_message

    def receive_message(
        self: Any,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> list[Any]:
        queue = self.get_queue(queue_name)
        if not queue.fifo_queue:
            return original(self, queue_name, count, wait_seconds_timeout, visibility_timeout, message_attribute_names)
        deadline = unix_time() + wait_seconds_timeout
        while True:
            with _receive_lock:
                result = _fifo_receive(queue, count, visibility_timeout, message_attribute_names or [])
            if result or unix_time() >= deadline:
                return result
            # moto's own wait returns at once while the queue holds any visible message, even one of a group
            # with a message in flight: a receive would spin through its whole wait. Wake on a new message, a
            # delete or a visibility change (a group released), or when a message's delay or visibility ends.
            with queue._messages_lock:
                queue._messages_lock.wait(timeout=_until_a_message_turns_visible(queue, deadline))

    sqs_models.SQSBackend.receive_message = receive_message  # type: ignore[method-assign]
    _installed = True
