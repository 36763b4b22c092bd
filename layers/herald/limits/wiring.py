"""The rate limiter's part, and the limits from settings."""

from herald.circuits import Circuit, CircuitLimits
from herald.container import Container, current, part
from herald.limits.dynamo import DynamoBucketStore, DynamoCircuitStore, DynamoCounter
from herald.limits.governor import Governor
from herald.limits.service import Limit, RateLimiter


@part
def rate_limiter(c: Container) -> RateLimiter:
    return RateLimiter(DynamoCounter(c.settings.rate_limits_table, c.clients.dynamodb), clock=c.clock)


@part
def governor(c: Container) -> Governor:
    """The outbound governors' buckets, beside the inbound counters in the rate-limits table."""
    return Governor(DynamoBucketStore(c.settings.rate_limits_table, c.clients.dynamodb), clock=c.clock)


@part
def circuit_store(c: Container) -> DynamoCircuitStore:
    """The provider apps' circuits, beside the buckets in the rate-limits table."""
    return DynamoCircuitStore(c.settings.rate_limits_table, c.clients.dynamodb, clock=c.clock)


def provider_circuit(c: Container, app: str) -> Circuit:
    """The circuit of one provider app (`feishu:cli_x`, `im:1400000000`), shared by every instance."""
    settings = c.settings
    limits = CircuitLimits(
        calls_at_once=settings.provider_app_calls_at_once, first_park_ms=settings.provider_app_first_park_ms
    )
    return Circuit(circuit_store(c), app, limits, clock=c.clock)


def _limit(scope: str, per_window: int) -> Limit:
    """A limit of `per_window` requests per window (a minute; shorter only where a test sets it)."""
    return Limit(scope, per_window, current().settings.rate_limit_window_seconds)


def user_limit() -> Limit:
    return _limit("user", current().settings.rate_limit_user_per_minute)


def key_limit() -> Limit:
    return _limit("key", current().settings.rate_limit_key_per_minute)


def target_limit(per_minute: int | None = None) -> Limit:
    """A service's events to one target: its key's own rate where it has one, else the stack's."""
    return _limit("target", per_minute or current().settings.rate_limit_target_per_minute)


def invitee_limit() -> Limit:
    return _limit("invitee", current().settings.rate_limit_invitee_per_minute)


def owner_limits() -> dict[str, Limit]:
    """Confirms one owner service's business type asks for (beside its key's own limit), and confirms owner
    services ask one receiver (a person is not flooded with buttons)."""
    settings = current().settings
    return {
        "owner": _limit("owner", settings.rate_limit_owner_per_minute),
        "owner_receiver": _limit("owner_receiver", settings.rate_limit_owner_receiver_per_minute),
    }
