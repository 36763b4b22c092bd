"""Typed settings, read once from the environment that template.yaml (or the local cloud) fills.

A frozen dataclass rather than pydantic-settings: the stream and queue workers never import pydantic,
which keeps their cold start within budget (see tests/bench/cold_start.py).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any

from herald import budgets
from herald.errors import ConfigurationError
from herald.ids import DEFAULT_APP_CODE

PREFIX = "HERALD_"


@dataclasses.dataclass(frozen=True)
class Secret:
    """A value that never shows in a repr or a log line."""

    value: str

    def __repr__(self) -> str:
        return "Secret('**********')"

    def get_secret_value(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class Settings:
    service_keys_table: str
    connections_table: str
    invitations_table: str
    confirms_table: str
    deliveries_table: str
    im_push_queue_url: str
    im_push_dlq_url: str
    inbox_table: str
    events_table: str
    events_queue_url: str
    events_dlq_url: str
    events_waiting_queue_url: str  # lanes crowded out wait here, not in front of new work (herald.events.handlers)
    events_waiting_dlq_url: str
    event_webhooks_queue_url: str  # partners' status webhooks: the notices to post
    event_webhooks_dlq_url: str
    turns_table: str
    turns_queue_url: str
    rate_limits_table: str
    holds_table: str  # deliveries held while their tenant is disabled (herald.holds)
    audit_table: str  # operators' acts (herald.audit): written by herald-ops and the console, by no function
    owners_table: str

    stage: str = "local"

    # App-route authentication (contract §0): in AWS the issuer and audience the HTTP API's JWT authorizer
    # reads too (keys through the issuer's discovery document); HS256 with a secret only locally.
    jwt_hs256_secret: Secret | None = None
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwt_leeway_seconds: int = 30
    jwt_max_lifetime_seconds: int = 86_400  # a token whose `exp` is further away is refused
    # The claim that names the tenant (e.g. `custom:app_code` in Cognito ID tokens, a namespaced URL in Auth0).
    jwt_app_code_claim: str = "app_code"
    # Tokens without an `app_code` claim are refused, unless this names the tenant they belong to (an
    # identity provider that cannot add custom claims serves one tenant).
    jwt_default_app_code: str | None = None
    # The tenant an operator's key or command is for when it names none.
    default_app_code: str = DEFAULT_APP_CODE

    # Abuse limits (requests per minute; 0 = off): each app user, each service key, each target of a service's
    # events (a Feishu chat or person; a key may carry its own) and each invitee. API Gateway's stage throttling is
    # the outer wall. A target takes Feishu's own 5 a second: faster only builds a backlog no pace can deliver
    # (a card's revisions beyond it are coalesced, so progress updates fit).
    rate_limit_user_per_minute: int = 120
    rate_limit_key_per_minute: int = 600
    rate_limit_target_per_minute: int = 300
    rate_limit_invitee_per_minute: int = 30
    rate_limit_owner_per_minute: int = 300  # confirms one registered business type may ask for
    rate_limit_owner_receiver_per_minute: int = 10  # confirms owner services may ask one receiver
    # The window the per-minute limits count in (a test of waiting one out shortens it; a stack keeps 60).
    rate_limit_window_seconds: int = 60
    # Invitations waiting for an answer: at most this many from one inviter, and to one target.
    invitations_pending_per_inviter: int = 10
    invitations_pending_per_target: int = 5

    # Browser origins allowed to call the HTTP API (comma-separated; "*" for any; empty: no CORS).
    cors_allow_origins: str = ""

    # A verified service key is remembered this long: a revoked or expired key is refused within it.
    service_key_cache_seconds: int = 30

    ws_management_endpoint: str | None = None
    ws_connection_ttl_seconds: int = 3 * 3600
    # Connections one user may hold: a newer one past this closes the oldest (told why in a frame).
    ws_max_connections_per_user: int = 10

    # Action confirms (contract §1).
    confirm_ttl_seconds: int = 7 * 86400
    confirm_lease_ms: int = budgets.CONFIRM_LEASE_MS
    # Owner services' callback URLs: https to public addresses only (the local cloud and tests relax both,
    # to call owners on loopback; a deployed stack never sets these).
    owner_callbacks_https_only: bool = True
    owner_callbacks_allow_private: bool = False
    # One call to an owner, connect to last byte (a total deadline, not per read).
    owner_call_total_ms: int = int(budgets.OWNER_CALL_TOTAL_S * 1000)

    # Tenants (herald-ops tenants): each app_code's own Tencent IM and Feishu apps. "" : no registry (every
    # tenant uses the stack's apps). When registration is required, an app_code that is not registered and
    # enabled is refused (403) before anything else is read or written; a disabled tenant always is.
    tenants_table: str = ""
    require_registered_tenants: bool = False
    tenant_secrets_prefix: str = "herald/tenants"  # the only SSM path a tenant's secret may be under
    tenant_cache_seconds: int = 30  # how long a function keeps a tenant it read (a change reaches it within)
    pauses_cache_seconds: int = 5  # how long a worker keeps the operators' pauses it read (herald.holds)

    # Tencent IM. The secret key comes from SSM (the parameter's name) in AWS, or directly locally.
    tencent_im_base_url: str = "https://console.tim.qq.com"
    tencent_im_sdk_app_id: int = 0
    tencent_im_admin_identifier: str = "administrator"
    tencent_im_secret_key: Secret | None = None
    tencent_im_secret_key_parameter: str | None = None
    im_push_max_attempts: int = budgets.IM_PUSH_MAX_ATTEMPTS  # then the push is dead-lettered with its reason
    # The receivers (message groups) of one batch of pushes sent side by side: Tencent's answer time then bounds
    # each receiver's pushes, not the batch's, so five invocations of ten can reach sendmsg's 200 a second.
    im_push_groups_at_once: int = 10
    # How long Tencent IM keeps C2C roaming history (7 days unless the app bought more): a push whose earlier
    # send's answer was lost is settled from that history, so only within it.
    tencent_im_history_days: int = 7
    # Tencent IM's published per-app limits of sendmsg and admin_getroammsg (docs/side-effects.md cites them):
    # Herald paces its calls under them, shared by every worker (0: not paced).
    tencent_im_sendmsg_per_second: int = 200
    tencent_im_roammsg_per_second: int = 200

    # External events (contract §3) and Feishu. The app secret comes from SSM in AWS, or directly locally.
    events_lease_ms: int = budgets.EVENTS_LEASE_MS  # longer than the worker's Timeout: a live worker keeps its claim
    events_max_attempts: int = budgets.EVENTS_MAX_ATTEMPTS  # failures before the first external write, then it blocks
    events_retry_base_ms: int = 2_000  # backoff doubles from here between those attempts
    events_reserve_ms: int = budgets.EVENTS_RESERVE_MS  # no job is claimed with less Lambda time left than this
    # The lanes (message groups) of one batch drained side by side: a backlog's lanes, each quickly moved to the
    # waiting queue, pass through ten at a time, so new work behind them waits a tenth as long for a worker.
    events_groups_at_once: int = 10
    events_retention_seconds: int = 7 * 86400  # completed jobs (the dedup window)
    events_unknown_ttl_seconds: int = 0  # UNKNOWN and failed jobs; 0 keeps them until an operator handles them
    events_settle_attempts: int = (
        6  # tries at settling an UNKNOWN job (backoff from events_retry_base_ms), then an operator
    )
    # How long after a job's first send a resend with its uuid is still deduplicated by Feishu (its rule: one
    # hour; Herald keeps five minutes for clocks). Tests shorten it; raising it past Feishu's hour risks a
    # second card.
    events_send_dedup_window_seconds: int = 55 * 60
    events_janitor_grace_seconds: int = 120  # a side effect left this long past its time is nudged by the janitor
    # Feishu's published limits on sending and updating messages (docs/side-effects.md cites them): Herald paces
    # its calls under them, shared by every worker (0: not paced).
    feishu_app_calls_per_second: int = 50
    feishu_app_calls_per_minute: int = 1000
    feishu_chat_calls_per_second: int = 5
    feishu_base_url: str = "https://open.feishu.cn"
    # Each provider app's circuit (herald.circuits): calls in flight to one app across the stack (below each
    # worker pool, so an app that hangs leaves the rest of the pool to others), and how long failed calls in a
    # row park it at first (doubling per failed probe, up to a minute).
    provider_app_calls_at_once: int = 4
    provider_app_first_park_ms: int = 5_000
    # A provider app shared by several services or tenants is shared by their weights (herald.limits.shares);
    # off: calls go in the order they ask (a bench's baseline).
    provider_app_fair_share: bool = True
    feishu_app_id: str = ""
    feishu_app_secret: Secret | None = None
    feishu_app_secret_parameter: str | None = None

    # Agent turn queue (contract §4).
    turns_janitor_grace_seconds: int = 60  # how long a started turn may wait for the outbox before the janitor

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):
            raw = environ.get(PREFIX + field.name.upper())
            if raw is None or raw == "":
                if field.default is dataclasses.MISSING:
                    raise ConfigurationError(f"{PREFIX}{field.name.upper()} is not set")
                continue
            values[field.name] = _convert(field.name, str(field.type), raw)
        return cls(**values)


def secret_variables() -> frozenset[str]:
    """The environment variables that hold secrets themselves (never written anywhere by Herald's tools)."""
    return frozenset(PREFIX + f.name.upper() for f in dataclasses.fields(Settings) if str(f.type).startswith("Secret"))


def _convert(name: str, type_name: str, raw: str) -> Any:
    if type_name.startswith("int"):
        try:
            return int(raw)
        except ValueError as exc:
            raise ConfigurationError(f"{PREFIX}{name.upper()} must be an integer, not {raw!r}") from exc
    if type_name.startswith("bool"):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    if type_name.startswith("Secret"):
        return Secret(raw)
    return raw
