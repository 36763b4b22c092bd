"""Builds the rate limiter and the limits from settings, once per process."""

from functools import lru_cache

from herald.limits.dynamo import DynamoCounter
from herald.limits.service import Limit, RateLimiter
from herald.settings import get_settings


@lru_cache(maxsize=1)
def rate_limiter() -> RateLimiter:
    return RateLimiter(DynamoCounter(get_settings().rate_limits_table))


def user_limit() -> Limit:
    return Limit("user", get_settings().rate_limit_user_per_minute)


def key_limit() -> Limit:
    return Limit("key", get_settings().rate_limit_key_per_minute)


def target_limit() -> Limit:
    return Limit("target", get_settings().rate_limit_target_per_minute)
