"""DynamoDB counter for the rate limiter: one item a window, incremented only while below the limit, and read
(strongly) once closed, for the sliding window's estimate. And the outbound governors' buckets and the provider
apps' circuits: one item each, written only over the version it was read at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pynamodb.attributes import MapAttribute, NumberAttribute, TTLAttribute, UnicodeAttribute
from pynamodb.exceptions import PutError, UpdateError
from pynamodb.expressions.condition import Condition
from pynamodb.models import Model

from herald.circuits import CircuitState
from herald.clock import Clock, now_ms
from herald.limits.governor import Bucket
from herald.limits.shares import Claim
from herald.tables import Cancelled, Database, IntAttribute, Transaction, condition_failed, ttl

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class WindowRow(Model):
    """RateLimitsTable: requests counted in one fixed window of one bucket (user, key or target)."""

    pk = UnicodeAttribute(hash_key=True)
    hits = IntAttribute(null=True)
    last_hit = UnicodeAttribute(null=True)  # the token of the hit counted last: a resent one is known by it
    expires_at = TTLAttribute(null=True)


class DynamoCounter:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(WindowRow, table_name)

    def hit(self, bucket: str, limit: int, expires_at_s: int, token: str) -> int | None:
        """The ADD refuses its own token, so the SDK's resend of a hit that landed is not counted again: it
        fails its condition and is known as counted by the token it left. A full bucket is read once, for its
        count (the wait the refusal names)."""
        rows = self._rows
        try:
            rows(pk=bucket).update(
                actions=[rows.hits.add(1), rows.last_hit.set(token), rows.expires_at.set(ttl(expires_at_s))],
                condition=(rows.hits.does_not_exist() | (rows.hits < limit))
                & (rows.last_hit.does_not_exist() | (rows.last_hit != token)),
            )
        except UpdateError as error:
            if condition_failed(error):
                row = self._read(bucket)
                return None if row.last_hit == token else int(row.hits or 0)
            raise
        return None

    def count(self, bucket: str) -> int:
        return int(self._read(bucket).hits or 0)

    def _read(self, bucket: str) -> WindowRow:
        try:
            return self._rows.get(bucket, consistent_read=True)
        except self._rows.DoesNotExist:
            return self._rows(pk=bucket)


BUCKET_PREFIX = "gov#"  # the governors' items, beside the counters' windows in RateLimitsTable


class BucketRow(Model):
    """RateLimitsTable: an outbound governor's bucket (when its next call is due, its last cut)."""

    pk = UnicodeAttribute(hash_key=True)
    due_ms = NumberAttribute()
    cut_rate_per_s = NumberAttribute(null=True)
    cut_at_ms = IntAttribute(null=True)
    version = IntAttribute()
    expires_at = TTLAttribute(null=True)
    claims: MapAttribute[str, Any] = MapAttribute(null=True)  # sharers: [weight, tenant weight, due, asked]


class DynamoBucketStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._database = Database(client)
        self._rows = self._database.bind(BucketRow, table_name)

    def read(self, name: str) -> Bucket:
        try:
            row = self._rows.get(BUCKET_PREFIX + name, consistent_read=True)
        except self._rows.DoesNotExist:
            return Bucket()
        claims = {
            str(who): Claim(int(weight), int(tenant_weight), float(due), int(asked))
            for who, (weight, tenant_weight, due, asked) in (row.claims.as_dict() if row.claims else {}).items()
        }
        return Bucket(float(row.due_ms), float(row.cut_rate_per_s or 0), row.cut_at_ms or 0, row.version, claims)

    def write(self, buckets: Mapping[str, Bucket], expires_at_s: int) -> bool:
        """One bucket: a conditional put; several: one transaction of them."""
        writes = [self._write(name, bucket, expires_at_s) for name, bucket in buckets.items()]
        try:
            if len(writes) == 1:
                writes[0][0].save(condition=writes[0][1])
            else:
                self._database.transact(lambda transaction: _put_all(transaction, writes))
        except PutError as error:
            if condition_failed(error):
                return False
            raise
        except Cancelled:
            return False
        return True

    def _write(self, name: str, bucket: Bucket, expires_at_s: int) -> tuple[BucketRow, Condition]:
        """The bucket's row, and its condition: stored at the version it was read at."""
        rows = self._rows
        row = rows(
            pk=BUCKET_PREFIX + name,
            due_ms=bucket.due_ms,
            cut_rate_per_s=bucket.cut_rate_per_s or None,
            cut_at_ms=bucket.cut_at_ms or None,
            version=bucket.version + 1,
            expires_at=ttl(expires_at_s),
            claims={
                who: [claim.weight, claim.tenant_weight, round(claim.due_ms, 1), claim.asked_ms]
                for who, claim in bucket.claims.items()
            }
            or None,
        )
        return row, _over_version(rows, bucket.version)


def _over_version(rows: type[BucketRow] | type[CircuitRow], version: int) -> Condition:
    """An item is written only over the version it was read at (version 0: only if there is none yet)."""
    return rows.pk.does_not_exist() if not version else rows.version == version


def _put_all(transaction: Transaction, writes: list[tuple[BucketRow, Condition]]) -> None:
    for row, condition in writes:
        transaction.put(row, condition)


CIRCUIT_PREFIX = "circuit#"  # the provider apps' circuits, beside the buckets
CIRCUIT_KEPT_S = 7 * 86_400  # an app unused this long forgets its circuit (a closed one reads the same)


class CircuitRow(Model):
    """RateLimitsTable: a provider app's circuit (its calls in flight, its failures in a row, its park)."""

    pk = UnicodeAttribute(hash_key=True)
    calls: MapAttribute[str, Any] = MapAttribute(null=True)  # a token each: [started, lease ends] (ms)
    failures = IntAttribute(null=True)
    parked_until_ms = IntAttribute(null=True)
    parks = IntAttribute(null=True)
    version = IntAttribute()
    expires_at = TTLAttribute(null=True)


class DynamoCircuitStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None, clock: Clock = now_ms) -> None:
        self._rows = Database(client).bind(CircuitRow, table_name)
        self._clock = clock

    def read(self, name: str) -> CircuitState:
        try:
            row = self._rows.get(CIRCUIT_PREFIX + name, consistent_read=True)
        except self._rows.DoesNotExist:
            return CircuitState()
        held = row.calls.as_dict() if row.calls else {}
        calls = tuple((str(token), int(started), int(until)) for token, (started, until) in held.items())
        return CircuitState(calls, row.failures or 0, row.parked_until_ms or 0, row.parks or 0, row.version)

    def write(self, name: str, state: CircuitState) -> bool:
        rows = self._rows
        row = rows(
            pk=CIRCUIT_PREFIX + name,
            calls={token: [started, until] for token, started, until in state.calls},
            failures=state.failures or None,
            parked_until_ms=state.parked_until_ms or None,
            parks=state.parks or None,
            version=state.version + 1,
            expires_at=ttl(self._clock() // 1000 + CIRCUIT_KEPT_S),
        )
        try:
            row.save(condition=_over_version(rows, state.version))
        except PutError as error:
            if condition_failed(error):
                return False
            raise
        return True

    def answered(self, name: str, token: str) -> None:
        rows = self._rows
        actions = [
            rows.calls[token].remove(),
            rows.failures.remove(),
            rows.parked_until_ms.remove(),
            rows.parks.remove(),
        ]
        rows(pk=CIRCUIT_PREFIX + name).update(actions=[*actions, rows.version.add(1)])
