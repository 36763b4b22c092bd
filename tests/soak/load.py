"""A bounded load run against a running local cloud, then an audit that nothing was lost or doubled.

Mixes, for `seconds`, on loopback:
* confirms: an invitation, then its receiver accepts (one `im_confirm` and one `im_confirm_update` each);
* inbox: a producer records notifications (some posted twice: the dedup key must hold) and users read some;
* events: two partners post numbered events to their own chats (some posted twice): one in the service's one
  order, one ordering by target (a lane per chat);
* turns: members talk to agents while the load's own engine runs turns, and cancel some waiting messages.

Then it waits for the pipelines to drain and audits from the outside (the fakes' logs, the API, the engine's
turns): every accepted event delivered once and in order (per lane), every confirm's pushes sent once, every
notification counted once, every queued message delivered xor cancelled. It prints the figures.

    python tests/soak/load.py --state-file .herald/local.json --seconds 120
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import secrets
import statistics
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(REPO), str(REPO / "infra"), str(REPO / "layers")]

from tests.support.tokens import make_token  # noqa: E402

CREDENTIALS = {"region_name": "us-east-1", "aws_access_key_id": "local", "aws_secret_access_key": "local"}
RETRY_AFTER_DEADLINE_S = 300


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[int] = field(default_factory=Counter)
    transport_errors: int = 0
    unavailable_without_retry_after: int = 0

    def record(self, family: str, status: int, seconds: float) -> None:
        self.latencies[family].append(seconds)
        self.statuses[status] += 1

    def report(self, elapsed: float) -> dict[str, Any]:
        every = [s for values in self.latencies.values() for s in values]
        return {
            "requests": len(every),
            "throughput_rps": round(len(every) / elapsed, 1) if elapsed else 0,
            "p50_ms": _percentile(every, 50),
            "p99_ms": _percentile(every, 99),
            "by_family": {
                family: {"requests": len(v), "p50_ms": _percentile(v, 50), "p99_ms": _percentile(v, 99)}
                for family, v in sorted(self.latencies.items())
            },
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "5xx": sum(v for k, v in self.statuses.items() if k >= 500),
            "500": self.statuses.get(500, 0),
            "503_without_retry_after": self.unavailable_without_retry_after,
            "transport_errors": self.transport_errors,
        }


def _percentile(values: list[float], pct: int) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return round(values[0] * 1000, 1)
    return round(statistics.quantiles(values, n=100, method="inclusive")[pct - 1] * 1000, 1)


@dataclass
class Ledger:
    """What the load was told was accepted: the audit's expectations."""

    confirms: dict[str, str] = field(default_factory=dict)  # receiver -> invitation id (answered 200)
    invited: set[str] = field(default_factory=set)  # every receiver invited, answered or not
    accepted_confirms: set[str] = field(default_factory=set)  # confirm ids the receiver accepted
    notifications: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # user -> ids
    read: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    events: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # chat -> titles, in order
    messages: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))  # session -> message ids
    members: dict[str, str] = field(default_factory=dict)  # session -> its member
    turns: list[dict[str, Any]] = field(default_factory=list)  # as the engine received them


class LoadRun:
    def __init__(self, state: dict[str, Any], seconds: float, workers: int, seed: int) -> None:
        self.http_url = state["http_url"]
        self.fakes = state["fakes"]
        self.resources = state["resources"]
        self.aws_endpoint = state["aws_endpoint"]
        self.sqs_endpoint = state.get("sqs_endpoint") or state["aws_endpoint"]
        self.dynamodb = boto3.client(  # type: ignore[call-overload]
            "dynamodb", endpoint_url=state.get("dynamodb_endpoint") or state["aws_endpoint"], **CREDENTIALS
        )
        self.seconds = seconds
        self.workers = workers
        self.rng = random.Random(seed)
        self.run_id = secrets.token_hex(3)
        self.stats = Stats()
        self.ledger = Ledger()
        self.keys = self._keys()
        self.deadline = 0.0
        self.unknown_resolved = 0

    # ------------------------------------------------------------------ setup
    def _keys(self) -> dict[str, str]:
        from herald.auth.dynamo import DynamoServiceKeyStore
        from herald.auth.service_keys import ServiceKeys

        keys = ServiceKeys(DynamoServiceKeyStore(self.resources["ServiceKeysTable"]["Ref"], self.dynamodb))
        service = f"load-{self.run_id}"
        chats = [f"chat_id:oc_{self.run_id}_{n}" for n in range(self.workers)]
        capabilities = ["/events/external", "/internal/v1/inbox", "/internal/v1/sessions"]
        key, _ = keys.create_key(service, capabilities, targets=chats)
        # A second partner that orders by target: a lane per chat (the audit holds each lane's order).
        laned = [f"chat_id:{self._lane_chat(n)}" for n in range(self.workers)]
        lanes_key, _ = keys.create_key(self._laned_service, ["/events/external"], targets=laned, order="target")
        return {"service": key, "lanes": lanes_key}

    @property
    def _laned_service(self) -> str:
        return f"lanes-{self.run_id}"

    def _lane_chat(self, worker: int) -> str:
        return f"oc_{self.run_id}_lane_{worker}"

    def _lanes(self) -> list[str]:
        """Every lane this run's events run in: the first partner's one, and the second's one per chat."""
        laned = [f"{self._laned_service}/chat_id:{self._lane_chat(n)}" for n in range(self.workers)]
        return [f"load-{self.run_id}", *laned]

    def _user(self, n: int) -> str:
        return str(30_000_000 + int(self.run_id, 16) % 1_000_000 * 10 + n)

    async def _call(
        self, client: httpx.AsyncClient, family: str, method: str, path: str, retry: bool = False, **kwargs: Any
    ) -> Any:
        """One request; None when it got no answer (the local cloud was down). An idempotent one (`retry`)
        is sent again until it gets an answer, as its client would."""
        give_up = self.deadline + RETRY_AFTER_DEADLINE_S
        while True:
            started = time.perf_counter()
            try:
                response = await client.request(method, path, **kwargs)
            except httpx.HTTPError:
                self.stats.transport_errors += 1
                if not retry or time.monotonic() > give_up:
                    return None
                await asyncio.sleep(0.5)
                continue
            self.stats.record(family, response.status_code, time.perf_counter() - started)
            if response.status_code == 503:  # AWS failing past the retries: told when to come back
                if "retry-after" not in response.headers:
                    self.stats.unavailable_without_retry_after += 1
                if retry and time.monotonic() <= give_up:
                    await asyncio.sleep(min(1.0, float(response.headers.get("retry-after", "1"))))
                    continue
            return response

    def _as(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {make_token(user, ttl=3600)}"}

    @property
    def _service(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys['service']}"}

    @property
    def _lanes_key(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys['lanes']}"}

    # ------------------------------------------------------------------ the mix
    async def confirms(self, client: httpx.AsyncClient, worker: int) -> None:
        n = 0
        while time.monotonic() < self.deadline:
            inviter, receiver = self._user(1000 + worker * 100), self._user(5000 + worker * 1000 + n)
            n += 1
            body = {"invitation_type": "host", "target_user_id": receiver}
            self.ledger.invited.add(receiver)
            response = await self._call(
                client, "confirm", "POST", "/api/v1/role-invitations", json=body, headers=self._as(inviter)
            )
            if response is None or response.status_code != 200:
                continue  # no answer: it may or may not exist (the audit still checks it for duplicates)
            self.ledger.confirms[receiver] = response.json()["data"]["invitation_id"]
            confirm_id = await self._confirm_of(client, receiver, inviter)
            if confirm_id is None:
                continue
            accepted = await self._call(
                client,
                "confirm",
                "POST",
                f"/api/v1/message/action-confirms/{confirm_id}/accept",
                json={"command_id": f"tap-{confirm_id}"},
                headers=self._as(receiver),
                retry=True,  # a click is idempotent by its command id
            )
            if accepted is not None and accepted.status_code == 200:
                self.ledger.accepted_confirms.add(confirm_id)

    async def _confirm_of(self, client: httpx.AsyncClient, receiver: str, inviter: str) -> str | None:
        for _ in range(100):
            response = await self._call(
                client,
                "confirm",
                "GET",
                "/api/v1/message/action-confirms",
                params={"peer_user_id": inviter},
                headers=self._as(receiver),
                retry=True,
            )
            if response is not None and response.status_code == 200 and response.json()["data"]["items"]:
                return str(response.json()["data"]["items"][0]["confirm_id"])
            await asyncio.sleep(0.1)
        return None

    async def inbox(self, client: httpx.AsyncClient, worker: int) -> None:
        n = 0
        users = [self._user(20_000 + worker * 10 + u) for u in range(3)]
        while time.monotonic() < self.deadline:
            user = self.rng.choice(users)
            tail = f"{self.run_id}-{worker}-{n}"
            n += 1
            body = {"user_id": user, "kind": "QUESTION_PENDING", "session_id": "load", "tail": tail, "title": tail}
            for _ in range(2 if self.rng.random() < 0.2 else 1):  # some producers retry
                response = await self._call(
                    client,
                    "inbox",
                    "POST",
                    "/internal/v1/inbox/notifications",
                    json=body,
                    headers=self._service,
                    retry=True,
                )
                if response is not None and response.status_code == 200:
                    self.ledger.notifications[user].add(response.json()["data"]["notification_id"])
            if self.ledger.notifications[user] and self.rng.random() < 0.3:
                target = self.rng.choice(sorted(self.ledger.notifications[user]))
                read = await self._call(
                    client,
                    "inbox",
                    "POST",
                    f"/api/v1/inbox/notifications/{target}/read",
                    headers=self._as(user),
                    retry=True,
                )
                if read is not None and read.status_code == 200:
                    self.ledger.read[user].add(target)
            await self._call(client, "inbox", "GET", "/api/v1/inbox/unread-count", headers=self._as(user), retry=True)

    async def events(self, client: httpx.AsyncClient, worker: int) -> None:
        """Each round one event to this worker's chat of the first partner (the service's one order) and one
        to its chat of the second (a lane of its own)."""
        chats = [(f"oc_{self.run_id}_{worker}", self._service), (self._lane_chat(worker), self._lanes_key)]
        n = 0
        while time.monotonic() < self.deadline:
            for chat, headers in chats:
                if not await self._post_event(client, chat, n, headers):
                    return  # the next number must not run ahead of a lost one: the order audit counts on it
            n += 1
            await asyncio.sleep(0.05)

    async def _post_event(self, client: httpx.AsyncClient, chat: str, n: int, headers: dict[str, str]) -> bool:
        title = f"{chat} #{n}"
        body = {
            "event_id": f"{chat}-{n}",
            "event_type": "load",
            "data": {"title": title, "status": "ok", "target": {"receive_id": chat, "receive_id_type": "chat_id"}},
        }
        accepted = False
        for _ in range(2 if self.rng.random() < 0.2 else 1):  # some partners retry
            response = await self._call(
                client, "events", "POST", "/events/external", json=body, headers=headers, retry=True
            )
            accepted = accepted or (response is not None and response.status_code == 202)
        if accepted:
            self.ledger.events[chat].append(title)
        return accepted

    async def turns(self, client: httpx.AsyncClient, worker: int) -> None:
        session = f"load-{self.run_id}-{worker}"
        member = self._user(40_000 + worker)
        body = {"app_code": "lalu", "members": {member: "developer"}, "agents": ["po"], "status": "active"}
        await self._call(
            client, "turns", "PUT", f"/internal/v1/sessions/{session}", json=body, headers=self._service, retry=True
        )
        self.ledger.members[session] = member
        n = 0
        while time.monotonic() < self.deadline:
            n += 1
            response = await self._call(
                client,
                "turns",
                "POST",
                f"/api/v1/sessions/{session}/agents/po/messages",
                json={"text": f"{session} m{n}"},
                headers=self._as(member),
            )
            if response is not None and response.status_code == 202:
                data = response.json()["data"]
                self.ledger.messages[session].append(data["message_id"])
                if data["delivery"] == "queued" and self.rng.random() < 0.25:
                    await self._call(  # answered or not: the audit reads cancellations from the event log
                        client,
                        "turns",
                        "POST",
                        f"/api/v1/sessions/{session}/agents/po/messages/{data['message_id']}/cancel",
                        headers=self._as(member),
                    )
            await asyncio.sleep(self.rng.uniform(0.05, 0.3))

    async def engine(self, client: httpx.AsyncClient, stop: asyncio.Event) -> None:
        """The agent engine's side: takes this run's turns and finishes each after a short while."""
        sqs = boto3.client("sqs", endpoint_url=self.sqs_endpoint, **CREDENTIALS)  # type: ignore[call-overload]
        url = self.resources["TurnsQueue"]["Ref"]
        prefix = f"load-{self.run_id}-"
        finished_turns: set[str] = set()
        while not stop.is_set():
            response = await asyncio.to_thread(
                sqs.receive_message, QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1, VisibilityTimeout=60
            )
            for message in response.get("Messages", []):
                turn = json.loads(message["Body"])
                if not turn["session_id"].startswith(prefix):
                    continue  # another user of this local cloud
                if turn["turn_id"] in finished_turns:  # the engine runs a turn once, however often it arrives
                    self.ledger.turns.append(turn)
                    await asyncio.to_thread(sqs.delete_message, QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
                    continue
                await asyncio.sleep(self.rng.uniform(0.1, 0.6))
                path = (
                    f"/internal/v1/sessions/{turn['session_id']}/agents/{turn['agent']}/turns/{turn['turn_id']}/finish"
                )
                finished = await self._call(client, "engine", "POST", path, headers=self._service, retry=True)
                if finished is not None and finished.status_code == 200:
                    finished_turns.add(turn["turn_id"])
                    self.ledger.turns.append(turn)
                    await asyncio.to_thread(sqs.delete_message, QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    # ------------------------------------------------------------------ run
    async def run(self, drain_timeout: float) -> dict[str, Any]:
        started = time.monotonic()
        self.deadline = started + self.seconds
        stop_engine = asyncio.Event()
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(base_url=self.http_url, timeout=60, limits=limits) as client:
            engine = asyncio.create_task(self.engine(client, stop_engine))
            mix = [self.confirms, self.inbox, self.events, self.turns]
            await asyncio.gather(*(part(client, worker) for part in mix for worker in range(self.workers)))
            elapsed = time.monotonic() - started
            audit = await self.audit(client, drain_timeout)
            stop_engine.set()
            await engine
        return {"seconds": round(elapsed, 1), **self.stats.report(elapsed), "audit": audit}

    async def audit(self, client: httpx.AsyncClient, timeout: float) -> dict[str, Any]:
        """Wait for the pipelines to drain, then count (until the counts hold, or the timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            await self._resolve_unknown_jobs(client)
            result = await self._count(client)
            result["unknown_settled_by_herald"] = await asyncio.to_thread(self._settled_by_herald)
            result["unknown_resolved_by_operator"] = self.unknown_resolved
            if result["lost"] == 0 or time.monotonic() > deadline:
                return result
            await asyncio.sleep(1)

    def _events_store(self) -> Any:
        from herald.events.dynamo import DynamoEventStore

        return DynamoEventStore(self.resources["ExternalEventsTable"]["Ref"], self.dynamodb)

    def _settled_by_herald(self) -> int:
        """UNKNOWN jobs of this run Herald settled itself (a resolution by `herald` on the job)."""
        store = self._events_store()
        jobs = (store.job(lane, seq) for lane in self._lanes() for seq in range(1, store.head(lane).next_seq + 1))
        return sum(1 for job in jobs if job and any(r.get("by") == "herald" for r in job.resolutions))

    async def _resolve_unknown_jobs(self, client: httpx.AsyncClient) -> None:
        """The operator's runbook for an UNKNOWN job Herald left to one (past Feishu's uuid window, or out of
        tries): look in Feishu for the card; found, record it as sent with its message id; not found, requeue
        it. Jobs Herald is still settling are left to it."""
        from herald.events.jobs import JobStatus
        from herald.events.operations import EventOperations
        from herald.events.policy import DispatchPolicy

        operations = EventOperations(self._events_store(), DispatchPolicy())
        blocked = [
            job
            for job, _ in await asyncio.to_thread(operations.blocked)
            if job.lane.key in self._lanes() and job.status is JobStatus.UNKNOWN and job.awaiting_operator
        ]
        if not blocked:
            return
        cards = (await client.get(f"{self.fakes['feishu']}/__fake/messages")).json()
        sent = {(card["receive_id"], card["title"]): card["message_id"] for card in cards}
        for job in blocked:
            message_id = sent.get((job.event.target.receive_id, job.event.title))
            if message_id:
                await asyncio.to_thread(operations.sent, job.job_id, message_id, "soak", "found in Feishu")
            else:
                await asyncio.to_thread(operations.requeue, job.job_id, "soak", "not in Feishu")
            self.unknown_resolved += 1

    async def _count(self, client: httpx.AsyncClient) -> dict[str, Any]:
        lost = duplicates = 0
        im = (await client.get(f"{self.fakes['tencent_im']}/__fake/messages")).json()
        mine = [m for m in im if m["to"] in self.ledger.invited]
        pushes = Counter((m["data"]["confirm_id"], m["data"]["type"], m["data"]["status"]) for m in mine)
        duplicates += sum(count - 1 for count in pushes.values())
        pending_pushed_to = {m["to"] for m in mine if m["data"]["type"] == "im_confirm"}
        lost += len(set(self.ledger.confirms) - pending_pushed_to)  # an answered invitation without its confirm
        lost += sum(pushes[(cid, "im_confirm_update", "accepted")] == 0 for cid in self.ledger.accepted_confirms)

        cards = (await client.get(f"{self.fakes['feishu']}/__fake/messages")).json()
        delivered: dict[str, list[str]] = defaultdict(list)
        for card in cards:
            delivered[card["receive_id"]].append(card["title"])
        out_of_order = 0
        for chat, titles in self.ledger.events.items():
            got = delivered.get(chat, [])
            duplicates += len(got) - len(set(got))
            lost += len(set(titles) - set(got))
            out_of_order += [t for t in got if t in set(titles)] != titles[: len(got)]

        miscounted = 0
        for user, ids in self.ledger.notifications.items():
            response = await client.get("/api/v1/inbox/unread-count", headers=self._as(user))
            miscounted += response.json()["data"]["unread_count"] != len(ids - self.ledger.read[user])

        turns = await self._audit_turns(client)
        turn_duplicates, turn_lost = turns.pop("turn_duplicates"), turns.pop("turn_lost")
        return {
            "confirms": len(self.ledger.confirms),
            "confirm_pushes": sum(pushes.values()),
            "notifications": sum(len(ids) for ids in self.ledger.notifications.values()),
            "events": sum(len(t) for t in self.ledger.events.values()),
            "cards": sum(len(delivered.get(chat, [])) for chat in self.ledger.events),
            **turns,
            "duplicates": duplicates + turn_duplicates,
            "lost": lost + turn_lost,
            "out_of_order": out_of_order,
            "unread_miscounted": miscounted,
        }

    async def _audit_turns(self, client: httpx.AsyncClient) -> dict[str, int]:
        """From each session's event log (what Herald recorded) and the turns the engine received: every
        answered message delivered xor cancelled, each in one turn, and every started turn received once."""
        delivered: Counter[str] = Counter()
        cancelled: set[str] = set()
        started: set[str] = set()
        for session, member in self.ledger.members.items():
            after = 0
            while True:
                response = await client.get(
                    f"/api/v1/sessions/{session}/events",
                    params={"after_seq": after, "limit": 200},
                    headers=self._as(member),
                )
                events = response.json()["data"]["events"]
                if not events:
                    break
                after = events[-1]["seq"]
                for event in events:
                    if event["type"] == "chat.message_delivered":
                        delivered.update(event["data"]["message_ids"])
                    elif event["type"] == "chat.message_cancelled":
                        cancelled.add(event["data"]["message_id"])
                    elif event["type"] == "turn.started":
                        started.add(event["data"]["turn_id"])
        received = Counter(turn["turn_id"] for turn in self.ledger.turns)
        answered = [mid for ids in self.ledger.messages.values() for mid in ids]
        both = sum(1 for mid in answered if mid in cancelled and delivered[mid])
        neither = sum(1 for mid in answered if mid not in cancelled and not delivered[mid])
        return {
            "turn_messages": len(answered),
            "turns": len(started),
            "cancelled": len(cancelled),
            "turn_duplicates": both
            + sum(n - 1 for n in delivered.values() if n > 1)
            + sum(n - 1 for n in received.values() if n > 1),
            "turn_lost": neither + len(started - set(received)),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-file", default=str(REPO / ".herald" / "local.json"))
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--workers", type=int, default=3, help="workers per part of the mix")
    parser.add_argument("--drain-timeout", type=float, default=120)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    state = json.loads(Path(args.state_file).read_text())
    report = asyncio.run(LoadRun(state, args.seconds, args.workers, args.seed).run(args.drain_timeout))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
