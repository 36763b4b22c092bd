"""PynamoDB's side of every table: models bound to their tables when the container is built, one DynamoDB
client for all of them, and the one retry for conflicts and throttling.

Each context declares its table's model (keys, indexes, TTL) once, without a table name: the name comes from
settings, which template.yaml fills, so `Database.bind` makes the model of one deployed table at build time
(never at import). PynamoDB would give every model its own botocore session and client (~60 ms each on a
cold start); here every model and every transaction goes through the process's one DynamoDB client, which
has Herald's timeouts and retry policy (`herald.aws`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pynamodb.attributes import Attribute, ListAttribute, UnicodeAttribute
from pynamodb.connection import Connection
from pynamodb.constants import NUMBER
from pynamodb.exceptions import PynamoDBException, QueryError, TransactWriteError
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action
from pynamodb.indexes import Index
from pynamodb.models import Model
from pynamodb.pagination import ResultIterator
from pynamodb.transactions import TransactWrite

from herald import aws
from herald.dynamo import from_attr, to_attr
from herald.errors import InvalidArgument
from herald.pagination import decode_token, encode_token
from herald.retry import with_backoff

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

M = TypeVar("M", bound=Model)
T = TypeVar("T")

THROTTLING_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
UNAVAILABLE_CODES = frozenset({"InternalServerError", "ServiceUnavailable", "InternalFailure"})
_ATTEMPTS = 8


class IntAttribute(Attribute[int]):
    """A number that is always whole (milliseconds, counts, versions), read back as `int`."""

    attr_type = NUMBER

    def serialize(self, value: int) -> str:
        return str(int(value))

    def deserialize(self, value: str) -> int:
        return int(value)


def string_list(*, null: bool = False) -> ListAttribute[str]:
    """A list of strings (`L` of `S`), typed as one (PynamoDB types `of=` as the element's attribute class)."""
    return cast("ListAttribute[str]", ListAttribute(of=UnicodeAttribute, null=null))


def epoch_seconds(at: datetime) -> int:
    """A TTL attribute's value as the epoch seconds the domain speaks."""
    return int(at.timestamp())


def ttl(epoch_s: int) -> datetime:
    return datetime.fromtimestamp(epoch_s, UTC)


class _OneClientConnection(Connection):
    """PynamoDB's connection, sending through the given DynamoDB client (or the process's) instead of making
    its own."""

    def __init__(self, client: DynamoDBClient | None) -> None:
        super().__init__()
        self._given_client = client

    @property
    def client(self) -> Any:
        return self._given_client or aws.dynamodb()


class Database:
    """Tables reached through one DynamoDB client: models bound to table names, and transactions across them."""

    def __init__(self, client: DynamoDBClient | None = None) -> None:
        self._connection = _OneClientConnection(client)

    def bind(self, model: type[M], table_name: str) -> type[M]:
        """`model` as the model of the table named `table_name`: a subclass with its own Meta (and its own
        copy of the indexes), so two containers in one process never share a table."""
        meta = type("Meta", (), {"table_name": table_name})
        bound: type[M] = type(model.__name__, (model,), {"Meta": meta, "__module__": model.__module__})
        table_connection = bound._get_connection()
        with contextlib.suppress(ValueError):  # another model of the same table (one item type each) added it
            self._connection.add_meta_table(table_connection.get_meta_table())
        table_connection.connection = self._connection
        return bound

    def transact(self, build: Callable[[Transaction], object]) -> None:
        """One TransactWriteItems made of what `build` adds to it, retried as `retried` says; raises
        `Cancelled` naming the labels of the items whose condition was false."""

        def attempt() -> None:
            transaction = Transaction(IdempotentTransactWrite(connection=self._connection))
            build(transaction)
            transaction.commit()

        retried(attempt)


class IdempotentTransactWrite(TransactWrite):
    """A TransactWriteItems whose ClientRequestToken is derived from its items: sent again with the same items (the
    SDK's retry, or Herald's own after a lost reply) it takes effect once and answers success for 10 minutes, as
    DynamoDB documents; different items are a new request. (botocore's own token lasts only its own retries.)"""

    def _commit(self) -> Any:
        items = [self._condition_check_items, self._delete_items, self._put_items, self._update_items]
        digest = hashlib.sha256(json.dumps(items, sort_keys=True, default=str).encode()).hexdigest()
        self._client_request_token = digest[:36]  # the API's limit: 1 to 36 characters
        return super()._commit()


class Cancelled(Exception):
    """A transaction was cancelled because the conditions of the items labelled `failed` were false."""

    def __init__(self, failed: frozenset[str]) -> None:
        super().__init__(f"transaction cancelled: conditions failed on {sorted(failed) or 'no labelled item'}")
        self.failed = failed


class Transaction:
    """A TransactWriteItems being built: each item may carry a label, by which a cancellation names it.
    PynamoDB sends condition checks, then deletes, then puts, then updates (whatever order they were added
    in), and DynamoDB's cancellation reasons follow that order; the labels are kept in the same order."""

    def __init__(self, transaction: TransactWrite) -> None:
        self._transaction = transaction
        self._labels: dict[str, list[str | None]] = {"check": [], "delete": [], "put": [], "update": []}

    def check(
        self,
        model: type[M],
        hash_key: str,
        condition: Condition,
        *,
        range_key: str | None = None,
        label: str | None = None,
    ) -> None:
        self._transaction.condition_check(model, hash_key, range_key, condition=condition)
        self._labels["check"].append(label)

    def delete(self, row: Model, condition: Condition | None = None, *, label: str | None = None) -> None:
        self._transaction.delete(row, condition=condition)
        self._labels["delete"].append(label)

    def put(self, row: Model, condition: Condition | None = None, *, label: str | None = None) -> None:
        self._transaction.save(row, condition=condition)
        self._labels["put"].append(label)

    def update(
        self, row: Model, actions: Sequence[Action], condition: Condition | None = None, *, label: str | None = None
    ) -> None:
        self._transaction.update(row, actions=list(actions), condition=condition)
        self._labels["update"].append(label)

    def commit(self) -> None:
        try:
            with self._transaction:
                pass
        except TransactWriteError as error:
            if error_code(error) != "TransactionCanceledException" or _worth_retrying(error):
                raise
            order = [label for kind in ("check", "delete", "put", "update") for label in self._labels[kind]]
            codes = reasons(error)
            raise Cancelled(
                frozenset(
                    label
                    for label, code in zip(order, codes, strict=False)
                    if label is not None and code == "ConditionalCheckFailed"
                )
            ) from error


def key_names(model: type[Model], index: Index[Any] | None = None) -> dict[str, type]:
    """The attributes a query's last key holds, with the Python type of each: the table's keys, and the
    index's when the query reads one."""
    schema = model._get_schema()
    types = {definition["AttributeName"]: definition["AttributeType"] for definition in schema["attribute_definitions"]}
    names = [str(key["AttributeName"]) for key in schema["key_schema"]]
    if index is not None:
        names += [str(key["AttributeName"]) for key in index._get_schema()["key_schema"]]
    return {name: int if types[name] == NUMBER else str for name in names}


def page(
    query: Callable[[dict[str, Any] | None], ResultIterator[M]],
    token: str,
    scope: Mapping[str, str | int],
    keys: Mapping[str, type],
) -> tuple[list[M], str]:
    """The rows of one page of `query` and the opaque token of the next ("" after the last page).

    A token carries the page's last key (`keys`: the attributes it holds, and their types) and `scope` (who
    may continue this query, with which filters). A token of another scope, or whose key is not such a key
    (tampered), is the caller's error: refused here, before any engine sees it, never a fault."""
    cursor = {name: value for name, value in (decode_token(token, scope) or {}).items() if name not in scope}
    if cursor and (
        cursor.keys() != keys.keys() or not all(type(value) is keys[name] for name, value in cursor.items())
    ):
        raise InvalidArgument("page_token is malformed")
    start = {name: to_attr(value) for name, value in cursor.items()}
    results = query(start or None)
    try:
        rows = list(results)
    except QueryError as error:
        if start and error_code(error) == "ValidationException":
            raise InvalidArgument("page_token is malformed") from error
        raise
    last = results.last_evaluated_key
    return rows, encode_token({**scope, **{name: from_attr(value) for name, value in last.items()}} if last else None)


def error_code(error: PynamoDBException) -> str | None:
    """DynamoDB's error code, or None when there was no answer at all (a dropped connection, a read timeout: their
    botocore errors carry no response, or a `None` one, where PynamoDB's own lookup raises)."""
    response = getattr(error.cause, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return str(code) if code is not None else None


def condition_failed(error: PynamoDBException) -> bool:
    """A single write's condition was false (a lost race or a repeated request, never a fault)."""
    return error_code(error) == "ConditionalCheckFailedException"


def is_throttled(error: PynamoDBException) -> bool:
    """DynamoDB still said "not now" (over capacity or request rate) after every retry."""
    return error_code(error) in THROTTLING_CODES or (
        isinstance(error, TransactWriteError) and "ThrottlingError" in reasons(error)
    )


def is_unavailable(error: PynamoDBException) -> bool:
    """DynamoDB failed on its side, or never answered, after every retry (throttling, InternalServerError,
    ServiceUnavailable, a dropped connection or a timeout): the request may pass later. Never a condition, a
    cancelled transaction's own reasons or a request DynamoDB refused as malformed (those are answers)."""
    code = error_code(error)
    if code is None:
        return error.cause is not None  # no answer from DynamoDB at all
    return code in THROTTLING_CODES or code in UNAVAILABLE_CODES or is_throttled(error)


_UNAVAILABLE_SUFFIXES = ("ServiceUnavailable", "InternalError", "InternalFailure", "Throttling", "RequestThrottled")


def aws_unavailable(error: BaseException) -> bool:
    """Any AWS service (SQS, API Gateway's management API, SSM) failing on its side, throttling or never
    answering, as botocore raises it: worth a 503 and a later try (a request it refused is not)."""
    from botocore.exceptions import ClientError

    if not isinstance(error, ClientError):
        return True  # BotoCoreError: no answer (a dropped connection, a timeout)
    code = str(error.response.get("Error", {}).get("Code", ""))
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return status >= 500 or code in THROTTLING_CODES or code.endswith(_UNAVAILABLE_SUFFIXES)


def reasons(error: TransactWriteError) -> list[str | None]:
    """Each transaction item's cancellation code, in the order the items were given (None: not a cause; none at
    all when the transaction got no answer)."""
    given = getattr(error.cause, "cancellation_reasons", None) or []
    return [reason.code if reason is not None else None for reason in given]


def _worth_retrying(error: PynamoDBException) -> bool:
    """DynamoDB throttled the request, or cancelled a transaction only because another one held one of its
    items: the same request may succeed now (a failed condition never will)."""
    if error_code(error) in THROTTLING_CODES:
        return True
    if not isinstance(error, TransactWriteError):
        return False
    codes = set(reasons(error))
    return bool({"TransactionConflict", "ThrottlingError"} & codes) and "ConditionalCheckFailed" not in codes


def retried(operation: Callable[[], T]) -> T:
    """`operation()`, tried again with jittered backoff while DynamoDB throttles it or a transaction loses a
    race for an item; anything else (a failed condition included) is raised at once."""
    return with_backoff(
        operation,
        retry_on=lambda error: isinstance(error, PynamoDBException) and _worth_retrying(error),
        attempts=_ATTEMPTS,
        base_s=0.01,
        cap_s=1.0,
    )
